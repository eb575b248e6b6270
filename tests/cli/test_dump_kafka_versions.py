"""``klogs dump --kafka-version``: where Kafka 4.3+'s Java ``DumpLogSegments`` and the Scala tool
of earlier releases print different text.

Each case is a minimal file made by our writer; the expected lines are what Kafka 4.4.0
(``org.apache.kafka.tools.DumpLogSegments``) and Kafka 3.9.1 (``kafka.tools.DumpLogSegments``)
printed for exactly these bytes with ``--deep-iteration --print-data-log`` (run by
tests/conformance/test_dump_conformance.py), copied here by hand so that these tests need no Java.
The Kafka source deciding each difference is named in each test.
"""

from __future__ import annotations

import io
import os
import struct
from pathlib import Path

import pytest

from kafka_format.cli.dump import DumpOptions, dump
from kafka_format.writer import Record, SegmentWriter, build_legacy_messages, build_v2_batch
from kafka_format.writer.segments import ProducerEntry, encode_snapshot

T0 = 1_700_000_000_000
JAVA, SCALA = "4.4.0", "3.9.1"   # the releases whose output is copied below


def _dump(version: str, *files: Path) -> tuple[int, list[str], list[str]]:
    out, err = io.StringIO(), io.StringIO()
    opts = DumpOptions(files=tuple(str(f) for f in files), deep_iteration=True, print_data_log=True,
                       kafka_version=version)
    code = dump(opts, out, err)
    return code, out.getvalue().splitlines(), err.getvalue().splitlines()


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from ``tmp_path`` so that file names print as Kafka printed them (relative)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _dir(name: str) -> Path:
    path = Path(name)
    path.mkdir()
    return path


def _legacy_v1() -> Path:
    seg = SegmentWriter(_dir("legacy_v1"), 0)
    seg.append(build_legacy_messages([Record(b"k1", b"v1", T0), Record(None, b"v2", T0 + 1)],
                                     magic=1, base_offset=0))
    seg.close()
    return seg.log_path


def _snapshot() -> Path:
    path = _dir("snapshot") / f"{7:020d}.snapshot"
    path.write_bytes(encode_snapshot([
        ProducerEntry(5, 0, timestamp=T0, coordinator_epoch=3, current_txn_first_offset=4),
        ProducerEntry(6, 1, last_sequence=9, last_offset=6, offset_delta=2, timestamp=T0 + 5)]))
    return path


def _gaps() -> Path:
    """Offsets 5, 6, 9 (a compacted batch), then 12, 13: the log does not start at 0."""
    seg = SegmentWriter(_dir("gaps"), 5)
    seg.append([build_v2_batch([Record(b"a", b"1", T0, offset_delta=0), Record(b"b", b"2", T0, offset_delta=1),
                                Record(b"c", b"3", T0, offset_delta=4)], base_offset=5)])
    seg.append([build_v2_batch([Record(b"d", b"4", T0 + 1), Record(b"e", b"5", T0 + 2)], base_offset=12)])
    seg.close()
    return seg.log_path


def _three_batches(name: str) -> tuple[Path, list[int]]:
    """Batches 100-101, 102-103, 104-105; their positions."""
    seg = SegmentWriter(_dir(name), 100)
    for base in (100, 102, 104):
        seg.append([build_v2_batch([Record(b"k", b"v", T0 + base), Record(b"k", b"w", T0 + base + 1)],
                                   base_offset=base)])
    seg.close()
    return seg.log_path, [position for position, _ in seg.batches]


def _non_monotonic_index() -> Path:
    """Index entries 101@batch 2, 104@batch 3, 101@batch 3: every one wrong, one offset twice."""
    log, pos = _three_batches("bad_index")
    index = log.with_suffix(".index")
    index.write_bytes(b"".join(struct.pack(">ii", rel, p) for rel, p in ((1, pos[1]), (4, pos[2]), (1, pos[2]))))
    return index


