"""Audit checks across the two tiers of a tiered partition (tiered storage, KIP-405).

A tiered partition's history (:func:`kafka_format.storage.tiered_history.tiered_history`: the remote
segments ``RemoteLogManager.read`` serves below the local log start, then the local log) gives one
finding per :class:`~kafka_format.storage.tiered_history.TierFinding`:

* ``remote-offset-gap`` (error): offsets no segment serves, between the log start and the remote
  tier, between remote segments, or between the remote tier and the local log;
* ``remote-no-leader-epochs`` (error): the replica has no leader epochs, so the broker serves nothing
  from the remote tier;
* ``remote-files-missing`` (error): a ``COPY_SEGMENT_FINISHED`` segment whose files the store lacks
  or names after another start offset;
* ``remote-size-mismatch`` (error): a remote ``.log`` that is not ``segmentSizeInBytes`` long;
* ``remote-segment-partly-served`` (warning): leader-epoch divergence, a copied segment whose offsets
  the lineage serves partly from other segments;
* ``remote-segment-unused`` (warning, ``info`` below the log start, where remote retention deletes
  it): a copied segment no offset is served from (replaced by a later copy, outside the lineage);
* ``remote-orphan-fileset`` (warning): files no metadata names, left by a failed copy;
* ``remote-unfinished-fileset`` (info): files of a segment being copied or deleted;

and, with the remote storage's files read, the bytes of each remote segment the history serves:
``remote-metadata-mismatch`` (error) when its batches do not span the metadata's start and end offsets
or their max timestamp is not the metadata's ``maxTimestampMs``, and the byte- and index-level checks of
:func:`kafka_format.log.audit.auditor.audit_partition_report` (:data:`REMOTE_SEGMENT_CHECKS`) with the
accounting of every remote ``.log``.  The partition's state checks (checkpoints, leader epochs,
producer snapshots, transactions) stay with its local replica's audit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafka_format.log.audit.auditor import audit_partition_report
from kafka_format.log.audit.model import ERROR, INFO, WARNING, FileAccounting, Finding
from kafka_format.storage.batch_heads import BatchHead
from kafka_format.storage.partition_log import PartitionLog
from kafka_format.storage.partition_state import iter_batch_heads
from kafka_format.storage.remote_tier import remote_partition_log
from kafka_format.storage.tiered_history import (
    REMOTE_TIER,
    MissingRemoteFiles,
    NoLeaderEpochs,
    OffsetGap,
    PartlyServedSegment,
    RemotePiece,
    RemoteSizeMismatch,
    TieredHistory,
    TierFinding,
    UnfinishedFileset,
    UnnamedFileset,
    UnusedRemoteSegment,
)

__all__ = ["REMOTE_SEGMENT_CHECKS", "TierAudit", "audit_tiers", "tier_findings"]

#: checks of :func:`audit_partition_report` that are about a segment's own bytes and indexes (kept
#: for remote segments; the others are about the partition's state, which its local replica holds)
REMOTE_SEGMENT_CHECKS = frozenset({
    "skipped-bytes", "batch-crc", "invalid-bytes-at-end", "batch-offsets", "record-count",
    "first-batch-below-segment-base", "offset-overflow", "offsets-not-increasing", "segment-overlap",
    "index-missing", "index-corrupt", "index-sanity", "index-zero-tail", "index-order", "index-offset-mismatch",
    "timeindex-missing", "timeindex-zero-tail", "timeindex-order", "timeindex-out-of-order",
    "timeindex-offset-not-found", "timeindex-timestamp-mismatch", "timeindex-last-entry", "txnindex-corrupt",
    "txnindex-order",
})


@dataclass(frozen=True)
class TierAudit:
    """The findings of a tiered partition's two tiers and the accounting of its remote ``.log`` files."""

    findings: list[Finding]
    files: list[FileAccounting]


def _finding(history: TieredHistory, severity: str, check: str, f: TierFinding, *, file: str | None = None,
             expected: str | None = None, actual: str | None = None) -> Finding:
    p = history.partition
    return Finding(severity, check, p.topic, p.partition, file if file is not None else history.local.path, None,
                   f.start_offset, expected, actual, f.message)


