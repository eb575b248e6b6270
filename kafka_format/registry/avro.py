"""Avro payloads: fastavro with the writer schema of the record's id, resolved to a reader schema.

Arrow types follow Spark's ``from_avro`` (spark-avro ``SchemaConverters.toSqlType``): record ->
struct, enum -> string, fixed/bytes -> binary, array -> list, map -> map<string, V>, a union of
``null`` and one type -> that type (nullable), ``[int, long]`` -> long, ``[float, double]`` ->
double, any other union -> struct ``member0, member1, ...`` (one field per non-null branch, the
branch taken set); logical types: ``date`` -> date, ``timestamp-millis|micros`` -> timestamp (UTC),
``local-timestamp-millis|micros`` -> timestamp without zone, ``decimal`` -> decimal(p, s),
``uuid`` -> string, ``time-millis`` -> int (ms), ``time-micros`` -> long (us).

Resolution: every record is read with its writer schema and the column's reader schema (Avro's
schema resolution rules, as fastavro applies them: promotions, defaults for added fields, removed
fields skipped, enum symbols, union branches); a writer schema that does not resolve to the reader
is a record error.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

__all__ = ["AvroCodec", "avro_arrow_type", "parse_avro"]

_PRIMITIVE: dict[str, pa.DataType] = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}
Convert = Callable[[Any], Any] | None


def parse_avro(schema: str, references: Sequence[str] = ()) -> tuple[Any, dict[str, Any]]:
    """(fastavro-parsed schema, its named types); ``references`` are the texts of referenced
    schemas (their named types become known first, as the registry's ``AvroSchema`` resolves
    references)."""
    from fastavro import parse_schema

    named: dict[str, Any] = {}
    for ref in references:
        parse_schema(json.loads(ref), named_schemas=named)
    return parse_schema(json.loads(schema), named_schemas=named), named


def _full_name(schema: Any) -> str | None:
    return schema.get("name") if isinstance(schema, dict) else None


class _Types:
    """Avro (fastavro-parsed) -> Arrow type plus a Python value converter (None: identity)."""

    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named
        self.stack: list[str] = []

    def of(self, s: Any) -> tuple[pa.DataType, Convert]:
        if isinstance(s, str):
            if s in _PRIMITIVE:
                return _PRIMITIVE[s], None
            if s in self.named:
                return self.of(self.named[s])
            raise ValueError(f"unknown Avro type {s!r}")
        if isinstance(s, list):
            return self._union(s)
        t = s.get("type")
        logical = s.get("logicalType")
        if logical == "date" and t == "int":
            return pa.date32(), None
        if logical in ("timestamp-millis", "timestamp-micros") and t == "long":
            return pa.timestamp("us", tz="UTC"), None
        if logical in ("local-timestamp-millis", "local-timestamp-micros") and t == "long":
            return pa.timestamp("us"), None
        if logical == "decimal" and t in ("bytes", "fixed"):
            precision, scale = int(s.get("precision", 0)), int(s.get("scale", 0))
            if 0 < precision <= 38:
                return pa.decimal128(precision, scale), None
        if logical == "uuid" and t == "string":
            return pa.string(), lambda v: None if v is None else str(v)
        if logical == "time-millis" and t == "int":
            return (
                pa.int32(),
                lambda v: (
                    v
                    if not isinstance(v, _dt.time)
                    else (((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000)
                ),
            )
        if logical == "time-micros" and t == "long":
            return (
                pa.int64(),
                lambda v: (
                    v
                    if not isinstance(v, _dt.time)
                    else (((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond)
                ),
            )
        if t == "record" or t == "error":
            name = s["name"]
            if name in self.stack:
                raise ValueError(f"recursive Avro record {name} has no table type")
            self.stack.append(name)
            fields, convs = [], []
            for f in s["fields"]:
                ft, fc = self.of(f["type"])
                fields.append(pa.field(f["name"], ft))
                convs.append((f["name"], fc))
            self.stack.pop()
            if all(c is None for _, c in convs):
                return pa.struct(fields), None
            active = [(n, c) for n, c in convs if c is not None]

            def record(v: Any) -> Any:
                if v is None:
                    return None
                out = dict(v)
                for n, c in active:
                    out[n] = c(out.get(n))
                return out

            return pa.struct(fields), record
        if t == "enum":
            return pa.string(), None
        if t == "fixed":
            return pa.binary(), None
        if t == "array":
            it, ic = self.of(s["items"])
            return pa.list_(it), None if ic is None else (lambda v: None if v is None else [ic(x) for x in v])
        if t == "map":
            vt, vc = self.of(s["values"])
            conv = (
                (lambda v: None if v is None else list(v.items()))
                if vc is None
                else (lambda v: None if v is None else [(k, vc(x)) for k, x in v.items()])
            )
            return pa.map_(pa.string(), vt), conv
        if isinstance(t, (dict, list)) or t in _PRIMITIVE or t in self.named:
            return self.of(t)
        raise ValueError(f"unsupported Avro schema {json.dumps(s)[:200]}")

    def _union(self, branches: list[Any]) -> tuple[pa.DataType, Convert]:
        rest = [b for b in branches if b != "null"]
        if not rest:
            return pa.null(), None
        if len(rest) == 1:
            return self.of(rest[0])
        if sorted(map(str, rest)) == ["int", "long"]:
            return pa.int64(), None
        if sorted(map(str, rest)) == ["double", "float"]:
            return pa.float64(), None
        types = [self.of(b) for b in rest]
        fields = [pa.field(f"member{i}", t) for i, (t, _) in enumerate(types)]
        checks = [_branch_check(b, self.named) for b in rest]

        def member(v: Any) -> Any:
            if v is None:
                return None
            for i, ok in enumerate(checks):
                if ok(v):
                    c = types[i][1]
                    return {f"member{i}": c(v) if c else v}
            return None

        return pa.struct(fields), member


def _branch_check(branch: Any, named: dict[str, Any]) -> Callable[[Any], bool]:
    """Which union branch a decoded value came from (fastavro returns plain values)."""
    if isinstance(branch, str) and branch in named:
        branch = named[branch]
    t = branch if isinstance(branch, str) else branch.get("type")
    if isinstance(branch, dict) and branch.get("logicalType"):
        lt = branch["logicalType"]
        if lt == "date":
            return lambda v: isinstance(v, _dt.date) and not isinstance(v, _dt.datetime)
        if lt.startswith(("timestamp", "local-timestamp")):
            return lambda v: isinstance(v, _dt.datetime)
        if lt == "uuid":
            return lambda v: isinstance(v, uuid.UUID)
    simple: dict[str, Callable[[Any], bool]] = {
        "boolean": lambda v: isinstance(v, bool),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "long": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, float),
        "double": lambda v: isinstance(v, float),
        "string": lambda v: isinstance(v, str),
        "enum": lambda v: isinstance(v, str),
        "bytes": lambda v: isinstance(v, (bytes, bytearray)),
        "fixed": lambda v: isinstance(v, (bytes, bytearray)),
        "array": lambda v: isinstance(v, list),
        "map": lambda v: isinstance(v, dict),
    }
    if t in ("record", "error"):
        names = {f["name"] for f in branch["fields"]}
        return lambda v: isinstance(v, dict) and set(v) == names
    return simple.get(str(t), lambda v: False)


def avro_arrow_type(parsed: Any, named: dict[str, Any] | None = None) -> tuple[pa.DataType, Convert]:
    """The Arrow type of values of ``parsed`` (a fastavro-parsed schema, ``named``: its named
    types) and the converter that makes fastavro's values fit it (None when they already do)."""
    named = dict(named or {})
    _collect_named(parsed, named)
    return _Types(named).of(parsed)


