"""Tiered storage's ``__remote_log_metadata`` records: bytes, value classes, and the dump tool's text.

Expected bytes are written field by field from ``storage/src/main/resources/message/*.json`` (all
flexible v0: compact strings/bytes/arrays with length + 1, a tagged-field count ending every struct)
behind ``AbstractApiMessageSerde``'s frame (frame version 1, api key, version); Kafka 4.4.0's
``RemoteLogMetadataSerde.serialize`` writes exactly these for the same values.  Expected texts are
the ``toString`` of ``RemoteLogSegmentMetadata`` and its siblings, and the messages of the exceptions
their constructors, the serde and ``MetadataRecordType.fromId`` throw.
"""

from __future__ import annotations

import random
import tracemalloc

import pytest

from kafka_format.common.errors import InternalTopicFormatError
from kafka_format.internal.api_message import ApiMessageSerdeError, write_framed
from kafka_format.internal.protocol import write_uvarint
from kafka_format.internal.remote_log_metadata import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataSnapshot,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    TopicIdPartition,
    as_json_object,
    decode_remote_log_metadata,
    encode_remote_log_metadata,
    format_remote_log_metadata,
    java_map_text,
)

S, D = RemoteLogSegmentState, RemotePartitionDeleteState
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"         # Uuid(0, 1): 15 zero bytes, then 0x01
SEGMENT_ID = "_____________________w"       # Uuid(-1, -1): 16 bytes 0xff
TP = TopicIdPartition(TOPIC_ID, "t", 0)

FRAME = "01"                                 # frame version 1
# TopicIdPartitionEntry {Name "t", Id, Partition 0}: compact string (1 + 1) "t", 16 bytes, int32, no tags
TOPIC_ID_PARTITION = "02" "74" + "00" * 15 + "01" + "00000000" + "00"
# RemoteLogSegmentIdEntry {TopicIdPartition, Id}: the struct above, 16 bytes, no tags
SEGMENT_ID_ENTRY = TOPIC_ID_PARTITION + "ff" * 16 + "00"


def _segment(**changes: object) -> RemoteLogSegmentMetadata:
    fields: dict[str, object] = dict(partition=TP, segment_id=SEGMENT_ID, start_offset=5, end_offset=9, broker_id=1,
                                     max_timestamp_ms=7, event_timestamp_ms=8, segment_leader_epochs={2: 7, 0: 5},
                                     segment_size_in_bytes=100, custom_metadata=b"\xab",
                                     state=S.COPY_SEGMENT_FINISHED, txn_index_empty=True)
    fields.update(changes)
    return RemoteLogSegmentMetadata(**fields)  # type: ignore[arg-type]


# --- bytes ------------------------------------------------------------------------------------------


def test_segment_metadata_record_bytes() -> None:
    expected = bytes.fromhex(
        FRAME + "00" "00"                                      # api key 0, version 0
        + SEGMENT_ID_ENTRY
        + "0000000000000005" "0000000000000009"                # StartOffset, EndOffset
        + "00000001"                                           # BrokerId
        + "0000000000000007" "0000000000000008"                # MaxTimestampMs, EventTimestampMs
        + "03"                                                 # SegmentLeaderEpochs: 2 entries, by epoch
        + "00000000" "0000000000000005" "00"                   #   {LeaderEpoch 0, Offset 5}
        + "00000002" "0000000000000007" "00"                   #   {LeaderEpoch 2, Offset 7}
        + "00000064"                                           # SegmentSizeInBytes 100
        + "02" "ab"                                            # CustomMetadata: 1 byte
        + "01"                                                 # RemoteLogSegmentState COPY_SEGMENT_FINISHED
        + "01" "00" "01" "01")                                 # 1 tagged field: tag 0 TxnIndexEmpty, 1 byte, true
    metadata = _segment()
    assert encode_remote_log_metadata(metadata) == expected
    assert decode_remote_log_metadata(expected) == metadata
    # txnIndexEmpty false is the tagged field's default: not written (what a 3.9 broker writes too)
    unset = encode_remote_log_metadata(_segment(txn_index_empty=False))
    assert unset == expected[:-4] + b"\x00"


