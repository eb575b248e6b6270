"""zstd (codec 4): zstd frames (RFC 8878) as zstd-jni reads and writes them for Kafka.

Standard zstd frames (RFC 8878) read with zstd-jni's streaming decoder: frames are
decoded back to back (skippable frames skipped), so concatenated frames are accepted; trailing
bytes that are not a frame and a truncated frame are errors; empty input decodes to nothing.
Kafka (zstd-jni streaming, ``BufferedOutputStream`` + flush on close) writes one frame without
content size or checksum whose last block is an empty raw block.  zstd needs magic 2.
"""

from __future__ import annotations

import struct
import threading
from typing import Any

from kafka_format.records.compression.base import DEFAULT_LEVELS, Where, join_parts
from kafka_format.records.record_batch import ZSTD

_zstandard: Any
try:
    import zstandard as _zstandard
except ImportError:  # pragma: no cover - dependency is declared
    _zstandard = None
LIBRARY = _zstandard

ZSTD_MAGIC = struct.Struct("<I")              # 0xFD2FB528
ZSTD_FRAME_MAGIC = 0xFD2FB528
ZSTD_SKIPPABLE = struct.Struct(
    "<"
    "I"   # magic 0x184D2A50..0x184D2A5F
    "I"   # frame size (bytes after this header)
)
ZSTD_SKIPPABLE_MASK = 0xFFFFFFF0
ZSTD_SKIPPABLE_MAGIC = 0x184D2A50
ZSTD_FHD_FCS_SHIFT = 6
ZSTD_FHD_SINGLE_SEGMENT = 0x20
ZSTD_FHD_RESERVED = 0x08
ZSTD_FHD_CHECKSUM = 0x04
ZSTD_FHD_DICT_MASK = 0x03
_ZSTD_DICT_ID_SIZES = (0, 1, 2, 4)
_ZSTD_FCS_SIZES = (0, 2, 4, 8)          # FCS_flag 0 means 1 byte when single segment
_ZSTD_FCS_FORMATS = {1: "<B", 2: "<H", 4: "<I", 8: "<Q"}
ZSTD_FCS2_OFFSET = 256                  # a 2-byte content size is stored minus 256
ZSTD_BLOCK_HEADER_SIZE = 3              # uint24 LE: bit 0 last, bits 1-2 type, bits 3-23 size
ZSTD_BLOCK_RAW, ZSTD_BLOCK_RLE, ZSTD_BLOCK_COMPRESSED, ZSTD_BLOCK_RESERVED = range(4)
ZSTD_BLOCK_MAX = 128 * 1024             # Block_Maximum_Size = min(window size, 128 KiB)
ZSTD_CHECKSUM_SIZE = 4
ZSTD_WINDOW_LOG_BASE = 10
#: zstd-jni / libzstd default decoder window limit (ZSTD_WINDOWLOG_LIMIT_DEFAULT = 27).
ZSTD_MAX_WINDOW = 1 << 27


_ZSTD_LOCAL = threading.local()


def _zstd_decompressor() -> Any:
    """This thread's decompressor (a ZstdDecompressor may not be shared between threads)."""
    dctx = getattr(_ZSTD_LOCAL, "dctx", None)
    if dctx is None:
        dctx = _zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
        _ZSTD_LOCAL.dctx = dctx
    return dctx


