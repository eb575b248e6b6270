"""Typed ``key``/``value`` columns over a ``kafka-log`` DataFrame (Schema Registry wire format).

Two ways in, one result (docs/jobs/export.md, "Typed keys and values"):

* :meth:`TypedColumns.read` / :meth:`TypedColumns.read_stream` (the export's way): the log dirs
  are read by the ``kafka-log`` source with the column plans inside its reader
  (:mod:`kafka_format.spark.typed_source`), each Arrow batch decoded on the executor before it
  reaches the JVM;
* :func:`decode_typed` / :meth:`TypedColumns.apply` (any ``kafka-log`` DataFrame): one Arrow UDF
  per typed column (only that column travels to Python and back).

Either way each batch is decoded column-wise by
:class:`kafka_format.registry.typed.ColumnDecoder` (schemas parsed once per schema id and Python
worker; Avro through the compiled column decoder).  Rows that do not decode follow the read
``mode``:

* ``FAILFAST`` (default): the job stops with
  :class:`~kafka_format.registry.typed.TypedDecodeError` naming the segment file, the batch
  position, the offset and the reason (:func:`typed_error` reads it from Spark's failure);
* ``PERMISSIVE``: the typed column is null and ``_keyDecodeError`` / ``_valueDecodeError``
  (``struct<reason string, schemaId int, bytes binary>``, null for rows that decoded) keeps the
  reason and the original bytes;
* ``DROPMALFORMED``: the row is left out.

Counting the rows that did not decode (PERMISSIVE, DROPMALFORMED):

* in an export (:meth:`TypedColumns.for_export`), exactly: the count is an observed metric
  (``DataFrame.observe``) of the query that writes the rows, taken before DROPMALFORMED drops
  them.  Spark merges a task's metrics with its result, only for the attempt whose result it
  takes, once per partition of the writing stage; so a failed or retried attempt, a speculative
  copy or a second action never counts twice.  :meth:`TypedColumns.commit` adds a query's
  counts once its output is published, :meth:`TypedColumns.discard` forgets those of a
  micro-batch found already published;
* with :meth:`TypedColumns.apply`, Spark accumulators: the rows that failed in all the actions
  run on the returned DataFrame (an action run twice counts twice).

Null keys and values (tombstones) stay null and are not errors.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame

from kafka_format.registry.batches import ERROR_COLUMNS, ERROR_TYPE, MODES
from kafka_format.registry.typed import ColumnDecoder, ColumnPlan, TypedDecodeError, TypedPlan, plan_columns
from kafka_format.spark.typed_source import MARK

__all__ = [
    "ERROR_COLUMNS",
    "ERROR_TYPE",
    "MODES",
    "TypedColumns",
    "decode_typed",
    "typed_columns",
    "typed_error",
]

_MARK_RE = re.compile(
    MARK + r"\|(?P<column>[^|]*)\|(?P<path>[^|]*)\|(?P<position>-?\d+)\|(?P<offset>-?\d+)\|"
    r"(?P<reason>[^|\n]*)\|end"
)
_NEEDED = ("logDir", "topic", "partition", "segment", "position", "offset")


@dataclass
class TypedColumns(TypedPlan):
    """A :class:`~kafka_format.registry.typed.TypedPlan` on Spark, and the counts of failed rows."""

    _counters: dict[str, Any] = field(default_factory=dict, repr=False)
    _pending: list[Any] = field(default_factory=list, repr=False)  # Observations not yet committed
    _counted: dict[str, int] = field(default_factory=dict, repr=False)
    _source: dict[int, str] = field(default_factory=dict, repr=False)  # id(session) -> format name

    @classmethod
    def of(cls, plan: TypedPlan) -> TypedColumns:
        """The Spark side of a plan made without Spark (``klogs export`` plans before choosing)."""
        return plan if isinstance(plan, TypedColumns) else cls(dict(plan.plans), plan.mode, tuple(plan.untyped))

    # --- reading with the plans in the source -----------------------------------------------
    def source_format(self, spark: Any) -> str:
        """The format name of the ``kafka-log`` source decoding these plans, registered with
        ``spark`` on first use."""
        name = self._source.get(id(spark))
        if name is None:
            from kafka_format.spark import register_derived
            from kafka_format.spark.typed_source import typed_source_class

            token = next(iter(self.plans.values())).token if self.plans else "none"
            name = register_derived(spark, lambda base: typed_source_class(base, self.plans, self.mode, token))
            self._source[id(spark)] = name
        return name

    def read(self, spark: Any, paths: Sequence[str], options: Mapping[str, str] | None = None) -> DataFrame:
        """Batch ``kafka-log`` DataFrame over ``paths`` with the typed columns decoded by the
        source (and the error columns unless FAILFAST): :meth:`for_export` applies the mode."""
        fmt = self.source_format(spark) if self.plans else "kafka-log"
        return spark.read.format(fmt).options(**dict(options or {})).load(list(paths))

    def read_stream(self, spark: Any, options: Mapping[str, str]) -> DataFrame:
        """Streaming ``kafka-log`` DataFrame (``paths`` in ``options``), decoded as :meth:`read`."""
        fmt = self.source_format(spark) if self.plans else "kafka-log"
        return spark.readStream.format(fmt).options(**dict(options)).load()

    # --- exports: exact counts ------------------------------------------------------------------
    def for_export(self, df: DataFrame) -> DataFrame:
        """``df`` (from :meth:`read`, or a plain ``kafka-log`` DataFrame: decoded here) with the
        mode applied, the failed rows counted by an observation of the query that runs it (see
        the module doc); :meth:`commit` once its output is published."""
        if not self.plans:
            return df
        if any(_is_binary(df, c) for c in self.plans):
            df = _udf_decode(_check_columns(df, self.plans), self.plans, self.mode, None)
        if self.mode == "FAILFAST":
            return df
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        obs = Observation()
        metrics = [F.count_if(F.col(ERROR_COLUMNS[c]).isNotNull()).alias(c) for c in self.plans]
        df = df.observe(obs, *metrics)
        self._pending.append(obs)
        return _finish(df, self.plans, self.mode)

    def commit(self) -> None:
        """Count the rows of the queries run since the last commit/discard (their output is
        published); waits for their metrics."""
        pending, self._pending = self._pending, []
        for obs in pending:
            for c, n in obs.get.items():
                self._counted[c] = self._counted.get(c, 0) + int(n)

    def discard(self) -> None:
        """Forget the queries run since the last commit (a micro-batch already published)."""
        self._pending = []

    # --- any DataFrame: the UDF way ---------------------------------------------------------
    def apply(self, df: DataFrame) -> DataFrame:
        """``df`` with the planned columns decoded by Arrow UDFs and the mode applied; failed
        rows counted by accumulators (see the module doc)."""
        if not self.plans:
            return df
        sc = df.sparkSession.sparkContext
        for c in self.plans:
            if c not in self._counters:
                self._counters[c] = sc.accumulator(0)
        decoded = _udf_decode(_check_columns(df, self.plans), dict(self.plans), self.mode, self._counters)
        return _finish(decoded, self.plans, self.mode)

    def error_counts(self) -> dict[str, int]:
        """Rows that did not decode, per column: of the published exports (:meth:`commit`) and
        the actions run on :meth:`apply`'s DataFrames."""
        out = {c: 0 for c in self.plans}
        for c, acc in self._counters.items():
            out[c] += int(acc.value)
        for c, n in self._counted.items():
            out[c] = out.get(c, 0) + n
        return out

    def report(self, counts: Mapping[str, int] | None = None) -> dict[str, Any]:
        """A JSON-ready summary: columns, subjects, table types, mode, failed rows
        (:meth:`error_counts` unless ``counts`` given)."""
        return super().report(self.error_counts() if counts is None else counts)


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
    return TypedColumns.of(plan_columns(
        source, key_as=key_as, value_as=value_as, topic=topic, key_subject=key_subject,
        value_subject=value_subject, key_schema=key_schema, value_schema=value_schema, key_message=key_message,
        value_message=value_message, mode=mode))


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