def _time_index_off_batch_ends() -> Path:
    """Time index entries at 101 (a batch's last offset) and 102 (not one: found 103)."""
    log, _ = _three_batches("bad_timeindex")
    log.with_suffix(".index").write_bytes(b"")
    timeindex = log.with_suffix(".timeindex")
    timeindex.write_bytes(struct.pack(">qi", T0 + 101, 1) + struct.pack(">qi", T0 + 102, 2))
    return timeindex


def test_default_is_the_java_tool() -> None:
    assert DumpOptions(files=()).java_tool
    assert not DumpOptions(files=(), kafka_version="4.2").java_tool
    assert DumpOptions(files=(), kafka_version="4.3.0").java_tool
    assert not DumpOptions(files=(), kafka_version="3.9.1").java_tool


def test_legacy_record_line_brace(here: Path) -> None:
    """Scala ``dumpLog`` record line: ``s" isValid: ${r.isValid} crc: ${r.checksum}}"``
    (core/src/main/scala/kafka/tools/DumpLogSegments.scala) leaves a stray ``}``; the Java tool's
    ``printRecordMetadata`` (tools/src/main/java/org/apache/kafka/tools/DumpLogSegments.java) does not."""
    log = _legacy_v1()
    head = ["Dumping legacy_v1/00000000000000000000.log", "Log starting offset: 0"]
    batch0 = ("offset: 0 position: 0 CreateTime: 1700000000000 size: 38 magic: 1 compresscodec: none"
              " crc: 2782554722 isvalid: true")
    batch1 = ("offset: 1 position: 38 CreateTime: 1700000000001 size: 36 magic: 1 compresscodec: none"
              " crc: 852659841 isvalid: true")
    assert _dump(JAVA, log) == (0, [
        *head, batch0,
        "| offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 2 isValid: true crc: 2782554722"
        " key: k1 payload: v1",
        batch1,
        "| offset: 1 CreateTime: 1700000000001 keySize: -1 valueSize: 2 isValid: true crc: 852659841"
        " payload: v2"], [])
    assert _dump(SCALA, log) == (0, [
        *head, batch0,
        "| offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 2 isValid: true crc: 2782554722}"
        " key: k1 payload: v1",
        batch1,
        "| offset: 1 CreateTime: 1700000000001 keySize: -1 valueSize: 2 isValid: true crc: 852659841}"
        " payload: v2"], [])


def test_producer_snapshot_without_batch_metadata(here: Path) -> None:
    """``dumpProducerIdSnapshot``: Scala prints ``lastTimestamp: ${...} `` with a trailing space and
    appends ``firstSequence: ...``; Java prints the space before `` firstSequence`` only."""
    path = _snapshot()
    with_batch = ("producerId: 6 producerEpoch: 1 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty"
                  " lastTimestamp: 1700000000005 firstSequence: 7 lastSequence: 9 lastOffset: 6 offsetDelta: 2"
                  " timestamp: 1700000000005")
    no_batch = ("producerId: 5 producerEpoch: 0 coordinatorEpoch: 3 currentTxnFirstOffset: OptionalLong[4]"
                " lastTimestamp: 1700000000000")
    dumping = "Dumping snapshot/00000000000000000007.snapshot"
    assert _dump(JAVA, path) == (0, [dumping, no_batch, with_batch], [])
    assert _dump(SCALA, path) == (0, [dumping, no_batch + " ", with_batch], [])


def test_non_consecutive_offsets(here: Path) -> None:
    """``dumpBatchRecords`` (Java): ``record.offset() != previousOffset + 1`` from -1 into a ``TreeMap``;
    ``dumpLog`` (Scala): skips the first record, prepends to a ``List``."""
    log = _gaps()
    header = f"Non-consecutive offsets in {here / 'gaps/00000000000000000005.log'}"
    code, out, err = _dump(JAVA, log)
    assert code == 0 and len(out) == 9
    assert err == [header, "  -1 is followed by 5", "  6 is followed by 9", "  9 is followed by 12"]
    code, out2, err = _dump(SCALA, log)
    assert code == 0 and out2 == out
    assert err == [header, "  9 is followed by 12", "  6 is followed by 9"]


