"""Offline audit of Kafka log dirs: every check of kafka-dump-log and more.

No Spark here: :mod:`kafka_format.spark.audit` ships partition descriptors to executors and
calls these functions there.

* :func:`scan_log` reads one ``.log`` in PERMISSIVE mode (streamed, columns only) and accounts
  for every byte: ``validBytes + skippedBytes + zeroTailBytes + cutBytes == size``, by the same
  rule as ``klogs dump --json`` (skipped ranges of a record-level PERMISSIVE decode, merged;
  whole batches of the good ranges between them; an all-zero tail is preallocation).
* :func:`audit_partition` checks one partition replica: batches (CRC, lengths, offsets, segment
  ranges), skipped ranges, offset/time indexes (``DumpLogSegments`` ``--verify-index-only`` and
  ``--index-sanity-check`` conditions, plus monotonicity and zero tails), checkpoints,
  ``leader-epoch-checkpoint``, producer ``.snapshot`` files against a replay of the log,
  ``.txnindex`` against the ABORT markers, and hanging transactions.
* :func:`audit_log_dir` checks a broker log dir's own files; :func:`audit_replicas` compares the
  replicas of one partition found in several log dirs.

A :class:`Finding` has the columns of docs/jobs/audit.md (``severity, check, topic, partition, file,
position, offset, expected, actual, message``).  ``check`` is a stable kebab-case id
(:data:`CHECKS`).  Severity: ``error`` = the bytes or state contradict Kafka's rules;
``warning`` = legal but needs attention (a crash leftover the broker repairs on start, a lagging
replica, a transaction open for longer than Kafka allows); ``info`` = facts (non-consecutive
offsets, unclean shutdown).
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from kafka_format import checkpoints as ckpt
from kafka_format.api import SkippedRange, decode_segment
from kafka_format.crc import crc32, crc32c
from kafka_format.errors import KafkaFormatError
from kafka_format.fsio import redact
from kafka_format.logdir import LogDir, PartitionLog, Segment
from kafka_format.ownership import Owner
from kafka_format.records.control import ControlRecordType, parse_control_key, parse_end_txn_marker
from kafka_format.report.units import human_duration

if TYPE_CHECKING:
    from kafka_format.topicconfig import TopicConfig

__all__ = [
    "REPORT_OWNER",
    "Finding",
    "FileAccounting",
    "PartitionAudit",
    "LogScan",
    "CHECKS",
    "FINDING_COLUMNS",
    "ACCOUNTING_COLUMNS",
    "SEVERITY_RANK",
    "scan_log",
    "merge_skipped_ranges",
    "audit_partition",
    "audit_partition_report",
    "coordinator_transactions",
    "audit_log_dir",
    "audit_replicas",
    "replica_groups",
    "at_or_above",
    "sort_findings",
    "format_finding",
    "render_html",
    "write_outputs",
]

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITY_RANK = {INFO: 0, WARNING: 1, ERROR: 2}
REPORT_OWNER = Owner("audit", "report")            # the marker of an --out directory
FINDING_COLUMNS = ("severity", "check", "topic", "partition", "file", "position", "offset",
                   "expected", "actual", "message")
ACCOUNTING_COLUMNS = ("topic", "partition", "file", "sizeBytes", "validBytes", "skippedBytes",
                      "zeroTailBytes", "cutBytes", "batches")

# Every check id this module emits (stable: tests and users filter on them).
CHECKS = (
    "state-file-corrupt", "orphan-index", "skipped-bytes", "batch-crc", "invalid-bytes-at-end",
    "batch-offsets", "record-count", "first-batch-below-segment-base", "offset-overflow",
    "offsets-not-increasing", "segment-overlap", "non-consecutive-offsets",
    "index-missing", "index-corrupt", "index-sanity", "index-zero-tail", "index-order",
    "index-offset-mismatch", "timeindex-missing", "timeindex-zero-tail", "timeindex-order",
    "timeindex-out-of-order", "timeindex-offset-not-found", "timeindex-timestamp-mismatch",
    "timeindex-last-entry", "checkpoint-hw-above-leo", "log-start-above-hw", "log-start-above-leo",
    "recovery-point-above-leo", "cleaner-checkpoint-out-of-range", "leader-epoch-checkpoint-order",
    "leader-epoch-beyond-log-end", "leader-epoch-decreasing", "leader-epoch-missing",
    "leader-epoch-start-mismatch", "snapshot-corrupt", "snapshot-beyond-log-end",
    "snapshot-producer-mismatch", "txnindex-corrupt", "txnindex-order", "txnindex-missing-entry",
    "txnindex-wrong-segment", "txnindex-entry-without-marker", "txnindex-entry-mismatch",
    "hanging-transaction", "open-transaction", "meta-properties-missing", "unclean-shutdown",
    "replica-divergence", "replica-lagging", "replica-ahead-of-leader", "replica-hw-above-leader",
)

INT32_MAX = (1 << 31) - 1
MAX_PAIRS_PER_FILE = 100            # non-consecutive offset pairs reported per file (then a summary)
MAX_DIVERGENCES = 20                # divergent batches reported per replica pair
# transaction.max.timeout.ms default (TransactionStateManagerConfig): a transaction open longer
# than this cannot be live any more; kafka-transactions find-hanging uses the same bound.
TRANSACTION_MAX_TIMEOUT_MS = 900_000
COMPACTED_INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")
_V2 = 2
_V2_CRC = struct.Struct(">I")       # DefaultRecordBatch: crc at byte 17, covers 21..end
_V2_CRC_AT, _V2_CRC_FROM = 17, 21
_LEGACY_CRC_AT, _LEGACY_CRC_FROM = 12, 16   # LegacyRecord: crc after offset+size, covers magic..end
_ZERO_CHUNK = 1 << 20
_INCOMPLETE_TAIL = "incomplete batch at the end of the file"
_CRC_REASON = "CRC mismatch"


# ---------------------------------------------------------------------------------------------
# values


@dataclass(frozen=True)
class Finding:
    """One audit finding (the columns of docs/jobs/audit.md).  ``position`` is a byte offset in ``file``;
    ``offset`` a Kafka offset; ``expected``/``actual`` are short texts."""

    severity: str
    check: str
    topic: str | None
    partition: int | None
    file: str | None
    position: int | None
    offset: int | None
    expected: str | None
    actual: str | None
    message: str

    def row(self) -> dict[str, Any]:
        """The finding as a row with the column names of :data:`FINDING_COLUMNS`."""
        row = {name: getattr(self, name) for name in FINDING_COLUMNS}
        for name in ("file", "message", "expected", "actual"):     # no URI credentials in an output
            if isinstance(row[name], str):
                row[name] = redact(row[name])
        return row


@dataclass(frozen=True)
class FileAccounting:
    """Where every byte of one ``.log`` went: valid + skipped + zero tail + cut == size."""

    topic: str | None
    partition: int | None
    file: str
    size_bytes: int
    valid_bytes: int
    skipped_bytes: int
    zero_tail_bytes: int
    cut_bytes: int
    batches: int

    @property
    def balanced(self) -> bool:
        total = self.valid_bytes + self.skipped_bytes + self.zero_tail_bytes + self.cut_bytes
        return total == self.size_bytes

    def row(self) -> dict[str, Any]:
        """The accounting as a row with the column names of :data:`ACCOUNTING_COLUMNS`."""
        return {"topic": self.topic, "partition": self.partition, "file": redact(self.file),
                "sizeBytes": self.size_bytes, "validBytes": self.valid_bytes,
                "skippedBytes": self.skipped_bytes, "zeroTailBytes": self.zero_tail_bytes,
                "cutBytes": self.cut_bytes, "batches": self.batches}


@dataclass(frozen=True)
class Marker:
    """A transaction marker (control record of type ABORT or COMMIT)."""

    offset: int
    position: int
    producer_id: int
    producer_epoch: int
    abort: bool
    coordinator_epoch: int
    timestamp: int


@dataclass
class BatchColumns:
    """Header fields of the valid batches of one file, one numpy array per field (file order)."""

    position: np.ndarray
    size: np.ndarray
    magic: np.ndarray
    base_offset: np.ndarray          # legacy wrappers: first inner offset (from the records pass)
    last_offset: np.ndarray
    count: np.ndarray                # -1 where unknown (legacy wrapper)
    max_timestamp: np.ndarray
    is_transactional: np.ndarray
    is_control: np.ndarray
    producer_id: np.ndarray
    producer_epoch: np.ndarray
    base_sequence: np.ndarray
    last_sequence: np.ndarray
    leader_epoch: np.ndarray
    crc: np.ndarray
    max_record_timestamp: np.ndarray  # max record timestamp (records pass); -1 none / not read

    def __len__(self) -> int:
        return int(self.position.shape[0])

    def take(self, rows: slice | np.ndarray) -> BatchColumns:
        """The rows ``rows`` (a slice or a boolean/index array) of every column."""
        return BatchColumns(**{n: getattr(self, n)[rows] for n in BatchColumns.__dataclass_fields__})

    @staticmethod
    def concat(parts: Sequence[BatchColumns]) -> BatchColumns:
        names = [f for f in BatchColumns.__dataclass_fields__]
        if not parts:
            return BatchColumns(**{n: np.empty(0, np.int64) for n in names})
        return BatchColumns(**{n: np.concatenate([getattr(p, n) for p in parts]) for n in names})


@dataclass
class LogScan:
    """What one ``.log`` holds: valid batches, skipped ranges, accounting and record facts."""

    path: str
    size: int
    batches: BatchColumns
    skipped: list[SkippedRange]        # merged ranges (plus gaps no batch covers), position order
    crc_failures: list[SkippedRange]   # raw CRC skips of the records pass
    accounting: FileAccounting
    markers: list[Marker] = field(default_factory=list)
    non_consecutive: list[tuple[int, int]] = field(default_factory=list)
    non_consecutive_count: int = 0

    @property
    def next_offset(self) -> int | None:
        """lastOffset + 1 of the last valid batch (None: no batch)."""
        return int(self.batches.last_offset[-1]) + 1 if len(self.batches) else None


@dataclass
class PartitionAudit:
    """Findings and per-file accounting of one partition replica."""

    findings: list[Finding]
    files: list[FileAccounting]
    log_end_offset: int | None = None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


# ---------------------------------------------------------------------------------------------
# reading one .log


@contextmanager
def _source(location: str, handle: Any) -> Iterator[Any]:
    """A local path as is; another location as an open pyarrow file."""
    if handle is None or handle.is_local:
        yield handle.fs_path(location) if handle is not None else location
        return
    f = handle.open_input_file(handle.fs_path(location))
    try:
        yield f
    finally:
        f.close()


def _read_range(location: str, handle: Any, start: int, length: int) -> bytes:
    if handle is None:
        with open(location, "rb") as fh:
            fh.seek(start)
            return fh.read(length)
    return bytes(handle.read_range(handle.fs_path(location), start, length))


def _all_zero(location: str, handle: Any, start: int, end: int) -> bool:
    while start < end:
        chunk = _read_range(location, handle, start, min(_ZERO_CHUNK, end - start))
        if not chunk or chunk.count(0) != len(chunk):
            return False
        start += len(chunk)
    return True


def _column(table: pa.Table, name: str, fill: int) -> np.ndarray:
    col = table.column(name)
    if col.null_count:
        col = col.fill_null(fill)
    return col.to_numpy().astype(np.int64)


def _batches_of(tables: list[pa.RecordBatch]) -> BatchColumns:
    if not tables:
        return BatchColumns.concat([])
    t = pa.Table.from_batches(tables)
    return BatchColumns(
        position=_column(t, "position", -1), size=_column(t, "size", 0), magic=_column(t, "magic", -1),
        base_offset=_column(t, "baseOffset", -1), last_offset=_column(t, "lastOffset", -1),
        count=_column(t, "count", -1), max_timestamp=_column(t, "maxTimestamp", -1),
        is_transactional=t.column("isTransactional").fill_null(False).to_numpy(zero_copy_only=False),
        is_control=t.column("isControl").fill_null(False).to_numpy(zero_copy_only=False),
        producer_id=_column(t, "producerId", -1), producer_epoch=_column(t, "producerEpoch", -1),
        base_sequence=_column(t, "baseSequence", -1), last_sequence=_column(t, "lastSequence", -1),
        leader_epoch=_column(t, "partitionLeaderEpoch", -1), crc=_column(t, "crc", -1),
        max_record_timestamp=np.full(t.num_rows, -1, np.int64))


class _RecordFacts:
    """Aggregates of the records pass, kept per batch (never per record)."""

    def __init__(self) -> None:
        self.positions: list[np.ndarray] = []
        self.max_ts: list[np.ndarray] = []
        self.min_offset: list[np.ndarray] = []
        self.last: int | None = None
        self.pairs: list[tuple[int, int]] = []
        self.pair_count = 0
        self.markers: list[Marker] = []

    def add(self, rb: pa.RecordBatch) -> None:
        if rb.num_rows == 0:
            return
        offsets = rb.column("offset").to_numpy().astype(np.int64)
        positions = rb.column("position").to_numpy().astype(np.int64)
        ts_col = rb.column("timestamp").cast(pa.int64())
        ts = ts_col.fill_null(-1000).to_numpy() // 1000 if ts_col.null_count else ts_col.to_numpy() // 1000
        # DumpLogSegments (deep): any record offset != previous + 1, over the whole file
        prev = np.concatenate([[self.last if self.last is not None else -1], offsets[:-1]])
        bad = np.flatnonzero(prev + 1 != offsets)
        if self.last is None and bad.size and bad[0] == 0:
            bad = bad[1:]
        self.pair_count += int(bad.size)
        room = MAX_PAIRS_PER_FILE - len(self.pairs)
        for i in bad[:max(room, 0)].tolist():
            self.pairs.append((int(prev[i]), int(offsets[i])))
        self.last = int(offsets[-1])
        starts = np.concatenate([[0], np.flatnonzero(np.diff(positions)) + 1])
        self.positions.append(positions[starts])
        self.max_ts.append(np.maximum.reduceat(ts, starts))
        self.min_offset.append(np.minimum.reduceat(offsets, starts))
        control = rb.column("isControl").to_numpy(zero_copy_only=False)
        for i in np.flatnonzero(control).tolist():
            self._marker(rb, i, int(offsets[i]), int(positions[i]), int(ts[i]))

    def _marker(self, rb: pa.RecordBatch, i: int, offset: int, position: int, ts: int) -> None:
        key = rb.column("key")[i].as_py()
        value = rb.column("value")[i].as_py()
        try:
            _version, kind = parse_control_key(key)
            if kind not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                return
            marker = parse_end_txn_marker(key, value)
        except KafkaFormatError:
            return
        pid = rb.column("producerId")[i].as_py()
        epoch = rb.column("producerEpoch")[i].as_py()
        self.markers.append(Marker(offset, position, -1 if pid is None else int(pid),
                                   -1 if epoch is None else int(epoch), kind == ControlRecordType.ABORT,
                                   marker.coordinator_epoch, ts))

    def per_batch(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(batch position, max record timestamp, min record offset), one row per batch."""
        if not self.positions:
            e = np.empty(0, np.int64)
            return e, e, e
        pos = np.concatenate(self.positions)
        ts = np.concatenate(self.max_ts)
        off = np.concatenate(self.min_offset)
        starts = np.concatenate([[0], np.flatnonzero(np.diff(pos)) + 1])  # a batch split over slices
        return pos[starts], np.maximum.reduceat(ts, starts), np.minimum.reduceat(off, starts)


