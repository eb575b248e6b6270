"""Cleaning rounds (``Cleaner.doClean``): the offset map over the dirty section
(``buildOffsetMap`` / ``buildOffsetMapForSegment``), then every segment below the map's end
rewritten in ``groupSegmentsBySize`` groups (``cleanSegments`` / ``cleanInto``), repeated while
the map fills before firstUncleanable.

Everything streams: segments are read chunk by chunk (:meth:`LogView.chunks`), each chunk's
batches and records are decided at once (:func:`kafka_format.log.cleaner.filter.filter_chunk`), the
kept batches go to the cleaned segment being written, the decisions to the round's work file.
Memory: the offset map, one chunk of records, the index entries of the segment being written.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from kafka_format.common.limits import INT32_MAX
from kafka_format.log.cleaner import kernels
from kafka_format.log.cleaner.filter import (
    ActiveProducers,
    RoundRules,
    batch_flags,
    control_types,
    filter_chunk,
    write_outcome,
)
from kafka_format.log.cleaner.plan import SegmentStats, segments_overlapping
from kafka_format.log.cleaner.result import BASE_DTYPE, CTRL, NULLKEY, TOMB, Appender, Work
from kafka_format.log.cleaner.segments import CleanedSegmentWriter, CleanerSegment, LogView
from kafka_format.log.cleaner.transactions import TxnState, collect_aborted
from kafka_format.log.topicconfig import TopicConfig
from kafka_format.records.file_records import DecodedChunk
from kafka_format.storage.logdir import PartitionLog

__all__ = ["base_rows", "clean_round", "group_segments_by_size", "load", "write_base"]


def group_segments_by_size(sizes: Sequence[int], index_sizes: Sequence[int], timeindex_sizes: Sequence[int],
                           bases: Sequence[int], max_size: int, max_index_size: int,
                           first_uncleanable: int) -> list[list[int]]:
    """``Cleaner.groupSegmentsBySize`` over segments given by their sizes; returns index groups."""
    groups: list[list[int]] = []
    i, n = 0, len(sizes)
    while i < n:
        group = [i]
        log_size, idx, tidx = sizes[i], index_sizes[i], timeindex_sizes[i]
        i += 1
        while i < n:
            last_off = bases[i + 1] - 1 if i + 1 < n else first_uncleanable - 1
            if (log_size + sizes[i] <= max_size and idx + index_sizes[i] <= max_index_size
                    and tidx + timeindex_sizes[i] <= max_index_size
                    and (sizes[i] == 0 or last_off - bases[group[0]] <= INT32_MAX)):
                # Scala's ``group.last`` is the group's FIRST segment (the list is built by prepending)
                group.append(i)
                log_size += sizes[i]
                idx += index_sizes[i]
                tidx += timeindex_sizes[i]
                i += 1
            else:
                break
        groups.append(group)
    return groups


# --- the log and the base work file -------------------------------------------------------------
def load(replica: PartitionLog, work: Work, read_size: int, stats: Sequence[SegmentStats]) -> LogView:
    """The replica's segments as a :class:`LogView` (per-segment facts from the plan's header scan:
    nothing is decoded here)."""
    view = LogView(replica, work.dir, read_size, work.max_rows)
    for seg, st in zip(replica.segments, stats, strict=True):
        view.segments.append(CleanerSegment(
            base=seg.base_offset, location=seg.log_path or "", written=False, size=seg.log_size or 0,
            index_size=seg.index_size or 0, timeindex_size=seg.timeindex_size or 0, mtime=seg.log_mtime_ms or 0,
            next_offset=st.next_offset, txns=list(replica.txn_index(seg).entries), batch_bytes=st.batch_bytes,
            empty_batches=st.empty_batches, original=seg))
        work.bytes_before += st.batch_bytes
    return view


def write_base(view: LogView, segs: Sequence[CleanerSegment], base: Appender) -> None:
    """The ``base`` rows of original segments no round read (one streaming decode each)."""
    for seg in segs:
        if seg.original is not None and seg.original.log_path is not None:
            for chunk in view.chunks(seg):
                base_rows(chunk, base)


def base_rows(chunk: DecodedChunk, base: Appender) -> None:
    """Each record's offset, flags (tombstone, control, null key) and source batch to ``base``."""
    t, c = chunk.table, chunk.columns
    if not len(c):
        return
    sl = slice(chunk.lo, chunk.hi)
    rb = c.batch_row.astype(np.intp) - chunk.lo
    ctrl = batch_flags(chunk)[0][rb]
    bases = t.base_offset[sl]
    bbo = np.where(bases >= 0, bases, t.last_offset[sl])       # a legacy wrapper: its first inner offset
    rows = np.empty(len(rb), BASE_DTYPE)
    rows["off"] = c.offset
    rows["bbo"] = bbo[rb]
    rows["flags"] = ((~c.value_valid & ~ctrl) * TOMB) | (ctrl * CTRL) | ((~c.key_valid & ~ctrl) * NULLKEY)
    base.add(rows)


