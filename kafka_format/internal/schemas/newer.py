"""Schema changes newer than ``SOURCE_COMMIT`` that real Kafka 4.4.0 brokers write.

Found by the dump conformance run (tests/conformance/test_dump_conformance.py) on a Kafka 4.4.0
broker's log dir, and read from the 4.4.0 generated message classes (their ``SCHEMA_4`` fields),
because the JSON definitions of that release are not in the mirror ``_generate.py`` reads:

* ``OffsetCommitValue`` v4: tagged field 0 ``topicId`` (uuid) -- the group coordinator's
  ``OffsetCommitValue.SCHEMA_4`` (``topic_id``, "The topic id of the committed offset.");
* ``RegisterBrokerRecord`` v4: tagged field 1 ``CordonedLogDirs`` (nullable ``[]uuid``, default
  null) -- ``RegisterBrokerRecord.SCHEMA_4`` (``cordoned_log_dirs``);
* ``BrokerRegistrationChangeRecord`` v3: tagged field 3 ``CordonedLogDirs`` (nullable ``[]uuid``,
  default null: "null if no change") -- ``BrokerRegistrationChangeRecord.SCHEMA_3``;
* ``ClearElrRecord`` (metadata api key 28, v0, flexible): ``TopicName`` string --
  ``ClearElrRecord.SCHEMA_0`` (``topic_name``);
* ``UnregisterControllerRecord`` (metadata api key 29, v0, flexible): ``ControllerId`` int32 --
  ``metadata/src/main/resources/common/metadata/UnregisterControllerRecord.json`` of 4.4.0;
* ``RemoteLogSegmentMetadataRecord`` and ``RemoteLogSegmentMetadataSnapshotRecord`` v0 (tiered
  storage, since 4.0.0: KIP-1058): tagged field 0 ``TxnIndexEmpty`` (bool, "Flag to indicate if the
  transaction index is empty.") -- ``message/*.json`` of the 4.0.0 and 4.4.0 ``kafka-storage`` jars;
* the group coordinator's ``__consumer_offsets`` records as Kafka 4.4.0 defines them
  (``common/message/*.json`` of the ``kafka-group-coordinator`` jar): the record types 16
  (``ConsumerGroupRegularExpression``, KIP-848 regular-expression subscriptions) and 17, 19 to 23
  (the streams groups of KIP-1071); the share-group layouts 4.1 changed while share groups were in
  preview (``ShareGroupMetadataValue`` gained the plain field ``MetadataHash``,
  ``ShareGroupStatePartitionMetadataValue`` the leading plain field ``InitializingTopics``), and
  ``ShareGroupPartitionMetadata`` (type 9) removed, so 4.4's loader skips it as an unknown type;
  the tagged fields ``MetadataHash`` of ``ConsumerGroupMetadataValue``, ``AssignmentTimestamp`` of
  both target-assignment metadata values and ``AssignmentEpochs`` of a consumer member's assigned
  partitions.  Keys keep this package's convention: a key is read at its record type as version;
* the share coordinator's ``__share_group_state`` records (KIP-932), area ``share_coordinator``:
  ``ShareSnapshot`` (type 0) and ``ShareUpdate`` (type 1) as Kafka 4.4.0 defines them
  (``common/message/*.json`` of the ``kafka-share-coordinator`` jar; the 2024 definitions had an
  int16 ``SnapshotEpoch`` and neither timestamps nor ``DeliveryCompleteCount``).

Which release brought each change: :mod:`kafka_format.internal.schemas.releases`.

:func:`apply` is idempotent; ``protocol`` applies it once at import.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["added_to_area", "apply", "removed_from_area"]

class _Field(NamedTuple):
    """A field Kafka added to ``schema`` (whose ``validVersions`` become ``valid`` when given):
    appended to the message's fields, or inserted at ``position``, or added to its common struct
    ``struct``."""

    schema: str
    valid: str | None
    field: dict[str, Any]
    position: int | None = None
    struct: str | None = None


_ADDED_FIELDS: dict[str, tuple[str, dict[str, Any]]] = {
    "OffsetCommitValue": ("0-4", {"name": "topicId", "type": "uuid", "versions": "4+",
                                  "taggedVersions": "4+", "tag": 0}),
    "RegisterBrokerRecord": ("0-4", {"name": "CordonedLogDirs", "type": "[]uuid", "versions": "4+",
                                     "nullableVersions": "4+", "taggedVersions": "4+", "tag": 1,
                                     "default": "null"}),
    "BrokerRegistrationChangeRecord": ("0-3", {"name": "CordonedLogDirs", "type": "[]uuid", "versions": "3+",
                                               "nullableVersions": "3+", "taggedVersions": "3+", "tag": 3,
                                               "default": "null"}),
    "RemoteLogSegmentMetadataRecord": ("0", {"name": "TxnIndexEmpty", "type": "bool", "versions": "0+",
                                             "taggedVersions": "0+", "tag": 0}),
    "RemoteLogSegmentMetadataSnapshotRecord": ("0", {"name": "TxnIndexEmpty", "type": "bool", "versions": "0+",
                                                     "taggedVersions": "0+", "tag": 0}),
}


_GROUP_COORDINATOR_FIELDS = (
    _Field("ShareGroupMetadataValue", None, {"name": "MetadataHash", "versions": "0+", "type": "int64"}),
    _Field("ShareGroupStatePartitionMetadataValue", None,
           {"name": "InitializingTopics", "versions": "0+", "type": "[]TopicPartitionsInfo"}, position=0),
    _Field("ConsumerGroupMetadataValue", None, {"name": "MetadataHash", "versions": "0+", "type": "int64",
                                                 "default": 0, "taggedVersions": "0+", "tag": 0}),
    _Field("ConsumerGroupTargetAssignmentMetadataValue", None,
           {"name": "AssignmentTimestamp", "versions": "0+", "taggedVersions": "0+", "tag": 0,
            "type": "int64", "default": 0}),
    _Field("ShareGroupTargetAssignmentMetadataValue", None,
           {"name": "AssignmentTimestamp", "versions": "0+", "taggedVersions": "0+", "tag": 0,
            "type": "int64", "default": 0}),
    _Field("ConsumerGroupCurrentMemberAssignmentValue", None,
           {"name": "AssignmentEpochs", "versions": "0+", "nullableVersions": "0+", "taggedVersions": "0+",
            "tag": 0, "type": "[]int32", "default": None}, struct="TopicPartitions"),
)

#: records Kafka 4.4.0 no longer defines, by area
_REMOVED_SCHEMAS: dict[str, tuple[str, ...]] = {
    "group_coordinator": ("ShareGroupPartitionMetadataKey", "ShareGroupPartitionMetadataValue"),
}

#: the added schemas, by area (a module of ``_generate.AREAS``)
_ADDED_SCHEMAS: dict[str, dict[str, dict[str, Any]]] = {"metadata": {
    "ClearElrRecord": {"apiKey": 28, "type": "metadata", "name": "ClearElrRecord", "validVersions": "0",
                       "flexibleVersions": "0+",
                       "fields": [{"name": "TopicName", "type": "string", "versions": "0+"}]},
    "UnregisterControllerRecord": {"apiKey": 29, "type": "metadata", "name": "UnregisterControllerRecord",
                                   "validVersions": "0", "flexibleVersions": "0+",
                                   "fields": [{"name": "ControllerId", "type": "int32", "versions": "0+"}]},
}, "group_coordinator": {
    'ConsumerGroupRegularExpressionKey': {'name': 'ConsumerGroupRegularExpressionKey',
     'validVersions': '16',
     'flexibleVersions': 'none',
     'fields': [{'name': 'GroupId', 'type': 'string', 'versions': '16'},
                {'name': 'RegularExpression', 'type': 'string', 'versions': '16'}],
     'type': 'data'},
    'ConsumerGroupRegularExpressionValue': {'name': 'ConsumerGroupRegularExpressionValue',
     'validVersions': '0',
     'flexibleVersions': '0+',
     'fields': [{'name': 'Topics', 'versions': '0+', 'type': '[]string'},
                {'name': 'Version', 'versions': '0+', 'type': 'int64'},
                {'name': 'Timestamp', 'versions': '0+', 'type': 'int64'}],
     'type': 'data'},
    'StreamsGroupCurrentMemberAssignmentKey': {'name': 'StreamsGroupCurrentMemberAssignmentKey',
     'validVersions': '22',
     'flexibleVersions': 'none',
     'fields': [{'name': 'GroupId', 'type': 'string', 'versions': '22'},
                {'name': 'MemberId', 'type': 'string', 'versions': '22'}],
     'type': 'data'},
    'StreamsGroupCurrentMemberAssignmentValue': {'name': 'StreamsGroupCurrentMemberAssignmentValue',
     'validVersions': '0',
     'flexibleVersions': '0+',
     'fields': [{'name': 'MemberEpoch', 'versions': '0+', 'type': 'int32'},
                {'name': 'PreviousMemberEpoch', 'versions': '0+', 'type': 'int32'},
                {'name': 'State', 'versions': '0+', 'type': 'int8'},
                {'name': 'ActiveTasks', 'versions': '0+', 'type': '[]TaskIds'},
                {'name': 'StandbyTasks', 'versions': '0+', 'type': '[]TaskIds'},
                {'name': 'WarmupTasks', 'versions': '0+', 'type': '[]TaskIds'},
                {'name': 'ActiveTasksPendingRevocation', 'versions': '0+', 'type': '[]TaskIds'},
                {'name': 'StandbyTasksPendingRevocation', 'versions': '0+', 'type': '[]TaskIds'},
                {'name': 'WarmupTasksPendingRevocation', 'versions': '0+', 'type': '[]TaskIds'}],
     'commonStructs': [{'name': 'TaskIds',
                        'versions': '0+',
                        'fields': [{'name': 'SubtopologyId', 'type': 'string', 'versions': '0+'},
                                   {'name': 'Partitions', 'type': '[]int32', 'versions': '0+'},
                                   {'name': 'AssignmentEpochs',
                                    'versions': '0+',
                                    'nullableVersions': '0+',
                                    'taggedVersions': '0+',
                                    'tag': 0,
                                    'type': '[]int32',
                                    'default': None}]}],
     'type': 'data'},
    'StreamsGroupMemberMetadataKey': {'name': 'StreamsGroupMemberMetadataKey',
     'validVersions': '19',
     'flexibleVersions': 'none',
     'fields': [{'name': 'GroupId', 'type': 'string', 'versions': '19'},
                {'name': 'MemberId', 'type': 'string', 'versions': '19'}],
     'type': 'data'},
    'StreamsGroupMemberMetadataValue': {'name': 'StreamsGroupMemberMetadataValue',
     'validVersions': '0',
     'flexibleVersions': '0+',
     'fields': [{'name': 'InstanceId', 'versions': '0+', 'nullableVersions': '0+', 'type': 'string'},
                {'name': 'RackId', 'versions': '0+', 'nullableVersions': '0+', 'type': 'string'},
                {'name': 'ClientId', 'versions': '0+', 'type': 'string'},
                {'name': 'ClientHost', 'versions': '0+', 'type': 'string'},
                {'name': 'RebalanceTimeoutMs', 'type': 'int32', 'versions': '0+', 'default': -1},
                {'name': 'TopologyEpoch', 'type': 'int32', 'versions': '0+'},
                {'name': 'ProcessId', 'type': 'string', 'versions': '0+'},
                {'name': 'UserEndpoint',
                 'type': 'Endpoint',
                 'versions': '0+',
                 'nullableVersions': '0+',
                 'default': 'null'},
                {'name': 'ClientTags', 'type': '[]KeyValue', 'versions': '0+'}],
     'commonStructs': [{'name': 'Endpoint',
                        'versions': '0+',
                        'fields': [{'name': 'Host', 'type': 'string', 'versions': '0+'},
                                   {'name': 'Port', 'type': 'uint16', 'versions': '0+'}]},
                       {'name': 'KeyValue',
                        'versions': '0+',
                        'fields': [{'name': 'Key', 'type': 'string', 'versions': '0+'},
                                   {'name': 'Value', 'type': 'string', 'versions': '0+'}]}],
     'type': 'data'},
    'StreamsGroupMetadataKey': {'name': 'StreamsGroupMetadataKey',
     'validVersions': '17',
     'flexibleVersions': 'none',
     'fields': [{'name': 'GroupId', 'type': 'string', 'versions': '17'}],
     'type': 'data'},
    'StreamsGroupMetadataValue': {'name': 'StreamsGroupMetadataValue',
     'validVersions': '0',
     'flexibleVersions': '0+',
     'fields': [{'name': 'Epoch', 'versions': '0+', 'type': 'int32'},
                {'name': 'MetadataHash', 'versions': '0+', 'type': 'int64'},
                {'name': 'ValidatedTopologyEpoch',
                 'versions': '0+',
                 'taggedVersions': '0+',
                 'tag': 0,
                 'default': -1,
                 'type': 'int32'},
                {'name': 'LastAssignmentConfigs',
                 'taggedVersions': '0+',
                 'nullableVersions': '0+',
                 'tag': 1,
                 'default': None,
                 'type': '[]LastAssignmentConfig'},
                {'name': 'StoredDescriptionTopologyEpoch',
                 'versions': '0+',
                 'taggedVersions': '0+',
                 'tag': 2,
                 'default': -1,
                 'type': 'int32'},
                {'name': 'FailedDescriptionTopologyEpoch',
                 'versions': '0+',
                 'taggedVersions': '0+',
                 'tag': 3,
                 'default': -1,
                 'type': 'int32'}],
     'commonStructs': [{'name': 'LastAssignmentConfig',
                        'versions': '0+',
                        'fields': [{'name': 'Key', 'type': 'string', 'versions': '0+'},
                                   {'name': 'Value', 'type': 'string', 'versions': '0+'}]}],
     'type': 'data'},
    'StreamsGroupTargetAssignmentMemberKey': {'name': 'StreamsGroupTargetAssignmentMemberKey',
     'validVersions': '21',
     'flexibleVersions': 'none',
     'fields': [{'name': 'GroupId', 'type': 'string', 'versions': '21'},
                {'name': 'MemberId', 'type': 'string', 'versions': '21'}],
     'type': 'data'},
    'StreamsGroupTargetAssignmentMemberValue': {'name': 'StreamsGroupTargetAssignmentMemberValue',
     'validVersions': '0',
     'flexibleVersions': '0+',
     'fields': [{'name': 'ActiveTasks', 'versions': '0+', 'type': '[]TaskIds'},
                {'name': 'StandbyTasks', 'versions': '0+', 'type': '[]TaskIds'},
                {'name': 'WarmupTasks', 'versions': '0+', 'type': '[]TaskIds'}],
     'commonStructs': [{'name': 'TaskIds',
                        'versions': '0+',
                        'fields': [{'name': 'SubtopologyId', 'type': 'string', 'versions': '0+'},
                                   {'name': 'Partitions', 'type': '[]int32', 'versions': '0+'}]}],
     'type': 'data'},
    'StreamsGroupTargetAssignmentMetadataKey': {'name': 'StreamsGroupTargetAssignmentMetadataKey',
     'validVersions': '20',
     'flexibleVersions': 'none',
     'fields': [{'name': 'GroupId', 'type': 'string', 'versions': '20'}],
     'type': 'data'},
    'StreamsGroupTargetAssignmentMetadataValue': {'name': 'StreamsGroupTargetAssignmentMetadataValue',
     'validVersions': '0',
     'flexibleVersions': '0+',
     'fields': [{'name': 'AssignmentEpoch', 'versions': '0+', 'type': 'int32'},
                {'name': 'AssignmentTimestamp',
                 'versions': '0+',
                 'taggedVersions': '0+',
                 'tag': 0,
                 'type': 'int64',
                 'default': 0}],
     'type': 'data'},
    'StreamsGroupTopologyKey': {'name': 'StreamsGroupTopologyKey',
     'validVersions': '23',
     'flexibleVersions': 'none',
     'fields': [{'name': 'GroupId', 'type': 'string', 'versions': '23'}],
     'type': 'data'},
    'StreamsGroupTopologyValue': {'name': 'StreamsGroupTopologyValue',
     'validVersions': '0',
     'flexibleVersions': '0+',
     'fields': [{'name': 'Epoch', 'type': 'int32', 'versions': '0+'},
                {'name': 'Subtopologies',
                 'type': '[]Subtopology',
                 'versions': '0+',
                 'fields': [{'name': 'SubtopologyId', 'type': 'string', 'versions': '0+'},
                            {'name': 'SourceTopics', 'type': '[]string', 'versions': '0+'},
                            {'name': 'SourceTopicRegex', 'type': '[]string', 'versions': '0+'},
                            {'name': 'StateChangelogTopics', 'type': '[]TopicInfo', 'versions': '0+'},
                            {'name': 'RepartitionSinkTopics', 'type': '[]string', 'versions': '0+'},
                            {'name': 'RepartitionSourceTopics',
                             'type': '[]TopicInfo',
                             'versions': '0+'},
                            {'name': 'CopartitionGroups',
                             'type': '[]CopartitionGroup',
                             'versions': '0+',
                             'fields': [{'name': 'SourceTopics', 'type': '[]int16', 'versions': '0+'},
                                        {'name': 'SourceTopicRegex',
                                         'type': '[]int16',
                                         'versions': '0+'},
                                        {'name': 'RepartitionSourceTopics',
                                         'type': '[]int16',
                                         'versions': '0+'}]}]}],
     'commonStructs': [{'name': 'TopicConfig',
                        'versions': '0+',
                        'fields': [{'name': 'key', 'type': 'string', 'versions': '0+'},
                                   {'name': 'value', 'type': 'string', 'versions': '0+'}]},
                       {'name': 'TopicInfo',
                        'versions': '0+',
                        'fields': [{'name': 'Name', 'type': 'string', 'versions': '0+'},
                                   {'name': 'Partitions', 'type': 'int32', 'versions': '0+'},
                                   {'name': 'ReplicationFactor', 'type': 'int16', 'versions': '0+'},
                                   {'name': 'TopicConfigs',
                                    'type': '[]TopicConfig',
                                    'versions': '0+'}]}],
     'type': 'data'},
}, "share_coordinator": {
    'ShareSnapshotKey': {'name': 'ShareSnapshotKey',
     'validVersions': '0',
     'flexibleVersions': 'none',
     'fields': [{'name': 'GroupId', 'type': 'string', 'versions': '0'},
                {'name': 'TopicId', 'type': 'uuid', 'versions': '0'},
                {'name': 'Partition', 'type': 'int32', 'versions': '0'}],
     'type': 'data'},
    'ShareSnapshotValue': {'name': 'ShareSnapshotValue',
     'validVersions': '0',
     'flexibleVersions': '0+',
     'fields': [{'name': 'SnapshotEpoch', 'type': 'int32', 'versions': '0+'},
                {'name': 'StateEpoch', 'type': 'int32', 'versions': '0+'},
                {'name': 'LeaderEpoch', 'type': 'int32', 'versions': '0+'},
                {'name': 'StartOffset', 'type': 'int64', 'versions': '0+'},
                {'name': 'DeliveryCompleteCount',
                 'type': 'int32',
                 'versions': '0+',
                 'taggedVersions': '0+',
                 'tag': 0,
                 'default': '-1'},
                {'name': 'CreateTimestamp', 'type': 'int64', 'versions': '0+'},
                {'name': 'WriteTimestamp', 'type': 'int64', 'versions': '0+'},
                {'name': 'StateBatches',
                 'type': '[]StateBatch',
                 'versions': '0+',
                 'fields': [{'name': 'FirstOffset', 'type': 'int64', 'versions': '0+'},
                            {'name': 'LastOffset', 'type': 'int64', 'versions': '0+'},
                            {'name': 'DeliveryState', 'type': 'int8', 'versions': '0+'},
                            {'name': 'DeliveryCount', 'type': 'int16', 'versions': '0+'}]}],
     'type': 'data'},
    'ShareUpdateKey': {'name': 'ShareUpdateKey',
     'validVersions': '1',
     'flexibleVersions': 'none',
     'fields': [{'name': 'GroupId', 'type': 'string', 'versions': '1'},
                {'name': 'TopicId', 'type': 'uuid', 'versions': '1'},
                {'name': 'Partition', 'type': 'int32', 'versions': '1'}],
     'type': 'data'},
    'ShareUpdateValue': {'name': 'ShareUpdateValue',
     'validVersions': '0',
     'flexibleVersions': '0+',
     'fields': [{'name': 'SnapshotEpoch', 'type': 'int32', 'versions': '0+'},
                {'name': 'LeaderEpoch', 'type': 'int32', 'versions': '0+'},
                {'name': 'StartOffset', 'type': 'int64', 'versions': '0+'},
                {'name': 'DeliveryCompleteCount',
                 'type': 'int32',
                 'versions': '0+',
                 'taggedVersions': '0+',
                 'tag': 0,
                 'default': '-1'},
                {'name': 'StateBatches',
                 'type': '[]StateBatch',
                 'versions': '0+',
                 'fields': [{'name': 'FirstOffset', 'type': 'int64', 'versions': '0+'},
                            {'name': 'LastOffset', 'type': 'int64', 'versions': '0+'},
                            {'name': 'DeliveryState', 'type': 'int8', 'versions': '0+'},
                            {'name': 'DeliveryCount', 'type': 'int16', 'versions': '0+'}]}],
     'type': 'data'},
}}


def added_to_area(module: str) -> frozenset[str]:
    """The names of the schemas :func:`apply` adds to the area ``module``."""
    return frozenset(_ADDED_SCHEMAS.get(module, ()))


def removed_from_area(module: str) -> frozenset[str]:
    """The names of the schemas :func:`apply` removes from the area ``module``."""
    return frozenset(_REMOVED_SCHEMAS.get(module, ()))


def apply(schemas: dict[str, dict[str, Any]]) -> None:
    """Add the newer schemas and fields (widening ``validVersions``) to ``schemas`` and drop the
    schemas Kafka removed, in place."""
    for names in _REMOVED_SCHEMAS.values():
        for name in names:
            schemas.pop(name, None)
    for added in _ADDED_SCHEMAS.values():
        for name, doc in added.items():
            schemas.setdefault(name, doc)
    changes = [_Field(name, valid, field) for name, (valid, field) in _ADDED_FIELDS.items()]
    for change in (*changes, *_GROUP_COORDINATOR_FIELDS):
        spec = schemas[change.schema]
        if change.valid is not None:
            spec["validVersions"] = change.valid
        fields = spec["fields"] if change.struct is None else \
            next(s for s in spec["commonStructs"] if s["name"] == change.struct)["fields"]
        if all(f["name"] != change.field["name"] for f in fields):
            fields.insert(len(fields) if change.position is None else change.position, dict(change.field))
