"""Test helpers: batches built by kafka-python's builders, and two independent oracles.

Bytes are produced by kafka-python (``DefaultRecordBatchBuilder``,
``LegacyRecordBatchBuilder``, ``MemoryRecordsBuilder``); the features its builders
lack (LogAppendTime, control batches) are set by patching the attribute bits and
recomputing the CRC with kafka-python's own CRC function.  Oracles: kafka-python's
and aiokafka's readers decode the same bytes into plain dicts that tests compare with
our Arrow output, record for record.
"""

from __future__ import annotations

import struct
import warnings
from typing import Any

import pyarrow as pa

with warnings.catch_warnings():  # kafka-python's package import emits DeprecationWarnings
    warnings.simplefilter("ignore")
    from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords as KpMemoryRecords
    from kafka.record.util import calc_crc32, calc_crc32c

from kafka_format.records.decoder import Decoder


def _give_kafka_python_snappy() -> None:
    """kafka-python's snappy needs python-snappy (absent); lend it aiokafka's cramjam codec.

    Only the byte codec is swapped: kafka-python's record-layer logic stays its own.
    """
    import aiokafka.codec as aio_codec
    import kafka.codec as kp_codec
    import kafka.record.default_records as kp_default
    import kafka.record.legacy_records as kp_legacy

    if kp_codec.has_snappy():
        return
    kp_codec.has_snappy = lambda: True
    for module in (kp_default, kp_legacy):
        module.snappy_encode = aio_codec.snappy_encode
        module.snappy_decode = aio_codec.snappy_decode


_give_kafka_python_snappy()

__all__ = [
    "CODECS",
    "DECODERS",
    "DECODER_IDS",
    "LEGACY_CODECS",
    "aiokafka_records",
    "arrow_records",
    "build_legacy",
    "build_v2",
    "comparable",
    "kafka_python_records",
    "legacy_crc",
    "need_codec",
    "patch_v2",
    "raw_v2",
    "sample_records",
    "varint",
]

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
LEGACY_CODECS = {k: v for k, v in CODECS.items() if k != "zstd"}

# v2 header offsets, from the format (DefaultRecordBatch): attributes at 21, crc at 17.
_V2_ATTRIBUTES = struct.calcsize(">qiibI")
_V2_CRC = struct.calcsize(">qiib")
_V2_MAX_TIMESTAMP = struct.calcsize(">qiibIhiq")


def _decoders() -> list[Decoder]:
    found: list[Decoder] = [Decoder()]
    try:
        from kafka_format.records.fast import FastDecoder
    except ImportError:
        return found
    return [*found, FastDecoder()]


DECODERS = _decoders()
DECODER_IDS = [d.name for d in DECODERS]


def sample_records(n: int = 5, *, headers: bool = True, nulls: bool = True) -> list[dict[str, Any]]:
    """A varied list of records (keys/values of several sizes, nulls, repeated header keys)."""
    out = []
    for i in range(n):
        key = None if nulls and i % 4 == 1 else f"key-{i}".encode()
        value = None if nulls and i % 4 == 2 else (b"v" * (i * 37 % 300)) + bytes([i % 256])
        hdrs = []
        if headers and i % 3 != 0:
            hdrs = [("h", f"{i}".encode()), ("h", None), ("ünï", b"\x00\xff")][: 1 + i % 3]
        out.append({"timestamp": 1_700_000_000_000 + i * 13, "key": key, "value": value, "headers": hdrs})
    return out


def build_v2(records: list[dict[str, Any]], *, codec: int = 0, base_offset: int = 0,
             transactional: bool = False, producer_id: int = -1, producer_epoch: int = -1,
             base_sequence: int = -1, offset_step: int = 1) -> bytes:
    """One v2 batch by kafka-python's ``DefaultRecordBatchBuilder``."""
    builder = DefaultRecordBatchBuilder(2, codec, transactional, producer_id, producer_epoch,
                                        base_sequence, batch_size=1 << 30)
    for i, r in enumerate(records):
        builder.append(i * offset_step, r["timestamp"], r["key"], r["value"], r["headers"])
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base_offset)
    return bytes(data)


def patch_v2(data: bytes, *, set_bits: int = 0, max_timestamp: int | None = None,
             leader_epoch: int | None = None) -> bytes:
    """Set attribute bits / maxTimestamp of a v2 batch and recompute its CRC-32C (kafka-python's)."""
    buf = bytearray(data)
    (attributes,) = struct.unpack_from(">h", buf, _V2_ATTRIBUTES)
    struct.pack_into(">h", buf, _V2_ATTRIBUTES, attributes | set_bits)
    if max_timestamp is not None:
        struct.pack_into(">q", buf, _V2_MAX_TIMESTAMP, max_timestamp)
    if leader_epoch is not None:
        struct.pack_into(">i", buf, 12, leader_epoch)
    struct.pack_into(">I", buf, _V2_CRC, calc_crc32c(bytes(buf[_V2_ATTRIBUTES:])))
    return bytes(buf)


