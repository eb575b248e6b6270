"""The ``offsets`` job: Kafka's ListOffsets answers per partition (:mod:`kafka_format.log.list_offsets`).

:func:`offsets_job` plans on the driver (which replicas, in output order, cut into groups of
consecutive partitions) and :func:`lookup_group` is the task: it re-opens a few partitions and
answers every timestamp spec, as an Arrow table of :data:`SCHEMA`.  Any executor runs it
(:mod:`kafka_format.engine.runtime`: this process, or Spark tasks); :func:`list_offsets` gathers the
answers, :func:`kafka_format.spark.frames.offsets_for_timestamps` makes them a DataFrame.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_format.log.list_offsets import (
    ISOLATION_LEVELS,
    PartitionLookup,
    TieredOffsets,
    parse_timestamp_spec,
)
from kafka_format.read.planning import longest_replicas, open_partitions
from kafka_format.storage.fsio import redact
from kafka_format.storage.logdir import LogDirSet, PartitionLog
from kafka_format.storage.partition_state import PartitionRef, TopicSelection

if TYPE_CHECKING:
    from kafka_format.engine.runtime import Executor

__all__ = [
    "COLUMNS",
    "REPLICA_COLUMNS",
    "REPLICA_SCHEMA",
    "SCHEMA",
    "OffsetsJob",
    "Target",
    "group_targets",
    "list_offsets",
    "list_offsets_local",
    "lookup_group",
    "offsets_job",
    "tiered_offsets",
]

# The output, declared once: one row per partition (per copy with replicas="all") and timestamp spec.
SCHEMA = pa.schema([
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("timestamp", pa.int64(), nullable=False),     # the requested spec: ms, or -1..-6
    pa.field("offset", pa.int64()),                         # null where Kafka answers -1
    pa.field("recordTimestamp", pa.int64()),                # null where Kafka answers -1 (specials, none)
    pa.field("leaderEpoch", pa.int32()),                    # null where Kafka gives no epoch
])
REPLICA_SCHEMA = pa.schema([*SCHEMA, pa.field("logDir", pa.string(), nullable=False),
                            pa.field("brokerId", pa.int32())])          # replicas="all": one row per copy
COLUMNS = tuple(SCHEMA.names)
REPLICA_COLUMNS = tuple(REPLICA_SCHEMA.names[len(SCHEMA):])


@dataclass(frozen=True)
class Target(PartitionRef):
    """One replica to answer for, re-opened by the task that answers."""

    segments: int = 0   # its segments: the work of a lookup (index bytes only), for the local engine's pool
    tiered: TieredOffsets | None = None     # its remote tier's side, from __remote_log_metadata


@dataclass(frozen=True)
class OffsetsJob:
    """The planned job: its tasks (groups of targets, in output order) and what every task answers."""

    groups: tuple[tuple[Target, ...], ...]
    specs: tuple[int, ...]
    isolation: str
    with_replica: bool

    @property
    def schema(self) -> pa.Schema:
        """The output's Arrow schema."""
        return REPLICA_SCHEMA if self.with_replica else SCHEMA

    def task(self) -> Any:
        """The task function (picklable): a group of targets -> its Arrow table."""
        return partial(lookup_group, specs=self.specs, isolation=self.isolation, with_replica=self.with_replica)

    def weights(self) -> list[int]:
        """Each task's work for the local executor: index lookups, per partition and segment."""
        from kafka_format.engine import task_work

        return [task_work(partitions=len(g), looked_up_segments=sum(t.segments for t in g)) for g in self.groups]


def lookup_group(group: Sequence[Target], specs: Sequence[int], isolation: str, with_replica: bool) -> pa.Table:
    """One task: the rows of each target (``SCHEMA``, + ``REPLICA_COLUMNS``), specs in the given order."""
    rows: list[tuple[object, ...]] = []
    for target in group:
        replica = target.open()
        with PartitionLookup(replica, tiered=target.tiered) as lookup:
            for spec in specs:
                a = lookup.list_offsets(spec, isolation)
                row: tuple[object, ...] = (target.topic, target.partition, spec, a.offset, a.record_timestamp,
                                           a.leader_epoch)
                if with_replica:
                    row += (redact(target.log_dir), replica.broker_id)
                rows.append(row)
    schema = REPLICA_SCHEMA if with_replica else SCHEMA
    return pa.Table.from_arrays([pa.array([r[i] for r in rows], f.type) for i, f in enumerate(schema)], schema=schema)


