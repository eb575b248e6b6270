"""Magic 0/1 message sets: plain and compressed wrappers, against kafka-python and aiokafka,
plus the DeepRecordsIterator rules (AbstractLegacyRecordBatch.java)."""

from __future__ import annotations

import struct
import zlib

import pytest
from builders import (
    DECODER_IDS,
    DECODERS,
    LEGACY_CODECS,
    aiokafka_records,
    arrow_records,
    build_legacy,
    comparable,
    kafka_python_records,
    need_codec,
    sample_records,
)

from kafka_format.common.errors import ChecksumError, CorruptRecordError, KafkaFormatError
from kafka_format.records.file_records import decode_segment

GZIP = 1


@pytest.fixture(params=DECODERS, ids=DECODER_IDS)
def decoder(request):
    return request.param


def decode(data: bytes, decoder, **kw):
    return list(decode_segment(data, decoder=decoder, **kw))


def message(offset: int, magic: int, *, attributes: int = 0, timestamp: int = 0, key: bytes | None = b"k",
            value: bytes | None = b"v") -> bytes:
    """A legacy entry written from the LegacyRecord layout (CRC-32 by zlib)."""
    body = struct.pack(">bB", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    msg = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(msg)) + msg


def gzip_wrapper(inner: bytes, *, offset: int, magic: int, attributes: int = GZIP,
                 timestamp: int = 0) -> bytes:
    import gzip

    return message(offset, magic, attributes=attributes, timestamp=timestamp, key=None,
                   value=gzip.compress(inner))


def triples(rows: list[dict]) -> list[tuple[int, int, int]]:
    return [(r["offset"], r["timestamp_ms"], r["timestampType"]) for r in rows]


def set_offset(entry: bytes, offset: int) -> bytes:
    # The entry offset is outside the message CRC.
    return struct.pack(">q", offset) + entry[8:]


class TestAgainstOracles:
    @pytest.mark.parametrize("codec", list(LEGACY_CODECS))
    @pytest.mark.parametrize("magic", [0, 1])
    def test_records_equal_kafka_python_and_aiokafka(self, decoder, magic, codec):
        need_codec(codec)
        if magic == 0 and codec == "lz4":  # kafka-python writes the broken KafkaLZ4 HC with xxhash
            pytest.importorskip("xxhash", reason="kafka-python needs xxhash to build magic-0 lz4")
        data = build_legacy(sample_records(6, headers=False), magic=magic, codec=LEGACY_CODECS[codec],
                            base_offset=20)
        ours = arrow_records(decode(data, decoder))
        assert comparable(ours) == kafka_python_records(data)
        if not (magic == 0 and codec == "lz4"):  # aiokafka refuses KafkaLZ4 (0.8/0.9) framing
            assert comparable(ours) == aiokafka_records(data)
        for row in ours:
            assert row["magic"] == magic and row["compression"] == codec
            assert row["leaderEpoch"] is None and row["producerId"] is None and row["sequence"] is None
            assert row["isControl"] is False and row["headers"] == []

    @pytest.mark.parametrize("codec", [c for c in LEGACY_CODECS if c != "none"])
    def test_v1_wrapper_relative_offsets(self, decoder, codec):
        need_codec(codec)
        # Inner offsets 0..4 relative; wrapper offset = absolute offset of the last inner message.
        data = set_offset(build_legacy(sample_records(5, headers=False), magic=1, codec=LEGACY_CODECS[codec]),
                          104)
        ours = arrow_records(decode(data, decoder))
        assert comparable(ours) == kafka_python_records(data) == aiokafka_records(data)
        assert [r["offset"] for r in ours] == [100, 101, 102, 103, 104]
        assert {(r["batchBaseOffset"], r["batchLastOffset"]) for r in ours} == {(100, 104)}

    def test_v1_wrapper_offset_below_last_inner_is_invalid(self, decoder):
        data = set_offset(build_legacy(sample_records(5, headers=False), magic=1, codec=GZIP), 3)
        with pytest.raises(CorruptRecordError, match="wrapper offset"):
            decode(data, decoder)

    def test_log_append_time_wrapper_timestamp_applies_to_inner(self, decoder):
        inner = message(0, 1, timestamp=5) + message(1, 1, timestamp=6)
        data = gzip_wrapper(inner, offset=41, magic=1, attributes=GZIP | 0x08, timestamp=999)
        ours = arrow_records(decode(data, decoder))
        assert comparable(ours) == kafka_python_records(data) == aiokafka_records(data)
        assert triples(ours) == [(40, 999, 1), (41, 999, 1)]

    def test_create_time_wrapper_keeps_inner_timestamps(self, decoder):
        inner = message(0, 1, timestamp=5) + message(1, 1, timestamp=6)
        data = gzip_wrapper(inner, offset=1, magic=1, timestamp=6)
        ours = arrow_records(decode(data, decoder))
        assert [(r["timestamp_ms"], r["timestampType"]) for r in ours] == [(5, 0), (6, 0)]

    def test_uncompressed_v1_log_append_time_keeps_own_timestamp(self, decoder):
        data = message(7, 1, attributes=0x08, timestamp=1234)
        ours = arrow_records(decode(data, decoder))
        assert comparable(ours) == kafka_python_records(data)
        assert (ours[0]["timestamp_ms"], ours[0]["timestampType"]) == (1234, 1)


