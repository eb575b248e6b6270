"""Type stub of the compiled loop (kafka_format/records/_fastdecode.c); used through kafka_format.records.fast."""

from collections.abc import Sequence
from typing import Final

from typing_extensions import Buffer as _BufferLike

CRC32C_IMPLEMENTATION: Final[str]  # "sse4.2" or "table"
SCAN_END: Final[int]               # walk stopped: <= 17 bytes left or a partial trailing entry
SCAN_ZERO_TAIL: Final[int]         # walk stopped at an all-zero remainder
SCAN_CORRUPT_SIZE: Final[int]      # walk stopped at size < 14 followed by non-zero bytes
CRC_NOT_CHECKED: Final[int]        # crc_valid value of entries whose CRC was not computed
META_COLUMNS: Final[int]           # int64 columns per batch in decode_v2's meta
FLAG_LOG_APPEND_TIME: Final[int]   # meta flags bit: the batch is LogAppendTime

class Buffer:
    """Column memory filled by the decoder, exposed through the buffer protocol (zero copy)."""

    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

class FormatViolation(ValueError):
    """args = (batch_index, code, payload_offset); fast.py defers to the reference decoder."""

def scan(buf: _BufferLike, start: int, end: int, verify_crc: bool, /
         ) -> tuple[Buffer, Buffer, Buffer, int, int, int]:
    """(positions int64, 61-byte headers, crc_valid uint8, count, stop, status) of buf[start:end]."""

def decode_v2(payloads: Sequence[_BufferLike], meta: _BufferLike, /) -> tuple[Buffer, ...]:
    """The 17 RecordColumns buffers (in field order) of the records of all payloads."""

def crc32c(data: _BufferLike, value: int = 0, /) -> int:
    """CRC-32C (Castagnoli) of data continuing from value (hardware when available)."""

def crc32c_portable(data: _BufferLike, value: int = 0, /) -> int:
    """CRC-32C with the portable slicing-by-8 table loop."""

def block_cache_info() -> tuple[int, int, int, int]:
    """(hits, misses, cached blocks, cached bytes) of the output block cache."""
