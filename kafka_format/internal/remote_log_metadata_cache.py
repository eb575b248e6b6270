"""``__remote_log_metadata`` replayed as ``TopicBasedRemoteLogMetadataManager``'s consumer builds its
caches: which remote segments each topic-id-partition has, in which state, and what the broker's
reads of tiered data would find.

The classes follow Kafka's (``storage/src/main/java/.../remote/metadata/storage/``), one each:

* :class:`RemoteLogLeaderEpochState` -- ``RemoteLogLeaderEpochState``: per leader epoch, the copied
  segments by the epoch's start offset in them (a later upload starting at or before the last one's
  start, with an end at least the epoch's highest offset, replaces it: the replaced ones become
  *unreferenced*), the unreferenced segments (copy in progress, being deleted, replaced) and the
  highest copied offset of the epoch;
* :class:`RemoteLogMetadataCache` -- ``RemoteLogMetadataCache``: one partition's segments by id and
  its epochs' states; ``addCopyInProgressSegment``, ``updateRemoteLogSegmentMetadata`` (state
  transitions checked with ``RemoteLogSegmentState.isValidTransition``, an invalid one dropped),
  ``remoteLogSegmentMetadata(leaderEpoch, offset)``, ``highestOffsetForEpoch``,
  ``listRemoteLogSegments``; and, for :mod:`kafka_format.storage.tiered_history` (the broker's remote
  reads offline), what Kafka does not expose: whether a segment is referenced by some epoch, the
  segments that replaced one, the offsets at which a lookup's answer can change, and a cache built
  from COPY_SEGMENT_FINISHED segments in the order their copies finished
  (:meth:`RemoteLogMetadataCache.from_finished_segments`);
* :class:`RemoteLogMetadataView` -- ``RemotePartitionMetadataStore`` (the caches by partition and the
  partition-delete states; ``DELETE_PARTITION_FINISHED`` drops a partition's cache) with
  ``ConsumerTask.processConsumerRecord`` in front (``shouldProcess``: a record at or below the offset
  last read for its partition is skipped), filled by :func:`replay_remote_log_metadata`.

What Kafka does with records that do not fit is mirrored, and each is recorded as an
:class:`Anomaly` (kind, offset, Kafka's message, what Kafka did) instead of passing silently:

* dropped -- an update for a segment the cache does not have (Kafka: ``RemoteResourceNotFoundException``
  logged and swallowed by the store, or dropped at debug level while the cache initialises), an invalid
  state transition (``checkStateTransition``: logged, dropped), a record for a partition at or below
  the offset already read for it (``shouldProcess``);
* applied -- a partition-delete state that does not follow the one before (the store checks no
  transition), a record in another ``__remote_log_metadata`` partition than
  ``RemoteLogMetadataTopicPartitioner`` puts it in (with ``num_metadata_partitions``);
* consumer stops -- a record ``RemoteLogMetadataSerde`` cannot read (a null value too), a segment
  record in a state other than ``COPY_SEGMENT_STARTED`` (``IllegalArgumentException``), an update to
  ``COPY_SEGMENT_STARTED`` (``IllegalArgumentException``), a record for a partition whose deletion
  finished (``IllegalStateException: No partition metadata found``), a snapshot record
  (``UnsupportedOperationException`` from ``topicIdPartition()``): ``ConsumerTask.ingestRecords``
  catches it and closes, and the broker's metadata stays as it was before that record.  By default
  the replay stops there too (``RemoteLogMetadataView.stopped_at``); ``stop_at_failure=False`` goes
  on past it.

Every partition met is treated as assigned to the consumer (``maybeLoadPartition`` on first sight).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from kafka_format.internal.api_message import ApiMessageSerdeError
from kafka_format.internal.protocol import murmur2, uuid_from_str
from kafka_format.internal.remote_log_metadata import (
    RemoteLogMetadata,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataSnapshot,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    TopicIdPartition,
    decode_remote_log_metadata,
)
from kafka_format.records.record_batch import NO_PARTITION_LEADER_EPOCH

__all__ = [
    "APPLIED",
    "CONSUMER_STOPPED",
    "DROPPED",
    "Anomaly",
    "RemoteLogLeaderEpochState",
    "RemoteLogMetadataCache",
    "RemoteLogMetadataView",
    "iter_anomalies",
    "metadata_partition",
    "replay_remote_log_metadata",
]

#: Anomaly.action values: what Kafka does with the record
DROPPED, APPLIED, CONSUMER_STOPPED = "dropped", "applied", "consumer-stopped"

_ID = struct.Struct(">qq")   # Uuid: mostSignificantBits, leastSignificantBits


def _java_int(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _long_hash(v: int) -> int:
    """``Long.hashCode``."""
    u = v & 0xFFFFFFFFFFFFFFFF
    return _java_int(u ^ (u >> 32))


def metadata_partition(partition: TopicIdPartition, num_metadata_partitions: int) -> int:
    """``RemoteLogMetadataTopicPartitioner.metadataPartition``: the ``__remote_log_metadata`` partition
    of a topic-id-partition's records (murmur2 of ``Objects.hash(lsb, msb, partition)`` as 4 bytes)."""
    msb, lsb = _ID.unpack(uuid_from_str(partition.topic_id))
    h = 1
    for part in (_long_hash(lsb), _long_hash(msb), partition.partition):   # Arrays.hashCode
        h = _java_int(31 * h + part)
    return (murmur2(struct.pack(">i", h)) & 0x7FFFFFFF) % num_metadata_partitions