def test_update_record_bytes() -> None:
    expected = bytes.fromhex(
        FRAME + "01" "00" + SEGMENT_ID_ENTRY
        + "00000004"                                           # BrokerId
        + "0000000000000008"                                   # EventTimestampMs
        + "00"                                                 # CustomMetadata null
        + "02"                                                 # DELETE_SEGMENT_STARTED
        + "00")
    update = RemoteLogSegmentMetadataUpdate(TP, SEGMENT_ID, None, S.DELETE_SEGMENT_STARTED, 8, 4)
    assert encode_remote_log_metadata(update) == expected
    assert decode_remote_log_metadata(expected) == update


def test_partition_delete_record_bytes() -> None:
    expected = bytes.fromhex(FRAME + "02" "00" + TOPIC_ID_PARTITION
                             + "00000005" "00000000000007d0" "01" "00")   # BrokerId 5, 2000 ms, STARTED
    delete = RemotePartitionDeleteMetadata(TP, D.DELETE_PARTITION_STARTED, 2000, 5)
    assert encode_remote_log_metadata(delete) == expected
    assert decode_remote_log_metadata(expected) == delete


def test_snapshot_record_bytes() -> None:
    expected = bytes.fromhex(
        FRAME + "03" "00" + "ff" * 16                          # SegmentId
        + "0000000000000005" "0000000000000009" "00000001" "0000000000000007" "0000000000000008"
        + "02" "00000000" "0000000000000005" "00"              # one leader epoch
        + "00000064" "00" "00" "00")                           # size, CustomMetadata null, STARTED, no tags
    snapshot = RemoteLogSegmentMetadataSnapshot(SEGMENT_ID, 5, 9, 1, 7, 8, {0: 5}, 100, None, S.COPY_SEGMENT_STARTED)
    assert encode_remote_log_metadata(snapshot) == expected
    assert decode_remote_log_metadata(expected) == snapshot


@pytest.mark.parametrize("metadata", [
    _segment(custom_metadata=None, state=S.COPY_SEGMENT_STARTED, txn_index_empty=False),
    _segment(custom_metadata=b"", segment_leader_epochs={7: 5}, start_offset=0, end_offset=0),
    _segment(partition=TopicIdPartition("Z6fTYnNWSnSE0_4EuHe7CA", "tøpic-ü" * 40, 2_000_000_000),
             custom_metadata=bytes(range(256)) * 40, max_timestamp_ms=-1, broker_id=-1),
    RemoteLogSegmentMetadataUpdate(TP, SEGMENT_ID, b"\x00" * 5, S.COPY_SEGMENT_FINISHED, -1, 2**31 - 1),
    RemotePartitionDeleteMetadata(TP, D.DELETE_PARTITION_FINISHED, 2**63 - 1, 0),
    RemoteLogSegmentMetadataSnapshot(SEGMENT_ID, -5, -9, 0, 0, 0, {3: 1, 1: 2}, 0, b"s", S.DELETE_SEGMENT_FINISHED, True),
], ids=["started", "empty-custom", "unicode-large", "update", "delete", "snapshot-odd-offsets"])
def test_round_trip(metadata: object) -> None:
    encoded = encode_remote_log_metadata(metadata)  # type: ignore[arg-type]
    assert decode_remote_log_metadata(encoded) == metadata
    assert encode_remote_log_metadata(decode_remote_log_metadata(encoded)) == encoded


def test_leader_epochs_are_a_sorted_map_and_a_repeated_epoch_keeps_its_last_offset() -> None:
    # the transform fills a HashMap (put: the last entry of an epoch wins), the constructor a TreeMap
    data = {"remoteLogSegmentId": {"topicIdPartition": {"name": "t", "id": TOPIC_ID, "partition": 0}, "id": SEGMENT_ID},
            "startOffset": 0, "endOffset": 50, "brokerId": 1, "maxTimestampMs": 0, "eventTimestampMs": 0,
            "segmentLeaderEpochs": [{"leaderEpoch": 9, "offset": 40}, {"leaderEpoch": 1, "offset": 3},
                                    {"leaderEpoch": 9, "offset": 44}],
            "segmentSizeInBytes": 1, "customMetadata": None, "remoteLogSegmentState": 0}
    decoded = decode_remote_log_metadata(write_framed("RemoteLogSegmentMetadataRecord", data, 0, 0))
    assert isinstance(decoded, RemoteLogSegmentMetadata)
    assert list(decoded.segment_leader_epochs.items()) == [(1, 3), (9, 44)]
    assert java_map_text(decoded.segment_leader_epochs) == "{1=3, 9=44}"