class TestKafka4298MixedMagic:
    """Inner magic may differ from the wrapper's: offsets by wrapper magic, timestamps by inner."""

    def test_v1_wrapper_with_v0_inner(self, decoder):
        inner = message(0, 0) + message(1, 0)
        data = gzip_wrapper(inner, offset=11, magic=1, attributes=GZIP | 0x08, timestamp=77)
        ours = arrow_records(decode(data, decoder))
        assert triples(ours) == [(10, -1, -1), (11, -1, -1)]

    def test_v0_wrapper_with_v1_inner_offsets_absolute(self, decoder):
        inner = message(30, 1, timestamp=8) + message(31, 1, timestamp=9)
        data = gzip_wrapper(inner, offset=31, magic=0)
        ours = arrow_records(decode(data, decoder))
        # LegacyRecord.timestampType: the wrapper's type (none for v0) wins; own timestamp kept.
        assert triples(ours) == [(30, 8, -1), (31, 9, -1)]

    def test_librdkafka_zero_wrapper_offset(self, decoder):
        inner = message(0, 1) + message(1, 1) + message(2, 1)
        data = gzip_wrapper(inner, offset=0, magic=1)
        assert [r["offset"] for r in arrow_records(decode(data, decoder))] == [0, 1, 2]


class TestInvalidWrappers:
    @pytest.mark.parametrize("case", ["null_value", "empty_inner", "nested", "zstd", "inner_bad_crc",
                                      "inner_too_small"])
    def test_invalid_wrapper_raises_at_wrapper_position(self, decoder, case):
        import gzip

        good = message(0, 1)
        if case == "null_value":
            bad = message(5, 1, attributes=GZIP, value=None)
        elif case == "empty_inner":
            bad = gzip_wrapper(b"", offset=5, magic=1)
        elif case == "nested":
            bad = gzip_wrapper(gzip_wrapper(message(0, 1), offset=0, magic=1), offset=5, magic=1)
        elif case == "zstd":
            bad = message(5, 1, attributes=4, value=b"\x28\xb5\x2f\xfd")
        elif case == "inner_bad_crc":
            inner = bytearray(message(0, 1))
            inner[-1] ^= 0xFF
            bad = message(5, 1, attributes=GZIP, value=gzip.compress(bytes(inner)))
        else:
            bad = gzip_wrapper(struct.pack(">qi", 0, 3) + b"abc", offset=5, magic=1)
        with pytest.raises(KafkaFormatError) as info:
            decode(good + bad, decoder)
        assert info.value.position == len(good)
        if case == "inner_bad_crc":
            assert isinstance(info.value, ChecksumError)
        skipped = []
        rows = decode(good + bad + message(9, 1), decoder, mode="PERMISSIVE", on_skip=skipped.append)
        assert [r["offset"] for r in arrow_records(rows)] == [0, 9]
        assert [(s.position, s.length) for s in skipped] == [(len(good), len(bad))]

    def test_truncated_inner_entry_ends_inner_stream(self, decoder):
        # DataLogInputStream.nextBatch returns null for a short read: the inner set just ends.
        inner = message(0, 1) + message(1, 1)[:-3]
        data = gzip_wrapper(inner, offset=0, magic=1)
        assert [r["offset"] for r in arrow_records(decode(data, decoder))] == [0]

    @pytest.mark.parametrize("magic, size", [(0, 13), (1, 21)])
    def test_message_below_minimum_size(self, decoder, magic, size):
        entry = struct.pack(">qiIbb", 0, size, 0, magic, 0) + b"\x00" * (size - 6)
        with pytest.raises(CorruptRecordError) as info:
            decode(entry + message(1, 1), decoder)
        assert info.value.position == 0
