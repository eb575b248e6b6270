"""Atheris (libFuzzer) harness: one fuzz target per parser of untrusted bytes.

Each target feeds arbitrary bytes to one public parser.  A target returns normally when the
parser accepts the input or raises a :class:`kafka_format.common.errors.KafkaFormatError` subclass;
any other exception (and any assertion of an invariant below) escapes and is a crash.

Targets (``TARGETS``):

* ``decode_reference`` / ``decode_fast``: ``decode_segment`` over the bytes with the reference or
  the compiled decoder, FAILFAST with and without CRC checks, then PERMISSIVE (which must account
  for every byte: good entry bytes + skipped ranges = buffer size);
* ``parity``: the compiled and the reference decoder agree (rows, error type / position /
  expected / found, skipped ranges) in FAILFAST, PERMISSIVE and batch granularity;
* ``scan``: the ``iter_batches`` walk (``granularity="batch"``) over an in-memory file object;
* ``offset_index`` / ``time_index`` / ``txn_index``: the index parsers and their lookups;
* ``snapshot``: the producer-state snapshot parser (with and without its CRC check);
* ``checkpoints``: offset / leader-epoch checkpoints, partition.metadata, meta.properties,
  .kafka_cleanshutdown, quorum-state;
* ``internal``: __consumer_offsets / __transaction_state key+value, __cluster_metadata records,
  KRaft control values and control-record keys, __remote_log_metadata records and their replay
  (first byte picks the decoder);
* ``decompress_<codec>``: ``compression.decompress`` per codec with a small output cap
  (the output must never exceed the cap);
* ``typed``: a key or value in the Schema Registry wire format (byte 0 picks Avro, Protobuf or JSON
  Schema; the header is added here) decoded by the compiled column decoder and by the reference
  (fastavro, upb, ``json.loads``): the same values and problems;
* ``all``: the first byte picks one of the targets above (one process for the short run).

Command line (run by tests/fuzz/test_atheris_short.py and the ``fuzz_long`` test)::

    python tests/fuzz/atheris_targets.py TARGET [libFuzzer flags] [corpus dirs]
    python tests/fuzz/atheris_targets.py --write-seeds DIR [--realdata DIR]
"""

from __future__ import annotations

import io
import os
import struct
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SAMPLES = REPO / "data_samples" / "logdirs"

#: Output cap for the decompress / decode targets: small, so a bomb is cheap to detect.
FUZZ_MAX_DECOMPRESSED = 1 << 20
#: Largest seed file written (libFuzzer's default -max_len is derived from the corpus).
MAX_SEED_BYTES = 4096
MAX_SEEDS = 30
_SELECTOR = struct.Struct(">B")  # target number prefixed to inputs of the ``all`` target
_KEY_LENGTH = struct.Struct(">H")  # key length prefixed to inputs of the ``internal`` target
# Framing of a .log entry (records/framing.py; FileLogInputStream.java): offset int64, size int32.
_SIZE = struct.Struct(">i")
_SIZE_OFFSET = struct.calcsize(">q")
_ENTRY_OVERHEAD = _SIZE_OFFSET + _SIZE.size  # 12
_HEADER_UP_TO_MAGIC = _ENTRY_OVERHEAD + struct.calcsize(">ib")  # 17
_MIN_ENTRY_SIZE = 14  # LegacyRecord.RECORD_OVERHEAD_V0
_MAGIC_OFFSET = _HEADER_UP_TO_MAGIC - 1  # 16
# v2 batch header (DefaultRecordBatch.java): attributes int16 at byte 21, records from byte 61.
_V2_ATTRIBUTES = struct.Struct(">h")
_V2_ATTRIBUTES_OFFSET = _MAGIC_OFFSET + struct.calcsize(">bI")  # 21
_V2_RECORDS_OFFSET = 61
_CODEC_MASK = 0x07

_modules: dict[str, object] = {}


def _load() -> None:
    """Import the library (called inside ``atheris.instrument_imports`` when fuzzing)."""
    if _modules:
        return
    from kafka_format.common import errors
    from kafka_format.internal import (
        cluster_metadata,
        consumer_offsets,
        kraft_control,
        remote_log_metadata,
        remote_log_metadata_cache,
        transaction_log,
    )
    from kafka_format.records import columns, compression, control, decoder
    from kafka_format.records import file_records as api
    from kafka_format.storage import checkpoints, index, snapshot, txnindex

    _modules.update(api=api, checkpoints=checkpoints, compression=compression, decoder=decoder,
                    errors=errors, index=index, snapshot=snapshot, txnindex=txnindex,
                    cluster_metadata=cluster_metadata, consumer_offsets=consumer_offsets,
                    kraft_control=kraft_control, transaction_log=transaction_log, columns=columns,
                    control=control, remote_log_metadata=remote_log_metadata,
                    remote_log_metadata_cache=remote_log_metadata_cache)
    try:
        from kafka_format.records import fast
    except ImportError:  # no compiled decoder in this build: decode_fast runs the reference
        _modules["fast"] = None
    else:
        _modules["fast"] = fast
    try:
        from kafka_format.registry import typed
    except ImportError:  # no fastavro / protobuf: the typed target has nothing to run
        _modules["typed"] = None
    else:
        _modules["typed"] = typed


