"""The remote tier's files as Kafka's reference ``RemoteStorageManager`` lays them out.

``LocalTieredStorage`` (Kafka's ``storage/src/test/.../remote/storage/``) keeps, under its
``kafka-tiered-storage`` root, one directory per topic-id-partition and in it one fileset per
remote segment::

    <root>/kafka-tiered-storage/<topic>-<partition>-<topicId>/<20-digit start offset>-<segment uuid>.log
                                                              ...-<segment uuid>.index | .timeindex | .txnindex
                                                              ...-<segment uuid>.snapshot | .leader_epoch_checkpoint

Names are read as Kafka reads them: a partition dir by ``RemoteTopicPartitionDirectory``'s
pattern (``Topic.LEGAL_CHARS+ - digits - 22 Uuid chars``, the whole name), a file by
``RemoteLogSegmentFileset``'s (``digits- uuid .suffix``) and its suffix by
``RemoteLogSegmentFileType``; a fileset is complete when it has every type but the optional
``.txnindex`` (``openExistingFileset``).  What the patterns reject is kept and reported with the
reason, never guessed at.

:func:`open_remote_storage` finds the root and lists it: one listing of the root and one per
partition dir, never a request per segment or per file (object stores answer a listing with
sizes).  A remote fileset's files are ordinary segment files (the broker's ``RemoteLogManager``
copies a local segment's files byte for byte): :meth:`RemoteFileset.segment` gives the
:class:`~kafka_format.storage.partition_files.Segment` whose locations are the remote files, and
:func:`remote_partition_log` a :class:`~kafka_format.storage.partition_log.PartitionLog` of
remote filesets that the planner and the readers open where they lie.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from itertools import pairwise

import pyarrow.fs as pafs

from kafka_format.common.errors import LogDirError
from kafka_format.common.kafka_uuid import uuid_string_problem
from kafka_format.common.limits import INT32_MAX
from kafka_format.internal.remote_log_metadata import RemoteLogSegmentMetadata, TopicIdPartition
from kafka_format.records.columns import FileContext
from kafka_format.storage import checkpoints as ckpt
from kafka_format.storage import fsio
from kafka_format.storage.fsio import DirRow, FileSystemHandle
from kafka_format.storage.partition_files import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    OFFSET_DIGITS,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    Segment,
    SegmentTable,
    SnapshotFile,
)
from kafka_format.storage.partition_log import REMOTE_KIND, PartitionLog

__all__ = [
    "LEADER_EPOCH_CHECKPOINT_SUFFIX",
    "ROOT_STORAGE_DIR_NAME",
    "RejectedEntry",
    "RemoteFile",
    "RemoteFileType",
    "RemoteFileset",
    "RemotePartitionDir",
    "RemoteStorage",
    "fileset_file_name",
    "open_remote_storage",
    "parse_fileset_file_name",
    "parse_remote_partition_dir",
    "remote_partition_dir_name",
    "remote_partition_log",
    "resolve_remote_root",
]

#: ``LocalTieredStorage.ROOT_STORAGE_DIR_NAME``: the root under the configured ``dir``.
ROOT_STORAGE_DIR_NAME = "kafka-tiered-storage"
#: ``RemoteLogSegmentFileType.LEADER_EPOCH_CHECKPOINT``'s suffix (the others are ``LogFileUtils``').
LEADER_EPOCH_CHECKPOINT_SUFFIX = ".leader_epoch_checkpoint"
_TOPIC_LEGAL_CHARS = "[a-zA-Z0-9._-]"          # org.apache.kafka.common.internals.Topic.LEGAL_CHARS
_UUID_LEGAL_CHARS = "[a-zA-Z0-9_-]{22}"        # RemoteTopicPartitionDirectory.UUID_LEGAL_CHARS
# RemoteTopicPartitionDirectory.FILENAME_FORMAT and RemoteLogSegmentFileset.FILENAME_FORMAT, matched
# whole (Matcher.matches); ASCII: Java's \d is [0-9].
_PARTITION_DIR = re.compile(f"({_TOPIC_LEGAL_CHARS}+)-([0-9]+)-({_UUID_LEGAL_CHARS})", re.ASCII)
_FILESET_FILE = re.compile(f"([0-9]+)-({_UUID_LEGAL_CHARS})(\\.[a-z_]+)", re.ASCII)


class RemoteFileType(Enum):
    """``RemoteLogSegmentFileType``: the files of a fileset, in Kafka's declaration order."""

    SEGMENT = LOG_SUFFIX
    OFFSET_INDEX = INDEX_SUFFIX
    TIME_INDEX = TIME_INDEX_SUFFIX
    TRANSACTION_INDEX = TXN_INDEX_SUFFIX
    LEADER_EPOCH_CHECKPOINT = LEADER_EPOCH_CHECKPOINT_SUFFIX
    PRODUCER_SNAPSHOT = SNAPSHOT_SUFFIX

    @property
    def suffix(self) -> str:
        """The file name's suffix (``getSuffix``)."""
        return str(self.value)

    @property
    def optional(self) -> bool:
        """``isOptional``: only the transaction index may be absent."""
        return self is RemoteFileType.TRANSACTION_INDEX


