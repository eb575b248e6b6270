"""One face over local paths, ``file://``, every ``pyarrow.fs`` URI (s3://, gs://, hdfs://) and
Hadoop's ``s3a://`` (opened as S3A would be: :mod:`kafka_format.storage.s3a`).

Everything that touches a log dir's files goes through :class:`FileSystemHandle`, so the same
code reads a broker's disk, a backup in object storage or an in-memory test filesystem.

Locations are plain strings a user can read and re-open: a local absolute path, or a URI whose
scheme prefix (``s3://``) is kept in front of the filesystem path.  ``aiven-rsm:<location>`` names a segment
file inside Aiven's objects at ``<location>`` (:mod:`kafka_format.storage.aiven_tier`).  :func:`resolve` turns a
location back into a ``(handle, fs_path)`` pair, so frozen, picklable values (segments, splits)
carry only strings.

I/O failures (missing file, permission, network) surface as :class:`LogDirError` with
``code="IO_ERROR"`` and the location in ``path``; nothing else escapes.

Credentials given inside a URI (``s3://KEY:SECRET@bucket/...``) open the filesystem and nothing
else: every place that shows or records a location (provenance columns, summaries, reports,
error messages, Spark job descriptions) passes it through :func:`redact`, which replaces the
secret by ``***``.  The real location stays only in the values that re-open files (segments,
splits).
"""

from __future__ import annotations

import os
import posixpath
import stat as stat_module
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs

from kafka_format.common.errors import LogDirError
from kafka_format.common.redaction import REDACTED, redact
from kafka_format.storage import s3a

__all__ = [
    "IO_ERROR",
    "REDACTED",
    "DirRow",
    "FileStat",
    "FileSystemHandle",
    "aiven_view",
    "forget_run_memo",
    "listing_cache",
    "local_handle",
    "local_path",
    "open_input_file",
    "read_bytes",
    "redact",
    "resolve",
    "run_memo",
]

IO_ERROR = "IO_ERROR"

_LOCAL_PREFIXES = ("file://",)
#: :data:`kafka_format.storage.aiven_view.SCHEME_PREFIX`: the segment files of Aiven's objects
_AIVEN_VIEW = "aiven-rsm:"

@dataclass(frozen=True)
class FileStat:
    """What a directory listing tells about one entry (``mtime_ms`` None when unknown)."""

    name: str
    path: str  # filesystem path (inside the handle's filesystem)
    is_dir: bool
    size: int | None
    mtime_ms: int | None


#: One entry of a directory listing: name, is_dir, size (files), mtime_ms (None when unknown).
DirRow = tuple[str, bool, "int | None", "int | None"]


def _io_error(location: str, action: str, exc: BaseException) -> LogDirError:
    err = LogDirError(f"cannot {action}: {exc}", path=location, code=IO_ERROR)
    err.__cause__ = exc
    return err