def _m(name: str):  # type: ignore[no-untyped-def]
    _load()
    return _modules[name]


def _expected_errors() -> type[BaseException]:
    return _m("errors").KafkaFormatError


def _decoder(kind: str):  # type: ignore[no-untyped-def]
    fast = _m("fast")
    if kind == "fast" and fast is not None:
        return fast.FastDecoder()
    return _m("decoder").Decoder()


# ---------------------------------------------------------------------------------------------
# decode targets


def _decode(data: bytes, kind: str) -> None:
    api = _m("api")
    err = _expected_errors()
    dec = _decoder(kind)
    ctx = _m("columns").FileContext()
    for verify in (True, False):
        try:
            for _ in api.decode_segment(data, decoder=dec, context=ctx, verify_crc=verify,
                                        max_decompressed=FUZZ_MAX_DECOMPRESSED, read_size=4096):
                pass
        except err:
            pass
    check_permissive_accounting(data, dec)


def check_permissive_accounting(data: bytes, dec, *, mode: str = "PERMISSIVE",  # type: ignore[no-untyped-def]
                                verify_crc: bool = True, read_size: int = 4096) -> None:
    """PERMISSIVE/DROPMALFORMED invariant: decoded entries + skipped ranges tile the buffer.

    Every byte is either in an entry that produced output, in a reported skipped range, or in the
    unreported tail the framing rules end the data with (fewer than 18 bytes, a partial trailing
    entry, an all-zero remainder).  Raises AssertionError when ranges overlap or leave a gap.
    """
    api = _m("api")
    skipped: list[tuple[int, int]] = []
    ctx = _m("columns").FileContext()
    try:
        batches = list(api.decode_segment(data, decoder=dec, context=ctx, mode=mode, verify_crc=verify_crc,
                                          granularity="record", max_decompressed=FUZZ_MAX_DECOMPRESSED,
                                          on_skip=lambda s: skipped.append((s.position, s.length)),
                                          read_size=read_size))
    except _expected_errors():
        return  # a mode may still refuse (e.g. a decompression cap); accounting is moot then
    good = good_entry_ranges(data, batches)
    ranges = sorted(good + skipped)
    pos = 0
    for start, length in ranges:
        assert start >= pos, f"overlapping ranges at {start} (covered up to {pos}): {ranges}"
        if start > pos:
            assert_unreported_tail_ok(data, pos, start, ranges)
        pos = start + length
    assert pos <= len(data), f"ranges run past the buffer ({pos} > {len(data)})"
    if pos < len(data):
        assert_unreported_tail_ok(data, pos, len(data), ranges)


def good_entry_ranges(data: bytes, batches: list) -> list[tuple[int, int]]:  # type: ignore[type-arg]
    """(position, size) of the entries that produced rows (size from the entry's own size field)."""
    positions: set[int] = set()
    for b in batches:
        positions.update(b.column("position").to_pylist())
    return [(p, _ENTRY_OVERHEAD + _SIZE.unpack_from(data, p + _SIZE_OFFSET)[0]) for p in sorted(positions)]


def assert_unreported_tail_ok(data: bytes, lo: int, hi: int, ranges: list[tuple[int, int]]) -> None:
    """A gap [lo, hi) covered by no range must hold only silent entries or the end of data.

    Silent: complete entries that decode to no rows (empty v2 batches).  End of data (only when
    the gap reaches the end of the buffer): fewer than 18 bytes, an all-zero remainder or a
    partial trailing entry whose size field runs past the buffer.
    """
    pos = lo
    while pos < hi:
        rest = data[pos:hi]
        if hi == len(data) and (len(rest) <= _HEADER_UP_TO_MAGIC or rest.count(0) == len(rest)):
            return
        assert len(rest) > _HEADER_UP_TO_MAGIC, f"unaccounted bytes [{pos}, {hi}); ranges {ranges}"
        (size,) = _SIZE.unpack_from(rest, _SIZE_OFFSET)
        assert size >= _MIN_ENTRY_SIZE, f"unaccounted bytes [{pos}, {hi}) (size {size}); ranges {ranges}"
        if _ENTRY_OVERHEAD + size > len(rest):
            assert hi == len(data), f"unaccounted bytes [{pos}, {hi}); ranges {ranges}"
            return  # partial trailing entry
        pos += _ENTRY_OVERHEAD + size
    assert pos == hi, f"silent entries overrun the gap [{lo}, {hi}); ranges {ranges}"


