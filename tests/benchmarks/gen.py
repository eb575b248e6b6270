"""Benchmark corpora: ``.log`` segments of realistic v2 batches, written by aiokafka.

The batches come from aiokafka's compiled ``DefaultRecordBatchBuilder`` (an
implementation independent of ours), so the same bytes can be fed to every decoder
under test.  Shape (deterministic, seeded):

* batches of 16 KiB .. 1 MiB (log-uniform), the producer's ``batch.size`` range;
* records of 100 .. 1000 bytes of JSON-like text (compresses about as well as
  typical event payloads), a key on 90 % of the records, one or two headers on 30 %;
* a pool of distinct batches (24 MiB) is built once and tiled up to the requested
  size, each copy given its own base offset (the base offset is not covered by the
  CRC); compressed variants hold the same records as the uncompressed one.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

from aiokafka.record._crecords import DefaultRecordBatchBuilder

__all__ = ["CODECS", "corpus_path", "make_log"]

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BASE_OFFSET = struct.Struct(">q")  # first field of every log entry (Records.OFFSET_OFFSET = 0)

_WORDS = ("order", "user", "payment", "created", "updated", "status", "region", "amount",
          "currency", "EUR", "USD", "item", "quantity", "price", "session", "device", "mobile",
          "web", "click", "view", "checkout", "cart", "sku", "country", "city", "ok", "failed")
_POOL_BYTES = 24 << 20  # distinct batches per corpus


def _value(rng: random.Random, size: int) -> bytes:
    parts = []
    length = 2
    while length < size:
        word = f'"{rng.choice(_WORDS)}":{rng.randint(0, 10**rng.randint(1, 9))},'
        parts.append(word)
        length += len(word)
    return ("{" + "".join(parts))[: size - 1].encode() + b"}"


Record = tuple[bytes | None, bytes, list[tuple[str, bytes | None]]]


def _records(rng: random.Random) -> list[Record]:
    """The records of one batch: about 16 KiB .. 1 MiB (log-uniform) of keys and values."""
    target = int(2 ** rng.uniform(14, 20))
    records: list[Record] = []
    raw = 0
    while raw < target:
        key = None if rng.random() < 0.1 else f"user-{rng.randrange(10**8):08d}".encode()
        value = _value(rng, rng.randint(100, 1000))
        headers: list[tuple[str, bytes | None]] = []
        if rng.random() < 0.3:
            headers.append(("trace-id", rng.randbytes(16).hex().encode()))
            if rng.random() < 0.5:
                headers.append(("source", b"checkout-service"))
        records.append((key, value, headers))
        raw += len(value) + (len(key) if key else 0) + 24
    return records


def _build(records: list[Record], codec: int, timestamp: int) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, 0, -1, -1, -1, 1 << 30)
    for delta, (key, value, headers) in enumerate(records):
        builder.append(delta, timestamp + delta, key, value, headers)
    return bytes(builder.build())


def make_log(codec: str, total_bytes: int, seed: int = 7) -> bytes:
    """A ``.log`` body of v2 batches compressed with ``codec``.

    The records are the same for every codec (same seed): as many batches as make
    ``total_bytes`` of *uncompressed* batches.
    """
    rng = random.Random(seed)
    pool: list[tuple[bytes, int, int]] = []  # (batch bytes, records, uncompressed batch size)
    pool_raw = 0
    while pool_raw < min(_POOL_BYTES, total_bytes):
        records = _records(rng)
        timestamp = 1_700_000_000_000 + len(pool) * 1000
        plain = _build(records, 0, timestamp)
        batch = plain if codec == "none" else _build(records, CODECS[codec], timestamp)
        pool.append((batch, len(records), len(plain)))
        pool_raw += len(plain)
    out = bytearray()
    offset = 0
    produced = 0
    i = 0
    while produced < total_bytes:
        batch, n, raw = pool[i % len(pool)]
        start = len(out)
        out += batch
        BASE_OFFSET.pack_into(out, start, offset)
        offset += n
        produced += raw
        i += 1
    return bytes(out)


def corpus_path(directory: Path, codec: str, total_bytes: int) -> Path:
    """Path of a generated corpus, creating it when absent."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{0:020d}-{codec}-{total_bytes >> 20}MiB.log"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(make_log(codec, total_bytes))
        tmp.rename(path)
    return path
