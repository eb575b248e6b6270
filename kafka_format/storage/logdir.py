"""Log-dir discovery: which log dirs, partitions, segments and state files a path holds.

``open_log_dirs(paths)`` accepts, per path, a broker log dir (``log.dirs`` entry), a single
partition dir, or a parent of several brokers' log dirs (walked to a bounded depth), as a local
path or any ``pyarrow.fs`` URI.  It returns a :class:`LogDirSet` of frozen values.

Rules:

* partition dir names (``LocalLog.parseTopicPartitionName``): topic = text before the last
  '-', partition = int after it; ``<topic>-<p>.<uuid>-delete|-future|-stray`` are special dirs
  (excluded unless ``include_special=True``); other names are ignored with a note;
* file names: base offset = digits before the first '.' (``LogFileUtils.offsetFromFileName``);
* startup reconciliation as ``LogLoader``: ``*.deleted`` and ``*.cleaned`` ignored, ``.swap``
  files at or above the smallest ``.cleaned`` offset discarded, the remaining ``.log.swap``
  segments replace every file whose offset lies in ``[minSwapBase, maxSwapNextOffset)`` and then
  count as ordinary files; index files without a ``.log`` are orphans (the broker deletes
  them; here they are kept apart in ``orphan_segments``);
* effective logStartOffset = ``max(log-start-offset-checkpoint or 0, first segment base)``.

Nothing here decodes batches.  Values that need a batch scan (segment next offset, max
timestamp from the log) come through the ``next_offset`` hook; what the index files tell is
available through :meth:`PartitionLog.index_summary`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import pyarrow.fs as pafs

from kafka_format.storage import checkpoints as ckpt
from kafka_format.storage import fsio
from kafka_format.common.bulk import no_cyclic_gc
from kafka_format.common.errors import KafkaFormatError, LogDirError
from kafka_format.storage.fsio import FileStat, FileSystemHandle
from kafka_format.storage.index import (
    OffsetIndex,
    OffsetPosition,
    TimeIndex,
    TimestampOffset,
    read_offset_index,
    read_time_index,
)
from kafka_format.storage.partition_files import (  # noqa: F401  (suffixes and values re-exported)
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    FILE_KINDS,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    METADATA_SNAPSHOT_DELETED_SUFFIX,
    METADATA_SNAPSHOT_PART_SUFFIX,
    METADATA_SNAPSHOT_SUFFIX,
    OFFSET_DIGITS,
    SEGMENT_FILE_SUFFIXES,
    SNAPSHOT_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TMP_SUFFIX,
    TXN_INDEX_SUFFIX,
    MetadataSnapshotFile,
    PartitionFiles,
    Segment,
    SegmentTable,
    SnapshotFile,
    classify_files,
    filename_prefix_from_offset,
    scan_local_partition,
    offset_from_name,
    table_from_listing,
    take_rows,
)
from kafka_format.storage.snapshot import ProducerSnapshot, read_producer_snapshot
from kafka_format.storage.txnindex import TransactionIndex, read_transaction_index
from kafka_format.storage.watermarks import high_watermark_on_load

__all__ = [
    "LOG_SUFFIX",
    "INDEX_SUFFIX",
    "TIME_INDEX_SUFFIX",
    "TXN_INDEX_SUFFIX",
    "SNAPSHOT_SUFFIX",
    "DELETED_SUFFIX",
    "CLEANED_SUFFIX",
    "SWAP_SUFFIX",
    "Segment",
    "SnapshotFile",
    "MetadataSnapshotFile",
    "PartitionLog",
    "LogDir",
    "LogDirSet",
    "IndexSummary",
    "open_log_dirs",
    "parse_partition_dir_name",
    "filename_prefix_from_offset",
    "DEFAULT_MAX_DEPTH",
]

# LocalLog.scala suffixes of special partition dirs
SPECIAL_DIR_KINDS = ("delete", "future", "stray")
DEFAULT_MAX_DEPTH = 3
INT32_MAX = (1 << 31) - 1

_SPECIAL_DIR = re.compile(r"^(\S+)-(\S+)\.(\S+)-(delete|future|stray)$")
_INDEX_FILE_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
_PARTITION_MARKERS = (ckpt.LEADER_EPOCH_CHECKPOINT, ckpt.PARTITION_METADATA, ckpt.QUORUM_STATE)
_LOG_DIR_MARKERS = (ckpt.META_PROPERTIES, ckpt.CLEAN_SHUTDOWN, ".lock", *ckpt.OFFSET_CHECKPOINT_FILES)
_KNOWN_LOG_DIR_FILES = (*_LOG_DIR_MARKERS, "bootstrap.checkpoint")

NextOffsetFn = Callable[["Segment", FileSystemHandle], int]


def _java_int(text: str) -> int | None:
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    value = int(text)
    return value if -(1 << 31) <= value <= INT32_MAX else None


def parse_partition_dir_name(name: str) -> tuple[str, int, str] | None:
    """(topic, partition, kind) per ``LocalLog.parseTopicPartitionName``; kind is ``live``,
    ``delete``, ``future`` or ``stray``; None when the broker would reject the name."""
    if not name or "-" not in name:
        return None
    kind = "live"
    base = name
    for special in SPECIAL_DIR_KINDS:
        if name.endswith("-" + special):
            if not _SPECIAL_DIR.match(name):
                return None
            kind = special
            base = name[: name.rindex(".")]
            break
    i = base.rfind("-")
    topic, part = base[:i], base[i + 1:]
    if not topic or not part:
        return None
    partition = _java_int(part)
    if partition is None:
        return None
    return topic, partition, kind


@dataclass(frozen=True)
class IndexSummary:
    """What a segment's index files tell without reading the log."""

    last_offset_entry: OffsetPosition
    max_timestamp_so_far: TimestampOffset
    offset_index_entries: int
    time_index_entries: int
    offset_index: OffsetIndex | None
    time_index: TimeIndex | None