@dataclass(frozen=True)
class FileSystemHandle:
    """A ``pyarrow.fs.FileSystem`` plus the prefix that makes its paths user-facing locations."""

    filesystem: pafs.FileSystem
    prefix: str = ""
    is_local: bool = field(default=False)
    query: str = ""  # URI options (``?endpoint_override=...``) kept so locations re-open the same store

    # -- naming ---------------------------------------------------------------------------------
    def location(self, fs_path: str) -> str:
        """User-facing location (local path or URI, with the original URI options) of ``fs_path``."""
        return self.prefix + fs_path + ("?" + self.query if self.query else "")

    def fs_path(self, location: str) -> str:
        """Inverse of :meth:`location`."""
        if self.query and location.endswith("?" + self.query):
            location = location[: -len(self.query) - 1]
        if self.prefix and location.startswith(self.prefix):
            return location[len(self.prefix):]
        return location

    @staticmethod
    def join(base: str, *names: str) -> str:
        """Join path components with '/' (pyarrow paths are always '/'-separated)."""
        if os.sep != "/" and "\\" in base:  # pragma: no cover - windows only
            return os.path.join(base, *names)
        return posixpath.join(base, *names)

    @staticmethod
    def basename(fs_path: str) -> str:
        return posixpath.basename(fs_path.rstrip("/"))

    @staticmethod
    def dirname(fs_path: str) -> str:
        return posixpath.dirname(fs_path.rstrip("/"))

    # -- metadata -------------------------------------------------------------------------------
    def stat(self, fs_path: str) -> FileStat | None:
        """Stat one path; None when it does not exist."""
        try:
            info = self.filesystem.get_file_info(fs_path)
        except (OSError, pa.ArrowException) as exc:
            raise _io_error(self.location(fs_path), "stat", exc) from exc
        return _to_stat(info)

    def _entries(self, fs_path: str) -> list[pafs.FileInfo]:
        """The filesystem's own listing of the entries directly inside ``fs_path`` ([] when it does
        not exist)."""
        try:
            return list(self.filesystem.get_file_info(
                pafs.FileSelector(fs_path, allow_not_found=True, recursive=False)))
        except (OSError, pa.ArrowException) as exc:
            raise _io_error(self.location(fs_path), "list directory", exc) from exc

    def list_dir(self, fs_path: str) -> list[FileStat]:
        """Entries directly inside ``fs_path`` sorted by name ([] when it does not exist)."""
        if self.is_local and type(self.filesystem) is pafs.LocalFileSystem:
            stats = _scan_local(fs_path)
            if stats is not None:
                return stats
        stats = [s for s in (_to_stat(i) for i in self._entries(fs_path)) if s is not None]
        stats.sort(key=lambda s: s.name)
        return stats

    def list_dir_rows(self, fs_path: str) -> tuple[str, list[DirRow]] | None:
        """The listing of :meth:`list_dir` as plain rows ``(name, is_dir, size, mtime_ms)`` sorted by
        name, and the prefix that makes a name its filesystem path (``prefix + name``): the cheap
        form for directories of many files.  None when this filesystem's paths are not
        ``prefix + name`` (the caller then uses :meth:`list_dir`)."""
        if self.is_local and type(self.filesystem) is pafs.LocalFileSystem:
            listed = _scan_local_rows(fs_path)
            if listed is not None:
                return listed
        return _rows_of(fs_path, self._entries(fs_path))

    def list_tree_rows(self, fs_path: str) -> dict[str, tuple[str, list[DirRow]]] | None:
        """Every directory directly inside ``fs_path`` with its listing (as :meth:`list_dir_rows`),
        from one recursive listing: one request to an object store (paged by the store) for a
        whole log dir instead of one per partition.  None on a local filesystem (a listing per directory is as
        cheap there) or when paths are not ``prefix + name``."""
        if self.is_local:
            return None
        try:
            infos = self.filesystem.get_file_info(pafs.FileSelector(fs_path, allow_not_found=True, recursive=True))
        except (OSError, pa.ArrowException) as exc:
            raise _io_error(self.location(fs_path), "list directory", exc) from exc
        base = fs_path.rstrip("/")
        top = base + "/" if base else ""
        children: dict[str, list[pafs.FileInfo]] = {}
        for info in infos:
            path = info.path
            if not path.startswith(top):
                return None
            parts = path[len(top):].split("/")
            if len(parts) == 2:                       # an entry of a child directory
                children.setdefault(top + parts[0], []).append(info)
            elif len(parts) == 1 and info.type == _DIRECTORY:
                children.setdefault(path, [])
        out = {}
        for child, listing in children.items():
            rows = _rows_of(child, listing)
            if rows is None:
                return None
            out[child] = rows
        return out

    # -- reading --------------------------------------------------------------------------------
    def read_bytes(self, fs_path: str, *, max_bytes: int | None = None, code: str | None = None) -> bytes:
        """Whole content of a file; LogDirError if larger than ``max_bytes``."""
        try:
            with self.filesystem.open_input_file(fs_path) as f:
                size = f.size()
                if max_bytes is not None and size > max_bytes:
                    raise LogDirError("file too large to read whole", path=self.location(fs_path),
                                      expected=f"at most {max_bytes} bytes", found=f"{size} bytes",
                                      code=code or "FILE_TOO_LARGE")
                return f.read(size) if size else b""
        except (OSError, pa.ArrowException) as exc:
            raise _io_error(self.location(fs_path), "read file", exc) from exc

    def read_range(self, fs_path: str, start: int, length: int) -> bytes:
        """``length`` bytes from ``start`` (fewer at end of file)."""
        try:
            with self.filesystem.open_input_file(fs_path) as f:
                return f.read_at(length, start) if length > 0 else b""
        except (OSError, pa.ArrowException) as exc:
            raise _io_error(self.location(fs_path), "read file", exc) from exc

    def open_input_file(self, fs_path: str) -> pa.NativeFile:
        """Random-access file (seek/read_at); caller closes it."""
        try:
            return self.filesystem.open_input_file(fs_path)
        except (OSError, pa.ArrowException) as exc:
            raise _io_error(self.location(fs_path), "open file", exc) from exc

    def open_input_stream(self, fs_path: str) -> pa.NativeFile:
        """Sequential stream (cheaper on object stores); caller closes it."""
        try:
            return self.filesystem.open_input_stream(fs_path)
        except (OSError, pa.ArrowException) as exc:
            raise _io_error(self.location(fs_path), "open file", exc) from exc

    @contextmanager
    def opened(self, fs_path: str) -> Iterator[pa.NativeFile]:
        f = self.open_input_file(fs_path)
        try:
            yield f
        finally:
            f.close()