def test_index_mismatches_of_a_non_monotonic_index(here: Path) -> None:
    """``dumpIndex`` (Java): ``TreeMap(Collections.reverseOrder())`` keyed by index offset; Scala: a
    ``List`` prepended to, every mismatch newest first."""
    index = _non_monotonic_index()
    lines = ["Dumping bad_index/00000000000000000100.index", "offset: 101 position: 79",
             "offset: 104 position: 158", "offset: 101 position: 158"]
    header = f"Mismatches in :{here / 'bad_index/00000000000000000100.index'}"
    assert _dump(JAVA, index) == (0, lines, [
        header, "  Index offset: 104, log offset: 105", "  Index offset: 101, log offset: 105"])
    assert _dump(SCALA, index) == (0, lines, [
        header, "  Index offset: 101, log offset: 105", "  Index offset: 104, log offset: 105",
        "  Index offset: 101, log offset: 103"])


def test_time_index_offset_not_found_heading(here: Path) -> None:
    """``TimeIndexDumpErrors.printErrors``: Kafka 4.4.0's heading names the file (``not found in :``);
    the Scala one says ``not found in the log.``"""
    timeindex = _time_index_off_batch_ends()
    lines = ["Dumping bad_timeindex/00000000000000000100.timeindex",
             "timestamp: 1700000000101 offset: 101", "timestamp: 1700000000102 offset: 102"]
    found = "Indexed offset: 102, found log offset: 103"
    path = os.path.join(here, "bad_timeindex/00000000000000000100.timeindex")
    assert _dump(JAVA, timeindex) == (0, lines, [
        f"The following indexed offsets are not found in :{path}", found])
    assert _dump(SCALA, timeindex) == (0, lines, ["The following indexed offsets are not found in the log.", found])