@dataclass(frozen=True)
class PartitionLog:
    """One replica of a topic-partition in one log dir."""

    topic: str
    partition: int
    path: str
    log_dir: str
    kind: str = "live"
    segments: Sequence[Segment] = ()     # a SegmentTable from discovery: Segment values on access
    orphan_segments: tuple[Segment, ...] = ()
    leader_epochs: ckpt.LeaderEpochCheckpoint | None = None
    topic_id: str | None = None
    snapshots: tuple[SnapshotFile, ...] = ()
    metadata_snapshots: tuple[MetadataSnapshotFile, ...] = ()
    quorum_state: ckpt.QuorumState | None = None
    recovery_point: int | None = None
    log_start_offset_checkpoint: int | None = None
    high_watermark_checkpoint: int | None = None
    cleaner_offset_checkpoint: int | None = None
    broker_id: int | None = None
    log_end_offset: int | None = None  # set only when open_log_dirs got a next_offset hook
    notes: tuple[str, ...] = ()
    problems: tuple[KafkaFormatError, ...] = ()
    filesystem: FileSystemHandle = field(default_factory=fsio.local_handle, repr=False, compare=False)

    # -- derived values --------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        """``max(log-start-offset-checkpoint or 0, first segment base)`` (``LogLoader``, non-tiered)."""
        segs = self.segments
        first = (int(segs.base_offsets[0]) if isinstance(segs, SegmentTable) else segs[0].base_offset) if len(segs) else 0
        return max(self.log_start_offset_checkpoint or 0, first)

    @property
    def high_watermark(self) -> int | None:
        """``replication-offset-checkpoint`` entry as the broker loads it: floored at the log start
        offset, capped at the log end offset when that is known
        (:func:`kafka_format.storage.watermarks.high_watermark_on_load`); None without an entry."""
        hw = self.high_watermark_checkpoint
        if hw is None:
            return None
        return high_watermark_on_load(hw, log_start_offset=self.log_start_offset,
                                      log_end_offset=self.log_end_offset)

    def first_dirty_offset(self, log_end_offset: int | None = None) -> int:
        """Cleaner checkpoint; logStartOffset when missing, below logStartOffset or above LEO
        (``LogCleanerManager.cleanableOffsets``)."""
        leo = log_end_offset if log_end_offset is not None else self.log_end_offset
        start = self.log_start_offset
        dirty = self.cleaner_offset_checkpoint
        if dirty is None or dirty < start or (leo is not None and dirty > leo):
            return start
        return dirty

    @property
    def active_segment(self) -> Segment | None:
        return self.segments[-1] if self.segments else None

    @property
    def size_bytes(self) -> int:
        return sum(s.log_size or 0 for s in self.segments)

    @property
    def leader_epoch(self) -> int | None:
        """Latest leader epoch of the checkpoint (None if absent/empty)."""
        return self.leader_epochs.latest_epoch if self.leader_epochs else None

    # -- file readers ----------------------------------------------------------------------------
    def offset_index(self, segment: Segment) -> OffsetIndex | None:
        if segment.index_path is None:
            return None
        return read_offset_index(self.filesystem.fs_path(segment.index_path), segment.base_offset,
                                 filesystem=self.filesystem, log_size=segment.log_size)

    def time_index(self, segment: Segment) -> TimeIndex | None:
        if segment.timeindex_path is None:
            return None
        return read_time_index(self.filesystem.fs_path(segment.timeindex_path), segment.base_offset,
                               filesystem=self.filesystem)

    def txn_index(self, segment: Segment) -> TransactionIndex:
        """The segment's aborted transactions (empty when it has no ``.txnindex``)."""
        if segment.txnindex_path is None:
            return TransactionIndex(base_offset=segment.base_offset)
        return read_transaction_index(self.filesystem.fs_path(segment.txnindex_path), segment.base_offset,
                                      filesystem=self.filesystem)

    def transaction_indexes(self) -> list[TransactionIndex]:
        """One per segment, for :func:`kafka_format.storage.txnindex.collect_aborted_txns`."""
        return [self.txn_index(s) for s in self.segments]

    def read_snapshot(self, snapshot: SnapshotFile, *, verify_crc: bool = True) -> ProducerSnapshot:
        return read_producer_snapshot(self.filesystem.fs_path(snapshot.path), filesystem=self.filesystem,
                                      verify_crc=verify_crc)

    def index_summary(self, segment: Segment) -> IndexSummary:
        """Last offset-index entry and time-index last entry (``readMaxTimestampAndOffsetSoFar``
        when nothing is in memory).  Not trustworthy for an active segment after a crash."""
        oi = self.offset_index(segment)
        ti = self.time_index(segment)
        last = oi.last_entry() if oi is not None else OffsetPosition(segment.base_offset, 0)
        mts = ti.last_entry() if ti is not None else TimestampOffset(-1, segment.base_offset)
        return IndexSummary(last, mts, len(oi) if oi else 0, len(ti) if ti else 0, oi, ti)

    def largest_timestamp(self, segment: Segment) -> int | None:
        """``LogSegment.largestTimestamp`` from the time index: its last timestamp if >= 0, else the
        .log mtime (None when neither is known)."""
        ts = self.index_summary(segment).max_timestamp_so_far.timestamp
        return ts if ts >= 0 else segment.log_mtime_ms


