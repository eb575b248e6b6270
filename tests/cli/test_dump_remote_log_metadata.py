"""``klogs dump --remote-log-metadata-decoder``: DumpLogSegments' ``RemoteMetadataLogMessageParser`` lines.

The expected lines are written by hand from Kafka's rules: the record line of ``dumpLog`` then
`` payload: `` and ``RemoteLogMetadataSerde.deserialize(value).toString()``, or ``Error at offset N,
skipping. <getMessage()>``; no key is printed.  From 4.0 a segment's text ends ``txnIdxEmpty=...``;
with ``--skip-record-metadata`` the Java tool (4.3+) puts the payload after the record indent, the
Scala tool after a space.  (tests/conformance/test_dump_remote_log_metadata.py checks the same
against Kafka 4.4.0 and 3.9.1 themselves.)
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kafka_format.cli import main
from kafka_format.cli.dump import DumpOptions, dump
from kafka_format.internal.remote_log_metadata import (
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    TopicIdPartition,
    encode_remote_log_metadata,
)
from kafka_format.writer import Record, SegmentWriter, build_v2_batch

T0 = 1_700_000_000_000
TP = TopicIdPartition("AAAAAAAAAAAAAAAAAAAAAQ", "orders", 1)
SEG = "_____________________w"
SEG_TEXT = "RemoteLogSegmentId{topicIdPartition=AAAAAAAAAAAAAAAAAAAAAQ:orders-1, id=_____________________w}"


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``__remote_log_metadata-0`` segment: segment metadata, an update, a partition delete, an unknown
    api key and a record without a value, one batch (offsets 0 to 4)."""
    monkeypatch.chdir(tmp_path)
    values = [
        encode_remote_log_metadata(RemoteLogSegmentMetadata(TP, SEG, 0, 41, 2, T0, T0 + 1, {4: 0, 5: 30}, 900, b"ab",
                                                            RemoteLogSegmentState.COPY_SEGMENT_STARTED, True)),
        encode_remote_log_metadata(RemoteLogSegmentMetadataUpdate(TP, SEG, None,
                                                                  RemoteLogSegmentState.COPY_SEGMENT_FINISHED, T0 + 2, 2)),
        encode_remote_log_metadata(RemotePartitionDeleteMetadata(TP, RemotePartitionDeleteState.DELETE_PARTITION_MARKED,
                                                                 T0 + 3, 3000)),
        b"\x01\x05\x00",
        None,
    ]
    directory = tmp_path / "__remote_log_metadata-0"
    directory.mkdir()
    seg = SegmentWriter(directory, 0)
    seg.append([build_v2_batch([Record(value=v, timestamp=T0) for v in values], base_offset=0,
                               partition_leader_epoch=5)])
    seg.close()
    return Path("__remote_log_metadata-0") / seg.log_path.name


SEGMENT = (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={SEG_TEXT}, startOffset=0, endOffset=41, brokerId=2, "
           f"maxTimestampMs={T0}, eventTimestampMs={T0 + 1}, segmentLeaderEpochs={{4=0, 5=30}}, segmentSizeInBytes=900, "
           "customMetadata=Optional[CustomMetadata{2 bytes}], state=COPY_SEGMENT_STARTED")
UPDATE = (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={SEG_TEXT}, customMetadata=Optional.empty, "
          f"state=COPY_SEGMENT_FINISHED, eventTimestampMs={T0 + 2}, brokerId=2}}")
DELETE = ("RemotePartitionDeleteMetadata{topicPartition=AAAAAAAAAAAAAAAAAAAAAQ:orders-1, "
          f"state=DELETE_PARTITION_MARKED, eventTimestampMs={T0 + 3}, brokerId=3000}}")
UNKNOWN = "Error at offset 3, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 5"
NO_VALUE = ('Error at offset 4, skipping. Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
            '"org.apache.kafka.common.record{}.Record.value()" is null')


def _dump(path: Path, version: str, **options: object) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    code = dump(DumpOptions(files=(str(path),), decoder="remote-log-metadata", kafka_version=version,
                            **options), out, err)  # type: ignore[arg-type]
    return code, out.getvalue().splitlines(), err.getvalue()


