"""The reference record decoder.

:class:`Decoder` is the reference implementation (plain Python: the spec in code).
``kafka_format.records.fast.FastDecoder`` subclasses it and overrides only the hot methods
:meth:`Decoder.scan`, :meth:`Decoder.decode_v2_records` and :meth:`Decoder.decode_v2_checked`;
everything else
(decompression, legacy message sets, Arrow assembly, modes) is shared.
Which of the two a process uses: :mod:`kafka_format.records.implementation`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kafka_format.common.crc import crc32c
from kafka_format.common.errors import CompressionError, KafkaFormatError, UnsupportedFormatError
from kafka_format.common.extensions import REFERENCE
from kafka_format.records import batch_v2, framing, legacy
from kafka_format.records.columns import RecordColumns
from kafka_format.records.framing import BatchTable
from kafka_format.records.record_batch import MAX_CODEC

__all__ = ["REFERENCE", "Decoder", "decompress", "locate"]



_compression: Any = None  # kafka_format.records.compression, imported on first use


def decompress(codec: int, data: bytes | memoryview, *, magic: int, max_output: int,
               path: str | None, position: int | None) -> bytes | bytearray:
    """Decompress a batch payload through :mod:`kafka_format.records.compression`.

    ``data`` may be a view of a reused or mapped read buffer: the result never references it.
    Errors carry ``path``/``position`` (the batch's position).
    """
    if codec > MAX_CODEC:
        raise UnsupportedFormatError("unknown compression codec", path=path, position=position,
                                     expected="codec 0-4", found=f"codec {codec}")
    global _compression
    if _compression is None:
        try:
            from kafka_format.records import compression
        except ImportError as exc:  # pragma: no cover - the module ships with the package
            raise CompressionError("compression support is not available", path=path, position=position,
                                   expected="kafka_format.records.compression", found=str(exc)) from exc
        _compression = compression
    try:
        return _compression.decompress(codec, data, magic=magic, max_output=max_output,
                                       path=path, position=position)
    except KafkaFormatError as exc:
        if exc.position is None or exc.path != path:
            raise locate(exc, path=path, position=position if exc.position is None else exc.position) from exc
        raise


def locate(exc: KafkaFormatError, *, path: str | None, position: int | None) -> KafkaFormatError:
    """A copy of ``exc`` placed at ``path``/``position`` (cause chained)."""
    err = type(exc)(exc.reason, path=path, position=position, expected=exc.expected, found=exc.found,
                    base_offset=exc.base_offset, code=exc.code)
    err.__cause__ = exc
    return err


class Decoder:
    """Reference decoder (see the module doc and ARCHITECTURE.md "Decoder contract")."""

    name = REFERENCE
    #: Whether ``scan(..., defer_crc=True)`` may leave the CRC of non-empty uncompressed v2
    #: batches to :meth:`decode_v2_checked` (the reference verifies every CRC in ``scan``).
    defers_crc = False

    def scan(self, buf: bytes | bytearray | memoryview, *, start: int = 0, end: int | None = None,
             path: str | None = None, verify_crc: bool = True, defer_crc: bool = False) -> BatchTable:
        """Walk the framed entries of ``buf[start:end]``; positions relative to ``buf``.
        ``defer_crc`` is a permission (see :attr:`defers_crc`), ignored here."""
        return framing.scan_entries(buf, start=start, end=end, path=path, verify_crc=verify_crc)

    def decode_v2_records(self, payloads: Sequence[bytes | memoryview], table: BatchTable,
                          rows: Sequence[int]) -> RecordColumns:
        """Decode the records of v2 batches ``rows``; ``payloads[i]`` is the records region of ``rows[i]``."""
        return batch_v2.decode_batches(payloads, table, rows)

    def decode_v2_checked(self, payloads: Sequence[bytes | memoryview], table: BatchTable,
                          rows: Sequence[int], check: Sequence[bool]) -> tuple[RecordColumns, int]:
        """Deferred CRC: like :meth:`decode_v2_records`, but where ``check[i]`` is true ``payloads[i]``
        is batch ``rows[i]`` from its attributes field to its end (uncompressed), whose CRC-32C is
        verified first.  Batches are taken in order up to the first CRC mismatch: returns the
        records of ``rows[:k]`` and ``k`` (``len(rows)`` when every checked CRC matches)."""
        skip = batch_v2.RECORDS_OFFSET - batch_v2.ATTRIBUTES_OFFSET
        k = next((i for i, (payload, c) in enumerate(zip(payloads, check, strict=True))
                  if c and crc32c(payload) != int(table.crc[rows[i]])), len(rows))
        plain = [memoryview(p)[skip:] if c else p for p, c in zip(payloads[:k], check[:k], strict=True)]
        return self.decode_v2_records(plain, table, rows[:k]), k

    def decode_legacy(self, buf: bytes | memoryview, table: BatchTable, rows: Sequence[int], *,
                      path: str | None, verify_crc: bool, max_decompressed: int) -> RecordColumns:
        """Decode magic 0/1 entries ``rows`` (shared by both decoders)."""

        def _decompress(codec: int, data: bytes, magic: int, position: int) -> bytes:
            return decompress(codec, data, magic=magic, max_output=max_decompressed, path=path,
                              position=position)

        return legacy.decode_entries(buf, table, rows, path=path, verify_crc=verify_crc,
                                     decompress=_decompress)
