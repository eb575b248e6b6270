"""Kafka compression codecs: decompression exactly as Kafka reads, compression as Kafka writes.

Compression covers the records region of a v2 batch (the bytes after ``recordsCount``) and the
value of a legacy (magic 0/1) wrapper message.  The codec id is ``attributes & 0x7``
(``CompressionType.forId``); ids 5-7 are rejected by Kafka.  Sources (apache/kafka):
``clients/src/main/java/org/apache/kafka/common/compress/*.java`` and the libraries Kafka wraps
(snappy-java ``SnappyInputStream``/``SnappyOutputStream``, zstd-jni ``ZstdInputStreamNoFinalizer``/
``ZstdOutputStreamNoFinalizer``, ``java.util.zip.GZIPInputStream``/``GZIPOutputStream``).

Framing per codec (what :func:`decompress` accepts, what :func:`compress` writes):

gzip (1) -- RFC 1952 members, as ``GZIPInputStream`` reads them::

    ID1 ID2 (1f 8b) | CM (8 = deflate) | FLG | MTIME int32 LE | XFL | OS
    [FEXTRA: XLEN uint16 LE + XLEN bytes] [FNAME: zero-terminated] [FCOMMENT: zero-terminated]
    [FHCRC: uint16 LE = low 16 bits of CRC-32 of the header bytes before it]
    raw deflate data | CRC32 uint32 LE (of the member's output) | ISIZE uint32 LE (output length mod 2^32)

    After a member, remaining bytes are tried as a further member; if they do not start with a
    readable member header they are ignored (``GZIPInputStream.readTrailer``).  The reserved FLG
    bits are not checked (Java does not).  Java writes MTIME 0, XFL 0, OS 255 (JDK >= 16).

snappy (2) -- xerial snappy-java stream (``SnappyOutputStream``)::

    magic 82 53 4E 41 50 50 59 00 | version int32 BE | min compatible version int32 BE
    then chunks: [compressed length int32 BE][raw snappy block (varint uncompressed length + data)]

    ``SnappyInputStream`` (snappy-java 1.1.10.5, Kafka's dependency): an empty stream is an error;
    a stream shorter than 16 bytes or not starting with the 8-byte magic is ONE raw snappy block
    (non-Java producers); the first header's version fields are not read (Redpanda wrote them
    little-endian); a chunk length equal to the magic's first four bytes starts a concatenated
    stream header (16 bytes): a bad magic there ends the stream, a version < 1 is an error; a
    negative or > 512 MiB chunk length is an error; fewer than 4 bytes left end the stream.
    The writer compresses 32 KiB of input per chunk; an empty stream is the bare header.

lz4 (3) -- Kafka's LZ4 frame (``Lz4BlockInputStream`` / ``Lz4BlockOutputStream``)::

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

zstd (4) -- standard zstd frames (RFC 8878) read with zstd-jni's streaming decoder: frames are
    decoded back to back (skippable frames skipped), so concatenated frames are accepted; trailing
    bytes that are not a frame and a truncated frame are errors; empty input decodes to nothing.
    Kafka (zstd-jni streaming, ``BufferedOutputStream`` + flush on close) writes one frame without
    content size or checksum whose last block is an empty raw block.  zstd needs magic 2.

Every failure raises a :class:`~kafka_format.common.errors.CompressionError` (or its subclass
:class:`~kafka_format.common.errors.DecompressionLimitError` when the output would exceed ``max_output``)
naming the codec, the file and the absolute position of the offending structure; library
exceptions are chained as the cause.  Output never exceeds ``max_output``, and the limit is
detected before more than ``max_output`` plus one codec block (<= 4 MiB) is allocated.
"""

from __future__ import annotations

import struct
import threading
import zlib
from types import ModuleType
from typing import Any, cast

from kafka_format.common.errors import (
    CompressionError,
    DecompressionLimitError,
    KafkaFormatError,
    UnsupportedFormatError,
)

# Codec libraries are declared dependencies; a missing one disables only its codec, with an error
# naming the package to install (raised when that codec is used).
_cramjam: Any
_lz4_block: Any
_lz4_frame: Any
_zstandard: Any
try:
    import cramjam as _cramjam
except ImportError:  # pragma: no cover - dependency is declared
    _cramjam = None
try:
    import lz4.block as _lz4_block
    import lz4.frame as _lz4_frame
