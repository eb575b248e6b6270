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
  transaction index is empty.") -- ``message/*.json`` of the 4.0.0 and 4.4.0 ``kafka-storage`` jars.

Which release brought each change: :mod:`kafka_format.internal.schemas.releases`.

:func:`apply` is idempotent; ``protocol`` applies it once at import.
"""

from __future__ import annotations

from typing import Any

__all__ = ["added_to_area", "apply"]

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


#: the area (a module of ``_generate.AREAS``) the added schemas belong to
_ADDED_SCHEMAS_AREA = "metadata"
_ADDED_SCHEMAS: dict[str, dict[str, Any]] = {
    "ClearElrRecord": {"apiKey": 28, "type": "metadata", "name": "ClearElrRecord", "validVersions": "0",
                       "flexibleVersions": "0+",
                       "fields": [{"name": "TopicName", "type": "string", "versions": "0+"}]},
    "UnregisterControllerRecord": {"apiKey": 29, "type": "metadata", "name": "UnregisterControllerRecord",
                                   "validVersions": "0", "flexibleVersions": "0+",
                                   "fields": [{"name": "ControllerId", "type": "int32", "versions": "0+"}]},
}


def added_to_area(module: str) -> frozenset[str]:
    """The names of the schemas :func:`apply` adds to the area ``module`` (none but KRaft's yet)."""
    return frozenset(_ADDED_SCHEMAS) if module == _ADDED_SCHEMAS_AREA else frozenset()


def apply(schemas: dict[str, dict[str, Any]]) -> None:
    """Add the newer schemas and fields (widening ``validVersions``) to ``schemas`` in place."""
    for name, doc in _ADDED_SCHEMAS.items():
        schemas.setdefault(name, doc)
    for name, (valid, field) in _ADDED_FIELDS.items():
        spec = schemas[name]
        spec["validVersions"] = valid
        if all(f["name"] != field["name"] for f in spec["fields"]):
            spec["fields"].append(dict(field))
