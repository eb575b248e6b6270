"""``klogs export``: topic history from the ``kafka-log`` source to Parquet or Delta, exactly once.

Entry points
    :func:`export` (a batch DataFrame of the source -> one published output) and
    :func:`export_incremental` (``readStream`` + ``trigger(availableNow=True)`` + a Spark checkpoint:
    each run adds the records that arrived since the previous run).  :func:`convert_columns` is the
    column mapping both use; :func:`source_options` turns job flags into data-source options.

Columns
    Every column of the DataFrame (docs/datasource.md: the source's columns, ``_corrupt`` with
    ``mode=PERMISSIVE``), with

    * ``key_as="string"`` / ``value_as="string"``: the bytes decoded as Kafka's
      ``StringDeserializer`` does (``new String(bytes, UTF_8)``): malformed UTF-8 is not an error,
      each malformed sequence becomes one U+FFFD, sized as Java's decoder sizes it (Spark's
      ``decode(col, 'UTF-8')`` with ``spark.sql.legacy.codingErrorAction=true`` is that JDK
      decoder).  Null stays null.
    * ``value_as="json"``: ``value`` is a string column holding the record's JSON text unchanged
      (decoded as for ``string``; not re-serialised, no schema imposed).  Every non-null value
      must parse with Spark's JSON parser (``try_parse_json``, duplicate object keys allowed as
      RFC 8259 allows them); otherwise the export fails with :class:`ExportError` naming the
      segment file, batch position and offset of an offending record, and nothing is published.
      Spark's parser is lenient in two ways: content after the first complete JSON value is
      ignored (``{"a":1} x`` passes) and numbers beyond double range are accepted; it rejects
      ``NaN``/``Infinity`` and escaped lone surrogates (``"\\ud800"``).
    * ``key_as``/``value_as`` ``avro``, ``protobuf``, ``json-schema`` or ``auto``: typed struct
      columns decoded from the Schema Registry wire format by :mod:`kafka_format.spark.typed`
      (planned on the driver by :func:`kafka_format.spark.typed.typed_columns` and passed as
      ``typed``); the result's ``typed`` entry reports the table types and the rows that did not
      decode.
    * ``partition_by=("date",)`` adds ``date`` (the UTC calendar day of ``timestamp``,
      independent of the session time zone; null for records without a timestamp, Kafka's
      ``NO_TIMESTAMP`` = -1 ms).
    * Parquet timestamps are written as ``TIMESTAMP_MICROS`` (UTC-adjusted), not Spark's INT96
      default, so pyarrow, DuckDB and delta-rs read them as ``timestamp[us, UTC]``.

Skipped byte ranges
    With ``mode=PERMISSIVE`` or ``DROPMALFORMED`` the result's ``skipped_ranges`` holds every byte
    range the reads skipped (``{"file", "position", "length", "reason"}``, merged per file by
    :func:`kafka_format.engine.export.merge_skipped`): the ``_corrupt`` values of the rows the
    writing query read, an observed metric of that query (:func:`observe_skipped`), exact under
    task retries.  DROPMALFORMED is read as PERMISSIVE (:func:`read_source`) and the ``_corrupt``
    rows left out once observed.  An incremental run adds a micro-batch's ranges once it is
    published, never those of a replayed micro-batch found already published (not read again).

Parquet layout
    Batch export::

        OUT/topic=T/partition=P/part-*.parquet        (or OUT/date=YYYY-MM-DD/...)
        OUT/_SUCCESS

    written by Spark into ``.OUT.tmp-<hex>`` beside ``OUT`` and published with one rename
    (:func:`kafka_format.output.publish.staging_dir`): a reader of ``OUT`` sees the previous export or all
    of the new one.  A batch export replaces ``OUT`` -- only when ``OUT`` is absent, empty or a
    previous batch Parquet export (its ``.klogs-output`` marker); anything else is refused, so a
    mistyped ``--out`` cannot wipe a directory.

    Incremental export (``--checkpoint``)::

        OUT/exportBatch=N/topic=T/partition=P/part-*.parquet
        OUT/exportBatch=N/_klogs_batch.json           {"queryId", "batchId", "rows", "files"}

    One directory per Spark micro-batch, staged as ``OUT/.exportBatch=N.tmp-<hex>`` (hidden from
    Spark and pyarrow, which skip names starting with ``.`` and ``_``) and published with one
    rename.  The directory is the unit of atomic visibility: the rows of one micro-batch span many
    ``topic=/partition=`` directories, and no single rename can publish files into several of them,
    so plain readers (``spark.read.parquet(OUT)``, ``pyarrow.dataset(OUT, partitioning="hive")``)
    see whole micro-batches only, with ``exportBatch`` as an extra partition column.

    Why this is exactly once: Spark writes the offsets log entry N (the offset ranges of batch N)
    before running batch N and the commit log entry N after ``foreachBatch`` returns.  A crash
    before the rename leaves only a hidden staging dir (removed by the next run); a crash after it
    (crash point ``export:batch-committed``) leaves batch N published but not in the commit log, so
    the restarted query replays batch N with the same offsets, finds ``exportBatch=N`` whose marker
    names the same streaming query id, and skips it.  A marker with another query id (``OUT`` was
    written with another checkpoint) is an error rather than a silent skip or duplicate.

Delta
    With delta-spark's JVM classes on the classpath (``build_session`` adds its package; the
    default) Spark writes ``format("delta")`` (incremental: ``txnAppId``/``txnVersion`` = query id /
    batch id, Delta's idempotent-writes options).  The fallback, for a session without Delta's jars
    or with ``$KLOGS_DELTA_ENGINE=delta-rs``: Spark writes Parquet files into ``OUT/_klogs_staging/<run>/``,
    they are moved to ``OUT/<partition dirs>/`` and the driver commits them with delta-rs
    (``deltalake``) as ONE commit: :func:`deltalake.transaction.create_table_with_add_actions` for a
    new table, else ``DeltaTable.create_write_transaction`` (batch: ``overwrite``; incremental:
    ``append`` carrying the app transaction ``klogs-export-<queryId>`` = batch id, and a batch whose
    id is at or below the table's recorded version for that app id is skipped).  Files not yet
    committed are invisible to Delta readers; a crashed run leaves at most unreferenced files
    (the next run removes ``_klogs_staging``; ``VACUUM`` removes moved orphans).

Ownership and locks
    Every local ``OUT`` and ``--checkpoint`` directory carries klogs' ``.klogs-output`` marker
    (:mod:`kafka_format.output.ownership`) naming its kind: ``parquet`` (batch), ``parquet-incremental``,
    ``delta`` or ``checkpoint``.  An export writes only to an absent or empty path or to one
    carrying the marker of the same kind; anything else (a directory klogs did not write, a Delta
    table klogs did not create, another kind of output) is refused with :class:`OutputRefused`
    before anything is written.  One run per ``OUT`` and per checkpoint: a second one gets
    :class:`~kafka_format.output.runlock.OutputBusy` naming the run that holds it (instead of Spark's
    ``CONCURRENT_STREAM_LOG_UPDATE`` failure).  An ``s3a://`` ``OUT`` or checkpoint carries the same
    marker and follows the same rules (:mod:`kafka_format.output.store`), without a lock; other
    stores' URIs (``s3://`` through delta-rs) have neither, and the Delta target check below applies.

Object stores (``s3a://``)
    Delta is written by delta-spark to the URI without its credentials (they are the bucket's S3A
    settings: :func:`kafka_format.spark.s3a.prepare`); its commits are atomic there too.  A batch
    Parquet export is written by Spark under ``OUT/_klogs_staging/<run>/`` and published by
    :func:`kafka_format.output.store.publish_staged` (copies, ``_SUCCESS`` and the marker last); an
    incremental Parquet export is refused (:func:`kafka_format.engine.export.check_location`).
"""

