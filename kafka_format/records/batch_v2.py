"""Magic 2 record batches and records: layout and the reference record decoder.

Source: ``clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java``
and ``DefaultRecord.java``; varints: ``common/utils/ByteUtils.java``.

Batch header (61 bytes, big-endian)::

    baseOffset           int64
    length               int32    bytes after this field (batch size = length + 12)
    partitionLeaderEpoch int32    not covered by the CRC
    magic                int8     2
    crc                  uint32   CRC-32C over attributes .. end of batch
    attributes           int16    low byte only: bits 0-2 codec, 3 timestamp type,
                                  4 transactional, 5 control, 6 delete horizon
    lastOffsetDelta      int32
    baseTimestamp        int64    = delete horizon when bit 6 is set
    maxTimestamp         int64
    producerId           int64
    producerEpoch        int16
    baseSequence         int32
    recordsCount         int32
    records              raw, or one compressed stream of all records

Record (``DefaultRecord.readFrom``)::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value |
    headerCount varint | (headerKeyLength varint | key | headerValueLength varint | value)*

Varints are zigzag LEB128, at most 5 bytes (32-bit) / 10 bytes (64-bit); the
value wraps as Java's ``int``/``long`` do.  A negative key/value length is a
null; a header key must be present (a negative length is an error).  Header keys are
decoded as Kafka does (``Utils.utf8`` = ``new String(bytes, UTF_8)``): malformed UTF-8 is
never an error, it becomes U+FFFD (see :func:`java_utf8`).
"""

from __future__ import annotations

import codecs
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from kafka_format.common.errors import CorruptRecordError
from kafka_format.common.limits import INT32_MAX
from kafka_format.records.columns import RecordColumns, RecordColumnsBuilder
from kafka_format.records.entry import ENTRY
from kafka_format.records.record_batch import (  # the attribute bits and NO_SEQUENCE re-exported (__all__)
    CODEC_MASK,
    CONTROL_MASK,
    CREATE_TIME,
    DELETE_HORIZON_MASK,
    LOG_APPEND_TIME,
    MAGIC_V2,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
)

if TYPE_CHECKING:
    from kafka_format.records.batch_table import BatchTable

__all__ = [
    "ATTRIBUTES_OFFSET",
    "CODEC_MASK",
    "CONTROL_MASK",
    "CRC_OFFSET",
    "DELETE_HORIZON_MASK",
    "HEADER",
    "HEADER_SIZE",
    "MIN_RECORD_SIZE",
    "NO_SEQUENCE",
    "RECORDS_OFFSET",
    "TIMESTAMP_TYPE_MASK",
    "TRANSACTIONAL_MASK",
    "decode_batches",
    "decode_records",
    "increment_sequence",
    "java_utf8",
    "last_sequences",
    "read_varint",
    "read_varlong",
    "wrap_int32",
    "wrap_int64",
]

# UTF-8 lead byte of the encoded surrogates U+D800..U+DFFF (ED A0..BF xx) and its continuations.
_SURROGATE_LEAD = 0xED
_SURROGATE_SECOND = range(0xA0, 0xC0)
_CONTINUATION_MASK, _CONTINUATION = 0xC0, 0x80
_JAVA_REPLACE = "kafka_format.java_utf8_replace"


def _java_replace(exc: UnicodeError) -> tuple[str, int]:
    """Error handler: U+FFFD per malformed sequence, sized as Java's UTF-8 decoder sizes it.

    Java (``String.decodeUTF8_UTF16``, JDK 17/21) and Python both replace each maximal
    ill-formed subsequence with one U+FFFD, except after ED: Java reads ED A0..BF as the
    start of a 3-byte sequence and only then rejects the surrogate, so ED A0..BF + a
    continuation byte is ONE U+FFFD (Python: three) and ED A0..BF + anything else is one
    (Python: two).
    """
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    data, i = exc.object, exc.start
    if data[i] == _SURROGATE_LEAD and i + 1 < len(data) and data[i + 1] in _SURROGATE_SECOND:
        third_is_continuation = i + 2 < len(data) and data[i + 2] & _CONTINUATION_MASK == _CONTINUATION
        return "\ufffd", i + (3 if third_is_continuation else 2)
    return "\ufffd", exc.end


codecs.register_error(_JAVA_REPLACE, _java_replace)


