"""Kafka compression codecs: decompression exactly as Kafka reads, compression as Kafka writes.

Compression covers the records region of a v2 batch (the bytes after ``recordsCount``) and the
value of a legacy (magic 0/1) wrapper message.  The codec id is ``attributes & 0x7``
(``CompressionType.forId``); ids 5-7 are rejected by Kafka.  Sources (apache/kafka):
``clients/src/main/java/org/apache/kafka/common/compress/*.java`` and the libraries Kafka wraps
(snappy-java ``SnappyInputStream``/``SnappyOutputStream``, zstd-jni ``ZstdInputStreamNoFinalizer``/
``ZstdOutputStreamNoFinalizer``, ``java.util.zip.GZIPInputStream``/``GZIPOutputStream``).

One module per codec declares its framing beside its code: :mod:`~kafka_format.records.compression.gzip`,
:mod:`~kafka_format.records.compression.snappy`, :mod:`~kafka_format.records.compression.lz4`,
:mod:`~kafka_format.records.compression.zstd`; :mod:`~kafka_format.records.compression.base` holds the
levels and error plumbing they share (the codec ids are :mod:`kafka_format.records.record_batch`'s).
This module is the entry point: :func:`decompress` exactly as Kafka reads, :func:`compress` as Kafka
writes.

Every failure raises a :class:`~kafka_format.common.errors.CompressionError` (or its subclass
:class:`~kafka_format.common.errors.DecompressionLimitError` when the output would exceed ``max_output``)
naming the codec, the file and the absolute position of the offending structure; library
exceptions are chained as the cause.  Output never exceeds ``max_output``, and the limit is
detected before more than ``max_output`` plus one codec block (<= 4 MiB) is allocated.
"""

from __future__ import annotations

from types import ModuleType

from kafka_format.common.errors import CompressionError, KafkaFormatError, UnsupportedFormatError
from kafka_format.records.compression import gzip, lz4, snappy, zstd
from kafka_format.records.compression.base import (
    DEFAULT_LEVELS,
    DEFAULT_MAX_DECOMPRESSED,
    GZIP_LEVELS,
    LZ4_LEVELS,
    ZSTD_LEVELS,
    Where,
    codec_name,
)
from kafka_format.records.compression.lz4 import xxhash32
from kafka_format.records.record_batch import (
    CODEC_MASK,
    CODEC_NAMES,
    GZIP,
    LZ4,
    MAGIC_V2,
    MAGICS,
    NONE,
    SNAPPY,
    ZSTD,
)

__all__ = [
    "CODEC_MASK",
    "CODEC_NAMES",
    "DEFAULT_LEVELS",
    "DEFAULT_MAX_DECOMPRESSED",
    "GZIP",
    "LZ4",
    "NONE",
    "SNAPPY",
    "ZSTD",
    "codec_name",
    "compress",
    "decompress",
    "xxhash32",
]

# Codec libraries are declared dependencies; a missing one disables only its codec, with an error
# naming the package to install (raised when that codec is used).
_CODEC_PACKAGES = {SNAPPY: "cramjam", LZ4: "lz4", ZSTD: "zstandard"}
_CODEC_MODULES: dict[int, ModuleType | None] = {SNAPPY: snappy.LIBRARY, LZ4: lz4.LIBRARY, ZSTD: zstd.LIBRARY}


def _check_codec_magic(codec: int, magic: int, path: str | None, position: int | None) -> None:
    if not isinstance(codec, int) or not 0 <= codec < len(CODEC_NAMES):
        raise UnsupportedFormatError("unknown compression codec", path=path, position=position,
                                     expected=f"codec id 0..{len(CODEC_NAMES) - 1}",
                                     found=f"codec id {codec}")
    if magic not in MAGICS:
        raise UnsupportedFormatError("unknown record format version", path=path, position=position,
                                     expected="magic 0, 1 or 2", found=f"magic {magic}")
    if codec == ZSTD and magic < MAGIC_V2:
        raise UnsupportedFormatError("zstd compression needs record format v2", path=path,
                                     position=position, expected="magic 2 for zstd",
                                     found=f"magic {magic}")




def _require(codec: int, where: Where | None) -> None:
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
    where = Where(CODEC_NAMES[codec], path, position)
    _require(codec, where)
    try:
        if codec == LZ4:
            return lz4.decompress(buf, max_output, magic, where)
        if codec == ZSTD:
            return zstd.decompress(buf, max_output, where)
        if codec == SNAPPY:
            return snappy.decompress(buf, max_output, where)
        return gzip.decompress(buf, max_output, where)
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
        if level is not None and level != -1 and level not in GZIP_LEVELS:
            raise ValueError(f"gzip level must be -1 or 1..9, got {level}")
        return gzip.compress(data, level)
    if codec == SNAPPY:
        if level is not None:
            raise ValueError("snappy has no compression level")
        return snappy.compress(data)
    if codec == LZ4:
        if level is not None and level not in LZ4_LEVELS:
            raise ValueError(f"lz4 level must be 1..17, got {level}")
        return lz4.compress(data, magic, level)
    if level is not None and level not in ZSTD_LEVELS:
        raise ValueError(f"zstd level must be -131072..22, got {level}")
    return zstd.compress(data, level)
