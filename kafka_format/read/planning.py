"""Pure split planner: log dirs + indexes + bounds -> frozen, picklable :class:`Split` values.

Driver-side and Spark-free (style anchor 13: plan, then read).  The data source's
``partitions()`` only wraps the splits; ``read()`` decodes one split.

Discovery is :func:`kafka_format.storage.logdir.open_log_dirs` (log dirs, partition dirs, parents of
several brokers' log dirs; the broker's ``.swap``/``.cleaned`` reconciliation; orphans set
apart); the planner works on its :class:`~kafka_format.storage.logdir.PartitionLog` /
:class:`~kafka_format.storage.logdir.Segment` values and reads index files through their readers
(:mod:`kafka_format.storage.index`, :mod:`kafka_format.storage.txnindex`).

How a topic-partition is cut:

* work is cut only at batch boundaries, i.e. at ``.index`` positions (or byte 0 of a
  segment), never inside a batch;
* consecutive small segments of one partition are packed into one split and large
  segments are cut at index entries, so that each split covers about
  ``max_bytes_per_partition`` bytes of log; knowing the session's parallelism, the size is
  Spark's file-source rule ``min(maxBytesPerPartition, max(openCost, totalBytes /
  defaultParallelism))`` so every core works; ``min_partitions`` lowers the target size
  until at least that many splits exist (when the index entries allow it);
* a Spark read packs small splits into one input partition as Spark's file sources pack small
  files (:func:`pack_splits`: each split costs its bytes plus the open cost);
* offset bounds (``startingOffsets``/``endingOffsets``/pushed ``offset`` filters) skip
  whole segments by base offset and start/stop inside a segment at the index entry
  ``OffsetIndex.lookup`` would use; rows are then filtered exactly by offset in ``read()``;
* timestamp bounds are resolved per ListOffsets: first segment whose
  largest timestamp >= target, time-index lookup, offset-index lookup, then the first
  batch with ``maxTimestamp >= target``; the record-level part happens in ``read()``
  through :attr:`Split.start_timestamp` / :attr:`Split.end_timestamp`;
* ``read_committed``: the LSO caps the end offset and every aborted
  transaction of ``.txnindex`` that can touch a split travels with it.

Batch headers come from :func:`~kafka_format.storage.partition_state.iter_batch_heads` (the one
header walker).  Files are opened through
each partition's :class:`~kafka_format.storage.fsio.FileSystemHandle`, so any ``pyarrow.fs`` URI works;
split paths are locations (:func:`kafka_format.storage.fsio.resolve` re-opens them on executors).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from kafka_format.common.bulk import no_cyclic_gc
from kafka_format.common.errors import LogDirError
from kafka_format.log.list_offsets import PartitionLookup
from kafka_format.storage import fsio
from kafka_format.storage.logdir import LogDirSet, PartitionLog, Segment, open_log_dirs
from kafka_format.storage.partition_files import SegmentTable
from kafka_format.storage.partition_log import REMOTE_KIND
from kafka_format.storage.partition_state import (
    BatchHead,
    high_watermark_on_load,
    iter_batch_heads,
    last_stable_offset,
    log_end_offset,
)
from kafka_format.storage.tiered_history import LOCAL_TIER

__all__ = [
    "DEFAULT_MAX_BYTES_PER_PARTITION",
    "BatchHead",
    "Bounds",
    "PlanOptions",
    "SegmentRange",
    "Split",
    "check_assignment",
    "fetch_upper",
    "iter_batch_heads",
    "last_stable_offset",
    "log_end_offset",
    "open_input",
    "open_partitions",
    "pack_splits",
    "plan_splits",
    "resolve_timestamp",
    "select_replicas",
]

DEFAULT_MAX_BYTES_PER_PARTITION = 128 * 1024 * 1024
DEFAULT_OPEN_COST_BYTES = 4 * 1024 * 1024          # spark.sql.files.openCostInBytes' default


# --- outputs -----------------------------------------------------------------------------
class SegmentRange(NamedTuple):
    """Byte range ``[start_position, end_position)`` of one ``.log`` (end None = end of file).

    A named tuple (one per planned segment: a plan of a large cluster makes hundreds of thousands)."""

    path: str
    segment: int
    start_position: int
    end_position: int | None
    first_offset: int           # no batch in this range has an offset below this
    active: bool = False        # in the partition's last segment: a partial batch at its end is a
                                # crash tail (LogSegment.recover truncates it), elsewhere corruption


@dataclass(frozen=True)
class Split:
    """One unit of read work: consecutive byte ranges of one partition replica.

    Rows are kept when ``start_offset <= offset < end_offset`` (None: unbounded).
    ``start_timestamp=(position, T)``: in the batch at that position drop records before
    the first record with timestamp >= T (ListOffsets' record step); ``end_timestamp``
    likewise drops that batch's records from the first one with timestamp >= T on.
    ``aborted`` holds ``(producerId, firstOffset, lastOffset)`` of aborted transactions
    that can touch this split (read_committed only; for a tiered partition those of both tiers).
    ``tier``: ``local`` (a broker log dir) or ``remote`` (a tiered partition's remote segments).
    """

    topic: str
    partition: int
    log_dir: str
    broker_id: int | None
    ranges: tuple[SegmentRange, ...]
    start_offset: int | None = None
    end_offset: int | None = None
    start_timestamp: tuple[int, int] | None = None
    end_timestamp: tuple[int, int] | None = None
    read_committed: bool = False
    aborted: tuple[tuple[int, int, int], ...] = ()
    log_start_offset: int = 0
    planned_bytes: int = 0      # bytes of log the planner counted (a range to end of file included)
    tier: str = LOCAL_TIER      # the ``tier`` column: which tier's files the ranges are
    #: what a permissive read of a tiered partition skips without bytes to decode: (file, position,
    #: length, reason, segment) of offsets no segment serves and remote segments the store cannot serve
    skipped: tuple[tuple[str, int, int, str, int], ...] = ()

    @property
    def size_bytes(self) -> int | None:
        """Bytes of log covered (None when a range runs to end of file of unknown size)."""
        total = 0
        for r in self.ranges:
            if r.end_position is None:
                return None
            total += r.end_position - r.start_position
        return total


@dataclass(frozen=True)
class Bounds:
    """Offset / timestamp bounds of a read, per topic-partition or for all of them.

    ``start``/``end`` map ``(topic, partition)`` to an offset (end exclusive); ``-2`` means
    earliest, ``-1`` latest.  ``start_timestamp``/``end_timestamp`` map to ms targets (per
    partition) and ``*_timestamp_all`` apply to every partition.  Pushed-down filters add
    ``min_offset``/``max_offset`` (inclusive, all partitions) and ``min_timestamp`` (prune only).
    """

    start: Mapping[tuple[str, int], int] = field(default_factory=dict)
    end: Mapping[tuple[str, int], int] = field(default_factory=dict)
    start_timestamp: Mapping[tuple[str, int], int] = field(default_factory=dict)
    end_timestamp: Mapping[tuple[str, int], int] = field(default_factory=dict)
    start_timestamp_all: int | None = None
    end_timestamp_all: int | None = None
    min_offset: int | None = None
    max_offset: int | None = None
    min_timestamp: int | None = None
    starting_timestamp_strategy: str = "error"


@dataclass(frozen=True)
class PlanOptions:
    """Planner knobs (parsed from data source options by ``kafka_format.read.options``)."""

    topics: tuple[str, ...] | None = None
    topic_pattern: str | None = None
    assign: Mapping[str, tuple[int, ...]] | None = None
    partition_filter: frozenset[int] | None = None
    max_bytes_per_partition: int = DEFAULT_MAX_BYTES_PER_PARTITION
    min_partitions: int | None = None
    replicas: str = "longest"          # longest | all
    up_to: str = "logEnd"             # logEnd | highWatermark
    read_committed: bool = False
    require_all_partitions: bool = True
    # Spark's file-source sizing (FilePartition.maxSplitBytes): with the session's parallelism known,
    # the split size is min(maxBytesPerPartition, max(openCost, totalBytes / defaultParallelism)).
    default_parallelism: int | None = None
    open_cost_bytes: int = DEFAULT_OPEN_COST_BYTES

    def selects(self, topic: str, partition: int) -> bool:
        """Whether the topic-partition is selected by topics / topicPattern / assign."""
        if self.topics is not None and topic not in self.topics:
            return False
        if self.topic_pattern is not None and re.fullmatch(self.topic_pattern, topic) is None:
            return False
        if self.assign is not None and partition not in self.assign.get(topic, ()):
            return False
        if self.partition_filter is not None and partition not in self.partition_filter:
            return False
        return True


# --- inputs ------------------------------------------------------------------------------
def open_input(location: str) -> pa.NativeFile:
    """Open a ``.log`` (local path or URI location) for positioned reads (executor side)."""
    return fsio.open_input_file(location)


def open_partitions(paths: str | Sequence[str] | LogDirSet) -> list[PartitionLog]:
    """Live partition replicas under ``paths`` (or of a ``LogDirSet``), by topic, partition, log dir.

    Each path may be a partition dir, a broker log dir or a parent of several brokers' log dirs
    (:func:`kafka_format.storage.logdir.open_log_dirs`); ``-delete``/``-future``/``-stray`` dirs are
    not read; a missing path raises :class:`LogDirError`.
    """
    log_dirs = paths if isinstance(paths, LogDirSet) else open_log_dirs(paths)
    out = [p for p in log_dirs.all_partitions() if p.kind == "live"]
    out.sort(key=lambda p: (p.topic, p.partition, p.log_dir))
    return out


def _log_size(seg: Segment) -> int:
    return int(seg.log_size or 0)


# --- index and batch-header readers ------------------------------------------------------
_EMPTY = np.empty(0, np.int64)


def read_offset_index(part: PartitionLog, seg: Segment) -> tuple[np.ndarray, np.ndarray]:
    """(absolute offsets, positions) of the valid entries of a segment's ``.index``
    (:mod:`kafka_format.storage.index` reading rule: zero tail, non-increasing entries and
    positions past the ``.log`` end the data).  A missing index gives no entries."""
    idx = part.offset_index(seg)
    if idx is None:
        return _EMPTY, _EMPTY
    return idx.offsets.astype(np.int64, copy=False), idx.positions.astype(np.int64, copy=False)


def read_time_index(part: PartitionLog, seg: Segment) -> tuple[np.ndarray, np.ndarray]:
    """(timestamps, absolute offsets) of the valid ``.timeindex`` entries."""
    tidx = part.time_index(seg)
    if tidx is None:
        return _EMPTY, _EMPTY
    return tidx.timestamps.astype(np.int64), tidx.offsets.astype(np.int64)


def read_txn_index(part: PartitionLog, seg: Segment) -> list[tuple[int, int, int, int]]:
    """``(producerId, firstOffset, lastOffset, lastStableOffset)`` entries of ``.txnindex`` (§1.7)."""
    if seg.txnindex_path is None:
        return []
    txns = part.txn_index(seg)
    return [(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset) for t in txns.entries]


@dataclass(frozen=True)
class TimestampHit:
    """The batch ListOffsets stops at for a target timestamp."""

    segment_index: int
    position: int
    size: int
    base_offset: int
    last_offset: int


def resolve_timestamp(replica: PartitionLog, target: int, *, last_fetchable: int | None = None) -> TimestampHit | None:
    """ListOffsets for ``target >= 0``, with the batch holding the answer.

    Kafka's answer is :meth:`kafka_format.log.list_offsets.PartitionLookup.locate_timestamp` (the one
    implementation): the first segment (offset order) whose largest timestamp >= target;
    time-index then offset-index lookup; the first record with ``timestamp >= target`` and
    ``offset >= logStartOffset`` in a batch with ``maxTimestamp >= target``.  None when Kafka
    answers none, also when that record is at or above ``last_fetchable`` (ReplicaManager's
    HW/LSO rule).  ``read()`` drops the batch's records before the first one with
    ``timestamp >= target`` again (Split.start_timestamp).
    """
    with PartitionLookup(replica, strict=False) as lookup:
        hit = lookup.locate_timestamp(target)
    if hit is None or (last_fetchable is not None and hit.offset >= last_fetchable):
        return None
    return TimestampHit(hit.segment_index, hit.position, hit.size, hit.base_offset, hit.last_offset)


# --- planning ----------------------------------------------------------------------------
def longest_replicas(replicas: Sequence[PartitionLog]) -> list[PartitionLog]:
    """``replicas=longest``: per topic-partition (sorted) the copy with the highest log end offset,
    then leader epoch, then the first in the given order."""
    by_tp: dict[tuple[str, int], list[PartitionLog]] = {}
    for r in replicas:
        by_tp.setdefault((r.topic, r.partition), []).append(r)
    out = []
    for tp in sorted(by_tp):
        group = by_tp[tp]
        if len(group) == 1:
            out.append(group[0])
            continue

        def rank(r: PartitionLog, group: list[PartitionLog] = group) -> tuple[int, int, int]:
            return log_end_offset(r), -1 if r.leader_epoch is None else r.leader_epoch, -group.index(r)

        out.append(max(group, key=rank))
    return out


def select_replicas(replicas: Sequence[PartitionLog], options: PlanOptions) -> list[PartitionLog]:
    """The replicas a read plans: those ``options`` select, and of each partition only the longest
    unless ``replicas=all``."""
    chosen = [r for r in replicas if options.selects(r.topic, r.partition)]
    return chosen if options.replicas == "all" else longest_replicas(chosen)


@dataclass
class _Bound:
    start: int | None = None          # inclusive row filter
    end: int | None = None            # exclusive row filter
    start_hit: TimestampHit | None = None
    start_ts: int | None = None
    end_hit: TimestampHit | None = None
    end_ts: int | None = None
    empty: bool = False


def fetch_upper(replica: PartitionLog, options: PlanOptions, leo: Callable[[], int] | None = None) -> int | None:
    """The offset a fetch of the replica stops before, as the options ask: the high watermark
    (as loaded) for ``upTo=highWatermark``, the last stable offset for ``read_committed``
    (LSO <= HW; the LEO when no HW is recorded); None: the log end.  ``leo`` gives the log end offset
    (default: computed)."""
    tp = (replica.topic, replica.partition)
    end = leo if leo is not None else (lambda: log_end_offset(replica))
    upper: int | None = None
    if options.up_to == "highWatermark":
        hw = replica.high_watermark
        if hw is None:
            raise LogDirError("upTo=highWatermark but the partition has no replication-offset-checkpoint entry",
                              path=replica.log_dir, expected=f"an entry for {tp[0]} {tp[1]}", found="none")
        upper = high_watermark_on_load(hw, log_start_offset=replica.log_start_offset, log_end_offset=end())
    if options.read_committed:
        cap = upper if upper is not None else end()
        if replica.high_watermark is not None:
            cap = min(cap, replica.high_watermark)
        upper = last_stable_offset(replica, cap)
    return upper


def _partition_bound(replica: PartitionLog, options: PlanOptions, bounds: Bounds,
                     leo_cache: dict[int, int]) -> _Bound:
    tp = (replica.topic, replica.partition)

    def leo() -> int:
        key = id(replica)
        if key not in leo_cache:
            leo_cache[key] = log_end_offset(replica)
        return leo_cache[key]

    b = _Bound()
    upper = fetch_upper(replica, options, leo)

    def last_fetchable() -> int:  # only timestamp bounds need it (the LEO reads the last segment)
        return upper if upper is not None else leo()

    start_ts = bounds.start_timestamp_all if bounds.start_timestamp_all is not None else bounds.start_timestamp.get(tp)
    if start_ts is not None:
        hit = resolve_timestamp(replica, start_ts, last_fetchable=last_fetchable())
        if hit is None:
            if bounds.starting_timestamp_strategy == "error":
                raise LogDirError(
                    "no offset for starting timestamp (startingOffsetsByTimestampStrategy=error)",
                    path=replica.log_dir, expected=f"a record of {tp[0]}-{tp[1]} with timestamp >= {start_ts}",
                    found="none")
            b.empty = True
        else:
            b.start_hit, b.start_ts = hit, start_ts
            b.start = max(hit.base_offset, replica.log_start_offset)
    else:
        so = bounds.start.get(tp, -2)
        if so == -1:
            b.empty = True
        elif so >= 0:
            b.start = so
        elif replica.log_start_offset > int(_segment_columns(replica)[0][0]):
            b.start = replica.log_start_offset      # earliest = logStartOffset (DeleteRecords)
    end_ts = bounds.end_timestamp_all if bounds.end_timestamp_all is not None else bounds.end_timestamp.get(tp)
    if end_ts is not None:
        hit = resolve_timestamp(replica, end_ts, last_fetchable=last_fetchable())
        if hit is not None:            # none => latest (Spark's rule)
            b.end_hit, b.end_ts = hit, end_ts
            b.end = hit.last_offset + 1
    else:
        eo = bounds.end.get(tp, -1)
        if eo >= 0:
            b.end = eo
    if upper is not None:
        b.end = upper if b.end is None else min(b.end, upper)
    if bounds.min_offset is not None:
        b.start = bounds.min_offset if b.start is None else max(b.start, bounds.min_offset)
    if bounds.max_offset is not None:
        e = bounds.max_offset + 1
        b.end = e if b.end is None else min(b.end, e)
    if b.start is not None and b.end is not None and b.start >= b.end:
        b.empty = True
    return b


@dataclass
class _Piece:
    seg_index: int
    start: int
    end: int | None
    first_offset: int
    size: int


def _segment_columns(replica: PartitionLog) -> tuple[np.ndarray, np.ndarray]:
    """(base offsets, .log sizes) of the replica's segments as int64 arrays (the discovery's table
    columns when it has them)."""
    segs = replica.segments
    if isinstance(segs, SegmentTable):
        return segs.base_offsets, segs.log_sizes
    return (np.fromiter((s.base_offset for s in segs), np.int64, len(segs)),
            np.fromiter((_log_size(s) for s in segs), np.int64, len(segs)))


def _segment_pieces(replica: PartitionLog, i: int, bound: _Bound, min_ts: int | None,
                    target: int) -> list[_Piece]:
    """Cut one segment into pieces of ~target bytes at index positions, within the bounds."""
    seg = replica.segments[i]
    segs = replica.segments
    if bound.end is not None and seg.base_offset >= bound.end:
        return []
    next_base = segs[i + 1].base_offset if i + 1 < len(segs) else None
    if bound.start is not None and next_base is not None and next_base <= bound.start:
        return []
    if bound.start_hit is not None and i < bound.start_hit.segment_index:
        return []
    if bound.end_hit is not None and i > bound.end_hit.segment_index:
        return []
    if (min_ts is None and bound.start_hit is None and bound.end_hit is None
            and (bound.start is None or bound.start <= seg.base_offset)
            and (bound.end is None or (next_base is not None and bound.end >= next_base))
            and _log_size(seg) <= target):
        # The whole segment is one piece and no bound falls inside it: its index cannot move
        # the start (no start bound past its base offset), the end (every offset of the segment
        # is below next_base <= end) or add a cut (it fits the target), so it is not read.
        # Small segments cost no file open on the driver.
        size = _log_size(seg)
        return [_Piece(i, 0, size, seg.base_offset, size)] if size > 0 else []
    offsets, positions = read_offset_index(replica, seg)
    start_pos, first_offset = 0, seg.base_offset
    end_pos: int | None = _log_size(seg)
    if bound.start is not None and bound.start > seg.base_offset:
        k = int(np.searchsorted(offsets, bound.start, side="right")) - 1
        if k >= 0:
            start_pos = int(positions[k])
            first_offset = int(offsets[k - 1]) + 1 if k > 0 else seg.base_offset
    if min_ts is not None and i < len(segs) - 1:
        ts, ts_off = read_time_index(replica, seg)
        if ts.size:
            if int(ts[-1]) < min_ts:
                return []   # closed segment, every record's timestamp < min_ts
            j = int(np.searchsorted(ts, min_ts, side="left")) - 1   # greatest entry with T < min_ts
            if j >= 0:
                k = int(np.searchsorted(offsets, ts_off[j], side="right")) - 1
                if k >= 0 and int(positions[k]) > start_pos:
                    start_pos = int(positions[k])
                    first_offset = int(offsets[k - 1]) + 1 if k > 0 else seg.base_offset
    if bound.start_hit is not None and i == bound.start_hit.segment_index:
        start_pos, first_offset = bound.start_hit.position, bound.start_hit.base_offset
    if bound.end is not None:
        # stop before the first entry j whose previous batch already reaches end - 1
        j = int(np.searchsorted(offsets, bound.end - 1, side="left")) + 1
        if j < positions.size:
            end_pos = int(positions[j])
    if bound.end_hit is not None and i == bound.end_hit.segment_index:
        end_pos = bound.end_hit.position + bound.end_hit.size
    if end_pos is not None and end_pos <= start_pos:
        return []
    # cut points: index positions inside (start_pos, end_pos), one every ~target bytes
    lo = int(np.searchsorted(positions, start_pos, side="right"))
    hi = int(np.searchsorted(positions, end_pos, side="left")) if end_pos is not None else positions.size
    pieces: list[_Piece] = []
    cur, cur_first = start_pos, first_offset
    if hi > lo and target < (end_pos or _log_size(seg)) - start_pos:
        inner_pos = positions[lo:hi]
        inner_off = offsets[lo:hi]
        next_cut = cur + target
        while True:
            k = int(np.searchsorted(inner_pos, next_cut, side="left"))
            if k >= inner_pos.size:
                break
            cut = int(inner_pos[k])
            prev_off = int(inner_off[k - 1]) + 1 if k > 0 else (int(offsets[lo - 1]) + 1 if lo > 0 else seg.base_offset)
            pieces.append(_Piece(i, cur, cut, cur_first, cut - cur))
            cur, cur_first = cut, max(prev_off, cur_first)
            next_cut = cur + target
    pieces.append(_Piece(i, cur, end_pos, cur_first, (end_pos if end_pos is not None else _log_size(seg)) - cur))
    return pieces


def _whole_segments(bases: np.ndarray, sizes: np.ndarray, bound: _Bound, min_ts: int | None,
                    target: int) -> tuple[np.ndarray, np.ndarray]:
    """Per segment: whether no piece of it is read (``skip``) and whether it is one whole piece
    whose index need not be read (``whole``): :func:`_segment_pieces`' first tests, on columns."""
    n = len(bases)
    has_next = np.arange(n) < n - 1
    next_base = np.append(bases[1:], 0)
    skip = np.zeros(n, dtype=bool)
    if bound.end is not None:
        skip |= bases >= bound.end
    if bound.start is not None:
        skip |= has_next & (next_base <= bound.start)
    if bound.start_hit is not None:
        skip[:bound.start_hit.segment_index] = True
    if bound.end_hit is not None:
        skip[bound.end_hit.segment_index + 1:] = True
    if min_ts is not None or bound.start_hit is not None or bound.end_hit is not None:
        return skip, np.zeros(n, dtype=bool)
    whole = ~skip & (sizes <= target)
    if bound.start is not None:
        whole &= bound.start <= bases
    if bound.end is not None:
        whole &= has_next & (bound.end >= next_base)
    return skip, whole


