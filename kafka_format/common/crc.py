"""Checksums used by Kafka's record formats.

* v2 record batches: CRC-32C (Castagnoli) over ``attributes .. end of batch``
  (``DefaultRecordBatch.computeChecksum``, ``Crc32C.java``).
* v0/v1 messages: CRC-32 (IEEE, ``java.util.zip.CRC32``) over ``magic .. end
  of message`` (``LegacyRecord.computeChecksum``).
* producer ``.snapshot`` files: CRC-32C over everything after the crc field.

The accelerated functions (the compiled decoder's CRC-32C once it is loaded,
else the ``crc32c`` package's: SSE4.2 / ARMv8 CRC instructions, imported on
first use; ``zlib.crc32``) are what the library uses.  Plain-Python twins
(``crc32c_py``, ``crc32_py``) are kept as the readable definition and to test
the accelerated ones against.
"""

from __future__ import annotations

import zlib
from functools import cache
from typing import Any

__all__ = ["CRC32C_ACCELERATED", "crc32", "crc32_py", "crc32c", "crc32c_py", "use_accelerated_crc32c"]  # noqa: F822 (module __getattr__)

_CASTAGNOLI_REFLECTED = 0x82F63B78
_IEEE_REFLECTED = 0xEDB88320


@cache
def _table(poly: int) -> tuple[int, ...]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


def _crc_py(table: tuple[int, ...], data: bytes | bytearray | memoryview, value: int) -> int:
    crc = value ^ 0xFFFFFFFF
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def crc32c_py(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32C of ``data`` continuing from ``value``, in plain Python."""
    return _crc_py(_table(_CASTAGNOLI_REFLECTED), data, value)


def crc32_py(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32 (IEEE) of ``data`` continuing from ``value``, in plain Python."""
    return _crc_py(_table(_IEEE_REFLECTED), data, value)


_accelerated: Any = None     # the compiled decoder's CRC-32C, registered when it loads


def use_accelerated_crc32c(fn: Any) -> None:
    """Compute :func:`crc32c` with ``fn`` (same arguments, same results) from now on: the compiled
    decoder (:mod:`kafka_format.records.fast`) registers its own when it loads."""
    global _accelerated
    _accelerated = fn


@cache
def _crc32c_hw() -> Any:
    """The ``crc32c`` package's function, imported on first use (its import reads package
    metadata: a tenth of a small job's start-up), or None where it is missing."""
    try:  # hardware CRC-32C
        from crc32c import crc32c as hw
    except ImportError:  # pragma: no cover - dependency is declared; fallback keeps the library usable
        return None
    return hw


def crc32c(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32C (Castagnoli) of ``data``, continuing from ``value``: the compiled decoder's function
    where it is loaded, else the ``crc32c`` package's, else plain Python."""
    fn = _accelerated if _accelerated is not None else _crc32c_hw()
    if fn is not None:
        return int(fn(data, value))
    return crc32c_py(data, value)  # pragma: no cover


def crc32(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32 (IEEE, as ``java.util.zip.CRC32``) of ``data``."""
    return zlib.crc32(data, value) & 0xFFFFFFFF


def __getattr__(name: str) -> Any:
    if name == "CRC32C_ACCELERATED":     # whether a hardware function is there (may import the package)
        return _accelerated is not None or _crc32c_hw() is not None
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
