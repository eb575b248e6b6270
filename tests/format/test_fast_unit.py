"""Unit tests of the compiled loop (kafka_format.records._fastdecode) against independent oracles.

* CRC-32C of the C code (hardware path and portable table path) equals the ``crc32c``
  package on random buffers of every length 0..300, misaligned starts and large sizes
  (which take the 3-way interleaved path and its shift tables).
* A normal build selects the compiled decoder (``IMPLEMENTATION == "fast"``).
* Records decoded by the C loop equal kafka-python's reading of the same bytes.
* Lying counts/lengths never size an allocation beyond the input (bounded allocation),
  and every violation becomes the reference decoder's KafkaFormatError.
"""

from __future__ import annotations

import os
import random
import struct

import numpy as np
import pytest
from builders import build_v2, kafka_python_records, raw_v2, sample_records, varint
from crc32c import crc32c as crc32c_oracle

from kafka_format.common.errors import CorruptRecordError, KafkaFormatError
from kafka_format.common.extensions import reference_forced
from kafka_format.records import implementation
from kafka_format.records.decoder import Decoder

fastdecode = pytest.importorskip("kafka_format.records._fastdecode", reason="compiled decoder not built")
from kafka_format.records.fast import FastDecoder  # noqa: E402  (after the importorskip)

RECORDS_OFFSET = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
CRC_FUNCTIONS = [fastdecode.crc32c, fastdecode.crc32c_portable]
CRC_IDS = ["dispatch", "portable"]


# ---------------------------------------------------------------------------------------------
# CRC-32C


@pytest.mark.parametrize("crc", CRC_FUNCTIONS, ids=CRC_IDS)
def test_crc32c_every_small_length(crc) -> None:
    rng = random.Random(1)
    data = rng.randbytes(300 + 8)
    for length in range(301):
        for start in (0, 1, 5):
            chunk = data[start:start + length]
            assert crc(chunk) == crc32c_oracle(chunk), (length, start)


@pytest.mark.parametrize("crc", CRC_FUNCTIONS, ids=CRC_IDS)
@pytest.mark.parametrize("length", [767, 768, 769, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 7,
                                    100_003, 1 << 20, (3 << 20) + 11])
def test_crc32c_large_buffers(crc, length: int) -> None:
    data = os.urandom(length + 3)
    for start in (0, 3):
        view = memoryview(data)[start:start + length]
        assert crc(view) == crc32c_oracle(view)


@pytest.mark.parametrize("crc", CRC_FUNCTIONS, ids=CRC_IDS)
def test_crc32c_continues_from_a_value(crc) -> None:
    data = os.urandom(50_000)
    head, tail = data[:12_345], data[12_345:]
    assert crc(tail, crc32c_oracle(head)) == crc32c_oracle(data)
    assert crc(b"", 0xDEADBEEF) == 0xDEADBEEF


def test_crc32c_known_vector() -> None:
    # RFC 3720 B.4 / Kafka's Crc32CTest: CRC-32C("123456789") = 0xE3069283
    assert fastdecode.crc32c(b"123456789") == 0xE3069283


def test_hardware_crc_on_x86_64() -> None:
    import platform

    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("SSE4.2 path exists only on x86_64")
    with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
        flags = set(next((line for line in f if line.startswith("flags")), "").split())
    has_sse42, has_clmul = "sse4_2" in flags, "pclmulqdq" in flags
    has_avx512 = has_clmul and flags >= {"avx512f", "avx512vl", "vpclmulqdq"}
    level = 3 if has_avx512 else 2 if has_sse42 and has_clmul else 1 if has_sse42 else 0
    assert fastdecode.CRC_LEVEL == level
    name = fastdecode.CRC32C_IMPLEMENTATION
    assert name.startswith(["table", "sse4.2", "pclmul+sse4.2", "avx512-vpclmul+sse4.2"][level])


# ---------------------------------------------------------------------------------------------
# implementation marker


def test_normal_build_selects_the_compiled_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    if reference_forced():
        pytest.skip("reference decoder forced by the environment for this run")
    assert implementation.IMPLEMENTATION == "fast"
    assert isinstance(implementation.get_decoder(), FastDecoder)


# ---------------------------------------------------------------------------------------------
# direct use of the C loop


