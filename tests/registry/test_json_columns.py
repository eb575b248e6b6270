"""The compiled JSON Schema column decoder equals the reference (``json.loads``, then the table
schema's types) on generated schemas and documents: objects, maps (``additionalProperties``),
arrays, strings, integers, numbers, booleans, nullable types, ``$ref``, positions typed as JSON text;
documents that fit, drift from the schema (absent, extra and mistyped properties, integral floats,
big numbers, NaN and Infinity), are spelled in every way the grammar allows (whitespace, escapes,
surrogate pairs, exponents) or are damaged (duplicate keys, lone surrogates, bad UTF-8, truncation,
a byte-order mark).  Values and problems must be identical, and the compiled path must carry most
documents that fit."""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from parity import check_parity
from registry_corpus import make_corpus

from kafka_format.registry.json_columns import available
from kafka_format.registry.store import RegisteredSchema, SchemaStore
from kafka_format.registry.typed import ColumnDecoder, TypedDecodeError, plan_column

pytestmark = pytest.mark.skipif(not available(), reason="the compiled JSON Schema decoder is not built")

EXAMPLES = int(os.environ.get("KAFKA_FORMAT_JSON_EXAMPLES", "100"))  # longer runs: a few thousand
HEADER = b"\x00\x00\x00\x00\x01"
NAMES = ["id", "qty", "n", "é", "a b", 'q"t', "x\\y", "\u00e9t\u00e9", "k\U0001f600", ""]


# --- schemas --------------------------------------------------------------------------------------
@st.composite
def schemas(draw: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    kinds = ["string", "integer", "number", "boolean"] * 2 + ["nullable", "text"]
    if depth < 3:
        kinds += ["object"] * 3 + ["map", "array", "ref"]
    kind = draw(st.sampled_from(kinds))
    if kind in ("string", "integer", "number", "boolean"):
        return {"type": kind}
    if kind == "nullable":
        inner = draw(schemas(defs, depth + 1))
        simple = isinstance(inner, dict) and isinstance(inner.get("type"), str) and len(inner) == 1
        return draw(st.sampled_from([{"type": ["null", inner["type"]]} if simple else {"oneOf": [{"type": "null"}, inner]},
                                     {"anyOf": [inner, {"type": "null"}]}]))
    if kind == "text":
        return draw(st.sampled_from([{}, {"type": ["string", "integer"]}, {"type": "array"}, True]))
    if kind == "object":
        names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=5, unique=True))
        return {"type": "object", "properties": {n: draw(schemas(defs, depth + 1)) for n in names}}
    if kind == "map":
        return {"type": "object", "additionalProperties": draw(schemas(defs, depth + 1))}
    if kind == "array":
        return {"type": "array", "items": draw(schemas(defs, depth + 1))}
    name = f"D{len(defs)}"
    defs[name] = {}  # the name taken before the definition is drawn (which may add its own)
    defs[name] = draw(schemas(defs, depth + 1))
    return {"$ref": f"#/definitions/{name}"}


@st.composite
def table_schemas(draw: Any) -> dict[str, Any]:
    defs: dict[str, Any] = {}
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=6, unique=True))
    top: dict[str, Any] = {"type": "object", "properties": {n: draw(schemas(defs)) for n in names}}
    if draw(st.integers(0, 7)) == 0:
        top = draw(schemas(defs))  # a value that is not an object
        if not isinstance(top, dict):
            top = {"type": "string"}
    if defs:
        top["definitions"] = defs
    return top


# --- documents ------------------------------------------------------------------------------------
def resolve(s: Any, root: dict[str, Any]) -> Any:
    while isinstance(s, dict) and "$ref" in s:
        s = root["definitions"][s["$ref"].rsplit("/", 1)[1]]
    return s