@dataclass(frozen=True)
class LogDir:
    """One broker log dir (an entry of ``log.dirs``)."""

    path: str
    broker_id: int | None = None
    cluster_id: str | None = None
    directory_id: str | None = None
    meta_version: int | None = None
    meta: ckpt.MetaProperties | None = None
    recovery_points: dict[tuple[str, int], int] = field(default_factory=dict)
    log_start_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    high_watermarks: dict[tuple[str, int], int] = field(default_factory=dict)
    cleaner_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    clean_shutdown: ckpt.CleanShutdown | None = None
    partitions: tuple[PartitionLog, ...] = ()
    notes: tuple[str, ...] = ()
    problems: tuple[KafkaFormatError, ...] = ()
    filesystem: FileSystemHandle = field(default_factory=fsio.local_handle, repr=False, compare=False)

    @property
    def had_clean_shutdown(self) -> bool:
        return self.clean_shutdown is not None

    def partition(self, topic: str, partition: int, kind: str = "live") -> PartitionLog | None:
        for p in self.partitions:
            if p.topic == topic and p.partition == partition and p.kind == kind:
                return p
        return None


@dataclass(frozen=True)
class LogDirSet:
    """Every log dir found under the given paths."""

    log_dirs: tuple[LogDir, ...]
    notes: tuple[str, ...] = ()
    filesystem: FileSystemHandle = field(default_factory=fsio.local_handle, repr=False, compare=False)

    def __iter__(self) -> Iterator[LogDir]:
        return iter(self.log_dirs)

    def __len__(self) -> int:
        return len(self.log_dirs)

    def all_partitions(self) -> list[PartitionLog]:
        """Every partition replica of every log dir (log-dir order, then topic, partition)."""
        return [p for d in self.log_dirs for p in d.partitions]

    def partitions(self) -> dict[tuple[str, int], list[PartitionLog]]:
        """(topic, partition) -> its replicas across log dirs, sorted by key."""
        grouped: dict[tuple[str, int], list[PartitionLog]] = {}
        for p in self.all_partitions():
            grouped.setdefault((p.topic, p.partition), []).append(p)
        return dict(sorted(grouped.items()))

    def replicas(self, topic: str, partition: int) -> list[PartitionLog]:
        return [p for p in self.all_partitions() if p.topic == topic and p.partition == partition]

    def topics(self) -> list[str]:
        return sorted({p.topic for p in self.all_partitions()})

    @property
    def problems(self) -> list[KafkaFormatError]:
        out: list[KafkaFormatError] = []
        for d in self.log_dirs:
            out.extend(d.problems)
            for p in d.partitions:
                out.extend(p.problems)
        return out


