"""File framing (FileLogInputStream.nextBatch, spec §2.1) and the modes' skip accounting."""

from __future__ import annotations

import struct

import pytest
from builders import (
    DECODER_IDS,
    DECODERS,
    arrow_records,
    build_v2,
    comparable,
    kafka_python_records,
    sample_records,
)
from kafka.record.util import calc_crc32c

from kafka_format.common.errors import ChecksumError, CorruptRecordError, UnsupportedFormatError
from kafka_format.records.file_records import decode_segment

CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21


@pytest.fixture(params=DECODERS, ids=DECODER_IDS)
def decoder(request):
    return request.param


def decode(data: bytes, decoder, **kw):
    return list(decode_segment(data, decoder=decoder, **kw))


def three_batches() -> list[bytes]:
    return [build_v2(sample_records(3 + i), base_offset=10 * i) for i in range(3)]


def flip(data: bytes, at: int) -> bytes:
    buf = bytearray(data)
    buf[at] ^= 0x5A
    return bytes(buf)


class TestEndOfData:
    @pytest.mark.parametrize("cut", [1, 11, 12, 16, 17, 18, 40, 61, -1])
    def test_partial_trailing_batch_is_end_of_data(self, decoder, cut):
        a, b, _ = three_batches()
        data = a + b[:cut]
        assert comparable(arrow_records(decode(data, decoder))) == kafka_python_records(a)
        # PERMISSIVE keeps the same records and accounts for the incomplete tail.
        skipped = []
        rows = decode(data, decoder, mode="PERMISSIVE", on_skip=skipped.append)
        assert comparable(arrow_records(rows)) == kafka_python_records(a)
        assert [(s.position, s.length) for s in skipped] == [(len(a), len(b[:cut]))]

    @pytest.mark.parametrize("zeros", [1, 17, 18, 4096])
    def test_all_zero_tail_is_end_of_data(self, decoder, zeros):
        a, b, _ = three_batches()
        data = a + b + bytes(zeros)
        assert comparable(arrow_records(decode(data, decoder))) == kafka_python_records(a + b)
        # ... also when the zeros span several read chunks
        rows = decode(data, decoder, read_size=64)
        assert comparable(arrow_records(rows)) == kafka_python_records(a + b)

    def test_zeros_followed_by_data_is_corrupt(self, decoder):
        a, b, _ = three_batches()
        data = a + bytes(100) + b
        with pytest.raises(CorruptRecordError) as info:
            decode(data, decoder)
        assert info.value.position == len(a)
        with pytest.raises(CorruptRecordError) as info:
            decode(data, decoder, read_size=64)  # the non-zero byte lies in a later chunk
        assert info.value.position == len(a)

    def test_empty_input(self, decoder):
        assert decode(b"", decoder) == []


class TestCorruptFraming:
    @pytest.mark.parametrize("size", [0, 5, 13, -1])
    def test_size_below_14_is_corrupt(self, decoder, size):
        a, b, _ = three_batches()
        data = a + struct.pack(">qi", 0, size) + b"\x01" * 40 + b
        with pytest.raises(CorruptRecordError) as info:
            decode(data, decoder, context=None)
        err = info.value
        assert err.position == len(a)
        assert "14" in err.expected and str(size) in err.found

    @pytest.mark.parametrize("magic", [3, 7, 0x80])
    def test_unknown_magic_is_unsupported(self, decoder, magic):
        a, b, _ = three_batches()
        data = a + flip(b, 16)[:16] + bytes([magic]) + b[17:]
        with pytest.raises(UnsupportedFormatError) as info:
            decode(data, decoder)
        assert info.value.position == len(a)

    def test_v2_batch_below_61_bytes_is_corrupt(self, decoder):
        a = three_batches()[0]
        small = struct.pack(">qiib", 0, 30, 0, 2) + bytes(30 - 5)
        with pytest.raises(CorruptRecordError) as info:
            decode(a + small, decoder)
        assert info.value.position == len(a)


