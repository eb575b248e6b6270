"""JSON Schema payloads: the JSON text parsed into the types its schema declares.

Table types: ``"type": "object"`` with ``properties`` -> struct (properties in declared order),
an object with only ``additionalProperties: <schema>`` -> map<string, V>, ``array`` with ``items``
-> list, ``string`` -> string, ``integer`` -> long, ``number`` -> double, ``boolean`` -> boolean;
``["null", T]``, or ``oneOf``/``anyOf`` of ``null`` and one schema -> T (nullable); ``$ref`` to
``#/definitions/..``, ``#/$defs/..`` or to a referenced schema (by the reference's name) is
followed; anything else (no type, several types, ``{}``) -> string holding the value's JSON text.
A payload that is not JSON, or whose value does not fit a declared type (a string where an integer
is declared, ...), is a record error; fields absent from the payload are null, undeclared ones are
ignored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kafka_format.common.limits import INT64_MAX, INT64_MIN

__all__ = ["JsonCodec", "JsonSchemaError", "JsonShape", "json_arrow_type", "json_shape"]

Convert = Callable[[Any], Any]


@dataclass(frozen=True)
class JsonShape:
    """The table type of a schema position: ``kind`` (object, map, array, string, integer, number,
    boolean, or text: the value's JSON text), its Arrow type, the converter from parsed JSON, and
    the object's properties or the array's items / the map's values."""

    kind: str
    arrow: pa.DataType
    convert: Convert
    fields: tuple[tuple[str, JsonShape], ...] = ()
    item: JsonShape | None = None


class JsonSchemaError(ValueError):
    """A JSON Schema the table types cannot be derived from."""


class _Mismatch(ValueError):
    pass


def _resolve(ref: str, root: Any, refs: Mapping[str, Any]) -> tuple[Any, Any]:
    doc, _, frag = ref.partition("#")
    base = root if doc == "" else refs.get(doc)
    if base is None:
        raise JsonSchemaError(f"$ref {ref!r} names no referenced schema")
    node = base
    for part in [p for p in frag.split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            raise JsonSchemaError(f"$ref {ref!r} does not resolve")
        node = node[part]
    return node, base


def _as_json_text(v: Any) -> Any:
    return None if v is None else json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _text() -> JsonShape:
    return JsonShape("text", pa.string(), _as_json_text)


def _types(s: Any, root: Any, refs: Mapping[str, Any], depth: int = 0) -> JsonShape:
    if depth > 64:
        raise JsonSchemaError("schema nests too deep (recursive $ref?)")
    if not isinstance(s, dict):
        return _text()
    if "$ref" in s:
        node, base = _resolve(s["$ref"], root, refs)
        return _types(node, base, refs, depth + 1)
    for key in ("oneOf", "anyOf"):
        if key in s and isinstance(s[key], list):
            rest = [b for b in s[key] if not (isinstance(b, dict) and b.get("type") == "null")]
            if len(rest) == 1:
                return _types(rest[0], root, refs, depth + 1)
            return _text()
    t = s.get("type")
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        if len(rest) != 1:
            return _text()
        t = rest[0]
    if t == "object" or (t is None and "properties" in s):
        props = s.get("properties")
        if isinstance(props, dict) and props:
            shapes = tuple((name, _types(sub, root, refs, depth + 1)) for name, sub in props.items())
            convs = [(name, shape.convert) for name, shape in shapes]

            def obj(v: Any) -> Any:
                if v is None:
                    return None
                if not isinstance(v, dict):
                    raise _Mismatch(f"expected an object, found {type(v).__name__}")
                return {n: c(v.get(n)) for n, c in convs}

            return JsonShape("object", pa.struct([pa.field(n, shape.arrow) for n, shape in shapes]), obj, shapes)
        extra = s.get("additionalProperties")
        if isinstance(extra, dict):
            value = _types(extra, root, refs, depth + 1)
            vc = value.convert

            def mapping(v: Any) -> Any:
                if v is None:
                    return None
                if not isinstance(v, dict):
                    raise _Mismatch(f"expected an object, found {type(v).__name__}")
                return [(k, vc(x)) for k, x in v.items()]

            return JsonShape("map", pa.map_(pa.string(), value.arrow), mapping, item=value)
        return _text()
    if t == "array":
        items = s.get("items")
        if not isinstance(items, dict):
            return _text()
        item = _types(items, root, refs, depth + 1)
        ic = item.convert

        def arr(v: Any) -> Any:
            if v is None:
                return None
            if not isinstance(v, list):
                raise _Mismatch(f"expected an array, found {type(v).__name__}")
            return [ic(x) for x in v]

        return JsonShape("array", pa.list_(item.arrow), arr, item=item)
    if t == "string":
        return JsonShape("string", pa.string(), _checker(lambda v: isinstance(v, str), "a string"))
    if t == "integer":
        return JsonShape("integer", pa.int64(), _integer)
    if t == "number":
        return JsonShape("number", pa.float64(), _number)
    if t == "boolean":
        return JsonShape("boolean", pa.bool_(), _checker(lambda v: isinstance(v, bool), "a boolean"))
    return _text()


def _checker(ok: Callable[[Any], bool], what: str) -> Convert:
    def check(v: Any) -> Any:
        if v is None or ok(v):
            return v
        raise _Mismatch(f"expected {what}, found {json.dumps(v)[:40]}")

    return check


def _integer(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Mismatch(f"expected an integer, found {json.dumps(v)[:40]}")
    if not INT64_MIN <= v <= INT64_MAX:
        raise _Mismatch(f"integer {v} out of the 64-bit range")
    return v


def _number(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Mismatch(f"expected a number, found {json.dumps(v)[:40]}")
    return float(v)


def json_shape(schema: str, references: Mapping[str, str] = {}) -> JsonShape:
    """The table type of values of a JSON Schema (text), position by position."""
    try:
        root = json.loads(schema)
        refs = {name: json.loads(text) for name, text in references.items()}
    except ValueError as exc:
        raise JsonSchemaError(f"schema is not JSON: {exc}") from None
    if isinstance(root, bool):
        return _text()
    return _types(root, root, refs)


def json_arrow_type(schema: str, references: Mapping[str, str] = {}) -> tuple[pa.DataType, Convert]:
    """Arrow type of values of a JSON Schema (text) and the converter from parsed JSON to it."""
    shape = json_shape(schema, references)
    return shape.arrow, shape.convert


class JsonCodec:
    """Parses a payload and fits it into the table type."""

    def __init__(self, convert: Convert) -> None:
        self.convert = convert

    def decode(self, payload: bytes | memoryview) -> Any:
        try:
            value = json.loads(bytes(payload))
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"payload is not JSON: {exc}") from None
        try:
            return self.convert(value)
        except _Mismatch as exc:
            raise ValueError(f"payload does not match the schema: {exc}") from None
