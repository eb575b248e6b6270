"""Build record batches byte for byte as a Kafka broker leaves them on disk.

v2 record batch (``clients/.../record/DefaultRecordBatch.java``, ``MemoryRecordsBuilder.java``)::

    baseOffset int64 | length int32 | partitionLeaderEpoch int32 | magic int8 (2) | crc uint32
    | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64
    | producerId int64 | producerEpoch int16 | baseSequence int32 | recordsCount int32 | records...

    attributes: bits 0-2 codec, bit 3 LogAppendTime, bit 4 transactional, bit 5 control,
                bit 6 delete horizon (baseTimestamp holds the horizon)
    crc: CRC-32C over attributes .. end of batch (partitionLeaderEpoch is not covered)

v2 record (``DefaultRecord.java``), zigzag varints::

    length varint | attributes int8 (0) | timestampDelta varlong | offsetDelta varint
    | keyLength varint | key | valueLength varint | value | headerCount varint
    | headers: keyLength varint, key (UTF-8), valueLength varint (-1 = null), value

Control record (``EndTransactionMarker.java``): key = version int16 (0) + type int16
(0 ABORT, 1 COMMIT); value = version int16 (0) + coordinatorEpoch int32.

Legacy message (``LegacyRecord.java``), one log entry each::

    offset int64 | size int32 | crc uint32 | magic int8 | attributes int8
    | [timestamp int64, magic 1 only] | keyLength int32 | key | valueLength int32 | value

    attributes: bits 0-2 codec (zstd not allowed), bit 3 LogAppendTime (magic 1)
    crc: CRC-32 (IEEE) over magic .. end of message

A compressed legacy wrapper's value is the compressed inner message set.  Magic 1 inner
offsets are relative (0..n-1) and the wrapper offset is the last inner absolute offset;
magic 0 inner offsets are absolute (``AbstractLegacyRecordBatch.java``).

Compressed payloads come from :func:`kafka_format.records.compression.compress` (xerial snappy, Kafka's
lz4 frame with the broken header checksum for magic 0, zstd without content size, Java gzip).
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kafka_format.common.crc import crc32, crc32c
from kafka_format.records import batch_v2, control, legacy
from kafka_format.records.batch_v2 import HEADER as V2_HEADER  # re-exported under the writer's names
from kafka_format.records.batch_v2 import HEADER_SIZE as V2_HEADER_SIZE
from kafka_format.records.compression import compress
from kafka_format.records.control import CONTROL_ABORT, CONTROL_COMMIT
from kafka_format.records.entry import ENTRY, LOG_OVERHEAD
from kafka_format.records.record_batch import (
    CODEC_MASK,
    CODEC_NAMES,
    CONTROL_MASK,
    CREATE_TIME,
    DELETE_HORIZON_MASK,
    LOG_APPEND_TIME,
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
)
from kafka_format.records.record_batch import GZIP as CODEC_GZIP
from kafka_format.records.record_batch import LZ4 as CODEC_LZ4
from kafka_format.records.record_batch import NONE as CODEC_NONE
from kafka_format.records.record_batch import SNAPPY as CODEC_SNAPPY
from kafka_format.records.record_batch import ZSTD as CODEC_ZSTD

__all__ = [
    "CODEC_GZIP",
    "CODEC_LZ4",
    "CODEC_NAMES",
    "CODEC_NONE",
    "CODEC_SNAPPY",
    "CODEC_ZSTD",
    "CONTROL_ABORT",
    "CONTROL_COMMIT",
    "CREATE_TIME",
    "LOG_APPEND_TIME",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "BuiltBatch",
    "Record",
    "build_control_batch",
    "build_empty_batch",
    "build_legacy_messages",
    "build_legacy_wrapper",
    "build_v2_batch",
    "compress",
    "encode_record",
    "encode_varint",
    "frame_v2_batch",
    "legacy_entry",
]

# Kafka's ids, sentinels, attribute bits and layouts are the record formats' (records/record_batch.py,
# entry.py, batch_v2.py, legacy.py, control.py); what only a writer needs is declared here.
END_TXN_MARKER_VERSION = 0
CONTROL_KEY_VERSION = 0
V2_CRC = struct.Struct(">I")             # crc (CRC-32C of attributes..end), packed once the CRC is known
LEGACY_CRC = struct.Struct(">I")         # crc (CRC-32 of magic..end)
LEGACY_V0_FIELDS = struct.Struct(">bb")   # magic, attributes
LEGACY_V1_FIELDS = struct.Struct(">bbq")  # magic, attributes, timestamp


# --- varints ------------------------------------------------------------------------------
def encode_varint(value: int) -> bytes:
    """Zigzag LEB128 varint/varlong (``ByteUtils.writeVarint`` / ``writeVarlong``)."""
    v = (value << 1) ^ (value >> 63)
    v &= (1 << 64) - 1
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


# --- records ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Record:
    """One record to write.  ``offset_delta`` defaults to its index in the batch (set it to
    leave the gaps a compacted batch has)."""

    key: bytes | None = None
    value: bytes | None = None
    timestamp: int = NO_TIMESTAMP
    headers: tuple[tuple[str, bytes | None], ...] = ()
    offset_delta: int | None = None


@dataclass(frozen=True)
class BuiltBatch:
    """Bytes of one log entry (v2 batch or legacy shallow message) plus the facts a broker's
    log layer derives from it when appending (``LogAppendInfo`` / ``ProducerAppendInfo``)."""

    data: bytes
    magic: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    record_count: int
    codec: int = CODEC_NONE
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    transactional: bool = False
    control_type: int | None = None
    coordinator_epoch: int = -1
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    records: tuple[Record, ...] = field(default=(), repr=False)

    @property
    def size(self) -> int:
        """Bytes on disk."""
        return len(self.data)

    @property
    def last_sequence(self) -> int:
        """``baseSequence + lastOffsetDelta`` with Kafka's wraparound, or -1."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + (self.last_offset - self.base_offset)) % (1 << 31)


