"""The Schema Registry wire format, read column-wise from an Arrow binary array.

A serialized key or value is ``0x00`` (magic), a 4-byte big-endian schema id, then the payload
(Confluent's ``AbstractKafkaSchemaSerDe``: ``MAGIC_BYTE = 0x0``, ``idSize = 4``); Protobuf
payloads start with the message-index list (:func:`kafka_format.registry.protobuf.read_message_indexes`).
:func:`wire_headers` reads magic and id of every row with numpy, without a Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

__all__ = ["HEADER_SIZE", "MAGIC_BYTE", "WireHeaders", "wire_headers"]

MAGIC_BYTE = 0
HEADER_SIZE = 5


@dataclass(frozen=True)
class WireHeaders:
    """Per row: ``present`` (not null), ``ok`` (long enough and magic 0), the schema ``id``
    (-1 where not ok), the payload's ``start``/``end`` in ``data``; and why a present row is not ok."""

    present: np.ndarray
    ok: np.ndarray
    ids: np.ndarray
    start: np.ndarray
    end: np.ndarray
    data: memoryview
    short: np.ndarray
    bad_magic: np.ndarray


def wire_headers(arr: pa.Array) -> WireHeaders:
    """Magic byte, schema id and payload bounds of every row of a binary array."""
    off_type: type[np.int64] | type[np.int32]
    if pa.types.is_large_binary(arr.type):
        off_type = np.int64
    elif pa.types.is_binary(arr.type):
        off_type = np.int32
    else:
        raise TypeError(f"expected a binary column, found {arr.type}")
    n = len(arr)
    bufs = arr.buffers()
    offsets = (
        np.frombuffer(bufs[1], dtype=off_type, count=arr.offset + n + 1)[arr.offset :].astype(np.int64)
        if n
        else np.zeros(1, np.int64)
    )
    raw = bufs[2]
    data = np.frombuffer(raw, dtype=np.uint8) if raw is not None and raw.size else np.zeros(0, np.uint8)
    present = (
        ~np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool) if n else np.zeros(0, bool)
    )
    start, end = offsets[:-1], offsets[1:]
    length = end - start
    long_enough = present & (length >= HEADER_SIZE)
    first = np.where(present & (length >= 1), start, 0)
    magic = data[first] if data.size else np.zeros(n, np.uint8)
    ok = long_enough & (magic == MAGIC_BYTE)
    idx = np.where(ok, start, 0)
    ids = np.full(n, -1, dtype=np.int64)
    if data.size and ok.any():
        b = [data[idx + k].astype(np.int64) for k in range(1, 5)]
        raw_id = (b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]
        raw_id = np.where(raw_id >= 1 << 31, raw_id - (1 << 32), raw_id)  # Java int
        ids = np.where(ok, raw_id, -1)
    return WireHeaders(
        present=present,
        ok=ok,
        ids=ids,
        start=start + HEADER_SIZE,
        end=end,
        data=memoryview(raw) if raw is not None else memoryview(b""),
        short=present & (length < HEADER_SIZE),
        bad_magic=long_enough & (magic != MAGIC_BYTE),
    )