def _replica_pieces(replica: PartitionLog, bound: _Bound, min_ts: int | None, target: int,
                    columns: tuple[np.ndarray, np.ndarray]) -> tuple[list[_Piece], bool]:
    """The pieces of a replica's segments in order (whole small segments straight from the
    columns; the others cut at their index entries by :func:`_segment_pieces`), and whether any
    segment went through its index (then the pieces depend on the target)."""
    bases, sizes = columns
    skip, whole = _whole_segments(bases, sizes, bound, min_ts, target)
    if whole.all():
        return [_Piece(i, 0, size, base, size) for i, (base, size) in enumerate(zip(bases.tolist(), sizes.tolist(), strict=True))
                if size > 0], False
    pieces: list[_Piece] = []
    cut = False
    for i in np.flatnonzero(~skip).tolist():
        if whole[i]:
            size = int(sizes[i])
            if size > 0:
                pieces.append(_Piece(i, 0, size, int(bases[i]), size))
        else:
            pieces.extend(_segment_pieces(replica, i, bound, min_ts, target))
            cut = True
    return pieces, cut


def _aborted_for(replica: PartitionLog, txns: list[tuple[int, int, int, int]],
                 lo: int, hi: int | None) -> tuple[tuple[int, int, int], ...]:
    return tuple((pid, first, last) for pid, first, last, _ in txns
                 if last >= lo and (hi is None or first < hi))


