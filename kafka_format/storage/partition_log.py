"""One replica of a topic-partition: the files of its partition dir as one frozen value.

:class:`PartitionLog` is what :func:`kafka_format.storage.logdir.open_log_dirs` finds for a partition
dir (``UnifiedLog``'s view of it: segments, checkpointed offsets, leader epochs, producer snapshots)
and reads its index, time index, transaction index and snapshot files on demand.  It travels to
Spark executors by value (its file system handle re-opens itself).  The watermark rules it applies
are :mod:`kafka_format.storage.watermarks`'; LEO, LSO and the producer replay are
:mod:`kafka_format.storage.partition_state`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kafka_format.common.errors import KafkaFormatError
from kafka_format.storage import checkpoints as ckpt
from kafka_format.storage import fsio
from kafka_format.storage.fsio import FileSystemHandle
from kafka_format.storage.index import (
    OffsetIndex,
    OffsetPosition,
    TimeIndex,
    TimestampOffset,
    read_offset_index,
    read_time_index,
)
from kafka_format.storage.partition_files import MetadataSnapshotFile, Segment, SegmentTable, SnapshotFile
from kafka_format.storage.snapshot import ProducerSnapshot, read_producer_snapshot
from kafka_format.storage.txnindex import TransactionIndex, read_transaction_index
from kafka_format.storage.watermarks import high_watermark_on_load

__all__ = ["REMOTE_KIND", "IndexSummary", "PartitionLog"]

#: :attr:`PartitionLog.kind` of remote-tier filesets seen as a log (:mod:`kafka_format.storage.remote_tier`;
#: a log dir's kinds are ``live``, ``delete``, ``future``, ``stray``): closed, immutable segments,
#: none of them an active segment.
REMOTE_KIND = "remote"


@dataclass(frozen=True)
class IndexSummary:
    """What a segment's index files tell without reading the log."""

    last_offset_entry: OffsetPosition
    max_timestamp_so_far: TimestampOffset
    offset_index_entries: int
    time_index_entries: int
    offset_index: OffsetIndex | None
    time_index: TimeIndex | None


@dataclass(frozen=True)
class PartitionLog:
    """One replica of a topic-partition in one log dir."""

    topic: str
    partition: int
    path: str
    log_dir: str
    kind: str = "live"
    segments: Sequence[Segment] = ()     # a SegmentTable from discovery: Segment values on access
    orphan_segments: tuple[Segment, ...] = ()
    leader_epochs: ckpt.LeaderEpochCheckpoint | None = None
    topic_id: str | None = None
    snapshots: tuple[SnapshotFile, ...] = ()
    metadata_snapshots: tuple[MetadataSnapshotFile, ...] = ()
    quorum_state: ckpt.QuorumState | None = None
    recovery_point: int | None = None
    log_start_offset_checkpoint: int | None = None
    high_watermark_checkpoint: int | None = None
    cleaner_offset_checkpoint: int | None = None
    broker_id: int | None = None
    log_end_offset: int | None = None  # set only when open_log_dirs got a next_offset hook
    notes: tuple[str, ...] = ()
    problems: tuple[KafkaFormatError, ...] = ()
    filesystem: FileSystemHandle = field(default_factory=fsio.local_handle, repr=False, compare=False)

    # -- derived values --------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        """``max(log-start-offset-checkpoint or 0, first segment base)`` (``LogLoader``, non-tiered)."""
        segs = self.segments
        first = (int(segs.base_offsets[0]) if isinstance(segs, SegmentTable) else segs[0].base_offset) if len(segs) else 0
        return max(self.log_start_offset_checkpoint or 0, first)

    @property
    def high_watermark(self) -> int | None:
        """``replication-offset-checkpoint`` entry as the broker loads it: floored at the log start
        offset, capped at the log end offset when that is known
        (:func:`kafka_format.storage.watermarks.high_watermark_on_load`); None without an entry."""
        hw = self.high_watermark_checkpoint
        if hw is None:
            return None
        return high_watermark_on_load(hw, log_start_offset=self.log_start_offset,
                                      log_end_offset=self.log_end_offset)

    def first_dirty_offset(self, log_end_offset: int | None = None) -> int:
        """Cleaner checkpoint; logStartOffset when missing, below logStartOffset or above LEO
        (``LogCleanerManager.cleanableOffsets``)."""
        leo = log_end_offset if log_end_offset is not None else self.log_end_offset
        start = self.log_start_offset
        dirty = self.cleaner_offset_checkpoint
        if dirty is None or dirty < start or (leo is not None and dirty > leo):
            return start
        return dirty

    @property
    def active_segment(self) -> Segment | None:
        return self.segments[-1] if self.segments else None

    @property
    def size_bytes(self) -> int:
        return sum(s.log_size or 0 for s in self.segments)

    @property
    def leader_epoch(self) -> int | None:
        """Latest leader epoch of the checkpoint (None if absent/empty)."""
        return self.leader_epochs.latest_epoch if self.leader_epochs else None

    # -- file readers ----------------------------------------------------------------------------
    def offset_index(self, segment: Segment) -> OffsetIndex | None:
        if segment.index_path is None:
            return None
        return read_offset_index(self.filesystem.fs_path(segment.index_path), segment.base_offset,
                                 filesystem=self.filesystem, log_size=segment.log_size)

    def time_index(self, segment: Segment) -> TimeIndex | None:
        if segment.timeindex_path is None:
            return None
        return read_time_index(self.filesystem.fs_path(segment.timeindex_path), segment.base_offset,
                               filesystem=self.filesystem)

    def txn_index(self, segment: Segment) -> TransactionIndex:
        """The segment's aborted transactions (empty when it has no ``.txnindex``)."""
        if segment.txnindex_path is None:
            return TransactionIndex(base_offset=segment.base_offset)
        return read_transaction_index(self.filesystem.fs_path(segment.txnindex_path), segment.base_offset,
                                      filesystem=self.filesystem)

    def transaction_indexes(self) -> list[TransactionIndex]:
        """One per segment, for :func:`kafka_format.storage.txnindex.collect_aborted_txns`."""
        return [self.txn_index(s) for s in self.segments]

    def read_snapshot(self, snapshot: SnapshotFile, *, verify_crc: bool = True) -> ProducerSnapshot:
        return read_producer_snapshot(self.filesystem.fs_path(snapshot.path), filesystem=self.filesystem,
                                      verify_crc=verify_crc, offset=snapshot.offset)

    def index_summary(self, segment: Segment) -> IndexSummary:
        """Last offset-index entry and time-index last entry (``readMaxTimestampAndOffsetSoFar``
        when nothing is in memory).  Not trustworthy for an active segment after a crash."""
        oi = self.offset_index(segment)
        ti = self.time_index(segment)
        last = oi.last_entry() if oi is not None else OffsetPosition(segment.base_offset, 0)
        mts = ti.last_entry() if ti is not None else TimestampOffset(-1, segment.base_offset)
        return IndexSummary(last, mts, len(oi) if oi else 0, len(ti) if ti else 0, oi, ti)

    def largest_timestamp(self, segment: Segment) -> int | None:
        """``LogSegment.largestTimestamp`` from the time index: its last timestamp if >= 0, else the
        .log mtime (None when neither is known)."""
        ts = self.index_summary(segment).max_timestamp_so_far.timestamp
        return ts if ts >= 0 else segment.log_mtime_ms
