"""``klogs dump``: kafka-dump-log's exact text lines and the ``--json`` contract.

Oracles: kafka-python decodes the same bytes (its ``MemoryRecordsBuilder`` also
writes the synthetic segments, independently of our writer); index, snapshot
and txn-index bytes are packed here with ``struct`` from values the test
chooses; CRC-32C comes from the ``crc32c`` package.  Text lines are parsed with
regexes transcribed from Kafka's ``DumpLogSegments`` (``printBatchLevel``,
``dumpLog``, ``dumpIndex``, ``dumpTimeIndex``, ``TimeIndexDumpErrors``; the Java tool
of Kafka 4.3+, the default; tests/cli/test_dump_kafka_versions.py covers the Scala
tool's text) and every field is compared with the oracle's value.
"""

from __future__ import annotations

import base64
import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import crc32c
import pytest

pytest.importorskip("kafka")
import kafka.codec as kafka_codec  # noqa: E402
from kafka.record import MemoryRecords, MemoryRecordsBuilder  # noqa: E402

from kafka_format.cli import main  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
KLOGS = REPO / ".venv" / "bin" / "klogs"

# --- DumpLogSegments.scala formats, as regexes ----------------------------------------------------

V2_BATCH = re.compile(
    r"^baseOffset: (?P<baseOffset>-?\d+) lastOffset: (?P<lastOffset>-?\d+) count: (?P<count>-?\d+)"
    r" baseSequence: (?P<baseSequence>-?\d+) lastSequence: (?P<lastSequence>-?\d+)"
    r" producerId: (?P<producerId>-?\d+) producerEpoch: (?P<producerEpoch>-?\d+)"
    r" partitionLeaderEpoch: (?P<partitionLeaderEpoch>-?\d+) isTransactional: (?P<isTransactional>true|false)"
    r" isControl: (?P<isControl>true|false)"
    r" deleteHorizonMs: (?P<deleteHorizonMs>OptionalLong\.empty|OptionalLong\[-?\d+\])"
    r" position: (?P<position>\d+) (?P<timestampType>CreateTime|LogAppendTime): (?P<maxTimestamp>-?\d+)"
    r" size: (?P<size>\d+) magic: (?P<magic>2) compresscodec: (?P<codec>none|gzip|snappy|lz4|zstd)"
    r" crc: (?P<crc>\d+) isvalid: (?P<isvalid>true|false)$"
)
LEGACY_BATCH = re.compile(
    r"^offset: (?P<lastOffset>-?\d+) position: (?P<position>\d+)"
    r" (?P<timestampType>CreateTime|LogAppendTime|NoTimestampType): (?P<maxTimestamp>-?\d+)"
    r" size: (?P<size>\d+) magic: (?P<magic>[01]) compresscodec: (?P<codec>none|gzip|snappy|lz4)"
    r" crc: (?P<crc>\d+) isvalid: (?P<isvalid>true|false)$"
)
V2_RECORD = re.compile(
    r"^\| offset: (?P<offset>-?\d+) (?P<timestampType>CreateTime|LogAppendTime): (?P<timestamp>-?\d+)"
    r" keySize: (?P<keySize>-?\d+) valueSize: (?P<valueSize>-?\d+)"
    r" sequence: (?P<sequence>-?\d+) headerKeys: \[(?P<headerKeys>[^\]]*)\](?P<rest>.*)$"
)
LEGACY_RECORD = re.compile(
    r"^\| offset: (?P<offset>-?\d+) (?P<timestampType>CreateTime|LogAppendTime|NoTimestampType):"
    r" (?P<timestamp>-?\d+) keySize: (?P<keySize>-?\d+) valueSize: (?P<valueSize>-?\d+)"
    r" isValid: (?P<isValid>true|false) crc: (?P<crc>\d+)(?P<rest>.*)$"
)
INDEX_LINE = re.compile(r"^offset: (?P<offset>-?\d+) position: (?P<position>-?\d+)$")
TIME_INDEX_LINE = re.compile(r"^timestamp: (?P<timestamp>-?\d+) offset: (?P<offset>-?\d+)$")

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CODEC_NAMES = {v: k for k, v in CODEC_IDS.items()}
TS_NAMES = {0: "CreateTime", 1: "LogAppendTime", None: "NoTimestampType", -1: "NoTimestampType"}
BATCH_JSON_KEYS = {"type", "file", "position", "baseOffset", "lastOffset", "count", "magic", "compression",
                   "crc", "isValid", "producerId", "producerEpoch", "baseSequence", "partitionLeaderEpoch",
                   "isTransactional", "isControl", "timestampType", "maxTimestamp", "size"}
RECORD_JSON_KEYS = {"type", "offset", "timestamp", "timestampType", "key", "value", "headers", "sequence",
                    "isControl"}


def expected_batch_json(path: str, position: int, batch: Any) -> dict[str, Any]:
    """The contracted ``--json`` batch object for a v2 batch as kafka-python decoded it."""
    return {
        "type": "batch", "file": path, "position": position, "baseOffset": batch.base_offset,
        "lastOffset": batch.last_offset, "count": batch.records_count, "magic": 2,
        "compression": CODEC_NAMES[batch.compression_type], "crc": batch.crc, "isValid": True,
        "producerId": batch.producer_id, "producerEpoch": batch.producer_epoch,
        "baseSequence": batch.base_sequence, "partitionLeaderEpoch": batch.leader_epoch,
        "isTransactional": bool(batch.is_transactional), "isControl": bool(batch.is_control_batch),
        "timestampType": batch.timestamp_type, "maxTimestamp": batch.max_timestamp,
        "size": batch.size_in_bytes,
    }
