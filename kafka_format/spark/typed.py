"""Typed ``key``/``value`` columns over a ``kafka-log`` DataFrame (Schema Registry wire format).

:func:`decode_typed` replaces ``key`` and/or ``value`` (binary) by struct columns decoded with
their schemas (docs/jobs/export.md, "Typed keys and values"): one Arrow UDF per typed column (only
that column travels to Python and back), each Arrow batch decoded column-wise by
:class:`kafka_format.registry.typed.ColumnDecoder` (schemas parsed once per schema id and Python
worker).  Rows that do not decode follow the read ``mode``:

* ``FAILFAST`` (default): the job stops (Spark's ``raise_error`` on the first such row) with
  :class:`~kafka_format.registry.typed.TypedDecodeError` naming the segment file, the batch
  position, the offset and the reason;
* ``PERMISSIVE``: the typed column is null and ``_keyDecodeError`` / ``_valueDecodeError``
  (``struct<reason string, schemaId int, bytes binary>``, null for rows that decoded) keeps the
  reason and the original bytes;
* ``DROPMALFORMED``: the row is left out.

PERMISSIVE and DROPMALFORMED count every failed row (:meth:`TypedColumns.error_counts`, Spark
accumulators).
Null keys and values (tombstones) stay null and are not errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame

from kafka_format.registry.typed import AS_TYPES, ColumnDecoder, ColumnPlan, TypedDecodeError, plan_column

__all__ = [
    "TypedColumns",
    "decode_typed",
    "typed_columns",
    "typed_error",
    "ERROR_COLUMNS",
    "ERROR_TYPE",
    "MODES",
]

MODES = ("FAILFAST", "PERMISSIVE", "DROPMALFORMED")
ERROR_COLUMNS = {"key": "_keyDecodeError", "value": "_valueDecodeError"}
ERROR_TYPE = pa.struct(
    [pa.field("reason", pa.string()), pa.field("schemaId", pa.int32()), pa.field("bytes", pa.binary())]
)
_MARK = "klogs-typed-decode"
_MARK_RE = re.compile(
    _MARK + r"\|(?P<column>[^|]*)\|(?P<path>[^|]*)\|(?P<position>-?\d+)\|(?P<offset>-?\d+)\|"
    r"(?P<reason>[^|\n]*)\|end"
)
_NEEDED = ("logDir", "topic", "partition", "segment", "position", "offset")


@dataclass
class TypedColumns:
    """The plans of the typed columns of one read, the mode, and the counts of failed rows."""

    plans: dict[str, ColumnPlan]
    mode: str = "FAILFAST"
    untyped: tuple[str, ...] = ()  # ``auto`` columns left binary (no subject)
    _counters: dict[str, Any] = field(default_factory=dict, repr=False)

    def apply(self, df: DataFrame) -> DataFrame:
        """``df`` with the planned columns decoded (see the module doc)."""
        if not self.plans:
            return df
        missing = [c for c in (*self.plans, *_NEEDED) if c not in df.columns]
        if missing:
            raise TypedDecodeError(
                "the DataFrame lacks columns typed decoding needs (granularity=batch?)",
                expected="the kafka-log record columns " + ", ".join(missing),
                found=", ".join(df.columns),
            )
        sc = df.sparkSession.sparkContext
        for c in self.plans:
            if c not in self._counters:
                self._counters[c] = sc.accumulator(0)
        return _decode(df, dict(self.plans), self.mode, dict(self._counters))

    def error_counts(self) -> dict[str, int]:
        """Rows that did not decode, per column, in the jobs run so far."""
        return {c: int(acc.value) for c, acc in self._counters.items()}

    def report(self) -> dict[str, Any]:
        """A JSON-ready summary: columns, subjects, table types, mode, failed rows."""
        from kafka_format.registry.typed import describe

        return {
            "columns": [describe(p) for p in self.plans.values()],
            "untyped": list(self.untyped),
            "mode": self.mode,
            "decodeErrors": self.error_counts(),
        }


def typed_columns(
    source: Any,
    *,
    key_as: str = "binary",
    value_as: str = "binary",
    topic: str | None = None,
    key_subject: str | None = None,
    value_subject: str | None = None,
    key_schema: str | None = None,
    value_schema: str | None = None,
    key_message: str | None = None,
    value_message: str | None = None,
    mode: str = "FAILFAST",
) -> TypedColumns:
    """Plan the typed columns (driver side; no data read).  ``source``: a schema source
    (:mod:`kafka_format.registry.sources`); ``*_schema``: a reader schema text (the table schema;
    default: the latest version of ``*_subject``, default ``<topic>-key``/``<topic>-value``);
    ``*_message``: the Protobuf message of the table (default: the schema's first message)."""
    mode = mode.upper()
    if mode not in MODES:
        raise ValueError(f"mode must be one of {list(MODES)}, got {mode!r}")
    plans: dict[str, ColumnPlan] = {}
    untyped: list[str] = []
    for column, as_type, subject, schema, message in (
        ("key", key_as, key_subject, key_schema, key_message),
        ("value", value_as, value_subject, value_schema, value_message),
    ):
        if as_type not in AS_TYPES:
            continue
        plan = plan_column(
            source, column, as_type, topic=topic, subject=subject, reader_schema=schema, message=message
        )
        if plan is None:
            untyped.append(column)
        else:
            plans[column] = plan
    return TypedColumns(plans, mode, tuple(untyped))


def decode_typed(
    df: DataFrame,
    source: Any,
    *,
    key_as: str = "binary",
    value_as: str = "binary",
    topic: str | None = None,
    mode: str = "FAILFAST",
    **kwargs: Any,
) -> tuple[DataFrame, TypedColumns]:
    """The data source's DataFrame with typed key/value columns, and the :class:`TypedColumns`
    whose :meth:`~TypedColumns.error_counts` tell how many rows failed once an action ran.
    Keyword arguments as :func:`typed_columns`."""
    typed = typed_columns(source, key_as=key_as, value_as=value_as, topic=topic, mode=mode, **kwargs)
    return typed.apply(df), typed


def _spark_type(t: pa.DataType) -> Any:
    from pyspark.sql.pandas.types import from_arrow_type

    return from_arrow_type(t)


def _decode(
    df: DataFrame, plans: Mapping[str, ColumnPlan], mode: str, counters: Mapping[str, Any]
) -> DataFrame:
    """One Arrow UDF per typed column: only that column travels to Python and back, as
    ``struct<v: table type, err: ERROR_TYPE>``; the mode is applied on the JVM side."""
    from pyspark.sql import functions as F
    from pyspark.sql.functions import arrow_udf

    out = df
    for c, plan in plans.items():
        tmp = f"__klogs_typed_{c}"
        result_type = pa.struct([pa.field("v", plan.arrow_type), pa.field("err", ERROR_TYPE)])
        udf = arrow_udf(_column_udf(plan, counters[c], mode != "FAILFAST"), _spark_type(result_type))
        out = out.withColumn(tmp, udf(F.col(c)))
        err = F.col(f"{tmp}.err")
        value = F.col(f"{tmp}.v")
        if mode == "FAILFAST":
            where = F.concat_ws(
                "|",
                F.lit(_MARK),
                F.lit(c),
                F.concat(
                    F.col("logDir"),
                    F.lit("/"),
                    F.col("topic"),
                    F.lit("-"),
                    F.col("partition").cast("string"),
                    F.lit("/"),
                    F.lpad(F.col("segment").cast("string"), 20, "0"),
                    F.lit(".log"),
                ),
                F.col("position").cast("string"),
                F.col("offset").cast("string"),
                err.getField("reason"),
                F.lit("end"),
            )
            value = F.when(err.isNotNull(), F.raise_error(where)).otherwise(value)
        elif mode == "DROPMALFORMED":
            out = out.where(err.isNull())
        cols = [value.alias(c) if name == c else F.col(name) for name in out.columns if name != tmp]
        if mode == "PERMISSIVE":
            cols.append(err.alias(ERROR_COLUMNS[c]))
        out = out.select(*cols)
    return out


def _column_udf(plan: ColumnPlan, counter: Any, count: bool) -> Any:
    """The Arrow UDF body of one typed column (picklable closure over the plan)."""

    def decode(raw: pa.Array) -> pa.Array:
        typed, problems = ColumnDecoder.for_plan(plan).decode(raw)
        n = len(raw)
        if not problems:
            return pa.StructArray.from_arrays([typed, pa.nulls(n, ERROR_TYPE)], names=["v", "err"])
        errs: list[Any] = [None] * n
        for p in problems:
            errs[p.row] = {
                "reason": p.reason.replace("\n", " ").replace("|", "/"),
                "schemaId": p.schema_id,
                "bytes": raw[p.row].as_py(),
            }
        if count:
            counter.add(len(problems))
        return pa.StructArray.from_arrays([typed, pa.array(errs, type=ERROR_TYPE)], names=["v", "err"])

    return decode


def typed_error(exc: BaseException) -> TypedDecodeError | None:
    """The :class:`TypedDecodeError` a Spark failure carries (FAILFAST), or None."""
    m = _MARK_RE.search(str(exc))
    if m is None:
        return None
    return TypedDecodeError(
        f"record {m['column']} does not decode at offset {m['offset']}",
        path=m["path"],
        position=int(m["position"]),
        expected=f"a {m['column']} in the schema's wire format",
        found=m["reason"],
    )


def raise_typed(exc: BaseException) -> None:
    """Re-raise a Spark failure as the typed decoding error it carries, when it carries one."""
    err = typed_error(exc)
    if err is not None:
        raise err from None


def topics_of(logdirs: Sequence[str], topics: Sequence[str] = (), pattern: str | None = None) -> list[str]:
    """Topics under ``logdirs`` a job's ``--topic``/``--topic-pattern`` select (all when neither)."""
    from kafka_format.storage.logdir import open_log_dirs

    found = open_log_dirs(list(logdirs)).topics()
    if not topics and pattern is None:
        return found
    rx = re.compile(pattern) if pattern is not None else None
    return [t for t in found if t in topics or (rx is not None and rx.fullmatch(t))]
