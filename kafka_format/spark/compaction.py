"""Compaction as DataFrames (docs/jobs/ ``klogs compaction``): the table view and the cleaner.

Two questions, two functions:

* :func:`compaction_full` / :func:`compaction_full_decisions` — the *table view* of a topic:
  for every non-null key its highest-offset record among the committed, non-control records at
  or above the log start offset; a key whose latest record is a tombstone is absent.  Input is
  the ``kafka-log`` source read as :func:`read_full_input` reads it (``read_committed``, no
  control records, from ``earliest`` = the log start offset).  Runs distributed: a
  ``max_by`` aggregate (table) or a ``max(offset)`` aggregate joined back on the key (decisions)
  over ``(topic, partition, logDir, key)``: shuffles that spill, never a collect to the driver.  Key identity is byte equality (the cleaner hashes keys with
  MD5, ``SkimpyOffsetMap``; a collision there would merge two keys, here it cannot).
* :func:`compaction_cleaner` — what Kafka's log cleaner keeps after cleaning everything
  cleanable at ``now``: one Spark task per partition replica runs the cleaner core
  (:mod:`kafka_format.log.cleaner`: ``plan_cleaning`` / ``clean_partition`` /
  ``write_cleaned_partition``) on the executor, decodes the replica's records with
  :func:`kafka_format.records.file_records.decode_segment`, joins them with the core's per-record decisions and
  streams them to Parquet from the task (:func:`run_cleaner_pass`); only summaries reach the driver.
  The tasks are :mod:`kafka_format.engine.compaction`'s, which the local engine runs too.

Decision columns added to the data source's columns (both modes):
``decision`` (``keep`` / ``remove``), ``reason``, ``supersededBy`` (offset of the record that
replaces a superseded one, else null).  Full-mode reasons: ``latest``, ``superseded``,
``tombstone`` (the key's latest record is a tombstone: the key is absent), ``null-key``.
Cleaner-mode reasons are the core's.

Only this module (and the rest of ``kafka_format/spark/``) imports pyspark.
"""

from __future__ import annotations

import os
import pickle
import shutil
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from kafka_format.engine.compaction import (  # the executor work and the shared schemas (no pyspark)
    _GROUP,
    CLEANER_RECORD_SCHEMA,
    DECISION_FIELDS,
    FULL_SUMMARY_COLUMNS,
    FULL_SUMMARY_INPUT,
    METADATA_TOPIC,
    SEGMENTS_ATTEMPT_OWNER,
    SUMMARY_SCHEMA,
    CleanerTask,
    ReplicaTaskError,
    cleaner_tasks,
    finish_records_dir,
    finish_segments_dir,
    full_read_options,
    run_cleaner_file_task,
    run_cleaner_task,
    topic_selector,
)
from kafka_format.log.topicconfig import TopicConfigs
from kafka_format.storage.fsio import redact

__all__ = [
    "DECISION_FIELDS", "CLEANER_RECORD_SCHEMA", "SUMMARY_SCHEMA", "FULL_SUMMARY_COLUMNS", "FULL_SUMMARY_INPUT",
    "METADATA_TOPIC", "run_cleaner_pass", "ReplicaTaskError",
    "read_full_input", "compaction_full", "compaction_full_decisions", "compaction_full_summary",
    "CleanerTask", "cleaner_tasks", "run_cleaner_task", "compaction_cleaner", "finish_segments_dir",
    "topic_selector", "SEGMENTS_ATTEMPT_OWNER", "StageTasks",
]


# --- full mode -------------------------------------------------------------------------------------
def read_full_input(spark: SparkSession, logdirs: str | Sequence[str], *, topics: Sequence[str] | None = None,
                    topic_pattern: str | None = None) -> DataFrame:
    """The ``kafka-log`` rows the table view is built from: committed (``read_committed``: aborted
    data dropped, reading stops at the LSO), no control records, from the log start offset, the
    longest replica of each partition."""
    import json

    opts = full_read_options(logdirs, topics=topics, topic_pattern=topic_pattern)
    paths = json.loads(opts.pop("paths"))
    return spark.read.format("kafka-log").options(**opts).load(paths)