def group_targets(targets: Sequence[Target], tasks: int) -> list[list[Target]]:
    """Consecutive slices of ``targets``, at most ``tasks`` of them (the row order is kept)."""
    if not targets:
        return []
    tasks = max(1, min(len(targets), tasks))
    per = math.ceil(len(targets) / tasks)
    return [list(targets[i:i + per]) for i in range(0, len(targets), per)]


def offsets_job(logdirs: str | Sequence[str] | LogDirSet, timestamps: Sequence[int | str], *, cores: int,
                topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                isolation_level: str = "read_uncommitted", replicas: str = "longest") -> OffsetsJob:
    """Driver: the replicas to answer for (by topic, partition, log dir), the parsed specs, and the
    tasks: at most two per core, each a run of consecutive partitions (no task holds one alone
    when there are more partitions than tasks)."""
    if isolation_level not in ISOLATION_LEVELS:
        raise ValueError(f"isolation_level must be one of {ISOLATION_LEVELS}, got {isolation_level!r}")
    if replicas not in ("longest", "all"):
        raise ValueError(f"replicas must be 'longest' or 'all', got {replicas!r}")
    specs = tuple(parse_timestamp_spec(t) for t in timestamps)
    found = open_partitions(
        logdirs if isinstance(logdirs, LogDirSet) else ([logdirs] if isinstance(logdirs, str) else list(logdirs)))
    chosen = TopicSelection.of(topics, topic_pattern).select(found)
    if replicas == "longest":
        chosen = longest_replicas(chosen)
    tiered = tiered_offsets(found, chosen)
    targets = [Target(r.topic, r.partition, r.path, r.log_dir, len(r.segments), tiered.get(id(r))) for r in chosen]
    groups = group_targets(targets, 2 * cores) if specs else []
    return OffsetsJob(tuple(tuple(g) for g in groups), specs, isolation_level, replicas == "all")


def tiered_offsets(found: Sequence[PartitionLog], chosen: Sequence[PartitionLog]) -> dict[int, TieredOffsets]:
    """The tiered replicas among ``chosen`` (by ``id``) and what their remote tier tells ListOffsets:
    the ``__remote_log_metadata`` partitions among ``found`` replayed once
    (:func:`kafka_format.read.remote_log_metadata.load_remote_log_metadata`), a replica tiered when
    that metadata holds its topic id's partition.  No metadata partition: none is."""
    from kafka_format.read.remote_log_metadata import metadata_of, tiered_partition
    from kafka_format.storage.tiered_history import tiered_log_start

    view = metadata_of(found)
    out: dict[int, TieredOffsets] = {}
    for r in chosen:
        tip = tiered_partition(view, r)
        if view is None or tip is None:
            continue
        cache = view.cache(tip)
        assert cache is not None
        lineage = [(e.epoch, e.start_offset) for e in r.leader_epochs.entries] if r.leader_epochs else None
        highest, _epoch = view.highest_offset(tip, leader_epochs=lineage)
        log_start = tiered_log_start(r, cache, lineage)[0]
        remote_only = tuple((m.start_offset, m.end_offset, m.max_timestamp_ms) for m in view.copied_segments(tip)
                            if log_start <= m.end_offset < r.log_start_offset)
        out[id(r)] = TieredOffsets(log_start, highest, remote_only)
    return out


def list_offsets(executor: Executor, logdirs: str | Sequence[str] | LogDirSet, timestamps: Sequence[int | str], *,
                 topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                 isolation_level: str = "read_uncommitted", replicas: str = "longest") -> pa.Table:
    """Every answer as one Arrow table (:data:`SCHEMA`; + ``logDir``/``brokerId`` with
    ``replicas="all"``), in the order of topic, partition (log dir), then ``timestamps``; the
    lookups run on ``executor``.  ``topics`` and ``topic_pattern`` (full match) select the union of
    what they name; neither = every topic."""
    job = offsets_job(logdirs, timestamps, cores=executor.cores(), topics=topics, topic_pattern=topic_pattern,
                      isolation_level=isolation_level, replicas=replicas)
    tables = list(executor.map(job.task(), job.groups, weights=job.weights()))
    return pa.concat_tables(tables) if tables else job.schema.empty_table()


def list_offsets_local(logdirs: str | Sequence[str] | LogDirSet, timestamps: Sequence[int | str], *,
                       topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                       isolation_level: str = "read_uncommitted", replicas: str = "longest") -> list[dict[str, Any]]:
    """:func:`list_offsets` on this process's cores, as dicts."""
    from kafka_format.engine.runtime import LocalExecutor

    return list_offsets(LocalExecutor(), logdirs, timestamps, topics=topics, topic_pattern=topic_pattern,
                        isolation_level=isolation_level, replicas=replicas).to_pylist()
