"""The chunked walk over a ``.log`` file's entry framing, with the read modes.

``FileLogInputStream.nextBatch`` over chunks of ``read_size`` bytes (:mod:`kafka_format.records.framing`
holds its scan rules; a batch larger than a chunk is read exactly): a partial trailing batch ends the
data, a zero-filled tail ends it, corrupt framing raises (FAILFAST).  PERMISSIVE and DROPMALFORMED
skip a bad byte range instead and report it as a :class:`SkippedRange`: after bad framing or a bad
CRC (whose size field cannot be trusted) the walk resynchronises at the next position where an
entry with a plausible header and a valid CRC starts, first trying the position its size field
names.  Bytes yielded plus bytes skipped equal the bytes scanned.  The records of the yielded
entries are :mod:`kafka_format.records.chunk_records`'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from kafka_format.common.crc import crc32, crc32c
from kafka_format.common.errors import ChecksumError, CorruptRecordError, KafkaFormatError
from kafka_format.records import batch_v2, framing
from kafka_format.records.decoder import Decoder, locate
from kafka_format.records.file_source import FileSource
from kafka_format.records.framing import BatchTable
from kafka_format.records.record_batch import MAGIC_V2

__all__ = ["SkippedRange", "Walker"]


@dataclass(frozen=True)
class SkippedRange:
    """A byte range of ``path`` skipped in PERMISSIVE / DROPMALFORMED mode."""

    path: str | None
    position: int
    length: int
    reason: str



def _computed_crc(buf: bytes | memoryview, table: BatchTable, row: int) -> int:
    pos = int(table.position[row])
    end = pos + int(table.size[row])
    mv = memoryview(buf)
    if int(table.magic[row]) == MAGIC_V2:
        return crc32c(mv[pos + batch_v2.ATTRIBUTES_OFFSET:end])
    return crc32(mv[pos + framing.MAGIC_OFFSET:end])


def _plausible_at(src: FileSource, pos: int) -> bool:
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


def resync(src: FileSource, bad: int, hint: int | None, window: int) -> int:
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
            if magic > MAGIC_V2:
                continue
            _offset, size = framing.ENTRY.unpack_from(chunk, i)
            if size < framing.MIN_ENTRY_SIZE or c + i + framing.LOG_OVERHEAD + size > src.size:
                continue
            if magic == MAGIC_V2 and framing.LOG_OVERHEAD + size < framing.MIN_V2_BATCH_SIZE:
                continue
            if _plausible_at(src, c + i):
                return c + i
        c += max(1, last + 1)
    return src.size


class Walker:
    """Yields (buffer, table, base) of complete entries of ``[start, end)``; applies modes."""

    def __init__(self, src: FileSource, dec: Decoder, *, start: int, end: int | None, path: str | None,
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

    def _skip_toresync(self, bad: int, hint: int | None, reason: str) -> int:
        q = resync(self.src, bad, hint, self.read_size)
        self.skip(bad, min(q, self.limit) - bad, reason)
        return q

    def _crc_failure(self, buf: bytes | memoryview, table: BatchTable, i: int, pos: int) -> int:
        """Entry ``i`` of ``table`` (chunk at ``pos``) has a bad CRC: FAILFAST raises, else
        skip it and return where reading resumes."""
        bad = pos + int(table.position[i])
        if not self.permissive:
            stored = int(table.crc[i])
            found = _computed_crc(buf, table, i)
            raise ChecksumError("record batch CRC mismatch" if table.magic[i] == MAGIC_V2
                                else "message CRC mismatch", path=self.path, position=bad,
                                expected=f"crc {stored}", found=f"crc {found}",
                                base_offset=int(table.base_offset[i]))
        return self._skip_toresync(bad, bad + int(table.size[i]), "CRC mismatch")

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
                pos = self._skip_toresync(bad, None, error.reason)
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
                pos = self._skip_toresync(new_pos, None, err.reason)
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
        q = resync(self.src, pos, None, self.read_size)
        if q < self.src.size:
            self.skip(pos, min(q, self.limit) - pos,
                      "entry size runs past the end of the file; intact batches follow (lying size field)")
            return q
        self.skip(pos, self.limit - pos, "incomplete batch at the end of the file (partial write or truncation)")
        return self.limit
