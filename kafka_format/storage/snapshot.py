"""Producer-state snapshot ``NNN.snapshot``.

Layout (storage/.../log/ProducerStateManager.java ``readSnapshot``/``writeSnapshot``, schema
storage/src/main/resources/message/ProducerSnapshot.json, only version 1 valid), big-endian::

    version  int16   1
    crc      uint32  CRC-32C over bytes 6 .. end of file
    count    int32   number of producer entries (array length; < 0 = null = invalid)
    count x 46-byte entries:
        producerId int64, epoch int16, lastSequence int32, lastOffset int64, offsetDelta int32,
        timestamp int64, coordinatorEpoch int32, currentTxnFirstOffset int64 (-1 = no open txn)

NNN is the offset the snapshot covers up to (exclusive).  The broker parses the structure first
(version, count bounded by the remaining bytes, entries) and then checks the CRC; bytes after the
last entry are not an error for it (they are covered by the CRC).  A bad snapshot is deleted by
the broker and producer state rebuilt from the log.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kafka_format.common.errors import KafkaFormatError, SnapshotFormatError
from kafka_format.common.limits import INT32_MAX
from kafka_format.records.implementation import crc32c  # the compiled decoder's where it runs
from kafka_format.storage import fsio
from kafka_format.storage.index import base_offset_from_name

__all__ = [
    "DEFAULT_PRODUCER_ID_EXPIRATION_MS",
    "NO_TXN_OFFSET",
    "PRODUCER_ENTRY",
    "SNAPSHOT_HEADER",
    "SNAPSHOT_VERSION",
    "ProducerSnapshot",
    "ProducerSnapshotEntry",
    "encode_producer_snapshot",
    "is_producer_expired",
    "parse_producer_snapshot",
    "read_producer_snapshot",
]

SNAPSHOT_HEADER = struct.Struct(
    ">"
    "h"  # version
    "I"  # crc (CRC-32C of bytes PRODUCER_ENTRIES_OFFSET..end)
    "i"  # producer entry count
)
PRODUCER_ENTRY = struct.Struct(
    ">"
    "q"  # producerId
    "h"  # epoch
    "i"  # lastSequence
    "q"  # lastOffset
    "i"  # offsetDelta
    "q"  # timestamp
    "i"  # coordinatorEpoch
    "q"  # currentTxnFirstOffset
)
VERSION_SIZE = struct.calcsize(">h")
CRC_OFFSET = VERSION_SIZE
PRODUCER_ENTRIES_OFFSET = CRC_OFFSET + struct.calcsize(">I")  # bytes covered by the CRC start here
SNAPSHOT_VERSION = 1
NO_TXN_OFFSET = -1   # currentTxnFirstOffset of an entry without an open transaction
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms
MAX_SNAPSHOT_BYTES = 1 << 31

_ENTRY_DTYPE = np.dtype([
    ("producer_id", ">i8"), ("epoch", ">i2"), ("last_sequence", ">i4"), ("last_offset", ">i8"),
    ("offset_delta", ">i4"), ("timestamp", ">i8"), ("coordinator_epoch", ">i4"),
    ("current_txn_first_offset", ">i8"),
])
assert _ENTRY_DTYPE.itemsize == PRODUCER_ENTRY.size


def _decrement_sequence(sequence: int, decrement: int) -> int:
    """``DefaultRecordBatch.decrementSequence`` (wraps at Int.MAX)."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


