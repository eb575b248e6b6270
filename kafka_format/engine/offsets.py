"""``klogs offsets`` work without Spark: ListOffsets answers per partition (:mod:`kafka_format.log.list_offsets`).

:func:`lookup_targets` (driver: which replicas, in output order) and :func:`lookup_group`
(one task: re-open a few partitions, answer every timestamp spec) are what the Spark job
(:mod:`kafka_format.spark.offsets`) runs on its driver and executors; :func:`list_offsets_local`
runs them in this process.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from kafka_format.storage.fsio import redact
from kafka_format.storage.logdir import LogDirSet
from kafka_format.storage.partition_state import PartitionRef, TopicSelection
from kafka_format.log.list_offsets import ISOLATION_LEVELS, PartitionLookup, parse_timestamp_spec
from kafka_format.read.planning import longest_replicas, open_partitions

__all__ = ["COLUMNS", "REPLICA_COLUMNS", "Target", "lookup_targets", "lookup_group", "group_targets",
           "list_offsets_local"]

COLUMNS = ("topic", "partition", "timestamp", "offset", "recordTimestamp", "leaderEpoch")
REPLICA_COLUMNS = ("logDir", "brokerId")       # added with replicas="all"


@dataclass(frozen=True)
class Target(PartitionRef):
    """One replica to answer for, re-opened by the task that answers."""

    segments: int = 0   # its segments: the work of a lookup (index bytes only), for the local engine's pool


def lookup_group(group: Sequence[Target], specs: Sequence[int], isolation: str, with_replica: bool
                 ) -> Iterator[tuple[object, ...]]:
    """One task: rows ``COLUMNS`` (+ ``REPLICA_COLUMNS``) of each target, specs in the given order."""
    for target in group:
        replica = target.open()
        with PartitionLookup(replica) as lookup:
            for spec in specs:
                a = lookup.list_offsets(spec, isolation)
                row: tuple[object, ...] = (target.topic, target.partition, spec, a.offset, a.record_timestamp,
                                           a.leader_epoch)
                if with_replica:
                    row += (redact(target.log_dir), replica.broker_id)
                yield row


def lookup_targets(logdirs: str | Sequence[str] | LogDirSet, timestamps: Sequence[int | str], *,
                   topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                   isolation_level: str = "read_uncommitted", replicas: str = "longest"
                   ) -> tuple[list[Target], list[int]]:
    """Driver: the replicas to answer for (by topic, partition, log dir) and the parsed specs."""
    if isolation_level not in ISOLATION_LEVELS:
        raise ValueError(f"isolation_level must be one of {ISOLATION_LEVELS}, got {isolation_level!r}")
    if replicas not in ("longest", "all"):
        raise ValueError(f"replicas must be 'longest' or 'all', got {replicas!r}")
    specs = [parse_timestamp_spec(t) for t in timestamps]
    chosen = TopicSelection.of(topics, topic_pattern).select(open_partitions(
        logdirs if isinstance(logdirs, LogDirSet) else ([logdirs] if isinstance(logdirs, str) else list(logdirs))))
    if replicas == "longest":
        chosen = longest_replicas(chosen)
    return [Target(r.topic, r.partition, r.path, r.log_dir, len(r.segments)) for r in chosen], specs


def group_targets(targets: Sequence[Target], tasks: int) -> list[list[Target]]:
    """Consecutive slices of ``targets``, at most ``tasks`` of them (the row order is kept)."""
    if not targets:
        return []
    tasks = max(1, min(len(targets), tasks))
    per = math.ceil(len(targets) / tasks)
    return [list(targets[i:i + per]) for i in range(0, len(targets), per)]


def _answer(group: Sequence[Target], specs: Sequence[int], isolation: str, with_replica: bool
            ) -> list[tuple[object, ...]]:
    return list(lookup_group(group, specs, isolation, with_replica))


def list_offsets_local(logdirs: str | Sequence[str] | LogDirSet, timestamps: Sequence[int | str], *,
                       topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                       isolation_level: str = "read_uncommitted", replicas: str = "longest"
                       ) -> list[dict[str, Any]]:
    """The rows of :func:`kafka_format.spark.offsets.offsets_for_timestamps`, as dicts, computed
    in this process (a process pool for large inputs)."""
    from kafka_format.engine import run_tasks, task_work, workers

    targets, specs = lookup_targets(logdirs, timestamps, topics=topics, topic_pattern=topic_pattern,
                                    isolation_level=isolation_level, replicas=replicas)
    with_replica = replicas == "all"
    columns = COLUMNS + (REPLICA_COLUMNS if with_replica else ())
    if not targets or not specs:
        return []
    groups = group_targets(targets, 2 * workers())
    fn = partial(_answer, specs=specs, isolation=isolation_level, with_replica=with_replica)
    # index lookups: the work is per partition and per segment, not per byte of the segments
    out = run_tasks(fn, groups, weights=[task_work(partitions=len(g), looked_up_segments=sum(t.segments for t in g))
                                         for g in groups])
    return [dict(zip(columns, row, strict=True)) for rows in out for row in rows]