def _collect_named(s: Any, named: dict[str, Any]) -> None:
    if isinstance(s, list):
        for b in s:
            _collect_named(b, named)
    elif isinstance(s, dict):
        if s.get("type") in ("record", "error", "enum", "fixed") and "name" in s:
            named.setdefault(s["name"], s)
        for f in s.get("fields", []):
            _collect_named(f["type"], named)
        for k in ("items", "values"):
            if k in s:
                _collect_named(s[k], named)
        if isinstance(s.get("type"), (dict, list)):
            _collect_named(s["type"], named)


class AvroCodec:
    """Decodes payloads written with one writer schema into values of the reader schema
    (``reader`` None: the writer schema is the table schema, read without resolution).
    ``program``: the writer compiled for the fast column decoder
    (:mod:`kafka_format.registry.avro_columns`), when there is one."""

    def __init__(self, writer: Any, reader: Any, program: Any = None) -> None:
        from fastavro import schemaless_reader

        self.writer = writer
        self.reader = reader
        self.program = program
        self._read = schemaless_reader

    def decode(self, payload: bytes | memoryview) -> Any:
        """One payload -> its value (raises on a payload that ends early or does not resolve).
        Bytes after the value are ignored, as Confluent's ``KafkaAvroDeserializer`` ignores them."""
        return self._read(io.BytesIO(payload), self.writer, self.reader)
