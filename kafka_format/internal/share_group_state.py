"""``__share_group_state`` records: the share coordinator's share-partition state (KIP-932).

Framing: :mod:`kafka_format.internal.coordinator_records` (``ShareCoordinatorRecordSerde``), record
types (Kafka 4.4.0's ``coordinator/share/generated/CoordinatorRecordType``): 0 ``ShareSnapshot``
(the whole state of one share-partition) and 1 ``ShareUpdate`` (a change on top of the last
snapshot); a tombstone is a ``ShareSnapshotKey`` with a null value.  The key names the
share-partition: group id, topic id and partition.  :func:`format_share_group_state_record` gives the
text of ``kafka-dump-log --share-group-state-decoder`` (``DumpLogSegments.ShareGroupStateMessageParser``).

A key lives in partition ``abs("groupId:topicId:partition".hashCode()) % partitions`` of the topic
(``ShareCoordinatorService.partitionFor``, ``SharePartitionKey.asCoordinatorKey``; 50 partitions by
default, ``share.coordinator.state.topic.num.partitions``).
"""

from __future__ import annotations

from typing import Any

from kafka_format.common.topics import SHARE_GROUP_STATE_TOPIC
from kafka_format.internal.coordinator_records import CoordinatorRecordSerde
from kafka_format.internal.protocol import partition_for

__all__ = [
    "DELIVERY_STATES",
    "RECORD_TYPES",
    "SERDE",
    "SHARE_GROUP_STATE_PARTITIONS",
    "SHARE_GROUP_STATE_TOPIC",
    "SHARE_SNAPSHOT",
    "SHARE_UPDATE",
    "decode_share_group_state_record",
    "encode_share_snapshot",
    "encode_share_state_key",
    "encode_share_update",
    "format_share_group_state_record",
    "share_partition_partition",
]

SHARE_GROUP_STATE_PARTITIONS = 50          # share.coordinator.state.topic.num.partitions default
SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1
#: record type -> (key message, value message)
RECORD_TYPES: dict[int, tuple[str, str]] = {
    SHARE_SNAPSHOT: ("ShareSnapshotKey", "ShareSnapshotValue"),
    SHARE_UPDATE: ("ShareUpdateKey", "ShareUpdateValue"),
}
#: a state batch's ``DeliveryState`` (``server/share/fetch/RecordState``) -> its name
DELIVERY_STATES: dict[int, str] = {0: "Available", 1: "Acquired", 2: "Acknowledged", 3: "Archiving", 4: "Archived"}

SERDE = CoordinatorRecordSerde(RECORD_TYPES)

Buffer = bytes | bytearray | memoryview


def share_partition_partition(group_id: str, topic_id: str, partition: int,
                              partitions: int = SHARE_GROUP_STATE_PARTITIONS) -> int:
    """The ``__share_group_state`` partition of a share-partition (``topic_id``: Kafka's base64 text)."""
    return partition_for(f"{group_id}:{topic_id}:{partition}", partitions)


def decode_share_group_state_record(key: Buffer, value: Buffer | None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A key/value pair -> ``({"type", "data"}, {"version", "data"} | None)``; raises
    :class:`~kafka_format.internal.coordinator_records.UnknownRecordTypeError` for a type Kafka does
    not know and :class:`~kafka_format.common.errors.InternalTopicFormatError` for bytes that do not
    decode."""
    return SERDE.decode_record(key, value)


def format_share_group_state_record(key: Buffer | None, value: Buffer | None, offset: int) -> tuple[str, str | None]:
    """The ``(key, payload)`` texts ``kafka-dump-log --share-group-state-decoder`` prints (a record
    without a key raises: Kafka's tool aborts there)."""
    return SERDE.format_record(key, value, offset, f"Failed to decode message at offset {offset} using the "
                                                   "specified decoder (message had a missing key)")


def encode_share_state_key(record_type: int, group_id: str, topic_id: str, partition: int) -> bytes:
    """``ShareSnapshotKey`` (``record_type`` 0) or ``ShareUpdateKey`` (1) bytes."""
    return SERDE.encode_key(record_type, {"groupId": group_id, "topicId": topic_id, "partition": partition})


def encode_share_snapshot(data: dict[str, Any]) -> bytes:
    """``ShareSnapshotValue`` v0 bytes from its fields (camelCase: ``snapshotEpoch``, ``stateEpoch``,
    ``leaderEpoch``, ``startOffset``, ``deliveryCompleteCount``, ``createTimestamp``,
    ``writeTimestamp``, ``stateBatches``)."""
    return SERDE.encode_value(SHARE_SNAPSHOT, data, 0)


def encode_share_update(data: dict[str, Any]) -> bytes:
    """``ShareUpdateValue`` v0 bytes from its fields."""
    return SERDE.encode_value(SHARE_UPDATE, data, 0)
