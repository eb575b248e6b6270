"""Distributed audit (``klogs audit``): the checks of :mod:`kafka_format.audit` on executors.

The driver lists the log dirs (:func:`kafka_format.open_log_dirs`, no batch is read there) and
ships small picklable descriptors, one per partition replica, per log dir and per replica group;
each executor task re-opens its partition dir from its location and runs the checks, so the
partitions (and log dirs, and replica groups) are audited in parallel.  Only findings and
per-file accounting rows come back: they are small (a bounded number per file).

DataFrames returned by :func:`audit`:

findings (:data:`FINDINGS_SCHEMA`): ``severity string`` (error|warning|info), ``check string``
(stable kebab-case id, :data:`kafka_format.audit.CHECKS`), ``topic string``, ``partition int``,
``file string`` (location of the file the finding is about), ``position long`` (byte offset in
that file), ``offset long`` (Kafka offset), ``expected string``, ``actual string``,
``message string``; null where a value does not apply.

files (:data:`FILES_SCHEMA`): one row per ``.log``: ``topic string, partition int, file string,
sizeBytes long, validBytes long, skippedBytes long, zeroTailBytes long, cutBytes long,
batches long`` with validBytes + skippedBytes + zeroTailBytes + cutBytes = sizeBytes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from kafka_format.audit import (
    ACCOUNTING_COLUMNS,
    FINDING_COLUMNS,
    Finding,
    audit_log_dir,
    audit_partition_report,
    audit_replicas,
    coordinator_transactions,
    replica_groups,
    sort_findings,
)
from kafka_format.errors import KafkaFormatError, LogDirError
from kafka_format.logdir import LogDir, PartitionLog, open_log_dirs
from kafka_format.planning import longest_replicas

__all__ = ["audit", "audit_rows", "FINDINGS_SCHEMA", "FILES_SCHEMA"]

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


@dataclass(frozen=True)
class _Task:
    """One unit of executor work: ``kind`` is partition | logdir | replicas; ``paths`` are
    partition dir locations (partition, replicas) or the log dir location (logdir)."""

    kind: str
    paths: tuple[str, ...]
    topic: str | None
    config: Any
    deep: bool
    now_ms: int
    coordinator: Any = None     # audit.coordinator_transactions of the log dirs (partition tasks)


def _reopen_partition(path: str) -> PartitionLog:
    for d in open_log_dirs([path]).log_dirs:
        for p in d.partitions:
            if p.path == path:
                return p
    raise KafkaFormatError("partition dir vanished between planning and auditing", path=path)


def _reopen_log_dir(path: str) -> LogDir:
    for d in open_log_dirs([path], max_depth=0).log_dirs:
        if d.path == path:
            return d
    raise KafkaFormatError("log dir vanished between planning and auditing", path=path)


def _error_row(task: _Task, err: BaseException) -> dict[str, Any]:
    path = getattr(err, "path", None) or (task.paths[0] if task.paths else None)
    position = getattr(err, "position", None)
    return Finding("error", "state-file-corrupt", task.topic, None, path, position, None, None, None,
                   f"could not audit: {err}").row()


def _run(task: _Task) -> Iterator[tuple[str, dict[str, Any]]]:
    """Executor side: ("finding" | "file", row) pairs of one task."""
    try:
        if task.kind == "partition":
            report = audit_partition_report(_reopen_partition(task.paths[0]), config=task.config,
                                            deep=task.deep, now_ms=task.now_ms, coordinator=task.coordinator)
            for f in report.findings:
                yield "finding", f.row()
            for a in report.files:
                yield "file", a.row()
        elif task.kind == "logdir":
            for f in audit_log_dir(_reopen_log_dir(task.paths[0])):
                yield "finding", f.row()
        else:
            replicas = [_reopen_partition(p) for p in task.paths]
            for f in audit_replicas(replicas, config=task.config):
                yield "finding", f.row()
    except (KafkaFormatError, OSError) as err:  # one unreadable partition must not end the audit
        yield "finding", _error_row(task, err)


def _selected(topic: str, topics: Sequence[str] | None, pattern: str | None) -> bool:
    if not topics and pattern is None:
        return True
    if topics and topic in topics:
        return True
    return pattern is not None and re.fullmatch(pattern, topic) is not None


def _tasks(logdirs: Sequence[str], topics: Sequence[str] | None, topic_pattern: str | None, configs: Any,
           deep: bool, now_ms: int) -> list[_Task]:
    found = open_log_dirs(list(logdirs))
    if not found.log_dirs:
        raise LogDirError("no Kafka log dir found", path=", ".join(str(p) for p in logdirs),
                          expected="a log dir, a partition dir or a parent of log dirs",
                          found="; ".join(found.notes) or "nothing")

    def config(topic: str) -> Any:
        return configs[topic] if configs is not None else None

    tasks: list[_Task] = [_Task("logdir", (d.path,), None, None, deep, now_ms) for d in found.log_dirs]
    # the coordinators' view of open transactions (hanging = not listed there), read on the driver;
    # unreadable (its own partition audit reports why): unknown, as without __transaction_state
    try:
        coordinator = coordinator_transactions(longest_replicas(
            [p for p in found.all_partitions() if p.kind == "live" and p.topic == "__transaction_state"]))
    except (KafkaFormatError, OSError):
        coordinator = None
    for p in found.all_partitions():
        if p.kind == "live" and _selected(p.topic, topics, topic_pattern):
            tasks.append(_Task("partition", (p.path,), p.topic, config(p.topic), deep, now_ms, coordinator))
    for group in replica_groups(found.log_dirs):
        topic = group[0].topic
        if _selected(topic, topics, topic_pattern):
            tasks.append(_Task("replicas", tuple(p.path for p in group), topic, config(topic), deep, now_ms))
    return tasks


def audit_rows(spark: SparkSession, logdirs: Sequence[str], *, topics: Sequence[str] | None = None,
               topic_pattern: str | None = None, configs: Any = None, deep: bool = True,
               now_ms: int | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Finding rows (sorted: errors first) and accounting rows, computed on the executors."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    tasks = _tasks(logdirs, topics, topic_pattern, configs, deep, now)
    if not tasks:
        return [], []
    sc = spark.sparkContext
    slices = max(1, min(len(tasks), sc.defaultParallelism * 4))
    pairs = sc.parallelize(tasks, slices).flatMap(_run).collect()
    findings = sort_findings(row for kind, row in pairs if kind == "finding")
    files = sorted((row for kind, row in pairs if kind == "file"), key=lambda r: r["file"])
    return findings, files


def audit(spark: SparkSession, logdirs: Sequence[str], *, topics: Sequence[str] | None = None,
          topic_pattern: str | None = None, configs: Any = None, deep: bool = True,
          now_ms: int | None = None) -> tuple[DataFrame, DataFrame]:
    """Audit every partition replica, log dir and replica group under ``logdirs`` in parallel.

    ``configs``: :class:`kafka_format.topicconfig.TopicConfigs` (``configs[topic]`` is shipped with
    each task).  Returns (findings, files) DataFrames (module doc for the columns).
    """
    findings, files = audit_rows(spark, logdirs, topics=topics, topic_pattern=topic_pattern, configs=configs,
                                 deep=deep, now_ms=now_ms)
    fdf = spark.createDataFrame([tuple(r[c] for c in FINDING_COLUMNS) for r in findings], FINDINGS_SCHEMA)
    adf = spark.createDataFrame([tuple(r[c] for c in ACCOUNTING_COLUMNS) for r in files], FILES_SCHEMA)
    return fdf, adf