_TYPE_OF_SUFFIX = {t.suffix: t for t in RemoteFileType}
_TYPE_ORDER = {t: i for i, t in enumerate(RemoteFileType)}
_REQUIRED = tuple(t for t in RemoteFileType if not t.optional)


def remote_partition_dir_name(partition: TopicIdPartition) -> str:
    """``RemoteTopicPartitionDirectory.toString``: ``<topic>-<partition>-<topicId>``."""
    return f"{partition.topic}-{partition.partition}-{partition.topic_id}"


def fileset_file_name(start_offset: int, segment_id: str, kind: RemoteFileType) -> str:
    """``RemoteLogSegmentFileType.toFilename`` of ``filenamePrefixFromOffset(startOffset)``."""
    return f"{start_offset:0{OFFSET_DIGITS}d}-{segment_id}{kind.suffix}"


def _partition_dir_reason(name: str) -> TopicIdPartition | str:
    m = _PARTITION_DIR.fullmatch(name)
    if m is None:
        return "not <topic>-<partition>-<topicId> (RemoteTopicPartitionDirectory's pattern)"
    topic, digits, topic_id = m.groups()
    if int(digits) > INT32_MAX:
        return f"partition {digits} is not an int (Integer.parseInt)"
    problem = uuid_string_problem(topic_id)
    if problem is not None:
        return f"topic id {problem}"
    return TopicIdPartition(topic_id, topic, int(digits))


def parse_remote_partition_dir(name: str) -> TopicIdPartition | None:
    """The topic-id-partition a remote partition dir's name stands for, as
    ``RemoteTopicPartitionDirectory.openExistingTopicPartitionDirectory`` reads it (topic names may
    hold '-' and '.'); None where Kafka rejects the name."""
    parsed = _partition_dir_reason(name)
    return parsed if isinstance(parsed, TopicIdPartition) else None


def parse_fileset_file_name(name: str) -> tuple[int, str, RemoteFileType] | None:
    """(start offset, segment uuid, file type) of a fileset file's name
    (``RemoteLogSegmentFileset.FILENAME_FORMAT`` and ``getFileType``); None where Kafka rejects it."""
    parsed = _file_reason(name)
    return parsed if isinstance(parsed, tuple) else None


def _file_reason(name: str) -> tuple[int, str, RemoteFileType] | str:
    m = _FILESET_FILE.fullmatch(name)
    if m is None:
        return "not <offset>-<segment uuid>.<type> (RemoteLogSegmentFileset's pattern)"
    digits, uuid, suffix = m.groups()
    kind = _TYPE_OF_SUFFIX.get(suffix)
    if kind is None:
        return f"{suffix} is no RemoteLogSegmentFileType"
    problem = uuid_string_problem(uuid)
    if problem is not None:
        return f"segment id {problem}"
    return int(digits), uuid, kind


# ---------------------------------------------------------------------------------------------
# values


@dataclass(frozen=True)
class RemoteFile:
    """One file of a fileset: its type, the start offset its name gives, location and size."""

    kind: RemoteFileType
    name: str
    start_offset: int
    location: str
    size: int | None


@dataclass(frozen=True)
class RejectedEntry:
    """A directory entry the layout's patterns reject, with the reason (nothing is guessed)."""

    name: str
    location: str
    is_dir: bool
    size: int | None
    reason: str