def java_utf8(data: bytes) -> bytes:
    """``data`` as UTF-8 after Java's ``new String(data, UTF_8)`` (malformed input → U+FFFD)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", _JAVA_REPLACE).encode("utf-8")
    return data


HEADER = struct.Struct(
    ENTRY.format  # baseOffset int64, length int32 (the entry prefix, records/entry.py)
    + "i"  # partitionLeaderEpoch
    "b"  # magic
    "I"  # crc (CRC-32C)
    "h"  # attributes
    "i"  # lastOffsetDelta
    "q"  # baseTimestamp
    "q"  # maxTimestamp
    "q"  # producerId
    "h"  # producerEpoch
    "i"  # baseSequence
    "i"  # recordsCount
)
HEADER_SIZE = HEADER.size  # 61 = DefaultRecordBatch.RECORD_BATCH_OVERHEAD
CRC_OFFSET = ENTRY.size + struct.calcsize(">ib")  # 17: after partitionLeaderEpoch, magic
ATTRIBUTES_OFFSET = CRC_OFFSET + struct.calcsize(">I")  # 21: the CRC covers [ATTRIBUTES_OFFSET, end)
RECORDS_OFFSET = HEADER_SIZE

ATTRIBUTE_BYTE_MASK = 0xFF  # only the low byte of the int16 attributes is defined

# length(1) attributes(1) timestampDelta(1) offsetDelta(1) keyLength(1) valueLength(1)
# headerCount(1): no record is smaller, so recordsCount <= payload_len // 7 for any
# payload that can hold them (bounds allocations driven by the untrusted count).
MIN_RECORD_SIZE = 7

_MAX_VARINT_BYTES = 5
_MAX_VARLONG_BYTES = 10
_U32 = 0xFFFFFFFF
_U64 = 0xFFFFFFFFFFFFFFFF


def wrap_int32(value: int) -> int:
    """Java ``int`` arithmetic overflow."""
    return ((value + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def increment_sequence(sequence: int, increment: int) -> int:
    """``DefaultRecordBatch.incrementSequence``: add, wrapping past Int.MAX to 0.

    Evaluated with Java ``int`` overflow, as Kafka does (a negative ``increment``
    from a corrupt offset delta therefore gives Kafka's, not the arithmetic, answer).
    """
    if sequence > wrap_int32(INT32_MAX - increment):
        return wrap_int32(increment - (INT32_MAX - sequence) - 1)
    return wrap_int32(sequence + increment)


def last_sequences(table: BatchTable) -> np.ndarray:
    """``DefaultRecordBatch.lastSequence`` of every entry of ``table`` (int32):
    :func:`increment_sequence` of ``baseSequence`` by ``lastOffset - baseOffset``, with Java's
    int wrap; -1 (``NO_SEQUENCE``) where ``baseSequence`` is -1 and for legacy entries."""
    int_max = np.int32(INT32_MAX)
    base = table.base_sequence.astype(np.int32)
    delta = (table.last_offset - table.base_offset).astype(np.int32)
    with np.errstate(over="ignore"):
        last = np.where(base > int_max - delta, delta - (int_max - base) - np.int32(1), base + delta)
    valid = (table.magic == MAGIC_V2) & (base != NO_SEQUENCE)
    return np.where(valid, last, np.int32(NO_SEQUENCE)).astype(np.int32)


class _Underflow(Exception):
    """Internal: the payload ended inside a field."""


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zigzag varint (int32, at most 5 bytes) at ``pos`` → (value, next pos)."""
    raw = 0
    shift = 0
    for i in range(_MAX_VARINT_BYTES):
        if pos + i >= len(buf):
            raise _Underflow
        b = buf[pos + i]
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            raw &= _U32
            value = (raw >> 1) ^ -(raw & 1)
            return value, pos + i + 1
        shift += 7
    raise CorruptRecordError("varint longer than 5 bytes", expected="at most 5 bytes",
                             found="a continuation bit in byte 5")


def read_varlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Zigzag varlong (int64, at most 10 bytes) at ``pos`` → (value, next pos)."""
    raw = 0
    shift = 0
    for i in range(_MAX_VARLONG_BYTES):
        if pos + i >= len(buf):
            raise _Underflow
        b = buf[pos + i]
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            raw &= _U64
            value = (raw >> 1) ^ -(raw & 1)
            return value, pos + i + 1
        shift += 7
    raise CorruptRecordError("varlong longer than 10 bytes", expected="at most 10 bytes",
                             found="a continuation bit in byte 10")


def _corrupt(reason: str, position: int, base_offset: int, *, expected: str | None = None,
             found: str | None = None) -> CorruptRecordError:
    return CorruptRecordError(reason, position=position, expected=expected, found=found,
                              base_offset=base_offset)


def decode_records(
    payload: bytes | memoryview,
    out: RecordColumnsBuilder,
    *,
    batch_row: int,
    position: int,
    base_offset: int,
    base_timestamp: int,
    max_timestamp: int,
    timestamp_type: int,
    base_sequence: int,
    count: int,
) -> None:
    """Decode the ``count`` records of one v2 batch payload into ``out``.

    ``position`` is the batch's byte position (for errors).  Raises
    :class:`CorruptRecordError` on any violation of ``DefaultRecord.readFrom`` /
    ``DefaultRecordBatch.RecordIterator``.
    """
    buf = bytes(payload)
    n = len(buf)
    if count < 0:
        raise _corrupt("invalid record count", position, base_offset, expected=">= 0", found=str(count))
    if count > n // MIN_RECORD_SIZE:
        raise _corrupt("Incorrect declared batch size, premature EOF reached", position, base_offset,
                       expected=f"{count} records", found=f"{n} bytes of records")
    log_append = timestamp_type == LOG_APPEND_TIME
    pos = 0
    start_rows = out.rows
    start_headers = out.headers
    try:
        for _ in range(count):
            size, pos = read_varint(buf, pos)
            if n - pos < size:
                raise _corrupt("Invalid record size", position, base_offset,
                               expected=f"{size} bytes of record", found=f"{n - pos} bytes remaining")
            record_start = pos
            pos += 1  # attributes: unused
            timestamp_delta, pos = read_varlong(buf, pos)
            offset_delta, pos = read_varint(buf, pos)
            key_len, pos = read_varint(buf, pos)
            key_start = pos
            if key_len > 0:
                pos += key_len
            value_len, pos = read_varint(buf, pos)
            value_start = pos
            if value_len > 0:
                pos += value_len
            header_count, pos = read_varint(buf, pos)
            if header_count < 0 or header_count > n - pos:
                raise _corrupt("invalid number of record headers", position, base_offset,
                               expected=f"0..{n - pos}", found=str(header_count))
            for _h in range(header_count):
                hkey_len, pos = read_varint(buf, pos)
                if hkey_len < 0:
                    raise _corrupt("invalid negative header key size", position, base_offset,
                                   expected=">= 0", found=str(hkey_len))
                hkey_start = pos
                pos += hkey_len
                if pos > n:
                    raise _Underflow
                hvalue_len, pos = read_varint(buf, pos)
                hvalue_start = pos
                if hvalue_len > 0:
                    pos += hvalue_len
                if pos > n:
                    raise _Underflow
                hkey = java_utf8(buf[hkey_start:hkey_start + hkey_len])
                out.add_header(hkey, buf[hvalue_start:pos] if hvalue_len >= 0 else None)
            if pos > n:
                raise _Underflow
            if pos - record_start != size:
                raise _corrupt("Invalid record size", position, base_offset,
                               expected=f"{size} bytes read", found=f"{pos - record_start}")
            timestamp = max_timestamp if log_append else (base_timestamp + timestamp_delta)
            sequence = (NO_SEQUENCE if base_sequence < 0
                        else increment_sequence(base_sequence, offset_delta))
            out.add_record(
                batch_row=batch_row,
                offset=wrap_int64(base_offset + offset_delta),
                timestamp=wrap_int64(timestamp),
                timestamp_type=timestamp_type,
                sequence=sequence,
                key=buf[key_start:key_start + key_len] if key_len >= 0 else None,
                value=buf[value_start:value_start + value_len] if value_len >= 0 else None,
            )
    except _Underflow:
        out.truncate(start_rows, start_headers)
        raise _corrupt("Incorrect declared batch size, premature EOF reached", position, base_offset,
                       expected=f"{count} records", found="end of records data") from None
    except CorruptRecordError as exc:
        out.truncate(start_rows, start_headers)
        if exc.position is None:  # raised by a varint helper
            raise _corrupt(exc.reason, position, base_offset, expected=exc.expected,
                           found=exc.found) from None
        raise
    if pos != n:
        out.truncate(start_rows, start_headers)
        raise _corrupt("Incorrect declared batch size, records still remaining in file", position,
                       base_offset, expected=f"{n} bytes for {count} records", found=f"{pos} bytes used")


def wrap_int64(value: int) -> int:
    """Java ``long`` addition overflow."""
    return ((value + (1 << 63)) & 0xFFFFFFFFFFFFFFFF) - (1 << 63)


def decode_batches(payloads: Sequence[bytes | memoryview], table: BatchTable, rows: Sequence[int],
                   ) -> RecordColumns:
    """Reference ``Decoder.decode_v2_records``: decode batches ``rows`` of ``table``."""
    out = RecordColumnsBuilder()
    for payload, row in zip(payloads, rows, strict=True):
        row = int(row)
        attributes = int(table.attributes[row])
        decode_records(
            payload,
            out,
            batch_row=row,
            position=int(table.position[row]),
            base_offset=int(table.base_offset[row]),
            base_timestamp=int(table.base_timestamp[row]),
            max_timestamp=int(table.max_timestamp[row]),
            timestamp_type=LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME,
            base_sequence=int(table.base_sequence[row]),
            count=int(table.count[row]),
        )
    return out.build()

