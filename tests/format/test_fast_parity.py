"""Differential property tests: the compiled decoder equals the reference decoder.

Random v2 batches (every codec; keys/values null, empty, large; headers with null
values and non-ASCII keys; LogAppendTime; transactional and control batches; empty
batches; base sequences near Int.MAX) are written by kafka-python's builders, then
decoded through the public path (``kafka_format.records.file_records.decode_segment``) once with the
reference :class:`Decoder` and once with :class:`FastDecoder`: the Arrow tables must be
equal, and equal to kafka-python's own reading of the bytes.  Broken input (bit flips,
truncation, lying counts and lengths) must give both decoders the same outcome: the same
table, or the same error type, message and file position; in PERMISSIVE mode the same
rows and the same skipped ranges.

Budget: the ``parity-ci`` Hypothesis profile (60 examples, no deadline) runs in
``make test``; set ``KAFKA_FORMAT_PARITY_PROFILE=parity-long`` for a longer search.
"""

from __future__ import annotations

import os
import struct
from typing import Any

import pyarrow as pa
import pytest
from builders import (
    CODECS,
    LEGACY_CODECS,
    arrow_records,
    build_legacy,
    build_v2,
    comparable,
    kafka_python_records,
    patch_v2,
    raw_v2,
    sample_records,
    varint,
)
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kafka_format.common.errors import KafkaFormatError
from kafka_format.records.columns import FileContext
from kafka_format.records.decoder import Decoder
from kafka_format.records.file_records import decode_segment
from kafka_format.records.schema import RECORD_SCHEMA

pytest.importorskip("kafka_format.records._fastdecode", reason="compiled decoder not built")
from kafka_format.records.fast import FastDecoder  # noqa: E402  (after the importorskip)

pytestmark = pytest.mark.property

