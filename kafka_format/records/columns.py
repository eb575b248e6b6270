"""Decoded records as numpy columns, and their assembly into Arrow.

Both decoders (reference and compiled) produce :class:`RecordColumns`; one
shared :func:`to_arrow` turns them plus the :class:`~kafka_format.records.framing.BatchTable`
of their batches into a ``pyarrow.RecordBatch`` of ``RECORD_SCHEMA``.  Per-batch
fields are broadcast to records with ``numpy.repeat`` over the runs of ``batch_row``;
Arrow arrays wrap the numpy buffers directly (``pa.Array.from_buffers``); no
per-record Python object is made here.

Layout (n records, h headers; offsets are Arrow-style int32 with a leading 0)::

    batch_row int32[n]  offset int64[n]  timestamp int64[n] (ms, LogAppendTime applied)
    timestamp_type int8[n]  sequence int32[n]
    key_offsets int32[n+1]  key_data uint8[]  key_valid bool[n]     (same for value_*)
    header_offsets int32[n+1]   record i owns headers [header_offsets[i], header_offsets[i+1])
    header_key_offsets int32[h+1]  header_key_data uint8[]
    header_value_offsets int32[h+1]  header_value_data uint8[]  header_value_valid bool[h]
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from kafka_format.records.schema import BATCH_SCHEMA, HEADER_TYPE, RECORD_SCHEMA

try:  # compiled fills for the per-record columns (same values; memory recycled between chunks)
    from kafka_format.records import _fastdecode as _native
except ImportError:  # pragma: no cover - a build without the compiled decoder
    _native = None

if TYPE_CHECKING:
    from kafka_format.records.batch_table import BatchTable

__all__ = [
    "FileContext",
    "RecordColumns",
    "RecordColumnsBuilder",
    "codec_name",
    "to_arrow",
    "batch_table_to_arrow",
]

_CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_CODEC_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08
_TRANSACTIONAL_MASK = 0x10
_CONTROL_MASK = 0x20
_DELETE_HORIZON_MASK = 0x40
_MAGIC_V1 = 1
_MAGIC_V2 = 2
_NO_TIMESTAMP_TYPE = -1
_NO_SEQUENCE = -1
_MS_TO_US = 1000
_MAX_MS = np.iinfo(np.int64).max // _MS_TO_US


def codec_name(codec: int) -> str:
    """Kafka's name of a codec id (``CompressionType.name``); ``unknown(N)`` for 5-7."""
    return _CODEC_NAMES.get(codec, f"unknown({codec})")


@dataclass(frozen=True)
class FileContext:
    """Where decoded bytes come from: fills the provenance columns."""

    path: str | None = None
    topic: str | None = None
    partition: int | None = None
    segment: int | None = None
    log_dir: str | None = None
    broker_id: int | None = None