def test_kafka_version_flag(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kafka_format.cli import main

    log = _legacy_v1()
    assert main(["dump", "--deep-iteration", "--kafka-version", "3.9", str(log)]) == 0
    assert capsys.readouterr().out.splitlines()[3].endswith("crc: 2782554722}")
    assert main(["dump", "--deep-iteration", str(log)]) == 0
    assert capsys.readouterr().out.splitlines()[3].endswith("crc: 2782554722")
    assert main(["dump", "--kafka-version", "four", str(log)]) == 2
    assert "not a Kafka version" in capsys.readouterr().err


# --- decoders ---------------------------------------------------------------------------------------

def _leader_change() -> Path:
    """A KRaft LeaderChange control record (leader 3, voters 3 and 4)."""
    from kafka_format.internal.kraft_control import encode_kraft_control_value

    seg = SegmentWriter(_dir("__cluster_metadata-0"), 0)
    value = encode_kraft_control_value(2, {"version": 0, "leaderId": 3, "voters": [{"voterId": 3}, {"voterId": 4}],
                                           "grantingVoters": [{"voterId": 3}]})
    seg.append([build_v2_batch([Record(struct.pack(">hh", 0, 2), value, T0)], base_offset=0, control=True,
                               partition_leader_epoch=1)])
    seg.close()
    return seg.log_path


def _transaction_log() -> Path:
    """Empty (v0), Ongoing (v0), CompleteCommit (v1 with tagged fields) and a tombstone."""
    from kafka_format.internal.transaction_log import encode_transaction_log_key, encode_transaction_log_value

    seg = SegmentWriter(_dir("__transaction_state-0"), 0)
    recs = [
        Record(encode_transaction_log_key("tx-a"), encode_transaction_log_value(
            producer_id=7, producer_epoch=0, timeout_ms=60000, status=0, partitions=None,
            last_update_ms=T0, start_ms=-1), T0),
        Record(encode_transaction_log_key("tx-a"), encode_transaction_log_value(
            producer_id=7, producer_epoch=0, timeout_ms=60000, status=1, partitions={"orders": [2, 0]},
            last_update_ms=T0 + 5, start_ms=T0 + 5), T0 + 5),
        Record(encode_transaction_log_key("tx-b"), encode_transaction_log_value(
            producer_id=8, producer_epoch=2, timeout_ms=30000, status=4, partitions={"orders": [1]},
            last_update_ms=T0 + 9, start_ms=T0 + 6, version=1, previous_producer_id=5,
            client_transaction_version=2), T0 + 9),
        Record(encode_transaction_log_key("tx-c"), None, T0 + 10),
    ]
    seg.append([build_v2_batch(recs, base_offset=0)])
    seg.close()
    return seg.log_path


def _decoded(version: str, decoder: str, path: Path) -> list[str]:
    out, err = io.StringIO(), io.StringIO()
    assert dump(DumpOptions(files=(str(path),), decoder=decoder, kafka_version=version), out, err) == 0
    assert err.getvalue() == ""
    return out.getvalue().splitlines()


def test_leader_change_record(here: Path) -> None:
    """``printControlRecord``: Kafka 4.1+ decodes LEADER_CHANGE (KAFKA-19069); 3.9 prints its type."""
    path = _leader_change()
    head = "| offset: 0 CreateTime: 1700000000000 keySize: 4 valueSize: 24 sequence: -1 headerKeys: []"
    lines = _decoded(JAVA, "cluster-metadata", path)
    assert lines[2].endswith("isControl: true deleteHorizonMs: OptionalLong.empty position: 0"
                             " CreateTime: 1700000000000 size: 96 magic: 2 compresscodec: none crc: 3699628853"
                             " isvalid: true")
    assert lines[3] == (head + ' LeaderChange: {"version":0,"leaderId":3,"voters":[{"voterId":3},{"voterId":4}],'
                        '"grantingVoters":[{"voterId":3}]}')
    assert _decoded(SCALA, "cluster-metadata", path)[3] == head + " controlType: LEADER_CHANGE(2)"
    assert _decoded("4.1", "cluster-metadata", path)[3] == lines[3]


def test_transaction_log_decoder(here: Path) -> None:
    """``--transaction-log-decoder``: Kafka 4.4.0's ``CoordinatorRecordMessageParser`` JSON with state
    names (``TransactionLogMessageParser.valueAsJson``); 3.9.1's ``TransactionLog.formatRecordKeyAndValue``."""
    path = _transaction_log()
    meta = [
        "| offset: 0 CreateTime: 1700000000000 keySize: 8 valueSize: 37 sequence: -1 headerKeys: []",
        "| offset: 1 CreateTime: 1700000000005 keySize: 8 valueSize: 57 sequence: -1 headerKeys: []",
        "| offset: 2 CreateTime: 1700000000009 keySize: 8 valueSize: 62 sequence: -1 headerKeys: []",
        "| offset: 3 CreateTime: 1700000000010 keySize: 8 valueSize: -1 sequence: -1 headerKeys: []",
    ]
    java = [
        ' key: {"type":"0","data":{"transactionalId":"tx-a"}} payload: {"version":"0","data":{"producerId":7,'
        '"producerEpoch":0,"transactionTimeoutMs":60000,"transactionStatus":"Empty","transactionPartitions":null,'
        '"transactionLastUpdateTimestampMs":1700000000000,"transactionStartTimestampMs":-1}}',
        ' key: {"type":"0","data":{"transactionalId":"tx-a"}} payload: {"version":"0","data":{"producerId":7,'
        '"producerEpoch":0,"transactionTimeoutMs":60000,"transactionStatus":"Ongoing","transactionPartitions":'
        '[{"topic":"orders","partitionIds":[2,0]}],"transactionLastUpdateTimestampMs":1700000000005,'
        '"transactionStartTimestampMs":1700000000005}}',
        ' key: {"type":"0","data":{"transactionalId":"tx-b"}} payload: {"version":"1","data":{"producerId":8,'
        '"previousProducerId":5,"producerEpoch":2,"transactionTimeoutMs":30000,"transactionStatus":"CompleteCommit",'
        '"transactionPartitions":[{"topic":"orders","partitionIds":[1]}],"transactionLastUpdateTimestampMs":'
        '1700000000009,"transactionStartTimestampMs":1700000000006,"clientTransactionVersion":2}}',
        ' key: {"type":"0","data":{"transactionalId":"tx-c"}} payload: <DELETE>',
    ]
    scala = [
        " key: transaction_metadata::transactionalId=tx-a payload: producerId:7,producerEpoch:0,state=Empty,"
        "partitions=[],txnLastUpdateTimestamp=1700000000000,txnTimeoutMs=60000",
        " key: transaction_metadata::transactionalId=tx-a payload: producerId:7,producerEpoch:0,state=Ongoing,"
        "partitions=[orders-0,orders-2],txnLastUpdateTimestamp=1700000000005,txnTimeoutMs=60000",
        " key: transaction_metadata::transactionalId=tx-b payload: producerId:8,producerEpoch:2,"
        "state=CompleteCommit,partitions=[orders-1],txnLastUpdateTimestamp=1700000000009,txnTimeoutMs=30000",
        " key: transaction_metadata::transactionalId=tx-c payload: <DELETE>",
    ]
    assert _decoded(JAVA, "transaction-log", path)[3:] == [m + t for m, t in zip(meta, java, strict=True)]
    assert _decoded(SCALA, "transaction-log", path)[3:] == [m + t for m, t in zip(meta, scala, strict=True)]
    # before 4.4 the JSON keeps the status id (Kafka 4.1.1 and 4.3.0 have no TransactionState.stateName call)
    assert '"transactionStatus":1,' in _decoded("4.3", "transaction-log", path)[4]


# --- the same in both releases (found by the conformance run; fixed for both) ------------------------

def _run(*args: str, **opts: object) -> tuple[int, list[str], list[str]]:
    out, err = io.StringIO(), io.StringIO()
    code = dump(DumpOptions(files=args, **opts), out, err)   # type: ignore[arg-type]
    return code, out.getvalue().splitlines(), err.getvalue().splitlines()


def _bad_record_length() -> Path:
    """Two one-record batches; the second record's length varint is 0x7F (-64)."""
    seg = SegmentWriter(_dir("bad-record"), 0)
    seg.append([build_v2_batch([Record(b"a", b"1", T0)], base_offset=0)])
    seg.append([build_v2_batch([Record(b"b", b"2", T0 + 1)], base_offset=1)])
    seg.close()
    data = bytearray(seg.log_path.read_bytes())
    data[seg.batches[1][0] + 61] = 0x7F
    seg.log_path.write_bytes(bytes(data))
    return seg.log_path


BATCH0 = ("baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1"
          " partitionLeaderEpoch: -1 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty"
          " position: 0 CreateTime: 1700000000000 size: 70 magic: 2 compresscodec: none crc: 633520894"
          " isvalid: true")
RECORD0 = "| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 1 sequence: -1 headerKeys: []"


@pytest.mark.parametrize("version", [JAVA, SCALA])
def test_invalid_record_size_message(here: Path, version: str) -> None:
    """``DefaultRecord.readFrom``'s own message (clients/.../record/DefaultRecord.java), not ours."""
    log = _bad_record_length()
    code, out, err = _run(str(log), deep_iteration=True, kafka_version=version)
    assert code == 1
    assert out == ["Dumping bad-record/00000000000000000000.log", "Log starting offset: 0", BATCH0, RECORD0,
                   "baseOffset: 1 lastOffset: 1 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1"
                   " producerEpoch: -1 partitionLeaderEpoch: -1 isTransactional: false isControl: false"
                   " deleteHorizonMs: OptionalLong.empty position: 70 CreateTime: 1700000000001 size: 70 magic: 2"
                   " compresscodec: none crc: 3806254038 isvalid: false"]
    assert err == ['Exception in thread "main" org.apache.kafka.common.InvalidRecordException: Invalid record size:'
                   " expected to read -64 bytes in record payload, but instead read 8"]


@pytest.mark.parametrize("version", [JAVA, SCALA])
def test_max_bytes_stops_before_a_damaged_batch(here: Path, version: str) -> None:
    """``FileRecords.slice(0, maxBytes)``: the damaged batch past --max-bytes is never read."""
    log = _bad_record_length()
    code, out, err = _run(str(log), deep_iteration=True, max_bytes=80, kafka_version=version)
    assert (code, err) == (0, [])
    assert out == ["Dumping bad-record/00000000000000000000.log", "Log starting offset: 0", BATCH0, RECORD0]


@pytest.mark.parametrize("version", [JAVA, SCALA])
def test_malformed_utf8_replaced_as_java_does(here: Path, version: str) -> None:
    """``new String(bytes, UTF_8)``: an encoded surrogate (ED A0 80) is one U+FFFD (Python: three)."""
    seg = SegmentWriter(_dir("utf8"), 0)
    seg.append([build_v2_batch([Record(b"k\xed\xa0\x80x", b"v\xed\xa0(\xe2\x82", T0),
                                Record(b"\xf0\x90\x80", b"\xc3(\xff", T0)], base_offset=0)])
    seg.close()
    code, out, err = _run(str(seg.log_path), print_data_log=True, kafka_version=version)
    assert (code, err) == (0, [])
    meta = "| offset: {} CreateTime: 1700000000000 keySize: {} valueSize: {} sequence: -1 headerKeys: []"
    assert out[3:] == [meta.format(0, 5, 6) + " key: k\ufffdx payload: v\ufffd(\ufffd",
                       meta.format(1, 3, 3) + " key: \ufffd payload: \ufffd(\ufffd"]


def test_corrupt_index_exception_class(here: Path) -> None:
    """``CorruptIndexException`` lives in ``org.apache.kafka.storage.internals.log`` (3.9.1 and 4.4.0)."""
    seg = SegmentWriter(_dir("bad-index"), 0)
    seg.append([build_v2_batch([Record(b"a", b"1", T0)], base_offset=0)])
    seg.close()
    seg.path(".index").write_bytes(b"\0" * 12)
    for version in (JAVA, SCALA):
        code, out, err = _run(str(seg.path(".index")), index_sanity_check=True, kafka_version=version)
        assert code == 1 and out == ["Dumping bad-index/00000000000000000000.index"]
        assert err == ['Exception in thread "main" org.apache.kafka.storage.internals.log.CorruptIndexException:'
                       f" Index file {here / 'bad-index/00000000000000000000.index'} is corrupt, found 12 bytes"
                       " which is neither positive nor a multiple of 8"]


def test_prerelease_metadata_layout_is_an_error_as_in_kafka(here: Path) -> None:
    """A PartitionRecord v1 in the pre-release trunk-2023-11 layout (KIP-966 ELR tagged fields): the
    format library can read it, but released Kafka's ``MetadataRecordSerde`` cannot, and
    ``ClusterMetadataLogMessageParser`` prints ``Error at <offset>, skipping. <message>``."""
    from kafka_format.internal.cluster_metadata import encode_topic_record
    from kafka_format.internal.protocol import write_message, write_uvarint

    topic_id = "JiPG0GbKRRqpJrShexbMfw"
    data = {"partitionId": 0, "topicId": topic_id, "replicas": [1], "isr": [1], "removingReplicas": [],
            "addingReplicas": [], "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0,
            "eligibleLeaderReplicas": [], "lastKnownELR": []}
    value = (write_uvarint(1) + write_uvarint(3) + write_uvarint(1)
             + write_message("PartitionRecord@trunk-2023-11", data, 1))
    seg = SegmentWriter(_dir("__cluster_metadata-0"), 0)
    seg.append([build_v2_batch([Record(None, encode_topic_record("t", topic_id), T0), Record(None, value, T0)],
                               base_offset=0, partition_leader_epoch=1)])
    seg.close()
    meta = "| offset: {} CreateTime: 1700000000000 keySize: -1 valueSize: {} sequence: -1 headerKeys: []"
    for version in (JAVA, SCALA):
        assert _decoded(version, "cluster-metadata", seg.log_path)[3:] == [
            meta.format(0, 22) + ' payload: {"type":"TOPIC_RECORD","version":0,"data":{"name":"t",'
                                 '"topicId":"JiPG0GbKRRqpJrShexbMfw"}}',
            meta.format(1, 54) + " payload: Error at 1, skipping. Failed to deserialize record with type 3"]


def test_offsets_decoder_missing_key(here: Path) -> None:
    """A keyless ``__consumer_offsets`` record: Kafka prints the record's metadata (no newline), then
    dies; 4.1+'s ``CoordinatorRecordMessageParser`` says "using the specified decoder", 3.9's
    ``OffsetsMessageParser`` "using offset topic decoder"."""
    seg = SegmentWriter(_dir("__consumer_offsets-0"), 0)
    seg.append([build_v2_batch([Record(None, b"x", T0)], base_offset=0)])
    seg.close()
    batch = ("baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1"
             " producerEpoch: -1 partitionLeaderEpoch: -1 isTransactional: false isControl: false deleteHorizonMs:"
             " OptionalLong.empty position: 0 CreateTime: 1700000000000 size: 69 magic: 2 compresscodec: none"
             " crc: 657014527 isvalid: true")
    for version, wording in ((JAVA, "the specified decoder"), (SCALA, "offset topic decoder")):
        out, err = io.StringIO(), io.StringIO()
        code = dump(DumpOptions(files=(str(seg.log_path),), decoder="offsets", kafka_version=version), out, err)
        assert code == 1
        assert out.getvalue() == ("Dumping __consumer_offsets-0/00000000000000000000.log\nLog starting offset: 0\n"
                                  f"{batch}\n| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 1"
                                  " sequence: -1 headerKeys: []")
        assert err.getvalue() == ('Exception in thread "main" java.lang.RuntimeException: Failed to decode message'
                                  f" at offset 0 using {wording} (message had a missing key)\n")


def test_kafka_44_schema_fields(here: Path) -> None:
    """Fields a Kafka 4.4.0 broker writes that the generated schema set lacked (schemas/newer.py):
    ``OffsetCommitValue`` v4 tagged ``topicId`` and ``RegisterBrokerRecord`` v4.  Expected JSON as
    Kafka 4.4.0 printed it for the same values on its own log dir."""
    from kafka_format.internal.cluster_metadata import encode_metadata_record
    from kafka_format.internal.consumer_offsets import encode_consumer_offsets_value, encode_offset_commit_key

    offsets = SegmentWriter(_dir("__consumer_offsets-0"), 0)
    value = encode_consumer_offsets_value(1, {"offset": 3, "leaderEpoch": -1, "metadata": "txn-meta",
                                              "commitTimestamp": 1795590372048,
                                              "topicId": "t6LoRnuDSTWuP5MABFO1ww"}, 4)
    offsets.append([build_v2_batch([Record(encode_offset_commit_key("w-txn-group", "w-txn", 0), value, T0)],
                                   base_offset=0)])
    offsets.close()
    line = _decoded(JAVA, "offsets", offsets.log_path)[3]
    assert line.endswith(' key: {"type":"1","data":{"group":"w-txn-group","topic":"w-txn","partition":0}}'
                         ' payload: {"version":"4","data":{"offset":3,"leaderEpoch":-1,"metadata":"txn-meta",'
                         '"commitTimestamp":1795590372048,"topicId":"t6LoRnuDSTWuP5MABFO1ww"}}')

    metadata = SegmentWriter(_dir("__cluster_metadata-0"), 0)
    features = [("transaction.version", 0, 2), ("metadata.version", 7, 33)]
    record = encode_metadata_record("RegisterBrokerRecord", {
        "brokerId": 1, "isMigratingZkBroker": False, "incarnationId": "MCRS4K6sTTaARhy_1VjTEA", "brokerEpoch": 13,
        "endPoints": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 49031, "securityProtocol": 0}],
        "features": [{"name": n, "minSupportedVersion": lo, "maxSupportedVersion": hi} for n, lo, hi in features],
        "rack": None, "fenced": True, "inControlledShutdown": False, "logDirs": ["SZ-wceyLYwZp1bOEr13bCw"]}, 4)
    metadata.append([build_v2_batch([Record(None, record, T0)], base_offset=0)])
    metadata.close()
    assert _decoded(JAVA, "cluster-metadata", metadata.log_path)[3].endswith(
        ' payload: {"type":"REGISTER_BROKER_RECORD","version":4,"data":{"brokerId":1,"isMigratingZkBroker":false,'
        '"incarnationId":"MCRS4K6sTTaARhy_1VjTEA","brokerEpoch":13,"endPoints":[{"name":"PLAINTEXT",'
        '"host":"127.0.0.1","port":49031,"securityProtocol":0}],"features":[{"name":"transaction.version",'
        '"minSupportedVersion":0,"maxSupportedVersion":2},{"name":"metadata.version","minSupportedVersion":7,'
        '"maxSupportedVersion":33}],"rack":null,"fenced":true,"inControlledShutdown":false,'
        '"logDirs":["SZ-wceyLYwZp1bOEr13bCw"]}}')