class TestCrc:
    def test_failfast_checksum_error_fields(self, decoder, tmp_path):
        a, b, c = three_batches()
        bad = flip(b, len(b) - 3)
        path = tmp_path / "00000000000000000000.log"
        path.write_bytes(a + bad + c)
        with pytest.raises(ChecksumError) as info:
            list(decode_segment(str(path), decoder=decoder))
        err = info.value
        stored = struct.unpack_from(">I", bad, CRC_OFFSET)[0]
        computed = calc_crc32c(bad[ATTRIBUTES_OFFSET:])
        assert (err.path, err.position) == (str(path), len(a))
        assert str(stored) in err.expected and str(computed) in err.found
        assert err.base_offset == 10

    def test_permissive_skips_bad_batch_and_accounts_bytes(self, decoder):
        a, b, c = three_batches()
        data = a + flip(b, len(b) - 3) + c
        for mode in ("PERMISSIVE", "DROPMALFORMED"):
            skipped = []
            rows = decode(data, decoder, mode=mode, on_skip=skipped.append)
            assert comparable(arrow_records(rows)) == kafka_python_records(a + c)
            assert [(s.position, s.length) for s in skipped] == [(len(a), len(b))]
            assert "CRC" in skipped[0].reason

    def test_lying_size_field_resynchronises_at_next_valid_batch(self, decoder):
        a, b, c = three_batches()
        bad = bytearray(b)
        struct.pack_into(">i", bad, 8, len(b) - 12 - 20)  # size now ends 20 bytes early
        data = a + bytes(bad) + c
        skipped = []
        rows = decode(data, decoder, mode="PERMISSIVE", on_skip=skipped.append)
        assert comparable(arrow_records(rows)) == kafka_python_records(a + c)
        assert [(s.position, s.length) for s in skipped] == [(len(a), len(b))]
        with pytest.raises(ChecksumError):
            decode(data, decoder)

    def test_garbage_between_batches(self, decoder):
        a, b, c = three_batches()
        garbage = struct.pack(">qi", 123, 5) + bytes(range(1, 139))  # size 5: corrupt framing
        data = a + garbage + b + c
        skipped = []
        rows = decode(data, decoder, mode="PERMISSIVE", on_skip=skipped.append, read_size=128)
        assert comparable(arrow_records(rows)) == kafka_python_records(a + b + c)
        assert [(s.position, s.length) for s in skipped] == [(len(a), len(garbage))]

    def test_garbage_with_size_past_end_of_file_ends_data_in_failfast(self, decoder):
        # FileLogInputStream cannot tell such bytes from a partial trailing batch: the log ends.
        a, b, _ = three_batches()
        data = a + struct.pack(">qi", 0, 10**6) + bytes(range(1, 101)) + b
        rows = decode(data, decoder, mode="FAILFAST")
        assert comparable(arrow_records(rows)) == kafka_python_records(a)

    def test_garbage_with_size_past_end_of_file_is_skipped_in_permissive(self, decoder):
        # The skipping modes lose nothing: the intact batch after the lying size is read and the
        # garbage is reported as one skipped range.
        a, b, _ = three_batches()
        garbage = struct.pack(">qi", 0, 10**6) + bytes(range(1, 101))
        skipped = []
        rows = decode(a + garbage + b, decoder, mode="PERMISSIVE", on_skip=skipped.append)
        assert comparable(arrow_records(rows)) == kafka_python_records(a + b)
        assert [(s.position, s.length) for s in skipped] == [(len(a), len(garbage))]

    def test_partial_trailing_batch_is_reported_in_permissive(self, decoder):
        a, b, _ = three_batches()
        skipped = []
        rows = decode(a + b[:-7], decoder, mode="PERMISSIVE", on_skip=skipped.append)
        assert comparable(arrow_records(rows)) == kafka_python_records(a)
        assert [(s.position, s.length) for s in skipped] == [(len(a), len(b) - 7)]
        failfast = decode(a + b[:-7], decoder, mode="FAILFAST")  # Kafka: end of data, no error
        assert comparable(arrow_records(failfast)) == kafka_python_records(a)

    def test_verify_crc_false_decodes_bad_batch(self, decoder):
        a, b, c = three_batches()
        bad = flip(b, len(b) - 3)
        rows = decode(a + bad + c, decoder, verify_crc=False)
        assert comparable(arrow_records(rows)) == kafka_python_records(a + bad + c)

    def test_batch_granularity_reports_crc_instead_of_failing(self, decoder):
        a, b, c = three_batches()
        (batch,) = decode(a + flip(b, len(b) - 3) + c, decoder, granularity="batch")
        assert batch.column("crcValid").to_pylist() == [True, False, True]


class TestChunking:
    @pytest.mark.parametrize("read_size", [18, 64, 100, 1000])
    def test_batches_larger_than_chunks_and_split_headers(self, decoder, read_size):
        data = b"".join(build_v2(sample_records(20 + i), base_offset=100 * i) for i in range(6))
        rows = decode(data, decoder, read_size=read_size)
        assert comparable(arrow_records(rows)) == kafka_python_records(data)

    def test_huge_declared_size_past_end_of_file_is_partial_not_allocated(self, decoder):
        a = three_batches()[0]
        data = a + struct.pack(">qiib", 0, 2**31 - 1, 0, 2) + bytes(50)
        assert comparable(arrow_records(decode(data, decoder, read_size=64))) == kafka_python_records(a)


def test_failfast_delivers_batches_before_the_error(decoder):
    a, b, c = three_batches()
    got = []
    with pytest.raises(ChecksumError):
        for batch in decode_segment(a + flip(b, len(b) - 3) + c, decoder=decoder):
            got.append(batch)
    assert comparable(arrow_records(got)) == kafka_python_records(a)