def merge_skipped_ranges(found: Iterable[SkippedRange], limit: int, path: str | None) -> list[SkippedRange]:
    """Skipped ranges sorted, cut at ``limit`` and merged where they overlap or touch (one rule for
    ``klogs dump --json`` and the audit: the reason of the first range of a merged run is kept)."""
    merged: list[SkippedRange] = []
    for r in sorted(found, key=lambda r: (r.position, r.length, r.reason)):
        end = min(r.position + r.length, limit)
        if merged and r.position <= merged[-1].position + merged[-1].length:
            last = merged[-1]
            stop = max(last.position + last.length, end)
            merged[-1] = SkippedRange(path, last.position, stop - last.position, last.reason)
        elif end > r.position:
            merged.append(SkippedRange(path, r.position, end - r.position, r.reason))
    return merged


def scan_log(location: str, *, filesystem: Any = None, topic: str | None = None,
             partition: int | None = None, limit: int | None = None) -> LogScan:
    """Read one ``.log`` (streamed) and account for every byte of ``[0, limit or size)``.

    ``filesystem`` is a :class:`kafka_format.fsio.FileSystemHandle` for non-local locations.
    """
    handle = filesystem
    with _source(location, handle) as src:
        if isinstance(src, str):
            size = os.path.getsize(src)
        else:
            size = int(src.size())
    end = size if limit is None else min(limit, size)
    raw: list[SkippedRange] = []
    facts = _RecordFacts()
    with _source(location, handle) as src:
        try:
            for rb in decode_segment(src, end=end, mode="PERMISSIVE", on_skip=raw.append,
                                     granularity="record", include_headers=False):
                facts.add(rb)
        except KafkaFormatError as exc:  # PERMISSIVE should not raise; if it does, the rest is skipped
            at = max((r.position + r.length for r in raw), default=0)
            if exc.position is not None and at <= exc.position < end:
                at = exc.position
            if at < end:
                raw.append(SkippedRange(location, at, end - at, exc.reason))
    merged = merge_skipped_ranges(raw, end, location)
    # whole batches of the good ranges between skipped ranges (klogs dump --json's accounting)
    parts: list[BatchColumns] = []
    skipped: list[SkippedRange] = []
    valid = skipped_bytes = 0
    done = 0
    starts = [0] + [r.position + r.length for r in merged]
    stops = [r.position for r in merged] + [end]
    for i, (lo, hi) in enumerate(zip(starts, stops, strict=True)):
        if hi > lo:
            bound = end if hi >= end else hi
            tables: list[pa.RecordBatch] = []
            with _source(location, handle) as src:
                try:
                    tables.extend(decode_segment(src, start=lo, end=hi, granularity="batch"))
                except KafkaFormatError:
                    pass  # the rest of the range is accounted as skipped below
            cols = _batches_of(tables)
            keep = cols.position + cols.size <= bound
            if not keep.all():
                cut_at = int(np.argmin(keep))
                cols = cols.take(slice(0, cut_at))
            if len(cols):
                parts.append(cols)
                valid += int(cols.size.sum())
                done = int(cols.position[-1] + cols.size[-1])
        if i == len(merged):
            break
        r = merged[i]
        if done < r.position:
            skipped.append(SkippedRange(location, done, r.position - done, "undecodable bytes"))
            skipped_bytes += r.position - done
        skipped.append(r)
        skipped_bytes += r.length
        done = r.position + r.length
    zero_tail = cut = 0
    if done < end:
        if _all_zero(location, handle, done, end):
            zero_tail = end - done
        elif end < size:
            cut = end - done
        else:
            skipped.append(SkippedRange(location, done, end - done, "undecodable bytes"))
            skipped_bytes += end - done
    batches = BatchColumns.concat(parts)
    pos, max_ts, min_off = facts.per_batch()
    if len(batches) and pos.size:
        j = np.searchsorted(pos, batches.position)
        j = np.minimum(j, pos.size - 1)
        hit = pos[j] == batches.position
        batches.max_record_timestamp = np.where(hit, max_ts[j], -1)
        unknown = batches.base_offset < 0
        batches.base_offset = np.where(unknown & hit, min_off[j], batches.base_offset)
    unknown = batches.base_offset < 0
    batches.base_offset = np.where(unknown, batches.last_offset, batches.base_offset)
    accounting = FileAccounting(topic, partition, location, end, valid, skipped_bytes, zero_tail, cut,
                                len(batches))
    return LogScan(location, end, batches, skipped, [r for r in raw if r.reason == _CRC_REASON], accounting,
                   facts.markers, facts.pairs, facts.pair_count)


