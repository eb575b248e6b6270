"""Kafka protocol primitives of the internal-topic decoders, and robustness on bad bytes.

Expected values come from Java's definitions (``String.hashCode``,
``Utils.abs``, ``Uuid.toString``, ``ByteUtils.readUnsignedVarint``) and from the
message schemas' rules (nullable versions, tagged versions), worked out by hand.
The fuzz tests hold every public decoder to "a dict or InternalTopicFormatError".
"""

from __future__ import annotations

import os
import struct
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

with warnings.catch_warnings():  # kafka-python's package import emits DeprecationWarnings
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record import MemoryRecords

from kafka_format.common.errors import InternalTopicFormatError, KafkaFormatError
from kafka_format.internal import cluster_metadata as cm
from kafka_format.internal import consumer_offsets as co
from kafka_format.internal import kraft_control as kc
from kafka_format.internal import transaction_log as tl
from kafka_format.internal.protocol import (
    UNKNOWN_TAGS_KEY,
    Reader,
    java_abs,
    java_string_hash,
    partition_for,
    read_message,
    to_json,
    uuid_to_str,
    write_message,
)

REALDATA = Path(os.environ.get("KLA_SHARED_DIR", Path(__file__).resolve().parents[3] / "shared")) / "realdata"
INT_MIN = -(1 << 31)


@pytest.mark.parametrize(("text", "expected"), [
    ("", 0),
    ("a", 97),
    ("hello", 99162322),                  # documented Java value
    ("polygenelubricants", INT_MIN),      # the classic String whose hashCode is Integer.MIN_VALUE
    ("\U0001F600", 31 * 0xD83D + 0xDE00),  # hashed over the UTF-16 surrogate pair
])
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_partition_for_uses_kafka_abs() -> None:
    assert java_abs(INT_MIN) == 0 and java_abs(-5) == 5
    assert partition_for("polygenelubricants") == 0  # Utils.abs(MIN_VALUE) = 0, not negative
    assert partition_for("hello", 50) == 99162322 % 50


def test_uuid_strings_are_kafka_base64() -> None:
    assert uuid_to_str(bytes(15) + b"\x01") == "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid.METADATA_TOPIC_ID
    assert uuid_to_str(bytes(16)) == "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID
    assert uuid_to_str(b"\xfb" * 16).count("-") + uuid_to_str(b"\xfb" * 16).count("_") > 0  # URL-safe


@pytest.mark.parametrize(("raw", "value"), [
    (b"\x00", 0), (b"\x7f", 127), (b"\x80\x01", 128),
    (b"\xff\xff\xff\xff\x07", 0x7FFFFFFF),
    (b"\xff\xff\xff\xff\x0f", -1),  # Java int wrap-around
])
def test_unsigned_varint_as_java(raw: bytes, value: int) -> None:
    r = Reader(raw)
    assert r.uvarint("v") == value and r.pos == len(raw)


@pytest.mark.parametrize("raw", [b"", b"\x80", b"\xff\xff\xff\xff\xff\x01"])
def test_unsigned_varint_rejects_truncated_and_overlong(raw: bytes) -> None:
    with pytest.raises(InternalTopicFormatError) as e:
        Reader(raw).uvarint("v")
    assert e.value.position == 0 and e.value.expected


def test_null_in_non_nullable_field_reports_position() -> None:
    key = struct.pack(">hh", 1, -1)  # OffsetCommitKey group: string length -1
    with pytest.raises(InternalTopicFormatError) as e:
        co.decode_consumer_offsets_key(key)
    assert e.value.position == 2 and "null" in str(e.value)


def test_truncated_value_reports_expectation() -> None:
    raw = co.encode_offset_commit_value(1, "abc", 2, version=1)
    with pytest.raises(InternalTopicFormatError) as e:
        co.decode_consumer_offsets_value(1, raw[:-3])
    assert e.value.position is not None and e.value.position <= len(raw)
    assert e.value.expected == "8 bytes" and e.value.found == "5 bytes remaining"


def test_nullable_string_and_compact_null() -> None:
    data = {"protocolType": "consumer", "generation": 1, "protocol": None, "leader": None, "members": []}
    for version in (0, 4):  # int16 -1 / compact 0 both mean null
        raw = write_message("GroupMetadataValue", data, version)
        out, _ = read_message("GroupMetadataValue", raw, version)
        assert out["protocol"] is None and out["leader"] is None


def test_unknown_tagged_fields_are_kept_and_written_back() -> None:
    value = {"offset": 1, "leaderEpoch": 2, "metadata": "", "commitTimestamp": 3}
    base = write_message("OffsetCommitValue", value, 4)
    assert base[-1] == 0  # empty tagged-field section
    raw = base[:-1] + bytes([1, 9, 2]) + b"hi"  # one tagged field: tag 9, 2 bytes
    out, end = read_message("OffsetCommitValue", raw, 4)
    assert end == len(raw) and out[UNKNOWN_TAGS_KEY] == {9: b"hi"}
    assert "_unknown" not in to_json(out) and write_message("OffsetCommitValue", out, 4) == raw


def test_tagged_fields_are_written_in_ascending_tag_order() -> None:
    # PartitionChangeRecord lists Directories (tag 8) before EligibleLeaderReplicas (tag 6);
    # Kafka's generated writer emits tagged fields sorted by tag.
    zero = "AAAAAAAAAAAAAAAAAAAAAA"
    raw = write_message("PartitionChangeRecord", {"partitionId": 0, "topicId": zero,
                                                  "directories": [zero], "eligibleLeaderReplicas": [1]}, 2)
    assert raw[20:] == bytes([2, 6, 5, 2, 0, 0, 0, 1, 8, 17, 2]) + bytes(16)


