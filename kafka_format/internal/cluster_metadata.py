"""KRaft ``__cluster_metadata`` records and a replay into a metadata view.

Record values are framed by ``AbstractApiMessageSerde`` (``metadata/.../MetadataRecordSerde.java``;
:mod:`kafka_format.internal.api_message`: frame version 1, api key, version, the record); metadata
records have no key.  The api keys are those of the ``metadata`` area's schemas
(:func:`~kafka_format.internal.schemas.releases.area_schemas`): tiered storage's records reuse 0 to 3.

:func:`decode_metadata_record` returns DumpLogSegments' ``--cluster-metadata-decoder``
shape ``{"type": "TOPIC_RECORD", "version": 0, "data": {...}}`` (the type is the
``MetadataRecordType`` enum name).  An api key this library has no schema for
is kept generically: ``{"type": "UNKNOWN", "apiKey": k, "version": v, "data": None,
"raw": <message bytes>}``.

Pre-release layouts: Kafka trunk builds of November 2023 wrote ``PartitionRecord`` /
``PartitionChangeRecord`` v1 with the KIP-966 ELR tagged fields and v2 with
``Directories``; 3.7.0 swapped the two (KAFKA-15922).  Released Kafka cannot read
those records; when the released schema fails, the variant schema (``Name@trunk-2023-11``)
is tried and the result carries ``"_schemaVariant": "trunk-2023-11"`` (not in JSON).

:func:`replay_cluster_metadata` folds records the way ``MetadataDelta`` does
(``TopicsDelta``, ``PartitionRegistration.merge``, ``ConfigurationsDelta``) into
a :class:`ClusterMetadataView`: topics (name ↔ id), partitions (replicas, isr,
leader, leader epoch, partition epoch) and configs per resource.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_format.common.errors import InternalTopicFormatError
from kafka_format.internal.api_message import (
    FRAME_VERSION,
    ApiMessageSerdeError,
    read_frame_header,
    read_framed,
    write_framed,
)
from kafka_format.internal.protocol import (
    MessageSpec,
    compile_spec,
    message_spec,
    read_message,
    to_json,
)
from kafka_format.internal.schemas import SCHEMAS
from kafka_format.internal.schemas.releases import area_schemas, metadata_schemas

__all__ = [
    "FRAME_VERSION",
    "METADATA_RECORD_TYPES",
    "RESOURCE_TYPE_BROKER",
    "RESOURCE_TYPE_TOPIC",
    "ClusterMetadataView",
    "PartitionState",
    "decode_metadata_record",
    "encode_config_record",
    "encode_metadata_record",
    "encode_partition_record",
    "encode_topic_record",
    "format_metadata_record",
    "load_cluster_metadata",
    "record_type_name",
    "replay_cluster_metadata",
    "replay_record_batches",
]

NO_LEADER_CHANGE = -2  # PartitionChangeRecord.Leader default
RESOURCE_TYPE_TOPIC = 2  # ConfigResource.Type.TOPIC
RESOURCE_TYPE_BROKER = 4  # ConfigResource.Type.BROKER
UNKNOWN_TYPE = "UNKNOWN"

#: api key → schema name, for every metadata record schema shipped
METADATA_RECORD_TYPES: dict[int, str] = {
    int(doc["apiKey"]): name for name, doc in area_schemas("metadata").items()
    if doc.get("type") == "metadata" and "apiKey" in doc and "@" not in name
}
#: schema name → pre-release variants ("Name@variant") tried when the released schema fails
SCHEMA_VARIANTS: dict[str, list[str]] = {}
for _name in SCHEMAS:
    if "@" in _name:
        SCHEMA_VARIANTS.setdefault(_name.split("@", 1)[0], []).append(_name)
VARIANT_KEY = "_schemaVariant"


@functools.cache
def record_type_name(schema_name: str) -> str:
    """``MetadataRecordType`` enum name: ``MessageGenerator.toSnakeCase(name).toUpperCase()``."""
    out = []
    prev_upper = True
    for ch in schema_name:
        if ch.isupper():
            if not prev_upper:
                out.append("_")
            out.append(ch.lower())
            prev_upper = True
        else:
            out.append(ch)
            prev_upper = False
    return "".join(out).upper()


def decode_metadata_record(value: bytes | bytearray | memoryview) -> dict[str, Any]:
    """Value bytes of a metadata record → ``{"type", "version", "data"}`` (see module doc)."""
    r, api_key, version, _ = read_frame_header(value, "metadata record")
    name = METADATA_RECORD_TYPES.get(api_key)
    if name is None:
        return {"type": UNKNOWN_TYPE, "apiKey": api_key, "version": version, "data": None,
                "raw": bytes(r.data[r.pos:])}
    out: dict[str, Any] = {"type": record_type_name(name), "version": version}
    try:
        out["data"], _ = read_message(name, r.data, version, offset=r.pos, require_end=True)
    except InternalTopicFormatError:
        for variant in SCHEMA_VARIANTS.get(name, ()):
            try:
                out["data"], _ = read_message(variant, r.data, version, offset=r.pos, require_end=True)
            except InternalTopicFormatError:
                continue
            out[VARIANT_KEY] = variant.split("@", 1)[1]
            return out
        raise
    return out


def format_metadata_record(value: bytes | bytearray | memoryview | None, offset: int,
                           release: tuple[int, int] | None = None) -> str:
    """The payload text of ``kafka-dump-log --cluster-metadata-decoder`` (no key is printed).

    The decoded JSON, or ``"Error at <offset>, skipping. <message>"`` as
    ``ClusterMetadataLogMessageParser`` prints for a record its ``MetadataRecordSerde`` cannot
    read, with the serde's messages (``AbstractApiMessageSerde.read``, 3.9.1 and 4.4.0): a record
    type the release does not know, bytes its classes cannot read (pre-release layouts too),
    trailing bytes.  A version newer than the release knows is read as its generated class reads
    it: the fields the release knows, unknown tagged fields skipped, but a nested struct (a broker
    registration's end points) refuses it.

    ``release`` (major, minor): read as that Kafka release's tool does, with its own schemas
    (:func:`kafka_format.internal.schemas.releases.metadata_schemas`); None: the newest.
    """
    if value is None:
        return f"Error at {offset}, skipping. metadata record without a value"
    try:
        return to_json(_read_as_kafka(value, release))
    except ApiMessageSerdeError as e:
        return f"Error at {offset}, skipping. {e.kafka_message}"


def _read_as_kafka(value: bytes | bytearray | memoryview, release: tuple[int, int] | None) -> dict[str, Any]:
    """``MetadataRecordSerde.read`` of one record value (see :func:`format_metadata_record`)."""
    rec = read_framed(value, "metadata record", functools.partial(_release_lookup, release=release))
    return {"type": record_type_name(rec.name), "version": rec.version, "data": rec.data}


def _release_lookup(api_key: int, release: tuple[int, int] | None) -> tuple[str, MessageSpec] | None:
    name, spec = _release_record(api_key, release)
    return None if spec is None else (name, spec)


@functools.cache
def _release_record(api_key: int, release: tuple[int, int] | None) -> tuple[str, MessageSpec | None]:
    """(schema name, its compiled schema in ``release``; None when the release has no such record)."""
    if release is None:
        name = METADATA_RECORD_TYPES.get(api_key)
        return (name, message_spec(name)) if name is not None else ("", None)
    for name, doc in metadata_schemas(release).items():
        if "@" not in name and int(doc.get("apiKey", -1)) == api_key:
            return name, compile_spec(doc)
    return "", None


def encode_metadata_record(schema_name: str, data: dict[str, Any], version: int = 0) -> bytes:
    """Frame + record bytes (``AbstractApiMessageSerde.write``)."""
    return write_framed(schema_name, data, version, int(SCHEMAS[schema_name]["apiKey"]))


def encode_topic_record(name: str, topic_id: str) -> bytes:
    """``TopicRecord`` v0 (``topic_id`` in Kafka's base64 ``Uuid`` form)."""
    return encode_metadata_record("TopicRecord", {"name": name, "topicId": topic_id}, 0)


def encode_partition_record(topic_id: str, partition: int, replicas: list[int], isr: list[int],
                            leader: int, leader_epoch: int = 0, partition_epoch: int = 0, *,
                            version: int = 0, directories: list[str] | None = None) -> bytes:
    """``PartitionRecord`` v0..v2 (v1+ carries one directory id per replica)."""
    data: dict[str, Any] = {
        "partitionId": partition, "topicId": topic_id, "replicas": list(replicas), "isr": list(isr),
        "removingReplicas": [], "addingReplicas": [], "leader": leader, "leaderEpoch": leader_epoch,
        "partitionEpoch": partition_epoch,
    }
    if version >= 1:
        data["directories"] = list(directories) if directories is not None else [
            "AAAAAAAAAAAAAAAAAAAAAA"] * len(replicas)
    return encode_metadata_record("PartitionRecord", data, version)


def encode_config_record(resource_type: int, resource_name: str, name: str, value: str | None) -> bytes:
    """``ConfigRecord`` v0 (``value`` None deletes the config)."""
    return encode_metadata_record("ConfigRecord", {
        "resourceType": resource_type, "resourceName": resource_name, "name": name, "value": value}, 0)


# --------------------------------------------------------------------------- replay


@dataclass(slots=True)
class PartitionState:
    """A partition's registration (``PartitionRegistration``)."""

    topic_id: str
    partition: int
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    removing_replicas: list[int] = field(default_factory=list)
    adding_replicas: list[int] = field(default_factory=list)


@dataclass(slots=True)
class ClusterMetadataView:
    """Result of :func:`replay_cluster_metadata`."""

    topic_ids: dict[str, str] = field(default_factory=dict)  # name → topic id
    topic_names: dict[str, str] = field(default_factory=dict)  # topic id → name
    partitions: dict[tuple[str, int], PartitionState] = field(default_factory=dict)  # (topic id, p)
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)  # (resource type, name)
    records: int = 0
    unknown_records: int = 0
    last_offset: int = -1  # highest log offset replayed (replay_record_batches)
    orphan_changes: int = 0  # PartitionChangeRecords for partitions not seen (log read from the middle)

    def topic_configs(self, topic: str) -> dict[str, str]:
        """Topic-level config overrides of ``topic`` (resource type 2)."""
        return dict(self.configs.get((RESOURCE_TYPE_TOPIC, topic), {}))

    def broker_configs(self, broker: int | str = "") -> dict[str, str]:
        """Broker config overrides (resource name ``""`` = cluster-wide default)."""
        return dict(self.configs.get((RESOURCE_TYPE_BROKER, str(broker)), {}))

    def partitions_of(self, topic: str) -> dict[int, PartitionState]:
        """Partition registrations of ``topic`` by partition id."""
        tid = self.topic_ids.get(topic)
        return {p: s for (t, p), s in self.partitions.items() if t == tid}


def replay_cluster_metadata(
        records: Iterable[bytes | bytearray | memoryview | dict[str, Any]],
        view: ClusterMetadataView | None = None) -> ClusterMetadataView:
    """Fold metadata records (value bytes or decoded dicts, in log order) into a view.

    Start from a snapshot by replaying its records first (pass the same ``view``
    on to continue).  Control records do not belong here (callers skip control batches).
    A PartitionChangeRecord for an unknown partition (a log whose older segments
    were deleted) is counted in ``orphan_changes`` and skipped, where the broker
    would fail.  Malformed bytes raise :class:`InternalTopicFormatError`.
    """
    view = view if view is not None else ClusterMetadataView()
    for rec in records:
        key = None if isinstance(rec, dict) else _api_key(rec)
        if key is not None and key not in _FOLDED_API_KEYS:
            view.records += 1   # a type the view does not fold: its (maybe newer) version is not read
            continue
        d = rec if isinstance(rec, dict) else decode_metadata_record(rec)
        view.records += 1
        kind = d["type"]
        data = d.get("data") or {}
        if kind == "TOPIC_RECORD":
            view.topic_ids[data["name"]] = data["topicId"]
            view.topic_names[data["topicId"]] = data["name"]
        elif kind == "PARTITION_RECORD":
            view.partitions[(data["topicId"], data["partitionId"])] = PartitionState(
                data["topicId"], data["partitionId"], list(data["replicas"]), list(data["isr"]),
                data["leader"], data["leaderEpoch"], data["partitionEpoch"],
                list(data["removingReplicas"]), list(data["addingReplicas"]))
        elif kind == "PARTITION_CHANGE_RECORD":
            _merge_partition_change(view, data)
        elif kind == "REMOVE_TOPIC_RECORD":
            tid = data["topicId"]
            name = view.topic_names.pop(tid, None)
            if name is not None and view.topic_ids.get(name) == tid:
                del view.topic_ids[name]
                view.configs.pop((RESOURCE_TYPE_TOPIC, name), None)
            for gone in [k for k in view.partitions if k[0] == tid]:
                del view.partitions[gone]
        elif kind == "CONFIG_RECORD":
            res = (data["resourceType"], data["resourceName"])
            if data["value"] is None:
                cfg = view.configs.get(res)
                if cfg is not None:
                    cfg.pop(data["name"], None)
                    if not cfg:
                        del view.configs[res]
            else:
                view.configs.setdefault(res, {})[data["name"]] = data["value"]
        elif kind == UNKNOWN_TYPE:
            view.unknown_records += 1
    return view


def _merge_partition_change(view: ClusterMetadataView, data: dict[str, Any]) -> None:
    """``PartitionRegistration.merge``: absent (null) fields keep their value."""
    key = (data["topicId"], data["partitionId"])
    cur = view.partitions.get(key)
    if cur is None:  # Kafka fails here; a partial log (segments deleted) legitimately lacks it
        view.orphan_changes += 1
        return
    if data.get("replicas") is not None:
        cur.replicas = list(data["replicas"])
    if data.get("isr") is not None:
        cur.isr = list(data["isr"])
    if data.get("removingReplicas") is not None:
        cur.removing_replicas = list(data["removingReplicas"])
    if data.get("addingReplicas") is not None:
        cur.adding_replicas = list(data["addingReplicas"])
    leader = data.get("leader", NO_LEADER_CHANGE)
    if leader != NO_LEADER_CHANGE:
        cur.leader = leader
        cur.leader_epoch += 1
    cur.partition_epoch += 1


#: TopicRecord, PartitionRecord, ConfigRecord, PartitionChangeRecord, RemoveTopicRecord: what the
#: view folds.  Other types are skipped unread, so a newer broker's version of, say,
#: RegisterBrokerRecord (v4 in Kafka 4.4) does not stop a replay that only needs topics and configs.
_FOLDED_API_KEYS = frozenset({2, 3, 4, 5, 9})


def _api_key(value: bytes | bytearray | memoryview) -> int | None:
    """The record type (apiKey) of a metadata record value (after its frame version), or None
    when the header is unreadable (the full decode then reports it)."""
    try:
        return read_frame_header(value, "metadata record")[1]
    except InternalTopicFormatError:
        return None


def replay_record_batches(batches: Iterable[Any], view: ClusterMetadataView | None = None, *,
                          min_offset: int = 0) -> ClusterMetadataView:
    """Fold record batches of a metadata log (Arrow ``RECORD_SCHEMA``: ``value``, ``isControl``,
    ``offset`` columns, as :func:`kafka_format.records.file_records.decode_file` yields) into a view.

    Control records are skipped, and so are records below ``min_offset``.
    """
    view = view if view is not None else ClusterMetadataView()
    for batch in batches:
        offsets = batch.column("offset").to_pylist()
        controls = batch.column("isControl").to_pylist()
        values = batch.column("value").to_pylist()
        for offset, control, value in zip(offsets, controls, values):
            if control or offset < min_offset:
                continue
            if value is None:
                raise InternalTopicFormatError("metadata record without a value", expected="a value",
                                               found="null")
            replay_cluster_metadata((value,), view)
            view.last_offset = max(view.last_offset, offset)
    return view


def load_cluster_metadata(partition_dir: str | os.PathLike[str]) -> ClusterMetadataView:
    """Replay a local ``__cluster_metadata-0`` directory as the controller would on start-up.

    The latest snapshot ``<endOffset>-<epoch>.checkpoint`` (records below
    ``endOffset``) is replayed first, then the ``.log`` records at or after its end
    offset, segment by segment.  Without a snapshot the log is replayed from its
    first segment (a log whose early segments are gone gives a partial view; see
    ``orphan_changes``).
    """
    from kafka_format.records.file_records import decode_file  # the record decoder; imported late (layering)

    directory = Path(partition_dir)
    view = ClusterMetadataView()
    snapshots = sorted(directory.glob("*.checkpoint"), key=lambda p: _snapshot_end(p.name))
    start = 0
    if snapshots:
        latest = snapshots[-1]
        start = _snapshot_end(latest.name)
        replay_record_batches(decode_file(latest), view)
        view.last_offset = start - 1  # snapshot batches carry their own offsets
    for log in sorted(directory.glob("*.log"), key=lambda p: int(p.stem)):
        replay_record_batches(decode_file(log), view, min_offset=start)
    return view


def _snapshot_end(name: str) -> int:
    """End offset of a snapshot file ``<20-digit offset>-<10-digit epoch>.checkpoint``."""
    head = name.split("-", 1)[0]
    if not head.isdigit():
        raise InternalTopicFormatError("not a KRaft snapshot file name",
                                       expected="<offset>-<epoch>.checkpoint", found=name)
    return int(head)
