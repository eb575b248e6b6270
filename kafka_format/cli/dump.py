"""``klogs dump``: kafka-dump-log (``DumpLogSegments``) compatible output, no Spark.

Text mode reproduces the lines of Kafka's own tool exactly, so that its users can diff
the two.  Kafka 4.3 rewrote the tool in Java (KAFKA-14579,
``tools/src/main/java/org/apache/kafka/tools/DumpLogSegments.java``) and changed a few
lines; ``--kafka-version`` picks whose text to print (default: the Java tool of 4.3+,
checked against Kafka 4.4.0; ``--kafka-version 3.9`` or any release before 4.3: the
Scala ``core/src/main/scala/kafka/tools/DumpLogSegments.scala``, checked against 3.9.1).
What differs (all else is identical in both):

* legacy (v0/v1) record lines: the Scala tool ends them ``crc: N}`` (a stray brace);
* producer-snapshot lines without batch metadata: the Scala tool ends them with a space;
* non-consecutive offsets: the Java tool reports a log whose first record is not offset 0
  as ``-1 is followed by <first>`` and lists the pairs in ascending order of the first
  offset (a ``TreeMap``); the Scala tool skips the first record and lists the pairs newest
  first (a prepended ``List``);
* index/log mismatches: the Java tool keeps one per index offset, in descending order
  (``TreeMap`` with ``reverseOrder``); the Scala tool lists every one, newest first;
* offsets of a time index not found in the log: the Java tool's heading names the file
  (``The following indexed offsets are not found in :<path>``), the Scala tool's does not.

The order in which the end-of-run reports list *files* follows each tool's hash map
(``java.util.HashMap`` / Scala ``mutable.HashMap``) in Kafka; here it is the order the
files were dumped.  ``--json`` writes one object per line instead (docs/jobs/):
``batch``, ``record`` (deep iteration) and ``error`` objects, plus entries of
index / snapshot / txn-index files.

Files are dispatched by suffix as Kafka does (``.log`` and KRaft ``.checkpoint``
→ log dump, ``.index``, ``.timeindex``, ``.snapshot``, ``.txnindex``; anything
else → ``Ignoring unknown file``).  Reading is streamed through the format
library (``kafka_format.api.decode_segment``); a ``.log`` is never loaded whole
and ``--max-bytes`` bounds what is read.

Errors: where Kafka's tool dies with an exception (bad framing, an undecodable
record, a corrupt index), text mode prints the exception line on stderr and
stops, as Kafka does; ``--json`` prints an ``error`` object and goes on with the
next file.  Either way the exit code is 1.  ``--json`` reads a log in PERMISSIVE
mode and accounts for every byte of it (issue #4): each skipped range is an
``error`` object with its ``length``, in position order among the batches, and a
``summary`` object (size, validBytes, skippedBytes, zeroTailBytes, cutBytes,
batches; the last four add up to size) closes the file.  A CRC mismatch is printed
(``isvalid: false``) and also makes the exit code 1; missing library modules
or bad arguments give 2.
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_format import api, audit, compression, index, snapshot, txnindex
from kafka_format.cli.output import JsonOutput, Progress, TextOutput
from kafka_format.crc import crc32
from kafka_format.errors import KafkaFormatError
from kafka_format.internal import cluster_metadata, consumer_offsets, kraft_control, transaction_log
from kafka_format.records import batch_v2, control, legacy
from kafka_format.records import entry as log_entry

__all__ = [
    "DumpOptions",
    "add_arguments",
    "options_from_args",
    "run",
    "dump",
    "format_batch_line",
    "format_record_metadata",
    "RECORD_INDENT",
]

# --- constants of DumpLogSegments / Kafka ------------------------------------------------------

RECORD_INDENT = "|"                       # DumpLogSegments.RecordIndent
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024  # --max-message-size default
INT_MAX = 2**31 - 1                       # --max-bytes default (Integer.MAX_VALUE)
# Framing (Records.LOG_OVERHEAD, HEADER_SIZE_UP_TO_MAGIC, LegacyRecord.RECORD_OVERHEAD_V0, the
# keyLength/valueLength field): declared by the format modules, re-exported for this module's readers.
LOG_OVERHEAD = log_entry.LOG_OVERHEAD
HEADER_SIZE_UP_TO_MAGIC = log_entry.HEADER_SIZE_UP_TO_MAGIC
RECORD_OVERHEAD_V0 = legacy.RECORD_OVERHEAD_V0
FRAME = log_entry.ENTRY                       # FileLogInputStream: offset int64, size int32
LENGTH = legacy.LENGTH
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"  # BootstrapDirectory.BINARY_BOOTSTRAP_FILENAME
# Index checks read a few batches at an index position, not megabytes: small chunks (the library
# still reads a larger batch whole).
LOOKUP_READ_SIZE = 64 * 1024
JAVA_LONG = re.compile(r"^[+-]?[0-9]+$")    # what Long.parseLong accepts (ASCII digits only)
SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")  # Snapshots.parse: offset-epoch

TIMESTAMP_TYPE_NAMES = {0: "CreateTime", 1: "LogAppendTime", -1: "NoTimestampType"}  # TimestampType.name
CONTROL_TYPE_NAMES = {  # ControlRecordType enum names (toString) by type id
    0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS",
}
KRAFT_CONTROL_LABELS = {2: "LeaderChange", 3: "SnapshotHeader", 4: "SnapshotFooter", 5: "KRaftVersion", 6: "KRaftVoters"}

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2

# Java exception class names Kafka's tool would print for each kind of failure.
JAVA_CORRUPT_RECORD = "org.apache.kafka.common.errors.CorruptRecordException"
JAVA_INVALID_RECORD = "org.apache.kafka.common.InvalidRecordException"
JAVA_CORRUPT_INDEX = "org.apache.kafka.storage.internals.log.CorruptIndexException"  # 3.9.1 and 4.4.0
JAVA_KAFKA = "org.apache.kafka.common.KafkaException"
JAVA_NO_SUCH_FILE = "java.nio.file.NoSuchFileException"
JAVA_NO_SUCH_ELEMENT = "java.util.NoSuchElementException"

DEFAULT_KAFKA_VERSION = "4.4"
LEADER_CHANGE_JSON_SINCE = (4, 1)   # KAFKA-19069: " LeaderChange: {json}" instead of "controlType: ..."
TRANSACTION_LOG_JSON_SINCE = (4, 1)  # --transaction-log-decoder prints coordinator-record JSON
TRANSACTION_STATE_NAMES_SINCE = (4, 4)  # ... with transactionStatus as the state's name
JAVA_TOOL_SINCE = (4, 3)   # KAFKA-14579: DumpLogSegments in Java (org.apache.kafka.tools) from 4.3.0
KAFKA_VERSION = re.compile(r"^(\d+)\.(\d+)(\.\d+)?$")


def _optional_long(value: int | None) -> str:
    """Java ``OptionalLong.toString``."""
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def _bool(value: Any) -> str:
    """Java boolean ``toString``."""
    return "true" if value else "false"


def _java_string(data: bytes | None) -> str:
    """``StringDecoder``: ``new String(bytes, UTF_8)``, malformed input replaced as Java sizes it
    (``batch_v2.java_utf8``: an encoded surrogate is one U+FFFD, not Python's three)."""
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return str(batch_v2.java_utf8(data).decode("utf-8"))


# --- options -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DumpOptions:
    """What to dump and how (the flags of ``kafka-dump-log``)."""

    files: tuple[str, ...]
    deep_iteration: bool = False
    print_data_log: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    decoder: str | None = None            # "offsets" | "transaction-log" | "cluster-metadata"
    skip_record_metadata: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_bytes: int = INT_MAX
    json: bool = False
    kafka_version: str = DEFAULT_KAFKA_VERSION   # whose DumpLogSegments text to print

    @property
    def java_tool(self) -> bool:
        """Whether ``kafka_version`` has the Java ``DumpLogSegments`` (4.3+) rather than the Scala one."""
        return _java_tool(self.kafka_version)

    def since(self, major: int, minor: int) -> bool:
        """Whether ``kafka_version`` is ``major.minor`` or later."""
        return _version_tuple(self.kafka_version) >= (major, minor)

    @property
    def should_print_data(self) -> bool:
        """``shouldPrintDataLog``: --print-data-log or any decoder option."""
        return self.print_data_log or self.decoder is not None

    @property
    def is_deep(self) -> bool:
        """``isDeepIteration``: --deep-iteration, implied by printing data."""
        return self.deep_iteration or self.should_print_data


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0 or value > INT_MAX:
        raise argparse.ArgumentTypeError(f"must be between 0 and {INT_MAX}: {value}")
    return value


def _version_tuple(version: str) -> tuple[int, int]:
    match = KAFKA_VERSION.match(version)
    if match is None:
        raise ValueError(f"not a Kafka version: {version!r}")
    return int(match.group(1)), int(match.group(2))


def _java_tool(version: str) -> bool:
    return _version_tuple(version) >= JAVA_TOOL_SINCE


def _kafka_version(text: str) -> str:
    if KAFKA_VERSION.match(text) is None:
        raise argparse.ArgumentTypeError(f"not a Kafka version (like 4.4 or 3.9.1): {text!r}")
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``klogs dump`` flags on ``parser`` (docs/jobs/)."""
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help=".log, .index, .timeindex, .snapshot, .txnindex or KRaft .checkpoint files "
                             "(comma-separated lists are accepted too, as kafka-dump-log's --files)")
    parser.add_argument("--deep-iteration", action="store_true",
                        help="iterate records inside batches (implied by --print-data-log)")
    parser.add_argument("--print-data-log", action="store_true", help="print record keys and payloads")
    parser.add_argument("--verify-index-only", action="store_true",
                        help="check index entries against the log without printing them")
    parser.add_argument("--index-sanity-check", action="store_true",
                        help="only run the broker's startup sanity check on index files")
    decoders = parser.add_mutually_exclusive_group()
    decoders.add_argument("--offsets-decoder", dest="decoder", action="store_const", const="offsets",
                          help="decode __consumer_offsets records")
    decoders.add_argument("--transaction-log-decoder", dest="decoder", action="store_const",
                          const="transaction-log", help="decode __transaction_state records")
    decoders.add_argument("--cluster-metadata-decoder", dest="decoder", action="store_const",
                          const="cluster-metadata", help="decode KRaft __cluster_metadata records")
    parser.add_argument("--skip-record-metadata", action="store_true",
                        help="omit per-record metadata in deep iteration")
    parser.add_argument("--max-message-size", type=_positive_int, default=DEFAULT_MAX_MESSAGE_SIZE,
                        metavar="N", help="largest batch read at an index position (default %(default)s)")
    parser.add_argument("--max-bytes", type=_positive_int, default=INT_MAX, metavar="N",
                        help="read only the first N bytes of each .log")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("--kafka-version", type=_kafka_version, default=DEFAULT_KAFKA_VERSION,
                        metavar="VERSION",
                        help="print the text of this Kafka release's kafka-dump-log: 4.3 and later "
                             "(default %(default)s) or earlier, e.g. 3.9")
    parser.set_defaults(handler=run, decoder=None)


def options_from_args(args: argparse.Namespace) -> DumpOptions:
    """The :class:`DumpOptions` of parsed ``klogs dump`` arguments."""
    files = tuple(f for arg in args.files for f in arg.split(",") if f)
    return DumpOptions(
        files=files,
        deep_iteration=args.deep_iteration,
        print_data_log=args.print_data_log,
        verify_index_only=args.verify_index_only,
        index_sanity_check=args.index_sanity_check,
        decoder=args.decoder,
        skip_record_metadata=args.skip_record_metadata,
        max_message_size=args.max_message_size,
        max_bytes=args.max_bytes,
        json=args.json,
        kafka_version=args.kafka_version,
    )


def run(args: argparse.Namespace) -> int:
    """Entry point of ``klogs dump`` for parsed ``args``."""
    opts = options_from_args(args)
    for stream in (sys.stdout, sys.stderr):  # undecodable payloads must not kill the dump
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
    return dump(opts)


def dump(opts: DumpOptions, out: Any = None, err: Any = None) -> int:
    """Dump every file of ``opts`` to ``out``/``err`` (default stdout/stderr); return the exit code."""
    return _Dumper(opts, out if out is not None else sys.stdout, err if err is not None else sys.stderr).run()


# --- text line formats (DumpLogSegments.printBatchLevel and dumpLog) ---------------------------

def format_batch_line(batch: Mapping[str, Any], position: int) -> str:
    """The batch line of ``printBatchLevel`` for one ``BATCH_SCHEMA`` row at byte ``position``."""
    magic = batch["magic"]
    if magic >= 2:
        head = (
            f"baseOffset: {batch['baseOffset']} lastOffset: {batch['lastOffset']} count: {batch['count']}"
            f" baseSequence: {batch['baseSequence']} lastSequence: {batch['lastSequence']}"
            f" producerId: {batch['producerId']} producerEpoch: {batch['producerEpoch']}"
            f" partitionLeaderEpoch: {batch['partitionLeaderEpoch']}"
            f" isTransactional: {_bool(batch['isTransactional'])} isControl: {_bool(batch['isControl'])}"
            f" deleteHorizonMs: {_optional_long(batch['deleteHorizonMs'])}"
        )
    else:
        head = f"offset: {batch['lastOffset']}"
    return (
        f"{head} position: {position} {TIMESTAMP_TYPE_NAMES[batch['timestampType']]}: {batch['maxTimestamp']}"
        f" size: {batch['size']} magic: {magic} compresscodec: {batch['compression']}"
        f" crc: {batch['crc']} isvalid: {_bool(batch['crcValid'])}"
    )


def format_record_metadata(batch: Mapping[str, Any], record: Mapping[str, Any],
                           legacy_crc: tuple[bool, int] | None = None, *, java_tool: bool = True) -> str:
    """``| offset: O <type>: T keySize: K valueSize: V`` (+ v2 sequence/headerKeys, + legacy isValid/crc).

    ``java_tool=False``: the Scala tool's text (before Kafka 4.3), whose legacy lines end ``crc: N}``.
    """
    key, value = record["key"], record["value"]
    text = (
        f"{RECORD_INDENT} offset: {record['offset']} {TIMESTAMP_TYPE_NAMES[batch['timestampType']]}:"
        f" {record['timestamp_ms']} keySize: {-1 if key is None else len(key)}"
        f" valueSize: {-1 if value is None else len(value)}"
    )
    if batch["magic"] >= 2:
        keys = ",".join(h["key"] for h in (record["headers"] or ()))
        text += f" sequence: {record['sequence']} headerKeys: [{keys}]"
    elif legacy_crc is not None:
        valid, crc = legacy_crc
        text += f" isValid: {_bool(valid)} crc: {crc}"
        if not java_tool:
            text += "}"   # DumpLogSegments.scala: s" isValid: ${r.isValid} crc: ${r.checksum}}"
    return text


# --- Kafka-style failures --------------------------------------------------------------------------

class _Abort(Exception):
    """Kafka's tool would die here with ``java_class: message`` (text) / one error object (JSON)."""

    def __init__(self, java_class: str, message: str, path: str, position: int | None) -> None:
        super().__init__(message)
        self.java_class = java_class
        self.message = message
        self.path = path
        self.position = position


def _java_abs_path(path: str) -> str:
    """``File.getAbsolutePath``: joined to the working directory, '..' kept (unlike abspath)."""
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)


