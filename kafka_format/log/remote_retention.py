"""Remote retention offline: which remote segments of a tiered partition the leader's
``RemoteLogManager`` expiration task deletes at ``now``, and the log start offset it then sets.

Kafka source of record: ``RemoteLogManager.RLMExpirationTask.cleanupExpiredRemoteLogSegments`` with its
``RemoteLogRetentionHandler`` (``isSegmentBreachByLogStartOffset``, ``isSegmentBreachedByRetentionTime``,
``isSegmentBreachedByRetentionSize``, ``deleteLogSegmentsDueToLeaderEpochCacheTruncation``),
``buildRetentionSizeData`` / ``buildRetentionTimeData`` (``core/.../log/remote/RemoteLogManager.java``) and
``UnifiedLog.onlyLocalLogSegmentsSize``.  One pass:

* the leader epochs are the replica's leader epoch cache filtered as ``buildFilteredLeaderEpochMap``
  does (an epoch followed by one starting at the same offset has no records and is left out);
* ``retention.bytes`` (not ``local.retention.bytes``) > -1: the remote size is the sum of the
  ``COPY_SEGMENT_FINISHED`` segments listed by those epochs (each once) within the leader epoch lineage
  (``isRemoteSegmentWithinLeaderEpochs``); with the local segments whose base offset is at or above the
  highest copied offset it makes the total, and the breach is what the total exceeds the limit by;
* ``retention.ms`` > -1: a segment whose ``maxTimestampMs`` is at or before ``now - retention.ms``
  breaches;
* epoch by epoch (in order), each epoch's segments in ``listRemoteLogSegments`` order: a segment in
  ``DELETE_SEGMENT_STARTED`` is deleted again (a dangling deletion); one whose epochs are all at or below
  the first epoch and whose end offset is below the log start offset is deleted (``log-start-offset``);
  else, within the lineage, it is deleted when time breaches or (else) when it fits in what the size
  breach has left (``retention.ms``, ``retention.bytes``); the walk stops at the first segment within the
  lineage that is kept;
* the log start offset becomes one past the last segment deleted for time or size;
* then the segments of remote epochs below the leader epoch cache's earliest epoch whose epochs all are
  are deleted (``leader-epoch-truncation``: unclean leader election leftovers).

Offline, no copy is in progress (Kafka skips the segments being copied, and stops there): the log dirs
are a stopped broker's or a snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafka_format.internal.remote_log_metadata import RemoteLogSegmentMetadata, RemoteLogSegmentState
from kafka_format.internal.remote_log_metadata_cache import RemoteLogMetadataCache
from kafka_format.storage.tiered_history import filtered_lineage, within_leader_epochs

__all__ = [
    "REASON_DANGLING",
    "REASON_EPOCH_TRUNCATION",
    "REMOTE_REASONS",
    "RemoteDeletion",
    "RemoteRetention",
    "remote_retention",
]

REASON_DANGLING = "dangling-deletion"
REASON_EPOCH_TRUNCATION = "leader-epoch-truncation"
#: why a remote segment is deleted (``retention.ms``, ``retention.bytes`` and ``log-start-offset`` as
#: the local pass names them)
REMOTE_REASONS = ("log-start-offset", "retention.ms", "retention.bytes", REASON_DANGLING, REASON_EPOCH_TRUNCATION)


@dataclass(frozen=True)
class RemoteDeletion:
    """A remote segment the pass deletes, and why."""

    metadata: RemoteLogSegmentMetadata
    reason: str


@dataclass(frozen=True)
class RemoteRetention:
    """The outcome of one expiration pass over a tiered partition's remote segments."""

    deletions: tuple[RemoteDeletion, ...]
    #: the log start offset the pass sets (``handleLogStartOffsetUpdate``), None when unchanged
    log_start_offset: int | None
    #: ``remoteLogSizeBytes`` of ``buildRetentionSizeData`` (None without ``retention.bytes``)
    remote_size_bytes: int | None
    #: what the total exceeds ``retention.bytes`` by (0: no size breach; None without it)
    breached_bytes: int | None

    def reason_of(self, segment_id: str) -> str | None:
        """Why the segment is deleted, None when it is kept."""
        return next((d.reason for d in self.deletions if d.metadata.segment_id == segment_id), None)


