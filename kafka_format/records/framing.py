"""File framing shared by every record format, and the batch-header table.

Source: ``clients/src/main/java/org/apache/kafka/common/record/FileLogInputStream.java``
(``nextBatch``), ``Records.java`` (``LOG_OVERHEAD``, ``HEADER_SIZE_UP_TO_MAGIC``).

Every entry of a ``.log`` file starts with ``offset int64, size int32`` (12 bytes;
``size`` counts the bytes after it) and has its magic byte at byte 16, whatever
the format, so the walk is the same for all versions and then dispatches on
magic::

    while end - pos > 17:                       # too little for a header: end of data
        size = i32(pos + 8)
        if size < 14: corrupt                   # LegacyRecord.RECORD_OVERHEAD_V0
        if pos + 12 + size > end: stop          # partial trailing batch: end of data
        magic = byte(pos + 16)  →  v2 (2) or legacy (0, 1)
        pos += 12 + size

A remainder made only of zero bytes (preallocated ``.log``) is end of data
(``zero_tail``), not corruption.
"""

from __future__ import annotations

from kafka_format.common.crc import crc32, crc32c
from kafka_format.common.errors import CorruptRecordError, UnsupportedFormatError
from kafka_format.records import batch_v2, legacy
from kafka_format.records.batch_table import BatchTable
from kafka_format.records.entry import ENTRY, HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MAGIC_OFFSET

__all__ = [
    "ENTRY",
    "HEADER_SIZE_UP_TO_MAGIC",
    "LOG_OVERHEAD",
    "MAGIC_OFFSET",
    "MIN_ENTRY_SIZE",
    "BatchTable",
    "check_entry",
    "scan_entries",
]

MIN_ENTRY_SIZE = legacy.RECORD_OVERHEAD_V0  # 14: smallest legal ``size`` of any entry
MIN_V2_BATCH_SIZE = batch_v2.HEADER_SIZE  # 61 bytes incl. the 12-byte prefix
NO_VALUE = -1


def _all_zero(buf: memoryview, start: int, end: int) -> bool:
    step = 1 << 20
    for lo in range(start, end, step):
        chunk = buf[lo:min(end, lo + step)]
        if chunk.tobytes().count(0) != len(chunk):
            return False
    return True


def check_entry(buf: memoryview, pos: int, size: int, magic: int, path: str | None) -> None:
    """Raise for an entry whose size cannot hold its format's header."""
    total = LOG_OVERHEAD + size
    if magic == 2:
        if total < MIN_V2_BATCH_SIZE:
            raise CorruptRecordError("record batch is corrupt: size below the v2 batch overhead",
                                     path=path, position=pos, expected=f">= {MIN_V2_BATCH_SIZE} bytes",
                                     found=f"{total} bytes")
    elif magic in (0, 1):
        minimum = legacy.RECORD_OVERHEAD_V0 if magic == 0 else legacy.RECORD_OVERHEAD_V1
        if size < minimum:
            raise CorruptRecordError(f"message of magic {magic} smaller than its overhead",
                                     path=path, position=pos, expected=f"size >= {minimum}",
                                     found=f"size {size}")
    else:
        raise UnsupportedFormatError("unsupported record format (magic byte)", path=path, position=pos,
                                     expected="magic 0, 1 or 2", found=f"magic {magic}")


def scan_entries(buf: bytes | bytearray | memoryview, *, start: int = 0, end: int | None = None,
                 path: str | None = None, verify_crc: bool = True) -> BatchTable:
    """Reference walk of ``buf[start:end]`` → :class:`BatchTable`.

    Raises :class:`CorruptRecordError` for ``size < 14`` (unless the remainder is all
    zeros) or an entry too small for its format, :class:`UnsupportedFormatError` for a
    magic other than 0/1/2.  A bad CRC is recorded in ``crc_valid``, not raised.
    """
    mv = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf.cast("B")
    stop = len(mv) if end is None else min(end, len(mv))
    cols: dict[str, list[int]] = {name: [] for name in BatchTable.DTYPES}
    pos = start
    zero_tail = False
    v2_header = batch_v2.HEADER
    while stop - pos > HEADER_SIZE_UP_TO_MAGIC:
        offset, size = ENTRY.unpack_from(mv, pos)
        if size < MIN_ENTRY_SIZE:
            if _all_zero(mv, pos, stop):
                zero_tail = True
                break
            raise CorruptRecordError("record size smaller than the minimum record overhead", path=path,
                                     position=pos, expected=f"size >= {MIN_ENTRY_SIZE}", found=f"size {size}")
        total = LOG_OVERHEAD + size
        if total > stop - pos:
            break  # partial trailing batch: not part of the log
        magic = mv[pos + MAGIC_OFFSET]
        magic = magic - 256 if magic > 127 else magic
        check_entry(mv, pos, size, magic, path)
        if magic == 2:
            (base_offset, _length, leader_epoch, _magic, crc, attributes, last_delta, base_ts, max_ts,
             producer_id, producer_epoch, base_sequence, count) = v2_header.unpack_from(mv, pos)
            valid = (not verify_crc
                     or crc32c(mv[pos + batch_v2.ATTRIBUTES_OFFSET:pos + total]) == crc)
            last_offset = batch_v2.wrap_int64(base_offset + last_delta)
        else:
            crc, attributes, timestamp = legacy.read_message_header(mv, pos, magic)
            valid = not verify_crc or crc32(mv[pos + MAGIC_OFFSET:pos + total]) == crc
            compressed = attributes & legacy.CODEC_MASK != 0
            base_offset = NO_VALUE if compressed else offset
            count = NO_VALUE if compressed else 1
            last_offset = offset
            leader_epoch = producer_epoch = base_sequence = NO_VALUE
            producer_id = base_ts = NO_VALUE
            max_ts = timestamp
        cols["position"].append(pos)
        cols["size"].append(total)
        cols["magic"].append(magic)
        cols["base_offset"].append(base_offset)
        cols["last_offset"].append(last_offset)
        cols["count"].append(count)
        cols["attributes"].append(attributes)
        cols["base_timestamp"].append(base_ts)
        cols["max_timestamp"].append(max_ts)
        cols["producer_id"].append(producer_id)
        cols["producer_epoch"].append(producer_epoch)
        cols["base_sequence"].append(base_sequence)
        cols["leader_epoch"].append(leader_epoch)
        cols["crc"].append(crc)
        cols["crc_valid"].append(valid)
        pos += total
    return BatchTable.from_columns(cols, end=pos, zero_tail=zero_tail)