def test_broker_registration_change_v3(here: Path) -> None:
    """``BrokerRegistrationChangeRecord`` v3 (tagged ``cordonedLogDirs``), as Kafka 4.4.0 printed it for
    its own broker's registration change."""
    from kafka_format.internal.cluster_metadata import encode_metadata_record

    seg = SegmentWriter(_dir("__cluster_metadata-0"), 0)
    record = encode_metadata_record("BrokerRegistrationChangeRecord",
                                    {"brokerId": 1, "brokerEpoch": 15, "cordonedLogDirs": []}, 3)
    seg.append([build_v2_batch([Record(None, record, T0)], base_offset=0)])
    seg.close()
    assert _decoded(JAVA, "cluster-metadata", seg.log_path)[3].endswith(
        ' payload: {"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":3,"data":{"brokerId":1,"brokerEpoch":15,'
        '"cordonedLogDirs":[]}}')


def test_clear_elr_record(here: Path) -> None:
    """``ClearElrRecord`` (metadata api key 28), as Kafka 4.4.0 printed it for its own metadata log."""
    from kafka_format.internal.cluster_metadata import encode_metadata_record

    seg = SegmentWriter(_dir("__cluster_metadata-0"), 0)
    record = encode_metadata_record("ClearElrRecord", {"topicName": "__transaction_state"}, 0)
    seg.append([build_v2_batch([Record(None, record, T0)], base_offset=0)])
    seg.close()
    line = _decoded(JAVA, "cluster-metadata", seg.log_path)[3]
    assert line == ("| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 24 sequence: -1 headerKeys: []"
                    ' payload: {"type":"CLEAR_ELR_RECORD","version":0,"data":{"topicName":"__transaction_state"}}')
