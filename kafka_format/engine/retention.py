"""The ``retention`` job: which segments Kafka's retention pass deletes at ``now``, and when
(:mod:`kafka_format.log.retention` holds the rules).

:func:`retention_job` plans on the driver (the replicas of each topic-partition, in output order,
each topic's policy resolved) and :func:`evaluate_groups` is the task: it re-opens the replicas of a
few topic-partitions, reads their indexes and the last segment's batch headers and walks them,
keeping the longest replica where asked, as an Arrow table of
:data:`kafka_format.log.retention.SEGMENT_SCHEMA` (+ ``logDir``/``brokerId``).  Any executor runs it
(:mod:`kafka_format.engine.runtime`); :func:`retention_rows` gathers the rows,
:func:`kafka_format.spark.frames.retention_candidates` makes them a DataFrame.  Per-partition
summaries are :func:`kafka_format.log.retention.summarize` on every executor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_format.log.retention import (
    SEGMENT_SCHEMA,
    RetentionTask,
    TieredRetention,
    plan_retention,
    run_task,
)
from kafka_format.storage.fsio import redact
from kafka_format.storage.logdir import LogDirSet, open_log_dirs

if TYPE_CHECKING:
    from kafka_format.engine.runtime import Executor

__all__ = [
    "REPLICA_SCHEMA",
    "Group",
    "RetentionJob",
    "evaluate_groups",
    "retention_job",
    "retention_local",
    "retention_rows",
]

# replicas="all": one row per segment of every copy, told apart by these.
REPLICA_SCHEMA = pa.schema([*SEGMENT_SCHEMA, pa.field("logDir", pa.string(), nullable=False),
                            pa.field("brokerId", pa.int32())])

Group = tuple[bool, tuple[RetentionTask, ...]]   # (keep only the longest replica, the replicas)


@dataclass(frozen=True)
class RetentionJob:
    """The planned job: tasks of consecutive groups (topic-partitions, or replicas), in output order."""

    tasks: tuple[tuple[Group, ...], ...]
    with_replica: bool

    @property
    def schema(self) -> pa.Schema:
        """The output's Arrow schema."""
        return REPLICA_SCHEMA if self.with_replica else SEGMENT_SCHEMA

    def weights(self) -> list[int]:
        """Index-only work: worth a pool only with many partitions (1 MiB per replica)."""
        return [sum(len(g[1]) for g in task) << 20 for task in self.tasks]


def _longest(results: list[Any]) -> list[Any]:
    """The replica with the highest log end offset, then leader epoch, then the first listed (the
    data source's rule)."""
    order = {id(r): i for i, r in enumerate(results)}
    return [max(results, key=lambda r: (r[0].log_end_offset, -1 if r[0].leader_epoch is None else r[0].leader_epoch,
                                        -order[id(r)]))]


def evaluate_groups(groups: Sequence[Group], with_replica: bool = False) -> pa.Table:
    """One task: the segment rows of each group, in order."""
    columns: list[list[Any]] = [[] for _ in range(len(REPLICA_SCHEMA))]
    for longest, tasks in groups:
        results = [run_task(task) for task in tasks]
        if longest and len(results) > 1:
            results = _longest(results)
        for facts, decisions in results:
            for d in decisions:
                for i, v in enumerate((facts.topic, facts.partition, d.base_offset, d.size, d.largest_timestamp,
                                       d.deletable, d.reason, d.deletable_at_ms, d.tier, redact(facts.log_dir),
                                       facts.broker_id)):
                    columns[i].append(v)
    schema = REPLICA_SCHEMA if with_replica else SEGMENT_SCHEMA
    return pa.Table.from_arrays([pa.array(columns[i], f.type) for i, f in enumerate(schema)], schema=schema)