INT_MAX = 2**31 - 1
V2_ATTRIBUTES_OFFSET = 21
V2_BASE_SEQUENCE_OFFSET = 53
V2_CRC_OFFSET = 17
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40
T0 = 1_700_000_000_000


def _have_codec(codec: str) -> bool:
    return {"none": True, "gzip": kafka_codec.has_gzip(), "snappy": kafka_codec.has_snappy(),
            "lz4": kafka_codec.has_lz4(), "zstd": kafka_codec.has_zstd()}[codec]


# --- writing segments with kafka-python ------------------------------------------------------------

def _build(magic: int, codec: str, offset: int, records: list[tuple[Any, ...]], **producer: Any) -> bytes:
    """One batch (v2) or message set (v0/v1) at ``offset``, written by kafka-python.

    kafka-python writes v2 batches as a producer does (baseOffset 0, offset deltas from 0); the
    broker assigns offsets by rewriting baseOffset, which the CRC does not cover: so does this.
    """
    builder = MemoryRecordsBuilder(magic, CODEC_IDS[codec], 1 << 22, offset=0 if magic >= 2 else offset,
                                   **producer)
    for ts, key, value, headers in records:
        assert builder.append(ts, key, value, headers if magic >= 2 else None) is not None
    builder.close()
    raw = bytearray(builder.buffer())
    if magic >= 2:
        struct.pack_into(">q", raw, 0, offset)
    return bytes(raw)


def _v2_batches(codec: str) -> list[bytes]:
    return [
        _build(2, codec, 0, [(T0 + i, f"key-{i}".encode(), f"value-{i}".encode() * 3,
                              [("h1", b"x"), ("trace", None)] if i % 2 else []) for i in range(3)]),
        _build(2, codec, 3, [(T0 + 50, None, b"no key", [("a", b"1")]), (T0 + 40, b"tomb", None, [])],
               producer_id=77, producer_epoch=2, base_sequence=10),
        _build(2, codec, 5, [(T0 + 100 + i, b"k%d" % i, "wert-ü".encode(), []) for i in range(4)],
               transactional=True, producer_id=78, producer_epoch=1, base_sequence=INT_MAX - 1),
    ]


def _legacy_batches(magic: int, codec: str) -> list[bytes]:
    ts = (lambda t: None) if magic == 0 else (lambda t: t)  # noqa: E731
    return [
        _build(magic, codec, 0, [(ts(T0 + i), f"key-{i}".encode(), f"value-{i}".encode(), None)
                                 for i in range(3)]),
        _build(magic, codec, 3, [(ts(T0 + 10), None, b"no key", None), (ts(T0 + 5), b"tomb", None, None)]),
    ]


def _write_log(directory: Path, data: bytes, base: int = 0) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{base:020d}.log"
    path.write_bytes(data)
    return path


def _control_batch(offset: int, control_type: int, coordinator_epoch: int) -> bytes:
    """A transaction marker batch: kafka-python builds the record, the control bit is set here."""
    key = struct.pack(">hh", 0, control_type)
    value = struct.pack(">hi", 0, coordinator_epoch)
    raw = bytearray(_build(2, "none", offset, [(T0 + 999, key, value, [])], transactional=True,
                           producer_id=78, producer_epoch=1, base_sequence=0))
    (attributes,) = struct.unpack_from(">h", raw, V2_ATTRIBUTES_OFFSET)
    struct.pack_into(">h", raw, V2_ATTRIBUTES_OFFSET, attributes | CONTROL_FLAG)
    struct.pack_into(">i", raw, V2_BASE_SEQUENCE_OFFSET, -1)
    struct.pack_into(">I", raw, V2_CRC_OFFSET, crc32c.crc32c(bytes(raw[V2_ATTRIBUTES_OFFSET:])))
    return bytes(raw)


# --- kafka-python's view of a file ---------------------------------------------------------------

def _kp_batches(data: bytes) -> list[tuple[int, Any, bytes]]:
    """(position, kafka-python batch, raw bytes of the batch) for each complete batch."""
    out = []
    records = MemoryRecords(data)
    position = 0
    while True:
        batch = records.next_batch()
        if batch is None:
            return out
        out.append((position, batch, data[position:position + batch.size_in_bytes]))
        position += batch.size_in_bytes