# ---------------------------------------------------------------------------------------------
# discovery


def _default_next_offset(segment: Segment, handle: FileSystemHandle) -> int:
    """``LogSegment.readNextOffset`` by scanning batch headers (uses the records decoder)."""
    from kafka_format.records.file_records import iter_batches  # lazy: the decoder lives in another module

    if segment.log_path is None:
        return segment.base_offset
    nxt = segment.base_offset
    with handle.opened(handle.fs_path(segment.log_path)) as f:
        for batch in iter_batches(f):
            nxt = batch.last_offset + 1
    return nxt


@dataclass
class _Walk:
    handle: FileSystemHandle
    include_special: bool
    strict: bool
    next_offset: NextOffsetFn | None
    notes: list[str] = field(default_factory=list)


def _list_dir(h: FileSystemHandle, fs_path: str) -> list[FileStat]:
    """``h.list_dir``; a local directory once per :func:`kafka_format.storage.fsio.listing_cache` block."""
    return list(fsio.run_memo(("ls", fs_path) if h.is_local else None, lambda: h.list_dir(fs_path)))


def _is_partition_dir_content(entries: list[FileStat]) -> bool:
    for e in entries:
        if e.is_dir:
            continue
        if e.name in _PARTITION_MARKERS:
            return True
        if offset_from_name(e.name) is not None and any(s in e.name for s in SEGMENT_FILE_SUFFIXES):
            return True
    return False


def _is_log_dir_content(walk: _Walk, entries: list[FileStat]) -> bool:
    if any(not e.is_dir and e.name in _LOG_DIR_MARKERS for e in entries):
        return True
    for e in entries:
        if e.is_dir and parse_partition_dir_name(e.name) is not None:
            if _is_partition_dir_content(_list_dir(walk.handle, e.path)):
                return True
    return False


def _problem(walk: _Walk, err: KafkaFormatError, problems: list[KafkaFormatError]) -> None:
    if walk.strict:
        raise err
    problems.append(err)


def _read_log_dir(walk: _Walk, fs_path: str, entries: list[FileStat], only: str | None = None) -> LogDir:
    """Read a log dir; ``only`` restricts partitions to one child dir name (once per
    :func:`kafka_format.storage.fsio.listing_cache` block for a local one)."""
    if not walk.handle.is_local or walk.next_offset is not None:
        return _read_log_dir_now(walk, fs_path, entries, only)
    return fsio.run_memo(("log dir", fs_path, only, walk.include_special, walk.strict),
                         lambda: _read_log_dir_now(walk, fs_path, entries, only))