def _length_prefixed(data: bytes | None) -> bytes:
    if data is None:
        return encode_varint(-1)
    return encode_varint(len(data)) + data


def encode_record(record: Record, offset_delta: int, timestamp_delta: int) -> bytes:
    """One v2 record, length prefix included (``DefaultRecord.writeTo``)."""
    body = [b"\x00", encode_varint(timestamp_delta), encode_varint(offset_delta),
            _length_prefixed(record.key), _length_prefixed(record.value),
            encode_varint(len(record.headers))]
    for hkey, hvalue in record.headers:
        body.append(_length_prefixed(hkey.encode("utf-8")))
        body.append(_length_prefixed(hvalue))
    payload = b"".join(body)
    return encode_varint(len(payload)) + payload


def _v2_attributes(codec: int, timestamp_type: int, transactional: bool, control: bool,
                   delete_horizon: bool) -> int:
    attributes = codec & CODEC_MASK
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if transactional:
        attributes |= TRANSACTIONAL_MASK
    if control:
        attributes |= CONTROL_MASK
    if delete_horizon:
        attributes |= DELETE_HORIZON_MASK
    return attributes


def _v2_frame(*, base_offset: int, partition_leader_epoch: int, attributes: int,
              last_offset_delta: int, base_timestamp: int, max_timestamp: int, producer_id: int,
              producer_epoch: int, base_sequence: int, count: int, records_region: bytes) -> bytes:
    length = V2_HEADER_SIZE - LOG_OVERHEAD + len(records_region)
    header = bytearray(V2_HEADER.pack(base_offset, length, partition_leader_epoch, MAGIC_V2, 0, attributes,
                                      last_offset_delta, base_timestamp, max_timestamp, producer_id,
                                      producer_epoch, base_sequence, count))
    crc = crc32c(records_region, crc32c(memoryview(header)[batch_v2.ATTRIBUTES_OFFSET:]))
    V2_CRC.pack_into(header, batch_v2.CRC_OFFSET, crc)
    return bytes(header) + records_region