def _with_remote_tiers(tasks: list[RetentionTask], dirs: LogDirSet) -> list[RetentionTask]:
    """The tasks of tiered replicas with their remote side (:class:`kafka_format.log.retention.TieredRetention`)
    from the ``__remote_log_metadata`` partitions among ``dirs`` (read once); a tiered topic's replica
    the metadata does not name has nothing copied yet (highest remote offset -1)."""
    from dataclasses import replace

    from kafka_format.read.planning import open_partitions
    from kafka_format.read.remote_log_metadata import metadata_of, remote_sides

    if not any(t.policy.tiered for t in tasks):
        return tasks
    found = open_partitions(dirs)
    view = metadata_of(found)
    if view is None:        # no metadata in these log dirs: the remote tier cannot be told
        return tasks
    by_path = {r.path: r for r in found}
    tiered = [by_path[t.path] for t in tasks if t.policy.tiered and t.path in by_path]
    sides = remote_sides(view, tiered, remote_enabled={r.topic for r in tiered})
    out = []
    for task in tasks:
        side = sides.get(id(by_path[task.path])) if task.policy.tiered and task.path in by_path else None
        out.append(task if side is None else replace(
            task, tiered=TieredRetention(side.cache, side.log_start_offset, side.highest_remote_offset)))
    return out


def retention_job(logdirs: Any, configs: Any, now_ms: int, *, cores: int, topics: Sequence[str] | None = None,
                  topic_pattern: str | None = None, replicas: str = "longest", missing_hw: str = "leo") -> RetentionJob:
    """Driver: ``(longest, replicas)`` per topic-partition (``replicas=longest``) or per replica
    (``all``), sorted by topic, partition, log dir, cut into at most two tasks per core."""
    if replicas not in ("longest", "all"):
        raise ValueError(f"replicas must be 'longest' or 'all', not {replicas!r}")
    dirs = logdirs if isinstance(logdirs, LogDirSet) else open_log_dirs(logdirs)     # listed once
    planned = _with_remote_tiers(plan_retention(dirs, configs, now_ms, topics=topics, topic_pattern=topic_pattern,
                                                missing_hw=missing_hw), dirs)
    groups: list[tuple[bool, list[RetentionTask]]] = []
    for task in planned:       # sorted by topic, partition, log dir
        if replicas == "longest" and groups and (groups[-1][1][0].topic, groups[-1][1][0].partition) == \
                (task.topic, task.partition):
            groups[-1][1].append(task)
        else:
            groups.append((replicas == "longest", [task]))
    frozen = [(longest, tuple(ts)) for longest, ts in groups]
    per = math.ceil(len(frozen) / max(1, min(len(frozen), 2 * cores))) if frozen else 1
    return RetentionJob(tuple(tuple(frozen[i:i + per]) for i in range(0, len(frozen), per)), replicas == "all")


def retention_rows(executor: Executor, logdirs: Any, configs: Any, now_ms: int, *,
                   topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                   replicas: str = "longest", missing_hw: str = "leo") -> pa.Table:
    """Every segment's row (:data:`kafka_format.log.retention.SEGMENT_SCHEMA`, + ``logDir``/``brokerId``
    with ``replicas="all"``), ordered by topic, partition (log dir), baseOffset; the walks run on
    ``executor``.  ``missing_hw``: see :func:`kafka_format.log.retention.partition_facts`."""
    from functools import partial

    job = retention_job(logdirs, configs, now_ms, cores=executor.cores(), topics=topics, topic_pattern=topic_pattern,
                        replicas=replicas, missing_hw=missing_hw)
    tables = list(executor.map(partial(evaluate_groups, with_replica=job.with_replica), job.tasks,
                               weights=job.weights()))
    return pa.concat_tables(tables) if tables else job.schema.empty_table()


def retention_local(logdirs: Any, configs: Any, now_ms: int, *, topics: Sequence[str] | None = None,
                    topic_pattern: str | None = None, replicas: str = "longest", missing_hw: str = "leo"
                    ) -> list[dict[str, Any]]:
    """:func:`retention_rows` on this process's cores, as dicts."""
    from kafka_format.engine.runtime import LocalExecutor

    return retention_rows(LocalExecutor(), logdirs, configs, now_ms, topics=topics, topic_pattern=topic_pattern,
                          replicas=replicas, missing_hw=missing_hw).to_pylist()