def decode_reference(data: bytes) -> None:
    """decode_segment with the reference decoder."""
    _decode(data, "reference")


def decode_fast(data: bytes) -> None:
    """decode_segment with the compiled decoder."""
    _decode(data, "fast")


def decode_outcome(dec, data: bytes, *, mode: str, verify_crc: bool, granularity: str,  # type: ignore[no-untyped-def]
                   read_size: int, path: str | None = "/fuzz/topic-0/00000000000000000000.log") -> dict:  # type: ignore[type-arg]
    """Everything observable from one decode: Arrow rows, the error (type, path, position,
    expected, found, code) and the skipped ranges."""
    import pyarrow as pa

    api = _m("api")
    skipped: list[tuple[int, int, str]] = []
    batches = []
    error = None
    try:
        for b in api.decode_segment(data, decoder=dec, mode=mode, verify_crc=verify_crc, granularity=granularity,
                                    context=_m("columns").FileContext(path=path), read_size=read_size,
                                    max_decompressed=FUZZ_MAX_DECOMPRESSED,
                                    on_skip=lambda s: skipped.append((s.position, s.length, s.reason))):
            batches.append(b)
    except _expected_errors() as exc:
        error = (type(exc).__name__, exc.path, exc.position, exc.expected, exc.found, exc.code)
    rows = pa.Table.from_batches(batches).combine_chunks() if batches else None
    return {"rows": rows, "error": error, "skipped": skipped}


def assert_same_outcome(data: bytes, **kwargs) -> None:  # type: ignore[no-untyped-def]
    """The compiled and the reference decoder agree on ``data`` (rows, error, skipped ranges)."""
    ref = decode_outcome(_decoder("reference"), data, **kwargs)
    got = decode_outcome(_decoder("fast"), data, **kwargs)
    assert got["error"] == ref["error"], f"errors differ: fast {got['error']} reference {ref['error']}"
    assert got["skipped"] == ref["skipped"], f"skips differ: fast {got['skipped']} reference {ref['skipped']}"
    if ref["rows"] is None or got["rows"] is None:
        assert ref["rows"] is None and got["rows"] is None, "one decoder produced rows, the other none"
    else:
        assert got["rows"].equals(ref["rows"]), "Arrow output differs between the decoders"


def parity(data: bytes) -> None:
    """Fast/reference parity (FAILFAST with and without CRC checks, PERMISSIVE, batch headers)."""
    for mode, verify, granularity in (("FAILFAST", True, "record"), ("FAILFAST", False, "record"),
                                      ("PERMISSIVE", True, "record"), ("FAILFAST", True, "batch")):
        assert_same_outcome(data, mode=mode, verify_crc=verify, granularity=granularity, read_size=4096)


def scan(data: bytes) -> None:
    """The iter_batches walk over an in-memory file."""
    api = _m("api")
    try:
        for header in api.iter_batches(io.BytesIO(data)):
            assert 0 <= header.position and header.position + header.size <= len(data)
    except _expected_errors():
        pass


# ---------------------------------------------------------------------------------------------
# index, snapshot, checkpoint targets


def offset_index(data: bytes) -> None:
    """.index parsing, lookups and sanity check."""
    index = _m("index")
    for log_size in (None, 1 << 20):
        try:
            idx = index.parse_offset_index(data, 0, log_size=log_size)
            idx.sanity_check()
            idx.dump_entries()
            for target in (0, 1, 100, 1 << 40):
                idx.lookup(target)
                idx.broker_lookup(target)
            idx.fetch_upper_bound_offset(4096)
        except _expected_errors():
            pass


def time_index(data: bytes) -> None:
    """.timeindex parsing, lookups and sanity check."""
    index = _m("index")
    try:
        idx = index.parse_time_index(data, 0)
        idx.sanity_check()
        idx.dump_entries()
        for target in (-1, 0, 1_600_000_000_000, 1 << 62):
            idx.lookup(target)
            idx.broker_lookup(target)
    except _expected_errors():
        pass