# ---------------------------------------------------------------------------------------------
# one partition replica


def _is_compacted(replica: PartitionLog, config: TopicConfig | None) -> bool:
    """cleanup.policy contains compact, or the facts say so: an internal compacted topic, or a
    cleaner checkpoint entry (the cleaner ran on this partition)."""
    if replica.topic in COMPACTED_INTERNAL_TOPICS or replica.cleaner_offset_checkpoint is not None:
        return True
    try:
        return bool(config.compact) if config is not None else False
    except (AttributeError, KeyError, ValueError):
        return False


class _Auditor:
    """Collects findings for one partition replica."""

    def __init__(self, replica: PartitionLog, config: TopicConfig | None, deep: bool, now_ms: int,
                 coordinator: CoordinatorTransactions | None = None) -> None:
        self.r = replica
        self.coordinator = coordinator
        self.config = config
        self.deep = deep
        self.now_ms = now_ms
        self.compacted = _is_compacted(replica, config)
        self.findings: list[Finding] = []
        self.handle = replica.filesystem
        self.scans: list[tuple[Segment, LogScan]] = []

    def add(self, severity: str, check: str, message: str, *, file: str | None = None,
            position: int | None = None, offset: int | None = None, expected: Any = None,
            actual: Any = None) -> None:
        self.findings.append(Finding(severity, check, self.r.topic, self.r.partition, file, position, offset,
                                     _text(expected), _text(actual), message))

    def _state_file(self, name: str) -> str:
        return self.handle.join(self.r.log_dir, name) if self.r.log_dir else name

    # -- driver ------------------------------------------------------------------------------------
    def run(self) -> PartitionAudit:
        r = self.r
        for err in r.problems:
            self.add(ERROR, "state-file-corrupt", err.reason, file=err.path, position=err.position,
                     expected=err.expected, actual=err.found)
        for seg in r.orphan_segments:
            self.add(WARNING, "orphan-index", "index files without a .log: the broker deletes them on start",
                     file=seg.index_path or seg.timeindex_path or seg.txnindex_path, offset=seg.base_offset)
        files: list[FileAccounting] = []
        for i, seg in enumerate(r.segments):
            active = i == len(r.segments) - 1
            try:
                scan = scan_log(seg.log_path or "", filesystem=self.handle, topic=r.topic,
                                partition=r.partition)
            except KafkaFormatError as err:
                self.add(ERROR, "state-file-corrupt", f"cannot read segment: {err.reason}", file=seg.log_path)
                continue
            files.append(scan.accounting)
            self.scans.append((seg, scan))
            self._log_findings(seg, scan, active)
            self._segment_findings(seg, scan, i)
            self._offset_index(seg, scan, active)
            self._time_index(seg, scan, active)
        leo = self._log_end_offset()
        missing = [s for s in r.orphan_segments if leo is not None and s.base_offset >= leo]
        if missing:
            # a segment's .log is missing past the last one read: the log end offset is unknown
            self.add(WARNING, "orphan-index",
                     f"segment {missing[-1].name} has no .log: the log end offset is "
                     "unknown, checks against it are skipped", file=r.path, offset=missing[-1].base_offset)
            leo = None
        if leo is not None:
            self._checkpoints(leo)
            self._leader_epochs(leo)
            self._transactions(leo)
        return PartitionAudit(self.findings, files, leo)

    def _log_end_offset(self) -> int | None:
        if not self.r.segments:
            return None
        for seg, scan in reversed(self.scans):
            if len(scan.batches):
                return int(scan.batches.last_offset[-1]) + 1
            if seg is self.r.segments[-1]:
                return seg.base_offset
        return self.r.segments[-1].base_offset

    def _all_batches(self) -> tuple[BatchColumns, list[str], np.ndarray]:
        """Valid batches of every segment in order, with each batch's file index."""
        parts = [scan.batches for _, scan in self.scans]
        files = [scan.path for _, scan in self.scans]
        which = np.concatenate([np.full(len(p), k, np.int64) for k, p in enumerate(parts)]) if parts \
            else np.empty(0, np.int64)
        return BatchColumns.concat(parts), files, which

    # -- bytes of one .log -------------------------------------------------------------------------
    def _log_findings(self, seg: Segment, scan: LogScan, active: bool) -> None:
        path = scan.path
        for r in scan.crc_failures:
            stored, computed = self._crc_pair(path, r.position)
            self.add(ERROR, "batch-crc", "stored CRC does not match the batch bytes", file=path,
                     position=r.position, expected=stored, actual=computed)
        for r in scan.skipped:
            at_end = r.position + r.length >= scan.size
            if at_end and (_INCOMPLETE_TAIL in r.reason or r.reason == "undecodable bytes"):
                # DumpLogSegments: "Found N invalid bytes at the end of <file>".  In the active
                # segment this is what a crash mid-write leaves (recovery truncates it).
                self.add(WARNING if active else ERROR, "invalid-bytes-at-end",
                         f"Found {r.length} invalid bytes at the end of {os.path.basename(path)}"
                         + (" (partial write of the active segment; the broker truncates it on recovery)"
                            if active else ""),
                         file=path, position=r.position, expected="0 bytes after the last batch",
                         actual=f"{r.length} bytes")
            else:
                self.add(ERROR, "skipped-bytes", f"{r.length} bytes skipped: {r.reason}", file=path,
                         position=r.position, expected="a valid batch", actual=f"{r.length} bytes")
        if self.deep and scan.non_consecutive_count:
            for a, b in scan.non_consecutive:
                self.add(INFO, "non-consecutive-offsets", f"{a} is followed by {b}", file=path, offset=b,
                         expected=a + 1, actual=b)
            if scan.non_consecutive_count > len(scan.non_consecutive):
                self.add(INFO, "non-consecutive-offsets",
                         f"{scan.non_consecutive_count - len(scan.non_consecutive)} more pairs not listed",
                         file=path)

    def _crc_pair(self, path: str, position: int) -> tuple[str | None, str | None]:
        try:
            head = _read_range(path, self.handle, position, 17)
            if len(head) < 17:
                return None, None
            size = struct.unpack_from(">i", head, 8)[0] + 12
            data = _read_range(path, self.handle, position, size)
            if len(data) < size:
                return None, None
            if head[16] >= _V2:
                return (f"crc {_V2_CRC.unpack_from(data, _V2_CRC_AT)[0]}",
                        f"crc {crc32c(memoryview(data)[_V2_CRC_FROM:])}")
            return (f"crc {_V2_CRC.unpack_from(data, _LEGACY_CRC_AT)[0]}",
                    f"crc {crc32(memoryview(data)[_LEGACY_CRC_FROM:])}")
        except (KafkaFormatError, OSError, struct.error):
            return None, None

    # -- batch ranges of one segment ---------------------------------------------------------------
    def _segment_findings(self, seg: Segment, scan: LogScan, i: int) -> None:
        b = scan.batches
        path = scan.path
        if not len(b):
            return
        base = seg.base_offset
        first = int(b.base_offset[0])
        if first < base:
            self.add(ERROR, "first-batch-below-segment-base",
                     "first batch starts below the offset in the file name", file=path,
                     position=int(b.position[0]), offset=first, expected=f">= {base}", actual=first)
        rel = b.last_offset - base
        for k in np.flatnonzero((rel < 0) | (rel > INT32_MAX))[:10].tolist():
            self.add(ERROR, "offset-overflow", "batch last offset does not fit the segment "
                     "(0 <= lastOffset - baseOffset(file) <= Int.MAX, LogSegment.recover)", file=path,
                     position=int(b.position[k]), offset=int(b.last_offset[k]),
                     expected=f"[{base}, {base + INT32_MAX}]", actual=int(b.last_offset[k]))
        for k in np.flatnonzero(b.last_offset < b.base_offset)[:10].tolist():
            self.add(ERROR, "batch-offsets", "lastOffset below baseOffset", file=path,
                     position=int(b.position[k]), offset=int(b.base_offset[k]),
                     expected=f"lastOffset >= {int(b.base_offset[k])}", actual=int(b.last_offset[k]))
        v2 = (b.magic == _V2) & (b.count >= 0)
        for k in np.flatnonzero(v2 & (b.count > b.last_offset - b.base_offset + 1))[:10].tolist():
            self.add(ERROR, "record-count", "more records than offsets the batch spans", file=path,
                     position=int(b.position[k]), offset=int(b.base_offset[k]),
                     expected=f"count <= {int(b.last_offset[k] - b.base_offset[k] + 1)}",
                     actual=int(b.count[k]))
        for k in (np.flatnonzero(b.base_offset[1:] <= b.last_offset[:-1]) + 1)[:10].tolist():
            self.add(ERROR, "offsets-not-increasing",
                     "batch starts at or below the previous batch's last offset",
                     file=path, position=int(b.position[k]), offset=int(b.base_offset[k]),
                     expected=f"> {int(b.last_offset[k - 1])}", actual=int(b.base_offset[k]))
        segs = self.r.segments
        if i + 1 < len(segs):
            nxt = segs[i + 1].base_offset
            last = int(b.last_offset[-1])
            if last >= nxt:
                self.add(ERROR, "segment-overlap", f"segment holds offsets up to {last}, the next segment "
                         f"starts at {nxt}", file=path, position=int(b.position[-1]), offset=last,
                         expected=f"< {nxt}", actual=last)

    # -- .index ------------------------------------------------------------------------------------
    def _offset_index(self, seg: Segment, scan: LogScan, active: bool) -> None:
        b = scan.batches
        if seg.index_path is None:
            if len(b):
                self.add(WARNING, "index-missing",
                         "segment has no .index (the broker rebuilds it on recovery)",
                         file=seg.log_path, offset=seg.base_offset)
            return
        path = seg.index_path
        try:
            oi = self.r.offset_index(seg)
        except KafkaFormatError as err:
            self.add(ERROR, "index-corrupt", err.reason, file=path, position=err.position,
                     expected=err.expected, actual=err.found)
            return
        assert oi is not None
        sanity = oi.sanity_check()
        if not sanity.ok:
            self.add(WARNING if active else ERROR, "index-sanity", str(sanity.message), file=path,
                     expected="OffsetIndex.sanityCheck passes", actual="CorruptIndexException")
        if oi.zero_tail and oi.valid_entries < oi.raw_entries:
            at = oi.valid_entries * 8
            if active:
                self.add(INFO, "index-zero-tail",
                         "preallocated zero slots after the last entry (active segment)",
                         file=path, position=at, actual=f"{oi.raw_entries - oi.valid_entries} zero slots")
            else:
                self.add(ERROR, "index-zero-tail", "zero slots in a closed segment's index (Kafka trims the "
                         "index when the segment rolls)", file=path, position=at,
                         expected=f"{oi.valid_entries} entries, file of {oi.valid_entries * 8} bytes",
                         actual=f"{oi.raw_entries - oi.valid_entries} zero slots")
        for a in oi.anomalies:
            check = {"offset_not_increasing": "index-order", "position_not_increasing": "index-order",
                     "bad_first_entry": "index-order", "data_after_zero_tail": "index-zero-tail",
                     "position_past_log_end": "index-offset-mismatch"}.get(a.what)
            if check is None:
                continue  # partial_entry: reported by the sanity check
            self.add(ERROR, check, f"offset index entry {a.entry}: {a.what.replace('_', ' ')}", file=path,
                     position=a.position, expected=a.expected, actual=a.found)
        # DumpLogSegments --verify-index-only: every slot up to the zero-tail stop
        rel = oi.raw["relative_offset"].astype(np.int64)
        pos = oi.raw["position"].astype(np.int64)
        stop = np.flatnonzero(rel[1:] == 0)
        n = int(stop[0]) + 1 if stop.size else rel.size
        if oi.zero_tail:  # zero slots are preallocation, not entries (DumpLogSegments would read slot 0)
            n = min(n, oi.valid_entries)
        positions = b.position
        for k in range(n):
            offset, position = seg.base_offset + int(rel[k]), int(pos[k])
            j = int(np.searchsorted(positions, position))
            if j >= len(b) or int(positions[j]) != position:
                self.add(ERROR, "index-offset-mismatch", "index entry does not point at a batch", file=path,
                         position=k * 8, offset=offset,
                         expected=f"a batch starting at log position {position}",
                         actual="no batch there")
                continue
            last = int(b.last_offset[j])
            if last == offset:
                continue
            later = b.last_offset[j:]
            if last < offset and bool((later == offset).any()):
                # pre-KAFKA-806 entry of a multi-batch append (follower fetch, cleaner): correct for lookup
                self.add(WARNING, "index-offset-mismatch", "entry carries the last offset of a multi-batch "
                         "append at its first batch (pre-KAFKA-806 index rule)", file=path, position=k * 8,
                         offset=offset, expected=f"log offset {offset}", actual=f"log offset {last}")
            else:
                self.add(ERROR, "index-offset-mismatch", f"Index offset: {offset}, log offset: {last}",
                         file=path, position=k * 8, offset=offset, expected=offset, actual=last)

    # -- .timeindex --------------------------------------------------------------------------------
    def _time_index(self, seg: Segment, scan: LogScan, active: bool) -> None:
        b = scan.batches
        has_ts = bool(len(b)) and bool((b.max_timestamp >= 0).any())
        if seg.timeindex_path is None:
            if has_ts:
                self.add(INFO, "timeindex-missing",
                         "segment has no .timeindex (the broker creates an empty one)",
                         file=seg.log_path, offset=seg.base_offset)
            return
        path = seg.timeindex_path
        try:
            ti = self.r.time_index(seg)
        except KafkaFormatError as err:
            self.add(ERROR, "index-corrupt", err.reason, file=path, position=err.position,
                     expected=err.expected, actual=err.found)
            return
        assert ti is not None
        sanity = ti.sanity_check()
        if not sanity.ok:
            self.add(WARNING if active else ERROR, "index-sanity", str(sanity.message)
                     + (" (the broker rebuilds it)" if active else ""), file=path,
                     expected="TimeIndex.sanityCheck passes", actual="CorruptIndexException")
        if ti.zero_tail and ti.valid_entries < ti.raw_entries:
            at = ti.valid_entries * 12
            self.add(INFO if active else ERROR, "timeindex-zero-tail",
                     "preallocated zero slots after the last entry (active segment)" if active else
                     "zero slots in a closed segment's time index", file=path, position=at,
                     actual=f"{ti.raw_entries - ti.valid_entries} zero slots")
        for a in ti.anomalies:
            check = {"offset_decreasing": "timeindex-order", "negative_entry": "timeindex-order",
                     "data_after_zero_tail": "timeindex-zero-tail"}.get(a.what)
            if check is not None:
                self.add(ERROR, check, f"time index entry {a.entry}: {a.what.replace('_', ' ')}", file=path,
                         position=a.position, expected=a.expected, actual=a.found)
        ts_raw = ti.raw["timestamp"].astype(np.int64)
        rel = ti.raw["relative_offset"].astype(np.int64)
        stop = np.flatnonzero(rel[1:] == 0)
        n = int(stop[0]) + 1 if stop.size else rel.size
        if ti.zero_tail:
            n = min(n, ti.valid_entries)
        prev = -1
        record_ts = b.max_record_timestamp if self.deep else b.max_timestamp
        for k in range(n):
            ts, offset = int(ts_raw[k]), seg.base_offset + int(rel[k])
            j = int(np.searchsorted(b.last_offset, offset)) if len(b) else 0
            if j >= len(b):
                self.add(WARNING, "timeindex-offset-not-found", "indexed offset not found in the log",
                         file=path, position=k * 12, offset=offset, expected=offset, actual=-1)
            elif int(b.last_offset[j]) != offset:
                self.add(WARNING, "timeindex-offset-not-found", "indexed offset is not a batch's last offset "
                         "(record-level offsets were written before KAFKA-16310)", file=path, position=k * 12,
                         offset=offset, expected=offset, actual=int(b.last_offset[j]))
            else:
                log_ts = int(record_ts[j]) if int(record_ts[j]) >= 0 else int(b.max_timestamp[j])
                if log_ts != ts:
                    self.add(ERROR, "timeindex-timestamp-mismatch",
                             f"Index timestamp: {ts}, log timestamp: {log_ts}", file=path, position=k * 12,
                             offset=offset, expected=log_ts, actual=ts)
                if prev >= ts:
                    self.add(ERROR, "timeindex-out-of-order",
                             f"Index timestamp: {ts}, Previously indexed timestamp: {prev}", file=path,
                             position=k * 12, offset=offset, expected=f"> {prev}", actual=ts)
            prev = ts
        if not active and has_ts and ti.sanity_check().ok:
            seg_max = int(b.max_timestamp.max())
            last_ts = int(ts_raw[ti.valid_entries - 1]) if ti.valid_entries else -1
            if last_ts != seg_max:
                self.add(ERROR, "timeindex-last-entry",
                         "last time-index entry of a closed segment is not the "
                         "segment's max timestamp (TimeIndex final entry on roll)", file=path,
                         position=max(ti.valid_entries - 1, 0) * 12, expected=seg_max, actual=last_ts)

    # -- checkpoints -------------------------------------------------------------------------------
    def _checkpoints(self, leo: int) -> None:
        r = self.r
        hw = r.high_watermark_checkpoint
        start = r.log_start_offset
        if hw is not None and hw > leo:
            self.add(ERROR, "checkpoint-hw-above-leo", "high watermark above the log end offset",
                     file=self._state_file(ckpt.REPLICATION_OFFSET_CHECKPOINT), offset=hw,
                     expected=f"<= {leo}", actual=hw)
        if start > leo:
            self.add(ERROR, "log-start-above-leo", "log start offset above the log end offset",
                     file=self._state_file(ckpt.LOG_START_OFFSET_CHECKPOINT), offset=start,
                     expected=f"<= {leo}", actual=start)
        elif hw is not None and start > hw:
            # the two checkpoints are written at different times; on load the broker raises the
            # high watermark to the log start offset (UnifiedLog.updateHighWatermark)
            self.add(WARNING, "log-start-above-hw", "log start offset above the checkpointed high watermark "
                     "(a stale checkpoint: the broker lifts the high watermark to the log start on load)",
                     file=self._state_file(ckpt.LOG_START_OFFSET_CHECKPOINT), offset=start,
                     expected=f"<= {hw}", actual=start)
        if r.recovery_point is not None and r.recovery_point > leo:
            self.add(ERROR, "recovery-point-above-leo", "recovery point above the log end offset",
                     file=self._state_file(ckpt.RECOVERY_POINT_CHECKPOINT), offset=r.recovery_point,
                     expected=f"<= {leo}", actual=r.recovery_point)
        dirty = r.cleaner_offset_checkpoint
        if dirty is not None and not start <= dirty <= leo:
            self.add(WARNING, "cleaner-checkpoint-out-of-range",
                     "cleaner checkpoint outside [logStartOffset, "
                     "LEO]: the cleaner resets it to the log start offset",
                     file=self._state_file(ckpt.CLEANER_OFFSET_CHECKPOINT), offset=dirty,
                     expected=f"[{start}, {leo}]", actual=dirty)

    # -- leader epochs -----------------------------------------------------------------------------
    def _leader_epochs(self, leo: int) -> None:
        r = self.r
        b, files, which = self._all_batches()
        keep = (b.magic == _V2) & (b.leader_epoch >= 0) & (b.last_offset >= r.log_start_offset)
        idx = np.flatnonzero(keep)
        cp = r.leader_epochs
        cp_path = self.handle.join(r.path, ckpt.LEADER_EPOCH_CHECKPOINT)
        epochs = b.leader_epoch[idx]
        for k in (np.flatnonzero(epochs[1:] < epochs[:-1]) + 1)[:10].tolist():
            j = int(idx[k])
            self.add(ERROR, "leader-epoch-decreasing", "batch leader epoch below an earlier batch's",
                     file=files[int(which[j])], position=int(b.position[j]), offset=int(b.base_offset[j]),
                     expected=f">= {int(epochs[k - 1])}", actual=int(epochs[k]))
        if cp is None:
            return
        entries = list(cp.entries)
        for k in range(1, len(entries)):
            prev = entries[k - 1]
            if entries[k].epoch <= prev.epoch or entries[k].start_offset < prev.start_offset:
                self.add(ERROR, "leader-epoch-checkpoint-order",
                         "entries must increase in epoch and start offset",
                         file=cp_path, offset=entries[k].start_offset,
                         expected=f"epoch > {entries[k - 1].epoch}, start >= {entries[k - 1].start_offset}",
                         actual=f"epoch {entries[k].epoch}, start {entries[k].start_offset}")
        for e in entries:
            if e.start_offset > leo:
                self.add(ERROR, "leader-epoch-beyond-log-end", f"epoch {e.epoch} starts after the log end",
                         file=cp_path, offset=e.start_offset, expected=f"<= {leo}", actual=e.start_offset)
        starts = {e.epoch: e.start_offset for e in entries}
        _epochs, first_rows = np.unique(epochs, return_index=True)   # first batch of each epoch
        for k in sorted(first_rows.tolist()):
            j = int(idx[k])
            epoch = int(b.leader_epoch[j])
            first = int(b.base_offset[j])
            f, pos = files[int(which[j])], int(b.position[j])
            if epoch not in starts:
                self.add(WARNING, "leader-epoch-missing",
                         f"batches of leader epoch {epoch} but no checkpoint entry",
                         file=f, position=pos, offset=first, expected=f"an entry for epoch {epoch}",
                         actual="none")
                continue
            s = starts[epoch]
            if s > max(first, r.log_start_offset):
                self.add(ERROR, "leader-epoch-start-mismatch",
                         f"a batch of epoch {epoch} precedes the epoch's "
                         "start offset", file=f, position=pos, offset=first, expected=f">= {s}", actual=first)
            elif s < first:
                # batches in [s, first) must not exist with another epoch (compaction may leave a gap)
                between = np.flatnonzero(keep & (b.base_offset >= s) & (b.base_offset < first))
                if between.size:
                    q = int(between[0])
                    self.add(ERROR, "leader-epoch-start-mismatch", f"epoch {epoch} starts at {s} in the "
                             f"checkpoint but the batch at {int(b.base_offset[q])} has epoch "
                             f"{int(b.leader_epoch[q])}", file=files[int(which[q])],
                             position=int(b.position[q]),
                             offset=int(b.base_offset[q]), expected=f"epoch {epoch}",
                             actual=int(b.leader_epoch[q]))

    # -- producer state, transactions, snapshots ---------------------------------------------------
    def _transactions(self, leo: int) -> None:
        r = self.r
        b, files, which = self._all_batches()
        markers = {(m.offset): (m, k) for k, (_, scan) in enumerate(self.scans) for m in scan.markers}
        log_start = r.log_start_offset
        snapshots: list[tuple[Any, Any]] = []
        for s in sorted(r.snapshots, key=lambda s: s.offset):
            try:
                snap = r.read_snapshot(s)
            except KafkaFormatError as err:
                self.add(ERROR, "snapshot-corrupt", err.reason, file=s.path, position=err.position,
                         expected=err.expected, actual=err.found)
                continue
            if s.offset > leo:
                self.add(WARNING, "snapshot-beyond-log-end", "snapshot above the log end offset (the broker "
                         "deletes it on load)", file=s.path, offset=s.offset, expected=f"<= {leo}",
                         actual=s.offset)
                continue
            snapshots.append((s, snap))
        state: dict[int, dict[str, int]] = {}
        ongoing: dict[int, int] = {}   # producer -> first offset of its open transaction (in order)
        expected_aborts: list[tuple[int, int, int, int, int]] = []  # pid, first, last, lso, scan index
        si = 0
        pid_col = b.producer_id
        # producer state changes only at batches with a producer id: visit those alone
        for j in np.flatnonzero((pid_col >= 0) & (b.magic == _V2)).tolist():
            pid = int(pid_col[j])
            base = int(b.base_offset[j])
            while si < len(snapshots) and snapshots[si][0].offset <= base:
                self._compare_snapshot(*snapshots[si], state, log_start, leo)
                si += 1
            st = state.setdefault(pid, {"epoch": -1, "last_seq": -1, "last_offset": -1, "txn_first": -1,
                                        "coord": -1, "ts": -1, "marker": 0})
            epoch = int(b.producer_epoch[j])
            if bool(b.is_control[j]):
                m = markers.get(base)
                if m is None:  # empty control batch: the transaction was cleaned away
                    continue
                marker, k = m
                if st["txn_first"] >= 0:
                    if marker.abort:
                        others = [o for p, o in ongoing.items() if p != pid]
                        lso = min(others) if others else marker.offset + 1
                        expected_aborts.append((pid, st["txn_first"], marker.offset, lso, k))
                    ongoing.pop(pid, None)
                st.update(epoch=max(st["epoch"], epoch), coord=marker.coordinator_epoch, txn_first=-1,
                          ts=marker.timestamp, marker=1)
                continue
            transactional = bool(b.is_transactional[j])
            if st["txn_first"] >= 0 and (epoch > st["epoch"] or not transactional):
                self.add(ERROR, "hanging-transaction",
                         f"producer {pid} transaction from offset {st['txn_first']} "
                         f"has no marker before the producer's next {'epoch' if transactional else 'batch'}",
                         file=files[int(which[j])], position=int(b.position[j]), offset=st["txn_first"],
                         expected="a COMMIT/ABORT marker", actual=f"data at {base} (epoch {epoch})")
                ongoing.pop(pid, None)
                st["txn_first"] = -1
            if transactional and st["txn_first"] < 0:
                st["txn_first"] = base
                ongoing[pid] = base
            st.update(epoch=epoch, last_seq=int(b.last_sequence[j]), last_offset=int(b.last_offset[j]),
                      ts=int(b.max_timestamp[j]))
        for snap in snapshots[si:]:
            self._compare_snapshot(*snap, state, log_start, leo)
        self._open_transactions(state, leo)
        self._txn_indexes(expected_aborts, markers, log_start)

    def _compare_snapshot(self, sfile: Any, snap: Any, state: dict[int, dict[str, int]], log_start: int,
                          leo: int) -> None:
        if sfile.offset <= log_start:
            return
        if self.compacted and sfile.offset < leo:
            return  # the cleaner drops batches that state at this offset was built from
        for e in snap.entries:
            st = state.get(e.producer_id)
            if st is None or st["last_offset"] < 0 or e.last_offset < log_start:
                continue  # producer history below the log start offset (or expired): not replayable
            diffs = []
            if e.last_offset != st["last_offset"]:
                diffs.append(("lastOffset", st["last_offset"], e.last_offset))
            elif e.last_sequence != st["last_seq"]:
                diffs.append(("lastSequence", st["last_seq"], e.last_sequence))
            if e.epoch != st["epoch"]:
                diffs.append(("producerEpoch", st["epoch"], e.epoch))
            if (e.current_txn_first_offset >= log_start or st["txn_first"] >= 0) \
                    and e.current_txn_first_offset != st["txn_first"]:
                diffs.append(("currentTxnFirstOffset", st["txn_first"], e.current_txn_first_offset))
            if st["marker"] and e.coordinator_epoch != st["coord"]:
                diffs.append(("coordinatorEpoch", st["coord"], e.coordinator_epoch))
            for name, want, got in diffs:
                self.add(ERROR, "snapshot-producer-mismatch",
                         f"producer {e.producer_id}: {name} differs from a "
                         "replay of the log", file=sfile.path, offset=sfile.offset, expected=f"{name} {want}",
                         actual=f"{name} {got}")

    def _open_transactions(self, state: dict[int, dict[str, int]], leo: int) -> None:
        """kafka-transactions find-hanging's rule (``TransactionsCommand.FindHangingTransactionsCommand``):
        a transaction still open whose producer last wrote more than transaction.max.timeout.ms
        before --now is a candidate; it is hanging unless the coordinator (when its
        ``__transaction_state`` is known) still lists this partition in that producer's transaction."""
        tp = (self.r.topic, self.r.partition)
        for pid, st in sorted(state.items()):
            first = st["txn_first"]
            if first < 0:
                continue
            age = self.now_ms - st["ts"] if st["ts"] >= 0 else None
            expected = self.coordinator is not None and tp in self.coordinator.get(pid, frozenset())
            if age is not None and age > TRANSACTION_MAX_TIMEOUT_MS and not expected:
                self.add(WARNING, "hanging-transaction",
                         f"producer {pid} has a transaction open since offset {first} and last wrote "
                         f"{human_duration(age)} ({age} ms) before --now, more than "
                         f"transaction.max.timeout.ms ({human_duration(TRANSACTION_MAX_TIMEOUT_MS)}): "
                         f"it holds the last stable offset back",
                         offset=first, expected=f"a marker within {TRANSACTION_MAX_TIMEOUT_MS} ms",
                         actual=f"open for {human_duration(age)} ({age} ms)")
            else:
                self.add(INFO, "open-transaction",
                         f"producer {pid} has a transaction open since offset {first}", offset=first)

    def _txn_indexes(self, expected: list[tuple[int, int, int, int, int]],
                     markers: dict[int, tuple[Marker, int]], log_start: int) -> None:
        indexes: list[tuple[Segment, Any]] = []
        for seg, _scan in self.scans:
            if seg.txnindex_path is None:
                indexes.append((seg, None))
                continue
            try:
                tx = self.r.txn_index(seg)
            except KafkaFormatError as err:
                self.add(ERROR, "txnindex-corrupt", err.reason, file=seg.txnindex_path, position=err.position,
                         expected=err.expected, actual=err.found)
                indexes.append((seg, None))
                continue
            indexes.append((seg, tx))
            if not tx.sanity_check().ok:
                self.add(ERROR, "txnindex-order", str(tx.sanity_check().message), file=seg.txnindex_path)
            for a in tx.anomalies:
                if a.what != "partial_entry":
                    self.add(ERROR, "txnindex-order", a.what.replace("_", " "), file=seg.txnindex_path,
                             position=a.position, expected=a.expected, actual=a.found)
        where: dict[tuple[int, int], tuple[int, Any]] = {}
        for k, (_seg, tx) in enumerate(indexes):
            for e in (tx.entries if tx is not None else ()):
                where[(e.producer_id, e.last_offset)] = (k, e)
        for pid, first, last, lso, k in expected:
            seg, scan = self.scans[k]
            marker, _ = markers[last]
            hit = where.get((pid, last))
            if hit is None:
                self.add(ERROR, "txnindex-missing-entry",
                         f"ABORT marker of producer {pid} at offset {last} has no "
                         ".txnindex entry", file=scan.path, position=marker.position, offset=last,
                         expected=f"AbortedTxn(producerId={pid}, firstOffset={first}, lastOffset={last})",
                         actual="no entry")
                continue
            hk, entry = hit
            if hk != k:
                self.add(ERROR, "txnindex-wrong-segment",
                         "aborted transaction indexed in another segment than "
                         "its ABORT marker", file=indexes[hk][0].txnindex_path, position=entry.position,
                         offset=last, expected=self.scans[k][0].name, actual=indexes[hk][0].name)
            if self.compacted:
                continue
            if entry.first_offset >= log_start and entry.first_offset != first:
                self.add(ERROR, "txnindex-entry-mismatch",
                         "firstOffset differs from the transaction's first batch",
                         file=indexes[hk][0].txnindex_path, position=entry.position, offset=last,
                         expected=f"firstOffset {first}", actual=f"firstOffset {entry.first_offset}")
            elif entry.first_offset >= log_start and entry.last_stable_offset != lso:
                self.add(ERROR, "txnindex-entry-mismatch",
                         "lastStableOffset differs from a replay of the log",
                         file=indexes[hk][0].txnindex_path, position=entry.position, offset=last,
                         expected=f"lastStableOffset {lso}",
                         actual=f"lastStableOffset {entry.last_stable_offset}")
        for (pid, last), (hk, entry) in sorted(where.items(), key=lambda kv: kv[0][1]):
            m = markers.get(last)
            if m is not None and m[0].abort and m[0].producer_id == pid:
                continue
            if last < log_start:
                continue
            self.add(ERROR, "txnindex-entry-without-marker", f"aborted transaction of producer {pid} ends at "
                     f"{last}, where the log has no ABORT marker of that producer",
                     file=indexes[hk][0].txnindex_path, position=entry.position, offset=last,
                     expected=f"ABORT marker of producer {pid} at {last}", actual="none")


