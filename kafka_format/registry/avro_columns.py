"""Avro payloads decoded straight into Arrow columns: the compiled fast path of typed Avro columns.

:class:`AvroColumns` is made once per table (reader) schema: its *layout* is the table type cut
into the Arrow arrays it is made of (one output column each, nested ones included), built by the
same rules as :func:`kafka_format.registry.avro.avro_arrow_type`.  :meth:`AvroColumns.program`
compiles one writer schema against it, once per schema id: Avro's resolution rules, as fastavro
applies them (``match_schemas``/``match_types``: promotions, fields by name or alias, defaults,
skipped fields, enum symbols and defaults, union branches, named types by unqualified name),
become a flat program that ``_avrocolumns.decode`` (C) runs over every payload of an Arrow batch,
filling the column buffers without a Python object per record.

fastavro stays the reference.  The fast path only takes what it decodes exactly as fastavro does
(followed by the table type's conversion and pyarrow): a value it is not sure of (a resolution
fastavro makes per record, a logical type whose reading differs between writer and table, a
default that is not a plain value, an out-of-range number, a map whose keys repeat, ...) makes
the row *fail* there, and the caller decodes that row with fastavro.  A table type it cannot lay
out (``null`` columns, ambiguous unions whose branch the reference guesses from the value,
recursive records) makes :func:`compile_table` return None: the reference decodes everything.
``tests/registry/test_avro_columns.py`` checks equality on generated schemas and data,
evolution included.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from kafka_format.common.extensions import extension
from kafka_format.registry.avro_layout import PRIMITIVES, Layout, Target, UnionView, Unsupported, arrow_of
from kafka_format.registry.columns import (
    MAX_DEPTH,
    ST_BAD_MAGIC,
    ST_BAD_OFFSETS,
    ST_FAILED,
    ST_NO_PROGRAM,
    ST_NULL,
    ST_OK,
    ST_SHORT,
    Program,
    ProgramBuilder,
    decode_rows,
)

__all__ = [
    "ST_BAD_MAGIC",
    "ST_BAD_OFFSETS",
    "ST_FAILED",
    "ST_NO_PROGRAM",
    "ST_NULL",
    "ST_OK",
    "ST_SHORT",
    "AvroColumns",
    "Program",
    "available",
    "compile_table",
]

if TYPE_CHECKING:
    from kafka_format.registry import _avrocolumns
else:  # None without a C compiler (the reference decoders alone: registry/typed.py decides per plan)
    _avrocolumns = extension("kafka_format.registry._avrocolumns")

# ops and column kinds of _avrocolumns.c
(
    NOP, ERROR, NULL, BOOL, INT32, INT64, TO_F32, TO_F64, F32, F32_TO_F64, F64, BYTES, FIXED, ENUM,
    DATE, TIMESTAMP, TIME, DECIMAL, UUID, RECORD, ARRAY, MAP, UNION, MEMBER, DEFAULT,
    SKIP_BOOL, SKIP_VARINT, SKIP_N, SKIP_BYTES, SKIP_RECORD, SKIP_ARRAY, SKIP_MAP, SKIP_UNION,
) = range(33)
DEF_NULL, DEF_BOOL, DEF_I32, DEF_I64, DEF_F32, DEF_F64, DEF_BYTES, DEF_EMPTY = range(8)

_NAMED = ("record", "error", "enum", "fixed")
_AVRO_TYPES = {*PRIMITIVES, *_NAMED, "array", "map", "union", "request", "error_union"}
# fastavro's LOGICAL_READERS keys: the writer's logical type it converts a value with
_LOGICAL = {
    "long-timestamp-millis", "long-local-timestamp-millis", "long-timestamp-micros",
    "long-local-timestamp-micros", "int-date", "bytes-decimal", "fixed-decimal", "string-uuid",
    "int-time-millis", "long-time-micros",
}


def available() -> bool:
    """Whether the compiled decoder is built."""
    return _avrocolumns is not None


# --- one writer schema compiled against the layout --------------------------------------------
class _Resolution:
    """fastavro's ``match_types`` / ``match_schemas`` (``raise_on_error=False``) on parsed schemas:
    whether and as what a writer schema resolves to a reader schema, named types looked up in
    each side's own names."""

    def __init__(self, wnamed: dict[str, Any], rnamed: dict[str, Any]) -> None:
        self.wnamed, self.rnamed = wnamed, rnamed

    def _wdef(self, s: Any) -> Any:
        return self.wnamed.get(s, s) if isinstance(s, str) and s not in _AVRO_TYPES else s

    def _rdef(self, s: Any) -> Any:
        return self.rnamed.get(s, s) if isinstance(s, str) and s not in _AVRO_TYPES else s

    def match_types(self, w: Any, r: Any, depth: int = 0) -> bool:
        if depth > MAX_DEPTH:
            return False
        if isinstance(w, list) or isinstance(r, list):
            return True
        if isinstance(w, dict) or isinstance(r, dict):
            return self.match_schemas(w, r, depth + 1) is not None
        if w == r:
            return True
        promotions = {("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"),
                      ("long", "double"), ("float", "double"), ("string", "bytes"), ("bytes", "string")}
        if (w, r) in promotions:
            return True
        ws, rs = self.wnamed.get(w), self.rnamed.get(r)
        if ws is not None and rs is not None:
            return self.match_types(ws, rs, depth + 1)
        return False

    def match_schemas(self, w: Any, r: Any, depth: int = 0) -> Any:
        if isinstance(w, list):
            return r
        if isinstance(r, list):
            return next((b for b in r if self.match_types(w, b, depth)), None)
        wt = w["type"] if isinstance(w, dict) else w
        rt = r["type"] if isinstance(r, dict) else r
        if wt == rt == "map":
            return r if self.match_types(w["values"], r["values"], depth) else None
        if wt == rt == "array":
            return r if self.match_types(w["items"], r["items"], depth) else None
        if wt in _NAMED and rt in _NAMED:
            if wt == rt == "fixed" and w["size"] != r["size"]:
                return None
            wu, ru = w["name"].split(".")[-1], r["name"].split(".")[-1]
            aliases = r.get("aliases", [])
            return r if (wu == ru or w["name"] in aliases or wu in aliases) else None
        if wt not in _AVRO_TYPES and rt in _NAMED:
            return r["name"] if self.match_types(wt, r["name"], depth) else None
        if wt in _NAMED and rt not in _AVRO_TYPES:
            rs = self.rnamed.get(rt)
            return rs if rs is not None and self.match_types(w, rs, depth) else None
        return r if self.match_types(wt, rt, depth) else None


