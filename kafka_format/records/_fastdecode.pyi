"""Type stub of the compiled loop (kafka_format/records/_fastdecode.c); used through kafka_format.records.fast."""

import os
from collections.abc import Sequence
from typing import Final, final

from kafka_format.common._buffers import BufferLike as _BufferLike

CRC32C_IMPLEMENTATION: Final[str]  # "table", "sse4.2", "pclmul+sse4.2", "avx512-vpclmul+sse4.2" (+ long-input choice)
CRC_LEVEL: Final[int]              # 0 tables, 1 SSE4.2, 2 PCLMULQDQ, 3 AVX-512 VPCLMULQDQ
XXH_LEVEL: Final[int]              # xxh32 of lz4 blocks side by side: 0 portable, 1 AVX2, 2 AVX-512
SCAN_END: Final[int]               # walk stopped: <= 17 bytes left or a partial trailing entry
SCAN_ZERO_TAIL: Final[int]         # walk stopped at an all-zero remainder
SCAN_CORRUPT_SIZE: Final[int]      # walk stopped at size < 14 followed by non-zero bytes
CRC_NOT_CHECKED: Final[int]        # crc_valid value of entries whose CRC was not computed
META_COLUMNS: Final[int]           # int64 columns per batch in decode_v2's meta
FLAG_LOG_APPEND_TIME: Final[int]   # meta flags bit: the batch is LogAppendTime
FLAG_CHECK_CRC: Final[int]         # meta flags bit: verify the batch's CRC-32C while decoding it
FLAG_CODEC_SHIFT: Final[int]       # meta flags bits 4-6: the batch's codec (decode_v2_chunk)
CHUNK_META_COLUMNS: Final[int]     # int64 columns per batch in decode_v2_chunk's meta
C_CODECS: Final[int]               # bit i: codec i is decompressed in C
CODEC_LIBRARIES: Final[dict[str, str]]   # codec name: the library decoding it in C, with its version
SCAN_VERIFY_DEFER: Final[int]      # scan mode: leave non-empty uncompressed v2 batches to the decode
OPT_SKIP_HEADERS: Final[int]       # decode_v2_chunk option: headers read and checked, not output
OPT_NO_COPY: Final[int]            # benchmarks: keys and values not copied
OPT_DECOMPRESS_ONLY: Final[int]    # benchmarks: decompress, decode nothing

@final
class Buffer:
    """Column memory filled by the decoder, exposed through the buffer protocol (zero copy)."""

    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

class FormatViolation(ValueError):
    """args = (batch_index, code, payload_offset); fast.py defers to the reference decoder."""

def scan(buf: _BufferLike, start: int, end: int, mode: int, /
         ) -> tuple[Buffer, Buffer, Buffer, int, int, int]:
    """(positions int64, 61-byte headers, crc_valid uint8, count, stop, status) of buf[start:end];
    mode 0: no CRC checked, 1: every CRC checked, SCAN_VERIFY_DEFER: see there."""

def decode_v2(payloads: Sequence[_BufferLike], meta: _BufferLike, /) -> tuple[Buffer, ...]:
    """The 17 RecordColumns buffers (in field order) of the records of all payloads."""

def decode_v2_chunk(buf: _BufferLike, meta: _BufferLike, max_decompressed: int, options: int,
                    max_held: int = ..., /) -> tuple[tuple[Buffer, ...], int, int]:
    """(the 17 RecordColumns buffers, batches done, bytes decompressed) of v2 batches of one buffer,
    compressed ones decompressed in C; at most max_held decompressed bytes held per call."""

def crc32c(data: _BufferLike, value: int = 0, /) -> int:
    """CRC-32C (Castagnoli) of data continuing from value (hardware when available)."""

def crc32c_portable(data: _BufferLike, value: int = 0, /) -> int:
    """CRC-32C with the portable slicing-by-8 table loop."""

def crc32c_at(data: _BufferLike, value: int, level: int, /) -> int:
    """CRC-32C at implementation level <= level (tests compare every level)."""

def crc32c_copy(data: _BufferLike, value: int, level: int, dst_offset: int = 0, /) -> tuple[int, bytes]:
    """The fused copy + CRC-32C of large keys and values, into a destination at dst_offset (tests)."""

def xxh32_many(buffers: Sequence[_BufferLike], level: int, /) -> list[int]:
    """xxHash32 (seed 0) of up to 32 buffers hashed side by side at level <= level (tests)."""

def repeat(pattern: _BufferLike, n: int, /) -> Buffer:
    """n copies of pattern (constant columns)."""

def offsets32(n: int, width: int, /) -> Buffer:
    """int32 [0, width, ..., n*width]: offsets of n equal strings."""

def runs(batch_row: _BufferLike, /) -> Buffer:
    """int64 starts of the runs of equal int32 values, then their count."""

def repeat_runs(values: _BufferLike, itemsize: int, starts: _BufferLike, /) -> Buffer:
    """Item i of values repeated starts[i+1] - starts[i] times."""

def timestamps_us(ts_ms: _BufferLike, /) -> tuple[Buffer, Buffer | None, int]:
    """int64 ms as µs, null (with a validity bitmap) where they do not fit."""

def scan_partition_dir(path: str | bytes | os.PathLike[str] | os.PathLike[bytes], /) -> tuple[bytes, list[tuple[str, bool, int | None, int]], list[str], int, int] | None:
    """A partition dir's segment files as int64 rows (6 per segment), its other files and subdirectories,
    the counts of .log and .index files; None when the Python listing must decide."""

def block_cache_info() -> tuple[int, int, int, int]:
    """(hits, misses, cached blocks, cached bytes) of the output block cache."""
