"""Offline retention: which segments Kafka's retention pass deletes at ``now``, and when.

Kafka source of record (``apache/kafka`` at 1eb7644, 2024-10-25): ``UnifiedLog.deleteOldSegments``,
``deletableSegments``, ``deleteSegments``, ``deleteLogStartOffsetBreachedSegments``,
``deleteRetentionSizeBreachedSegments``, ``deleteRetentionMsBreachedSegments``,
``isRemoteLogEnabled`` (``core/src/main/scala/kafka/log/UnifiedLog.scala``), ``LogSegment.largestTimestamp``
/ ``readLargestTimestamp`` (``storage/.../log/LogSegment.java``), ``Partition.createLog`` (HW on load),
``LogLoader`` (logStartOffset on load).

One pass (``deleteOldSegments``), each step recomputed from the state the previous left::

    if policy runs deletion: logStartOffset breach, then size breach, then time breach
    else:                    logStartOffset breach only

Each step walks segments oldest first and stops at the first segment that fails
``HW >= upper && predicate`` (``upper`` = next segment's base offset, LEO for the last one) or that is
the last segment and empty.  When every segment goes, the broker first rolls an empty segment at LEO.

Decisions this module takes (and documents in the job's output notes):

* **HW** = ``replication-offset-checkpoint`` capped at LEO and raised to logStartOffset
  (``UnifiedLog.updateHighWatermark``).  When the checkpoint has no entry the HW is *assumed
  equal to LEO* (a leader whose followers are in sync); Kafka itself would load 0 (so
  logStartOffset) and delete nothing until replication advances it.  ``missing_hw="log-start"``
  gives Kafka's load-time value instead.
* **largestTimestamp**: closed segments: last valid ``.timeindex`` entry; the last segment:
  ``readLargestTimestamp`` (time-index last entry, then a batch-header scan from the offset-index
  position of that entry); ``.log`` mtime when no timestamp ``>= 0`` is known.
* **sizeBytes** = the ``.log`` file length (``FileRecords.sizeInBytes`` of a loaded segment);
  recovery of a crashed broker's unflushed tail is not modelled.
* **cleanup.policy**: ``delete`` / ``compact,delete`` run the three steps; ``compact`` only the
  logStartOffset step; empty: logStartOffset step only, except with tiered storage where the
  local retention runs too (Kafka 4.2 upgrade notes, KAFKA-19112; the 2024 source treats empty
  like ``compact``).
* **Tiered storage** (``remote.storage.enable`` on a non-compacted, non-internal topic and
  ``remote.log.copy.disable=false``): ``local.retention.ms/bytes`` apply and every breaching
  segment is reported as a *local* deletion candidate, assuming it has been uploaded (the remote
  tier is invisible offline); an active segment that breaches is rolled by the broker and deleted
  after its upload, which is reported as deletable now.
* **deletableAtMs** assumes no new data and a constant HW: segments deletable now -> ``now``;
  others only through time retention: the walk must reach them, so
  ``max(now, max over the time step's walk up to this segment of largestTimestamp + retention + 1)``;
  null when no step can ever reach the segment (HW guard, empty last segment, retention off,
  policy without deletion).
* compacted topics get their pass from the cleaner thread (``LogCleaner.cleanFilthiestLog``);
  with ``log.cleaner.enable=false`` (``--config '*:log.cleaner.enable=false'``) they get none.
* ``__cluster_metadata`` is never a candidate: the KRaft log is trimmed by snapshots, not by
  the log manager's retention pass.

Nothing here decodes records: index files and batch headers only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from kafka_format.common.limits import INT64_MAX
from kafka_format.common.topics import (
    CONSUMER_OFFSETS_TOPIC,
    METADATA_TOPIC,
    REMOTE_LOG_METADATA_TOPIC,
    SHARE_GROUP_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
)
from kafka_format.records.record_batch import NO_TIMESTAMP
from kafka_format.storage import partition_state
from kafka_format.storage.logdir import LogDirSet, PartitionLog, Segment, open_log_dirs
from kafka_format.storage.partition_state import PartitionRef, TopicSelection

__all__ = [
    "INTERNAL_TOPICS",
    "REASON_AWAITING_UPLOAD",
    "REASON_LOG_START_OFFSET",
    "REASON_RETENTION_BYTES",
    "REASON_RETENTION_MS",
    "SEGMENT_FIELDS",
    "SEGMENT_SCHEMA",
    "SUMMARY_SCHEMA",
    "PartitionFacts",
    "RetentionPolicy",
    "RetentionTask",
    "SegmentDecision",
    "SegmentFacts",
    "disk_usage_steps",
    "partition_facts",
    "plan_retention",
    "remote_log_enabled",
    "retention_walk",
    "run_task",
    "segment_largest_timestamp",
    "segment_rows",
    "summarize",
]

REASON_LOG_START_OFFSET = "log-start-offset"
REASON_RETENTION_BYTES = "retention.bytes"
REASON_RETENTION_MS = "retention.ms"
#: not deletable: a tiered log's segment that breaches local retention but is not copied yet
REASON_AWAITING_UPLOAD = "awaiting-upload"

# docs/jobs/: one row per segment, exactly these columns (declared once: the job's Arrow output,
# Spark's schema derived from it, the jsonl lines' keys).
SEGMENT_SCHEMA = pa.schema([
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("baseOffset", pa.int64(), nullable=False),
    pa.field("sizeBytes", pa.int64(), nullable=False),
    pa.field("largestTimestamp", pa.int64(), nullable=False),
    pa.field("deletable", pa.bool_(), nullable=False),
    pa.field("reason", pa.string()),                 # retention.ms | retention.bytes | log-start-offset |
                                                     # awaiting-upload (not deletable) | remote reasons | null
    pa.field("deletableAtMs", pa.int64()),           # null: no retention step reaches the segment
    pa.field("tier", pa.string(), nullable=False),   # local | remote (a tiered partition's remote segment)
])
SEGMENT_FIELDS = tuple(SEGMENT_SCHEMA.names)
# summarize(): one row per topic-partition.
SUMMARY_SCHEMA = pa.schema([
    pa.field("topic", pa.string(), nullable=False), pa.field("partition", pa.int32(), nullable=False),
    *(pa.field(name, pa.int64()) for name in (
        "segments", "bytes", "deletableSegments", "deletableBytes", "bytesRemaining", "bytesNeverDeletable",
        "nextDeletionMs", "lastDeletionMs", "oldestTimestamp", "newestTimestamp")),
])

# Topic.isInternal + the topics UnifiedLog.isRemoteLogEnabled also excludes.
INTERNAL_TOPICS = frozenset({CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC})
_NO_REMOTE_TOPICS = INTERNAL_TOPICS | {REMOTE_LOG_METADATA_TOPIC, METADATA_TOPIC}
_NOT_RETAINED = frozenset({METADATA_TOPIC})

_MISSING_HW = ("leo", "log-start")


class _TopicConfigLike(Protocol):
    """What :meth:`RetentionPolicy.from_config` reads (``kafka_format.log.topicconfig.TopicConfig``)."""

    @property
    def cleanup_policy(self) -> frozenset[str]: ...
    @property
    def retention_ms(self) -> int: ...
    @property
    def retention_bytes(self) -> int: ...
    @property
    def local_retention_ms(self) -> int: ...
    @property
    def local_retention_bytes(self) -> int: ...
    @property
    def remote_storage_enable(self) -> bool: ...
    def get(self, key: str) -> str: ...


def remote_log_enabled(topic: str, config: _TopicConfigLike) -> bool:
    """``UnifiedLog.isRemoteLogEnabled`` (the broker's ``remote.log.storage.system.enable`` taken as on):
    ``remote.storage.enable=true`` on a topic that is neither compacted nor internal, nor
    ``__remote_log_metadata`` or ``__cluster_metadata``."""
    return config.remote_storage_enable and "compact" not in config.cleanup_policy and topic not in _NO_REMOTE_TOPICS


@dataclass(frozen=True)
class RetentionPolicy:
    """The parts of a topic's config the retention pass reads, resolved.

    ``deletion``: the size and time steps run (``config.delete``); ``retention_ms`` /
    ``retention_bytes``: the effective limits (local ones under tiered storage; negative = off);
    ``tiered``: ``remoteLogEnabledAndRemoteCopyEnabled``; ``runs``: a pass runs at all (compacted
    logs get theirs from the cleaner thread, so never with ``log.cleaner.enable=false``:
    ``LogManager.cleanupLogs`` skips them, ``LogCleaner.cleanFilthiestLog`` runs it).
    """

    runs: bool = True
    deletion: bool = True
    retention_ms: int = 604_800_000
    retention_bytes: int = -1
    tiered: bool = False
    cleanup_policy: str = "delete"
    #: ``retention.ms`` / ``retention.bytes`` of the whole log (the remote tier's pass; tiered only)
    total_retention_ms: int = -1
    total_retention_bytes: int = -1

    @classmethod
    def from_config(cls, topic: str, config: _TopicConfigLike) -> RetentionPolicy:
        """Resolve ``config`` for ``topic`` as ``UnifiedLog`` does (see the module doc)."""
        policy = config.cleanup_policy
        remote = remote_log_enabled(topic, config)
        copy_disabled = _config_flag(config, "remote.log.copy.disable")
        tiered = remote and not copy_disabled
        deletion = "delete" in policy or (not policy and remote)
        retention_ms = config.local_retention_ms if tiered else config.retention_ms
        retention_bytes = config.local_retention_bytes if tiered else config.retention_bytes
        runs = "compact" not in policy or _broker_flag(config, "log.cleaner.enable", True)
        return cls(runs=runs, deletion=deletion, retention_ms=int(retention_ms), retention_bytes=int(retention_bytes),
                   tiered=tiered, cleanup_policy=",".join(sorted(policy)),
                   total_retention_ms=int(config.retention_ms) if remote else -1,
                   total_retention_bytes=int(config.retention_bytes) if remote else -1)


def _config_flag(config: _TopicConfigLike, key: str) -> bool:
    try:
        return config.get(key).strip().lower() == "true"
    except KeyError:
        return False


def _broker_flag(config: Any, key: str, default: bool) -> bool:
    broker = getattr(config, "broker", None)
    if broker is None:
        return default
    try:
        return str(broker(key)).strip().lower() == "true"
    except KeyError:
        return default


@dataclass(frozen=True)
class SegmentFacts:
    """What the walk needs of one segment."""

    base_offset: int
    size: int
    largest_timestamp: int


@dataclass(frozen=True)
class PartitionFacts:
    """One partition replica as the retention pass sees it."""

    topic: str
    partition: int
    segments: tuple[SegmentFacts, ...]
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    high_watermark_source: str      # "checkpoint" | "assumed-leo" | "assumed-log-start"
    log_dir: str = ""
    broker_id: int | None = None
    leader_epoch: int | None = None


@dataclass(frozen=True)
class SegmentDecision:
    """The outcome for one segment (``reason`` None when not deletable now)."""

    base_offset: int
    size: int
    largest_timestamp: int
    deletable: bool
    reason: str | None
    deletable_at_ms: int | None
    tier: str = "local"


# ---------------------------------------------------------------------------------------------
# the walk (pure)


def retention_walk(segments: Sequence[SegmentFacts], *, log_start_offset: int, log_end_offset: int,
                   high_watermark: int, policy: RetentionPolicy, now_ms: int,
                   highest_remote_offset: int | None = None) -> list[SegmentDecision]:
    """``deleteOldSegments`` at ``now_ms`` over ``segments`` (oldest first), plus ``deletableAtMs``.

    ``high_watermark`` is used as given (callers clamp it to ``[logStartOffset, LEO]``).
    ``highest_remote_offset``: a tiered log's ``highestOffsetInRemoteStorage`` (-1: nothing copied),
    when its remote log metadata is known: a breaching segment is deleted only once copied (its last
    offset at or below it, ``isSegmentEligibleForDeletion``), else the walk stops there and the segment
    is :data:`REASON_AWAITING_UPLOAD`; None: every breaching segment counts as copied.
    """
    n = len(segments)
    reasons: list[str | None] = [None] * n
    awaiting: set[int] = set()
    start = 0   # first segment still present
    gated = policy.tiered and highest_remote_offset is not None

    def upper(i: int) -> int:
        return segments[i + 1].base_offset if i + 1 < n else log_end_offset

    def eligible(i: int) -> bool:
        if not gated:
            return True
        assert highest_remote_offset is not None
        copied = upper(i) > 0 and upper(i) - 1 <= highest_remote_offset
        return copied or (i + 1 < n and log_start_offset >= segments[i + 1].base_offset)

    def walk(predicate: Callable[[int, bool], bool]) -> int:
        """``deletableSegments``: index one past the last deletable segment."""
        i = start
        while i < n:
            is_last = i + 1 == n
            ok = high_watermark >= upper(i) and predicate(i, is_last)
            if ok and not (is_last and segments[i].size == 0) and eligible(i):
                i += 1
            else:
                if ok and not (is_last and segments[i].size == 0):
                    awaiting.add(i)             # breaches, not copied yet
                break
        return i

    def mark(stop: int, reason: str) -> None:
        nonlocal start
        for i in range(start, stop):
            reasons[i] = reason
        start = stop

    if not policy.runs:
        return [SegmentDecision(s.base_offset, s.size, s.largest_timestamp, False, None, None) for s in segments]
    # 1. logStartOffset breach: the next segment starts at or below logStartOffset.
    mark(walk(lambda i, is_last: not is_last and segments[i + 1].base_offset <= log_start_offset),
         REASON_LOG_START_OFFSET)
    if policy.deletion:
        # 2. size breach over what is left (an empty rolled segment adds nothing).
        limit = policy.retention_bytes
        total = sum(s.size for s in segments[start:])
        if limit >= 0 and total >= limit:
            diff = [total - limit]

            def size_ok(i: int, is_last: bool) -> bool:
                if diff[0] - segments[i].size >= 0:
                    diff[0] -= segments[i].size
                    return True
                return False

            mark(walk(size_ok), REASON_RETENTION_BYTES)
        # 3. time breach, strictly greater.
        if policy.retention_ms >= 0:
            mark(walk(lambda i, is_last: now_ms - segments[i].largest_timestamp > policy.retention_ms),
                 REASON_RETENTION_MS)

    # deletableAtMs: without new data only the time step's walk can reach further, and it does
    # so once every segment from the first survivor up to this one is expired.
    out: list[SegmentDecision] = []
    running: int | None = now_ms if policy.deletion and policy.retention_ms >= 0 else None
    for i, seg in enumerate(segments):
        at: int | None = now_ms if reasons[i] is not None else None
        if reasons[i] is None and running is not None:
            is_last = i + 1 == n
            due = seg.largest_timestamp + policy.retention_ms + 1
            if high_watermark < upper(i) or (is_last and seg.size == 0) or due > INT64_MAX:
                running = None
            else:
                running = max(running, due)
            at = running
        if reasons[i] is None and i in awaiting:     # the copy comes first: no time can be told
            out.append(SegmentDecision(seg.base_offset, seg.size, seg.largest_timestamp, False, REASON_AWAITING_UPLOAD,
                                       None))
            running = None
            continue
        out.append(SegmentDecision(seg.base_offset, seg.size, seg.largest_timestamp, reasons[i] is not None,
                                   reasons[i], at))
    return out


# ---------------------------------------------------------------------------------------------
# facts from files (index bytes + batch headers)


def _scan_tail(replica: PartitionLog, seg: Segment, start: int) -> tuple[int, int | None]:
    """(max batch maxTimestamp, last batch lastOffset or None) of ``seg`` from byte ``start``
    (:func:`kafka_format.storage.partition_state.iter_batch_heads`: headers only, stops quietly at corrupt
    framing, where the broker's reader stops)."""
    best = NO_TIMESTAMP
    last: int | None = None
    for head in partition_state.iter_batch_heads(replica, seg, start):
        best = max(best, head.max_timestamp)
        last = head.last_offset
    return best, last


def segment_largest_timestamp(replica: PartitionLog, seg: Segment, *, last: bool) -> tuple[int, int | None]:
    """(``LogSegment.largestTimestamp``, segment next offset or None when not computed).

    Closed segment: last valid time-index entry; last segment: ``readLargestTimestamp`` (time-index
    last entry, then batch headers from the offset-index position at or before that entry's offset),
    which also gives the next offset.  Falls back to the ``.log`` mtime when no timestamp >= 0.
    """
    tindex = replica.time_index(seg)
    ts = int(tindex.last_entry().timestamp) if tindex is not None and len(tindex) else NO_TIMESTAMP
    next_offset: int | None = None
    if seg.index_path is None:
        # LogLoader: no .index -> the segment is recovered, which rebuilds both indexes from the batches
        # (a missing .timeindex alone is recreated empty: mtime fallback).
        scanned, last_offset = _scan_tail(replica, seg, 0)
        ts = scanned
        if last:
            next_offset = seg.base_offset if last_offset is None else last_offset + 1
    elif last:
        entry_offset = int(tindex.last_entry().offset) if tindex is not None and len(tindex) else seg.base_offset
        oindex = replica.offset_index(seg)
        position = oindex.lookup(entry_offset).position if oindex is not None else 0
        scanned, last_offset = _scan_tail(replica, seg, int(position))
        ts = max(ts, scanned)
        if last_offset is not None:
            next_offset = last_offset + 1
        else:
            next_offset = int(oindex.last_entry().offset) + 1 if oindex is not None and len(oindex) else seg.base_offset
    if ts >= 0:
        return ts, next_offset
    # File.lastModified(): 0 when unknown.
    return (seg.log_mtime_ms if seg.log_mtime_ms is not None else 0), next_offset


def partition_facts(replica: PartitionLog, *, missing_hw: str = "leo") -> PartitionFacts:
    """Segment sizes and largest timestamps, logStartOffset, LEO and HW of one replica."""
    if missing_hw not in _MISSING_HW:
        raise ValueError(f"missing_hw must be one of {_MISSING_HW}, not {missing_hw!r}")
    segs = [s for s in replica.segments if s.has_log]
    facts: list[SegmentFacts] = []
    leo = replica.log_start_offset
    for i, seg in enumerate(segs):
        is_last = i + 1 == len(segs)
        largest, next_offset = segment_largest_timestamp(replica, seg, last=is_last)
        facts.append(SegmentFacts(seg.base_offset, int(seg.log_size or 0), int(largest)))
        if is_last and next_offset is not None:
            leo = next_offset
    if replica.log_end_offset is not None:
        leo = replica.log_end_offset
    lso = replica.log_start_offset
    leo = max(leo, segs[-1].base_offset) if segs else leo
    if replica.high_watermark_checkpoint is None:
        source = "assumed-leo" if missing_hw == "leo" else "assumed-log-start"
    else:
        source = "checkpoint"
    missing = leo if missing_hw == "leo" else partition_state.MISSING_HIGH_WATERMARK
    hw = partition_state.high_watermark(replica, log_end_offset=leo, missing=missing)
    return PartitionFacts(replica.topic, replica.partition, tuple(facts), lso, leo, hw, source,
                          replica.log_dir, replica.broker_id, replica.leader_epoch)


# ---------------------------------------------------------------------------------------------
# tasks: driver plans, executors run


@dataclass(frozen=True)
class RetentionTask(PartitionRef):
    """One partition replica to evaluate (re-opened where it runs) with its topic's policy."""

    policy: RetentionPolicy
    now_ms: int
    missing_hw: str = "leo"
    #: a tiered replica's remote side, from its remote log metadata (:class:`TieredRetention`)
    tiered: TieredRetention | None = None


@dataclass(frozen=True)
class TieredRetention:
    """What a tiered replica's remote log metadata tells the retention passes: its metadata cache
    (:class:`~kafka_format.internal.remote_log_metadata_cache.RemoteLogMetadataCache`), the log start
    of the whole history and ``highestOffsetInRemoteStorage`` (-1: nothing copied)."""

    cache: Any
    log_start_offset: int
    highest_remote_offset: int


def plan_retention(logdirs: LogDirSet | str | Sequence[str], configs: Mapping[str, Any] | Any, now_ms: int, *,
                   topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                   missing_hw: str = "leo") -> list[RetentionTask]:
    """One task per live partition replica selected by ``topics`` / ``topic_pattern`` (fullmatch;
    none = every topic).  ``configs[topic]`` gives each topic's ``TopicConfig``."""
    if missing_hw not in _MISSING_HW:
        raise ValueError(f"missing_hw must be one of {_MISSING_HW}, not {missing_hw!r}")
    dirs = logdirs if isinstance(logdirs, LogDirSet) else open_log_dirs(logdirs)
    selection = TopicSelection.of(topics, topic_pattern)
    policies: dict[str, RetentionPolicy] = {}
    tasks = []
    for replica in sorted(dirs.all_partitions(), key=lambda p: (p.topic, p.partition, p.log_dir)):
        if replica.kind != "live" or replica.topic in _NOT_RETAINED or not selection.matches(replica.topic):
            continue
        if replica.topic not in policies:
            policies[replica.topic] = RetentionPolicy.from_config(replica.topic, configs[replica.topic])
        tasks.append(RetentionTask(replica.topic, replica.partition, replica.path, replica.log_dir,
                                   policies[replica.topic], int(now_ms), missing_hw))
    return tasks


def run_task(task: RetentionTask) -> tuple[PartitionFacts, list[SegmentDecision]]:
    """Evaluate one task: re-open the partition, gather facts, walk; a tiered replica's remote
    segments (the expiration pass, :func:`kafka_format.log.remote_retention.remote_retention`) come
    first, as ``tier="remote"`` decisions."""
    replica = task.open()
    facts = partition_facts(replica, missing_hw=task.missing_hw)
    tiered = task.tiered
    decisions = retention_walk(facts.segments, log_start_offset=facts.log_start_offset,
                               log_end_offset=facts.log_end_offset, high_watermark=facts.high_watermark,
                               policy=task.policy, now_ms=task.now_ms,
                               highest_remote_offset=None if tiered is None else tiered.highest_remote_offset)
    if tiered is None:
        return facts, decisions
    return facts, [*remote_decisions(replica, facts, tiered, task.policy, task.now_ms), *decisions]


def remote_decisions(replica: PartitionLog, facts: PartitionFacts, tiered: TieredRetention, policy: RetentionPolicy,
                     now_ms: int) -> list[SegmentDecision]:
    """The remote segments of a tiered replica (in offset order) as the expiration pass treats them at
    ``now_ms``, with ``retention.ms``/``retention.bytes`` of the whole log: deletable now with its
    reason, or when ``retention.ms`` reaches it with no new data (the pass walks in offset order and stops
    at a segment it keeps: a segment is due when every kept one before it is)."""
    from kafka_format.log.remote_retention import remote_retention
    from kafka_format.storage.tiered_history import leader_epoch_lineage, within_leader_epochs

    lineage = leader_epoch_lineage(replica)
    highest = tiered.highest_remote_offset
    only_local = sum(s.size for s in facts.segments if s.base_offset >= highest)
    ms, size = (policy.total_retention_ms, policy.total_retention_bytes) if policy.deletion else (-1, -1)
    outcome = remote_retention(tiered.cache, lineage=lineage, log_start_offset=tiered.log_start_offset,
                               log_end_offset=facts.log_end_offset, only_local_size=only_local, retention_ms=ms,
                               retention_bytes=size, now_ms=now_ms)
    out: list[SegmentDecision] = []
    running: int | None = now_ms if ms >= 0 else None
    for m in tiered.cache.list_remote_log_segments():
        reason = outcome.reason_of(m.segment_id)
        at: int | None = now_ms
        if reason is None:
            if not within_leader_epochs(m, facts.log_end_offset, lineage):
                at = None                       # the pass steps over it: only a truncation deletes it
            else:
                if running is not None:
                    running = max(running, m.max_timestamp_ms + ms)
                at = running
        out.append(SegmentDecision(m.start_offset, m.segment_size_in_bytes, m.max_timestamp_ms, reason is not None,
                                   reason, at, "remote"))
    return out


def segment_rows(facts: PartitionFacts, decisions: Iterable[SegmentDecision]) -> Iterator[dict[str, Any]]:
    """The per-segment output objects (``SEGMENT_FIELDS``)."""
    for d in decisions:
        yield {"topic": facts.topic, "partition": facts.partition, "baseOffset": d.base_offset,
               "sizeBytes": d.size, "largestTimestamp": d.largest_timestamp, "deletable": d.deletable,
               "reason": d.reason, "deletableAtMs": d.deletable_at_ms, "tier": d.tier}


# ---------------------------------------------------------------------------------------------
# summaries over the per-segment rows


def summarize(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per (topic, partition): segments, bytes, deletable now, bytes remaining, next and last
    deletion time, bytes never deletable without new data; of the local segments (the disk's)."""
    groups: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for r in rows:
        if r.get("tier", "local") == "local":      # the local disk's (a tiered log's remote rows aside)
            groups.setdefault((r["topic"], r["partition"]), []).append(r)
    out = []
    for (topic, partition), segs in sorted(groups.items()):
        later = [r["deletableAtMs"] for r in segs if not r["deletable"] and r["deletableAtMs"] is not None]
        every = [r["deletableAtMs"] for r in segs if r["deletableAtMs"] is not None]
        total = sum(int(r["sizeBytes"]) for r in segs)
        now_bytes = sum(int(r["sizeBytes"]) for r in segs if r["deletable"])
        out.append({
            "topic": topic, "partition": partition, "segments": len(segs), "bytes": total,
            "deletableSegments": sum(1 for r in segs if r["deletable"]), "deletableBytes": now_bytes,
            "bytesRemaining": total - now_bytes,
            "bytesNeverDeletable": sum(int(r["sizeBytes"]) for r in segs if r["deletableAtMs"] is None),
            "nextDeletionMs": min(later) if later else None,
            "lastDeletionMs": max(every) if every else None,
            "oldestTimestamp": min(int(r["largestTimestamp"]) for r in segs),
            "newestTimestamp": max(int(r["largestTimestamp"]) for r in segs),
        })
    return out


def disk_usage_steps(rows: Iterable[Mapping[str, Any]], now_ms: int) -> list[tuple[int, int]]:
    """Total bytes on disk over time assuming no new data: ``[(t, bytes from t on), ...]``,
    starting with ``(now, all bytes before the pass)`` and one point per distinct deletion time."""
    total = 0
    drops: dict[int, int] = {}
    for r in rows:
        if r.get("tier", "local") != "local":
            continue
        size = int(r["sizeBytes"])
        total += size
        at = r["deletableAtMs"]
        if at is not None:
            drops[int(at)] = drops.get(int(at), 0) + size
    steps = [(int(now_ms), total)]
    for t in sorted(drops):
        total -= drops[t]
        steps.append((t, total))
    return steps
