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
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["AvroColumns", "Program", "compile_table", "available", "ST_OK", "ST_NULL", "ST_SHORT",
           "ST_BAD_MAGIC", "ST_NO_PROGRAM", "ST_FAILED", "ST_BAD_OFFSETS"]

try:
    from kafka_format.registry import _avrocolumns  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - built without a C compiler
    _avrocolumns = None

# ops and column kinds of _avrocolumns.c
(
    NOP, ERROR, NULL, BOOL, INT32, INT64, TO_F32, TO_F64, F32, F32_TO_F64, F64, BYTES, FIXED, ENUM,
    DATE, TIMESTAMP, TIME, DECIMAL, UUID, RECORD, ARRAY, MAP, UNION, MEMBER, DEFAULT,
    SKIP_BOOL, SKIP_VARINT, SKIP_N, SKIP_BYTES, SKIP_RECORD, SKIP_ARRAY, SKIP_MAP, SKIP_UNION,
) = range(33)
DEF_NULL, DEF_BOOL, DEF_I32, DEF_I64, DEF_F32, DEF_F64, DEF_BYTES, DEF_EMPTY = range(8)
# row status: decoded; null input; shorter than the header; magic byte not 0; no program for the
# schema id; the program did not take the payload (the reference decides); offsets outside the data
ST_OK, ST_NULL, ST_SHORT, ST_BAD_MAGIC, ST_NO_PROGRAM, ST_FAILED, ST_BAD_OFFSETS = range(7)
K_STRUCT, K_FIXED, K_VAR, K_LIST = range(4)

_PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
_NAMED = ("record", "error", "enum", "fixed")
_AVRO_TYPES = {*_PRIMITIVES, *_NAMED, "array", "map", "union", "request", "error_union"}
# fastavro's LOGICAL_READERS keys: the writer's logical type it converts a value with
_LOGICAL = {
    "long-timestamp-millis", "long-local-timestamp-millis", "long-timestamp-micros",
    "long-local-timestamp-micros", "int-date", "bytes-decimal", "fixed-decimal", "string-uuid",
    "int-time-millis", "long-time-micros",
}
_MAX_DEPTH = 48


def available() -> bool:
    """Whether the compiled decoder is built."""
    return _avrocolumns is not None


class Unsupported(Exception):
    """The table type has no fast layout (the reference decodes the column)."""


# --- the layout of a table type ---------------------------------------------------------------
@dataclass
class Target:
    """One Arrow array of the table type and the output column that fills it."""

    kind: str  # bool int32 int64 float32 float64 binary string date32 ts decimal struct list map union
    col: int
    arrow: pa.DataType
    logical: str | None = None  # the table's logical type (fastavro key), for values it converts
    size: int = -1  # fixed: its size
    precision: int = 0
    scale: int = 0
    tz: bool = False
    fields: dict[str, Any] = field(default_factory=dict)  # struct: name -> Target | UnionView
    item: Any = None  # list: Target | UnionView
    entries: int = -1  # map: the entries struct column
    key: int = -1  # map: the key column
    value: Any = None  # map: Target | UnionView
    members: list[Any] = field(default_factory=list)  # union struct: member Targets
    schema: Any = None  # the reader schema of this position


@dataclass
class UnionView:
    """A reader union: where each of its branches writes (None: the null branch)."""

    schema: list[Any]
    target: Target  # the column of the union (nullable inner type, merged number, member struct)
    general: bool  # a struct of members (the branch as member index)
    branches: list[int | None]  # per reader branch: member index (general) or 0; None = null


