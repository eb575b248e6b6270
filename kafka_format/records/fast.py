"""The compiled decoder: :class:`FastDecoder` over the C loop in ``_fastdecode.c``.

``FastDecoder`` overrides only the two hot methods of the reference
:class:`~kafka_format.records.decoder.Decoder` (ARCHITECTURE.md, "Decoder contract"):

* :meth:`FastDecoder.scan`: one C call walks every framed entry of the chunk,
  verifies each v2 CRC-32C (SSE4.2 instructions when the CPU has them) and copies
  the 61 header bytes of each entry; the header fields are then read with one
  big-endian numpy view whose layout is derived from ``batch_v2.HEADER``.
* :meth:`FastDecoder.decode_v2_records`: one C call decodes the records of all
  the given batches straight into the column buffers of
  :class:`~kafka_format.records.columns.RecordColumns` (wrapped zero-copy).
* :meth:`FastDecoder.decode_v2_checked` (deferred CRC): the same C call also verifies
  the CRC-32C of each uncompressed batch just before decoding it, while its bytes are
  in the CPU cache, so ``scan(defer_crc=True)`` skips those batches (the bytes are read
  from memory once instead of twice: ~15-20 % of the uncompressed file path).

Memory: every size that drives an allocation is bounded by the input bytes behind it
(record counts by ``payload_len // 7``, data by the payload length).  Column buffers are
malloc'd blocks exposed through the buffer protocol; large blocks released by dead Arrow
arrays are kept in a small per-process cache (at most 64 MiB) and reused for the next
chunk, because fresh pages cost one page fault each (measured: more than the decode loop).

Broken input: the C code only *detects* a violation.  The reference method is then
run on the same arguments, so the exception (type, message, path, position) is by
construction the reference decoder's; should the reference accept what the C loop
rejected, its result is returned, so both decoders always agree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kafka_format.common.crc import crc32, use_accelerated_crc32c
from kafka_format.common.extensions import require
from kafka_format.records import batch_v2, framing, legacy
from kafka_format.records.columns import RecordColumns
from kafka_format.records.decoder import Decoder
from kafka_format.records.framing import BatchTable
from kafka_format.records.record_batch import CODEC_MASK, MAGIC_V0, MAGIC_V1, MAGIC_V2, TIMESTAMP_TYPE_MASK

if TYPE_CHECKING:
    from kafka_format.records import _fastdecode
else:   # a build without it raises ImportError here: records/implementation.py then uses the reference
    _fastdecode = require("kafka_format.records._fastdecode")

__all__ = ["CRC32C_IMPLEMENTATION", "FastDecoder", "crc32c"]

CRC32C_IMPLEMENTATION: str = _fastdecode.CRC32C_IMPLEMENTATION
crc32c = _fastdecode.crc32c
use_accelerated_crc32c(crc32c)      # kafka_format.common.crc.crc32c computes with it from now on

# Names of the batch_v2.HEADER fields, in order (the layout itself is declared there).
_HEADER_FIELDS = (
    "base_offset", "length", "leader_epoch", "magic", "crc", "attributes", "last_offset_delta",
    "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "count",
)
_STRUCT_TO_NUMPY = {"q": "i8", "i": "i4", "h": "i2", "b": "i1", "I": "u4"}


def _header_dtype() -> np.dtype:
    """``batch_v2.HEADER`` as a packed big-endian numpy structured dtype."""
    codes = re.findall(r"[a-zA-Z]", batch_v2.HEADER.format.lstrip(">"))
    if len(codes) != len(_HEADER_FIELDS):
        raise AssertionError("batch_v2.HEADER changed: update fast._HEADER_FIELDS")
    dtype = np.dtype([(name, ">" + _STRUCT_TO_NUMPY[code]) for name, code in zip(_HEADER_FIELDS, codes,
                                                                                  strict=True)])
    if dtype.itemsize != batch_v2.HEADER_SIZE:
        raise AssertionError("numpy view of batch_v2.HEADER has the wrong size")
    return dtype


_HEADER_DTYPE = _header_dtype()
_LEGACY_MIN_SIZE = {MAGIC_V0: legacy.RECORD_OVERHEAD_V0, MAGIC_V1: legacy.RECORD_OVERHEAD_V1}

# decode_v2 meta columns (see _fastdecode.decode_v2).
_META_ROW, _META_BASE_OFFSET, _META_BASE_TIMESTAMP, _META_MAX_TIMESTAMP = 0, 1, 2, 3
_META_BASE_SEQUENCE, _META_COUNT, _META_FLAGS, _META_CRC = 4, 5, 6, 7
_META_COLUMNS: int = _fastdecode.META_COLUMNS
_CHUNK_META_COLUMNS: int = _fastdecode.CHUNK_META_COLUMNS
_CHUNK_START, _CHUNK_END = _META_COLUMNS, _META_COLUMNS + 1
#: Decompressed bytes one fused call decodes at most (then the next call goes on): output columns
#: stay the size of the decoder's recycled blocks (~ a read chunk) instead of fresh pages.
REGION_HELD_BYTES = 16 << 20
#: Codec ids decompressed in C by :meth:`FastDecoder.decode_v2_region`: compiled in, their library
#: loaded at import (liblz4, libzstd; gzip: libdeflate, else zlib linked at build time) and not left out
#: by ``KAFKA_FORMAT_C_CODECS``.
C_CODECS: frozenset[int] = frozenset(i for i in range(8) if _fastdecode.C_CODECS >> i & 1)

# decode_v2 result order = RecordColumns fields, each with its numpy dtype.
_RESULT_DTYPES = (
    ("batch_row", np.int32), ("offset", np.int64), ("timestamp", np.int64),
    ("timestamp_type", np.int8), ("sequence", np.int32),
    ("key_offsets", np.int32), ("key_data", np.uint8), ("key_valid", np.bool_),
    ("value_offsets", np.int32), ("value_data", np.uint8), ("value_valid", np.bool_),
    ("header_offsets", np.int32),
    ("header_key_offsets", np.int32), ("header_key_data", np.uint8),
    ("header_value_offsets", np.int32), ("header_value_data", np.uint8),
    ("header_value_valid", np.bool_),
)


class FastDecoder(Decoder):
    """Compiled decoder: same results and errors as :class:`Decoder`, one C call per chunk."""

    name = "fast"
    defers_crc = True

    def scan(self, buf: bytes | bytearray | memoryview, *, start: int = 0, end: int | None = None,
             path: str | None = None, verify_crc: bool = True, defer_crc: bool = False) -> BatchTable:
        """Walk the framed entries of ``buf[start:end]``; positions relative to ``buf``.

        ``defer_crc``: leave the CRC of non-empty uncompressed v2 batches unverified (``crc_valid``
        true): the caller verifies them with :meth:`decode_v2_checked` while decoding (one pass
        over the bytes instead of two)."""
        mv = memoryview(buf).cast("B")
        stop = len(mv) if end is None else min(end, len(mv))
        if start < 0 or start > stop:
            return super().scan(buf, start=start, end=end, path=path, verify_crc=verify_crc)
        mode: Any = _fastdecode.SCAN_VERIFY_DEFER if verify_crc and defer_crc else int(verify_crc)
        positions, headers, crc_ok, _n, pos, status = _fastdecode.scan(mv, start, stop, mode)
        if status == _fastdecode.SCAN_CORRUPT_SIZE:
            return super().scan(buf, start=start, end=end, path=path, verify_crc=verify_crc)
        hdr = np.frombuffer(memoryview(headers), dtype=_HEADER_DTYPE)
        magic = hdr["magic"]
        length = hdr["length"]
        legacy_rows = magic != MAGIC_V2
        bad = (magic == MAGIC_V2) & (length < batch_v2.HEADER_SIZE - framing.LOG_OVERHEAD)
        if legacy_rows.any():
            bad |= (magic < MAGIC_V0) | (magic > MAGIC_V2)
            bad |= (magic == MAGIC_V0) & (length < _LEGACY_MIN_SIZE[MAGIC_V0])
            bad |= (magic == MAGIC_V1) & (length < _LEGACY_MIN_SIZE[MAGIC_V1])
        if bad.any():  # the reference raises the exact error for the first bad entry
            return super().scan(buf, start=start, end=end, path=path, verify_crc=verify_crc)
        base_offset = hdr["base_offset"].astype(np.int64)
        columns = {
            "position": np.frombuffer(memoryview(positions), dtype=np.int64),
            "size": (length + framing.LOG_OVERHEAD).astype(np.int32),
            "magic": magic.astype(np.int8),
            "base_offset": base_offset,
            "last_offset": base_offset + hdr["last_offset_delta"].astype(np.int64),  # wraps like Java
            "count": hdr["count"].astype(np.int32),
            "attributes": hdr["attributes"].astype(np.int16),
            "base_timestamp": hdr["base_timestamp"].astype(np.int64),
            "max_timestamp": hdr["max_timestamp"].astype(np.int64),
            "producer_id": hdr["producer_id"].astype(np.int64),
            "producer_epoch": hdr["producer_epoch"].astype(np.int16),
            "base_sequence": hdr["base_sequence"].astype(np.int32),
            "leader_epoch": hdr["leader_epoch"].astype(np.int32),
            "crc": hdr["crc"].astype(np.int64),
            "crc_valid": np.frombuffer(memoryview(crc_ok), dtype=np.uint8) != 0,
        }
        if legacy_rows.any():
            _fill_legacy(columns, mv, np.flatnonzero(legacy_rows), verify_crc)
        return BatchTable(**columns, end=pos, zero_tail=status == _fastdecode.SCAN_ZERO_TAIL)

    def decode_v2_records(self, payloads: Sequence[bytes | memoryview], table: BatchTable,
                          rows: Sequence[int]) -> RecordColumns:
        """Decode the records of v2 batches ``rows``; ``payloads[i]`` is the records region of ``rows[i]``."""
        row_index = np.asarray(rows, dtype=np.intp)
        if len(row_index) != len(payloads):
            return super().decode_v2_records(payloads, table, rows)  # the reference reports the mismatch
        meta = _meta(table, row_index)
        try:
            buffers = _fastdecode.decode_v2(payloads, meta)
        except _fastdecode.FormatViolation:
            # Broken batch: the reference decides and raises its exact error.
            return super().decode_v2_records(payloads, table, rows)
        except OverflowError:
            # More than 2 GiB of payloads (int32 Arrow offsets): decode halves and let
            # RecordColumns.concat apply the shared 2 GiB rule, as the reference's build does.
            if len(row_index) < 2:
                return super().decode_v2_records(payloads, table, rows)
            half = len(row_index) // 2
            return RecordColumns.concat([
                self.decode_v2_records(payloads[:half], table, row_index[:half].tolist()),
                self.decode_v2_records(payloads[half:], table, row_index[half:].tolist()),
            ])
        return _columns(buffers)

    def decode_v2_checked(self, payloads: Sequence[bytes | memoryview], table: BatchTable,
                          rows: Sequence[int], check: Sequence[bool]) -> tuple[RecordColumns, int]:
        """:meth:`Decoder.decode_v2_checked` in one C call: each checked batch's CRC is computed
        just before its records are decoded, while its bytes are in the CPU cache."""
        row_index = np.asarray(rows, dtype=np.intp)
        if len(row_index) == len(payloads) == len(check):
            meta = _meta(table, row_index)
            checked = np.asarray(check, dtype=bool)
            meta[checked, _META_FLAGS] |= _fastdecode.FLAG_CHECK_CRC
            meta[:, _META_CRC] = table.crc[row_index]
            try:
                return _columns(_fastdecode.decode_v2(payloads, meta)), len(row_index)
            except (_fastdecode.FormatViolation, OverflowError):
                pass  # a bad CRC or batch: the shared method finds which and decodes the rest
        return super().decode_v2_checked(payloads, table, rows, check)


    def decode_v2_region(self, buf: bytes | bytearray | memoryview, table: BatchTable, rows: Sequence[int], *,
                         check_crc: bool, max_decompressed: int,
                         include_headers: bool = True) -> tuple[RecordColumns, int] | None:
        """The fused path: records of a prefix of the v2 batches ``rows`` of ``buf`` (positions of
        ``table`` relative to ``buf``) in one C call, compressed batches decompressed in C into one
        reused buffer (no Python call, no new bytes object per batch).

        Same contract as the general path of ``api`` (decompress, then :meth:`decode_v2_records`
        or, with ``check_crc``, :meth:`decode_v2_checked` for the uncompressed batches): batches
        are taken until ``max_decompressed`` decompressed bytes are held (at least one), each
        payload capped at ``max_decompressed`` (a call holds at most ``REGION_HELD_BYTES``: the
        caller asks again for the rest).  Returns ``(columns, done)``, or None when the C
        path declines (a codec not compiled in, an unusual or broken payload, a bad CRC, a format
        violation): the caller then takes the general path, which decides and reports exactly.
        ``include_headers=False``: headers are read and checked but not output (none in the columns)."""
        row_index = np.asarray(rows, dtype=np.intp)
        meta = np.empty((len(row_index), _CHUNK_META_COLUMNS), dtype=np.int64)
        meta[:, :_META_COLUMNS] = _meta(table, row_index)
        attributes = table.attributes[row_index]
        codec = (attributes & CODEC_MASK).astype(np.int64)
        position = table.position[row_index]
        meta[:, _META_FLAGS] |= codec << _fastdecode.FLAG_CODEC_SHIFT
        meta[:, _CHUNK_START] = position + batch_v2.RECORDS_OFFSET
        meta[:, _CHUNK_END] = position + table.size[row_index]
        if check_crc:
            plain = codec == 0
            meta[plain, _META_FLAGS] |= _fastdecode.FLAG_CHECK_CRC
            meta[plain, _CHUNK_START] = position[plain] + batch_v2.ATTRIBUTES_OFFSET
            meta[:, _META_CRC] = table.crc[row_index]
        options = 0 if include_headers else _fastdecode.OPT_SKIP_HEADERS
        try:
            buffers, done, _held = _fastdecode.decode_v2_chunk(buf, meta, max_decompressed, options,
                                                               min(max_decompressed, REGION_HELD_BYTES))
        except _fastdecode.FormatViolation:
            return None
        return _columns(buffers), done


def _meta(table: BatchTable, row_index: np.ndarray) -> np.ndarray:
    """The decode_v2 meta rows of batches ``row_index`` (no CRC check requested)."""
    meta = np.zeros((len(row_index), _META_COLUMNS), dtype=np.int64)
    meta[:, _META_ROW] = row_index
    meta[:, _META_BASE_OFFSET] = table.base_offset[row_index]
    meta[:, _META_BASE_TIMESTAMP] = table.base_timestamp[row_index]
    meta[:, _META_MAX_TIMESTAMP] = table.max_timestamp[row_index]
    meta[:, _META_BASE_SEQUENCE] = table.base_sequence[row_index]
    meta[:, _META_COUNT] = table.count[row_index]
    meta[:, _META_FLAGS] = (table.attributes[row_index] & TIMESTAMP_TYPE_MASK) != 0
    return meta


def _columns(buffers: Sequence[Any]) -> RecordColumns:
    """RecordColumns over the buffers decode_v2 returned (zero-copy)."""
    return RecordColumns(**{name: np.frombuffer(data, dtype=dtype)
                            for (name, dtype), data in zip(_RESULT_DTYPES, buffers, strict=True)})


def _fill_legacy(columns: dict[str, np.ndarray], mv: memoryview, rows: np.ndarray,
                 verify_crc: bool) -> None:
    """Overwrite the v2-shaped columns of legacy (magic 0/1) entries ``rows`` in place."""
    for row in rows.tolist():
        pos = int(columns["position"][row])
        magic = int(columns["magic"][row])
        total = int(columns["size"][row])
        offset = int(columns["base_offset"][row])
        crc, attributes, timestamp = legacy.read_message_header(mv, pos, magic)
        compressed = attributes & CODEC_MASK != 0
        columns["base_offset"][row] = framing.NO_VALUE if compressed else offset
        columns["last_offset"][row] = offset
        columns["count"][row] = framing.NO_VALUE if compressed else 1
        columns["attributes"][row] = attributes
        columns["base_timestamp"][row] = framing.NO_VALUE
        columns["max_timestamp"][row] = timestamp
        columns["producer_id"][row] = framing.NO_VALUE
        columns["producer_epoch"][row] = framing.NO_VALUE
        columns["base_sequence"][row] = framing.NO_VALUE
        columns["leader_epoch"][row] = framing.NO_VALUE
        columns["crc"][row] = crc
        columns["crc_valid"][row] = (not verify_crc
                                     or crc32(mv[pos + framing.MAGIC_OFFSET:pos + total]) == crc)