class _Compiler(_Resolution, ProgramBuilder):
    """fastavro's resolution of one writer schema to the reader, as a program (see module doc)."""

    def __init__(self, wnamed: dict[str, Any], rnamed: dict[str, Any], resolve: bool) -> None:
        _Resolution.__init__(self, wnamed, rnamed)
        ProgramBuilder.__init__(self, (NOP, -1, 0, 0, 0, 0))
        self.resolve = resolve

    def node(self, op: int, col: int = -1, a: int = 0, b: int = 0, c: int = 0, d: int = 0) -> int:
        self.nodes.append((op, col, a, b, c, d))
        return len(self.nodes) - 1

    def group(self, op: int, col: int, children: Sequence[int]) -> int:
        return self.node(op, col, self.children(children), len(children))

    def program(self, writer: Any, reader: Any, target: Any) -> Program:
        root = self.value(writer, reader if self.resolve else writer, target, 0)
        self.nodes[0] = self.nodes[root]
        return Program(*self.packed())

    # --- reading a writer value into a target ---------------------------------------------------
    def value(self, w: Any, r: Any, target: Any, depth: int) -> int:
        """Node reading writer ``w`` as reader ``r`` (== ``w`` without resolution) into ``target``."""
        if depth > MAX_DEPTH:
            return self.node(ERROR)
        if isinstance(w, list):
            if self.resolve:
                if not isinstance(r, list):
                    kids = [self.value(b, r, target, depth + 1) if self.match_types(b, r) else self.node(ERROR)
                            for b in w]
                else:
                    kids = []
                    for b in w:
                        j = next((i for i, rb in enumerate(r) if self.match_types(b, rb)), None)
                        kids.append(self.node(ERROR) if j is None else self.branch(b, r, j, target, depth))
            else:
                kids = [self.branch(b, w, i, target, depth) for i, b in enumerate(w)]
            return self.group(UNION, -1, kids)
        if isinstance(r, list):
            j = next((i for i, rb in enumerate(r) if self.match_types(w, rb)), None)
            return self.node(ERROR) if j is None else self.branch(w, r, j, target, depth)
        if self.resolve:
            m = self.match_schemas(w, r)
            if m is None:
                return self.node(ERROR)
        w, r = self._wdef(w), self._rdef(r)
        if (isinstance(w, str) and w not in _AVRO_TYPES) or (isinstance(r, str) and r not in _AVRO_TYPES):
            return self.node(ERROR)  # a name that does not resolve
        if isinstance(target, UnionView) or target is None:
            return self.node(ERROR)
        wt = w["type"] if isinstance(w, dict) else w
        rt = r["type"] if isinstance(r, dict) else r
        if isinstance(wt, (dict, list)) or (isinstance(wt, str) and wt not in _AVRO_TYPES):
            return self.value(wt, rt if self.resolve else wt, target, depth + 1)
        if wt in ("record", "error"):
            return self.record(w, r, target, depth) if rt in ("record", "error") else self.node(ERROR)
        if wt == "enum":
            return self.enum(w, r, target) if rt == "enum" else self.node(ERROR)
        if wt == "fixed":
            logical = _logical(w)
            if rt != "fixed" or w["size"] != r["size"]:
                return self.node(ERROR)
            if logical == "fixed-decimal":
                return self.decimal(w, target, int(w["size"]))
            if logical is None and target.kind == "binary" and target.logical is None:
                return self.node(FIXED, target.col, int(w["size"]))
            return self.node(ERROR)
        if wt == "array":
            if rt != "array" or target.kind != "list":
                return self.node(ERROR)
            item = self.value(w["items"], r["items"] if self.resolve else w["items"], target.item, depth + 1)
            return self.node(ARRAY, target.col, item)
        if wt == "map":
            if rt != "map" or target.kind != "map":
                return self.node(ERROR)
            value = self.value(w["values"], r["values"] if self.resolve else w["values"], target.value, depth + 1)
            return self.node(MAP, target.col, target.entries, target.key.col, value)
        return self.primitive(w, wt, rt, target)

    def branch(self, wb: Any, rlist: list[Any], j: int, view: Any, depth: int) -> int:
        """Writer branch ``wb`` read as reader branch ``j`` of the reader union ``rlist``."""
        if not isinstance(view, UnionView):
            return self.node(ERROR)
        member = view.branches[j]
        if member is None:
            return self.node(NULL, view.target.col)
        rb = rlist[j]
        if not view.general:
            return self.value(wb, rb, view.target, depth + 1)
        inner = self.value(wb, rb, view.target.members[member], depth + 1)
        return self.node(MEMBER, view.target.col, member, inner)

    def record(self, w: dict[str, Any], r: dict[str, Any], target: Target, depth: int) -> int:
        if target.kind != "struct":
            return self.node(ERROR)
        kids: list[int] = []
        if not self.resolve:
            for f in w["fields"]:
                kids.append(self.value(f["type"], f["type"], target.fields.get(f["name"]), depth + 1))
            return self.group(RECORD, target.col, kids)
        by_name = {f["name"]: f for f in r["fields"]}
        aliases = {a: f for f in r["fields"] for a in f.get("aliases", [])}
        for f in w["fields"]:
            rf = by_name.get(f["name"], aliases.get(f["name"]))
            if rf is None:
                kids.append(self.skip(f["type"], depth + 1))
            elif rf["name"] not in by_name:
                return self.node(ERROR)  # a second writer field for one reader field: fastavro fails
            else:
                kids.append(self.value(f["type"], rf["type"], target.fields.get(rf["name"]), depth + 1))
                del by_name[rf["name"]]
        for rf in by_name.values():
            kids.append(self.default(rf, target.fields.get(rf["name"])) if "default" in rf else self.node(ERROR))
        return self.group(RECORD, target.col, kids)

    def enum(self, w: dict[str, Any], r: dict[str, Any], target: Target) -> int:
        if target.kind != "string" or target.logical is not None or _logical(w) is not None:
            return self.node(ERROR)
        symbols: list[str | None] = []
        for s in w["symbols"]:
            if not self.resolve or s in r["symbols"]:
                symbols.append(s)
            else:
                default = r.get("default")
                symbols.append(default if default and isinstance(default, str) else None)
        head, text = [struct.pack("<i", len(symbols))], b""
        for s in symbols:
            raw = b"" if s is None else s.encode("utf-8")
            head.append(struct.pack("<ii", len(text), -1 if s is None else len(raw)))
            text += raw
        return self.node(ENUM, target.col, self.const(b"".join(head) + text))

    def decimal(self, w: dict[str, Any], target: Target, size: int) -> int:
        if "precision" not in w:
            return self.node(ERROR)
        precision, scale = w["precision"], w.get("scale", 0)
        if (target.kind != "decimal" or (precision, scale) != (target.precision, target.scale)
                or not isinstance(precision, int) or not isinstance(scale, int)):
            return self.node(ERROR)
        return self.node(DECIMAL, target.col, precision, size)

    def primitive(self, w: Any, wt: str, rt: str, t: Target) -> int:
        logical = _logical(w)
        kind, col = t.kind, t.col
        if logical is None:
            plain = t.logical in (None, "int-time-millis", "long-time-micros", "string-uuid")
            if not plain:
                return self.node(ERROR)  # fastavro's raw value under a table logical type
            if wt == "boolean" and kind == "bool":
                return self.node(BOOL, col)
            if wt in ("int", "long"):
                is_int = int(wt == "int")
                if kind == "int32" and wt == "int":
                    return self.node(INT32, col)
                if kind == "int64":
                    return self.node(INT64, col, is_int)
                if kind == "float32" and rt in ("float", "double"):
                    return self.node(TO_F32, col, is_int)
                if kind == "float64" and rt in ("float", "double"):
                    return self.node(TO_F64, col, is_int)
            if wt == "float":
                if kind == "float32":
                    return self.node(F32, col)
                if kind == "float64":
                    return self.node(F32_TO_F64, col)
            if wt == "double" and kind == "float64":
                return self.node(F64, col)
            if wt in ("bytes", "string") and t.size < 0:
                if kind == "binary" and (rt == "bytes" or (not self.resolve and wt == "bytes")):
                    return self.node(BYTES, col, int(wt == "string"))
                if kind == "string" and t.logical in (None, "string-uuid") and rt in ("string", "bytes"):
                    return self.node(BYTES, col, 1)
            return self.node(ERROR)
        if logical != t.logical and not (logical.startswith("long-timestamp") and t.kind == "ts" and t.tz) \
                and not (logical.startswith("long-local-timestamp") and t.kind == "ts" and not t.tz):
            return self.node(ERROR)
        if logical == "int-date" and kind == "date32":
            return self.node(DATE, col)
        if logical in ("long-timestamp-millis", "long-local-timestamp-millis") and kind == "ts":
            return self.node(TIMESTAMP, col, 1000)
        if logical in ("long-timestamp-micros", "long-local-timestamp-micros") and kind == "ts":
            return self.node(TIMESTAMP, col, 1)
        if logical == "bytes-decimal":
            return self.decimal(w, t, -1)
        if logical == "string-uuid" and kind == "string":
            return self.node(UUID, col)
        if logical == "int-time-millis" and kind == "int32":
            return self.node(TIME, col, 1)
        if logical == "long-time-micros" and kind == "int64":
            return self.node(TIME, col, 1000)
        return self.node(ERROR)

    def default(self, rf: dict[str, Any], target: Any) -> int:
        """A reader field's default, exactly as fastavro's raw default after the table type's
        conversion and pyarrow (computed here with them); anything else fails the row."""
        from kafka_format.registry.avro import avro_arrow_type

        value = rf["default"]
        if target is None:
            return self.node(ERROR)
        col_target = target.target if isinstance(target, UnionView) else target
        if value is None:
            return self.node(DEFAULT, col_target.col, DEF_NULL)
        if isinstance(target, UnionView) and target.general:
            return self.node(ERROR)
        try:
            arrow, convert = avro_arrow_type(rf["type"], self.rnamed)
            arr = pa.array([convert(value) if convert else value], type=arrow)
        except Exception:  # noqa: BLE001 - the reference fails on this default: so does the row
            return self.node(ERROR)
        if arr.null_count:
            return self.node(DEFAULT, col_target.col, DEF_NULL)
        t, col = col_target, col_target.col
        if t.kind in ("list", "map"):
            return self.node(DEFAULT, col, DEF_EMPTY) if len(arr[0].values) == 0 else self.node(ERROR)
        if t.kind == "bool":
            return self.node(DEFAULT, col, DEF_BOOL, 0, 0, int(arr[0].as_py()))
        if t.kind in ("string", "binary"):
            raw = arr[0].as_py()
            return self.node(DEFAULT, col, DEF_BYTES, self.const(raw.encode() if isinstance(raw, str) else raw))
        width = t.arrow.bit_width // 8
        if t.kind == "struct" or t.kind == "union" or width <= 0:
            return self.node(ERROR)
        raw = arr.buffers()[1].to_pybytes()[:width]
        return self.node(DEFAULT, col, DEF_F64, self.const(raw))  # any fixed width: copied as is

    # --- skipping a writer value ----------------------------------------------------------------
    def skip(self, w: Any, depth: int) -> int:
        if depth > MAX_DEPTH:
            return self.node(ERROR)
        if isinstance(w, list):
            return self.group(SKIP_UNION, -1, [self.skip(b, depth + 1) for b in w])
        w = self._wdef(w)
        if isinstance(w, str) and w not in _AVRO_TYPES:
            return self.node(ERROR)
        t = w["type"] if isinstance(w, dict) else w
        if isinstance(t, (dict, list)) or (isinstance(t, str) and t not in _AVRO_TYPES):
            return self.skip(t, depth + 1)
        simple = {"null": (NOP, 0), "boolean": (SKIP_BOOL, 0), "int": (SKIP_VARINT, 0), "long": (SKIP_VARINT, 0),
                  "float": (SKIP_N, 4), "double": (SKIP_N, 8), "bytes": (SKIP_BYTES, 0), "string": (SKIP_BYTES, 1)}
        if t in simple:
            op, a = simple[t]
            return self.node(op, -1, a)
        if t == "fixed":
            return self.node(SKIP_N, -1, int(w["size"]))
        if t == "enum":
            return self.node(SKIP_VARINT, -1, len(w["symbols"]))
        if t in ("record", "error"):
            return self.group(SKIP_RECORD, -1, [self.skip(f["type"], depth + 1) for f in w["fields"]])
        if t == "array":
            return self.node(SKIP_ARRAY, -1, self.skip(w["items"], depth + 1))
        if t == "map":
            return self.node(SKIP_MAP, -1, self.skip(w["values"], depth + 1))
        return self.node(ERROR)


