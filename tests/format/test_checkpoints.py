"""Checkpoint text files, partition.metadata, meta.properties, clean-shutdown and quorum-state
(spec §1.1-1.5).

Oracles: the partitions' `.log` files walked with `struct` here (log end offsets, batch leader
epochs), Python's base64 for Uuids, Kafka's reader rules and messages, and literal file texts.
"""

from __future__ import annotations

import base64
import struct
from pathlib import Path

import pyarrow.fs as pafs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_format.common.errors import CheckpointFormatError, KafkaFormatError
from kafka_format.storage import checkpoints as C


def log_end_and_epochs(part_dir: Path) -> tuple[int | None, list[tuple[int, int]]]:
    """(LEO, [(batch base offset, partitionLeaderEpoch)] for v2 batches) by a test-local walk; LEO None
    when the dir has no .log."""
    logs = sorted(part_dir.glob("*.log"))
    indexed = sorted(part_dir.glob("*.index")) + sorted(part_dir.glob("*.timeindex"))
    if not logs or any(int(p.name.split(".")[0]) > int(logs[-1].name.split(".")[0]) for p in indexed):
        return None, []  # no .log, or the last segment's .log is missing from the copy
    epochs: list[tuple[int, int]] = []
    leo = int(logs[-1].name.split(".")[0])
    for log in logs:
        data = log.read_bytes()
        pos = 0
        while len(data) - pos > 17:
            base, size = struct.unpack_from(">qi", data, pos)
            if pos + 12 + size > len(data):
                break
            magic = data[pos + 16]
            if magic >= 2:
                (ple,) = struct.unpack_from(">i", data, pos + 12)
                (delta,) = struct.unpack_from(">i", data, pos + 23)
                epochs.append((base, ple))
                last = base + delta
            else:
                last = base
            if log == logs[-1]:
                leo = last + 1
            pos += 12 + size
    return leo, epochs


# --- real broker files ---------------------------------------------------------------------------

@pytest.mark.realdata
def test_real_offset_checkpoints_against_logs(realdata: Path) -> None:
    files = [p for name in C.OFFSET_CHECKPOINT_FILES for p in realdata.rglob(name)]
    assert len(files) >= 140
    compared = stale = 0
    for f in files:
        cp = C.read_offset_checkpoint(str(f))
        lines = f.read_text().splitlines()
        assert cp.version == 0 and len(cp) == (int(lines[1]) if len(lines) > 1 else 0)
        for (topic, partition), offset in cp.offsets.items():
            leo, _ = log_end_and_epochs(f.parent / f"{topic}-{partition}")
            if leo is None:
                continue  # partition dir absent from the copy, or its .log missing
            assert 0 <= offset, (f, topic, partition)
            if f.name in (C.REPLICATION_OFFSET_CHECKPOINT, C.RECOVERY_POINT_CHECKPOINT) and offset > leo:
                # HW / recovery point <= LEO, except where the committed copy holds an empty .log written
                # before the broker's data reached it (Danielowo2000: 10 partitions, HW > 0, .log 0 bytes)
                assert "Danielowo2000" in str(f), (f, topic, partition)
                assert f.name == C.REPLICATION_OFFSET_CHECKPOINT
                assert all(p.stat().st_size == 0 for p in (f.parent / f"{topic}-{partition}").glob("*.log"))
                stale += 1
            compared += 1
    assert compared >= 500 and stale == 10


@pytest.mark.realdata
def test_real_log_start_at_most_log_end(realdata: Path) -> None:
    """logStartOffset <= LEO.  (Not <= HW: Kafka's own test dirs hold lso=1 with a stale hw=0.)"""
    compared = 0
    for f in realdata.rglob(C.LOG_START_OFFSET_CHECKPOINT):
        for (topic, partition), start in C.read_offset_checkpoint(str(f)).offsets.items():
            leo, _ = log_end_and_epochs(f.parent / f"{topic}-{partition}")
            if leo is not None:
                assert start <= leo
                compared += 1
    assert compared >= 5


@pytest.mark.realdata
def test_real_leader_epochs_match_batches(realdata: Path) -> None:
    """Each v2 batch's partitionLeaderEpoch is the checkpoint's epoch for its base offset."""
    files = sorted(realdata.rglob(C.LEADER_EPOCH_CHECKPOINT))
    assert len(files) >= 900
    matched = 0
    for f in files:
        le = C.read_leader_epoch_checkpoint(str(f))
        starts = [e.start_offset for e in le.entries]
        epochs_listed = [e.epoch for e in le.entries]
        assert starts == sorted(starts) and epochs_listed == sorted(epochs_listed)
        _, epochs = log_end_and_epochs(f.parent)
        for base, ple in epochs:
            if le.entries and base >= le.entries[0].start_offset:
                assert le.epoch_for_offset(base) == ple, (f, base)
                matched += 1
    assert matched >= 1000