from __future__ import annotations

import json
import os
import re
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow.fs as pafs
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_format.common.errors import KafkaFormatError
from kafka_format.engine.export import (  # shared with the local engine (no pyspark there)
    BATCH_OWNER,
    CHECKPOINT_OWNER,
    DELTA_OWNER,
    FORMATS,
    INCREMENTAL_OWNER,
    KEY_AS,
    MICROS_PER_DAY,
    PARQUET_OWNER,
    PARTITION_LAYOUTS,
    TYPED_AS,
    VALUE_AS,
    ExportError,
    ExportResult,
    _data_files,
    _is_local,
    check_choice,
    hold_outputs,
    merge_skipped,
    output_owner,
    parse_partition_by,
    read_mode,
    skip_reading_options,
    source_options,
)
from kafka_format.output import store as store_output
from kafka_format.output.ownership import OutputRefused, remove_tree
from kafka_format.output.publish import cleanup_stale, crash_point, ensure_output_dir, local_path, staging_dir
from kafka_format.output.store import is_store
from kafka_format.read.split_reader import CORRUPT_COLUMN
from kafka_format.records.record_batch import NO_TIMESTAMP
from kafka_format.records.schema import TIER_FIELD
from kafka_format.spark.delta import session_jvm
from kafka_format.spark.s3a import spark_path

__all__ = [
    "BATCH_COLUMN",
    "BATCH_MARKER",
    "BATCH_OWNER",
    "CHECKPOINT_OWNER",
    "DELTA_OWNER",
    "DROPPED_COLUMN",
    "FORMATS",
    "INCREMENTAL_OWNER",
    "KEY_AS",
    "PARQUET_OWNER",
    "PARTITION_LAYOUTS",
    "STAGING_DIR",
    "VALUE_AS",
    "WRITE_CONF",
    "ExportError",
    "ExportResult",
    "OutputRefused",
    "convert_columns",
    "delta_spark_available",
    "export",
    "export_incremental",
    "hold_outputs",
    "observe_skipped",
    "output_owner",
    "parse_partition_by",
    "read_source",
    "skipped_values",
    "source_options",
    "write_conf",
]