class _Layout:
    """Builds the Targets and column specs of a reader schema (``_Types.of``'s rules)."""

    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named
        self.cols: list[tuple[int, int, tuple[int, ...]]] = []
        self.stack: list[str] = []

    def _col(self, kind: int, width: int = 0) -> int:
        self.cols.append((kind, width, ()))
        return len(self.cols) - 1

    def _children(self, col: int, children: Sequence[int]) -> None:
        kind, width, _ = self.cols[col]
        self.cols[col] = (kind, width, tuple(children))

    def specs(self, root: Any) -> list[tuple[int, int, tuple[int, ...], int]]:
        """The column specs for ``_avrocolumns``: (kind, width, children, per_row), per_row for
        the columns with one slot per row (not inside a list or map)."""
        per_row: set[int] = set()
        stack = [_col_of(root)]
        while stack:
            col = stack.pop()
            per_row.add(col)
            kind, _, children = self.cols[col]
            if kind == K_STRUCT:
                stack.extend(children)
        return [(kind, width, children, int(i in per_row)) for i, (kind, width, children) in enumerate(self.cols)]

    def _prim(self, kind: str, arrow: pa.DataType, width: int, s: Any, **kw: Any) -> Target:
        col = self._col(K_VAR if width == 0 else K_FIXED, width)
        return Target(kind, col, arrow, schema=s, **kw)

    def build(self, s: Any) -> Any:
        if isinstance(s, str):
            simple = {
                "boolean": ("bool", pa.bool_(), 1), "int": ("int32", pa.int32(), 4),
                "long": ("int64", pa.int64(), 8), "float": ("float32", pa.float32(), 4),
                "double": ("float64", pa.float64(), 8), "bytes": ("binary", pa.binary(), 0),
                "string": ("string", pa.string(), 0),
            }
            if s in simple:
                kind, arrow, width = simple[s]
                return self._prim(kind, arrow, width, s)
            if s in self.named and s not in _PRIMITIVES:
                return self.build(self.named[s])
            raise Unsupported(f"type {s!r}")
        if isinstance(s, list):
            return self._union(s)
        t, logical = s.get("type"), s.get("logicalType")
        if logical == "date" and t == "int":
            return self._prim("date32", pa.date32(), 4, s, logical="int-date")
        if logical in ("timestamp-millis", "timestamp-micros") and t == "long":
            return self._prim("ts", pa.timestamp("us", tz="UTC"), 8, s, logical=f"long-{logical}", tz=True)
        if logical in ("local-timestamp-millis", "local-timestamp-micros") and t == "long":
            return self._prim("ts", pa.timestamp("us"), 8, s, logical=f"long-{logical}")
        if logical == "decimal" and t in ("bytes", "fixed"):
            precision, scale = int(s.get("precision", 0)), int(s.get("scale", 0))
            if 0 < precision <= 38:
                return self._prim("decimal", pa.decimal128(precision, scale), 16, s, logical=f"{t}-decimal",
                                  precision=precision, scale=scale, size=int(s.get("size", -1)))
        if logical == "uuid" and t == "string":
            return self._prim("string", pa.string(), 0, s, logical="string-uuid")
        if logical == "time-millis" and t == "int":
            return self._prim("int32", pa.int32(), 4, s, logical="int-time-millis")
        if logical == "time-micros" and t == "long":
            return self._prim("int64", pa.int64(), 8, s, logical="long-time-micros")
        if t in ("record", "error"):
            return self._record(s)
        if t == "enum":
            return self._prim("string", pa.string(), 0, s)
        if t == "fixed":
            return self._prim("binary", pa.binary(), 0, s, size=int(s["size"]))
        if t == "array":
            col = self._col(K_LIST)
            item = self.build(s["items"])
            self._children(col, [_col_of(item)])
            return Target("list", col, pa.list_(_arrow_of(item)), item=item, schema=s)
        if t == "map":
            col, entries, key = self._col(K_LIST), self._col(K_STRUCT), self._col(K_VAR)
            value = self.build(s["values"])
            self._children(entries, [key, _col_of(value)])
            self._children(col, [entries])
            return Target("map", col, pa.map_(pa.string(), _arrow_of(value)), entries=entries, key=key,
                          value=value, schema=s)
        if isinstance(t, (dict, list)) or t in _PRIMITIVES or t in self.named:
            return self.build(t)
        raise Unsupported(f"schema {s!r:.80}")

    def _record(self, s: dict[str, Any]) -> Target:
        name = s["name"]
        if name in self.stack:
            raise Unsupported(f"recursive record {name}")
        self.stack.append(name)
        col = self._col(K_STRUCT)
        fields = {f["name"]: self.build(f["type"]) for f in s["fields"]}
        self.stack.pop()
        self._children(col, [_col_of(t) for t in fields.values()])
        arrow = pa.struct([pa.field(n, _arrow_of(t)) for n, t in fields.items()])
        return Target("struct", col, arrow, fields=fields, schema=s)

    def _union(self, branches: list[Any]) -> UnionView:
        rest = [b for b in branches if b != "null"]
        if not rest:
            raise Unsupported("a union of null only")
        if len(rest) == 1:
            inner = self.build(rest[0])
            if isinstance(inner, UnionView):
                raise Unsupported("a union inside a union")
            return UnionView(branches, inner, False, [None if b == "null" else 0 for b in branches])
        names = sorted(map(str, rest))
        if names in (["int", "long"], ["double", "float"]):
            kind, arrow = ("int64", pa.int64()) if names[0] == "int" else ("float64", pa.float64())
            target = self._prim(kind, arrow, 8, branches)
            return UnionView(branches, target, False, [None if b == "null" else 0 for b in branches])
        col = self._col(K_STRUCT)
        members = [self.build(b) for b in rest]
        if any(isinstance(m, UnionView) for m in members):
            raise Unsupported("a union inside a union")
        kinds = [_branch_kind(b, self.named) for b in rest]
        for i, a in enumerate(kinds):  # the reference tells the branch from the value: it must be able to
            for b in kinds[i + 1 :]:
                if a is None or b is None or a == b or {a[0], b[0]} == {"map", "record"}:
                    raise Unsupported("union branches the reference cannot tell apart")
        self._children(col, [m.col for m in members])
        arrow = pa.struct([pa.field(f"member{i}", m.arrow) for i, m in enumerate(members)])
        target = Target("union", col, arrow, members=members, schema=branches)
        index, out = 0, []
        for b in branches:
            if b == "null":
                out.append(None)
            else:
                out.append(index)
                index += 1
        return UnionView(branches, target, True, out)