def build_legacy(records: list[dict[str, Any]], *, magic: int, codec: int = 0, base_offset: int = 0) -> bytes:
    """A v0/v1 message set by kafka-python's ``LegacyRecordBatchBuilder``."""
    builder = LegacyRecordBatchBuilder(magic, codec, batch_size=1 << 30)
    for i, r in enumerate(records):
        builder.append(base_offset + i, r["timestamp"] if magic else None, r["key"], r["value"])
    return bytes(builder.build())


def legacy_crc(message: bytes) -> int:
    """kafka-python's CRC-32 of a legacy message body (magic .. end)."""
    return calc_crc32(message)


def _norm_headers(headers: Any) -> list[tuple[str, bytes | None]]:
    return [(k, None if v is None else bytes(v)) for k, v in (headers or [])]


def _norm(offset: int, timestamp: int | None, ts_type: int | None, key: Any, value: Any,
          headers: Any) -> dict[str, Any]:
    return {
        "offset": offset,
        "timestamp": -1 if timestamp is None else timestamp,
        "timestampType": -1 if ts_type is None else ts_type,
        "key": None if key is None else bytes(key),
        "value": None if value is None else bytes(value),
        "headers": _norm_headers(headers),
    }


def kafka_python_records(data: bytes) -> list[dict[str, Any]]:
    """kafka-python's decode of ``data`` (every batch, control batches included)."""
    out = []
    records = KpMemoryRecords(bytes(data))
    while records.has_next():
        batch = records.next_batch()
        for r in batch:
            out.append(_norm(r.offset, r.timestamp, r.timestamp_type, getattr(r, "key", None),
                             getattr(r, "value", None), getattr(r, "headers", [])))
    return out


def aiokafka_records(data: bytes) -> list[dict[str, Any]]:
    """aiokafka's (C extension) decode of ``data``."""
    out = []
    records = AioMemoryRecords(bytes(data))
    while records.has_next():
        batch = records.next_batch()
        if batch is None:
            break
        for r in batch:
            out.append(_norm(r.offset, r.timestamp, r.timestamp_type, r.key, r.value,
                             getattr(r, "headers", [])))
    return out


def arrow_records(batches: list[pa.RecordBatch]) -> list[dict[str, Any]]:
    """Our decode as row dicts; ``timestamp_ms`` is the Arrow timestamp back in ms."""
    out: list[dict[str, Any]] = []
    for batch in batches:
        cols = {}
        for name, column in zip(batch.schema.names, batch.columns, strict=True):
            if name == "timestamp":
                micros = column.cast(pa.int64()).to_pylist()
                cols["timestamp_ms"] = [None if us is None else us // 1000 for us in micros]
            elif name == "headers":
                cols[name] = [[(h["key"], h["value"]) for h in hs] for hs in column.to_pylist()]
            else:
                cols[name] = column.to_pylist()
        names = list(cols)
        out.extend(dict(zip(names, values, strict=True)) for values in zip(*cols.values(), strict=True))
    return out


def comparable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Our rows reduced to the oracle fields."""
    return [{"offset": r["offset"], "timestamp": r["timestamp_ms"], "timestampType": r["timestampType"],
             "key": r["key"], "value": r["value"], "headers": r["headers"]} for r in rows]


def need_codec(name: str) -> None:
    """Skip unless our decompression module is present (it is another module's scope)."""
    if name in ("none",):
        return
    import pytest

    pytest.importorskip("kafka_format.records.compression", reason="kafka_format.records.compression not built yet")


def raw_v2(payload: bytes, count: int, *, base_offset: int = 0, attributes: int = 0,
           last_offset_delta: int | None = None, base_timestamp: int = 0, max_timestamp: int = 0,
           producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
    """A v2 batch around an arbitrary records payload (for malformed-record tests), valid CRC."""
    last = max(count - 1, 0) if last_offset_delta is None else last_offset_delta
    body = struct.pack(">hiqqqhii", attributes, last, base_timestamp, max_timestamp, producer_id,
                       producer_epoch, base_sequence, count) + payload
    crc = calc_crc32c(body)
    return struct.pack(">qiibI", base_offset, len(body) + 9, -1, 2, crc) + body


def varint(value: int) -> bytes:
    """Zigzag varint encoding by kafka-python's encoder."""
    from kafka.record.util import encode_varint

    out = bytearray()
    encode_varint(value, out.append)
    return bytes(out)
