"""v2 record batches: our decode equals kafka-python's and aiokafka's, and Kafka's rules hold.

Bytes come from kafka-python's DefaultRecordBatchBuilder (see builders.py); each case is
decoded by both our decoders (reference and compiled) and compared record for record
with two independent readers of the same bytes.
"""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest
from builders import (
    CODECS,
    DECODER_IDS,
    DECODERS,
    aiokafka_records,
    arrow_records,
    build_v2,
    comparable,
    kafka_python_records,
    need_codec,
    patch_v2,
    raw_v2,
    sample_records,
    varint,
)

from kafka_format.common.errors import CorruptRecordError
from kafka_format.records.control import ControlRecordType, parse_control_key, parse_end_txn_marker
from kafka_format.records.file_records import decode_segment
from kafka_format.records.schema import RECORD_SCHEMA

INT32_MAX = 2**31 - 1


def decode(data: bytes, decoder, **kw) -> list[pa.RecordBatch]:
    return list(decode_segment(data, decoder=decoder, **kw))


@pytest.fixture(params=DECODERS, ids=DECODER_IDS)
def decoder(request):
    return request.param


VARIANTS = {
    "plain": dict(records=dict(n=7, headers=False, nulls=False), batch={}),
    "headers_nulls": dict(records=dict(n=9), batch={}),
    "idempotent": dict(records=dict(n=4), batch=dict(producer_id=4242, producer_epoch=3, base_sequence=17)),
    "transactional": dict(records=dict(n=3), batch=dict(transactional=True, producer_id=7, producer_epoch=0,
                                                         base_sequence=0)),
}


class TestAgainstOracles:
    @pytest.mark.parametrize("codec", list(CODECS))
    @pytest.mark.parametrize("variant", list(VARIANTS))
    def test_records_equal_kafka_python_and_aiokafka(self, decoder, codec, variant):
        need_codec(codec)
        spec = VARIANTS[variant]
        data = build_v2(sample_records(**spec["records"]), codec=CODECS[codec], base_offset=1000,
                        **spec["batch"])
        batches = decode(data, decoder)
        ours = arrow_records(batches)
        assert comparable(ours) == kafka_python_records(data) == aiokafka_records(data)
        assert all(b.schema.equals(RECORD_SCHEMA) for b in batches)
        batch = spec["batch"]
        for i, row in enumerate(ours):
            assert row["magic"] == 2
            assert row["compression"] == codec
            assert row["batchBaseOffset"] == 1000
            assert row["batchLastOffset"] == 1000 + len(ours) - 1
            assert row["producerId"] == batch.get("producer_id", -1)
            assert row["producerEpoch"] == batch.get("producer_epoch", -1)
            base_seq = batch.get("base_sequence", -1)
            assert row["sequence"] == (-1 if base_seq < 0 else base_seq + i)
            assert row["isTransactional"] is batch.get("transactional", False)
            assert row["isControl"] is False
            assert row["position"] == 0

    @pytest.mark.parametrize("codec", list(CODECS))
    def test_log_append_time_uses_max_timestamp(self, decoder, codec):
        need_codec(codec)
        data = patch_v2(build_v2(sample_records(5), codec=CODECS[codec]), set_bits=0x08,
                        max_timestamp=1_234_567)
        ours = comparable(arrow_records(decode(data, decoder)))
        assert ours == kafka_python_records(data) == aiokafka_records(data)
        assert {r["timestamp"] for r in ours} == {1_234_567}
        assert {r["timestampType"] for r in ours} == {1}

    def test_offset_gaps_and_several_batches(self, decoder):
        data = b"".join(build_v2(sample_records(3 + k), base_offset=100 * k, offset_step=k + 1)
                        for k in range(4))
        ours = arrow_records(decode(data, decoder))
        assert comparable(ours) == kafka_python_records(data) == aiokafka_records(data)
        positions = sorted({r["position"] for r in ours})
        assert len(positions) == 4

    def test_leader_epoch_and_high_attribute_bits(self, decoder):
        # Only the low byte of attributes has meaning (DefaultRecordBatch.attributes()).
        data = patch_v2(build_v2(sample_records(3)), set_bits=0x7F00, leader_epoch=12)
        ours = arrow_records(decode(data, decoder))
        assert comparable(ours) == kafka_python_records(data)
        assert {r["leaderEpoch"] for r in ours} == {12}
        assert {r["compression"] for r in ours} == {"none"}