def compaction_full_decisions(df: DataFrame) -> DataFrame:
    """Every input row plus ``decision``, ``reason``, ``supersededBy`` of the table view.

    Per ``(topic, partition, logDir, key)`` the highest offset is ``latest`` (kept) unless its
    value is null (``tombstone``: removed, the key is absent); lower offsets are ``superseded``
    by it; null keys are ``null-key`` (the cleaner never keeps them, ``Cleaner.shouldRetainRecord``).
    """
    # The latest offset of each key: an aggregate of (group, key, offset) only (partial aggregation
    # before the shuffle, spills like any aggregate), joined back on the key: no per-key buffer of
    # rows, nothing held per partition.  Null keys never match (reason null-key).
    latest_of = (df.where(F.col("key").isNotNull()).groupBy(*_GROUP, "key")
                 .agg(F.max("offset").alias("_latest")))
    null_key = F.col("key").isNull()
    latest = F.col("_latest")
    superseded = F.col("offset") < latest
    joined = df.join(latest_of, on=[*_GROUP, "key"], how="left")
    return joined.select(*[F.col(c) for c in df.columns],
                         F.when(null_key | superseded | F.col("value").isNull(), F.lit("remove"))
                          .otherwise(F.lit("keep")).alias("decision"),
                         F.when(null_key, F.lit("null-key"))
                          .when(superseded, F.lit("superseded"))
                          .when(F.col("value").isNull(), F.lit("tombstone"))
                          .otherwise(F.lit("latest")).alias("reason"),
                         F.when(~null_key & superseded, latest).otherwise(F.lit(None).cast("long"))
                          .alias("supersededBy"))


def compaction_full(df: DataFrame) -> DataFrame:
    """The table view: the latest record of every non-null key, keys whose latest record is a
    tombstone left out; the input's columns.  One ``max_by`` aggregate per key (partial
    aggregation before the shuffle)."""
    cols = df.columns
    latest = (df.where(F.col("key").isNotNull())
              .groupBy(*_GROUP, "key")
              .agg(F.max_by(F.struct(*[F.col(c).alias(c) for c in cols]), F.col("offset")).alias("_row")))
    return latest.where(F.col("_row.value").isNotNull()).select(*[F.col(f"_row.{c}").alias(c) for c in cols])


def compaction_full_summary(decisions: DataFrame) -> DataFrame:
    """Per partition of :func:`compaction_full_decisions`: ``recordsBefore`` (input rows),
    ``recordsAfter`` (kept), ``keys`` (distinct non-null keys), ``keysDeleted`` (latest is a
    tombstone), ``recordsSuperseded``, ``nullKeyRecords``."""
    def count_if(cond: Any) -> Any:
        return F.sum(F.when(cond, F.lit(1)).otherwise(F.lit(0))).cast("long")

    reason = F.col("reason")
    return (decisions.groupBy(*_GROUP).agg(
        F.count(F.lit(1)).cast("long").alias("recordsBefore"),
        count_if(F.col("decision") == "keep").alias("recordsAfter"),
        count_if(reason.isin("latest", "tombstone")).alias("keys"),
        count_if(reason == "tombstone").alias("keysDeleted"),
        count_if(reason == "superseded").alias("recordsSuperseded"),
        count_if(reason == "null-key").alias("nullKeyRecords"),
    ).select(*FULL_SUMMARY_COLUMNS))


# --- cleaner mode: driver side ---------------------------------------------------------------------
def run_cleaner_pass(spark: SparkSession, logdirs: str | Sequence[str], configs: TopicConfigs, now_ms: int, *,
                     records_dir: str, topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                     force: bool = False, segments_dir: str | None = None, batch_rows: int = 8192) -> list[Any]:
    """Run the log cleaner on every selected replica; return the summary rows (``SUMMARY_SCHEMA``).

    One Spark task per replica, on the executors.  Each task streams its replica's records with
    their decisions to ``records_dir/part-<i>.parquet`` (``CLEANER_RECORD_SCHEMA``, written to a
    hidden temporary name and renamed: a retried task replaces what an earlier attempt left) and,
    with ``segments_dir``, its cleaned segments; only the one-row summaries come back to the
    driver, so memory on the driver does not grow with the records.  ``records_dir`` and
    ``segments_dir`` must be paths the executors can write (local mode or a shared file system).
    A directory where no task wrote records gets one empty file with the schema."""
    tasks = cleaner_tasks(logdirs, configs, now_ms, topics=topics, topic_pattern=topic_pattern, force=force,
                          segments_dir=segments_dir, records_dir=records_dir, batch_rows=batch_rows)
    os.makedirs(records_dir, exist_ok=True)
    markers = _markers_dir(spark)
    payload = [(i, pickle.dumps(t), markers) for i, t in enumerate(tasks)]
    rdd = spark.sparkContext.parallelize(payload, numSlices=max(1, len(payload)))
    descriptors = spark.createDataFrame(rdd, "i int, task binary, markers string")
    try:
        rows = descriptors.mapInArrow(_run_tasks_to_files, from_arrow_schema(SUMMARY_SCHEMA)).collect()
    except BaseException as exc:
        names = [f"{t.topic}-{t.partition} ({redact(t.log_dir)})" for t in tasks]
        exc.klogs_stage_tasks = StageTasks(names, [names[i] for i in _running(markers, len(names))])  # type: ignore[attr-defined]
        raise
    finally:
        if markers is not None:
            shutil.rmtree(markers, ignore_errors=True)
    finish_records_dir(records_dir)
    return rows


