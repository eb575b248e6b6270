"""lz4 (codec 3): Kafka's LZ4 frame (``Lz4BlockInputStream`` / ``Lz4BlockOutputStream``).

The framing::

    magic 0x184D2204 uint32 LE | FLG | BD | [content size uint64 LE if FLG bit 3] | HC
    blocks: [size uint32 LE, bit 31 = stored uncompressed, 0 = end mark][data][xxh32 if FLG bit 4]
    after the end mark: [content checksum uint32 if FLG bit 2] (read, never verified by Kafka)

    FLG bits 7-6 version (must be 01), 5 block independence (must be 1: dependent blocks are
    unsupported), 4 block checksum, 3 content size, 2 content checksum, 1-0 reserved (must be 0).
    BD bit 7 and bits 3-0 reserved (must be 0), bits 6-4 block max size 4..7 (64 KiB..4 MiB).
    HC = (xxh32(FLG .. end of descriptor, seed 0) >> 8) & 0xFF.  Magic 0 data was written with the
    HC computed over frame magic + descriptor (KAFKA-3160), so for magic 0 the HC is ignored and
    written the broken way; for magic >= 1 a wrong HC is an error.  The block checksum covers the
    stored block bytes.  Kafka reads ONE frame: bytes after the end mark are ignored; a missing end
    mark is an error ("Stream ended prematurely").  Kafka writes FLG 0x60, BD 0x40, 64 KiB blocks,
    a block stored uncompressed when compression does not make it smaller, no checksums.
"""

from __future__ import annotations

import importlib
import struct
from typing import Any

from kafka_format.records.compression.base import DEFAULT_LEVELS, U32, Where, join_parts
from kafka_format.records.record_batch import LZ4, MAGIC_V0

_cramjam: Any
_lz4_block: Any
_lz4_frame: Any
try:
    import cramjam as _cramjam
except ImportError:  # pragma: no cover - dependency is declared
    _cramjam = None
try:
    _lz4_block = importlib.import_module("lz4.block")
    _lz4_frame = importlib.import_module("lz4.frame")
except ImportError:  # pragma: no cover - dependency is declared
    _lz4_block = _lz4_frame = None
LIBRARY = _lz4_block

LZ4_MAGIC = struct.Struct("<I")  # 0x184D2204
LZ4_FRAME_MAGIC = 0x184D2204
LZ4_DESCRIPTOR = struct.Struct(
    "<"
    "B"   # FLG
    "B"   # BD
)
LZ4_CONTENT_SIZE = struct.Struct("<Q")  # present when FLG bit 3 is set (skipped by Kafka)
LZ4_BLOCK_SIZE = struct.Struct("<I")    # bit 31: stored uncompressed; 0: end mark
LZ4_CHECKSUM = struct.Struct("<I")      # block checksum / content checksum (xxh32)
LZ4_DESCRIPTOR_OFFSET = LZ4_MAGIC.size
LZ4_MIN_HEADER = LZ4_MAGIC.size + LZ4_DESCRIPTOR.size  # Kafka needs these 6 bytes to start
LZ4_FLG_VERSION_SHIFT = 6
LZ4_FLG_VERSION_MASK = 0x3
LZ4_FLG_VERSION = 1
LZ4_FLG_INDEPENDENT = 0x20
LZ4_FLG_BLOCK_CHECKSUM = 0x10
LZ4_FLG_CONTENT_SIZE = 0x08
LZ4_FLG_CONTENT_CHECKSUM = 0x04
LZ4_FLG_RESERVED = 0x03
LZ4_BD_RESERVED = 0x8F
LZ4_BD_SIZE_SHIFT = 4
LZ4_BD_SIZE_MASK = 0x7
LZ4_BD_SIZE_MIN = 4   # 64 KiB
LZ4_BD_SIZE_MAX = 7   # 4 MiB
LZ4_INCOMPRESSIBLE_MASK = 0x80000000
LZ4_SIZE_MASK = 0x7FFFFFFF
#: What Kafka writes: version 01 + independent blocks, no checksums, no content size; 64 KiB blocks.
KAFKA_LZ4_FLG = (LZ4_FLG_VERSION << LZ4_FLG_VERSION_SHIFT) | LZ4_FLG_INDEPENDENT  # 0x60
KAFKA_LZ4_BD = LZ4_BD_SIZE_MIN << LZ4_BD_SIZE_SHIFT  # 0x40
KAFKA_LZ4_BLOCK_SIZE = 64 * 1024
LZ4_END_MARK = LZ4_BLOCK_SIZE.pack(0)


