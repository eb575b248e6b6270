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
  them; here they are kept apart in ``orphan_segments``): one partition dir is read by
  :mod:`~kafka_format.storage.log_loader` into a :class:`~kafka_format.storage.partition_log.PartitionLog`;
* effective logStartOffset = ``max(log-start-offset-checkpoint or 0, first segment base)``.

This module finds the log dirs and partition dirs, reads a log dir's own state files and holds
:class:`LogDir` / :class:`LogDirSet`.  Nothing here decodes batches.  Values that need a batch scan (segment next offset, max
timestamp from the log) come through the ``next_offset`` hook; what the index files tell is
available through :meth:`PartitionLog.index_summary`.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TypeVar

import pyarrow.fs as pafs

from kafka_format.common.bulk import no_cyclic_gc
from kafka_format.common.errors import KafkaFormatError, LogDirError
from kafka_format.common.limits import INT32_MAX, INT32_MIN
from kafka_format.storage import checkpoints as ckpt
from kafka_format.storage import fsio
from kafka_format.storage.fsio import FileStat, FileSystemHandle
from kafka_format.storage.log_loader import DirWalk, NextOffsetFn, list_dir, read_partition, record_problem
from kafka_format.storage.partition_files import (  # noqa: F401  (suffixes and values re-exported)
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SEGMENT_FILE_SUFFIXES,
    SNAPSHOT_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TMP_SUFFIX,
    TXN_INDEX_SUFFIX,
    MetadataSnapshotFile,
    Segment,
    SnapshotFile,
    filename_prefix_from_offset,
    offset_from_name,
)
from kafka_format.storage.partition_log import IndexSummary, PartitionLog  # noqa: F401  (re-exported)

__all__ = [
    "CLEANED_SUFFIX",
    "DEFAULT_MAX_DEPTH",
    "DELETED_SUFFIX",
    "INDEX_SUFFIX",
    "LOG_SUFFIX",
    "SNAPSHOT_SUFFIX",
    "SWAP_SUFFIX",
    "TIME_INDEX_SUFFIX",
    "TXN_INDEX_SUFFIX",
    "IndexSummary",
    "LogDir",
    "LogDirSet",
    "MetadataSnapshotFile",
    "PartitionLog",
    "Segment",
    "SnapshotFile",
    "filename_prefix_from_offset",
    "open_log_dirs",
    "parse_partition_dir_name",
]

# LocalLog.scala suffixes of special partition dirs
SPECIAL_DIR_KINDS = ("delete", "future", "stray")
DEFAULT_MAX_DEPTH = 3

_SPECIAL_DIR = re.compile(r"^(\S+)-(\S+)\.(\S+)-(delete|future|stray)$")
_PARTITION_MARKERS = (ckpt.LEADER_EPOCH_CHECKPOINT, ckpt.PARTITION_METADATA, ckpt.QUORUM_STATE)
_LOG_DIR_MARKERS = (ckpt.META_PROPERTIES, ckpt.CLEAN_SHUTDOWN, ".lock", *ckpt.OFFSET_CHECKPOINT_FILES)
_KNOWN_LOG_DIR_FILES = (*_LOG_DIR_MARKERS, "bootstrap.checkpoint")


def _java_int(text: str) -> int | None:
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    value = int(text)
    return value if INT32_MIN <= value <= INT32_MAX else None


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


def _is_partition_dir_content(entries: list[FileStat]) -> bool:
    for e in entries:
        if e.is_dir:
            continue
        if e.name in _PARTITION_MARKERS:
            return True
        if offset_from_name(e.name) is not None and any(s in e.name for s in SEGMENT_FILE_SUFFIXES):
            return True
    return False


def _is_log_dir_content(walk: DirWalk, entries: list[FileStat]) -> bool:
    if any(not e.is_dir and e.name in _LOG_DIR_MARKERS for e in entries):
        return True
    for e in entries:
        if e.is_dir and parse_partition_dir_name(e.name) is not None:
            if _is_partition_dir_content(list_dir(walk.handle, e.path)):
                return True
    return False


def _read_log_dir(walk: DirWalk, fs_path: str, entries: list[FileStat], only: str | None = None) -> LogDir:
    """Read a log dir; ``only`` restricts partitions to one child dir name (once per
    :func:`kafka_format.storage.fsio.listing_cache` block for a local one)."""
    if not walk.handle.is_local or walk.next_offset is not None:
        return _read_log_dir_now(walk, fs_path, entries, only)
    return fsio.run_memo(("log dir", fs_path, only, walk.include_special, walk.strict),
                         lambda: _read_log_dir_now(walk, fs_path, entries, only))


T = TypeVar("T")

# A log dir's state files as parsed, per content (see _state_file).
_STATE_FILES: dict[tuple[object, ...], object] = {}
_STATE_FILES_KEPT = 1024


