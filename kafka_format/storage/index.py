"""Offset index (``NNN.index``) and time index (``NNN.timeindex``) files.

Layouts (big-endian, no header, no padding):

``.index`` entry, 8 bytes (storage/.../log/OffsetIndex.java)::

    relative_offset int32   absolute offset - segment base offset (= last offset of the batch)
    position        int32   byte position of a batch start in the .log

``.timeindex`` entry, 12 bytes (storage/.../log/TimeIndex.java)::

    timestamp       int64   largest timestamp seen in the segment up to that offset (ms)
    relative_offset int32   offset (relative) of the batch that first carried it

The broker (``AbstractIndex``) takes every full slot of the file as an entry
(``entries = length / entrySize``) and relies on recovery after a crash; preallocated indexes
of an active segment end in zero slots.  This module keeps the raw slots (for the broker's
``sanityCheck`` and for kafka-dump-log parity) and applies the tool's **reading rule** on top:

* offset index: the first real entry has relative offset > 0 and position > 0; entries are
  strictly increasing in offset and in position.  An entry at i > 0 with relative offset 0
  (``offset == baseOffset && i > 0``, the DumpLogSegments rule) ends the data (zero tail); an
  all-zero entry 0 means the index is empty.  Any other violation ends the data too and is
  flagged as an :class:`IndexAnomaly`.
* time index: timestamps strictly increasing and >= 0, relative offsets non-decreasing and
  >= 0; same zero-tail rule.

Whole files are parsed with numpy views of the bytes (no per-entry Python); lookups are
``numpy.searchsorted`` over the valid entries.  :class:`IndexFileReader` looks up a big index
file reading O(log n) entries only.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, BinaryIO, ClassVar, NamedTuple

import numpy as np

from kafka_format.common.errors import IndexFormatError, KafkaFormatError
from kafka_format.common.limits import INT32_MAX
from kafka_format.records.record_batch import NO_TIMESTAMP  # re-exported (__all__): the time index's "none"
from kafka_format.storage import fsio

__all__ = [
    "MAX_INDEX_FILE_BYTES",
    "NO_TIMESTAMP",
    "OFFSET_DTYPE",
    "OFFSET_ENTRY",
    "OFFSET_ENTRY_SIZE",
    "TIME_DTYPE",
    "TIME_ENTRY",
    "TIME_ENTRY_SIZE",
    "IndexAnomaly",
    "IndexFileReader",
    "OffsetIndex",
    "OffsetPosition",
    "SanityCheckResult",
    "TimeIndex",
    "TimestampOffset",
    "base_offset_from_name",
    "offset_index_sanity_check",
    "parse_offset_index",
    "parse_time_index",
    "read_offset_index",
    "read_time_index",
    "time_index_sanity_check",
]

# OffsetIndex.java: ENTRY_SIZE = 8, relativeOffset(n) = getInt(n*8), physical(n) = getInt(n*8 + 4)
OFFSET_ENTRY = struct.Struct(
    ">"
    "i"  # relative offset
    "i"  # physical position in the .log
)
# TimeIndex.java: ENTRY_SIZE = 12, timestamp(n) = getLong(n*12), relativeOffset(n) = getInt(n*12 + 8)
TIME_ENTRY = struct.Struct(
    ">"
    "q"  # timestamp (ms)
    "i"  # relative offset
)
OFFSET_ENTRY_SIZE = OFFSET_ENTRY.size
TIME_ENTRY_SIZE = TIME_ENTRY.size

# numpy twins of the two structs, for whole-file views
OFFSET_DTYPE = np.dtype([("relative_offset", ">i4"), ("position", ">i4")])
TIME_DTYPE = np.dtype([("timestamp", ">i8"), ("relative_offset", ">i4")])
assert OFFSET_DTYPE.itemsize == OFFSET_ENTRY_SIZE and TIME_DTYPE.itemsize == TIME_ENTRY_SIZE

# segment.index.bytes is an int: no real index is larger than Int.MAX bytes
MAX_INDEX_FILE_BYTES = INT32_MAX

_READ_CHUNK = 1 << 20
_WARM_BYTES = 8192  # AbstractIndex.warmEntries() = 8192 / entrySize


class OffsetPosition(NamedTuple):
    """An offset-index answer: absolute offset and .log byte position (OffsetPosition.java)."""

    offset: int
    position: int


class TimestampOffset(NamedTuple):
    """A time-index answer: timestamp and absolute offset (TimestampOffset.java)."""

    timestamp: int
    offset: int


@dataclass(frozen=True)
class IndexAnomaly:
    """Something the reading rule flagged: ``position`` is the byte offset of the entry in the file."""

    position: int
    entry: int
    what: str
    expected: str
    found: str


@dataclass(frozen=True)
class SanityCheckResult:
    """Outcome of the broker's ``sanityCheck``: ``message`` is Kafka's CorruptIndexException text."""

    ok: bool
    message: str | None = None

    def __bool__(self) -> bool:
        return self.ok


def base_offset_from_name(name: str) -> int:
    """Base offset of a segment file name: the text before the first '.' (``offsetFromFileName``)."""
    stem = os.path.basename(name).split(".", 1)[0]
    if not stem.isascii() or not stem.isdigit() or int(stem) > (1 << 63) - 1:
        raise IndexFormatError("file name does not start with a base offset", path=name,
                               expected="20-digit offset prefix", found=repr(stem))
    return int(stem)


def _broker_slot(keys: np.ndarray, target: int, entry_size: int) -> int:
    """``AbstractIndex.indexSlotRangeFor(..., LARGEST_LOWER_BOUND)`` over every raw slot: the broker's
    binary search with its warm section (last ``8192 / entrySize`` entries); -1 when none."""
    entries = int(keys.shape[0])
    if entries == 0:
        return -1
    warm = _WARM_BYTES // entry_size
    first_hot = max(0, entries - 1 - warm)

    def search(lo: int, hi: int) -> int:
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = int(keys[mid])
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return mid
        return lo

    if int(keys[first_hot]) < target:
        return search(first_hot, entries - 1)
    if int(keys[0]) > target:
        return -1
    return search(0, first_hot)


def _entry_anomaly(entry_size: int, i: int, what: str, expected: str, found: str) -> IndexAnomaly:
    return IndexAnomaly(position=i * entry_size, entry=i, what=what, expected=expected, found=found)


def _tail_is_zero(raw: np.ndarray, start: int) -> bool:
    tail = raw[start:]
    return not tail.view(np.uint8).any() if tail.size else True


def _zero_tail_note(kind: str, raw: np.ndarray, cut: int, entry_size: int) -> list[IndexAnomaly]:
    """A cut at a zero entry is normal (preallocated file) unless bytes after it are not zero."""
    if _tail_is_zero(raw, cut):
        return []
    first_nonzero = cut + int(np.flatnonzero(raw[cut:].view(np.uint8).reshape(-1, entry_size).any(axis=1))[0])
    return [_entry_anomaly(entry_size, first_nonzero, "data_after_zero_tail",
                           f"zero bytes after the end of {kind} data (entry {cut})",
                           "non-zero entry")]


@dataclass(frozen=True, eq=False)
class _IndexFile:
    """What a parsed ``.index`` and a parsed ``.timeindex`` share: the raw slots as the broker sees
    them and the valid prefix by the reading rule.

    ``raw`` is a numpy structured view (big-endian fields of the file's layout) of every full slot;
    ``valid_entries`` how many leading slots pass the reading rule.  ``zero_tail`` says the data
    ended at a zero slot (a preallocated, not trimmed file).
    """

    ENTRY_SIZE: ClassVar[int]

    base_offset: int
    raw: np.ndarray
    valid_entries: int
    file_size: int
    path: str | None = None
    zero_tail: bool = False
    anomalies: tuple[IndexAnomaly, ...] = ()

    @property
    def raw_entries(self) -> int:
        """``AbstractIndex.entries()`` on open: every full slot."""
        return int(self.raw.shape[0])

    @property
    def trailing_bytes(self) -> int:
        """Bytes after the last full slot (a file that ends inside a slot)."""
        return self.file_size % self.ENTRY_SIZE

    @cached_property
    def relative_offsets(self) -> np.ndarray:
        """int32 relative offsets of the valid entries (native byte order)."""
        return self.raw["relative_offset"][: self.valid_entries].astype(np.int32)

    @cached_property
    def offsets(self) -> np.ndarray:
        """int64 absolute offsets of the valid entries."""
        return self.relative_offsets.astype(np.int64) + np.int64(self.base_offset)

    def __len__(self) -> int:
        return self.valid_entries


@dataclass(frozen=True, eq=False)
class OffsetIndex(_IndexFile):
    """A parsed ``.index`` (``relative_offset``, ``position`` slots; see :class:`_IndexFile`)."""

    ENTRY_SIZE: ClassVar[int] = OFFSET_ENTRY_SIZE

    @cached_property
    def positions(self) -> np.ndarray:
        """int64 .log positions of the valid entries."""
        return self.raw["position"][: self.valid_entries].astype(np.int64)

    def entry(self, n: int) -> OffsetPosition:
        """The n-th valid entry."""
        if not 0 <= n < self.valid_entries:
            raise IndexError(f"entry {n} out of range for {self.valid_entries} entries")
        return OffsetPosition(int(self.offsets[n]), int(self.positions[n]))

    def last_entry(self) -> OffsetPosition:
        """Last valid entry, ``(baseOffset, 0)`` if none (``OffsetIndex.lastEntry``)."""
        if self.valid_entries == 0:
            return OffsetPosition(self.base_offset, 0)
        return self.entry(self.valid_entries - 1)

    def lookup(self, target_offset: int) -> OffsetPosition:
        """Greatest entry with offset <= target, else ``(baseOffset, 0)`` (``OffsetIndex.lookup``)."""
        i = int(np.searchsorted(self.offsets, target_offset, side="right")) - 1
        if i < 0:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(int(self.offsets[i]), int(self.positions[i]))

    def broker_lookup(self, target_offset: int) -> OffsetPosition:
        """What the broker's ``OffsetIndex.lookup`` answers over all raw slots (zero tail included);
        equals :meth:`lookup` on a clean index."""
        keys = self.raw["relative_offset"].astype(np.int64) + np.int64(self.base_offset)
        slot = _broker_slot(keys, target_offset, OFFSET_ENTRY_SIZE)
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(int(keys[slot]), int(self.raw["position"][slot]))

    def dump_entries(self) -> list[OffsetPosition]:
        """Entries kafka-dump-log visits: raw slots until ``offset == baseOffset && i > 0``."""
        rel = self.raw["relative_offset"].astype(np.int64)
        stop = np.flatnonzero(rel[1:] == 0)
        n = int(stop[0]) + 1 if stop.size else self.raw_entries
        pos = self.raw["position"][:n].astype(np.int64).tolist()
        return [OffsetPosition(self.base_offset + r, p) for r, p in zip(rel[:n].tolist(), pos, strict=True)]

    def fetch_upper_bound_offset(self, position: int) -> OffsetPosition | None:
        """Smallest entry with position >= ``position`` (``fetchUpperBoundOffset``), None if none."""
        i = int(np.searchsorted(self.positions, position, side="left"))
        if i >= self.valid_entries:
            return None
        return self.entry(i)

    def sanity_check(self) -> SanityCheckResult:
        return offset_index_sanity_check(self)


@dataclass(frozen=True, eq=False)
class TimeIndex(_IndexFile):
    """A parsed ``.timeindex`` (``timestamp``, ``relative_offset`` slots; see :class:`_IndexFile`)."""

    ENTRY_SIZE: ClassVar[int] = TIME_ENTRY_SIZE

    @cached_property
    def timestamps(self) -> np.ndarray:
        """int64 timestamps of the valid entries."""
        return self.raw["timestamp"][: self.valid_entries].astype(np.int64)

    def entry(self, n: int) -> TimestampOffset:
        if not 0 <= n < self.valid_entries:
            raise IndexError(f"entry {n} out of range for {self.valid_entries} entries")
        return TimestampOffset(int(self.timestamps[n]), int(self.offsets[n]))

    def last_entry(self) -> TimestampOffset:
        """Last valid entry, ``(-1, baseOffset)`` if none: the segment's max timestamp when closed."""
        if self.valid_entries == 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(self.valid_entries - 1)

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """Greatest entry with timestamp <= target, else ``(-1, baseOffset)`` (``TimeIndex.lookup``)."""
        i = int(np.searchsorted(self.timestamps, target_timestamp, side="right")) - 1
        if i < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(int(self.timestamps[i]), int(self.offsets[i]))

    def broker_lookup(self, target_timestamp: int) -> TimestampOffset:
        """What the broker's ``TimeIndex.lookup`` answers over all raw slots; equals :meth:`lookup`
        on a clean index."""
        keys = self.raw["timestamp"].astype(np.int64)
        slot = _broker_slot(keys, target_timestamp, TIME_ENTRY_SIZE)
        if slot < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(int(keys[slot]), self.base_offset + int(self.raw["relative_offset"][slot]))

    def dump_entries(self) -> list[TimestampOffset]:
        """Entries kafka-dump-log visits: raw slots until ``offset == baseOffset && i > 0``."""
        rel = self.raw["relative_offset"].astype(np.int64)
        stop = np.flatnonzero(rel[1:] == 0)
        n = int(stop[0]) + 1 if stop.size else self.raw_entries
        ts = self.raw["timestamp"][:n].astype(np.int64).tolist()
        return [TimestampOffset(t, self.base_offset + r) for t, r in zip(ts, rel[:n].tolist(), strict=True)]

    def sanity_check(self) -> SanityCheckResult:
        return time_index_sanity_check(self)


def _as_buffer(data: bytes | bytearray | memoryview) -> memoryview:
    view = memoryview(data)
    if not view.c_contiguous:
        view = memoryview(view.tobytes())
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


def parse_offset_index(data: bytes | bytearray | memoryview, base_offset: int, *,
                       path: str | None = None, log_size: int | None = None) -> OffsetIndex:
    """Parse ``.index`` bytes; ``log_size`` (when known) also ends the data at a position past the log."""
    buf = _as_buffer(data)
    size = buf.nbytes
    n = size // OFFSET_ENTRY_SIZE
    raw = np.frombuffer(buf, dtype=OFFSET_DTYPE, count=n)
    anomalies: list[IndexAnomaly] = []
    if size % OFFSET_ENTRY_SIZE:
        anomalies.append(IndexAnomaly(position=n * OFFSET_ENTRY_SIZE, entry=n, what="partial_entry",
                                      expected=f"file length a multiple of {OFFSET_ENTRY_SIZE}",
                                      found=f"{size % OFFSET_ENTRY_SIZE} trailing bytes"))
    valid, zero_tail = _offset_valid_prefix(raw, base_offset, log_size, anomalies)
    return OffsetIndex(base_offset=base_offset, raw=raw, valid_entries=valid, file_size=size, path=path,
                       zero_tail=zero_tail, anomalies=tuple(anomalies))


def _offset_valid_prefix(raw: np.ndarray, base_offset: int, log_size: int | None,
                         anomalies: list[IndexAnomaly]) -> tuple[int, bool]:
    n = raw.shape[0]
    if n == 0:
        return 0, False
    rel = raw["relative_offset"].astype(np.int64)
    pos = raw["position"].astype(np.int64)
    if rel[0] == 0 and pos[0] == 0:
        anomalies.extend(_zero_tail_note("offset index", raw, 0, OFFSET_ENTRY_SIZE))
        return 0, True
    if rel[0] <= 0 or pos[0] <= 0:
        anomalies.append(_entry_anomaly(OFFSET_ENTRY_SIZE, 0, "bad_first_entry",
                                        "relative offset > 0 and position > 0",
                                        f"relative offset {rel[0]}, position {pos[0]}"))
        return 0, False
    # candidate stop points, first one wins
    zero = np.flatnonzero(rel[1:] == 0) + 1
    bad_off = np.flatnonzero(rel[1:] <= rel[:-1]) + 1
    bad_pos = np.flatnonzero(pos[1:] <= pos[:-1]) + 1
    past_log = np.flatnonzero(pos >= log_size) if log_size is not None else np.empty(0, np.int64)
    firsts = {
        "zero": int(zero[0]) if zero.size else n,
        "offset": int(bad_off[0]) if bad_off.size else n,
        "position": int(bad_pos[0]) if bad_pos.size else n,
        "past_log": int(past_log[0]) if past_log.size else n,
    }
    cut = min(firsts.values())
    if cut == n:
        return n, False
    if firsts["zero"] == cut:
        anomalies.extend(_zero_tail_note("offset index", raw, cut, OFFSET_ENTRY_SIZE))
        return cut, True
    i = cut
    if firsts["offset"] == cut:
        anomalies.append(_entry_anomaly(
            OFFSET_ENTRY_SIZE, i, "offset_not_increasing",
            f"offset > {base_offset + int(rel[i - 1])}", f"offset {base_offset + int(rel[i])}"))
    elif firsts["position"] == cut:
        prev = int(pos[i - 1]) if i else 0
        anomalies.append(_entry_anomaly(OFFSET_ENTRY_SIZE, i, "position_not_increasing",
                                        f"position > {prev}", f"position {int(pos[i])}"))
    else:
        anomalies.append(_entry_anomaly(OFFSET_ENTRY_SIZE, i, "position_past_log_end",
                                        f"position < log size {log_size}", f"position {int(pos[i])}"))
    return cut, False


def parse_time_index(data: bytes | bytearray | memoryview, base_offset: int, *,
                     path: str | None = None) -> TimeIndex:
    """Parse ``.timeindex`` bytes with the reading rule (module docstring)."""
    buf = _as_buffer(data)
    size = buf.nbytes
    n = size // TIME_ENTRY_SIZE
    raw = np.frombuffer(buf, dtype=TIME_DTYPE, count=n)
    anomalies: list[IndexAnomaly] = []
    if size % TIME_ENTRY_SIZE:
        anomalies.append(IndexAnomaly(position=n * TIME_ENTRY_SIZE, entry=n, what="partial_entry",
                                      expected=f"file length a multiple of {TIME_ENTRY_SIZE}",
                                      found=f"{size % TIME_ENTRY_SIZE} trailing bytes"))
    valid, zero_tail = _time_valid_prefix(raw, base_offset, anomalies)
    return TimeIndex(base_offset=base_offset, raw=raw, valid_entries=valid, file_size=size, path=path,
                     zero_tail=zero_tail, anomalies=tuple(anomalies))


def _time_valid_prefix(raw: np.ndarray, base_offset: int, anomalies: list[IndexAnomaly]) -> tuple[int, bool]:
    n = raw.shape[0]
    if n == 0:
        return 0, False
    ts = raw["timestamp"].astype(np.int64)
    rel = raw["relative_offset"].astype(np.int64)
    if ts[0] == 0 and rel[0] == 0:
        anomalies.extend(_zero_tail_note("time index", raw, 0, TIME_ENTRY_SIZE))
        return 0, True
    zero = np.flatnonzero(rel[1:] == 0) + 1
    bad_ts = np.flatnonzero(ts[1:] <= ts[:-1]) + 1
    bad_off = np.flatnonzero(rel[1:] < rel[:-1]) + 1
    neg = np.flatnonzero((ts < 0) | (rel < 0))
    firsts = {
        "zero": int(zero[0]) if zero.size else n,
        "timestamp": int(bad_ts[0]) if bad_ts.size else n,
        "offset": int(bad_off[0]) if bad_off.size else n,
        "negative": int(neg[0]) if neg.size else n,
    }
    cut = min(firsts.values())
    if cut == n:
        return n, False
    i = cut
    if firsts["negative"] == cut:
        anomalies.append(_entry_anomaly(TIME_ENTRY_SIZE, i, "negative_entry",
                                        "timestamp >= 0 and relative offset >= 0",
                                        f"timestamp {int(ts[i])}, relative offset {int(rel[i])}"))
        return cut, False
    if firsts["zero"] == cut:
        anomalies.extend(_zero_tail_note("time index", raw, cut, TIME_ENTRY_SIZE))
        return cut, True
    if firsts["timestamp"] == cut:
        anomalies.append(_entry_anomaly(TIME_ENTRY_SIZE, i, "timestamp_not_increasing",
                                        f"timestamp > {int(ts[i - 1])}", f"timestamp {int(ts[i])}"))
    else:
        anomalies.append(_entry_anomaly(
            TIME_ENTRY_SIZE, i, "offset_decreasing",
            f"offset >= {base_offset + int(rel[i - 1])}", f"offset {base_offset + int(rel[i])}"))
    return cut, False


# -- the broker's sanity checks (kafka-dump-log --index-sanity-check) --------------------------

def _abs_path(path: str | None) -> str:
    if path is None:
        return "<bytes>"
    return path if "://" in path else os.path.abspath(path)


def offset_index_sanity_check(index: OffsetIndex) -> SanityCheckResult:
    """``OffsetIndex.sanityCheck`` over the raw slots, with Kafka's exception message."""
    f = _abs_path(index.path)
    if index.raw_entries != 0:
        last = index.base_offset + int(index.raw["relative_offset"][-1])
        if last < index.base_offset:
            return SanityCheckResult(False, (
                f"Corrupt index found, index file {f} has non-zero size but the last offset is {last} "
                f"which is less than the base offset {index.base_offset}"))
    if index.file_size % OFFSET_ENTRY_SIZE != 0:
        return SanityCheckResult(False, (
            f"Index file {f} is corrupt, found {index.file_size} bytes which is neither positive nor "
            f"a multiple of {OFFSET_ENTRY_SIZE}"))
    return SanityCheckResult(True)


def time_index_sanity_check(index: TimeIndex) -> SanityCheckResult:
    """``TimeIndex.sanityCheck`` over the raw slots, with Kafka's exception message."""
    f = _abs_path(index.path)
    if index.raw_entries != 0:
        first_ts = int(index.raw["timestamp"][0])
        last_ts = int(index.raw["timestamp"][-1])
        last_off = index.base_offset + int(index.raw["relative_offset"][-1])
        if last_ts < first_ts:
            return SanityCheckResult(False, (
                f"Corrupt time index found, time index file ({f}) has non-zero size but the last "
                f"timestamp is {last_ts} which is less than the first timestamp {first_ts}"))
        if last_off < index.base_offset:
            return SanityCheckResult(False, (
                f"Corrupt time index found, time index file ({f}) has non-zero size but the last "
                f"offset is {last_off} which is less than the first offset {index.base_offset}"))
    if index.file_size % TIME_ENTRY_SIZE != 0:
        return SanityCheckResult(False, (
            f"Time index file {f} is corrupt, found {index.file_size} bytes which is neither positive "
            f"nor a multiple of {TIME_ENTRY_SIZE}"))
    return SanityCheckResult(True)


# -- reading files ------------------------------------------------------------------------------

def _read_source(source: Any, filesystem: Any, max_bytes: int) -> tuple[bytes, str | None, str | None]:
    """(bytes, location, file name) of a path/URI, a pyarrow NativeFile or a Python binary file."""
    if isinstance(source, (str, os.PathLike)):
        handle, fs_path = fsio.resolve(source, filesystem)
        try:
            data = handle.read_bytes(fs_path, max_bytes=max_bytes, code=IndexFormatError.code)
            return data, handle.location(fs_path), fs_path
        except KafkaFormatError as err:
            raise IndexFormatError(err.reason, path=err.path, expected=err.expected, found=err.found,
                                   code=err.code) from err
    name = getattr(source, "name", None) or getattr(source, "path", None)
    name = name if isinstance(name, str) else None
    try:
        if hasattr(source, "size") and hasattr(source, "read_at"):  # pyarrow NativeFile
            size = source.size()
            if size > max_bytes:
                raise IndexFormatError("index file too large", path=name, expected=f"<= {max_bytes} bytes",
                                       found=f"{size} bytes")
            return source.read_at(size, 0), name, name
        chunks: list[bytes] = []
        total = 0
        while True:  # bounded chunks: never ask the file object for max_bytes at once
            chunk = source.read(_READ_CHUNK)
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:
                raise IndexFormatError("index file too large", path=name, expected=f"<= {max_bytes} bytes",
                                       found="more")
            chunks.append(bytes(chunk))
    except OSError as exc:
        raise IndexFormatError(f"cannot read index: {exc}", path=name, code=fsio.IO_ERROR) from exc
    return b"".join(chunks), name, name


def _base_for(source: Any, base_offset: int | None, name: str | None) -> int:
    if base_offset is not None:
        return base_offset
    if name is None:
        raise IndexFormatError("base offset unknown: pass base_offset for unnamed sources")
    return base_offset_from_name(name)


def read_offset_index(source: str | os.PathLike[str] | BinaryIO | Any, base_offset: int | None = None, *,
                      filesystem: Any = None, log_size: int | None = None,
                      max_bytes: int = MAX_INDEX_FILE_BYTES) -> OffsetIndex:
    """Read and parse a ``.index`` (path, URI, Python or pyarrow file); base offset from the name if None."""
    data, location, name = _read_source(source, filesystem, max_bytes)
    return parse_offset_index(data, _base_for(source, base_offset, name), path=location, log_size=log_size)


def read_time_index(source: str | os.PathLike[str] | BinaryIO | Any, base_offset: int | None = None, *,
                    filesystem: Any = None, max_bytes: int = MAX_INDEX_FILE_BYTES) -> TimeIndex:
    """Read and parse a ``.timeindex`` (path, URI, Python or pyarrow file)."""
    data, location, name = _read_source(source, filesystem, max_bytes)
    return parse_time_index(data, _base_for(source, base_offset, name), path=location)


@dataclass
class IndexFileReader:
    """O(log n) lookups in an index file through a random-access file, reading single entries.

    ``kind`` is ``"offset"`` or ``"time"``.  The end of data is found by binary search for the
    first zero slot (valid when the file is a clean prefix + zero tail; :meth:`find_end` is
    exact for files produced by the broker, use the whole-file parsers for audits).
    """

    file: Any  # pyarrow NativeFile or Python binary file with seek/read
    base_offset: int
    kind: str = "offset"
    size: int | None = None
    reads: int = field(default=0, init=False)
    _end: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.kind not in ("offset", "time"):
            raise ValueError("kind must be 'offset' or 'time'")
        self._struct = OFFSET_ENTRY if self.kind == "offset" else TIME_ENTRY
        if self.size is None:
            if hasattr(self.file, "size") and callable(self.file.size):
                self.size = int(self.file.size())
            else:
                self.size = int(self.file.seek(0, os.SEEK_END))
        self.slots = self.size // self._struct.size

    def _read(self, i: int) -> tuple[int, int]:
        width = self._struct.size
        self.reads += 1
        if hasattr(self.file, "read_at"):
            data = self.file.read_at(width, i * width)
        else:
            self.file.seek(i * width)
            data = self.file.read(width)
        if len(data) != width:
            raise IndexFormatError("short read in index", position=i * width,
                                   expected=f"{width} bytes", found=f"{len(data)} bytes")
        a, b = self._struct.unpack(data)
        return (a, b)

    def _rel(self, entry: tuple[int, int]) -> int:
        return entry[0] if self.kind == "offset" else entry[1]

    def _key(self, entry: tuple[int, int]) -> int:
        return self.base_offset + entry[0] if self.kind == "offset" else entry[0]

    def find_end(self) -> int:
        """Number of entries before the zero tail."""
        if self._end is not None:
            return self._end
        if self.slots == 0 or self._read(0) == (0, 0):
            self._end = 0
            return 0
        lo, hi = 1, self.slots  # answer in [lo, hi]; slots >= lo... first i>0 with rel == 0
        while lo < hi:
            mid = (lo + hi) // 2
            if self._rel(self._read(mid)) == 0:
                hi = mid
            else:
                lo = mid + 1
        self._end = lo
        return lo

    def entry(self, n: int) -> OffsetPosition | TimestampOffset:
        e = self._read(n)
        if self.kind == "offset":
            return OffsetPosition(self.base_offset + e[0], e[1])
        return TimestampOffset(e[0], self.base_offset + e[1])

    def lookup(self, target: int) -> OffsetPosition | TimestampOffset:
        """Same answer as :meth:`OffsetIndex.lookup` / :meth:`TimeIndex.lookup` on a clean file."""
        end = self.find_end()
        lo, hi = 0, end - 1
        found = -1
        while lo <= hi:
            mid = (lo + hi) // 2
            if self._key(self._read(mid)) <= target:
                found = mid
                lo = mid + 1
            else:
                hi = mid - 1
        if found < 0:
            if self.kind == "offset":
                return OffsetPosition(self.base_offset, 0)
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(found)