def test_a_release_before_4_0_skips_txn_index_empty() -> None:
    encoded = encode_remote_log_metadata(_segment())          # TxnIndexEmpty true, as a 4.x broker writes it
    assert decode_remote_log_metadata(encoded).txn_index_empty is True   # type: ignore[union-attr]
    assert decode_remote_log_metadata(encoded, release=(3, 9)).txn_index_empty is False  # type: ignore[union-attr]
    # a TxnIndexEmpty of 2 bytes: 4.x reads its first byte in place and finds one byte too many; 3.9
    # skips it by its size (an unknown tag)
    odd = encoded[:-4] + bytes.fromhex("01" "00" "02" "01" "00")
    with pytest.raises(ApiMessageSerdeError) as e:
        decode_remote_log_metadata(odd)
    assert e.value.kafka_message == "Found 1 byte(s) of garbage after 0"
    assert decode_remote_log_metadata(odd, release=(3, 9)) == _segment(txn_index_empty=False)


# --- the value classes' checks -------------------------------------------------------------------------

# Byte positions in a record of TP / SEGMENT_ID: frame (3) + RemoteLogSegmentIdEntry (40)
START_OFFSET_AT, END_OFFSET_AT, EPOCHS_AT = 43, 51, 79
STATE_AT = EPOCHS_AT + 1 + 2 * 13 + 4 + 2       # epochs, size, custom metadata


def _segment_record(**changes: object) -> bytes:
    data: dict[str, object] = {
        "remoteLogSegmentId": {"topicIdPartition": {"name": "t", "id": TOPIC_ID, "partition": 0}, "id": SEGMENT_ID},
        "startOffset": 5, "endOffset": 9, "brokerId": 1, "maxTimestampMs": 7, "eventTimestampMs": 8,
        "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": 5}, {"leaderEpoch": 2, "offset": 7}],
        "segmentSizeInBytes": 100, "customMetadata": b"\xab", "remoteLogSegmentState": 1}
    data.update(changes)
    return write_framed("RemoteLogSegmentMetadataRecord", data, 0, 0)


@pytest.mark.parametrize(("changes", "message", "position", "expected"), [
    ({"startOffset": -1}, "Unexpected start offset = -1. StartOffset for a remote segment cannot be negative",
     START_OFFSET_AT, "startOffset >= 0"),
    ({"startOffset": 50, "endOffset": 49},
     "Unexpected end offset = 49. EndOffset for a remote segment cannot be less than startOffset = 50",
     END_OFFSET_AT, "endOffset >= startOffset (50)"),
    ({"segmentLeaderEpochs": []}, "segmentLeaderEpochs can not be null or empty", EPOCHS_AT,
     "at least one leader epoch"),
    ({"remoteLogSegmentState": 4}, "state can not be null", STATE_AT, "a RemoteLogSegmentState id (0 to 3)"),
    ({"remoteLogSegmentState": 4, "startOffset": -2},   # the base metadata is built before the update
     "Unexpected start offset = -2. StartOffset for a remote segment cannot be negative", START_OFFSET_AT,
     "startOffset >= 0"),
])
def test_segment_record_checks(changes: dict[str, object], message: str, position: int, expected: str) -> None:
    with pytest.raises(ApiMessageSerdeError) as e:
        decode_remote_log_metadata(_segment_record(**changes))
    assert isinstance(e.value, InternalTopicFormatError)
    assert (e.value.kafka_message, e.value.position, e.value.expected) == (message, position, expected)
    assert message in str(e.value) and f"at byte {position}" in str(e.value)


