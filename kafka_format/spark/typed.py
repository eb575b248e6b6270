"""Typed ``key``/``value`` columns over a ``kafka-log`` DataFrame (Schema Registry wire format).

:func:`decode_typed` replaces ``key`` and/or ``value`` (binary) by struct columns decoded with
their schemas (docs/jobs/export.md, "Typed keys and values"): one ``mapInArrow`` stage, each Arrow
batch decoded column-wise by :class:`kafka_format.registry.typed.ColumnDecoder` (schemas parsed
once per schema id and Python worker).  Rows that do not decode follow the read ``mode``:

* ``FAILFAST`` (default): the job stops with :class:`~kafka_format.registry.typed.TypedDecodeError`
  naming the segment file, the batch position, the offset and the reason;
* ``PERMISSIVE``: the typed column is null and ``_keyDecodeError`` / ``_valueDecodeError``
  (``struct<reason string, schemaId int, bytes binary>``, null for rows that decoded) keeps the
  reason and the original bytes;
* ``DROPMALFORMED``: the row is left out.

Either way every failed row is counted (:meth:`TypedColumns.error_counts`, Spark accumulators).
Null keys and values (tombstones) stay null and are not errors.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import StructField, StructType

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
    r"(?P<reason>[^\n]*)"
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
    fields = []
    for f in df.schema.fields:
        if f.name in plans:
            fields.append(StructField(f.name, _spark_type(plans[f.name].arrow_type), True))
        else:
            fields.append(f)
    if mode == "PERMISSIVE":
        fields += [StructField(ERROR_COLUMNS[c], _spark_type(ERROR_TYPE), True) for c in plans]
    out_schema = StructType(fields)
    names = [f.name for f in fields]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import numpy as np

        decoders = {c: ColumnDecoder.for_plan(p) for c, p in plans.items()}
        for batch in batches:
            n = batch.num_rows
            cols = {name: batch.column(i) for i, name in enumerate(batch.schema.names)}
            keep = np.ones(n, dtype=bool)
            for c, dec in decoders.items():
                raw = cols[c]
                typed, problems = dec.decode(raw)
                cols[c] = typed
                if problems:
                    if mode == "FAILFAST":
                        raise RuntimeError(_failure(c, problems[0], cols))
                    counters[c].add(len(problems))
                    if mode == "DROPMALFORMED":
                        keep[[p.row for p in problems]] = False
                if mode == "PERMISSIVE":
                    errs: list[Any] = [None] * n
                    for p in problems:
                        errs[p.row] = {
                            "reason": p.reason,
                            "schemaId": p.schema_id,
                            "bytes": raw[p.row].as_py(),
                        }
                    cols[ERROR_COLUMNS[c]] = pa.array(errs, type=ERROR_TYPE)
            arrays = [cols[name] for name in names]
            out = pa.RecordBatch.from_arrays(arrays, names=names)
            if not keep.all():
                out = out.filter(pa.array(keep))
            yield out

    return df.mapInArrow(run, out_schema)


def _failure(column: str, p: Any, cols: Mapping[str, pa.Array]) -> str:
    r = p.row
    get = lambda name: cols[name][r].as_py()  # noqa: E731
    path = f"{get('logDir')}/{get('topic')}-{get('partition')}/{int(get('segment')):020d}.log"
    reason = p.reason.replace("\n", " ").replace("|", "/")
    return f"{_MARK}|{column}|{path}|{get('position')}|{get('offset')}|{reason}"


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
    from kafka_format.logdir import open_log_dirs

    found = open_log_dirs(list(logdirs)).topics()
    if not topics and pattern is None:
        return found
    rx = re.compile(pattern) if pattern is not None else None
    return [t for t in found if t in topics or (rx is not None and rx.fullmatch(t))]