def tier_findings(history: TieredHistory, *, with_store: bool = True) -> list[Finding]:
    """The history's :class:`~kafka_format.storage.tiered_history.TierFinding` values as audit findings
    (module doc); ``with_store=False`` (no remote storage given) leaves out those about the store's files."""
    out: list[Finding] = []
    for f in history.findings:
        if isinstance(f, OffsetGap):
            out.append(_finding(history, ERROR, "remote-offset-gap", f, expected="a segment for every offset",
                                actual=f"offsets {f.start_offset}..{f.end_offset - 1} served by none"))
        elif isinstance(f, NoLeaderEpochs):
            out.append(_finding(history, ERROR, "remote-no-leader-epochs", f, expected="leader-epoch-checkpoint entries",
                                actual="none"))
        elif isinstance(f, PartlyServedSegment):
            out.append(_finding(history, WARNING, "remote-segment-partly-served", f,
                                expected=f"offsets {f.start_offset}..{f.end_offset} served by {f.segment_id}",
                                actual="unserved " + ", ".join(f"{a}..{b - 1}" for a, b in f.unserved)))
        elif isinstance(f, UnusedRemoteSegment):
            severity = INFO if f.reason == "below log start" else WARNING
            out.append(_finding(history, severity, "remote-segment-unused", f, expected="served offsets",
                                actual=f.reason))
        elif not with_store:
            continue
        elif isinstance(f, MissingRemoteFiles):
            out.append(_finding(history, ERROR, "remote-files-missing", f, file=f.expected,
                                expected="the segment's fileset", actual="missing " + ", ".join(f.missing)))
        elif isinstance(f, RemoteSizeMismatch):
            out.append(_finding(history, ERROR, "remote-size-mismatch", f, file=f.location,
                                expected=f"{f.expected} bytes", actual="unknown" if f.found is None else f"{f.found} bytes"))
        elif isinstance(f, UnnamedFileset):
            out.append(_finding(history, WARNING, "remote-orphan-fileset", f, file=f.location,
                                expected="a fileset named by segment metadata", actual=", ".join(f.files)))
        elif isinstance(f, UnfinishedFileset):
            out.append(_finding(history, INFO, "remote-unfinished-fileset", f, file=f.location,
                                expected="COPY_SEGMENT_FINISHED", actual=f.state))
    return out


def _span(heads: Sequence[BatchHead]) -> tuple[int, int, int] | None:
    if not heads:
        return None
    return heads[0].base_offset, heads[-1].last_offset, max(h.max_timestamp for h in heads)


def _metadata_findings(history: TieredHistory, piece: RemotePiece, heads: Sequence[BatchHead]) -> list[Finding]:
    m = piece.metadata
    span = _span(heads)
    p = history.partition
    log = piece.location() or history.local.path
    want = (m.start_offset, m.end_offset, m.max_timestamp_ms)
    if span == want:
        return []
    found = "no batch" if span is None else f"offsets {span[0]}..{span[1]}, max timestamp {span[2]}"
    return [Finding(ERROR, "remote-metadata-mismatch", p.topic, p.partition, log, 0, m.start_offset,
                    f"offsets {m.start_offset}..{m.end_offset}, max timestamp {m.max_timestamp_ms}", found,
                    f"remote segment {m.segment_id}'s batches disagree with its metadata: the metadata says offsets "
                    f"{m.start_offset}..{m.end_offset} with max timestamp {m.max_timestamp_ms}, the .log holds {found}")]


def audit_tiers(history: TieredHistory, *, deep: bool = True, with_store: bool = True) -> TierAudit:
    """Every finding of the history's tiers (module doc); with the store's files (``with_store``), each
    served remote segment's bytes against its metadata and the segment checks of the remote logs, with
    their accounting."""
    findings = tier_findings(history, with_store=with_store)
    files: list[FileAccounting] = []
    if not with_store:
        return TierAudit(findings, files)
    for unit in history.read_logs(skip_unreadable=True):
        if unit.tier != REMOTE_TIER:
            continue
        report = audit_partition_report(unit.log, deep=deep)
        p = history.partition
        findings.extend(Finding(f.severity, f.check, p.topic, p.partition, f.file, f.position, f.offset, f.expected,
                                f.actual, f.message) for f in report.findings if f.check in REMOTE_SEGMENT_CHECKS)
        files.extend(report.files)
    seen: set[str] = set()
    for piece in history.remote_pieces:
        if piece.segment_id in seen or not piece.readable or piece.fileset is None:
            continue
        seen.add(piece.segment_id)
        heads = list(iter_batch_heads(_log_of(history, piece), piece.fileset.segment()))
        findings.extend(_metadata_findings(history, piece, heads))
    return TierAudit(findings, files)


def _log_of(history: TieredHistory, piece: RemotePiece) -> PartitionLog:
    """A one-segment partition log over the piece's files (the store's filesystem, its locations)."""
    assert history.remote is not None and history.remote_dir is not None and piece.fileset is not None
    return remote_partition_log(history.remote, history.remote_dir, [piece.fileset])
