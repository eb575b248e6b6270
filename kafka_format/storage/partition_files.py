"""The files of one partition dir: its segments as columns, and its state files.

A cluster holds hundreds of thousands of segments; discovery keeps each one's facts (base offset,
``.log`` size and modification time, index file sizes) in one int64 numpy table per partition
(:class:`SegmentTable`, about 50 bytes a segment) and makes :class:`Segment` values on access.
File locations are not stored: they are the partition dir's location plus the segment's
20-digit file name (``LogFileUtils.filenamePrefixFromOffset``); a file named otherwise (a swap
file used as the segment's ``.log``, an unpadded name) keeps its location in a small side table.
The planner reads the columns directly (:attr:`SegmentTable.base_offsets`,
:attr:`SegmentTable.log_sizes`); everything else sees an immutable sequence of ``Segment`` values
equal to the tuple discovery used to build.

:func:`table_from_listing` builds a table in one pass over a directory listing;
:func:`classify_files` reads the rest (leader-epoch checkpoint, ``partition.metadata``,
``quorum-state``, producer and KRaft snapshots) as ``LogLoader`` classifies them.  The startup
reconciliation of ``.swap``/``.cleaned``/``.deleted`` files is :mod:`kafka_format.storage.logdir`'s.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from kafka_format.common.errors import KafkaFormatError
from kafka_format.common.extensions import extension
from kafka_format.common.limits import INT64_MAX
from kafka_format.storage import checkpoints as ckpt
from kafka_format.storage.fsio import DirRow, FileStat, FileSystemHandle

__all__ = [
    "FILE_KINDS",
    "MISSING",
    "Listing",
    "MetadataSnapshotFile",
    "PartitionFiles",
    "Segment",
    "SegmentTable",
    "SnapshotFile",
    "classify_files",
    "filename_prefix_from_offset",
    "offset_from_name",
    "suffix_of",
    "table_from_listing",
    "take_rows",
]

# LogFileUtils.java suffixes
LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
TMP_SUFFIX = ".tmp"
# KRaft metadata snapshots (raft/.../snapshot/Snapshots.java): <offset 20>-<epoch 10>.checkpoint
METADATA_SNAPSHOT_SUFFIX = ".checkpoint"
METADATA_SNAPSHOT_PART_SUFFIX = ".checkpoint.part"
METADATA_SNAPSHOT_DELETED_SUFFIX = ".checkpoint.deleted"
OFFSET_DIGITS = 20  # LogFileUtils.filenamePrefixFromOffset
SEGMENT_FILE_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, SNAPSHOT_SUFFIX)
_METADATA_SNAPSHOT = re.compile(r"^(\d+)-(\d+)\.checkpoint$")


def filename_prefix_from_offset(offset: int) -> str:
    """``LogFileUtils.filenamePrefixFromOffset``: zero-padded to 20 digits."""
    return f"{offset:0{OFFSET_DIGITS}d}"


def offset_from_name(name: str) -> int | None:
    """``offsetFromFileName`` (text before the first '.'), None where Kafka's parseLong throws."""
    stem = name.split(".", 1)[0]
    if not stem or not stem.isascii() or not stem.isdigit():
        return None
    value = int(stem)
    return value if value <= INT64_MAX else None


def suffix_of(name: str) -> str:
    """Everything from the first '.' (``.log``, ``.index.swap``, ...)."""
    i = name.find(".")
    return name[i:] if i >= 0 else ""


@dataclass(frozen=True)
class Segment:
    """Files of one segment; a missing file has path and size None.  Paths are locations
    (local path or URI) re-openable through :func:`kafka_format.storage.fsio.resolve`."""

    base_offset: int
    log_path: str | None
    log_size: int | None = None
    log_mtime_ms: int | None = None
    index_path: str | None = None
    index_size: int | None = None
    timeindex_path: str | None = None
    timeindex_size: int | None = None
    txnindex_path: str | None = None
    txnindex_size: int | None = None
    from_swap: bool = False

    @property
    def has_log(self) -> bool:
        return self.log_path is not None

    @property
    def name(self) -> str:
        return filename_prefix_from_offset(self.base_offset)