def _expected_batch_fields(position: int, batch: Any, raw: bytes) -> dict[str, str]:
    bool_text = {True: "true", False: "false"}
    if batch.magic >= 2:
        horizon = (f"OptionalLong[{batch.first_timestamp}]" if batch.attributes & DELETE_HORIZON_FLAG
                   else "OptionalLong.empty")
        return {
            "baseOffset": str(batch.base_offset), "lastOffset": str(batch.last_offset),
            "count": str(batch.records_count), "baseSequence": str(batch.base_sequence),
            "lastSequence": str(batch.last_sequence), "producerId": str(batch.producer_id),
            "producerEpoch": str(batch.producer_epoch), "partitionLeaderEpoch": str(batch.leader_epoch),
            "isTransactional": bool_text[bool(batch.is_transactional)],
            "isControl": bool_text[bool(batch.is_control_batch)], "deleteHorizonMs": horizon,
            "position": str(position), "timestampType": TS_NAMES[batch.timestamp_type],
            "maxTimestamp": str(batch.max_timestamp), "size": str(batch.size_in_bytes), "magic": "2",
            "codec": CODEC_NAMES[batch.compression_type], "crc": str(batch.crc),
            "isvalid": bool_text[batch.validate_crc()],
        }
    (stored_crc,) = struct.unpack_from(">I", raw, 12)
    max_ts = struct.unpack_from(">q", raw, 18)[0] if batch.magic == 1 else -1
    return {
        "lastOffset": str(batch.base_offset), "position": str(position),
        "timestampType": TS_NAMES[batch.timestamp_type], "maxTimestamp": str(max_ts),
        "size": str(batch.size_in_bytes), "magic": str(batch.magic),
        "codec": CODEC_NAMES[batch.compression_type], "crc": str(stored_crc),
        "isvalid": bool_text[batch.validate_crc()],
    }


def _record_sequence(batch: Any, offset: int) -> int:
    """``DefaultRecord.sequence``: baseSequence + offsetDelta, wrapping at Int.MAX, -1 without one."""
    if batch.base_sequence == -1:
        return -1
    delta = offset - batch.base_offset
    if batch.base_sequence > INT_MAX - delta:
        return delta - (INT_MAX - batch.base_sequence) - 1
    return batch.base_sequence + delta


def _expected_record_fields(batch: Any, record: Any) -> dict[str, str]:
    fields = {
        "offset": str(record.offset), "timestampType": TS_NAMES[batch.timestamp_type],
        "timestamp": str(-1 if record.timestamp is None else record.timestamp),
        "keySize": str(-1 if record.key is None else len(record.key)),
        "valueSize": str(-1 if record.value is None else len(record.value)),
    }
    if batch.magic >= 2:
        fields["sequence"] = str(_record_sequence(batch, record.offset))
        fields["headerKeys"] = ",".join(k for k, _ in record.headers)
    else:
        fields["isValid"] = "true" if record.validate_crc() else "false"
        fields["crc"] = str(record.checksum)
    return fields


