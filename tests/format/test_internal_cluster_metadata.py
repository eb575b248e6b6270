"""KRaft __cluster_metadata decoding against real broker log dirs.

Records come from kafka-python's ``MemoryRecords`` over the real segments and
snapshots (Kafka 3.4 .. 3.9 and a 2023/24 trunk build).  Independent facts from
the same log dirs: every partition dir's ``partition.metadata`` topic id equals
the replayed TopicRecord id; the broker's ``node.id`` (meta.properties) is a
replica of every partition it hosts; a single-node cluster's partitions are
exactly its partition dirs; the last LeaderChange agrees with ``quorum-state``;
snapshots are framed by SnapshotHeader/SnapshotFooter (KIP-630).
"""

from __future__ import annotations

import collections
import functools
import json
import os
import struct
import warnings
from pathlib import Path

import pytest

with warnings.catch_warnings():  # kafka-python's package import emits DeprecationWarnings
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record import MemoryRecords

from kafka_format.common.errors import InternalTopicFormatError
from kafka_format.internal import cluster_metadata as cm
from kafka_format.internal import kraft_control as kc
from kafka_format.internal.protocol import message_spec, to_json, write_message, write_uvarint

REALDATA = Path(os.environ.get("KLA_SHARED_DIR", Path(__file__).resolve().parents[3] / "shared")) / "realdata"
if REALDATA.is_dir():
    METADATA_FILES = sorted(
        p for p in [*REALDATA.glob("**/__cluster_metadata-0/*.log"),
                    *REALDATA.glob("**/__cluster_metadata-0/*.checkpoint"),
                    *REALDATA.glob("**/bootstrap.checkpoint")] if p.stat().st_size > 0)
    METADATA_DIRS = sorted(REALDATA.glob("**/__cluster_metadata-0"))
else:
    METADATA_FILES, METADATA_DIRS = [], []
LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER = 2, 3, 4
CONTROL_KEY = struct.Struct(">hh")  # ControlRecordType key: version, type


def ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(REALDATA)) for p in paths]


KpBatch = collections.namedtuple("KpBatch", "is_control_batch leader_epoch")
KpRecord = collections.namedtuple("KpRecord", "offset key value")


@functools.cache
def kp_records(path: Path) -> list[tuple[KpBatch, KpRecord]]:
    """(batch, record) pairs decoded by kafka-python, cached: several tests read the same logs."""
    out = []
    mr = MemoryRecords(path.read_bytes())
    while (batch := mr.next_batch()) is not None:
        info = KpBatch(batch.is_control_batch, batch.leader_epoch)
        for rec in batch:
            out.append((info, KpRecord(rec.offset, rec.key, rec.value)))
    return out


def control_type(rec) -> int:  # type: ignore[no-untyped-def]
    return CONTROL_KEY.unpack(bytes(rec.key[:CONTROL_KEY.size]))[1]


SCHEMA_BY_TYPE = {cm.record_type_name(n): n for n in cm.METADATA_RECORD_TYPES.values()}


def reencode(decoded: dict) -> bytes:
    name = SCHEMA_BY_TYPE[decoded["type"]]
    if cm.VARIANT_KEY in decoded:
        name = f"{name}@{decoded[cm.VARIANT_KEY]}"
    api_key = message_spec(name).api_key
    assert api_key is not None
    return (write_uvarint(cm.FRAME_VERSION) + write_uvarint(api_key) + write_uvarint(decoded["version"])
            + write_message(name, decoded["data"], decoded["version"]))


@pytest.mark.parametrize("path", METADATA_FILES, ids=ids(METADATA_FILES))
def test_every_record_decodes_and_reencodes_exactly(realdata: Path, path: Path) -> None:
    n = 0
    for batch, rec in kp_records(path):
        n += 1
        if batch.is_control_batch:
            t = control_type(rec)
            assert t in kc.CONTROL_VALUE_SCHEMAS
            data = kc.decode_kraft_control_value(t, rec.value)
            assert data["version"] == 0
            assert kc.encode_kraft_control_value(t, data) == rec.value
            continue
        assert rec.key is None  # metadata records have no key
        d = cm.decode_metadata_record(rec.value)
        assert d["type"] != "UNKNOWN"
        valid = message_spec(SCHEMA_BY_TYPE[d["type"]]).valid
        assert valid is not None and valid[0] <= d["version"] <= valid[1]
        assert json.loads(to_json(d))["type"] == d["type"]
        assert reencode(d) == rec.value
    assert n > 0


def _node_id(log_dir: Path) -> int | None:
    mp = log_dir / "meta.properties"
    if not mp.is_file():
        return None
    for line in mp.read_text().splitlines():
        if line.startswith(("node.id=", "broker.id=")):
            return int(line.split("=", 1)[1])
    return None


