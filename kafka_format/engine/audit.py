"""The ``audit`` job (:mod:`kafka_format.log.audit.auditor` holds the checks).

:func:`audit_tasks` plans on the driver (listing only: one unit per partition replica, per log dir
and per replica group; the coordinators' open transactions read once) and :func:`audit_job` cuts the
units into slices of about equal work, consecutive so that the rows keep the units' order.  The task
is :func:`slice_tables`: it re-opens each unit's files, runs the checks, and returns the findings and
the per-file accounting rows as two Arrow tables
(:data:`kafka_format.log.audit.model.FINDING_SCHEMA`, ``ACCOUNTING_SCHEMA``): columns, not a Python
object per row.  Any executor runs the slices (:mod:`kafka_format.engine.runtime`);
:func:`audit_run` gathers them in order and sorts them the same way on every executor
(:mod:`kafka_format.log.audit.tables`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_format.common.errors import KafkaFormatError, LogDirError
from kafka_format.common.topics import TRANSACTION_STATE_TOPIC
from kafka_format.engine import task_work
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
from kafka_format.log.audit.tiers import TierAudit, audit_tiers
from kafka_format.read.planning import longest_replicas
from kafka_format.read.remote_log_metadata import metadata_of, tiered_partition
from kafka_format.storage.logdir import LogDir, open_log_dirs
from kafka_format.storage.partition_state import PartitionRef, TopicSelection

if TYPE_CHECKING:
    from kafka_format.engine.runtime import Executor

__all__ = [
    "AuditJob",
    "AuditTask",
    "audit_job",
    "audit_local",
    "audit_run",
    "audit_tasks",
    "run_audit_task",
    "slice_tables",
    "task_rows",
]

SLICES_PER_CORE = 4     # slices of about equal work per core: a long partition does not hold up the rest

@dataclass(frozen=True)
class AuditTask:
    """One unit of executor work: ``kind`` is partition | logdir | replicas | tiers; ``replicas`` the
    partition (partition, tiers) or the replicas of one partition across log dirs (replicas), re-opened
    where the task runs; ``log_dir`` the log dir's location (logdir).  A tiers task audits a tiered
    partition's two tiers (:mod:`kafka_format.log.audit.tiers`) with its remote log metadata
    (``remote_metadata``) and, given ``remote_storage``, the remote storage's files."""

    kind: str
    replicas: tuple[PartitionRef, ...]
    log_dir: str | None
    topic: str | None
    config: Any
    deep: bool
    now_ms: int
    coordinator: Any = None     # audit.coordinator_transactions of the log dirs (partition tasks)
    weight: int = 0             # bytes of work, for the local engine's pool (engine.run_tasks)
    remote_metadata: Any = None     # tiers: the partition's RemoteLogMetadataCache and TopicIdPartition
    remote_storage: tuple[str, str] | None = None   # tiers: (URI, remoteStorageFormat)


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
        elif task.kind == "tiers":
            audit = _audit_tiers(task)
            for f in audit.findings:
                yield "finding", f.row()
            for a in audit.files:
                yield "file", a.row()
        elif task.kind == "logdir":
            for f in audit_log_dir(_reopen_log_dir(str(task.log_dir))):
                yield "finding", f.row()
        else:
            for f in audit_replicas([r.open() for r in task.replicas], config=task.config):
                yield "finding", f.row()
    except (KafkaFormatError, OSError) as err:  # one unreadable partition must not end the audit
        yield "finding", _error_row(task, err)


def _audit_tiers(task: AuditTask) -> TierAudit:
    from kafka_format.read.tiers import open_remote_tier
    from kafka_format.storage.tiered_history import tiered_history

    cache, tip = task.remote_metadata
    store = None
    if task.remote_storage is not None:
        store = open_remote_tier(task.remote_storage[0], task.remote_storage[1], [tip])
    history = tiered_history(task.replicas[0].open(), cache, store)
    return audit_tiers(history, deep=task.deep, with_store=store is not None)