def txn_index(data: bytes) -> None:
    """.txnindex parsing and aborted-transaction collection."""
    txnindex = _m("txnindex")
    try:
        idx = txnindex.parse_transaction_index(data, 0)
        idx.sanity_check()
        idx.collect(0, 1 << 40)
        txnindex.collect_aborted_txns([idx], 0, 1 << 40)
    except _expected_errors():
        pass


def snapshot(data: bytes) -> None:
    """Producer-state .snapshot parsing (with and without its CRC check)."""
    mod = _m("snapshot")
    for verify in (True, False):
        try:
            snap = mod.parse_producer_snapshot(data, verify_crc=verify)
            for entry in snap.entries:
                entry.dump_line()
        except _expected_errors():
            pass


def checkpoints(data: bytes) -> None:
    """Every text-file parser of a log dir."""
    mod = _m("checkpoints")
    parsers = (mod.parse_offset_checkpoint, mod.parse_leader_epoch_checkpoint, mod.parse_partition_metadata,
               mod.parse_meta_properties, mod.parse_clean_shutdown, mod.parse_quorum_state,
               mod.parse_java_properties)
    for parse in parsers:
        try:
            parse(data)
        except _expected_errors():
            pass


# ---------------------------------------------------------------------------------------------
# internal topics


def internal(data: bytes) -> None:
    """Internal-topic decoders; byte 0 picks the decoder, then u16 key length, key, value."""
    if len(data) < 1 + _KEY_LENGTH.size:
        return
    which = data[0]
    (klen,) = _KEY_LENGTH.unpack_from(data, 1)
    rest = data[1 + _KEY_LENGTH.size:]
    key, value = rest[:klen], rest[klen:]
    co = _m("consumer_offsets")
    tl = _m("transaction_log")
    cm = _m("cluster_metadata")
    kc = _m("kraft_control")
    ctl = _m("control")
    rlm = _m("remote_log_metadata")
    cache = _m("remote_log_metadata_cache")
    calls: tuple[Callable[[], object], ...] = (
        lambda: co.decode_consumer_offsets_record(key, value),
        lambda: co.decode_consumer_offsets_record(key, None),
        lambda: co.format_offsets_record(key, value, 0),
        lambda: tl.decode_transaction_log_key(key),
        lambda: tl.decode_transaction_log_value(value),
        lambda: tl.format_transaction_log_record(key, value),
        lambda: cm.decode_metadata_record(value),
        lambda: cm.format_metadata_record(value, 0),
        lambda: kc.decode_kraft_control_value(2 + which % 6, value),
        lambda: kc.format_kraft_control(2 + which % 6, value),
        lambda: ctl.parse_end_txn_marker(key, value),
        lambda: rlm.decode_remote_log_metadata(value, release=(3, 9) if which & 0x80 else None),
        lambda: rlm.format_remote_log_metadata(value, 0),
        lambda: cache.replay_remote_log_metadata([(0, 0, key), (0, 1, value)], stop_at_failure=False),
    )
    try:
        calls[which % len(calls)]()
    except _expected_errors():
        pass


# ---------------------------------------------------------------------------------------------
# decompression


def _decompress(codec: int, magic: int, data: bytes) -> None:
    comp = _m("compression")
    try:
        out = comp.decompress(codec, data, magic=magic, max_output=FUZZ_MAX_DECOMPRESSED)
    except _expected_errors():
        return
    assert len(out) <= FUZZ_MAX_DECOMPRESSED, f"output {len(out)} exceeds the cap"


def decompress_gzip(data: bytes) -> None:
    """gzip payloads."""
    _decompress(1, 2, data)


def decompress_snappy(data: bytes) -> None:
    """xerial / raw snappy payloads."""
    _decompress(2, 2, data)


def decompress_lz4(data: bytes) -> None:
    """Kafka lz4 frames (magic 2 rules, then the magic-0 broken-checksum rule)."""
    _decompress(3, 2, data)
    _decompress(3, 0, data)


def decompress_zstd(data: bytes) -> None:
    """zstd frames."""
    _decompress(4, 2, data)


# ---------------------------------------------------------------------------------------------
# typed columns (Schema Registry wire format)