class TestKafkaRules:
    def test_sequence_wraps_past_int32_max(self, decoder):
        # DefaultRecordBatch.incrementSequence: past Int.MAX the sequence continues at 0.
        data = build_v2(sample_records(4), producer_id=1, producer_epoch=0, base_sequence=INT32_MAX - 1)
        ours = arrow_records(decode(data, decoder))
        assert [r["sequence"] for r in ours] == [INT32_MAX - 1, INT32_MAX, 0, 1]

    def test_control_commit_marker_row(self, decoder):
        key = struct.pack(">hh", 0, ControlRecordType.COMMIT)
        value = struct.pack(">hi", 0, 5)
        data = patch_v2(build_v2([{"timestamp": 9, "key": key, "value": value, "headers": []}],
                                 transactional=True, producer_id=3, producer_epoch=1), set_bits=0x20)
        ours = arrow_records(decode(data, decoder))
        assert comparable(ours) == kafka_python_records(data) == aiokafka_records(data)
        (row,) = ours
        assert row["isControl"] is True and row["isTransactional"] is True
        marker = parse_end_txn_marker(row["key"], row["value"])
        assert marker.type is ControlRecordType.COMMIT and marker.coordinator_epoch == 5

    def test_empty_batch_gives_no_rows_but_a_batch_row(self, decoder):
        # DefaultRecordBatch.writeEmptyHeader: 61 bytes, recordsCount 0, baseTimestamp -1.
        data = raw_v2(b"", 0, base_offset=50, last_offset_delta=9, base_timestamp=-1, max_timestamp=77)
        assert decode(data, decoder) == []
        (batch,) = decode(data, decoder, granularity="batch")
        row = batch.to_pylist()[0]
        assert (row["count"], row["baseOffset"], row["lastOffset"], row["crcValid"]) == (0, 50, 59, True)

    def test_delete_horizon_reported_in_batch_rows(self, decoder):
        data = patch_v2(build_v2(sample_records(2)), set_bits=0x40)
        (batch,) = decode(data, decoder, granularity="batch")
        row = batch.to_pylist()[0]
        assert row["deleteHorizonMs"] == row["baseTimestamp"] == sample_records(1)[0]["timestamp"]

    def test_include_headers_false_gives_empty_lists(self, decoder):
        data = build_v2(sample_records(5))
        (batch,) = decode(data, decoder, include_headers=False)
        assert batch.column("headers").to_pylist() == [[]] * 5

    def test_max_rows_per_batch_splits_output(self, decoder):
        data = build_v2(sample_records(10))
        batches = decode(data, decoder, max_rows_per_batch=3)
        assert [b.num_rows for b in batches] == [3, 3, 3, 1]
        assert comparable(arrow_records(batches)) == kafka_python_records(data)


class TestControlParsing:
    @pytest.mark.parametrize("type_id, expected", [(0, "ABORT"), (1, "COMMIT"), (2, "LEADER_CHANGE"),
                                                    (3, "SNAPSHOT_HEADER"), (4, "SNAPSHOT_FOOTER"),
                                                    (5, "KRAFT_VERSION"), (6, "KRAFT_VOTERS"),
                                                    (7, "UNKNOWN"), (-3, "UNKNOWN")])
    def test_key_types(self, type_id, expected):
        assert parse_control_key(struct.pack(">hh", 0, type_id))[1].name == expected

    def test_higher_key_version_parsed_as_v0_negative_rejected(self):
        assert parse_control_key(struct.pack(">hhxx", 3, 1)) == (3, ControlRecordType.COMMIT)
        with pytest.raises(CorruptRecordError):
            parse_control_key(struct.pack(">hh", -1, 1))
        with pytest.raises(CorruptRecordError):
            parse_control_key(b"\x00\x00\x00")

    def test_end_txn_marker_rules(self):
        key = struct.pack(">hh", 0, 0)
        assert parse_end_txn_marker(key, struct.pack(">hi", 1, -4) + b"extra").coordinator_epoch == -4
        with pytest.raises(CorruptRecordError):
            parse_end_txn_marker(key, b"\x00\x00\x00\x00\x00")
        with pytest.raises(CorruptRecordError):
            parse_end_txn_marker(key, struct.pack(">hi", -2, 0))
        with pytest.raises(CorruptRecordError):
            parse_end_txn_marker(struct.pack(">hh", 0, 2), struct.pack(">hi", 0, 0))


def record(body: bytes) -> bytes:
    return varint(len(body)) + body


