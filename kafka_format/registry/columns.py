"""A table type cut into the Arrow arrays it is made of: the output columns of the compiled decoders.

The compiled typed-column decoders (``_avrocolumns``, ``_protocolumns``, ``_jsoncolumns``, one C
unit each over the shared ``_columns.c``) fill one output *column* per Arrow array of the table
type, nested ones included: a struct's validity, a fixed-width value buffer, offsets and bytes, list
offsets.  A :class:`Target` is one position of the table type and the column that fills it;
:class:`Columns` numbers the columns and gives their specs to C; :func:`arrow_layout` lays out any
Arrow type of the table types (Protobuf and JSON Schema tables are laid out from their Arrow type,
Avro's from its schema by :mod:`kafka_format.registry.avro_layout`); :func:`assemble` builds the
Arrow array back from the buffers a call returns, without copying them; :func:`decode_rows` is that
call over an Arrow binary column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = [
    "K_FIXED",
    "K_LIST",
    "K_STRUCT",
    "K_VAR",
    "MAX_DEPTH",
    "ST_BAD_MAGIC",
    "ST_BAD_OFFSETS",
    "ST_FAILED",
    "ST_NO_PROGRAM",
    "ST_NULL",
    "ST_OK",
    "ST_SHORT",
    "Columns",
    "Program",
    "ProgramBuilder",
    "Target",
    "Unsupported",
    "arrow_layout",
    "arrow_of",
    "assemble",
    "col_of",
    "decode_rows",
]

K_STRUCT, K_FIXED, K_VAR, K_LIST = range(4)  # column kinds of _columns.h
# row status: decoded; null input; shorter than the header; magic byte not 0; no program for the
# schema id; the program did not take the payload (the reference decides); offsets outside the data
ST_OK, ST_NULL, ST_SHORT, ST_BAD_MAGIC, ST_NO_PROGRAM, ST_FAILED, ST_BAD_OFFSETS = range(7)
#: Nesting a schema compiler follows at most (deeper: Unsupported, the reference decodes), below the
#: depth the C units' row loops allow (their MAX_DEPTH, 64) so that a compiled program never hits it.
MAX_DEPTH = 48


class Unsupported(Exception):
    """The table type has no fast layout (the reference decodes the column)."""


@dataclass
class Target:
    """One Arrow array of the table type and the output column that fills it."""

    kind: str  # bool int32 int64 float32 float64 binary string date32 ts decimal struct list map union
    col: int
    arrow: pa.DataType
    logical: str | None = None  # Avro: the table's logical type (fastavro key), for values it converts
    size: int = -1  # fixed: its size
    precision: int = 0
    scale: int = 0
    tz: bool = False
    fields: dict[str, Any] = field(default_factory=dict)  # struct: name -> Target (Avro: or UnionView)
    item: Any = None  # list: Target (Avro: or UnionView)
    entries: int = -1  # map: the entries struct column
    key: Any = None  # map: the key Target
    value: Any = None  # map: Target (Avro: or UnionView)
    members: list[Any] = field(default_factory=list)  # Avro union struct: member Targets
    schema: Any = None  # Avro: the reader schema of this position


@dataclass(frozen=True)
class Program:
    """A schema compiled for a C unit: its node table (int32 records, six or eight a node by unit),
    the children of its nodes (int32s) and its constants."""

    nodes: bytes
    kids: bytes
    consts: tuple[bytes, ...]

    def as_tuple(self) -> tuple[Any, ...]:
        """The program as the unit's ``decode`` takes it."""
        return self.nodes, self.kids, self.consts


class ProgramBuilder:
    """What a unit's schema compiler adds to as it goes: nodes (tuples of ints), the children
    lists of its nodes and its constants; :meth:`packed` is them as a :class:`Program` holds them."""

    def __init__(self, *first: tuple[int, ...]) -> None:
        self.nodes: list[tuple[int, ...]] = list(first)
        self.kids: list[int] = []
        self.consts: list[bytes] = []

    def children(self, nodes: Sequence[int]) -> int:
        """Where the children ``nodes`` start in the children list."""
        first = len(self.kids)
        self.kids.extend(nodes)
        return first

    def const(self, raw: bytes) -> int:
        """The index of constant ``raw``."""
        self.consts.append(raw)
        return len(self.consts) - 1

    def packed(self) -> tuple[bytes, bytes, tuple[bytes, ...]]:
        """Nodes and children as little-endian int32s, and the constants."""
        return (np.asarray(self.nodes, dtype=np.int32).tobytes(), np.asarray(self.kids, dtype=np.int32).tobytes(),
                tuple(self.consts))


def col_of(t: Any) -> int:
    """The output column of a position (an Avro union's: its column)."""
    return t.target.col if hasattr(t, "target") else t.col


def arrow_of(t: Any) -> pa.DataType:
    """The Arrow type of a position."""
    return t.target.arrow if hasattr(t, "target") else t.arrow


class Columns:
    """The output columns of a layout: numbered in creation order, children after their parent."""

    def __init__(self) -> None:
        self.cols: list[tuple[int, int, tuple[int, ...]]] = []

    def _col(self, kind: int, width: int = 0) -> int:
        self.cols.append((kind, width, ()))
        return len(self.cols) - 1

    def _children(self, col: int, children: Sequence[int]) -> None:
        kind, width, _ = self.cols[col]
        self.cols[col] = (kind, width, tuple(children))

    def specs(self, root: Any) -> list[tuple[int, int, tuple[int, ...], int]]:
        """The column specs for C: (kind, width, children, per_row), per_row for the columns with
        one slot per row (not inside a list or map)."""
        per_row: set[int] = set()
        stack = [col_of(root)]
        while stack:
            col = stack.pop()
            per_row.add(col)
            kind, _, children = self.cols[col]
            if kind == K_STRUCT:
                stack.extend(children)
        return [(kind, width, children, int(i in per_row)) for i, (kind, width, children) in enumerate(self.cols)]