def _col_of(t: Any) -> int:
    return t.target.col if isinstance(t, UnionView) else t.col


def _arrow_of(t: Any) -> pa.DataType:
    return t.target.arrow if isinstance(t, UnionView) else t.arrow


def _branch_kind(branch: Any, named: dict[str, Any]) -> tuple[Any, ...] | None:
    """How ``avro._branch_check`` recognises a value of this branch (None: a logical type or
    anything it may confuse, kept off the fast path)."""
    if isinstance(branch, str) and branch in named and branch not in _PRIMITIVES:
        branch = named[branch]
    if isinstance(branch, dict) and branch.get("logicalType"):
        return None
    t = branch if isinstance(branch, str) else branch.get("type")
    simple = {"boolean": "bool", "int": "int", "long": "int", "float": "float", "double": "float",
              "string": "str", "enum": "str", "bytes": "bytes", "fixed": "bytes", "array": "list", "map": "map"}
    if t in ("record", "error"):
        return ("record", frozenset(f["name"] for f in branch["fields"]))
    if isinstance(t, str) and t in simple:
        return (simple[t],)
    return None


# --- one writer schema compiled against the layout --------------------------------------------
@dataclass(frozen=True)
class Program:
    """A compiled writer schema: nodes (int32 x 6), children and constants for ``_avrocolumns``."""

    nodes: bytes
    kids: bytes
    consts: tuple[bytes, ...]

    def as_tuple(self) -> tuple[bytes, bytes, tuple[bytes, ...]]:
        return self.nodes, self.kids, self.consts


class _Compiler:
    """fastavro's resolution of one writer schema to the reader, as a program (see module doc)."""

    def __init__(self, wnamed: dict[str, Any], rnamed: dict[str, Any], resolve: bool) -> None:
        self.wnamed, self.rnamed, self.resolve = wnamed, rnamed, resolve
        self.nodes: list[tuple[int, int, int, int, int, int]] = [(NOP, -1, 0, 0, 0, 0)]
        self.kids: list[int] = []
        self.consts: list[bytes] = []

    def node(self, op: int, col: int = -1, a: int = 0, b: int = 0, c: int = 0, d: int = 0) -> int:
        self.nodes.append((op, col, a, b, c, d))
        return len(self.nodes) - 1

    def group(self, op: int, col: int, children: Sequence[int]) -> int:
        first = len(self.kids)
        self.kids.extend(children)
        return self.node(op, col, first, len(children))

    def const(self, raw: bytes) -> int:
        self.consts.append(raw)
        return len(self.consts) - 1

    def program(self, writer: Any, reader: Any, target: Any) -> Program:
        root = self.value(writer, reader if self.resolve else writer, target, 0)
        self.nodes[0] = self.nodes[root]
        return Program(
            np.asarray(self.nodes, dtype=np.int32).tobytes(),
            np.asarray(self.kids, dtype=np.int32).tobytes(),
            tuple(self.consts),
        )

    # fastavro's match_types / match_schemas (raise_on_error=False), on parsed schemas
    def _wdef(self, s: Any) -> Any:
        return self.wnamed.get(s, s) if isinstance(s, str) and s not in _AVRO_TYPES else s

    def _rdef(self, s: Any) -> Any:
        return self.rnamed.get(s, s) if isinstance(s, str) and s not in _AVRO_TYPES else s

    def match_types(self, w: Any, r: Any, depth: int = 0) -> bool:
        if depth > _MAX_DEPTH:
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

    # --- reading a writer value into a target ---------------------------------------------------
    def value(self, w: Any, r: Any, target: Any, depth: int) -> int:
        """Node reading writer ``w`` as reader ``r`` (== ``w`` without resolution) into ``target``."""
        if depth > _MAX_DEPTH:
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
        if isinstance(w, str) and w not in _AVRO_TYPES or isinstance(r, str) and r not in _AVRO_TYPES:
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
            return self.node(MAP, target.col, target.entries, target.key, value)
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
                if kind == "binary" and (rt == "bytes" or not self.resolve and wt == "bytes"):
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
        if depth > _MAX_DEPTH:
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
        self.arrow_type = _arrow_of(layout)

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
        n = len(arr)
        if n == 0:
            return pa.array([], type=self.arrow_type), np.zeros(0, np.uint8), np.zeros(0, np.int32)
        if not (pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)):
            raise TypeError(f"expected a binary column, found {arr.type}")
        validity, offsets, data = arr.buffers()[:3]
        outs, status, ids = _avrocolumns.decode(
            tuple(p.as_tuple() for p in programs), self.cols, _col_of(self.layout), data if data is not None else b"",
            offsets, int(pa.types.is_large_binary(arr.type)), arr.offset, n, validity,
            np.fromiter(slots.keys(), dtype=np.int32, count=len(slots)).tobytes(),
            np.fromiter(slots.values(), dtype=np.int32, count=len(slots)).tobytes(),
        )
        return (_assemble(self.layout, outs), np.frombuffer(status, dtype=np.uint8, count=n),
                np.frombuffer(ids, dtype=np.int32, count=n))


