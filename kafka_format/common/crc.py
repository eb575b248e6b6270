"""Checksums used by Kafka's record formats.

* v2 record batches: CRC-32C (Castagnoli) over ``attributes .. end of batch``
  (``DefaultRecordBatch.computeChecksum``, ``Crc32C.java``).
* v0/v1 messages: CRC-32 (IEEE, ``java.util.zip.CRC32``) over ``magic .. end
  of message`` (``LegacyRecord.computeChecksum``).
* producer ``.snapshot`` files: CRC-32C over everything after the crc field.

The accelerated functions (``crc32c`` package: SSE4.2 / ARMv8 CRC
instructions; ``zlib.crc32``) are what the library uses.  Plain-Python twins
(``crc32c_py``, ``crc32_py``) are kept as the readable definition and to test
the accelerated ones against.
"""

from __future__ import annotations

import zlib

try:  # hardware CRC-32C
    from crc32c import crc32c as _crc32c_hw
except ImportError:  # pragma: no cover - dependency is declared; fallback keeps the library usable
    _crc32c_hw = None

__all__ = ["crc32c", "crc32", "crc32c_py", "crc32_py", "CRC32C_ACCELERATED"]

_CASTAGNOLI_REFLECTED = 0x82F63B78
_IEEE_REFLECTED = 0xEDB88320


def _make_table(poly: int) -> tuple[int, ...]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_CRC32C_TABLE = _make_table(_CASTAGNOLI_REFLECTED)
_CRC32_TABLE = _make_table(_IEEE_REFLECTED)


def _crc_py(table: tuple[int, ...], data: bytes | bytearray | memoryview, value: int) -> int:
    crc = value ^ 0xFFFFFFFF
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def crc32c_py(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32C of ``data`` continuing from ``value``, in plain Python."""
    return _crc_py(_CRC32C_TABLE, data, value)


def crc32_py(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32 (IEEE) of ``data`` continuing from ``value``, in plain Python."""
    return _crc_py(_CRC32_TABLE, data, value)


CRC32C_ACCELERATED = _crc32c_hw is not None


def crc32c(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32C (Castagnoli) of ``data``, continuing from ``value``."""
    if _crc32c_hw is not None:
        return _crc32c_hw(data, value)
    return crc32c_py(data, value)  # pragma: no cover


def crc32(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32 (IEEE, as ``java.util.zip.CRC32``) of ``data``."""
    return zlib.crc32(data, value) & 0xFFFFFFFF
