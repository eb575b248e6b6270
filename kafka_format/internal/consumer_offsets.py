"""``__consumer_offsets`` records.

Framing: :mod:`kafka_format.internal.coordinator_records` (``CoordinatorRecordSerde``; here
``GroupCoordinatorRecordSerde``).  Record types (``GroupCoordinatorRecordSerde.apiMessageKeyFor``):
see :data:`RECORD_TYPES`.  Output shapes follow ``DumpLogSegments.OffsetsMessageParser``: key
``{"type": "<recordType>", "data": {...}}``, value ``{"version": "<v>",
"data": {...}}``; a tombstone prints ``<DELETE>``.  For groups whose
``protocolType`` is ``"consumer"`` each member's ``subscription`` /
``assignment`` bytes are replaced by the decoded ``ConsumerProtocolSubscription``
/ ``ConsumerProtocolAssignment`` (int16 version + message; bytes that do not
decode are kept, as Kafka swallows the error); the embedded version is kept
under the private key ``_version`` (left out of JSON).
"""

from __future__ import annotations

from typing import Any

from kafka_format.common.errors import InternalTopicFormatError
from kafka_format.internal.coordinator_records import (
    CoordinatorRecordSerde,
    UnknownRecordTypeError,
    read_version,
)
from kafka_format.internal.protocol import INT16, partition_for, read_message, write_version_prefixed

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "OFFSETS_TOPIC_PARTITIONS",
    "RECORD_TYPES",
    "UnknownRecordTypeError",
    "decode_consumer_offsets_key",
    "decode_consumer_offsets_record",
    "decode_consumer_offsets_value",
    "decode_consumer_protocol_assignment",
    "decode_consumer_protocol_subscription",
    "encode_consumer_offsets_key",
    "encode_consumer_offsets_value",
    "encode_consumer_protocol_assignment",
    "encode_consumer_protocol_subscription",
    "encode_group_metadata_key",
    "encode_group_metadata_value",
    "encode_offset_commit_key",
    "encode_offset_commit_value",
    "format_offsets_record",
    "group_partition",
]

#: record type (key version) → (key message, value message): Kafka 4.4.0's ``CoordinatorRecordType``
#: (9, ``ShareGroupPartitionMetadata`` of 4.0's share-group early access, and 18, a streams-group
#: record removed before release, are unknown to it)
RECORD_TYPES: dict[int, tuple[str, str]] = {
    0: ("OffsetCommitKey", "OffsetCommitValue"),
    1: ("OffsetCommitKey", "OffsetCommitValue"),
    2: ("GroupMetadataKey", "GroupMetadataValue"),
    3: ("ConsumerGroupMetadataKey", "ConsumerGroupMetadataValue"),
    4: ("ConsumerGroupPartitionMetadataKey", "ConsumerGroupPartitionMetadataValue"),
    5: ("ConsumerGroupMemberMetadataKey", "ConsumerGroupMemberMetadataValue"),
    6: ("ConsumerGroupTargetAssignmentMetadataKey", "ConsumerGroupTargetAssignmentMetadataValue"),
    7: ("ConsumerGroupTargetAssignmentMemberKey", "ConsumerGroupTargetAssignmentMemberValue"),
    8: ("ConsumerGroupCurrentMemberAssignmentKey", "ConsumerGroupCurrentMemberAssignmentValue"),
    10: ("ShareGroupMemberMetadataKey", "ShareGroupMemberMetadataValue"),
    11: ("ShareGroupMetadataKey", "ShareGroupMetadataValue"),
    12: ("ShareGroupTargetAssignmentMetadataKey", "ShareGroupTargetAssignmentMetadataValue"),
    13: ("ShareGroupTargetAssignmentMemberKey", "ShareGroupTargetAssignmentMemberValue"),
    14: ("ShareGroupCurrentMemberAssignmentKey", "ShareGroupCurrentMemberAssignmentValue"),
    15: ("ShareGroupStatePartitionMetadataKey", "ShareGroupStatePartitionMetadataValue"),
    16: ("ConsumerGroupRegularExpressionKey", "ConsumerGroupRegularExpressionValue"),
    17: ("StreamsGroupMetadataKey", "StreamsGroupMetadataValue"),
    19: ("StreamsGroupMemberMetadataKey", "StreamsGroupMemberMetadataValue"),
    20: ("StreamsGroupTargetAssignmentMetadataKey", "StreamsGroupTargetAssignmentMetadataValue"),
    21: ("StreamsGroupTargetAssignmentMemberKey", "StreamsGroupTargetAssignmentMemberValue"),
    22: ("StreamsGroupCurrentMemberAssignmentKey", "StreamsGroupCurrentMemberAssignmentValue"),
    23: ("StreamsGroupTopologyKey", "StreamsGroupTopologyValue"),
}
OFFSETS_TOPIC_PARTITIONS = 50  # offsets.topic.num.partitions default
CONSUMER_PROTOCOL_TYPE = "consumer"  # ConsumerProtocol.PROTOCOL_TYPE
VERSION_KEY = "_version"