@pytest.mark.realdata
def test_real_partition_metadata(realdata: Path) -> None:
    files = sorted(realdata.rglob(C.PARTITION_METADATA))
    assert len(files) >= 580
    by_topic: dict[tuple[Path, str], str] = {}
    for f in files:
        pm = C.read_partition_metadata(str(f))
        text = f.read_text()
        raw_id = text.split("topic_id: ")[1].strip()
        assert pm.version == 0 and pm.topic_id == raw_id
        assert len(base64.urlsafe_b64decode(raw_id + "==")) == 16
        topic = f.parent.name.rsplit("-", 1)[0]
        # all partitions of a topic in one log dir share the topic id
        assert by_topic.setdefault((f.parent.parent, topic), pm.topic_id) == pm.topic_id


@pytest.mark.realdata
def test_real_meta_properties_zk_and_kraft(realdata: Path) -> None:
    zk = C.read_meta_properties(str(realdata / "vitormoschetti__kafka-services/data/kafka2/meta.properties"))
    assert (zk.version, zk.broker_id, zk.cluster_id, zk.directory_id, zk.is_kraft) == (
        0, 2, None, None, False)
    kraft = C.read_meta_properties(
        str(realdata / "ArthurArutunyan04__Backend_labs/kafka-data/meta.properties"))
    assert (kraft.version, kraft.node_id, kraft.cluster_id, kraft.directory_id) == (
        1, 1, "universe-labs-cluster", "MQHhtGhc9j1ncLM2pvl16w")
    no_dir = C.read_meta_properties(str(realdata / "rjmfernandes__flink-on-prem/data/meta.properties"))
    assert (no_dir.version, no_dir.node_id, no_dir.directory_id) == (1, 1, None)
    for f in realdata.rglob(C.META_PROPERTIES):
        mp = C.read_meta_properties(str(f))
        key = "broker.id" if mp.version == 0 else "node.id"
        assert f"{key}={mp.node_id}" in f.read_text()


@pytest.mark.realdata
def test_real_clean_shutdown_and_quorum_state(realdata: Path) -> None:
    epochs = {f.parent.parent.name:
              C.read_clean_shutdown(str(f)).broker_epoch for f in realdata.rglob(C.CLEAN_SHUTDOWN)}
    assert epochs["ArthurArutunyan04__Backend_labs"] == 7118
    assert epochs["rjmfernandes__flink-on-prem"] is None  # older brokers: empty file
    states = [C.read_quorum_state(str(f)) for f in realdata.rglob(C.QUORUM_STATE)]
    assert len(states) == 13
    assert all(s.data_version == 0 and s.leader_id in (1, 1000) and s.current_voters == (s.leader_id,)
               for s in states)


@pytest.mark.realdata
def test_real_tmp_checkpoint_is_a_checkpoint_too(realdata: Path) -> None:
    tmp = next(realdata.rglob("recovery-point-offset-checkpoint.tmp"))
    assert C.read_offset_checkpoint(str(tmp)).offsets == {("__consumer_offsets", 3): 0}


# --- the checkpoint reader on synthetic text ----------------------------------------------------

def test_empty_and_header_only_files_have_no_entries() -> None:
    assert C.parse_offset_checkpoint(b"").entries == ()
    assert C.parse_offset_checkpoint(b"0\n").entries == ()  # count line missing: empty (CheckpointReadBuffer)
    assert C.parse_offset_checkpoint(b"0\n0\n").entries == ()


def test_entries_with_any_whitespace_and_line_endings() -> None:
    cp = C.parse_offset_checkpoint(b"0\r\n3\r\nmy-topic 0 5\rother.t\t12   99\nt 1 -1\n")
    assert cp.entries == (("my-topic", 0, 5), ("other.t", 12, 99), ("t", 1, -1))
    assert cp.offsets[("other.t", 12)] == 99


