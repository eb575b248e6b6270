"""The compiled decoder's fast paths equal the reference decoder (and independent oracles).

What these protect, one path each:

* CRC-32C at every implementation level the CPU has (tables, SSE4.2, 16-byte folding, 512-bit
  folding) and the fused copy+CRC of large keys and values (streamed stores from a 64-byte
  boundary), for lengths around every threshold, misaligned sources and destinations;
* large keys and values inside uncompressed batches (fused copy+CRC in the record loop): equal
  to kafka-python's reading, and a flipped byte inside a large value is the reference decoder's
  checksum error (FAILFAST) or skipped batch (PERMISSIVE);
* the fused compressed path taking batches in calls of at most ``REGION_HELD_BYTES`` (made tiny
  here) and the walker handing decoded parts on at ``_PART_BYTES``: the same table;
* Arrow assembly (``records.assembly``): batch fields expanded over runs, constant columns
  from the cache sliced to each record batch, mixed legacy/v2 chunks, out-of-range timestamps,
  equal to a plain per-row construction with ``pa.array``.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from builders import CODECS, build_legacy, build_v2, kafka_python_records, patch_v2, sample_records

from kafka_format.common.errors import ChecksumError, KafkaFormatError
from kafka_format.records import assembly, chunk_records
from kafka_format.records import file_records as api
from kafka_format.records.columns import FileContext, codec_name
from kafka_format.records.decoder import Decoder
from kafka_format.records.file_records import decode_segment
from kafka_format.records.schema import RECORD_SCHEMA

native = pytest.importorskip("kafka_format.records._fastdecode", reason="compiled decoder not built")
from kafka_format.records import fast  # noqa: E402  (after the importorskip)
from kafka_format.records.fast import FastDecoder  # noqa: E402

REFERENCE = Decoder()
FAST = FastDecoder()
LEVELS = range(native.CRC_LEVEL + 1)   # every level this CPU runs


def _table(data: bytes, decoder: Decoder, **kw: Any) -> tuple[str, Any]:
    skipped: list[Any] = []
    try:
        batches = list(decode_segment(data, decoder=decoder, context=FileContext(path="t.log"),
                                      on_skip=skipped.append, **kw))
    except KafkaFormatError as exc:
        return "error", (type(exc), str(exc), exc.position)
    return "ok", (pa.Table.from_batches(batches, schema=RECORD_SCHEMA), skipped)


def _same(data: bytes, **kw: Any) -> tuple[str, Any]:
    ref, got = _table(data, REFERENCE, **kw), _table(data, FAST, **kw)
    assert ref[0] == got[0], (ref, got)
    if ref[0] == "ok":
        assert got[1][0].equals(ref[1][0])
        assert got[1][1] == ref[1][1]
    else:
        assert got[1] == ref[1]
    return ref


# ---------------------------------------------------------------------------------------------
# CRC-32C levels and the fused copy


LENGTHS = [0, 1, 7, 63, 64, 65, 255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097, 8191, 8192, 70_000]


@pytest.mark.parametrize("level", LEVELS)
def test_crc32c_every_level_equals_the_table_loop(level: int) -> None:
    rng = random.Random(level)
    data = rng.randbytes(80_000)
    for n in LENGTHS:
        start = n % 13
        value = rng.getrandbits(32)
        piece = data[start:start + n]
        assert native.crc32c_at(piece, value, level) == native.crc32c_portable(piece, value), n


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("dst_offset", [0, 1, 33, 63])
def test_fused_copy_copies_and_checksums_in_one_pass(level: int, dst_offset: int) -> None:
    rng = random.Random(100 + level)
    data = rng.randbytes(80_000)
    for n in LENGTHS:
        start = (n * 7) % 17
        value = rng.getrandbits(32)
        piece = data[start:start + n]
        crc, copy = native.crc32c_copy(piece, value, level, dst_offset)
        assert copy == piece, (n, dst_offset)
        assert crc == native.crc32c_portable(piece, value), (n, dst_offset)


def test_crc32c_known_vector_at_every_level() -> None:
    # RFC 3720 B.4 / Kafka's Crc32CTest: CRC-32C("123456789") = 0xE3069283; 32 zero bytes 0x8A9136AA
    for level in LEVELS:
        assert native.crc32c_at(b"123456789", 0, level) == 0xE3069283
        assert native.crc32c_at(bytes(32), 0, level) == 0x8A9136AA
        assert native.crc32c_at(bytes(4096), 0, level) == native.crc32c_portable(bytes(4096))


# ---------------------------------------------------------------------------------------------
# large keys and values: the fused copy+CRC of the record loop


def _large_records(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    sizes = [0, 5, 1023, 1024, 1025, 4095, 4096, 4097, 20_000, 65_537]
    return [{"timestamp": 1_700_000_000_000 + i, "key": rng.randbytes([3, 2000, 5000][i % 3]),
             "value": rng.randbytes(size), "headers": [("h", b"x")] if i % 2 else []}
            for i, size in enumerate(sizes)]


@pytest.mark.parametrize("path", ["fused", "general"])
def test_large_values_equal_kafka_python(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "general":
        monkeypatch.setattr(FastDecoder, "decode_v2_region", lambda *a, **k: None)
    data = b"".join(build_v2(_large_records(s), base_offset=100 * s) for s in range(3))
    state, (table, _) = _same(data)
    assert state == "ok"
    rows = kafka_python_records(data)
    assert table.column("value").to_pylist() == [r["value"] for r in rows]
    assert table.column("key").to_pylist() == [r["key"] for r in rows]


@pytest.mark.parametrize("path", ["fused", "general"])
@pytest.mark.parametrize("where", ["inside a large value", "inside a large key", "in the last bytes"])
def test_flipped_byte_in_a_large_field_is_the_reference_error(where: str, path: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "general":   # the call after a declined fused call: decode_v2_checked over the payloads
        monkeypatch.setattr(FastDecoder, "decode_v2_region", lambda *a, **k: None)
    batches = [build_v2(_large_records(s), base_offset=100 * s) for s in range(3)]
    victim = bytearray(batches[1])
    value = _large_records(1)[-1]["value"]
    key = _large_records(1)[4]["key"]
    at = {"inside a large value": bytes(victim).index(value) + 40_000,
          "inside a large key": bytes(victim).index(key) + len(key) // 2,
          "in the last bytes": len(victim) - 2}[where]
    victim[at] ^= 0x10
    data = batches[0] + bytes(victim) + batches[2]
    state, (kind, _message, position) = _same(data)
    assert state == "error" and kind is ChecksumError and position == len(batches[0])
    state, (table, skipped) = _same(data, mode="PERMISSIVE")
    assert state == "ok" and table.num_rows == 20
    assert [(s.position, s.length) for s in skipped] == [(len(batches[0]), len(victim))]


# ---------------------------------------------------------------------------------------------
# compressed chunks decoded in several calls, parts handed on without concatenation


@pytest.mark.parametrize("codec", sorted(c for c in CODECS if c != "none"))
def test_held_bytes_per_call_and_part_size_do_not_change_the_table(monkeypatch: pytest.MonkeyPatch,
                                                                   codec: str) -> None:
    data = b"".join(build_v2(sample_records(40), codec=CODECS[codec], base_offset=100 * i) for i in range(12))
    data += build_v2(sample_records(30), base_offset=5000)            # an uncompressed batch after them
    expected = _same(data)
    calls: list[int] = []
    real = native.decode_v2_chunk

    def counting(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(fast, "REGION_HELD_BYTES", 3000)      # about one batch's records a call
    monkeypatch.setattr(fast._fastdecode, "decode_v2_chunk", counting)
    monkeypatch.setattr(chunk_records, "_PART_BYTES", 5000)             # parts handed on, never concatenated
    got = _table(data, FAST)
    assert len(calls) >= 6
    assert got[0] == expected[0] == "ok" and got[1][0].equals(expected[1][0])


# ---------------------------------------------------------------------------------------------
# Arrow assembly


def _mixed_log() -> bytes:
    """Legacy v0/v1 messages (plain and compressed) between v2 batches that differ in producer,
    epochs, attributes and codec; one LogAppendTime batch; an out-of-range timestamp."""
    recs = sample_records(7)
    parts = [
        build_legacy(recs[:3], magic=0, base_offset=0),
        build_v2(recs, base_offset=3, producer_id=7, producer_epoch=2, base_sequence=0),
        build_legacy(recs[:4], magic=1, codec=CODECS["gzip"], base_offset=10),
        patch_v2(build_v2(recs, base_offset=14, codec=CODECS["lz4"]), leader_epoch=5),
        patch_v2(build_v2(recs, base_offset=21, transactional=True, producer_id=9, producer_epoch=0,
                          base_sequence=5), set_bits=0x20 | 0x08, max_timestamp=2**62),
        build_v2([{**r, "timestamp": -(2**62)} for r in recs[:2]], base_offset=28),
        build_v2(recs, base_offset=30),
    ]
    return b"".join(parts)


def _plain_arrow(table: Any, columns: Any, ctx: FileContext) -> pa.Table:
    """RECORD_SCHEMA rows built value by value (pa.array of Python objects): the oracle."""
    rows = columns.batch_row.tolist()
    n = len(rows)

    def per_batch(values: np.ndarray) -> list[Any]:
        return [values[r].item() for r in rows]

    magic = per_batch(table.magic)
    v2 = [m == 2 for m in magic]
    attrs = per_batch(table.attributes)

    def masked(values: list[Any]) -> list[Any]:
        return [v if ok else None for v, ok in zip(values, v2, strict=True)]

    def blob(offsets: np.ndarray, data: np.ndarray, valid: np.ndarray) -> list[Any]:
        return [bytes(data[offsets[i]:offsets[i + 1]]) if valid[i] else None for i in range(n)]

    limit = (2**63 - 1) // 1000
    headers = []
    for i in range(n):
        hs = []
        for h in range(columns.header_offsets[i], columns.header_offsets[i + 1]):
            k = bytes(columns.header_key_data[columns.header_key_offsets[h]:columns.header_key_offsets[h + 1]])
            v = bytes(columns.header_value_data[columns.header_value_offsets[h]:columns.header_value_offsets[h + 1]])
            hs.append({"key": k.decode(), "value": v if columns.header_value_valid[h] else None})
        headers.append(hs)
    values = {
        "key": blob(columns.key_offsets, columns.key_data, columns.key_valid),
        "value": blob(columns.value_offsets, columns.value_data, columns.value_valid),
        "topic": [ctx.topic] * n, "partition": [ctx.partition] * n,
        "offset": columns.offset.tolist(),
        "timestamp": [t * 1000 if -limit <= t <= limit else None for t in columns.timestamp.tolist()],
        "timestampType": columns.timestamp_type.tolist(), "headers": headers,
        "leaderEpoch": masked(per_batch(table.leader_epoch)), "producerId": masked(per_batch(table.producer_id)),
        "producerEpoch": masked(per_batch(table.producer_epoch)), "sequence": masked(columns.sequence.tolist()),
        "isTransactional": [ok and bool(a & 0x10) for a, ok in zip(attrs, v2, strict=True)],
        "isControl": [ok and bool(a & 0x20) for a, ok in zip(attrs, v2, strict=True)],
        "magic": magic, "compression": [codec_name(a & 7) for a in attrs],
        "batchBaseOffset": per_batch(table.base_offset), "batchLastOffset": per_batch(table.last_offset),
        "segment": [ctx.segment] * n, "position": per_batch(table.position),
        "logDir": [ctx.log_dir] * n, "brokerId": [ctx.broker_id] * n,
    }
    return pa.table([pa.array(values[f.name], f.type) for f in RECORD_SCHEMA], schema=RECORD_SCHEMA)


def _decoded(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """The (batch table, record columns) ``decode_segment`` hands the assembly for ``data``."""
    seen: list[tuple[Any, Any]] = []
    real = api.to_arrow_batches

    def capture(table: Any, columns: Any, *args: Any, **kw: Any) -> Any:
        seen.append((table, columns))
        return real(table, columns, *args, **kw)

    with monkeypatch.context() as m:
        m.setattr(api, "to_arrow_batches", capture)
        list(decode_segment(data, decoder=FAST))
    assert len(seen) == 1
    return seen[0]


@pytest.mark.parametrize("max_rows", [None, 1, 5, 16])
@pytest.mark.parametrize("ctx", [FileContext(path="/d/t-3/00000000000000000000.log", topic="tøpic", partition=3,
                                             segment=0, log_dir="/d", broker_id=7), FileContext()],
                         ids=["provenance", "none"])
def test_assembly_equals_a_row_by_row_construction(max_rows: int | None, ctx: FileContext,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    table, columns = _decoded(_mixed_log(), monkeypatch)
    expected = _plain_arrow(table, columns, ctx)
    batches = list(assembly.to_arrow_batches(table, columns, ctx, max_rows=max_rows))
    assert all(b.num_rows <= (max_rows or len(columns)) for b in batches)
    got = pa.Table.from_batches(batches, schema=RECORD_SCHEMA)
    assert got.num_rows == len(columns) > 30
    assert got.equals(expected)
    assert got.column("timestamp").null_count == 2 + 7        # -(2**62) ms; LogAppendTime 2**62


def test_constant_columns_are_cached_slices_and_equal_fresh_ones() -> None:
    for value, type_ in [("topic", pa.string()), (None, pa.string()), (7, pa.int32()), (-1, pa.int64()),
                         (True, pa.bool_()), (2, pa.int8()), ("", pa.string())]:
        for n in [0, 1, 5, 300, assembly.CONSTANT_ROWS, assembly.CONSTANT_ROWS + 3]:
            got = assembly.constant(value, type_, n)
            assert got.equals(pa.array([value] * n, type_)), (value, n)
    a, b = assembly.constant("xy", pa.string(), 20), assembly.constant("xy", pa.string(), 10)
    assert a.buffers()[2].address == b.buffers()[2].address      # one cached buffer, two slices
    long_value = "p" * 200                                        # too long to cache at 64 Ki rows
    assert assembly.constant(long_value, pa.string(), 1000).equals(pa.array([long_value] * 1000))


def test_assembly_of_many_batches_with_one_field_varying(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of batch fields: leader epochs differ per batch, everything else constant."""
    recs = sample_records(5)
    data = b"".join(patch_v2(build_v2(recs, base_offset=10 * i), leader_epoch=i % 3) for i in range(20))
    table, columns = _decoded(data, monkeypatch)
    got = pa.Table.from_batches(list(assembly.to_arrow_batches(table, columns, FileContext(), max_rows=7)))
    assert got.column("leaderEpoch").to_pylist() == [i % 3 for i in range(20) for _ in range(5)]
    assert got.equals(_plain_arrow(table, columns, FileContext()))


