"""Generated broker log dirs for ``make bench-scale``: N GB of uncompressed record bytes.

Shape (deterministic, seeded): v2 batches of about 16 KiB of records (a producer's default
``batch.size``), lz4; keys of 16-32 bytes drawn from a key space of ``KEYS_PER_PARTITION`` keys
per partition (so compaction has work: most records are superseded), values of 100-500 bytes of
JSON-like text, 5 % tombstones (null value), 128 MiB segments.  A pool of distinct batches
(``POOL_BYTES`` of records) is built once per partition with :mod:`kafka_format.writer` and
tiled up to the partition's size, each copy with its own base offset (not covered by the CRC),
so generating many GB is mostly copying.  Written with the product's own writer
(:class:`kafka_format.writer.LogDirWriter`: indexes, checkpoints, ``meta.properties``).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kafka_format.writer import LogDirWriter, Record, build_v2_batch
from kafka_format.writer.batches import BuiltBatch

__all__ = ["LAYOUTS", "ScaleLayout", "generate", "record_bytes"]

GIB = 1 << 30
SEGMENT_BYTES = 128 << 20
BATCH_RECORD_BYTES = 16 << 10
POOL_BYTES = 24 << 20
KEYS_PER_PARTITION = 200_000
TOMBSTONE_SHARE = 0.05
LZ4 = 3
TIMESTAMP_MS = 1_700_000_000_000
_BASE_OFFSET = struct.Struct(">q")
_WORDS = ("order", "user", "payment", "created", "updated", "status", "region", "amount", "currency",
          "item", "quantity", "price", "session", "device", "checkout", "country", "city", "ok")


@dataclass(frozen=True)
class ScaleLayout:
    """Partitions of one generated log dir: uncompressed record bytes per partition."""

    name: str
    partition_bytes: tuple[int, ...]

    @property
    def total_bytes(self) -> int:
        return sum(self.partition_bytes)


LAYOUTS = {
    "1g": ScaleLayout("1g", (GIB // 4,) * 4),
    "4g": ScaleLayout("4g", (GIB // 2,) * 8),
    "16g": ScaleLayout("16g", (9 * GIB,) + (GIB,) * 7),   # one partition of 9 GB
}


def record_bytes(key: bytes | None, value: bytes | None) -> int:
    """What "uncompressed" counts: key plus value bytes."""
    return len(key or b"") + len(value or b"")


def _value(rng: random.Random) -> bytes:
    size = rng.randint(100, 500)
    parts = []
    length = 2
    while length < size:
        word = f'"{rng.choice(_WORDS)}":{rng.randint(0, 10**rng.randint(1, 9))},'
        parts.append(word)
        length += len(word)
    return ("{" + "".join(parts))[: size - 1].encode() + b"}"


def _key(rng: random.Random, partition: int) -> bytes:
    k = rng.randrange(KEYS_PER_PARTITION)
    return f"p{partition}-key-{k:08d}".encode().ljust(16 + k % 17, b".")   # 16..32 bytes


def _pool(partition: int, seed: int) -> tuple[list[BuiltBatch], int]:
    """Distinct batches (base offsets from 0) and their uncompressed record bytes."""
    rng = random.Random(seed * 1000 + partition)
    pool: list[BuiltBatch] = []
    total = 0
    offset = 0
    while total < POOL_BYTES:
        records: list[Record] = []
        size = 0
        while size < BATCH_RECORD_BYTES:
            key = _key(rng, partition)
            value = None if rng.random() < TOMBSTONE_SHARE else _value(rng)
            records.append(Record(key, value, TIMESTAMP_MS + offset + len(records)))
            size += record_bytes(key, value)
        pool.append(build_v2_batch(records, base_offset=offset, codec=LZ4))
        offset += len(records)
        total += size
    return pool, total


def _tiled(pool: list[BuiltBatch], pool_bytes: int, target: int) -> Iterator[BuiltBatch]:
    span = pool[-1].last_offset + 1
    copies = max(1, -(-target // pool_bytes))
    for c in range(copies):
        shift = c * span
        for b in pool:
            data = _BASE_OFFSET.pack(b.base_offset + shift) + b.data[8:]
            yield BuiltBatch(data=data, magic=b.magic, base_offset=b.base_offset + shift,
                             last_offset=b.last_offset + shift, max_timestamp=b.max_timestamp,
                             offset_of_max_timestamp=b.offset_of_max_timestamp + shift,
                             record_count=b.record_count, codec=b.codec)


def generate(root: Path, layout: ScaleLayout, *, topic: str = "scale", seed: int = 14) -> dict[str, int]:
    """Write ``root/broker-1`` (one broker log dir, ``topic`` with ``layout``'s partitions);
    returns totals: ``records``, ``record_bytes`` (uncompressed), ``log_bytes`` (on disk)."""
    ld = LogDirWriter(root / "broker-1", node_id=1, cluster_id="U2NhbGVCZW5jaENsdXN0ZQ")
    totals = {"records": 0, "record_bytes": 0, "log_bytes": 0}
    for partition, target in enumerate(layout.partition_bytes):
        pool, pool_bytes = _pool(partition, seed)
        w = ld.partition(topic, partition, topic_id=bytes([partition + 1]) * 16, segment_bytes=SEGMENT_BYTES,
                         take_snapshots=False)
        copies = max(1, -(-target // pool_bytes))
        for b in _tiled(pool, pool_bytes, target):
            w.append(b)
            totals["records"] += b.record_count
            totals["log_bytes"] += b.size
        totals["record_bytes"] += copies * pool_bytes
        w.close()
    ld.close(written_at_ms=TIMESTAMP_MS + 86_400_000)
    return totals
