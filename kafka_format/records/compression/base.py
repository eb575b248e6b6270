"""What every codec module shares: Kafka's levels, the decompression cap, the codec names of errors,
and the error plumbing that places a codec's failure at its file position.  The codec ids and the
magic values are the record formats' (:mod:`kafka_format.records.record_batch`)."""

from __future__ import annotations

from typing import cast

from kafka_format.common.errors import CompressionError, DecompressionLimitError
from kafka_format.records.record_batch import CODEC_NAMES, GZIP, LZ4, SNAPPY, ZSTD

#: Cap on one payload's decompressed size: 256 MiB, i.e. about Kafka's default
#: ``message.max.bytes`` (1048588) times a safety factor of 256.  Kafka itself has no such cap
#: (it streams); a cap is what keeps a tiny "bomb" payload from exhausting memory.
DEFAULT_MAX_DECOMPRESSED = 256 * 1024 * 1024

#: Kafka's default levels (``CompressionType``): gzip ``Deflater.DEFAULT_COMPRESSION`` (zlib 6),
#: lz4 9 (lz4-java's fast compressor), zstd 3 (``ZSTD_CLEVEL_DEFAULT``); snappy has no levels.
DEFAULT_LEVELS: dict[int, int | None] = {GZIP: -1, SNAPPY: None, LZ4: 9, ZSTD: 3}
GZIP_LEVELS = range(1, 10)  # plus -1 (default)
LZ4_LEVELS = range(1, 18)
ZSTD_LEVELS = range(-131072, 23)

U32 = 0xFFFFFFFF


def codec_name(codec: int) -> str:
    """Kafka's name for codec id ``codec`` (``CompressionType.name``); ``"codec N"`` if unknown."""
    if 0 <= codec < len(CODEC_NAMES):
        return CODEC_NAMES[codec]
    return f"codec {codec}"



class Where:
    """Codec name + file location of a payload; builds located errors."""

    __slots__ = ("base", "codec", "path")

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


def join_parts(parts: list[bytes | memoryview]) -> bytes:
    if not parts:
        return b""
    if len(parts) == 1 and type(parts[0]) is bytes:
        return parts[0]
    return b"".join(parts)