def _embedded_protocols(value_name: str, data: dict[str, Any]) -> dict[str, Any]:
    """A ``consumer`` classic group's member subscription/assignment bytes decoded (Kafka keeps the
    bytes that do not parse)."""
    if value_name == "GroupMetadataValue" and data.get("protocolType") == CONSUMER_PROTOCOL_TYPE:
        for member in data.get("members") or ():
            for fname, decoder in (("subscription", decode_consumer_protocol_subscription),
                                   ("assignment", decode_consumer_protocol_assignment)):
                raw = member.get(fname)
                if isinstance(raw, bytes):
                    try:
                        member[fname] = decoder(raw)
                    except InternalTopicFormatError:
                        pass  # Kafka keeps the original bytes when they do not parse
    return data


SERDE = CoordinatorRecordSerde(RECORD_TYPES, _embedded_protocols)


def group_partition(group_id: str, partitions: int = OFFSETS_TOPIC_PARTITIONS) -> int:
    """``__consumer_offsets`` partition of a group: ``abs(hash(group)) % partitions``."""
    return partition_for(group_id, partitions)


def decode_consumer_offsets_key(key: bytes | bytearray | memoryview) -> dict[str, Any]:
    """Key bytes → ``{"type": "<recordType>", "data": {...}}``.

    Raises :class:`UnknownRecordTypeError` for a record type Kafka does not know
    and :class:`InternalTopicFormatError` for malformed bytes.
    """
    return SERDE.decode_key(key)


def decode_consumer_offsets_value(key_type: int | str,
                                  value: bytes | bytearray | memoryview | None) -> dict[str, Any] | None:
    """Value bytes of a record of type ``key_type`` → ``{"version": "<v>", "data": {...}}``.

    ``None`` (a tombstone) gives ``None``.
    """
    return SERDE.decode_value(key_type, value)