def test_update_delete_and_snapshot_state_checks() -> None:
    update = write_framed("RemoteLogSegmentMetadataUpdateRecord", {
        "remoteLogSegmentId": {"topicIdPartition": {"name": "t", "id": TOPIC_ID, "partition": 0}, "id": SEGMENT_ID},
        "brokerId": 1, "eventTimestampMs": 1, "customMetadata": None, "remoteLogSegmentState": -1}, 0, 1)
    with pytest.raises(ApiMessageSerdeError) as e:
        decode_remote_log_metadata(update)
    assert (e.value.kafka_message, e.value.position, e.value.found) == ("state can not be null", 3 + 40 + 12 + 1, "-1")
    delete = write_framed("RemotePartitionDeleteMetadataRecord", {
        "topicIdPartition": {"name": "t", "id": TOPIC_ID, "partition": 0}, "brokerId": 1, "eventTimestampMs": 1,
        "remotePartitionDeleteState": 3}, 0, 2)
    with pytest.raises(ApiMessageSerdeError) as e:            # Objects.requireNonNull(state): no message
        decode_remote_log_metadata(delete)
    assert (e.value.kafka_message, e.value.position) == (None, 3 + 23 + 12)
    assert format_remote_log_metadata(delete, 4) == "Error at offset 4, skipping. null"
    snapshot = {"segmentId": SEGMENT_ID, "startOffset": 0, "endOffset": 1, "brokerId": 1, "maxTimestampMs": 1,
                "eventTimestampMs": 1, "segmentLeaderEpochs": [], "segmentSizeInBytes": 1, "customMetadata": None,
                "remoteLogSegmentState": 8}
    for state, message in ((8, "state can not be null"), (0, "segmentLeaderEpochs can not be null or empty")):
        with pytest.raises(ApiMessageSerdeError) as e:        # the snapshot checks its state first
            decode_remote_log_metadata(write_framed("RemoteLogSegmentMetadataSnapshotRecord",
                                                    {**snapshot, "remoteLogSegmentState": state}, 0, 3))
        assert e.value.kafka_message == message


def test_constructors_check_as_kafka_does() -> None:
    with pytest.raises(InternalTopicFormatError, match="Unexpected start offset = -1"):
        _segment(start_offset=-1)
    with pytest.raises(InternalTopicFormatError, match="cannot be less than startOffset = 5"):
        _segment(end_offset=4)
    with pytest.raises(InternalTopicFormatError, match="segmentLeaderEpochs can not be null or empty"):
        _segment(segment_leader_epochs={})
    with pytest.raises(InternalTopicFormatError, match="state can not be null"):
        _segment(state=7)
    with pytest.raises(InternalTopicFormatError, match="segmentLeaderEpochs can not be null or empty"):
        RemoteLogSegmentMetadataSnapshot(SEGMENT_ID, 0, 0, 0, 0, 0, {}, 0, None, S.COPY_SEGMENT_STARTED)
    other = RemoteLogSegmentMetadataUpdate(TP, TOPIC_ID, None, S.COPY_SEGMENT_FINISHED, 1, 1)
    with pytest.raises(ValueError, match="does not have this instance's remoteLogSegmentId"):
        _segment().create_with_updates(other)


def test_create_with_updates_keeps_the_segment_and_takes_the_update() -> None:
    base = _segment(state=S.COPY_SEGMENT_STARTED, custom_metadata=None)
    update = RemoteLogSegmentMetadataUpdate(TP, SEGMENT_ID, b"cm", S.COPY_SEGMENT_FINISHED, 99, 6)
    assert base.create_with_updates(update) == _segment(custom_metadata=b"cm", event_timestamp_ms=99, broker_id=6)
    assert base.remote_log_segment_id == RemoteLogSegmentId(TP, SEGMENT_ID) == update.remote_log_segment_id


@pytest.mark.parametrize(("source", "allowed"), [
    (None, {S.COPY_SEGMENT_STARTED}),
    (S.COPY_SEGMENT_STARTED, {S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED}),
    (S.COPY_SEGMENT_FINISHED, {S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED}),
    (S.DELETE_SEGMENT_STARTED, {S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED}),
    (S.DELETE_SEGMENT_FINISHED, {S.DELETE_SEGMENT_FINISHED}),
])
def test_segment_state_transitions(source: RemoteLogSegmentState | None, allowed: set[RemoteLogSegmentState]) -> None:
    assert {t for t in S if S.is_valid_transition(source, t)} == allowed


def test_partition_delete_state_transitions() -> None:
    valid = {(a, b) for a in (None, *D) for b in D if D.is_valid_transition(a, b)}
    assert valid == {(None, D.DELETE_PARTITION_MARKED), (D.DELETE_PARTITION_MARKED, D.DELETE_PARTITION_STARTED),
                     (D.DELETE_PARTITION_STARTED, D.DELETE_PARTITION_FINISHED)} | {(s, s) for s in D}


# --- bad bytes --------------------------------------------------------------------------------------


def test_every_truncation_is_a_clear_error() -> None:
    for encoded in (encode_remote_log_metadata(_segment()),
                    encode_remote_log_metadata(RemotePartitionDeleteMetadata(TP, D.DELETE_PARTITION_MARKED, 1, 1))):
        for cut in range(len(encoded)):
            with pytest.raises(ApiMessageSerdeError) as e:
                decode_remote_log_metadata(encoded[:cut])
            assert e.value.position is not None and 0 <= e.value.position <= cut
            assert e.value.kafka_message in ("Error while reading frame version", "Error while reading type",
                                             "Error while reading version",
                                             f"Failed to deserialize record with type {encoded[1]}")
            assert e.value.expected