_SIMPLE: dict[Any, tuple[str, int]] = {
    pa.bool_(): ("bool", 1), pa.int32(): ("int32", 4), pa.int64(): ("int64", 8),
    pa.float32(): ("float32", 4), pa.float64(): ("float64", 8), pa.binary(): ("binary", 0),
    pa.string(): ("string", 0), pa.date32(): ("date32", 4),
}


class ArrowLayout(Columns):
    """Targets of an Arrow type (structs, lists, maps and the primitives the table types use)."""

    def build(self, t: pa.DataType) -> Target:
        simple = _SIMPLE.get(t)
        if simple is not None:
            kind, width = simple
            return Target(kind, self._col(K_VAR if width == 0 else K_FIXED, width), t)
        if pa.types.is_timestamp(t) and t.unit == "us":
            return Target("ts", self._col(K_FIXED, 8), t, tz=t.tz is not None)
        if pa.types.is_decimal128(t):
            return Target("decimal", self._col(K_FIXED, 16), t, precision=t.precision, scale=t.scale)
        if pa.types.is_struct(t):
            col = self._col(K_STRUCT)
            fields = {}
            for f in t:
                if f.name in fields:
                    raise Unsupported(f"struct field {f.name!r} twice")
                fields[f.name] = self.build(f.type)
            self._children(col, [c.col for c in fields.values()])
            return Target("struct", col, t, fields=fields)
        if pa.types.is_map(t):
            col, entries = self._col(K_LIST), self._col(K_STRUCT)
            key, value = self.build(t.key_type), self.build(t.item_type)
            self._children(entries, [key.col, value.col])
            self._children(col, [entries])
            return Target("map", col, t, entries=entries, key=key, value=value)
        if pa.types.is_list(t):
            col = self._col(K_LIST)
            item = self.build(t.value_type)
            self._children(col, [item.col])
            return Target("list", col, t, item=item)
        raise Unsupported(f"Arrow type {t}")


def arrow_layout(t: pa.DataType) -> tuple[Target, list[tuple[int, int, tuple[int, ...], int]]]:
    """The layout of an Arrow type and its column specs (:class:`Unsupported` when it has none)."""
    layout = ArrowLayout()
    root = layout.build(t)
    return root, layout.specs(root)


def _validity(raw: Any, n: int) -> tuple[pa.Buffer | None, int]:
    if raw is None:  # no null was written
        return None, 0
    valid = np.frombuffer(raw, dtype=np.uint8, count=n)
    nulls = n - int(np.count_nonzero(valid))
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little").tobytes()), nulls


def assemble(t: Any, outs: tuple[Any, ...]) -> pa.Array:
    """The Arrow array of position ``t`` from a decode call's column buffers (no copy)."""
    if hasattr(t, "target"):
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
        kids = [assemble(c, outs) for c in children]
        return pa.Array.from_buffers(t.arrow, n, [bitmap], null_count=nulls, children=kids)
    if t.kind == "list":
        return pa.Array.from_buffers(t.arrow, n, [bitmap, pa.py_buffer(offsets)], null_count=nulls,
                                     children=[assemble(t.item, outs)])
    if t.kind == "map":
        keys, values = assemble(t.key, outs), assemble(t.value, outs)
        entries = pa.StructArray.from_arrays([keys, values], fields=[t.arrow.key_field, t.arrow.item_field])
        return pa.Array.from_buffers(t.arrow, n, [bitmap, pa.py_buffer(offsets)], null_count=nulls,
                                     children=[entries])
    return pa.Array.from_buffers(t.arrow, n, [bitmap, pa.py_buffer(data)], null_count=nulls)


def decode_rows(decode: Any, programs: tuple[Any, ...], cols: tuple[Any, ...], layout: Any, arr: pa.Array,
                slots: Mapping[int, int]) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """A binary column of wire-format values decoded by one C call (``decode``: a compiled module's
    ``decode``): each row's schema id picks ``programs[slots[id]]``.  Returns the typed column
    (null wherever the status is not ``ST_OK``), the status of every row (``ST_*``) and its schema
    id (-1 without a header)."""
    n = len(arr)
    if n == 0:
        return pa.array([], type=arrow_of(layout)), np.zeros(0, np.uint8), np.zeros(0, np.int32)
    if not (pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)):
        raise TypeError(f"expected a binary column, found {arr.type}")
    validity, offsets, data = arr.buffers()[:3]
    outs, status, ids = decode(
        programs, cols, col_of(layout), data if data is not None else b"",
        offsets, int(pa.types.is_large_binary(arr.type)), arr.offset, n, validity,
        np.fromiter(slots.keys(), dtype=np.int32, count=len(slots)).tobytes(),
        np.fromiter(slots.values(), dtype=np.int32, count=len(slots)).tobytes(),
    )
    return (assemble(layout, outs), np.frombuffer(status, dtype=np.uint8, count=n),
            np.frombuffer(ids, dtype=np.int32, count=n))
