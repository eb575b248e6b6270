"""JSON Schema payloads parsed straight into Arrow columns: the compiled fast path of typed JSON columns.

The reference (:class:`~kafka_format.registry.jsonschema.JsonCodec`) parses every payload with
``json.loads`` and fits the value to the table schema's types, whatever the writer schema (which
only has to exist and be JSON Schema).  So the fast path compiles the table schema's shape
(:func:`~kafka_format.registry.jsonschema.json_shape`) once, against the table type's Arrow layout
(:func:`kafka_format.registry.columns.arrow_layout`), into a flat program: objects with a hash table
of their property names, maps, arrays, strings, integers, numbers, booleans.  ``_jsoncolumns.decode``
(C) parses every payload of an Arrow batch with Python's JSON grammar and writes the values into the
column buffers, one C call per batch, without a Python object per record.

``json.loads`` stays the reference: whatever the fast path is not sure of (a payload that is not
plain UTF-8, a value of another type than declared, a property or map key twice, a lone surrogate,
very long numbers, a column holding a value's JSON text, any malformed payload) makes the row
*fail* there, and the caller decodes that row with the reference, which also words its error.
``tests/registry/test_json_columns.py`` checks equality on generated schemas and documents.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from kafka_format.common.extensions import extension
from kafka_format.registry.columns import (
    Program,
    ProgramBuilder,
    Target,
    Unsupported,
    arrow_layout,
    arrow_of,
    decode_rows,
)

__all__ = ["JsonColumns", "Program", "available", "compile_table"]

if TYPE_CHECKING:
    from kafka_format.registry import _jsoncolumns
else:  # None without a C compiler (the reference decoders alone: registry/typed.py decides per plan)
    _jsoncolumns = extension("kafka_format.registry._jsoncolumns")

# node ops of _jsoncolumns.c
J_OBJECT, J_MAP, J_ARRAY, J_STRING, J_INTEGER, J_NUMBER, J_BOOLEAN, J_TEXT = range(8)
_SIMPLE = {"string": (J_STRING, "string"), "integer": (J_INTEGER, "int64"), "number": (J_NUMBER, "float64"),
           "boolean": (J_BOOLEAN, "bool"), "text": (J_TEXT, "string")}


def available() -> bool:
    """Whether the compiled decoder is built."""
    return _jsoncolumns is not None


def _fnv(raw: bytes) -> int:
    h = 2166136261
    for b in raw:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def name_table(names: Sequence[str]) -> bytes:
    """Property names as the C lookup reads them: int32 cap (a power of two, at least one slot
    empty), cap slots of (start, length, index; index -1 empty) by FNV-1a hash and linear probing,
    then the UTF-8 names."""
    cap = 1
    while cap < 2 * len(names) + 1:
        cap *= 2
    slots = [(0, 0, -1)] * cap
    text = b""
    for index, name in enumerate(names):
        raw = name.encode("utf-8", "surrogatepass")
        h = _fnv(raw)
        k = 0
        while slots[(h + k) & (cap - 1)][2] >= 0:
            k += 1
        slots[(h + k) & (cap - 1)] = (len(text), len(raw), index)
        text += raw
    return struct.pack("<i", cap) + b"".join(struct.pack("<iii", *s) for s in slots) + text


class _Compiler(ProgramBuilder):
    """A shape over its layout as nodes, parents before their children."""

    def node(self, shape: Any, target: Target) -> int:
        at = len(self.nodes)
        self.nodes.append(())
        if shape.kind == "object":
            if target.kind != "struct" or list(target.fields) != [n for n, _ in shape.fields]:
                raise Unsupported("an object that does not match its table type")
            if any(("\ud800" <= ch <= "\udfff") for n, _ in shape.fields for ch in n):
                raise Unsupported("a property name no payload can spell in UTF-8")
            kids = [self.node(sub, target.fields[n]) for n, sub in shape.fields]
            self.nodes[at] = (J_OBJECT, target.col, self.children(kids), len(kids),
                              self.const(name_table([n for n, _ in shape.fields])), 0)
        elif shape.kind == "map":
            if target.kind != "map" or target.key.kind != "string":
                raise Unsupported("a map that does not match its table type")
            value = self.node(shape.item, target.value)
            self.nodes[at] = (J_MAP, target.col, target.entries, target.key.col, value, 0)
        elif shape.kind == "array":
            if target.kind != "list":
                raise Unsupported("an array that does not match its table type")
            item = self.node(shape.item, target.item)
            self.nodes[at] = (J_ARRAY, target.col, item, 0, 0, 0)
        elif shape.kind in _SIMPLE:
            op, kind = _SIMPLE[shape.kind]
            if target.kind != kind:
                raise Unsupported(f"a {shape.kind} that does not match its table type")
            self.nodes[at] = (op, target.col, 0, 0, 0, 0)
        else:
            raise Unsupported(f"shape {shape.kind}")
        return at

    def program(self, shape: Any, root: Target) -> Program:
        self.node(shape, root)
        return Program(*self.packed())


class JsonColumns:
    """The fast decoder of one table schema: layout and program once, for every writer id."""

    def __init__(self, layout: Target, cols: list[tuple[int, int, tuple[int, ...], int]], program: Program) -> None:
        self.layout = layout
        self.cols = tuple(cols)
        self.table_program = program
        self.arrow_type = arrow_of(layout)

    def program(self) -> Program:
        """The program of any writer schema id (the table schema decides how a payload reads)."""
        return self.table_program

    def decode(self, arr: pa.Array, programs: Sequence[Program],
               slots: Mapping[int, int]) -> tuple[pa.Array, np.ndarray, np.ndarray]:
        """A binary column decoded in one C call (see :func:`kafka_format.registry.columns.decode_rows`)."""
        return decode_rows(_jsoncolumns.decode, tuple(p.as_tuple() for p in programs), self.cols, self.layout,
                           arr, slots)


def compile_table(shape: Any, expected: pa.DataType) -> JsonColumns | None:
    """The fast decoder of a table schema's shape (:func:`~kafka_format.registry.jsonschema.json_shape`),
    or None when the compiled decoder is not built or the table type has no fast layout."""
    if _jsoncolumns is None:
        return None
    try:
        layout, cols = arrow_layout(expected)
        program = _Compiler().program(shape, layout)
    except (Unsupported, KeyError, TypeError, ValueError):
        return None
    return JsonColumns(layout, cols, program)