def test_garbage_never_escapes_as_another_error() -> None:
    rnd = random.Random(405)
    base = encode_remote_log_metadata(_segment())
    for _ in range(3000):
        data = bytearray(base)
        for _ in range(rnd.randint(1, 4)):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
        if rnd.random() < 0.3:
            data = bytearray(rnd.randbytes(rnd.randint(0, 60)))
        try:
            decode_remote_log_metadata(bytes(data))
        except ApiMessageSerdeError as e:
            assert e.position is not None and 0 <= e.position <= len(data)
        assert format_remote_log_metadata(bytes(data), 1)   # never raises


@pytest.mark.parametrize(("value", "message"), [
    (b"", "Error while reading frame version"),
    (b"\x00\x00\x00", "Could not deserialize metadata record with frame version 0. Note that upgrades from the "
                      "preview release of KRaft in 2.8 to newer versions are not supported."),
    (b"\x02\x00\x00", "Could not deserialize metadata record due to unknown frame version 2(only frame version 1 "
                      "is supported)"),
    (b"\x01\x04\x00", "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 4"),
    (b"\x01\xff\xff\xff\xff\x0f\x00", "org.apache.kafka.common.errors.UnsupportedVersionException: "
                                      "Unknown metadata id -1"),
    (b"\x01\x80\x80\x02\x00", "Value for type was too large."),
    (b"\x01\x00", "Error while reading version"),
    (b"\x01\x00\x00", "Failed to deserialize record with type 0"),
])
def test_framing_errors(value: bytes, message: str) -> None:
    with pytest.raises(ApiMessageSerdeError) as e:
        decode_remote_log_metadata(value)
    assert e.value.kafka_message == message
    assert format_remote_log_metadata(value, 12) == f"Error at offset 12, skipping. {message}"


def test_garbage_after_the_record_and_an_unknown_version() -> None:
    delete = encode_remote_log_metadata(RemotePartitionDeleteMetadata(TP, D.DELETE_PARTITION_MARKED, 1, 1))
    with pytest.raises(ApiMessageSerdeError) as e:
        decode_remote_log_metadata(delete + b"\x00\x00")
    assert (e.value.kafka_message, e.value.position) == ("Found 2 byte(s) of garbage after 2", len(delete))
    # version 1: the record class reads it, its nested TopicIdPartitionEntry refuses it
    with pytest.raises(ApiMessageSerdeError) as e:
        decode_remote_log_metadata(delete[:2] + b"\x01" + delete[3:])
    assert e.value.kafka_message == "Failed to deserialize record with type 2"


def test_a_huge_declared_length_allocates_nothing() -> None:
    huge_array = _segment_record()[:EPOCHS_AT] + write_uvarint(0x7FFFFFFF) + b"\x00" * 8
    huge_bytes = _segment_record()[:EPOCHS_AT] + bytes.fromhex("02" "00000000" "0000000000000005" "00" "00000064") \
        + write_uvarint(0x7FFFFFF0) + b"\x00" * 4
    tracemalloc.start()
    try:
        for value, found in ((huge_array, "tried to allocate a collection of size 2147483646"),
                             (huge_bytes, "truncated bytes customMetadata")):
            with pytest.raises(ApiMessageSerdeError) as e:
                decode_remote_log_metadata(value)
            assert e.value.kafka_message == "Failed to deserialize record with type 0"
            assert found in (e.value.found or "")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


# --- DumpLogSegments' text ----------------------------------------------------------------------------

SEGMENT_ID_TEXT = f"RemoteLogSegmentId{{topicIdPartition={TOPIC_ID}:t-0, id={SEGMENT_ID}}}"


def test_segment_metadata_text() -> None:
    encoded = encode_remote_log_metadata(_segment())
    head = (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={SEGMENT_ID_TEXT}, startOffset=5, endOffset=9, "
            "brokerId=1, maxTimestampMs=7, eventTimestampMs=8, segmentLeaderEpochs={0=5, 2=7}, segmentSizeInBytes=100, "
            "customMetadata=Optional[CustomMetadata{1 bytes}], state=COPY_SEGMENT_FINISHED")
    assert format_remote_log_metadata(encoded, 0) == head + ", txnIdxEmpty=true}"
    assert format_remote_log_metadata(encoded, 0, (4, 0)) == head + ", txnIdxEmpty=true}"
    assert format_remote_log_metadata(encoded, 0, (3, 9)) == head + "}"
    assert str(_segment(custom_metadata=None, txn_index_empty=False)) == head.replace(
        "Optional[CustomMetadata{1 bytes}]", "Optional.empty") + ", txnIdxEmpty=false}"


