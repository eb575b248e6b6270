"""__consumer_offsets decoding against real broker logs and Kafka's documented rules.

Key/value bytes come from kafka-python's ``MemoryRecords`` over the real
``.log`` files (Kafka 0.10.1 magic 1 through 3.9), never from our own record
decoder.  Independent facts checked: the group's partition (Kafka's
``abs(hash) % 50`` rule) equals the partition dir the record sits in; committed
partitions exist in the same cluster; commit timestamps agree with the
broker-written record timestamps; assignments are within subscriptions.
"""

from __future__ import annotations

import collections
import functools
import os
import warnings
from pathlib import Path

import pytest

with warnings.catch_warnings():  # kafka-python's package import emits DeprecationWarnings
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record import MemoryRecords

from kafka_format.common.errors import InternalTopicFormatError
from kafka_format.internal import cluster_metadata as cm
from kafka_format.internal import consumer_offsets as co
from kafka_format.internal.protocol import INT16

REALDATA = Path(os.environ.get("KLA_SHARED_DIR", Path(__file__).resolve().parents[3] / "shared")) / "realdata"
OFFSETS_LOGS = sorted(p for p in REALDATA.glob("**/__consumer_offsets-*/*.log") if p.stat().st_size > 0) \
    if REALDATA.is_dir() else []
COMMIT_TO_RECORD_MS = 5_000  # the broker stamps both within one request


KpBatch = collections.namedtuple("KpBatch", "is_control_batch")
KpRecord = collections.namedtuple("KpRecord", "offset timestamp key value")


@functools.cache
def kp_records(path: Path) -> list[tuple[KpBatch, KpRecord]]:
    """(batch, record) pairs of a .log, decoded by kafka-python (the independent oracle); cached."""
    out = []
    mr = MemoryRecords(path.read_bytes())
    while (batch := mr.next_batch()) is not None:
        info = KpBatch(getattr(batch, "is_control_batch", False))  # magic 0/1: no control
        for rec in batch:
            out.append((info, KpRecord(rec.offset, rec.timestamp, rec.key, rec.value)))
    return out


def set_root(path: Path) -> Path:
    return REALDATA / path.relative_to(REALDATA).parts[0]


def dir_partition(path: Path) -> int:
    return int(path.parent.name.rsplit("-", 1)[1])


def ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(REALDATA)) for p in paths]


@pytest.mark.parametrize("log", OFFSETS_LOGS, ids=ids(OFFSETS_LOGS))
def test_every_record_decodes_into_its_group_partition(realdata: Path, log: Path) -> None:
    n = 0
    for _, rec in kp_records(log):
        key, value = co.decode_consumer_offsets_record(rec.key, rec.value)
        n += 1
        assert key["type"] in {"0", "1", "2"}  # pre-KIP-848 brokers write only these
        assert co.group_partition(key["data"]["group"]) == dir_partition(log)
        if value is None:
            assert rec.value is None
            continue
        assert int(value["version"]) == INT16.unpack(rec.value[:2])[0]
        if key["type"] == "2":
            assert set(value["data"]) >= {"protocolType", "generation", "protocol", "leader", "members"}
        else:
            assert set(value["data"]) >= {"offset", "metadata", "commitTimestamp"}
    assert n > 0


def _cluster_partitions(root: Path) -> set[tuple[str, int]]:
    """Partitions that exist in a set: partition dirs, plus KRaft PartitionRecords."""
    out: set[tuple[str, int]] = set()
    for d in root.rglob("*"):
        if d.is_dir() and "-" in d.name and d.name.rsplit("-", 1)[1].isdigit():
            out.add((d.name.rsplit("-", 1)[0], int(d.name.rsplit("-", 1)[1])))
    for log in sorted(root.rglob("__cluster_metadata-0/*.log")):
        recs = [rec.value for b, rec in kp_records(log) if not b.is_control_batch]
        view = cm.replay_cluster_metadata(recs)
        for tid, p in view.partitions:
            if tid in view.topic_names:
                out.add((view.topic_names[tid], p))
    return out


def test_committed_partitions_exist_in_the_same_cluster(realdata: Path) -> None:
    roots = sorted({set_root(p) for p in OFFSETS_LOGS})
    checked = 0
    for root in roots:
        known = _cluster_partitions(root)
        for log in (p for p in OFFSETS_LOGS if set_root(p) == root):
            for _, rec in kp_records(log):
                key = co.decode_consumer_offsets_key(rec.key)
                if key["type"] in ("0", "1"):
                    d = key["data"]
                    assert (d["topic"], d["partition"]) in known, (log, d)
                    checked += 1
    assert checked > 3000


def test_timestamps_agree_with_broker_record_timestamps(realdata: Path) -> None:
    commits = groups = 0
    for log in OFFSETS_LOGS:
        for _, rec in kp_records(log):
            key, value = co.decode_consumer_offsets_record(rec.key, rec.value)
            if value is None:
                continue
            d = value["data"]
            if key["type"] in ("0", "1"):
                assert abs(d["commitTimestamp"] - rec.timestamp) <= COMMIT_TO_RECORD_MS
                if value["version"] == "1":  # v1: expire = commit + retention (> 0)
                    assert d["expireTimestamp"] > d["commitTimestamp"]
                commits += 1
            elif d.get("currentStateTimestamp", -1) != -1:
                assert d["currentStateTimestamp"] <= rec.timestamp  # state changed, then stored
                groups += 1
    assert commits > 3000 and groups > 100