@functools.cache
def _replay(md: Path) -> tuple[cm.ClusterMetadataView, list[tuple[int, int]]]:
    """Replay a metadata log from offset 0, or the latest snapshot when the log is gone."""
    logs = sorted(md.glob("*.log"))
    sources = logs if logs and int(logs[0].stem) == 0 else sorted(md.glob("*.checkpoint"))[-1:]
    values, leader_changes = [], []
    for f in sources:
        for batch, rec in kp_records(f):
            if batch.is_control_batch:
                if control_type(rec) == LEADER_CHANGE:
                    lc = kc.decode_leader_change(rec.value)
                    leader_changes.append((lc["leaderId"], batch.leader_epoch))
                continue
            values.append(rec.value)
    return cm.replay_cluster_metadata(values), leader_changes


def _partition_dirs(log_dir: Path) -> dict[tuple[str, int], str]:
    out = {}
    for pm in log_dir.glob("*/partition.metadata"):
        name, part = pm.parent.name.rsplit("-", 1)
        if name == "__cluster_metadata":
            continue
        fields = dict(line.split(": ", 1) for line in pm.read_text().splitlines() if ": " in line)
        out[(name, int(part))] = fields["topic_id"]
    return out


@pytest.mark.parametrize("md", METADATA_DIRS, ids=ids(METADATA_DIRS))
def test_replay_matches_the_log_dir(realdata: Path, md: Path) -> None:
    log_dir = md.parent
    view, leader_changes = _replay(md)
    node = _node_id(log_dir)
    dirs = _partition_dirs(log_dir)
    for (name, part), topic_id in dirs.items():
        if name not in view.topic_ids:
            assert view.records == 0, f"{name} hosted here but never created in a non-empty log"
            continue
        assert view.topic_ids[name] == topic_id
        assert view.topic_names[topic_id] == name
        state = view.partitions[(topic_id, part)]
        if node is not None:
            assert node in state.replicas
        assert state.leader in state.replicas or state.leader == -1
        assert set(state.isr) <= set(state.replicas)
    if node is not None and view.partitions and all(
            node in s.replicas and s.replicas == [node] for s in view.partitions.values()):
        # single-node cluster: every partition dir is a replayed partition (the copies in
        # realdata left some partition dirs out, so not the other way round)
        hosted = {(view.topic_names[t], p) for t, p in view.partitions}
        assert set(dirs) <= hosted and len(dirs) >= len(hosted) // 2
    if ("__consumer_offsets", 0) in dirs and view.records:
        # GroupCoordinator creates its topic compacted (offsets.topic.* broker defaults)
        assert view.topic_configs("__consumer_offsets").get("cleanup.policy") == "compact"
    qs = md / "quorum-state"
    if leader_changes and qs.is_file():
        state = json.loads(qs.read_text())
        leader, epoch = leader_changes[-1]
        assert leader == state["leaderId"]
        assert epoch <= state["leaderEpoch"]


def test_real_logs_carry_topics_and_configs(realdata: Path) -> None:
    views = [_replay(md)[0] for md in METADATA_DIRS]
    assert sum(len(v.topic_ids) for v in views) > 30
    assert sum(len(v.partitions) for v in views) > 300
    assert any(v.topic_configs("oms_order_created").get("retention.ms") for v in views)


@pytest.mark.parametrize("path", [p for p in METADATA_FILES if p.suffix == ".checkpoint"],
                         ids=ids([p for p in METADATA_FILES if p.suffix == ".checkpoint"]))
def test_snapshots_are_framed_by_header_and_footer(realdata: Path, path: Path) -> None:
    batches = list(kp_records(path))
    first_batch, first = batches[0]
    last_batch, last = batches[-1]
    assert first_batch.is_control_batch and control_type(first) == SNAPSHOT_HEADER
    assert last_batch.is_control_batch and control_type(last) == SNAPSHOT_FOOTER
    header = kc.decode_snapshot_header(first.value)
    assert header["version"] == 0 and header["lastContainedLogTimestamp"] >= 0
    assert kc.format_kraft_control(SNAPSHOT_FOOTER, last.value) == ' SnapshotFooter {"version":0}'


def test_record_type_names_follow_kafka_enum() -> None:
    # MetadataRecordType constants (toSnakeCase(name).toUpperCase())
    assert cm.record_type_name("TopicRecord") == "TOPIC_RECORD"
    assert cm.record_type_name("ZkMigrationStateRecord") == "ZK_MIGRATION_STATE_RECORD"
    assert cm.record_type_name("RegisterBrokerRecord") == "REGISTER_BROKER_RECORD"
    assert cm.METADATA_RECORD_TYPES[2] == "TopicRecord" and cm.METADATA_RECORD_TYPES[3] == "PartitionRecord"
    assert cm.METADATA_RECORD_TYPES[4] == "ConfigRecord"
    assert cm.METADATA_RECORD_TYPES[9] == "RemoveTopicRecord"