# what Spark's DataFrame writers write here (Iceberg: kafka_format.engine.iceberg, on the job runtime)
SPARK_FORMATS = tuple(f for f in FORMATS if f != "iceberg")

BATCH_COLUMN = "exportBatch"            # incremental Parquet: one published directory per micro-batch
DROPPED_COLUMN = "_klogs_dropped"        # DROPMALFORMED read as PERMISSIVE: the _corrupt values, then dropped
BATCH_MARKER = "_klogs_batch.json"
STAGING_DIR = "_klogs_staging"          # Delta via delta-rs: Spark's output before it is committed
DELTA_APP_PREFIX = "klogs-export-"
NOT_JSON = "klogs-export-not-json"
NOT_JSON_MESSAGE = re.compile(NOT_JSON + r"\|(?P<path>[^|]*)\|(?P<position>-?\d+)\|(?P<offset>-?\d+)")
# Session settings an export needs while it plans and writes (restored afterwards).
WRITE_CONF = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.legacy.codingErrorAction": "true",      # decode(): JDK replacement, no error
    "spark.sql.variant.allowDuplicateKeys": "true",    # try_parse_json: RFC 8259 allows them
}
_DELTA_FORMAT_CLASS = "io.delta.tables.DeltaTable"


@dataclass
class _Run:
    """Mutable tally of an incremental run (filled by foreachBatch on the driver)."""

    rows: int = 0
    files: int = 0
    batches: list[int] = field(default_factory=list)
    replayed: list[int] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)     # _corrupt values of published batches


# --- options and columns --------------------------------------------------------------
def _java_string(col: Column) -> Column:
    """Kafka's ``StringDeserializer``: ``new String(bytes, UTF_8)`` (needs WRITE_CONF's legacy
    coding-error action, under which Spark's ``decode`` is the JDK decoder with replacement)."""
    return F.decode(col, "UTF-8")


def convert_columns(df: DataFrame, *, partition_by: Sequence[str] = ("topic", "partition"),
                    key_as: str = "binary", value_as: str = "binary", typed: Any = None) -> DataFrame:
    """The exported columns of a ``kafka-log`` DataFrame: key/value conversion and the ``date``
    partition column (see the module doc).  Call inside :func:`write_conf` (the string decoding
    depends on it); :func:`export` does."""
    check_choice("key_as", key_as, KEY_AS)
    check_choice("value_as", value_as, VALUE_AS)
    _check_typed(key_as, value_as, typed)
    cols = set(df.columns)
    needed = set(partition_by) | ({"key"} if key_as != "binary" else set()) \
        | ({"value"} if value_as != "binary" else set())
    if value_as == "json":
        needed |= {"logDir", "topic", "partition", "segment", "position", "offset"}
    missing = sorted(needed - cols - {"date"})
    if "date" in partition_by and "timestamp" not in cols:
        missing.append("timestamp")
    if missing:
        raise ExportError("the DataFrame lacks columns the export needs (granularity=batch?)",
                          expected="the kafka-log record columns " + ", ".join(missing),
                          found=", ".join(df.columns))
    out = typed.for_export(df) if typed is not None else df
    if key_as == "string":
        out = out.withColumn("key", _java_string(F.col("key")))
    if value_as in ("string", "json"):
        text = _java_string(F.col("value"))
        if value_as == "json":
            bad = text.isNotNull() & F.try_parse_json(text).isNull()
            where = F.concat_ws("|", F.lit(NOT_JSON),
                                F.concat(F.col("logDir"), F.lit("/"), F.col("topic"), F.lit("-"),
                                         F.col("partition").cast("string"), F.lit("/"),
                                         F.lpad(F.col("segment").cast("string"), 20, "0"), F.lit(".log")),
                                F.col("position").cast("string"), F.col("offset").cast("string"))
            text = F.when(bad, F.raise_error(where).cast("string")).otherwise(text)
        out = out.withColumn("value", text)
    if "date" in partition_by:
        micros = F.unix_micros(F.col("timestamp"))
        day = F.date_from_unix_date(F.floor(micros / F.lit(MICROS_PER_DAY)).cast("int"))
        out = out.withColumn("date", F.when(micros == F.lit(NO_TIMESTAMP * 1000), F.lit(None)).otherwise(day))
    return out


def _check_typed(key_as: str, value_as: str, typed: Any) -> None:
    if typed is None and (key_as in TYPED_AS or value_as in TYPED_AS):
        raise ValueError(f"key_as={key_as!r}/value_as={value_as!r} need typed=kafka_format.spark.typed."
                         "typed_columns(...) (the schemas and table types, planned on the driver)")


@contextmanager
def write_conf(spark: SparkSession) -> Iterator[None]:
    """WRITE_CONF set on the session for the block, previous values restored afterwards."""
    previous = {k: spark.conf.get(k, None) for k in WRITE_CONF}
    for k, v in WRITE_CONF.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, old in previous.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)


