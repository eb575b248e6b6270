"""Distributed audit (``klogs audit``): the checks of :mod:`kafka_format.log.audit.auditor` on executors.

The driver lists the log dirs (:func:`kafka_format.open_log_dirs`, no batch is read there) and
ships small picklable descriptors (:func:`kafka_format.engine.audit.audit_tasks`), one per
partition replica, per log dir and per replica group;
each executor task re-opens its partition dir from its location and runs the checks, so the
partitions (and log dirs, and replica groups) are audited in parallel.  Only findings and
per-file accounting rows come back, as Arrow columns (one pair of tables per slice of tasks, not a
Python object per row): they are small (a bounded number per file).

DataFrames returned by :func:`audit`:

findings (:data:`FINDINGS_SCHEMA`): ``severity string`` (error|warning|info), ``check string``
(stable kebab-case id, :data:`kafka_format.log.audit.auditor.CHECKS`), ``topic string``, ``partition int``,
``file string`` (location of the file the finding is about), ``position long`` (byte offset in
that file), ``offset long`` (Kafka offset), ``expected string``, ``actual string``,
``message string``; null where a value does not apply.

files (:data:`FILES_SCHEMA`): one row per ``.log``: ``topic string, partition int, file string,
sizeBytes long, validBytes long, skippedBytes long, zeroTailBytes long, cutBytes long,
batches long`` with validBytes + skippedBytes + zeroTailBytes + cutBytes = sizeBytes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from kafka_format.engine.audit import audit_tasks, slice_tables
from kafka_format.log.audit.auditor import ACCOUNTING_COLUMNS, FINDING_COLUMNS
from kafka_format.log.audit.tables import ResultCollector

__all__ = ["audit", "audit_tables", "FINDINGS_SCHEMA", "FILES_SCHEMA"]

FINDINGS_SCHEMA = StructType([
    StructField("severity", StringType(), False),
    StructField("check", StringType(), False),
    StructField("topic", StringType(), True),
    StructField("partition", IntegerType(), True),
    StructField("file", StringType(), True),
    StructField("position", LongType(), True),
    StructField("offset", LongType(), True),
    StructField("expected", StringType(), True),
    StructField("actual", StringType(), True),
    StructField("message", StringType(), False),
])
FILES_SCHEMA = StructType([
    StructField("topic", StringType(), True),
    StructField("partition", IntegerType(), True),
    StructField("file", StringType(), False),
    StructField("sizeBytes", LongType(), False),
    StructField("validBytes", LongType(), False),
    StructField("skippedBytes", LongType(), False),
    StructField("zeroTailBytes", LongType(), False),
    StructField("cutBytes", LongType(), False),
    StructField("batches", LongType(), False),
])
assert tuple(FINDINGS_SCHEMA.names) == FINDING_COLUMNS and tuple(FILES_SCHEMA.names) == ACCOUNTING_COLUMNS


def audit_tables(spark: SparkSession, logdirs: Sequence[str], *, topics: Sequence[str] | None = None,
                 topic_pattern: str | None = None, configs: Any = None, deep: bool = True,
                 now_ms: int | None = None) -> tuple[pa.Table, pa.Table]:
    """The findings (sorted: errors first) and accounting rows (by file) as Arrow tables, computed on
    the executors (:mod:`kafka_format.log.audit.tables` for the columns and the order)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    tasks = audit_tasks(logdirs, topics, topic_pattern, configs, deep, now)
    sc = spark.sparkContext
    slices = max(1, min(len(tasks), sc.defaultParallelism * 4))
    collector = ResultCollector()
    for findings, files in sc.parallelize(tasks, slices).mapPartitions(slice_tables).collect():
        collector.add_tables(findings, files)
    return collector.tables()


def audit(spark: SparkSession, logdirs: Sequence[str], *, topics: Sequence[str] | None = None,
          topic_pattern: str | None = None, configs: Any = None, deep: bool = True,
          now_ms: int | None = None) -> tuple[DataFrame, DataFrame]:
    """Audit every partition replica, log dir and replica group under ``logdirs`` in parallel.

    ``configs``: :class:`kafka_format.log.topicconfig.TopicConfigs` (``configs[topic]`` is shipped with
    each task).  Returns (findings, files) DataFrames (module doc for the columns).
    """
    findings, files = audit_tables(spark, logdirs, topics=topics, topic_pattern=topic_pattern, configs=configs,
                                   deep=deep, now_ms=now_ms)
    return (spark.createDataFrame(findings, FINDINGS_SCHEMA), spark.createDataFrame(files, FILES_SCHEMA))
