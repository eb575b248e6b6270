"""Differential check: our internal-topic decoders vs kafka-python's protocol decoder.

kafka-python 3 ships its own interpreter of Kafka's JSON message schemas
(``kafka.protocol.api_data.ApiData``), written independently of ours.  It is fed
Kafka's schemas (the consumer-protocol ones it ships itself; the others from
the copies we carry, which are Kafka's files minus comments) and decodes the same
real record bytes; every field we report must equal its value.
"""

from __future__ import annotations

import importlib
import json
import os
import struct
import sys
import uuid
import warnings
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():  # kafka-python's package import emits DeprecationWarnings
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol.api_data import ApiData
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
    from kafka.record import MemoryRecords

from kafka_format.internal import cluster_metadata as cm
from kafka_format.internal import consumer_offsets as co
from kafka_format.internal import kraft_control as kc
from kafka_format.internal import transaction_log as tl
from kafka_format.internal.protocol import uuid_to_str
from kafka_format.internal.schemas import SCHEMAS

REALDATA = Path(os.environ.get("KLA_SHARED_DIR", Path(__file__).resolve().parents[3] / "shared")) / "realdata"
CONTROL_KEY = struct.Struct(">hh")
FRAME_HEADER_MAX = 3  # frame version, api key, version: one uvarint byte each for api keys < 128


def kp_records(path: Path):
    mr = MemoryRecords(path.read_bytes())
    while (batch := mr.next_batch()) is not None:
        for rec in batch:
            yield batch, rec


def _with_versions(doc: Any) -> Any:
    """Kafka lets a tagged field omit "versions" (= taggedVersions); kafka-python needs it spelled out."""
    if isinstance(doc, list):
        return [_with_versions(x) for x in doc]
    if isinstance(doc, dict):
        out = {k: _with_versions(v) for k, v in doc.items()}
        if "taggedVersions" in out and "versions" not in out:
            out["versions"] = out["taggedVersions"]
        if isinstance(out.get("tag"), str):  # Jackson reads "tag": "2" as 2; kafka-python does not
            out["tag"] = int(out["tag"])
        if out.get("name") == "Version" and "type" in out:  # clashes with kafka-python's own `version`
            out["name"] = "RecordVersion"
        return out
    return doc


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory):
    """name → kafka-python ApiData class built from Kafka's schema ``name``."""
    root = tmp_path_factory.mktemp("kp_schemas")
    pkg = root / "kla_kp_oracle_schemas"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, doc in SCHEMAS.items():
        if "@" not in name:
            (pkg / f"{name}.json").write_text(json.dumps({**_with_versions(doc), "type": "data"}))
    sys.path.insert(0, str(root))
    try:
        module = importlib.import_module("kla_kp_oracle_schemas")
        classes: dict[str, Any] = {}

        def get(name: str) -> Any:
            if name not in classes:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    classes[name] = type(name, (ApiData,), {}, load_json=module)
            return classes[name]

        yield get
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("kla_kp_oracle_schemas", None)


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


def assert_same(ours: Any, theirs: Any, where: str) -> None:
    """Every value we report equals kafka-python's (recursively)."""
    if isinstance(theirs, uuid.UUID):
        assert ours == uuid_to_str(theirs.bytes), where
    elif isinstance(ours, dict):
        if isinstance(theirs, (bytes, bytearray)):  # embedded consumer protocol we decoded
            cls = ConsumerProtocolSubscription if "topics" in ours else ConsumerProtocolAssignment
            theirs = cls.decode(bytes(theirs))
        attrs = {_norm(k): k for k in type(theirs).fields}
        if "recordversion" in attrs:
            attrs["version"] = attrs["recordversion"]
        for key, value in ours.items():
            if key.startswith("_"):
                continue
            assert _norm(key) in attrs, f"{where}.{key} unknown to kafka-python"
            assert_same(value, getattr(theirs, attrs[_norm(key)]), f"{where}.{key}")
    elif isinstance(ours, list):
        assert theirs is not None and len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(ours, bytes):
        assert bytes(theirs) == ours, where
    else:
        assert ours == theirs, where