except ImportError:  # pragma: no cover - dependency is declared
    _lz4_block = _lz4_frame = None
try:
    import zstandard as _zstandard
except ImportError:  # pragma: no cover - dependency is declared
    _zstandard = None
_CODEC_PACKAGES = {2: "cramjam", 3: "lz4", 4: "zstandard"}

__all__ = [
    "NONE",
    "GZIP",
    "SNAPPY",
    "LZ4",
    "ZSTD",
    "CODEC_NAMES",
    "CODEC_MASK",
    "DEFAULT_MAX_DECOMPRESSED",
    "DEFAULT_LEVELS",
    "decompress",
    "compress",
    "codec_name",
    "xxhash32",
]

# --- codec ids (CompressionType.java) ----------------------------------------------------------
NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4
CODEC_NAMES: tuple[str, ...] = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_MASK = 0x07  # attributes bits 0-2 (v2 batch and legacy message)

MAGIC_V0 = 0
MAGIC_V2 = 2
_MAGICS = (0, 1, 2)

#: Cap on one payload's decompressed size: 256 MiB, i.e. about Kafka's default
#: ``message.max.bytes`` (1048588) times a safety factor of 256.  Kafka itself has no such cap
#: (it streams); a cap is what keeps a tiny "bomb" payload from exhausting memory.
DEFAULT_MAX_DECOMPRESSED = 256 * 1024 * 1024

#: Kafka's default levels (``CompressionType``): gzip ``Deflater.DEFAULT_COMPRESSION`` (zlib 6),
#: lz4 9 (lz4-java's fast compressor), zstd 3 (``ZSTD_CLEVEL_DEFAULT``); snappy has no levels.
DEFAULT_LEVELS: dict[int, int | None] = {GZIP: -1, SNAPPY: None, LZ4: 9, ZSTD: 3}
_GZIP_LEVELS = range(1, 10)  # plus -1 (default)
_LZ4_LEVELS = range(1, 18)
_ZSTD_LEVELS = range(-131072, 23)

_U32 = 0xFFFFFFFF

# --- gzip (java.util.zip.GZIPInputStream / GZIPOutputStream, RFC 1952) -------------------------
GZIP_HEADER = struct.Struct(
    "<"
    "2s"  # ID1 ID2 = 1f 8b
    "B"   # CM (8 = deflate)
    "B"   # FLG
    "I"   # MTIME
    "B"   # XFL
    "B"   # OS
)
GZIP_XLEN = struct.Struct("<H")      # FEXTRA length
GZIP_HCRC = struct.Struct("<H")      # FHCRC: low 16 bits of the header's CRC-32
GZIP_TRAILER = struct.Struct(
    "<"
    "I"   # CRC32 of the member's uncompressed data
    "I"   # ISIZE: uncompressed length mod 2^32
)
GZIP_MAGIC = b"\x1f\x8b"
GZIP_CM_DEFLATE = 8
GZIP_FHCRC = 0x02
GZIP_FEXTRA = 0x04
GZIP_FNAME = 0x08
GZIP_FCOMMENT = 0x10
GZIP_OS_UNKNOWN = 255
#: What GZIPOutputStream writes (JDK >= 16 writes OS 255, "unknown"; older JDKs wrote 0).
JAVA_GZIP_HEADER = GZIP_HEADER.pack(GZIP_MAGIC, GZIP_CM_DEFLATE, 0, 0, 0, GZIP_OS_UNKNOWN)
_DEFLATE_RAW_WBITS = -15
_DEFLATE_MEM_LEVEL = 8  # zlib DEF_MEM_LEVEL, what java.util.zip.Deflater uses

# --- snappy (snappy-java SnappyCodec / SnappyInputStream / SnappyOutputStream) ------------------
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

# --- lz4 (Lz4BlockInputStream / Lz4BlockOutputStream) ------------------------------------------
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

# --- zstd (RFC 8878; read by zstd-jni ZstdInputStreamNoFinalizer) -------------------------------
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


def codec_name(codec: int) -> str:
    """Kafka's name for codec id ``codec`` (``CompressionType.name``); ``"codec N"`` if unknown."""
    if 0 <= codec < len(CODEC_NAMES):
        return CODEC_NAMES[codec]
    return f"codec {codec}"


