"""Retention as DataFrames: which segments Kafka's retention pass deletes at ``now``, and when.

The driver discovers partition replicas and resolves each topic's policy
(:func:`kafka_format.log.retention.plan_retention`); executors re-open one replica each, read its
index files and the last segment's batch headers, and walk (:func:`kafka_format.log.retention.run_task`).
Semantics and the decisions behind them: :mod:`kafka_format.log.retention`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import BooleanType, IntegerType, LongType, StringType, StructField, StructType

from kafka_format.engine.retention import evaluate_group, retention_groups
from kafka_format.log.retention import summarize

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


def retention_candidates(spark: SparkSession, logdirs: Any, configs: Any, now_ms: int, *,
                         topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                         replicas: str = "longest", missing_hw: str = "leo") -> DataFrame:
    """One row per segment: ``topic, partition, baseOffset, sizeBytes, largestTimestamp, deletable,
    reason, deletableAtMs`` (docs/jobs/), ordered by topic, partition, baseOffset.

    ``logdirs``: paths or a ``LogDirSet``; ``configs``: ``TopicConfigs`` (``configs[topic]``).
    ``replicas``: ``longest`` (default: per topic-partition the replica with the highest log end
    offset, then leader epoch, as the data source picks) or ``all`` (every replica, with ``logDir``
    and ``brokerId`` columns added).  ``missing_hw``: see :func:`kafka_format.log.retention.partition_facts`.
    The driver only lists files; each Spark task re-opens the replicas of a few topic-partitions
    and reads their indexes and last-segment batch headers.  No shuffle.
    """
    groups = retention_groups(logdirs, configs, now_ms, topics=topics, topic_pattern=topic_pattern,
                              replicas=replicas, missing_hw=missing_hw)
    if groups:
        slices = max(1, min(len(groups), spark.sparkContext.defaultParallelism))
        # parallelize keeps the list order across and within slices: rows come out in task order
        df = spark.createDataFrame(spark.sparkContext.parallelize(groups, slices).flatMap(evaluate_group), _FULL_SCHEMA)
    else:
        df = spark.createDataFrame([], _FULL_SCHEMA)
    columns = [f.name for f in SEGMENT_SCHEMA.fields]
    return df.select(*columns, "logDir", "brokerId") if replicas == "all" else df.select(*columns)


_SUMMARY_SCHEMA = StructType([
    StructField("topic", StringType(), False),
    StructField("partition", IntegerType(), False),
    *[StructField(name, LongType(), True) for name in SUMMARY_COLUMNS[2:]],
])


def _summarize_group(table: Any) -> Any:
    """Spark's ``applyInArrow``: :func:`kafka_format.log.retention.summarize` of one topic-partition."""
    import pyarrow as pa

    rows = summarize(table.to_pylist())
    return pa.Table.from_pylist(rows, schema=pa.schema([
        pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
        *[pa.field(name, pa.int64()) for name in SUMMARY_COLUMNS[2:]]]))


def retention_summary(df: DataFrame) -> DataFrame:
    """Per topic-partition: segments, bytes, deletable segments/bytes now, bytes remaining after
    this pass, bytes no deletion reaches without new data, next deletion time after now, time of
    the last deletion, oldest/newest segment largestTimestamp -- :func:`kafka_format.log.retention.summarize`
    (the rule the local engine uses too) applied per topic-partition."""
    return (df.select(*SEGMENT_SCHEMA.names).groupBy("topic", "partition")
            .applyInArrow(_summarize_group, _SUMMARY_SCHEMA).orderBy("topic", "partition"))