@st.composite
def values(draw: Any, s: Any, root: dict[str, Any], depth: int = 0) -> Any:
    """A value for schema ``s``, usually fitting it, sometimes drifting from it."""
    s = resolve(s, root)
    if draw(st.integers(0, 15)) == 0 or depth > 6:
        return draw(anything())
    if not isinstance(s, dict):
        return draw(anything())
    for key in ("oneOf", "anyOf"):
        if key in s:
            rest = [b for b in s[key] if not (isinstance(b, dict) and b.get("type") == "null")]
            return None if draw(st.integers(0, 3)) == 0 else draw(values(rest[0], root, depth + 1))
    t = s.get("type")
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        if draw(st.integers(0, 3)) == 0 or len(rest) != 1:
            return None if draw(st.booleans()) else draw(anything())
        t = rest[0]
    if t == "object" and "properties" in s:
        out = {}
        for name, sub in s["properties"].items():
            if draw(st.integers(0, 5)):
                out[name] = draw(values(sub, root, depth + 1))
        if draw(st.integers(0, 5)) == 0:
            out["extra"] = draw(anything())
        return out
    if t == "object" and "additionalProperties" in s:
        return draw(st.dictionaries(st.text(max_size=3), values(s["additionalProperties"], root, depth + 1), max_size=3))
    if t == "array" and "items" in s:
        return draw(st.lists(values(s["items"], root, depth + 1), max_size=3))
    if t == "string":
        return draw(st.text(max_size=6))
    if t == "integer":
        return draw(st.one_of(st.integers(-5, 5), st.integers(-(2**63), 2**63 - 1), st.integers(-(2**70), 2**70),
                              st.sampled_from([1.0, -0.0, 1e2, 2.5, 9.3e18, -9.223372036854775808e18])))
    if t == "number":
        return draw(st.one_of(st.floats(), st.integers(-(2**64), 2**64), st.sampled_from([0, -0.0, 10**400])))
    if t == "boolean":
        return draw(st.booleans())
    return draw(anything())


def anything() -> Any:
    leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=4))
    return st.recursive(leaf, lambda inner: st.one_of(st.lists(inner, max_size=2),
                                                      st.dictionaries(st.text(max_size=2), inner, max_size=2)),
                        max_leaves=4)


@st.composite
def spelled(draw: Any, v: Any) -> str:
    """JSON text of ``v`` as a writer might spell it: whitespace, escapes, number forms, NaN."""
    def ws() -> str:
        return draw(st.sampled_from(["", "", "", " ", "\n  ", "\t", "\r\n"]))

    if v is None or isinstance(v, bool):
        return json.dumps(v)
    if isinstance(v, int):
        if abs(v) < 1000 and draw(st.integers(0, 5)) == 0:
            return draw(st.sampled_from([f"{v}.0", f"{v}e0", f"{v}E+0", f"{v * 10}e-1"]))
        return str(v)
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return json.dumps(v)
        return draw(st.sampled_from([repr(v), f"{v:.17g}", f"{v:e}", json.dumps(v)])).replace("inf", "Infinity")
    if isinstance(v, str):
        out = []
        for ch in v:
            c = ord(ch)
            how = draw(st.integers(0, 7))
            if ch in '"\\' or c < 0x20:
                out.append(json.dumps(ch)[1:-1])
            elif how == 0 and c < 0x10000:
                out.append(f"\\u{c:04x}" if draw(st.booleans()) else f"\\u{c:04X}")
            elif how == 0:
                hi, lo = 0xD800 + ((c - 0x10000) >> 10), 0xDC00 + ((c - 0x10000) & 0x3FF)
                out.append(f"\\u{hi:04x}\\u{lo:04x}")
            elif how == 1 and ch == "/":
                out.append("\\/")
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'
    if isinstance(v, list):
        return "[" + ws() + ("," + ws()).join(draw(spelled(x)) for x in v) + ws() + "]"
    items = [(k, draw(spelled(x))) for k, x in v.items()]
    if items and draw(st.integers(0, 9)) == 0:
        items.append(items[0])  # a key twice: the last one wins in json.loads
    return "{" + ws() + ("," + ws()).join(
        draw(spelled(k)) + ws() + ":" + ws() + x for k, x in items) + ws() + "}"


@st.composite
def cases(draw: Any) -> tuple[dict[str, Any], list[bytes | None]]:
    schema = draw(table_schemas())
    rows: list[bytes | None] = []
    for _ in range(draw(st.integers(1, 6))):
        text = draw(st.sampled_from(["", " ", "\n"])) + draw(spelled(draw(values(schema, schema)))) + draw(
            st.sampled_from(["", "", " \n"]))
        raw = text.encode("utf-8", "surrogatepass")
        damage = draw(st.integers(0, 14))
        if damage == 0 and raw:
            raw = raw[: draw(st.integers(0, len(raw) - 1))]
        elif damage == 1 and raw:
            i = draw(st.integers(0, len(raw) - 1))
            raw = raw[:i] + bytes([draw(st.integers(0, 255))]) + raw[i + 1 :]
        elif damage == 2:
            raw = draw(st.sampled_from([b"\xef\xbb\xbf", b'"\\ud800"', b"\xed\xa0\x80", b"x", b""])) + raw
        rows.append(HEADER + raw)
    rows.append(None)
    return schema, rows


