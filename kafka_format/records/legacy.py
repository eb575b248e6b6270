"""Magic 0/1 message sets, including compressed wrapper messages.

Source: ``clients/src/main/java/org/apache/kafka/common/record/LegacyRecord.java`` and
``AbstractLegacyRecordBatch.java`` (``DeepRecordsIterator``, ``DataLogInputStream``).

Entry (big-endian)::

    offset         int64
    size           int32    bytes of the message that follows
    crc            uint32   CRC-32 (IEEE) over magic .. end of message
    magic          int8     0 or 1
    attributes     int8     bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4), bit 3 (v1) timestamp type
    timestamp      int64    v1 only
    keyLength      int32    -1 = null
    key
    valueLength    int32    -1 = null
    value                   compressed wrapper: the compressed inner message set

Compressed wrappers (``DeepRecordsIterator``): the value decompresses to an inner
message set of the same entry layout.  Wrapper v1: inner offsets are relative,
absolute = wrapperOffset - lastInnerRelative + innerRelative (a wrapper offset of 0 is
taken as base 0, as old librdkafka produce data needs; otherwise a wrapper offset below
the last inner offset is invalid).  Wrapper v0: inner offsets are absolute.  Inner
messages may have another magic than the wrapper (KAFKA-4298): offsets follow the
wrapper's magic; an inner v1 message takes the wrapper's timestamp type and, when that
is LogAppendTime, the wrapper's timestamp; an inner v0 message has none.  A null
wrapper value, an empty inner set, nested compression and zstd are invalid.  The inner
stream ends quietly at a truncated inner entry (as ``DataLogInputStream`` does).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kafka_format.common.crc import crc32
from kafka_format.common.errors import (
    ChecksumError,
    CorruptRecordError,
    KafkaFormatError,
    UnsupportedFormatError,
)
from kafka_format.records.columns import RecordColumns, RecordColumnsBuilder
from kafka_format.records.entry import ENTRY, MAGIC_OFFSET
from kafka_format.records.record_batch import (  # CODEC_MASK re-exported (__all__)
    CODEC_MASK,
    CREATE_TIME,
    LOG_APPEND_TIME,
    MAX_CODEC,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    NO_TIMESTAMP_TYPE,
    TIMESTAMP_TYPE_MASK,
    ZSTD,
)

if TYPE_CHECKING:
    from kafka_format.records.batch_table import BatchTable

__all__ = [
    "CODEC_MASK",
    "ENTRY",
    "MAGIC_OFFSET",
    "MESSAGE_V0",
    "MESSAGE_V1",
    "RECORD_OVERHEAD_V0",
    "RECORD_OVERHEAD_V1",
    "decode_entries",
    "read_message_header",
]

MESSAGE_V0 = struct.Struct(
    ">"
    "I"  # crc (CRC-32)
    "b"  # magic
    "B"  # attributes
)
MESSAGE_V1 = struct.Struct(
    ">"
    "I"  # crc (CRC-32)
    "b"  # magic
    "B"  # attributes
    "q"  # timestamp
)
LENGTH = struct.Struct(">i")  # keyLength / valueLength
RECORD_OVERHEAD_V0 = MESSAGE_V0.size + 2 * LENGTH.size  # 14
RECORD_OVERHEAD_V1 = MESSAGE_V1.size + 2 * LENGTH.size  # 22

Decompress = Callable[[int, bytes, int, int], bytes]
"""(codec, data, magic, batch position) -> decompressed bytes; raises KafkaFormatError."""


def read_message_header(buf: memoryview | bytes | bytearray, pos: int, magic: int) -> tuple[int, int, int]:
    """(crc, attributes, timestamp) of the entry at ``pos``; timestamp -1 for v0."""
    if magic == 0:
        crc, _magic, attributes = MESSAGE_V0.unpack_from(buf, pos + ENTRY.size)
        return crc, attributes, NO_TIMESTAMP
    crc, _magic, attributes, timestamp = MESSAGE_V1.unpack_from(buf, pos + ENTRY.size)
    return crc, attributes, timestamp


def _timestamp_type(magic: int, attributes: int) -> int:
    if magic == 0:
        return NO_TIMESTAMP_TYPE
    return LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME


def _key_value(buf: bytes, start: int, end: int, magic: int) -> tuple[bytes | None, bytes | None]:
    """Key and value of the message occupying ``buf[start:end]`` (from its crc field)."""
    pos = start + (MESSAGE_V0.size if magic == 0 else MESSAGE_V1.size)
    fields: list[bytes | None] = []
    for what in ("key", "value"):
        if pos + LENGTH.size > end:
            raise CorruptRecordError(f"message {what} length runs past the message",
                                     expected=f"{LENGTH.size} bytes", found=f"{end - pos} bytes")
        (length,) = LENGTH.unpack_from(buf, pos)
        pos += LENGTH.size
        if length < 0:
            fields.append(None)
            continue
        if pos + length > end:
            raise CorruptRecordError(f"message {what} runs past the message",
                                     expected=f"{length} bytes", found=f"{end - pos} bytes")
        fields.append(buf[pos:pos + length])
        pos += length
    return fields[0], fields[1]


class _Inner:
    __slots__ = ("attributes", "key", "magic", "offset", "timestamp", "value")

    def __init__(self, offset: int, magic: int, attributes: int, timestamp: int,
                 key: bytes | None, value: bytes | None) -> None:
        self.offset = offset
        self.magic = magic
        self.attributes = attributes
        self.timestamp = timestamp
        self.key = key
        self.value = value


def _inner_messages(data: bytes, *, verify_crc: bool) -> list[_Inner]:
    """Walk a decompressed inner message set (``DataLogInputStream.nextBatch``)."""
    out: list[_Inner] = []
    pos = 0
    n = len(data)
    while n - pos >= ENTRY.size:
        offset, size = ENTRY.unpack_from(data, pos)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptRecordError("inner message size is less than the minimum record overhead",
                                     expected=f">= {RECORD_OVERHEAD_V0}", found=str(size))
        start = pos + ENTRY.size
        end = start + size
        if end > n:
            break  # truncated inner entry: the stream ends here
        magic = data[start + 4]
        magic = magic - 256 if magic > 127 else magic
        if magic not in (0, 1):
            raise CorruptRecordError("invalid inner message magic", expected="0 or 1", found=str(magic))
        if size < (RECORD_OVERHEAD_V0 if magic == 0 else RECORD_OVERHEAD_V1):
            raise CorruptRecordError("inner message smaller than its overhead",
                                     expected=f"magic {magic} overhead", found=f"size {size}")
        crc, attributes, timestamp = read_message_header(data, pos, magic)
        if verify_crc and crc32(memoryview(data)[start + 4:end]) != crc:
            raise ChecksumError("inner message CRC-32 mismatch", expected=f"crc {crc}",
                                found=f"crc {crc32(memoryview(data)[start + 4:end])}")
        if attributes & CODEC_MASK:
            raise CorruptRecordError("Inner messages must not be compressed",
                                     expected="codec none", found=f"codec {attributes & CODEC_MASK}")
        key, value = _key_value(data, start, end, magic)
        out.append(_Inner(offset, magic, attributes, timestamp, key, value))
        pos = end
    return out


def _decode_entry(buf: memoryview, table: BatchTable, row: int, out: RecordColumnsBuilder, *,
                  verify_crc: bool, decompress: Decompress) -> None:
    pos = int(table.position[row])
    size = int(table.size[row])
    magic = int(table.magic[row])
    entry_offset = int(table.last_offset[row])
    data = bytes(buf[pos:pos + size])
    crc_start = ENTRY.size
    _crc, attributes, timestamp = read_message_header(data, 0, magic)
    key, value = _key_value(data, crc_start, size, magic)
    codec = attributes & CODEC_MASK
    if codec == 0:
        out.add_record(batch_row=row, offset=entry_offset, timestamp=timestamp,
                       timestamp_type=_timestamp_type(magic, attributes), sequence=NO_SEQUENCE,
                       key=key, value=value)
        return
    if codec == ZSTD:
        raise CorruptRecordError("zstd is not allowed in magic 0/1 messages",
                                 expected="codec none/gzip/snappy/lz4", found="zstd")
    if codec > MAX_CODEC:
        raise UnsupportedFormatError("unknown compression codec", expected="codec 0-4",
                                     found=f"codec {codec}")
    if value is None:
        raise CorruptRecordError("compressed message set with null value", expected="a value",
                                 found="null")
    inner = _inner_messages(decompress(codec, value, magic, pos), verify_crc=verify_crc)
    if not inner:
        raise CorruptRecordError("compressed message set with no inner records",
                                 expected=">= 1 inner message", found="none")
    base = 0
    if magic == 1:
        last_inner = inner[-1].offset
        if entry_offset == 0:
            base = 0  # produce data of some librdkafka versions
        elif entry_offset < last_inner:
            raise CorruptRecordError("wrapper offset is less than the last inner message offset",
                                     expected=f">= {last_inner}", found=str(entry_offset))
        else:
            base = entry_offset - last_inner
    wrapper_type = _timestamp_type(magic, attributes)
    for message in inner:
        absolute = _wrap64(base + message.offset) if magic == 1 else message.offset
        if message.magic == 0:
            ts, ts_type = NO_TIMESTAMP, NO_TIMESTAMP_TYPE
        else:
            ts_type = wrapper_type
            ts = timestamp if wrapper_type == LOG_APPEND_TIME else message.timestamp
        out.add_record(batch_row=row, offset=absolute, timestamp=ts, timestamp_type=ts_type,
                       sequence=NO_SEQUENCE, key=message.key, value=message.value)
    table.base_offset[row] = out.offset[-len(inner)]
    table.last_offset[row] = out.offset[-1]
    table.count[row] = len(inner)


def _wrap64(value: int) -> int:
    return ((value + (1 << 63)) & 0xFFFFFFFFFFFFFFFF) - (1 << 63)


def decode_entries(buf: bytes | memoryview, table: BatchTable, rows: Sequence[int], *,
                   path: str | None = None, verify_crc: bool = True,
                   decompress: Decompress) -> RecordColumns:
    """Decode the legacy entries ``rows`` of ``table`` (positions relative to ``buf``).

    Fills ``base_offset``/``last_offset``/``count`` of compressed wrappers in ``table``.
    Errors carry ``path`` and the entry's position in ``buf`` (shift them to the file).
    """
    mv = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf.cast("B")
    out = RecordColumnsBuilder()
    for row in rows:
        row = int(row)
        rows_before, headers_before = out.rows, out.headers
        try:
            _decode_entry(mv, table, row, out, verify_crc=verify_crc, decompress=decompress)
        except KafkaFormatError as exc:
            # Reported at the entry's position (also for bytes inside the compressed value).
            out.truncate(rows_before, headers_before)
            raise type(exc)(exc.reason, path=path, position=int(table.position[row]),
                            expected=exc.expected, found=exc.found,
                            base_offset=int(table.last_offset[row]), code=exc.code) from exc
    return out.build()