def _is_binary(df: DataFrame, column: str) -> bool:
    from pyspark.sql.types import BinaryType

    return column in df.columns and isinstance(df.schema[column].dataType, BinaryType)


def _check_columns(df: DataFrame, plans: Mapping[str, ColumnPlan]) -> DataFrame:
    missing = [c for c in (*plans, *_NEEDED) if c not in df.columns]
    if missing:
        raise TypedDecodeError(
            "the DataFrame lacks columns typed decoding needs (granularity=batch?)",
            expected="the kafka-log record columns " + ", ".join(missing),
            found=", ".join(df.columns),
        )
    return df


def _finish(df: DataFrame, plans: Mapping[str, ColumnPlan], mode: str) -> DataFrame:
    """The error columns kept (PERMISSIVE) or the failed rows and the error columns dropped."""
    if mode != "DROPMALFORMED":
        return df
    from pyspark.sql import functions as F

    errors = [ERROR_COLUMNS[c] for c in plans]
    for name in errors:
        df = df.where(F.col(name).isNull())
    return df.drop(*errors)


def _spark_type(t: pa.DataType) -> Any:
    from pyspark.sql.pandas.types import from_arrow_type

    return from_arrow_type(t)


def _udf_decode(
    df: DataFrame, plans: Mapping[str, ColumnPlan], mode: str, counters: Mapping[str, Any] | None
) -> DataFrame:
    """One Arrow UDF per typed column: only that column travels to Python and back, as
    ``struct<v: table type, err: ERROR_TYPE>``.  FAILFAST fails on the JVM side; otherwise the
    error columns are added (the UDF is non-deterministic to Spark, so a filter on them is never
    pushed below it and it runs once per row)."""
    from pyspark.sql import functions as F
    from pyspark.sql.functions import arrow_udf

    out = df
    for c, plan in plans.items():
        tmp = f"__klogs_typed_{c}"
        result_type = pa.struct([pa.field("v", plan.arrow_type), pa.field("err", ERROR_TYPE)])
        counter = counters.get(c) if counters is not None and mode != "FAILFAST" else None
        # pyspark's stub lists only the functionType forms of arrow_udf; this is the type-hint form
        # (pa.Array -> pa.Array: a scalar Arrow UDF), which returns the UDF itself
        udf = arrow_udf(_column_udf(plan, counter), _spark_type(result_type)).asNondeterministic()  # type: ignore[call-overload]
        out = out.withColumn(tmp, udf(F.col(c)))
        err = F.col(f"{tmp}.err")
        value = F.col(f"{tmp}.v")
        if mode == "FAILFAST":
            where = F.concat_ws(
                "|",
                F.lit(MARK),
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
        cols = [value.alias(c) if name == c else F.col(name) for name in out.columns if name != tmp]
        if mode != "FAILFAST":
            cols.append(err.alias(ERROR_COLUMNS[c]))
        out = out.select(*cols)
    return out


def _column_udf(plan: ColumnPlan, counter: Any) -> Callable[[pa.Array], pa.Array]:
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
        if counter is not None:
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
