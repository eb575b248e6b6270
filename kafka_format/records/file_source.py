"""Positioned reads of a ``.log`` file for the chunked walk (``FileRecords``' channel reads).

A source is a path, a Python binary file, a ``pyarrow`` ``NativeFile`` or an in-memory buffer.
Chunks of a local path are read-only ``mmap`` windows (no copy), except for the newest segment of
its directory (a live broker's active segment, which it may truncate under the reader); other
sources are read into one reused buffer.  Used by :mod:`kafka_format.records.walker` and
:mod:`kafka_format.records.file_records`.
"""

from __future__ import annotations

import mmap
import os
import re
import stat
from typing import IO, Any

__all__ = ["FileSource"]

# Chunk reads of local files map the file (no copy); below this size a plain read is cheaper.
_USE_MMAP = os.environ.get("KAFKA_FORMAT_MMAP", "1") != "0"  # 0: never map (files truncated while read)
_MIN_WINDOW = 1 << 20
_SEGMENT_LOG = re.compile(r"\d{20}\.log")
_newest_segment: dict[str, tuple[int, str]] = {}   # partition dir -> (dir mtime_ns, newest .log name)
# No MAP_POPULATE: the faults of the first access map 16 pages each (fault-around), which costs
# ~10 % less than populating a window whose page cache is in 4 KiB folios, and the same where it
# is in large folios (ARCHITECTURE.md, "Chunk size and mapping").
_MAP_FLAGS = mmap.MAP_SHARED
# Chunks of other sources are read into one reused buffer up to this size (larger: fresh bytes).
_REUSE_LIMIT = 64 << 20


def _may_be_active_segment(path: str) -> bool:
    """True when ``path`` is the newest ``<20 digits>.log`` of its directory: a live broker's active
    segment, the one file it truncates (follower truncation, recovery).  A mapped page past a new
    end of file faults with SIGBUS, which would kill the process, so such a file is read, not
    mapped.  The directory listing is cached by the directory's mtime (adding or removing a
    segment changes it)."""
    directory, name = os.path.split(os.path.abspath(path))
    if not _SEGMENT_LOG.fullmatch(name):
        return False
    try:
        mtime = os.stat(directory).st_mtime_ns
        hit = _newest_segment.get(directory)
        if hit is None or hit[0] != mtime:
            newest = max((e for e in os.listdir(directory) if _SEGMENT_LOG.fullmatch(e)), default=name)
            if len(_newest_segment) > 4096:
                _newest_segment.clear()
            hit = _newest_segment[directory] = (mtime, newest)
    except OSError:
        return True
    return name >= hit[1]


class FileSource:
    """Positioned reads from a path, a Python binary file, a NativeFile or a buffer.

    :meth:`read_at` returns bytes the caller may keep.  :meth:`read_chunk` (the walker's
    chunks) returns a view that is only valid until the next :meth:`read_chunk` call: a
    read-only ``mmap`` window of a local path (the OS pages it; no copy, no fresh pages),
    else a reused buffer filled with ``readinto``.  Decoded outputs never reference it
    (both decoders copy record bytes into their own column buffers).
    """

    def __init__(self, source: str | os.PathLike[str] | IO[bytes] | Any) -> None:
        self._owned = False
        self._view: memoryview | None = None
        self._mappable = False
        self._reuse: bytearray | None = None
        if isinstance(source, (bytes, bytearray, memoryview)):
            self._view = memoryview(source).cast("B")
            self.size = len(self._view)
            self.path: str | None = None
            return
        if isinstance(source, (str, os.PathLike)):
            self.path = os.fspath(source)
            self._file: Any = open(self.path, "rb")  # noqa: SIM115 - closed by close()
            self._owned = True
            st = os.fstat(self._file.fileno())
            self.size = st.st_size
            self._mappable = _USE_MMAP and stat.S_ISREG(st.st_mode) and not _may_be_active_segment(self.path)
            return
        self._file = source
        name = getattr(source, "name", None)
        self.path = name if isinstance(name, str) else None
        size = getattr(source, "size", None)
        if callable(size):  # pyarrow NativeFile
            self.size = int(size())
        else:
            here = source.tell()
            self.size = source.seek(0, os.SEEK_END)
            source.seek(here)

    def read_at(self, pos: int, n: int) -> bytes | memoryview:
        """Up to ``n`` bytes at ``pos`` (fewer only at end of file)."""
        n = max(0, min(n, self.size - pos))
        if self._view is not None:
            return self._view[pos:pos + n]
        self._file.seek(pos)
        parts = []
        got = 0
        while got < n:
            data = self._file.read(n - got)
            if not data:
                break
            parts.append(data)
            got += len(data)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def read_chunk(self, pos: int, n: int) -> bytes | memoryview:
        """Up to ``n`` bytes at ``pos``, valid until the next call (see the class doc)."""
        n = max(0, min(n, self.size - pos))
        if self._view is not None or n < _MIN_WINDOW:
            return self.read_at(pos, n)
        if self._mappable:
            window = self._map(pos, n)
            if window is not None:
                return window
        readinto = getattr(self._file, "readinto", None)
        if readinto is None or n > _REUSE_LIMIT:
            return self.read_at(pos, n)
        if self._reuse is None or len(self._reuse) < n:
            self._reuse = bytearray(n)
        view = memoryview(self._reuse)[:n]
        self._file.seek(pos)
        got = 0
        while got < n:
            k = readinto(view[got:])
            if not k:
                break
            got += k
        return view[:got]

    def _map(self, pos: int, n: int) -> memoryview | None:
        """A read-only mapping of ``[pos, pos + n)``; None (reads instead) if it cannot be made."""
        # A file shrunk since it was opened would fault on access (SIGBUS): check before mapping.
        try:
            if os.fstat(self._file.fileno()).st_size < pos + n:
                self._mappable = False
                return None
            lead = pos % mmap.ALLOCATIONGRANULARITY
            window = mmap.mmap(self._file.fileno(), lead + n, flags=_MAP_FLAGS, prot=mmap.PROT_READ,
                               offset=pos - lead)
        except (OSError, ValueError, OverflowError):
            self._mappable = False
            return None
        return memoryview(window)[lead:lead + n]  # unmapped when the last view of it is gone

    def close(self) -> None:
        self._reuse = None
        if self._owned:
            self._file.close()