@dataclass(frozen=True)
class Anomaly:
    """A record Kafka's manager does not simply apply: where it is (``metadata_partition``,
    ``offset``), its ``kind``, ``message`` (Kafka's exception or log text), the user partition when
    known, and ``action``: ``"dropped"``, ``"applied"`` or ``"consumer-stopped"`` (see module doc)."""

    metadata_partition: int
    offset: int
    kind: str
    message: str
    action: str
    partition: TopicIdPartition | None = None


class _Rejected(Exception):
    """Kafka rejects a record: the anomaly kind, Kafka's message, what it does."""

    def __init__(self, kind: str, message: str, action: str) -> None:
        super().__init__(message)
        self.kind, self.message, self.action = kind, message, action


class RemoteLogLeaderEpochState:
    """``RemoteLogLeaderEpochState``: one leader epoch's segments of one partition."""

    def __init__(self) -> None:
        self._offsets: list[int] = []                       # offsetToId's keys, ascending
        self._ids: dict[int, RemoteLogSegmentId] = {}       # the epoch's start offset in a copied segment -> it
        self._unreferenced: dict[RemoteLogSegmentId, None] = {}   # a set, in insertion order
        self.highest_log_offset: int | None = None          # of the segments copied in this epoch

    def _put(self, offset: int, sid: RemoteLogSegmentId) -> None:
        if offset not in self._ids:
            bisect.insort(self._offsets, offset)
        self._ids[offset] = sid

    def _remove(self, offset: int) -> None:
        del self._ids[offset]
        self._offsets.remove(offset)

    def referenced(self) -> list[tuple[int, RemoteLogSegmentId]]:
        """``offsetToId``: (the epoch's start offset, segment id) of the copied segments, ascending."""
        return [(o, self._ids[o]) for o in self._offsets]

    def unreferenced(self) -> list[RemoteLogSegmentId]:
        """``unreferencedSegmentIds``: segments being copied, being deleted, or replaced."""
        return list(self._unreferenced)

    def floor_entry(self, offset: int) -> RemoteLogSegmentId | None:
        """``floorEntry``: the copied segment whose epoch start offset is the greatest <= ``offset``."""
        i = bisect.bisect_right(self._offsets, offset)
        return self._ids[self._offsets[i - 1]] if i else None

    def copy_started(self, sid: RemoteLogSegmentId) -> None:
        """``handleSegmentWithCopySegmentStartedState``."""
        self._unreferenced[sid] = None

    def is_referenced(self, sid: RemoteLogSegmentId) -> bool:
        """Whether ``offsetToId`` maps some offset to ``sid`` (only then can :meth:`floor_entry` return it)."""
        return sid in self._ids.values()

    def copy_finished(self, start_offset: int, sid: RemoteLogSegmentId,
                      epoch_end_offset: int) -> list[RemoteLogSegmentId]:
        """``handleSegmentWithCopySegmentFinishedState``: earlier uploads from ``start_offset`` on whose
        epoch ended at or below this one's are replaced (unreferenced), then this one is mapped.

        Returns the other ids this upload took out of ``offsetToId``: those the loop unreferenced and
        the one mapped at ``start_offset`` that ``offsetToId.put`` overwrote (Kafka does not add that
        one to the unreferenced ids: it is in no list of the epoch any more)."""
        replaced: list[RemoteLogSegmentId] = []
        while (self._offsets and self._offsets[-1] >= start_offset and self.highest_log_offset is not None
               and self.highest_log_offset <= epoch_end_offset):
            last = self._offsets[-1]
            self._unreferenced[self._ids[last]] = None
            replaced.append(self._ids[last])
            self._remove(last)
        overwritten = self._ids.get(start_offset)
        if overwritten is not None:
            replaced.append(overwritten)
        self._put(start_offset, sid)
        self._unreferenced.pop(sid, None)
        if self.highest_log_offset is None or epoch_end_offset > self.highest_log_offset:
            self.highest_log_offset = epoch_end_offset
        return [r for r in dict.fromkeys(replaced) if r != sid]

    def delete_started(self, start_offset: int, sid: RemoteLogSegmentId) -> None:
        """``handleSegmentWithDeleteSegmentStartedState``: unmapped (if it is the one mapped there),
        unreferenced until its deletion finishes."""
        if self._ids.get(start_offset) == sid:
            self._remove(start_offset)
        self._unreferenced[sid] = None

    def delete_finished(self, sid: RemoteLogSegmentId) -> None:
        """``handleSegmentWithDeleteSegmentFinishedState``."""
        self._unreferenced.pop(sid, None)

    def segment_ids(self) -> list[RemoteLogSegmentId]:
        """Referenced then unreferenced ids (what ``listAllRemoteLogSegments`` collects)."""
        return [self._ids[o] for o in self._offsets] + list(self._unreferenced)