def test_consumer_group_members_carry_decoded_embedded_protocol(realdata: Path) -> None:
    members = 0
    for log in OFFSETS_LOGS:
        for _, rec in kp_records(log):
            key, value = co.decode_consumer_offsets_record(rec.key, rec.value)
            if key["type"] != "2" or value is None:
                continue
            data = value["data"]
            if data["members"]:
                assert data["leader"] in {m["memberId"] for m in data["members"]}
            for m in data["members"]:
                if data["protocolType"] != co.CONSUMER_PROTOCOL_TYPE:
                    assert isinstance(m["subscription"], bytes)
                    continue
                sub, asg = m["subscription"], m["assignment"]
                assert isinstance(sub, dict) and isinstance(asg, dict)
                assigned = {a["topic"] for a in asg["assignedPartitions"]}
                assert assigned <= set(sub["topics"])  # the assignor only hands out subscribed topics
                members += 1
    assert members > 100


@pytest.mark.parametrize("log", OFFSETS_LOGS, ids=ids(OFFSETS_LOGS))
def test_encoders_reproduce_broker_bytes(realdata: Path, log: Path) -> None:
    for _, rec in kp_records(log):
        key, value = co.decode_consumer_offsets_record(rec.key, rec.value)
        rtype = int(key["type"])
        assert co.encode_consumer_offsets_key(rtype, key["data"]) == rec.key
        if value is not None:
            assert co.encode_consumer_offsets_value(rtype, value["data"], int(value["version"])) == rec.value


def test_dump_text_for_tombstones_and_unknown_types() -> None:
    key = co.encode_offset_commit_key("g", "t", 3)
    k, v = co.format_offsets_record(key, None, 7)
    assert k == '{"type":"1","data":{"group":"g","topic":"t","partition":3}}'
    assert v == "<DELETE>"
    unknown = INT16.pack(99) + b"\x00\x01g"
    assert co.format_offsets_record(unknown, b"\x00\x00", 12) == (
        "Unknown record type 99 at offset 12, skipping.", None)
    with pytest.raises(co.UnknownRecordTypeError):
        co.decode_consumer_offsets_key(unknown)
    k, v = co.format_offsets_record(key, b"\x00", 5)
    assert k is not None and k.startswith("Error at offset 5, skipping.") and v is None
    with pytest.raises(InternalTopicFormatError):
        co.format_offsets_record(None, b"", 1)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_offset_commit_value_fields_per_version(version: int) -> None:
    raw = co.encode_offset_commit_value(42, "meta", 1_000, version=version, leader_epoch=5,
                                        expire_timestamp=2_000)
    data = co.decode_consumer_offsets_value(1, raw)["data"]  # type: ignore[index]
    # Field sets of OffsetCommitValue.json: v1 alone has expireTimestamp, v3+ leaderEpoch.
    expected = {"offset", "metadata", "commitTimestamp"}
    expected |= {"expireTimestamp"} if version == 1 else set()
    expected |= {"leaderEpoch"} if version >= 3 else set()
    assert set(data) == expected
    # byte sizes from the spec's layouts: int64 offset, str metadata, int64 timestamps, int32 epoch
    size = 2 + 8 + (2 + 4) + 8 + (8 if version == 1 else 0) + (4 if version >= 3 else 0)
    if version == 4:
        size -= 1  # compact string: uvarint(len+1) = 1 byte instead of an int16 ...
        size += 1  # ... plus the empty tagged-field section
    assert len(raw) == size


def test_a_tagged_struct_written_as_null_prints_as_kafka_prints_it() -> None:
    """``ConsumerGroupMemberMetadataValue.ClassicMemberMetadata`` (tagged, nullable, JSON default
    null, which Kafka's generator takes as no default: an empty struct): a consumer-protocol member's
    record carries the tag with the null marker, and Kafka's JSON prints it as null; without the tag
    it is left out.  The value bytes are written by hand: v0, two null compact strings, "c", "/h",
    ["t"], null regex, 300000, null assignor, then the tagged section."""
    body = bytes.fromhex("0000" "00" "00" "0263" "032f68" "020274" "00" "000493e0" "00")
    key = co.encode_consumer_offsets_key(5, {"groupId": "g", "memberId": "m"})
    _, plain = co.format_offsets_record(key, body + b"\x00", 0)
    _, tagged = co.format_offsets_record(key, body + b"\x01\x00\x01\x00", 0)
    assert plain is not None and tagged is not None
    assert plain.endswith('"rebalanceTimeoutMs":300000,"serverAssignor":null}}')
    assert tagged.endswith('"rebalanceTimeoutMs":300000,"serverAssignor":null,"classicMemberMetadata":null}}')