def simple_body(key: bytes = b"k", value: bytes = b"v", headers: bytes = varint(0),
                offset_delta: int = 0) -> bytes:
    return (b"\x00" + varint(0) + varint(offset_delta) + varint(len(key)) + key + varint(len(value)) + value
            + headers)


MALFORMED = {
    "count_too_high": (record(simple_body()), 2, "premature EOF"),
    "count_too_low": (record(simple_body()) + record(simple_body(offset_delta=1)), 1, "still remaining"),
    "count_huge": (record(simple_body()), INT32_MAX, "premature EOF"),
    "count_negative": (record(simple_body()), -1, "record count"),
    "record_length_short": (varint(len(simple_body()) - 1) + simple_body(), 1, "record size"),
    "record_length_long": (varint(len(simple_body()) + 1) + simple_body() + b"\x00", 1, "record size"),
    "key_past_end": (record(b"\x00" + varint(0) + varint(0) + varint(90) + b"k"), 1, ""),
    "varint_overlong": (record(b"\x00" + varint(0) + b"\x80\x80\x80\x80\x80\x01" + varint(-1) + varint(-1)
                               + varint(0)), 1, "varint"),
    "header_count_negative": (record(simple_body(headers=varint(-1))), 1, "headers"),
    "header_count_too_big": (record(simple_body(headers=varint(1000))), 1, "headers"),
    "header_key_null": (record(simple_body(headers=varint(1) + varint(-1) + varint(-1))), 1, "header key"),
}

# Kafka reads header keys with Utils.utf8 = new String(bytes, UTF_8): malformed UTF-8 is never an
# error, each malformed sequence becomes U+FFFD.  Expected strings: what OpenJDK 17 returned for
# new String(bytes, StandardCharsets.UTF_8) on these bytes.
JAVA_UTF8 = {
    "invalid_bytes": (b"\xff\xfe", "\ufffd\ufffd"),
    "encoded_surrogate": (b"ab\xed\xa0\x80cd", "ab\ufffdcd"),  # Python's errors="replace": three U+FFFD
    "surrogate_prefix": (b"\xed\xa0A", "\ufffdA"),              # Python's errors="replace": two U+FFFD
    "truncated_surrogate": (b"\xed\xbf", "\ufffd"),
    "overlong": (b"\xe0\x80\x80", "\ufffd\ufffd\ufffd"),
    "truncated_3_byte": (b"\xe1\x80A", "\ufffdA"),
    "truncated_4_byte_at_end": (b"\xf0\x90\x80", "\ufffd"),
    "above_max_code_point": (b"\xf4\x90\x80\x80", "\ufffd" * 4),
    "valid": (b"caf\xc3\xa9", "caf\u00e9"),
}


class TestMalformedRecords:
    @pytest.mark.parametrize("case", list(MALFORMED))
    def test_corrupt_record_error_at_batch_position(self, decoder, case):
        payload, count, words = MALFORMED[case]
        good = build_v2(sample_records(2))
        data = good + raw_v2(payload, count, base_offset=40)
        with pytest.raises(CorruptRecordError) as info:
            decode(data, decoder)
        err = info.value
        assert err.position == len(good)
        assert words.lower() in str(err).lower()

    @pytest.mark.parametrize("case", list(MALFORMED))
    def test_permissive_skips_exactly_the_bad_batch(self, decoder, case):
        payload, count, _ = MALFORMED[case]
        good = build_v2(sample_records(2))
        bad = raw_v2(payload, count, base_offset=40)
        after = build_v2(sample_records(3), base_offset=90)
        skipped = []
        ours = arrow_records(decode(good + bad + after, decoder, mode="PERMISSIVE", on_skip=skipped.append))
        assert comparable(ours) == kafka_python_records(good) + kafka_python_records(after)
        assert [(s.position, s.length) for s in skipped] == [(len(good), len(bad))]

    def test_reference_and_fast_raise_the_same(self):
        payload, count, _ = MALFORMED["header_key_null"]
        data = raw_v2(payload, count)
        errors = []
        for dec in DECODERS:
            with pytest.raises(CorruptRecordError) as info:
                decode(data, dec)
            errors.append((type(info.value), info.value.position, info.value.reason))
        assert len(set(errors)) == 1

    @pytest.mark.parametrize("case", list(JAVA_UTF8))
    def test_header_key_decoded_as_java_string(self, decoder, case):
        raw, java = JAVA_UTF8[case]
        headers = varint(1) + varint(len(raw)) + raw + varint(1) + b"v"
        data = raw_v2(record(simple_body(headers=headers)) + record(simple_body(offset_delta=1)), 2)
        rows = arrow_records(decode(data, decoder))
        assert [row["headers"] for row in rows] == [[(java, b"v")], []]

    def test_negative_key_length_other_than_minus_one_is_null(self, decoder):
        # Utils.readBytes returns null for any negative length.
        body = b"\x00" + varint(0) + varint(0) + varint(-7) + varint(-3) + varint(0)
        (row,) = arrow_records(decode(raw_v2(record(body), 1), decoder))
        assert row["key"] is None and row["value"] is None