def _read_log_dir_now(walk: _Walk, fs_path: str, entries: list[FileStat], only: str | None) -> LogDir:
    h = walk.handle
    notes: list[str] = []
    problems: list[KafkaFormatError] = []
    names = {e.name: e for e in entries}
    meta = None
    if ckpt.META_PROPERTIES in names:
        try:
            meta = ckpt.read_meta_properties(h.join(fs_path, ckpt.META_PROPERTIES), filesystem=h)
        except KafkaFormatError as err:
            _problem(walk, err, problems)
    offsets: dict[str, dict[tuple[str, int], int]] = {}
    for cname in ckpt.OFFSET_CHECKPOINT_FILES:
        offsets[cname] = {}
        if cname in names and not names[cname].is_dir:
            try:
                offsets[cname] = ckpt.read_offset_checkpoint(h.join(fs_path, cname), filesystem=h).offsets
            except KafkaFormatError as err:
                _problem(walk, err, problems)
    clean = None
    if ckpt.CLEAN_SHUTDOWN in names:
        try:
            clean = ckpt.read_clean_shutdown(h.join(fs_path, ckpt.CLEAN_SHUTDOWN), filesystem=h)
        except KafkaFormatError as err:
            _problem(walk, err, problems)
    broker_id = meta.node_id if meta else None
    partitions: list[PartitionLog] = []
    # an object store: one recursive listing of the whole log dir, not one request per partition
    tree = None
    if only is None and not h.is_local:
        try:
            tree = h.list_tree_rows(fs_path)
        except LogDirError:
            tree = None     # listed per partition below, where a failure names its partition
    for e in entries:
        if not e.is_dir:
            if (e.name not in _KNOWN_LOG_DIR_FILES and not e.name.endswith(TMP_SUFFIX)):
                notes.append(f"ignored file {e.name}")
            continue
        if only is not None and e.name != only:
            continue
        parsed = parse_partition_dir_name(e.name)
        if parsed is None:
            notes.append(f"ignored directory {e.name}: not <topic>-<partition>")
            continue
        topic, partition, kind = parsed
        if kind != "live" and not walk.include_special:
            notes.append(f"skipped {kind} directory {e.name}")
            continue
        key = (topic, partition)
        checkpointed = {"recovery_point": offsets[ckpt.RECOVERY_POINT_CHECKPOINT].get(key),
                        "log_start": offsets[ckpt.LOG_START_OFFSET_CHECKPOINT].get(key),
                        "hw": offsets[ckpt.REPLICATION_OFFSET_CHECKPOINT].get(key),
                        "cleaner": offsets[ckpt.CLEANER_OFFSET_CHECKPOINT].get(key)}
        memo = (("partition", e.path, kind, fs_path, broker_id, walk.strict, *checkpointed.values())
                if h.is_local and walk.next_offset is None else None)  # a partition dir re-opened alone: read once
        try:
            part = fsio.run_memo(memo, partial(_read_partition, walk, e.path, topic, partition, kind,
                                               h.location(fs_path), broker_id, **checkpointed,
                                               listing=tree.get(e.path) if tree is not None else None))
        except KafkaFormatError as err:  # e.g. an unreadable partition dir
            _problem(walk, err, problems)
            notes.append(f"skipped directory {e.name}: {err.reason}")
            continue
        partitions.append(part)
    partitions.sort(key=lambda p: (p.topic, p.partition, p.kind))
    return LogDir(
        path=h.location(fs_path), broker_id=broker_id, cluster_id=meta.cluster_id if meta else None,
        directory_id=meta.directory_id if meta else None, meta_version=meta.version if meta else None,
        meta=meta, recovery_points=offsets[ckpt.RECOVERY_POINT_CHECKPOINT],
        log_start_offsets=offsets[ckpt.LOG_START_OFFSET_CHECKPOINT],
        high_watermarks=offsets[ckpt.REPLICATION_OFFSET_CHECKPOINT],
        cleaner_offsets=offsets[ckpt.CLEANER_OFFSET_CHECKPOINT], clean_shutdown=clean,
        partitions=tuple(partitions), notes=tuple(notes), problems=tuple(problems), filesystem=h)


def _read_partition(walk: _Walk, fs_path: str, topic: str, partition: int, kind: str, log_dir: str,
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
                           lambda err: _problem(walk, err, problems))
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


def _read_partition_reconciled(walk: _Walk, fs_path: str, topic: str, partition: int, kind: str, log_dir: str,
                               broker_id: int | None, *, recovery_point: int | None, log_start: int | None,
                               hw: int | None, cleaner: int | None) -> PartitionLog:
    """The general path: ``LogLoader``'s startup reconciliation of swap, cleaned and deleted files."""
    h = walk.handle
    notes: list[str] = []
    problems: list[KafkaFormatError] = []
    entries = _list_dir(h, fs_path)
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
            if off is not None and off >= lo and (hi is None and off == lo or hi is not None and off < hi):
                notes.append(f"ignored {name} (replaced by swap segment)")
                del live[name]
    for name, st in swaps.items():
        live[name[: -len(SWAP_SUFFIX)]] = st
        notes.append(f"used {name} as {name[: -len(SWAP_SUFFIX)]} (interrupted swap)")
    swapped = {n[: -len(SWAP_SUFFIX)] for n in swaps}

    # passes 3-4: classify the remaining files
    state = classify_files(h, sorted(live.items()), notes,
                           lambda err: _problem(walk, err, problems))
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


