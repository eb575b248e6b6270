"""Protobuf payloads decoded straight into Arrow columns: the compiled fast path of typed Protobuf columns.

The reference (:mod:`kafka_format.registry.protobuf` + :class:`~kafka_format.registry.typed.ColumnDecoder`)
parses every payload with the table (reader) message's class, whatever the writer schema: the
writer's file only names the message (Confluent's message indexes), which must be the table's.
So the fast path compiles the table message once, against the table type's Arrow layout
(:func:`kafka_format.registry.columns.arrow_layout`), into a flat program of message and field
nodes (field-number dispatch, wire types, presence, oneofs, enum names, defaults); per writer
schema id it only adds the index path of the table message in that writer's file.
``_protocolumns.decode`` (C) runs it over every payload of an Arrow batch, as upb parses it (see
the C file for the rules), filling the column buffers without a Python object per record.

upb stays the reference: whatever the fast path is not sure of (invalid UTF-8, groups, unknown
values of closed enums, a map key twice, a oneof message member overwritten, extension ranges,
timestamps outside datetime's range, any malformed payload) makes the row *fail* there, and the
caller decodes that row with the reference, which also words its error.  A table type the fast
path cannot lay out makes :func:`compile_table` return None: the reference decodes everything.
``tests/registry/test_proto_columns.py`` checks equality on generated schemas, evolutions and
damaged payloads.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from kafka_format.common.extensions import extension
from kafka_format.registry import columns
from kafka_format.registry.columns import MAX_DEPTH, Target, Unsupported, arrow_layout, arrow_of, decode_rows

__all__ = ["Program", "ProtoColumns", "available", "compile_table", "message_path"]

if TYPE_CHECKING:
    from kafka_format.registry import _protocolumns
else:  # None without a C compiler (the reference decoders alone: registry/typed.py decides per plan)
    _protocolumns = extension("kafka_format.registry._protocolumns")

# node ops of _protocolumns.c
(
    P_MSG, P_INT32, P_INT64, P_UINT32, P_UINT64, P_SINT32, P_SINT64, P_FIXED32, P_FIXED64, P_SFIXED32,
    P_SFIXED64, P_FLOAT, P_DOUBLE, P_BOOL, P_STRING, P_BYTES, P_ENUM, P_MESSAGE, P_TIMESTAMP, P_MAP, P_FAIL,
) = range(21)
F_REPEATED, F_PRESENCE, F_CLOSED = 1, 2, 4
M_TIMESTAMP, M_ENTRY = 1, 2
DENSE_MAX = 4096
TIMESTAMP = "google.protobuf.Timestamp"


def available() -> bool:
    """Whether the compiled decoder is built."""
    return _protocolumns is not None


@dataclass(frozen=True)
class Program(columns.Program):
    """The table message compiled (nodes: int32 x 8) and the index path of that message in one
    writer schema (int32s; None: the writer has no such message)."""

    path: bytes | None

    def as_tuple(self) -> tuple[Any, ...]:
        return (*super().as_tuple(), self.path)


def _repeated(fd: Any) -> bool:
    flag = getattr(fd, "is_repeated", None)
    return bool(flag) if flag is not None else fd.label == type(fd).LABEL_REPEATED


def _scalar_op(fd: Any) -> int:
    FD = type(fd)
    ops = {
        FD.TYPE_INT32: P_INT32, FD.TYPE_INT64: P_INT64, FD.TYPE_UINT32: P_UINT32, FD.TYPE_UINT64: P_UINT64,
        FD.TYPE_SINT32: P_SINT32, FD.TYPE_SINT64: P_SINT64, FD.TYPE_FIXED32: P_FIXED32,
        FD.TYPE_FIXED64: P_FIXED64, FD.TYPE_SFIXED32: P_SFIXED32, FD.TYPE_SFIXED64: P_SFIXED64,
        FD.TYPE_FLOAT: P_FLOAT, FD.TYPE_DOUBLE: P_DOUBLE, FD.TYPE_BOOL: P_BOOL, FD.TYPE_STRING: P_STRING,
        FD.TYPE_BYTES: P_BYTES, FD.TYPE_ENUM: P_ENUM,
    }
    if fd.type not in ops:
        raise Unsupported(f"field {fd.full_name}: type {fd.type}")
    return ops[fd.type]


# the table kind of each scalar op (registry/protobuf.py's _scalar_type)
_KIND = {
    P_INT32: "int32", P_SINT32: "int32", P_SFIXED32: "int32", P_INT64: "int64", P_SINT64: "int64",
    P_SFIXED64: "int64", P_UINT32: "int64", P_FIXED32: "int64", P_UINT64: "decimal", P_FIXED64: "decimal",
    P_FLOAT: "float32", P_DOUBLE: "float64", P_BOOL: "bool", P_STRING: "string", P_ENUM: "string",
    P_BYTES: "binary",
}


class _Compiler(columns.ProgramBuilder):
    """The table message as nodes over its layout (``_Mapper``'s rules of registry/protobuf.py)."""

    def __init__(self) -> None:
        super().__init__((P_MSG, -1, 0, 0, 0, -1, 0, 0))
        self.depth = 0

    def node(self, *ints: int) -> int:
        self.nodes.append(tuple(ints) + (0,) * (8 - len(ints)))
        return len(self.nodes) - 1

    def program(self, desc: Any, root: Target) -> tuple[bytes, bytes, tuple[bytes, ...]]:
        top = self.message(desc, root, entry=False)
        self.nodes[0] = self.nodes[top]
        return self.packed()

    def message(self, desc: Any, target: Target, *, entry: bool) -> int:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Unsupported("messages nest too deep")
        try:
            if desc.full_name == TIMESTAMP:
                return self._timestamp(desc, target)
            if target.kind != "struct" or list(target.fields) != [fd.name for fd in desc.fields]:
                raise Unsupported(f"message {desc.full_name} does not match its table type")
            # A oneof of one member (proto3's ``optional`` makes one per field) clears nothing else:
            # its member reads as a plain field with presence.
            shared = [o for o in desc.oneofs if len(o.fields) > 1]
            oneofs = {o.full_name: i for i, o in enumerate(shared)}
            fields = [
                self.field(fd, target.fields[fd.name], oneofs, entry=entry) for fd in desc.fields
            ]
            first = self.children(fields)
            ext = b"".join(struct.pack("<ii", a, b) for a, b in desc.extension_ranges)
            return self.node(P_MSG, target.col, first, len(fields), self._dispatch(desc), self.const(ext) if ext else -1,
                             len(oneofs), M_ENTRY if entry else 0)
        finally:
            self.depth -= 1

    def _timestamp(self, desc: Any, target: Target) -> int:
        if target.kind != "ts" or not target.tz:
            raise Unsupported("a Timestamp whose table type is not a timestamp")
        by = desc.fields_by_name
        seconds, nanos = by.get("seconds"), by.get("nanos")
        if seconds is None or nanos is None or len(desc.fields) != 2 or (seconds.number, nanos.number) != (1, 2):
            raise Unsupported("an unusual google.protobuf.Timestamp")
        first = self.children([self.node(P_INT64, -1, -1, 0, 0, -1, -1, 1), self.node(P_INT32, -1, -1, 0, 0, -1, -1, 2)])
        table = struct.pack("<ii", 0, 3) + struct.pack("<iii", -1, 0, 1)
        return self.node(P_MSG, target.col, first, 2, self.const(table), -1, 0, M_TIMESTAMP)

    def _dispatch(self, desc: Any) -> int:
        numbers = {fd.number: i for i, fd in enumerate(desc.fields)}
        top = max(numbers, default=0)
        if top < DENSE_MAX:
            table = [numbers.get(n, -1) for n in range(top + 1)]
            return self.const(struct.pack("<ii", 0, len(table)) + struct.pack(f"<{len(table)}i", *table))
        pairs = sorted(numbers.items())
        return self.const(struct.pack("<ii", 1, len(pairs)) + b"".join(struct.pack("<ii", n, i) for n, i in pairs))

    def field(self, fd: Any, target: Target, oneofs: Mapping[str, int], *, entry: bool) -> int:
        FD = type(fd)
        oneof = oneofs.get(fd.containing_oneof.full_name, -1) if fd.containing_oneof is not None else -1
        is_map = fd.message_type is not None and fd.message_type.GetOptions().map_entry
        if is_map:
            if target.kind != "map":
                raise Unsupported(f"map {fd.full_name} does not match its table type")
            entries = Target("struct", target.entries, pa.struct([target.arrow.key_field, target.arrow.item_field]),
                             fields={"key": target.key, "value": target.value})
            child = self.message(fd.message_type, entries, entry=True)
            return self.node(P_MAP, target.entries, target.col, F_REPEATED, child, -1, -1, fd.number)
        repeated = _repeated(fd)
        list_col = -1
        if repeated:
            if target.kind != "list":
                raise Unsupported(f"repeated {fd.full_name} does not match its table type")
            list_col, target = target.col, target.item
        flags = (F_REPEATED if repeated else 0) | (F_PRESENCE if fd.has_presence and not entry else 0)
        if fd.type == FD.TYPE_GROUP:  # decoded by the reference wherever it appears
            return self.node(P_FAIL, target.col, list_col, flags | (0 if repeated else F_PRESENCE), 0, oneof, -1,
                             fd.number)
        if fd.type == FD.TYPE_MESSAGE:
            op = P_TIMESTAMP if fd.message_type.full_name == TIMESTAMP else P_MESSAGE
            child = self.message(fd.message_type, target, entry=False)
            return self.node(op, target.col, list_col, flags, child, oneof, -1, fd.number)
        op = _scalar_op(fd)
        if _KIND[op] != target.kind or (op in (P_UINT64, P_FIXED64) and (target.precision, target.scale) != (20, 0)):
            raise Unsupported(f"field {fd.full_name} does not match its table type")
        aux = 0
        if op == P_ENUM:
            if getattr(fd.enum_type, "is_closed", True):  # proto2 enums: unknown numbers left to upb
                flags |= F_CLOSED
            aux = self._enum(fd.enum_type)
        default = -1 if repeated or flags & F_PRESENCE else self._default(fd, target)
        return self.node(op, target.col, list_col, flags, aux, oneof, default, fd.number)

    def _enum(self, enum: Any) -> int:
        names = {v.number: v.name for v in enum.values}  # the reference's dict: the last name of a number
        head, text = [struct.pack("<i", len(names))], b""
        for number in sorted(names):
            raw = names[number].encode("utf-8")
            head.append(struct.pack("<iii", number, len(text), len(raw)))
            text += raw
        return self.const(b"".join(head) + text)

    def _default(self, fd: Any, target: Target) -> int:
        """The value the reference reads for an absent field without presence (its converter over
        the descriptor's default, then pyarrow), in its column's form; -1 for zeros/empty."""
        from kafka_format.registry.protobuf import _Mapper

        _, convert = _Mapper().single(fd)
        arr = pa.array([convert(fd.default_value)], type=target.arrow)
        value = arr[0].as_py()
        if target.kind in ("string", "binary"):
            data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        elif target.kind == "bool":
            data = b"\x01" if value else b"\x00"
        else:
            width = target.arrow.bit_width // 8
            data = arr.buffers()[1].to_pybytes()[:width]
        return -1 if not data.strip(b"\x00") else self.const(data)


def message_path(file: Any, full_name: str) -> list[int] | None:
    """The message-index path of message ``full_name`` in a file descriptor (the order
    :meth:`~kafka_format.registry.protobuf.ProtoSchema.message_at` reads), or None."""

    def walk(messages: Sequence[Any], prefix: list[int]) -> list[int] | None:
        for i, m in enumerate(messages):
            if m.full_name == full_name:
                return [*prefix, i]
            found = walk(list(m.nested_types), [*prefix, i])
            if found is not None:
                return found
        return None

    return walk(list(file.message_types_by_name.values()), [])


class ProtoColumns:
    """The fast decoder of one table message: layout and program once, an index path per writer."""

    def __init__(self, layout: Target, cols: list[tuple[int, int, tuple[int, ...], int]], message: str,
                 compiled: tuple[bytes, bytes, tuple[bytes, ...]]) -> None:
        self.layout = layout
        self.cols = tuple(cols)
        self.message = message
        self.compiled = compiled
        self.arrow_type = arrow_of(layout)

    def program(self, writer: Any) -> Program:
        """The program of one writer schema (a compiled ``ProtoSchema``): the table message's path
        in it (rows naming another message fail there and the reference words the error)."""
        path = message_path(writer.file, self.message)
        raw = None if path is None else np.asarray(path, dtype=np.int32).tobytes()
        return Program(*self.compiled, raw)

    def decode(self, arr: pa.Array, programs: Sequence[Program],
               slots: Mapping[int, int]) -> tuple[pa.Array, np.ndarray, np.ndarray]:
        """A binary column decoded in one C call (see :func:`kafka_format.registry.columns.decode_rows`)."""
        return decode_rows(_protocolumns.decode, tuple(p.as_tuple() for p in programs), self.cols, self.layout,
                           arr, slots)


def compile_table(reader: Any, message: str, expected: pa.DataType) -> ProtoColumns | None:
    """The fast decoder of a table message (``reader``: a compiled ``ProtoSchema``), or None when
    the compiled decoder is not built or the table type has no fast layout."""
    if _protocolumns is None:
        return None
    try:
        layout, cols = arrow_layout(expected)
        compiled = _Compiler().program(reader.message(message), layout)
    except (Unsupported, KeyError, TypeError, ValueError):
        return None
    return ProtoColumns(layout, cols, message, compiled)
