"""``klogs dump --remote-log-metadata-decoder`` against Kafka's own ``DumpLogSegments`` (4.4.0: the Java
tool; 3.9.1: the Scala tool), on a ``__remote_log_metadata-0`` segment this test writes with the
project's writer: every record type (segment metadata, its updates through every state, partition
deletes, a snapshot record), custom metadata present, empty and absent, several leader epochs (also
out of order and repeated in one record), ``TxnIndexEmpty`` set and unset, an unknown tagged field,
a transaction committed and one aborted (control batches are not decoded), a record without a value,
and records Kafka refuses: an unknown api key, frame versions 0 and 2, a truncated record, trailing
bytes, unknown state ids, a negative start offset, an end before the start, no leader epochs, a
record version the classes do not know.  The text must be equal line for line.

Beside it: :func:`~kafka_format.internal.schemas.releases.storage_schemas` of each release against the
``message/*.json`` inside that release's ``kafka-storage`` jar.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import kafka_dist
import kafka_dump
import pytest

from kafka_format.internal.api_message import write_framed
from kafka_format.internal.protocol import write_uvarint
from kafka_format.internal.remote_log_metadata import (
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataSnapshot,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    TopicIdPartition,
    encode_remote_log_metadata,
)
from kafka_format.writer import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    LogDirWriter,
    Record,
    SegmentWriter,
    build_control_batch,
    build_v2_batch,
)

pytestmark = pytest.mark.conformance

T0 = 1_700_000_000_000
TP = TopicIdPartition("Z6fTYnNWSnSE0_4EuHe7CA", "orders", 3)
TP_UNICODE = TopicIdPartition("kc3DgRmLTsKz-uI7a1jPvA", "tøpic-ü", 0)
SEG_A, SEG_B = "AAAAAAAAAAAAAAAAAAAAAQ", "_____________________w"
S, D = RemoteLogSegmentState, RemotePartitionDeleteState
FLAG_SETS = (["--remote-log-metadata-decoder"],
             ["--remote-log-metadata-decoder", "--skip-record-metadata"],
             ["--deep-iteration", "--print-data-log", "--remote-log-metadata-decoder"])


def _segment_data(**changes: Any) -> dict[str, Any]:
    """A RemoteLogSegmentMetadataRecord as the schema's field dict (to write what no value class can)."""
    data: dict[str, Any] = {
        "remoteLogSegmentId": {"topicIdPartition": {"name": TP.topic, "id": TP.topic_id, "partition": TP.partition},
                               "id": SEG_B},
        "startOffset": 10, "endOffset": 20, "brokerId": 1, "maxTimestampMs": T0, "eventTimestampMs": T0 + 1,
        "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": 10}], "segmentSizeInBytes": 512,
        "customMetadata": None, "remoteLogSegmentState": 0,
    }
    data.update(changes)
    return data


def _with_topic_bytes(name: bytes) -> bytes:
    """A segment record whose topic name is ``name`` (any bytes, same length as a placeholder)."""
    placeholder = b"#" * len(name)
    data = _segment_data()
    data["remoteLogSegmentId"]["topicIdPartition"]["name"] = placeholder.decode()
    return write_framed("RemoteLogSegmentMetadataRecord", data, 0, 0).replace(placeholder, name)