def _partition_log(walk: _Walk, state: PartitionFiles, segments: Sequence[Segment], orphans: tuple[Segment, ...],
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
            _problem(walk, err, problems)
            return replace(part, problems=tuple(problems))
        return replace(part, log_end_offset=leo)
    return part


def _discover(walk: _Walk, fs_path: str, depth: int, max_depth: int, out: list[LogDir]) -> None:
    h = walk.handle
    entries = _list_dir(h, fs_path)
    name = h.basename(fs_path)
    parsed = parse_partition_dir_name(name)
    if parsed is not None and _is_partition_dir_content(entries):
        parent = h.dirname(fs_path)
        parent_entries = _list_dir(h, parent) if parent and parent != fs_path else []
        if parsed[2] != "live" and not walk.include_special:
            walk.notes.append(f"{h.location(fs_path)} is a {parsed[2]} partition dir; pass include_special")
            return
        out.append(_read_log_dir(_Walk(h, True, walk.strict, walk.next_offset, walk.notes),
                                 parent, parent_entries, only=name))
        return
    if _is_log_dir_content(walk, entries):
        out.append(_read_log_dir(walk, fs_path, entries))
        return
    if depth >= max_depth:
        return
    for e in entries:
        if e.is_dir:
            _discover(walk, e.path, depth + 1, max_depth, out)


def open_log_dirs(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *,
                  filesystem: pafs.FileSystem | FileSystemHandle | None = None,
                  include_special: bool = False, max_depth: int = DEFAULT_MAX_DEPTH,
                  strict: bool = False, next_offset: NextOffsetFn | None = None) -> LogDirSet:
    """Find every log dir under ``paths`` (log dirs, partition dirs or parents of log dirs).

    ``filesystem``: a pyarrow filesystem (or handle) the paths live in; default: local paths and
    URIs resolved by :func:`kafka_format.storage.fsio.resolve`.  ``include_special`` also lists
    ``-delete``/``-future``/``-stray`` dirs (``PartitionLog.kind``).  ``strict`` raises the first
    unreadable state file instead of recording it in ``problems``.  ``next_offset(segment, fs)``
    (e.g. a batch-header scan) gives each partition's ``log_end_offset`` and the swap ranges; by
    default swap ranges use :func:`kafka_format.records.file_records.iter_batches` and LEO stays unknown.
    """
    with no_cyclic_gc():          # a cluster's partitions and segments: many acyclic values
        return _open_log_dirs(paths, filesystem, include_special, max_depth, strict, next_offset)


def _open_log_dirs(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                   filesystem: pafs.FileSystem | FileSystemHandle | None, include_special: bool, max_depth: int,
                   strict: bool, next_offset: NextOffsetFn | None) -> LogDirSet:
    items: list[str | os.PathLike[str]] = (
        [paths] if isinstance(paths, (str, os.PathLike)) else list(paths))
    found: list[LogDir] = []
    notes: list[str] = []
    handle: FileSystemHandle | None = None
    for item in items:
        h, fs_path = fsio.resolve(item, filesystem)
        handle = handle or h
        if len(fs_path) > 1:
            fs_path = fs_path.rstrip("/")
        st = h.stat(fs_path)
        if st is None:
            raise LogDirError("path does not exist", path=h.location(fs_path), code="LOG_DIR_NOT_FOUND")
        if not st.is_dir:
            raise LogDirError("not a directory", path=h.location(fs_path),
                              expected="a log dir, a partition dir or a parent of log dirs", found="a file")
        walk = _Walk(h, include_special, strict, next_offset)
        before = len(found)
        _discover(walk, fs_path, 0, max_depth, found)
        notes.extend(walk.notes)
        if len(found) == before:
            notes.append(f"no Kafka log dir found under {h.location(fs_path)} (depth {max_depth})")
    merged: dict[str, LogDir] = {}
    for d in found:
        if d.path in merged:  # the same log dir reached twice (e.g. two of its partition dirs)
            prev = merged[d.path]
            parts = {(p.topic, p.partition, p.kind): p for p in (*prev.partitions, *d.partitions)}
            merged[d.path] = replace(prev, partitions=tuple(sorted(
                parts.values(), key=lambda p: (p.topic, p.partition, p.kind))))
        else:
            merged[d.path] = d
    return LogDirSet(log_dirs=tuple(sorted(merged.values(), key=lambda d: d.path)), notes=tuple(notes),
                     filesystem=handle or fsio.local_handle())
