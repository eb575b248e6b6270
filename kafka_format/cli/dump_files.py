"""``klogs dump`` per file kind: ``.log`` (text and ``--json``), ``.index``, ``.timeindex``,
producer ``.snapshot`` and ``.txnindex``, with the end-of-run reports they feed."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_format.cli import dump_source as source
from kafka_format.cli.dump_format import (
    BOOTSTRAP_CHECKPOINT,
    JAVA_NO_SUCH_ELEMENT,
    JAVA_NO_SUCH_FILE,
    RECORD_INDENT,
    SNAPSHOT_NAME,
    DumpOptions,
    _batch_json,
    _record_json,
    format_batch_line,
    format_record_metadata,
)
from kafka_format.cli.dump_read import (
    DumpAbort,
    _abort_from,
    _all_zero,
    _base_offset_of,
    _control_suffix,
    _decoded_json,
    _first_batch_last_offset,
    _framing_abort,
    _good_ranges,
    _index_lookup,
    _iter_log,
    _iter_log_range_json,
    _max_timestamp_of_batch_at,
    _raw_slots,
    _read_offset_index,
    _read_producer_snapshot,
    _read_time_index,
    _read_txn_index,
    _sanity,
    _skipped_ranges,
    _snapshot_json,
)
from kafka_format.cli.jvm_maps import JavaHashMap, ScalaHashMap
from kafka_format.cli.output import JsonOutput, Progress, TextOutput
from kafka_format.common.errors import KafkaFormatError
from kafka_format.common.limits import INT32_MAX
from kafka_format.common.redaction import redact


class Report:
    """One end-of-run report of DumpLogSegments: (x, y) pairs per file (absolute path, in dump order),
    and the order the tool's hash map lists the files in (:mod:`kafka_format.cli.jvm_maps`).

    ``java_tool``: ``java.util.HashMap.computeIfAbsent`` once per pair (Kafka 4.3+), else Scala's
    ``mutable.HashMap.put`` once per pair, or (``put_once``: the time-index reports of the Scala
    tool) only for a file's first pair.
    """

    def __init__(self, java_tool: bool, *, put_once: bool = False) -> None:
        self.pairs: dict[str, list[tuple[int, int]]] = {}
        self._put_once = put_once
        self._map: JavaHashMap | ScalaHashMap = JavaHashMap() if java_tool else ScalaHashMap()

    def add(self, path: str, pair: tuple[int, int]) -> None:
        """One pair of ``path``, as the tool records it."""
        self.touch(path, 1)
        self.pairs.setdefault(path, []).append(pair)

    def touch(self, path: str, calls: int) -> None:
        """``calls`` map calls for ``path`` (one per pair recorded)."""
        if calls and self._put_once:
            calls = 0 if path in self.pairs else 1
        table = self._map
        for _ in range(calls):
            if isinstance(table, JavaHashMap):
                table.compute_if_absent(path)
            else:
                table.put(path)

    def files(self) -> list[str]:
        """The files with pairs, in the order the tool prints them."""
        return self._map.keys()


@dataclass
class FileReports:
    """The end-of-run reports of DumpLogSegments (see :class:`Report`).

    ``java_tool``: the collections of the Java tool (Kafka 4.3+), else of the Scala tool.
    """

    java_tool: bool = True
    index_mismatches: Report = field(init=False)
    time_mismatches: Report = field(init=False)
    time_out_of_order: Report = field(init=False)
    time_not_found: Report = field(init=False)
    non_consecutive: Report = field(init=False)

    def __post_init__(self) -> None:
        java, once = self.java_tool, not self.java_tool
        self.index_mismatches = Report(java)
        self.time_mismatches = Report(java, put_once=once)
        self.time_out_of_order = Report(java, put_once=once)
        self.time_not_found = Report(java, put_once=once)
        self.non_consecutive = Report(java)

    def add_index_mismatches(self, path: str, found: list[tuple[int, int]]) -> None:
        """(index offset, log offset) pairs of one ``.index``, in index order."""
        if not found:
            return
        report = self.index_mismatches
        report.touch(path, len(found))
        known = report.pairs.setdefault(path, [])
        if self.java_tool:   # TreeMap(reverseOrder()) keyed by index offset: the last put wins
            merged = dict(known)
            merged.update(found)
            known[:] = sorted(merged.items(), reverse=True)
        else:                # a List prepended to: newest first
            known[:0] = reversed(found)

    def add_gaps(self, path: str, pairs: list[tuple[int, int]]) -> None:
        """(offset, next offset) pairs of one ``.log`` (see :class:`GapTracker`), in log order."""
        if not pairs:
            return
        report = self.non_consecutive
        report.touch(path, len(pairs))
        known = report.pairs.setdefault(path, [])
        if self.java_tool:   # TreeMap keyed by the first offset, ascending: the last put wins
            merged = dict(known)
            merged.update(pairs)
            known[:] = sorted(merged.items())
        else:                # a List prepended to: newest first
            known[:0] = reversed(pairs)


class GapTracker:
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


class DumpBase:
    """The state of one ``klogs dump`` run that the file dumpers share."""


    def __init__(self, opts: DumpOptions, out: Any, err: Any) -> None:
        self.opts = opts
        self.text = TextOutput(out, err)
        self.json = JsonOutput(out, err)
        self.reports = FileReports(java_tool=opts.java_tool)
        self.errors = 0
        self._parser: Callable[[Mapping[str, Any]], tuple[str | None, str | None]] | None = None

    # -- driver ---------------------------------------------------------------------------------


class LogDump(DumpBase):
    """``.log`` files: DumpLogSegments.dumpLog (text) and the ``--json`` objects."""

    def _dump_log(self, path: str) -> None:
        opts = self.opts
        name = source.name(path)
        if not opts.json:
            if name.endswith(".log"):
                self.text.line(f"Log starting offset: {_base_offset_of(path)}")
            elif name == BOOTSTRAP_CHECKPOINT:
                self.text.line("KRaft bootstrap snapshot")
            else:
                match = SNAPSHOT_NAME.match(name)
                if match is None:
                    raise DumpAbort(JAVA_NO_SUCH_ELEMENT, "No value present", path, None)
                self.text.line(f"Snapshot end offset: {int(match.group(1))}, epoch: {int(match.group(2))}")
        file_size = source.size(path)
        limit = min(file_size, opts.max_bytes)
        if opts.json:
            self._dump_log_json(path, limit)
            return
        valid_bytes = 0
        gaps = GapTracker(opts.java_tool)
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
            self.reports.add_gaps(source.absolute(path), gaps.pairs)
        self._check_tail(path, valid_bytes, limit)

    def _dump_log_json(self, path: str, limit: int) -> None:
        """``--json`` dump of a log: PERMISSIVE, every byte of ``[0, limit)`` accounted for (issue #4).

        Skipped ranges come from a PERMISSIVE record-level pass (bad CRC, bad records, bad framing,
        lying sizes, garbage, truncation); the batches between them are then printed as usual, each
        skipped range as an ``error`` object (with ``length``) at its place in position order, and a
        ``summary`` object closes the file: validBytes + skippedBytes + zeroTailBytes + cutBytes == size.
        """
        skipped = _skipped_ranges(path, limit)
        progress = Progress(limit, source.name(path), self.text.err)
        valid_bytes = skipped_bytes = batches = 0
        done = 0          # end of the last batch or skipped range printed
        cut = zero_tail = 0
        gaps = GapTracker(self.opts.java_tool)
        try:
            for start, end, skip in _good_ranges(skipped, limit):
                for batch, records in _iter_log_range_json(path, start, end, limit, self.opts.is_deep):
                    self.json.obj(_batch_json(path, batch, records))
                    for record in records:
                        gaps.see(record["offset"])
                        obj = _record_json(record)
                        if self._parser is not None and self.opts.decoder is not None and not batch["isControl"]:
                            obj.update(_decoded_json(self._parser, record, self.opts))
                        self.json.obj(obj)
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
                elif limit < source.size(path):
                    cut = limit - done         # a batch cut by --max-bytes (FileRecords.slice drops it)
                else:
                    skipped_bytes += self._skip_object(path, done, limit - done, "", limit)
        finally:
            self.reports.add_gaps(source.absolute(path), gaps.pairs)
            progress.close()
        self.json.obj({"type": "summary", "file": redact(path), "size": limit, "validBytes": valid_bytes,
                       "skippedBytes": skipped_bytes, "zeroTailBytes": zero_tail, "cutBytes": cut,
                       "batches": batches})

    def _skip_object(self, path: str, position: int, length: int, reason: str, limit: int) -> int:
        """Print one ``error`` object for the skipped range ``[position, position + length)``; return length."""
        self.errors += 1
        if position + length >= limit and (reason == "" or "end of the file" in reason):
            message = f"Found {length} invalid bytes at the end of {source.name(path)}"  # Kafka's text
        else:
            message = f"CorruptRecordException: {reason or 'undecodable bytes'}"
        self.json.obj({"type": "error", "file": redact(path), "position": position, "message": message,
                       "length": length})
        return length

    def _check_tail(self, path: str, valid_bytes: int, limit: int) -> None:
        """Text mode, after the last complete batch, as Kafka: fail on a bad size, else count trailing bytes."""
        framing = _framing_abort(path, valid_bytes, limit)  # e.g. a zero-filled preallocated tail
        if framing is not None:
            raise framing
        trailing = limit - valid_bytes
        if trailing > 0 and self.opts.max_bytes == INT32_MAX:
            self.errors += 1
            self.text.line(f"Found {trailing} invalid bytes at the end of {source.name(path)}")

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
                except DumpAbort:
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
            if payload is not None:   # the Java tool prints it after the prefix, the Scala one after a space
                text += f"{prefix if opts.java_tool else ' '}payload: {payload}"
        return text

    # -- .index ------------------------------------------------------------------------------------


class IndexDump(DumpBase):
    """Index, time index, producer snapshot and transaction index files."""

    def _dump_index(self, path: str) -> None:
        opts = self.opts
        base = _base_offset_of(path)
        log_path = _segment_log_of(path)
        parsed = _read_offset_index(path, base)
        if parsed.raw_entries == 0:
            if not opts.json:
                self.text.line(f"{source.shown(path)} is empty.")
            return
        if self._sanity_checked(parsed, path):
            return
        abs_path = source.absolute(path)
        log_size = source.size(log_path)
        found: list[tuple[int, int]] = []
        try:
            for offset, position in _live_slots(parsed, "relative_offset", "position", base, offset_first=True):
                last = _first_batch_last_offset(log_path, position, opts.max_message_size, log_size, path)
                if last != offset:
                    found.append((offset, last))
                if not opts.verify_index_only:
                    self._entry("indexEntry", path, "offset", offset, "position", position)
        finally:
            self.reports.add_index_mismatches(abs_path, found)

    def _sanity_checked(self, parsed: Any, path: str) -> bool:
        """``--index-sanity-check``: check ``parsed`` (raises on failure), say it passed, and skip the dump."""
        if not self.opts.index_sanity_check:
            return False
        _sanity(parsed, path)
        if self.opts.json:
            self.json.obj({"type": "sanityCheck", "file": redact(path), "passed": True})
        else:
            self.text.line(f"{source.shown(path)} passed sanity check.")
        return True

    def _entry(self, kind: str, path: str, first: str, a: int, second: str, b: int) -> None:
        """One index entry line: ``first: a second: b`` as the Java tool prints it, or one JSON object."""
        if self.opts.json:
            self.json.obj({"type": kind, "file": redact(path), first: a, second: b})
        else:
            self.text.line(f"{first}: {a} {second}: {b}")

    # -- .timeindex --------------------------------------------------------------------------------

    def _dump_time_index(self, path: str) -> None:
        opts = self.opts
        base = _base_offset_of(path)
        log_path = _segment_log_of(path)
        index_path = _sibling(path, ".index")
        if not source.is_file(index_path):
            # new OffsetIndex(file, base, maxIndexSize = -1) tries to create the missing file
            raise DumpAbort("java.lang.IllegalArgumentException", "Invalid max index size: -1", path, None)
        offsets = _read_offset_index(index_path, base)
        parsed = _read_time_index(path, base)
        if self._sanity_checked(parsed, path):
            return
        abs_path = source.absolute(path)
        log_size = source.size(log_path)
        prev_timestamp = -1  # RecordBatch.NO_TIMESTAMP
        for timestamp, offset in _live_slots(parsed, "timestamp", "relative_offset", base, offset_first=False):
            position = _index_lookup(offsets, offset)
            batch_last, max_ts = _max_timestamp_of_batch_at(log_path, position, offset, log_size)
            if batch_last is None:
                self.reports.time_not_found.add(abs_path, (offset, -1))
            elif batch_last != offset:
                self.reports.time_not_found.add(abs_path, (offset, batch_last))
            else:
                if max_ts != timestamp:
                    self.reports.time_mismatches.add(abs_path, (timestamp, max_ts))
                if prev_timestamp >= timestamp:
                    self.reports.time_out_of_order.add(abs_path, (timestamp, prev_timestamp))
            if not opts.verify_index_only:
                self._entry("timeIndexEntry", path, "timestamp", timestamp, "offset", offset)
            prev_timestamp = timestamp

    # -- .snapshot / .txnindex -----------------------------------------------------------------------

    def _dump_producer_snapshot(self, path: str) -> None:
        try:
            entries = _read_producer_snapshot(path)
        except KafkaFormatError as exc:
            if source.is_io_failure(exc):
                raise source.io_error(exc) from exc
            self.errors += 1
            if self.opts.json:
                self.json.obj({"type": "error", "file": redact(path), "position": exc.position,
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
                self.json.obj({"type": "abortedTxn", "file": redact(path), "version": txn.version,
                               "producerId": txn.producer_id, "firstOffset": txn.first_offset,
                               "lastOffset": txn.last_offset, "lastStableOffset": txn.last_stable_offset})
            else:
                self.text.line(txn.dump_line())

    # -- end-of-run reports (stderr, in DumpLogSegments.main's order) -------------------------------------


def _segment_log_of(path: str) -> str:
    """The ``.log`` beside an index file; DumpLogSegments fails on a missing one before reading the index."""
    log_path = _sibling(path, ".log")
    if not source.is_file(log_path):
        raise DumpAbort(JAVA_NO_SUCH_FILE, source.shown(log_path), path, None)
    return log_path


def _live_slots(parsed: Any, first: str, second: str, base: int, *,
                offset_first: bool) -> Iterator[tuple[int, int]]:
    """The index's entries up to the first slot (after the first) that points back at the base offset: after a
    crash the rest of a preallocated index file may be zero entries."""
    for i, (a, b) in enumerate(_raw_slots(parsed, first, second, base, offset_first=offset_first)):
        if (a if offset_first else b) == base and i > 0:
            return
        yield a, b


def _sibling(path: str, suffix: str) -> str:
    """``new File(parent, name.split("\\.")(0) + suffix)``."""
    return source.sibling(path, suffix)