def _table_and_payloads(data: bytes, dec: Decoder):
    table = dec.scan(data)
    payloads = [memoryview(data)[p + RECORDS_OFFSET:p + s]
                for p, s in zip(table.position.tolist(), table.size.tolist(), strict=True)]
    return table, payloads


def test_records_equal_kafka_python() -> None:
    data = b"".join(build_v2(sample_records(n), base_offset=1000 * i, base_sequence=7, producer_id=3,
                             producer_epoch=1)
                    for i, n in enumerate([0, 1, 5, 40]))
    dec = FastDecoder()
    table, payloads = _table_and_payloads(data, dec)
    cols = dec.decode_v2_records(payloads, table, range(len(table)))
    oracle = kafka_python_records(data)
    assert len(cols) == len(oracle)
    for i, expected in enumerate(oracle):
        assert cols.offset[i] == expected["offset"]
        assert cols.timestamp[i] == expected["timestamp"]
        key = bytes(cols.key_data[cols.key_offsets[i]:cols.key_offsets[i + 1]])
        assert (key if cols.key_valid[i] else None) == expected["key"]
        value = bytes(cols.value_data[cols.value_offsets[i]:cols.value_offsets[i + 1]])
        assert (value if cols.value_valid[i] else None) == expected["value"]
        headers = []
        for h in range(cols.header_offsets[i], cols.header_offsets[i + 1]):
            hkey = bytes(cols.header_key_data[cols.header_key_offsets[h]:cols.header_key_offsets[h + 1]])
            hval = bytes(cols.header_value_data[cols.header_value_offsets[h]:cols.header_value_offsets[h + 1]])
            headers.append((hkey.decode(), hval if cols.header_value_valid[h] else None))
        assert headers == expected["headers"]


def test_sequence_wraps_at_int32_max() -> None:
    # DefaultRecordBatch.incrementSequence: past Int.MAX the sequence continues at 0
    base = 2**31 - 3
    data = build_v2(sample_records(6), base_sequence=base, producer_id=9, producer_epoch=0)
    dec = FastDecoder()
    table, payloads = _table_and_payloads(data, dec)
    cols = dec.decode_v2_records(payloads, table, [0])
    assert cols.sequence.tolist() == [2**31 - 3, 2**31 - 2, 2**31 - 1, 0, 1, 2]


def _meta(count: int) -> np.ndarray:
    meta = np.zeros((1, fastdecode.META_COLUMNS), dtype=np.int64)
    meta[0, 5] = count  # recordsCount column (see _fastdecode.decode_v2)
    return meta


@pytest.mark.parametrize("count", [2**31 - 1, 10**6, 3])
def test_lying_count_is_refused_before_any_allocation(count: int) -> None:
    # 14 payload bytes back at most 2 records (7 bytes each): larger counts must be refused up
    # front, never used to size the output columns.
    payload = bytes(14)
    if count <= len(payload) // 7:
        pytest.skip("count is backed by the payload")
    with pytest.raises(fastdecode.FormatViolation) as info:
        fastdecode.decode_v2([payload], _meta(count))
    assert info.value.args[0] == 0 and info.value.args[1] == "count_too_large"


def test_lying_count_through_the_decoder_is_the_reference_error() -> None:
    record = varint(6) + b"\x00" + varint(0) + varint(0) + varint(-1) + varint(-1) + varint(0)
    data = raw_v2(record, count=2**31 - 1)
    errors = []
    for dec in (Decoder(), FastDecoder()):
        table, payloads = _table_and_payloads(data, dec)
        with pytest.raises(CorruptRecordError) as info:
            dec.decode_v2_records(payloads, table, [0])
        errors.append((type(info.value), str(info.value), info.value.position))
    assert errors[0] == errors[1]


def test_lying_key_length_is_an_error_not_an_allocation() -> None:
    record = varint(8) + b"\x00" + varint(0) + varint(0) + varint(2**30) + b"abc"
    data = raw_v2(record, count=1)
    for dec in (Decoder(), FastDecoder()):
        table, payloads = _table_and_payloads(data, dec)
        with pytest.raises(KafkaFormatError):
            dec.decode_v2_records(payloads, table, [0])