def observe_skipped(df: DataFrame) -> tuple[DataFrame, Any]:
    """``df`` with its skipped byte ranges observed by the query that runs it, and the
    :class:`~pyspark.sql.Observation` (None when ``df`` has no ``_corrupt``/:data:`DROPPED_COLUMN`
    column: FAILFAST, or a DROPMALFORMED read made elsewhere).  The ranges are the ``_corrupt``
    values (``collect_list`` keeps the set ones), an observed metric: Spark merges a task's metrics
    with its result only for the attempt whose result it keeps, once per partition, so a retried or
    speculative task never reports a range twice.  :data:`DROPPED_COLUMN`'s rows and the column
    are then left out (DROPMALFORMED)."""
    from pyspark.sql import Observation

    name = CORRUPT_COLUMN if CORRUPT_COLUMN in df.columns else DROPPED_COLUMN if DROPPED_COLUMN in df.columns \
        else None
    if name is None:
        return df, None
    obs = Observation()
    df = df.observe(obs, F.collect_list(F.col(name)).alias("ranges"))
    if name == DROPPED_COLUMN:
        df = df.where(F.col(name).isNull()).drop(name)
    return df, obs


def skipped_values(obs: Any) -> list[dict[str, Any]]:
    """The ``_corrupt`` values :func:`observe_skipped`'s observation saw (waits for the query's
    metrics: call it once the query ran), ``[]`` for None."""
    if obs is None:
        return []
    return [row.asDict() for row in obs.get.get("ranges") or ()]


def _not_json_error(exc: BaseException) -> KafkaFormatError | None:
    m = NOT_JSON_MESSAGE.search(str(exc))
    if m is None:
        from kafka_format.spark.typed import typed_error

        return typed_error(exc)
    return ExportError("record value is not JSON (--value-as json)", path=m.group("path"),
                       position=int(m.group("position")), expected="a JSON text in the record value",
                       found=f"a value that does not parse at offset {m.group('offset')}")


def _write_parquet(df: DataFrame, path: str, partition_by: Sequence[str]) -> None:
    """Spark writes ``df`` as Parquet under ``path`` (an existing, empty directory)."""
    try:
        df.write.mode("append").partitionBy(*partition_by).parquet(path)
    except Exception as exc:
        err = _not_json_error(exc)
        if err is not None:
            raise err from None
        raise


