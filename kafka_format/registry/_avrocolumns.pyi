"""Type stub of the compiled Avro column decoder (kafka_format/registry/_avrocolumns.c with
_columns.c); used through kafka_format.registry.avro_columns."""

from kafka_format.registry._columns import Decode, Program

decode: Decode[Program]