@dataclass
class _ReplicaPlan:
    """One replica being planned: its bound, segment columns and pieces."""

    replica: PartitionLog
    bound: _Bound
    columns: tuple[np.ndarray, np.ndarray]
    pieces: list[_Piece]
    cut: bool                  # some segment was cut at its index (its pieces depend on the target)


def _plan_pieces(replica: PartitionLog, options: PlanOptions, bounds: Bounds, target: int,
                 leo_cache: dict[int, int]) -> _ReplicaPlan | None:
    if not len(replica.segments):
        return None
    bound = _partition_bound(replica, options, bounds, leo_cache)
    if bound.empty:
        return None
    columns = _segment_columns(replica)
    pieces, cut = _replica_pieces(replica, bound, bounds.min_timestamp, target, columns)
    return _ReplicaPlan(replica, bound, columns, pieces, cut)


def _pack(pieces: list[_Piece], target: int) -> list[list[_Piece]]:
    """Consecutive pieces packed into groups of ~target bytes."""
    groups: list[list[_Piece]] = []
    acc = 0
    for p in pieces:
        if groups and acc + p.size <= target:
            groups[-1].append(p)
            acc += p.size
        else:
            groups.append([p])
            acc = p.size
    return groups


def _log_locations(replica: PartitionLog) -> list[str]:
    segs = replica.segments
    if isinstance(segs, SegmentTable):
        return segs.log_locations()
    return [s.log_path or "" for s in segs]


