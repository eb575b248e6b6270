"""Stub only: ``_columns.c`` is no module at run time but is compiled into each typed-column extension
(``_avrocolumns``, ``_protocolumns``, ``_jsoncolumns``); these are the types it gives them all (its
``kc_decode``, the one row loop; the format's part is the program a ``decode`` call takes)."""

from typing import Generic, Protocol, TypeAlias, TypeVar, final, type_check_only

from kafka_format.common._buffers import BufferLike

@final
@type_check_only
class Buffer:
    """Column memory of one decode call (read-only buffer protocol; not a name of any module)."""

    def __buffer__(self, flags: int, /) -> memoryview: ...

#: A column of the layout: (kind, width, children (later columns), per_row: one slot per row reserved).
ColumnSpec: TypeAlias = tuple[int, int, tuple[int, ...], int]
#: One column decoded: (length, validity or None when every slot is valid, data or None, offsets or
#: None); an empty buffer is ``b""``.
Column: TypeAlias = tuple[int, Buffer | bytes | None, Buffer | bytes | None, Buffer | bytes | None]
#: A compiled program (registry/columns.py ``Program.as_tuple``): int32 node records, the int32
#: children of the nodes, bytes constants (proto_columns' adds the table message's index path).
Program: TypeAlias = tuple[bytes, bytes, tuple[bytes, ...]]
#: (the columns, one status byte per row (ST_*), the int32 schema id of every row (-1 without a header)).
Decoded: TypeAlias = tuple[tuple[Column, ...], Buffer, Buffer]

_Program_contra = TypeVar("_Program_contra", contravariant=True)

class Decode(Protocol, Generic[_Program_contra]):
    """``decode`` of a typed-column extension: rows first .. first+n of an Arrow binary array (data,
    offsets int32 or int64 when wide, validity bitmap or None), each a Schema Registry wire-format
    value; keys/slots (int32 bytes): the schema ids with a program and its index in programs; root:
    the column of a row's value."""

    def __call__(self, programs: tuple[_Program_contra, ...], cols: tuple[ColumnSpec, ...], root: int,
                 data: BufferLike, offsets: BufferLike, wide: int, first: int, n: int,
                 validity: BufferLike | None, keys: BufferLike, slots: BufferLike, /) -> Decoded: ...