def compile_table(reader: Any, named: dict[str, Any], expected: pa.DataType) -> AvroColumns | None:
    """The fast decoder of a table schema (fastavro-parsed ``reader`` and its named types), or
    None when the compiled decoder is not built or the table type has no fast layout."""
    if _avrocolumns is None:
        return None
    layout = _Layout(named)
    try:
        root = layout.build(reader)
    except (Unsupported, KeyError, TypeError, ValueError):
        return None
    if _arrow_of(root) != expected:
        return None
    return AvroColumns(root, layout.specs(root), named, reader)


# --- Arrow arrays from the column buffers ------------------------------------------------------
def _validity(raw: Any, n: int) -> tuple[pa.Buffer | None, int]:
    if raw is None:  # no null was written
        return None, 0
    valid = np.frombuffer(raw, dtype=np.uint8, count=n)
    nulls = n - int(np.count_nonzero(valid))
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little").tobytes()), nulls


def _assemble(t: Any, outs: tuple[Any, ...]) -> pa.Array:
    if isinstance(t, UnionView):
        t = t.target
    n, valid, data, offsets = outs[t.col]
    bitmap, nulls = _validity(valid, n)
    if t.kind == "bool":
        bits = np.packbits(np.frombuffer(data, dtype=np.uint8, count=n), bitorder="little").tobytes()
        return pa.Array.from_buffers(t.arrow, n, [bitmap, pa.py_buffer(bits)], null_count=nulls)
    if t.kind in ("binary", "string"):
        return pa.Array.from_buffers(t.arrow, n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)],
                                     null_count=nulls)
    if t.kind in ("struct", "union"):
        children = list(t.fields.values()) if t.kind == "struct" else t.members
        kids = [_assemble(c, outs) for c in children]
        return pa.Array.from_buffers(t.arrow, n, [bitmap], null_count=nulls, children=kids)
    if t.kind == "list":
        return pa.Array.from_buffers(t.arrow, n, [bitmap, pa.py_buffer(offsets)], null_count=nulls,
                                     children=[_assemble(t.item, outs)])
    if t.kind == "map":
        keys_n, _, key_data, key_offsets = outs[t.key]
        keys = pa.Array.from_buffers(pa.string(), keys_n, [None, pa.py_buffer(key_offsets), pa.py_buffer(key_data)])
        values = _assemble(t.value, outs)
        entries = pa.StructArray.from_arrays([keys, values], fields=[t.arrow.key_field, t.arrow.item_field])
        return pa.Array.from_buffers(t.arrow, n, [bitmap, pa.py_buffer(offsets)], null_count=nulls,
                                     children=[entries])
    return pa.Array.from_buffers(t.arrow, n, [bitmap, pa.py_buffer(data)], null_count=nulls)