def decode_prefixed(cls: Any, data: bytes) -> Any:
    version = struct.unpack(">h", data[:2])[0]
    return cls.decode(data[2:], version=version, header=False)


OFFSETS_LOGS = sorted(p for p in REALDATA.glob("**/__consumer_offsets-*/*.log") if p.stat().st_size > 0) \
    if REALDATA.is_dir() else []
METADATA_LOGS = sorted(p for p in [*REALDATA.glob("**/__cluster_metadata-0/*.log"),
                                   *REALDATA.glob("**/__cluster_metadata-0/*.checkpoint")]
                       if p.stat().st_size > 0) if REALDATA.is_dir() else []


def test_consumer_offsets_match_kafka_python(realdata: Path, oracle: Any) -> None:
    n = 0
    for log in OFFSETS_LOGS:
        for _, rec in kp_records(log):
            key, value = co.decode_consumer_offsets_record(rec.key, rec.value)
            key_name, value_name = co.RECORD_TYPES[int(key["type"])]
            theirs_key = oracle(key_name).decode(rec.key[2:], version=int(key["type"]), header=False)
            assert_same(key["data"], theirs_key, f"{log.name}@{rec.offset}.key")
            if value is not None:
                assert_same(value["data"], decode_prefixed(oracle(value_name), rec.value),
                            f"{log.name}@{rec.offset}.value")
            n += 1
    assert n > 4000


def test_transaction_log_matches_kafka_python(realdata: Path, oracle: Any) -> None:
    logs = sorted(REALDATA.glob("**/__transaction_state-*/*.log"))
    n = 0
    for log in logs:
        for _, rec in kp_records(log):
            assert_same(tl.decode_transaction_log_key(rec.key)["data"],
                        decode_prefixed(oracle("TransactionLogKey"), rec.key), "key")
            assert_same(tl.decode_transaction_log_value(rec.value)["data"],  # type: ignore[index]
                        decode_prefixed(oracle("TransactionLogValue"), rec.value), "value")
            n += 1
    assert n == 4


@pytest.mark.parametrize("log", METADATA_LOGS, ids=[str(p.relative_to(REALDATA)) for p in METADATA_LOGS])
def test_cluster_metadata_matches_kafka_python(realdata: Path, oracle: Any, log: Path) -> None:
    for batch, rec in kp_records(log):
        if batch.is_control_batch:
            t = CONTROL_KEY.unpack(bytes(rec.key[:4]))[1]
            theirs = oracle(kc.CONTROL_VALUE_SCHEMAS[t]).decode(bytes(rec.value), version=0, header=False)
            assert_same(kc.decode_kraft_control_value(t, rec.value), theirs, f"{log.name}@{rec.offset}")
            continue
        d = cm.decode_metadata_record(rec.value)
        if cm.VARIANT_KEY in d:
            continue  # pre-release layout no released schema reads (see test_internal_cluster_metadata)
        value = bytes(rec.value)
        assert value[0] == cm.FRAME_VERSION and value[1] < 0x80 and value[2] < 0x80
        name = cm.METADATA_RECORD_TYPES[value[1]]
        if not SCHEMAS[name]["fields"]:  # kafka-python cannot build a struct without fields
            assert d["data"] == {} and value[FRAME_HEADER_MAX:] == b"\x00"  # just an empty tag section
            continue
        theirs = oracle(name).decode(value[FRAME_HEADER_MAX:], version=value[2], header=False)
        assert_same(d["data"], theirs, f"{log.name}@{rec.offset}")


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_offset_commit_encoder_matches_kafka_python(oracle: Any, version: int) -> None:
    raw = co.encode_offset_commit_value(9, "m\u00e9ta", 1234, version=version, leader_epoch=3,
                                        expire_timestamp=99)
    theirs = decode_prefixed(oracle("OffsetCommitValue"), raw)
    assert (theirs.offset, theirs.metadata, theirs.commit_timestamp) == (9, "m\u00e9ta", 1234)
    if version == 1:
        assert theirs.expire_timestamp == 99
    if version >= 3:
        assert theirs.leader_epoch == 3


