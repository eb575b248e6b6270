"""Append batches to segment files with the broker's rules for indexes, rolls and producer state.

Files of a segment (``LogFileUtils``: base offset as 20 digits + suffix):

``.index`` (``OffsetIndex.java``), 8-byte entries::

    relativeOffset int32 | position int32

``.timeindex`` (``TimeIndex.java``), 12-byte entries::

    timestamp int64 | relativeOffset int32

``.txnindex`` (``AbortedTxn.java``), 34-byte entries, created only when the segment gets one::

    version int16 (0) | producerId int64 | firstOffset int64 | lastOffset int64 | lastStableOffset int64

``.snapshot`` (``ProducerStateManager.writeSnapshot``, ``ProducerSnapshot.json`` v1)::

    version int16 (1) | crc uint32 (CRC-32C of everything after it) | count int32
    | entries: producerId int64, epoch int16, lastSequence int32, lastOffset int64,
               offsetDelta int32, timestamp int64, coordinatorEpoch int32, currentTxnFirstOffset int64

Index rule (``LogSegment.append``): an offset-index entry is added for a batch when more than
``index.interval.bytes`` were appended since the last entry, checked *before* the batch is
counted (so the first batch of a segment is never indexed).  ``index_rule="per-batch"`` is the
KAFKA-806 rule (entry = last offset of that batch, its position); ``"per-append"`` is the rule
before it (one check per append call: entry = last offset of the whole append, position of its
first batch).  A time-index entry ``(max timestamp so far, offset carrying it)`` goes with each
offset-index entry when the timestamp grew (``TimeIndex.maybeAppend``), and once more when the
segment rolls or is closed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kafka_format.common.limits import INT32_MAX
from kafka_format.storage.index import OFFSET_ENTRY, TIME_ENTRY
from kafka_format.storage.partition_files import filename_prefix_from_offset
from kafka_format.storage.snapshot import NO_TXN_OFFSET, ProducerSnapshotEntry, encode_producer_snapshot
from kafka_format.storage.txnindex import AbortedTxn, encode_aborted_txn
from kafka_format.writer.batches import CONTROL_ABORT, NO_SEQUENCE, BuiltBatch

__all__ = [
    "DEFAULT_INDEX_INTERVAL_BYTES",
    "DEFAULT_SEGMENT_BYTES",
    "DEFAULT_SEGMENT_INDEX_BYTES",
    "INDEX_ENTRY",
    "TIME_INDEX_ENTRY",
    "AbortedTxn",
    "PartitionWriter",
    "ProducerEntry",
    "SegmentWriter",
    "encode_snapshot",
    "java_hashmap_order",
    "segment_file_name",
]

# Layouts are declared once, in the reader modules: OFFSET_ENTRY (index.py, OffsetIndex.java),
# TIME_ENTRY (index.py, TimeIndex.java), ABORTED_TXN (txnindex.py, AbortedTxn.java), the snapshot
# (snapshot.py, ProducerSnapshot.json).  This module only decides *what* goes into them.
INDEX_ENTRY = OFFSET_ENTRY
TIME_INDEX_ENTRY = TIME_ENTRY

DEFAULT_INDEX_INTERVAL_BYTES = 4096
DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024
DEFAULT_SEGMENT_INDEX_BYTES = 10 * 1024 * 1024

IndexRule = Literal["per-batch", "per-append"]


def segment_file_name(base_offset: int, suffix: str) -> str:
    """``00000000000000000042.log`` style name (``LogFileUtils.filenamePrefixFromOffset``)."""
    return filename_prefix_from_offset(base_offset) + suffix


def java_hashmap_order(keys: Sequence[int]) -> list[int]:
    """Iteration order of a ``java.util.HashMap<Long, _>`` filled with ``keys`` in this order
    (bucket = spread(Long.hashCode) & (capacity - 1); capacity 16 doubling past 0.75 load)."""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(k: int) -> int:
        h = (k ^ ((k & 0xFFFFFFFFFFFFFFFF) >> 32)) & 0xFFFFFFFF
        h ^= h >> 16
        return h & (capacity - 1)

    return [k for _, k in sorted(((bucket(k), i), k) for i, k in enumerate(keys))]


@dataclass
class ProducerEntry:
    """``ProducerStateEntry`` as written to a snapshot (last batch metadata only)."""

    producer_id: int
    epoch: int
    last_sequence: int = NO_SEQUENCE
    last_offset: int = -1
    offset_delta: int = 0
    timestamp: int = -1
    coordinator_epoch: int = -1
    current_txn_first_offset: int = NO_TXN_OFFSET


def encode_snapshot(entries: Sequence[ProducerEntry]) -> bytes:
    """Producer snapshot bytes; ``entries`` in the order the broker's map iterates them."""
    return encode_producer_snapshot([
        ProducerSnapshotEntry(e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta,
                              e.timestamp, e.coordinator_epoch, e.current_txn_first_offset)
        for e in entries])