def _java_file(path: str) -> str:
    """``new File(arg).toString``: duplicate and trailing separators removed."""
    text = re.sub(r"/+", "/", path)
    return text.rstrip("/") or text


def _base_offset_of(path: str) -> int:
    """``file.getName.split("\\.")(0).toLong``."""
    name = os.path.basename(path).split(".")[0]
    value = int(name) if JAVA_LONG.match(name) else None
    if value is None or not -(2**63) <= value < 2**63:
        raise _Abort("java.lang.NumberFormatException", f'For input string: "{name}"', path, None)
    return value


@dataclass
class _FileReports:
    """The end-of-run reports of DumpLogSegments, keyed by absolute path in discovery order.

    ``java_tool``: the collections of the Java tool (Kafka 4.3+), else of the Scala tool.
    """

    java_tool: bool = True
    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def add_index_mismatches(self, path: str, found: list[tuple[int, int]]) -> None:
        """(index offset, log offset) pairs of one ``.index``, in index order."""
        if not found:
            return
        known = self.index_mismatches.setdefault(path, [])
        if self.java_tool:   # TreeMap(reverseOrder()) keyed by index offset: the last put wins
            merged = dict(known)
            merged.update(found)
            known[:] = sorted(merged.items(), reverse=True)
        else:                # a List prepended to: newest first
            known[:0] = reversed(found)

    def add_gaps(self, path: str, pairs: list[tuple[int, int]]) -> None:
        """(offset, next offset) pairs of one ``.log`` (see :class:`_GapTracker`), in log order."""
        if not pairs:
            return
        known = self.non_consecutive.setdefault(path, [])
        if self.java_tool:   # TreeMap keyed by the first offset, ascending: the last put wins
            merged = dict(known)
            merged.update(pairs)
            known[:] = sorted(merged.items())
        else:                # a List prepended to: newest first
            known[:0] = reversed(pairs)


