"""File-level decoding API: ``.log`` bytes → Arrow record batches.

* :func:`decode_segment` — batches whose first byte lies in ``[start, end)`` of a file
  (a path, a Python binary file or a ``pyarrow`` ``NativeFile``), read in chunks of
  ``read_size`` (a batch larger than a chunk is read exactly, bounded by its declared
  size and the bytes the file has), with FAILFAST / PERMISSIVE / DROPMALFORMED modes;
* :func:`decode_file` — a whole ``.log`` file, provenance columns filled from its path;
* :func:`decode_bytes` — the same over an in-memory buffer;
* :func:`iter_batches` — batch headers only, no decompression;
* :func:`decoded_chunks` — the columnar view for code that works on batches and records
  together (the log cleaner): each chunk's bytes, its batch table and its decoded records.

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

import mmap
import os
import re
import stat
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from pathlib import PurePath
from typing import IO, Any

import numpy as np
import pyarrow as pa

from kafka_format.common.crc import crc32, crc32c
from kafka_format.records.decoder import Decoder, decompress, locate
from kafka_format.records.implementation import get_decoder
from kafka_format.common.errors import ChecksumError, CorruptRecordError, KafkaFormatError
from kafka_format.records import batch_v2, framing, legacy
from kafka_format.records.assembly import batch_table_to_arrow, to_arrow_batches
from kafka_format.records.columns import FileContext, RecordColumns
from kafka_format.records.framing import BatchTable

__all__ = [
    "FileContext",
    "SkippedRange",
    "BatchHeader",
    "decode_segment",
    "decode_file",
    "decode_bytes",
    "iter_batches",
    "DecodedChunk",
    "decoded_chunks",
    "context_from_path",
    "MODES",
    "DEFAULT_READ_SIZE",
]

MODES = ("FAILFAST", "PERMISSIVE", "DROPMALFORMED")
GRANULARITIES = ("record", "batch")
DEFAULT_READ_SIZE = 16 << 20  # measured: beats 8 MiB (per-chunk costs) and 32 MiB (cache); ARCHITECTURE.md
DEFAULT_MAX_ROWS = 65536
_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
_SUFFIXED_DIR = re.compile(r"^(.+)\.([^.]+)-(delete|future|stray)$")  # LocalLog: strip from the last '.'

_CODEC_NONE = 0
# Bytes of a v2 batch between its attributes field (start of the CRC region) and its records.
_CRC_REGION_HEADER = batch_v2.RECORDS_OFFSET - batch_v2.ATTRIBUTES_OFFSET
# Chunk reads of local files map the file (no copy); below this size a plain read is cheaper.
_USE_MMAP = os.environ.get("KAFKA_FORMAT_MMAP", "1") != "0"  # 0: never map (files truncated while read)
_MIN_WINDOW = 1 << 20
_SEGMENT_LOG = re.compile(r"\d{20}\.log")
_newest_segment: dict[str, tuple[int, str]] = {}   # partition dir -> (dir mtime_ns, newest .log name)


def _may_be_active_segment(path: str) -> bool:
    """True when ``path`` is the newest ``<20 digits>.log`` of its directory: a live broker's active
    segment, the one file it truncates (follower truncation, recovery).  A mapped page past a new
    end of file faults with SIGBUS, which would kill the process, so such a file is read, not
    mapped.  The directory listing is cached by the directory's mtime (adding or removing a
    segment changes it)."""
    directory, name = os.path.split(os.path.abspath(path))
    if not _SEGMENT_LOG.fullmatch(name):
        return False
    try:
        mtime = os.stat(directory).st_mtime_ns
        hit = _newest_segment.get(directory)
        if hit is None or hit[0] != mtime:
            newest = max((e for e in os.listdir(directory) if _SEGMENT_LOG.fullmatch(e)), default=name)
            if len(_newest_segment) > 4096:
                _newest_segment.clear()
            hit = _newest_segment[directory] = (mtime, newest)
    except OSError:
        return True
    return name >= hit[1]
# No MAP_POPULATE: the faults of the first access map 16 pages each (fault-around), which costs
# ~10 % less than populating a window whose page cache is in 4 KiB folios, and the same where it
# is in large folios (ARCHITECTURE.md, "Chunk size and mapping").
_MAP_FLAGS = mmap.MAP_SHARED
# Decoded parts of a chunk are handed on once they hold this many bytes (smaller ones are merged).
_PART_BYTES = 16 << 20
# Chunks of other sources are read into one reused buffer up to this size (larger: fresh bytes).
_REUSE_LIMIT = 64 << 20
_MAGIC_V2 = 2
_LEGACY_MAGICS = (0, 1)


def _default_max_decompressed() -> int:
    try:
        from kafka_format.records.compression import DEFAULT_MAX_DECOMPRESSED
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
    """Positioned reads from a path, a Python binary file, a NativeFile or a buffer.

    :meth:`read_at` returns bytes the caller may keep.  :meth:`read_chunk` (the walker's
    chunks) returns a view that is only valid until the next :meth:`read_chunk` call: a
    read-only ``mmap`` window of a local path (the OS pages it; no copy, no fresh pages),
    else a reused buffer filled with ``readinto``.  Decoded outputs never reference it
    (both decoders copy record bytes into their own column buffers).
    """

    def __init__(self, source: str | os.PathLike[str] | IO[bytes] | Any) -> None:
        self._owned = False
        self._view: memoryview | None = None
        self._mappable = False
        self._reuse: bytearray | None = None
        if isinstance(source, (bytes, bytearray, memoryview)):
            self._view = memoryview(source).cast("B")
            self.size = len(self._view)
            self.path: str | None = None
            return
        if isinstance(source, (str, os.PathLike)):
            self.path = os.fspath(source)
            self._file: Any = open(self.path, "rb")  # noqa: SIM115 - closed by close()
            self._owned = True
            st = os.fstat(self._file.fileno())
            self.size = st.st_size
            self._mappable = _USE_MMAP and stat.S_ISREG(st.st_mode) and not _may_be_active_segment(self.path)
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

    def read_chunk(self, pos: int, n: int) -> bytes | memoryview:
        """Up to ``n`` bytes at ``pos``, valid until the next call (see the class doc)."""
        n = max(0, min(n, self.size - pos))
        if self._view is not None or n < _MIN_WINDOW:
            return self.read_at(pos, n)
        if self._mappable:
            window = self._map(pos, n)
            if window is not None:
                return window
        readinto = getattr(self._file, "readinto", None)
        if readinto is None or n > _REUSE_LIMIT:
            return self.read_at(pos, n)
        if self._reuse is None or len(self._reuse) < n:
            self._reuse = bytearray(n)
        view = memoryview(self._reuse)[:n]
        self._file.seek(pos)
        got = 0
        while got < n:
            k = readinto(view[got:])
            if not k:
                break
            got += k
        return view[:got]

    def _map(self, pos: int, n: int) -> memoryview | None:
        """A read-only mapping of ``[pos, pos + n)``; None (reads instead) if it cannot be made."""
        # A file shrunk since it was opened would fault on access (SIGBUS): check before mapping.
        try:
            if os.fstat(self._file.fileno()).st_size < pos + n:
                self._mappable = False
                return None
            lead = pos % mmap.ALLOCATIONGRANULARITY
            window = mmap.mmap(self._file.fileno(), lead + n, flags=_MAP_FLAGS, prot=mmap.PROT_READ,
                               offset=pos - lead)
        except (OSError, ValueError, OverflowError):
            self._mappable = False
            return None
        return memoryview(window)[lead:lead + n]  # unmapped when the last view of it is gone

    def close(self) -> None:
        self._reuse = None
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
        # Deferred CRC: scan leaves non-empty uncompressed v2 batches to the record decoder,
        # which verifies each one as it decodes it and reports the first mismatch in
        # ``deferred_bad`` (a row of the table just yielded) before the walker resumes.
        self.defer_crc = self.crc_errors and dec.defers_crc
        self.deferred_bad: int | None = None
        self.on_skip = on_skip
        self.read_size = max(read_size, framing.HEADER_SIZE_UP_TO_MAGIC + 1)

    def skip(self, position: int, length: int, reason: str) -> None:
        if self.on_skip is not None and length > 0:
            self.on_skip(SkippedRange(self.path, position, length, reason))

    def _skip_to_resync(self, bad: int, hint: int | None, reason: str) -> int:
        q = _resync(self.src, bad, hint, self.read_size)
        self.skip(bad, min(q, self.limit) - bad, reason)
        return q

    def _crc_failure(self, buf: bytes | memoryview, table: BatchTable, i: int, pos: int) -> int:
        """Entry ``i`` of ``table`` (chunk at ``pos``) has a bad CRC: FAILFAST raises, else
        skip it and return where reading resumes."""
        bad = pos + int(table.position[i])
        if not self.permissive:
            stored = int(table.crc[i])
            found = _computed_crc(buf, table, i)
            raise ChecksumError("record batch CRC mismatch" if table.magic[i] == _MAGIC_V2
                                else "message CRC mismatch", path=self.path, position=bad,
                                expected=f"crc {stored}", found=f"crc {found}",
                                base_offset=int(table.base_offset[i]))
        return self._skip_to_resync(bad, bad + int(table.size[i]), "CRC mismatch")

    def _take_deferred(self) -> int:
        """The row of the deferred CRC failure (called only when there is one), cleared."""
        bad, self.deferred_bad = self.deferred_bad, None
        assert bad is not None
        return bad

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
            buf = src.read_chunk(pos, n)
            at_eof = pos + len(buf) >= src.size
            stop = False
            error: KafkaFormatError | None = None
            try:
                table = self.dec.scan(buf, start=0, end=len(buf), path=self.path, verify_crc=self.verify_crc,
                                      defer_crc=self.defer_crc)
            except KafkaFormatError as exc:  # entries before the bad one are still delivered
                epos = exc.position or 0
                if pos + epos >= self.limit:
                    stop = True
                else:
                    error = exc
                table = self.dec.scan(buf, start=0, end=epos, path=self.path, verify_crc=self.verify_crc,
                                      defer_crc=self.defer_crc)
                table.end = epos
            beyond = table.position >= self.limit - pos
            if beyond.any():
                table = table.take(~beyond)
                stop = True
            if self.crc_errors and not table.crc_valid.all():
                i = int(np.argmin(table.crc_valid))
                if i:
                    yield buf, table.take(slice(0, i)), pos
                    i = self._take_deferred() if self.deferred_bad is not None else i  # an earlier one
                pos = self._crc_failure(buf, table, i, pos)
                continue
            if len(table):
                yield buf, table, pos
                if self.deferred_bad is not None:  # before any framing error of this chunk
                    pos = self._crc_failure(buf, table, self._take_deferred(), pos)
                    continue
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
                err = CorruptRecordError("record size smaller than the minimum record overhead",
                                         path=self.path, position=new_pos,
                                         expected=f"size >= {framing.MIN_ENTRY_SIZE}",
                                         found="zero bytes followed by data")
                if not self.permissive:
                    raise err
                pos = self._skip_to_resync(new_pos, None, err.reason)
                continue
            if new_pos > pos:
                pos = new_pos
                continue
            if at_eof or len(buf) <= framing.HEADER_SIZE_UP_TO_MAGIC:
                # fewer than 18 bytes or a partial trailing batch: Kafka's end of data
                pos = self._past_end_of_file(pos)
                continue
            _offset, size = framing.ENTRY.unpack_from(buf, 0)
            total = framing.LOG_OVERHEAD + size
            if pos + total > src.size:
                pos = self._past_end_of_file(pos)  # partial trailing batch
                continue
            want = total  # one batch larger than the chunk: read exactly it

    def _past_end_of_file(self, pos: int) -> int:
        """Where to go on at ``pos``, whose entry runs past the end of the file.

        Kafka's reader (``FileLogInputStream.nextBatch``) takes it for a partial trailing batch
        (a crash or a live write) and ends the data there: FAILFAST does the same.  PERMISSIVE
        and DROPMALFORMED account for the bytes instead: if intact batches follow, the size
        field lied and the gap is skipped (reading resumes there); otherwise the rest of the
        range is reported as an incomplete trailing batch.  Returns the limit to stop.
        """
        if not self.permissive:
            return self.limit
        q = _resync(self.src, pos, None, self.read_size)
        if q < self.src.size:
            self.skip(pos, min(q, self.limit) - pos,
                      "entry size runs past the end of the file; intact batches follow (lying size field)")
            return q
        self.skip(pos, self.limit - pos, "incomplete batch at the end of the file (partial write or truncation)")
        return self.limit


# ---------------------------------------------------------------------------------------------
# decoding the records of a scanned chunk


class _RecordDecoder:
    def __init__(self, dec: Decoder, *, path: str | None, verify_crc: bool, max_decompressed: int,
                 permissive: bool, walker: _Walker, include_headers: bool = True) -> None:
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
            if codec != _CODEC_NONE:
                if i and held >= self.max_decompressed:
                    del payloads[i:]
                    break
                batch_position = starts[i] - batch_v2.RECORDS_OFFSET
                try:
                    payloads[i] = decompress(codec, payloads[i], magic=_MAGIC_V2,
                                             max_output=self.max_decompressed, path=self.path,
                                             position=starts[i])
                except KafkaFormatError as exc:  # reported at the batch (cause keeps the detail)
                    raise locate(exc, path=self.path, position=batch_position) from exc
                held += len(payloads[i])
        done = len(payloads)
        if not self.walker.defer_crc:
            return self.dec.decode_v2_records(payloads, table, rows[:done]), done
        # Deferred CRC (see _Walker): uncompressed batches are passed from their attributes
        # field, so the decoder verifies the CRC as it reads them.
        check = [codec == _CODEC_NONE for codec in codecs[:done]]
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
        wrappers = [i for i, codec in enumerate(codecs) if codec != _CODEC_NONE]
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
        is_v2 = table.magic == _MAGIC_V2
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
                                                   else max_decompressed), walker=walker,
                                 include_headers=include_headers)
        for buf, table, base in walker:
            if granularity == "batch":
                yield batch_table_to_arrow(table.shifted(base), ctx)
                continue
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
                   verify_crc: bool = True, max_decompressed: int | None = None,
                   decoder: Decoder | None = None) -> Iterator[DecodedChunk]:
    """Every entry whose first byte lies in ``[start, end)`` of ``source``, in order, with its
    records decoded (FAILFAST: the first problem raises, as :func:`decode_segment`).  A piece
    holds whole batches, at most ``max_rows`` records unless one batch has more."""
    if max_rows < 1:
        raise ValueError("max_rows must be >= 1")
    dec = decoder if decoder is not None else get_decoder()
    src = _Source(source)
    try:
        where = path if path is not None else src.path
        walker = _Walker(src, dec, start=start, end=end, path=where, verify_crc=verify_crc, permissive=False,
                         crc_errors=True, on_skip=None, read_size=read_size)
        records = _RecordDecoder(dec, path=where, verify_crc=verify_crc, permissive=False,
                                 max_decompressed=(_default_max_decompressed() if max_decompressed is None
                                                   else max_decompressed), walker=walker)
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