def test_framing_errors_and_unknown_types() -> None:
    with pytest.raises(InternalTopicFormatError):
        cm.decode_metadata_record(b"\x00\x02\x00")  # frame version 0 (2.8 preview) is rejected
    with pytest.raises(InternalTopicFormatError):
        cm.decode_metadata_record(cm.encode_topic_record("t", "AAAAAAAAAAAAAAAAAAAAAQ") + b"\x00")  # garbage
    unknown = cm.decode_metadata_record(b"\x01\x63\x00\xaa")
    assert unknown["type"] == "UNKNOWN" and unknown["apiKey"] == 0x63 and unknown["raw"] == b"\xaa"
    # ClusterMetadataLogMessageParser's texts
    assert cm.format_metadata_record(b"\x01\x63\x00\xaa", 8) == (     # MetadataParseException(cause)
        "Error at 8, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 99")
    assert cm.format_metadata_record(b"\x00", 9).startswith("Error at 9, skipping. ")
    assert cm.format_metadata_record(cm.encode_topic_record("t", "AAAAAAAAAAAAAAAAAAAAAQ"), 1) == (
        '{"type":"TOPIC_RECORD","version":0,"data":{"name":"t","topicId":"AAAAAAAAAAAAAAAAAAAAAQ"}}')


def test_replay_folds_changes_removals_and_configs() -> None:
    tid = "AAAAAAAAAAAAAAAAAAAAAg"
    recs = [
        cm.encode_topic_record("a", tid),
        cm.encode_partition_record(tid, 0, [1, 2], [1, 2], 1, 0, 0),
        cm.encode_metadata_record("PartitionChangeRecord", {"partitionId": 0, "topicId": tid, "isr": [1]}),
        cm.encode_metadata_record("PartitionChangeRecord", {"partitionId": 0, "topicId": tid, "leader": 2}),
        cm.encode_config_record(cm.RESOURCE_TYPE_TOPIC, "a", "retention.ms", "5"),
        cm.encode_config_record(cm.RESOURCE_TYPE_TOPIC, "a", "segment.ms", "9"),
        cm.encode_config_record(cm.RESOURCE_TYPE_TOPIC, "a", "segment.ms", None),
        cm.encode_config_record(cm.RESOURCE_TYPE_BROKER, "", "log.retention.ms", "7"),
    ]
    view = cm.replay_cluster_metadata(recs)
    st = view.partitions[(tid, 0)]
    # PartitionRegistration.merge: isr replaced; a leader change bumps the leader epoch;
    # every change bumps the partition epoch
    assert (st.replicas, st.isr, st.leader, st.leader_epoch, st.partition_epoch) == ([1, 2], [1], 2, 1, 2)
    assert view.topic_configs("a") == {"retention.ms": "5"}
    assert view.broker_configs() == {"log.retention.ms": "7"}
    remove = cm.encode_metadata_record("RemoveTopicRecord", {"topicId": tid})
    view = cm.replay_cluster_metadata([remove], view)
    assert view.topic_ids == {} and view.partitions == {} and view.topic_configs("a") == {}


def _kp_values(path: Path, below: int | None = None) -> list[bytes]:
    return [rec.value for batch, rec in kp_records(path)
            if not batch.is_control_batch and (below is None or rec.offset < below)]


SNAPSHOTS_WITH_LOG = [p for p in METADATA_FILES
                      if p.suffix == ".checkpoint" and p.name != "bootstrap.checkpoint"
                      and (p.parent / "00000000000000000000.log").is_file()]


@pytest.mark.parametrize("snapshot", SNAPSHOTS_WITH_LOG, ids=ids(SNAPSHOTS_WITH_LOG))
def test_snapshot_state_equals_replay_of_the_log_before_it(realdata: Path, snapshot: Path) -> None:
    # The controller writes <endOffset>-<epoch>.checkpoint from its own folded state of the
    # records below endOffset: our replay of those log records must give that state.
    end = int(snapshot.name.split("-")[0])
    from_snapshot = cm.replay_cluster_metadata(_kp_values(snapshot))
    from_log = cm.replay_cluster_metadata(_kp_values(snapshot.parent / "00000000000000000000.log", end))
    assert from_snapshot.topic_ids == from_log.topic_ids and from_snapshot.topic_ids
    assert from_snapshot.partitions == from_log.partitions
    assert from_snapshot.configs == from_log.configs


@pytest.mark.parametrize("md", METADATA_DIRS, ids=ids(METADATA_DIRS))
def test_load_cluster_metadata_replays_snapshot_then_log_tail(realdata: Path, md: Path) -> None:
    view = cm.load_cluster_metadata(md)
    snapshots = sorted(md.glob("*.checkpoint"))
    expected = cm.replay_cluster_metadata(_kp_values(snapshots[-1]) if snapshots else [])
    start = int(snapshots[-1].name.split("-")[0]) if snapshots else 0
    for log in sorted(md.glob("*.log")):
        tail = [r.value for b, r in kp_records(log) if not b.is_control_batch and r.offset >= start]
        cm.replay_cluster_metadata(tail, expected)
    assert (view.topic_ids, view.partitions, view.configs) == (
        expected.topic_ids, expected.partitions, expected.configs)
    assert view.orphan_changes == 0
