"""``LogLoader`` offline: one partition dir's files read into a :class:`PartitionLog`.

The common case lists the dir once into a :class:`~kafka_format.storage.partition_files.SegmentTable`
(in C for a local dir).  A dir holding ``.swap``, ``.cleaned`` or ``.deleted`` files takes
``LogLoader``'s startup reconciliation instead: ``*.deleted`` and ``*.cleaned`` ignored, ``.swap``
files at or above the smallest ``.cleaned`` offset discarded, the remaining ``.log.swap`` segments
replace every file whose offset lies in ``[minSwapBase, maxSwapNextOffset)`` and then count as
ordinary files.  Index files without a ``.log`` are orphans (the broker deletes them; here they are
kept apart in ``orphan_segments``).  Used by :mod:`kafka_format.storage.logdir`'s discovery, which
owns the :class:`DirWalk` settings of a call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow.fs as pafs

from kafka_format.common.errors import KafkaFormatError
from kafka_format.storage import fsio
from kafka_format.storage.batch_heads import SCAN_CHUNK, next_offset_after, walk_batch_heads
from kafka_format.storage.fsio import FileStat, FileSystemHandle
from kafka_format.storage.partition_files import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    FILE_KINDS,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    METADATA_SNAPSHOT_DELETED_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    PartitionFiles,
    Segment,
    classify_files,
    filename_prefix_from_offset,
    offset_from_name,
    scan_local_partition,
    table_from_listing,
    take_rows,
)
from kafka_format.storage.partition_log import PartitionLog

__all__ = ["DirWalk", "NextOffsetFn", "list_dir", "read_partition", "record_problem"]

NextOffsetFn = Callable[["Segment", FileSystemHandle], int]


def _default_next_offset(segment: Segment, handle: FileSystemHandle) -> int:
    """``LogSegment.readNextOffset`` of a segment read whole (a ``.log.swap``): the last complete
    batch's ``lastOffset + 1``, else its base offset, through the one header walker (corrupt framing
    raises)."""
    if segment.log_path is None:
        return segment.base_offset
    with handle.opened(handle.fs_path(segment.log_path)) as f:
        end = int(segment.log_size) if segment.log_size is not None else int(f.size())
        return next_offset_after(walk_batch_heads(f.read_at, 0, end, path=segment.log_path, chunk=SCAN_CHUNK),
                                 segment.base_offset)


@dataclass
class DirWalk:
    handle: FileSystemHandle
    include_special: bool
    strict: bool
    next_offset: NextOffsetFn | None
    notes: list[str] = field(default_factory=list)


def list_dir(h: FileSystemHandle, fs_path: str) -> list[FileStat]:
    """``h.list_dir``; a local directory once per :func:`kafka_format.storage.fsio.listing_cache` block."""
    return list(fsio.run_memo(("ls", fs_path) if h.is_local else None, lambda: h.list_dir(fs_path)))


def record_problem(walk: DirWalk, err: KafkaFormatError, problems: list[KafkaFormatError]) -> None:
    if walk.strict:
        raise err
    problems.append(err)


def read_partition(walk: DirWalk, fs_path: str, topic: str, partition: int, kind: str, log_dir: str,
                    broker_id: int | None, *, recovery_point: int | None, log_start: int | None,
                    hw: int | None, cleaner: int | None,
                    listing: tuple[str, list[fsio.DirRow]] | None = None) -> PartitionLog:
    """One partition dir (``listing``: its rows when the caller listed it already)."""
    h = walk.handle
    tail = "?" + h.query if h.query else ""
    fast = None
    subdirs: list[str] = []
    if listing is None and h.is_local and type(h.filesystem) is pafs.LocalFileSystem:
        base = fs_path.rstrip("/") or "/"
        prefix = base if base.endswith("/") else base + "/"
        scanned = scan_local_partition(fs_path, h.prefix + prefix, tail)   # listing and table in one pass
        if scanned is not None:
            fast, subdirs = scanned
    else:
        listing = listing if listing is not None else h.list_dir_rows(fs_path)
        if listing is not None:
            prefix, rows = listing
            fast = table_from_listing(rows, h.prefix + prefix, tail)
            subdirs = [name for name, is_dir, _size, _mtime in rows if is_dir]
    if fast is None:      # .swap/.cleaned/.deleted files (or odd paths): LogLoader's reconciliation
        return _read_partition_reconciled(walk, fs_path, topic, partition, kind, log_dir, broker_id,
                                          recovery_point=recovery_point, log_start=log_start, hw=hw,
                                          cleaner=cleaner)
    notes = [f"ignored subdirectory {name}" for name in subdirs]
    problems: list[KafkaFormatError] = []
    state = classify_files(h, [(name, FileStat(name, prefix + name, False, size, mtime))
                               for name, _d, size, mtime in fast.others], notes,
                           lambda err: record_problem(walk, err, problems))
    table = fast.table
    orphan_rows = set(fast.orphans)
    no_index = [] if fast.all_indexed else np.flatnonzero(~table.has_file(INDEX_SUFFIX)).tolist()
    orphans: list[Segment] = []
    for i in sorted(orphan_rows.union(no_index)):
        seg = table[i]
        name = filename_prefix_from_offset(seg.base_offset)
        if i in orphan_rows:
            orphans.append(seg)
            present = sorted(k for k in FILE_KINDS if table.has_file(k)[i])
            notes.append(f"segment {name} has index files but no .log ({', '.join(present)}): orphaned, the "
                         "broker would delete them")
        else:
            notes.append(f"segment {name} has no .index (the broker rebuilds it on recovery)")
    segments = take_rows(table, [i for i in range(len(table)) if i not in orphan_rows]) if orphan_rows else table
    return _partition_log(walk, state, segments, tuple(orphans), topic=topic, partition=partition,
                          fs_path=fs_path, log_dir=log_dir, kind=kind, broker_id=broker_id,
                          recovery_point=recovery_point, log_start=log_start, hw=hw, cleaner=cleaner,
                          notes=notes, problems=problems)


def _read_partition_reconciled(walk: DirWalk, fs_path: str, topic: str, partition: int, kind: str, log_dir: str,
                               broker_id: int | None, *, recovery_point: int | None, log_start: int | None,
                               hw: int | None, cleaner: int | None) -> PartitionLog:
    """The general path: ``LogLoader``'s startup reconciliation of swap, cleaned and deleted files."""
    h = walk.handle
    notes: list[str] = []
    problems: list[KafkaFormatError] = []
    entries = list_dir(h, fs_path)
    files = {e.name: e for e in entries if not e.is_dir}
    for e in entries:
        if e.is_dir:
            notes.append(f"ignored subdirectory {e.name}")

    # pass 1 (removeTempFilesAndCollectSwapFiles): drop .deleted, collect .cleaned and .swap
    cleaned_min: int | None = None
    swaps: dict[str, FileStat] = {}
    for name, st in sorted(files.items()):
        if name.endswith(DELETED_SUFFIX):
            if not name.endswith(METADATA_SNAPSHOT_DELETED_SUFFIX):
                notes.append(f"ignored {name} (pending deletion)")
            continue
        off = offset_from_name(name)
        if name.endswith(CLEANED_SUFFIX):
            notes.append(f"ignored {name} (unfinished cleaning output)")
            if off is not None:
                cleaned_min = off if cleaned_min is None else min(cleaned_min, off)
        elif name.endswith(SWAP_SUFFIX):
            swaps[name] = st
    live = {n: st for n, st in files.items()
            if not n.endswith((DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX))}
    for name in list(swaps):
        off = offset_from_name(name)
        if off is None or (cleaned_min is not None and off >= cleaned_min):
            notes.append(f"ignored {name} (swap file of an incomplete split: offset >= {cleaned_min})")
            del swaps[name]
    # pass 2: the .log.swap segments replace files in [minSwapBase, maxSwapNextOffset)
    swap_logs = [n for n in swaps if n.endswith(LOG_SUFFIX + SWAP_SUFFIX)]
    if swap_logs:
        lo = min(offset_from_name(n) or 0 for n in swap_logs)
        hi: int | None = None
        for n in swap_logs:
            base = offset_from_name(n) or 0
            seg = Segment(base_offset=base, log_path=h.location(swaps[n].path), log_size=swaps[n].size)
            try:
                fn = walk.next_offset or _default_next_offset
                nxt = fn(seg, h)
            except (KafkaFormatError, ImportError) as err:
                notes.append(f"cannot scan {n} for its next offset ({err}); swap range unknown")
                nxt = None
            if nxt is not None:
                hi = nxt if hi is None else max(hi, nxt)
        for name in sorted(live):
            off = offset_from_name(name)
            if off is not None and off >= lo and ((hi is None and off == lo) or (hi is not None and off < hi)):
                notes.append(f"ignored {name} (replaced by swap segment)")
                del live[name]
    for name, st in swaps.items():
        live[name[: -len(SWAP_SUFFIX)]] = st
        notes.append(f"used {name} as {name[: -len(SWAP_SUFFIX)]} (interrupted swap)")
    swapped = {n[: -len(SWAP_SUFFIX)] for n in swaps}

    # passes 3-4: classify the remaining files
    state = classify_files(h, sorted(live.items()), notes,
                           lambda err: record_problem(walk, err, problems))
    segments: list[Segment] = []
    orphans: list[Segment] = []
    for off in sorted(state.by_offset):
        group = state.by_offset[off]

        def _p(suffix: str, group: dict[str, FileStat] = group) -> str | None:
            return h.location(group[suffix].path) if suffix in group else None

        def _s(suffix: str, group: dict[str, FileStat] = group) -> int | None:
            return group[suffix].size if suffix in group else None

        log = group.get(LOG_SUFFIX)
        seg = Segment(
            base_offset=off, log_path=_p(LOG_SUFFIX), log_size=_s(LOG_SUFFIX),
            log_mtime_ms=log.mtime_ms if log else None,
            index_path=_p(INDEX_SUFFIX), index_size=_s(INDEX_SUFFIX),
            timeindex_path=_p(TIME_INDEX_SUFFIX), timeindex_size=_s(TIME_INDEX_SUFFIX),
            txnindex_path=_p(TXN_INDEX_SUFFIX), txnindex_size=_s(TXN_INDEX_SUFFIX),
            from_swap=any(offset_from_name(n) == off for n in swapped))
        if log is None:
            orphans.append(seg)
            notes.append(f"segment {filename_prefix_from_offset(off)} has index files but no .log "
                         f"({', '.join(sorted(group))}): orphaned, the broker would delete them")
        else:
            segments.append(seg)
            if INDEX_SUFFIX not in group:
                notes.append(f"segment {filename_prefix_from_offset(off)} has no .index "
                             "(the broker rebuilds it on recovery)")
    return _partition_log(walk, state, tuple(segments), tuple(orphans), topic=topic, partition=partition,
                          fs_path=fs_path, log_dir=log_dir, kind=kind, broker_id=broker_id,
                          recovery_point=recovery_point, log_start=log_start, hw=hw, cleaner=cleaner,
                          notes=notes, problems=problems)