def decoders(schema: Any) -> tuple[ColumnDecoder, ColumnDecoder]:
    store = SchemaStore.from_schemas([RegisteredSchema("t-value", 1, 1, json.dumps(schema), "JSON")])
    plan = plan_column(store, "value", "json-schema", subject="t-value")
    return ColumnDecoder(plan), ColumnDecoder(plan, compiled=False)


def test_compiled_columns_equal_json_loads_on_generated_schemas_and_documents() -> None:
    seen: Counter[str] = Counter()

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(cases())
    def check(case: tuple[dict[str, Any], list[bytes | None]]) -> None:
        schema, rows = case
        try:
            fast, ref = decoders(schema)
        except TypedDecodeError:
            assume(False)
        _, problems = check_parity(fast, ref, pa.array(rows, pa.binary()))
        seen["rows"] += len(rows) - 1
        seen["fit"] += len(rows) - 1 - len(problems)
        seen["compiled"] += fast.rows["compiled"]
        seen["laid out"] += fast._fast is not None

    check()
    assert seen["laid out"] > EXAMPLES // 2 and seen["compiled"] > seen["fit"] // 2, seen


# --- fixed cases ----------------------------------------------------------------------------------
SINK = {
    "type": "object",
    "definitions": {"money": {"type": "object", "properties": {"currency": {"type": "string"},
                                                               "units": {"type": "integer"}}}},
    "properties": {
        "id": {"type": "string"}, "qty": {"type": "integer"}, "price": {"type": "number"},
        "ok": {"type": "boolean"}, "total": {"$ref": "#/definitions/money"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "attrs": {"type": "object", "additionalProperties": {"type": ["null", "integer"]}},
        "lines": {"type": "array", "items": {"$ref": "#/definitions/money"}},
        "note": {"oneOf": [{"type": "null"}, {"type": "string"}]}, "any": {},
    },
}


def test_every_kind_takes_the_compiled_path() -> None:
    fast, ref = decoders(SINK)
    docs = []
    for i in range(30):
        doc = {"id": f"o{i}\u00e9\U0001f600", "qty": i - 15, "price": i / 7, "ok": i % 2 == 0,
               "total": {"currency": "EUR", "units": i * 100}, "tags": ["a", "b\n"][: i % 3],
               "attrs": {f"k{j}": (None if j % 2 else j) for j in range(i % 4)},
               "lines": [{"currency": "USD", "units": -i}] * (i % 2), "note": None if i % 2 else "n",
               "unknown": {"deep": [1, {"x": None}]}}
        text = json.dumps(doc, ensure_ascii=i % 2 == 0, indent=2 if i % 3 == 0 else None)
        docs.append(HEADER + text.encode())
    arr = pa.array(docs, pa.binary())
    values, problems = check_parity(fast, ref, arr)
    assert problems == [] and fast.rows == {"compiled": 30, "reference": 0}
    assert values[2]["id"] == "o2\u00e9\U0001f600" and values[2]["attrs"] == [("k0", 0), ("k1", None)]


def test_rows_it_is_not_sure_of_go_to_json_loads() -> None:
    """A property twice (json.loads keeps the last), a value in a JSON-text position, a byte-order
    mark: decoded by the reference; a string where an integer is declared, a lone surrogate, bad
    UTF-8: the reference's errors; the rest (integral floats for an integer, ints for a number,
    -0 read as 0.0) compiled."""
    fast, ref = decoders(SINK)
    docs = [b'{"qty": 1}', b'{"qty": 1, "qty": 2}', b'{"qty": 2.0, "price": 1}', b'{"any": [1, 2.5]}',
            b'\xef\xbb\xbf{"qty": 3}', b'{"qty": "3"}', b'{"id": "\\ud800"}', b'{"id": "\xff"}',
            b'{"qty": 1e2, "price": -0, "note": null}']
    arr = pa.array([HEADER + d for d in docs], pa.binary())
    values, problems = check_parity(fast, ref, arr)
    assert [p.row for p in problems] == [5, 6, 7]
    assert [v["qty"] for v in values if v] == [1, 2, 2, None, 3, 100]
    assert values[3]["any"] == "[1,2.5]" and values[8]["price"] == 0.0
    assert fast.rows["compiled"] == 3


def test_bytes_above_ascii_are_checked_in_the_strings_that_hold_them() -> None:
    """UTF-8 is checked in strings (values, names, skipped values, map keys) and nowhere else: a
    byte above 0x7f outside a string is not JSON.  Good multi-byte text anywhere compiles; bad or
    surrogate-encoding bytes anywhere give the reference's errors."""
    fast, ref = decoders(SINK)
    good = ['{"id": "\u00e9\u20ac\U0001f600"}', '{"attrs": {"\u00e9": 1}}', '{"\u00e9x": "\u20ac", "qty": 1}',
            '{"unknown": ["\u00e9", {"\u20ac": "\U0001f600"}], "qty": 2}', '{"tags": ["a\u00e9", "\u20ac"]}']
    bad = [b'{"id": "a\xff"}', b'{"\xffx": 1}', b'{"unknown": "\xc3"}', b'{"attrs": {"\xe2\x82": 1}}',
           b'{"tags": ["\xed\xa0\x80"]}', b'{"qty": 1}\xc3\xa9', b'{"qty":\xc2\xa01}', b'{"note": "\xf4\x90\x80\x80"}']
    docs = [HEADER + d.encode() for d in good] + [HEADER + d for d in bad]
    values, problems = check_parity(fast, ref, pa.array(docs, pa.binary()))
    assert fast.rows["compiled"] == len(good)
    assert [p.row for p in problems] == list(range(len(good), len(docs)))
    assert values[0]["id"] == "\u00e9\u20ac\U0001f600" and values[1]["attrs"] == [("\u00e9", 1)]


@pytest.mark.parametrize("literal", [
    "0", "-0", "7", "-7", "999999999999999999", "-999999999999999999", "1000000000000000000",
    "9223372036854775807", "-9223372036854775808", "9223372036854775808", "9007199254740993",
    "0.5", "-0.0", "0.000000000000001", "12345678901234.5", "123456789012345.6", "1234567890123456.5",
    "0.1000000000000000055511151231257827", "2.50", "1.0", "-1.0", "1e2", "1.5e3", "1E-2", "00", "01",
    "1.", "-", "-a", ".5", "1.e3", "0.1234567890123456789",
    # 16-19 significant digits and powers of ten up to 27 (exact integer arithmetic), and past them
    "1369.9999999999998", "0.30000000000000004", "1.2345678901234567e-05", "9007199254740995",
    "9007199254740992.5", "1234567890123456789e27", "1234567890123456789e-27", "1234567890123456789e28",
    "1234567890123456789e-28", "12345678901234567890", "0.12345678901234567890", "-2.2250738585072014e-308",
])
def test_numbers_read_in_one_pass_equal_the_reference(literal: str) -> None:
    """Integers of up to 18 digits and fractions of up to 15 are read in one pass; around those
    bounds (and for exponents, leading zeros, a dot without digits), into an integer and a number
    column, the values and errors are the reference's."""
    fast, ref = decoders(SINK)
    docs = [HEADER + f'{{"qty": {literal}}}'.encode(), HEADER + f'{{"price": {literal}}}'.encode()]
    values, _ = check_parity(fast, ref, pa.array(docs, pa.binary()))
    try:
        number = json.loads(literal)
    except ValueError:
        return
    assert math.copysign(1, values[1]["price"]) == math.copysign(1, float(number))  # -0.0 stays -0.0
    integral = isinstance(number, int) or number.is_integer()
    qty_fits = integral and -(2**63) <= number < 2**63          # else the reference words the error
    assert fast.rows == {"compiled": 1 + qty_fits, "reference": 1 - qty_fits}


def test_long_numbers_are_rounded_as_float_rounds_them() -> None:
    """Numbers of up to 19 significant digits with powers of ten up to 27 are read in integers
    (one 128-bit product or quotient, then rounded to 53 bits, ties to even): the reprs of random
    doubles, random literals of 1-20 digits with exponents to +-35, and literals a hair below and
    above the midpoints between doubles give float()'s double, bit for bit, all compiled."""
    import random
    import struct
    from fractions import Fraction

    rng = random.Random(20261127)
    literals = []
    while len(literals) < 20_000:
        kind = rng.random()
        if kind < 0.4:
            f = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
            if math.isfinite(f):
                literals.append(repr(f))
        elif kind < 0.6:
            literals.append(repr(rng.uniform(-1e6, 1e6) * rng.choice([1, 1e-10, 1e10, 1.37])))
        else:
            digits = rng.randint(1, 20)
            text = str(rng.randrange(10 ** (digits - 1), 10**digits))
            at = rng.randint(0, len(text))
            exponent = f"e{rng.randint(-35, 35)}" if rng.random() < 0.5 else ""
            literals.append(f"{text[:at] or '0'}.{text[at:] or '0'}{exponent}")
    # the 19-digit literals just below and just above the midpoint of two neighbouring doubles:
    # where the quotient's cut bits are a half and only the remainder says which way
    for _ in range(3_000):
        x = rng.uniform(1, 10) * 10 ** rng.randint(-8, 8)
        mid = (Fraction(x) + Fraction(math.nextafter(x, math.inf))) / 2
        k = 18 - math.floor(math.log10(mid))
        below = math.floor(mid * 10**k)
        literals += [f"{below}e{-k}", f"{below + 1}e{-k}"]
    schema = {"type": "object", "properties": {"x": {"type": "number"}}}
    fast, _ = decoders(schema)
    got, problems = fast.decode(pa.array([HEADER + f'{{"x": {lit}}}'.encode() for lit in literals], pa.binary()))
    bits = [struct.pack("<d", row["x"]) for row in got.to_pylist()]
    assert bits == [struct.pack("<d", float(lit)) for lit in literals]
    assert problems == [] and fast.rows == {"compiled": len(literals), "reference": 0}


def test_registry_corpus_is_compiled(tmp_path: Any) -> None:
    """confluent-kafka's JSONSerializer bytes, v1 and v2 (a nullable note added): every row compiled."""
    from kafka_format.registry import schemas_from_log_dirs

    c = make_corpus(tmp_path / "j", "json-schema", n1=4, n2=5)
    plan = plan_column(schemas_from_log_dirs([str(c.root)]), "value", "json-schema", topic="orders")
    fast, ref = ColumnDecoder(plan), ColumnDecoder(plan, compiled=False)
    check_parity(fast, ref, pa.array(c.wire, pa.binary()))
    assert fast.rows == {"compiled": 9, "reference": 0}


def test_a_program_that_does_not_fit_its_columns_is_refused() -> None:
    """The C decoder checks every node against the columns before it runs one."""
    import numpy as np

    from kafka_format.registry import _jsoncolumns
    from kafka_format.registry import json_columns as jc
    from kafka_format.registry.columns import K_FIXED, K_STRUCT, K_VAR

    cols = ((K_STRUCT, 0, (1,), 1), (K_FIXED, 8, (), 1))
    data = HEADER + b'{"a": 7}'
    offsets = np.array([0, len(data)], np.int32).tobytes()
    table = jc.name_table(["a"])

    def run(nodes: list[tuple[int, ...]], columns: Any = cols, consts: tuple[bytes, ...] = (table,)) -> Any:
        program = (np.array(nodes, np.int32).tobytes(), np.array([1], np.int32).tobytes(), consts)
        return _jsoncolumns.decode((program,), columns, 0, data, offsets, 0, 0, 1, None,
                                   np.array([1], np.int32).tobytes(), np.array([0], np.int32).tobytes())

    obj = (jc.J_OBJECT, 0, 0, 1, 0, 0)
    outs, status, _ = run([obj, (jc.J_INTEGER, 1, 0, 0, 0, 0)])
    assert bytes(status) == b"\x00" and np.frombuffer(outs[1][2], np.int64).tolist() == [7]
    for nodes, columns, consts in (
        ([obj, (jc.J_BOOLEAN, 1, 0, 0, 0, 0)], cols, (table,)),  # a bool into an 8-byte column
        ([obj, (jc.J_STRING, 1, 0, 0, 0, 0)], cols, (table,)),  # a string into a fixed column
        ([obj, (jc.J_INTEGER, 1, 0, 0, 0, 0)], cols, (b"\x01\x00\x00\x00" + b"\x00" * 8 + b"\x05\x00\x00\x00",)),
        ([obj, obj], cols, (table,)),  # an object that is its own property
        ([obj, (jc.J_INTEGER, 1, 0, 0, 0, 0)], ((K_STRUCT, 0, (1,), 1), (K_VAR, 0, (), 1)), (table,)),
    ):
        with pytest.raises(ValueError, match="malformed"):
            run(nodes, columns, consts)
