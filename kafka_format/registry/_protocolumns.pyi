"""Type stub of the compiled Protobuf column decoder (kafka_format/registry/_protocolumns.c with
_columns.c); used through kafka_format.registry.proto_columns."""

from typing import TypeAlias

from kafka_format.registry._columns import Decode

# Program plus the int32 index path of the table message in a writer's file (None: the table's own)
_Program: TypeAlias = tuple[bytes, bytes, tuple[bytes, ...], bytes | None]

decode: Decode[_Program]
