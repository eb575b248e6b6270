"""The one batch-header walker: ``FileLogInputStream.nextBatch`` reading header bytes only.

:func:`walk_batch_heads` walks the entries of one ``.log`` from a batch boundary and yields a
:class:`BatchHead` per batch (legacy: per shallow message): no decompression, no CRC.  It stops when
17 bytes or fewer remain, at a partial trailing batch and at a zero-filled tail; corrupt framing
raises (``strict``) or ends the walk.  :mod:`kafka_format.storage.partition_state` walks a replica's
segments with it (``iter_batch_heads``, LEO, the producer replay) and re-exports it;
:mod:`kafka_format.storage.log_loader` reads a ``.log.swap``'s next offset with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from kafka_format.common.errors import CorruptRecordError
from kafka_format.records import batch_v2, legacy
from kafka_format.records.entry import ENTRY, HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MAGIC_OFFSET
from kafka_format.records.framing import MIN_ENTRY_SIZE, MIN_V2_BATCH_SIZE
from kafka_format.records.record_batch import (  # the sentinels re-exported (__all__)
    CONTROL_MASK,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    TRANSACTIONAL_MASK,
)

__all__ = [
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_TIMESTAMP",
    "SCAN_CHUNK",
    "BatchHead",
    "ReadAt",
    "next_offset_after",
    "parse_batch_head",
    "walk_batch_heads",
]

SCAN_CHUNK = 1 << 20              # read size of a walk over a whole segment

ReadAt = Callable[[int, int], bytes]
"""``read_at(nbytes, offset)`` of a file open for positioned reads (pyarrow ``NativeFile``)."""


@dataclass(frozen=True)
class BatchHead:
    """Header fields of one batch (legacy: one shallow message), read without its records."""

    position: int
    size: int                       # bytes of the entry, prefix included
    magic: int
    base_offset: int                # legacy: the entry's offset (a compressed wrapper's last offset)
    last_offset: int
    max_timestamp: int              # NO_TIMESTAMP for magic 0
    leader_epoch: int               # NO_PARTITION_LEADER_EPOCH for legacy
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    count: int | None = None        # v2 recordsCount; None for legacy
    is_transactional: bool = False
    is_control: bool = False


def parse_batch_head(data: bytes | memoryview, pos: int, end: int, *, path: str | None = None
                     ) -> BatchHead | None:
    """One header from ``data`` (the bytes at file position ``pos``: the whole v2 header when the
    file holds it); None at the end of data: a partial trailing batch or a zero-filled tail.

    Raises :class:`CorruptRecordError` (naming ``path`` and ``pos``) for a size below the minimum
    entry, a v2 entry smaller than its header, or an unknown magic."""
    offset, size = ENTRY.unpack_from(data, 0)
    if size < MIN_ENTRY_SIZE:
        if offset == 0 and size == 0:
            return None                              # zero-filled (preallocated) tail
        raise CorruptRecordError("record size smaller than the minimum record overhead", path=path,
                                 position=pos, expected=f"size >= {MIN_ENTRY_SIZE}", found=f"size {size}")
    total = LOG_OVERHEAD + size
    if total > end - pos:
        return None                                  # partial trailing batch
    magic = data[MAGIC_OFFSET]
    if magic == 2:
        if total < MIN_V2_BATCH_SIZE or len(data) < MIN_V2_BATCH_SIZE:
            raise CorruptRecordError("batch smaller than a v2 header", path=path, position=pos,
                                     expected=f">= {MIN_V2_BATCH_SIZE} bytes", found=f"{total} bytes")
        (base, _length, epoch, _magic, _crc, attributes, last_delta, _base_ts, max_ts, pid, pepoch,
         _base_seq, count) = batch_v2.HEADER.unpack_from(data, 0)
        return BatchHead(pos, total, 2, base, batch_v2.wrap_int64(base + last_delta), max_ts, epoch, pid,
                         pepoch, count, bool(attributes & TRANSACTIONAL_MASK),
                         bool(attributes & CONTROL_MASK))
    if magic in (0, 1):
        _crc, _attributes, timestamp = legacy.read_message_header(data, 0, magic)
        return BatchHead(pos, total, magic, offset, offset, timestamp, NO_PARTITION_LEADER_EPOCH)
    raise CorruptRecordError("unknown magic", path=path, position=pos, expected="magic 0, 1 or 2",
                             found=f"magic {magic}")


def walk_batch_heads(read_at: ReadAt, start: int, end: int, *, path: str | None = None, chunk: int = 0,
                     strict: bool = True) -> Iterator[BatchHead]:
    """Batch headers of ``[start, end)`` of one ``.log`` (``start`` a batch boundary, ``end`` the
    file size), as ``FileLogInputStream.nextBatch`` walks them: stops when 17 bytes or fewer remain,
    at a partial trailing batch and at a zero-filled tail.

    ``chunk=0`` reads each header by one positioned read (a walk of a few batches); a positive
    ``chunk`` reads windows of that many bytes (a walk over a whole segment).  Corrupt framing
    raises :class:`CorruptRecordError` when ``strict``, else ends the walk (where recovery would
    truncate)."""
    pos = start
    window, window_at = b"", 0
    while end - pos > HEADER_SIZE_UP_TO_MAGIC:
        want = min(batch_v2.HEADER_SIZE, end - pos)
        if chunk:
            if not (window_at <= pos and pos + want <= window_at + len(window)):
                window, window_at = bytes(read_at(min(max(chunk, want), end - pos), pos)), pos
            data: bytes = window[pos - window_at:pos - window_at + want]
        else:
            data = bytes(read_at(want, pos))
        try:
            head = parse_batch_head(data, pos, end, path=path)
        except CorruptRecordError:
            if strict:
                raise
            return
        if head is None:
            return
        yield head
        pos += head.size


def next_offset_after(heads: Iterable[BatchHead], base_offset: int) -> int:
    """``LogSegment.readNextOffset`` from the batches after the last offset-index entry: the last
    complete batch's ``lastOffset + 1``, else the segment's base offset."""
    last: BatchHead | None = None
    for head in heads:
        last = head
    return last.last_offset + 1 if last is not None else base_offset
