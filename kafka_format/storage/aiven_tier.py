"""The remote tier as Aiven's ``RemoteStorageManager`` lays it out, read as the other remote-tier code reads
Kafka's ``LocalTieredStorage``.

Aiven's objects (:mod:`kafka_format.storage.aiven_rsm`) live under the storage root (the filesystem
backend's ``storage.root``, a bucket and its path) and ``key.prefix``::

    <root>/<key.prefix><topic>-<topicId>/<partition>/<20-digit start offset>-<segment uuid>.log | .indexes | .rsm-manifest

:func:`open_aiven_storage` finds, for each topic-id-partition asked for, its directory (one listing
each, never one per segment) and reads each segment's manifest (one request each: the sizes, the
chunk index and the indexes' places).  Each segment becomes a
:class:`~kafka_format.storage.remote_tier.RemoteFileset` whose files are the segment files the broker
uploaded (``.log``, ``.index``, ``.timeindex``, ``.snapshot``, ``.leader_epoch_checkpoint``,
``.txnindex``) as a *view*: locations ``aiven-rsm:<location of the object's main path>.<suffix>``
that :func:`kafka_format.storage.fsio.resolve` opens through :mod:`kafka_format.storage.aiven_view` -- the ``.log``
de-chunked one chunk at a time (decrypted, decompressed) on demand, an index cut out of the
``.indexes`` object.  The planner, the split reader and the jobs read those locations as any other
segment files, on the driver and in workers (locations are strings; the private keys travel by
:func:`kafka_format.storage.aiven_rsm.use_keys`).

What Aiven's fetch would fail on is kept in the fileset's ``problems`` (so the history reports it as
for ``LocalTieredStorage``): an object missing, a manifest unreadable or naming another segment, a
``.log`` or ``.indexes`` object of another size than its manifest describes (a partial upload).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from kafka_format.common.errors import LogDirError
from kafka_format.common.kafka_uuid import uuid_string_problem
from kafka_format.internal.remote_log_metadata import RemoteLogSegmentMetadata, TopicIdPartition
from kafka_format.storage import fsio
from kafka_format.storage.aiven_rsm import INDEXES_SUFFIX, LOG_SUFFIX, MANIFEST_SUFFIX, SegmentManifest
from kafka_format.storage.aiven_view import SCHEME_PREFIX, VIEW_FILES, AivenViewHandler
from kafka_format.storage.fsio import FileSystemHandle
from kafka_format.storage.partition_files import OFFSET_DIGITS
from kafka_format.storage.remote_tier import (
    RejectedEntry,
    RemoteFile,
    RemoteFileset,
    RemoteFileType,
    RemotePartitionDir,
    RemoteStorage,
    fileset_file_name,
)

__all__ = [
    "OBJECT_SUFFIXES",
    "SCHEME_PREFIX",
    "aiven_main_path",
    "has_aiven_layout",
    "log_object_bytes",
    "open_aiven_storage",
]

#: the objects of one segment (``ObjectKeyFactory.Suffix``)
OBJECT_SUFFIXES = (LOG_SUFFIX, INDEXES_SUFFIX, MANIFEST_SUFFIX)
#: the view's files, by the type of a ``LocalTieredStorage`` fileset's file they stand for
_VIEW_KINDS = tuple(t for t in RemoteFileType if t.suffix in VIEW_FILES)


def aiven_main_path(partition: TopicIdPartition, start_offset: int, segment_id: str) -> str:
    """``ObjectKeyFactory.mainPath``: ``<topic>-<topicId>/<partition>/<20-digit offset>-<uuid>``."""
    return (f"{partition.topic}-{partition.topic_id}/{partition.partition}/"
            f"{start_offset:0{OFFSET_DIGITS}d}-{segment_id}")


# ---------------------------------------------------------------------------------------------
# discovery


@dataclass(frozen=True)
class _Objects:
    start_offset: int
    main: str                                     # the objects' path without suffix
    names: dict[str, tuple[str, int | None]]      # suffix -> (fs path, size)


def _group(h: FileSystemHandle, fs_path: str, rejected: list[RejectedEntry]) -> dict[str, _Objects]:
    groups: dict[str, _Objects] = {}
    for s in h.list_dir(fs_path):
        location = h.location(s.path)
        if s.is_dir:
            rejected.append(RejectedEntry(s.name, location, True, None, "a directory inside an Aiven partition dir"))
            continue
        suffix = next((x for x in OBJECT_SUFFIXES if s.name.endswith(x)), None)
        stem = s.name[: -len(suffix)] if suffix else ""
        digits, dash, uuid = stem.partition("-")
        if suffix is None or not dash or not digits.isdigit() or not digits.isascii():
            rejected.append(RejectedEntry(s.name, location, False, s.size,
                                          "not <offset>-<segment uuid>.log|.indexes|.rsm-manifest "
                                          "(ObjectKeyFactory)"))
            continue
        problem = uuid_string_problem(uuid)
        if problem is not None:
            rejected.append(RejectedEntry(s.name, location, False, s.size, f"segment id {problem}"))
            continue
        g = groups.setdefault(uuid, _Objects(int(digits), s.path[: -len(suffix)], {}))
        if int(digits) != g.start_offset or len(digits) != OFFSET_DIGITS:
            rejected.append(RejectedEntry(s.name, location, False, s.size,
                                          f"start offset not in {OFFSET_DIGITS} digits or not the segment's other "
                                          f"objects' ({g.start_offset})"))
            continue
        g.names[suffix] = (s.path, s.size)
    return groups


def _fileset(view: FileSystemHandle, partition: TopicIdPartition, uuid: str, objects: _Objects,
             partition_dir: str) -> RemoteFileset:
    handler: AivenViewHandler = view.filesystem.handler
    inner = handler.inner
    start = objects.start_offset
    problems: list[str] = []
    missing = [s for s in OBJECT_SUFFIXES if s not in objects.names]
    if missing:
        problems.append(f"objects missing: {', '.join(missing)} (Aiven's copy uploads .log, .indexes, then "
                        ".rsm-manifest: a partial upload)")
    main = objects.main
    files: list[RemoteFile] = []
    manifest: SegmentManifest | None = None
    if MANIFEST_SUFFIX in objects.names:
        try:
            manifest = handler.manifest(main)
        except LogDirError as exc:
            problems.append(f"manifest unreadable: {exc}")
    if manifest is not None:
        problems.extend(_manifest_problems(manifest, partition, uuid, start, objects))
        for kind in _VIEW_KINDS:
            size = handler.view_size(main, kind.suffix)
            if size is not None:
                files.append(RemoteFile(kind, fileset_file_name(start, uuid, kind), start,
                                        view.location(main + kind.suffix), size))
    return RemoteFileset(uuid, start, inner.location(partition_dir), tuple(files), tuple(problems))


def _manifest_problems(manifest: SegmentManifest, partition: TopicIdPartition, uuid: str, start: int,
                       objects: _Objects) -> list[str]:
    out: list[str] = []
    seg = manifest.segment_field("remoteLogSegmentId")
    if isinstance(seg, dict):
        tip = seg.get("topicIdPartition") or {}
        tp = tip.get("topicPartition") or {}
        named = (seg.get("id"), tip.get("topicId"), tp.get("topic"), tp.get("partition"))
        if named != (uuid, partition.topic_id, partition.topic, partition.partition):
            out.append(f"the manifest names segment {named[0]} of {named[2]}-{named[3]} (topic id {named[1]}), "
                       f"its key {uuid} of {partition}")
    so = manifest.segment_field("startOffset")
    if so is not None and so != start:
        out.append(f"the manifest's startOffset {so} is not the key's {start}")
    log = objects.names.get(LOG_SUFFIX)
    want = manifest.chunk_index.transformed_size
    if log is not None and log[1] is not None and log[1] != want:
        out.append(f"the .log object has {log[1]} bytes, the manifest's chunk index describes {want} "
                   "(a partial or damaged upload)")
    idx = objects.names.get(INDEXES_SUFFIX)
    if idx is not None and idx[1] is not None and idx[1] < manifest.indexes_size:
        out.append(f"the .indexes object has {idx[1]} bytes, the manifest's segmentIndexes need "
                   f"{manifest.indexes_size} (a partial or damaged upload)")
    return out


def log_object_bytes(uri: str) -> int:
    """Bytes of the ``.log`` objects of the segments that have a manifest under ``uri`` (one
    recursive listing: an estimate of the remote input, as stored)."""
    h, root = fsio.resolve(uri)
    try:
        infos = h.filesystem.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    except (OSError, pa.ArrowException) as exc:
        raise LogDirError(f"cannot list: {exc}", path=h.location(root), code=fsio.IO_ERROR) from exc
    files = {i.path: i.size for i in infos if i.type == pafs.FileType.File}
    return sum(int(size or 0) for path, size in files.items()
               if path.endswith(LOG_SUFFIX) and path[: -len(LOG_SUFFIX)] + MANIFEST_SUFFIX in files)


def _split_key_prefix(h: FileSystemHandle, root: str) -> tuple[str, str] | None:
    """``root`` (the storage root followed by ``key.prefix``) as (the directory the objects' keys
    start in, the rest of ``key.prefix``): ``(root, "")`` when ``root`` is a directory (a prefix
    ending in ``/``), ``(parent, name)`` when only its parent is (``key.prefix=cluster-a-`` makes
    ``<root>/cluster-a-<topic>-<topicId>/...``); None when neither is."""
    if len(root) > 1:
        root = root.rstrip("/")
    st = h.stat(root)
    if st is not None and st.is_dir:
        return root, ""
    parent, sep, name = root.rpartition("/")
    if not sep or not name or st is not None:
        return None
    parent = parent or "/"
    pst = h.stat(parent)
    return (parent, name) if pst is not None and pst.is_dir else None


def _partition_path(h: FileSystemHandle, base: str, key_prefix: str, p: TopicIdPartition) -> str:
    return h.join(base, f"{key_prefix}{p.topic}-{p.topic_id}", str(p.partition))


def has_aiven_layout(uri: str, partitions: Collection[TopicIdPartition]) -> bool:
    """Whether ``uri`` holds Aiven's directory of any of ``partitions`` (one stat each, at most)."""
    h, root = fsio.resolve(uri)
    split = _split_key_prefix(h, root)
    if split is None:
        return False
    for p in partitions:
        st = h.stat(_partition_path(h, *split, p))
        if st is not None and st.is_dir:
            return True
    return False