# ---------------------------------------------------------------------------------------------
# headers not asked for: read and checked, not output


def test_headers_not_asked_for_are_checked_not_output() -> None:
    from builders import raw_v2, varint

    good = b"".join(build_v2(sample_records(30), codec=CODECS[c], base_offset=100 * i)
                    for i, c in enumerate(["none", "lz4", "none"]))
    state, (table, _) = _same(good, include_headers=False)
    assert state == "ok" and table.num_rows == 90
    assert table.column("headers").to_pylist() == [[]] * 90
    assert table.drop_columns(["headers"]).equals(_same(good)[1][0].drop_columns(["headers"]))
    record = varint(9) + b"\x00" + varint(0) + varint(0) + varint(-1) + varint(-1) + varint(1)
    for broken in (record + varint(-1) + varint(-1),         # null header key: Kafka refuses it
                   record + varint(5) + b"ab"):              # header key runs past the record
        data = good + raw_v2(broken, count=1, base_offset=500)
        for mode in ("FAILFAST", "PERMISSIVE"):
            assert _same(data, include_headers=False, mode=mode)[0] == ("error" if mode == "FAILFAST" else "ok")


def _records(n: int, *, headers: int, key_size: int, value_size: int, step_ms: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [{"timestamp": 1_700_000_000_000 + (i * step_ms if i % 7 else -i * step_ms),
             "key": rng.randbytes(key_size), "value": rng.randbytes(rng.randint(0, value_size)),
             "headers": [(f"h{k}", rng.randbytes(rng.randint(0, 40)) if k % 3 else None) for k in range(headers)]}
            for i in range(n)]


def test_column_sizes_learned_from_an_earlier_chunk_do_not_change_the_table() -> None:
    """The compiled decoder sizes key and header columns from the previous call (a chunk of at
    least 1 MiB): chunks after it with more headers, longer keys, no headers, or timestamp deltas
    of one to three varint bytes (negative ones too) decode as the reference does."""
    learn = b"".join(build_v2(_records(300, headers=1, key_size=20, value_size=900, step_ms=1, seed=i),
                              base_offset=300 * i) for i in range(9))
    assert len(learn) > 1 << 20
    _same(learn)
    for headers, key_size, step_ms in ((12, 300, 70), (0, 8, 9000), (3, 2000, 1), (30, 1, 70_000)):
        data = b"".join(build_v2(_records(40, headers=headers, key_size=key_size, value_size=200,
                                          step_ms=step_ms, seed=headers + i), base_offset=40 * i)
                        for i in range(5))
        kind, (table, _skipped) = _same(data)
        assert kind == "ok" and table.num_rows == 200
        _same(learn)                                   # and back: learned from the small chunk


def _batches(records: list[dict[str, Any]], per_batch: int, codec: str) -> bytes:
    return b"".join(build_v2(records[i:i + per_batch], codec=CODECS[codec], base_offset=i)
                    for i in range(0, len(records), per_batch))


@pytest.mark.parametrize("codec", ["lz4", "zstd", "gzip"])
def test_value_columns_and_decompressed_sizes_learned_from_earlier_chunks_do_not_change_the_table(
        codec: str) -> None:
    """Value columns are sized from the previous call's share of values in its payload, and the
    columns of compressed batches from the codec's decompression ratio in earlier calls (both
    learned from calls of at least 1 MiB), and a batch is decompressed straight into the value
    column when the ratio says it fits: chunks after one of tiny values with values filling
    their records, and after payloads compressing ~2x with payloads compressing ~100x (more than
    the room they were expected to need: decompressed again elsewhere), grow their columns and
    decode as the reference does."""
    from builders import need_codec

    need_codec(codec)
    rng = random.Random(7)
    tiny_values = _records(6000, headers=3, key_size=120, value_size=4, step_ms=1, seed=1)
    # hex digits compress about 2x (random bytes would not: the builder then writes them plain)
    big_values = [{"timestamp": 1_700_000_000_000 + i, "key": None, "value": rng.randbytes(1500).hex().encode(),
                   "headers": []} for i in range(400)]
    incompressible = [{"timestamp": 1_700_000_000_000 + i, "key": b"k%d" % i,
                       "value": rng.randbytes(750).hex().encode(), "headers": []} for i in range(1600)]
    zeros = [{"timestamp": 1_700_000_000_000 + i, "key": None, "value": bytes(20_000), "headers": [("h", None)]}
             for i in range(600)]
    learn_values, learn_ratio = _batches(tiny_values, 500, "none"), _batches(incompressible, 100, codec)
    assert len(learn_values) > 1 << 20 and len(learn_ratio) > 1 << 20
    for learn, data, rows in ((learn_values, _batches(big_values, 50, "none"), 400),
                              (learn_values, _batches(big_values, 50, codec), 400),
                              (learn_ratio, _batches(zeros, 100, codec), 600),
                              (learn_ratio, _batches(big_values, 40, codec), 400)):
        _same(learn)
        kind, (table, _skipped) = _same(data)
        assert kind == "ok" and table.num_rows == rows
    # the general path (decode_v2: payloads given, no fused decompression) sizes values alike
    plain = _batches(big_values, 50, "none")
    _same(learn_values)
    tbl = FAST.scan(plain)
    rows = list(range(len(tbl)))
    payloads = [plain[p + 61:p + s] for p, s in zip(tbl.position.tolist(), tbl.size.tolist(), strict=True)]
    got, want = FAST.decode_v2_records(payloads, tbl, rows), REFERENCE.decode_v2_records(payloads, tbl, rows)
    for name in ("value_offsets", "value_data", "value_valid", "key_valid", "offset"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