_TYPED_HEADER = b"\x00\x00\x00\x00\x01"  # magic 0, schema id 1
_TYPED_SCHEMAS = (
    ("avro", "AVRO", """{"type": "record", "name": "R", "fields": [
        {"name": "s", "type": "string"}, {"name": "l", "type": "long"}, {"name": "d", "type": "double"},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
        {"name": "a", "type": {"type": "array", "items": "string"}}, {"name": "m", "type": {"type": "map", "values": "int"}},
        {"name": "n", "type": ["null", "string"]},
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
        {"name": "in", "type": {"type": "record", "name": "I", "fields": [{"name": "b", "type": "boolean"}]}}]}"""),
    ("protobuf", "PROTOBUF", """syntax = "proto3";
package f;
import "google/protobuf/timestamp.proto";
enum E { A = 0; B = 1; }
message R {
  int32 i = 1; uint64 u = 2; sint64 z = 3; string s = 4; bytes b = 5; E e = 6; I inner = 7;
  repeated int32 p = 8; map<string, int64> m = 9; oneof o { string os = 10; I oi = 11; }
  google.protobuf.Timestamp t = 12; optional float f = 13; repeated I items = 14; map<int32, E> me = 15;
}
message I { string n = 1; repeated sint32 xs = 2; }
"""),
    ("json-schema", "JSON", """{"type": "object", "properties": {
        "s": {"type": "string"}, "i": {"type": "integer"}, "n": {"type": "number"}, "b": {"type": "boolean"},
        "a": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": ["null", "integer"]}}}},
        "m": {"type": "object", "additionalProperties": {"type": "string"}}, "any": {}}}"""),
)
_typed_decoders: list = []  # type: ignore[type-arg]


def _typed_pairs() -> list:  # type: ignore[type-arg]
    """(compiled, reference) ColumnDecoder per format of ``_TYPED_SCHEMAS``."""
    if not _typed_decoders:
        from kafka_format.registry.store import RegisteredSchema, SchemaStore

        typed = _m("typed")
        for fmt, stype, text in _TYPED_SCHEMAS:
            store = SchemaStore.from_schemas([RegisteredSchema("t-value", 1, 1, text, stype)])
            plan = typed.plan_column(store, "value", fmt, subject="t-value")
            _typed_decoders.append((typed.ColumnDecoder(plan), typed.ColumnDecoder(plan, compiled=False)))
    return _typed_decoders


def _canon(t, v):  # type: ignore[no-untyped-def]
    """A value of Arrow type ``t`` comparable with ``==``: floats as their bits (NaN equal to NaN),
    map entries sorted (Protobuf leaves their order open; the other formats keep it, both paths alike)."""
    import math

    import pyarrow as pa

    if v is None:
        return None
    if pa.types.is_struct(t):
        return tuple(_canon(f.type, v[f.name]) for f in t)
    if pa.types.is_map(t):
        return sorted(((repr(k), _canon(t.item_type, x)) for k, x in v), key=lambda kv: kv[0])
    if pa.types.is_list(t):
        return [_canon(t.value_type, x) for x in v]
    if isinstance(v, float):
        return "nan" if math.isnan(v) else struct.pack("<d", v)
    return v