@pytest.mark.parametrize(
    ("text", "position", "fragment"),
    [
        (b"1\n0\n", 0, "Unrecognised version:1, expected version: 0"),
        (b"x\n0\n", 0, "Malformed line"),
        (b" 0\n0\n", 0, "Malformed line"),  # Integer.parseInt does not trim
        (b"0\n2\nt 0 5\n", 10, "Expected [2] entries in checkpoint file, but found only [1]"),
        (b"0\n1\nt 0 5\nu 1 6\n", 10, "Expected [1] entries in checkpoint file, but found only [2]"),
        (b"0\n1\nt 0\n", 4, "Malformed line"),
        (b"0\n1\nt 0 5 6\n", 4, "Malformed line"),
        (b"0\n1\n t 0 5\n", 4, "Malformed line"),  # leading whitespace: empty first field
        (b"0\n2\nt 0 5\n\n", 10, "Malformed line"),  # empty line is a malformed entry
        (b"0\n1\nt x 5\n", 4, "Malformed line"),
        (b"0\n1\nt 0 9223372036854775808\n", 4, "Malformed line"),  # > Long.MAX
        (b"0\n1\nt 2147483648 5\n", 4, "Malformed line"),  # > Int.MAX
        (b"0\n-1\n", 2, "negative entry count"),
        (b"0\n1\nt\xff 0 5\n", 5, "not valid UTF-8"),
    ],
)
def test_offset_checkpoint_errors(text: bytes, position: int, fragment: str) -> None:
    with pytest.raises(CheckpointFormatError) as err:
        C.parse_offset_checkpoint(text, path="/d/replication-offset-checkpoint")
    assert err.value.position == position
    assert fragment in err.value.reason
    assert err.value.path == "/d/replication-offset-checkpoint"


def test_leader_epoch_checkpoint() -> None:
    le = C.parse_leader_epoch_checkpoint(b"0\n3\n0 0\n2 100\n5 250\n")
    assert le.entries == ((0, 0), (2, 100), (5, 250))
    assert [le.epoch_for_offset(o) for o in (0, 99, 100, 249, 10**9)] == [0, 0, 2, 2, 5]
    assert le.latest_epoch == 5
    with pytest.raises(CheckpointFormatError):
        C.parse_leader_epoch_checkpoint(b"0\n1\n0 0 0\n")
    with pytest.raises(CheckpointFormatError) as err:
        C.parse_leader_epoch_checkpoint(b"1\n0\n")
    assert "Unrecognised version:1" in err.value.reason


# --- partition.metadata -------------------------------------------------------------------------

def test_partition_metadata_rules() -> None:
    tid = base64.urlsafe_b64encode(bytes(range(16))).decode().rstrip("=")
    assert C.parse_partition_metadata(f"version: 0\ntopic_id: {tid}".encode()).topic_id == tid
    # any version >= 0 is accepted (downgrade compatibility); padding and other whitespace too
    assert C.parse_partition_metadata(f"version: 3\ntopic_id:\t{tid}==\n".encode()).version == 3
    cases = [
        (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "Invalid topic ID", 11),
        (b"version: -1\ntopic_id: x", "Unrecognized version", 0),
        (b"version:0\ntopic_id: x", "Malformed line", 0),
        (b"version: 0\n", "no topic_id line", 11),
        (b"version: 0\ntopic_id: abc", "decoded as 2 bytes", 11),
        (b"version: 0\ntopic_id: " + b"A" * 25, "too long", 11),
        (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAA!A", "not valid base64url", 11),
        (b"", "empty partition metadata", 0),
    ]
    for text, fragment, position in cases:
        with pytest.raises(CheckpointFormatError) as err:
            C.parse_partition_metadata(text)
        assert fragment in err.value.reason and err.value.position == position, text


# --- java.util.Properties / meta.properties -------------------------------------------------------

def test_java_properties_syntax() -> None:
    text = (b"# comment\n! also comment\n  \n"
            b"a=1\nb : 2\nc 3\nd\t=\t4\ne=\\\n   continued\nf=x\\ty\\u0041\\=\n"
            b"g\\ key=v\nh=\nonly\nk=last\nk=wins\n")
    props = C.parse_java_properties(text)
    assert props == {"a": "1", "b": "2", "c": "3", "d": "4", "e": "continued", "f": "x\tyA=", "g key": "v",
                     "h": "", "only": "", "k": "wins"}
    with pytest.raises(CheckpointFormatError):
        C.parse_java_properties(b"a=\\u12G4\n")
    assert C.parse_java_properties("n=caf\xe9\n".encode("latin-1")) == {"n": "caf\xe9"}  # ISO-8859-1


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (b"version=2\nnode.id=1\ncluster.id=c\n", "Unknown meta.properties version number 2"),
        (b"version=x\n", "Invalid meta.properties version string"),
        (b"version=1\ncluster.id=c\n", "Failed to find node.id"),
        (b"version=1\nnode.id=1\n", "cluster.id was not found."),
        (b"version=0\nbroker.id=abc\n", "Unable to read broker.id as a base-10 number."),
        (b"version=1\nnode.id=1\ncluster.id=c\ndirectory.id=short\n",
         "Unable to read directory.id as a Uuid"),
    ],
)
def test_meta_properties_errors(text: bytes, fragment: str) -> None:
    with pytest.raises(CheckpointFormatError) as err:
        C.parse_meta_properties(text)
    assert fragment in err.value.reason


