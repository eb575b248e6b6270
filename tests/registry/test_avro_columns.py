"""The compiled Avro column decoder equals fastavro (the reference) on generated schemas and data:
writer schemas of every Avro type and logical type, reader schemas evolved from them by Avro's
resolution rules (promotions, added fields with defaults, removed and renamed fields, enum symbols
with and without defaults, nullable types, union branches), well-formed and damaged payloads.
Values and problems (row, reason, schema id) must be identical, and the compiled path must carry
the well-formed rows of the tables it lays out."""

from __future__ import annotations

import datetime
import io
import json
import os
import uuid
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from parity import check_parity
from registry_corpus import make_corpus

from kafka_format.registry.avro_columns import available
from kafka_format.registry.store import RegisteredSchema, SchemaStore
from kafka_format.registry.typed import ColumnDecoder, TypedDecodeError, plan_column

pytestmark = pytest.mark.skipif(not available(), reason="the compiled Avro decoder is not built")

PRIMITIVES = ["boolean", "int", "long", "float", "double", "bytes", "string"]
LOGICAL = [
    {"type": "int", "logicalType": "date"},
    {"type": "long", "logicalType": "timestamp-millis"},
    {"type": "long", "logicalType": "timestamp-micros"},
    {"type": "long", "logicalType": "local-timestamp-millis"},
    {"type": "long", "logicalType": "local-timestamp-micros"},
    {"type": "int", "logicalType": "time-millis"},
    {"type": "long", "logicalType": "time-micros"},
    {"type": "string", "logicalType": "uuid"},
    {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
    {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 0},
]
FIELD_NAMES = ["a", "b", "c", "d", "e", "f", "g"]
EXAMPLES = int(os.environ.get("KAFKA_FORMAT_AVRO_EXAMPLES", "300"))  # longer runs: a few thousand


# --- schemas --------------------------------------------------------------------------------------
@st.composite
def schemas(draw: Any, names: list[str], depth: int = 0) -> Any:
    """A writer schema (named types get fresh names from ``names``)."""
    leaf = depth >= 2
    kind = draw(st.sampled_from(
        ["prim"] * 6 + ["logical"] * 2 + ["enum", "fixed", "fixed-decimal"]
        + ([] if leaf else ["record", "array", "map", "nullable", "union", "numbers"])))
    if kind == "prim":
        return draw(st.sampled_from(PRIMITIVES))
    if kind == "logical":
        return dict(draw(st.sampled_from(LOGICAL)))
    if kind in ("enum", "fixed", "fixed-decimal", "record"):
        names.append(f"T{len(names)}")
        name = f"ns.{names[-1]}"
    if kind == "enum":
        symbols = draw(st.lists(st.sampled_from(["A", "B", "C", "D", "E"]), min_size=1, max_size=4, unique=True))
        return {"type": "enum", "name": name, "symbols": symbols}
    if kind == "fixed":
        return {"type": "fixed", "name": name, "size": draw(st.integers(0, 6))}
    if kind == "fixed-decimal":
        return {"type": "fixed", "name": name, "size": 8, "logicalType": "decimal", "precision": 18, "scale": 3}
    if kind == "record":
        fields = draw(st.lists(st.sampled_from(FIELD_NAMES), min_size=0, max_size=4, unique=True))
        return {"type": "record", "name": name,
                "fields": [{"name": f, "type": draw(schemas(names, depth + 1))} for f in fields]}
    if kind == "array":
        return {"type": "array", "items": draw(schemas(names, depth + 1))}
    if kind == "map":
        return {"type": "map", "values": draw(schemas(names, depth + 1))}
    if kind == "nullable":
        inner = draw(schemas(names, depth + 1))
        if isinstance(inner, list):
            return inner
        return ["null", inner] if draw(st.booleans()) else [inner, "null"]
    if kind == "numbers":
        return draw(st.sampled_from([["int", "long"], ["null", "long", "int"], ["float", "double"]]))
    return draw(st.sampled_from([["null", "string", "long"], ["boolean", "double", "bytes"],
                                 ["string", {"type": "array", "items": "int"}], ["null", "int", "string"]]))


def _default_for(schema: Any) -> tuple[bool, Any]:
    """(has a simple default, the default) of a reader field's type."""
    if isinstance(schema, list):
        return (True, None) if schema[0] == "null" else _default_for(schema[0])
    simple = {"boolean": True, "int": -7, "long": 1 << 40, "float": 0.5, "double": -2.25, "string": "dflt",
              "bytes": "\u00ff"}
    if isinstance(schema, str):
        return (schema in simple, simple.get(schema))
    t = schema["type"]
    if t == "enum":
        return True, schema["symbols"][-1]
    if t in ("array", "map"):
        return True, [] if t == "array" else {}
    if t in simple and "logicalType" not in schema:
        return True, simple[t]
    if t in ("int", "long") and schema.get("logicalType") in ("date", "time-millis", "timestamp-millis"):
        return True, 3
    return False, None


@st.composite
def evolved(draw: Any, w: Any, names: dict[str, str]) -> Any:
    """A reader schema resolving ``w`` by Avro's rules (sometimes one that does not resolve)."""
    if isinstance(w, str):
        promotions = {"int": ["int", "long", "float", "double"], "long": ["long", "float", "double"],
                      "float": ["float", "double"], "string": ["string", "bytes"], "bytes": ["bytes", "string"]}
        out = draw(st.sampled_from(promotions.get(w, [w]) + ([w] * 3)))
        if draw(st.integers(0, 19)) == 0:
            out = draw(st.sampled_from(PRIMITIVES))  # often incompatible
        return ["null", out] if draw(st.integers(0, 5)) == 0 else out
    if isinstance(w, list):
        branches = [draw(evolved(b, names)) if not isinstance(b, str) else b for b in w]
        flat = []
        for b in branches:
            for x in (b if isinstance(b, list) else [b]):
                if x not in flat:
                    flat.append(x)
        if "null" not in flat and draw(st.booleans()):
            flat.insert(0, "null")
        return flat
    t = w["type"]
    if t == "record":
        fields = []
        for f in w["fields"]:
            action = draw(st.sampled_from(["keep"] * 4 + ["drop", "rename"]))
            if action == "drop":
                continue
            ftype = draw(evolved(f["type"], names))
            if action == "rename":
                fields.append({"name": f["name"] + "2", "aliases": [f["name"]], "type": ftype})
            else:
                fields.append({"name": f["name"], "type": ftype})
        for extra in draw(st.lists(st.sampled_from(["x", "y"]), max_size=2, unique=True)):
            ftype = draw(st.sampled_from(["int", "string", ["null", "long"], "double", "boolean",
                                          {"type": "array", "items": "long"}, "bytes"]))
            ok, default = _default_for(ftype)
            fields.append({"name": extra, "type": ftype, **({"default": default} if ok and draw(st.integers(0, 6)) else {})})
        order = draw(st.permutations(range(len(fields))))
        return {**w, "fields": [fields[i] for i in order]}
    if t == "enum":
        symbols = list(w["symbols"])
        if len(symbols) > 1 and draw(st.booleans()):
            symbols.pop(draw(st.integers(0, len(symbols) - 1)))
        if draw(st.booleans()):
            symbols.append("Z")
        out = {**w, "symbols": symbols}
        if draw(st.booleans()):
            out["default"] = symbols[0]
        return out
    if t == "array":
        return {**w, "items": draw(evolved(w["items"], names))}
    if t == "map":
        return {**w, "values": draw(evolved(w["values"], names))}
    if "logicalType" in w and draw(st.integers(0, 9)) == 0:
        return w["type"]  # the table drops the logical type
    return w


# --- data -----------------------------------------------------------------------------------------
def values(schema: Any, named: dict[str, Any]) -> Any:
    """A strategy of values fastavro's writer takes for ``schema``."""
    if isinstance(schema, str) and schema in named:
        return values(named[schema], named)
    if isinstance(schema, list):
        return st.one_of(*[values(b, named) for b in schema])
    prim = {
        "null": st.none(), "boolean": st.booleans(), "int": st.integers(-(2**31), 2**31 - 1),
        "long": st.integers(-(2**63), 2**63 - 1), "float": st.floats(width=32), "double": st.floats(),
        "bytes": st.binary(max_size=8), "string": st.text(max_size=6),
    }
    if isinstance(schema, str):
        return prim[schema]
    t, logical = schema["type"], schema.get("logicalType")
    if logical == "date":
        return st.integers(-800_000, 3_000_000)
    if logical in ("timestamp-millis", "local-timestamp-millis"):
        return st.integers(-70_000_000_000_000, 260_000_000_000_000)
    if logical in ("timestamp-micros", "local-timestamp-micros"):
        return st.integers(-(2**62), 2**62)
    if logical == "time-millis":
        return st.integers(-5, 90_000_000)
    if logical == "time-micros":
        return st.integers(-5, 90_000_000_000)
    if logical == "uuid":
        return st.one_of(st.uuids().map(str), st.uuids().map(lambda u: str(u).upper()), st.text(max_size=4),
                         st.uuids().map(lambda u: u.hex))
    if logical == "decimal" and t == "bytes":
        return st.binary(max_size=18)
    if logical == "decimal":
        return st.binary(min_size=schema["size"], max_size=schema["size"])
    if t == "enum":
        return st.sampled_from(schema["symbols"])
    if t == "fixed":
        return st.binary(min_size=schema["size"], max_size=schema["size"])
    if t == "record":
        return st.fixed_dictionaries({f["name"]: values(f["type"], named) for f in schema["fields"]})
    if t == "array":
        return st.lists(values(schema["items"], named), max_size=3)
    if t == "map":
        return st.dictionaries(st.text(max_size=3), values(schema["values"], named), max_size=3)
    return prim[t]


def encode(schema: Any, value: Any) -> bytes | None:
    from fastavro import parse_schema, schemaless_writer

    buf = io.BytesIO()
    try:
        schemaless_writer(buf, parse_schema(schema), value)
    except Exception:  # noqa: BLE001 - a value fastavro's writer refuses (e.g. raw ints it checks)
        return None
    return buf.getvalue()


def _named(schema: Any, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(schema, list):
        for b in schema:
            _named(b, out)
    elif isinstance(schema, dict):
        if schema.get("type") in ("record", "enum", "fixed"):
            out[schema["name"]] = schema
        for f in schema.get("fields", []):
            _named(f["type"], out)
        for k in ("items", "values"):
            if k in schema:
                _named(schema[k], out)
    return out


@st.composite
def cases(draw: Any) -> tuple[Any, Any, list[bytes | None]]:
    names: list[str] = []
    top = {"type": "record", "name": "ns.Top",
           "fields": [{"name": f, "type": draw(schemas(names))}
                      for f in draw(st.lists(st.sampled_from(FIELD_NAMES), min_size=1, max_size=5, unique=True))]}
    if draw(st.integers(0, 7)) == 0:
        top = draw(schemas(names))  # a value that is not a record
    reader = None if draw(st.integers(0, 3)) == 0 else draw(evolved(top, {}))
    rows: list[bytes | None] = []
    for value in draw(st.lists(values(top, _named(top, {})), min_size=1, max_size=8)):
        payload = encode(top, value)
        if payload is None:
            continue
        damage = draw(st.integers(0, 9))
        if damage == 0 and payload:
            payload = payload[: draw(st.integers(0, len(payload) - 1))]
        elif damage == 1 and payload:
            i = draw(st.integers(0, len(payload) - 1))
            payload = payload[:i] + bytes([draw(st.integers(0, 255))]) + payload[i + 1 :]
        elif damage == 2:
            payload += draw(st.binary(min_size=1, max_size=3))  # trailing bytes are ignored
        rows.append(b"\x00\x00\x00\x00\x01" + payload)
    rows.append(None)
    return top, reader, rows


def decoders(writer: Any, reader: Any) -> tuple[ColumnDecoder, ColumnDecoder]:
    store = SchemaStore.from_schemas([RegisteredSchema("t-value", 1, 1, json.dumps(writer), "AVRO")])
    plan = plan_column(store, "value", "avro", subject="t-value",
                       reader_schema=None if reader is None else json.dumps(reader))
    return ColumnDecoder(plan), ColumnDecoder(plan, compiled=False)


def test_compiled_columns_equal_fastavro_on_generated_schemas_and_data() -> None:
    seen: Counter[str] = Counter()

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(cases())
    def check(case: tuple[Any, Any, list[bytes | None]]) -> None:
        writer, reader, rows = case
        try:
            fast, ref = decoders(writer, reader)
        except TypedDecodeError:
            assume(False)  # a table schema with no table type (the reference refuses it too)
        check_parity(fast, ref, pa.array(rows, pa.binary()))
        seen["rows"] += len(rows) - 1
        seen["compiled"] += fast.rows["compiled"]
        seen["laid out"] += fast._fast is not None

    check()
    assert seen["laid out"] > 0 and seen["compiled"] > seen["rows"] // 3, seen


# --- fixed cases ----------------------------------------------------------------------------------
KITCHEN_SINK = {
    "type": "record", "name": "Sink", "namespace": "t",
    "fields": [
        {"name": "flag", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "b", "type": "bytes"},
        {"name": "s", "type": "string"},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}},
        {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": ["null", "long"]}},
        {"name": "either", "type": ["null", "string", "long"]},
        {"name": "num", "type": ["int", "long"]},
        {"name": "inner", "type": ["null", {"type": "record", "name": "In", "fields": [{"name": "z", "type": "t.E"}]}]},
    ],
}


def sink_values() -> list[dict[str, Any]]:
    import datetime as dt
    from decimal import Decimal

    out = []
    for i in range(40):
        out.append({
            "flag": i % 2 == 0, "i": i - 20, "l": i * 10**12, "f": i / 3, "d": -i / 7, "b": bytes([i]) * (i % 3),
            "s": "é" * (i % 4), "e": "XY"[i % 2], "fx": bytes(4), "day": dt.date(2020, 1, 1) + dt.timedelta(days=i),
            "ts": dt.datetime(2024, 5, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=i),
            "lts": dt.datetime(2024, 5, 1) + dt.timedelta(microseconds=i), "tm": dt.time(1, 2, 3, i * 1000),
            "id": uuid.UUID(int=i), "amount": Decimal(i) / 4, "tags": ["t"] * (i % 3),
            "attrs": {f"k{j}": (None if j % 2 else j) for j in range(i % 4)},
            "either": [None, "s", 5][i % 3], "num": i, "inner": None if i % 2 else {"z": "Y"},
        })
    return out


def sink_decoder(reader: Any = None) -> tuple[ColumnDecoder, ColumnDecoder, pa.Array]:
    from fastavro import parse_schema, schemaless_writer

    parsed = parse_schema(KITCHEN_SINK)
    rows = []
    for v in sink_values():
        buf = io.BytesIO()
        schemaless_writer(buf, parsed, v)
        rows.append(b"\x00\x00\x00\x00\x01" + buf.getvalue())
    fast, ref = decoders(KITCHEN_SINK, reader)
    return fast, ref, pa.array(rows, pa.binary())


@pytest.mark.parametrize("evolve", [False, True])
def test_every_supported_type_takes_the_compiled_path(evolve: bool) -> None:
    reader = None
    if evolve:
        fields = [dict(f) for f in KITCHEN_SINK["fields"]]
        fields[1]["type"] = "double"  # int -> double
        fields[2]["type"] = ["null", "float"]  # long -> float, nullable
        fields[6]["type"] = "bytes"  # string -> bytes
        fields.append({"name": "added", "type": "string", "default": "new"})
        reader = {**KITCHEN_SINK, "fields": [f for f in fields if f["name"] != "fx"]}
    fast, ref, arr = sink_decoder(reader)
    _, problems = check_parity(fast, ref, arr)
    assert problems == []
    assert fast.rows == {"compiled": len(arr), "reference": 0}


def test_rows_it_is_not_sure_of_go_to_fastavro() -> None:
    """A map whose keys repeat (a Python dict keeps the last value), a damaged row and a date out
    of datetime's range: decoded or reported by fastavro, the rest compiled."""
    writer = {"type": "record", "name": "R", "fields": [
        {"name": "m", "type": {"type": "map", "values": "int"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}}]}
    good = b"\x04\x02a\x02\x02b\x04\x00\x02"  # {a: 1, b: 2}, day 1
    repeated = b"\x04\x02a\x02\x02a\x04\x00\x02"  # {a: 1, a: 2}
    far = b"\x00\xfe\xff\xff\x0f"  # day 2**31 - 1: beyond date.max
    fast, ref = decoders(writer, None)
    rows = pa.array([b"\x00\x00\x00\x00\x01" + p for p in (good, repeated, far, good[:3])], pa.binary())
    got, problems = fast.decode(rows)
    want, want_problems = ref.decode(rows)
    assert got.to_pylist()[:2] == want.to_pylist()[:2] == [
        {"m": [("a", 1), ("b", 2)], "day": __import__("datetime").date(1970, 1, 2)},
        {"m": [("a", 2)], "day": __import__("datetime").date(1970, 1, 2)},
    ]
    assert problems == want_problems and [p.row for p in problems] == [2, 3]
    assert fast.rows == {"compiled": 1, "reference": 3}


def test_registry_corpus_evolution_is_compiled(tmp_path: Any) -> None:
    """confluent-kafka's serializer bytes, v1 (int qty) and v2 (long qty, nullable note), shop.Money
    referenced: every row compiled, equal to fastavro."""
    from kafka_format.registry import schemas_from_log_dirs

    c = make_corpus(tmp_path / "a", "avro", n1=4, n2=5)
    plan = plan_column(schemas_from_log_dirs([str(c.root)]), "value", "avro", topic="orders")
    fast, ref = ColumnDecoder(plan), ColumnDecoder(plan, compiled=False)
    arr = pa.array(c.wire, pa.binary())
    check_parity(fast, ref, arr)
    assert fast.rows == {"compiled": 9, "reference": 0}


def zigzag_varint(v: int) -> bytes:
    """Avro's encoding of long ``v`` (zig-zag, then seven bits a byte, low first), written here."""
    n = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not out[-1] & 0x80:
            return bytes(out)


# Zig-zag puts [-2**(7k-1), 2**(7k-1)) in varints of k bytes or fewer: each length's edges.
LONG_EDGES = sorted({e for k in range(1, 11) for half in [1 << (7 * k - 1)]
                     for e in (half - 1, half, -half, -half - 1) if -(1 << 63) <= e < (1 << 63)})


@pytest.mark.parametrize("last", [False, True], ids=["string after", "long last"])
def test_longs_of_every_varint_length_equal_fastavro(last: bool) -> None:
    """Longs at each edge of a varint's length (1 to 10 bytes), followed by a string and at the
    payload's end, and timestamps in millis at the ends of datetime's range and past them: all
    compiled (but the out-of-range ones), equal to fastavro; varints of 11 bytes, or a 10th byte
    above the 64th bit, are left to it."""
    fields = [{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
              {"name": "s", "type": "string"}, {"name": "l", "type": "long"}]
    writer = {"type": "record", "name": "V", "fields": fields if last else fields[::-1]}
    fast, ref = decoders(writer, None)
    millis = [-62135596800000, -62135596800001, 253402300799999, 253402300800000, 1_700_000_000_000, 0]
    payloads = []
    for i, v in enumerate(LONG_EDGES):
        ts, s, lv = zigzag_varint(millis[i % len(millis)]), b"\x10abcdefgh", zigzag_varint(v)
        payloads.append(ts + s + lv if last else lv + s + ts)
    bad = [b"\xff" * 10 + b"\x01", b"\xff" * 9 + b"\x02"]   # 11 bytes; a 65th bit
    payloads += [p + b"\x10abcdefgh" + zigzag_varint(0) for p in bad] if not last else []
    arr = pa.array([b"\x00\x00\x00\x00\x01" + p for p in payloads], pa.binary())
    got, problems = check_parity(fast, ref, arr)
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    fits = [-62135596800000 <= millis[i % len(millis)] <= 253402300799999 for i in range(len(LONG_EDGES))]
    assert got[: len(LONG_EDGES)] == [
        {"l": v, "s": "abcdefgh", "ts": epoch + datetime.timedelta(milliseconds=millis[i % len(millis)])}
        if fits[i] else None for i, v in enumerate(LONG_EDGES)]
    assert [p.row for p in problems][: fits.count(False)] == [i for i, ok in enumerate(fits) if not ok]
    assert fast.rows == {"compiled": fits.count(True), "reference": fits.count(False) + (0 if last else 2)}


def test_a_union_the_reference_guesses_is_left_to_it() -> None:
    """["null", "int", "long", "string"]: the reference tells int from long by the value, so the
    table is not compiled and fastavro decodes every row."""
    writer = {"type": "record", "name": "R", "fields": [{"name": "u", "type": ["null", "int", "long", "string"]}]}
    fast, _ = decoders(writer, None)
    rows = pa.array([b"\x00\x00\x00\x00\x01" + p for p in (b"\x02\x04", b"\x04\x04", b"\x06\x02x")], pa.binary())
    got, problems = fast.decode(rows)
    assert problems == [] and fast._fast is None and fast.rows["reference"] == 3
    assert [r["u"] for r in got.to_pylist()] == [
        {"member0": 2, "member1": None, "member2": None},
        {"member0": 2, "member1": None, "member2": None},
        {"member0": None, "member1": None, "member2": "x"},
    ]


def test_a_program_that_does_not_fit_its_columns_is_refused() -> None:
    """The C decoder checks every node against the columns before it runs one (a program naming a
    column of the wrong kind, a child out of range, a cycle between columns is a ValueError)."""
    import numpy as np

    from kafka_format.registry import _avrocolumns
    from kafka_format.registry import avro_columns as ac
    from kafka_format.registry.avro_layout import K_FIXED, K_LIST, K_STRUCT

    cols = ((K_STRUCT, 0, (1,), 1), (K_FIXED, 8, (), 1))
    data, offsets = b"\x00\x00\x00\x00\x01\x02", np.array([0, 6], np.int32).tobytes()

    def run(nodes: list[tuple[int, ...]], kids: list[int], columns: Any = cols) -> Any:
        program = (np.array(nodes, np.int32).tobytes(), np.array(kids, np.int32).tobytes(), ())
        return _avrocolumns.decode((program,), columns, 0, data, offsets, 0, 0, 1, None,
                                   np.array([1], np.int32).tobytes(), np.array([0], np.int32).tobytes())

    outs, status, _ = run([(ac.RECORD, 0, 0, 1, 0, 0), (ac.INT64, 1, 0, 0, 0, 0)], [1])
    assert bytes(status) == b"\x00" and np.frombuffer(outs[1][2], np.int64).tolist() == [1]
    for nodes, kids in (
        ([(ac.RECORD, 0, 0, 1, 0, 0), (ac.BYTES, 1, 0, 0, 0, 0)], [1]),  # bytes into a fixed-width column
        ([(ac.RECORD, 0, 0, 2, 0, 0), (ac.INT64, 1, 0, 0, 0, 0)], [1]),  # more children than kids
        ([(ac.INT32, 1, 0, 0, 0, 0)], []),  # an int32 into an 8-byte column
        ([(99, 0, 0, 0, 0, 0)], []),  # no such op
        ([], []),  # no node for the row
        ([(ac.MEMBER, 0, 1, 1, 0, 0), (ac.INT64, 1, 0, 0, 0, 0)], []),  # member 1 of a one-child struct
        ([(ac.MEMBER, 0, 0, 2, 0, 0), (ac.INT64, 1, 0, 0, 0, 0)], []),  # a member node out of range
        ([(ac.SKIP_ARRAY, -1, 1, 0, 0, 0)], []),  # an item node out of range
        ([(ac.SKIP_MAP, -1, -1, 0, 0, 0)], []),  # a map value node out of range
    ):
        with pytest.raises(ValueError, match="malformed"):
            run(nodes, kids)
    list_cols = ((K_LIST, 0, (1,), 1), (K_FIXED, 8, (), 0))
    with pytest.raises(ValueError, match="malformed"):  # the checks are made before any row runs
        run([(ac.ARRAY, 0, 2, 0, 0, 0), (ac.INT64, 1, 0, 0, 0, 0)], [], list_cols)
    outs, status, _ = run([(ac.ARRAY, 0, 1, 0, 0, 0), (ac.INT64, 1, 0, 0, 0, 0)], [], list_cols)
    assert bytes(status) == b"\x05"  # the payload (1, 2) is no array of longs: the reference decides
    with pytest.raises(ValueError, match="column child"):
        run([(ac.NOP, -1, 0, 0, 0, 0)], [], ((K_STRUCT, 0, (0,), 1),))  # a column its own child
