"""``klogs dump --share-group-state-decoder``: DumpLogSegments' ``ShareGroupStateMessageParser`` lines.

The expected texts are written by hand from Kafka 4.4's rules (``CoordinatorRecordMessageParser``):
``key: {"type":"<type>","data":{...}} payload: {"version":"<v>","data":{...}}``, ``<DELETE>`` for a
tombstone, the tagged ``deliveryCompleteCount`` only when it is not -1, and in the key's place
``Unknown record type N at offset O, skipping.`` or ``Error at offset O, skipping. <getMessage()>``
("null" for a truncated buffer; the generated readers' own texts).  A record without a key aborts
the dump (exit 1).  (tests/conformance/test_share_groups.py checks the same against Kafka 4.4.0 on
a real broker's ``__share_group_state``.)
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from kafka_format.cli import main
from kafka_format.cli.dump import DumpOptions, dump
from kafka_format.internal.share_group_state import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    encode_share_snapshot,
    encode_share_state_key,
    encode_share_update,
    share_partition_partition,
)
from kafka_format.writer import Record, SegmentWriter, build_v2_batch

T0 = 1_700_000_000_000
TOPIC_ID = "kNMR_1PAQWed_lrq6biHZw"
KEY_JSON = '{{"type":"{t}","data":{{"groupId":"sg-a","topicId":"kNMR_1PAQWed_lrq6biHZw","partition":0}}}}'


def _segment(tmp_path: Path, records: list[tuple[bytes | None, bytes | None]]) -> Path:
    directory = tmp_path / "__share_group_state-36"
    directory.mkdir()
    seg = SegmentWriter(directory, 0)
    seg.append([build_v2_batch([Record(key=k, value=v, timestamp=T0) for k, v in records], base_offset=0)])
    seg.close()
    return seg.log_path


def _payloads(path: Path, version: str = "4.4") -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    code = dump(DumpOptions(files=(str(path),), decoder="share-group-state", kafka_version=version), out, err)
    lines = [line.partition(" headerKeys: [] ")[2] for line in out.getvalue().splitlines() if line.startswith("| ")]
    return code, lines, err.getvalue()


def test_snapshots_updates_and_tombstones_print_as_kafka_prints_them(tmp_path: Path) -> None:
    snap = encode_share_state_key(SHARE_SNAPSHOT, "sg-a", TOPIC_ID, 0)
    update = encode_share_state_key(SHARE_UPDATE, "sg-a", TOPIC_ID, 0)
    path = _segment(tmp_path, [
        (snap, encode_share_snapshot({"snapshotEpoch": 0, "stateEpoch": 2, "leaderEpoch": 0, "startOffset": -1,
                                      "deliveryCompleteCount": -1, "createTimestamp": T0, "writeTimestamp": T0,
                                      "stateBatches": []})),
        (update, encode_share_update({"snapshotEpoch": 0, "leaderEpoch": 0, "startOffset": 0,
                                      "deliveryCompleteCount": 77, "stateBatches": [
                                          {"firstOffset": 0, "lastOffset": 0, "deliveryState": 0, "deliveryCount": 1},
                                          {"firstOffset": 1, "lastOffset": 2, "deliveryState": 2, "deliveryCount": 1}]})),
        (snap, None),
    ])
    code, lines, err = _payloads(path)
    assert (code, err) == (0, "")
    assert lines == [
        "key: " + KEY_JSON.format(t=0) + ' payload: {"version":"0","data":{"snapshotEpoch":0,"stateEpoch":2,'
        f'"leaderEpoch":0,"startOffset":-1,"createTimestamp":{T0},"writeTimestamp":{T0},"stateBatches":[]}}}}',
        "key: " + KEY_JSON.format(t=1) + ' payload: {"version":"0","data":{"snapshotEpoch":0,"leaderEpoch":0,'
        '"startOffset":0,"deliveryCompleteCount":77,"stateBatches":[{"firstOffset":0,"lastOffset":0,'
        '"deliveryState":0,"deliveryCount":1},{"firstOffset":1,"lastOffset":2,"deliveryState":2,"deliveryCount":1}]}}',
        "key: " + KEY_JSON.format(t=0) + " payload: <DELETE>",
    ]


def test_records_kafka_cannot_read_print_its_messages(tmp_path: Path) -> None:
    snap = encode_share_state_key(SHARE_SNAPSHOT, "sg-a", TOPIC_ID, 0)
    good = encode_share_snapshot({"snapshotEpoch": 1, "stateEpoch": 1, "leaderEpoch": 0, "startOffset": 5,
                                  "createTimestamp": T0, "writeTimestamp": T0, "stateBatches": []})
    many = bytearray(good)
    many[-2] = 0x7F                      # stateBatches: compact length 126 with 1 byte left
    path = _segment(tmp_path, [
        (b"\x00\x05" + snap[2:], good),                      # record type 5
        (snap, b"\x00\x01" + good[2:]),                      # value version 1
        (snap, good[:7]),                                    # value cut inside the stateEpoch
        (b"\x00", good),                                     # key too short for its type
        (snap[:10], good),                                   # key cut inside the topic id
        (snap, b""),                                         # an empty value
        (snap, bytes(many)),
    ])
    code, lines, _ = _payloads(path)
    assert code == 0
    assert [line.removeprefix("key: ") for line in lines] == [
        "Unknown record type 5 at offset 0, skipping.",
        "Error at offset 1, skipping. Found an unknown record version 1 for 0 type",
        "Error at offset 2, skipping. Could not read record with version 0 from value's buffer due to: null.",
        "Error at offset 3, skipping. Could not read version from key's buffer.",
        "Error at offset 4, skipping. Could not read record with version 0 from key's buffer due to: null.",
        "Error at offset 5, skipping. Could not read version from value's buffer.",
        "Error at offset 6, skipping. Could not read record with version 0 from value's buffer due to: Tried to "
        "allocate a collection of size 126, but there are only 1 bytes remaining..",
    ]


def test_a_record_without_a_key_aborts_the_dump(tmp_path: Path) -> None:
    path = _segment(tmp_path, [(None, b"\x00\x00")])
    code, _, err = _payloads(path)
    assert code == 1
    assert "Failed to decode message at offset 0 using the specified decoder (message had a missing key)" in err


def test_the_decoder_is_refused_for_releases_before_4_4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _segment(tmp_path, [(b"\x00\x00", None)])
    assert main(["dump", "--share-group-state-decoder", "--kafka-version", "3.9", str(path)]) == 2
    assert "--share-group-state-decoder prints Kafka 4.4's text, not 3.9's" in capsys.readouterr().err


def test_a_share_partition_lives_in_kafkas_coordinator_partition() -> None:
    # where a Kafka 4.4.0 broker (50 partitions) wrote these share-partitions' records
    assert share_partition_partition("sg-a", TOPIC_ID, 0) == 36
    assert share_partition_partition("sg-a", TOPIC_ID, 1) == 35
    assert share_partition_partition("sg-d", TOPIC_ID, 1) == 14