def _epoch_end_offset(leader_epoch: int, metadata: RemoteLogSegmentMetadata) -> int:
    """``RemoteLogMetadataCache.highestOffsetForEpoch(epoch, segment)``: the start offset of the
    segment's next epoch (``higherEntry``: the least epoch above ``leader_epoch``) - 1, or the
    segment's end offset."""
    later = [e for e in metadata.segment_leader_epochs if e > leader_epoch]
    return metadata.segment_leader_epochs[min(later)] - 1 if later else metadata.end_offset


class RemoteLogMetadataCache:
    """``RemoteLogMetadataCache``: one topic-id-partition's remote segments."""

    def __init__(self) -> None:
        #: every segment that has not reached DELETE_SEGMENT_FINISHED, by id
        self.segments: dict[RemoteLogSegmentId, RemoteLogSegmentMetadata] = {}
        #: the leader epochs' states (an epoch stays once seen, as in Kafka: KAFKA-12641)
        self.leader_epochs: dict[int, RemoteLogLeaderEpochState] = {}
        #: not Kafka's: segment id -> the ids whose COPY_SEGMENT_FINISHED took it out of an epoch's
        #: offset map (see :meth:`replaced_by`)
        self._replaced_by: dict[RemoteLogSegmentId, list[RemoteLogSegmentId]] = {}

    @classmethod
    def from_finished_segments(cls, segments: Iterable[RemoteLogSegmentMetadata]) -> RemoteLogMetadataCache:
        """A cache of segments in COPY_SEGMENT_FINISHED, given in the order their copies finished: each
        replayed as its ``addCopyInProgressSegment`` (the metadata in COPY_SEGMENT_STARTED) and its
        ``updateRemoteLogSegmentMetadata`` to COPY_SEGMENT_FINISHED (with the metadata's broker, event
        time and custom metadata, so the cache holds the metadata given).  A segment in another state,
        or given twice, raises ValueError."""
        cache = cls()
        for metadata in segments:
            if metadata.state != RemoteLogSegmentState.COPY_SEGMENT_FINISHED:
                raise ValueError(f"segment {metadata.segment_id} is {metadata.state.name}, "
                                 "only COPY_SEGMENT_FINISHED segments are readable")
            if metadata.remote_log_segment_id in cache.segments:
                raise ValueError(f"segment {metadata.segment_id} given twice: pass each segment once, "
                                 "in its latest state")
            cache.add_copy_in_progress_segment(replace(metadata, state=RemoteLogSegmentState.COPY_SEGMENT_STARTED))
            cache.update_remote_log_segment_metadata(RemoteLogSegmentMetadataUpdate(
                metadata.partition, metadata.segment_id, metadata.custom_metadata,
                RemoteLogSegmentState.COPY_SEGMENT_FINISHED, metadata.event_timestamp_ms, metadata.broker_id))
        return cache

    def _epoch(self, leader_epoch: int) -> RemoteLogLeaderEpochState:
        state = self.leader_epochs.get(leader_epoch)
        if state is None:
            state = self.leader_epochs[leader_epoch] = RemoteLogLeaderEpochState()
        return state

    # -- queries --------------------------------------------------------------------------------

    def remote_log_segment_metadata(self, leader_epoch: int, offset: int) -> RemoteLogSegmentMetadata | None:
        """``remoteLogSegmentMetadata(leaderEpoch, offset)``: the copied segment holding ``offset`` of
        ``leader_epoch`` (the floor entry of the epoch, if ``offset`` is within the epoch's range in
        it), or None."""
        state = self.leader_epochs.get(leader_epoch)
        sid = state.floor_entry(offset) if state is not None else None
        if sid is None:
            return None
        metadata = self.segments[sid]
        return None if offset > _epoch_end_offset(leader_epoch, metadata) else metadata

    def highest_offset_for_epoch(self, leader_epoch: int) -> int | None:
        """``highestOffsetForEpoch(leaderEpoch)``: the highest offset of ``leader_epoch`` in segments that
        reached COPY_SEGMENT_FINISHED (later states included), or None."""
        state = self.leader_epochs.get(leader_epoch)
        return None if state is None else state.highest_log_offset

    def list_remote_log_segments(self, leader_epoch: int | None = None) -> list[RemoteLogSegmentMetadata]:
        """``listRemoteLogSegments(leaderEpoch)``: the epoch's segments (copied, being copied, being deleted,
        replaced) by start offset; ``leader_epoch`` None: ``listAllRemoteLogSegments`` (every segment
        not yet deleted; Kafka's order is a hash map's, here by start offset then id)."""
        if leader_epoch is None:
            return sorted(self.segments.values(), key=lambda m: (m.start_offset, m.segment_id))
        state = self.leader_epochs.get(leader_epoch)
        if state is None:
            return []
        found = [self.segments[sid] for sid in state.segment_ids()]
        if state.unreferenced():   # Kafka sorts only then (offsetToId is in order already), stably
            found.sort(key=lambda m: m.start_offset)
        return found

    def is_referenced(self, segment_id: RemoteLogSegmentId) -> bool:
        """Whether some leader epoch's offset map holds the segment (else no
        :meth:`remote_log_segment_metadata` lookup returns it)."""
        return any(state.is_referenced(segment_id) for state in self.leader_epochs.values())

    def replaced_by(self, segment_id: RemoteLogSegmentId) -> list[RemoteLogSegmentId]:
        """Not Kafka's: the segments whose COPY_SEGMENT_FINISHED took ``segment_id`` out of the offset
        map of one of its epochs (unreferenced it, or overwrote its entry), in the order that happened;
        empty once the segment itself is mapped again (its COPY_SEGMENT_FINISHED repeated) or deleted."""
        return list(self._replaced_by.get(segment_id, ()))

    def lookup_breakpoints(self) -> set[int]:
        """The offsets at which the answer of :meth:`remote_log_segment_metadata` can change, for any
        epoch: each epoch's mapped start offsets and the offset after each mapped segment's range in
        that epoch (between two consecutive breakpoints every offset gets the same answer)."""
        out: set[int] = set()
        for epoch, state in self.leader_epochs.items():
            for offset, sid in state.referenced():
                out.add(offset)
                out.add(_epoch_end_offset(epoch, self.segments[sid]) + 1)
        return out

    def segments_in_state(self, state: RemoteLogSegmentState) -> list[RemoteLogSegmentMetadata]:
        """The segments now in ``state``, by start offset (DELETE_SEGMENT_FINISHED: none, Kafka forgets them)."""
        return [m for m in self.list_remote_log_segments() if m.state == state]

    # -- updates (Kafka's exceptions as _Rejected) ----------------------------------------------

    def add_copy_in_progress_segment(self, metadata: RemoteLogSegmentMetadata) -> None:
        """``addCopyInProgressSegment``: a segment in COPY_SEGMENT_STARTED (re-adding one still in it is a
        valid self-transition; re-adding a segment in a later state is dropped)."""
        if metadata.state != RemoteLogSegmentState.COPY_SEGMENT_STARTED:
            raise _Rejected("segment-not-copy-started",
                            f"Given remoteLogSegmentMetadata:{metadata} should have state as "
                            f"{RemoteLogSegmentState.COPY_SEGMENT_STARTED.name} but it contains state as: "
                            f"{metadata.state.name}", CONSUMER_STOPPED)
        sid = metadata.remote_log_segment_id
        existing = self.segments.get(sid)
        _check_transition(existing.state if existing is not None else None, metadata.state, sid)
        for epoch in metadata.segment_leader_epochs:
            self._epoch(epoch).copy_started(sid)
        self.segments[sid] = metadata

    def update_remote_log_segment_metadata(self, update: RemoteLogSegmentMetadataUpdate) -> None:
        """``updateRemoteLogSegmentMetadata``: the segment's new state applied with ``createWithUpdates``
        and carried to its epochs' states (COPY_SEGMENT_FINISHED maps it, DELETE_SEGMENT_STARTED unmaps
        it, DELETE_SEGMENT_FINISHED forgets it)."""
        sid = update.remote_log_segment_id
        existing = self.segments.get(sid)
        if existing is None:   # RemoteResourceNotFoundException, logged by the store (or dropped while initialising)
            raise _Rejected("update-for-unknown-segment", f"No remote log segment metadata found for :{sid}", DROPPED)
        _check_transition(existing.state, update.state, sid)
        target = update.state
        if target == RemoteLogSegmentState.COPY_SEGMENT_STARTED:
            raise _Rejected("update-to-copy-started",
                            f"metadataUpdate: {update} with state {target.name} can not be updated", CONSUMER_STOPPED)
        metadata = existing.create_with_updates(update)
        if target == RemoteLogSegmentState.COPY_SEGMENT_FINISHED:
            self._replaced_by.pop(sid, None)   # mapped in each of its epochs again
        for epoch, start in metadata.segment_leader_epochs.items():
            state = self._epoch(epoch)
            if target == RemoteLogSegmentState.COPY_SEGMENT_FINISHED:
                for old in state.copy_finished(start, sid, _epoch_end_offset(epoch, metadata)):
                    by = self._replaced_by.setdefault(old, [])
                    if sid not in by:
                        by.append(sid)
            elif target == RemoteLogSegmentState.DELETE_SEGMENT_STARTED:
                state.delete_started(start, sid)
            else:
                state.delete_finished(sid)
        if target == RemoteLogSegmentState.DELETE_SEGMENT_FINISHED:
            del self.segments[sid]
            self._replaced_by.pop(sid, None)
        else:
            self.segments[sid] = metadata