# --- one listing per run -------------------------------------------------------------------------
_RUN_MEMO: dict[tuple[Any, ...], Any] | None = None
_RUN_MEMO_THREAD = 0     # the thread that entered the block: only its reads are remembered


@contextmanager
def listing_cache() -> Iterator[None]:
    """Inside the block -- one job run, whose input directories do not change under it -- a local
    directory listed, or a log dir or partition read (:mod:`kafka_format.storage.logdir`), once is not
    listed or read again by the thread that entered it.  Nested blocks share the outermost one's
    memory, dropped when it ends."""
    global _RUN_MEMO, _RUN_MEMO_THREAD
    outer = _RUN_MEMO
    if outer is None:
        _RUN_MEMO, _RUN_MEMO_THREAD = {}, threading.get_ident()
    try:
        yield
    finally:
        if outer is None:
            _RUN_MEMO = None


def forget_run_memo() -> None:
    """Leave the :func:`listing_cache` block this process inherited (a pool worker forked inside a
    run): a worker's tasks each re-open their own partition, which a memo would keep for the rest
    of the run (20 KB a partition: 500 MB a worker over the 20,000 partitions of a large tree).
    The local engine's task threads do the same without it: the memo is the entering thread's."""
    global _RUN_MEMO
    _RUN_MEMO = None


def run_memo(key: tuple[Any, ...] | None, compute: Any) -> Any:
    """``compute()``, remembered under ``key`` (None: not remembered) inside :func:`listing_cache`
    in the thread that entered it (failures are not)."""
    memo = _RUN_MEMO
    if memo is None or key is None or threading.get_ident() != _RUN_MEMO_THREAD:
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]


_NOT_FOUND, _DIRECTORY, _FILE = pafs.FileType.NotFound, pafs.FileType.Directory, pafs.FileType.File