def truncate_payload(batch: bytes, cut: int) -> bytes:
    """The batch with its (compressed) records payload shortened by ``cut`` bytes, size and CRC fixed."""
    buf = bytearray(batch[:-cut])
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    return patch_v2(bytes(buf))


class TestCompressedPayloads:
    @pytest.mark.parametrize("codec", [c for c in CODECS if c != "none"])
    def test_broken_stream_reported_at_batch_and_skipped(self, decoder, codec):
        need_codec(codec)
        good = build_v2(sample_records(3))
        bad = truncate_payload(build_v2(sample_records(20), codec=CODECS[codec], base_offset=10), 9)
        after = build_v2(sample_records(2), base_offset=40)
        with pytest.raises(CorruptRecordError) as info:
            decode(good + bad + after, decoder)
        assert info.value.position == len(good)
        skipped = []
        rows = decode(good + bad + after, decoder, mode="PERMISSIVE", on_skip=skipped.append)
        assert comparable(arrow_records(rows)) == kafka_python_records(good) + kafka_python_records(after)
        assert [(s.position, s.length) for s in skipped] == [(len(good), len(bad))]

    @pytest.mark.parametrize("codec", [c for c in CODECS if c != "none"])
    def test_decompression_limit(self, decoder, codec):
        need_codec(codec)
        from kafka_format.common.errors import DecompressionLimitError

        records = [{"timestamp": 0, "key": None, "value": bytes(50_000), "headers": []}] * 4
        data = build_v2(sample_records(1)) + build_v2(records, codec=CODECS[codec])
        with pytest.raises(DecompressionLimitError) as info:
            decode(data, decoder, max_decompressed=10_000)
        assert info.value.position == len(build_v2(sample_records(1)))
        assert len(comparable(arrow_records(decode(data, decoder)))) == 5


class TestSequenceEdgeCases:
    """DefaultRecord.readFrom: sequence = baseSequence >= 0 ? incrementSequence(base, delta) : -1."""

    def test_negative_base_sequence_means_none(self, decoder):
        data = build_v2(sample_records(3), producer_id=1, producer_epoch=0, base_sequence=-7)
        assert [r["sequence"] for r in arrow_records(decode(data, decoder))] == [-1, -1, -1]

    def test_negative_offset_delta_uses_java_int_overflow(self, decoder):
        body = b"\x00" + varint(0) + varint(-5) + varint(-1) + varint(-1) + varint(0)
        (row,) = arrow_records(decode(raw_v2(record(body), 1, base_offset=100, base_sequence=10), decoder))
        assert row["offset"] == 95
        # Java: Integer.MAX_VALUE - (-5) overflows negative, so 10 > it: -5 - (MAX - 10) - 1.
        assert row["sequence"] == -2147483643


@pytest.mark.parametrize("base_sequence", [-1, 0, 17, INT32_MAX - 1])
def test_batch_fields_equal_kafka_python(decoder, base_sequence):
    from builders import KpMemoryRecords

    data = build_v2(sample_records(4), producer_id=9 if base_sequence >= 0 else -1,
                    producer_epoch=2 if base_sequence >= 0 else -1, base_sequence=base_sequence,
                    base_offset=300)
    (batch,) = decode(data, decoder, granularity="batch")
    ours = batch.to_pylist()[0]
    kp = KpMemoryRecords(data).next_batch()
    assert (ours["baseOffset"], ours["lastOffset"], ours["count"], ours["baseSequence"], ours["lastSequence"],
            ours["producerId"], ours["producerEpoch"], ours["crc"], ours["maxTimestamp"],
            ours["baseTimestamp"]) == (
        kp.base_offset, kp.last_offset, kp.records_count, kp.base_sequence, kp.last_sequence,
        kp.producer_id, kp.producer_epoch, kp.crc, kp.max_timestamp, kp.first_timestamp)