def typed(data: bytes) -> None:
    """Byte 0 picks the format; the rest is a payload after the wire-format header (and its
    halves): the compiled column decoder and the reference give the same values and problems."""
    if not data or _m("typed") is None:
        return
    import pyarrow as pa

    fast, ref = _typed_pairs()[data[0] % len(_TYPED_SCHEMAS)]
    body = data[1:]
    arr = pa.array([_TYPED_HEADER + body, _TYPED_HEADER + body[: len(body) // 2], None], pa.binary())
    got, got_problems = fast.decode(arr)
    want, want_problems = ref.decode(arr)
    assert got.type == want.type
    assert [_canon(got.type, v) for v in got.to_pylist()] == [_canon(want.type, v) for v in want.to_pylist()]
    assert got_problems == want_problems, (got_problems, want_problems)


def _typed_seeds() -> list[bytes]:
    """A few well-formed payloads per format of ``_TYPED_SCHEMAS`` (byte 0: the format)."""
    import io as _io
    import json
    from decimal import Decimal

    from fastavro import parse_schema, schemaless_writer

    from kafka_format.registry.protobuf import ProtoSchema, compile_proto

    out = []
    avro = parse_schema(json.loads(_TYPED_SCHEMAS[0][2]))
    proto = ProtoSchema(*compile_proto(_TYPED_SCHEMAS[1][2])).message_class("f.R")
    for i in range(3):
        buf = _io.BytesIO()
        schemaless_writer(buf, avro, {"s": "é" * i, "l": -i << 40, "d": i / 3, "e": "AB"[i % 2], "a": ["x"] * i,
                                      "m": {f"k{j}": j for j in range(i)}, "n": None if i % 2 else "n",
                                      "dec": Decimal(i) / 4, "in": {"b": i % 2 == 0}})
        out.append(b"\x00" + buf.getvalue())
        m = proto(i=i - 1, u=2**64 - 1 - i, z=-i, s="s" * i, b=b"\x00" * i, e=i % 2, p=range(i),
                  m={f"k{j}": j for j in range(i)}, me={j: j % 2 for j in range(i)})
        m.inner.n = "in" if i else ""
        m.t.seconds, m.t.nanos = 1_700_000_000 + i, -i
        if i % 2:
            m.os = "o"
            m.f = 0.5
        else:
            m.oi.xs.extend([-1, 2])
        m.items.add(n="it")
        out.append(b"\x01\x00" + m.SerializeToString())
        doc = {"s": "t\u00e9", "i": i, "n": i / 7, "b": True, "a": [{"x": i}, {"x": None}], "m": {"k": "v"}}
        out.append(b"\x02" + json.dumps(doc, indent=i or None).encode())
    return out


TARGETS: dict[str, Callable[[bytes], None]] = {
    "decode_reference": decode_reference,
    "decode_fast": decode_fast,
    "parity": parity,
    "scan": scan,
    "offset_index": offset_index,
    "time_index": time_index,
    "txn_index": txn_index,
    "snapshot": snapshot,
    "checkpoints": checkpoints,
    "internal": internal,
    "decompress_gzip": decompress_gzip,
    "decompress_snappy": decompress_snappy,
    "decompress_lz4": decompress_lz4,
    "decompress_zstd": decompress_zstd,
    "typed": typed,
}
_ORDER = tuple(TARGETS)
#: Seed directory (under tests/fuzz/corpus) of each target.
SEED_DIRS = {name: name for name in _ORDER}
SEED_DIRS.update(decode_reference="log", decode_fast="log", parity="log", scan="log")


def all_targets(data: bytes) -> None:
    """Byte 0 picks a target; the rest is its input."""
    if not data:
        return
    TARGETS[_ORDER[data[0] % len(_ORDER)]](data[1:])


TARGETS["all"] = all_targets


def for_all(target: str, data: bytes) -> bytes:
    """``data`` prefixed so that the ``all`` target sends it to ``target``."""
    return _SELECTOR.pack(_ORDER.index(target)) + data


# ---------------------------------------------------------------------------------------------
# seeds


def _glob(root: Path, pattern: str, limit: int) -> list[Path]:
    found = sorted(p for p in root.rglob(pattern) if p.is_file() and p.stat().st_size > 0)
    return found[:limit]


def _head(path: Path, n: int = MAX_SEED_BYTES) -> bytes:
    with open(path, "rb") as f:
        return f.read(n)


def _entries(data: bytes, limit: int) -> bytes:
    """The first complete framed entries of ``data`` that fit in ``limit`` bytes."""
    pos = 0
    while len(data) - pos > _HEADER_UP_TO_MAGIC:
        (size,) = _SIZE.unpack_from(data, pos + _SIZE_OFFSET)
        if size < _MIN_ENTRY_SIZE or pos + _ENTRY_OVERHEAD + size > min(len(data), limit):
            break
        pos += _ENTRY_OVERHEAD + size
    return data[:pos] if pos else data[:limit]


def _internal_seed(which: int, key: bytes, value: bytes) -> bytes:
    return bytes([which]) + _KEY_LENGTH.pack(len(key)) + key + value


def seeds(roots: list[Path]) -> dict[str, list[bytes]]:
    """Seed inputs per target, cut from the log dirs under ``roots`` (small slices)."""
    out: dict[str, list[bytes]] = {name: [] for name in set(SEED_DIRS.values())}
    for root in roots:
        if not root.is_dir():
            continue
        logs = _glob(root, "*.log", 200)
        for p in logs:
            out["log"].append(_entries(_head(p, 1 << 20), MAX_SEED_BYTES))
        for p in _glob(root, "*.index", 10):
            out["offset_index"].append(_head(p, 1024))
        for p in _glob(root, "*.timeindex", 10):
            out["time_index"].append(_head(p, 1024))
        for p in _glob(root, "*.txnindex", 10):
            out["txn_index"].append(_head(p, 1024))
        for p in _glob(root, "*.snapshot", 10):
            out["snapshot"].append(_head(p, 2048))
        for pattern in ("*checkpoint", "partition.metadata", "meta.properties", "quorum-state",
                        ".kafka_cleanshutdown"):
            for p in _glob(root, pattern, 6):
                out["checkpoints"].append(_head(p, 2048))
        out["internal"] += _internal_records(logs)
        for name, payload in _compressed_payloads(logs).items():
            out[name] += payload
    if _m("typed") is not None:
        out["typed"] += _typed_seeds()
    return {name: list(dict.fromkeys(values))[:MAX_SEEDS] for name, values in out.items()}


def _internal_records(logs: list[Path]) -> list[bytes]:
    api = _m("api")
    result: list[bytes] = []
    for p in logs:
        topic = p.parent.name
        kind = {"__consumer_offsets": 0, "__transaction_state": 3, "__cluster_metadata": 6}.get(
            topic.rsplit("-", 1)[0])
        if kind is None:
            continue
        try:
            for batch in api.decode_segment(str(p), end=1 << 16):
                keys = batch.column("key").to_pylist()
                values = batch.column("value").to_pylist()
                for k, v in list(zip(keys, values, strict=True))[:8]:
                    result.append(_internal_seed(kind, k or b"", v or b""))
                break
        except _expected_errors():
            continue
    return result


def _compressed_payloads(logs: list[Path]) -> dict[str, list[bytes]]:
    """Compressed v2 record payloads cut out of real batches, per codec target."""
    names = {1: "decompress_gzip", 2: "decompress_snappy", 3: "decompress_lz4", 4: "decompress_zstd"}
    out: dict[str, list[bytes]] = {name: [] for name in names.values()}
    for p in logs:
        data = _head(p, 1 << 20)
        pos = 0
        while len(data) - pos > _V2_RECORDS_OFFSET:
            (size,) = _SIZE.unpack_from(data, pos + _SIZE_OFFSET)
            end = pos + _ENTRY_OVERHEAD + size
            if size < _MIN_ENTRY_SIZE or end > len(data):
                break
            if data[pos + _MAGIC_OFFSET] == 2 and end - pos > _V2_RECORDS_OFFSET:
                (attributes,) = _V2_ATTRIBUTES.unpack_from(data, pos + _V2_ATTRIBUTES_OFFSET)
                codec = attributes & _CODEC_MASK
                if codec in names and len(out[names[codec]]) < 6 and size < MAX_SEED_BYTES:
                    out[names[codec]].append(data[pos + _V2_RECORDS_OFFSET:end])
            pos = end
    return out


def write_seeds(out_dir: Path, roots: list[Path]) -> int:
    """Write seeds as files ``<out_dir>/<seed dir>/<hash>`` (see ``SEED_DIRS``)."""
    count = 0
    for name, values in seeds(roots).items():
        for data in values:
            _write_blob(out_dir / name, data)
            count += 1
    return count


def _write_blob(directory: Path, data: bytes) -> None:
    import hashlib

    directory.mkdir(parents=True, exist_ok=True)
    (directory / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def corpus_for(target: str, corpus_root: Path, out_dir: Path) -> Path:
    """Copy the seeds of ``target`` under ``corpus_root`` into ``out_dir`` (prefixed for ``all``)."""
    targets = _ORDER if target == "all" else (target,)
    for name in targets:
        seed_dir = corpus_root / SEED_DIRS[name]
        if not seed_dir.is_dir():
            continue
        for f in sorted(seed_dir.iterdir()):
            data = f.read_bytes()
            _write_blob(out_dir, for_all(name, data) if target == "all" else data)
    return out_dir


def replay(target: str, data: bytes) -> None:
    """Run ``target`` on ``data`` once (crasher regression tests)."""
    TARGETS[target](data)


# ---------------------------------------------------------------------------------------------
# command line


def main(argv: list[str]) -> None:
    """Fuzz one target with atheris (libFuzzer flags and corpus dirs follow the target name)."""
    if len(argv) > 1 and argv[1] == "--write-seeds":
        roots = [SAMPLES]
        if "--realdata" in argv:
            roots.append(Path(argv[argv.index("--realdata") + 1]))
        n = write_seeds(Path(argv[2]), roots)
        print(f"wrote {n} seeds")
        return
    import atheris

    target_name = argv[1]
    with atheris.instrument_imports(include=["kafka_format"]):
        _load()
    target = TARGETS[target_name]
    atheris.Setup([argv[0], *argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    sys.path.insert(0, os.fspath(REPO))
    main(sys.argv)


# ---------------------------------------------------------------------------------------------
# mutations of valid files (shared by the hypothesis tests)

# Offsets inside a framed entry that hypothesis "lies" about (DefaultRecordBatch.java layout).
V2_LAST_OFFSET_DELTA_OFFSET = _V2_ATTRIBUTES_OFFSET + _V2_ATTRIBUTES.size  # 23
V2_COUNT_OFFSET = _V2_RECORDS_OFFSET - _SIZE.size  # 57
_V2_CRC_OFFSET = _MAGIC_OFFSET + 1  # 17
_V2_CRC = struct.Struct(">I")
_LEGACY_CRC_OFFSET = _ENTRY_OVERHEAD  # 12: crc of a magic 0/1 message, over magic..end
#: Values a lying int32 length or count field takes.
LYING_INT32 = (-(1 << 31), -1, 0, 1, 13, 14, 48, 49, 60, 61, 1 << 16, (1 << 31) - 1)


def entry_positions(data: bytes) -> list[tuple[int, int]]:
    """(position, total size) of the complete framed entries of ``data`` (independent walk)."""
    out = []
    pos = 0
    while len(data) - pos > _HEADER_UP_TO_MAGIC:
        (size,) = _SIZE.unpack_from(data, pos + _SIZE_OFFSET)
        if size < _MIN_ENTRY_SIZE or pos + _ENTRY_OVERHEAD + size > len(data):
            break
        out.append((pos, _ENTRY_OVERHEAD + size))
        pos += _ENTRY_OVERHEAD + size
    return out


def fix_crcs(data: bytes) -> bytes:
    """Recompute every entry's CRC (v2 CRC-32C, legacy CRC-32) so mutations reach the records."""
    import zlib

    import crc32c as crc32c_pkg

    buf = bytearray(data)
    for pos, total in entry_positions(data):
        magic = buf[pos + _MAGIC_OFFSET]
        if magic == 2 and total >= _V2_RECORDS_OFFSET:
            crc = crc32c_pkg.crc32c(bytes(buf[pos + _V2_ATTRIBUTES_OFFSET:pos + total]))
            _V2_CRC.pack_into(buf, pos + _V2_CRC_OFFSET, crc)
        elif magic in (0, 1):
            crc = zlib.crc32(bytes(buf[pos + _MAGIC_OFFSET:pos + total]))
            _V2_CRC.pack_into(buf, pos + _LEGACY_CRC_OFFSET, crc)
    return bytes(buf)


def mutate(data: bytes, ops: list[tuple]) -> bytes:  # type: ignore[type-arg]
    """Apply mutation ``ops`` (drawn by the tests) in order.

    ``("flip", i, bit)``, ``("set", i, byte)``, ``("truncate", n)``, ``("insert", i, bytes)``,
    ``("delete", i, n)``, ``("swap", i, j, n)``, ``("length", entry, value)``,
    ``("count", entry, value)``, ``("delta", entry, value)``; indexes are taken modulo the size.
    """
    buf = bytearray(data)
    for op in ops:
        kind = op[0]
        if not buf and kind not in ("insert",):
            continue
        if kind == "flip":
            buf[op[1] % len(buf)] ^= 1 << (op[2] % 8)
        elif kind == "set":
            buf[op[1] % len(buf)] = op[2] & 0xFF
        elif kind == "truncate":
            del buf[len(buf) - op[1] % (len(buf) + 1):]
        elif kind == "insert":
            i = op[1] % (len(buf) + 1)
            buf[i:i] = op[2]
        elif kind == "delete":
            i = op[1] % len(buf)
            del buf[i:i + op[2]]
        elif kind == "swap":
            n = max(1, op[3] % (len(buf) // 2 + 1))
            i, j = sorted((op[1] % len(buf), op[2] % len(buf)))
            if i + n <= j and j + n <= len(buf):
                buf[i:i + n], buf[j:j + n] = buf[j:j + n], buf[i:i + n]
        elif kind in ("length", "count", "delta"):
            entries = entry_positions(bytes(buf))
            if not entries:
                continue
            pos, _total = entries[op[1] % len(entries)]
            field = {"length": _SIZE_OFFSET, "count": V2_COUNT_OFFSET,
                     "delta": V2_LAST_OFFSET_DELTA_OFFSET}[kind]
            if pos + field + _SIZE.size <= len(buf):
                _SIZE.pack_into(buf, pos + field, op[2])
    return bytes(buf)


def log_seeds(roots: list[Path], *, limit: int = MAX_SEED_BYTES, per_root: int = 12) -> list[bytes]:
    """Leading complete entries of the .log files under ``roots`` (cut to ``limit`` bytes)."""
    out: list[bytes] = []
    for root in roots:
        if root.is_dir():
            first_per_dir: dict[Path, Path] = {}
            for p in _glob(root, "*.log", 10_000):
                first_per_dir.setdefault(p.parent, p)
            for p in sorted(first_per_dir.values())[:per_root]:
                out.append(_entries(_head(p, 1 << 20), limit))
    return list(dict.fromkeys(x for x in out if x))