def _zstd_frame_extent(buf: memoryview, pos: int, where: Where) -> tuple[int, int]:
    """Walk the zstd frame at ``pos``: (end position, upper bound of its decompressed size)."""
    n = len(buf)
    p = pos + ZSTD_MAGIC.size
    if n - p < 1:
        raise where.error(pos, "truncated zstd frame header", expected="a frame header descriptor",
                          found="end of payload")
    fhd = buf[p]
    p += 1
    if fhd & ZSTD_FHD_RESERVED:
        raise where.error(p - 1, "reserved bit set in zstd frame header",
                          expected="frame header descriptor bit 3 = 0", found=f"{fhd:#04x}")
    single_segment = bool(fhd & ZSTD_FHD_SINGLE_SEGMENT)
    fcs_flag = fhd >> ZSTD_FHD_FCS_SHIFT
    fcs_size = _ZSTD_FCS_SIZES[fcs_flag] or (1 if single_segment else 0)
    header_rest = (0 if single_segment else 1) + _ZSTD_DICT_ID_SIZES[fhd & ZSTD_FHD_DICT_MASK] + fcs_size
    if n - p < header_rest:
        raise where.error(pos, "truncated zstd frame header", expected=f"{header_rest} more header bytes",
                          found=f"{n - p} bytes")
    window = 0
    if not single_segment:
        descriptor = buf[p]
        log = ZSTD_WINDOW_LOG_BASE + (descriptor >> 3)
        base = 1 << log
        window = base + (base >> 3) * (descriptor & 0x7)
        p += 1
    p += _ZSTD_DICT_ID_SIZES[fhd & ZSTD_FHD_DICT_MASK]
    content_size = -1
    if fcs_size:
        (content_size,) = struct.unpack_from(_ZSTD_FCS_FORMATS[fcs_size], buf, p)
        if fcs_size == 2:
            content_size += ZSTD_FCS2_OFFSET
        p += fcs_size
    if single_segment:
        window = content_size
    block_max = min(window, ZSTD_BLOCK_MAX)
    bound = 0
    while True:
        if n - p < ZSTD_BLOCK_HEADER_SIZE:
            raise where.error(p, "truncated zstd frame", expected="a block header",
                              found=f"{n - p} bytes")
        header = buf[p] | (buf[p + 1] << 8) | (buf[p + 2] << 16)
        last = header & 1
        kind = (header >> 1) & 0x3
        size = header >> 3
        p += ZSTD_BLOCK_HEADER_SIZE
        if kind == ZSTD_BLOCK_RESERVED:
            raise where.error(p - ZSTD_BLOCK_HEADER_SIZE, "reserved zstd block type",
                              expected="raw, RLE or compressed block", found="block type 3")
        stored = 1 if kind == ZSTD_BLOCK_RLE else size
        if n - p < stored:
            raise where.error(p - ZSTD_BLOCK_HEADER_SIZE, "truncated zstd block",
                              expected=f"{stored} bytes", found=f"{n - p} bytes")
        p += stored
        bound += block_max if kind == ZSTD_BLOCK_COMPRESSED else size
        if last:
            break
    if fhd & ZSTD_FHD_CHECKSUM:
        if n - p < ZSTD_CHECKSUM_SIZE:
            raise where.error(p, "truncated zstd frame checksum", expected="4 bytes",
                              found=f"{n - p} bytes")
        p += ZSTD_CHECKSUM_SIZE
    if content_size >= 0:
        bound = content_size  # libzstd checks the frame produces exactly this
    return p, bound


def decompress(buf: memoryview, max_output: int, where: Where) -> bytes:
    parts: list[bytes | memoryview] = []
    total = 0
    pos = 0
    n = len(buf)
    while pos < n:
        if n - pos < ZSTD_MAGIC.size:
            raise where.error(pos, "truncated zstd frame", expected="a frame magic number",
                              found=f"{n - pos} bytes")
        (frame_magic,) = ZSTD_MAGIC.unpack_from(buf, pos)
        if frame_magic & ZSTD_SKIPPABLE_MASK == ZSTD_SKIPPABLE_MAGIC:
            if n - pos < ZSTD_SKIPPABLE.size:
                raise where.error(pos, "truncated skippable frame", expected="a frame size",
                                  found=f"{n - pos} bytes")
            _, skip = ZSTD_SKIPPABLE.unpack_from(buf, pos)
            if n - pos - ZSTD_SKIPPABLE.size < skip:
                raise where.error(pos, "truncated skippable frame", expected=f"{skip} bytes",
                                  found=f"{n - pos - ZSTD_SKIPPABLE.size} bytes")
            pos += ZSTD_SKIPPABLE.size + skip
            continue
        if frame_magic != ZSTD_FRAME_MAGIC:
            raise where.error(pos, "unknown zstd frame descriptor",
                              expected=f"zstd frame magic {ZSTD_FRAME_MAGIC:#010x}",
                              found=f"{frame_magic:#010x}")
        end, bound = _zstd_frame_extent(buf, pos, where)
        remaining = max_output - total
        want = min(bound, remaining) + 1
        try:
            if 0 < bound <= remaining:  # one native call into a buffer of the frame's bound
                out = _zstd_decompressor().decompress(buf[pos:end], max_output_size=bound)
            else:  # the budget may run out first: stream, reading one byte past it
                with _zstd_decompressor().stream_reader(buf[pos:end]) as reader:
                    out = reader.read(want)
        except _zstandard.ZstdError as exc:
            raise where.library(pos, "corrupt zstd frame", exc) from exc
        if len(out) > remaining:
            raise where.limit(pos, max_output, f"more than {max_output} bytes")
        parts.append(out)
        total += len(out)
        pos = end
    return join_parts(parts)


def compress(data: bytes | memoryview, level: int | None) -> bytes:
    compressor = _zstandard.ZstdCompressor(level=DEFAULT_LEVELS[ZSTD] if level is None else level,
                                          write_checksum=False)
    if not len(data):
        # zstd-jni closing a stream that never saw a write ends a frame it just started with
        # ZSTD_e_end on empty input: libzstd then knows the size (0) and writes it.
        return compressor.compress(b"")
    # Kafka: writes (ZSTD_e_continue, size unknown) -> flush() from DataOutputStream.close
    # (ZSTD_e_flush) -> close() (ZSTD_e_end: an empty last block).  No content size, no checksum.
    stream = compressor.compressobj()
    return b"".join((stream.compress(data), stream.flush(_zstandard.COMPRESSOBJ_FLUSH_BLOCK),
                     stream.flush(_zstandard.COMPRESSOBJ_FLUSH_FINISH)))