def audit_partition_report(replica: PartitionLog, *, config: TopicConfig | None = None, deep: bool = True,
                           now_ms: int | None = None,
                           coordinator: CoordinatorTransactions | None = None) -> PartitionAudit:
    """Findings and per-``.log`` byte accounting of one partition replica.

    ``config``: the topic's :class:`kafka_format.topicconfig.TopicConfig` (only ``compact`` is
    used: compacted logs legitimately lose batches, so replay-based checks relax there); without
    it, internal compacted topics and partitions with a cleaner checkpoint count as compacted.
    ``deep``: record-level checks (non-consecutive offsets, time index vs record timestamps).
    ``now_ms``: the audit time for open-transaction ages (default: now).
    ``coordinator``: the transaction coordinator's view (:func:`coordinator_transactions`); an
    open transaction past the timeout is hanging only where it does not list the partition.
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return _Auditor(replica, config, deep, now, coordinator).run()


def audit_partition(replica: PartitionLog, *, config: TopicConfig | None = None, deep: bool = True,
                    now_ms: int | None = None, coordinator: CoordinatorTransactions | None = None) -> list[Finding]:
    """Findings of one partition replica (see :func:`audit_partition_report`)."""
    return audit_partition_report(replica, config=config, deep=deep, now_ms=now_ms,
                                  coordinator=coordinator).findings


#: producer id -> the partitions its transaction coordinator still expects markers on
CoordinatorTransactions = dict[int, frozenset[tuple[str, int]]]
_TXN_OPEN_STATES = (1, 2, 3)   # Ongoing, PrepareCommit, PrepareAbort (TransactionState)


def coordinator_transactions(partitions: Iterable[PartitionLog]) -> CoordinatorTransactions | None:
    """What ``DescribeTransactions`` would answer, from the ``__transaction_state`` partitions among
    ``partitions``: the last value of every transactional id (offset order, read_committed; a
    tombstone removes it), as producer id -> its transaction's partitions (empty unless the state
    is Ongoing, PrepareCommit or PrepareAbort: the coordinator clears them on completion).
    None when no ``__transaction_state`` partition is there (the coordinator's view is unknown).
    """
    from kafka_format.internal.transaction_log import decode_transaction_log_key, decode_transaction_log_value

    chosen = [p for p in partitions if p.topic == "__transaction_state"]
    if not chosen:
        return None
    latest: dict[str, dict[str, Any] | None] = {}
    for part in sorted(chosen, key=lambda p: p.partition):
        for seg in part.segments:
            if seg.log_path is None:
                continue
            with _source(seg.log_path, part.filesystem) as src:
                for rb in decode_segment(src):
                    for key, value, is_control in zip(rb.column("key").to_pylist(),
                                                      rb.column("value").to_pylist(),
                                                      rb.column("isControl").to_pylist(), strict=True):
                        if is_control or key is None:
                            continue
                        k = decode_transaction_log_key(key)["data"]
                        if not isinstance(k, dict):
                            continue
                        v = decode_transaction_log_value(value)
                        latest[k["transactionalId"]] = None if v is None else v["data"]
    out: dict[int, frozenset[tuple[str, int]]] = {}
    for data in latest.values():
        if not isinstance(data, dict):
            continue
        parts: frozenset[tuple[str, int]] = frozenset()
        if data.get("transactionStatus") in _TXN_OPEN_STATES:
            parts = frozenset((t["topic"], i) for t in data.get("transactionPartitions") or ()
                              for i in t["partitionIds"])
        out[int(data["producerId"])] = parts
    return out


# ---------------------------------------------------------------------------------------------
# log dir and replicas


def audit_log_dir(log_dir: LogDir) -> list[Finding]:
    """Checks of a broker log dir's own files (meta.properties, checkpoints, clean shutdown)."""
    out: list[Finding] = []
    h = log_dir.filesystem

    def add(severity: str, check: str, message: str, file: str | None, **kw: Any) -> None:
        out.append(Finding(severity, check, None, None, file, kw.get("position"), None,
                           _text(kw.get("expected")), _text(kw.get("actual")), message))

    for err in log_dir.problems:
        add(ERROR, "state-file-corrupt", err.reason, err.path, position=err.position, expected=err.expected,
            actual=err.found)
    unreadable_meta = any(e.path and e.path.endswith(ckpt.META_PROPERTIES) for e in log_dir.problems)
    if log_dir.meta is None and not unreadable_meta:
        add(WARNING, "meta-properties-missing", "log dir has no meta.properties (broker id unknown)",
            h.join(log_dir.path, ckpt.META_PROPERTIES))
    if log_dir.clean_shutdown is None:
        add(INFO, "unclean-shutdown", "no .kafka_cleanshutdown: the broker did not shut down cleanly (it "
            "recovers segments above the recovery point on start)", log_dir.path)
    return out


@dataclass(frozen=True)
class _ReplicaBatches:
    replica: PartitionLog
    base: np.ndarray
    last: np.ndarray
    crc: np.ndarray
    position: np.ndarray
    file: np.ndarray            # index into files
    files: tuple[str, ...]
    leo: int


def _replica_batches(replica: PartitionLog) -> _ReplicaBatches:
    parts: list[BatchColumns] = []
    files: list[str] = []
    for seg in replica.segments:
        tables: list[pa.RecordBatch] = []
        with _source(seg.log_path or "", replica.filesystem) as src:
            try:
                tables.extend(decode_segment(src, granularity="batch", mode="PERMISSIVE"))
            except KafkaFormatError:
                pass
        cols = _batches_of(tables)
        t = pa.Table.from_batches(tables) if tables else None
        if t is not None:
            ok = t.column("crcValid").fill_null(False).to_numpy(zero_copy_only=False)
            cols = cols.take(ok)
        parts.append(cols)
        files.append(seg.log_path or "")
    b = BatchColumns.concat(parts)
    which = np.concatenate([np.full(len(p), k, np.int64) for k, p in enumerate(parts)]) if parts \
        else np.empty(0, np.int64)
    if len(b):
        leo = int(b.last_offset[-1]) + 1
    else:
        leo = replica.segments[-1].base_offset if replica.segments else 0
    base = np.where(b.base_offset < 0, b.last_offset, b.base_offset)  # legacy wrappers: null base
    return _ReplicaBatches(replica, base, b.last_offset, b.crc, b.position, which, tuple(files), leo)


SENTINEL_TOPIC_IDS = ("AAAAAAAAAAAAAAAAAAAAAQ",)  # Topic.METADATA_TOPIC_ID (__cluster_metadata)


def replica_groups(log_dirs: Iterable[LogDir]) -> list[list[PartitionLog]]:
    """Replicas of the same partition of the same cluster, groups of two or more.

    Replicas are the same partition only when their log dirs name the same ``cluster.id``, or,
    where a cluster id is unknown, when both carry the same (random, non-sentinel) topic id;
    copies from unrelated clusters that share a topic name are never compared.
    """
    groups: dict[tuple[Any, ...], list[PartitionLog]] = {}
    for d in log_dirs:
        for p in d.partitions:
            if p.kind != "live":
                continue
            if d.cluster_id is not None:
                key: tuple[Any, ...] = ("cluster", d.cluster_id, p.topic, p.partition)
            elif p.topic_id is not None and p.topic_id not in SENTINEL_TOPIC_IDS:
                key = ("topic-id", p.topic_id, p.topic, p.partition)
            else:
                continue
            groups.setdefault(key, []).append(p)
    out = []
    for members in groups.values():
        by_id: dict[str | None, list[PartitionLog]] = {}
        for p in members:  # a different topic id is a different topic (deleted and re-created)
            by_id.setdefault(p.topic_id, []).append(p)
        out.extend(g for g in by_id.values() if len(g) > 1)
    return sorted(out, key=lambda g: (g[0].topic, g[0].partition, g[0].log_dir))


def audit_replicas(replicas: Sequence[PartitionLog], *, config: TopicConfig | None = None) -> list[Finding]:
    """Compare the replicas of one topic-partition (from several log dirs).

    The leader is taken to be the replica with the highest latest leader epoch, then the highest
    log end offset.  Every other replica must hold byte-identical batches (same base and last
    offset, same CRC) for the offsets both hold (compacted topics: above both first dirty offsets),
    must not end beyond the leader, and is reported as lagging when its LEO is below the leader's
    high watermark.
    """
    if len(replicas) < 2:
        return []
    data = [_replica_batches(r) for r in replicas]
    compacted = any(_is_compacted(r, config) for r in replicas)
    def rank(d: _ReplicaBatches) -> tuple[int, int]:
        epoch = d.replica.leader_epoch
        return (epoch if epoch is not None else -1, d.leo)

    leader = max(data, key=rank)
    out: list[Finding] = []
    lr = leader.replica

    def add(severity: str, check: str, message: str, d: _ReplicaBatches, **kw: Any) -> None:
        out.append(Finding(severity, check, d.replica.topic, d.replica.partition,
                           kw.get("file", d.replica.path), kw.get("position"), kw.get("offset"),
                           _text(kw.get("expected")), _text(kw.get("actual")), message))

    leader_hw = lr.high_watermark_checkpoint
    for d in data:
        if d is leader:
            continue
        fr = d.replica
        if d.leo > leader.leo:
            add(WARNING, "replica-ahead-of-leader", f"replica ends at {d.leo}, beyond the leader's log end "
                f"({lr.log_dir}): it will be truncated", d, offset=leader.leo, expected=f"<= {leader.leo}",
                actual=d.leo)
        elif leader_hw is not None and d.leo < min(leader_hw, leader.leo):
            add(WARNING, "replica-lagging", f"replica log end {d.leo} is below the leader's high watermark "
                f"{leader_hw} ({lr.log_dir}): it is out of sync", d, offset=d.leo,
                expected=f">= {leader_hw}", actual=d.leo)
        if fr.high_watermark_checkpoint is not None and leader_hw is not None \
                and fr.high_watermark_checkpoint > leader_hw:
            add(WARNING, "replica-hw-above-leader", "replica high watermark above the leader's", d,
                offset=fr.high_watermark_checkpoint, expected=f"<= {leader_hw}",
                actual=fr.high_watermark_checkpoint)
        lo = max(fr.log_start_offset, lr.log_start_offset)
        if compacted:
            lo = max(lo, fr.first_dirty_offset(d.leo), lr.first_dirty_offset(leader.leo))
        hi = min(d.leo, leader.leo)
        ours = np.flatnonzero((d.base >= lo) & (d.last < hi))
        theirs = np.flatnonzero((leader.base >= lo) & (leader.last < hi))
        # vectorised join on base offset (both logs are in offset order); loop over mismatches only
        lb, ll, lc = leader.base[theirs], leader.last[theirs], leader.crc[theirs]
        j = np.minimum(np.searchsorted(lb, d.base[ours]), max(lb.size - 1, 0))
        same = (lb.size > 0) & (lb[j] == d.base[ours]) & (ll[j] == d.last[ours]) & (lc[j] == d.crc[ours]) \
            if lb.size else np.zeros(ours.size, bool)
        for m in np.flatnonzero(~same)[:MAX_DIVERGENCES].tolist():
            i = int(ours[m])
            k = (int(d.base[i]), int(d.last[i]))
            bounds_match = bool(lb.size) and int(lb[j[m]]) == k[0] and int(ll[j[m]]) == k[1]
            if bounds_match:
                expected = f"crc {int(lc[j[m]])}"
            elif _covered(leader, k):
                expected = "a batch with other offset bounds"
            else:
                expected = "no batch with these offsets"
            add(ERROR, "replica-divergence",
                f"batch {k[0]}..{k[1]} differs from the leader's copy ({lr.log_dir})",
                d, file=d.files[int(d.file[i])], position=int(d.position[i]), offset=k[0],
                expected=expected, actual=f"crc {int(d.crc[i])}")
    return out


def _covered(d: _ReplicaBatches, key: tuple[int, int]) -> bool:
    return bool(((d.base <= key[1]) & (d.last >= key[0])).any())


# ---------------------------------------------------------------------------------------------
# presentation (no Spark)


def at_or_above(findings: Iterable[Finding | dict[str, Any]], threshold: str) -> int:
    """How many findings have severity >= ``threshold`` ("error", "warning"; "never" → 0)."""
    if threshold == "never":
        return 0
    rank = SEVERITY_RANK[threshold]
    n = 0
    for f in findings:
        sev = f["severity"] if isinstance(f, dict) else f.severity
        n += SEVERITY_RANK.get(sev, 0) >= rank
    return n


def sort_findings(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows by severity (errors first), topic, partition, file, position."""
    return sorted(rows, key=lambda r: (-SEVERITY_RANK.get(r["severity"], 0), r["topic"] or "",
                                       r["partition"] if r["partition"] is not None else -1, r["file"] or "",
                                       r["position"] if r["position"] is not None else -1, r["check"]))


def format_finding(row: dict[str, Any]) -> str:
    """One text line: ``SEVERITY check topic-partition file:position offset=O: message (expected X,
    actual Y)``."""
    where = ""
    if row["topic"] is not None:
        where = f" {row['topic']}-{row['partition']}"
    loc = ""
    if row["file"] is not None:
        loc = f" {row['file']}" + (f":{row['position']}" if row["position"] is not None else "")
    off = f" offset={row['offset']}" if row["offset"] is not None else ""
    parts = [f"{name} {row[name]}" for name in ("expected", "actual") if row[name] is not None]
    tail = f" ({', '.join(parts)})" if parts else ""
    return f"{row['severity'].upper()} {row['check']}{where}{loc}{off}: {row['message']}{tail}"


def render_html(findings: Sequence[dict[str, Any]], files: Sequence[dict[str, Any]], *,
                title: str = "klogs audit") -> str:
    """The self-contained HTML report (:mod:`kafka_format.report.audit_page`): a summary, the
    problems first, informational findings folded one row per check, findings per broker and
    partition, and the byte accounting.  Every text is escaped."""
    from kafka_format.report.audit_page import render_audit_page

    return render_audit_page(findings, files, title=title)


def write_outputs(out: str, findings: Sequence[dict[str, Any]], files: Sequence[dict[str, Any]]) -> None:
    """Publish ``out/findings/`` (Parquet), ``out/files/`` (Parquet) and ``out/report.html`` at once
    (:func:`kafka_format.publish.staging_dir`: a crash leaves the previous ``out`` or none).  ``out``
    must be absent, empty or a previous audit output (:data:`REPORT_OWNER`'s marker)."""
    import pyarrow.parquet as pq

    from kafka_format.publish import crash_point, staging_dir

    finding_schema = pa.schema([
        pa.field("severity", pa.string(), False), pa.field("check", pa.string(), False),
        pa.field("topic", pa.string()), pa.field("partition", pa.int32()), pa.field("file", pa.string()),
        pa.field("position", pa.int64()), pa.field("offset", pa.int64()), pa.field("expected", pa.string()),
        pa.field("actual", pa.string()), pa.field("message", pa.string(), False)])
    files_schema = pa.schema([
        pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
        pa.field("file", pa.string(), False),
        *(pa.field(c, pa.int64(), False) for c in ACCOUNTING_COLUMNS[3:])])
    with staging_dir(out, REPORT_OWNER) as tmp:
        for name, rows, schema in (("findings", findings, finding_schema), ("files", files, files_schema)):
            os.mkdir(os.path.join(tmp, name))
            table = pa.Table.from_pylist([dict(r) for r in rows], schema=schema)
            pq.write_table(table, os.path.join(tmp, name, "part-00000.parquet"))
        with open(os.path.join(tmp, "report.html"), "w", encoding="utf-8") as fh:
            fh.write(render_html(findings, files))
        crash_point("audit-before-publish")