@dataclass(frozen=True)
class SnapshotFile:
    """A producer-state ``.snapshot``: ``offset`` = end offset it covers (exclusive)."""

    offset: int
    path: str
    size: int | None


@dataclass(frozen=True)
class MetadataSnapshotFile:
    """A KRaft metadata snapshot ``<offset>-<epoch>.checkpoint`` (records in log format)."""

    end_offset: int
    epoch: int
    path: str
    size: int | None


#: Columns of the table: the base offset, then per file kind its size (and the .log's mtime).
FILE_KINDS = (".log", ".index", ".timeindex", ".txnindex")
_BASE, _LOG, _MTIME, _INDEX, _TIMEINDEX, _TXNINDEX = range(6)
_SIZE_COLUMN = {".log": _LOG, ".index": _INDEX, ".timeindex": _TIMEINDEX, ".txnindex": _TXNINDEX}
_KIND_OF = {column: kind for kind, column in _SIZE_COLUMN.items()}
#: Value of a size column for an absent file (and of the mtime column for an unknown mtime).
MISSING = np.iinfo(np.int64).min


def _canonical(base: int, kind: str) -> str:
    return f"{base:020d}{kind}"


class SegmentTable(Sequence["Segment"]):
    """Immutable sequence of a partition's segments, stored as columns (see the module doc)."""

    __slots__ = ("_columns", "_from_swap", "_head", "_paths", "_tail")

    def __init__(self, columns: np.ndarray, head: str, tail: str = "",
                 paths: dict[tuple[int, str], str] | None = None, from_swap: frozenset[int] = frozenset()) -> None:
        """``columns``: int64 rows of (base, .log size, .log mtime ms, .index, .timeindex, .txnindex
        sizes), sorted by base, ``MISSING`` for what is absent; a file's location is ``head`` +
        its 20-digit name + ``tail`` unless ``paths[(row, kind)]`` says otherwise; ``from_swap``:
        rows whose files came from an interrupted swap."""
        self._columns = np.ascontiguousarray(columns, dtype=np.int64).reshape(-1, 6)
        self._columns.setflags(write=False)
        self._head = head
        self._tail = tail
        self._paths = paths or {}
        self._from_swap = from_swap

    @classmethod
    def from_segments(cls, segments: Sequence[Segment]) -> SegmentTable:
        """A table of arbitrary ``Segment`` values (every location kept as given)."""
        rows = np.full((len(segments), 6), MISSING, dtype=np.int64)
        paths: dict[tuple[int, str], str] = {}
        swap = set()
        for i, s in enumerate(segments):
            rows[i, _BASE] = s.base_offset
            for kind, path, size in ((".log", s.log_path, s.log_size), (".index", s.index_path, s.index_size),
                                     (".timeindex", s.timeindex_path, s.timeindex_size),
                                     (".txnindex", s.txnindex_path, s.txnindex_size)):
                if path is not None:
                    rows[i, _SIZE_COLUMN[kind]] = -1 if size is None else size
                    paths[(i, kind)] = path
            if s.log_mtime_ms is not None:
                rows[i, _MTIME] = s.log_mtime_ms
            if s.from_swap:
                swap.add(i)
        return cls(rows, "", "", paths, frozenset(swap))

    # -- columns ------------------------------------------------------------------------------
    @property
    def base_offsets(self) -> np.ndarray:
        """int64 base offsets, ascending."""
        return self._columns[:, _BASE]

    @property
    def log_sizes(self) -> np.ndarray:
        """int64 ``.log`` sizes (0 where unknown: what the planner counts)."""
        sizes = self._columns[:, _LOG]
        return np.where(sizes < 0, 0, sizes)

    def has_file(self, kind: str) -> np.ndarray:
        """bool per segment: whether it has a file of ``kind`` (``.log``, ``.index``, ...)."""
        return self._columns[:, _SIZE_COLUMN[kind]] != MISSING

    def location(self, i: int, kind: str) -> str | None:
        """Location of segment ``i``'s file of ``kind`` (None when absent)."""
        if self._columns[i, _SIZE_COLUMN[kind]] == MISSING:
            return None
        path = self._paths.get((i, kind))
        if path is not None:
            return path
        return self._head + _canonical(int(self._columns[i, _BASE]), kind) + self._tail

    def log_locations(self) -> list[str]:
        """Location of every segment's ``.log`` (\"\" where absent), in order: one string per
        segment without making ``Segment`` values."""
        head, tail = self._head, self._tail
        out = [head + f"{b:020d}.log" + tail for b in self._columns[:, _BASE].tolist()]
        if self._paths:
            for (i, kind), path in self._paths.items():
                if kind == ".log":
                    out[i] = path
        missing = np.flatnonzero(self._columns[:, _LOG] == MISSING)
        for i in missing.tolist():
            out[i] = ""
        return out

    @property
    def nbytes(self) -> int:
        """Bytes held (the table and its side tables)."""
        return self._columns.nbytes + sum(len(p) for p in self._paths.values())

    # -- sequence -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._columns)

    @overload
    def __getitem__(self, i: int) -> Segment: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Segment, ...]: ...

    def __getitem__(self, i: int | slice) -> Segment | tuple[Segment, ...]:
        if isinstance(i, slice):
            return tuple(self._segment(j) for j in range(*i.indices(len(self))))
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("segment index out of range")
        return self._segment(i)

    def __iter__(self) -> Iterator[Segment]:
        return (self._segment(i) for i in range(len(self)))

    def _segment(self, i: int) -> Segment:
        row = self._columns[i].tolist()

        def size(column: int) -> int | None:
            v = row[column]
            return None if v in (MISSING, -1) else v

        return Segment(base_offset=row[_BASE], log_path=self.location(i, ".log"), log_size=size(_LOG),
                       log_mtime_ms=None if row[_MTIME] == MISSING else row[_MTIME],
                       index_path=self.location(i, ".index"), index_size=size(_INDEX),
                       timeindex_path=self.location(i, ".timeindex"), timeindex_size=size(_TIMEINDEX),
                       txnindex_path=self.location(i, ".txnindex"), txnindex_size=size(_TXNINDEX),
                       from_swap=i in self._from_swap)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SegmentTable):
            return tuple(self) == tuple(other)
        if isinstance(other, (tuple, list)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"SegmentTable({len(self)} segments)"

    def __reduce__(self) -> tuple[Any, ...]:
        return (SegmentTable, (np.array(self._columns), self._head, self._tail, self._paths, self._from_swap))


# ---------------------------------------------------------------------------------------------
# building a table from a directory listing

_SEGMENT_FILE = re.compile(r"([0-9]+)(\.log|\.index|\.timeindex|\.txnindex)")
_ABOVE_INT64 = f"{INT64_MAX + 1:020d}"   # 20-digit names sort below this iff their offset fits an int64
_RECONCILED = (".deleted", ".cleaned", ".swap")   # names LogLoader reconciles: the general path



@dataclass
class Listing:
    """A partition dir's listing split into the segment table and the other files."""

    table: SegmentTable
    orphans: list[int]                                 # rows of segments without a .log
    others: Sequence[DirRow]                           # every other file, in name order
    all_indexed: bool = True                           # every segment has its .index


class _TableBuilder:
    """Segment files gathered by base offset (one ``add`` per file of the listing)."""

    def __init__(self) -> None:
        self.by_base: dict[int, list[int]] = {}
        self.odd: dict[tuple[int, str], str] = {}       # (base, kind) -> a name not 20 digits
        self.logs = self.indexes = 0                    # files of each kind (orphans, notes: rare)
        self.any_odd = False                            # a name not in 20 digits was seen

    def add(self, name: str, size: int | None, mtime: int | None) -> bool:
        """Take ``name`` if it is a segment file (``<digits>.log|.index|.timeindex|.txnindex``)."""
        column = _SIZE_COLUMN.get(name[20:])
        if column is not None and name[:20].isdigit() and name[:20].isascii() and name < _ABOVE_INT64:
            base = int(name[:20])                # the 20-digit names, <= Long.MAX_VALUE
            odd = False
        else:
            m = _SEGMENT_FILE.fullmatch(name)
            if m is None:
                return False
            digits, kind = m.groups()
            base = int(digits)
            if base > INT64_MAX:                 # offsetFromFileName's parseLong throws: not a segment file
                return False
            column = _SIZE_COLUMN[kind]
            odd = len(digits) != 20
        cols = self.by_base.get(base)
        if cols is None:
            cols = self.by_base[base] = [base, MISSING, MISSING, MISSING, MISSING, MISSING]
        if cols[column] == MISSING:
            if column == _LOG:
                self.logs += 1
            elif column == _INDEX:
                self.indexes += 1
        cols[column] = -1 if size is None else size
        if column == _LOG:
            cols[_MTIME] = MISSING if mtime is None else mtime
        if odd:
            self.odd[(base, _KIND_OF[column])] = name
            self.any_odd = True
        elif self.odd:
            self.odd.pop((base, _KIND_OF[column]), None)    # a later (name order) canonical name wins
        return True

    def listing(self, others: list[DirRow], head: str, tail: str) -> Listing:
        by_base = self.by_base
        n = len(by_base)
        bases = sorted(by_base)
        columns = np.array([by_base[b] for b in bases], dtype=np.int64).reshape(n, 6)
        paths: dict[tuple[int, str], str] = {}
        if self.odd:
            rank = {b: i for i, b in enumerate(bases)}
            paths = {(rank[b], kind): head + name + tail for (b, kind), name in self.odd.items()}
        orphans = [] if self.logs == n else np.flatnonzero(columns[:, _LOG] == MISSING).tolist()
        return Listing(SegmentTable(columns, head, tail, paths), orphans, others, all_indexed=self.indexes == n)


def table_from_listing(rows: Sequence[DirRow], head: str, tail: str = "") -> Listing | None:
    """One pass over a partition dir's listing (``rows`` sorted by name): segment files
    (``<digits>.log|.index|.timeindex|.txnindex``) into a :class:`SegmentTable` whose locations
    are ``head + name + tail``; other files kept apart.  None when the dir holds ``.deleted``,
    ``.cleaned`` or ``.swap`` files: ``LogLoader``'s reconciliation decides then (the general
    path of :mod:`kafka_format.storage.logdir`)."""
    builder = _TableBuilder()
    others: list[DirRow] = []
    for row in rows:
        name, is_dir, size, mtime = row
        if is_dir or builder.add(name, size, mtime):
            continue
        if name.endswith(_RECONCILED):
            return None
        others.append(row)
    return builder.listing(others, head, tail)


_S_IFMT, _S_IFDIR, _S_IFREG = 0o170000, 0o040000, 0o100000
if TYPE_CHECKING:
    from kafka_format.records import _fastdecode as _native
else:  # None in a build without the compiled decoder
    _native = extension("kafka_format.records._fastdecode")
# readdir + fstatat into the table's rows in C (Python's per-file work costs more than the calls)
_scan_dir = None if _native is None else _native.scan_partition_dir


def scan_local_partition(fs_path: str, head: str, tail: str = "") -> tuple[Listing | None, list[str]] | None:
    """:func:`table_from_listing` over a local directory in the same pass as ``os.scandir`` (the
    listing rules of :meth:`kafka_format.storage.fsio.FileSystemHandle.list_dir`: symlinks
    followed, broken ones left out).  Returns (listing or None as there, subdirectory names), or
    None when the directory cannot be listed (the caller lists it the general way, which reports
    why).  ``head`` is the location prefix of the directory's entries."""
    if _scan_dir is not None:
        scanned = _scan_dir(fs_path)
        if scanned is not None:                        # the compiled twin of the loop below
            rows, c_others, c_dirs, logs, indexes = scanned
            c_dirs.sort()
            if any(name.endswith(_RECONCILED) for name, *_ in c_others):
                return None, c_dirs
            c_others.sort()
            columns = np.frombuffer(rows, dtype=np.int64).reshape(-1, 6)
            n = len(columns)
            orphans = [] if logs == n else np.flatnonzero(columns[:, _LOG] == MISSING).tolist()
            return Listing(SegmentTable(columns, head, tail), orphans, c_others, all_indexed=indexes == n), c_dirs
    builder = _TableBuilder()
    files: list[DirRow] = []
    others: list[DirRow] = []
    dirs: list[str] = []
    reconciled = False
    add = builder.add
    try:
        with os.scandir(fs_path) as entries:
            for e in entries:
                name = e.name
                try:
                    st = e.stat()
                except FileNotFoundError:
                    continue  # a broken symlink: pyarrow leaves it out
                kind = st.st_mode & _S_IFMT
                if kind == _S_IFDIR:
                    dirs.append(name)
                    continue
                size = st.st_size if kind == _S_IFREG else None
                mtime = st.st_mtime_ns // 1_000_000
                row = (name, False, size, mtime)
                files.append(row)
                if add(name, size, mtime):
                    continue
                reconciled = reconciled or name.endswith(_RECONCILED)
                others.append(row)
    except FileNotFoundError:
        pass
    except OSError:
        return None
    dirs.sort()
    if reconciled:
        return None, dirs
    if builder.any_odd:   # names not in 20 digits: which of two names of one file wins is name order's
        return table_from_listing(sorted(files), head, tail), dirs
    others.sort()
    return builder.listing(others, head, tail), dirs


def take_rows(table: SegmentTable, rows: Sequence[int]) -> SegmentTable:
    """The segments ``rows`` of ``table`` (in that order) as a table."""
    index = np.asarray(rows, dtype=np.intp)
    position = {int(r): i for i, r in enumerate(index.tolist())}
    paths = {(position[r], kind): p for (r, kind), p in table._paths.items() if r in position}
    swap = frozenset(position[r] for r in table._from_swap if r in position)
    return SegmentTable(table._columns[index], table._head, table._tail, paths, swap)


# ---------------------------------------------------------------------------------------------
# state files


@dataclass
class PartitionFiles:
    """A partition dir's state files and, for the general path, its segment files by offset."""

    by_offset: dict[int, dict[str, FileStat]] = field(default_factory=dict)
    snapshots: list[SnapshotFile] = field(default_factory=list)
    meta_snaps: list[MetadataSnapshotFile] = field(default_factory=list)
    leader_epochs: ckpt.LeaderEpochCheckpoint | None = None
    topic_id: str | None = None
    quorum: ckpt.QuorumState | None = None


def classify_files(h: FileSystemHandle, files: list[tuple[str, FileStat]], notes: list[str],
                   on_problem: Callable[[KafkaFormatError], None]) -> PartitionFiles:
    """Classify a partition dir's ``files`` ((name, file) in name order; a swap file used as a
    segment file comes under its name without ``.swap``) as ``LogLoader`` does: checkpoints and
    snapshots read, segment files grouped by offset, anything else noted as ignored (a state
    file that cannot be read goes to ``on_problem``)."""
    out = PartitionFiles()
    for name, st in files:
        if name == ckpt.LEADER_EPOCH_CHECKPOINT:
            try:
                out.leader_epochs = ckpt.read_leader_epoch_checkpoint(st.path, filesystem=h)
            except KafkaFormatError as err:
                on_problem(err)
            continue
        if name == ckpt.PARTITION_METADATA:
            try:
                out.topic_id = ckpt.read_partition_metadata(st.path, filesystem=h).topic_id
            except KafkaFormatError as err:
                on_problem(err)
            continue
        if name == ckpt.QUORUM_STATE:
            try:
                out.quorum = ckpt.read_quorum_state(st.path, filesystem=h)
            except KafkaFormatError as err:
                on_problem(err)
            continue
        if name.endswith(TMP_SUFFIX) or name.endswith(METADATA_SNAPSHOT_PART_SUFFIX):
            continue
        m = _METADATA_SNAPSHOT.match(name)
        if m:
            out.meta_snaps.append(MetadataSnapshotFile(int(m.group(1)), int(m.group(2)), h.location(st.path),
                                                       st.size))
            continue
        off = offset_from_name(name)
        suffix = suffix_of(name)
        if off is None or suffix not in SEGMENT_FILE_SUFFIXES:
            notes.append(f"ignored file {name}")
            continue
        if suffix == SNAPSHOT_SUFFIX:
            out.snapshots.append(SnapshotFile(off, h.location(st.path), st.size))
            continue
        out.by_offset.setdefault(off, {})[suffix] = st
    return out