def _dump(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    code = main(["dump", *args])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.splitlines()


def _check_log_lines(lines: list[str], data: bytes, *, deep: bool) -> int:
    """Compare every batch (and record) line with kafka-python; return the number of lines checked."""
    at = 0
    for position, batch, raw in _kp_batches(data):
        regex = V2_BATCH if batch.magic >= 2 else LEGACY_BATCH
        m = regex.match(lines[at])
        assert m, f"not a batch line: {lines[at]!r}"
        assert m.groupdict() == _expected_batch_fields(position, batch, raw), lines[at]
        at += 1
        if not deep:
            continue
        for record in batch:
            regex = V2_RECORD if batch.magic >= 2 else LEGACY_RECORD
            m = regex.match(lines[at])
            assert m, f"not a record line: {lines[at]!r}"
            got = m.groupdict()
            rest = got.pop("rest")
            assert got == _expected_record_fields(batch, record), lines[at]
            if not getattr(batch, "is_control_batch", False):
                assert rest == "", lines[at]
            at += 1
    return at


# --- synthetic segments: batch and record lines ----------------------------------------------------

V2_CODECS = [pytest.param(c, id=f"v2-{c}") for c in CODEC_IDS]
# kafka-python writes magic-0 lz4 only with xxhash installed (Kafka's broken-HC framing)
LEGACY_CASES = [pytest.param(m, c, id=f"v{m}-{c}") for m in (0, 1) for c in ("none", "gzip", "lz4")
                if (m, c) != (0, "lz4")]


@pytest.mark.parametrize("codec", V2_CODECS)
@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
def test_v2_lines_match_kafka_python(tmp_path: Path, capsys: pytest.CaptureFixture[str], codec: str,
                                     deep: bool) -> None:
    if not _have_codec(codec):
        pytest.skip(f"kafka-python cannot {codec}")
    data = b"".join(_v2_batches(codec))
    log = _write_log(tmp_path / "t-0", data)
    code, out, err = _dump(capsys, *(["--deep-iteration"] if deep else []), str(log))
    assert code == 0 and err == []
    assert out[:2] == [f"Dumping {log}", "Log starting offset: 0"]
    checked = _check_log_lines(out[2:], data, deep=deep)
    assert checked == len(out) - 2 == (3 + 9 if deep else 3)


@pytest.mark.parametrize(("magic", "codec"), LEGACY_CASES)
def test_legacy_lines_match_kafka_python(tmp_path: Path, capsys: pytest.CaptureFixture[str], magic: int,
                                         codec: str) -> None:
    if not _have_codec(codec):
        pytest.skip(f"kafka-python cannot {codec}")
    data = b"".join(_legacy_batches(magic, codec))
    log = _write_log(tmp_path / "t-0", data)
    code, out, err = _dump(capsys, "--deep-iteration", str(log))
    assert code == 0 and err == []
    assert _check_log_lines(out[2:], data, deep=True) == len(out) - 2 == len(_kp_batches(data)) + 5


def test_print_data_log_prints_key_and_payload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = b"".join(_v2_batches("none"))
    log = _write_log(tmp_path / "t-0", data)
    code, out, _ = _dump(capsys, "--print-data-log", str(log))
    assert code == 0
    record_lines = [line for line in out if line.startswith("|")]
    kp_records = [r for _, b, _ in _kp_batches(data) for r in b]
    assert len(record_lines) == len(kp_records)
    for line, record in zip(record_lines, kp_records, strict=True):
        tail = V2_RECORD.match(line).group("rest")
        expected = ""
        if record.key is not None:
            expected += f" key: {record.key.decode('utf-8')}"
        if record.value is not None:
            expected += f" payload: {record.value.decode('utf-8')}"
        assert tail == expected


def test_skip_record_metadata(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = b"".join(_v2_batches("none"))
    log = _write_log(tmp_path / "t-0", data)
    kp_records = [r for _, b, _ in _kp_batches(data) for r in b]
    for version, first_payload in (("4.4", "| payload: "), ("3.9", " payload: ")):
        code, out, _ = _dump(capsys, "--print-data-log", "--skip-record-metadata", "--kafka-version", version, str(log))
        assert code == 0
        record_lines = [line for line in out[2:] if not V2_BATCH.match(line)]
        expected = []
        for r in kp_records:
            # DumpLogSegments: the prefix "| " goes before the first of key and payload in the Java tool
            # (4.3+: prefix + "payload: "), before the key only in the Scala tool (" payload: ")
            text = f"| key: {r.key.decode()}" if r.key is not None else ""
            if r.value is not None:
                text += (" payload: " if r.key is not None else first_payload) + r.value.decode()
            expected.append(text)
        assert record_lines == expected, version


def test_control_batch_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = b"".join(_v2_batches("none")) + _control_batch(9, 1, 5) + _control_batch(10, 0, 7)
    log = _write_log(tmp_path / "t-0", data)
    code, out, _ = _dump(capsys, "--deep-iteration", str(log))
    assert code == 0
    _check_log_lines(out[2:], data, deep=True)
    markers = []
    for _, batch, _ in _kp_batches(data):
        if batch.is_control_batch:
            for record in batch:
                name = "COMMIT" if record.commit else "ABORT" if record.abort else "?"
                (epoch,) = struct.unpack_from(">i", record.value, 2)
                markers.append(f" endTxnMarker: {name} coordinatorEpoch: {epoch}")
    tails = [V2_RECORD.match(line).group("rest") for line in out if line.startswith("|")][-2:]
    assert tails == markers == [" endTxnMarker: COMMIT coordinatorEpoch: 5",
                                " endTxnMarker: ABORT coordinatorEpoch: 7"]


# --- --json ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_json_objects_match_kafka_python(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         codec: str) -> None:
    data = b"".join(_v2_batches(codec)) + _control_batch(9, 1, 5)
    log = _write_log(tmp_path / "t-0", data)
    code, out, err = _dump(capsys, "--json", "--deep-iteration", str(log))
    assert code == 0 and err == []
    objects = [json.loads(line) for line in out]
    at = 0
    for position, batch, _ in _kp_batches(data):
        b = objects[at]
        assert set(b) == BATCH_JSON_KEYS
        assert b == expected_batch_json(str(log), position, batch)
        at += 1
        for record in batch:
            r = objects[at]
            assert set(r) == RECORD_JSON_KEYS
            decoded = lambda v: None if v is None else base64.b64decode(v)  # noqa: E731
            assert (r["type"], r["offset"], r["timestamp"], r["timestampType"]) == (
                "record", record.offset, record.timestamp, record.timestamp_type)
            assert decoded(r["key"]) == record.key and decoded(r["value"]) == record.value
            assert [(h["key"], decoded(h["value"])) for h in r["headers"]] == list(record.headers)
            assert r["sequence"] == _record_sequence(batch, record.offset)
            assert r["isControl"] is bool(batch.is_control_batch)
            at += 1
    assert objects[at:] == [{"type": "summary", "file": str(log), "size": len(data), "validBytes": len(data),
                             "skippedBytes": 0, "zeroTailBytes": 0, "cutBytes": 0,
                             "batches": len(_kp_batches(data))}]


# --- limits and bad bytes ---------------------------------------------------------------------------

def test_max_bytes_reads_only_whole_batches_within_limit(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    data = b"".join(_v2_batches("none"))
    log = _write_log(tmp_path / "t-0", data)
    kp = _kp_batches(data)
    limit = kp[1][0] + kp[1][1].size_in_bytes + 5   # two whole batches + 5 bytes of the third
    code, out, _ = _dump(capsys, "--max-bytes", str(limit), str(log))
    assert code == 0
    assert [V2_BATCH.match(line)["position"] for line in out[2:]] == [str(kp[0][0]), str(kp[1][0])]
    assert not any("invalid bytes" in line for line in out)   # suppressed when --max-bytes is set


def test_trailing_partial_batch_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    batches = _v2_batches("none")
    data = b"".join(batches) + batches[0][:30]
    log = _write_log(tmp_path / "t-0", data)
    code, out, _ = _dump(capsys, str(log))
    assert code == 1
    assert out[-1] == f"Found 30 invalid bytes at the end of {log.name}"
    assert _check_log_lines(out[2:-1], data, deep=False) == 3
    code, out, _ = _dump(capsys, "--json", str(log))
    error, summary = json.loads(out[-2]), json.loads(out[-1])
    assert code == 1 and error == {"type": "error", "file": str(log), "position": len(data) - 30,
                                   "message": f"Found 30 invalid bytes at the end of {log.name}", "length": 30}
    assert summary == {"type": "summary", "file": str(log), "size": len(data), "validBytes": len(data) - 30,
                       "skippedBytes": 30, "zeroTailBytes": 0, "cutBytes": 0, "batches": 3}


@pytest.mark.parametrize("size", [0, 3, 13])
def test_bad_size_field_aborts_like_kafka(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          size: int) -> None:
    good = b"".join(_v2_batches("none"))
    tail = struct.pack(">qi", 99, size) + (b"\x00" * 40 if size == 0 else b"\x01" * 20)
    log = _write_log(tmp_path / "t-0", good + tail)
    second = _write_log(tmp_path / "u-0", good)
    code, out, err = _dump(capsys, str(log), str(second))
    assert code == 1
    assert len(out) == 2 + 3                     # header lines + the three good batches; then Kafka dies
    assert err == [f'Exception in thread "main" org.apache.kafka.common.errors.CorruptRecordException: '
                   f"Found record size {size} smaller than minimum record overhead (14) in file {log}."]
    code, out, _ = _dump(capsys, "--json", str(log), str(second))
    objects = [json.loads(line) for line in out]
    errors = [o for o in objects if o["type"] == "error"]
    assert code == 1 and len(errors) == 1 and errors[0]["position"] == len(good)
    assert errors[0]["file"] == str(log)
    assert sum(o["type"] == "batch" for o in objects) == 6   # JSON goes on with the next file


def test_crc_mismatch_is_printed_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = bytearray(b"".join(_v2_batches("none")))
    data[len(_v2_batches("none")[0]) - 1] ^= 0xFF      # last byte of the first batch
    log = _write_log(tmp_path / "t-0", bytes(data))
    code, out, _ = _dump(capsys, str(log))
    assert code == 1
    assert _check_log_lines(out[2:], bytes(data), deep=False) == 3
    assert V2_BATCH.match(out[2])["isvalid"] == "false"


def test_undecodable_records_abort_after_the_batch_line(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    batches = _v2_batches("none")
    bad = bytearray(batches[1])
    bad[61] = 0x7F                                    # first record's length varint: 63 (runs past the batch)
    struct.pack_into(">I", bad, V2_CRC_OFFSET, crc32c.crc32c(bytes(bad[V2_ATTRIBUTES_OFFSET:])))
    data = batches[0] + bytes(bad) + batches[2]
    log = _write_log(tmp_path / "t-0", data)
    code, out, _ = _dump(capsys, str(log))             # shallow: headers only, nothing to decode
    assert code == 0 and _check_log_lines(out[2:], data, deep=False) == 3
    code, out, err = _dump(capsys, "--deep-iteration", str(log))
    assert code == 1
    first = _kp_batches(data)[0]
    assert _check_log_lines(out[2:6], batches[0], deep=True) == 4    # batch 1 and its 3 records
    assert V2_BATCH.match(out[6])["position"] == str(len(batches[0]))  # the bad batch's line, then death
    assert len(out) == 7 and first[0] == 0
    assert len(err) == 1 and err[0].startswith('Exception in thread "main" ')


# --- index files --------------------------------------------------------------------------------------

def _segment_with_indexes(tmp_path: Path, base: int = 100) -> tuple[Path, list[tuple[int, Any, bytes]]]:
    batches = [
        _build(2, "none", base, [(T0 + i, b"k", b"v" * 50, []) for i in range(3)]),
        _build(2, "gzip", base + 3, [(T0 + 20, b"k", b"v", []), (T0 + 30, b"k", b"v", [])]),
        _build(2, "none", base + 5, [(T0 + 60, b"k", b"v", []), (T0 + 55, b"k", b"v", [])]),
    ]
    data = b"".join(batches)
    return _write_log(tmp_path / "t-0", data, base), _kp_batches(data)


def test_index_lines_and_mismatches(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log, kp = _segment_with_indexes(tmp_path)
    base = 100
    # entry 0: correct (last offset of batch 1); entries 1-2 carry a wrong offset for their batch
    entries = [(kp[1][1].last_offset - base, kp[1][0]), (kp[2][1].base_offset - base, kp[2][0]),
               (kp[2][1].last_offset + 7 - base, kp[2][0])]
    index = log.with_suffix(".index")
    index.write_bytes(b"".join(struct.pack(">ii", *e) for e in entries) + b"\x00" * 8 * 4)  # zero tail
    code, out, err = _dump(capsys, str(index))
    assert code == 0
    assert out[0] == f"Dumping {index}"
    assert [INDEX_LINE.match(line).groupdict() for line in out[1:]] == [
        {"offset": str(base + rel), "position": str(pos)} for rel, pos in entries]
    mismatches = [(base + rel, batch.last_offset) for (rel, pos), (p, batch, _) in
                  zip(entries, [kp[1], kp[2], kp[2]], strict=True) if base + rel != batch.last_offset]
    assert err == [f"Mismatches in :{index}"] + [
        f"  Index offset: {x}, log offset: {y}" for x, y in reversed(mismatches)]
    code, out, err = _dump(capsys, "--verify-index-only", str(index))
    assert out == [f"Dumping {index}"] and len(err) == 3


def test_index_empty_and_sanity_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log, _ = _segment_with_indexes(tmp_path)
    index = log.with_suffix(".index")
    index.write_bytes(b"")
    assert _dump(capsys, "--index-sanity-check", str(index))[1] == [f"Dumping {index}", f"{index} is empty."]
    index.write_bytes(struct.pack(">ii", 4, 0))
    assert _dump(capsys, "--index-sanity-check", str(index))[1][1] == f"{index} passed sanity check."
    index.write_bytes(struct.pack(">ii", 4, 0) + b"\x00" * 4)   # 12 bytes: not a multiple of 8
    code, out, err = _dump(capsys, "--index-sanity-check", str(index))
    assert code == 1 and out == [f"Dumping {index}"]
    assert err == ['Exception in thread "main" org.apache.kafka.storage.internals.log.CorruptIndexException: '
                   f"Index file {os.path.abspath(index)} is corrupt, found 12 bytes which is neither "
                   "positive nor a multiple of 8"]


def _max_record_timestamp(batch: Any) -> int:
    return max(r.timestamp for r in batch)


def test_time_index_lines_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log, kp = _segment_with_indexes(tmp_path)
    base = 100
    log.with_suffix(".index").write_bytes(struct.pack(">ii", kp[1][1].last_offset - base, kp[1][0]))
    b1, b2 = kp[1][1], kp[2][1]
    last1, base2, last2 = b1.last_offset, b2.base_offset, b2.last_offset  # before iterating records
    max1, max2 = _max_record_timestamp(b1), _max_record_timestamp(b2)
    entries = [
        (max1, last1 - base),          # right
        (max2 + 1, last2 - base),      # wrong timestamp
        (max1 - 5, last2 - base),      # out of order (and wrong)
        (T0 + 70, base2 - base),       # not a batch's last offset
    ]
    timeindex = log.with_suffix(".timeindex")
    timeindex.write_bytes(b"".join(struct.pack(">qi", *e) for e in entries) + b"\x00" * 12 * 2)
    code, out, err = _dump(capsys, str(timeindex))
    assert code == 0
    assert [TIME_INDEX_LINE.match(line).groupdict() for line in out[1:]] == [
        {"timestamp": str(ts), "offset": str(base + rel)} for ts, rel in entries]
    path = os.path.abspath(timeindex)
    assert err == [
        f"Found timestamp mismatch in :{path}",
        f"  Index timestamp: {entries[1][0]}, log timestamp: {max2}",
        f"  Index timestamp: {entries[2][0]}, log timestamp: {max2}",
        f"Found out of order timestamp in :{path}",
        f"  Index timestamp: {entries[2][0]}, Previously indexed timestamp: {entries[1][0]}",
        f"The following indexed offsets are not found in :{path}",   # Kafka 4.3+ names the file
        f"Indexed offset: {base2}, found log offset: {last2}",
    ]


# --- .snapshot and .txnindex --------------------------------------------------------------------------

SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")  # ProducerSnapshot.json v1 entry


def test_producer_snapshot_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    entries = [(77, 2, 11, 4, 1, T0 + 40, -1, -1), (78, 1, 1, 8, 3, T0 + 103, 4, 5),
               (79, 0, -1, -1, 0, T0, -1, -1)]
    body = struct.pack(">i", len(entries)) + b"".join(SNAPSHOT_ENTRY.pack(*e) for e in entries)
    path = tmp_path / f"{9:020d}.snapshot"
    path.write_bytes(struct.pack(">hI", 1, crc32c.crc32c(body)) + body)
    code, out, err = _dump(capsys, str(path))
    assert code == 0 and err == []
    expected = []
    for pid, epoch, last_seq, last_off, delta, ts, coord, txn_first in entries:
        txn = f"OptionalLong[{txn_first}]" if txn_first >= 0 else "OptionalLong.empty"
        line = (f"producerId: {pid} producerEpoch: {epoch} coordinatorEpoch: {coord} currentTxnFirstOffset: "
                f"{txn} lastTimestamp: {ts}")
        if last_off >= 0:
            # BatchMetadata.firstSeq = DefaultRecordBatch.decrementSequence(lastSeq, offsetDelta): wraps
            first_seq = last_seq - delta if last_seq >= delta else INT_MAX - (delta - last_seq) + 1
            line += (f" firstSequence: {first_seq} lastSequence: {last_seq} lastOffset: {last_off} "
                     f"offsetDelta: {delta} timestamp: {ts}")
        expected.append(line)
    assert out == [f"Dumping {path}", *expected]
    path.write_bytes(struct.pack(">hI", 1, crc32c.crc32c(body) ^ 1) + body)
    code, out, err = _dump(capsys, str(path))
    assert code == 1 and out == [f"Dumping {path}"]
    assert err == [f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc32c.crc32c(body) ^ 1}. "
                   f"Computed crc: {crc32c.crc32c(body)}"]


def test_txn_index_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    entries = [(0, 77, 3, 9, 10), (0, 78, 12, 20, 15)]
    path = tmp_path / f"{0:020d}.txnindex"
    path.write_bytes(b"".join(struct.pack(">hqqqq", *e) for e in entries))
    code, out, err = _dump(capsys, str(path))
    assert code == 0 and err == []
    assert out == [f"Dumping {path}"] + [
        f"version: {v} producerId: {p} firstOffset: {f} lastOffset: {last} lastStableOffset: {lso}"
        for v, p, f, last, lso in entries]


def test_txn_index_unknown_version_aborts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / f"{0:020d}.txnindex"
    path.write_bytes(struct.pack(">hqqqq", 0, 77, 3, 9, 10) + struct.pack(">hqqqq", 0x100, 78, 12, 20, 15))
    code, out, err = _dump(capsys, str(path))
    assert code == 1 and out == [f"Dumping {path}"]
    # AbortedTxn.version reads the first byte only: 0x0100 is version 1
    assert err == ['Exception in thread "main" org.apache.kafka.common.KafkaException: Unexpected aborted '
                   f"transaction version 1 in transaction index {path}, current version is 0"]


def test_index_entry_beyond_max_message_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log, kp = _segment_with_indexes(tmp_path)
    index = log.with_suffix(".index")
    index.write_bytes(struct.pack(">ii", kp[1][1].last_offset - 100, kp[1][0]))
    size = kp[1][1].size_in_bytes
    assert _dump(capsys, "--max-message-size", str(size), str(index))[0] == 0
    code, out, err = _dump(capsys, "--max-message-size", str(size - 1), str(index))
    assert code == 1 and out == [f"Dumping {index}"]
    assert err == ['Exception in thread "main" java.util.NoSuchElementException']


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main(["dump"]) == 2
    assert main(["dump", "--max-bytes", "-1", "x.log"]) == 2
    assert main(["dump", "--offsets-decoder", "--transaction-log-decoder", "x.log"]) == 2
    assert main(["dump", "--help"]) == 0
    assert "--deep-iteration" in capsys.readouterr().out


def test_unknown_file_is_ignored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Kafka's lines; but nothing was dumped, so not a success (tests/cli/test_dump_inputs.py)."""
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text("0\n0\n")
    other = tmp_path / "x.properties"
    other.write_text("a=b\n")
    code, out, err = _dump(capsys, str(path), str(other))
    assert code == 1
    assert out == [f"Dumping {path}", f"Dumping {other}"]
    assert err == [f"Ignoring unknown file {path}", f"Ignoring unknown file {other}"]


# --- real broker files --------------------------------------------------------------------------------

REAL_LOGS = [
    "DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-39/00000000000000000000.log",
    "Danielowo2000__BigDataTechnologies-Version-2/kafka_data/_confluent-ksql-default__command_topic-0/"
    "00000000000000000000.log",
    "hermag__kafkademo/kafka/data/test-0/00000000000000000000.log",
    "berkayakcay__toy-node-log-collector/kafka-data/topic-logx-001-0/00000000000000000000.log",
    "xpxwo100__bullShit/tmp/kafka-logs/foo-0/00000000000000000000.log",
    "aviramcohenwork__Pizza-Project-MS/tmp/kafka-logs/getorderstatus-0/00000000000000000000.log",
    "mscaldas2012__kafka-connect-spooldir/kafka-data/__consumer_offsets-9/00000000000000000000.log",
    "apache__kafka/core/data/kafka-1168504093769635972/__cluster_metadata-0/00000000000000000000.log",
]


@pytest.mark.realdata
@pytest.mark.parametrize("rel", REAL_LOGS, ids=lambda r: r.split("/")[0].split("__")[0])
def test_realdata_lines_match_kafka_python(realdata: Path, capsys: pytest.CaptureFixture[str],
                                           rel: str) -> None:
    log = realdata / rel
    data = log.read_bytes()
    code, out, _ = _dump(capsys, "--deep-iteration", str(log))
    assert code == 0
    assert out[:2] == [f"Dumping {log}", f"Log starting offset: {int(log.name.split('.')[0])}"]
    assert _check_log_lines(out[2:], data, deep=True) == len(out) - 2


@pytest.mark.realdata
def test_realdata_non_consecutive_offsets(realdata: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """DonaldY's compacted __consumer_offsets-39: offsets 4, 16, 17 (the cleaner removed 5..15).

    Kafka 4.3+ starts from -1 (a first offset other than 0 is a gap) and sorts the pairs.
    """
    log = realdata / "DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-39/00000000000000000000.log"
    offsets = [r.offset for _, b, _ in _kp_batches(log.read_bytes()) for r in b]
    pairs = [(a, b) for a, b in zip([-1, *offsets], offsets) if b != a + 1]
    assert len(pairs) > 1 and pairs[0] == (-1, offsets[0])  # the set really has gaps
    code, _, err = _dump(capsys, "--deep-iteration", str(log))
    assert code == 0
    assert err == [f"Non-consecutive offsets in {log}"] + [
        f"  {a} is followed by {b}" for a, b in sorted(pairs)]
    _, _, err = _dump(capsys, str(log))   # shallow iteration does not check
    assert err == []


@pytest.mark.realdata
def test_realdata_time_index_and_snapshot(realdata: Path, capsys: pytest.CaptureFixture[str]) -> None:
    part = realdata / "DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-17"
    timeindex = part / "00000000000000000000.timeindex"
    raw = timeindex.read_bytes()
    entries = [struct.unpack_from(">qi", raw, i) for i in range(0, len(raw) - len(raw) % 12, 12)]
    code, out, err = _dump(capsys, str(timeindex), str(part / "00000000000000000000.index"))
    assert code == 0
    assert out == [f"Dumping {timeindex}"] + [f"timestamp: {ts} offset: {rel}" for ts, rel in entries] + [
        f"Dumping {part / '00000000000000000000.index'}", f"{part / '00000000000000000000.index'} is empty."]
    # the broker wrote the entry = (max timestamp, last offset) of a batch: no report
    batches = _kp_batches((part / "00000000000000000000.log").read_bytes())
    assert {(max(r.timestamp for r in b), b.last_offset) for _, b, _ in batches} >= set(entries)
    assert err == []

    snapshot = realdata / "macsakini__KafkaCluster/kafka/data/tenitems-0/00000000000000000009.snapshot"
    raw = snapshot.read_bytes()
    (count,) = struct.unpack_from(">i", raw, 6)
    code, out, err = _dump(capsys, str(snapshot))
    assert code == 0 and err == [] and len(out) == 1 + count
    for i, line in enumerate(out[1:]):
        pid, epoch, last_seq, last_off, delta, ts, coord, _ = SNAPSHOT_ENTRY.unpack_from(raw, 10 + 46 * i)
        assert line.startswith(f"producerId: {pid} producerEpoch: {epoch} coordinatorEpoch: {coord} ")
        assert line.endswith(f"lastSequence: {last_seq} lastOffset: {last_off} offsetDelta: {delta} "
                             f"timestamp: {ts}")


@pytest.mark.realdata
def test_realdata_kraft_snapshot_header(realdata: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = (realdata / "rjmfernandes__flink-on-prem/data/__cluster_metadata-0/"
            "00000000000000007752-0000000001.checkpoint")
    first_batch = _kp_batches(path.read_bytes())[0][1]
    header = next(iter(first_batch))
    version, last_ts = struct.unpack_from(">hq", header.value)   # SnapshotHeaderRecord v0
    code, out, _ = _dump(capsys, "--deep-iteration", "--max-bytes", str(first_batch.size_in_bytes), str(path))
    assert code == 0
    assert out[1] == "Snapshot end offset: 7752, epoch: 1"
    assert V2_RECORD.match(out[3])["rest"] == (
        f' SnapshotHeader {{"version":{version},"lastContainedLogTimestamp":{last_ts}}}')


@pytest.mark.realdata
def test_realdata_offsets_decoder_keys(realdata: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--offsets-decoder: the OffsetCommitKey/GroupMetadataKey fields, parsed here with struct."""
    log = realdata / "DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-39/00000000000000000000.log"
    code, out, _ = _dump(capsys, "--offsets-decoder", str(log))
    assert code == 0
    tails = [V2_RECORD.match(line)["rest"] for line in out if line.startswith("|")]
    records = [r for _, b, _ in _kp_batches(log.read_bytes()) for r in b]
    assert len(tails) == len(records)
    for tail, record in zip(tails, records, strict=True):
        (key_version, glen) = struct.unpack_from(">hh", record.key)
        group = record.key[4:4 + glen].decode()
        if key_version in (0, 1):
            (tlen,) = struct.unpack_from(">h", record.key, 4 + glen)
            topic = record.key[6 + glen:6 + glen + tlen].decode()
            (partition,) = struct.unpack_from(">i", record.key, 6 + glen + tlen)
            data = {"group": group, "topic": topic, "partition": partition}
        else:
            data = {"group": group}
        key_json = json.dumps({"type": str(key_version), "data": data}, separators=(",", ":"))
        assert tail.startswith(f" key: {key_json} payload: ")
        if record.value is None:
            assert tail.endswith(" payload: <DELETE>")


# --- the real console entry point ---------------------------------------------------------------------

def test_console_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not KLOGS.exists():
        pytest.skip(f"{KLOGS} not installed")
    data = b"".join(_v2_batches("none"))
    log = _write_log(tmp_path / "t-0", data)
    _, in_process, _ = _dump(capsys, "--deep-iteration", str(log))
    done = subprocess.run([str(KLOGS), "dump", "--deep-iteration", str(log)], capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.splitlines() == in_process
    assert _check_log_lines(done.stdout.splitlines()[2:], data, deep=True) == 12
    bad = _write_log(tmp_path / "u-0", data + struct.pack(">qi", 0, 1) + b"\x07" * 20)
    done = subprocess.run([str(KLOGS), "dump", str(bad)], capture_output=True, text=True, check=False,
                          timeout=120)
    assert done.returncode == 1
    assert "CorruptRecordException: Found record size 1 smaller than minimum record overhead" in done.stderr


def test_a_job_that_cannot_load_is_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "kafka_format.jobs.audit", None)   # import of it fails
    assert main(["audit", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("klogs audit: cannot load the job (")
    assert not (tmp_path / "out").exists()