def remote_retention(cache: RemoteLogMetadataCache, *, lineage: Sequence[tuple[int, int]], log_start_offset: int,
                     log_end_offset: int, only_local_size: int, retention_ms: int, retention_bytes: int,
                     now_ms: int) -> RemoteRetention:
    """One ``cleanupExpiredRemoteLogSegments`` pass at ``now_ms`` (module doc).  ``lineage``: the
    replica's leader epoch cache as (epoch, start offset); ``only_local_size``:
    ``onlyLocalLogSegmentsSize`` (the local segments at or above the highest copied offset)."""
    listed = cache.list_remote_log_segments()
    if not listed:
        return RemoteRetention((), None, None, None)
    remote_epochs = sorted({e for m in listed for e in m.segment_leader_epochs})
    epochs = filtered_lineage(sorted(lineage))


    remote_size: int | None = None
    remaining = 0
    size_breach = False
    if retention_bytes > -1:
        visited: set[str] = set()
        remote_size = 0
        for epoch, _ in epochs:
            for m in cache.list_remote_log_segments(epoch):
                if (m.state is RemoteLogSegmentState.COPY_SEGMENT_FINISHED and m.segment_id not in visited
                        and within_leader_epochs(m, log_end_offset, lineage)):
                    remote_size += m.segment_size_in_bytes
                    visited.add(m.segment_id)
        total = only_local_size + remote_size
        if total > retention_bytes:
            remaining, size_breach = total - retention_bytes, True
    cleanup_until = now_ms - retention_ms if retention_ms > -1 else None

    deletions: list[RemoteDeletion] = []
    chosen: set[str] = set()
    new_start: int | None = None

    def delete(m: RemoteLogSegmentMetadata, reason: str) -> None:
        deletions.append(RemoteDeletion(m, reason))
        chosen.add(m.segment_id)

    first_epoch = epochs[0][0] if epochs else None
    can_process = True
    for epoch, _ in epochs:
        if not can_process:
            break
        for m in cache.list_remote_log_segments(epoch):
            if not can_process:
                break
            if m.state is RemoteLogSegmentState.DELETE_SEGMENT_STARTED:
                if m.segment_id not in chosen:
                    delete(m, REASON_DANGLING)
                continue
            if m.state is RemoteLogSegmentState.DELETE_SEGMENT_FINISHED or m.segment_id in chosen:
                continue
            reason: str | None = None
            if (first_epoch is not None and all(e <= first_epoch for e in m.segment_leader_epochs)
                    and m.end_offset < log_start_offset):
                reason = "log-start-offset"
            valid = False
            if reason is None:
                valid = within_leader_epochs(m, log_end_offset, lineage)
                if valid:
                    if cleanup_until is not None and m.max_timestamp_ms <= cleanup_until:
                        reason = "retention.ms"
                        remaining = max(0, remaining - m.segment_size_in_bytes)
                    elif size_breach and remaining > 0 and remaining - m.segment_size_in_bytes >= 0:
                        reason = "retention.bytes"
                        remaining -= m.segment_size_in_bytes
                    if reason is not None and (new_start is None or new_start < m.end_offset + 1):
                        new_start = m.end_offset + 1
            if reason is not None:
                delete(m, reason)
            can_process = reason is not None or not valid
    earliest = min(lineage)[0] if lineage else None    # leaderEpochCache.earliestEntry() (unfiltered)
    if earliest is not None:
        for epoch in (e for e in remote_epochs if e < earliest):
            for m in cache.list_remote_log_segments(epoch):
                if m.segment_id not in chosen and all(e < earliest for e in m.segment_leader_epochs):
                    delete(m, REASON_EPOCH_TRUNCATION)
    return RemoteRetention(tuple(deletions), new_start, remote_size, remaining if size_breach else
                           (0 if remote_size is not None else None))
