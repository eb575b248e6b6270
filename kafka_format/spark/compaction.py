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

__all__ = [
    "DECISION_FIELDS", "CLEANER_RECORD_SCHEMA", "SUMMARY_SCHEMA", "FULL_SUMMARY_COLUMNS", "FULL_SUMMARY_INPUT",
    "METADATA_TOPIC", "run_cleaner_pass", "ReplicaTaskError",
    "read_full_input", "compaction_full", "compaction_full_decisions", "compaction_full_summary",
    "CleanerTask", "cleaner_tasks", "run_cleaner_task", "compaction_cleaner", "finish_segments_dir",
    "topic_selector", "SEGMENTS_ATTEMPT_OWNER",
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
    payload = [(i, pickle.dumps(t)) for i, t in enumerate(tasks)]
    rdd = spark.sparkContext.parallelize(payload, numSlices=max(1, len(payload)))
    descriptors = spark.createDataFrame(rdd, "i int, task binary")
    rows = descriptors.mapInArrow(_run_tasks_to_files, from_arrow_schema(SUMMARY_SCHEMA)).collect()
    finish_records_dir(records_dir)
    return rows


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
    only (:func:`kafka_format.engine.compaction.run_cleaner_file_task`)."""
    for batch in batches:
        for blob in batch.column("task").to_pylist():
            rows = run_cleaner_file_task(pickle.loads(blob))
            yield pa.RecordBatch.from_pylist(rows, schema=SUMMARY_SCHEMA)
