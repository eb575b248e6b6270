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
from typing import Any

import pyarrow as pa

__all__ = ["json_arrow_type", "JsonCodec", "JsonSchemaError"]

Convert = Callable[[Any], Any]
_INT64 = (-(1 << 63), (1 << 63) - 1)


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


def _types(s: Any, root: Any, refs: Mapping[str, Any], depth: int = 0) -> tuple[pa.DataType, Convert]:
    if depth > 64:
        raise JsonSchemaError("schema nests too deep (recursive $ref?)")
    if not isinstance(s, dict):
        return pa.string(), _as_json_text
    if "$ref" in s:
        node, base = _resolve(s["$ref"], root, refs)
        return _types(node, base, refs, depth + 1)
    for key in ("oneOf", "anyOf"):
        if key in s and isinstance(s[key], list):
            rest = [b for b in s[key] if not (isinstance(b, dict) and b.get("type") == "null")]
            if len(rest) == 1:
                return _types(rest[0], root, refs, depth + 1)
            return pa.string(), _as_json_text
    t = s.get("type")
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        if len(rest) != 1:
            return pa.string(), _as_json_text
        t = rest[0]
    if t == "object" or (t is None and "properties" in s):
        props = s.get("properties")
        if isinstance(props, dict) and props:
            fields, convs = [], []
            for name, sub in props.items():
                ft, fc = _types(sub, root, refs, depth + 1)
                fields.append(pa.field(name, ft))
                convs.append((name, fc))

            def obj(v: Any) -> Any:
                if v is None:
                    return None
                if not isinstance(v, dict):
                    raise _Mismatch(f"expected an object, found {type(v).__name__}")
                return {n: c(v.get(n)) for n, c in convs}

            return pa.struct(fields), obj
        extra = s.get("additionalProperties")
        if isinstance(extra, dict):
            vt, vc = _types(extra, root, refs, depth + 1)

            def mapping(v: Any) -> Any:
                if v is None:
                    return None
                if not isinstance(v, dict):
                    raise _Mismatch(f"expected an object, found {type(v).__name__}")
                return [(k, vc(x)) for k, x in v.items()]

            return pa.map_(pa.string(), vt), mapping
        return pa.string(), _as_json_text
    if t == "array":
        items = s.get("items")
        if not isinstance(items, dict):
            return pa.string(), _as_json_text
        it, ic = _types(items, root, refs, depth + 1)

        def arr(v: Any) -> Any:
            if v is None:
                return None
            if not isinstance(v, list):
                raise _Mismatch(f"expected an array, found {type(v).__name__}")
            return [ic(x) for x in v]

        return pa.list_(it), arr
    if t == "string":
        return pa.string(), _checker(lambda v: isinstance(v, str), "a string")
    if t == "integer":
        return pa.int64(), _integer
    if t == "number":
        return pa.float64(), _number
    if t == "boolean":
        return pa.bool_(), _checker(lambda v: isinstance(v, bool), "a boolean")
    return pa.string(), _as_json_text


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
    if not _INT64[0] <= v <= _INT64[1]:
        raise _Mismatch(f"integer {v} out of the 64-bit range")
    return v


def _number(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Mismatch(f"expected a number, found {json.dumps(v)[:40]}")
    return float(v)


def json_arrow_type(schema: str, references: Mapping[str, str] = {}) -> tuple[pa.DataType, Convert]:
    """Arrow type of values of a JSON Schema (text) and the converter from parsed JSON to it."""
    try:
        root = json.loads(schema)
        refs = {name: json.loads(text) for name, text in references.items()}
    except ValueError as exc:
        raise JsonSchemaError(f"schema is not JSON: {exc}") from None
    if isinstance(root, bool):
        return pa.string(), _as_json_text
    return _types(root, root, refs)


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