def _check_transition(source: RemoteLogSegmentState | None, target: RemoteLogSegmentState,
                      sid: RemoteLogSegmentId) -> None:
    """``checkStateTransition``: an invalid transition is logged and the event dropped."""
    if not RemoteLogSegmentState.is_valid_transition(source, target):
        raise _Rejected("invalid-transition",
                        f"Current state: {source.name if source is not None else 'null'} can not be transitioned "
                        f"to target state: {target.name}, segmentId: {sid}. Dropping the event", DROPPED)


@dataclass
class RemoteLogMetadataView:
    """What :func:`replay_remote_log_metadata` builds: ``RemotePartitionMetadataStore``'s state plus
    what the replay met.

    ``caches``: each partition's :class:`RemoteLogMetadataCache` (a partition whose deletion finished
    has none, as in Kafka); ``partition_deletes``: the latest partition-delete metadata of partitions
    being deleted (removed at DELETE_PARTITION_FINISHED, as Kafka does); ``deleted_partitions``: the
    DELETE_PARTITION_FINISHED metadata of those (Kafka keeps nothing); ``anomalies`` in log order;
    ``stopped_at``: the record at which Kafka's consumer task stops, if any; ``read_offsets``: the last
    offset read per ``__remote_log_metadata`` partition; ``records``: records read."""

    caches: dict[TopicIdPartition, RemoteLogMetadataCache] = field(default_factory=dict)
    partition_deletes: dict[TopicIdPartition, RemotePartitionDeleteMetadata] = field(default_factory=dict)
    deleted_partitions: dict[TopicIdPartition, RemotePartitionDeleteMetadata] = field(default_factory=dict)
    anomalies: list[Anomaly] = field(default_factory=list)
    stopped_at: Anomaly | None = None
    read_offsets: dict[int, int] = field(default_factory=dict)
    records: int = 0
    _read_by_partition: dict[TopicIdPartition, int] = field(default_factory=dict, repr=False)
    _loaded: set[TopicIdPartition] = field(default_factory=set, repr=False)

    # -- queries --------------------------------------------------------------------------------

    def partitions(self) -> list[TopicIdPartition]:
        """The topic-id-partitions that have a cache, sorted."""
        return sorted(self.caches)

    def cache(self, partition: TopicIdPartition) -> RemoteLogMetadataCache | None:
        """The partition's cache (None: never seen, or its deletion finished)."""
        return self.caches.get(partition)

    def segment(self, partition: TopicIdPartition, segment_id: str) -> RemoteLogSegmentMetadata | None:
        """The current metadata of one segment (None: unknown or deleted)."""
        cache = self.caches.get(partition)
        return None if cache is None else cache.segments.get(RemoteLogSegmentId(partition, segment_id))

    def list_remote_log_segments(self, partition: TopicIdPartition,
                                 leader_epoch: int | None = None) -> list[RemoteLogSegmentMetadata]:
        """``listRemoteLogSegments(partition[, leaderEpoch])`` (see :class:`RemoteLogMetadataCache`)."""
        cache = self.caches.get(partition)
        return [] if cache is None else cache.list_remote_log_segments(leader_epoch)

    def segments_by_state(self, partition: TopicIdPartition) -> dict[RemoteLogSegmentState, list[RemoteLogSegmentMetadata]]:
        """The partition's segments grouped by state (each list by start offset; DELETE_SEGMENT_FINISHED
        is always empty: Kafka forgets those segments)."""
        cache = self.caches.get(partition)
        return {s: [] if cache is None else cache.segments_in_state(s) for s in RemoteLogSegmentState}

    def copied_segments(self, partition: TopicIdPartition) -> list[RemoteLogSegmentMetadata]:
        """The segments in COPY_SEGMENT_FINISHED (readable from remote storage), by start offset."""
        return self.segments_by_state(partition)[RemoteLogSegmentState.COPY_SEGMENT_FINISHED]

    def remote_log_segment_metadata(self, partition: TopicIdPartition, leader_epoch: int,
                                    offset: int) -> RemoteLogSegmentMetadata | None:
        """``RemotePartitionMetadataStore.remoteLogSegmentMetadata(partition, offset, epochForOffset)``."""
        cache = self.caches.get(partition)
        return None if cache is None else cache.remote_log_segment_metadata(leader_epoch, offset)

    def highest_offset_for_epoch(self, partition: TopicIdPartition, leader_epoch: int) -> int | None:
        """``highestLogOffset(partition, leaderEpoch)``."""
        cache = self.caches.get(partition)
        return None if cache is None else cache.highest_offset_for_epoch(leader_epoch)

    def highest_offset(self, partition: TopicIdPartition, leader_epochs: Sequence[tuple[int, int]] | None = None,
                       log_end_offset: int | None = None) -> tuple[int, int]:
        """(offset, leader epoch) of ``RemoteLogManager.findHighestRemoteOffset``, what ListOffsets
        ``latest-tiered`` (-5) answers: the leader epochs from the newest down, the first with a
        highest remote offset gives it -- capped at its end offset - 1 in the local log
        (``LeaderEpochFileCache.endOffsetFor``), if the local log's epoch ended at or below it.

        ``leader_epochs``: the partition's leader-epoch cache as (epoch, start offset) entries
        (``leader-epoch-checkpoint``), ``log_end_offset`` its local log end offset (None: the latest
        epoch is not capped).  Without ``leader_epochs`` the lineage is the epochs the remote metadata
        itself knows, newest first, uncapped.  (-1, -1): nothing copied in that lineage.  (The offline
        ListOffsets of :mod:`kafka_format.log.list_offsets` does not consult remote metadata.)"""
        cache = self.caches.get(partition)
        if cache is None:
            return -1, NO_PARTITION_LEADER_EPOCH
        if leader_epochs is None:
            for epoch in sorted(cache.leader_epochs, reverse=True):
                highest = cache.highest_offset_for_epoch(epoch)
                if highest is not None:
                    return highest, epoch
            return -1, NO_PARTITION_LEADER_EPOCH
        entries = sorted(dict(leader_epochs).items())
        for i in range(len(entries) - 1, -1, -1):
            epoch = entries[i][0]
            highest = cache.highest_offset_for_epoch(epoch)
            if highest is None:
                continue
            if i == len(entries) - 1 and log_end_offset is None:   # the latest epoch's end unknown: uncapped
                return highest, epoch
            requested, end = _end_offset_for(entries, i, -1 if log_end_offset is None else log_end_offset)
            return (end - 1, requested) if end <= highest else (highest, epoch)
        return -1, NO_PARTITION_LEADER_EPOCH

    def partition_delete_state(self, partition: TopicIdPartition) -> RemotePartitionDeleteState | None:
        """The partition's delete state: the pending one, DELETE_PARTITION_FINISHED once finished, or None."""
        pending = self.partition_deletes.get(partition)
        if pending is not None:
            return pending.state
        done = self.deleted_partitions.get(partition)
        return None if done is None else done.state

    # -- applying (RemotePartitionMetadataStore.handleRemoteLogMetadata) ------------------------

    def _apply(self, metadata: RemoteLogMetadata) -> None:
        if isinstance(metadata, RemoteLogSegmentMetadataSnapshot):   # ConsumerTask.shouldProcess: topicIdPartition()
            raise _Rejected("snapshot-record", "This metadata does not have topic partition with it.",
                            CONSUMER_STOPPED)
        tp = metadata.partition
        if isinstance(metadata, RemotePartitionDeleteMetadata):
            before = self.partition_deletes.get(tp)
            self.partition_deletes[tp] = metadata
            if metadata.state == RemotePartitionDeleteState.DELETE_PARTITION_FINISHED:
                self.caches.pop(tp, None)
                del self.partition_deletes[tp]
                self.deleted_partitions[tp] = metadata
            if not RemotePartitionDeleteState.is_valid_transition(before.state if before else None, metadata.state):
                raise _Rejected("partition-delete-transition",
                                f"{before.state.name if before else 'null'} -> {metadata.state.name}: not a valid "
                                "RemotePartitionDeleteState transition (the store applies it)", APPLIED)
            return
        cache = self.caches.get(tp)
        if cache is None:
            raise _Rejected("no-partition-metadata", f"No partition metadata found for : {tp}", CONSUMER_STOPPED)
        if isinstance(metadata, RemoteLogSegmentMetadata):
            cache.add_copy_in_progress_segment(metadata)
        else:
            cache.update_remote_log_segment_metadata(metadata)