def test_meta_properties_defaults() -> None:
    mp = C.parse_meta_properties(b"broker.id=7\n")  # version defaults to 0
    assert (mp.version, mp.broker_id, mp.cluster_id) == (0, 7, None)
    assert C.parse_meta_properties(b"version = 0\n").node_id is None  # v0 broker.id optional
    assert C.parse_meta_properties(b"version: 1\nnode.id: 3\ncluster.id: abc\n").node_id == 3


def test_clean_shutdown_never_raises() -> None:
    assert C.parse_clean_shutdown(b'{"version":0,"brokerEpoch":42}').broker_epoch == 42
    assert C.parse_clean_shutdown(b"").broker_epoch is None
    assert C.parse_clean_shutdown(b"\xff[").broker_epoch is None
    assert C.parse_clean_shutdown(b"[1]").broker_epoch is None


def test_quorum_state_errors() -> None:
    with pytest.raises(CheckpointFormatError):
        C.parse_quorum_state(b"not json")
    with pytest.raises(CheckpointFormatError):
        C.parse_quorum_state(b'{"leaderId":1,"data_version":7}')
    qs = C.parse_quorum_state(b'{"leaderId":3,"leaderEpoch":9,"votedId":-1,"appliedOffset":0,'
                              b'"currentVoters":[{"voterId":3},{"voterId":4}],"data_version":1}\n')
    assert (qs.leader_id, qs.leader_epoch, qs.current_voters, qs.data_version) == (3, 9, (3, 4), 1)


# --- writers ---------------------------------------------------------------------------------------

def test_writers_emit_broker_text(tmp_path: Path) -> None:
    assert C.format_offset_checkpoint({("a-b", 0): 5, ("c", 12): 0}) == b"0\n2\na-b 0 5\nc 12 0\n"
    assert C.format_offset_checkpoint([]) == b"0\n0\n"
    assert C.format_leader_epoch_checkpoint([(0, 0), (3, 17)]) == b"0\n2\n0 0\n3 17\n"
    tid = base64.urlsafe_b64encode(bytes([1] * 16)).decode().rstrip("=")
    assert C.format_partition_metadata(tid) == f"version: 0\ntopic_id: {tid}".encode()
    assert C.format_clean_shutdown(9) == b'{"version":0,"brokerEpoch":9}'
    assert C.format_clean_shutdown(None) == b""
    text = C.format_meta_properties(version=1, node_id=4, cluster_id="cid", directory_id=tid, timestamp_ms=0)
    assert text.startswith(b"#\n#Thu Jan 01 00:00:00 UTC 1970\n")
    assert C.parse_meta_properties(text).properties == {"cluster.id": "cid", "directory.id": tid,
                                                        "node.id": "4", "version": "1"}
    target = tmp_path / C.REPLICATION_OFFSET_CHECKPOINT
    C.write_offset_checkpoint(str(target), [("t", 1, 10)])
    assert target.read_bytes() == b"0\n1\nt 1 10\n"
    mock = pafs._MockFileSystem()
    mock.create_dir("d")
    C.write_leader_epoch_checkpoint("d/leader-epoch-checkpoint", [(1, 2)], filesystem=mock)
    assert C.read_leader_epoch_checkpoint("d/leader-epoch-checkpoint", filesystem=mock).entries == ((1, 2),)
    C.write_partition_metadata(str(tmp_path / "pm"), tid)
    assert C.read_partition_metadata((tmp_path / "pm").as_uri()).topic_id == tid


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120))
def test_any_bytes_only_checkpoint_errors(data: bytes) -> None:
    for parse in (C.parse_offset_checkpoint, C.parse_leader_epoch_checkpoint, C.parse_partition_metadata,
                  C.parse_meta_properties, C.parse_quorum_state, C.parse_clean_shutdown):
        for blob in (data, b"0\n1\n" + data, b"version: 0\ntopic_id: " + data):
            try:
                parse(blob)
            except KafkaFormatError as err:
                assert isinstance(err, CheckpointFormatError)