def decode_consumer_offsets_record(
        key: bytes | bytearray | memoryview,
        value: bytes | bytearray | memoryview | None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Decode a key/value pair; the value is ``None`` for a tombstone."""
    return SERDE.decode_record(key, value)


def _decode_embedded(name: str, data: bytes | bytearray | memoryview) -> dict[str, Any]:
    version = read_version(data, name)
    out, _ = read_message(name, data, version, offset=INT16.size)
    out[VERSION_KEY] = version
    return out


def decode_consumer_protocol_subscription(data: bytes | bytearray | memoryview) -> dict[str, Any]:
    """``ConsumerProtocolSubscription`` (int16 version + message) as a dict."""
    return _decode_embedded("ConsumerProtocolSubscription", data)


def decode_consumer_protocol_assignment(data: bytes | bytearray | memoryview) -> dict[str, Any]:
    """``ConsumerProtocolAssignment`` (int16 version + message) as a dict."""
    return _decode_embedded("ConsumerProtocolAssignment", data)


def format_offsets_record(key: bytes | bytearray | memoryview | None,
                          value: bytes | bytearray | memoryview | None,
                          offset: int) -> tuple[str | None, str | None]:
    """The ``(key, payload)`` texts ``kafka-dump-log --offsets-decoder`` prints.

    A record without a key raises (Kafka aborts the dump).  Unknown record types
    give ``"Unknown record type N at offset O, skipping."``; other failures give
    ``"Error at offset O, skipping. <reason>"`` (the reason's wording is ours).
    """
    return SERDE.format_record(key, value, offset, f"Failed to decode message at offset {offset} using offset "
                               "topic decoder (message had a missing key)")


# --------------------------------------------------------------------------- encoders


def encode_consumer_offsets_key(record_type: int, data: dict[str, Any]) -> bytes:
    """Key bytes for record type ``record_type`` with fields ``data`` (camelCase)."""
    return SERDE.encode_key(record_type, data)


def _with_embedded(data: dict[str, Any]) -> dict[str, Any]:
    members = data.get("members")
    if not members:
        return data
    out = dict(data)
    out["members"] = []
    for m in members:
        m = dict(m)
        if isinstance(m.get("subscription"), dict):
            m["subscription"] = encode_consumer_protocol_subscription(m["subscription"])
        if isinstance(m.get("assignment"), dict):
            m["assignment"] = encode_consumer_protocol_assignment(m["assignment"])
        out["members"].append(m)
    return out


def encode_consumer_offsets_value(record_type: int, data: dict[str, Any], version: int) -> bytes:
    """Value bytes (int16 ``version`` + message) for a record of type ``record_type``."""
    if SERDE.types_for(record_type)[1] == "GroupMetadataValue":
        data = _with_embedded(data)
    return SERDE.encode_value(record_type, data, version)


def encode_offset_commit_key(group: str, topic: str, partition: int, *, record_type: int = 1) -> bytes:
    """``OffsetCommitKey`` (record type 1 since Kafka 0.9; 0 = ZooKeeper-era offsets)."""
    return encode_consumer_offsets_key(record_type, {"group": group, "topic": topic, "partition": partition})


def encode_offset_commit_value(offset: int, metadata: str, commit_timestamp: int, *,
                               version: int = 3, leader_epoch: int = -1,
                               expire_timestamp: int = -1) -> bytes:
    """``OffsetCommitValue`` v0..v4 (v1 carries ``expireTimestamp``, v3+ ``leaderEpoch``)."""
    return encode_consumer_offsets_value(1, {
        "offset": offset, "leaderEpoch": leader_epoch, "metadata": metadata,
        "commitTimestamp": commit_timestamp, "expireTimestamp": expire_timestamp}, version)


def encode_group_metadata_key(group: str) -> bytes:
    """``GroupMetadataKey`` (record type 2)."""
    return encode_consumer_offsets_key(2, {"group": group})


def encode_group_metadata_value(data: dict[str, Any], *, version: int = 3) -> bytes:
    """``GroupMetadataValue`` v0..v4; member subscription/assignment may be dicts (encoded)."""
    return encode_consumer_offsets_value(2, data, version)


def encode_consumer_protocol_subscription(data: dict[str, Any], version: int | None = None) -> bytes:
    """``ConsumerProtocolSubscription`` bytes (version from ``data["_version"]``, default 0)."""
    v = int(data.get(VERSION_KEY, 0) if version is None else version)
    return write_version_prefixed("ConsumerProtocolSubscription", data, v)


def encode_consumer_protocol_assignment(data: dict[str, Any], version: int | None = None) -> bytes:
    """``ConsumerProtocolAssignment`` bytes (version from ``data["_version"]``, default 0)."""
    v = int(data.get(VERSION_KEY, 0) if version is None else version)
    return write_version_prefixed("ConsumerProtocolAssignment", data, v)
