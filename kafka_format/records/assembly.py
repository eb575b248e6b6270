"""Arrow assembly: decoded :class:`~kafka_format.records.columns.RecordColumns` plus the
:class:`~kafka_format.records.framing.BatchTable` of their batches → ``RECORD_SCHEMA`` record
batches; a ``BatchTable`` alone → ``BATCH_SCHEMA`` rows.  Shared by both decoders.

Arrow arrays wrap the numpy (or compiled-decoder) buffers directly (``pa.Array.from_buffers``): no
per-record Python object is made here.  Costs per record are kept to what differs per record:

* Per-batch fields (magic, leader epoch, producer, attributes, offsets, position) are looked at
  once per batch (one run of ``batch_row``: a batch's records are consecutive).  A field with
  the same value in every batch of the chunk becomes a *constant* column; otherwise its per-batch
  values are expanded over the runs (``_fastdecode.repeat_runs``, or ``numpy.repeat``).
* Constant columns (the provenance: topic, partition, segment, logDir, brokerId; and batch fields
  that agree) are slices of arrays built once per process for up to ``CONSTANT_ROWS`` rows and
  kept in a small cache (:func:`constant`): their cost per record is nil, and the slices share
  memory.

``to_arrow_batches`` cuts the rows into record batches of at most ``max_rows`` rows (the
decoder's ``max_rows_per_batch``), each one with its constant columns sliced to its length.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from kafka_format.common.extensions import extension
from kafka_format.records import batch_v2
from kafka_format.records.columns import FileContext, RecordColumns, codec_name
from kafka_format.records.record_batch import (
    CODEC_MASK,
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    MAGIC_V2,
    NO_TIMESTAMP_TYPE,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
)
from kafka_format.records.schema import BATCH_SCHEMA, HEADER_TYPE, RECORD_SCHEMA

if TYPE_CHECKING:
    from kafka_format.records import _fastdecode as _native
    from kafka_format.records.batch_table import BatchTable
else:  # compiled fills for the per-record columns (same values; memory recycled between chunks), in
    # either mode; None in a build without the compiled decoder
    _native = extension("kafka_format.records._fastdecode")

__all__ = ["CONSTANT_ROWS", "MAX_TIMESTAMP_MS", "batch_table_to_arrow", "constant", "to_arrow", "to_arrow_batches"]

_MS_TO_US = 1000
#: Largest |milliseconds| whose microseconds fit an int64: the ``timestamp`` column holds null beyond.
MAX_TIMESTAMP_MS = np.iinfo(np.int64).max // _MS_TO_US

#: Rows of a cached constant column (the decoder's default ``max_rows_per_batch``).
CONSTANT_ROWS = 1 << 16
_CONSTANT_ENTRY_BYTES = 4 << 20      # a longer constant (a very long path) is built per call
_CONSTANT_CACHE_BYTES = 32 << 20     # cached constants kept per process, oldest evicted first
_constants: dict[tuple[pa.DataType, object], pa.Array] = {}
_constants_bytes = 0
_constants_lock = threading.Lock()

_NUMPY_TYPES = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64}


def _as_int32_offsets(offsets: np.ndarray) -> np.ndarray:
    if len(offsets) and int(offsets[-1]) > np.iinfo(np.int32).max:
        from kafka_format.common.errors import KafkaFormatError

        raise KafkaFormatError("decoded data exceed 2 GiB in one Arrow batch",
                               expected="< 2 GiB per column", found=str(int(offsets[-1])))
    return offsets.astype(np.int32)


# ---------------------------------------------------------------------------------------------
# arrays over numpy buffers


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


def _strings(names: list[str], codes: np.ndarray) -> pa.Array:
    """String array whose element i is ``names[codes[i]]`` (vectorised: no per-element objects)."""
    encoded = [name.encode() for name in names]
    n = len(codes)
    if n == 0 or (codes == codes[0]).all():  # one name (the common case): a range + one repeat
        one = encoded[int(codes[0])] if n else b""
        return _build_constant(one.decode(), pa.string(), n)
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


# ---------------------------------------------------------------------------------------------
# constant columns


def _build_constant(value: object, type_: pa.DataType, n: int) -> pa.Array:
    """``value`` repeated ``n`` times (null when ``value`` is None), built from raw buffers."""
    if value is None:
        return pa.nulls(n, type_)
    if pa.types.is_string(type_):
        one = str(value).encode()
        _as_int32_offsets(np.array([n * len(one)], dtype=np.int64))  # the 2 GiB rule, before allocating
        if _native is not None:
            return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(_native.offsets32(n, len(one))),
                                                          pa.py_buffer(_native.repeat(one, n))])
        offsets = (np.arange(0, (n + 1) * len(one), len(one), dtype=np.int32) if one
                   else np.zeros(n + 1, dtype=np.int32))
        return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(one * n)])
    if pa.types.is_boolean(type_):
        return _array(np.full(n, bool(value)), type_)
    dtype = np.dtype(_NUMPY_TYPES[type_]).newbyteorder("<")
    if _native is not None:
        return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(_native.repeat(np.array([value], dtype=dtype)
                                                                                  .tobytes(), n))])
    return _array(np.full(n, value, dtype=dtype), type_)


def constant(value: object, type_: pa.DataType, n: int) -> pa.Array:
    """``value`` repeated ``n`` times as an array of ``type_`` (null when ``value`` is None).

    Up to :data:`CONSTANT_ROWS` rows this is a zero-copy slice of an array built once per process
    and cached.  A cached array is as long as the longest one asked for (doubling, at most
    ``CONSTANT_ROWS`` rows), so a reader of small record batches caches small arrays; at most
    ~32 MiB are kept (the oldest evicted first), and a value too long to cache (a very long path)
    is built per call."""
    global _constants_bytes
    if n > CONSTANT_ROWS:
        return _build_constant(value, type_, n)
    key = (type_, value)
    cached = _constants.get(key)
    if cached is None or len(cached) < n:
        rows = min(CONSTANT_ROWS, max(n, 2 * len(cached) if cached is not None else n))
        width = len(str(value).encode()) + 4 if pa.types.is_string(type_) and value is not None else 8
        if width * rows > _CONSTANT_ENTRY_BYTES:
            return _build_constant(value, type_, n)
        built = _build_constant(value, type_, rows)
        with _constants_lock:       # the local engine's task threads share the cache
            cached = _constants.get(key)
            if cached is None or len(cached) < n:
                if cached is not None:
                    _constants_bytes -= _constants.pop(key).nbytes
                cached = built
                size = cached.nbytes
                while _constants and _constants_bytes + size > _CONSTANT_CACHE_BYTES:
                    _constants_bytes -= _constants.pop(next(iter(_constants))).nbytes
                _constants[key] = cached
                _constants_bytes += size
    return cached if n == len(cached) else cached.slice(0, n)


_empty_list_rows: list[pa.Array] = []   # the longest run of empty lists asked for (<= CONSTANT_ROWS)


def _empty_lists(n: int) -> pa.Array:
    """``n`` empty header lists (records without headers, or headers not asked for)."""
    if not _empty_list_rows or len(_empty_list_rows[0]) < n:
        rows = n if n > CONSTANT_ROWS or not _empty_list_rows else min(CONSTANT_ROWS, max(n, 2 * len(_empty_list_rows[0])))
        built = pa.ListArray.from_arrays(_array(np.zeros(rows + 1, dtype=np.int32), pa.int32()),
                                         pa.array([], type=HEADER_TYPE.value_type))
        if n > CONSTANT_ROWS:
            return built
        _empty_list_rows[:] = [built]
    cached = _empty_list_rows[0]
    return cached if n == len(cached) else cached.slice(0, n)


class _Constant:
    """A column with one value in every row, materialised per record batch by :func:`constant`."""

    __slots__ = ("type", "value")

    def __init__(self, value: object, type_: pa.DataType) -> None:
        self.value = value
        self.type = type_

    def take(self, n: int) -> pa.Array:
        return constant(self.value, self.type, n)


class _EmptyLists:
    __slots__ = ()

    def take(self, n: int) -> pa.Array:
        return _empty_lists(n)


_Column = Any   # pa.Array (n rows), _Constant or _EmptyLists


# ---------------------------------------------------------------------------------------------
# per-batch fields over the runs of batch_row


class _Runs:
    """The runs of equal ``batch_row`` (one per decoded batch, in order)."""

    def __init__(self, batch_row: np.ndarray) -> None:
        n = len(batch_row)
        if _native is not None:
            starts = np.frombuffer(memoryview(_native.runs(np.ascontiguousarray(batch_row, dtype=np.int32))),
                                   dtype=np.int64)
        else:
            starts = np.append(np.flatnonzero(np.concatenate(([n > 0], batch_row[1:] != batch_row[:-1]))), n)
        self.starts = starts
        self.rows = batch_row[starts[:-1]].astype(np.intp)
        self.n = n

    def expand(self, values: np.ndarray) -> np.ndarray:
        """Per-run ``values`` repeated over their runs: one value per record."""
        if _native is not None and values.dtype.itemsize in (1, 2, 4, 8):
            data = np.ascontiguousarray(values)
            out = _native.repeat_runs(data.view(np.uint8), data.dtype.itemsize, self.starts)
            return np.frombuffer(memoryview(out), dtype=values.dtype)
        return np.repeat(values, np.diff(self.starts))


def _uniform(values: np.ndarray) -> bool:
    return len(values) == 0 or bool((values == values[0]).all())


def _first(values: np.ndarray) -> object:
    return values[0].item() if len(values) else None


def _batch_column(runs: _Runs, values: np.ndarray, type_: pa.DataType, v2: np.ndarray | None) -> _Column:
    """A per-batch field (``values``: one per run) as a column; ``v2``: null where False."""
    if v2 is not None and not v2.any():
        return _Constant(None, type_)
    masked = v2 is not None and not v2.all()
    if not masked and _uniform(values):
        return _Constant(_first(values), type_)
    return _array(runs.expand(values), type_, runs.expand(v2) if masked and v2 is not None else None)


def _timestamps(ms: np.ndarray) -> pa.Array:
    """Milliseconds as ``timestamp[us, UTC]``; null where the microseconds do not fit an int64."""
    type_ = RECORD_SCHEMA.field("timestamp").type
    n = len(ms)
    if _native is not None:
        data, bitmap, nulls = _native.timestamps_us(np.ascontiguousarray(ms, dtype=np.int64))
        return pa.Array.from_buffers(type_, n, [None if bitmap is None else pa.py_buffer(bitmap),
                                                pa.py_buffer(data)], null_count=nulls)
    valid: np.ndarray | None = None
    if n and (ms.min() < -MAX_TIMESTAMP_MS or ms.max() > MAX_TIMESTAMP_MS):
        valid = (ms <= MAX_TIMESTAMP_MS) & (ms >= -MAX_TIMESTAMP_MS)
        us = np.where(valid, ms, 0) * _MS_TO_US
    else:
        us = ms * _MS_TO_US
    return _array(us, type_, valid)


def _headers(columns: RecordColumns, include_headers: bool) -> _Column:
    if not include_headers or len(columns.header_value_valid) == 0:
        return _EmptyLists()
    keys = _binary(pa.string(), columns.header_key_offsets, columns.header_key_data, None)
    values = _binary(pa.binary(), columns.header_value_offsets, columns.header_value_data,
                     columns.header_value_valid)
    structs = pa.StructArray.from_arrays([keys, values], fields=list(HEADER_TYPE.value_type))
    return pa.ListArray.from_arrays(_array(columns.header_offsets, pa.int32()), structs, type=HEADER_TYPE)


_CODEC_LABELS = [codec_name(c) for c in range(CODEC_MASK + 1)]


def _record_columns(table: BatchTable, columns: RecordColumns, ctx: FileContext,
                    include_headers: bool) -> list[_Column]:
    """The ``RECORD_SCHEMA`` columns of ``columns`` (arrays of n rows, or constants)."""
    runs = _Runs(columns.batch_row)
    rows = runs.rows
    magic = table.magic[rows]
    v2 = magic == MAGIC_V2
    attributes = table.attributes[rows]
    codes = (attributes & CODEC_MASK).astype(np.intp)
    tt = columns.timestamp_type
    sequence = (_array(columns.sequence, pa.int32()) if v2.all()
                else _Constant(None, pa.int32()) if not v2.any()
                else _array(columns.sequence, pa.int32(), runs.expand(v2)))
    return [
        _binary(pa.binary(), columns.key_offsets, columns.key_data, columns.key_valid),
        _binary(pa.binary(), columns.value_offsets, columns.value_data, columns.value_valid),
        _Constant(ctx.topic, pa.string()),
        _Constant(ctx.partition, pa.int32()),
        _array(columns.offset, pa.int64()),
        _timestamps(columns.timestamp),
        (_Constant(_first(tt), pa.int32()) if len(tt) == 0 or tt.min() == tt.max()
         else _array(tt.astype(np.int32), pa.int32())),
        _headers(columns, include_headers),
        _batch_column(runs, table.leader_epoch[rows], pa.int32(), v2),
        _batch_column(runs, table.producer_id[rows], pa.int64(), v2),
        _batch_column(runs, table.producer_epoch[rows], pa.int16(), v2),
        sequence,
        _batch_column(runs, v2 & ((attributes & TRANSACTIONAL_MASK) != 0), pa.bool_(), None),
        _batch_column(runs, v2 & ((attributes & CONTROL_MASK) != 0), pa.bool_(), None),
        _batch_column(runs, magic, pa.int8(), None),
        (_Constant(_CODEC_LABELS[int(codes[0])] if len(codes) else "none", pa.string()) if _uniform(codes)
         else _strings(_CODEC_LABELS, runs.expand(codes))),
        _batch_column(runs, table.base_offset[rows], pa.int64(), None),
        _batch_column(runs, table.last_offset[rows], pa.int64(), None),
        _Constant(ctx.segment, pa.int64()),
        _batch_column(runs, table.position[rows], pa.int64(), None),
        _Constant(ctx.log_dir, pa.string()),
        _Constant(ctx.broker_id, pa.int32()),
    ]


def to_arrow_batches(table: BatchTable, columns: RecordColumns, context: FileContext | None = None, *,
                     include_headers: bool = True, max_rows: int | None = None) -> Iterator[pa.RecordBatch]:
    """Records as ``RECORD_SCHEMA`` record batches of at most ``max_rows`` rows (one batch when
    None); batch fields come from ``table``.

    ``table`` positions must be file positions (``BatchTable.shifted``).  Legacy rows get
    null ``leaderEpoch``/``producerId``/``producerEpoch``/``sequence``.  A timestamp whose
    microseconds do not fit an int64 (|ms| > 9.2e15, only from corrupt data) is null.
    """
    n = len(columns)
    cols = _record_columns(table, columns, context or FileContext(), include_headers)
    step = n if max_rows is None else max_rows
    for lo in range(0, max(n, 1), max(step, 1)):
        m = min(step, n - lo)
        arrays = [c.take(m) if not isinstance(c, pa.Array) else c if m == n else c.slice(lo, m) for c in cols]
        yield pa.RecordBatch.from_arrays(arrays, schema=RECORD_SCHEMA)


def to_arrow(table: BatchTable, columns: RecordColumns, context: FileContext | None = None, *,
             include_headers: bool = True) -> pa.RecordBatch:
    """Records as one ``RECORD_SCHEMA`` record batch (see :func:`to_arrow_batches`)."""
    return next(to_arrow_batches(table, columns, context, include_headers=include_headers))


# ---------------------------------------------------------------------------------------------
# batch granularity


def _compression_names(attributes: np.ndarray) -> pa.Array:
    return _strings(_CODEC_LABELS, (attributes & CODEC_MASK).astype(np.intp))


def batch_table_to_arrow(table: BatchTable, context: FileContext | None = None) -> pa.RecordBatch:
    """One ``BATCH_SCHEMA`` row per batch of ``table`` (no decompression)."""
    ctx = context or FileContext()
    n = len(table)
    magic = table.magic
    is_v2 = magic == MAGIC_V2
    attributes = table.attributes
    low = attributes & 0xFF
    ts_type = np.where(
        magic == 0, NO_TIMESTAMP_TYPE, ((low & TIMESTAMP_TYPE_MASK) != 0).astype(np.int32)
    ).astype(np.int32)
    known_base = table.base_offset >= 0
    base_valid = is_v2 | known_base
    count_valid = table.count >= 0
    delete_horizon = is_v2 & ((low & DELETE_HORIZON_MASK) != 0)
    last_seq = batch_v2.last_sequences(table)
    arrays = [
        constant(ctx.topic, pa.string(), n),
        constant(ctx.partition, pa.int32(), n),
        constant(ctx.segment, pa.int64(), n),
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
        _array(is_v2 & ((low & TRANSACTIONAL_MASK) != 0), pa.bool_()),
        _array(is_v2 & ((low & CONTROL_MASK) != 0), pa.bool_()),
        _masked(table.producer_id, is_v2, pa.int64()),
        _masked(table.producer_epoch, is_v2, pa.int16()),
        _masked(table.base_sequence, is_v2, pa.int32()),
        _masked(last_seq, is_v2, pa.int32()),
        _masked(table.leader_epoch, is_v2, pa.int32()),
        _array(table.crc, pa.int64()),
        _array(table.crc_valid, pa.bool_()),
        constant(ctx.log_dir, pa.string(), n),
        constant(ctx.broker_id, pa.int32(), n),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=BATCH_SCHEMA)
