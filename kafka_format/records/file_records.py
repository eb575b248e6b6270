"""File-level decoding API: ``.log`` bytes → Arrow record batches.

* :func:`decode_segment` — batches whose first byte lies in ``[start, end)`` of a file
  (a path, a Python binary file or a ``pyarrow`` ``NativeFile``), read in chunks of
  ``read_size`` (a batch larger than a chunk is read exactly, bounded by its declared
  size and the bytes the file has), with FAILFAST / PERMISSIVE / DROPMALFORMED modes;
* :func:`decode_file` — a whole ``.log`` file, provenance columns filled from its path;
* :func:`decode_bytes` — the same over an in-memory buffer;
* :func:`iter_batches` — batch headers only, no decompression;
* :func:`decoded_chunks` — the columnar view for code that works on batches and records
  together (the log cleaner, the audit): each chunk's bytes, its batch table and its decoded
  records;
* :func:`batch_tables` — the batch headers as numpy tables, no decompression.

Modes: FAILFAST raises the first problem (file, position, expected, found).
PERMISSIVE and DROPMALFORMED skip a bad byte range and report it through
``on_skip(SkippedRange)``: a batch with a bad CRC or bad records is skipped whole;
after bad framing (or a bad CRC, whose size field cannot be trusted) the reader
resynchronises at the next position where an entry with a plausible header and a
valid CRC starts (first trying the position its size field names).  Bytes decoded
plus bytes skipped always equal the bytes scanned.  With ``granularity="batch"`` a
bad CRC is not an error: it is reported in the ``crcValid`` column.

The parts: :mod:`~kafka_format.records.file_source` reads the file (mmap windows or a reused
buffer), :mod:`~kafka_format.records.walker` walks its framing with the modes, and
:mod:`~kafka_format.records.chunk_records` decodes the records of each chunk it yields.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePath
from typing import IO, Any

import numpy as np
import pyarrow as pa

from kafka_format.records.assembly import batch_table_to_arrow, to_arrow_batches
from kafka_format.records.chunk_records import RecordDecoder, default_max_decompressed
from kafka_format.records.columns import FileContext, RecordColumns
from kafka_format.records.decoder import Decoder
from kafka_format.records.file_source import FileSource
from kafka_format.records.framing import BatchTable
from kafka_format.records.implementation import get_decoder
from kafka_format.records.walker import SkippedRange, Walker

__all__ = [
    "DEFAULT_READ_SIZE",
    "MODES",
    "BatchHeader",
    "DecodedChunk",
    "FileContext",
    "SkippedRange",
    "batch_tables",
    "context_from_path",
    "decode_bytes",
    "decode_file",
    "decode_segment",
    "decoded_chunks",
    "iter_batches",
]

MODES = ("FAILFAST", "PERMISSIVE", "DROPMALFORMED")
GRANULARITIES = ("record", "batch")
DEFAULT_READ_SIZE = 16 << 20  # measured: beats 8 MiB (per-chunk costs) and 32 MiB (cache); ARCHITECTURE.md
DEFAULT_MAX_ROWS = 65536
_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
_SUFFIXED_DIR = re.compile(r"^(.+)\.([^.]+)-(delete|future|stray)$")  # LocalLog: strip from the last '.'


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
    mode = _mode(mode)
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity must be one of {GRANULARITIES}, not {granularity!r}")
    if max_rows_per_batch < 1:
        raise ValueError("max_rows_per_batch must be >= 1")
    dec = decoder if decoder is not None else get_decoder()
    src = FileSource(source)
    try:
        path = context.path if context is not None and context.path is not None else src.path
        ctx = context or FileContext(path=path)
        permissive = mode != "FAILFAST"
        if granularity == "batch":
            for table in _header_tables(src, dec, start=start, end=end, path=path, verify_crc=verify_crc,
                                        permissive=permissive, on_skip=on_skip, read_size=read_size):
                yield batch_table_to_arrow(table, ctx)
            return
        walker = Walker(src, dec, start=start, end=end, path=path, verify_crc=verify_crc,
                         permissive=permissive, crc_errors=True, on_skip=on_skip, read_size=read_size)
        records = RecordDecoder(dec, path=path, verify_crc=verify_crc, permissive=permissive,
                                 max_decompressed=(default_max_decompressed() if max_decompressed is None
                                                   else max_decompressed), walker=walker,
                                 include_headers=include_headers)
        for buf, table, base in walker:
            shifted = table.shifted(base)
            for columns in records.decode(buf, table, base):
                if len(columns):
                    yield from to_arrow_batches(shifted, columns, ctx, include_headers=include_headers,
                                                max_rows=max_rows_per_batch)
            if records.failure is not None:
                raise records.take_failure()
            walker.deferred_bad, records.crc_bad = records.crc_bad, None
    finally:
        src.close()


@dataclass
class DecodedChunk:
    """Consecutive batches of a file with their records decoded (:func:`decoded_chunks`).

    ``data`` holds the chunk's bytes from file position ``base`` (valid until the next chunk is
    read), ``table`` its batch headers (positions relative to ``data``); this piece covers the
    table's rows ``lo..hi`` (empty batches included) and ``columns`` holds their records
    (``batch_row`` indexes ``table``)."""

    data: bytes | memoryview
    base: int
    table: BatchTable
    lo: int
    hi: int
    columns: RecordColumns


def decoded_chunks(source: str | os.PathLike[str] | IO[bytes] | Any, *, start: int = 0, end: int | None = None,
                   path: str | None = None, read_size: int = DEFAULT_READ_SIZE, max_rows: int = DEFAULT_MAX_ROWS,
                   verify_crc: bool = True, max_decompressed: int | None = None, mode: str = "FAILFAST",
                   on_skip: Callable[[SkippedRange], None] | None = None, include_headers: bool = True,
                   decoder: Decoder | None = None) -> Iterator[DecodedChunk]:
    """Every entry whose first byte lies in ``[start, end)`` of ``source``, in order, with its
    records decoded; modes as :func:`decode_segment` (FAILFAST: the first problem raises; else a
    bad batch is skipped, reported through ``on_skip``, and its rows in a piece have no records).
    A piece holds whole batches, at most ``max_rows`` records unless one batch has more.  The
    decoder sets a legacy compressed wrapper's ``base_offset``, ``last_offset`` and ``count`` in
    ``table`` from its inner messages."""
    if max_rows < 1:
        raise ValueError("max_rows must be >= 1")
    permissive = _mode(mode) != "FAILFAST"
    dec = decoder if decoder is not None else get_decoder()
    src = FileSource(source)
    try:
        where = path if path is not None else src.path
        walker = Walker(src, dec, start=start, end=end, path=where, verify_crc=verify_crc, permissive=permissive,
                         crc_errors=True, on_skip=on_skip, read_size=read_size)
        records = RecordDecoder(dec, path=where, verify_crc=verify_crc, permissive=permissive,
                                 max_decompressed=(default_max_decompressed() if max_decompressed is None
                                                   else max_decompressed), walker=walker,
                                 include_headers=include_headers)
        for buf, table, base in walker:
            lo = 0
            for columns in records.decode(buf, table, base):
                if not len(columns):
                    continue
                for hi, part in _pieces(columns, max_rows):
                    yield DecodedChunk(buf, base, table, lo, hi, part)
                    lo = hi
            if records.failure is not None:
                raise records.take_failure()
            if records.crc_bad is None and lo < len(table):
                yield DecodedChunk(buf, base, table, lo, len(table), RecordColumns.empty())
            walker.deferred_bad, records.crc_bad = records.crc_bad, None
    finally:
        src.close()


def batch_tables(source: str | os.PathLike[str] | IO[bytes] | Any, *, start: int = 0, end: int | None = None,
                 path: str | None = None, verify_crc: bool = True, mode: str = "FAILFAST",
                 on_skip: Callable[[SkippedRange], None] | None = None, read_size: int = DEFAULT_READ_SIZE,
                 decoder: Decoder | None = None) -> Iterator[BatchTable]:
    """The headers of the entries whose first byte lies in ``[start, end)`` of ``source``, a table
    per chunk read, positions in the file (no decompression: a legacy compressed wrapper's
    ``base_offset`` and ``count`` are -1; a bad CRC is in ``crc_valid``, not an error); modes as
    :func:`decode_segment`.  What ``decode_segment(granularity="batch")`` yields as Arrow."""
    permissive = _mode(mode) != "FAILFAST"
    dec = decoder if decoder is not None else get_decoder()
    src = FileSource(source)
    try:
        yield from _header_tables(src, dec, start=start, end=end, path=path if path is not None else src.path,
                                  verify_crc=verify_crc, permissive=permissive, on_skip=on_skip, read_size=read_size)
    finally:
        src.close()


def _header_tables(src: FileSource, dec: Decoder, *, start: int, end: int | None, path: str | None,
                   verify_crc: bool, permissive: bool, on_skip: Callable[[SkippedRange], None] | None,
                   read_size: int) -> Iterator[BatchTable]:
    """The walk of :func:`batch_tables` and ``decode_segment(granularity="batch")``: a bad CRC is
    a column, not an error."""
    walker = Walker(src, dec, start=start, end=end, path=path, verify_crc=verify_crc, permissive=permissive,
                    crc_errors=False, on_skip=on_skip, read_size=read_size)
    for _buf, table, base in walker:
        yield table.shifted(base)


def _mode(mode: str) -> str:
    upper = mode.upper()
    if upper not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    return upper


def _pieces(columns: RecordColumns, max_rows: int) -> Iterator[tuple[int, RecordColumns]]:
    """(end row, records) pieces of ``columns`` cut at batch boundaries, ``max_rows`` records each
    at most (one batch is never cut)."""
    rows = columns.batch_row
    n = len(rows)
    if n <= max_rows:
        yield int(rows[-1]) + 1, columns
        return
    starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
    a = 0
    while a < n:
        z = a + max_rows
        if z < n:
            k = int(np.searchsorted(starts, z, side="right")) - 1     # last batch start <= z
            z = int(starts[k]) if starts[k] > a else (int(starts[k + 1]) if k + 1 < len(starts) else n)
        else:
            z = n
        yield int(rows[z - 1]) + 1, columns.take(a, z)
        a = z


def context_from_path(path: str | os.PathLike[str], *, broker_id: int | None = None) -> FileContext:
    """Provenance of a ``.log`` file: ``<logDir>/<topic>-<partition>/<20-digit offset>.log``.

    Partition dirs follow ``LocalLog``'s naming: ``<topic>-<partition>``, or with a
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
