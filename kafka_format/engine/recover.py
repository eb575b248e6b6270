"""The ``recover`` job on any executor: one task per replica, :func:`kafka_format.log.recovery.plan_recovery`.

:func:`recover_tasks` plans on the driver (each live, ``-delete`` and ``-future`` replica with its
log dir's clean-shutdown flag, its topic's ``index.interval.bytes`` and the topic id most of the
topic's replicas carry); :func:`run_recover_task` is the task (it re-opens the replica's files by
value and returns the ``partitions.jsonl`` row); :func:`recover_rows` runs them in task order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_format.log.recovery import RecoveryPlan, plan_recovery
from kafka_format.log.topicconfig import TopicConfigs
from kafka_format.storage.logdir import LogDirSet
from kafka_format.storage.partition_log import PartitionLog

if TYPE_CHECKING:
    from kafka_format.engine.runtime import Executor

__all__ = ["RecoverTask", "recover_plans", "recover_rows", "recover_tasks", "run_recover_task"]

_KINDS = ("live", "delete", "future")


@dataclass(frozen=True)
class RecoverTask:
    """One replica to predict."""

    part: PartitionLog
    clean_shutdown: bool
    index_interval_bytes: int
    expected_topic_id: str | None


def recover_tasks(dirs: LogDirSet, configs: TopicConfigs, *, topics: Sequence[str] | None = None,
                  topic_pattern: str | None = None) -> list[RecoverTask]:
    """The replicas of ``dirs`` (log-dir order, then topic, partition, kind)."""
    import re

    pattern = re.compile(topic_pattern) if topic_pattern else None
    chosen = [(d, p) for d in dirs for p in d.partitions if p.kind in _KINDS
              and (not topics or p.topic in topics) and (pattern is None or pattern.fullmatch(p.topic))]
    ids: dict[str, Counter[str]] = {}
    for _d, p in chosen:
        if p.topic_id is not None:
            ids.setdefault(p.topic, Counter())[p.topic_id] += 1
    expected = {t: c.most_common(1)[0][0] for t, c in ids.items() if len(c) > 1}
    return [RecoverTask(p, d.had_clean_shutdown, configs[p.topic].index_interval_bytes, expected.get(p.topic))
            for d, p in chosen]


def run_recover_task(task: RecoverTask) -> RecoveryPlan:
    """One replica's plan."""
    return plan_recovery(task.part, clean_shutdown=task.clean_shutdown,
                         index_interval_bytes=task.index_interval_bytes,
                         expected_topic_id=task.expected_topic_id)


def recover_plans(executor: Executor, tasks: Sequence[RecoverTask]) -> list[RecoveryPlan]:
    """Every task's plan, in task order, on ``executor``."""
    weights = [sum(int(s.log_size or 0) for s in t.part.segments) for t in tasks]
    names = [f"{t.part.log_dir} {t.part.topic}-{t.part.partition}" for t in tasks]
    return list(executor.map(run_recover_task, tasks, weights=weights, names=names))


def recover_rows(executor: Executor, tasks: Sequence[RecoverTask]) -> list[dict[str, Any]]:
    """The ``partitions.jsonl`` rows of ``tasks``."""
    return [p.row() for p in recover_plans(executor, tasks)]
