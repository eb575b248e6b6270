"""The records of the entries a walk yields, decoded in bounded parts with the read modes.

A scanned chunk's v2 batches are decompressed (``DefaultRecordBatch``'s codecs, each capped at
``max_decompressed``) and decoded by the :class:`~kafka_format.records.decoder.Decoder` in parts of
about ``_PART_BYTES`` decoded bytes: memory stays bounded by the cap, not by the number of batches
in a chunk.  The compiled decoder takes its fused path (decompression and decoding in one C call);
legacy message sets are decoded up to each compressed wrapper.  A batch whose records are bad
raises (FAILFAST, after the good batches before it) or is skipped whole and reported
(PERMISSIVE / DROPMALFORMED).  With a deferred CRC (:class:`~kafka_format.records.walker.Walker`)
uncompressed batches are verified while they are decoded.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import fields

import numpy as np

from kafka_format.common.errors import CorruptRecordError, KafkaFormatError
from kafka_format.records import batch_v2, legacy
from kafka_format.records.columns import RecordColumns
from kafka_format.records.decoder import Decoder, decompress, locate
from kafka_format.records.framing import BatchTable
from kafka_format.records.record_batch import MAGIC_V2, NONE
from kafka_format.records.walker import Walker

__all__ = ["RecordDecoder", "default_max_decompressed"]

# Bytes of a v2 batch between its attributes field (start of the CRC region) and its records.
_CRC_REGION_HEADER = batch_v2.RECORDS_OFFSET - batch_v2.ATTRIBUTES_OFFSET
# Decoded parts of a chunk are handed on once they hold this many bytes (smaller ones are merged).
_PART_BYTES = 16 << 20


def default_max_decompressed() -> int:
    """The decompression cap of a read that names none (``compression.DEFAULT_MAX_DECOMPRESSED``)."""
    try:
        from kafka_format.records.compression import DEFAULT_MAX_DECOMPRESSED
    except ImportError:  # pragma: no cover - compression ships with the package
        return 256 << 20
    return int(DEFAULT_MAX_DECOMPRESSED)


class RecordDecoder:
    def __init__(self, dec: Decoder, *, path: str | None, verify_crc: bool, max_decompressed: int,
                 permissive: bool, walker: Walker, include_headers: bool = True) -> None:
        self.dec = dec
        self.include_headers = include_headers   # False: the fused path need not output headers
        self.path = path
        self.verify_crc = verify_crc
        self.max_decompressed = max_decompressed
        self.permissive = permissive
        self.walker = walker
        self.failure: KafkaFormatError | None = None  # FAILFAST: raised after the good batches
        self.crc_bad: int | None = None  # deferred CRC mismatch: row of the table being decoded

    def _v2(self, buf: bytes | memoryview, table: BatchTable, rows: list[int]) -> tuple[RecordColumns, int]:
        """Records of a prefix of ``rows``: batches are decompressed in order until ``max_decompressed``
        bytes are held (at least one batch), so one chunk of small bombs is never all expanded at once.
        Returns the columns and how many rows they cover."""
        fused = getattr(self.dec, "decode_v2_region", None)
        if fused is not None:  # compiled decoder: decompression and decoding in one C call
            got = fused(buf, table, rows, check_crc=self.walker.defer_crc,
                        max_decompressed=self.max_decompressed, include_headers=self.include_headers)
            if got is not None:
                return got
        mv = memoryview(buf)
        index = np.asarray(rows, dtype=np.intp)
        starts = (table.position[index] + batch_v2.RECORDS_OFFSET).tolist()
        ends = (table.position[index] + table.size[index]).tolist()
        codecs = (table.attributes[index] & batch_v2.CODEC_MASK).tolist()
        payloads: list[bytes | memoryview] = [mv[a:b] for a, b in zip(starts, ends, strict=True)]
        held = 0
        for i, codec in enumerate(codecs):
            if codec != NONE:
                if i and held >= self.max_decompressed:
                    del payloads[i:]
                    break
                batch_position = starts[i] - batch_v2.RECORDS_OFFSET
                try:
                    payloads[i] = decompress(codec, payloads[i], magic=MAGIC_V2,
                                             max_output=self.max_decompressed, path=self.path,
                                             position=starts[i])
                except KafkaFormatError as exc:  # reported at the batch (cause keeps the detail)
                    raise locate(exc, path=self.path, position=batch_position) from exc
                held += len(payloads[i])
        done = len(payloads)
        if not self.walker.defer_crc:
            return self.dec.decode_v2_records(payloads, table, rows[:done]), done
        # Deferred CRC (see Walker): uncompressed batches are passed from their attributes
        # field, so the decoder verifies the CRC as it reads them.
        check = [codec == NONE for codec in codecs[:done]]
        for i, c in enumerate(check):
            if c:
                payloads[i] = mv[starts[i] - _CRC_REGION_HEADER:ends[i]]
        columns, k = self.dec.decode_v2_checked(payloads, table, rows[:done], check)
        if k < done:
            self.crc_bad = rows[k]
        return columns, k

    def _legacy(self, buf: bytes | memoryview, table: BatchTable, rows: list[int]) -> tuple[RecordColumns, int]:
        """Records of a prefix of ``rows``: all plain messages up to and including one compressed wrapper."""
        codecs = (table.attributes[np.asarray(rows, dtype=np.intp)] & legacy.CODEC_MASK).tolist()
        wrappers = [i for i, codec in enumerate(codecs) if codec != NONE]
        done = wrappers[0] + 1 if wrappers else len(rows)
        return self.dec.decode_legacy(buf, table, rows[:done], path=self.path, verify_crc=self.verify_crc,
                                      max_decompressed=self.max_decompressed), done

    def take_failure(self) -> KafkaFormatError:
        """The pending FAILFAST error, forgotten here (so no frame <-> error reference cycle)."""
        failure, self.failure = self.failure, None
        assert failure is not None
        return failure

    def _steps(self, kind: Callable[[bytes | memoryview, BatchTable, list[int]], tuple[RecordColumns, int]],
               buf: bytes | memoryview, table: BatchTable, rows: list[int]) -> Iterator[RecordColumns]:
        while rows and self.crc_bad is None:
            columns, done = kind(buf, table, rows)
            yield columns
            rows = rows[done:]

    def _run(self, kind: Callable[[bytes | memoryview, BatchTable, list[int]], tuple[RecordColumns, int]],
             buf: bytes | memoryview, table: BatchTable, rows: list[int], base: int) -> Iterator[RecordColumns]:
        pending = rows
        while pending:
            try:
                columns, done = kind(buf, table, pending)
            except KafkaFormatError as exc:
                i, located = self._bad_row(exc, table, pending, base)
            except (ValueError, OverflowError, IndexError, struct.error) as exc:  # defensive boundary
                raise CorruptRecordError("undecodable record data", path=self.path,
                                         position=base + int(table.position[pending[0]]),
                                         found=f"{type(exc).__name__}: {exc}") from exc
            else:
                yield columns
                if self.crc_bad is not None:  # the walker handles it (mode, resync)
                    return
                pending = pending[done:]
                continue
            yield from self._steps(kind, buf, table, pending[:i])
            if not self.permissive:  # FAILFAST: the batches before the bad one are still yielded
                self.failure = located
                return
            bad = pending[i]
            self.walker.skip(base + int(table.position[bad]), int(table.size[bad]), located.reason)
            pending = pending[i + 1:]

    def _bad_row(self, exc: KafkaFormatError, table: BatchTable, pending: list[int],
                 base: int) -> tuple[int, KafkaFormatError]:
        """Index in ``pending`` of the batch ``exc`` is about, and ``exc`` placed in the file."""
        where = exc.position
        hit = [i for i, r in enumerate(pending) if int(table.position[r]) == where]
        located = locate(exc, path=self.path, position=None if where is None else base + where)
        if not hit:
            raise located from None
        _drop_frames(located)  # keep the causes' details, not their frames' buffers
        return hit[0], located

    def decode(self, buf: bytes | memoryview, table: BatchTable, base: int) -> Iterator[RecordColumns]:
        """Records of the entries of ``table`` in order, in parts of about ``_PART_BYTES`` (at most
        ``max_decompressed``) decoded bytes each: memory stays bounded by the cap, not by the
        number of batches in a chunk, and small parts (legacy wrappers) are merged."""
        is_v2 = table.magic == MAGIC_V2
        # Empty v2 batches (compaction leftovers) have no rows and nothing to decompress.
        rows = np.flatnonzero(~(is_v2 & (table.count == 0)))
        kinds = is_v2[rows]
        cuts = (np.flatnonzero(kinds[1:] != kinds[:-1]) + 1).tolist()
        held: list[RecordColumns] = []
        size = 0
        part_bytes = min(self.max_decompressed, _PART_BYTES)
        for lo, hi in zip([0, *cuts], [*cuts, len(rows)], strict=True):
            if hi > lo:
                run = rows[lo:hi].tolist()
                for part in self._run(self._v2 if kinds[lo] else self._legacy, buf, table, run, base):
                    held.append(part)
                    size += _nbytes(part)
                    if size >= part_bytes:
                        yield RecordColumns.concat(held)
                        held, size = [], 0
                if self.failure is not None or self.crc_bad is not None:
                    break
        if held:
            yield RecordColumns.concat(held)


def _drop_frames(exc: BaseException) -> None:
    """Clear the tracebacks along ``exc``'s cause chain: a kept error must not keep the decoding
    frames alive (they hold decompressed payloads up to the cap)."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        cur = todo.pop()
        if cur is not None and id(cur) not in seen:
            seen.add(id(cur))
            cur.__traceback__ = None
            todo += [cur.__cause__, cur.__context__]


def _nbytes(columns: RecordColumns) -> int:
    return sum(getattr(columns, f.name).nbytes for f in fields(columns))