def test_group_metadata_encoder_matches_kafka_python(oracle: Any) -> None:
    sub = {"topics": ["a", "b"], "userData": None, "ownedPartitions": [{"topic": "a", "partitions": [1]}],
           "_version": 1}
    asg = {"assignedPartitions": [{"topic": "a", "partitions": [0, 1]}], "userData": b"u", "_version": 0}
    data = {"protocolType": "consumer", "generation": 3, "protocol": "range", "leader": "m1",
            "currentStateTimestamp": 5, "members": [{
                "memberId": "m1", "groupInstanceId": None, "clientId": "c", "clientHost": "/h",
                "rebalanceTimeout": 10, "sessionTimeout": 20, "subscription": sub, "assignment": asg}]}
    for version in range(5):
        raw = co.encode_group_metadata_value(data, version=version)
        theirs = decode_prefixed(oracle("GroupMetadataValue"), raw)
        member = theirs.members[0]
        assert (theirs.protocol_type, theirs.generation, member.member_id) == ("consumer", 3, "m1")
        their_sub = ConsumerProtocolSubscription.decode(bytes(member.subscription))
        assert their_sub.topics == ["a", "b"] and their_sub.owned_partitions[0].partitions == [1]
        their_asg = ConsumerProtocolAssignment.decode(bytes(member.assignment))
        assert their_asg.assigned_partitions[0].partitions == [0, 1] and bytes(their_asg.user_data) == b"u"
        assert co.decode_consumer_offsets_value(2, raw)["data"]["members"][0]["subscription"]["topics"] \
            == ["a", "b"]  # type: ignore[index]


def _sample(struct_spec: Any, version: int, flexible: Any, seed: int) -> dict[str, Any]:
    """A value with a non-default entry in every field present in ``version``."""
    from kafka_format.internal.protocol import _contains  # schema helper, test-only use

    out: dict[str, Any] = {}
    for i, f in enumerate(struct_spec.fields):
        if not _contains(f.versions, version):
            continue
        n = seed + i
        if f.struct is not None:
            item = _sample(f.struct, version, flexible, n + 1)
            out[f.name] = [item, item] if f.is_array else item
            continue
        base = f.element or f.type
        scalar: Any = {
            "int8": n % 100, "int16": 300 + n, "uint16": 60000 + n, "int32": 70000 + n,
            "uint32": 3_000_000_000 + n, "int64": 1 << 40 | n, "float64": n + 0.5, "bool": True,
            "string": f"s\u00e9{n}", "bytes": bytes([n % 256]) * 3,
            "uuid": uuid_to_str(bytes([n % 256]) * 16),
        }[base]
        out[f.name] = [scalar, scalar] if f.is_array else scalar
    return out


def _valid_versions(name: str) -> range:
    text = str(SCHEMAS[name]["validVersions"])  # "0-4" or "3"
    lo, _, hi = text.partition("-")
    return range(int(lo), int(hi or lo) + 1)


def _field_types(fields: list[dict[str, Any]]) -> set[str]:
    return {f["type"].removeprefix("[]") for f in fields} | {t for f in fields for t in _field_types(f.get("fields", []))}


ALL_VERSIONS = [(name, v) for name in sorted(SCHEMAS) if "@" not in name for v in _valid_versions(name)]


@pytest.mark.parametrize(("name", "version"), ALL_VERSIONS, ids=[f"{n}-v{v}" for n, v in ALL_VERSIONS])
def test_every_schema_version_round_trips_through_kafka_python(oracle: Any, name: str, version: int) -> None:
    from kafka_format.internal.protocol import message_spec, read_message, write_message

    spec = message_spec(name)
    value = _sample(spec.root, version, spec.flexible, 1)
    raw = write_message(name, value, version)
    ours, end = read_message(name, raw, version)
    assert end == len(raw)
    assert ours == value  # every field is non-default, so every field is reported
    if not SCHEMAS[name]["fields"]:
        return
    if "uint32" in _field_types(SCHEMAS[name]["fields"]):   # ProducerSnapshot's Crc
        pytest.skip("kafka-python's schema interpreter has no uint32")
    theirs = oracle(name).decode(raw, version=version, header=False)
    assert_same(ours, theirs, f"{name}v{version}")