def test_tag_of_a_later_version_is_rejected() -> None:
    # PartitionRecord tag 1 (EligibleLeaderReplicas) is tagged only in v2+; Kafka throws
    # "Tag 1 is not valid for version 0".
    raw = cm.encode_partition_record("AAAAAAAAAAAAAAAAAAAAAQ", 0, [1], [1], 1)
    body = raw[3:-1] + bytes([1, 1, 1, 1])  # replace the empty tag section by tag 1 = []
    with pytest.raises(InternalTopicFormatError, match="tag 1 is not valid for version 0"):
        read_message("PartitionRecord", body, 0)


def test_array_count_is_bounded_by_remaining_bytes() -> None:
    # GroupMetadataValue v0: protocolType "consumer", generation 1, protocol null, leader null,
    # then a members count of 0x7FFFFFF0 with nothing behind it
    raw = struct.pack(">h", 0) + b"\x00\x08consumer" + struct.pack(">i", 1) + b"\xff\xff" + b"\xff\xff" \
        + struct.pack(">i", 0x7FFFFFF0)
    with pytest.raises(InternalTopicFormatError, match="collection of size"):
        co.decode_consumer_offsets_value(2, raw)


def test_json_renders_bytes_as_base64_and_keeps_order() -> None:
    rendered = to_json({"b": b"\x00\xff", "a": [1, None], "s": "\u00e9"})
    assert rendered == '{"b":"AP8=","a":[1,null],"s":"\u00e9"}'
    # Jackson escapes control characters with upper-case hex; an escaped backslash stays literal
    assert to_json({"c": "\x1f", "d": "\\u001f"}) == '{"c":"\\u001F","d":"\\\\u001f"}'


# --------------------------------------------------------------------------- robustness

DECODERS: dict[str, Callable[[bytes], Any]] = {
    "offsets-key": co.decode_consumer_offsets_key,
    **{f"offsets-value-{t}": (lambda b, t=t: co.decode_consumer_offsets_value(t, b))
       for t in co.RECORD_TYPES},
    "offsets-text": lambda b: co.format_offsets_record(b[:len(b) // 2], b[len(b) // 2:], 0),
    "subscription": co.decode_consumer_protocol_subscription,
    "assignment": co.decode_consumer_protocol_assignment,
    "txn-key": tl.decode_transaction_log_key,
    "txn-value": tl.decode_transaction_log_value,
    "txn-text": lambda b: tl.format_transaction_log_record(b[:len(b) // 2], b[len(b) // 2:]),
    "metadata": cm.decode_metadata_record,
    "metadata-replay": lambda b: cm.replay_cluster_metadata([b]).topic_ids,
    **{f"control-{t}": (lambda b, t=t: kc.format_kraft_control(t, b)) for t in kc.CONTROL_VALUE_SCHEMAS},
}


def _only_format_errors(fn: Callable[[bytes], Any], data: bytes) -> None:
    try:
        result = fn(data)
    except InternalTopicFormatError as e:
        assert e.position is None or 0 <= e.position <= len(data)
        return
    except KafkaFormatError as e:  # pragma: no cover - would be a wrong error type
        raise AssertionError(f"{type(e).__name__} instead of InternalTopicFormatError") from e
    to_json(result)  # whatever decodes also renders


@pytest.mark.parametrize("name", sorted(DECODERS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=200))
def test_random_bytes_raise_only_format_errors(name: str, data: bytes) -> None:
    _only_format_errors(DECODERS[name], data)


@pytest.mark.parametrize("name", ["metadata", "offsets-value-2", "offsets-value-1", "control-6"])
@settings(max_examples=100, deadline=None)
@given(tail=st.binary(max_size=120), head=st.sampled_from([
    b"\x01\x03\x00", b"\x01\x03\x02", b"\x01\x00\x03", b"\x00\x03", b"\x00\x04", b"\x00\x01", b"\x00\x00"]))
def test_plausible_headers_with_random_bodies(name: str, head: bytes, tail: bytes) -> None:
    _only_format_errors(DECODERS[name], head + tail)


def _real_values(pattern: str, limit: int) -> list[bytes]:
    out: list[bytes] = []
    for log in sorted(REALDATA.glob(pattern))[:3]:
        mr = MemoryRecords(log.read_bytes())
        while (batch := mr.next_batch()) is not None and len(out) < limit:
            if not batch.is_control_batch:
                out.extend(bytes(r.value) for r in batch if r.value is not None)
    return out[:limit]


def test_every_truncation_of_real_records_fails_cleanly(realdata: Path) -> None:
    cases = [(cm.decode_metadata_record, v) for v in _real_values("**/__cluster_metadata-0/*.log", 60)]
    cases += [(lambda b: co.decode_consumer_offsets_value(2, b), v)
              for v in _real_values("**/__consumer_offsets-*/*.log", 400) if len(v) > 60][:30]
    assert len(cases) > 50
    for fn, value in cases:
        fn(value)  # the whole record decodes
        for cut in range(len(value)):
            _only_format_errors(fn, value[:cut])
        for i in range(0, len(value), 3):  # flip bytes
            _only_format_errors(fn, value[:i] + bytes([value[i] ^ 0xFF]) + value[i + 1:])
