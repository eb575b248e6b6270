"""The table type of a typed Avro column cut into the Arrow arrays it is made of.

:class:`Layout` walks a (fastavro-parsed) reader schema by the rules of
:func:`kafka_format.registry.avro.avro_arrow_type` and gives every Arrow array of the table type an
output column of ``_avrocolumns`` (a struct's validity, a fixed-width value buffer, offsets and
bytes, list offsets): a :class:`Target` per position, a :class:`UnionView` per reader union (where
each branch writes).  :func:`assemble` builds the Arrow array back from the columns' buffers, without
copying them.  A table type that has no such layout (``null`` columns, a union whose branch the
reference tells by the value and could confuse, a recursive record) raises :class:`Unsupported`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kafka_format.registry.columns import (
    K_FIXED,
    K_LIST,
    K_STRUCT,
    K_VAR,
    Columns,
    Target,
    Unsupported,
    arrow_of,
    assemble,
    col_of,
)

__all__ = [
    "K_FIXED",
    "K_LIST",
    "K_STRUCT",
    "K_VAR",
    "Layout",
    "Target",
    "UnionView",
    "Unsupported",
    "arrow_of",
    "assemble",
    "col_of",
]

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")


@dataclass
class UnionView:
    """A reader union: where each of its branches writes (None: the null branch)."""

    schema: list[Any]
    target: Target  # the column of the union (nullable inner type, merged number, member struct)
    general: bool  # a struct of members (the branch as member index)
    branches: list[int | None]  # per reader branch: member index (general) or 0; None = null


class Layout(Columns):
    """Builds the Targets and column specs of a reader schema (``_Types.of``'s rules)."""

    def __init__(self, named: dict[str, Any]) -> None:
        super().__init__()
        self.named = named
        self.stack: list[str] = []

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
            if s in self.named and s not in PRIMITIVES:
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
            self._children(col, [col_of(item)])
            return Target("list", col, pa.list_(arrow_of(item)), item=item, schema=s)
        if t == "map":
            col, entries = self._col(K_LIST), self._col(K_STRUCT)
            key = Target("string", self._col(K_VAR), pa.string())
            value = self.build(s["values"])
            self._children(entries, [key.col, col_of(value)])
            self._children(col, [entries])
            return Target("map", col, pa.map_(pa.string(), arrow_of(value)), entries=entries, key=key,
                          value=value, schema=s)
        if isinstance(t, (dict, list)) or t in PRIMITIVES or t in self.named:
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
        self._children(col, [col_of(t) for t in fields.values()])
        arrow = pa.struct([pa.field(n, arrow_of(t)) for n, t in fields.items()])
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
        index = 0
        out: list[int | None] = []
        for b in branches:
            if b == "null":
                out.append(None)
            else:
                out.append(index)
                index += 1
        return UnionView(branches, target, True, out)


def _branch_kind(branch: Any, named: dict[str, Any]) -> tuple[Any, ...] | None:
    """How ``avro._branch_check`` recognises a value of this branch (None: a logical type or
    anything it may confuse, kept off the fast path)."""
    if isinstance(branch, str) and branch in named and branch not in PRIMITIVES:
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