# --- file listings --------------------------------------------------------------------
def _filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """pyarrow file system and path of a local path, ``file://`` URI or other pyarrow.fs URI."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file") or len(parsed.scheme) == 1:
        return pafs.LocalFileSystem(), os.path.abspath(local_path(uri))
    fs, path = pafs.FileSystem.from_uri(uri)
    return fs, path


def _partition_values(rel: str, partition_by: Sequence[str]) -> dict[str, str | None]:
    """Hive-style ``k=v`` directories of a file path -> Delta ``partitionValues``."""
    values: dict[str, str | None] = {}
    for part in rel.split("/")[:-1]:
        if "=" in part:
            k, v = part.split("=", 1)
            v = unquote(v)
            values[unquote(k)] = None if v == "__HIVE_DEFAULT_PARTITION__" else v
    return {k: values.get(k) for k in partition_by}


# --- Delta ----------------------------------------------------------------------------
def delta_spark_available(spark: SparkSession) -> bool:
    """Whether delta-spark's JVM classes are on the session's classpath (``$KLOGS_DELTA_ENGINE=delta-rs``
    forces the delta-rs fallback, as for a session without Delta's jars)."""
    if os.environ.get("KLOGS_DELTA_ENGINE") == "delta-rs":
        return False
    try:
        jvm = session_jvm(spark)
        jvm.java.lang.Class.forName(_DELTA_FORMAT_CLASS, False, jvm.java.lang.Thread.currentThread().getContextClassLoader())
        return True
    except Exception:
        return False


def _arrow_schema(df: DataFrame) -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(df.schema, timezone="UTC")


def _delta_commit(out: str, df: DataFrame, partition_by: Sequence[str], mode: str,
                  app: tuple[str, int] | None) -> tuple[int, int, int]:
    """Spark writes ``df`` into ``OUT/_klogs_staging/<run>``, the files move beside the table's
    other data and delta-rs commits them in one transaction.  Returns (rows, files, version)."""
    from deltalake import CommitProperties, DeltaTable, Transaction
    from deltalake.transaction import AddAction, create_table_with_add_actions

    fs, root = _filesystem(out)
    staging = f"{root.rstrip('/')}/{STAGING_DIR}/{uuid.uuid4().hex}"
    fs.create_dir(staging, recursive=True)
    _write_parquet(df, _uri_like(out, staging), partition_by)
    files = _data_files(fs, staging)
    crash_point("export:files-written")
    actions = []
    for f in files:
        fs.create_dir(f"{root}/{f.rel}".rsplit("/", 1)[0], recursive=True)
        fs.move(f"{staging}/{f.rel}", f"{root}/{f.rel}")
        actions.append(AddAction(f.rel, f.size, _partition_values(f.rel, partition_by), f.mtime_ms, True,
                                 json.dumps({"numRecords": f.rows})))
    props = CommitProperties(app_transactions=[Transaction(app[0], app[1])] if app else None,
                             custom_metadata={"klogs": "export"})
    schema = _arrow_schema(df)
    if not DeltaTable.is_deltatable(out):
        create_table_with_add_actions(out, _delta_schema(schema), actions, mode="error",
                                      partition_by=list(partition_by), commit_properties=props)
    else:
        # a list of the parameter's own (wider, invariant) element type: AddAction | RemoveAction
        DeltaTable(out).create_write_transaction([*actions], mode, schema, partition_by=list(partition_by),
                                                 commit_properties=props)
    fs.delete_dir(staging)
    return sum(f.rows for f in files), len(files), DeltaTable(out).version()


def _delta_schema(schema: Any) -> Any:
    from deltalake import Schema

    return Schema.from_arrow(schema)


def _uri_like(out: str, path: str) -> str:
    """``path`` (a pyarrow.fs path under ``out``'s file system) in the form Spark takes."""
    parsed = urlparse(out)
    if parsed.scheme in ("", "file") or len(parsed.scheme) == 1:
        return path
    return f"{parsed.scheme}://{path}"


def _remove_staging(out: str) -> None:
    if _is_local(out):
        remove_tree(os.path.join(os.path.abspath(local_path(out)), STAGING_DIR))    # links unlinked, not followed
        return
    fs, root = _filesystem(out)
    staging = f"{root.rstrip('/')}/{STAGING_DIR}"
    if fs.get_file_info(staging).type == pafs.FileType.Directory:
        fs.delete_dir(staging)


def _table_columns(spark: SparkSession, out: str, format: str, root: str, delta_spark: bool) -> set[str] | None:
    """The columns of what an incremental export appends to: the Delta table at ``out`` or the
    Parquet files of the earlier micro-batches under ``root``; None when there is none yet."""
    if format == "parquet":
        import pyarrow.parquet as pq

        for base, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
            data = sorted(f for f in files if f.endswith(".parquet") and not f.startswith(("_", ".")))
            if data:
                rel = os.path.relpath(base, root)
                parts = {p.split("=", 1)[0] for p in rel.split(os.sep) if "=" in p}
                return set(pq.read_schema(os.path.join(base, data[0])).names) | parts
        return None
    if delta_spark:
        path = spark_path(out)
        return set(spark.read.format("delta").load(path).columns) if _spark_delta_version(spark, path) is not None \
            else None
    from deltalake import DeltaTable

    return {f.name for f in DeltaTable(out).schema().fields} if DeltaTable.is_deltatable(out) else None


def _keep_table_columns(df: DataFrame, earlier: set[str] | None) -> DataFrame:
    """``df`` without the source's provenance columns newer than the table it is appended to (``tier``):
    an incremental export keeps the schema of the table its first run made."""
    if earlier is not None and TIER_FIELD.name not in earlier and TIER_FIELD.name in df.columns:
        return df.drop(TIER_FIELD.name)
    return df


def _delta_version(out: str) -> int | None:
    """The version of the Delta table at ``out`` read with delta-rs (the fallback's engine)."""
    from deltalake import DeltaTable

    return DeltaTable(out).version() if DeltaTable.is_deltatable(out) else None


def _spark_delta_version(spark: SparkSession, path: str) -> int | None:
    """The version of the Delta table at ``path`` (as the JVM names it) read by delta-spark, None
    when there is no table yet."""
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, path):
        return None
    latest = DeltaTable.forPath(spark, path).history(1).select("version").first()
    if latest is None:
        raise RuntimeError(f"the Delta table at {path} has no history")
    return int(latest[0])


def _delta_written(spark: SparkSession, path: str, after: int | None) -> tuple[int, int, bool]:
    """``(rows, files, committed)`` of the commits Spark's Delta writer made to ``path`` after
    version ``after`` (their ``commitInfo.operationMetrics``: ``numOutputRows``, ``numFiles``);
    ``committed`` False when there is no new commit (an idempotent ``txnVersion`` already in the
    table: nothing written)."""
    from delta.tables import DeltaTable

    now = _spark_delta_version(spark, path)
    if now is None or (after is not None and now <= after):
        return 0, 0, False
    rows = files = 0
    history = DeltaTable.forPath(spark, path).history(now + 1 if after is None else now - after)
    for entry in history.select("version", "operationMetrics").collect():
        if after is not None and int(entry["version"]) <= after:
            continue
        metrics = entry["operationMetrics"] or {}
        rows += int(metrics.get("numOutputRows", 0) or 0)
        files += int(metrics.get("numFiles", metrics.get("numAddedFiles", 0)) or 0)
    return rows, files, True