def _scan_local(fs_path: str) -> list[FileStat] | None:
    """``LocalFileSystem``'s listing through ``os.scandir`` (several times cheaper per entry at
    10^5 files), with its rules: symlinks followed, broken ones left out, paths joined with '/'
    to the path without its trailing '/', a missing directory empty.  None on any other error:
    the caller lists through pyarrow, which reports it."""
    base = fs_path.rstrip("/") or "/"
    prefix = base if base.endswith("/") else base + "/"
    out: list[FileStat] = []
    try:
        with os.scandir(fs_path) as entries:
            for e in entries:
                try:
                    st = e.stat()
                except FileNotFoundError:
                    continue  # a broken symlink: pyarrow leaves it out
                mode = st.st_mode
                is_file = stat_module.S_ISREG(mode)
                out.append(FileStat(e.name, prefix + e.name, stat_module.S_ISDIR(mode),
                                    st.st_size if is_file else None, st.st_mtime_ns // 1_000_000))
    except FileNotFoundError:
        return []
    except OSError:
        return None
    out.sort(key=lambda s: s.name)
    return out


def _scan_local_rows(fs_path: str) -> tuple[str, list[DirRow]] | None:
    """:func:`_scan_local` as plain rows (no object per entry)."""
    base = fs_path.rstrip("/") or "/"
    prefix = base if base.endswith("/") else base + "/"
    rows: list[DirRow] = []
    is_dir, is_reg = stat_module.S_ISDIR, stat_module.S_ISREG
    try:
        with os.scandir(fs_path) as entries:
            for e in entries:
                try:
                    st = e.stat()
                except FileNotFoundError:
                    continue  # a broken symlink: pyarrow leaves it out
                mode = st.st_mode
                rows.append((e.name, is_dir(mode), st.st_size if is_reg(mode) else None,
                             st.st_mtime_ns // 1_000_000))
    except FileNotFoundError:
        return prefix, []
    except OSError:
        return None
    rows.sort()
    return prefix, rows


def _rows_of(fs_path: str, infos: list[pafs.FileInfo]) -> tuple[str, list[DirRow]] | None:
    """Listing rows of ``infos`` (entries of ``fs_path``); None when a path is not prefix + name."""
    base = fs_path.rstrip("/")
    prefix = base + "/" if base else ""
    rows: list[DirRow] = []
    for info in infos:
        kind = info.type
        if kind == _NOT_FOUND:
            continue
        name = info.base_name
        if info.path != prefix + name:
            return None
        mtime = info.mtime_ns
        rows.append((name, kind == _DIRECTORY, info.size if kind == _FILE else None,
                     None if mtime is None else mtime // 1_000_000))
    rows.sort()
    return prefix, rows


def _to_stat(info: pafs.FileInfo) -> FileStat | None:
    kind = info.type  # one enum conversion per entry (listings of 10^5 files: it was most of the cost)
    if kind == _NOT_FOUND:
        return None
    mtime = info.mtime_ns
    return FileStat(info.base_name, info.path, kind == _DIRECTORY, info.size if kind == _FILE else None,
                    None if mtime is None else mtime // 1_000_000)


_LOCAL = FileSystemHandle(pafs.LocalFileSystem(), "", True)


def local_handle() -> FileSystemHandle:
    """The handle for the local filesystem (locations = absolute paths)."""
    return _LOCAL


def resolve(location: str | os.PathLike[str], filesystem: pafs.FileSystem | FileSystemHandle | None = None
            ) -> tuple[FileSystemHandle, str]:
    """Split a location into (filesystem handle, path inside it).

    ``filesystem`` given: ``location`` is a path inside it (a user-supplied handle keeps its
    prefix).  Otherwise a string with ``scheme://`` is opened with ``pyarrow.fs.FileSystem.from_uri``
    (``file://`` becomes a plain local path); anything else is a local path, made absolute.
    """
    if isinstance(filesystem, FileSystemHandle):
        return filesystem, filesystem.fs_path(os.fspath(location))
    if filesystem is not None:
        return FileSystemHandle(filesystem, ""), os.fspath(location)
    text = os.fspath(location) if isinstance(location, (PurePath, os.PathLike)) else location
    if not isinstance(text, str):
        raise LogDirError("location is not a path", found=repr(location), code=IO_ERROR)
    if text.startswith(_AIVEN_VIEW):
        inner, path = resolve(text[len(_AIVEN_VIEW):])
        return aiven_view(inner), path
    if "://" not in text:
        return _LOCAL, os.path.abspath(text)
    if text.startswith(_LOCAL_PREFIXES):
        try:
            _, path = pafs.FileSystem.from_uri(text)
        except (OSError, pa.ArrowException, ValueError) as exc:
            raise _io_error(text, "open URI", exc) from exc
        return _LOCAL, path
    if s3a.is_s3a(text):
        try:
            fs, path = s3a.filesystem(text)
        except (OSError, pa.ArrowException, ValueError) as exc:
            raise _io_error(text, "open URI", exc) from exc
        bare = text.rstrip("/")
        return FileSystemHandle(fs, bare[: len(bare) - len(path)]), path
    try:
        fs, path = pafs.FileSystem.from_uri(text)
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise _io_error(text, "open URI", exc) from exc
    bare, _, query = text.partition("?")
    bare = bare.rstrip("/")
    if path and bare.endswith(path.rstrip("/")):
        prefix = bare[: len(bare) - len(path.rstrip("/"))]
    else:
        prefix = text.split("://", 1)[0] + "://"
    return FileSystemHandle(fs, prefix, isinstance(fs, pafs.LocalFileSystem), query), path


def aiven_view(inner: FileSystemHandle) -> FileSystemHandle:
    """The handle of the segment files inside the Aiven objects of ``inner``
    (:mod:`kafka_format.storage.aiven_view`): locations ``aiven-rsm:`` + ``inner``'s."""
    from kafka_format.storage.aiven_view import view_filesystem

    return FileSystemHandle(view_filesystem(inner), _AIVEN_VIEW + inner.prefix, False, inner.query)


def read_bytes(location: str | os.PathLike[str], *, filesystem: Any = None,
               max_bytes: int | None = None) -> bytes:
    """Whole content of the file at ``location``."""
    handle, path = resolve(location, filesystem)
    return handle.read_bytes(path, max_bytes=max_bytes)


def open_input_file(location: str | os.PathLike[str], *, filesystem: Any = None) -> pa.NativeFile:
    """Random-access file at ``location`` (local path or any pyarrow.fs URI)."""
    handle, path = resolve(location, filesystem)
    return handle.open_input_file(path)


def local_path(target: str | os.PathLike[str]) -> str:
    """The local file-system path of ``target`` (a path or a ``file://`` URI).

    Raises ValueError for other URIs: they have no atomic rename.
    """
    text = os.fspath(target)
    parsed = urlparse(text)
    if parsed.scheme in ("", "file") or (len(parsed.scheme) == 1 and text[1:3] in (":\\", ":/")):
        return parsed.path if parsed.scheme == "file" else text
    raise ValueError(f"{text}: atomic publishing needs a local path or file:// URI "
                     f"(object stores have no atomic rename)")
