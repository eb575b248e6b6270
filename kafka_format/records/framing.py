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

from dataclasses import dataclass, fields, replace

import numpy as np

from kafka_format.crc import crc32, crc32c
from kafka_format.errors import CorruptRecordError, UnsupportedFormatError
from kafka_format.records import batch_v2, legacy
from kafka_format.records.entry import ENTRY, HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MAGIC_OFFSET

__all__ = [
    "ENTRY",
    "LOG_OVERHEAD",
    "MAGIC_OFFSET",
    "HEADER_SIZE_UP_TO_MAGIC",
    "MIN_ENTRY_SIZE",
    "BatchTable",
    "scan_entries",
    "check_entry",
]

MIN_ENTRY_SIZE = legacy.RECORD_OVERHEAD_V0  # 14: smallest legal ``size`` of any entry
MIN_V2_BATCH_SIZE = batch_v2.HEADER_SIZE  # 61 bytes incl. the 12-byte prefix
NO_VALUE = -1


@dataclass
class BatchTable:
    """Headers of the complete entries (batches / shallow messages) of a buffer.

    One element per entry, numpy columns:

    ``position`` int64 (byte position; relative to the scanned buffer as returned by
    ``scan``, absolute in the file after :meth:`shifted`), ``size`` int32 (12 + length:
    bytes of the entry), ``magic`` int8, ``base_offset`` int64 (legacy compressed
    wrapper: -1 until decoded), ``last_offset`` int64, ``count`` int32 (v2
    recordsCount; legacy: 1 plain, -1 wrapper until decoded), ``attributes`` int16
    (v2 as stored; legacy the attribute byte), ``base_timestamp`` int64 (v2; legacy -1),
    ``max_timestamp`` int64 (v2; v1 the message timestamp; v0 -1), ``producer_id``
    int64, ``producer_epoch`` int16, ``base_sequence`` int32, ``leader_epoch`` int32
    (v2 partitionLeaderEpoch; legacy -1), ``crc`` int64 (stored, unsigned),
    ``crc_valid`` bool (True when not verified).

    ``end``: where the walk stopped (first byte not covered by a complete entry);
    ``zero_tail``: it stopped at an all-zero remainder.
    """

    position: np.ndarray
    size: np.ndarray
    magic: np.ndarray
    base_offset: np.ndarray
    last_offset: np.ndarray
    count: np.ndarray
    attributes: np.ndarray
    base_timestamp: np.ndarray
    max_timestamp: np.ndarray
    producer_id: np.ndarray
    producer_epoch: np.ndarray
    base_sequence: np.ndarray
    leader_epoch: np.ndarray
    crc: np.ndarray
    crc_valid: np.ndarray
    end: int = 0
    zero_tail: bool = False

    DTYPES = {
        "position": np.int64, "size": np.int32, "magic": np.int8, "base_offset": np.int64,
        "last_offset": np.int64, "count": np.int32, "attributes": np.int16,
        "base_timestamp": np.int64, "max_timestamp": np.int64, "producer_id": np.int64,
        "producer_epoch": np.int16, "base_sequence": np.int32, "leader_epoch": np.int32,
        "crc": np.int64, "crc_valid": np.bool_,
    }

    def __len__(self) -> int:
        return len(self.position)

    @classmethod
    def column_names(cls) -> list[str]:
        """Names of the per-entry columns, in declaration order."""
        return [f.name for f in fields(cls) if f.name in cls.DTYPES]

    @classmethod
    def from_columns(cls, columns: dict[str, list[int] | np.ndarray], *, end: int,
                     zero_tail: bool = False) -> BatchTable:
        """Build from per-column sequences (converted to the declared dtypes)."""
        arrays = {name: np.asarray(columns[name], dtype=dtype) for name, dtype in cls.DTYPES.items()}
        return cls(**arrays, end=end, zero_tail=zero_tail)

    @classmethod
    def empty(cls, end: int = 0) -> BatchTable:
        """A table with no entries."""
        return cls.from_columns({name: [] for name in cls.DTYPES}, end=end)

    def take(self, rows: np.ndarray | list[int] | slice) -> BatchTable:
        """The entries ``rows`` (``end``/``zero_tail`` kept)."""
        return replace(self, **{name: getattr(self, name)[rows] for name in self.DTYPES})

    def shifted(self, base: int) -> BatchTable:
        """The same table with positions and ``end`` moved by ``base`` bytes."""
        return replace(self, position=self.position + np.int64(base), end=self.end + base)


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
