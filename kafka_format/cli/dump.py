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
  (``The following indexed offsets are not found in :<path>``), the Scala tool's does not;
* a file name without a '.': the Java tool ignores the file, the Scala tool dies
  (``StringIndexOutOfBoundsException``);
* a decoded payload with ``--skip-record-metadata`` and no key: the Java tool prints it after the
  record indent (``| payload: ...``), the Scala tool after a space (`` payload: ...``);
* ``--cluster-metadata-decoder``: each release reads with its own metadata schemas
  (:mod:`kafka_format.internal.schemas.releases`);
* ``--share-group-state-decoder`` (KIP-932): Kafka 4.4's layouts and text only; refused with an
  earlier ``--kafka-version``;
* ``--remote-log-metadata-decoder``: from 4.0 a remote segment's text ends ``txnIdxEmpty=...``, and a
  record without a value fails with the JVM's text naming the tool's ``Record`` class
  (``org.apache.kafka.common.record.internal.Record`` in the Java tool).

The order in which the end-of-run reports list *files* is that of each tool's hash map
(``java.util.HashMap`` / Scala ``mutable.HashMap``, keyed by absolute path), reproduced by
:mod:`kafka_format.cli.jvm_maps`.  ``--json`` writes one object per line instead (docs/jobs/):
``batch``, ``record`` (deep iteration; with a decoder each gains the decoded ``payload`` text,
and ``--remote-log-metadata-decoder`` adds the value as a ``remoteLogMetadata`` object) and ``error``
objects, plus entries of index / snapshot / txn-index files (its report objects come in dump order).

Files are local paths or URIs of any store the jobs read (:mod:`kafka_format.cli.dump_source`;
credentials inside a URI are never shown).  They are dispatched by suffix as Kafka does
(``.log`` and KRaft ``.checkpoint`` → log dump, ``.index``, ``.timeindex``, ``.snapshot``,
``.txnindex``; anything else → ``Ignoring unknown file``, and exit code 1: nothing of it was
dumped).  Reading is streamed through the format library
(``kafka_format.records.file_records.decode_segment``); a ``.log`` is never loaded whole
and ``--max-bytes`` bounds what is read.

