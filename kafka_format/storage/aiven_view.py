"""The segment files inside Aiven's ``RemoteStorageManager`` objects, as a read-only ``pyarrow`` filesystem.

A segment's three objects (:mod:`kafka_format.storage.aiven_rsm`) under main path ``<main>``
(``<main>.log``, ``<main>.indexes``, ``<main>.rsm-manifest``) hold the files the broker uploaded; this
view gives them under the names the broker's files had: ``<main>.log`` the segment de-chunked one
chunk at a time (decrypted, decompressed; the object itself when untransformed), ``<main>.index``,
``.timeindex``, ``.snapshot``, ``.leader_epoch_checkpoint`` and ``.txnindex`` the indexes cut out of
``<main>.indexes``.  :func:`kafka_format.storage.fsio.resolve` opens ``aiven-rsm:<location>`` through it
(:data:`SCHEME_PREFIX`), so every reader of segment files reads Aiven's segments, on the driver and in
workers; :mod:`kafka_format.storage.aiven_tier` finds the segments.

The store underneath is any object with :class:`InnerStore`'s methods (``fsio.FileSystemHandle``'s):
this module imports neither ``fsio`` nor the remote-tier modules, which import it.
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.fs as pafs

from kafka_format.common.errors import LogDirError
from kafka_format.storage.aiven_rsm import (
    INDEXES_SUFFIX,
    LOG_SUFFIX,
    MANIFEST_SUFFIX,
    MAX_CHUNK_BYTES,
    MAX_MANIFEST_BYTES,
    ChunkedSegmentFile,
    SegmentManifest,
    current_key_ring,
    detransform_chunk,
    parse_manifest,
)

__all__ = ["SCHEME_PREFIX", "VIEW_FILES", "AivenViewHandler", "InnerStore", "split_view_path", "view_filesystem"]

#: the location prefix of the view of an Aiven segment's files
SCHEME_PREFIX = "aiven-rsm:"
#: the view's files by suffix, and the manifest's index each one is (None: the de-chunked ``.log``)
VIEW_FILES: dict[str, str | None] = {
    LOG_SUFFIX: None,
    ".index": "offset",
    ".timeindex": "timestamp",
    ".txnindex": "transaction",
    ".leader_epoch_checkpoint": "leaderEpoch",
    ".snapshot": "producerSnapshot",
}
_MANIFEST_CACHE_SIZE = 1024


class InnerStore(Protocol):
    """What the view needs of the store under it (``fsio.FileSystemHandle`` has it)."""

    @property
    def filesystem(self) -> pafs.FileSystem: ...

    @property
    def prefix(self) -> str: ...

    @property
    def query(self) -> str: ...

    def location(self, fs_path: str) -> str: ...

    def stat(self, fs_path: str) -> Any: ...

    def list_dir(self, fs_path: str) -> list[Any]: ...

    def read_bytes(self, fs_path: str, *, max_bytes: int | None = None, code: str | None = None) -> bytes: ...

    def read_range(self, fs_path: str, start: int, length: int) -> bytes: ...

    def open_input_file(self, fs_path: str) -> pa.NativeFile: ...


def split_view_path(fs_path: str) -> tuple[str, str] | None:
    """(main path, suffix) of a path of the view (None: no file of the view)."""
    dot = fs_path.rfind(".")
    if dot < 0 or "/" in fs_path[dot:] or fs_path[dot:] not in VIEW_FILES:
        return None
    return fs_path[:dot], fs_path[dot:]


class AivenViewHandler(pafs.FileSystemHandler):
    """A read-only ``pyarrow`` filesystem of the segment files Aiven's objects in ``inner`` hold:
    ``<main>.log`` de-chunked (:class:`~kafka_format.storage.aiven_rsm.ChunkedSegmentFile`, or the
    object itself when untransformed), ``<main>.index`` and the other index types cut out of
    ``<main>.indexes``.  Manifests read are kept (the last :data:`_MANIFEST_CACHE_SIZE`)."""

    def __init__(self, inner: InnerStore) -> None:
        self.inner = inner
        self._lock = threading.Lock()
        self._manifests: OrderedDict[str, SegmentManifest] = OrderedDict()

    # -- manifests and keys -----------------------------------------------------------------------
    def manifest(self, main: str) -> SegmentManifest:
        """The manifest of the segment at main path ``main`` (read once)."""
        return self._entry(main)

    def _entry(self, main: str) -> SegmentManifest:
        with self._lock:
            hit = self._manifests.get(main)
            if hit is not None:
                self._manifests.move_to_end(main)
                return hit
        path = main + MANIFEST_SUFFIX
        raw = self.inner.read_bytes(path, max_bytes=MAX_MANIFEST_BYTES, code="AIVEN_MANIFEST_INVALID")
        manifest = parse_manifest(raw, self.inner.location(path))
        with self._lock:
            self._manifests[main] = manifest
            while len(self._manifests) > _MANIFEST_CACHE_SIZE:
                self._manifests.popitem(last=False)
        return manifest

    def data_key(self, main: str) -> bytes | None:
        """The segment's AES data key (None when not encrypted), decrypted with the keys given
        (:func:`~kafka_format.storage.aiven_rsm.use_keys`; the key ring keeps the keys it opened)."""
        manifest = self._entry(main)
        if manifest.encryption is None:
            return None
        return current_key_ring().data_key(manifest.encryption, self.inner.location(main + MANIFEST_SUFFIX))

    # -- files ----------------------------------------------------------------------------------
    def view_size(self, main: str, suffix: str) -> int | None:
        """The size of the view's file (None: the segment has no such file)."""
        manifest = self.manifest(main)
        index = VIEW_FILES[suffix]
        if index is None:
            return manifest.chunk_index.original_file_size
        return manifest.index_size(index)

    def index_bytes(self, main: str, suffix: str) -> bytes:
        """One index's original bytes, out of the ``.indexes`` object."""
        manifest = self.manifest(main)
        name = VIEW_FILES[suffix]
        assert name is not None
        r = manifest.indexes.get(name)
        location = self.inner.location(main + INDEXES_SUFFIX)
        if r is None:
            raise LogDirError(f"the segment has no {name} index", path=location, code="IO_ERROR")
        if r.size == 0:
            return b""
        if r.size > MAX_CHUNK_BYTES:
            raise LogDirError(f"{name} index too large to read", path=location, position=r.position,
                              expected=f"at most {MAX_CHUNK_BYTES} bytes", found=f"{r.size} bytes",
                              code="AIVEN_CHUNK_INVALID")
        raw = self.inner.read_range(main + INDEXES_SUFFIX, r.position, r.size)
        if len(raw) != r.size:
            raise LogDirError(f"the {name} index is truncated", path=location, position=r.position,
                              expected=f"{r.size} bytes (manifest's segmentIndexes.{name})",
                              found=f"{len(raw)} bytes", code="AIVEN_CHUNK_INVALID")
        enc = manifest.encryption
        size = manifest.index_size(name)
        assert size is not None
        return detransform_chunk(raw, compression=False, data_key=self.data_key(main),
                                 aad=enc.aad if enc is not None else b"", original_size=size,
                                 location=location, position=r.position, what=f"{name} index")

    def open_view(self, fs_path: str) -> pa.NativeFile:
        """The view's file at ``fs_path``, open for positioned reads."""
        split = split_view_path(fs_path)
        if split is None:
            raise FileNotFoundError(f"{fs_path}: no segment file of an Aiven segment")
        main, suffix = split
        if suffix != LOG_SUFFIX:
            # a file's semantics (a read past the end is short), not BufferReader's (it raises)
            return pa.PythonFile(io.BytesIO(self.index_bytes(main, suffix)), mode="r")
        manifest = self.manifest(main)
        log = main + LOG_SUFFIX
        if not manifest.transformed:
            return self.inner.open_input_file(log)     # the object is the segment byte for byte
        st = self.inner.stat(log)
        if st is None:
            raise FileNotFoundError(f"{self.inner.location(log)}: no such object")
        reader = ChunkedSegmentFile(manifest, lambda pos, n: self.inner.read_range(log, pos, n),
                                    location=self.inner.location(log), object_size=st.size,
                                    data_key=self.data_key(main))
        return pa.PythonFile(reader, mode="r")

    # -- pyarrow.fs.FileSystemHandler -----------------------------------------------------------
    def get_type_name(self) -> str:
        return "aiven-rsm"

    def equals(self, other: object) -> bool:
        return isinstance(other, AivenViewHandler) and other.inner == self.inner

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        out = []
        for path in paths:
            split = split_view_path(path)
            size = None
            if split is not None and self.inner.stat(split[0] + MANIFEST_SUFFIX) is not None:
                size = self.view_size(*split)
            if size is None:
                st = self.inner.stat(path)
                kind = pafs.FileType.Directory if st is not None and st.is_dir else pafs.FileType.NotFound
                out.append(pafs.FileInfo(path, kind))
            else:
                out.append(pafs.FileInfo(path, pafs.FileType.File, size=size))
        return out

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        base = selector.base_dir.rstrip("/")
        out = []
        for s in self.inner.list_dir(base):
            if s.is_dir:
                out.append(pafs.FileInfo(s.path, pafs.FileType.Directory))
            elif s.name.endswith(MANIFEST_SUFFIX):
                main = s.path[: -len(MANIFEST_SUFFIX)]
                for suffix in VIEW_FILES:
                    size = self.view_size(main, suffix)
                    if size is not None:
                        out.append(pafs.FileInfo(main + suffix, pafs.FileType.File, size=size))
        return out

    def open_input_file(self, path: str) -> pa.NativeFile:
        return self.open_view(path)

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self.open_view(path)

    def _read_only(self, *_args: object, **_kwargs: object) -> None:
        raise OSError("the view of Aiven's objects is read-only")

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _read_only
    move = copy_file = open_output_stream = open_append_stream = _read_only


_VIEWS: OrderedDict[tuple[object, ...], pafs.PyFileSystem] = OrderedDict()
_VIEWS_LOCK = threading.Lock()
_VIEWS_KEPT = 64


def view_filesystem(inner: InnerStore) -> pafs.PyFileSystem:
    """The view over ``inner``: one per store in the process (a URI's scheme, credentials and options;
    an unnamed filesystem by identity), so that a manifest is read once however often its locations
    are resolved (the last :data:`_VIEWS_KEPT` stores)."""
    key: tuple[object, ...] = ((inner.filesystem.type_name, inner.prefix, inner.query) if inner.prefix
                               else ("id", id(inner.filesystem)))
    with _VIEWS_LOCK:
        hit = _VIEWS.get(key)
        if hit is not None:
            _VIEWS.move_to_end(key)
            return hit
        fs = pafs.PyFileSystem(AivenViewHandler(inner))
        _VIEWS[key] = fs
        while len(_VIEWS) > _VIEWS_KEPT:
            _VIEWS.popitem(last=False)
        return fs