# --- reading --------------------------------------------------------------------------
def read_source(spark: SparkSession, logdirs: Sequence[str], options: Mapping[str, str] | None = None,
                typed: Any = None) -> DataFrame:
    """Batch ``kafka-log`` DataFrame over ``logdirs``; options are validated here first, so a bad
    one is a :class:`~kafka_format.read.options.KafkaLogOptionError` (ValueError), not a Spark error.
    ``typed`` (:func:`kafka_format.spark.typed.typed_columns`): the typed columns are decoded by
    the source's own reader (:meth:`~kafka_format.spark.typed.TypedColumns.read`).
    ``mode=DROPMALFORMED`` is read as PERMISSIVE with the ``_corrupt`` column named
    :data:`DROPPED_COLUMN`: :func:`export` takes the skipped ranges from it, then drops those rows
    and the column (the rows of DROPMALFORMED, the ranges of PERMISSIVE)."""
    from kafka_format.read.options import parse_options

    opts = dict(options or {})
    parse_options({**opts, "paths": json.dumps(list(logdirs))})
    reading = skip_reading_options(opts)
    if typed is not None:
        df = typed.read(spark, logdirs, reading)
    else:
        df = spark.read.format("kafka-log").options(**reading).load(list(logdirs))
    if read_mode(opts) == "DROPMALFORMED":        # read as PERMISSIVE: export() counts the ranges, then drops
        df = df.withColumnRenamed(CORRUPT_COLUMN, DROPPED_COLUMN)
    return df


# --- guards ----------------------------------------------------------------------------
_DELTA_ENTRY = re.compile(r"^(topic|date)=.*$")


def _prepare_delta(out: str) -> None:
    """Before writing a Delta table through delta-rs: a local ``out`` becomes a directory carrying the
    Delta export marker (the claim already refused anything else); another store's ``out`` must be
    a Delta table or absent/empty (:func:`_check_delta_target`).  A crashed run's staging is removed."""
    if is_store(out):
        raise ExportError("Delta on s3a:// is written by delta-spark, whose jars this session lacks", path=out,
                          expected="a session with delta-spark (build_session adds it; spark-submit --packages "
                                   "io.delta:...)", found="no io.delta.tables.DeltaTable class")
    if _is_local(out):
        ensure_output_dir(out, DELTA_OWNER)
    else:
        _check_delta_target(out)
    _remove_staging(out)


def _own_delta_dir(out: str) -> None:
    """Before delta-spark writes ``out``: it carries the Delta export marker (created when it held
    nothing; the claim refused anything else)."""
    if _is_local(out):
        ensure_output_dir(out, DELTA_OWNER)
    elif is_store(out):
        store_output.ensure(out, DELTA_OWNER)


def _check_delta_target(out: str) -> None:
    """Object stores (no marker there): Delta output goes to an existing Delta table or to an
    absent/empty directory (partition directories are tolerated: a first run killed between moving
    its files and committing leaves them unreferenced, which Delta readers ignore and ``VACUUM``
    removes)."""
    from deltalake import DeltaTable

    if DeltaTable.is_deltatable(out):
        return
    fs, root = _filesystem(out)
    if fs.get_file_info(root).type == pafs.FileType.NotFound:
        return
    for info in fs.get_file_info(pafs.FileSelector(root, allow_not_found=True)):
        if info.base_name != STAGING_DIR and not _DELTA_ENTRY.match(info.base_name):
            raise ExportError("output directory is neither a Delta table nor empty", path=out,
                              expected="a Delta table (_delta_log) or an empty directory", found=info.base_name)


# --- batch ----------------------------------------------------------------------------
def export(df: DataFrame, out: str, *, format: str = "parquet",
           partition_by: str | Sequence[str] = ("topic", "partition"),
           key_as: str = "binary", value_as: str = "binary", typed: Any = None) -> ExportResult:
    """Export a batch DataFrame of the ``kafka-log`` source to ``out``, published atomically
    (Parquet: ``out`` replaced by one rename; Delta: one commit, overwriting the table's data).
    ``typed``: :func:`kafka_format.spark.typed.typed_columns` for the typed ``key_as``/``value_as``.
    The result's ``skipped_ranges``: the ``_corrupt`` values of the rows the write read
    (:func:`observe_skipped`; ``df`` from :func:`read_source`, or any PERMISSIVE read)."""
    df, skips = observe_skipped(df)
    try:
        result = _export(df, out, format=format, partition_by=partition_by, key_as=key_as, value_as=value_as,
                         typed=typed)
    except BaseException:
        if typed is not None:
            typed.discard()
        raise
    result = replace(result, skipped_ranges=merge_skipped(skipped_values(skips)))
    if typed is None:
        return result
    typed.commit()                      # the rows of the query that wrote what was published
    return replace(result, typed=typed.report())


