"""Which range the cleaner takes at ``now`` (``LogCleanerManager``, ``LogToClean``), and the offset
map's size (``LogCleaner``, ``Cleaner.buildOffsetMapForSegment``).

One streaming header scan (:func:`kafka_format.storage.partition_state.iter_batch_heads`, one
segment's headers at a time) gives the log end offset, the per-segment timestamps the lags need,
and feeds the producer replay (:class:`~kafka_format.storage.partition_state.ProducerReplay`): the
last stable offset and ``lastRecordsOfActiveProducers``.  Segment ``largestTimestamp`` = max batch
timestamp from the scan, else the ``.log`` mtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafka_format.common.limits import INT32_MAX, INT64_MAX  # INT32_MAX re-exported (__all__)
from kafka_format.log.topicconfig import ConfigError, TopicConfig
from kafka_format.storage import partition_state
from kafka_format.storage.logdir import PartitionLog
from kafka_format.storage.partition_state import ProducerEntry

__all__ = [
    "INT32_MAX",
    "CleanerPlan",
    "PlanInputs",
    "SegmentStats",
    "map_capacity",
    "map_slots_for",
    "plan_cleaning",
    "plan_from",
    "plan_inputs",
    "segments_overlapping",
]

MD5_BYTES = 16            # CleanerConfig.HASH_ALGORITHM digest size
OFFSET_BYTES = 8          # SkimpyOffsetMap: hash + offset per slot


@dataclass(frozen=True)
class CleanerPlan:
    """Which range the cleaner takes at ``now`` (``LogCleanerManager`` / ``LogToClean``)."""

    topic: str
    partition: int
    compact: bool
    log_start_offset: int
    log_end_offset: int
    high_watermark: int | None
    last_stable_offset: int
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    dirty_ratio: float
    needs_compaction_now: bool
    would_clean_now: bool
    reason: str


def map_slots_for(config: TopicConfig) -> int:
    """Slots of one cleaner thread's ``SkimpyOffsetMap``: ``min(dedupe.buffer.size / threads,
    Int.MAX) // (16-byte MD5 + 8-byte offset)`` (``LogCleaner`` builds one map per thread)."""
    memory = min(int(config.broker("log.cleaner.dedupe.buffer.size"))
                 // int(config.broker("log.cleaner.threads")), INT32_MAX)
    return memory // (MD5_BYTES + OFFSET_BYTES)


def map_capacity(config: TopicConfig, slots: int | None = None) -> int:
    """Keys one round's offset map takes: ``int(slots * log.cleaner.io.buffer.load.factor)``
    (``Cleaner.buildOffsetMapForSegment``: ``maxDesiredMapSize``)."""
    n = map_slots_for(config) if slots is None else slots
    load = float(config.broker("log.cleaner.io.buffer.load.factor"))
    if n * load <= 1:  # Cleaner's require(): the map could not hold one key
        raise ConfigError(f"offset map of {n} slots at load factor {load} cannot hold one key "
                          "(log.cleaner.dedupe.buffer.size / log.cleaner.threads too small)")
    return int(n * load)


def segments_overlapping(bases: Sequence[int], start: int, end: int) -> list[int]:
    """Indexes of ``LogSegments.values(from, to)``: floor segment of ``from`` up to base < ``to``."""
    if start == end:
        return []
    floor = None
    for i, b in enumerate(bases):
        if b <= start:
            floor = i
    first = floor if floor is not None else 0
    return [i for i in range(first, len(bases)) if bases[i] < end]


@dataclass
class SegmentStats:
    """One segment's batches as the header scan saw them."""

    next_offset: int                 # LogSegment.readNextOffset: last batch's last offset + 1, else its base
    batch_bytes: int                 # bytes of its complete batches
    empty_batches: int               # v2 batches without records (count 0)


@dataclass
class PlanInputs:
    """What the header scan found (see the module doc)."""

    seg_max_ts: list[int]            # per segment: its batches' largest timestamp, -1 when none
    seg_first_ts: list[int | None]   # per segment: its first batch's max timestamp, None when empty
    leo: int
    hw: int | None
    lso: int
    active_producers: dict[int, ProducerEntry]
    seg_stats: list[SegmentStats]


def plan_inputs(replica: PartitionLog, config: TopicConfig, now_ms: int) -> PlanInputs:
    """One streaming header scan: LEO, HW, LSO, the active producers and the segments' timestamps.
    Corrupt framing raises (naming the ``.log`` and position): the cleaner cannot take the log."""
    segs = replica.segments
    last = list(partition_state.iter_batch_heads(replica, segs[-1], strict=True)) if segs else []
    leo = segs[-1].base_offset if segs else 0
    if last:
        leo = last[-1].last_offset + 1
    elif replica.log_end_offset is not None:
        leo = replica.log_end_offset
    hw_ck = replica.high_watermark_checkpoint
    hw_eff = partition_state.high_watermark(replica, log_end_offset=leo, missing=leo)
    replay = partition_state.ProducerReplay(replica, upto=leo, high_watermark=hw_eff)
    max_ts: list[int] = []
    first_ts: list[int | None] = []
    stats: list[SegmentStats] = []
    for i, seg in enumerate(segs):
        top, first, nbytes, empty, next_offset = -1, None, 0, 0, seg.base_offset
        heads = last if i == len(segs) - 1 else partition_state.iter_batch_heads(replica, seg, strict=True)
        for h in heads:
            if first is None:
                first = h.max_timestamp
            if h.max_timestamp > top:
                top = h.max_timestamp
            nbytes += h.size
            empty += h.count == 0
            next_offset = h.last_offset + 1
            replay.feed(h)
        max_ts.append(top)
        first_ts.append(first)
        stats.append(SegmentStats(next_offset, nbytes, empty))
    lso = replay.last_stable_offset()
    expiration = int(config.broker("producer.id.expiration.ms"))
    return PlanInputs(max_ts, first_ts, leo, None if hw_ck is None else hw_eff, lso,
                      replay.active_producers(now_ms, expiration), stats)


def plan_from(replica: PartitionLog, config: TopicConfig, now_ms: int, inp: PlanInputs,
              checkpoint: int | None) -> CleanerPlan:
    """``LogCleanerManager.cleanableOffsets`` / ``calculateCleanableBytes`` / ``maxCompactionDelay``
    and the choice ``grabFilthiestCompactedLog`` makes, for one replica."""
    segs = replica.segments
    bases = [s.base_offset for s in segs]
    sizes = [s.log_size or 0 for s in segs]
    start = replica.log_start_offset
    dirty = start if checkpoint is None or checkpoint < start or checkpoint > inp.leo else checkpoint
    active_base = bases[-1] if bases else 0
    candidates = [inp.lso, active_base]

    def non_active_from(offset: int) -> list[int]:
        if not bases or offset > active_base:
            return []
        return segments_overlapping(bases, offset, active_base)

    min_lag = max(config.min_compaction_lag_ms, 0)
    if min_lag > 0:
        for i in non_active_from(dirty):
            ts = inp.seg_max_ts[i]
            largest = ts if ts >= 0 else (segs[i].log_mtime_ms or 0)
            if largest > now_ms - min_lag:
                candidates.append(bases[i])
                break
    uncleanable = max(dirty, min(candidates))
    nas = non_active_from(uncleanable)
    first_uncleanable = bases[nas[0]] if nas else active_base
    clean_bytes = sum(sizes[i] for i in segments_overlapping(bases, -1, dirty))
    cleanable_bytes = sum(sizes[i] for i in segments_overlapping(bases, min(dirty, first_uncleanable),
                                                                  first_uncleanable))
    total = clean_bytes + cleanable_bytes
    ratio = cleanable_bytes / total if total > 0 else 0.0
    max_lag = max(config.max_compaction_lag_ms, 0)
    firsts = [INT64_MAX if inp.seg_first_ts[i] is None else inp.seg_first_ts[i] for i in non_active_from(dirty)]
    positive = [t for t in firsts if t is not None and t > 0]
    earliest = min(positive) if positive else INT64_MAX
    need_now = earliest < now_ms - max_lag
    compact = config.compact
    if not compact:
        would, why = False, "cleanup.policy has no compact"
    elif total <= 0:
        would, why = False, ("empty log" if not any(sizes) else
                             "nothing cleanable: no closed segment below the first uncleanable offset")
    elif need_now and cleanable_bytes > 0:
        would, why = True, "max.compaction.lag.ms exceeded"
    elif ratio > config.min_cleanable_dirty_ratio:
        would, why = True, "dirty ratio above min.cleanable.dirty.ratio"
    elif cleanable_bytes == 0:
        would, why = False, "nothing cleanable"
    else:
        would, why = False, "dirty ratio at or below min.cleanable.dirty.ratio"
    return CleanerPlan(topic=replica.topic, partition=replica.partition, compact=compact,
                       log_start_offset=start, log_end_offset=inp.leo, high_watermark=inp.hw,
                       last_stable_offset=inp.lso, first_dirty_offset=dirty,
                       first_uncleanable_offset=first_uncleanable, clean_bytes=clean_bytes,
                       cleanable_bytes=cleanable_bytes, dirty_ratio=ratio, needs_compaction_now=need_now,
                       would_clean_now=would, reason=why)


def plan_cleaning(replica: PartitionLog, config: TopicConfig, now_ms: int) -> CleanerPlan:
    """Range and eligibility of ``replica`` for the cleaner at ``now_ms``."""
    return plan_from(replica, config, now_ms, plan_inputs(replica, config, now_ms),
                     replica.cleaner_offset_checkpoint)
