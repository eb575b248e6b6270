"""Typed keys and values of ``kafka-log`` record batches: the plans applied, the read mode applied.

The one place a batch of rows (the data source's record columns) gets its typed columns, used by
the data source's reader on Spark executors (:mod:`kafka_format.spark.typed_source`) and by the
local engine's export.  ``key``/``value`` are replaced by the planned struct columns; a row that
does not decode follows the mode:

* ``FAILFAST``: :class:`RecordDecodeError` naming the segment file, the batch position, the offset
  and the reason (the first such row of the batch);
* ``PERMISSIVE``: the typed column is null and ``_keyDecodeError``/``_valueDecodeError``
  (:data:`ERROR_TYPE`: why, the schema id, the original bytes) says why; those columns are null
  on the rows that decoded;
* ``DROPMALFORMED``: the row is left out.

Each call returns the rows that did not decode per column, so a caller can report them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from kafka_format.registry.typed import MODES, ColumnDecoder, ColumnPlan, DecodeProblem, TypedDecodeError

__all__ = [
    "ERROR_COLUMNS",
    "ERROR_TYPE",
    "MODES",
    "RecordDecodeError",
    "decode_batch",
    "segment_path",
    "typed_schema",
]

ERROR_COLUMNS = {"key": "_keyDecodeError", "value": "_valueDecodeError"}
ERROR_TYPE = pa.struct(
    [pa.field("reason", pa.string()), pa.field("schemaId", pa.int32()), pa.field("bytes", pa.binary())]
)


class RecordDecodeError(TypedDecodeError):
    """A record's key or value does not decode (FAILFAST): ``column`` and ``offset`` besides the
    file and batch position."""

    def __init__(self, column: str, offset: int, reason: str, *, path: str, position: int) -> None:
        self.column = column
        self.offset = offset
        super().__init__(f"record {column} does not decode at offset {offset}", path=path, position=position,
                         expected=f"a {column} in the schema's wire format", found=reason)


def typed_schema(schema: pa.Schema, plans: Mapping[str, ColumnPlan], errors: bool) -> pa.Schema:
    """``schema`` (the data source's rows) with the planned columns typed, and the error columns
    appended (key first) when ``errors``."""
    missing = [c for c in plans if schema.get_field_index(c) < 0]
    if missing:
        raise TypedDecodeError("typed columns need the record columns (granularity=record)",
                               expected="the kafka-log record columns " + ", ".join(missing),
                               found=", ".join(schema.names))
    for column, plan in plans.items():
        schema = schema.set(schema.get_field_index(column), pa.field(column, plan.arrow_type))
    if errors:
        for column in ("key", "value"):
            if column in plans:
                schema = schema.append(pa.field(ERROR_COLUMNS[column], ERROR_TYPE))
    return schema


def segment_path(batch: pa.RecordBatch, row: int) -> tuple[str, int, int]:
    """(the ``.log`` file, batch position, offset) of one row of a record batch."""
    def cell(name: str) -> Any:
        return batch.column(name)[row].as_py()

    path = f"{cell('logDir')}/{cell('topic')}-{cell('partition')}/{cell('segment'):020d}.log"
    return path, int(cell("position")), int(cell("offset"))


def decode_batch(
    batch: pa.RecordBatch, plans: Mapping[str, ColumnPlan], mode: str
) -> tuple[pa.RecordBatch, dict[str, int]]:
    """``batch`` with its planned columns decoded and ``mode`` applied (see the module doc), and
    the rows that did not decode per planned column."""
    counts: dict[str, int] = {}
    failed = np.zeros(batch.num_rows, dtype=bool)
    decoded: list[tuple[str, pa.Array, pa.Array, list[DecodeProblem]]] = []
    for column in ("key", "value"):
        plan = plans.get(column)
        if plan is not None:
            raw = batch.column(column)
            typed, problems = ColumnDecoder.for_plan(plan).decode(raw)
            counts[column] = len(problems)
            decoded.append((column, raw, typed, problems))
    if mode == "FAILFAST" and any(problems for *_, problems in decoded):
        column, first = min(((c, ps[0]) for c, _, _, ps in decoded if ps), key=lambda cp: cp[1].row)
        path, position, offset = segment_path(batch, first.row)
        raise RecordDecodeError(column, offset, first.reason, path=path, position=position)
    for column, _raw, typed, problems in decoded:
        batch = batch.set_column(batch.schema.get_field_index(column), pa.field(column, plans[column].arrow_type),
                                 typed)
        for p in problems:
            failed[p.row] = True
    if mode == "PERMISSIVE":
        for column, raw, _, problems in decoded:
            batch = batch.append_column(pa.field(ERROR_COLUMNS[column], ERROR_TYPE), _error_column(raw, problems))
    elif mode == "DROPMALFORMED" and failed.any():
        batch = batch.filter(pa.array(~failed))
    return batch, counts


def _error_column(raw: pa.Array, problems: list[DecodeProblem]) -> pa.Array:
    """ERROR_TYPE values: null, or (reason, schema id, original bytes) at the failed rows."""
    n = len(raw)
    if not problems:
        return pa.nulls(n, ERROR_TYPE)
    rows = np.array([p.row for p in problems], dtype=np.int64)
    found = pa.StructArray.from_arrays(
        [
            pa.array([p.reason for p in problems], pa.string()),
            pa.array([p.schema_id for p in problems], pa.int32()),
            raw.take(pa.array(rows)).cast(pa.binary()),
        ],
        fields=list(ERROR_TYPE),
    )
    index = np.full(n, len(problems), dtype=np.int64)  # the null after the failed rows
    index[rows] = np.arange(len(problems))
    return pa.concat_arrays([found, pa.nulls(1, ERROR_TYPE)]).take(pa.array(index))
