"""``klogs retention`` work without Spark (:mod:`kafka_format.log.retention` holds the rules).

:func:`retention_groups` (driver: the replicas of each topic-partition, in output order) and
:func:`evaluate_group` (one task: walk them, keep the longest replica where asked) are what the
Spark job (:mod:`kafka_format.spark.retention`) runs; :func:`retention_local` runs them in this
process.  Per-partition summaries are :func:`kafka_format.log.retention.summarize` on both engines.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from kafka_format.storage.fsio import redact
from kafka_format.log.retention import RetentionTask, plan_retention, run_task

__all__ = ["SEGMENT_COLUMNS", "REPLICA_COLUMNS", "retention_groups", "evaluate_group", "retention_local"]

SEGMENT_COLUMNS = ("topic", "partition", "baseOffset", "sizeBytes", "largestTimestamp", "deletable", "reason",
                   "deletableAtMs")
REPLICA_COLUMNS = ("logDir", "brokerId")

Group = tuple[bool, list[RetentionTask]]


def retention_groups(logdirs: Any, configs: Any, now_ms: int, *, topics: Sequence[str] | None = None,
                     topic_pattern: str | None = None, replicas: str = "longest", missing_hw: str = "leo"
                     ) -> list[Group]:
    """Driver: ``(longest, tasks)`` per topic-partition (``replicas=longest``) or per replica
    (``all``), sorted by topic, partition, log dir."""
    if replicas not in ("longest", "all"):
        raise ValueError(f"replicas must be 'longest' or 'all', not {replicas!r}")
    tasks = plan_retention(logdirs, configs, now_ms, topics=topics, topic_pattern=topic_pattern,
                           missing_hw=missing_hw)
    groups: list[Group] = []
    for task in tasks:       # sorted by topic, partition, log dir
        if replicas == "longest" and groups and (groups[-1][1][0].topic, groups[-1][1][0].partition) == \
                (task.topic, task.partition):
            groups[-1][1].append(task)
        else:
            groups.append((replicas == "longest", [task]))
    return groups


def evaluate_group(group: Group) -> Iterator[tuple[Any, ...]]:
    """One task: the replicas of one topic-partition; with ``longest`` only the replica with the
    highest log end offset, then leader epoch, then the first listed (the data source's rule).
    Rows are ``SEGMENT_COLUMNS + REPLICA_COLUMNS``."""
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


def _evaluate_list(group: Group) -> list[tuple[Any, ...]]:
    return list(evaluate_group(group))


def retention_local(logdirs: Any, configs: Any, now_ms: int, *, topics: Sequence[str] | None = None,
                    topic_pattern: str | None = None, replicas: str = "longest", missing_hw: str = "leo"
                    ) -> list[dict[str, Any]]:
    """The rows of :func:`kafka_format.spark.retention.retention_candidates`, as dicts, computed in
    this process (only index files and batch headers are read: no pool below many partitions)."""
    from kafka_format.engine import run_tasks

    groups = retention_groups(logdirs, configs, now_ms, topics=topics, topic_pattern=topic_pattern,
                              replicas=replicas, missing_hw=missing_hw)
    columns = SEGMENT_COLUMNS + (REPLICA_COLUMNS if replicas == "all" else ())
    # index-only work: worth a pool only with many partitions (weights: 1 MiB per replica)
    out = run_tasks(_evaluate_list, groups, weights=[len(g[1]) << 20 for g in groups])
    return [dict(zip(columns, row[:len(columns)], strict=True)) for rows in out for row in rows]