# valueSize of the segment record: frame 3, RemoteLogSegmentIdEntry 45 (name 1 + 6, topic id 16, partition 4,
# tags 1; segment id 16, tags 1), offsets/broker/timestamps 36, 2 leader epochs 1 + 26, size 4, custom
# metadata 1 + 2, state 1, TxnIndexEmpty as a tagged field 4: 123


def _payloads(lines: list[str]) -> list[str]:
    return [line.split(" payload: ", 1)[1] for line in lines if " payload: " in line]


def test_java_tool_text(log: Path) -> None:
    code, lines, err = _dump(log, "4.4")
    assert (code, err) == (0, "")
    assert lines[:2] == [f"Dumping {log}", "Log starting offset: 0"]
    assert lines[2].startswith("baseOffset: 0 lastOffset: 4 count: 5 ")
    assert lines[3] == (f"| offset: 0 CreateTime: {T0} keySize: -1 valueSize: 123 sequence: -1 headerKeys: [] "
                        f"payload: {SEGMENT}, txnIdxEmpty=true}}")
    assert _payloads(lines) == [f"{SEGMENT}, txnIdxEmpty=true}}", UPDATE, DELETE, UNKNOWN, NO_VALUE.format(".internal")]
    assert lines[7] == f"| offset: 4 CreateTime: {T0} keySize: -1 valueSize: -1 sequence: -1 headerKeys: [] payload: " \
        + NO_VALUE.format(".internal")


def test_scala_tool_text(log: Path) -> None:
    code, lines, _ = _dump(log, "3.9")
    assert code == 0
    assert _payloads(lines) == [f"{SEGMENT}}}", UPDATE, DELETE, UNKNOWN, NO_VALUE.format("")]
    assert _payloads(_dump(log, "4.0")[1])[0] == f"{SEGMENT}, txnIdxEmpty=true}}"   # 4.0: the Scala tool, KIP-1058


def test_skip_record_metadata_prefix(log: Path) -> None:
    java = _dump(log, "4.4", skip_record_metadata=True)[1]
    scala = _dump(log, "3.9", skip_record_metadata=True)[1]
    assert java[3:6] == [f"| payload: {SEGMENT}, txnIdxEmpty=true}}", f"| payload: {UPDATE}", f"| payload: {DELETE}"]
    assert scala[3:5] == [f" payload: {SEGMENT}}}", f" payload: {UPDATE}"]


def test_json_records_gain_the_decoded_value(log: Path) -> None:
    code, lines, _ = _dump(log, "4.4", json=True)
    records = [json.loads(line) for line in lines if json.loads(line)["type"] == "record"]
    assert code == 0 and len(records) == 5
    assert records[0]["payload"] == f"{SEGMENT}, txnIdxEmpty=true}}"
    assert records[0]["remoteLogMetadata"] == {
        "type": "RemoteLogSegmentMetadata", "topicId": TP.topic_id, "topic": "orders", "partition": 1,
        "segmentId": SEG, "startOffset": 0, "endOffset": 41, "brokerId": 2, "maxTimestampMs": T0,
        "eventTimestampMs": T0 + 1, "segmentLeaderEpochs": [{"leaderEpoch": 4, "offset": 0},
                                                           {"leaderEpoch": 5, "offset": 30}],
        "segmentSizeInBytes": 900, "customMetadata": "YWI=", "state": "COPY_SEGMENT_STARTED", "txnIndexEmpty": True}
    assert records[2]["remoteLogMetadata"]["state"] == "DELETE_PARTITION_MARKED"
    assert [r["remoteLogMetadata"] for r in records[3:]] == [None, None]
    assert records[3]["payload"] == UNKNOWN
    assert "keyText" not in records[0]


def test_json_without_a_decoder_has_no_payload(log: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert dump(DumpOptions(files=(str(log),), deep_iteration=True, json=True), out, err) == 0
    records = [json.loads(line) for line in out.getvalue().splitlines() if '"type":"record"' in line]
    assert len(records) == 5 and all("payload" not in r for r in records)


def test_the_flag_is_a_decoder(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump", "--remote-log-metadata-decoder", "--cluster-metadata-decoder", "x.log"]) == 2
    assert main(["dump", "--help"]) == 0
    assert "--remote-log-metadata-decoder" in capsys.readouterr().out
