"""Broker log dirs with consumer groups for the groups tests.

``write_groups_cluster(path)`` writes one log dir: topic ``orders`` (2 partitions, offsets 0..99
each, 10 records per batch, segments of about 4 batches, one record per second from ``FIRST_TS``)
and ``__consumer_offsets`` with ``COORDINATOR_PARTITIONS`` partitions, each group's records in its
own partition (``abs(hash(group)) % partitions``), as a broker's coordinator writes them.  The
groups (:data:`GROUPS`) are built from Kafka's record layouts by the project's encoders; what each
test expects is written by hand from Kafka's rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafka_format.common.kafka_uuid import uuid_to_string
from kafka_format.internal.consumer_offsets import (
    encode_consumer_offsets_key,
    encode_consumer_offsets_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
    group_partition,
)
from kafka_format.writer import LogDirWriter, Record, build_v2_batch
from kafka_format.writer.batches import CONTROL_ABORT, CONTROL_COMMIT, build_control_batch

FIRST_TS = 1_700_000_000_000
DAY_MS = 86_400_000
COORDINATOR_PARTITIONS = 3
TOPIC = "orders"
ORDERS_ID_BYTES = bytes(range(1, 17))
ORDERS_ID = uuid_to_string(ORDERS_ID_BYTES)
PER_BATCH = 10
RECORDS = 100
SEGMENT_BYTES = 4 * 400           # about four 10-record batches per segment


def ts_of(offset: int) -> int:
    return FIRST_TS + offset * 1000


Rec = tuple[bytes, bytes | None]          # (key, value) of a __consumer_offsets record


def commit(group: str, partition: int, offset: int, at: int, *, topic: str = TOPIC, metadata: str = "",
           version: int = 3, leader_epoch: int = -1, expire: int = -1) -> Rec:
    return (encode_offset_commit_key(group, topic, partition),
            encode_offset_commit_value(offset, metadata, at, version=version, leader_epoch=leader_epoch,
                                       expire_timestamp=expire))


def commit_tombstone(group: str, partition: int, *, topic: str = TOPIC) -> Rec:
    return (encode_offset_commit_key(group, topic, partition), None)


def classic_group(group: str, *, generation: int, members: Sequence[dict[str, Any]], protocol: str | None = "range",
                  protocol_type: str = "consumer", state_ts: int = -1) -> Rec:
    """``GroupMetadataValue`` v3; each member ``{"id", "client", "host", "topics", "assigned": {topic: [p]}}``."""
    value = {
        "protocolType": protocol_type, "generation": generation, "protocol": protocol,
        "leader": members[0]["id"] if members else None, "currentStateTimestamp": state_ts,
        "members": [{
            "memberId": m["id"], "groupInstanceId": None, "clientId": m["client"], "clientHost": m["host"],
            "rebalanceTimeout": 300000, "sessionTimeout": 45000,
            "subscription": {"topics": list(m["topics"]), "userData": None},
            "assignment": {"assignedPartitions": [{"topic": t, "partitions": ps}
                                                  for t, ps in m["assigned"].items()], "userData": None},
        } for m in members]}
    return encode_group_metadata_key(group), encode_group_metadata_value(value, version=3)


def consumer_record(record_type: int, key: dict[str, Any], value: dict[str, Any] | None) -> Rec:
    """A modern group record (consumer protocol 3..8 and 16, share 10..15, streams 17..23), value v0."""
    return (encode_consumer_offsets_key(record_type, key),
            None if value is None else encode_consumer_offsets_value(record_type, value, 0))


def kip848_group(group: str, member: str, *, epoch: int, partitions: Sequence[int], topics: Sequence[str]) -> list[Rec]:
    """The records GroupMetadataManager writes for a consumer group whose one member is reconciled."""
    assigned = [{"topicId": ORDERS_ID, "partitions": list(partitions)}]
    return [
        consumer_record(5, {"groupId": group, "memberId": member},
                        {"instanceId": None, "rackId": None, "clientId": "c848", "clientHost": "/10.0.0.9",
                         "subscribedTopicNames": list(topics), "subscribedTopicRegex": None,
                         "rebalanceTimeoutMs": 300000, "serverAssignor": "uniform", "classicMemberMetadata": None}),
        consumer_record(3, {"groupId": group}, {"epoch": epoch}),
        consumer_record(7, {"groupId": group, "memberId": member}, {"topicPartitions": assigned}),
        consumer_record(6, {"groupId": group}, {"assignmentEpoch": epoch}),
        consumer_record(8, {"groupId": group, "memberId": member},
                        {"memberEpoch": epoch, "previousMemberEpoch": epoch - 1, "state": 0,
                         "assignedPartitions": assigned, "partitionsPendingRevocation": []}),
    ]


def streams_group(group: str, member: str, *, epoch: int, source_topics: Sequence[str], validated: int = 1,
                  member_state: int = 1) -> list[Rec]:
    """The records a 4.4 coordinator writes for a streams group (KIP-1071) whose one member is
    reconciled at ``epoch``, topology epoch 1 (``validated``: the topology epoch the group's
    metadata names as validated; ``member_state`` 1 is streams' STABLE)."""
    tasks = [{"subtopologyId": "0", "partitions": [0]}]
    return [
        consumer_record(23, {"groupId": group}, {"epoch": 1, "subtopologies": [{
            "subtopologyId": "0", "sourceTopics": list(source_topics), "sourceTopicRegex": [],
            "stateChangelogTopics": [], "repartitionSinkTopics": [],
            "repartitionSourceTopics": [{"name": f"{group}-repartition", "partitions": 1, "replicationFactor": 1,
                                         "topicConfigs": []}],
            "copartitionGroups": []}]}),
        consumer_record(19, {"groupId": group, "memberId": member},
                        {"instanceId": None, "rackId": None, "clientId": "streams-c", "clientHost": "/10.0.0.7",
                         "rebalanceTimeoutMs": 300000, "topologyEpoch": 1, "processId": "p1", "userEndpoint": None,
                         "clientTags": []}),
        consumer_record(17, {"groupId": group}, {"epoch": epoch, "metadataHash": 0,
                                                 "validatedTopologyEpoch": validated}),
        consumer_record(21, {"groupId": group, "memberId": member},
                        {"activeTasks": tasks, "standbyTasks": [], "warmupTasks": []}),
        consumer_record(20, {"groupId": group}, {"assignmentEpoch": epoch}),
        consumer_record(22, {"groupId": group, "memberId": member},
                        {"memberEpoch": epoch, "previousMemberEpoch": epoch - 1, "state": member_state,
                         "activeTasks": tasks, "standbyTasks": [], "warmupTasks": [],
                         "activeTasksPendingRevocation": [], "standbyTasksPendingRevocation": [],
                         "warmupTasksPendingRevocation": []}),
    ]


class CoordinatorLog:
    """The appends of one ``__consumer_offsets`` partition, in order."""

    def __init__(self) -> None:
        self.appends: list[tuple[str, Any]] = []

    def records(self, recs: Sequence[Rec], at: int) -> None:
        self.appends.append(("records", (list(recs), at)))

    def txn(self, recs: Sequence[Rec], at: int, producer_id: int) -> None:
        self.appends.append(("txn", (list(recs), at, producer_id)))

    def marker(self, producer_id: int, commit: bool, at: int) -> None:
        self.appends.append(("marker", (producer_id, commit, at)))


def write_coordinator(writer: Any, log: CoordinatorLog) -> None:
    offset = 0
    for kind, args in log.appends:
        if kind == "marker":
            pid, ok, at = args
            writer.append(build_control_batch(CONTROL_COMMIT if ok else CONTROL_ABORT, base_offset=offset,
                                              timestamp=at, producer_id=pid, producer_epoch=0,
                                              coordinator_epoch=0))
            offset += 1
            continue
        recs, at = args[0], args[1]
        pid = args[2] if kind == "txn" else -1
        batch = build_v2_batch([Record(key=k, value=v, timestamp=at) for k, v in recs], base_offset=offset,
                               producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                               base_sequence=0 if pid >= 0 else -1, transactional=kind == "txn")
        writer.append(batch)
        offset += len(recs)


def share_group(group: str, *, epoch: int, initialized: Sequence[int]) -> list[Rec]:
    """The ``__consumer_offsets`` records of a share group (KIP-932, Kafka 4.4) with no members left
    whose share-partitions ``orders-<initialized>`` are initialized."""
    return [
        consumer_record(11, {"groupId": group}, {"epoch": epoch, "metadataHash": 0}),
        consumer_record(12, {"groupId": group}, {"assignmentEpoch": epoch, "assignmentTimestamp": 0}),
        consumer_record(15, {"groupId": group}, {
            "initializingTopics": [], "deletingTopics": [],
            "initializedTopics": [{"topicId": ORDERS_ID, "topicName": TOPIC, "partitions": list(initialized)}]}),
    ]


def write_cluster(path: Path, logs: dict[str, CoordinatorLog], *, now_ms: int, records: int = RECORDS,
                  partitions: int = 2, high_watermarks: dict[int, int] | None = None,
                  share_state: Sequence[Rec] = ()) -> Path:
    """One log dir: ``orders`` and the coordinator logs of the groups named (``logs``: group -> log;
    every group's log goes to its own partition, in the order given); ``share_state``: the records of
    ``__share_group_state-0``, one batch."""
    d = LogDirWriter(path, node_id=1, cluster_id="groups-test-cluster")
    for p in range(partitions):
        w = d.partition(TOPIC, p, topic_id=ORDERS_ID_BYTES, segment_bytes=SEGMENT_BYTES)
        for base in range(0, records, PER_BATCH):
            w.append(build_v2_batch([Record(key=b"k%03d" % o, value=b"value-%06d" % o, timestamp=ts_of(o))
                                     for o in range(base, base + PER_BATCH)], base_offset=base,
                                    partition_leader_epoch=0))
        w.close()
    merged: dict[int, CoordinatorLog] = {}
    for group, log in logs.items():
        merged.setdefault(group_partition(group, COORDINATOR_PARTITIONS), CoordinatorLog()).appends.extend(log.appends)
    for p in range(COORDINATOR_PARTITIONS):
        w = d.partition("__consumer_offsets", p, topic_id=bytes([0xC0 + p]) * 16)
        if p in merged:
            write_coordinator(w, merged[p])
        w.close()
        if high_watermarks and p in high_watermarks:
            d.state("__consumer_offsets", p).high_watermark = high_watermarks[p]
    if share_state:
        w = d.partition("__share_group_state", 0, topic_id=bytes([0xD0]) * 16)
        w.append(build_v2_batch([Record(key=k, value=v, timestamp=FIRST_TS) for k, v in share_state], base_offset=0))
        w.close()
    d.close(written_at_ms=now_ms)
    return path