@pytest.mark.parametrize("payload,code", [
    (varint(7) + b"\x00" + b"\xff" * 10, "varint_too_long"),            # timestampDelta > 10 bytes
    (varint(6) + b"\x00" + varint(0) + b"\xff" * 5, "varint_too_long"),  # offsetDelta > 5 bytes
    (varint(50) + b"\x00" * 6, "truncated"),                             # record longer than payload
    (varint(5) + b"\x00" + varint(0) + varint(0) + varint(-1) + varint(-1) + varint(0),
     "record_length"),                                                   # consumed 6 != declared 5
    (varint(6) + b"\x00" + varint(0) + varint(0) + varint(-1) + varint(-1) + varint(-1),
     "header_count"),                                                    # negative header count
    (varint(8) + b"\x00" + varint(0) + varint(0) + varint(-1) + varint(-1) + varint(1)
     + varint(-1) + varint(-1), "header_key_length"),                    # null header key
    (varint(6) + b"\x00" + varint(0) + varint(0) + varint(-1) + varint(-1) + varint(0) + b"\x00",
     "trailing_bytes"),                                                  # bytes after the last record
])
def test_violations_are_detected(payload: bytes, code: str) -> None:
    with pytest.raises(fastdecode.FormatViolation) as info:
        fastdecode.decode_v2([payload], _meta(1))
    assert info.value.args[1] == code
    # and through the decoder the error is exactly the reference's
    data = raw_v2(payload, count=1)
    errors = []
    for dec in (Decoder(), FastDecoder()):
        table, payloads = _table_and_payloads(data, dec)
        with pytest.raises(CorruptRecordError) as err:
            dec.decode_v2_records(payloads, table, [0])
        errors.append((type(err.value), str(err.value)))
    assert errors[0] == errors[1]


def test_malformed_header_key_is_flagged_then_replaced_as_the_reference_does() -> None:
    # The C loop only validates UTF-8; Kafka's new String(bytes, UTF_8) replaces malformed input
    # with U+FFFD, which the reference (re-run on the flagged batch) does: both decoders agree.
    payload = (varint(9) + b"\x00" + varint(0) + varint(0) + varint(-1) + varint(-1) + varint(1)
               + varint(1) + b"\xff" + varint(-1))
    with pytest.raises(fastdecode.FormatViolation) as info:
        fastdecode.decode_v2([payload], _meta(1))
    assert info.value.args[1] == "header_key_utf8"
    data = raw_v2(payload, count=1)
    keys = []
    for dec in (Decoder(), FastDecoder()):
        table, payloads = _table_and_payloads(data, dec)
        cols = dec.decode_v2_records(payloads, table, [0])
        keys.append(bytes(cols.header_key_data).decode("utf-8"))
    assert keys == ["\ufffd", "\ufffd"]


def test_negative_lengths_are_nulls_as_in_kafka() -> None:
    # DefaultRecord.readFrom: keySize/valueSize/headerValueSize < 0 all mean null
    record = (b"\x00" + varint(0) + varint(0) + varint(-7) + varint(-2) + varint(1)
              + varint(1) + b"h" + varint(-5))
    payload = varint(len(record)) + record
    cols = FastDecoder().decode_v2_records(*_args_for(raw_v2(payload, count=1)))
    assert cols.key_valid.tolist() == [False] and cols.value_valid.tolist() == [False]
    assert cols.header_value_valid.tolist() == [False]


def _args_for(data: bytes):
    dec = FastDecoder()
    table, payloads = _table_and_payloads(data, dec)
    return payloads, table, list(range(len(table)))


def test_buffers_are_zero_copy_and_independent() -> None:
    data = build_v2(sample_records(20))
    first = FastDecoder().decode_v2_records(*_args_for(data))
    second = FastDecoder().decode_v2_records(*_args_for(data))
    assert np.array_equal(first.value_data, second.value_data)
    assert not np.shares_memory(first.value_data, second.value_data)
    assert first.value_data.base is not None  # a view over the C buffer, not a copy