class StageTasks:
    """What the tasks of a failed stage worked on, attached to its exception as
    ``klogs_stage_tasks`` (read by :mod:`kafka_format.cli.sparkerrors`): ``names[i]`` for task
    ``i`` of the stage, ``running`` the ones started and not finished when it failed (known in
    local mode, where the executors' marker files are the driver's)."""

    def __init__(self, names: list[str], running: list[str]) -> None:
        self.names = names
        self.running = running


def _markers_dir(spark: SparkSession) -> str | None:
    """A directory for the tasks' started/done markers when the executors share this machine."""
    import tempfile

    master = spark.sparkContext.master or ""
    return tempfile.mkdtemp(prefix="klogs-cleaner-tasks-") if master.startswith("local") else None


def _running(markers: str | None, n: int) -> list[int]:
    """Tasks with a ``started`` marker and no ``done`` one."""
    if markers is None or not os.path.isdir(markers):
        return []
    names = set(os.listdir(markers))
    return [i for i in range(n) if f"{i}.started" in names and f"{i}.done" not in names]


def _mark(markers: str | None, i: int, what: str) -> None:
    if markers is not None and os.path.isdir(markers):
        with open(os.path.join(markers, f"{i}.{what}"), "wb"):
            pass


def _crash_hook() -> None:
    """Test hook (``KLA_CRASH_AT=cleaner:jvm``): SIGKILL the JVM this Python worker serves, as the
    kernel's OOM killer ends a JVM that outgrew its machine (the worker's ancestors: the PySpark
    daemon, then the JVM)."""
    import signal

    from kafka_format.output.publish import CRASH_ENV

    if os.environ.get(CRASH_ENV) != "cleaner:jvm":
        return
    pid = os.getppid()
    for _ in range(4):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{pid}/stat", "rb") as f:
                parent = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return
        if b"java" in cmd.split(b"\0", 1)[0]:
            os.kill(pid, signal.SIGKILL)
            return
        pid = parent


def compaction_cleaner(spark: SparkSession, logdirs: str | Sequence[str], configs: TopicConfigs, now_ms: int, *,
                       topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                       force: bool = False, segments_dir: str | None = None,
                       records_dir: str | None = None) -> tuple[DataFrame, DataFrame]:
    """What the log cleaner keeps after cleaning everything cleanable at ``now_ms``.

    Returns ``(records, summary)``.  ``records``: the data source's columns of every record at
    or above the log start offset of each replica whose ``cleanup.policy`` contains ``compact``
    (control records included: markers are kept or removed too), plus ``decision``, ``reason``,
    ``supersededBy`` from the cleaner core.  ``summary``: one row per selected replica
    (``SUMMARY_SCHEMA``): the cleaner's plan and the record/byte counts; replicas without
    ``compact`` are listed with ``cleaned`` false, ``wouldCleanNow`` false and no records.

    Runs the cleaner now (:func:`run_cleaner_pass`, one Spark task per replica): the records go
    to Parquet files in ``records_dir`` (default: a fresh temporary directory removed when the
    interpreter exits) and ``records`` reads them, so nothing that holds records is cached.
    ``segments_dir``: each cleaned replica is also written there in Kafka's format, by the
    executor, as ``<segments_dir>/<log-dir name>/<topic>-<partition>/``.
    """
    if records_dir is None:
        import atexit
        import tempfile

        records_dir = tempfile.mkdtemp(prefix="klogs-cleaner-records-")
        atexit.register(shutil.rmtree, records_dir, True)
    rows = run_cleaner_pass(spark, logdirs, configs, now_ms, records_dir=records_dir, topics=topics,
                            topic_pattern=topic_pattern, force=force, segments_dir=segments_dir)
    records = spark.read.schema(from_arrow_schema(CLEANER_RECORD_SCHEMA)).parquet(records_dir)
    summary = spark.createDataFrame(rows, schema=from_arrow_schema(SUMMARY_SCHEMA))
    return records, summary


# --- cleaner mode: executor side -------------------------------------------------------------------
def _run_tasks(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor: the pickled :class:`CleanerTask` rows of this Spark partition, one after another."""
    for batch in batches:
        for blob in batch.column("task").to_pylist():
            task: CleanerTask = pickle.loads(blob)
            yield from run_cleaner_task(task)


def _run_tasks_to_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor: run this Spark partition's tasks (records to their files), yield summary rows
    only (:func:`kafka_format.engine.compaction.run_cleaner_file_task`); in local mode each task
    leaves a ``started`` and a ``done`` marker (which task the driver names if the JVM dies)."""
    for batch in batches:
        for i, blob, markers in zip(batch.column("i").to_pylist(), batch.column("task").to_pylist(),
                                    batch.column("markers").to_pylist(), strict=True):
            _mark(markers, i, "started")
            _crash_hook()
            rows = run_cleaner_file_task(pickle.loads(blob))
            _mark(markers, i, "done")
            yield pa.RecordBatch.from_pylist(rows, schema=SUMMARY_SCHEMA)