def _splits(plan: _ReplicaPlan, options: PlanOptions, target: int) -> list[Split]:
    replica, bound = plan.replica, plan.bound
    groups = _pack(plan.pieces, target)
    txns: list[tuple[int, int, int, int]] = []
    if options.read_committed:
        for seg in replica.segments:
            txns.extend(read_txn_index(replica, seg))
    bases = plan.columns[0]
    base_list = bases.tolist()
    paths = _log_locations(replica)
    # the partition's last segment may be active (a crash tail is not corruption there); a remote
    # tier's segments are closed, immutable copies: none is
    last = len(bases) - 1 if replica.kind != REMOTE_KIND else -1
    log_start = replica.log_start_offset
    hit_segment = int(bases[bound.start_hit.segment_index]) if bound.start_hit is not None else None
    splits = []
    for gi, group in enumerate(groups):
        ranges = tuple(SegmentRange(paths[p.seg_index], base_list[p.seg_index], p.start, p.end,
                                    p.first_offset, p.seg_index == last) for p in group)
        hi = groups[gi + 1][0].first_offset if gi + 1 < len(groups) else bound.end
        start_ts = None
        if bound.start_hit is not None and any(r.segment == hit_segment and r.start_position == bound.start_hit.position
                                               for r in ranges):
            start_ts = (bound.start_hit.position, bound.start_ts)
        end_ts = None
        if bound.end_hit is not None and gi == len(groups) - 1:
            end_ts = (bound.end_hit.position, bound.end_ts)
        splits.append(Split(
            topic=replica.topic, partition=replica.partition, log_dir=replica.log_dir,
            broker_id=replica.broker_id, ranges=ranges, start_offset=bound.start, end_offset=bound.end,
            start_timestamp=start_ts, end_timestamp=end_ts,  # type: ignore[arg-type]
            read_committed=options.read_committed,
            aborted=_aborted_for(replica, txns, ranges[0].first_offset, hi) if options.read_committed else (),
            log_start_offset=log_start, planned_bytes=sum(p.size for p in group),
        ))
    return splits