def _export(df: DataFrame, out: str, *, format: str, partition_by: str | Sequence[str], key_as: str,
            value_as: str, typed: Any) -> ExportResult:
    check_choice("format", format, SPARK_FORMATS)
    cols = parse_partition_by(partition_by)
    spark = df.sparkSession
    with hold_outputs(out, format=format, incremental=False), write_conf(spark):
        data = convert_columns(df, partition_by=cols, key_as=key_as, value_as=value_as, typed=typed)
        if format == "parquet":
            if is_store(out):
                return _export_parquet_to_store(data, out, cols)
            with staging_dir(out, PARQUET_OWNER) as tmp:
                _write_parquet(data, tmp, cols)
                files = _data_files(pafs.LocalFileSystem(), tmp)
                crash_point("export:files-written")
            return ExportResult(out=out, format=format, partition_by=cols, rows=sum(f.rows for f in files),
                                files=len(files))
        if delta_spark_available(spark):
            _own_delta_dir(out)
            path = spark_path(out)
            before = _spark_delta_version(spark, path)
            try:
                data.write.format("delta").mode("overwrite").option("overwriteSchema", "true") \
                    .partitionBy(*cols).save(path)
            except Exception as exc:
                err = _not_json_error(exc)
                if err is not None:
                    raise err from None
                raise
            rows, nfiles, _ = _delta_written(spark, path, before)
            return ExportResult(out=out, format=format, partition_by=cols, rows=rows, files=nfiles,
                                version=_spark_delta_version(spark, path), writer="delta-spark")
        _prepare_delta(out)
        rows, nfiles, version = _delta_commit(out, data, cols, "overwrite", None)
        return ExportResult(out=out, format=format, partition_by=cols, rows=rows, files=nfiles, version=version,
                            writer="delta-rs")


def _export_parquet_to_store(data: DataFrame, out: str, cols: Sequence[str]) -> ExportResult:
    """Batch Parquet to ``s3a://OUT``: Spark writes under ``OUT/_klogs_staging/<run>/`` (hidden from
    readers), then :func:`kafka_format.output.store.publish_staged` copies the files into place,
    ``_SUCCESS`` and the marker last (the closest a store without rename comes to one rename)."""
    store_output.ensure_publishing(out, PARQUET_OWNER)
    store_output.cleanup(out)                       # a crashed run's staging (the claim made OUT ours)
    staged = store_output.staging_uri(out, uuid.uuid4().hex)
    _write_parquet(data, spark_path(staged), cols)
    target = store_output.target(staged)
    files = _data_files(target.fs, target.path)
    crash_point("export:files-written")
    store_output.publish_staged(staged, out, PARQUET_OWNER)
    return ExportResult(out=out, format="parquet", partition_by=tuple(cols), rows=sum(f.rows for f in files),
                        files=len(files))


# --- incremental ----------------------------------------------------------------------
def _publish_parquet_batch(batch_df: DataFrame, root: str, batch_id: int, query_id: str,
                           partition_by: Sequence[str], run: _Run) -> None:
    target = os.path.join(root, f"{BATCH_COLUMN}={batch_id}")
    if os.path.isdir(target):
        marker = os.path.join(target, BATCH_MARKER)
        try:
            with open(marker, encoding="utf-8") as f:
                owner = json.load(f).get("queryId")
        except (OSError, ValueError):
            owner = None
        if owner == query_id:
            run.replayed.append(batch_id)       # a replay of a batch published before a crash
            return
        raise ExportError("output already holds this micro-batch from another streaming query",
                          path=target, expected=f"queryId {query_id} (the checkpoint's query)",
                          found=f"queryId {owner}; use the original --checkpoint or a fresh --out")
    with staging_dir(target, BATCH_OWNER) as tmp:
        _write_parquet(batch_df, tmp, partition_by)
        files = _data_files(pafs.LocalFileSystem(), tmp)
        rows = sum(f.rows for f in files)
        with open(os.path.join(tmp, BATCH_MARKER), "w", encoding="utf-8") as f:
            json.dump({"queryId": query_id, "batchId": batch_id, "rows": rows,
                       "files": [d.rel for d in files]}, f)
        crash_point("export:files-written")
    run.rows += rows
    run.files += len(files)
    run.batches.append(batch_id)


def _commit_delta_batch(batch_df: DataFrame, out: str, batch_id: int, query_id: str,
                        partition_by: Sequence[str], run: _Run, delta_spark: bool) -> None:
    from deltalake import DeltaTable

    app_id = DELTA_APP_PREFIX + query_id
    if delta_spark:
        spark, path = batch_df.sparkSession, spark_path(out)
        before = _spark_delta_version(spark, path)
        batch_df.write.format("delta").mode("append").option("txnAppId", app_id) \
            .option("txnVersion", batch_id).partitionBy(*partition_by).save(path)
        rows, nfiles, committed = _delta_written(spark, path, before)
        if not committed:                   # Delta skipped it: this (txnAppId, txnVersion) is in the table
            run.replayed.append(batch_id)
            return
        run.rows += rows
        run.files += nfiles
        run.batches.append(batch_id)
        return
    if DeltaTable.is_deltatable(out):
        done = DeltaTable(out).transaction_version(app_id)
        if done is not None and done >= batch_id:
            run.replayed.append(batch_id)
            return
    rows, nfiles, _ = _delta_commit(out, batch_df, partition_by, "append", (app_id, batch_id))
    run.rows += rows
    run.files += nfiles
    run.batches.append(batch_id)


