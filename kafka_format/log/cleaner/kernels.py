"""The cleaner's per-record work, one call per decoded chunk: key digests, the offset map, v2 record
encoding.

The compiled kernels (``_kernels.c``: MD5 written from RFC 1321, Kafka's ``SkimpyOffsetMap``,
``DefaultRecord.writeTo``) are used when the extension was built; otherwise the plain-Python twins
below give the same results (``hashlib``, a dict of digests, :func:`kafka_format.writer.batches.encode_record`).
``KAFKA_FORMAT_DECODER=reference`` selects the twins too (:func:`kafka_format.common.extensions.compiled`
answers None), so the whole reference path stays compiled-code free.  Keys are Arrow-style columns of :class:`kafka_format.records.columns.RecordColumns`
(``key_offsets`` int32[n+1], ``key_data`` uint8) and ``rows`` int64 picks records, in order.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from kafka_format.common.extensions import compiled
from kafka_format.records.columns import RecordColumns

if TYPE_CHECKING:
    import kafka_format.log.cleaner._kernels as _native
else:  # None without a C compiler or with the reference forced
    _native = compiled("kafka_format.log.cleaner._kernels")

__all__ = ["COMPILED", "OffsetMap", "digest_keys", "encode_v2_records", "md5", "new_offset_map"]

COMPILED = _native is not None


class OffsetMap(Protocol):
    """``SkimpyOffsetMap``: MD5 digest of a key -> its latest offset."""

    latest_offset: int

    @property
    def size(self) -> int: ...
    @property
    def slots(self) -> int: ...

    def put_keys(self, key_offsets: np.ndarray, key_data: np.ndarray, rows: np.ndarray, offsets: np.ndarray,
                 capacity: int) -> int: ...
    def get_keys(self, key_offsets: np.ndarray, key_data: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None: ...
    def clear(self) -> None: ...


def _py_md5(data: bytes) -> bytes:
    return hashlib.md5(data).digest()  # noqa: S324  (Kafka's key identity, not a security use)


def _keys(key_offsets: np.ndarray, key_data: np.ndarray, rows: np.ndarray) -> list[bytes]:
    data = key_data.tobytes()
    starts = key_offsets[rows].tolist()
    ends = key_offsets[np.asarray(rows) + 1].tolist()
    return [data[a:b] for a, b in zip(starts, ends, strict=True)]


class PyOffsetMap:
    """The plain-Python ``SkimpyOffsetMap``: the same outcomes as the compiled one (a dict of
    digests; probing never changes which keys are equal)."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("an offset map needs at least one slot")
        self.slots = slots
        self.latest_offset = -1
        self._map: dict[bytes, int] = {}

    @property
    def size(self) -> int:
        return len(self._map)

    @property
    def table_bytes(self) -> int:
        return 24 * len(self._map)

    def put_keys(self, key_offsets: np.ndarray, key_data: np.ndarray, rows: np.ndarray, offsets: np.ndarray,
                 capacity: int) -> int:
        m = self._map
        put = 0
        for key, offset in zip(_keys(key_offsets, key_data, rows), offsets.tolist(), strict=True):
            if len(m) >= capacity:
                break
            digest = _py_md5(key)
            if digest not in m and len(m) >= self.slots:
                raise ValueError(f"Attempted to add a new entry to a full offset map, entries: {len(m)}, "
                                 f"slots: {self.slots}")
            m[digest] = offset
            self.latest_offset = offset
            put += 1
        return put

    def get_keys(self, key_offsets: np.ndarray, key_data: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
        get = self._map.get
        out[:] = [get(_py_md5(k), -1) for k in _keys(key_offsets, key_data, rows)]

    def clear(self) -> None:
        self._map.clear()
        self.latest_offset = -1


def new_offset_map(slots: int) -> OffsetMap:
    """An empty offset map of ``slots`` slots (compiled when available)."""
    if COMPILED:
        return _native.OffsetMap(slots)
    return PyOffsetMap(slots)


def md5(data: bytes) -> bytes:
    """MD5 of ``data`` (the compiled RFC 1321 implementation when built)."""
    return _native.md5(data) if COMPILED else _py_md5(data)


def digest_keys(key_offsets: np.ndarray, key_data: np.ndarray, rows: np.ndarray) -> bytes:
    """The 16-byte MD5 of each selected key, concatenated."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    if COMPILED:
        return _native.digest_keys(key_offsets, key_data, rows)
    return b"".join(_py_md5(k) for k in _keys(key_offsets, key_data, rows))


def encode_v2_records(c: RecordColumns, rows: np.ndarray, base_offset: int, base_timestamp: int) -> bytes:
    """Records ``rows`` of ``c`` as a v2 records region (``DefaultRecord.writeTo``, uncompressed):
    offset deltas from ``base_offset``, timestamp deltas from ``base_timestamp``."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    if COMPILED:
        return _native.encode_v2_records(
            rows, c.offset, c.timestamp, c.key_offsets, c.key_data, c.key_valid.view(np.uint8),
            c.value_offsets, c.value_data, c.value_valid.view(np.uint8), c.header_offsets,
            c.header_key_offsets, c.header_key_data, c.header_value_offsets, c.header_value_data,
            c.header_value_valid.view(np.uint8), base_offset, base_timestamp)
    return _py_encode(c, rows, base_offset, base_timestamp)


def _py_encode(c: RecordColumns, rows: np.ndarray, base_offset: int, base_timestamp: int) -> bytes:
    from kafka_format.writer.batches import Record, encode_record

    def blob(offsets: np.ndarray, data: np.ndarray, i: int) -> bytes:
        return data[offsets[i]:offsets[i + 1]].tobytes()

    out = []
    for r in rows.tolist():
        key = blob(c.key_offsets, c.key_data, r) if c.key_valid[r] else None
        value = blob(c.value_offsets, c.value_data, r) if c.value_valid[r] else None
        headers: list[tuple[Any, bytes | None]] = []
        for h in range(int(c.header_offsets[r]), int(c.header_offsets[r + 1])):
            hkey = blob(c.header_key_offsets, c.header_key_data, h).decode("utf-8")
            hvalue = blob(c.header_value_offsets, c.header_value_data, h) if c.header_value_valid[h] else None
            headers.append((hkey, hvalue))
        ts = int(c.timestamp[r])
        out.append(encode_record(Record(key, value, ts, tuple(headers)), int(c.offset[r]) - base_offset,
                                 ts - base_timestamp))
    return b"".join(out)
