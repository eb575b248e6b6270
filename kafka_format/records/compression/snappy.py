"""snappy (codec 2): snappy-java's xerial stream (``SnappyInputStream`` / ``SnappyOutputStream``).

The framing::

    magic 82 53 4E 41 50 50 59 00 | version int32 BE | min compatible version int32 BE
    then chunks: [compressed length int32 BE][raw snappy block (varint uncompressed length + data)]

    ``SnappyInputStream`` (snappy-java 1.1.10.5, Kafka's dependency): an empty stream is an error;
    a stream shorter than 16 bytes or not starting with the 8-byte magic is ONE raw snappy block
    (non-Java producers); the first header's version fields are not read (Redpanda wrote them
    little-endian); a chunk length equal to the magic's first four bytes starts a concatenated
    stream header (16 bytes): a bad magic there ends the stream, a version < 1 is an error; a
    negative or > 512 MiB chunk length is an error; fewer than 4 bytes left end the stream.
    The writer compresses 32 KiB of input per chunk; an empty stream is the bare header.
"""

from __future__ import annotations

import struct
from typing import Any

from kafka_format.common.errors import KafkaFormatError
from kafka_format.records.compression.base import U32, Where

_cramjam: Any
try:
    import cramjam as _cramjam
except ImportError:  # pragma: no cover - dependency is declared
    _cramjam = None
LIBRARY = _cramjam

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = struct.Struct(
    ">"
    "8s"  # magic 82 'SNAPPY' 00
    "i"   # version (1)
    "i"   # minimum compatible version (1)
)
XERIAL_CHUNK_LENGTH = struct.Struct(">i")  # compressed length of the next raw snappy block
XERIAL_MAGIC_HEAD = XERIAL_CHUNK_LENGTH.unpack(XERIAL_MAGIC[:4])[0]  # marks a concatenated header
XERIAL_VERSION = 1
XERIAL_MIN_COMPATIBLE_VERSION = 1
XERIAL_BLOCK_SIZE = 32 * 1024  # SnappyOutputStream.DEFAULT_BLOCK_SIZE (uncompressed bytes per chunk)
XERIAL_MAX_CHUNK = 512 * 1024 * 1024  # SnappyInputStream.MAX_CHUNK_SIZE
_SNAPPY_VARINT_MAX_BYTES = 5  # the raw block's uncompressed length is a 32-bit varint


def _snappy_declared_length(block: memoryview, rel: int, where: Where) -> int:
    value = 0
    for i in range(min(len(block), _SNAPPY_VARINT_MAX_BYTES)):
        b = block[i]
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            if value > U32:
                break
            return value
    raise where.error(rel, "bad snappy block length varint",
                      expected="a varint uncompressed length (<= 5 bytes, 32 bits)",
                      found=f"bytes {bytes(block[:_SNAPPY_VARINT_MAX_BYTES]).hex() or '(none)'}")


def _snappy_block(block: memoryview, remaining: int, max_output: int, rel: int,
                  where: Where) -> memoryview | bytes:
    declared = _snappy_declared_length(block, rel, where)
    if declared > remaining:
        raise where.limit(rel, max_output, f"a block declaring {declared} bytes with "
                                           f"{remaining} bytes of budget left")
    try:
        out = _cramjam.snappy.decompress_raw(block)
    except Exception as exc:  # cramjam.DecompressionError and friends
        raise where.library(rel, "corrupt snappy block", exc) from exc
    view = memoryview(out)
    if len(view) != declared:  # pragma: no cover - the library checks this itself
        raise where.error(rel, "snappy block length mismatch", expected=f"{declared} bytes",
                          found=f"{len(view)} bytes")
    return view


def decompress(buf: memoryview, max_output: int, where: Where) -> bytes | bytearray:
    n = len(buf)
    if n == 0:
        raise where.error(0, "empty snappy stream", expected="a xerial stream or a raw snappy block",
                          found="0 bytes")
    if n < XERIAL_HEADER.size or buf[:len(XERIAL_MAGIC)] != XERIAL_MAGIC:
        return bytes(_snappy_block(buf, max_output, max_output, 0, where))
    blocks: list[tuple[int, int, int]] = []  # (start, length, declared output) of each raw block
    total = 0
    pos = XERIAL_HEADER.size  # the first header's version fields are never read
    try:
        while n - pos >= XERIAL_CHUNK_LENGTH.size:
            (length,) = XERIAL_CHUNK_LENGTH.unpack_from(buf, pos)
            if length == XERIAL_MAGIC_HEAD:  # a concatenated stream starts here
                if n - pos < XERIAL_HEADER.size:
                    raise where.error(pos, "truncated concatenated xerial header",
                                      expected=f"{XERIAL_HEADER.size} bytes", found=f"{n - pos} bytes")
                magic, version, _compatible = XERIAL_HEADER.unpack_from(buf, pos)
                if magic != XERIAL_MAGIC:
                    break  # SnappyInputStream stops reading here
                if version < XERIAL_MIN_COMPATIBLE_VERSION:
                    raise where.error(pos + len(XERIAL_MAGIC), "incompatible xerial stream version",
                                      expected=f"version >= {XERIAL_MIN_COMPATIBLE_VERSION}",
                                      found=f"version {version}")
                pos += XERIAL_HEADER.size
                continue
            if length < 0 or length > XERIAL_MAX_CHUNK:
                raise where.error(pos, "invalid xerial chunk length",
                                  expected=f"0..{XERIAL_MAX_CHUNK}", found=str(length))
            start = pos + XERIAL_CHUNK_LENGTH.size
            if n - start < length:
                raise where.error(pos, "truncated xerial chunk", expected=f"{length} bytes",
                                  found=f"{n - start} bytes")
            declared = _snappy_declared_length(buf[start:start + length], start, where)
            if declared > max_output - total:
                raise where.limit(start, max_output, f"a block declaring {declared} bytes with "
                                                     f"{max_output - total} bytes of budget left")
            blocks.append((start, length, declared))
            total += declared
            pos = start + length
    except KafkaFormatError:  # stream order: a corrupt earlier block is reported first
        for start, length, _declared in blocks:
            _snappy_block(buf[start:start + length], max_output, max_output, start, where)
        raise
    # 1-3 trailing bytes end the stream (SnappyInputStream.hasNextChunk).  Every block is
    # decoded straight into one buffer of the declared total (bounded by max_output above).
    out = bytearray(total)
    view = memoryview(out)
    at = 0
    for start, length, declared in blocks:
        try:
            got = _cramjam.snappy.decompress_raw_into(buf[start:start + length], view[at:at + declared])
        except Exception as exc:  # cramjam.DecompressionError and friends
            raise where.library(start, "corrupt snappy block", exc) from exc
        if got != declared:  # pragma: no cover - the library checks this itself
            raise where.error(start, "snappy block length mismatch", expected=f"{declared} bytes",
                              found=f"{got} bytes")
        at += declared
    return out


def compress(data: bytes | memoryview) -> bytes:
    out: list[bytes | memoryview] = [XERIAL_HEADER.pack(XERIAL_MAGIC, XERIAL_VERSION,
                                                        XERIAL_MIN_COMPATIBLE_VERSION)]
    view = memoryview(data)
    for start in range(0, len(view), XERIAL_BLOCK_SIZE):
        packed = memoryview(_cramjam.snappy.compress_raw(view[start:start + XERIAL_BLOCK_SIZE]))
        out.append(XERIAL_CHUNK_LENGTH.pack(len(packed)))
        out.append(packed)
    return b"".join(out)