def export_incremental(spark: SparkSession, logdirs: Sequence[str], out: str, checkpoint: str, *,
                       options: Mapping[str, str] | None = None, format: str = "parquet",
                       partition_by: str | Sequence[str] = ("topic", "partition"),
                       key_as: str = "binary", value_as: str = "binary", typed: Any = None) -> ExportResult:
    """Export what arrived since the last run: ``readStream`` of ``kafka-log`` over ``logdirs``,
    ``trigger(availableNow=True)``, Spark's checkpoint at ``checkpoint``, each micro-batch published
    atomically and idempotently (see the module doc).  Blocks until the run is done.  A local
    ``out`` and ``checkpoint`` are claimed first (:func:`hold_outputs`)."""
    check_choice("format", format, SPARK_FORMATS)
    cols = parse_partition_by(partition_by)
    check_choice("key_as", key_as, KEY_AS)
    check_choice("value_as", value_as, VALUE_AS)
    _check_typed(key_as, value_as, typed)
    from kafka_format.read.options import parse_options

    opts = {**dict(options or {}), "paths": json.dumps(list(logdirs))}
    parse_options(opts, streaming=True)         # bad options fail here, before anything is created
    with hold_outputs(out, format=format, incremental=True, checkpoint=checkpoint, inputs=logdirs):
        try:
            result = _run_incremental(spark, out, checkpoint, opts, format, cols, key_as, value_as, typed)
        finally:
            if typed is not None:
                typed.discard()
        return result if typed is None else replace(result, typed=typed.report())


def _run_incremental(spark: SparkSession, out: str, checkpoint: str, opts: Mapping[str, str], format: str,
                     cols: tuple[str, ...], key_as: str, value_as: str, typed: Any = None) -> ExportResult:
    """:func:`export_incremental` once ``out`` and ``checkpoint`` are held."""
    delta_spark = format == "delta" and delta_spark_available(spark)
    root = ""
    if format == "parquet":
        root = ensure_output_dir(out, INCREMENTAL_OWNER)
        cleanup_stale(root)                     # marked staging dirs of crashed batches (we hold OUT)
    elif not delta_spark:
        _prepare_delta(out)
    else:
        _own_delta_dir(out)
    if _is_local(checkpoint):
        ensure_output_dir(checkpoint, CHECKPOINT_OWNER)
    elif is_store(checkpoint):
        store_output.ensure(checkpoint, CHECKPOINT_OWNER)
    earlier = _table_columns(spark, out, format, root, delta_spark)
    run = _Run()
    query_id: dict[str, str] = {}
    ready = threading.Event()
    failures: list[BaseException] = []

    def each_batch(batch_df: DataFrame, batch_id: int) -> None:
        try:
            if not ready.wait(timeout=600):
                raise ExportError("streaming query id not available", path=checkpoint)
            qid = query_id["id"]
            with write_conf(batch_df.sparkSession):
                observed, skips = observe_skipped(batch_df)
                data = _keep_table_columns(
                    convert_columns(observed, partition_by=cols, key_as=key_as, value_as=value_as, typed=typed),
                    earlier)
                published = len(run.batches)
                if format == "parquet":
                    _publish_parquet_batch(data, root, batch_id, qid, cols, run)
                else:
                    _commit_delta_batch(data, out, batch_id, qid, cols, run, delta_spark)
                # counted once its rows are published, never for a replay (whose query never ran)
                if len(run.batches) > published:
                    run.skipped += skipped_values(skips)
                if typed is not None:
                    typed.commit() if len(run.batches) > published else typed.discard()
        except KafkaFormatError as exc:
            failures.append(exc)                # re-raised as itself once the query has stopped
            raise
        crash_point("export:batch-committed")

    reading = skip_reading_options(opts)
    if typed is not None:
        stream = typed.read_stream(spark, reading)
    else:
        stream = spark.readStream.format("kafka-log").options(**reading).load()
    if read_mode(opts) == "DROPMALFORMED":
        stream = stream.withColumnRenamed(CORRUPT_COLUMN, DROPPED_COLUMN)
    query = (stream.writeStream.foreachBatch(each_batch).option("checkpointLocation", spark_path(checkpoint))
             .trigger(availableNow=True).start())
    query_id["id"] = query.id
    ready.set()
    try:
        query.awaitTermination()
    except Exception as exc:
        if failures:
            raise failures[0] from None
        err = _not_json_error(exc)
        if err is not None:
            raise err from None
        raise
    writer = "spark" if format == "parquet" else ("delta-spark" if delta_spark else "delta-rs")
    return ExportResult(out=out, format=format, partition_by=cols, rows=run.rows, files=run.files,
                        batches=tuple(run.batches), replayed_batches=tuple(run.replayed),
                        skipped_ranges=merge_skipped(run.skipped),
                        version=_table_version(spark, out, delta_spark) if format == "delta" else None,
                        writer=writer)


def _table_version(spark: SparkSession, out: str, delta_spark: bool) -> int | None:
    return _spark_delta_version(spark, spark_path(out)) if delta_spark else _delta_version(out)