def test_scan_reports_crc_mismatch_without_raising() -> None:
    data = bytearray(build_v2(sample_records(3)) + build_v2(sample_records(2), base_offset=3))
    data[70] ^= 0x01  # inside the first batch's records: covered by its CRC
    for dec in (Decoder(), FastDecoder()):
        table = dec.scan(bytes(data))
        assert table.crc_valid.tolist() == [False, True]
        assert dec.scan(bytes(data), verify_crc=False).crc_valid.tolist() == [True, True]


def test_scan_bounds_entries_by_input() -> None:
    # a size field claiming 2 GiB is a partial trailing entry, not an allocation
    data = build_v2(sample_records(2)) + struct.pack(">qi", 5, 2**31 - 1) + bytes(40)
    table = FastDecoder().scan(data)
    assert len(table) == 1 and table.end == len(build_v2(sample_records(2)))


@pytest.mark.parametrize("base_sequence", [-1, -2, -(2**31)])
def test_negative_base_sequence_means_no_sequence(base_sequence: int) -> None:
    # DefaultRecord.readFrom: sequence = baseSequence >= 0 ? incrementSequence(..) : NO_SEQUENCE
    record = b"\x00" + varint(0) + varint(3) + varint(-1) + varint(-1) + varint(0)
    data = raw_v2(varint(len(record)) + record, count=1, base_sequence=base_sequence)
    cols = FastDecoder().decode_v2_records(*_args_for(data))
    assert cols.sequence.tolist() == [-1]
    assert cols.offset.tolist() == [3]


@pytest.mark.parametrize("headers", [255, 256, 257, 1000])
def test_many_headers_grow_the_header_columns(headers: int) -> None:
    records = [{"timestamp": 1, "key": b"k", "value": b"v",
                "headers": [(f"h{i}", None if i % 7 == 0 else b"%d" % i) for i in range(headers)]},
               {"timestamp": 2, "key": None, "value": None, "headers": [("last", b"x")] * headers}]
    data = build_v2(records)
    cols = FastDecoder().decode_v2_records(*_args_for(data))
    oracle = kafka_python_records(data)
    got = []
    for i in range(len(cols)):
        got.append([(bytes(cols.header_key_data[cols.header_key_offsets[h]:cols.header_key_offsets[h + 1]]).decode(),
                     bytes(cols.header_value_data[cols.header_value_offsets[h]:cols.header_value_offsets[h + 1]])
                     if cols.header_value_valid[h] else None)
                    for h in range(cols.header_offsets[i], cols.header_offsets[i + 1])])
    assert got == [r["headers"] for r in oracle]


def test_large_column_blocks_are_recycled() -> None:
    # the value column of a chunk reuses the block freed by an earlier chunk (no fresh pages)
    records = [{"timestamp": 1, "key": None, "value": bytes(300), "headers": []}] * 1000
    data = build_v2(records)
    dec = FastDecoder()
    dec.decode_v2_records(*_args_for(data))  # result dropped: its blocks go to the cache
    hits_before = fastdecode.block_cache_info()[0]
    cols = dec.decode_v2_records(*_args_for(data))
    assert fastdecode.block_cache_info()[0] > hits_before
    assert bytes(cols.value_data[:300]) == bytes(300)


def test_calls_over_2_gib_are_split(monkeypatch: pytest.MonkeyPatch) -> None:
    # decode_v2 refuses more than 2 GiB of payloads per call (int32 offsets); the decoder
    # then decodes halves and joins them.  Simulated: every multi-batch call "overflows".
    real = fastdecode.decode_v2

    def small_calls_only(payloads, meta):
        if len(payloads) > 1:
            raise OverflowError("payloads exceed 2 GiB in one call (int32 offsets)")
        return real(payloads, meta)

    data = b"".join(build_v2(sample_records(n), base_offset=100 * i) for i, n in enumerate([3, 0, 9, 4, 1]))
    expected = FastDecoder().decode_v2_records(*_args_for(data))
    monkeypatch.setattr(fastdecode, "decode_v2", small_calls_only)
    got = FastDecoder().decode_v2_records(*_args_for(data))
    for name in ("batch_row", "offset", "key_offsets", "key_data", "value_offsets", "value_data",
                 "header_offsets", "header_key_offsets", "header_key_data", "header_value_valid"):
        assert np.array_equal(getattr(got, name), getattr(expected, name)), name
    assert got.offset.tolist() == [r["offset"] for r in kafka_python_records(data)]