# --- one round ----------------------------------------------------------------------------------
def build_offset_map(view: LogView, offset_map: kernels.OffsetMap, first_dirty: int, first_uncleanable: int,
                     capacity: int, log_start: int) -> int:
    """``Cleaner.buildOffsetMap``: the map filled from ``first_dirty`` (at most ``capacity`` keys);
    returns its latestOffset.  The map is full when it already holds ``capacity`` keys before a put
    (checked for every keyed record at/after firstDirty, even one whose key it holds): the round
    then ends inside that batch."""
    offset_map.clear()
    segs = view.segments
    txn = TxnState()
    txn.add(collect_aborted(view.bases, [s.txns for s in segs], log_start, first_dirty, first_uncleanable))
    dirty = segments_overlapping(view.bases, first_dirty, first_uncleanable)
    latest = -1
    for k, si in enumerate(dirty):
        s = segs[si]
        next_start = segs[dirty[k + 1]].base if k + 1 < len(dirty) else first_uncleanable
        last_seen = None
        for chunk in view.chunks(s, view.index_position(s, first_dirty)):
            full, latest = _map_chunk(chunk, txn, offset_map, first_dirty, capacity, latest, s.location)
            if full:
                return latest
            if chunk.hi > chunk.lo:
                last_seen = int(chunk.table.last_offset[chunk.hi - 1])
        if last_seen is not None:
            txn.consume(last_seen)
        latest = next_start - 1
    return latest


def _map_chunk(chunk: DecodedChunk, txn: TxnState, offset_map: kernels.OffsetMap, start: int, capacity: int,
               latest: int, path: str) -> tuple[bool, int]:
    """``buildOffsetMapForSegment`` over one chunk: (full, latestOffset)."""
    t, c = chunk.table, chunk.columns
    nb = chunk.hi - chunk.lo
    if not nb:
        return False, latest
    rb = c.batch_row.astype(np.intp) - chunk.lo
    counts = np.bincount(rb, minlength=nb)
    control, transactional, _ = batch_flags(chunk)
    skip = control.copy()                      # control batches and aborted data put nothing
    special = np.flatnonzero(control | transactional)
    if len(special):
        first = np.searchsorted(rb, np.arange(nb))
        ctypes = control_types(chunk, control, counts, first, path)
        pids = t.producer_id[chunk.lo:chunk.hi].tolist()
        lasts = t.last_offset[chunk.lo:chunk.hi].tolist()
        for b in special.tolist():
            if control[b]:
                txn.on_control(pids[b], lasts[b], ctypes.get(b))
            else:
                skip[b] = txn.on_data(pids[b], lasts[b], True)
    last = t.last_offset[chunk.lo:chunk.hi]
    eligible = np.flatnonzero(c.key_valid & (c.offset >= start) & ~skip[rb])
    if len(eligible):
        put = offset_map.put_keys(c.key_offsets, c.key_data, eligible.astype(np.int64), c.offset[eligible],
                                  capacity)
        if put < len(eligible):                  # full before record eligible[put]
            b = int(rb[eligible[put]])
            if put and int(rb[eligible[put - 1]]) == b:
                return True, int(c.offset[eligible[put - 1]])        # a put in this batch: map.lastOffset
            before = np.flatnonzero(last[:b] >= start)
            return True, (int(last[before[-1]]) if len(before) else latest)
    after = np.flatnonzero(last >= start)
    return False, (int(last[after[-1]]) if len(after) else latest)


def clean_round(view: LogView, work: Work, config: TopicConfig, now_ms: int, first_dirty: int,
                first_uncleanable: int, offset_map: kernels.OffsetMap, capacity: int,
                active: ActiveProducers, log_start: int, base: Appender | None = None) -> int:
    """One ``Cleaner.doClean``: the offset map, then every segment below endOffset rewritten in
    groups into the work directory (the view then holds the cleaned segments); decisions go to a
    new round file, and with ``base`` (the first round) the records' base rows.  Returns endOffset."""
    latest = build_offset_map(view, offset_map, first_dirty, first_uncleanable, capacity, log_start)
    end_offset = latest + 1
    segs = view.segments
    bases = view.bases
    last_clean = [s for s in segs if s.base < first_dirty]
    drm = config.delete_retention_ms
    legacy_horizon = (last_clean[-1].mtime - drm) if (first_dirty > 0 and last_clean) else 0
    to_clean = segments_overlapping(bases, 0, end_offset)
    if not to_clean:
        return end_offset
    cs = [segs[i] for i in to_clean]
    groups = group_segments_by_size([s.size for s in cs], [s.index_size for s in cs],
                                    [s.timeindex_size for s in cs], [s.base for s in cs],
                                    config.segment_bytes, config.segment_index_bytes, first_uncleanable)
    rules = RoundRules(now_ms, offset_map, latest, first_uncleanable, drm, active)
    txn = TxnState()
    out = work.new_round_file()
    round_dir = os.path.join(work.dir, f"segments-{len(work.rounds)}")
    os.mkdir(round_dir)
    cleaned: list[CleanerSegment] = []
    try:
        for g in groups:
            group = [cs[i] for i in g]
            writer = CleanedSegmentWriter(round_dir, group[0].base, index_interval_bytes=config.index_interval_bytes)
            txn.cleaned_index = writer.txns
            try:
                for j, s in enumerate(group):
                    upper = group[j + 1].base if j + 1 < len(group) else s.next_offset
                    txn.add(collect_aborted(bases, [x.txns for x in segs], log_start, s.base, upper))
                    retain_legacy = s.mtime > legacy_horizon
                    last_seen = None
                    for chunk in view.chunks(s):
                        if chunk.hi == chunk.lo:
                            continue
                        if base is not None:
                            base_rows(chunk, base)
                        outcome = filter_chunk(chunk, txn, rules, retain_legacy, s.location)
                        out.add(outcome.decisions)
                        write_outcome(chunk, outcome, writer)
                        last_seen = int(chunk.table.last_offset[chunk.hi - 1])
                    if last_seen is not None:
                        txn.consume(last_seen)
            except BaseException:
                writer.abort()
                raise
            cleaned.append(writer.close(group[-1].mtime))
            view.discard(group)
    finally:
        out.close()
    view.segments = cleaned + segs[to_clean[-1] + 1:]
    return end_offset

