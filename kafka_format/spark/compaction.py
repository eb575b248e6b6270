"""Compaction as DataFrames (docs/jobs/ ``klogs compaction``): the table view and the cleaner.

Two questions, two functions:

* :func:`compaction_full` / :func:`compaction_full_decisions` — the *table view* of a topic:
  for every non-null key its highest-offset record among the committed, non-control records at
  or above the log start offset; a key whose latest record is a tombstone is absent.  Input is
  the ``kafka-log`` source read as :func:`read_full_input` reads it (``read_committed``, no
  control records, from ``earliest`` = the log start offset).  Runs distributed: a shuffle and
  sort by ``(topic, partition, logDir, key)`` (both spill, never a collect to the driver), then
  the rule of :mod:`kafka_format.engine.table_view` per Spark partition, the function the local
  engine calls.
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
from pyspark.sql.types import StructType

from kafka_format.engine.compaction import (  # the executor work and the shared schemas (no pyspark)
    CLEANER_RECORD_SCHEMA,
    DECISION_FIELDS,
    METADATA_TOPIC,
    SEGMENTS_ATTEMPT_OWNER,
    SUMMARY_SCHEMA,
    CleanerTask,
    ReplicaTaskError,
    cleaner_tasks,
    finish_records_dir,
    finish_segments_dir,
    run_cleaner_file_task,
    run_cleaner_task,
    topic_selector,
)
from kafka_format.engine.table_view import (  # the table view's rule and counts (no pyspark)
    COUNTS_SCHEMA,
    FULL_GROUP,
    FULL_SUMMARY_COLUMNS,
    FULL_SUMMARY_INPUT,
    decide_sorted,
    full_read_options,
    merge_counts,
    summary_counts,
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

    The rows are shuffled by ``(topic, partition, logDir, key)`` and sorted by it within each
    Spark partition (Spark's exchange and external sort: both spill), so that each key's rows
    arrive together at :func:`kafka_format.engine.table_view.decide_sorted`, the rule the local
    engine applies too (through ``mapInArrow``: one Python call per Arrow batch, not per row).
    """
    out = StructType([*df.schema.fields, *from_arrow_schema(pa.schema(list(DECISION_FIELDS))).fields])
    return (df.repartition(*[F.col(c) for c in (*FULL_GROUP, "key")])
            .sortWithinPartitions(*FULL_GROUP, "key", "offset")
            .mapInArrow(decide_sorted, out))


def compaction_full(df: DataFrame) -> DataFrame:
    """The table view: the latest record of every non-null key, keys whose latest record is a
    tombstone left out; the input's columns (the kept rows of :func:`compaction_full_decisions`)."""
    return compaction_full_decisions(df).where(F.col("decision") == "keep").select(*df.columns)


def compaction_full_summary(decisions: DataFrame) -> list[dict[str, Any]]:
    """Per partition of :func:`compaction_full_decisions` (``FULL_SUMMARY_INPUT`` columns suffice):
    ``recordsBefore``, ``recordsAfter``, ``keys``, ``keysDeleted``, ``recordsSuperseded``,
    ``nullKeyRecords`` (``FULL_SUMMARY_COLUMNS``) as dicts in partition order: partial counts
    per Arrow batch on the executors (:func:`kafka_format.engine.table_view.summary_counts`),
    added up on the driver (:func:`~kafka_format.engine.table_view.merge_counts`)."""
    counts = decisions.select(*FULL_SUMMARY_INPUT).mapInArrow(_summary_counts, from_arrow_schema(COUNTS_SCHEMA))
    return merge_counts(r.asDict() for r in counts.collect())


def _summary_counts(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        if batch.num_rows:
            yield from summary_counts(batch).to_batches()


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
