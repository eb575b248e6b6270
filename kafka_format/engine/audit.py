"""``klogs audit`` work without Spark (:mod:`kafka_format.log.audit.auditor` holds the checks).

:func:`audit_tasks` (driver: one task per partition replica, per log dir and per replica group)
and :func:`run_audit_task` (one task: its findings and per-file accounting rows) are the work;
the Spark job (:mod:`kafka_format.spark.audit`) runs them by slices (:func:`slice_tables`),
:func:`audit_local` in this process (:func:`task_rows`).  Both engines gather the rows into Arrow
tables in task order and sort them the same way (:mod:`kafka_format.log.audit.tables`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kafka_format.log.audit.auditor import (
    ACCOUNTING_COLUMNS,
    FINDING_COLUMNS,
    Finding,
    audit_log_dir,
    audit_partition_report,
    audit_replicas,
    coordinator_transactions,
    replica_groups,
)
from kafka_format.log.audit.tables import ResultCollector
from kafka_format.common.errors import KafkaFormatError, LogDirError
from kafka_format.engine import task_work
from kafka_format.storage.logdir import LogDir, open_log_dirs
from kafka_format.read.planning import longest_replicas
from kafka_format.storage.partition_state import PartitionRef, TopicSelection

__all__ = ["AuditTask", "audit_tasks", "run_audit_task", "task_rows", "slice_tables", "audit_local"]

@dataclass(frozen=True)
class AuditTask:
    """One unit of executor work: ``kind`` is partition | logdir | replicas; ``replicas`` the
    partition (partition) or the replicas of one partition across log dirs (replicas), re-opened where
    the task runs; ``log_dir`` the log dir's location (logdir)."""

    kind: str
    replicas: tuple[PartitionRef, ...]
    log_dir: str | None
    topic: str | None
    config: Any
    deep: bool
    now_ms: int
    coordinator: Any = None     # audit.coordinator_transactions of the log dirs (partition tasks)
    weight: int = 0             # bytes of work, for the local engine's pool (engine.run_tasks)


def _reopen_log_dir(path: str) -> LogDir:
    for d in open_log_dirs([path], max_depth=0).log_dirs:
        if d.path == path:
            return d
    raise KafkaFormatError("log dir vanished between planning and auditing", path=path)


def _error_row(task: AuditTask, err: BaseException) -> dict[str, Any]:
    path = getattr(err, "path", None) or (task.replicas[0].path if task.replicas else task.log_dir)
    position = getattr(err, "position", None)
    return Finding("error", "state-file-corrupt", task.topic, None, path, position, None, None, None,
                   f"could not audit: {err}").row()


def run_audit_task(task: AuditTask) -> Iterator[tuple[str, dict[str, Any]]]:
    """One task: ``("finding" | "file", row)`` pairs (an unreadable partition is a finding)."""
    try:
        if task.kind == "partition":
            report = audit_partition_report(task.replicas[0].open(), config=task.config,
                                            deep=task.deep, now_ms=task.now_ms, coordinator=task.coordinator)
            for f in report.findings:
                yield "finding", f.row()
            for a in report.files:
                yield "file", a.row()
        elif task.kind == "logdir":
            for f in audit_log_dir(_reopen_log_dir(str(task.log_dir))):
                yield "finding", f.row()
        else:
            for f in audit_replicas([r.open() for r in task.replicas], config=task.config):
                yield "finding", f.row()
    except (KafkaFormatError, OSError) as err:  # one unreadable partition must not end the audit
        yield "finding", _error_row(task, err)


def audit_tasks(logdirs: Sequence[str], topics: Sequence[str] | None, topic_pattern: str | None, configs: Any,
           deep: bool, now_ms: int) -> list[AuditTask]:
    """Driver: the tasks of an audit of ``logdirs`` (listing only; the coordinators' open
    transactions are read here, once)."""
    found = open_log_dirs(list(logdirs))
    if not found.log_dirs:
        raise LogDirError("no Kafka log dir found", path=", ".join(str(p) for p in logdirs),
                          expected="a log dir, a partition dir or a parent of log dirs",
                          found="; ".join(found.notes) or "nothing")

    def config(topic: str) -> Any:
        return configs[topic] if configs is not None else None

    selection = TopicSelection.of(topics, topic_pattern)
    tasks: list[AuditTask] = [AuditTask("logdir", (), d.path, None, None, deep, now_ms, weight=task_work())
                              for d in found.log_dirs]
    # the coordinators' view of open transactions (hanging = not listed there), read on the driver;
    # unreadable (its own partition audit reports why): unknown, as without __transaction_state
    try:
        coordinator = coordinator_transactions(longest_replicas(
            [p for p in found.all_partitions() if p.kind == "live" and p.topic == "__transaction_state"]))
    except (KafkaFormatError, OSError):
        coordinator = None
    for p in found.all_partitions():
        if p.kind == "live" and selection.matches(p.topic):
            tasks.append(AuditTask("partition", (PartitionRef.of(p),), None, p.topic, config(p.topic), deep, now_ms,
                                   coordinator, weight=task_work(data_bytes=p.size_bytes,
                                                                     scanned_segments=len(p.segments))))
    for group in replica_groups(found.log_dirs):
        topic = group[0].topic
        if selection.matches(topic):
            tasks.append(AuditTask("replicas", tuple(PartitionRef.of(p) for p in group), None, topic, config(topic),
                                   deep, now_ms, weight=task_work(partitions=len(group),
                                                  looked_up_segments=sum(len(p.segments) for p in group))))
    return tasks


#: one task's rows in column order: (findings, accounting rows)
TaskRows = tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]


def task_rows(task: AuditTask) -> TaskRows:
    """:func:`run_audit_task`'s rows as tuples in column order (findings, accounting rows)."""
    findings: list[tuple[Any, ...]] = []
    files: list[tuple[Any, ...]] = []
    for kind, row in run_audit_task(task):
        if kind == "finding":
            findings.append(tuple(row[c] for c in FINDING_COLUMNS))
        else:
            files.append(tuple(row[c] for c in ACCOUNTING_COLUMNS))
    return findings, files


def slice_tables(tasks: Iterable[AuditTask]) -> Iterator[tuple[pa.Table, pa.Table]]:
    """The rows of a run of tasks (a Spark slice) as two tables in task order: what an executor
    sends back is columns, not a Python object per row."""
    collector = ResultCollector()
    for task in tasks:
        collector.add(*task_rows(task))
    yield collector.tables(ordered=False)


def audit_local(logdirs: Sequence[str], *, topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                configs: Any = None, deep: bool = True, now_ms: int | None = None) -> tuple[pa.Table, pa.Table]:
    """:func:`kafka_format.spark.audit.audit_tables` in this process (a process pool for large
    inputs): the findings, sorted (errors first), and the accounting rows, by file."""
    from kafka_format.engine import iter_tasks

    now = int(time.time() * 1000) if now_ms is None else now_ms
    tasks = audit_tasks(logdirs, topics, topic_pattern, configs, deep, now)
    collector = ResultCollector()
    for findings, files in iter_tasks(task_rows, tasks, weights=[t.weight for t in tasks]):
        collector.add(findings, files)
    return collector.tables()