def _values() -> list[bytes | None]:
    """The record values, in log order (see the module doc)."""
    seg = RemoteLogSegmentMetadata(TP, SEG_A, 0, 99, 1, T0, T0 + 5, {0: 0}, 4096, None, S.COPY_SEGMENT_STARTED)
    seg_epochs = RemoteLogSegmentMetadata(TP, SEG_B, 100, 199, 2, T0 + 10, T0 + 11, {5: 190, 0: 100, 2: 150},
                                          8192, b"", S.COPY_SEGMENT_STARTED, txn_index_empty=True)

    def update(segment: str, state: RemoteLogSegmentState, custom: bytes | None, at: int) -> bytes:
        return encode_remote_log_metadata(RemoteLogSegmentMetadataUpdate(TP, segment, custom, state, T0 + at, 3))

    def delete(state: RemotePartitionDeleteState, at: int) -> bytes:
        return encode_remote_log_metadata(RemotePartitionDeleteMetadata(TP, state, T0 + at, 0))

    segment_raw = lambda **c: write_framed("RemoteLogSegmentMetadataRecord", _segment_data(**c), 0, 0)  # noqa: E731
    valid = [
        encode_remote_log_metadata(seg),
        update(SEG_A, S.COPY_SEGMENT_FINISHED, b"\x01\x02\x03", 20),
        encode_remote_log_metadata(seg_epochs),
        update(SEG_B, S.COPY_SEGMENT_FINISHED, None, 30),
        update(SEG_A, S.DELETE_SEGMENT_STARTED, None, 40),
        update(SEG_A, S.DELETE_SEGMENT_FINISHED, b"x" * 300, 50),
        encode_remote_log_metadata(RemoteLogSegmentMetadata(TP_UNICODE, SEG_A, 7, 7, 9, -1, T0, {3: 7}, 1, b"\x00",
                                                            S.COPY_SEGMENT_STARTED)),
        delete(D.DELETE_PARTITION_MARKED, 60),
        delete(D.DELETE_PARTITION_STARTED, 61),
        delete(D.DELETE_PARTITION_FINISHED, 62),
        encode_remote_log_metadata(RemoteLogSegmentMetadataSnapshot(SEG_B, -5, -9, 4, T0, T0 + 70, {1: 3, 0: 1}, 77,
                                                                    b"snap", S.DELETE_SEGMENT_STARTED, True)),
        segment_raw(segmentLeaderEpochs=[{"leaderEpoch": 1, "offset": 10}, {"leaderEpoch": 1, "offset": 12}]),
        segment_raw(_unknownTaggedFields={5: b"\x07\x07"}),
        segment_raw(remoteLogSegmentState=3, customMetadata=b"abc"),
        _with_topic_bytes(b"t\xed\xa0\x80x\xff\xc3"),                      # not UTF-8: Java's replacement
    ]
    refused = [
        write_uvarint(1) + write_uvarint(7) + write_uvarint(0) + b"\x00",            # unknown api key
        write_uvarint(1) + bytes.fromhex("ffffffff0f") + write_uvarint(0),            # api key -1 (int wrap)
        write_uvarint(1) + write_uvarint(0x8000) + write_uvarint(0),                  # too large
        b"", b"\x00\x00\x00", b"\x02\x00\x00",                                         # frame versions
        encode_remote_log_metadata(seg)[:40],                                          # truncated
        delete(D.DELETE_PARTITION_MARKED, 63) + b"\x00",                               # garbage after
        segment_raw(startOffset=-1),
        segment_raw(startOffset=50, endOffset=49),
        segment_raw(segmentLeaderEpochs=[]),
        segment_raw(remoteLogSegmentState=9),
        segment_raw(startOffset=-3, remoteLogSegmentState=9),                          # offsets checked first
        write_framed("RemoteLogSegmentMetadataUpdateRecord", {
            "remoteLogSegmentId": _segment_data()["remoteLogSegmentId"], "brokerId": 1, "eventTimestampMs": 1,
            "customMetadata": None, "remoteLogSegmentState": -2}, 0, 1),
        write_framed("RemotePartitionDeleteMetadataRecord", {
            "topicIdPartition": {"name": TP.topic, "id": TP.topic_id, "partition": TP.partition},
            "brokerId": 1, "eventTimestampMs": 1, "remotePartitionDeleteState": 5}, 0, 2),
        write_framed("RemoteLogSegmentMetadataSnapshotRecord", {
            "segmentId": SEG_A, "startOffset": 0, "endOffset": 1, "brokerId": 1, "maxTimestampMs": 1,
            "eventTimestampMs": 1, "segmentLeaderEpochs": [], "segmentSizeInBytes": 1, "customMetadata": None,
            "remoteLogSegmentState": 7}, 0, 3),                                         # state before epochs
        write_framed("RemoteLogSegmentMetadataSnapshotRecord", {
            "segmentId": SEG_A, "startOffset": 0, "endOffset": 1, "brokerId": 1, "maxTimestampMs": 1,
            "eventTimestampMs": 1, "segmentLeaderEpochs": [], "segmentSizeInBytes": 1, "customMetadata": None,
            "remoteLogSegmentState": 1}, 0, 3),
        write_uvarint(1) + write_uvarint(2) + write_uvarint(1) + delete(D.DELETE_PARTITION_MARKED, 64)[3:],  # v1
        None,                                                                           # no value
        segment_raw(_unknownTaggedFields={0: b"\x01\x00"}),  # TxnIndexEmpty of 2 bytes: 4.x reads 1, 3.9 skips 2
    ]
    return [*valid, *refused]


