"""Retention as DataFrames: which segments Kafka's retention pass deletes at ``now``, and when.

The driver discovers partition replicas and resolves each topic's policy
(:func:`kafka_format.retention.plan_retention`); executors re-open one replica each, read its
index files and the last segment's batch headers, and walk (:func:`kafka_format.retention.run_task`).
Semantics and the decisions behind them: :mod:`kafka_format.retention`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, IntegerType, LongType, StringType, StructField, StructType

from kafka_format.fsio import redact
from kafka_format.retention import RetentionTask, plan_retention, run_task

__all__ = ["SEGMENT_SCHEMA", "SUMMARY_COLUMNS", "retention_candidates", "retention_summary"]

SEGMENT_SCHEMA = StructType([
    StructField("topic", StringType(), False),
    StructField("partition", IntegerType(), False),
    StructField("baseOffset", LongType(), False),
    StructField("sizeBytes", LongType(), False),
    StructField("largestTimestamp", LongType(), False),
    StructField("deletable", BooleanType(), False),
    StructField("reason", StringType(), True),
    StructField("deletableAtMs", LongType(), True),
])
_REPLICA_FIELDS = [
    StructField("logDir", StringType(), True),
    StructField("brokerId", IntegerType(), True),
]
_FULL_SCHEMA = StructType([*SEGMENT_SCHEMA.fields, *_REPLICA_FIELDS])

SUMMARY_COLUMNS = ("topic", "partition", "segments", "bytes", "deletableSegments", "deletableBytes",
                   "bytesRemaining", "bytesNeverDeletable", "nextDeletionMs", "lastDeletionMs",
                   "oldestTimestamp", "newestTimestamp")


def _evaluate(group: tuple[bool, list[RetentionTask]]) -> Iterator[tuple[Any, ...]]:
    """Executor side: the replicas of one topic-partition; with ``longest`` only the replica with
    the highest log end offset, then leader epoch, then the first listed (the data source's rule)."""
    longest, tasks = group
    results = [run_task(task) for task in tasks]
    if longest and len(results) > 1:
        order = {id(r): i for i, r in enumerate(results)}
        results = [max(results, key=lambda r: (r[0].log_end_offset,
                                               -1 if r[0].leader_epoch is None else r[0].leader_epoch,
                                               -order[id(r)]))]
    for facts, decisions in results:
        for d in decisions:
            yield (facts.topic, facts.partition, d.base_offset, d.size, d.largest_timestamp, d.deletable, d.reason,
                   d.deletable_at_ms, redact(facts.log_dir), facts.broker_id)


def retention_candidates(spark: SparkSession, logdirs: Any, configs: Any, now_ms: int, *,
                         topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                         replicas: str = "longest", missing_hw: str = "leo") -> DataFrame:
    """One row per segment: ``topic, partition, baseOffset, sizeBytes, largestTimestamp, deletable,
    reason, deletableAtMs`` (docs/jobs/), ordered by topic, partition, baseOffset.

    ``logdirs``: paths or a ``LogDirSet``; ``configs``: ``TopicConfigs`` (``configs[topic]``).
    ``replicas``: ``longest`` (default: per topic-partition the replica with the highest log end
    offset, then leader epoch, as the data source picks) or ``all`` (every replica, with ``logDir``
    and ``brokerId`` columns added).  ``missing_hw``: see :func:`kafka_format.retention.partition_facts`.
    The driver only lists files; each Spark task re-opens the replicas of a few topic-partitions
    and reads their indexes and last-segment batch headers.  No shuffle.
    """
    if replicas not in ("longest", "all"):
        raise ValueError(f"replicas must be 'longest' or 'all', not {replicas!r}")
    tasks = plan_retention(logdirs, configs, now_ms, topics=topics, topic_pattern=topic_pattern,
                           missing_hw=missing_hw)
    groups: list[tuple[bool, list[RetentionTask]]] = []
    for task in tasks:       # sorted by topic, partition, log dir
        if replicas == "longest" and groups and (groups[-1][1][0].topic, groups[-1][1][0].partition) == \
                (task.topic, task.partition):
            groups[-1][1].append(task)
        else:
            groups.append((replicas == "longest", [task]))
    if groups:
        slices = max(1, min(len(groups), spark.sparkContext.defaultParallelism))
        # parallelize keeps the list order across and within slices: rows come out in task order
        df = spark.createDataFrame(spark.sparkContext.parallelize(groups, slices).flatMap(_evaluate), _FULL_SCHEMA)
    else:
        df = spark.createDataFrame([], _FULL_SCHEMA)
    columns = [f.name for f in SEGMENT_SCHEMA.fields]
    return df.select(*columns, "logDir", "brokerId") if replicas == "all" else df.select(*columns)


def retention_summary(df: DataFrame) -> DataFrame:
    """Per topic-partition: segments, bytes, deletable segments/bytes now, bytes remaining after
    this pass, bytes no deletion reaches without new data, next deletion time after now, time of
    the last deletion, oldest/newest segment largestTimestamp."""
    size = F.col("sizeBytes")
    deletable = F.col("deletable")
    return (df.groupBy("topic", "partition").agg(
        F.count(F.lit(1)).cast(LongType()).alias("segments"),
        F.sum(size).cast(LongType()).alias("bytes"),
        F.sum(F.when(deletable, 1).otherwise(0)).cast(LongType()).alias("deletableSegments"),
        F.sum(F.when(deletable, size).otherwise(0)).cast(LongType()).alias("deletableBytes"),
        F.sum(F.when(deletable, 0).otherwise(size)).cast(LongType()).alias("bytesRemaining"),
        F.sum(F.when(F.col("deletableAtMs").isNull(), size).otherwise(0)).cast(LongType())
        .alias("bytesNeverDeletable"),
        F.min(F.when(~deletable, F.col("deletableAtMs"))).alias("nextDeletionMs"),
        F.max(F.col("deletableAtMs")).alias("lastDeletionMs"),
        F.min("largestTimestamp").alias("oldestTimestamp"),
        F.max("largestTimestamp").alias("newestTimestamp"),
    ).select(*SUMMARY_COLUMNS).orderBy("topic", "partition"))
