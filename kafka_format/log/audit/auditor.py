"""Offline audit of Kafka log dirs: every check of kafka-dump-log and more.

The entry points; the checks live in :mod:`kafka_format.log.audit.segments` (one segment's
files), :mod:`kafka_format.log.audit.state` (checkpoints, epochs, producer state, transactions) and
:mod:`kafka_format.log.audit.replicas` (a log dir, replicas across brokers), the shared rows and
state in :mod:`kafka_format.log.audit.model`, the ``.log`` scan in :mod:`kafka_format.log.audit.scan`.

No Spark here: the audit job (:mod:`kafka_format.engine.audit`) ships partition descriptors to
whichever executor runs it and calls these functions there.

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

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kafka_format.common.errors import KafkaFormatError
from kafka_format.common.topics import TRANSACTION_STATE_TOPIC
from kafka_format.log.audit.model import (
    ACCOUNTING_COLUMNS,
    CHECKS,
    COMPACTED_INTERNAL_TOPICS,
    ERROR,
    FINDING_COLUMNS,
    INFO,
    MAX_DIVERGENCES,
    MAX_PAIRS_PER_FILE,
    SEVERITY_RANK,
    TRANSACTION_MAX_TIMEOUT_MS,
    WARNING,
    BatchColumns,
    CoordinatorTransactions,
    FileAccounting,
    Finding,
    LogScan,
    Marker,
    PartitionAudit,
    at_or_above,
    format_finding,
)
from kafka_format.log.audit.replicas import SENTINEL_TOPIC_IDS, audit_log_dir, audit_replicas, replica_groups
from kafka_format.log.audit.scan import _source, merge_skipped_ranges, scan_log
from kafka_format.log.audit.segments import SegmentChecks
from kafka_format.log.audit.state import StateChecks
from kafka_format.log.audit.tables import sort_findings
from kafka_format.records.file_records import decode_segment
from kafka_format.storage.logdir import PartitionLog

if TYPE_CHECKING:
    from kafka_format.log.topicconfig import TopicConfig

__all__ = [
    "ACCOUNTING_COLUMNS",
    "CHECKS",
    "COMPACTED_INTERNAL_TOPICS",
    "ERROR",
    "FINDING_COLUMNS",
    "INFO",
    "MAX_DIVERGENCES",
    "MAX_PAIRS_PER_FILE",
    "SENTINEL_TOPIC_IDS",
    "SEVERITY_RANK",
    "TRANSACTION_MAX_TIMEOUT_MS",
    "WARNING",
    "BatchColumns",
    "CoordinatorTransactions",
    "FileAccounting",
    "Finding",
    "LogScan",
    "Marker",
    "PartitionAudit",
    "at_or_above",
    "audit_log_dir",
    "audit_partition",
    "audit_partition_report",
    "audit_replicas",
    "coordinator_transactions",
    "format_finding",
    "merge_skipped_ranges",
    "replica_groups",
    "scan_log",
    "sort_findings",
]


class _Auditor(SegmentChecks, StateChecks):
    """Collects findings for one partition replica: every check, segment by segment, then its state."""

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


def audit_partition_report(replica: PartitionLog, *, config: TopicConfig | None = None, deep: bool = True,
                           now_ms: int | None = None,
                           coordinator: CoordinatorTransactions | None = None) -> PartitionAudit:
    """Findings and per-``.log`` byte accounting of one partition replica.

    ``config``: the topic's :class:`kafka_format.log.topicconfig.TopicConfig` (only ``compact`` is
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


_TXN_OPEN_STATES = (1, 2, 3)   # Ongoing, PrepareCommit, PrepareAbort (TransactionState)


def coordinator_transactions(partitions: Iterable[PartitionLog]) -> CoordinatorTransactions | None:
    """What ``DescribeTransactions`` would answer, from the ``__transaction_state`` partitions among
    ``partitions``: the last value of every transactional id (offset order, read_committed; a
    tombstone removes it), as producer id -> its transaction's partitions (empty unless the state
    is Ongoing, PrepareCommit or PrepareAbort: the coordinator clears them on completion).
    None when no ``__transaction_state`` partition is there (the coordinator's view is unknown).
    """
    from kafka_format.internal.transaction_log import decode_transaction_log_key, decode_transaction_log_value

    chosen = [p for p in partitions if p.topic == TRANSACTION_STATE_TOPIC]
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