@dataclass
class RecordColumns:
    """Decoded records of some batches of one :class:`BatchTable` (see module doc)."""

    batch_row: np.ndarray
    offset: np.ndarray
    timestamp: np.ndarray
    timestamp_type: np.ndarray
    sequence: np.ndarray
    key_offsets: np.ndarray
    key_data: np.ndarray
    key_valid: np.ndarray
    value_offsets: np.ndarray
    value_data: np.ndarray
    value_valid: np.ndarray
    header_offsets: np.ndarray
    header_key_offsets: np.ndarray
    header_key_data: np.ndarray
    header_value_offsets: np.ndarray
    header_value_data: np.ndarray
    header_value_valid: np.ndarray

    def __len__(self) -> int:
        return len(self.offset)

    @classmethod
    def empty(cls) -> RecordColumns:
        """No records."""
        return RecordColumnsBuilder().build()

    @classmethod
    def concat(cls, parts: list[RecordColumns]) -> RecordColumns:
        """Records of ``parts`` in order (offset arrays are rebased)."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.empty()
        if len(parts) == 1:
            return parts[0]
        cat: dict[str, np.ndarray] = {}
        for f in fields(cls):
            arrays = [getattr(p, f.name) for p in parts]
            if f.name.endswith("_offsets"):
                pieces = [arrays[0]]
                base = int(arrays[0][-1])
                for arr in arrays[1:]:
                    pieces.append(arr[1:].astype(np.int64) + base)
                    base += int(arr[-1])
                cat[f.name] = _as_int32_offsets(np.concatenate(pieces).astype(np.int64))
            else:
                cat[f.name] = np.concatenate(arrays)
        return cls(**cat)


def _as_int32_offsets(offsets: np.ndarray) -> np.ndarray:
    if len(offsets) and int(offsets[-1]) > np.iinfo(np.int32).max:
        from kafka_format.common.errors import KafkaFormatError

        raise KafkaFormatError("decoded data exceed 2 GiB in one Arrow batch",
                               expected="< 2 GiB per column", found=str(int(offsets[-1])))
    return offsets.astype(np.int32)


class RecordColumnsBuilder:
    """Append-only accumulator used by the reference decoders."""

    def __init__(self) -> None:
        self.batch_row: list[int] = []
        self.offset: list[int] = []
        self.timestamp: list[int] = []
        self.timestamp_type: list[int] = []
        self.sequence: list[int] = []
        self.key_offsets = [0]
        self.key_data = bytearray()
        self.key_valid: list[bool] = []
        self.value_offsets = [0]
        self.value_data = bytearray()
        self.value_valid: list[bool] = []
        self.header_offsets = [0]
        self.header_key_offsets = [0]
        self.header_key_data = bytearray()
        self.header_value_offsets = [0]
        self.header_value_data = bytearray()
        self.header_value_valid: list[bool] = []

    @property
    def rows(self) -> int:
        return len(self.offset)

    @property
    def headers(self) -> int:
        return len(self.header_value_valid)

    def add_header(self, key: bytes, value: bytes | None) -> None:
        """Add a header of the record that the next :meth:`add_record` adds."""
        self.header_key_data += key
        self.header_key_offsets.append(len(self.header_key_data))
        if value is not None:
            self.header_value_data += value
        self.header_value_offsets.append(len(self.header_value_data))
        self.header_value_valid.append(value is not None)

    def add_record(self, *, batch_row: int, offset: int, timestamp: int, timestamp_type: int,
                   sequence: int, key: bytes | None, value: bytes | None) -> None:
        """Add one record (its headers were added just before)."""
        self.batch_row.append(batch_row)
        self.offset.append(offset)
        self.timestamp.append(timestamp)
        self.timestamp_type.append(timestamp_type)
        self.sequence.append(sequence)
        if key is not None:
            self.key_data += key
        self.key_offsets.append(len(self.key_data))
        self.key_valid.append(key is not None)
        if value is not None:
            self.value_data += value
        self.value_offsets.append(len(self.value_data))
        self.value_valid.append(value is not None)
        self.header_offsets.append(len(self.header_value_valid))

    def truncate(self, rows: int, headers: int) -> None:
        """Drop everything after the first ``rows`` records and ``headers`` headers."""
        for name in ("batch_row", "offset", "timestamp", "timestamp_type", "sequence",
                     "key_valid", "value_valid"):
            del getattr(self, name)[rows:]
        del self.key_offsets[rows + 1:]
        del self.value_offsets[rows + 1:]
        del self.header_offsets[rows + 1:]
        del self.key_data[self.key_offsets[-1]:]
        del self.value_data[self.value_offsets[-1]:]
        del self.header_value_valid[headers:]
        del self.header_key_offsets[headers + 1:]
        del self.header_value_offsets[headers + 1:]
        del self.header_key_data[self.header_key_offsets[-1]:]
        del self.header_value_data[self.header_value_offsets[-1]:]

    def build(self) -> RecordColumns:
        """Freeze into numpy columns."""
        return RecordColumns(
            batch_row=np.array(self.batch_row, dtype=np.int32),
            offset=np.array(self.offset, dtype=np.int64),
            timestamp=np.array(self.timestamp, dtype=np.int64),
            timestamp_type=np.array(self.timestamp_type, dtype=np.int8),
            sequence=np.array(self.sequence, dtype=np.int32),
            key_offsets=_as_int32_offsets(np.array(self.key_offsets, dtype=np.int64)),
            key_data=np.frombuffer(bytes(self.key_data), dtype=np.uint8),
            key_valid=np.array(self.key_valid, dtype=np.bool_),
            value_offsets=_as_int32_offsets(np.array(self.value_offsets, dtype=np.int64)),
            value_data=np.frombuffer(bytes(self.value_data), dtype=np.uint8),
            value_valid=np.array(self.value_valid, dtype=np.bool_),
            header_offsets=_as_int32_offsets(np.array(self.header_offsets, dtype=np.int64)),
            header_key_offsets=_as_int32_offsets(np.array(self.header_key_offsets, dtype=np.int64)),
            header_key_data=np.frombuffer(bytes(self.header_key_data), dtype=np.uint8),
            header_value_offsets=_as_int32_offsets(np.array(self.header_value_offsets, dtype=np.int64)),
            header_value_data=np.frombuffer(bytes(self.header_value_data), dtype=np.uint8),
            header_value_valid=np.array(self.header_value_valid, dtype=np.bool_),
        )


# ---------------------------------------------------------------------------------------------
# Arrow assembly


def _bitmap(valid: np.ndarray) -> tuple[pa.Buffer | None, int]:
    """Arrow validity bitmap (LSB order) of ``valid`` and its null count."""
    nulls = int(len(valid) - np.count_nonzero(valid))
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), nulls


def _binary(type_: pa.DataType, offsets: np.ndarray, data: np.ndarray,
            valid: np.ndarray | None) -> pa.Array:
    n = len(offsets) - 1
    bitmap, nulls = (None, 0) if valid is None else _bitmap(valid)
    return pa.Array.from_buffers(
        type_, n, [bitmap, pa.py_buffer(np.ascontiguousarray(offsets, dtype=np.int32)),
                   pa.py_buffer(np.ascontiguousarray(data, dtype=np.uint8))],
        null_count=nulls,
    )


_NUMPY_TYPES = {pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64}


def _constant(value: object, type_: pa.DataType, n: int) -> pa.Array:
    """``value`` repeated ``n`` times (null when ``value`` is None), built from numpy."""
    if value is None:
        return pa.nulls(n, type_)
    if pa.types.is_string(type_):
        if _native is not None:
            one = str(value).encode()
            _as_int32_offsets(np.array([n * len(one)], dtype=np.int64))  # the 2 GiB rule, before allocating
            return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(_native.offsets32(n, len(one))),
                                                          pa.py_buffer(_native.repeat(one, n))])
        return _strings([str(value)], np.zeros(n, dtype=np.intp))
    if _native is not None:
        item = np.array([value], dtype=np.dtype(_NUMPY_TYPES[type_]).newbyteorder("<")).tobytes()
        return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(_native.repeat(item, n))])
    return _array(np.full(n, value, dtype=_NUMPY_TYPES[type_]), type_)


def _strings(names: list[str], codes: np.ndarray) -> pa.Array:
    """String array whose element i is ``names[codes[i]]`` (vectorised: no per-element objects)."""
    encoded = [name.encode() for name in names]
    n = len(codes)
    if n == 0 or (codes == codes[0]).all():  # one name (the common case): a range + one repeat
        one = encoded[int(codes[0])] if n else b""
        _as_int32_offsets(np.array([n * len(one)], dtype=np.int64))  # the 2 GiB rule, before allocating
        if _native is not None:
            return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(_native.offsets32(n, len(one))),
                                                          pa.py_buffer(_native.repeat(one, n))])
        offsets = (np.arange(0, (n + 1) * len(one), len(one), dtype=np.int32) if one
                   else np.zeros(n + 1, dtype=np.int32))
        return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(one * n)])
    lengths = np.array([len(e) for e in encoded], dtype=np.int64)
    width = max(1, int(lengths.max()))
    padded = np.zeros((len(encoded), width), dtype=np.uint8)
    for i, e in enumerate(encoded):
        padded[i, :len(e)] = np.frombuffer(e, dtype=np.uint8)
    per_row = lengths[codes]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(per_row, out=offsets[1:])
    data = padded[codes][np.arange(width) < per_row[:, None]]
    return pa.Array.from_buffers(pa.string(), n,
                                 [None, pa.py_buffer(_as_int32_offsets(offsets)), pa.py_buffer(data)])


def _array(values: np.ndarray, type_: pa.DataType, valid: np.ndarray | None = None) -> pa.Array:
    """Arrow array of the fixed-width or boolean ``type_`` over numpy ``values``, null where
    ``valid`` is False: one buffer wrap (``pa.array`` on numpy costs up to ~100x more per call,
    a fixed cost paid ~20 times per decoded chunk)."""
    bitmap, nulls = (None, 0) if valid is None else _bitmap(valid)
    if pa.types.is_boolean(type_):
        data = np.packbits(np.asarray(values, dtype=np.bool_), bitorder="little")
    else:
        data = np.ascontiguousarray(values, dtype=f"<i{type_.bit_width // 8}")
    return pa.Array.from_buffers(type_, len(values), [bitmap, pa.py_buffer(data)], null_count=nulls)


def _masked(values: np.ndarray, valid: np.ndarray, type_: pa.DataType) -> pa.Array:
    return _array(values, type_, valid)


_CODEC_LABELS = [codec_name(c) for c in range(_CODEC_MASK + 1)]


def _compression_names(attributes: np.ndarray) -> pa.Array:
    return _strings(_CODEC_LABELS, (attributes & _CODEC_MASK).astype(np.intp))


def _headers(columns: RecordColumns, include_headers: bool) -> pa.Array:
    n = len(columns)
    if not include_headers or len(columns.header_value_valid) == 0:
        return pa.ListArray.from_arrays(_array(np.zeros(n + 1, dtype=np.int32), pa.int32()),
                                        pa.array([], type=HEADER_TYPE.value_type))
    keys = _binary(pa.string(), columns.header_key_offsets, columns.header_key_data, None)
    values = _binary(pa.binary(), columns.header_value_offsets, columns.header_value_data,
                     columns.header_value_valid)
    structs = pa.StructArray.from_arrays([keys, values], fields=list(HEADER_TYPE.value_type))
    return pa.ListArray.from_arrays(_array(columns.header_offsets, pa.int32()), structs,
                                    type=HEADER_TYPE)


def to_arrow(table: BatchTable, columns: RecordColumns, context: FileContext | None = None, *,
             include_headers: bool = True) -> pa.RecordBatch:
    """Records as a ``RECORD_SCHEMA`` record batch; batch fields come from ``table``.

    ``table`` positions must be file positions (``BatchTable.shifted``).  Legacy rows get
    null ``leaderEpoch``/``producerId``/``producerEpoch``/``sequence``.  A timestamp whose
    microseconds do not fit an int64 (|ms| > 9.2e15, only from corrupt data) is null.
    """
    ctx = context or FileContext()
    n = len(columns)
    # A batch's records are consecutive: per-batch fields are expanded by runs of batch_row
    # (np.repeat), several times cheaper than a per-record gather (exact for any order).
    # (np.repeat), several times cheaper than a per-record gather (exact for any order).
    batch_row = columns.batch_row
    starts = np.flatnonzero(np.concatenate(([n > 0], batch_row[1:] != batch_row[:-1])))
    run_rows = batch_row[starts].astype(np.intp)
    run_lengths = np.diff(np.append(starts, n))

    def per_record(column: np.ndarray) -> np.ndarray:
        return np.repeat(column[run_rows], run_lengths)

    magic = per_record(table.magic)
    is_v2 = magic == _MAGIC_V2
    attributes = per_record(table.attributes)
    timestamp_ms = columns.timestamp
    ts_valid: np.ndarray | None = None
    if n and (timestamp_ms.min() < -_MAX_MS or timestamp_ms.max() > _MAX_MS):
        ts_valid = (timestamp_ms <= _MAX_MS) & (timestamp_ms >= -_MAX_MS)
        timestamp_us = np.where(ts_valid, timestamp_ms, 0) * _MS_TO_US
    else:
        timestamp_us = timestamp_ms * _MS_TO_US
    arrays = [
        _binary(pa.binary(), columns.key_offsets, columns.key_data, columns.key_valid),
        _binary(pa.binary(), columns.value_offsets, columns.value_data, columns.value_valid),
        _constant(ctx.topic, pa.string(), n),
        _constant(ctx.partition, pa.int32(), n),
        _array(columns.offset, pa.int64()),
        _array(timestamp_us, RECORD_SCHEMA.field("timestamp").type, ts_valid),
        _array(columns.timestamp_type.astype(np.int32), pa.int32()),
        _headers(columns, include_headers),
        _masked(per_record(table.leader_epoch), is_v2, pa.int32()),
        _masked(per_record(table.producer_id), is_v2, pa.int64()),
        _masked(per_record(table.producer_epoch), is_v2, pa.int16()),
        _masked(columns.sequence, is_v2, pa.int32()),
        _array(is_v2 & ((attributes & _TRANSACTIONAL_MASK) != 0), pa.bool_()),
        _array(is_v2 & ((attributes & _CONTROL_MASK) != 0), pa.bool_()),
        _array(magic, pa.int8()),
        _compression_names(attributes),
        _array(per_record(table.base_offset), pa.int64()),
        _array(per_record(table.last_offset), pa.int64()),
        _constant(ctx.segment, pa.int64(), n),
        _array(per_record(table.position), pa.int64()),
        _constant(ctx.log_dir, pa.string(), n),
        _constant(ctx.broker_id, pa.int32(), n),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=RECORD_SCHEMA)


def _increment_sequence(sequence: np.ndarray, increment: np.ndarray) -> np.ndarray:
    """``DefaultRecordBatch.incrementSequence`` over int32 arrays (Java int overflow = numpy wrap)."""
    int_max = np.int32(np.iinfo(np.int32).max)
    with np.errstate(over="ignore"):
        return np.where(sequence > int_max - increment, increment - (int_max - sequence) - np.int32(1),
                        sequence + increment).astype(np.int32)


def batch_table_to_arrow(table: BatchTable, context: FileContext | None = None) -> pa.RecordBatch:
    """One ``BATCH_SCHEMA`` row per batch of ``table`` (no decompression)."""
    ctx = context or FileContext()
    n = len(table)
    magic = table.magic
    is_v2 = magic == _MAGIC_V2
    attributes = table.attributes
    low = attributes & 0xFF
    ts_type = np.where(
        magic == 0, _NO_TIMESTAMP_TYPE, ((low & _TIMESTAMP_TYPE_MASK) != 0).astype(np.int32)
    ).astype(np.int32)
    known_base = table.base_offset >= 0
    base_valid = is_v2 | known_base
    count_valid = table.count >= 0
    delete_horizon = is_v2 & ((low & _DELETE_HORIZON_MASK) != 0)
    # DefaultRecordBatch.lastSequence: -1 only when baseSequence is exactly NO_SEQUENCE.
    last_seq_valid = is_v2 & (table.base_sequence != _NO_SEQUENCE)
    last_delta = (table.last_offset - table.base_offset).astype(np.int32)
    last_seq = np.where(last_seq_valid, _increment_sequence(table.base_sequence.astype(np.int32), last_delta),
                        np.int32(_NO_SEQUENCE)).astype(np.int32)
    arrays = [
        _constant(ctx.topic, pa.string(), n),
        _constant(ctx.partition, pa.int32(), n),
        _constant(ctx.segment, pa.int64(), n),
        _array(table.position, pa.int64()),
        _array(table.size, pa.int32()),
        _array(magic, pa.int8()),
        _masked(table.base_offset, base_valid, pa.int64()),
        _array(table.last_offset, pa.int64()),
        _masked(table.count, count_valid, pa.int32()),
        _compression_names(attributes),
        _array(attributes, pa.int16()),
        _array(ts_type, pa.int32()),
        _masked(table.base_timestamp, is_v2, pa.int64()),
        _array(table.max_timestamp, pa.int64()),
        _masked(table.base_timestamp, delete_horizon, pa.int64()),
        _array(is_v2 & ((low & _TRANSACTIONAL_MASK) != 0), pa.bool_()),
        _array(is_v2 & ((low & _CONTROL_MASK) != 0), pa.bool_()),
        _masked(table.producer_id, is_v2, pa.int64()),
        _masked(table.producer_epoch, is_v2, pa.int16()),
        _masked(table.base_sequence, is_v2, pa.int32()),
        _masked(last_seq, is_v2, pa.int32()),
        _masked(table.leader_epoch, is_v2, pa.int32()),
        _array(table.crc, pa.int64()),
        _array(table.crc_valid, pa.bool_()),
        _constant(ctx.log_dir, pa.string(), n),
        _constant(ctx.broker_id, pa.int32(), n),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=BATCH_SCHEMA)