def _end_offset_for(entries: list[tuple[int, int]], i: int, log_end_offset: int) -> tuple[int, int]:
    """``LeaderEpochFileCache.endOffsetFor(entries[i].epoch, logEndOffset)`` for an epoch of the cache:
    the latest epoch ends at the log end offset, any other where the next one starts."""
    if i == len(entries) - 1:
        return entries[i][0], log_end_offset
    return entries[i][0], entries[i + 1][1]


_Record = tuple[int, int, bytes | bytearray | memoryview | None]


def replay_remote_log_metadata(records: Iterable[_Record], view: RemoteLogMetadataView | None = None, *,
                               stop_at_failure: bool = True, num_metadata_partitions: int | None = None,
                               release: tuple[int, int] | None = None) -> RemoteLogMetadataView:
    """Fold ``__remote_log_metadata`` records -- (its partition, offset, value bytes or None), each
    partition's in offset order, control records left out -- into a :class:`RemoteLogMetadataView`, as
    ``ConsumerTask.processConsumerRecord`` hands them to ``RemotePartitionMetadataStore`` (see the
    module doc for what each kind of odd record does).

    ``stop_at_failure``: stop at the first record on which Kafka's consumer task fails and closes (as
    the broker's view does); False: record it and go on.  ``num_metadata_partitions``
    (``remote.log.metadata.topic.num.partitions``, 50 by default): also report records in another
    partition than the partitioner's.  ``release``: read the records as that Kafka release does.
    Pass the same ``view`` again to go on with more records.
    """
    view = view if view is not None else RemoteLogMetadataView()
    for meta_partition, offset, value in records:
        if view.stopped_at is not None and stop_at_failure:
            break
        view.records += 1
        tp: TopicIdPartition | None = None
        found: list[_Rejected] = []
        try:
            metadata = _deserialize(value, release)
            if not isinstance(metadata, RemoteLogSegmentMetadataSnapshot):
                tp = metadata.partition
                read = view._read_by_partition.get(tp)
                if read is not None and read >= offset:   # shouldProcess
                    raise _Rejected("already-read", f"offset {offset} is at or below the offset {read} already "
                                    f"read for {tp}", DROPPED)
                if tp not in view._loaded:                # maybeLoadPartition, on assignment
                    view._loaded.add(tp)
                    view.caches[tp] = RemoteLogMetadataCache()
            try:
                view._apply(metadata)
            except _Rejected as r:
                if r.action == CONSUMER_STOPPED:
                    raise
                found.append(r)                           # Kafka logged it and went on
            if tp is not None:
                view._read_by_partition[tp] = offset
                expected = metadata_partition(tp, num_metadata_partitions) if num_metadata_partitions else None
                if expected is not None and expected != meta_partition:
                    found.append(_Rejected("wrong-metadata-partition", f"{tp} belongs in "
                                           f"__remote_log_metadata-{expected} of {num_metadata_partitions}", APPLIED))
            view.read_offsets[meta_partition] = offset
        except _Rejected as r:
            found.append(r)
            if r.action != CONSUMER_STOPPED:
                view.read_offsets[meta_partition] = offset
        for rejected in found:
            anomaly = Anomaly(meta_partition, offset, rejected.kind, rejected.message, rejected.action, tp)
            view.anomalies.append(anomaly)
            if rejected.action == CONSUMER_STOPPED and view.stopped_at is None:
                view.stopped_at = anomaly
    return view


def _deserialize(value: bytes | bytearray | memoryview | None, release: tuple[int, int] | None) -> RemoteLogMetadata:
    """``serde.deserialize(record.value())``; what it throws stops the consumer task."""
    if value is None:   # ByteBuffer.wrap(null)
        raise _Rejected("undecodable", "a record without a value (NullPointerException)", CONSUMER_STOPPED)
    try:
        return decode_remote_log_metadata(value, release=release)
    except ApiMessageSerdeError as e:
        raise _Rejected("undecodable", f"{'null' if e.kafka_message is None else e.kafka_message} ({e})",
                        CONSUMER_STOPPED) from None


def iter_anomalies(view: RemoteLogMetadataView, action: str | None = None) -> Iterator[Anomaly]:
    """The view's anomalies, those with ``action`` (``"dropped"``, ``"applied"``, ``"consumer-stopped"``)
    only when given."""
    return (a for a in view.anomalies if action is None or a.action == action)