@dataclass(frozen=True)
class RemoteFileset:
    """``RemoteLogSegmentFileset``: the files of one remote segment (by its uuid).

    ``problems`` says why ``openExistingFileset`` would not open it or the broker's fetch would not
    find a file (``openFileset`` names files from the metadata's start offset): required files
    missing, a type present twice, files naming different start offsets, a start offset not in 20
    digits, a stray file naming the uuid."""

    segment_id: str
    start_offset: int
    partition_dir: str
    files: tuple[RemoteFile, ...]
    problems: tuple[str, ...] = ()

    def file(self, kind: RemoteFileType) -> RemoteFile | None:
        """The file of ``kind`` (None when absent)."""
        for f in self.files:
            if f.kind is kind:
                return f
        return None

    def location(self, kind: RemoteFileType) -> str | None:
        """Location of the file of ``kind`` (None when absent)."""
        f = self.file(kind)
        return None if f is None else f.location

    @property
    def missing(self) -> tuple[RemoteFileType, ...]:
        """Required types (all but the transaction index) without a file."""
        present = {f.kind for f in self.files}
        return tuple(t for t in _REQUIRED if t not in present)

    @property
    def complete(self) -> bool:
        """Whether ``openExistingFileset`` opens it: every required file, nothing contradictory."""
        return not self.missing and not self.problems

    @property
    def log_size(self) -> int | None:
        """Size of the ``.log`` (None when absent or unknown)."""
        f = self.file(RemoteFileType.SEGMENT)
        return None if f is None else f.size

    def segment(self) -> Segment:
        """This fileset as a segment of a partition log: base offset = the start offset (the
        remote copy's ``.index`` and ``.timeindex`` are relative to it, as the local segment's
        were), locations = the remote files (nothing is copied)."""
        log = self.file(RemoteFileType.SEGMENT)
        index = self.file(RemoteFileType.OFFSET_INDEX)
        timeindex = self.file(RemoteFileType.TIME_INDEX)
        txnindex = self.file(RemoteFileType.TRANSACTION_INDEX)
        return Segment(
            base_offset=self.start_offset,
            log_path=None if log is None else log.location, log_size=None if log is None else log.size,
            index_path=None if index is None else index.location,
            index_size=None if index is None else index.size,
            timeindex_path=None if timeindex is None else timeindex.location,
            timeindex_size=None if timeindex is None else timeindex.size,
            txnindex_path=None if txnindex is None else txnindex.location,
            txnindex_size=None if txnindex is None else txnindex.size)

    def file_context(self, partition: TopicIdPartition, *, broker_id: int | None = None) -> FileContext:
        """Provenance of the ``.log``'s records for :func:`kafka_format.records.file_records.decode_segment`
        (``segment`` = the start offset, ``log_dir`` = the partition dir)."""
        return FileContext(path=fsio.redact(self.location(RemoteFileType.SEGMENT) or self.partition_dir),
                           topic=partition.topic, partition=partition.partition, segment=self.start_offset,
                           log_dir=fsio.redact(self.partition_dir), broker_id=broker_id)


@dataclass(frozen=True)
class RemotePartitionDir:
    """``RemoteTopicPartitionDirectory``: one topic-id-partition's filesets, by start offset."""

    partition: TopicIdPartition
    name: str
    location: str
    filesets: tuple[RemoteFileset, ...]
    rejected: tuple[RejectedEntry, ...] = ()

    def fileset(self, segment_id: str) -> RemoteFileset | None:
        """The fileset of segment ``segment_id`` (None when the store has no file of it)."""
        return self._by_id.get(segment_id)

    @cached_property
    def _by_id(self) -> dict[str, RemoteFileset]:
        return {f.segment_id: f for f in self.filesets}


@dataclass(frozen=True)
class RemoteStorage:
    """A remote storage root (``LocalTieredStorage``'s, or another layout's read as one:
    :mod:`kafka_format.storage.aiven_tier`): its partition dirs and what its listing holds besides."""

    root: str
    partitions: tuple[RemotePartitionDir, ...]
    rejected: tuple[RejectedEntry, ...] = ()
    filesystem: FileSystemHandle = field(default_factory=fsio.local_handle, repr=False, compare=False)
    #: the location of a segment's ``.log`` as the store's layout names it (None: ``LocalTieredStorage``'s)
    expected_log: Callable[[TopicIdPartition, RemoteLogSegmentMetadata], str] | None = field(
        default=None, repr=False, compare=False)

    def partition_dirs(self, topic: str, partition: int) -> list[RemotePartitionDir]:
        """Every dir of ``topic``'s ``partition`` (one per topic id: incarnations of the topic)."""
        return [p for p in self.partitions if p.partition.topic == topic and p.partition.partition == partition]

    def partition_dir(self, partition: TopicIdPartition) -> RemotePartitionDir | None:
        """The dir of exactly this topic-id-partition (None when the store has none)."""
        for p in self.partitions:
            if p.partition == partition:
                return p
        return None


# ---------------------------------------------------------------------------------------------
# discovery