def audit_tasks(logdirs: Sequence[str], topics: Sequence[str] | None, topic_pattern: str | None, configs: Any,
                deep: bool, now_ms: int, remote_storage: tuple[str, str] | None = None) -> list[AuditTask]:
    """Driver: the tasks of an audit of ``logdirs`` (listing only; the coordinators' open
    transactions and the remote log metadata are read here, once).  ``remote_storage``: (URI,
    format) of the tiered partitions' remote storage, whose files the tiers tasks then check."""
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
            [p for p in found.all_partitions() if p.kind == "live" and p.topic == TRANSACTION_STATE_TOPIC]))
    except (KafkaFormatError, OSError):
        coordinator = None
    for p in found.all_partitions():
        if p.kind == "live" and selection.matches(p.topic):
            tasks.append(AuditTask("partition", (PartitionRef.of(p),), None, p.topic, config(p.topic), deep, now_ms,
                                   coordinator, weight=task_work(data_bytes=p.size_bytes,
                                                                     scanned_segments=len(p.segments))))
    live = [p for p in found.all_partitions() if p.kind == "live"]
    try:
        view = metadata_of(live)
    except (KafkaFormatError, OSError):     # its own partition audit reports why
        view = None
    for p in longest_replicas([p for p in live if selection.matches(p.topic)]):
        tip = tiered_partition(view, p)
        if view is not None and tip is not None:
            tasks.append(AuditTask("tiers", (PartitionRef.of(p),), None, p.topic, config(p.topic), deep, now_ms,
                                   weight=task_work(data_bytes=p.size_bytes, scanned_segments=len(p.segments)),
                                   remote_metadata=(view.cache(tip), tip), remote_storage=remote_storage))
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


def slice_tables(tasks: Iterable[AuditTask]) -> tuple[pa.Table, pa.Table]:
    """One executor task: the rows of a slice of units as two tables in unit order."""
    collector = ResultCollector()
    for task in tasks:
        collector.add(*task_rows(task))
    return collector.tables(ordered=False)


@dataclass(frozen=True)
class AuditJob:
    """The planned job: consecutive slices of the units, each of about equal work."""

    slices: tuple[tuple[AuditTask, ...], ...]

    def weights(self) -> list[int]:
        """Each slice's bytes of work (for the local executor)."""
        return [sum(t.weight for t in s) for s in self.slices]


def _cut(tasks: Sequence[AuditTask], n: int) -> list[tuple[AuditTask, ...]]:
    """``tasks`` cut, in order, into at most ``n`` runs of about equal weight."""
    if not tasks:
        return []
    total = sum(max(1, t.weight) for t in tasks)
    out: list[list[AuditTask]] = [[]]
    done = 0
    for t in tasks:
        if out[-1] and done >= total * len(out) / n and len(out) < n:
            out.append([])
        out[-1].append(t)
        done += max(1, t.weight)
    return [tuple(s) for s in out]


def audit_job(logdirs: Sequence[str], *, cores: int, topics: Sequence[str] | None = None,
              topic_pattern: str | None = None, configs: Any = None, deep: bool = True,
              now_ms: int | None = None, remote_storage: tuple[str, str] | None = None) -> AuditJob:
    """Driver: the units of an audit of ``logdirs`` (:func:`audit_tasks`) in slices, at most
    :data:`SLICES_PER_CORE` per core."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    tasks = audit_tasks(logdirs, topics, topic_pattern, configs, deep, now, remote_storage)
    return AuditJob(tuple(_cut(tasks, SLICES_PER_CORE * cores)))


def audit_run(executor: Executor, logdirs: Sequence[str], *, topics: Sequence[str] | None = None,
              topic_pattern: str | None = None, configs: Any = None, deep: bool = True,
              now_ms: int | None = None, remote_storage: tuple[str, str] | None = None) -> tuple[pa.Table, pa.Table]:
    """Audit every partition replica, log dir and replica group under ``logdirs`` on ``executor``:
    the findings, sorted (errors first), and the accounting rows, by file.  ``configs``:
    :class:`kafka_format.log.topicconfig.TopicConfigs` (``configs[topic]`` goes with each unit);
    ``remote_storage``: (URI, format) of the tiered partitions' remote storage."""
    job = audit_job(logdirs, cores=executor.cores(), topics=topics, topic_pattern=topic_pattern, configs=configs,
                    deep=deep, now_ms=now_ms, remote_storage=remote_storage)
    collector = ResultCollector()
    for findings, files in executor.map(slice_tables, job.slices, weights=job.weights()):
        collector.add_tables(findings, files)
    return collector.tables()


def audit_local(logdirs: Sequence[str], *, topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                configs: Any = None, deep: bool = True, now_ms: int | None = None,
                remote_storage: tuple[str, str] | None = None) -> tuple[pa.Table, pa.Table]:
    """:func:`audit_run` on this process's cores."""
    from kafka_format.engine.runtime import LocalExecutor

    return audit_run(LocalExecutor(), logdirs, topics=topics, topic_pattern=topic_pattern, configs=configs,
                     deep=deep, now_ms=now_ms, remote_storage=remote_storage)