def frame_v2_batch(
    records_region: bytes,
    *,
    base_offset: int,
    last_offset_delta: int,
    count: int,
    base_timestamp: int,
    max_timestamp: int,
    codec: int = CODEC_NONE,
    timestamp_type: int = CREATE_TIME,
    transactional: bool = False,
    control: bool = False,
    delete_horizon: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    level: int | None = None,
) -> bytes:
    """A v2 batch around ``records_region`` (``count`` encoded records, uncompressed; deltas from
    ``base_offset`` and ``base_timestamp``): compressed with ``codec``, header and CRC-32C
    (``MemoryRecordsBuilder.close``).  ``delete_horizon``: bit 6 set (``base_timestamp`` is it)."""
    region = compress(codec, records_region, magic=MAGIC_V2, level=level) if codec != CODEC_NONE else records_region
    attributes = _v2_attributes(codec, timestamp_type, transactional, control, delete_horizon)
    return _v2_frame(base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
                     attributes=attributes, last_offset_delta=last_offset_delta, base_timestamp=base_timestamp,
                     max_timestamp=max_timestamp, producer_id=producer_id, producer_epoch=producer_epoch,
                     base_sequence=base_sequence, count=count, records_region=region)


def build_v2_batch(
    records: Sequence[Record],
    *,
    base_offset: int,
    codec: int = CODEC_NONE,
    timestamp_type: int = CREATE_TIME,
    log_append_time: int | None = None,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    control: bool = False,
    delete_horizon: int | None = None,
    last_offset_delta: int | None = None,
    level: int | None = None,
) -> BuiltBatch:
    """A magic-2 batch as the broker stores it.

    CreateTime: ``baseTimestamp`` = first record's timestamp, ``maxTimestamp`` = max record
    timestamp.  LogAppendTime (``log_append_time`` required): the broker only flips the
    attribute and sets ``maxTimestamp`` (``LogValidator`` in-place path), so record deltas
    keep the producer's timestamps.  ``delete_horizon``: bit 6 set and ``baseTimestamp`` =
    horizon, deltas re-based on it (``MemoryRecords.filterTo``).  ``last_offset_delta``
    defaults to the last record's delta (a cleaned batch keeps its original one).
    """
    if not records:
        raise ValueError("use build_empty_batch for a batch without records")
    if timestamp_type == LOG_APPEND_TIME and log_append_time is None:
        raise ValueError("LogAppendTime batches need log_append_time")
    deltas = [r.offset_delta if r.offset_delta is not None else i for i, r in enumerate(records)]
    if any(b <= a for a, b in itertools.pairwise(deltas)) or deltas[0] < 0:
        raise ValueError("offset deltas must be non-negative and increasing")
    lod = deltas[-1] if last_offset_delta is None else last_offset_delta
    if lod < deltas[-1]:
        raise ValueError("last_offset_delta below the last record's delta")
    first_ts = records[0].timestamp
    base_ts = first_ts if delete_horizon is None else delete_horizon
    record_max = max(r.timestamp for r in records)
    max_ts = log_append_time if timestamp_type == LOG_APPEND_TIME else record_max
    assert max_ts is not None
    raw = b"".join(encode_record(r, d, r.timestamp - base_ts) for r, d in zip(records, deltas))
    data = frame_v2_batch(raw, base_offset=base_offset, last_offset_delta=lod, count=len(records),
                          base_timestamp=base_ts, max_timestamp=max_ts, codec=codec, timestamp_type=timestamp_type,
                          transactional=transactional, control=control, delete_horizon=delete_horizon is not None,
                          partition_leader_epoch=partition_leader_epoch, producer_id=producer_id,
                          producer_epoch=producer_epoch, base_sequence=base_sequence, level=level)
    # the broker's shallow offset of the max timestamp is the batch's last offset (KAFKA-16310)
    return BuiltBatch(data=data, magic=MAGIC_V2, base_offset=base_offset, last_offset=base_offset + lod,
                      max_timestamp=max_ts, offset_of_max_timestamp=base_offset + lod,
                      record_count=len(records), codec=codec, producer_id=producer_id,
                      producer_epoch=producer_epoch, base_sequence=base_sequence,
                      transactional=transactional, partition_leader_epoch=partition_leader_epoch,
                      records=tuple(records))