def resolve_remote_root(uri: str, *, filesystem: pafs.FileSystem | FileSystemHandle | None = None
                        ) -> tuple[FileSystemHandle, str]:
    """(handle, path) of the ``kafka-tiered-storage`` directory ``uri`` names: the directory itself
    when it has that name, else its child of that name (``LocalTieredStorage.configure``: the root is
    ``new File(dir, ROOT_STORAGE_DIR_NAME)``).  One stat request.  Raises :class:`LogDirError`
    naming the path when neither is a directory."""
    h, fs_path = fsio.resolve(uri, filesystem)
    if len(fs_path) > 1:
        fs_path = fs_path.rstrip("/")
    expected = f"a directory named {ROOT_STORAGE_DIR_NAME} or one holding it"
    if h.basename(fs_path) == ROOT_STORAGE_DIR_NAME:
        st = h.stat(fs_path)
        if st is None or not st.is_dir:
            raise LogDirError("remote storage root not found", path=h.location(fs_path), expected=expected,
                              found="nothing there" if st is None else "a file", code="REMOTE_STORAGE_NOT_FOUND")
        return h, fs_path
    child = h.join(fs_path, ROOT_STORAGE_DIR_NAME)
    st = h.stat(child)
    if st is not None and st.is_dir:
        return h, child
    parent = h.stat(fs_path)
    found = ("nothing there" if parent is None else "a file" if not parent.is_dir
             else f"no {ROOT_STORAGE_DIR_NAME} directory in it" if st is None
             else f"{ROOT_STORAGE_DIR_NAME} is a file")
    raise LogDirError("remote storage root not found", path=h.location(fs_path), expected=expected, found=found,
                      code="REMOTE_STORAGE_NOT_FOUND")


def _listing(h: FileSystemHandle, fs_path: str) -> list[tuple[DirRow, str]]:
    """One listing of ``fs_path``: (row, filesystem path) per entry, in name order."""
    listed = h.list_dir_rows(fs_path)
    if listed is not None:
        prefix, rows = listed
        return [(row, prefix + row[0]) for row in rows]
    return [((s.name, s.is_dir, s.size, s.mtime_ms), s.path) for s in h.list_dir(fs_path)]


def _read_partition_dir(h: FileSystemHandle, fs_path: str, name: str, partition: TopicIdPartition
                        ) -> RemotePartitionDir:
    """A partition dir from its one listing: files grouped by segment uuid, the rest rejected."""
    by_uuid: dict[str, list[RemoteFile]] = {}
    rejected: list[RejectedEntry] = []
    for (entry, is_dir, size, _mtime), path in _listing(h, fs_path):
        location = h.location(path)
        if is_dir:
            rejected.append(RejectedEntry(entry, location, True, None, "a directory inside a remote partition dir"))
            continue
        parsed = _file_reason(entry)
        if isinstance(parsed, str):
            rejected.append(RejectedEntry(entry, location, False, size, parsed))
            continue
        start, uuid, kind = parsed
        by_uuid.setdefault(uuid, []).append(RemoteFile(kind, entry, start, location, size))
    filesets = [_fileset(uuid, files, h.location(fs_path), rejected) for uuid, files in by_uuid.items()]
    filesets.sort(key=lambda f: (f.start_offset, f.segment_id))
    return RemotePartitionDir(partition, name, h.location(fs_path), tuple(filesets), tuple(rejected))


def _fileset(uuid: str, files: list[RemoteFile], partition_dir: str,
             rejected: Sequence[RejectedEntry]) -> RemoteFileset:
    files.sort(key=lambda f: (_TYPE_ORDER[f.kind], f.name))
    problems: list[str] = []
    log = next((f for f in files if f.kind is RemoteFileType.SEGMENT), None)
    start = log.start_offset if log is not None else files[0].start_offset
    missing = [t.name for t in _REQUIRED if all(f.kind is not t for f in files)]
    if missing:
        problems.append(f"Invalid fileset, missing files: {missing} (openExistingFileset)")
    seen: set[RemoteFileType] = set()
    for f in files:
        if f.kind in seen:
            problems.append(f"two {f.kind.name} files ({f.name} and another): openExistingFileset's map "
                            "takes one per type")
        seen.add(f.kind)
    starts = sorted({f.start_offset for f in files})
    if len(starts) > 1:
        problems.append(f"files name different start offsets {starts}")
    for f in files:
        if len(f.name) - len(f.name.lstrip("0123456789")) != OFFSET_DIGITS:
            problems.append(f"{f.name}: the start offset is not in {OFFSET_DIGITS} digits "
                            "(filenamePrefixFromOffset), the broker's fetch names the file otherwise")
    for r in rejected:
        if uuid in r.name:
            problems.append(f"{r.name} names the segment but no file type (openExistingFileset fails on it)")
    return RemoteFileset(uuid, start, partition_dir, tuple(files), tuple(problems))


