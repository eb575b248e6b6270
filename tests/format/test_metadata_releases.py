"""Each Kafka release decodes ``__cluster_metadata`` with its own schemas
(:mod:`kafka_format.internal.schemas.releases`): what ``--cluster-metadata-decoder`` prints for the records
and versions added after 3.9.1, under each release (as ``MetadataRecordSerde`` reports what its
release's generated classes cannot read: ``AbstractApiMessageSerde.read``)."""

from __future__ import annotations

import pytest

from kafka_format.internal import cluster_metadata as cm
from kafka_format.internal.schemas.releases import metadata_schemas

DIR_A = "AAAAAAAAAAAAAAAAAAAAAQ"
DIR_B = "AAAAAAAAAAAAAAAAAAAAAg"
INCARNATION = "AAAAAAAAAAAAAAAAAAAAAw"
UNKNOWN = "Error at 7, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {}"


ENDPOINT = {"name": "PLAINTEXT", "host": "localhost", "port": 9092, "securityProtocol": 0}


def _register_broker(version: int, cordoned: list[str] | None, endpoints: list[dict[str, object]] | None = None
                     ) -> bytes:
    data = {"brokerId": 1, "incarnationId": INCARNATION, "brokerEpoch": 5,
            "endPoints": [ENDPOINT] if endpoints is None else endpoints, "features": [],
            "rack": None, "fenced": True, "inControlledShutdown": False, "isMigratingZkBroker": False,
            "logDirs": [DIR_A]}
    if cordoned is not None:
        data["cordonedLogDirs"] = cordoned
    return cm.encode_metadata_record("RegisterBrokerRecord", data, version)


def _registration_change(version: int, cordoned: list[str] | None) -> bytes:
    data = {"brokerId": 1, "brokerEpoch": 5, "fenced": 0, "inControlledShutdown": 0, "logDirs": [DIR_A]}
    if cordoned is not None:
        data["cordonedLogDirs"] = cordoned
    return cm.encode_metadata_record("BrokerRegistrationChangeRecord", data, version)


@pytest.mark.parametrize("release", [(3, 9), (4, 0), (4, 2), (3, 5)])
def test_records_and_versions_before_4_3(release: tuple[int, int]) -> None:
    # a version the release does not know: its generated record class reads it anyway (the fields it
    # knows, the new tagged field skipped) ...
    assert cm.format_metadata_record(_registration_change(3, [DIR_B]), 7, release) == (
        '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":3,"data":{"brokerId":1,"brokerEpoch":5,'
        f'"logDirs":["{DIR_A}"]}}}}')
    # ... but the nested BrokerEndpoint class refuses it ("Can't read version 4 of BrokerEndpoint")
    assert cm.format_metadata_record(_register_broker(4, [DIR_B]), 7, release) == (
        "Error at 7, skipping. Failed to deserialize record with type 0")
    no_endpoints = cm.format_metadata_record(_register_broker(4, [DIR_B], endpoints=[]), 7, release)
    assert no_endpoints.startswith('{"type":"REGISTER_BROKER_RECORD","version":4,') and "cordoned" not in no_endpoints
    v3 = cm.format_metadata_record(_register_broker(3, None), 7, release)
    assert v3.startswith('{"type":"REGISTER_BROKER_RECORD","version":3,"data":{"brokerId":1,')
    assert v3 == cm.format_metadata_record(_register_broker(3, None), 7)   # what 4.4 prints too
    clear = cm.encode_metadata_record("ClearElrRecord", {"topicName": "t"}, 0)
    expected_clear = ('{"type":"CLEAR_ELR_RECORD","version":0,"data":{"topicName":"t"}}' if release >= (4, 0)
                      else UNKNOWN.format(28))
    assert cm.format_metadata_record(clear, 7, release) == expected_clear


@pytest.mark.parametrize("release", [(4, 3), (4, 4)])
def test_cordoned_log_dirs_from_4_3(release: tuple[int, int]) -> None:
    text = cm.format_metadata_record(_register_broker(4, [DIR_B]), 7, release)
    assert text.startswith('{"type":"REGISTER_BROKER_RECORD","version":4,')
    assert f'"cordonedLogDirs":["{DIR_B}"]' in text
    change = cm.format_metadata_record(_registration_change(3, [DIR_B]), 7, release)
    assert f'"cordonedLogDirs":["{DIR_B}"]' in change
    # tagged fields at their defaults (fenced 0, null cordonedLogDirs) are not printed
    assert cm.format_metadata_record(_registration_change(3, None), 7, release) == (
        '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":3,"data":{"brokerId":1,"brokerEpoch":5,'
        f'"logDirs":["{DIR_A}"]}}}}')


def test_unregister_controller_from_4_4() -> None:
    record = cm.encode_metadata_record("UnregisterControllerRecord", {"controllerId": 3000}, 0)
    assert cm.format_metadata_record(record, 7, (4, 3)) == UNKNOWN.format(29)
    assert cm.format_metadata_record(record, 7, (4, 4)) == (
        '{"type":"UNREGISTER_CONTROLLER_RECORD","version":0,"data":{"controllerId":3000}}')
    assert cm.format_metadata_record(record, 7) == cm.format_metadata_record(record, 7, (4, 4))


def test_serde_messages() -> None:
    """``AbstractApiMessageSerde.read``'s messages, in the order it checks."""
    topic = cm.encode_topic_record("t", DIR_A)
    assert cm.format_metadata_record(b"", 1) == "Error at 1, skipping. Error while reading frame version"
    assert cm.format_metadata_record(b"\x00\x02\x00", 1) == (
        "Error at 1, skipping. Could not deserialize metadata record with frame version 0. Note that upgrades "
        "from the preview release of KRaft in 2.8 to newer versions are not supported.")
    assert cm.format_metadata_record(b"\x02\x02\x00", 1) == (
        "Error at 1, skipping. Could not deserialize metadata record due to unknown frame version 2"
        "(only frame version 1 is supported)")
    assert cm.format_metadata_record(b"\x01\x80\x80\x02\x00", 1) == "Error at 1, skipping. Value for type was too large."
    assert cm.format_metadata_record(b"\x01\x02", 1) == "Error at 1, skipping. Error while reading version"
    assert cm.format_metadata_record(topic + b"\x00\x00", 1) == "Error at 1, skipping. Found 2 byte(s) of garbage after 2"
    assert cm.format_metadata_record(topic[:-3], 1) == "Error at 1, skipping. Failed to deserialize record with type 2"


def test_release_schemas_leave_the_newest_alone() -> None:
    old, new = metadata_schemas((3, 9)), metadata_schemas((4, 4))
    assert "ClearElrRecord" not in old and "UnregisterControllerRecord" not in old
    assert old["RegisterBrokerRecord"]["validVersions"] == "0-3"
    assert new["RegisterBrokerRecord"]["validVersions"] == "0-4"
    assert any(f["name"] == "CordonedLogDirs" for f in new["RegisterBrokerRecord"]["fields"])
    assert not any(f["name"] == "CordonedLogDirs" for f in old["RegisterBrokerRecord"]["fields"])
    assert old["TopicRecord"] is new["TopicRecord"]