class _GapTracker:
    """``dumpLog``'s non-consecutive offset check over the records of one file.

    Java tool (4.3+): every record whose offset is not the previous one + 1, the previous
    offset starting at -1 (so a first record other than 0 counts).  Scala tool: the first
    record only sets the previous offset.
    """

    def __init__(self, java_tool: bool) -> None:
        self.java_tool = java_tool
        self.last = -1
        self.pairs: list[tuple[int, int]] = []

    def see(self, offset: int) -> None:
        if offset != self.last + 1 and (self.java_tool or self.last != -1):
            self.pairs.append((self.last, offset))
        self.last = offset


class _Dumper:
    """One ``klogs dump`` run over ``opts.files``."""

    def __init__(self, opts: DumpOptions, out: Any, err: Any) -> None:
        self.opts = opts
        self.text = TextOutput(out, err)
        self.json = JsonOutput(out, err)
        self.reports = _FileReports(java_tool=opts.java_tool)
        self.errors = 0
        self._parser: Callable[[Mapping[str, Any]], tuple[str | None, str | None]] | None = None

    # -- driver ---------------------------------------------------------------------------------

    def run(self) -> int:
        opts = self.opts
        if opts.should_print_data:
            self._parser = _message_parser(opts.decoder, opts)
        for path in opts.files:
            try:
                self._dump_one(path)
            except _Abort as abort:
                self.errors += 1
                if not opts.json:
                    # Kafka's tool dies: the exception line, no end-of-run reports.
                    self.text.flush()
                    detail = f": {abort.message}" if abort.message else ""
                    self.text.error_line(f'Exception in thread "main" {abort.java_class}{detail}')
                    return EXIT_ERRORS
                kind = abort.java_class.rsplit(".", 1)[-1]
                message = f"{kind}: {abort.message}" if abort.message else kind
                self.json.obj({"type": "error", "file": abort.path, "position": abort.position,
                               "message": message})
        self._print_reports()
        self.text.flush()
        return EXIT_ERRORS if self.errors else EXIT_OK

    def _dump_one(self, path: str) -> None:
        opts = self.opts
        name = os.path.basename(path.rstrip("/"))
        if not opts.json:
            self.text.line(f"Dumping {_java_file(path)}")
        dot = name.rfind(".")
        suffix = name[dot:] if dot >= 0 else ""
        if not os.path.isfile(path) and suffix in (".log", ".checkpoint", ".index", ".timeindex",
                                                    ".snapshot", ".txnindex"):
            raise _Abort(JAVA_NO_SUCH_FILE, _java_file(path), path, None)
        if suffix in (".log", ".checkpoint"):
            self._dump_log(path)
        elif suffix == ".index":
            self._dump_index(path)
        elif suffix == ".timeindex":
            self._dump_time_index(path)
        elif suffix == ".snapshot":
            self._dump_producer_snapshot(path)
        elif suffix == ".txnindex":
            self._dump_txn_index(path)
        elif opts.json:
            self.json.error_line(f"Ignoring unknown file {_java_file(path)}")
        else:
            self.text.error_line(f"Ignoring unknown file {_java_file(path)}")

    # -- .log / .checkpoint ------------------------------------------------------------------------

    def _dump_log(self, path: str) -> None:
        opts = self.opts
        name = os.path.basename(path)
        if not opts.json:
            if name.endswith(".log"):
                self.text.line(f"Log starting offset: {_base_offset_of(path)}")
            elif name == BOOTSTRAP_CHECKPOINT:
                self.text.line("KRaft bootstrap snapshot")
            else:
                match = SNAPSHOT_NAME.match(name)
                if match is None:
                    raise _Abort(JAVA_NO_SUCH_ELEMENT, "No value present", path, None)
                self.text.line(f"Snapshot end offset: {int(match.group(1))}, epoch: {int(match.group(2))}")
        file_size = os.path.getsize(path)
        limit = min(file_size, opts.max_bytes)
        if opts.json:
            self._dump_log_json(path, limit)
            return
        valid_bytes = 0
        gaps = _GapTracker(opts.java_tool)
        try:
            for batch, records in _iter_log(path, limit, opts.is_deep):
                if not batch["crcValid"]:
                    self.errors += 1
                self.text.line(format_batch_line(batch, valid_bytes))
                for record in records:
                    gaps.see(record["offset"])
                    self.text.line(self._record_line(path, batch, record))
                valid_bytes = batch["position"] + batch["size"]
        finally:
            self.reports.add_gaps(_java_abs_path(path), gaps.pairs)
        self._check_tail(path, valid_bytes, limit)

    def _dump_log_json(self, path: str, limit: int) -> None:
        """``--json`` dump of a log: PERMISSIVE, every byte of ``[0, limit)`` accounted for (issue #4).

        Skipped ranges come from a PERMISSIVE record-level pass (bad CRC, bad records, bad framing,
        lying sizes, garbage, truncation); the batches between them are then printed as usual, each
        skipped range as an ``error`` object (with ``length``) at its place in position order, and a
        ``summary`` object closes the file: validBytes + skippedBytes + zeroTailBytes + cutBytes == size.
        """
        skipped = _skipped_ranges(path, limit)
        progress = Progress(limit, os.path.basename(path), self.text.err)
        valid_bytes = skipped_bytes = batches = 0
        done = 0          # end of the last batch or skipped range printed
        cut = zero_tail = 0
        gaps = _GapTracker(self.opts.java_tool)
        try:
            for start, end, skip in _good_ranges(skipped, limit):
                for batch, records in _iter_log_range_json(path, start, end, limit, self.opts.is_deep):
                    self.json.obj(_batch_json(path, batch, records))
                    for record in records:
                        gaps.see(record["offset"])
                        self.json.obj(_record_json(record))
                    batches += 1
                    valid_bytes += batch["size"]
                    done = batch["position"] + batch["size"]
                    progress.advance(batch["size"])
                if skip is None:
                    break
                if done < skip[0]:   # bytes of the good range no whole batch covers
                    skipped_bytes += self._skip_object(path, done, skip[0] - done, "undecodable bytes", limit)
                skipped_bytes += self._skip_object(path, skip[0], skip[1], skip[2], limit)
                done = skip[0] + skip[1]
            if done < limit:
                if _all_zero(path, done, limit):
                    zero_tail = limit - done   # preallocated (zero-filled) tail: not corruption
                elif limit < os.path.getsize(path):
                    cut = limit - done         # a batch cut by --max-bytes (FileRecords.slice drops it)
                else:
                    skipped_bytes += self._skip_object(path, done, limit - done, "", limit)
        finally:
            self.reports.add_gaps(_java_abs_path(path), gaps.pairs)
            progress.close()
        self.json.obj({"type": "summary", "file": path, "size": limit, "validBytes": valid_bytes,
                       "skippedBytes": skipped_bytes, "zeroTailBytes": zero_tail, "cutBytes": cut,
                       "batches": batches})

    def _skip_object(self, path: str, position: int, length: int, reason: str, limit: int) -> int:
        """Print one ``error`` object for the skipped range ``[position, position + length)``; return length."""
        self.errors += 1
        if position + length >= limit and (reason == "" or "end of the file" in reason):
            message = f"Found {length} invalid bytes at the end of {os.path.basename(path)}"  # Kafka's text
        else:
            message = f"CorruptRecordException: {reason or 'undecodable bytes'}"
        self.json.obj({"type": "error", "file": path, "position": position, "message": message,
                       "length": length})
        return length

    def _check_tail(self, path: str, valid_bytes: int, limit: int) -> None:
        """Text mode, after the last complete batch, as Kafka: fail on a bad size, else count trailing bytes."""
        framing = _framing_abort(path, valid_bytes, limit)  # e.g. a zero-filled preallocated tail
        if framing is not None:
            raise framing
        trailing = limit - valid_bytes
        if trailing > 0 and self.opts.max_bytes == INT_MAX:
            self.errors += 1
            self.text.line(f"Found {trailing} invalid bytes at the end of {os.path.basename(path)}")

    def _record_line(self, path: str, batch: Mapping[str, Any], record: Mapping[str, Any]) -> str:
        opts = self.opts
        prefix = f"{RECORD_INDENT} "
        text = ""
        if not opts.skip_record_metadata:
            legacy_crc = None
            if batch["magic"] < 2:
                legacy_crc = (record["legacy_crc_valid"], record["legacy_crc"])
            text = format_record_metadata(batch, record, legacy_crc, java_tool=opts.java_tool)
            prefix = " "
            if batch["isControl"]:
                try:
                    text += _control_suffix(path, batch, record, opts)
                except _Abort:
                    self.text.write(text)   # Kafka printed the metadata before dying (no newline)
                    raise
        if self._parser is not None and not batch["isControl"]:
            try:
                key, payload = self._parser(record)
            except KafkaFormatError as exc:  # Kafka's parser throws: the dump dies
                self.text.write(text)   # ... after printing the record's metadata (no newline)
                raise _abort_from(exc, path, "java.lang.RuntimeException") from exc
            if key is not None:
                text += f"{prefix}key: {key}"
                prefix = " "
            if payload is not None:
                text += f" payload: {payload}"
        return text

    # -- .index ------------------------------------------------------------------------------------

    def _dump_index(self, path: str) -> None:
        opts = self.opts
        base = _base_offset_of(path)
        log_path = _sibling(path, ".log")
        if not os.path.isfile(log_path):
            raise _Abort(JAVA_NO_SUCH_FILE, _java_file(log_path), path, None)
        parsed = _read_offset_index(path, base)
        if parsed.raw_entries == 0:
            if not opts.json:
                self.text.line(f"{_java_file(path)} is empty.")
            return
        if opts.index_sanity_check:
            _sanity(parsed, path)
            self._sanity_passed(path)
            return
        abs_path = _java_abs_path(path)
        log_size = os.path.getsize(log_path)
        found: list[tuple[int, int]] = []
        try:
            for i, (offset, position) in enumerate(_raw_slots(parsed, "relative_offset", "position",
                                                              base, offset_first=True)):
                if offset == base and i > 0:
                    return  # sparse file: after a crash the rest may be zero entries
                last = _first_batch_last_offset(log_path, position, opts.max_message_size, log_size, path)
                if last != offset:
                    found.append((offset, last))
                if opts.verify_index_only:
                    continue
                if opts.json:
                    self.json.obj({"type": "indexEntry", "file": path, "offset": offset,
                                   "position": position})
                else:
                    self.text.line(f"offset: {offset} position: {position}")
        finally:
            self.reports.add_index_mismatches(abs_path, found)

    def _sanity_passed(self, path: str) -> None:
        if self.opts.json:
            self.json.obj({"type": "sanityCheck", "file": path, "passed": True})
        else:
            self.text.line(f"{_java_file(path)} passed sanity check.")

    # -- .timeindex --------------------------------------------------------------------------------

    def _dump_time_index(self, path: str) -> None:
        opts = self.opts
        base = _base_offset_of(path)
        log_path = _sibling(path, ".log")
        index_path = _sibling(path, ".index")
        if not os.path.isfile(log_path):
            raise _Abort(JAVA_NO_SUCH_FILE, _java_file(log_path), path, None)
        if not os.path.isfile(index_path):
            # new OffsetIndex(file, base, maxIndexSize = -1) tries to create the missing file
            raise _Abort("java.lang.IllegalArgumentException", "Invalid max index size: -1", path, None)
        offsets = _read_offset_index(index_path, base)
        parsed = _read_time_index(path, base)
        if opts.index_sanity_check:
            _sanity(parsed, path)
            self._sanity_passed(path)
            return
        abs_path = _java_abs_path(path)
        log_size = os.path.getsize(log_path)
        prev_timestamp = -1  # RecordBatch.NO_TIMESTAMP
        for i, (timestamp, offset) in enumerate(_raw_slots(parsed, "timestamp", "relative_offset",
                                                           base, offset_first=False)):
            if offset == base and i > 0:
                return
            position = _index_lookup(offsets, offset)
            batch_last, max_ts = _max_timestamp_of_batch_at(log_path, position, offset, log_size)
            if batch_last is None:
                self.reports.time_not_found.setdefault(abs_path, []).append((offset, -1))
            elif batch_last != offset:
                self.reports.time_not_found.setdefault(abs_path, []).append((offset, batch_last))
            else:
                if max_ts != timestamp:
                    self.reports.time_mismatches.setdefault(abs_path, []).append((timestamp, max_ts))
                if prev_timestamp >= timestamp:
                    self.reports.time_out_of_order.setdefault(abs_path, []).append(
                        (timestamp, prev_timestamp))
            if not opts.verify_index_only:
                if opts.json:
                    self.json.obj({"type": "timeIndexEntry", "file": path, "timestamp": timestamp,
                                   "offset": offset})
                else:
                    self.text.line(f"timestamp: {timestamp} offset: {offset}")
            prev_timestamp = timestamp

    # -- .snapshot / .txnindex -----------------------------------------------------------------------

    def _dump_producer_snapshot(self, path: str) -> None:
        try:
            entries = _read_producer_snapshot(path)
        except KafkaFormatError as exc:
            self.errors += 1
            if self.opts.json:
                self.json.obj({"type": "error", "file": path, "position": exc.position,
                               "message": exc.reason})
            else:
                self.text.error_line(exc.reason)  # Kafka catches CorruptSnapshotException and goes on
            return
        for entry in entries:
            if self.opts.json:
                self.json.obj(_snapshot_json(path, entry))
            else:
                line = entry.dump_line()
                if self.opts.java_tool and not entry.has_batch_metadata:
                    line = line.rstrip(" ")   # only the Scala tool prints "lastTimestamp: T " here
                self.text.line(line)

    def _dump_txn_index(self, path: str) -> None:
        for txn in _read_txn_index(path):
            if self.opts.json:
                self.json.obj({"type": "abortedTxn", "file": path, "version": txn.version,
                               "producerId": txn.producer_id, "firstOffset": txn.first_offset,
                               "lastOffset": txn.last_offset, "lastStableOffset": txn.last_stable_offset})
            else:
                self.text.line(txn.dump_line())

    # -- end-of-run reports (stderr, in DumpLogSegments.main's order) -------------------------------------

    def _print_reports(self) -> None:
        r = self.reports
        if self.opts.json:
            for kind, table, a, b in (
                ("indexOffsetMismatch", r.index_mismatches, "indexOffset", "logOffset"),
                ("timeIndexTimestampMismatch", r.time_mismatches, "indexTimestamp", "logTimestamp"),
                ("timeIndexOutOfOrder", r.time_out_of_order, "indexTimestamp", "previousIndexTimestamp"),
                ("timeIndexOffsetNotFound", r.time_not_found, "indexOffset", "logOffset"),
                ("nonConsecutiveOffsets", r.non_consecutive, "offset", "nextOffset"),
            ):
                for file_name, pairs in table.items():
                    for x, y in pairs:
                        self.json.obj({"type": kind, "file": file_name, a: x, b: y})
            return
        err = self.text.error_line
        for file_name, pairs in r.index_mismatches.items():
            err(f"Mismatches in :{file_name}")
            for x, y in pairs:
                err(f"  Index offset: {x}, log offset: {y}")
        for file_name, pairs in r.time_mismatches.items():
            err(f"Found timestamp mismatch in :{file_name}")
            for x, y in pairs:
                err(f"  Index timestamp: {x}, log timestamp: {y}")
        for file_name, pairs in r.time_out_of_order.items():
            err(f"Found out of order timestamp in :{file_name}")
            for x, y in pairs:
                err(f"  Index timestamp: {x}, Previously indexed timestamp: {y}")
        for file_name, pairs in r.time_not_found.items():
            if r.java_tool:
                err(f"The following indexed offsets are not found in :{file_name}")
            else:
                err("The following indexed offsets are not found in the log.")
            for x, y in pairs:
                err(f"Indexed offset: {x}, found log offset: {y}")
        for file_name, pairs in r.non_consecutive.items():
            err(f"Non-consecutive offsets in {file_name}")
            for x, y in pairs:
                err(f"  {x} is followed by {y}")