def open_remote_storage(uri: str, *, filesystem: pafs.FileSystem | FileSystemHandle | None = None,
                        select: Callable[[TopicIdPartition], bool] | None = None) -> RemoteStorage:
    """The ``LocalTieredStorage`` under ``uri`` (the ``kafka-tiered-storage`` dir or its parent, a
    local path or any store :mod:`kafka_format.storage.fsio` opens).

    Requests: one stat (:func:`resolve_remote_root`), one listing of the root and one listing of
    each partition dir (``select`` narrows which are listed).  Root entries that are files or whose
    names ``RemoteTopicPartitionDirectory`` rejects are in :attr:`RemoteStorage.rejected`."""
    h, root = resolve_remote_root(uri, filesystem=filesystem)
    partitions: list[RemotePartitionDir] = []
    rejected: list[RejectedEntry] = []
    for (name, is_dir, size, _mtime), path in _listing(h, root):
        if not is_dir:
            rejected.append(RejectedEntry(name, h.location(path), False, size,
                                          "a file, not a topic-partition directory (LocalTieredStorage.traverse "
                                          "reads directories only)"))
            continue
        parsed = _partition_dir_reason(name)
        if isinstance(parsed, str):
            rejected.append(RejectedEntry(name, h.location(path), True, None, parsed))
            continue
        if select is not None and not select(parsed):
            continue
        partitions.append(_read_partition_dir(h, path, name, parsed))
    partitions.sort(key=lambda p: (p.partition.topic, p.partition.partition, p.partition.topic_id))
    return RemoteStorage(h.location(root), tuple(partitions), tuple(rejected), h)


# ---------------------------------------------------------------------------------------------
# remote filesets as a partition log


def remote_partition_log(storage: RemoteStorage, directory: RemotePartitionDir, filesets: Iterable[RemoteFileset],
                         *, end_offsets: Sequence[int] | None = None,
                         log_start_offset: int | None = None, log_end_offset: int | None = None,
                         leader_epochs: ckpt.LeaderEpochCheckpoint | None = None) -> PartitionLog:
    """A :class:`PartitionLog` (``kind="remote"``) whose segments are ``filesets``' files where they
    lie: what the planner (:func:`kafka_format.read.planning.plan_splits`) and the split reader
    read.  Filesets must be complete and in offset order without overlap (a segment's offsets end
    where the next one's begin: the planner's rule).  ``end_offsets`` (each fileset's last offset,
    from the metadata) place each producer snapshot at the offset it covers (the broker copies the
    snapshot taken at the next segment's base offset); ``log_start_offset``/``log_end_offset`` are
    the offsets the log serves."""
    chosen = list(filesets)
    for f in chosen:
        if not f.complete:
            raise LogDirError(f"remote fileset {f.segment_id} cannot be opened", path=directory.location,
                              expected="every file but .txnindex, one per type", found="; ".join(f.problems),
                              code="REMOTE_FILESET_INVALID")
    for a, b in pairwise(chosen):
        if b.start_offset <= a.start_offset:
            raise ValueError(f"filesets out of offset order: {a.segment_id} at {a.start_offset}, "
                             f"then {b.segment_id} at {b.start_offset}")
    snapshots: list[SnapshotFile] = []
    if end_offsets is not None:
        if len(end_offsets) != len(chosen):
            raise ValueError(f"{len(end_offsets)} end offsets for {len(chosen)} filesets")
        for f, end in zip(chosen, end_offsets, strict=True):
            snap = f.file(RemoteFileType.PRODUCER_SNAPSHOT)
            if snap is not None:
                snapshots.append(SnapshotFile(end + 1, snap.location, snap.size))
    p = directory.partition
    return PartitionLog(
        topic=p.topic, partition=p.partition, path=directory.location, log_dir=storage.root, kind=REMOTE_KIND,
        segments=SegmentTable.from_segments([f.segment() for f in chosen]), leader_epochs=leader_epochs,
        topic_id=p.topic_id, snapshots=tuple(snapshots), log_start_offset_checkpoint=log_start_offset,
        log_end_offset=log_end_offset, filesystem=storage.filesystem)