settings.register_profile("parity-ci", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("parity-long", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PROFILE = settings.get_profile(os.environ.get("KAFKA_FORMAT_PARITY_PROFILE", "parity-ci"))

REFERENCE = Decoder()
FAST = FastDecoder()
INT32_MAX = 2**31 - 1

# v2 header fields the mutations aim at (DefaultRecordBatch offsets, from the layout)
LENGTH_AT = struct.calcsize(">q")                 # 8
ATTRIBUTES_AT = struct.calcsize(">qiibI")         # 21
COUNT_AT = struct.calcsize(">qiibIhiqqqhi")       # 57
RECORDS_AT = COUNT_AT + 4                         # 61
TIMESTAMP_TYPE_BIT = 0x08
CONTROL_BIT = 0x20
CONTROL_KEY = struct.Struct(">hh")   # ControlRecordType: version int16, type int16
MARKER_VALUE = struct.Struct(">hi")  # EndTransactionMarker: version int16, coordinatorEpoch int32


# ---------------------------------------------------------------------------------------------
# strategies


def _blob(max_size: int) -> st.SearchStrategy[bytes | None]:
    return st.one_of(
        st.none(),
        st.just(b""),
        st.binary(max_size=max_size),
        st.integers(1000, 20_000).map(lambda n: bytes(range(256)) * (n // 256) + b"\x07" * (n % 256)),
    )


_header = st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=20)))
_record = st.fixed_dictionaries({
    "key": _blob(30),
    "value": _blob(200),
    "headers": st.lists(_header, max_size=3),
    "dt": st.integers(-10**6, 10**6),
})


@st.composite
def batches(draw: st.DrawFn) -> dict[str, Any]:
    """Parameters of one v2 batch."""
    codec = draw(st.sampled_from(sorted(CODECS)))
    records = draw(st.lists(_record, max_size=12))
    idempotent = draw(st.booleans())
    base_sequence = draw(st.one_of(st.integers(0, 1000), st.integers(INT32_MAX - 15, INT32_MAX)))
    return {
        "codec": codec,
        "records": records,
        "base_timestamp": draw(st.integers(0, 2**41)),
        "transactional": idempotent and draw(st.booleans()),
        "producer_id": draw(st.integers(0, 2**40)) if idempotent else -1,
        "producer_epoch": draw(st.integers(0, 32767)) if idempotent else -1,
        "base_sequence": base_sequence if idempotent else -1,
        "log_append_time": draw(st.one_of(st.none(), st.integers(0, 2**41))),
        "control": draw(st.sampled_from([0, 1, 2])) if idempotent else 0,  # 0 none, 1 ABORT, 2 COMMIT
        "leader_epoch": draw(st.integers(-1, 1000)),
        "offset_step": draw(st.sampled_from([1, 1, 2])),
    }


def _build(spec: dict[str, Any], base_offset: int) -> bytes:
    if not spec["records"] and spec["codec"] == "none":
        # an empty batch as compaction leaves it (DefaultRecordBatch.writeEmptyHeader)
        return raw_v2(b"", 0, base_offset=base_offset, base_timestamp=-1,
                      max_timestamp=spec["base_timestamp"], producer_id=spec["producer_id"],
                      producer_epoch=spec["producer_epoch"], base_sequence=spec["base_sequence"])
    records = [{"timestamp": spec["base_timestamp"] + r["dt"], "key": r["key"], "value": r["value"],
                "headers": r["headers"]} for r in spec["records"]]
    if spec["control"]:
        # a transaction marker (EndTransactionMarker): key version 0 + type, value version 0 + epoch
        records = [{"timestamp": spec["base_timestamp"], "key": CONTROL_KEY.pack(0, spec["control"] - 1),
                    "value": MARKER_VALUE.pack(0, 5), "headers": []}]
    data = build_v2(records, codec=CODECS[spec["codec"]], base_offset=base_offset,
                    transactional=spec["transactional"], producer_id=spec["producer_id"],
                    producer_epoch=spec["producer_epoch"], base_sequence=spec["base_sequence"],
                    offset_step=spec["offset_step"])
    bits = (TIMESTAMP_TYPE_BIT if spec["log_append_time"] is not None else 0)
    bits |= CONTROL_BIT if spec["control"] else 0
    return patch_v2(data, set_bits=bits, max_timestamp=spec["log_append_time"],
                    leader_epoch=spec["leader_epoch"])


@st.composite
def logs(draw: st.DrawFn) -> bytes:
    """A ``.log`` body of 1..4 batches with increasing base offsets."""
    out = b""
    offset = draw(st.integers(0, 2**40))
    for spec in draw(st.lists(batches(), min_size=1, max_size=4)):
        out += _build(spec, offset)
        offset += (1 if spec["control"] else len(spec["records"])) * spec["offset_step"] + 1
    return out


# ---------------------------------------------------------------------------------------------
# decoding both ways


def _outcome(data: bytes, decoder: Decoder, **kw: Any) -> tuple[str, Any]:
    """("ok", table, skipped) or ("error", (type, message, position))."""
    skipped: list[tuple[int, int, str]] = []
    try:
        batches_ = list(decode_segment(data, decoder=decoder, context=FileContext(),
                                       on_skip=lambda s: skipped.append((s.position, s.length, s.reason)),
                                       **kw))
    except KafkaFormatError as exc:
        return "error", (type(exc), str(exc), exc.position)
    return "ok", (pa.Table.from_batches(batches_, schema=RECORD_SCHEMA), skipped)


def _assert_same(data: bytes, **kw: Any) -> tuple[str, Any]:
    ref = _outcome(data, REFERENCE, **kw)
    fast = _outcome(data, FAST, **kw)
    assert ref[0] == fast[0], (ref, fast)
    if ref[0] == "ok":
        assert ref[1][0].equals(fast[1][0]), "Arrow output differs"
        assert ref[1][1] == fast[1][1], "skipped ranges differ"
    else:
        assert ref[1] == fast[1]
    return fast


@PROFILE
@given(logs())
def test_valid_batches_decode_identically(data: bytes) -> None:
    kind, result = _assert_same(data)
    assert kind == "ok", result
    table = result[0]
    # and both equal kafka-python's reading of the same bytes
    assert comparable(arrow_records(table.to_batches())) == kafka_python_records(data)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A valid log with one kind of damage applied."""
    data = bytearray(draw(logs()))
    kind = draw(st.sampled_from(["flip", "truncate", "count", "length", "records_byte"]))
    if kind == "flip":
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
    elif kind == "truncate":
        del data[draw(st.integers(0, len(data) - 1)):]
    elif kind == "count":
        struct.pack_into(">i", data, COUNT_AT,
                         draw(st.one_of(st.integers(-3, 40), st.just(INT32_MAX), st.just(-(2**31)))))
    elif kind == "length":
        old = struct.unpack_from(">i", data, LENGTH_AT)[0]
        struct.pack_into(">i", data, LENGTH_AT, old + draw(st.integers(-70, 70)))
    elif len(data) > RECORDS_AT:
        i = draw(st.integers(RECORDS_AT, len(data) - 1))
        data[i] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, data[i] ^ 0x40]))
    return bytes(data)


@PROFILE
@given(mutated(), st.booleans())
def test_broken_input_fails_identically(data: bytes, verify_crc: bool) -> None:
    # without CRC verification the damage reaches the record parser
    _assert_same(data, verify_crc=verify_crc)


@PROFILE
@given(mutated())
@example(  # found by this test: a negative baseSequence other than -1 means "no sequence" too
    b"\x00" * 11 + b"8" + b"\x00" * 4 + b"\x024\xbb\x92s" + b"\x00" * 22 + b"\xff" * 10 + b"\xfe\xff\xff\xff"
    + b"\x00\x00\x00\x01\x0c\x00\x00\x00\x01\x01\x00")
def test_broken_input_permissive_identically(data: bytes) -> None:
    _assert_same(data, verify_crc=False, mode="PERMISSIVE")


@PROFILE
@given(logs())
def test_batch_granularity_identically(data: bytes) -> None:
    ref = list(decode_segment(data, decoder=REFERENCE, granularity="batch"))
    fast = list(decode_segment(data, decoder=FAST, granularity="batch"))
    assert pa.Table.from_batches(ref).equals(pa.Table.from_batches(fast))


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_many_batches_in_one_chunk(codec: str) -> None:
    # many batches decoded by one C call, with a small read size forcing chunk boundaries
    records = [{"timestamp": 1_700_000_000_000 + i, "key": None if i % 5 == 0 else b"k%d" % i,
                "value": b"x" * (i * 31 % 700), "headers": [("h", b"%d" % i)] if i % 3 else []}
               for i in range(40)]
    data = b"".join(build_v2(records[: 1 + i % 40], codec=CODECS[codec], base_offset=100 * i,
                             base_sequence=INT32_MAX - 20, producer_id=1, producer_epoch=0)
                    for i in range(60))
    for read_size in (1 << 20, 5000):
        _assert_same(data, read_size=read_size)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_legacy_entries_between_v2_batches(magic: int, codec: str) -> None:
    # the compiled scan hands magic 0/1 entries to the shared legacy code: headers, CRC-32 and
    # records must still equal the reference decoder's (and kafka-python's)
    records = sample_records(7, headers=False)
    data = (build_legacy(records, magic=magic, codec=LEGACY_CODECS[codec], base_offset=0)
            + build_v2(sample_records(5), base_offset=7)
            + build_legacy(records, magic=magic, codec=LEGACY_CODECS[codec], base_offset=12))
    kind, result = _assert_same(data)
    assert kind == "ok"
    assert comparable(arrow_records(result[0].to_batches())) == kafka_python_records(data)
    ref = list(decode_segment(data, decoder=REFERENCE, granularity="batch"))
    fast = list(decode_segment(data, decoder=FAST, granularity="batch"))
    assert pa.Table.from_batches(ref).equals(pa.Table.from_batches(fast))
    broken = bytearray(data)
    broken[30] ^= 0x10  # inside the first legacy message: CRC-32 mismatch
    _assert_same(bytes(broken))
    _assert_same(bytes(broken), mode="PERMISSIVE")


def _raw_record(ts_delta: int, offset_delta: int) -> bytes:
    """One v2 record (null key and value, no headers) with the given deltas."""
    body = b"\x00" + _varlong(ts_delta) + varint(offset_delta) + varint(-1) + varint(-1) + varint(0)
    return varint(len(body)) + body


def _varlong(value: int) -> bytes:
    raw = ((value << 1) ^ (value >> 63)) & (2**64 - 1)  # zigzag (ByteUtils.writeVarlong)
    out = bytearray()
    while raw >= 0x80:
        out.append(raw & 0x7F | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


@pytest.mark.parametrize("base_offset,offset_delta,base_sequence,base_ts,ts_delta,attributes", [
    (2**63 - 3, 5, -1, 0, 0, 0),                  # offset wraps like Java's long
    (100, -10, 5, 0, 0, 0),                       # negative delta: incrementSequence wraps
    (0, 3, INT32_MAX - 1, 0, 0, 0),               # sequence wraps past Int.MAX to 0
    (0, 0, -7, 0, 0, 0),                          # negative base sequence other than -1
    (0, 0, -1, 2**63 - 2, 10, 0),                 # timestamp wraps (then is out of Arrow's range)
    (0, 0, -1, 5, -(2**63), 0),                   # most negative varlong delta
    (0, 1, -1, 5, 7, TIMESTAMP_TYPE_BIT),         # LogAppendTime: maxTimestamp wins
])
def test_arithmetic_edges(base_offset: int, offset_delta: int, base_sequence: int, base_ts: int,
                          ts_delta: int, attributes: int) -> None:
    data = raw_v2(_raw_record(ts_delta, offset_delta), 1, base_offset=base_offset, attributes=attributes,
                  base_timestamp=base_ts, max_timestamp=1234, base_sequence=base_sequence,
                  producer_id=1 if base_sequence != -1 else -1, producer_epoch=0)
    kind, result = _assert_same(data)
    assert kind == "ok", result


# ---------------------------------------------------------------------------------------------
# deferred CRC: the compiled path verifies uncompressed v2 CRCs while decoding the records


_CRC_AT = struct.calcsize(">qiib")  # DefaultRecordBatch: crc field after baseOffset, length, epoch, magic


def _mixed_log() -> tuple[bytes, list[int]]:
    """Uncompressed, compressed, empty-after-compaction and legacy entries; their positions."""
    parts = [build_v2(sample_records(6), base_offset=0),
             build_v2(sample_records(4), codec=CODECS["gzip"], base_offset=6),
             build_v2(sample_records(5), base_offset=10),
             build_legacy(sample_records(3, headers=False), magic=1, codec=CODECS["gzip"], base_offset=15),
             build_v2(sample_records(7), base_offset=18),
             build_v2(sample_records(3), codec=CODECS["lz4"], base_offset=25),
             build_v2(sample_records(8), base_offset=28)]
    positions = [sum(len(p) for p in parts[:i]) for i in range(len(parts))]
    return b"".join(parts), positions


@pytest.mark.parametrize("mode", ["FAILFAST", "PERMISSIVE", "DROPMALFORMED"])
@pytest.mark.parametrize("damage", ["crc_field", "record_byte"])
@pytest.mark.parametrize("bad", [(0,), (2,), (6,), (1,), (3,), (4, 5), (5, 6), (2, 4), (0, 6)])
@pytest.mark.parametrize("read_size", [1 << 20, 700])
def test_crc_mismatch_same_as_reference(mode: str, damage: str, bad: tuple[int, ...], read_size: int) -> None:
    # FAILFAST: every batch before the first bad one, then the same ChecksumError (position,
    # stored and computed CRC); PERMISSIVE/DROPMALFORMED: exactly the bad batches skipped
    data, positions = _mixed_log()
    out = bytearray(data)
    ends = [*positions[1:], len(data)]
    for i in bad:  # the stored CRC, or the entry's last byte (inside its last record)
        out[positions[i] + _CRC_AT if damage == "crc_field" else ends[i] - 1] ^= 0x5A
    kind, result = _assert_same(bytes(out), mode=mode, read_size=read_size)
    first = positions[min(bad)]
    if mode == "FAILFAST":
        assert kind == "error" and result[2] == first  # the first damaged entry, by construction
    else:
        assert kind == "ok" and result[1][0][0] == first