def _state_file(h: FileSystemHandle, fs_path: str, parse: Callable[[bytes, str], T]) -> T:
    """``parse(data, location)`` of one of a log dir's state files, once per content of the file in
    this process.  A task re-opens its partition through the log dir (``PartitionRef.open``) and so
    reads the log dir's state files again, and an offset checkpoint lists every partition of its log
    dir: parsed anew each time, a run over the P partitions of a log dir parsed P x P lines (2,000
    partitions: 70 % of an ``offsets`` run).  The file is still read each time (a few KiB; what it
    holds now decides), its parse is looked up by a digest of the bytes.  The values are shared:
    read-only.  Failures are not kept."""
    data, location = ckpt.read_state_bytes(fs_path, filesystem=h)
    key = (parse.__name__, location, hashlib.blake2b(data, digest_size=16).digest())
    value = _STATE_FILES.get(key)
    if value is None:
        value = parse(data, location)
        if len(_STATE_FILES) >= _STATE_FILES_KEPT:
            _STATE_FILES.clear()
        _STATE_FILES[key] = value
    return value  # type: ignore[return-value]


def _read_log_dir_now(walk: DirWalk, fs_path: str, entries: list[FileStat], only: str | None) -> LogDir:
    h = walk.handle
    notes: list[str] = []
    problems: list[KafkaFormatError] = []
    names = {e.name: e for e in entries}

    def meta_properties(data: bytes, location: str) -> ckpt.MetaProperties:
        return ckpt.parse_meta_properties(data, path=location)

    def offset_checkpoint(data: bytes, location: str) -> dict[tuple[str, int], int]:
        return ckpt.parse_offset_checkpoint(data, path=location).offsets

    def clean_shutdown(data: bytes, location: str) -> ckpt.CleanShutdown:
        return ckpt.parse_clean_shutdown(data, path=location)

    meta = None
    if ckpt.META_PROPERTIES in names:
        try:
            meta = _state_file(h, h.join(fs_path, ckpt.META_PROPERTIES), meta_properties)
        except KafkaFormatError as err:
            record_problem(walk, err, problems)
    offsets: dict[str, dict[tuple[str, int], int]] = {}
    for cname in ckpt.OFFSET_CHECKPOINT_FILES:
        offsets[cname] = {}
        if cname in names and not names[cname].is_dir:
            try:
                offsets[cname] = _state_file(h, h.join(fs_path, cname), offset_checkpoint)
            except KafkaFormatError as err:
                record_problem(walk, err, problems)
    clean = None
    if ckpt.CLEAN_SHUTDOWN in names:
        try:
            clean = _state_file(h, h.join(fs_path, ckpt.CLEAN_SHUTDOWN), clean_shutdown)
        except KafkaFormatError as err:
            record_problem(walk, err, problems)
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
            part = fsio.run_memo(memo, partial(read_partition, walk, e.path, topic, partition, kind,
                                               h.location(fs_path), broker_id, **checkpointed,
                                               listing=tree.get(e.path) if tree is not None else None))
        except KafkaFormatError as err:  # e.g. an unreadable partition dir
            record_problem(walk, err, problems)
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


def _log_dir_entries(h: FileSystemHandle, fs_path: str, partition: str) -> list[FileStat]:
    """What reading the log dir ``fs_path`` for its one partition dir ``partition`` needs of the log
    dir's listing: its state files and that dir.  A local log dir's state files are stat'ed by name,
    not listed: every task re-opens its partition alone (``PartitionRef.open``), and a listing (a stat
    per entry) made that P x P stats over the P partitions of a log dir (83 % of an open at 400
    partitions).  Elsewhere the log dir is listed (one request)."""
    if not (h.is_local and type(h.filesystem) is pafs.LocalFileSystem):
        return list_dir(h, fs_path)
    found = (h.stat(h.join(fs_path, name)) for name in _LOG_DIR_MARKERS)     # None: absent
    return sorted([FileStat(partition, h.join(fs_path, partition), True, None, None),  # as a listing names it
                   *(e for e in found if e is not None)], key=lambda e: e.name)


def _discover(walk: DirWalk, fs_path: str, depth: int, max_depth: int, out: list[LogDir]) -> None:
    h = walk.handle
    entries = list_dir(h, fs_path)
    name = h.basename(fs_path)
    parsed = parse_partition_dir_name(name)
    if parsed is not None and _is_partition_dir_content(entries):
        parent = h.dirname(fs_path)
        parent_entries = _log_dir_entries(h, parent, name) if parent and parent != fs_path else []
        if parsed[2] != "live" and not walk.include_special:
            walk.notes.append(f"{h.location(fs_path)} is a {parsed[2]} partition dir; pass include_special")
            return
        out.append(_read_log_dir(DirWalk(h, True, walk.strict, walk.next_offset, walk.notes),
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
    default swap ranges come from the batch headers
    (:func:`kafka_format.storage.batch_heads.walk_batch_heads`) and LEO stays unknown.
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
        walk = DirWalk(h, include_special, strict, next_offset)
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