# --- xxhash32 (used by the lz4 frame header checksum) ------------------------------------------
_XXH_P1 = 2654435761
_XXH_P2 = 2246822519
_XXH_P3 = 3266489917
_XXH_P4 = 668265263
_XXH_P5 = 374761393
_XXH_STRIPE = struct.Struct("<4I")
_XXH_WORD = struct.Struct("<I")


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _U32


def xxhash32(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """XXH32 of ``data`` (plain Python; meant for the few bytes of an lz4 frame descriptor)."""
    buf = memoryview(data).cast("B")
    n = len(buf)
    i = 0
    if n >= 16:
        v1 = (seed + _XXH_P1 + _XXH_P2) & _U32
        v2 = (seed + _XXH_P2) & _U32
        v3 = seed & _U32
        v4 = (seed - _XXH_P1) & _U32
        limit = n - 16
        while i <= limit:
            a, b, c, d = _XXH_STRIPE.unpack_from(buf, i)
            v1 = (_rotl((v1 + a * _XXH_P2) & _U32, 13) * _XXH_P1) & _U32
            v2 = (_rotl((v2 + b * _XXH_P2) & _U32, 13) * _XXH_P1) & _U32
            v3 = (_rotl((v3 + c * _XXH_P2) & _U32, 13) * _XXH_P1) & _U32
            v4 = (_rotl((v4 + d * _XXH_P2) & _U32, 13) * _XXH_P1) & _U32
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _U32
    else:
        h = (seed + _XXH_P5) & _U32
    h = (h + n) & _U32
    while i + 4 <= n:
        (w,) = _XXH_WORD.unpack_from(buf, i)
        h = (_rotl((h + w * _XXH_P3) & _U32, 17) * _XXH_P4) & _U32
        i += 4
    while i < n:
        h = (_rotl((h + buf[i] * _XXH_P5) & _U32, 11) * _XXH_P1) & _U32
        i += 1
    h ^= h >> 15
    h = (h * _XXH_P2) & _U32
    h ^= h >> 13
    h = (h * _XXH_P3) & _U32
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


# --- error plumbing -----------------------------------------------------------------------------
class _Where:
    """Codec name + file location of a payload; builds located errors."""

    __slots__ = ("codec", "path", "base")

    def __init__(self, codec: str, path: str | None, position: int | None) -> None:
        self.codec = codec
        self.path = path
        self.base = 0 if position is None else position

    def error(self, rel: int, reason: str, *, expected: str | None = None, found: str | None = None,
              cls: type[CompressionError] = CompressionError) -> CompressionError:
        return cls(f"{self.codec}: {reason}", path=self.path, position=self.base + rel,
                   expected=expected, found=found)

    def limit(self, rel: int, max_output: int, found: str) -> DecompressionLimitError:
        return cast(DecompressionLimitError,
                    self.error(rel, "decompressed size exceeds the limit",
                               expected=f"at most {max_output} decompressed bytes (max_output)",
                               found=found, cls=DecompressionLimitError))

    def library(self, rel: int, reason: str, exc: BaseException) -> CompressionError:
        return self.error(rel, reason, expected=f"a valid {self.codec} stream",
                          found=f"{type(exc).__name__}: {exc}")


def _join(parts: list[bytes | memoryview]) -> bytes:
    if not parts:
        return b""
    if len(parts) == 1 and type(parts[0]) is bytes:
        return parts[0]  # type: ignore[return-value]
    return b"".join(parts)


# --- gzip ---------------------------------------------------------------------------------------
class _BadHeader(Exception):
    """A gzip member header could not be read (GZIPInputStream.readHeader failed)."""

    def __init__(self, rel: int, reason: str, found: str) -> None:
        super().__init__(reason)
        self.rel = rel
        self.reason = reason
        self.found = found


def _find_zero(buf: memoryview, start: int) -> int:
    """Index of the first zero byte at or after ``start`` (-1 if none), scanning in chunks."""
    step = 4096
    n = len(buf)
    i = start
    while i < n:
        j = bytes(buf[i:i + step]).find(b"\x00")
        if j >= 0:
            return i + j
        i += step
    return -1


def _gzip_member_header(buf: memoryview, pos: int) -> int:
    """Length of the gzip member header at ``pos`` (raises _BadHeader like readHeader)."""
    n = len(buf)
    if n - pos < GZIP_HEADER.size:
        raise _BadHeader(pos, "truncated gzip member header", f"{n - pos} bytes")
    magic, method, flags, _mtime, _xfl, _os = GZIP_HEADER.unpack_from(buf, pos)
    if magic != GZIP_MAGIC:
        raise _BadHeader(pos, "not in gzip format", f"magic {bytes(magic).hex()}")
    if method != GZIP_CM_DEFLATE:
        raise _BadHeader(pos + 2, "unsupported compression method", f"method {method}")
    p = pos + GZIP_HEADER.size
    if flags & GZIP_FEXTRA:
        if n - p < GZIP_XLEN.size:
            raise _BadHeader(p, "truncated gzip FEXTRA length", f"{n - p} bytes")
        (xlen,) = GZIP_XLEN.unpack_from(buf, p)
        p += GZIP_XLEN.size + xlen
        if p > n:
            raise _BadHeader(pos, "truncated gzip FEXTRA field", f"XLEN {xlen}")
    for flag, name in ((GZIP_FNAME, "FNAME"), (GZIP_FCOMMENT, "FCOMMENT")):
        if flags & flag:
            z = _find_zero(buf, p)
            if z < 0:
                raise _BadHeader(p, f"unterminated gzip {name} field", "no zero byte")
            p = z + 1
    if flags & GZIP_FHCRC:
        if n - p < GZIP_HCRC.size:
            raise _BadHeader(p, "truncated gzip header CRC", f"{n - p} bytes")
        (stored,) = GZIP_HCRC.unpack_from(buf, p)
        actual = zlib.crc32(buf[pos:p]) & 0xFFFF
        if stored != actual:
            raise _BadHeader(p, "corrupt gzip header (FHCRC mismatch)",
                             f"stored {stored:#06x}, computed {actual:#06x}")
        p += GZIP_HCRC.size
    return p - pos


def _gunzip(buf: memoryview, max_output: int, where: _Where) -> bytes:
    parts: list[bytes | memoryview] = []
    total = 0
    pos = 0
    n = len(buf)
    first = True
    while first or pos < n:
        try:
            header_len = _gzip_member_header(buf, pos)
        except _BadHeader as bad:
            if first:
                raise where.error(bad.rel, bad.reason, expected="a gzip member header (RFC 1952)",
                                  found=bad.found) from None
            break  # GZIPInputStream ignores bytes after a member that are not a member
        first = False
        data_pos = pos + header_len
        remaining = max_output - total
        inflater = zlib.decompressobj(_DEFLATE_RAW_WBITS)
        try:
            out = inflater.decompress(buf[data_pos:], remaining + 1)
        except zlib.error as exc:
            raise where.library(data_pos, "corrupt deflate data", exc) from exc
        if len(out) > remaining:
            raise where.limit(pos, max_output, f"more than {max_output} bytes")
        if not inflater.eof:
            raise where.error(n, "unexpected end of deflate data", expected="the rest of the stream",
                              found=f"end of payload ({n} bytes)")
        rest = inflater.unused_data
        trailer_pos = n - len(rest)
        if len(rest) < GZIP_TRAILER.size:
            raise where.error(trailer_pos, "truncated gzip trailer",
                              expected=f"{GZIP_TRAILER.size} trailer bytes", found=f"{len(rest)} bytes")
        crc, isize = GZIP_TRAILER.unpack_from(rest, 0)
        actual_crc = zlib.crc32(out)
        if crc != actual_crc or isize != (len(out) & _U32):
            raise where.error(trailer_pos, "corrupt gzip trailer",
                              expected=f"CRC32 {actual_crc:#010x}, ISIZE {len(out) & _U32}",
                              found=f"CRC32 {crc:#010x}, ISIZE {isize}")
        parts.append(out)
        total += len(out)
        pos = trailer_pos + GZIP_TRAILER.size
    return _join(parts)


def _gzip(data: bytes | memoryview, level: int | None) -> bytes:
    deflater = zlib.compressobj(-1 if level is None else level, zlib.DEFLATED, _DEFLATE_RAW_WBITS,
                                _DEFLATE_MEM_LEVEL)
    body = deflater.compress(data) + deflater.flush()
    trailer = GZIP_TRAILER.pack(zlib.crc32(data), len(data) & _U32)
    return b"".join((JAVA_GZIP_HEADER, body, trailer))


# --- snappy -------------------------------------------------------------------------------------
def _snappy_declared_length(block: memoryview, rel: int, where: _Where) -> int:
    value = 0
    for i in range(min(len(block), _SNAPPY_VARINT_MAX_BYTES)):
        b = block[i]
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            if value > _U32:
                break
            return value
    raise where.error(rel, "bad snappy block length varint",
                      expected="a varint uncompressed length (<= 5 bytes, 32 bits)",
                      found=f"bytes {bytes(block[:_SNAPPY_VARINT_MAX_BYTES]).hex() or '(none)'}")


def _snappy_block(block: memoryview, remaining: int, max_output: int, rel: int,
                  where: _Where) -> memoryview | bytes:
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


def _unsnappy(buf: memoryview, max_output: int, where: _Where) -> bytes | bytearray:
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


def _snappy(data: bytes | memoryview) -> bytes:
    out: list[bytes | memoryview] = [XERIAL_HEADER.pack(XERIAL_MAGIC, XERIAL_VERSION,
                                                        XERIAL_MIN_COMPATIBLE_VERSION)]
    view = memoryview(data)
    for start in range(0, len(view), XERIAL_BLOCK_SIZE):
        packed = memoryview(_cramjam.snappy.compress_raw(view[start:start + XERIAL_BLOCK_SIZE]))
        out.append(XERIAL_CHUNK_LENGTH.pack(len(packed)))
        out.append(packed)
    return b"".join(out)


# --- lz4 ----------------------------------------------------------------------------------------
def _lz4_verified_block(word: int, block: memoryview, checksum: memoryview, bd: int,
                        rel: int, where: _Where) -> bytes:
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


def _lz4_frame_header(buf: memoryview, magic: int, where: _Where) -> tuple[int, int, int, int]:
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


def _unlz4(buf: memoryview, max_output: int, magic: int, where: _Where) -> bytes:
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
    return _join(parts)


_KAFKA_LZ4_HEADER = b"".join((LZ4_MAGIC.pack(LZ4_FRAME_MAGIC), LZ4_DESCRIPTOR.pack(KAFKA_LZ4_FLG, KAFKA_LZ4_BD),
                              bytes((_lz4_header_checksum(LZ4_DESCRIPTOR.pack(KAFKA_LZ4_FLG, KAFKA_LZ4_BD)),))))
_KAFKA_LZ4_HEADER_LEN = len(_KAFKA_LZ4_HEADER)
# Headers (magic + FLG + BD + HC, no content size) already validated by _lz4_frame_header for
# magic >= 1, with their parse: a producer writes the same header on every batch.
_LZ4_HEADERS_SEEN: dict[bytes, tuple[int, int, int, int]] = {}
_LZ4_HEADERS_MAX = 64


def _lz4(data: bytes | memoryview, magic: int, level: int | None) -> bytes:
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


# --- zstd ---------------------------------------------------------------------------------------
_ZSTD_LOCAL = threading.local()


def _zstd_decompressor() -> Any:
    """This thread's decompressor (a ZstdDecompressor may not be shared between threads)."""
    dctx = getattr(_ZSTD_LOCAL, "dctx", None)
    if dctx is None:
        dctx = _zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
        _ZSTD_LOCAL.dctx = dctx
    return dctx


def _zstd_frame_extent(buf: memoryview, pos: int, where: _Where) -> tuple[int, int]:
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


def _unzstd(buf: memoryview, max_output: int, where: _Where) -> bytes:
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
    return _join(parts)


def _zstd(data: bytes | memoryview, level: int | None) -> bytes:
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


# --- public API ---------------------------------------------------------------------------------
def _check_codec_magic(codec: int, magic: int, path: str | None, position: int | None) -> None:
    if not isinstance(codec, int) or not 0 <= codec < len(CODEC_NAMES):
        raise UnsupportedFormatError("unknown compression codec", path=path, position=position,
                                     expected=f"codec id 0..{len(CODEC_NAMES) - 1}",
                                     found=f"codec id {codec}")
    if magic not in _MAGICS:
        raise UnsupportedFormatError("unknown record format version", path=path, position=position,
                                     expected="magic 0, 1 or 2", found=f"magic {magic}")
    if codec == ZSTD and magic < MAGIC_V2:
        raise UnsupportedFormatError("zstd compression needs record format v2", path=path,
                                     position=position, expected="magic 2 for zstd",
                                     found=f"magic {magic}")


_CODEC_MODULES: dict[int, ModuleType | None] = {SNAPPY: _cramjam, LZ4: _lz4_block, ZSTD: _zstandard}


def _require(codec: int, where: _Where | None) -> None:
    if codec in _CODEC_MODULES and _CODEC_MODULES[codec] is None:  # pragma: no cover - dependencies are declared
        package = _CODEC_PACKAGES[codec]
        reason = f"{CODEC_NAMES[codec]} support is not installed"
        expected = f"the '{package}' package (pip install {package})"
        if where is None:
            raise CompressionError(reason, expected=expected, found="ImportError")
        raise where.error(0, "support is not installed", expected=expected, found="ImportError")


def decompress(codec: int, data: bytes | bytearray | memoryview, *, magic: int,
               max_output: int = DEFAULT_MAX_DECOMPRESSED, path: str | None = None,
               position: int | None = None) -> bytes | bytearray:
    """Decompress one Kafka payload exactly as Kafka reads it (see the module doc).

    The result is a new ``bytes`` (a ``bytearray`` for multi-chunk snappy, decoded in place),
    never a view of ``data``.

    ``position`` is the absolute file offset of ``data[0]``; errors report the position of the
    offending structure (relative to ``data`` when ``position`` is None).  ``magic`` selects the
    lz4 header-checksum rule and forbids zstd below v2.  Codec 0 (none) returns the bytes as they
    are.  The result never exceeds ``max_output`` bytes (:class:`DecompressionLimitError`).
    """
    _check_codec_magic(codec, magic, path, position)
    if max_output < 0:
        raise ValueError(f"max_output must be >= 0, got {max_output}")
    if codec == NONE:
        return data if type(data) is bytes else bytes(data)
    buf = memoryview(data)
    if buf.format != "B" or buf.ndim != 1:
        buf = buf.cast("B")
    where = _Where(CODEC_NAMES[codec], path, position)
    _require(codec, where)
    try:
        if codec == LZ4:
            return _unlz4(buf, max_output, magic, where)
        if codec == ZSTD:
            return _unzstd(buf, max_output, where)
        if codec == SNAPPY:
            return _unsnappy(buf, max_output, where)
        return _gunzip(buf, max_output, where)
    except KafkaFormatError:
        raise
    except Exception as exc:  # any library failure not mapped above: never let it escape raw
        raise where.library(0, "decompression failed", exc) from exc


def compress(codec: int, data: bytes | bytearray | memoryview, *, magic: int = MAGIC_V2,
             level: int | None = None) -> bytes:
    """Compress ``data`` with Kafka's framing for ``codec`` as the Java producer writes it.

    gzip: GZIPOutputStream member (MTIME 0, OS 255); snappy: xerial stream, 32 KiB chunks;
    lz4: Kafka frame FLG 0x60 / BD 0x40, 64 KiB blocks, HC over the descriptor (over magic +
    descriptor for ``magic`` 0, KAFKA-3160); zstd: one frame without content size or checksum.
    ``level`` None means Kafka's default (:data:`DEFAULT_LEVELS`).  Framing is byte-exact; the
    compressed bytes inside equal Java's only when the same codec library version is used (snappy
    uses cramjam's Rust encoder, not libsnappy).  lz4 at the default level equals lz4-java's
    fastCompressor (Kafka 3.9 and 4.x, checked against a broker's cleaner output), through
    cramjam's block compressor; other lz4 levels use the ``lz4`` package's HC compressor.
    """
    _check_codec_magic(codec, magic, None, None)
    _require(codec, None)
    if codec == NONE:
        if level is not None:
            raise ValueError("codec none has no compression level")
        return bytes(data)
    if codec == GZIP:
        if level is not None and level != -1 and level not in _GZIP_LEVELS:
            raise ValueError(f"gzip level must be -1 or 1..9, got {level}")
        return _gzip(data, level)
    if codec == SNAPPY:
        if level is not None:
            raise ValueError("snappy has no compression level")
        return _snappy(data)
    if codec == LZ4:
        if level is not None and level not in _LZ4_LEVELS:
            raise ValueError(f"lz4 level must be 1..17, got {level}")
        return _lz4(data, magic, level)
    if level is not None and level not in _ZSTD_LEVELS:
        raise ValueError(f"zstd level must be -131072..22, got {level}")
    return _zstd(data, level)
