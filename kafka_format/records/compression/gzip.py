"""gzip (codec 1): ``java.util.zip.GZIPInputStream`` / ``GZIPOutputStream`` framing.

The framing::

    ID1 ID2 (1f 8b) | CM (8 = deflate) | FLG | MTIME int32 LE | XFL | OS
    [FEXTRA: XLEN uint16 LE + XLEN bytes] [FNAME: zero-terminated] [FCOMMENT: zero-terminated]
    [FHCRC: uint16 LE = low 16 bits of CRC-32 of the header bytes before it]
    raw deflate data | CRC32 uint32 LE (of the member's output) | ISIZE uint32 LE (output length mod 2^32)

    After a member, remaining bytes are tried as a further member; if they do not start with a
    readable member header they are ignored (``GZIPInputStream.readTrailer``).  The reserved FLG
    bits are not checked (Java does not).  Java writes MTIME 0, XFL 0, OS 255 (JDK >= 16).
"""

from __future__ import annotations

import struct
import zlib

from kafka_format.records.compression.base import U32, Where, join_parts

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


def decompress(buf: memoryview, max_output: int, where: Where) -> bytes:
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
        if crc != actual_crc or isize != (len(out) & U32):
            raise where.error(trailer_pos, "corrupt gzip trailer",
                              expected=f"CRC32 {actual_crc:#010x}, ISIZE {len(out) & U32}",
                              found=f"CRC32 {crc:#010x}, ISIZE {isize}")
        parts.append(out)
        total += len(out)
        pos = trailer_pos + GZIP_TRAILER.size
    return join_parts(parts)


def compress(data: bytes | memoryview, level: int | None) -> bytes:
    deflater = zlib.compressobj(-1 if level is None else level, zlib.DEFLATED, _DEFLATE_RAW_WBITS,
                                _DEFLATE_MEM_LEVEL)
    body = deflater.compress(data) + deflater.flush()
    trailer = GZIP_TRAILER.pack(zlib.crc32(data), len(data) & U32)
    return b"".join((JAVA_GZIP_HEADER, body, trailer))
