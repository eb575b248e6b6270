"""Audit findings and what the checks share: severities, check ids, the ``Finding`` and
``FileAccounting`` rows, batch columns of a scanned ``.log``, and :class:`PartitionChecks`, the
state of one replica's audit that the check classes (:mod:`kafka_format.log.audit.segments`,
:mod:`kafka_format.log.audit.state`) extend.  Rendering is :mod:`kafka_format.report.audit_report`'s."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_format.common.errors import KafkaFormatError
from kafka_format.common.topics import CONSUMER_OFFSETS_TOPIC, METADATA_TOPIC, TRANSACTION_STATE_TOPIC
from kafka_format.records import batch_v2
from kafka_format.records.entry import LOG_OVERHEAD, MAGIC_OFFSET
from kafka_format.records.file_records import SkippedRange
from kafka_format.storage import checkpoints as ckpt
from kafka_format.storage.fsio import redact
from kafka_format.storage.logdir import PartitionLog, Segment

if TYPE_CHECKING:
    from kafka_format.log.topicconfig import TopicConfig

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITY_RANK = {INFO: 0, WARNING: 1, ERROR: 2}
# The audit's two outputs, declared once (the Parquet files, the DataFrames' schemas, the lines' keys):
# findings -- null where a value does not apply; files -- one row per .log, its bytes accounted
# (validBytes + skippedBytes + zeroTailBytes + cutBytes = sizeBytes).
FINDING_SCHEMA = pa.schema([
    pa.field("severity", pa.string(), False), pa.field("check", pa.string(), False),
    pa.field("topic", pa.string()), pa.field("partition", pa.int32()), pa.field("file", pa.string()),
    pa.field("position", pa.int64()), pa.field("offset", pa.int64()), pa.field("expected", pa.string()),
    pa.field("actual", pa.string()), pa.field("message", pa.string(), False)])
ACCOUNTING_SCHEMA = pa.schema([
    pa.field("topic", pa.string()), pa.field("partition", pa.int32()), pa.field("file", pa.string(), False),
    *(pa.field(c, pa.int64(), False) for c in ("sizeBytes", "validBytes", "skippedBytes", "zeroTailBytes",
                                               "cutBytes", "batches"))])
FINDING_COLUMNS = tuple(FINDING_SCHEMA.names)
ACCOUNTING_COLUMNS = tuple(ACCOUNTING_SCHEMA.names)

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
    # a tiered partition's tiers (kafka_format.log.audit.tiers)
    "remote-offset-gap", "remote-no-leader-epochs", "remote-files-missing", "remote-size-mismatch",
    "remote-segment-partly-served", "remote-segment-unused", "remote-orphan-fileset", "remote-unfinished-fileset",
    "remote-metadata-mismatch",
)

MAX_PAIRS_PER_FILE = 100            # non-consecutive offset pairs reported per file (then a summary)
MAX_DIVERGENCES = 20                # divergent batches reported per replica pair
# transaction.max.timeout.ms default (TransactionStateManagerConfig): a transaction open longer
# than this cannot be live any more; kafka-transactions find-hanging uses the same bound.
TRANSACTION_MAX_TIMEOUT_MS = 900_000
COMPACTED_INTERNAL_TOPICS = (CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC)
_V2 = 2
_V2_CRC = struct.Struct(">I")       # DefaultRecordBatch: crc at byte 17, covers 21..end
_V2_CRC_AT, _V2_CRC_FROM = batch_v2.CRC_OFFSET, batch_v2.ATTRIBUTES_OFFSET
_LEGACY_CRC_AT, _LEGACY_CRC_FROM = LOG_OVERHEAD, MAGIC_OFFSET   # LegacyRecord: crc after offset+size, covers magic..end
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
        """The rows of ``parts`` in order, as a new ``BatchColumns`` (one part: its columns as they
        are, not copied; nothing writes into a column, a changed column is a new array)."""
        names = BatchColumns.__dataclass_fields__
        if not parts:
            return BatchColumns(**{n: np.empty(0, np.int64) for n in names})
        if len(parts) == 1:
            return BatchColumns(**{n: getattr(parts[0], n) for n in names})
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

#: producer id -> the partitions its transaction coordinator still expects markers on
CoordinatorTransactions = dict[int, frozenset[tuple[str, int]]]


def _is_compacted(replica: PartitionLog, config: TopicConfig | None) -> bool:
    """cleanup.policy contains compact, or the facts say so: an internal compacted topic, or a
    cleaner checkpoint entry (the cleaner ran on this partition)."""
    if replica.topic in COMPACTED_INTERNAL_TOPICS or replica.cleaner_offset_checkpoint is not None:
        return True
    try:
        return bool(config.compact) if config is not None else False
    except (AttributeError, KeyError, ValueError):
        return False


class PartitionChecks:
    """One partition replica under audit: its files, the segments scanned so far and the findings."""


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

    @cached_property
    def recovered_on_start(self) -> str | None:
        """Whose newest segment this is, when the broker recovers it on loading the log
        (``LogLoader.recoverLog``: ``LogSegment.recover`` resets both indexes and rebuilds them from
        the ``.log``), or None when it does not: the log dir has ``.kafka_cleanshutdown`` (Kafka
        tests only that the file exists) and the log is not the KRaft metadata log, which
        ``KafkaMetadataLog`` always loads with ``lastShutdownClean=false``.  Without the file, the
        recovery runs from the segment holding the recovery point to the end, so the newest segment
        is always among them: the log dir is a running broker's (or a copy of one) or one that
        stopped without a clean shutdown."""
        if self.r.topic == METADATA_TOPIC:
            return ("the KRaft metadata log, which the broker recovers whenever it loads it (KafkaMetadataLog: "
                    "lastShutdownClean=false)")
        try:
            marker = self.handle.fs_path(self._state_file(ckpt.CLEAN_SHUTDOWN))
            if self.r.log_dir and self.handle.stat(marker) is not None:
                return None
        except (KafkaFormatError, OSError):
            pass                     # unreadable: not known to be clean
        return ("a running broker (or a copy of its log dir) or one that did not stop cleanly, as the log dir "
                "has no .kafka_cleanshutdown (LogLoader.recoverLog recovers the newest segment on start)")

    def _all_batches(self) -> tuple[BatchColumns, list[str], np.ndarray]:
        """Valid batches of every segment in order, with each batch's file index."""
        parts = [scan.batches for _, scan in self.scans]
        files = [scan.path for _, scan in self.scans]
        which = np.concatenate([np.full(len(p), k, np.int64) for k, p in enumerate(parts)]) if parts \
            else np.empty(0, np.int64)
        return BatchColumns.concat(parts), files, which


# ---------------------------------------------------------------------------------------------
# presentation (no Spark)


def at_or_above(findings: pa.Table | Iterable[Finding | dict[str, Any]], threshold: str) -> int:
    """How many findings have severity >= ``threshold`` ("error", "warning"; "never" → 0)."""
    if threshold == "never":
        return 0
    rank = SEVERITY_RANK[threshold]
    if isinstance(findings, pa.Table):
        worse = pa.array([s for s, r in SEVERITY_RANK.items() if r >= rank])
        return int(pc.sum(pc.is_in(findings["severity"], value_set=worse)).as_py() or 0)
    n = 0
    for f in findings:
        sev = f["severity"] if isinstance(f, dict) else f.severity
        n += SEVERITY_RANK.get(sev, 0) >= rank
    return n


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