@dataclass
class SegmentWriter:
    """One segment being written: the ``.log`` grows on disk; index entries are kept in memory
    and written when the segment rolls or closes."""

    directory: Path
    base_offset: int
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    index_rule: IndexRule = "per-batch"
    segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES
    size: int = 0
    offset_entries: list[tuple[int, int]] = field(default_factory=list)   # (absolute offset, position)
    time_entries: list[tuple[int, int]] = field(default_factory=list)     # (timestamp, absolute offset)
    aborted_txns: list[AbortedTxn] = field(default_factory=list)
    batches: list[tuple[int, BuiltBatch]] = field(default_factory=list)   # (position, batch)
    max_timestamp_so_far: int = -1
    offset_of_max_timestamp_so_far: int = -1
    bytes_since_last_index_entry: int = 0
    closed: bool = False

    def __post_init__(self) -> None:
        self.directory = Path(self.directory)
        self.offset_of_max_timestamp_so_far = self.base_offset
        self.log_path.write_bytes(b"")

    # --- paths ---
    def path(self, suffix: str) -> Path:
        """Path of this segment's file with ``suffix`` (``.log``, ``.index``, ...)."""
        return self.directory / segment_file_name(self.base_offset, suffix)

    @property
    def log_path(self) -> Path:
        return self.path(".log")

    @property
    def max_offset_entries(self) -> int:
        return self.segment_index_bytes // INDEX_ENTRY.size

    @property
    def max_time_entries(self) -> int:
        return self.segment_index_bytes // TIME_INDEX_ENTRY.size

    def is_index_full(self) -> bool:
        """``OffsetIndex.isFull() || TimeIndex.isFull()`` (time index keeps one slot spare)."""
        return (len(self.offset_entries) >= self.max_offset_entries
                or len(self.time_entries) >= self.max_time_entries - 1)

    @property
    def next_offset(self) -> int:
        return self.batches[-1][1].last_offset + 1 if self.batches else self.base_offset

    # --- appending ---
    def _time_maybe_append(self, timestamp: int, offset: int) -> None:
        last_ts = self.time_entries[-1][0] if self.time_entries else -1
        if timestamp > last_ts:
            self.time_entries.append((timestamp, offset))

    def _offset_append(self, offset: int, position: int) -> None:
        if self.offset_entries and offset <= self.offset_entries[-1][0]:
            raise ValueError(f"offset index entry {offset} not above the last one")
        self.offset_entries.append((offset, position))

    def append(self, batches: Sequence[BuiltBatch]) -> None:
        """Append one broker ``append()`` call worth of batches, updating indexes."""
        if self.closed:
            raise ValueError("segment is closed")
        if not batches:
            return
        for batch in batches:
            if batch.last_offset - self.base_offset > INT32_MAX or batch.base_offset < self.base_offset:
                raise ValueError("batch offsets do not fit this segment")
        position = self.size
        with open(self.log_path, "ab") as f:
            for batch in batches:
                f.write(batch.data)
        if self.index_rule == "per-batch":
            for batch in batches:
                if batch.max_timestamp > self.max_timestamp_so_far:
                    self.max_timestamp_so_far = batch.max_timestamp
                    self.offset_of_max_timestamp_so_far = batch.last_offset
                if self.bytes_since_last_index_entry > self.index_interval_bytes:
                    self._offset_append(batch.last_offset, position)
                    self._time_maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
                    self.bytes_since_last_index_entry = 0
                self.batches.append((position, batch))
                position += batch.size
                self.bytes_since_last_index_entry += batch.size
        else:
            largest_ts = max(b.max_timestamp for b in batches)
            if largest_ts > self.max_timestamp_so_far:
                self.max_timestamp_so_far = largest_ts
                self.offset_of_max_timestamp_so_far = next(
                    b.last_offset for b in batches if b.max_timestamp == largest_ts)
            if self.bytes_since_last_index_entry > self.index_interval_bytes:
                self._offset_append(batches[-1].last_offset, position)
                self._time_maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
                self.bytes_since_last_index_entry = 0
            total = sum(b.size for b in batches)
            for batch in batches:
                self.batches.append((position, batch))
                position += batch.size
            self.bytes_since_last_index_entry += total
        self.size = position

    def add_aborted_txn(self, txn: AbortedTxn) -> None:
        """Record an aborted transaction whose ABORT marker lives in this segment."""
        self.aborted_txns.append(txn)
        with open(self.path(".txnindex"), "ab") as f:
            f.write(encode_aborted_txn(txn))

    # --- finishing ---
    def close(self, *, final_time_entry: bool = True, preallocate_index_bytes: int | None = None) -> None:
        """Write the index files.  ``final_time_entry``: append ``(segment max timestamp, its
        offset)`` as on roll / clean close.  ``preallocate_index_bytes``: leave both indexes at
        that size, zero-filled past the entries (a running broker's active segment); otherwise
        they are trimmed to their entries (``trimToValidSize``)."""
        if final_time_entry:
            self._time_maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
        index = b"".join(INDEX_ENTRY.pack(o - self.base_offset, p) for o, p in self.offset_entries)
        tindex = b"".join(TIME_INDEX_ENTRY.pack(t, o - self.base_offset) for t, o in self.time_entries)
        if preallocate_index_bytes is not None:
            index = index.ljust(preallocate_index_bytes // INDEX_ENTRY.size * INDEX_ENTRY.size, b"\0")
            tindex = tindex.ljust(preallocate_index_bytes // TIME_INDEX_ENTRY.size * TIME_INDEX_ENTRY.size,
                                  b"\0")
        self.path(".index").write_bytes(index)
        self.path(".timeindex").write_bytes(tindex)
        self.closed = True

    def files(self) -> list[Path]:
        """Files of this segment that exist on disk."""
        paths = (self.path(s) for s in (".log", ".index", ".timeindex", ".txnindex"))
        return [p for p in paths if p.exists()]


class PartitionWriter:
    """A partition directory: segments, rolls, producer state, ``.txnindex`` and ``.snapshot``
    files, as ``UnifiedLog`` / ``LocalLog`` produce them.

    ``append`` takes the batches of one broker append call (``BuiltBatch`` values with their
    final offsets); the broker rolls first when ``size + append size > segment_bytes`` (the new
    segment's base offset is the first offset of the append), or when an index is full.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        index_rule: IndexRule = "per-batch",
        segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES,
        base_offset: int = 0,
        take_snapshots: bool = True,
    ) -> None:
        if index_rule not in ("per-batch", "per-append"):
            raise ValueError("index_rule must be 'per-batch' or 'per-append'")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.index_rule: IndexRule = index_rule
        self.segment_index_bytes = segment_index_bytes
        self.take_snapshots = take_snapshots
        self.segments: list[SegmentWriter] = [self._new_segment(base_offset)]
        self.producers: dict[int, ProducerEntry] = {}
        self._producer_order: list[int] = []
        self.ongoing_txns: dict[int, int] = {}          # producerId -> first offset of open txn
        self.aborted_txns: list[AbortedTxn] = []
        self.leader_epochs: list[tuple[int, int]] = []  # (epoch, start offset)
        self.map_end_offset = base_offset
        self.last_snapshot_offset = 0
        self.snapshots: list[int] = []
        self.closed = False

    def _new_segment(self, base_offset: int) -> SegmentWriter:
        return SegmentWriter(self.directory, base_offset, index_interval_bytes=self.index_interval_bytes,
                             index_rule=self.index_rule, segment_index_bytes=self.segment_index_bytes)

    @property
    def active(self) -> SegmentWriter:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        """Next offset to be written (LEO)."""
        for seg in reversed(self.segments):
            if seg.batches:
                return seg.next_offset
        return self.segments[0].base_offset

    # --- producer state (ProducerAppendInfo / ProducerStateManager) ---
    def _producer(self, producer_id: int, epoch: int) -> ProducerEntry:
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = ProducerEntry(producer_id, epoch)
            self.producers[producer_id] = entry
            self._producer_order.append(producer_id)
        return entry

    def _update_producer_state(self, batches: Sequence[BuiltBatch]) -> list[tuple[int, int, int, bool]]:
        completed: list[tuple[int, int, int, bool]] = []
        for batch in batches:
            if batch.producer_id < 0:
                continue
            entry = self._producer(batch.producer_id, batch.producer_epoch)
            if entry.epoch != batch.producer_epoch:
                entry.epoch = batch.producer_epoch
                entry.last_sequence, entry.last_offset, entry.offset_delta = NO_SEQUENCE, -1, 0
            if batch.control_type is not None:
                if entry.current_txn_first_offset != NO_TXN_OFFSET:
                    completed.append((batch.producer_id, entry.current_txn_first_offset, batch.last_offset,
                                      batch.control_type == CONTROL_ABORT))
                entry.coordinator_epoch = batch.coordinator_epoch
                entry.current_txn_first_offset = NO_TXN_OFFSET
                entry.timestamp = batch.max_timestamp
            else:
                entry.last_sequence = batch.last_sequence
                entry.last_offset = batch.last_offset
                entry.offset_delta = batch.last_offset - batch.base_offset
                entry.timestamp = batch.max_timestamp
                if batch.transactional and entry.current_txn_first_offset == NO_TXN_OFFSET:
                    entry.current_txn_first_offset = batch.base_offset
                    self.ongoing_txns[batch.producer_id] = batch.base_offset
        return completed

    def _take_snapshot(self) -> None:
        if not self.take_snapshots or self.map_end_offset <= self.last_snapshot_offset:
            return
        order = java_hashmap_order(self._producer_order)
        data = encode_snapshot([self.producers[pid] for pid in order])
        (self.directory / segment_file_name(self.map_end_offset, ".snapshot")).write_bytes(data)
        self.snapshots.append(self.map_end_offset)
        self.last_snapshot_offset = self.map_end_offset

    # --- appending ---
    def append(self, batches: BuiltBatch | Sequence[BuiltBatch]) -> None:
        """One broker append: roll if needed, write, index, update producer and txn state."""
        if self.closed:
            raise ValueError("partition writer is closed")
        group = [batches] if isinstance(batches, BuiltBatch) else list(batches)
        if not group:
            return
        if group[0].base_offset < self.log_end_offset:
            raise ValueError(f"offset {group[0].base_offset} below log end offset {self.log_end_offset}")
        total = sum(b.size for b in group)
        seg = self.active
        if seg.size > 0 and (seg.size > self.segment_bytes - total or seg.is_index_full()):
            self.roll(group[0].base_offset)
        for batch in group:  # LeaderEpochFileCache.assign: first offset of each new epoch
            epoch = batch.partition_leader_epoch
            if epoch >= 0 and (not self.leader_epochs or epoch > self.leader_epochs[-1][0]):
                self.leader_epochs.append((epoch, batch.base_offset))
        self.active.append(group)
        completed = self._update_producer_state(group)
        self.map_end_offset = group[-1].last_offset + 1
        for producer_id, first, last, aborted in completed:
            others = [o for pid, o in self.ongoing_txns.items() if pid != producer_id]
            lso = min(others) if others else last + 1
            if aborted:
                txn = AbortedTxn(producer_id, first, last, lso)
                self.active.add_aborted_txn(txn)
                self.aborted_txns.append(txn)
            self.ongoing_txns.pop(producer_id, None)

    def roll(self, new_base_offset: int | None = None) -> None:
        """Close the active segment (final time-index entry, trimmed indexes), start a new one
        at ``new_base_offset`` (default LEO) and take a producer snapshot named after it."""
        base = self.log_end_offset if new_base_offset is None else new_base_offset
        if base < self.log_end_offset:
            raise ValueError("new segment would overlap the log")
        if self.active.size == 0:
            return
        self.active.close()
        self.segments.append(self._new_segment(base))
        self.map_end_offset = base
        self._take_snapshot()

    def close(
        self,
        *,
        clean_shutdown: bool = True,
        preallocate_index_bytes: int | None = None,
        partial_tail: bytes | None = None,
        mtimes: int | Mapping[int, int] | None = None,
    ) -> None:
        """Finish the partition.  Clean shutdown: final time-index entry, trimmed indexes and a
        snapshot at LEO.  Otherwise the active segment looks like a running/crashed broker's:
        no final entry, indexes preallocated to ``preallocate_index_bytes`` if given, no
        snapshot.  ``partial_tail``: bytes appended to the active ``.log`` after everything
        (an incomplete batch a crash leaves).  ``mtimes``: ms since epoch for every file, or
        per segment base offset (snapshots take the value of the segment they are named after,
        falling back to the previous segment's)."""
        active = self.active
        if clean_shutdown:
            active.close()
            self.map_end_offset = self.log_end_offset
            self._take_snapshot()
        else:
            active.close(final_time_entry=False, preallocate_index_bytes=preallocate_index_bytes)
        if partial_tail:
            with open(active.log_path, "ab") as f:
                f.write(partial_tail)
        self.closed = True
        if mtimes is not None:
            self.set_mtimes(mtimes)

    def set_mtimes(self, mtimes: int | Mapping[int, int]) -> None:
        """Set file mtimes (ms): one value for all, or per segment base offset."""
        bases = [s.base_offset for s in self.segments]

        def for_base(base: int) -> int:
            if isinstance(mtimes, int):
                return mtimes
            eligible = [b for b in bases if b <= base and b in mtimes]
            return mtimes[max(eligible)] if eligible else min(mtimes.values())

        for seg in self.segments:
            ms = for_base(seg.base_offset)
            for p in seg.files():
                os.utime(p, ns=(ms * 1_000_000, ms * 1_000_000))
        for snap in self.snapshots:
            ms = for_base(snap)
            p = self.directory / segment_file_name(snap, ".snapshot")
            os.utime(p, ns=(ms * 1_000_000, ms * 1_000_000))

    def first_unstable_offset(self) -> int | None:
        """First offset of the earliest open transaction, if any."""
        return min(self.ongoing_txns.values()) if self.ongoing_txns else None
