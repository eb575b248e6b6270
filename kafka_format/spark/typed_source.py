"""The ``kafka-log`` source with typed keys and values decoded in its own reader (exports).

A typed export reads the log dirs through a subclass of the session's ``kafka-log`` source
registered under a name of its own (``kafka-log-typed-<plan token>``) that carries the column
plans: its schema has the typed struct columns (and, unless the mode is FAILFAST, the
``_keyDecodeError``/``_valueDecodeError`` columns), and its readers decode each Arrow batch they
yield with :func:`kafka_format.registry.batches.decode_batch` before it leaves the Python worker.
The typed values cross from Python to the JVM once, with the rest of the row, instead of the
binary column going back to Python for an Arrow UDF (:func:`kafka_format.spark.typed.decode_typed`,
kept for DataFrames of any origin).

FAILFAST stops the task with the record's file, position, offset and reason (the marker
:func:`kafka_format.spark.typed.typed_error` reads back on the driver).  For PERMISSIVE and
DROPMALFORMED the reader keeps every row with its error column: the caller counts the failed rows
with Spark (observed metrics of the query that writes them) and drops them for DROPMALFORMED.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from kafka_format.read.split_reader import arrow_schema
from kafka_format.registry.batches import RecordDecodeError, decode_batch, typed_schema
from kafka_format.registry.typed import ColumnPlan
from kafka_format.spark.datasource import (
    FilterPushdown,
    KafkaLogDataSource,
    KafkaLogReader,
    KafkaLogStreamReader,
)

__all__ = ["failfast_marker", "source_name", "typed_source_class"]

MARK = "klogs-typed-decode"


def failfast_marker(err: RecordDecodeError) -> str:
    """The text a task fails with for a record that does not decode (read back by ``typed_error``)."""
    reason = str(err.found or "").replace("\n", " ").replace("|", "/")
    return f"{MARK}|{err.column}|{err.path}|{err.position}|{err.offset}|{reason}|end"


def _typed_batches(batches: Iterator[pa.RecordBatch], plans: Mapping[str, ColumnPlan],
                   mode: str) -> Iterator[pa.RecordBatch]:
    keep = "FAILFAST" if mode == "FAILFAST" else "PERMISSIVE"  # DROPMALFORMED: Spark counts, then drops
    for batch in batches:
        try:
            decoded = decode_batch(batch, plans, keep)[0]
        except RecordDecodeError as err:
            raise RuntimeError(failfast_marker(err)) from None
        yield decoded


class TypedKafkaLogReader(KafkaLogReader):
    """The batch reader, typed columns decoded per Arrow batch on the executor."""

    def __init__(self, opts: Any, plans: Mapping[str, ColumnPlan], mode: str) -> None:
        super().__init__(opts)
        self.typed_plans = dict(plans)
        self.typed_mode = mode

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Executor: the split's rows with typed key/value."""
        return _typed_batches(super().read(partition), self.typed_plans, self.typed_mode)


class PushingTypedKafkaLogReader(FilterPushdown, TypedKafkaLogReader):
    """:class:`TypedKafkaLogReader` that prunes by pushed filters (where reads are scan-scoped)."""


class TypedKafkaLogStreamReader(KafkaLogStreamReader):
    """The stream reader, typed columns decoded per Arrow batch on the executor."""

    def __init__(self, opts: Any, plans: Mapping[str, ColumnPlan], mode: str) -> None:
        super().__init__(opts)
        self.typed_plans = dict(plans)
        self.typed_mode = mode

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Executor: the micro-batch split's rows with typed key/value."""
        return _typed_batches(super().read(partition), self.typed_plans, self.typed_mode)


def typed_source_class(base: type[KafkaLogDataSource], plans: Mapping[str, ColumnPlan], mode: str,
                       token: str) -> type[KafkaLogDataSource]:
    """A subclass of the (session-sized) ``kafka-log`` source class that decodes ``plans``."""
    name = source_name(token)
    frozen = dict(plans)

    def schema(self: Any) -> StructType:
        return from_arrow_schema(typed_schema(arrow_schema(self._parsed()), frozen, mode != "FAILFAST"))

    def reader(self: Any, schema: StructType) -> TypedKafkaLogReader:
        plain = base.reader(self, schema)
        cls = PushingTypedKafkaLogReader if isinstance(plain, FilterPushdown) else TypedKafkaLogReader
        return cls(plain.opts, frozen, mode)

    def stream_reader(self: Any, schema: StructType) -> TypedKafkaLogStreamReader:
        return TypedKafkaLogStreamReader(base.streamReader(self, schema).opts, frozen, mode)

    return type(base.__name__, (base,), {
        "__module__": base.__module__, "__doc__": base.__doc__,
        "name": classmethod(lambda cls: name), "schema": schema, "reader": reader,
        "streamReader": stream_reader,
    })


def source_name(token: str) -> str:
    """The format name of the typed source of one plan."""
    return f"kafka-log-typed-{token}"
