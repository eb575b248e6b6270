"""Type stub of the compiled JSON Schema column decoder (kafka_format/registry/_jsoncolumns.c with
_columns.c); used through kafka_format.registry.json_columns."""

from kafka_format.registry._columns import Decode, Program

decode: Decode[Program]