def pack_splits(splits: Sequence[Split], options: PlanOptions) -> list[tuple[Split, ...]]:
    """``splits`` in order, packed into the input partitions of a Spark read as Spark's file sources
    pack files (``FilePartition.getFilePartitions``): a split costs its bytes plus
    ``open_cost_bytes``; a partition is closed before the split that would take it past
    ``min(max_bytes_per_partition, max(open_cost_bytes, total cost / default_parallelism))``.
    So thousands of small partitions are read by a few tasks, while splits of that size stay one
    task each.  With ``min_partitions`` every split is its own partition (the count was asked for)."""
    if options.min_partitions or len(splits) <= 1:
        return [(s,) for s in splits]
    open_cost = max(0, options.open_cost_bytes)
    limit = max(1, options.max_bytes_per_partition)
    if options.default_parallelism:
        total = sum(s.planned_bytes + open_cost for s in splits)
        limit = min(limit, max(open_cost, total // options.default_parallelism))
    out: list[tuple[Split, ...]] = []
    current: list[Split] = []
    size = 0
    for split in splits:
        if current and size + split.planned_bytes > limit:
            out.append(tuple(current))
            current, size = [], 0
        current.append(split)
        size += split.planned_bytes + open_cost
    if current:
        out.append(tuple(current))
    return out


def _as_partitions(logdirs: Any) -> list[PartitionLog]:
    if isinstance(logdirs, (str, LogDirSet)):
        return open_partitions(logdirs)
    items = list(logdirs)
    if all(isinstance(x, PartitionLog) for x in items):
        return items
    if all(isinstance(x, str) for x in items):
        return open_partitions(items)
    raise TypeError("plan_splits expects paths, a LogDirSet or PartitionLog values")


def check_assignment(replicas: Sequence[PartitionLog], options: PlanOptions, bounds: Bounds) -> None:
    """Spark's rule: per-partition JSON bounds must name exactly the selected partitions."""
    selected = {(r.topic, r.partition) for r in replicas if options.selects(r.topic, r.partition)}
    for label, mapping in (("startingOffsets", bounds.start), ("endingOffsets", bounds.end),
                           ("startingOffsetsByTimestamp", bounds.start_timestamp),
                           ("endingOffsetsByTimestamp", bounds.end_timestamp)):
        if mapping and options.require_all_partitions and set(mapping) != selected:
            missing = sorted(selected - set(mapping))
            extra = sorted(set(mapping) - selected)
            raise ValueError(
                f"If {label} contains specific offsets, you must specify all topic partitions: "
                f"missing {missing[:10]}, not found in the log dirs {extra[:10]}")


def plan_splits(logdirs: Any, options: PlanOptions | None = None, bounds: Bounds | None = None) -> list[Split]:
    """Plan the splits of a read (driver side, no Spark).

    ``logdirs`` is a path, a list of paths/URIs, a ``LogDirSet`` from
    :func:`kafka_format.open_log_dirs`, or ``PartitionLog`` values from :func:`open_partitions`.
    Splits come out ordered by topic, partition, log dir, offset.
    """
    with no_cyclic_gc():          # hundreds of thousands of acyclic ranges at cluster scale
        return _plan_splits(logdirs, options or PlanOptions(), bounds or Bounds())


def _plan_splits(logdirs: Any, options: PlanOptions, bounds: Bounds) -> list[Split]:
    replicas = _as_partitions(logdirs)
    check_assignment(replicas, options, bounds)
    chosen = select_replicas(replicas, options)
    leo_cache: dict[int, int] = {}
    target = max(1, options.max_bytes_per_partition)
    plans = [p for r in chosen if (p := _plan_pieces(r, options, bounds, target, leo_cache)) is not None]
    total = sum(piece.size for plan in plans for piece in plan.pieces)
    smaller = target
    if options.default_parallelism:
        # every core gets work on inputs of any size, as Spark's file sources cut their splits
        smaller = min(target, max(options.open_cost_bytes, math.ceil(total / options.default_parallelism)))
    if options.min_partitions and sum(len(_pack(plan.pieces, target)) for plan in plans) < options.min_partitions:
        smaller = min(smaller, max(1, math.ceil(total / options.min_partitions)))
    if smaller < target:
        # pieces are the same at the smaller size unless a segment was cut or a piece is larger
        for plan in plans:
            if plan.cut or any(piece.size > smaller for piece in plan.pieces):
                plan.pieces, plan.cut = _replica_pieces(plan.replica, plan.bound, bounds.min_timestamp, smaller,
                                                        plan.columns)
        target = smaller
    return [s for plan in plans for s in _splits(plan, options, target)]


def splits_to_json(splits: Iterable[Split]) -> str:
    """Debug helper: the plan as JSON lines."""
    from dataclasses import asdict

    return "\n".join(json.dumps(asdict(s)) for s in splits)
