"""The tiered-storage (KIP-405) remote log metadata of ``__remote_log_metadata``, as values.

Kafka's ``TopicBasedRemoteLogMetadataManager`` keeps, per topic-id-partition, the remote segments
and their states in that topic's records (``RemoteLogMetadataSerde``): a segment's metadata when
its copy starts, updates as it is copied and deleted, and partition-delete events.  This module
declares those values once (``storage/api/.../remote/storage/RemoteLogSegmentMetadata.java`` and
its siblings); decoding the records and replaying them as the manager's cache does build on them.

Ids are Kafka ``Uuid`` text (``Uuid.toString``: 22 characters of unpadded base64url).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

__all__ = [
    "RemoteLogSegmentMetadata",
    "RemoteLogSegmentMetadataUpdate",
    "RemoteLogSegmentState",
    "RemotePartitionDeleteMetadata",
    "RemotePartitionDeleteState",
    "TopicIdPartition",
]


class RemoteLogSegmentState(IntEnum):
    """``RemoteLogSegmentState``: the id each state is stored as."""

    COPY_SEGMENT_STARTED = 0
    COPY_SEGMENT_FINISHED = 1
    DELETE_SEGMENT_STARTED = 2
    DELETE_SEGMENT_FINISHED = 3


class RemotePartitionDeleteState(IntEnum):
    """``RemotePartitionDeleteState``: the id each state is stored as."""

    DELETE_PARTITION_MARKED = 0
    DELETE_PARTITION_STARTED = 1
    DELETE_PARTITION_FINISHED = 2


@dataclass(frozen=True, order=True)
class TopicIdPartition:
    """``TopicIdPartition``: a partition of a topic incarnation (its topic id)."""

    topic_id: str
    topic: str
    partition: int

    def __str__(self) -> str:
        """``TopicIdPartition.toString``: ``<topicId>:<topic>-<partition>``."""
        return f"{self.topic_id}:{self.topic}-{self.partition}"


@dataclass(frozen=True)
class RemoteLogSegmentMetadata:
    """``RemoteLogSegmentMetadata``: one remote segment (``segment_id`` is the segment's Uuid)
    in one state.  ``segment_leader_epochs`` maps each leader epoch of the segment's records to
    its start offset, in epoch order; ``custom_metadata`` is the remote storage manager's opaque
    bytes (None: ``Optional.empty()``)."""

    partition: TopicIdPartition
    segment_id: str
    start_offset: int
    end_offset: int
    broker_id: int
    max_timestamp_ms: int
    event_timestamp_ms: int
    segment_leader_epochs: Mapping[int, int]
    segment_size_in_bytes: int
    custom_metadata: bytes | None
    state: RemoteLogSegmentState


@dataclass(frozen=True)
class RemoteLogSegmentMetadataUpdate:
    """``RemoteLogSegmentMetadataUpdate``: a segment's new state (and custom metadata)."""

    partition: TopicIdPartition
    segment_id: str
    custom_metadata: bytes | None
    state: RemoteLogSegmentState
    event_timestamp_ms: int
    broker_id: int


@dataclass(frozen=True)
class RemotePartitionDeleteMetadata:
    """``RemotePartitionDeleteMetadata``: a partition's remote data being deleted."""

    partition: TopicIdPartition
    state: RemotePartitionDeleteState
    event_timestamp_ms: int
    broker_id: int