def build_control_batch(
    control_type: int,
    *,
    base_offset: int,
    timestamp: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> BuiltBatch:
    """A COMMIT/ABORT marker batch (``MemoryRecords.withEndTransactionMarker``): transactional +
    control, one record, no sequence, CreateTime = the coordinator's timestamp."""
    if control_type not in (CONTROL_ABORT, CONTROL_COMMIT):
        raise ValueError("control_type must be CONTROL_ABORT or CONTROL_COMMIT")
    record = Record(key=control.CONTROL_KEY.pack(CONTROL_KEY_VERSION, control_type),
                    value=control.END_TXN_VALUE.pack(END_TXN_MARKER_VERSION, coordinator_epoch),
                    timestamp=timestamp)
    built = build_v2_batch([record], base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
                           producer_id=producer_id, producer_epoch=producer_epoch, transactional=True,
                           control=True)
    return BuiltBatch(data=built.data, magic=MAGIC_V2, base_offset=base_offset, last_offset=base_offset,
                      max_timestamp=timestamp, offset_of_max_timestamp=base_offset, record_count=1,
                      producer_id=producer_id, producer_epoch=producer_epoch, transactional=True,
                      control_type=control_type, coordinator_epoch=coordinator_epoch,
                      partition_leader_epoch=partition_leader_epoch, records=(record,))


def build_empty_batch(
    *,
    base_offset: int,
    last_offset_delta: int,
    max_timestamp: int,
    timestamp_type: int = CREATE_TIME,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    control: bool = False,
) -> BuiltBatch:
    """The header-only batch compaction leaves (``DefaultRecordBatch.writeEmptyHeader``):
    count 0, length 49, no compression, baseTimestamp -1, delete-horizon bit clear."""
    attributes = _v2_attributes(CODEC_NONE, timestamp_type, transactional, control, False)
    data = _v2_frame(base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
                     attributes=attributes, last_offset_delta=last_offset_delta,
                     base_timestamp=NO_TIMESTAMP, max_timestamp=max_timestamp, producer_id=producer_id,
                     producer_epoch=producer_epoch, base_sequence=base_sequence, count=0,
                     records_region=b"")
    return BuiltBatch(data=data, magic=MAGIC_V2, base_offset=base_offset,
                      last_offset=base_offset + last_offset_delta, max_timestamp=max_timestamp,
                      offset_of_max_timestamp=base_offset + last_offset_delta, record_count=0,
                      producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
                      transactional=transactional, partition_leader_epoch=partition_leader_epoch)


# --- legacy -------------------------------------------------------------------------------
def _legacy_message(magic: int, attributes: int, timestamp: int, key: bytes | None,
                    value: bytes | None) -> bytes:
    if magic == MAGIC_V0:
        fields = LEGACY_V0_FIELDS.pack(magic, attributes)
    elif magic == MAGIC_V1:
        fields = LEGACY_V1_FIELDS.pack(magic, attributes, timestamp)
    else:
        raise ValueError("legacy magic must be 0 or 1")
    parts = [fields]
    for item in (key, value):
        if item is None:
            parts.append(legacy.LENGTH.pack(-1))
        else:
            parts += [legacy.LENGTH.pack(len(item)), item]
    body = b"".join(parts)
    return LEGACY_CRC.pack(crc32(body)) + body


def _log_entry(offset: int, message: bytes) -> bytes:
    return ENTRY.pack(offset, len(message)) + message


def legacy_entry(magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None,
                 offset: int) -> bytes:
    """One magic 0/1 log entry: offset, size and the message (``LegacyRecord.write``)."""
    return _log_entry(offset, _legacy_message(magic, attributes, timestamp, key, value))


def _legacy_ts_attr(magic: int, timestamp_type: int) -> int:
    return TIMESTAMP_TYPE_MASK if magic == MAGIC_V1 and timestamp_type == LOG_APPEND_TIME else 0


def build_legacy_messages(
    records: Iterable[Record],
    *,
    magic: int,
    base_offset: int,
    timestamp_type: int = CREATE_TIME,
    log_append_time: int | None = None,
) -> list[BuiltBatch]:
    """Uncompressed magic 0/1 messages, one log entry (shallow batch) per record with
    consecutive absolute offsets.  v1 LogAppendTime: the message's own timestamp field holds
    the append time.  v0: no timestamp."""
    out: list[BuiltBatch] = []
    for i, record in enumerate(records):
        offset = base_offset + i
        if record.headers:
            raise ValueError("legacy messages have no headers")
        if magic == MAGIC_V1:
            ts = log_append_time if timestamp_type == LOG_APPEND_TIME else record.timestamp
            if ts is None:
                raise ValueError("LogAppendTime messages need log_append_time")
        else:
            ts = NO_TIMESTAMP
        msg = _legacy_message(magic, _legacy_ts_attr(magic, timestamp_type), ts, record.key, record.value)
        out.append(BuiltBatch(data=_log_entry(offset, msg), magic=magic, base_offset=offset,
                              last_offset=offset,
                              max_timestamp=ts, offset_of_max_timestamp=offset, record_count=1,
                              records=(record,)))
    return out


def build_legacy_wrapper(
    records: Sequence[Record],
    *,
    magic: int,
    base_offset: int,
    codec: int,
    timestamp_type: int = CREATE_TIME,
    log_append_time: int | None = None,
    level: int | None = None,
) -> BuiltBatch:
    """A compressed magic 0/1 wrapper message holding ``records`` at consecutive offsets
    from ``base_offset``.  Inner v1 messages carry relative offsets and their own CreateTime
    timestamps; the wrapper carries offset = last absolute offset and timestamp = max inner
    timestamp, or the append time for LogAppendTime (set in place by the broker, inner
    messages untouched).  Inner v0 messages carry absolute offsets."""
    if codec == CODEC_NONE or codec == CODEC_ZSTD:
        raise ValueError("legacy wrappers need gzip, snappy or lz4")
    if not records:
        raise ValueError("a wrapper needs at least one inner message")
    inner = []
    for i, record in enumerate(records):
        if record.headers:
            raise ValueError("legacy messages have no headers")
        inner_offset = i if magic == MAGIC_V1 else base_offset + i
        ts = record.timestamp if magic == MAGIC_V1 else NO_TIMESTAMP
        inner.append(_log_entry(inner_offset, _legacy_message(magic, 0, ts, record.key, record.value)))
    value = compress(codec, b"".join(inner), magic=magic, level=level)
    last = base_offset + len(records) - 1
    if magic == MAGIC_V1:
        if timestamp_type == LOG_APPEND_TIME:
            if log_append_time is None:
                raise ValueError("LogAppendTime wrappers need log_append_time")
            wrapper_ts = log_append_time
        else:
            wrapper_ts = max(r.timestamp for r in records)
    else:
        wrapper_ts = NO_TIMESTAMP
    attributes = (codec & CODEC_MASK) | _legacy_ts_attr(magic, timestamp_type)
    msg = _legacy_message(magic, attributes, wrapper_ts, None, value)
    return BuiltBatch(data=_log_entry(last, msg), magic=magic, base_offset=base_offset, last_offset=last,
                      max_timestamp=wrapper_ts, offset_of_max_timestamp=last, record_count=len(records),
                      codec=codec, records=tuple(records))


__all__ += ["MAGIC_V0", "MAGIC_V1", "MAGIC_V2", "V2_HEADER", "V2_HEADER_SIZE"]