def open_aiven_storage(uri: str, partitions: Collection[TopicIdPartition], *,
                       filesystem: pafs.FileSystem | FileSystemHandle | None = None) -> RemoteStorage:
    """The Aiven store at ``uri`` (the storage root followed by ``key.prefix``, which need not end in
    ``/``: a local path or any store
    :mod:`kafka_format.storage.fsio` opens) for ``partitions``: one stat of the root, one listing of
    each partition's directory, one read of each segment's manifest.  Raises :class:`LogDirError`
    when the root is no directory."""
    h, root = fsio.resolve(uri, filesystem)
    split = _split_key_prefix(h, root)
    if split is None:
        st = h.stat(root)
        raise LogDirError("remote storage root not found", path=h.location(root),
                          expected="the storage root followed by key.prefix of Aiven's RemoteStorageManager "
                                   "(a directory, or a key prefix in one)",
                          found="nothing there" if st is None else "a file", code="REMOTE_STORAGE_NOT_FOUND")
    base, key_prefix = split
    view = fsio.aiven_view(h)
    dirs: list[RemotePartitionDir] = []
    for p in sorted(set(partitions), key=lambda x: (x.topic, x.partition, x.topic_id)):
        name = f"{key_prefix}{p.topic}-{p.topic_id}/{p.partition}"
        path = _partition_path(h, base, key_prefix, p)
        pst = h.stat(path)
        if pst is None or not pst.is_dir:
            continue
        rejected: list[RejectedEntry] = []
        groups = _group(h, path, rejected)
        filesets = [_fileset(view, p, uuid, objs, path) for uuid, objs in groups.items()]
        filesets.sort(key=lambda f: (f.start_offset, f.segment_id))
        dirs.append(RemotePartitionDir(p, name, h.location(path), tuple(filesets), tuple(rejected)))
    root_location = h.location(root.rstrip("/") if len(root) > 1 else root)
    if key_prefix and not dirs:
        raise LogDirError("remote storage root not found", path=root_location,
                          expected=f"a directory, or a key prefix {key_prefix!r} in {h.location(base)} that "
                                   f"starts the objects' keys (<key.prefix><topic>-<topicId>/<partition>/)",
                          found="neither", code="REMOTE_STORAGE_NOT_FOUND")

    def expected_log(partition: TopicIdPartition, m: RemoteLogSegmentMetadata) -> str:
        main = key_prefix + aiven_main_path(partition, m.start_offset, m.segment_id)
        return h.location(h.join(base, main + LOG_SUFFIX))

    return RemoteStorage(root_location, tuple(dirs), (), view, expected_log=expected_log)
