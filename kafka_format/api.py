"""File-level decoding API: ``.log`` bytes → Arrow record batches.

* :func:`decode_segment` — batches whose first byte lies in ``[start, end)`` of a file
  (a path, a Python binary file or a ``pyarrow`` ``NativeFile``), read in chunks of
  ``read_size`` (a batch larger than a chunk is read exactly, bounded by its declared
  size and the bytes the file has), with FAILFAST / PERMISSIVE / DROPMALFORMED modes;
* :func:`decode_file` — a whole ``.log`` file, provenance columns filled from its path;
* :func:`decode_bytes` — the same over an in-memory buffer;
* :func:`iter_batches` — batch headers only, no decompression.

Modes: FAILFAST raises the first problem (file, position, expected, found).
PERMISSIVE and DROPMALFORMED skip a bad byte range and report it through
``on_skip(SkippedRange)``: a batch with a bad CRC or bad records is skipped whole;
after bad framing (or a bad CRC, whose size field cannot be trusted) the reader
resynchronises at the next position where an entry with a plausible header and a
valid CRC starts (first trying the position its size field names).  Bytes decoded
plus bytes skipped always equal the bytes scanned.  With ``granularity="batch"`` a
bad CRC is not an error: it is reported in the ``crcValid`` column.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePath
from typing import IO, Any

import numpy as np
import pyarrow as pa

from kafka_format.crc import crc32, crc32c
from kafka_format.decoder import Decoder, decompress, get_decoder, locate
from kafka_format.errors import ChecksumError, CorruptRecordError, KafkaFormatError
from kafka_format.records import batch_v2, framing
from kafka_format.records.columns import (
    FileContext,
    RecordColumns,
    batch_table_to_arrow,
    to_arrow,
)
from kafka_format.records.framing import BatchTable

__all__ = [
    "FileContext",
    "SkippedRange",
    "BatchHeader",
    "decode_segment",
    "decode_file",
    "decode_bytes",
    "iter_batches",
    "context_from_path",
    "MODES",
    "DEFAULT_READ_SIZE",
]

MODES = ("FAILFAST", "PERMISSIVE", "DROPMALFORMED")
GRANULARITIES = ("record", "batch")
DEFAULT_READ_SIZE = 8 << 20
DEFAULT_MAX_ROWS = 65536
_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
_SUFFIXED_DIR = re.compile(r"^(.+)\.([^.]+)-(delete|future|stray)$")  # LocalLog: strip from the last '.'

_CODEC_NONE = 0
_MAGIC_V2 = 2
_LEGACY_MAGICS = (0, 1)


def _default_max_decompressed() -> int:
    try:
        from kafka_format.compression import DEFAULT_MAX_DECOMPRESSED
    except ImportError:  # pragma: no cover - compression ships with the package
        return 256 << 20
    return int(DEFAULT_MAX_DECOMPRESSED)


@dataclass(frozen=True)
class SkippedRange:
    """A byte range of ``path`` skipped in PERMISSIVE / DROPMALFORMED mode."""

    path: str | None
    position: int
    length: int
    reason: str


@dataclass(frozen=True)
class BatchHeader:
    """Header of one batch (legacy: one shallow message); see ``BATCH_SCHEMA``."""

    position: int
    size: int
    magic: int
    base_offset: int | None
    last_offset: int
    count: int | None
    compression: str
    attributes: int
    timestamp_type: int
    base_timestamp: int | None
    max_timestamp: int
    delete_horizon_ms: int | None
    is_transactional: bool
    is_control: bool
    producer_id: int | None
    producer_epoch: int | None
    base_sequence: int | None
    last_sequence: int | None
    partition_leader_epoch: int | None
    crc: int
    crc_valid: bool


# ---------------------------------------------------------------------------------------------
# sources


class _Source:
    """Positioned reads from a path, a Python binary file, a NativeFile or a buffer."""

    def __init__(self, source: str | os.PathLike[str] | IO[bytes] | Any) -> None:
        self._owned = False
        self._view: memoryview | None = None
        if isinstance(source, (bytes, bytearray, memoryview)):
            self._view = memoryview(source).cast("B")
            self.size = len(self._view)
            self.path: str | None = None
            return
        if isinstance(source, (str, os.PathLike)):
            self.path = os.fspath(source)
            self._file: Any = open(self.path, "rb")  # noqa: SIM115 - closed by close()
            self._owned = True
            self.size = os.fstat(self._file.fileno()).st_size
            return
        self._file = source
        name = getattr(source, "name", None)
        self.path = name if isinstance(name, str) else None
        size = getattr(source, "size", None)
        if callable(size):  # pyarrow NativeFile
            self.size = int(size())
        else:
            here = source.tell()
            self.size = source.seek(0, os.SEEK_END)
            source.seek(here)

    def read_at(self, pos: int, n: int) -> bytes | memoryview:
        """Up to ``n`` bytes at ``pos`` (fewer only at end of file)."""
        n = max(0, min(n, self.size - pos))
        if self._view is not None:
            return self._view[pos:pos + n]
        self._file.seek(pos)
        parts = []
        got = 0
        while got < n:
            data = self._file.read(n - got)
            if not data:
                break
            parts.append(data)
            got += len(data)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def close(self) -> None:
        if self._owned:
            self._file.close()


# ---------------------------------------------------------------------------------------------
# walking the framing, with modes


def _computed_crc(buf: bytes | memoryview, table: BatchTable, row: int) -> int:
    pos = int(table.position[row])
    end = pos + int(table.size[row])
    mv = memoryview(buf)
    if int(table.magic[row]) == _MAGIC_V2:
        return crc32c(mv[pos + batch_v2.ATTRIBUTES_OFFSET:end])
    return crc32(mv[pos + framing.MAGIC_OFFSET:end])


def _plausible_at(src: _Source, pos: int) -> bool:
    """Whether a complete entry with a sane header and a valid CRC starts at ``pos``."""
    head = src.read_at(pos, framing.HEADER_SIZE_UP_TO_MAGIC)
    if len(head) < framing.HEADER_SIZE_UP_TO_MAGIC:
        return False
    _offset, size = framing.ENTRY.unpack_from(head, 0)
    if size < framing.MIN_ENTRY_SIZE or pos + framing.LOG_OVERHEAD + size > src.size:
        return False
    entry = src.read_at(pos, framing.LOG_OVERHEAD + size)
    try:
        table = framing.scan_entries(entry, verify_crc=True)
    except KafkaFormatError:
        return False
    return len(table) == 1 and bool(table.crc_valid[0])


def _resync(src: _Source, bad: int, hint: int | None, window: int) -> int:
    """File position of the next plausible entry after ``bad`` (``src.size`` if none)."""
    if hint is not None and bad < hint < src.size and _plausible_at(src, hint):
        return hint
    need = framing.HEADER_SIZE_UP_TO_MAGIC
    c = bad + 1
    while src.size - c > need:
        chunk = bytes(src.read_at(c, window))
        last = len(chunk) - need
        for i in range(max(0, last + 1)):
            magic = chunk[i + framing.MAGIC_OFFSET]
            if magic > _MAGIC_V2:
                continue
            _offset, size = framing.ENTRY.unpack_from(chunk, i)
            if size < framing.MIN_ENTRY_SIZE or c + i + framing.LOG_OVERHEAD + size > src.size:
                continue
            if magic == _MAGIC_V2 and framing.LOG_OVERHEAD + size < framing.MIN_V2_BATCH_SIZE:
                continue
            if _plausible_at(src, c + i):
                return c + i
        c += max(1, last + 1)
    return src.size


class _Walker:
    """Yields (buffer, table, base) of complete entries of ``[start, end)``; applies modes."""

    def __init__(self, src: _Source, dec: Decoder, *, start: int, end: int | None, path: str | None,
                 verify_crc: bool, permissive: bool, crc_errors: bool,
                 on_skip: Callable[[SkippedRange], None] | None, read_size: int) -> None:
        self.src = src
        self.dec = dec
        self.start = start
        self.limit = src.size if end is None else min(end, src.size)
        self.path = path
        self.verify_crc = verify_crc
        self.permissive = permissive
        self.crc_errors = crc_errors and verify_crc
        self.on_skip = on_skip
        self.read_size = max(read_size, framing.HEADER_SIZE_UP_TO_MAGIC + 1)

    def skip(self, position: int, length: int, reason: str) -> None:
        if self.on_skip is not None and length > 0:
            self.on_skip(SkippedRange(self.path, position, length, reason))

    def _skip_to_resync(self, bad: int, hint: int | None, reason: str) -> int:
        q = _resync(self.src, bad, hint, self.read_size)
        self.skip(bad, min(q, self.limit) - bad, reason)
        return q

    def _zero_rest(self, pos: int) -> bool:
        while pos < self.src.size:
            chunk = bytes(self.src.read_at(pos, self.read_size))
            if chunk.count(0) != len(chunk):
                return False
            pos += len(chunk)
        return True

    def __iter__(self) -> Iterator[tuple[bytes | memoryview, BatchTable, int]]:
        src = self.src
        pos = self.start
        want = 0
        while pos < self.limit:
            n = want or min(self.read_size, max(self.limit - pos, framing.HEADER_SIZE_UP_TO_MAGIC + 1))
            want = 0
            buf = src.read_at(pos, n)
            at_eof = pos + len(buf) >= src.size
            stop = False
            error: KafkaFormatError | None = None
            try:
                table = self.dec.scan(buf, start=0, end=len(buf), path=self.path, verify_crc=self.verify_crc)
            except KafkaFormatError as exc:  # entries before the bad one are still delivered
                epos = exc.position or 0
                if pos + epos >= self.limit:
                    stop = True
                else:
                    error = exc
                table = self.dec.scan(buf, start=0, end=epos, path=self.path, verify_crc=self.verify_crc)
                table.end = epos
            beyond = table.position >= self.limit - pos
            if beyond.any():
                table = table.take(~beyond)
                stop = True
            if self.crc_errors and not table.crc_valid.all():
                i = int(np.argmin(table.crc_valid))
                bad = pos + int(table.position[i])
                if i:
                    yield buf, table.take(slice(0, i)), pos
                if not self.permissive:
                    stored = int(table.crc[i])
                    found = _computed_crc(buf, table, i)
                    raise ChecksumError("record batch CRC mismatch" if table.magic[i] == _MAGIC_V2
                                        else "message CRC mismatch", path=self.path, position=bad,
                                        expected=f"crc {stored}", found=f"crc {found}",
                                        base_offset=int(table.base_offset[i]))
                pos = self._skip_to_resync(bad, bad + int(table.size[i]), "CRC mismatch")
                continue
            if len(table):
                yield buf, table, pos
            if error is not None:
                bad = pos + (error.position or 0)
                if not self.permissive:
                    raise locate(error, path=self.path, position=bad) from None
                pos = self._skip_to_resync(bad, None, error.reason)
                continue
            if stop:
                return
            new_pos = pos + table.end
            if table.zero_tail:
                if at_eof or self._zero_rest(pos + len(buf)):
                    return
                exc = CorruptRecordError("record size smaller than the minimum record overhead",
                                         path=self.path, position=new_pos,
                                         expected=f"size >= {framing.MIN_ENTRY_SIZE}",
                                         found="zero bytes followed by data")
                if not self.permissive:
                    raise exc
                pos = self._skip_to_resync(new_pos, None, exc.reason)
                continue
            if new_pos > pos:
                pos = new_pos
                continue
            if at_eof or len(buf) <= framing.HEADER_SIZE_UP_TO_MAGIC:
                return  # fewer than 18 bytes or a partial trailing batch: end of data
            _offset, size = framing.ENTRY.unpack_from(buf, 0)
            total = framing.LOG_OVERHEAD + size
            if pos + total > src.size:
                return  # partial trailing batch
            want = total  # one batch larger than the chunk: read exactly it


# ---------------------------------------------------------------------------------------------
# decoding the records of a scanned chunk


class _RecordDecoder:
    def __init__(self, dec: Decoder, *, path: str | None, verify_crc: bool, max_decompressed: int,
                 permissive: bool, walker: _Walker) -> None:
        self.dec = dec
        self.path = path
        self.verify_crc = verify_crc
        self.max_decompressed = max_decompressed
        self.permissive = permissive
        self.walker = walker

    def _v2(self, buf: bytes | memoryview, table: BatchTable, rows: list[int]) -> RecordColumns:
        mv = memoryview(buf)
        index = np.asarray(rows, dtype=np.intp)
        starts = (table.position[index] + batch_v2.RECORDS_OFFSET).tolist()
        ends = (table.position[index] + table.size[index]).tolist()
        codecs = (table.attributes[index] & batch_v2.CODEC_MASK).tolist()
        payloads: list[bytes | memoryview] = [mv[a:b] for a, b in zip(starts, ends, strict=True)]
        for i, codec in enumerate(codecs):
            if codec != _CODEC_NONE:
                batch_position = starts[i] - batch_v2.RECORDS_OFFSET
                try:
                    payloads[i] = decompress(codec, payloads[i], magic=_MAGIC_V2,
                                             max_output=self.max_decompressed, path=self.path,
                                             position=starts[i])
                except KafkaFormatError as exc:  # reported at the batch (cause keeps the detail)
                    raise locate(exc, path=self.path, position=batch_position) from exc
        return self.dec.decode_v2_records(payloads, table, rows)

    def _legacy(self, buf: bytes | memoryview, table: BatchTable, rows: list[int]) -> RecordColumns:
        return self.dec.decode_legacy(buf, table, rows, path=self.path, verify_crc=self.verify_crc,
                                      max_decompressed=self.max_decompressed)

    def _run(self, kind: Callable[[bytes | memoryview, BatchTable, list[int]], RecordColumns],
             buf: bytes | memoryview, table: BatchTable, rows: list[int], base: int) -> list[RecordColumns]:
        parts: list[RecordColumns] = []
        pending = rows
        while pending:
            try:
                parts.append(kind(buf, table, pending))
                break
            except KafkaFormatError as exc:
                where = exc.position
                hit = [i for i, r in enumerate(pending) if int(table.position[r]) == where]
                if not self.permissive or not hit:
                    raise locate(exc, path=self.path,
                                 position=None if where is None else base + where) from None
                i = hit[0]
                if i:
                    parts.append(kind(buf, table, pending[:i]))
                bad = pending[i]
                self.walker.skip(base + int(table.position[bad]), int(table.size[bad]), exc.reason)
                pending = pending[i + 1:]
            except (ValueError, OverflowError, IndexError, struct.error) as exc:  # defensive boundary
                raise CorruptRecordError("undecodable record data", path=self.path,
                                         position=base + int(table.position[pending[0]]),
                                         found=f"{type(exc).__name__}: {exc}") from exc
        return parts

    def decode(self, buf: bytes | memoryview, table: BatchTable, base: int) -> RecordColumns:
        is_v2 = table.magic == _MAGIC_V2
        # Empty v2 batches (compaction leftovers) have no rows and nothing to decompress.
        rows = np.flatnonzero(~(is_v2 & (table.count == 0)))
        kinds = is_v2[rows]
        cuts = (np.flatnonzero(kinds[1:] != kinds[:-1]) + 1).tolist()
        parts: list[RecordColumns] = []
        for lo, hi in zip([0, *cuts], [*cuts, len(rows)], strict=True):
            if hi > lo:
                run = rows[lo:hi].tolist()
                parts += self._run(self._v2 if kinds[lo] else self._legacy, buf, table, run, base)
        return RecordColumns.concat(parts)


# ---------------------------------------------------------------------------------------------
# public functions


def decode_segment(
    source: str | os.PathLike[str] | IO[bytes] | Any,
    *,
    start: int = 0,
    end: int | None = None,
    context: FileContext | None = None,
    verify_crc: bool = True,
    mode: str = "FAILFAST",
    on_skip: Callable[[SkippedRange], None] | None = None,
    granularity: str = "record",
    include_headers: bool = True,
    max_rows_per_batch: int = DEFAULT_MAX_ROWS,
    read_size: int = DEFAULT_READ_SIZE,
    max_decompressed: int | None = None,
    decoder: Decoder | None = None,
) -> Iterator[pa.RecordBatch]:
    """Arrow batches (``RECORD_SCHEMA``, or ``BATCH_SCHEMA`` for ``granularity="batch"``) of
    the entries whose first byte lies in ``[start, end)`` of ``source``.

    ``start`` must be an entry boundary.  See the module doc for modes.
    """
    mode = mode.upper()
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity must be one of {GRANULARITIES}, not {granularity!r}")
    if max_rows_per_batch < 1:
        raise ValueError("max_rows_per_batch must be >= 1")
    dec = decoder if decoder is not None else get_decoder()
    src = _Source(source)
    try:
        path = context.path if context is not None and context.path is not None else src.path
        ctx = context or FileContext(path=path)
        permissive = mode != "FAILFAST"
        walker = _Walker(src, dec, start=start, end=end, path=path, verify_crc=verify_crc,
                         permissive=permissive, crc_errors=granularity == "record", on_skip=on_skip,
                         read_size=read_size)
        records = _RecordDecoder(dec, path=path, verify_crc=verify_crc, permissive=permissive,
                                 max_decompressed=(_default_max_decompressed() if max_decompressed is None
                                                   else max_decompressed), walker=walker)
        for buf, table, base in walker:
            if granularity == "batch":
                yield batch_table_to_arrow(table.shifted(base), ctx)
                continue
            columns = records.decode(buf, table, base)
            if not len(columns):
                continue
            batch = to_arrow(table.shifted(base), columns, ctx, include_headers=include_headers)
            for lo in range(0, batch.num_rows, max_rows_per_batch):
                yield batch.slice(lo, max_rows_per_batch)
    finally:
        src.close()


def context_from_path(path: str | os.PathLike[str], *, broker_id: int | None = None) -> FileContext:
    """Provenance of a ``.log`` file: ``<logDir>/<topic>-<partition>/<20-digit offset>.log``.

    Partition dirs follow ``LocalLog``'s naming (spec §1.3): ``<topic>-<partition>``, or with a
    ``.<uuid>-delete`` / ``-future`` / ``-stray`` suffix (stripped from the last ``.``).
    """
    p = PurePath(os.fspath(path))
    topic = partition = segment = log_dir = None
    m = _SEGMENT_NAME.match(p.name)
    if m:
        segment = int(m.group(1))
    name = p.parent.name
    suffixed = _SUFFIXED_DIR.match(name)
    if suffixed:
        name = suffixed.group(1)
    d = _PARTITION_DIR.match(name)
    if d:
        topic, partition = d.group(1), int(d.group(2))
        log_dir = str(p.parent.parent)
    return FileContext(path=os.fspath(path), topic=topic, partition=partition, segment=segment,
                       log_dir=log_dir, broker_id=broker_id)


def decode_file(path: str | os.PathLike[str], *, verify_crc: bool = True) -> Iterator[pa.RecordBatch]:
    """Records of one ``.log`` file (FAILFAST), provenance from its path."""
    return decode_segment(path, context=context_from_path(path), verify_crc=verify_crc)


def decode_bytes(buf: bytes | bytearray | memoryview, *, verify_crc: bool = True) -> Iterator[pa.RecordBatch]:
    """Records of a buffer holding ``.log`` bytes (FAILFAST)."""
    return decode_segment(buf, verify_crc=verify_crc, context=FileContext())


def iter_batches(path: str | os.PathLike[str] | IO[bytes] | Any) -> Iterator[BatchHeader]:
    """Batch headers of a ``.log`` file in order (no decompression); bad CRCs in ``crc_valid``."""
    ctx = context_from_path(path) if isinstance(path, (str, os.PathLike)) else None
    names = {
        "position": "position", "size": "size", "magic": "magic", "base_offset": "baseOffset",
        "last_offset": "lastOffset", "count": "count", "compression": "compression",
        "attributes": "attributes", "timestamp_type": "timestampType", "base_timestamp": "baseTimestamp",
        "max_timestamp": "maxTimestamp", "delete_horizon_ms": "deleteHorizonMs",
        "is_transactional": "isTransactional", "is_control": "isControl", "producer_id": "producerId",
        "producer_epoch": "producerEpoch", "base_sequence": "baseSequence", "last_sequence": "lastSequence",
        "partition_leader_epoch": "partitionLeaderEpoch", "crc": "crc", "crc_valid": "crcValid",
    }
    for batch in decode_segment(path, context=ctx, granularity="batch"):
        columns = {field: batch.column(column).to_pylist() for field, column in names.items()}
        for values in zip(*columns.values(), strict=True):
            yield BatchHeader(*values)