def _partition_log(walk: DirWalk, state: PartitionFiles, segments: Sequence[Segment], orphans: tuple[Segment, ...],
                   *, topic: str, partition: int, fs_path: str, log_dir: str, kind: str, broker_id: int | None,
                   recovery_point: int | None, log_start: int | None, hw: int | None, cleaner: int | None,
                   notes: list[str], problems: list[KafkaFormatError]) -> PartitionLog:
    h = walk.handle
    part = PartitionLog(
        topic=topic, partition=partition, path=h.location(fs_path), log_dir=log_dir, kind=kind,
        segments=segments, orphan_segments=orphans, leader_epochs=state.leader_epochs,
        topic_id=state.topic_id, snapshots=tuple(state.snapshots), metadata_snapshots=tuple(state.meta_snaps),
        quorum_state=state.quorum, recovery_point=recovery_point, log_start_offset_checkpoint=log_start,
        high_watermark_checkpoint=hw, cleaner_offset_checkpoint=cleaner, broker_id=broker_id,
        notes=tuple(notes), problems=tuple(problems), filesystem=h)
    if walk.next_offset is not None and len(segments):
        try:
            leo = walk.next_offset(segments[-1], h)
        except KafkaFormatError as err:
            record_problem(walk, err, problems)
            return replace(part, problems=tuple(problems))
        return replace(part, log_end_offset=leo)
    return part