@dataclass(frozen=True)
class ProducerSnapshotEntry:
    """One producer of a snapshot (``ProducerStateEntry`` as read back)."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int

    @property
    def has_batch_metadata(self) -> bool:
        """``lastOffset >= 0``: the entry carries its last batch's metadata."""
        return self.last_offset >= 0

    @property
    def has_open_txn(self) -> bool:
        return self.current_txn_first_offset >= 0

    @property
    def first_sequence(self) -> int:
        return _decrement_sequence(self.last_sequence, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta

    def dump_line(self) -> str:
        """kafka-dump-log's line (``dumpProducerIdSnapshot``)."""
        txn = (f"OptionalLong[{self.current_txn_first_offset}]" if self.has_open_txn
               else "OptionalLong.empty")
        text = (f"producerId: {self.producer_id} producerEpoch: {self.epoch} "
                f"coordinatorEpoch: {self.coordinator_epoch} currentTxnFirstOffset: {txn} "
                f"lastTimestamp: {self.timestamp} ")
        if self.has_batch_metadata:
            text += (f"firstSequence: {self.first_sequence} lastSequence: {self.last_sequence} "
                     f"lastOffset: {self.last_offset} offsetDelta: {self.offset_delta} "
                     f"timestamp: {self.timestamp}")
        return text


@dataclass(frozen=True)
class ProducerSnapshot:
    """A parsed snapshot: ``offset`` from the file name (end offset covered, exclusive)."""

    offset: int | None
    version: int
    crc: int
    entries: tuple[ProducerSnapshotEntry, ...]
    path: str | None = None
    trailing_bytes: int = 0

    def live_entries(self, now_ms: int,
                     producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS
                     ) -> tuple[ProducerSnapshotEntry, ...]:
        """Entries the broker keeps on load at ``now_ms`` (drops expired producers)."""
        return tuple(e for e in self.entries if not is_producer_expired(e, now_ms, producer_id_expiration_ms))


def is_producer_expired(entry: ProducerSnapshotEntry, now_ms: int,
                        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS) -> bool:
    """``ProducerStateManager.isProducerExpired``: no open txn and idle >= the expiration."""
    return not entry.has_open_txn and now_ms - entry.timestamp >= producer_id_expiration_ms


def _corrupt(message: str, path: str | None, position: int, expected: str, found: str) -> SnapshotFormatError:
    return SnapshotFormatError(message, path=path, position=position, expected=expected, found=found)


def parse_producer_snapshot(data: bytes | bytearray | memoryview, *, path: str | None = None,
                            offset: int | None = None, verify_crc: bool = True) -> ProducerSnapshot:
    """Parse snapshot bytes with the broker's checks; SnapshotFormatError names what failed."""
    buf = bytes(data)
    size = len(buf)
    if size < VERSION_SIZE:
        raise _corrupt("Snapshot failed schema validation: truncated version", path, 0,
                       f"{VERSION_SIZE} bytes", f"{size} bytes")
    (version,) = struct.unpack_from(">h", buf, 0)
    if version != SNAPSHOT_VERSION:
        raise _corrupt("Snapshot failed schema validation: Snapshot contained an unknown file version "
                       f"{version}",
                       path, 0, f"version {SNAPSHOT_VERSION}", f"version {version}")
    if size < SNAPSHOT_HEADER.size:
        raise _corrupt("Snapshot failed schema validation: truncated header", path, CRC_OFFSET,
                       f"{SNAPSHOT_HEADER.size} bytes", f"{size} bytes")
    _, crc, count = SNAPSHOT_HEADER.unpack_from(buf, 0)
    count_pos = PRODUCER_ENTRIES_OFFSET
    remaining = size - SNAPSHOT_HEADER.size
    if count < 0:
        raise _corrupt("Snapshot failed schema validation: non-nullable field producerEntries was serialized "
                       "as null", path, count_pos, "entry count >= 0", f"{count}")
    if count > remaining:
        raise _corrupt(f"Snapshot failed schema validation: Tried to allocate a collection of size {count}, "
                       f"but there are only {remaining} bytes remaining.", path, count_pos,
                       f"at most {remaining} entries", f"{count}")
    need = count * PRODUCER_ENTRY.size
    if need > remaining:
        raise _corrupt("Snapshot failed schema validation: truncated producer entries", path,
                       SNAPSHOT_HEADER.size + (remaining // PRODUCER_ENTRY.size) * PRODUCER_ENTRY.size,
                       f"{count} entries of {PRODUCER_ENTRY.size} bytes ({need} bytes)",
                       f"{remaining} bytes")
    if verify_crc:
        computed = crc32c(memoryview(buf)[PRODUCER_ENTRIES_OFFSET:])
        if computed != crc:
            raise SnapshotFormatError(
                f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: {computed}",
                path=path, position=CRC_OFFSET, expected=f"crc {computed}", found=f"crc {crc}",
                code="CRC_MISMATCH")
    raw = np.frombuffer(buf, dtype=_ENTRY_DTYPE, count=count, offset=SNAPSHOT_HEADER.size)
    cols = [raw[name].astype(np.int64).tolist() for name in _ENTRY_DTYPE.names or ()]
    entries = tuple(ProducerSnapshotEntry(*row) for row in zip(*cols, strict=True)) if count else ()
    return ProducerSnapshot(offset=offset, version=version, crc=crc, entries=entries, path=path,
                            trailing_bytes=remaining - need)


def read_producer_snapshot(source: str | os.PathLike[str], *, filesystem: Any = None,
                           verify_crc: bool = True, max_bytes: int = MAX_SNAPSHOT_BYTES,
                           offset: int | None = None) -> ProducerSnapshot:
    """Read a ``.snapshot`` (path or URI); ``offset`` (the end offset it covers) from the file name
    unless given (a remote fileset's snapshot is named after its segment's start offset, but covers
    the offsets up to the next segment's base)."""
    handle, fs_path = fsio.resolve(source, filesystem)
    location = handle.location(fs_path)
    if offset is None:
        try:
            offset = base_offset_from_name(fs_path)
        except KafkaFormatError:
            offset = None
    try:
        data = handle.read_bytes(fs_path, max_bytes=max_bytes)
    except KafkaFormatError as err:
        raise SnapshotFormatError(err.reason, path=location, expected=err.expected, found=err.found,
                                  code=err.code) from err
    return parse_producer_snapshot(data, path=location, offset=offset, verify_crc=verify_crc)


def encode_producer_snapshot(entries: Sequence[ProducerSnapshotEntry]) -> bytes:
    """Bytes of a version-1 snapshot holding ``entries`` (``writeSnapshot``)."""
    body = struct.pack(">i", len(entries)) + b"".join(
        PRODUCER_ENTRY.pack(e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta,
                            e.timestamp, e.coordinator_epoch, e.current_txn_first_offset)
        for e in entries)
    return struct.pack(">hI", SNAPSHOT_VERSION, crc32c(body)) + body