def write_segment(root: Path) -> Path:
    """A log dir whose ``__remote_log_metadata-0`` holds :func:`_values` in batches of leader epochs 0, 1
    and 3 (a few values per batch), then a committed and an aborted transaction; its ``.log`` path."""
    d = LogDirWriter(root, node_id=1, cluster_id="rlmm-conformance")
    p = d.partition("__remote_log_metadata", 0)
    values = _values()
    offset = 0
    for i in range(0, len(values), 3):
        chunk = values[i:i + 3]
        epoch = (0, 1, 3)[min(i // 12, 2)]
        p.append(build_v2_batch([Record(value=v, timestamp=T0 + offset + j) for j, v in enumerate(chunk)],
                                base_offset=offset, partition_leader_epoch=epoch, producer_id=1000,
                                producer_epoch=0, base_sequence=offset))
        offset += len(chunk)
    for control, pid in ((CONTROL_COMMIT, 2000), (CONTROL_ABORT, 2001)):
        txn = encode_remote_log_metadata(RemotePartitionDeleteMetadata(TP, D.DELETE_PARTITION_MARKED, T0, pid))
        p.append(build_v2_batch([Record(value=txn, timestamp=T0)], base_offset=offset, partition_leader_epoch=3,
                                producer_id=pid, producer_epoch=0, base_sequence=0, transactional=True))
        p.append(build_control_batch(control, base_offset=offset + 1, timestamp=T0 + 1, producer_id=pid,
                                     producer_epoch=0, coordinator_epoch=4, partition_leader_epoch=3))
        offset += 2
    p.close()
    d.close(written_at_ms=T0)
    return root / "__remote_log_metadata-0" / "00000000000000000000.log"


def write_plain_segment(root: Path) -> Path:
    """Records with a key and a value, a value only, a key only: ``--skip-record-metadata`` puts the
    payload after the record indent in the Java tool, after a space in the Scala one (any decoder)."""
    directory = root / "plain-0"
    directory.mkdir(parents=True)
    seg = SegmentWriter(directory, 0)
    seg.append([build_v2_batch([Record(None, b"value only", T0), Record(b"k", b"v", T0), Record(b"key only", None, T0)],
                               base_offset=0)])
    seg.close()
    return seg.log_path


def _need_javac() -> None:
    if shutil.which("javac") is None and not Path(str(kafka_dist.java())).with_name("javac").exists():
        pytest.skip("javac not found (the drivers are compiled on first use)")


def test_remote_log_metadata_decoder_equals_kafka(kafka_version: str, conformance: Any, tmp_path: Path) -> None:
    """Every flag set over the segment: klogs dump's text equals DumpLogSegments'."""
    _need_javac()
    log = write_segment(tmp_path / "logdir")
    jobs = [["--files", str(log), *flags] for flags in FLAG_SETS]
    jobs.append(["--files", str(write_plain_segment(tmp_path)), "--print-data-log", "--skip-record-metadata"])
    ours = [kafka_dump.run_ours(kafka_version, job) for job in jobs]
    theirs = kafka_dump.run_kafka(kafka_version, jobs, tmp_path)
    before = len(conformance.cases)
    for kafka, mine in zip(theirs, ours, strict=True):
        assert any("payload: " in line for line in kafka.stdout), f"Kafka printed no payload: {kafka.stderr[-3:]}"
        for case in kafka_dump.compare_run(kafka, mine):
            conformance.record("dump", kafka_version, "remote-log-metadata " + case.name, case.equal, case.detail)
    assert len(conformance.cases) - before >= 2 * len(jobs)
    skipped = [line for line in theirs[0].stdout if ", skipping. " in line]
    assert len(skipped) >= 18, f"Kafka refused only {len(skipped)} records"
    conformance.assert_equal("dump", kafka_version, at_least=2 * len(jobs))


def test_encoder_writes_what_kafkas_serde_writes(kafka_version: str, conformance: Any) -> None:
    """Every value the encoder writes is what Kafka's ``RemoteLogMetadataSerde`` writes for the value it
    reads from it (``serialize(deserialize(ours)) == ours``), and its ``toString`` is ours."""
    from kafka_format.internal.remote_log_metadata import decode_remote_log_metadata

    _need_javac()
    release = _release(kafka_version)
    values = [
        encode_remote_log_metadata(m) for m in (
            RemoteLogSegmentMetadata(TP, SEG_A, 0, 99, 1, T0, T0 + 5, {0: 0}, 4096, None, S.COPY_SEGMENT_STARTED),
            RemoteLogSegmentMetadata(TP_UNICODE, SEG_B, 100, 199, 2, -1, T0, {5: 190, 0: 100, 2: 150}, 8192, b"",
                                     S.COPY_SEGMENT_FINISHED, txn_index_empty=release >= (4, 0)),
            RemoteLogSegmentMetadataUpdate(TP, SEG_A, b"\x01\x02\x03", S.DELETE_SEGMENT_STARTED, T0, 3),
            RemoteLogSegmentMetadataUpdate(TP, SEG_B, None, S.DELETE_SEGMENT_FINISHED, T0, -1),
            RemotePartitionDeleteMetadata(TP, D.DELETE_PARTITION_FINISHED, T0, 0),
            RemoteLogSegmentMetadataSnapshot(SEG_B, -5, -9, 4, T0, T0 + 70, {1: 3, 0: 1}, 77, b"snap",
                                             S.DELETE_SEGMENT_STARTED, release >= (4, 0)),
        )]
    answers = kafka_dump.remote_log_metadata_serde(kafka_version, values)
    for value, (kind, written, text) in zip(values, answers, strict=True):
        ours = decode_remote_log_metadata(value, release=release).kafka_text(release)
        equal = kind == "OK" and written == value.hex() and text == ours
        conformance.record("dump", kafka_version, f"remote-log-metadata serde {ours[:60]}", equal,
                           "" if equal else f"kafka: {kind} {written} {text}; klogs: {value.hex()} {ours}")
    conformance.assert_equal("dump", kafka_version, at_least=len(values))


def _release(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def test_release_storage_schemas_are_the_releases(kafka_version: str) -> None:
    """``storage_schemas(release)`` equals the definitions in the release's ``kafka-storage`` jar
    (trimmed as ``_generate.py`` trims)."""
    from kafka_format.internal.schemas.releases import storage_schemas

    theirs = kafka_dist.jar_definitions(kafka_version, "kafka-storage", "message/")
    assert {"RemoteLogSegmentMetadataRecord", "RemotePartitionDeleteMetadataRecord"} <= set(theirs)
    ours = storage_schemas(_release(kafka_version))
    assert sorted(ours) == sorted(theirs)
    assert [n for n in ours if ours[n] != theirs[n]] == []