def _sibling(path: str, suffix: str) -> str:
    """``new File(parent, name.split("\\.")(0) + suffix)``."""
    name = os.path.basename(path)
    return os.path.join(os.path.dirname(os.path.abspath(path)), name.split(".")[0] + suffix)


# --- JSON objects --------------------------------------------------------------------------------

def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _batch_json(path: str, batch: Mapping[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    base = batch["baseOffset"]
    if base is None and records:  # legacy compressed wrapper: first inner offset
        base = records[0]["offset"]
    return {
        "type": "batch", "file": path, "position": batch["position"], "baseOffset": base,
        "lastOffset": batch["lastOffset"], "count": batch["count"], "magic": batch["magic"],
        "compression": batch["compression"], "crc": batch["crc"], "isValid": bool(batch["crcValid"]),
        "producerId": batch["producerId"], "producerEpoch": batch["producerEpoch"],
        "baseSequence": batch["baseSequence"], "partitionLeaderEpoch": batch["partitionLeaderEpoch"],
        "isTransactional": bool(batch["isTransactional"]), "isControl": bool(batch["isControl"]),
        "timestampType": batch["timestampType"], "maxTimestamp": batch["maxTimestamp"], "size": batch["size"],
    }


def _record_json(record: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "record", "offset": record["offset"], "timestamp": record["timestamp_ms"],
        "timestampType": record["timestampType"], "key": _b64(record["key"]), "value": _b64(record["value"]),
        "headers": [{"key": h["key"], "value": _b64(h["value"])} for h in (record["headers"] or ())],
        "sequence": record["sequence"], "isControl": bool(record["isControl"]),
    }


# --- adapters over the format library --------------------------------------------------------------
# Everything below turns the library's public API into the plain rows this module prints.


def _abort_from(exc: KafkaFormatError, path: str, java_class: str = JAVA_INVALID_RECORD) -> _Abort:
    message = _kafka_record_message(exc) if java_class == JAVA_INVALID_RECORD else None
    if message is None:
        message = exc.reason if exc.position is None else str(exc)
    return _Abort(java_class, message, path, exc.position)


_EXPECTED_BYTES = re.compile(r"^(-?\d+) bytes (of record|read)$")
_FOUND_INT = re.compile(r"^(-?\d+)(?: bytes remaining)?$")


def _kafka_record_message(exc: KafkaFormatError) -> str | None:
    """The message of the ``InvalidRecordException`` ``DefaultRecord.readFrom(ByteBuffer, ...)``
    throws for the record-level check the library reports (None when it is not one of them)."""
    reason = exc.reason
    expected = _EXPECTED_BYTES.match(exc.expected or "")
    found = _FOUND_INT.match(exc.found or "")
    if reason == "Invalid record size" and expected and found:
        size, got = expected.group(1), found.group(1)
        if expected.group(2) == "read":
            return (f"Invalid record size: expected to read {size} bytes in record payload,"
                    f" but instead read {got}")
        return (f"Invalid record size: expected {size} bytes in record payload,"
                f" but instead the buffer has only {got} remaining bytes.")
    if reason == "invalid number of record headers" and found:
        count = int(found.group(1))
        if count < 0:
            return f"Found invalid number of record headers {count}"
        return (f"Found invalid number of record headers. {count} is larger than the remaining size"
                " of the buffer")
    if reason == "invalid negative header key size" and found:
        return f"Invalid negative header key size {found.group(1)}"
    return None


def _iter_log(path: str, limit: int, deep: bool) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(batch row, its record rows) for every complete batch in ``[0, limit)``; records only if ``deep``.

    Where the library stops on bad bytes at position P, the batches before P are
    still yielded (Kafka prints them before dying), then the failure is raised as
    :class:`_Abort` with Kafka's message when Kafka's framing check is what fails.
    """
    done = 0
    try:
        for batch, rows in _iter_range(path, 0, limit, deep):
            done = batch["position"] + batch["size"]
            yield batch, rows
        return
    except KafkaFormatError as exc:
        failure = exc
    bad = failure.position if failure.position is not None else done
    if done < bad <= limit:
        try:   # the good batches between the last one printed and the failure
            for batch, rows in _iter_range(path, done, bad, deep):
                done = batch["position"] + batch["size"]
                yield batch, rows
        except KafkaFormatError:
            pass
    framing = _framing_abort(path, done, limit)
    if framing is not None:
        raise framing from failure
    if deep and done < limit:
        # Kafka prints the batch line, then dies iterating its records
        try:
            for batch, _ in _iter_range(path, done, limit, False, scan_end=done + 1):
                yield batch, []
                break
        except KafkaFormatError:
            pass
    raise _abort_from(failure, path) from failure


_Skip = tuple[int, int, str]   # (position, length, reason) of a skipped byte range


def _skipped_ranges(path: str, limit: int) -> list[_Skip]:
    """Every range of ``[0, limit)`` a PERMISSIVE record-level decode skips, in position order.

    Record level, because only there does the library treat a bad CRC (whose size field cannot
    be trusted: it resynchronises) and undecodable records as skipped ranges.
    """
    found: list[_Skip] = []

    def on_skip(r: Any) -> None:
        found.append((int(r.position), int(r.length), str(r.reason)))

    try:
        for _ in api.decode_segment(path, end=limit, mode="PERMISSIVE", on_skip=on_skip,
                                    granularity="record", include_headers=False):
            pass
    except KafkaFormatError as exc:  # PERMISSIVE should not raise; if it does, the rest is skipped
        at = max((p + n for p, n, _ in found), default=0)
        if exc.position is not None and at <= exc.position < limit:
            at = exc.position
        if at < limit:
            found.append((at, limit - at, exc.reason))
    ranges = [api.SkippedRange(path, p, n, r) for p, n, r in found]
    return [(r.position, r.length, r.reason) for r in audit.merge_skipped_ranges(ranges, limit, path)]


def _good_ranges(skipped: list[_Skip], limit: int) -> Iterator[tuple[int, int, _Skip | None]]:
    """(start, end, the skipped range that ends the good range or None) covering ``[0, limit)``."""
    at = 0
    for skip in skipped:
        yield at, skip[0], skip
        at = skip[0] + skip[1]
    yield at, limit, None


def _iter_log_range_json(path: str, start: int, end: int, limit: int,
                         deep: bool) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Whole batches starting in ``[start, end)`` that end by ``end`` (by ``limit`` for the last range)."""
    if end <= start:
        return
    bound = limit if end >= limit else end
    try:
        for batch, rows in _iter_range(path, start, bound, deep, scan_end=end):
            yield batch, rows
    except KafkaFormatError:
        return  # the rest of the range is reported as skipped by the caller


def _all_zero(path: str, start: int, end: int) -> bool:
    """Whether ``[start, end)`` of ``path`` holds only zero bytes (read in bounded chunks)."""
    with open(path, "rb") as fh:
        fh.seek(start)
        while start < end:
            chunk = fh.read(min(LOOKUP_READ_SIZE, end - start))
            if not chunk or chunk.count(0) != len(chunk):
                return False
            start += len(chunk)
    return True


def _framing_abort(path: str, position: int, limit: int) -> _Abort | None:
    """Kafka's ``FileLogInputStream.nextBatch`` size check at ``position`` (None when it passes)."""
    if limit - position <= HEADER_SIZE_UP_TO_MAGIC:
        return None
    with open(path, "rb") as fh:
        fh.seek(position)
        _, size = FRAME.unpack(fh.read(FRAME.size))
    if size >= RECORD_OVERHEAD_V0:
        return None
    return _Abort(
        JAVA_CORRUPT_RECORD,
        f"Found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0})"
        f" in file {_java_file(path)}.",
        path, position,
    )


def _iter_range(path: str, start: int, limit: int, deep: bool, *,
                scan_end: int | None = None) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Whole batches in ``[start, limit)`` (only those starting before ``scan_end`` if given)."""
    # batch rows: CRC checked and reported in crcValid; records: not checked (Kafka's deep
    # iteration decodes the records of a batch whatever its CRC)
    batches = api.decode_segment(path, start=start, end=limit if scan_end is None else scan_end,
                                 granularity="batch", verify_crc=True)
    records = (
        _record_rows(api.decode_segment(path, start=start, end=limit, granularity="record",
                                        verify_crc=False))
        if deep else iter(())
    )
    pending: dict[str, Any] | None = None
    deferred: KafkaFormatError | None = None   # a failure in a later batch's records
    for table in batches:
        for batch in table.to_pylist():
            if batch["position"] + batch["size"] > limit:
                return  # FileRecords.slice(0, maxBytes): only whole batches
            rows: list[dict[str, Any]] = []
            if deep:
                if deferred is not None:
                    raise deferred
                while True:
                    if pending is None:
                        try:
                            pending = next(records, None)
                        except KafkaFormatError as exc:
                            # looking for more records of this batch read into the next one: its
                            # failure counts only if that batch is reached (not past --max-bytes)
                            if exc.position is None or exc.position < batch["position"] + batch["size"]:
                                raise
                            deferred, records = exc, iter(())
                    if pending is None or pending["position"] != batch["position"]:
                        break
                    rows.append(pending)
                    pending = None
                if batch["magic"] < 2:
                    _add_legacy_crcs(path, batch, rows)
            yield batch, rows


def _record_rows(tables: Iterator[Any]) -> Iterator[dict[str, Any]]:
    import pyarrow as pa

    for table in tables:
        micros = table.column("timestamp").cast(pa.int64()).to_numpy(zero_copy_only=False)
        ms = (micros // 1000).tolist()   # floor: -1 ms is stored as -1000 us
        cols = {name: table.column(name).to_pylist() for name in (
            "key", "value", "offset", "timestampType", "headers", "sequence", "isControl", "position")}
        for i in range(table.num_rows):
            row = {name: values[i] for name, values in cols.items()}
            row["timestamp_ms"] = ms[i]
            yield row


def _add_legacy_crcs(path: str, batch: Mapping[str, Any], rows: list[dict[str, Any]]) -> None:
    """``isValid``/``crc`` of each legacy record (``AbstractLegacyRecordBatch`` as a record).

    Uncompressed: the record is the shallow message itself.  Compressed: the
    inner messages of the wrapper, read from the decompressed value (their CRCs
    are not part of the decoded columns).
    """
    if batch["compression"] == "none":
        for row in rows:
            row["legacy_crc_valid"] = bool(batch["crcValid"])
            row["legacy_crc"] = batch["crc"]
        return
    for row, (crc, valid) in zip(rows, _inner_crcs(path, batch), strict=False):
        row["legacy_crc_valid"] = valid
        row["legacy_crc"] = crc


def _inner_crcs(path: str, batch: Mapping[str, Any]) -> list[tuple[int, bool]]:
    magic = batch["magic"]
    with open(path, "rb") as fh:
        fh.seek(batch["position"])
        entry = fh.read(batch["size"])
    header = legacy.MESSAGE_V0 if magic == 0 else legacy.MESSAGE_V1
    pos = legacy.ENTRY.size + header.size
    (key_len,) = LENGTH.unpack_from(entry, pos)
    pos += LENGTH.size + max(key_len, 0)
    (value_len,) = LENGTH.unpack_from(entry, pos)
    pos += LENGTH.size
    codec = int(entry[legacy.MAGIC_OFFSET + 1]) & legacy.CODEC_MASK  # attributes follow the magic
    inner = compression.decompress(codec, entry[pos:pos + max(value_len, 0)], magic=magic,
                                   max_output=compression.DEFAULT_MAX_DECOMPRESSED,
                                   path=path, position=batch["position"])
    out = []
    at = 0
    while len(inner) - at >= legacy.ENTRY.size:
        _, size = legacy.ENTRY.unpack_from(inner, at)
        end = at + legacy.ENTRY.size + size
        if size < RECORD_OVERHEAD_V0 or end > len(inner):
            break
        inner_magic = inner[at + legacy.MAGIC_OFFSET]
        crc, _, _ = legacy.read_message_header(inner, at, inner_magic)
        out.append((crc, crc32(inner[at + legacy.MAGIC_OFFSET:end]) == crc))
        at = end
    return out


def _control_suffix(path: str, batch: Mapping[str, Any], record: Mapping[str, Any], opts: DumpOptions) -> str:
    """The control-record part of a record line (endTxnMarker / KRaft JSON / controlType)."""
    key, value = record["key"], record["value"]
    try:
        control.parse_control_key(key)   # ControlRecordType.parseTypeId checks
        type_id = int(control.CONTROL_KEY.unpack_from(key)[1])
        if type_id in (0, 1):
            marker = control.parse_end_txn_marker(key, value)
            return (f" endTxnMarker: {CONTROL_TYPE_NAMES[type_id]}"
                    f" coordinatorEpoch: {marker.coordinator_epoch}")
        if type_id in KRAFT_CONTROL_LABELS:
            return str(kraft_control.format_kraft_control(type_id, value or b"",
                                                  leader_change_json=opts.since(*LEADER_CHANGE_JSON_SINCE)))
        return f" controlType: {CONTROL_TYPE_NAMES.get(type_id, 'UNKNOWN')}({type_id})"
    except KafkaFormatError as exc:
        raise _abort_from(exc, path) from exc


_Parser = Callable[[Mapping[str, Any]], tuple[str | None, str | None]]


def _message_parser(decoder: str | None, opts: DumpOptions) -> _Parser:
    """The ``MessageParser`` for ``decoder``: (key text or None, payload text or None) per record.

    Kafka 4.1+ decodes both coordinator topics with ``CoordinatorRecordMessageParser``: its
    missing-key message says "using the specified decoder", and the transaction log prints JSON.
    """
    coordinator_json = opts.since(*TRANSACTION_LOG_JSON_SINCE)
    if decoder is None:
        def parse_plain(record: Mapping[str, Any]) -> tuple[str | None, str | None]:
            key, value = record["key"], record["value"]
            return (None if key is None else _java_string(key),
                    None if value is None else _java_string(value))
        return parse_plain
    if decoder == "offsets":
        def parse_offsets(record: Mapping[str, Any]) -> tuple[str | None, str | None]:
            if record["key"] is None and coordinator_json:
                raise KafkaFormatError(f"Failed to decode message at offset {record['offset']} using the "
                                       "specified decoder (message had a missing key)")
            return consumer_offsets.format_offsets_record(  # type: ignore[no-any-return]
                record["key"], record["value"], record["offset"])
        return parse_offsets
    if decoder == "transaction-log":
        def parse_txn(record: Mapping[str, Any]) -> tuple[str | None, str | None]:
            if coordinator_json:
                return transaction_log.format_transaction_log_json(  # type: ignore[no-any-return]
                    record["key"], record["value"], record["offset"],
                    state_names=opts.since(*TRANSACTION_STATE_NAMES_SINCE))
            return transaction_log.format_transaction_log_record(  # type: ignore[no-any-return]
                record["key"], record["value"])
        return parse_txn
    def parse_metadata(record: Mapping[str, Any]) -> tuple[str | None, str | None]:
        # ClusterMetadataLogMessageParser: no key; the value as {"type","version","data"} or an error text
        return None, cluster_metadata.format_metadata_record(record["value"], record["offset"])
    return parse_metadata


def _read_offset_index(path: str, base: int) -> Any:
    """The parsed ``.index`` (every full slot in ``raw``, as ``OffsetIndex.entry(i)`` sees them)."""
    try:
        return index.read_offset_index(path, base)
    except KafkaFormatError as exc:
        raise _abort_from(exc, path, JAVA_CORRUPT_INDEX) from exc


def _read_time_index(path: str, base: int) -> Any:
    """The parsed ``.timeindex``."""
    try:
        return index.read_time_index(path, base)
    except KafkaFormatError as exc:
        raise _abort_from(exc, path, JAVA_CORRUPT_INDEX) from exc


def _raw_slots(parsed: Any, first: str, second: str, base: int, offset_first: bool) -> list[tuple[int, int]]:
    """Every full slot as absolute pairs: (offset, position) or (timestamp, offset)."""
    a = parsed.raw[first].astype("int64").tolist()
    b = parsed.raw[second].astype("int64").tolist()
    if offset_first:
        return [(base + x, y) for x, y in zip(a, b, strict=True)]
    return [(x, base + y) for x, y in zip(a, b, strict=True)]


def _sanity(parsed: Any, path: str) -> None:
    """Run the broker's ``sanityCheck``; Kafka's CorruptIndexException → abort."""
    result = parsed.sanity_check()
    if not result.ok:
        raise _Abort(JAVA_CORRUPT_INDEX, str(result.message), path, None)


def _index_lookup(parsed: Any, target: int) -> int:
    """``OffsetIndex.lookup(target).position``."""
    return int(parsed.lookup(target).position)


def _first_batch_last_offset(log_path: str, position: int, max_message_size: int, log_size: int,
                             index_path: str) -> int:
    """``fileRecords.slice(position, maxMessageSize).batches.iterator.next().lastOffset``."""
    if position > log_size:
        raise _Abort("java.lang.IllegalArgumentException",
                     f"Slice from position {position} exceeds end position of FileRecords(size={log_size},"
                     f" file={_java_file(log_path)}, start=0, end={INT_MAX})", index_path, None)
    end = min(log_size, position + max_message_size)
    for batch, _ in _iter_log_range(log_path, position, end):
        return int(batch["lastOffset"])
    # Kafka: slice.batches.iterator.next() on an empty slice (batch larger than --max-message-size)
    raise _Abort(JAVA_NO_SUCH_ELEMENT, "", index_path, position)


def _iter_log_range(path: str, start: int, end: int) -> Iterator[tuple[dict[str, Any], list[Any]]]:
    try:
        for table in api.decode_segment(path, start=start, end=end, granularity="batch",
                                        read_size=LOOKUP_READ_SIZE):
            for batch in table.to_pylist():
                if batch["position"] + batch["size"] > end:
                    return
                yield batch, []
    except KafkaFormatError as exc:
        raise _abort_from(exc, path) from exc


def _max_timestamp_of_batch_at(log_path: str, position: int, target: int,
                               log_size: int) -> tuple[int | None, int]:
    """First batch from ``position`` with lastOffset >= target: (its lastOffset, max record timestamp)."""
    try:
        for table in api.decode_segment(log_path, start=position, end=log_size, granularity="batch",
                                        read_size=LOOKUP_READ_SIZE):
            for batch in table.to_pylist():
                if batch["position"] + batch["size"] > log_size:
                    return None, -1
                if batch["lastOffset"] < target:
                    continue
                if batch["lastOffset"] != target:
                    return batch["lastOffset"], -1
                max_ts = -1
                end = batch["position"] + batch["size"]
                for rec in _record_rows(api.decode_segment(log_path, start=batch["position"], end=end,
                                                           granularity="record", verify_crc=False)):
                    if rec["position"] == batch["position"]:
                        max_ts = max(max_ts, rec["timestamp_ms"])
                return batch["lastOffset"], max_ts
    except KafkaFormatError as exc:
        raise _abort_from(exc, log_path) from exc
    return None, -1


def _read_producer_snapshot(path: str) -> list[Any]:
    """Entries of a producer ``.snapshot`` (``ProducerStateManager.readSnapshot``)."""
    return list(snapshot.read_producer_snapshot(path).entries)


def _snapshot_json(path: str, e: Any) -> dict[str, Any]:
    has_batch = e.has_batch_metadata
    return {
        "type": "producerSnapshotEntry", "file": path, "producerId": e.producer_id,
        "producerEpoch": e.epoch, "coordinatorEpoch": e.coordinator_epoch,
        "currentTxnFirstOffset": e.current_txn_first_offset if e.has_open_txn else None,
        "lastTimestamp": e.timestamp,
        "firstSequence": e.first_sequence if has_batch else None,
        "lastSequence": e.last_sequence if has_batch else None,
        "lastOffset": e.last_offset if has_batch else None,
        "offsetDelta": e.offset_delta if has_batch else None,
    }


def _read_txn_index(path: str) -> list[Any]:
    """Entries of a ``.txnindex`` (``TransactionIndex.allAbortedTxns``)."""
    try:
        return list(txnindex.read_transaction_index(path).entries)
    except KafkaFormatError as exc:
        # TransactionIndex.iterable names the file: "... in transaction index <abs path>, current ..."
        message = exc.reason.replace(" in transaction index,",
                                     f" in transaction index {_java_abs_path(path)},")
        raise _Abort(JAVA_KAFKA, message, path, exc.position) from exc
