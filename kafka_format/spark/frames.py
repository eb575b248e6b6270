"""Every job's answer as a DataFrame, for users who compose queries over them.

Each function plans its job on the driver (the job's own module, the same plan as ``klogs JOB``)
and returns the job's Arrow output as a lazy DataFrame whose partitions are the job's tasks
(:func:`kafka_format.spark.executor.frame`): its schema is the job's Arrow schema, its rows are in
the job's order.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_format.spark.executor import frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kafka_format.storage.logdir import LogDirSet

__all__ = ["audit", "offsets_for_timestamps", "retention_candidates", "retention_summary"]


def offsets_for_timestamps(spark: SparkSession, logdirs: str | Sequence[str] | LogDirSet,
                           timestamps: Sequence[int | str], *, topics: Sequence[str] | None = None,
                           topic_pattern: str | None = None, isolation_level: str = "read_uncommitted",
                           replicas: str = "longest") -> DataFrame:
    """One row per selected partition and timestamp spec: Kafka's ListOffsets answer.

    Columns: :data:`kafka_format.engine.offsets.SCHEMA` (``timestamp`` = the spec as ms or the
    negative special value; ``offset``/``recordTimestamp``/``leaderEpoch`` null where Kafka sends
    -1), plus ``logDir``/``brokerId`` with ``replicas="all"`` (one row per copy).  ``topics`` and
    ``topic_pattern`` (full match) select the union of what they name; neither = every topic.
    Rows are ordered by topic, partition (log dir), then the order of ``timestamps``.
    """
    from kafka_format.engine.offsets import offsets_job

    job = offsets_job(logdirs, timestamps, cores=spark.sparkContext.defaultParallelism, topics=topics,
                      topic_pattern=topic_pattern, isolation_level=isolation_level, replicas=replicas)
    return frame(spark, job.task(), job.groups, job.schema)


def retention_candidates(spark: SparkSession, logdirs: Any, configs: Any, now_ms: int, *,
                         topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                         replicas: str = "longest", missing_hw: str = "leo") -> DataFrame:
    """One row per segment: ``topic, partition, baseOffset, sizeBytes, largestTimestamp, deletable,
    reason, deletableAtMs`` (:data:`kafka_format.log.retention.SEGMENT_SCHEMA`), ordered by topic,
    partition, baseOffset.

    ``logdirs``: paths or a ``LogDirSet``; ``configs``: ``TopicConfigs`` (``configs[topic]``).
    ``replicas``: ``longest`` (default: per topic-partition the replica with the highest log end
    offset, then leader epoch, as the data source picks) or ``all`` (every replica, with ``logDir``
    and ``brokerId`` columns added).  ``missing_hw``: see :func:`kafka_format.log.retention.partition_facts`.
    The driver only lists files; each task re-opens the replicas of a few topic-partitions and reads
    their indexes and last-segment batch headers.  No shuffle.
    """
    from kafka_format.engine.retention import evaluate_groups, retention_job

    job = retention_job(logdirs, configs, now_ms, cores=spark.sparkContext.defaultParallelism, topics=topics,
                        topic_pattern=topic_pattern, replicas=replicas, missing_hw=missing_hw)
    return frame(spark, partial(evaluate_groups, with_replica=job.with_replica), job.tasks, job.schema)


def _summarize_group(table: pa.Table) -> pa.Table:
    """``applyInArrow``: :func:`kafka_format.log.retention.summarize` of one topic-partition."""
    from kafka_format.log.retention import SUMMARY_SCHEMA, summarize

    return pa.Table.from_pylist(summarize(table.to_pylist()), schema=SUMMARY_SCHEMA)


def retention_summary(df: DataFrame) -> DataFrame:
    """Per topic-partition of :func:`retention_candidates`' rows: segments, bytes, deletable
    segments/bytes now, bytes remaining after this pass, bytes no deletion reaches without new data,
    next deletion time after now, time of the last deletion, oldest/newest segment largestTimestamp
    (:func:`kafka_format.log.retention.summarize`, the rule every executor's run uses)."""
    from kafka_format.log.retention import SEGMENT_FIELDS, SUMMARY_SCHEMA
    from kafka_format.spark.executor import spark_schema

    return (df.select(*SEGMENT_FIELDS).groupBy("topic", "partition")
            .applyInArrow(_summarize_group, spark_schema(SUMMARY_SCHEMA)).orderBy("topic", "partition"))


def audit(spark: SparkSession, logdirs: Sequence[str], *, topics: Sequence[str] | None = None,
          topic_pattern: str | None = None, configs: Any = None, deep: bool = True,
          now_ms: int | None = None) -> tuple[DataFrame, DataFrame]:
    """Audit every partition replica, log dir and replica group under ``logdirs`` on the session's
    executors: (findings, files) DataFrames of :data:`kafka_format.log.audit.model.FINDING_SCHEMA`
    (sorted: errors first) and ``ACCOUNTING_SCHEMA`` (by file).  ``configs``:
    :class:`kafka_format.log.topicconfig.TopicConfigs`."""
    from kafka_format.engine.audit import audit_run
    from kafka_format.log.audit.model import ACCOUNTING_SCHEMA, FINDING_SCHEMA
    from kafka_format.spark.executor import SparkExecutor, spark_schema

    findings, files = audit_run(SparkExecutor(spark), logdirs, topics=topics, topic_pattern=topic_pattern,
                                configs=configs, deep=deep, now_ms=now_ms)
    return (spark.createDataFrame(findings, spark_schema(FINDING_SCHEMA)),
            spark.createDataFrame(files, spark_schema(ACCOUNTING_SCHEMA)))