Errors: where Kafka's tool dies with an exception (bad framing, an undecodable
record, a corrupt index), text mode prints the exception line on stderr and
stops, as Kafka does; ``--json`` prints an ``error`` object and goes on with the
next file.  Either way the exit code is 1.  ``--json`` reads a log in PERMISSIVE
mode and accounts for every byte of it (issue #4): each skipped range is an
``error`` object with its ``length``, in position order among the batches, and a
``summary`` object (size, validBytes, skippedBytes, zeroTailBytes, cutBytes,
batches; the last four add up to size) closes the file.  A CRC mismatch is printed
(``isvalid: false``) and also makes the exit code 1; missing library modules,
bad arguments or a store that cannot be read (one line ``klogs dump: ...``) give 2.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from kafka_format.cli import dump_source as source
from kafka_format.cli.dump_files import (
    IndexDump,
    LogDump,
)
from kafka_format.cli.dump_format import (
    DEFAULT_KAFKA_VERSION,
    DEFAULT_MAX_MESSAGE_SIZE,
    DUMPED_SUFFIXES,
    EXIT_ERRORS,
    EXIT_OK,
    EXIT_USAGE,
    JAVA_NO_SUCH_FILE,
    JAVA_STRING_INDEX,
    KAFKA_VERSION,
    RECORD_INDENT,
    SHARE_GROUP_STATE_DECODER,
    SHARE_GROUP_STATE_SINCE,
    DumpOptions,
    format_batch_line,
    format_record_metadata,
)
from kafka_format.cli.dump_read import (
    DumpAbort,
    _message_parser,
)
from kafka_format.common.limits import INT32_MAX
from kafka_format.common.redaction import redact

__all__ = [
    "RECORD_INDENT",
    "DumpOptions",
    "add_arguments",
    "dump",
    "format_batch_line",
    "format_record_metadata",
    "options_from_args",
    "run",
]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0 or value > INT32_MAX:
        raise argparse.ArgumentTypeError(f"must be between 0 and {INT32_MAX}: {value}")
    return value


def _kafka_version(text: str) -> str:
    if KAFKA_VERSION.match(text) is None:
        raise argparse.ArgumentTypeError(f"not a Kafka version (like 4.4 or 3.9.1): {text!r}")
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``klogs dump`` flags on ``parser`` (docs/jobs/)."""
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help=".log, .index, .timeindex, .snapshot, .txnindex or KRaft .checkpoint files: "
                             "local paths or URIs (file://, s3://, s3a://, gs://, hdfs://; credentials in "
                             "a URI are never shown); comma-separated lists are accepted too, as "
                             "kafka-dump-log's --files")
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
    decoders.add_argument("--remote-log-metadata-decoder", dest="decoder", action="store_const",
                          const="remote-log-metadata",
                          help="decode tiered storage's __remote_log_metadata records (TopicBasedRemoteLogMetadataManager)")
    decoders.add_argument("--share-group-state-decoder", dest="decoder", action="store_const",
                          const=SHARE_GROUP_STATE_DECODER,
                          help="decode the share coordinator's __share_group_state records (KIP-932; "
                               f"Kafka {SHARE_GROUP_STATE_SINCE[0]}.{SHARE_GROUP_STATE_SINCE[1]}'s layouts and text)")
    parser.add_argument("--skip-record-metadata", action="store_true",
                        help="omit per-record metadata in deep iteration")
    parser.add_argument("--max-message-size", type=_positive_int, default=DEFAULT_MAX_MESSAGE_SIZE,
                        metavar="N", help="largest batch read at an index position (default %(default)s)")
    parser.add_argument("--max-bytes", type=_positive_int, default=INT32_MAX, metavar="N",
                        help="read only the first N bytes of each .log")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("--kafka-version", type=_kafka_version, default=DEFAULT_KAFKA_VERSION,
                        metavar="VERSION",
                        help="print what this Kafka release's kafka-dump-log prints (its text, its "
                             "metadata schemas): 4.3 and later (default %(default)s) or earlier, e.g. 3.9")
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
    if opts.decoder == SHARE_GROUP_STATE_DECODER and not opts.since(*SHARE_GROUP_STATE_SINCE):
        print(f"klogs dump: --share-group-state-decoder prints Kafka {SHARE_GROUP_STATE_SINCE[0]}."
              f"{SHARE_GROUP_STATE_SINCE[1]}'s text, not {opts.kafka_version}'s (Kafka 3.9's kafka-dump-log has "
              "no such option; its share-group records changed layout up to 4.2)", file=sys.stderr)
        return EXIT_USAGE
    for stream in (sys.stdout, sys.stderr):  # undecodable payloads must not kill the dump
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
    return dump(opts)


def dump(opts: DumpOptions, out: Any = None, err: Any = None) -> int:
    """Dump every file of ``opts`` to ``out``/``err`` (default stdout/stderr); return the exit code."""
    return _Dumper(opts, out if out is not None else sys.stdout, err if err is not None else sys.stderr).run()


class _Dumper(LogDump, IndexDump):
    """One ``klogs dump`` run over ``opts.files``."""

    def run(self) -> int:
        opts = self.opts
        if opts.should_print_data:
            self._parser = _message_parser(opts.decoder, opts)
        for path in opts.files:
            try:
                self._dump_one(path)
            except DumpAbort as abort:
                self.errors += 1
                if not opts.json:
                    # Kafka's tool dies: the exception line, no end-of-run reports.
                    self.text.flush()
                    detail = f": {abort.message}" if abort.message else ""
                    self.text.error_line(f'Exception in thread "main" {abort.java_class}{detail}')
                    return EXIT_ERRORS
                kind = abort.java_class.rsplit(".", 1)[-1]
                message = f"{kind}: {abort.message}" if abort.message else kind
                self.json.obj({"type": "error", "file": redact(abort.path), "position": abort.position,
                               "message": message})
            except BrokenPipeError:
                raise
            except (source.DumpIOError, OSError) as exc:   # the store (or disk) could not be read: one line
                self.text.flush()
                if isinstance(exc, source.DumpIOError):
                    message = str(exc)
                else:
                    message = f"{source.shown(path)}: cannot read file: {exc.strerror or exc}"
                self.text.error_line(f"klogs dump: {message}")
                return EXIT_USAGE
        self._print_reports()
        self.text.flush()
        return EXIT_ERRORS if self.errors else EXIT_OK

    def _dump_one(self, path: str) -> None:
        opts = self.opts
        if not opts.json:
            self.text.line(f"Dumping {source.shown(path)}")
        name = source.name(path)
        dot = name.rfind(".")
        if dot < 0 and not opts.java_tool and not opts.json:
            # the Scala tool's filename.substring(filename.lastIndexOf(".")) on a name without a dot
            length = len(name.encode("utf-16-le", "surrogatepass")) // 2
            raise DumpAbort(JAVA_STRING_INDEX, f"begin -1, end {length}, length {length}", path, None)
        suffix = name[dot:] if dot >= 0 else ""
        if suffix in DUMPED_SUFFIXES and not source.is_file(path):
            raise DumpAbort(JAVA_NO_SUCH_FILE, source.shown(path), path, None)
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
        else:
            # Kafka's text, but not a success: nothing of the file was dumped (Kafka exits 0)
            self.errors += 1
            (self.json if opts.json else self.text).error_line(f"Ignoring unknown file {source.shown(path)}")

    # -- .log / .checkpoint ------------------------------------------------------------------------

    def _print_reports(self) -> None:
        """DumpLogSegments.main's end-of-run reports (stderr; ``--json``: one object per pair, in
        dump order)."""
        r = self.reports
        if self.opts.json:
            for kind, report, a, b in (
                ("indexOffsetMismatch", r.index_mismatches, "indexOffset", "logOffset"),
                ("timeIndexTimestampMismatch", r.time_mismatches, "indexTimestamp", "logTimestamp"),
                ("timeIndexOutOfOrder", r.time_out_of_order, "indexTimestamp", "previousIndexTimestamp"),
                ("timeIndexOffsetNotFound", r.time_not_found, "indexOffset", "logOffset"),
                ("nonConsecutiveOffsets", r.non_consecutive, "offset", "nextOffset"),
            ):
                for file_name, pairs in report.pairs.items():
                    for x, y in pairs:
                        self.json.obj({"type": kind, "file": file_name, a: x, b: y})
            return
        err = self.text.error_line
        for file_name in r.index_mismatches.files():
            err(f"Mismatches in :{file_name}")
            for x, y in r.index_mismatches.pairs[file_name]:
                err(f"  Index offset: {x}, log offset: {y}")
        for file_name in r.time_mismatches.files():
            err(f"Found timestamp mismatch in :{file_name}")
            for x, y in r.time_mismatches.pairs[file_name]:
                err(f"  Index timestamp: {x}, log timestamp: {y}")
        for file_name in r.time_out_of_order.files():
            err(f"Found out of order timestamp in :{file_name}")
            for x, y in r.time_out_of_order.pairs[file_name]:
                err(f"  Index timestamp: {x}, Previously indexed timestamp: {y}")
        for file_name in r.time_not_found.files():
            if r.java_tool:
                err(f"The following indexed offsets are not found in :{file_name}")
            else:
                err("The following indexed offsets are not found in the log.")
            for x, y in r.time_not_found.pairs[file_name]:
                err(f"Indexed offset: {x}, found log offset: {y}")
        for file_name in r.non_consecutive.files():
            err(f"Non-consecutive offsets in {file_name}")
            for x, y in r.non_consecutive.pairs[file_name]:
                err(f"  {x} is followed by {y}")