def _logical(s: Any) -> str | None:
    """fastavro's logical reader key of a schema (``"<type>-<logicalType>"``) or None."""
    if not isinstance(s, dict) or not s.get("logicalType"):
        return None
    key = f"{s['type']}-{s['logicalType']}"
    return key if key in _LOGICAL else None


# --- the table ------------------------------------------------------------------------------------
class AvroColumns:
    """The fast decoder of one table schema: layout once, a program per writer schema."""

    def __init__(self, layout: Any, cols: list[tuple[int, int, tuple[int, ...], int]], named: dict[str, Any],
                 reader: Any) -> None:
        self.layout = layout
        self.cols = tuple(cols)
        self.named = named
        self.reader = reader
        self.arrow_type = arrow_of(layout)

    def program(self, writer: Any, writer_named: dict[str, Any], same: bool) -> Program:
        """The program of one writer schema (``same``: the writer is the table schema itself,
        read without resolution, as fastavro reads it without a reader schema)."""
        c = _Compiler(writer_named, self.named, resolve=not same)
        return c.program(writer, self.reader, self.layout)

    def decode(self, arr: pa.Array, programs: Sequence[Program],
               slots: Mapping[int, int]) -> tuple[pa.Array, np.ndarray, np.ndarray]:
        """A binary column of wire-format values decoded in one C call: each row's schema id
        picks ``programs[slots[id]]``.  Returns the typed column (null wherever the status is not
        ``ST_OK``), the status of every row (``ST_*``) and its schema id (-1 without a header)."""
        return decode_rows(_avrocolumns.decode, tuple(p.as_tuple() for p in programs), self.cols, self.layout,
                           arr, slots)


def compile_table(reader: Any, named: dict[str, Any], expected: pa.DataType) -> AvroColumns | None:
    """The fast decoder of a table schema (fastavro-parsed ``reader`` and its named types), or
    None when the compiled decoder is not built or the table type has no fast layout."""
    if _avrocolumns is None:
        return None
    layout = Layout(named)
    try:
        root = layout.build(reader)
    except (Unsupported, KeyError, TypeError, ValueError):
        return None
    if arrow_of(root) != expected:
        return None
    return AvroColumns(root, layout.specs(root), named, reader)