def test_update_delete_and_snapshot_text() -> None:
    update = RemoteLogSegmentMetadataUpdate(TP, SEGMENT_ID, b"xyz", S.DELETE_SEGMENT_FINISHED, 8, 4)
    assert format_remote_log_metadata(encode_remote_log_metadata(update), 1, (3, 9)) == (
        f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={SEGMENT_ID_TEXT}, "
        "customMetadata=Optional[CustomMetadata{3 bytes}], state=DELETE_SEGMENT_FINISHED, eventTimestampMs=8, brokerId=4}")
    delete = RemotePartitionDeleteMetadata(TP, D.DELETE_PARTITION_MARKED, 2000, 5)
    assert format_remote_log_metadata(encode_remote_log_metadata(delete), 2) == (
        f"RemotePartitionDeleteMetadata{{topicPartition={TOPIC_ID}:t-0, state=DELETE_PARTITION_MARKED, "
        "eventTimestampMs=2000, brokerId=5}")
    snapshot = RemoteLogSegmentMetadataSnapshot(SEGMENT_ID, 5, 9, 1, 7, 8, {3: 6, 0: 5}, 100, b"", S.COPY_SEGMENT_STARTED)
    text = (f"RemoteLogSegmentMetadataSnapshot{{segmentId={SEGMENT_ID}, startOffset=5, endOffset=9, maxTimestampMs=7, "
            "segmentLeaderEpochs={0=5, 3=6}, segmentSizeInBytes=100, customMetadata=Optional[CustomMetadata{0 bytes}], "
            "state=COPY_SEGMENT_STARTED")      # no brokerId, no eventTimestampMs: Kafka's toString leaves them out
    assert format_remote_log_metadata(encode_remote_log_metadata(snapshot), 3) == text + ", txnIdxEmpty=false}"
    assert format_remote_log_metadata(encode_remote_log_metadata(snapshot), 3, (3, 9)) == text + "}"


def test_a_record_without_a_value_is_the_jvm_null_pointer_text() -> None:
    # record.value().remaining() on a null value: the JDK's helpful NullPointerException, naming the
    # tool's Record interface (moved to ...record.internal in the Java tool's releases)
    assert format_remote_log_metadata(None, 7) == (
        'Error at offset 7, skipping. Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
        '"org.apache.kafka.common.record.internal.Record.value()" is null')
    assert format_remote_log_metadata(None, 7, (3, 9), java_tool=False).endswith(
        '"org.apache.kafka.common.record.Record.value()" is null')


def test_a_topic_name_that_is_not_utf8_reads_as_java_reads_it() -> None:
    placeholder = "#" * 6
    data = _segment_record()
    raw = data.replace(b"\x02t", b"\x07" + placeholder.encode()).replace(placeholder.encode(), b"t\xed\xa0\x80x\xff")
    decoded = decode_remote_log_metadata(raw)
    assert decoded.partition.topic == "t\ufffdx\ufffd"      # type: ignore[union-attr]  # an encoded surrogate: one U+FFFD


def test_json_object() -> None:
    assert as_json_object(_segment()) == {
        "type": "RemoteLogSegmentMetadata", "topicId": TOPIC_ID, "topic": "t", "partition": 0, "segmentId": SEGMENT_ID,
        "startOffset": 5, "endOffset": 9, "brokerId": 1, "maxTimestampMs": 7, "eventTimestampMs": 8,
        "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": 5}, {"leaderEpoch": 2, "offset": 7}],
        "segmentSizeInBytes": 100, "customMetadata": "qw==", "state": "COPY_SEGMENT_FINISHED", "txnIndexEmpty": True}
    assert as_json_object(RemotePartitionDeleteMetadata(TP, D.DELETE_PARTITION_FINISHED, 3, 4)) == {
        "type": "RemotePartitionDeleteMetadata", "topicId": TOPIC_ID, "topic": "t", "partition": 0,
        "state": "DELETE_PARTITION_FINISHED", "eventTimestampMs": 3, "brokerId": 4}