_XXH_P1 = 2654435761
_XXH_P2 = 2246822519
_XXH_P3 = 3266489917
_XXH_P4 = 668265263
_XXH_P5 = 374761393
_XXH_STRIPE = struct.Struct("<4I")
_XXH_WORD = struct.Struct("<I")


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & U32


def xxhash32(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """XXH32 of ``data`` (plain Python; meant for the few bytes of an lz4 frame descriptor)."""
    buf = memoryview(data).cast("B")
    n = len(buf)
    i = 0
    if n >= 16:
        v1 = (seed + _XXH_P1 + _XXH_P2) & U32
        v2 = (seed + _XXH_P2) & U32
        v3 = seed & U32
        v4 = (seed - _XXH_P1) & U32
        limit = n - 16
        while i <= limit:
            a, b, c, d = _XXH_STRIPE.unpack_from(buf, i)
            v1 = (_rotl((v1 + a * _XXH_P2) & U32, 13) * _XXH_P1) & U32
            v2 = (_rotl((v2 + b * _XXH_P2) & U32, 13) * _XXH_P1) & U32
            v3 = (_rotl((v3 + c * _XXH_P2) & U32, 13) * _XXH_P1) & U32
            v4 = (_rotl((v4 + d * _XXH_P2) & U32, 13) * _XXH_P1) & U32
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & U32
    else:
        h = (seed + _XXH_P5) & U32
    h = (h + n) & U32
    while i + 4 <= n:
        (w,) = _XXH_WORD.unpack_from(buf, i)
        h = (_rotl((h + w * _XXH_P3) & U32, 17) * _XXH_P4) & U32
        i += 4
    while i < n:
        h = (_rotl((h + buf[i] * _XXH_P5) & U32, 11) * _XXH_P1) & U32
        i += 1
    h ^= h >> 15
    h = (h * _XXH_P2) & U32
    h ^= h >> 13
    h = (h * _XXH_P3) & U32
    h ^= h >> 16
    return h


_HC_CACHE: dict[bytes, int] = {}


def _lz4_header_checksum(covered: bytes | memoryview) -> int:
    """HC byte over ``covered``; descriptors without content size (<= 6 bytes) are memoised."""
    key = bytes(covered)
    hc = _HC_CACHE.get(key)
    if hc is None:
        hc = (xxhash32(key) >> 8) & 0xFF
        if len(key) <= LZ4_MIN_HEADER:
            _HC_CACHE[key] = hc
    return hc

def _lz4_verified_block(word: int, block: memoryview, checksum: memoryview, bd: int,
                        rel: int, where: Where) -> bytes:
    """Decode one block whose xxh32 block checksum must match, natively.

    The block is wrapped in a one-block lz4 frame with the block-checksum flag; ``lz4.frame``
    checks xxh32(stored block bytes) exactly as Kafka does and decompresses in the same call.
    """
    flg = KAFKA_LZ4_FLG | LZ4_FLG_BLOCK_CHECKSUM
    descriptor = LZ4_DESCRIPTOR.pack(flg, bd)
    frame = b"".join((LZ4_MAGIC.pack(LZ4_FRAME_MAGIC), descriptor,
                      bytes((_lz4_header_checksum(descriptor),)), LZ4_BLOCK_SIZE.pack(word), block,
                      checksum, LZ4_END_MARK))
    try:
        return _lz4_frame.decompress(frame)
    except Exception as exc:  # RuntimeError from LZ4F
        if "checksum" in str(exc).lower():
            raise where.error(rel + LZ4_BLOCK_SIZE.size + len(block), "block checksum mismatch",
                              expected="xxh32 of the stored block",
                              found=f"stored {LZ4_CHECKSUM.unpack(checksum)[0]:#010x}") from exc
        raise where.library(rel, "corrupt lz4 block", exc) from exc


def _lz4_frame_header(buf: memoryview, magic: int, where: Where) -> tuple[int, int, int, int]:
    """Parse the frame header like ``Lz4BlockInputStream.readHeader``: (FLG, BD, max block, end)."""
    n = len(buf)
    if n < LZ4_MIN_HEADER:
        raise where.error(0, "stream ended prematurely", expected="an lz4 frame header",
                          found=f"{n} bytes")
    (frame_magic,) = LZ4_MAGIC.unpack_from(buf, 0)
    if frame_magic != LZ4_FRAME_MAGIC:
        raise where.error(0, "stream unsupported (invalid magic bytes)",
                          expected=f"lz4 frame magic {LZ4_FRAME_MAGIC:#010x}",
                          found=f"{frame_magic:#010x}")
    flg, bd = LZ4_DESCRIPTOR.unpack_from(buf, LZ4_DESCRIPTOR_OFFSET)
    flg_pos = LZ4_DESCRIPTOR_OFFSET
    if flg & LZ4_FLG_RESERVED:
        raise where.error(flg_pos, "reserved FLG bits must be 0", expected="FLG bits 0-1 = 0",
                          found=f"FLG {flg:#04x}")
    if not flg & LZ4_FLG_INDEPENDENT:
        raise where.error(flg_pos, "dependent block stream is unsupported",
                          expected="FLG block independence bit set", found=f"FLG {flg:#04x}")
    version = (flg >> LZ4_FLG_VERSION_SHIFT) & LZ4_FLG_VERSION_MASK
    if version != LZ4_FLG_VERSION:
        raise where.error(flg_pos, f"version {version} is unsupported",
                          expected=f"frame version {LZ4_FLG_VERSION}", found=f"FLG {flg:#04x}")
    size_code = (bd >> LZ4_BD_SIZE_SHIFT) & LZ4_BD_SIZE_MASK
    if bd & LZ4_BD_RESERVED or not LZ4_BD_SIZE_MIN <= size_code <= LZ4_BD_SIZE_MAX:
        raise where.error(flg_pos + 1, "invalid BD byte",
                          expected="reserved bits 0 and block size 4..7", found=f"BD {bd:#04x}")
    max_block = 1 << (2 * size_code + 8)
    pos = LZ4_MIN_HEADER
    if flg & LZ4_FLG_CONTENT_SIZE:
        pos += LZ4_CONTENT_SIZE.size  # skipped by Kafka (never trusted)
    if n <= pos:
        raise where.error(n, "stream ended prematurely", expected="the frame descriptor and HC byte",
                          found=f"{n} bytes")
    if magic != MAGIC_V0:  # magic 0 data carries the KAFKA-3160 broken HC: ignored
        expected_hc = _lz4_header_checksum(buf[LZ4_DESCRIPTOR_OFFSET:pos])
        if buf[pos] != expected_hc:
            raise where.error(pos, "stream frame descriptor corrupted",
                              expected=f"header checksum {expected_hc:#04x}",
                              found=f"{buf[pos]:#04x}")
    return flg, bd, max_block, pos + 1


def _unlz4_whole_frame(buf: memoryview, max_output: int, flg: int, max_block: int, pos: int,
                       checksum_size: int) -> bytes | None:
    """The frame decoded by one native ``lz4.frame`` call, or None (then the block loop decides).

    Only for frames where LZ4F and Kafka provably agree: a verified header checksum (magic >= 1),
    independent blocks, no content size (LZ4F would size its buffer from it), every block within
    the max block size, and the end mark (+ content checksum) ending the buffer exactly (Kafka
    ignores trailing bytes, LZ4F might read them).  The output is bounded before decoding: each
    block yields at most ``max_block`` bytes (a stored block exactly its size).  LZ4F is stricter
    than Kafka only in checks Kafka skips (content checksum): any LZ4F failure falls back.
    """
    n = len(buf)
    bound = 0
    while True:
        if n - pos < LZ4_BLOCK_SIZE.size:
            return None
        (word,) = LZ4_BLOCK_SIZE.unpack_from(buf, pos)
        size = word & LZ4_SIZE_MASK
        if size == 0:
            tail = LZ4_CHECKSUM.size if flg & LZ4_FLG_CONTENT_CHECKSUM else 0
            if pos + LZ4_BLOCK_SIZE.size + tail != n:
                return None
            break
        if size > max_block:
            return None
        bound += size if word & LZ4_INCOMPRESSIBLE_MASK else max_block
        pos += LZ4_BLOCK_SIZE.size + size + checksum_size
    if bound > max_output:
        return None
    try:
        out = _lz4_frame.decompress(buf)
    except Exception:  # LZ4F's RuntimeError: the block loop reports Kafka's exact error
        return None
    return out if len(out) <= max_output else None


def decompress(buf: memoryview, max_output: int, magic: int, where: Where) -> bytes:
    n = len(buf)
    if buf[:_KAFKA_LZ4_HEADER_LEN] == _KAFKA_LZ4_HEADER or (
            magic == MAGIC_V0 and n >= _KAFKA_LZ4_HEADER_LEN
            and buf[:LZ4_MIN_HEADER] == _KAFKA_LZ4_HEADER[:LZ4_MIN_HEADER]):
        # fast path: the header every Kafka producer writes
        flg, bd, max_block, pos = KAFKA_LZ4_FLG, KAFKA_LZ4_BD, KAFKA_LZ4_BLOCK_SIZE, _KAFKA_LZ4_HEADER_LEN
    elif magic != MAGIC_V0 and bytes(buf[:_KAFKA_LZ4_HEADER_LEN]) in _LZ4_HEADERS_SEEN:
        flg, bd, max_block, pos = _LZ4_HEADERS_SEEN[bytes(buf[:_KAFKA_LZ4_HEADER_LEN])]
    else:
        flg, bd, max_block, pos = _lz4_frame_header(buf, magic, where)
        if magic != MAGIC_V0 and pos == _KAFKA_LZ4_HEADER_LEN and len(_LZ4_HEADERS_SEEN) < _LZ4_HEADERS_MAX:
            _LZ4_HEADERS_SEEN[bytes(buf[:pos])] = (flg, bd, max_block, pos)
    block_checksum = bool(flg & LZ4_FLG_BLOCK_CHECKSUM)
    checksum_size = LZ4_CHECKSUM.size if block_checksum else 0
    if magic != MAGIC_V0 and not flg & LZ4_FLG_CONTENT_SIZE:
        whole = _unlz4_whole_frame(buf, max_output, flg, max_block, pos, checksum_size)
        if whole is not None:
            return whole
    parts: list[bytes | memoryview] = []
    total = 0
    while True:
        if n - pos < LZ4_BLOCK_SIZE.size:
            raise where.error(pos, "stream ended prematurely", expected="a block size or end mark",
                              found=f"{n - pos} bytes")
        (word,) = LZ4_BLOCK_SIZE.unpack_from(buf, pos)
        size = word & LZ4_SIZE_MASK
        if size == 0:  # end mark (Kafka masks the stored bit first)
            if flg & LZ4_FLG_CONTENT_CHECKSUM and n - pos - LZ4_BLOCK_SIZE.size < LZ4_CHECKSUM.size:
                raise where.error(pos + LZ4_BLOCK_SIZE.size, "stream ended prematurely",
                                  expected="the content checksum",
                                  found=f"{n - pos - LZ4_BLOCK_SIZE.size} bytes")
            break  # the content checksum is not verified; later bytes are ignored (one frame)
        if size > max_block:
            raise where.error(pos, f"block size {size} exceeded max: {max_block}",
                              expected=f"block size <= {max_block}", found=str(size))
        start = pos + LZ4_BLOCK_SIZE.size
        end = start + size
        if n - end < checksum_size:
            raise where.error(pos, "stream ended prematurely",
                              expected=f"{size + checksum_size} block bytes",
                              found=f"{n - start} bytes")
        remaining = max_output - total
        stored = bool(word & LZ4_INCOMPRESSIBLE_MASK)
        if stored and size > remaining:
            raise where.limit(pos, max_output, f"a stored block of {size} bytes with "
                                               f"{remaining} bytes of budget left")
        if block_checksum:
            out: bytes | memoryview = _lz4_verified_block(word, buf[start:end], buf[end:end + checksum_size],
                                                          bd, pos, where)
        elif stored:
            out = buf[start:end]
        else:
            block = buf[start:end]
            cap = min(max_block, remaining)
            try:
                out = _lz4_block.decompress(block, uncompressed_size=cap)
            except Exception as exc:  # _lz4_block.LZ4BlockError
                if cap < max_block:  # out of budget, or corrupt? decide with a full-size buffer
                    try:
                        out = _lz4_block.decompress(block, uncompressed_size=max_block)
                    except Exception:
                        raise where.library(pos, "corrupt lz4 block", exc) from exc
                else:
                    raise where.library(pos, "corrupt lz4 block", exc) from exc
        if len(out) > remaining:
            raise where.limit(pos, max_output, f"more than {max_output} bytes")
        parts.append(out)
        total += len(out)
        pos = end + checksum_size
    return join_parts(parts)


_KAFKA_LZ4_HEADER = b"".join((LZ4_MAGIC.pack(LZ4_FRAME_MAGIC), LZ4_DESCRIPTOR.pack(KAFKA_LZ4_FLG, KAFKA_LZ4_BD),
                              bytes((_lz4_header_checksum(LZ4_DESCRIPTOR.pack(KAFKA_LZ4_FLG, KAFKA_LZ4_BD)),))))
_KAFKA_LZ4_HEADER_LEN = len(_KAFKA_LZ4_HEADER)
# Headers (magic + FLG + BD + HC, no content size) already validated by _lz4_frame_header for
# magic >= 1, with their parse: a producer writes the same header on every batch.
_LZ4_HEADERS_SEEN: dict[bytes, tuple[int, int, int, int]] = {}
_LZ4_HEADERS_MAX = 64


def compress(data: bytes | memoryview, magic: int, level: int | None) -> bytes:
    descriptor = LZ4_DESCRIPTOR.pack(KAFKA_LZ4_FLG, KAFKA_LZ4_BD)
    frame_magic = LZ4_MAGIC.pack(LZ4_FRAME_MAGIC)
    covered = frame_magic + descriptor if magic == MAGIC_V0 else descriptor  # KAFKA-3160
    out: list[bytes | memoryview] = [frame_magic, descriptor, bytes((_lz4_header_checksum(covered),))]
    if level is None or level == DEFAULT_LEVELS[LZ4]:
        def packer(chunk: memoryview) -> bytes:
            # lz4-java's fastCompressor (JNI LZ4_compress_default), which Kafka 3.9 and 4.x use at
            # the default level.  cramjam's block compressor gives its bytes; the ``lz4`` wheel's
            # bundled liblz4 (1.9.4) chooses other matches on some inputs (conformance: a batch the
            # broker's cleaner rebuilt), so it only serves the other levels.
            return bytes(_cramjam.lz4.compress_block(bytes(chunk), store_size=False))
    else:
        def packer(chunk: memoryview) -> bytes:  # lz4-java highCompressor(level) = LZ4_compress_HC
            return _lz4_block.compress(chunk, mode="high_compression", compression=level,
                                      store_size=False)
    view = memoryview(data)
    for start in range(0, len(view), KAFKA_LZ4_BLOCK_SIZE):
        chunk = view[start:start + KAFKA_LZ4_BLOCK_SIZE]
        packed = packer(chunk)
        if len(packed) >= len(chunk):
            out.append(LZ4_BLOCK_SIZE.pack(len(chunk) | LZ4_INCOMPRESSIBLE_MASK))
            out.append(chunk)
        else:
            out.append(LZ4_BLOCK_SIZE.pack(len(packed)))
            out.append(packed)
    out.append(LZ4_END_MARK)
    return b"".join(out)
