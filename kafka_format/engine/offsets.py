"""The ``offsets`` job: Kafka's ListOffsets answers per partition (:mod:`kafka_format.log.list_offsets`).

:func:`offsets_job` plans on the driver (which replicas, in output order, cut into groups of
consecutive partitions) and :func:`lookup_group` is the task: it re-opens a few partitions and
answers every timestamp spec, as an Arrow table of :data:`SCHEMA`.  Any executor runs it
(:mod:`kafka_format.engine.runtime`: this process, or Spark tasks); :func:`list_offsets` gathers the
answers, :func:`kafka_format.spark.frames.offsets_for_timestamps` makes them a DataFrame.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_format.log.list_offsets import (
    ISOLATION_LEVELS,
    PartitionLookup,
    RemoteCandidate,
    TieredOffsets,
    parse_timestamp_spec,
)
from kafka_format.log.retention import remote_log_enabled
from kafka_format.log.topicconfig import TopicConfigs
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
                isolation_level: str = "read_uncommitted", replicas: str = "longest",
                remote_storage: str | None = None, remote_storage_format: str = "auto",
                configs: TopicConfigs | None = None) -> OffsetsJob:
    """Driver: the replicas to answer for (by topic, partition, log dir), the parsed specs, and the
    tasks: at most two per core, each a run of consecutive partitions (no task holds one alone
    when there are more partitions than tasks).  ``remote_storage``: the remote tier's root
    (:func:`tiered_offsets`); ``configs``: the topic configs (which topics have remote storage on)."""
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
    enabled = {r.topic for r in chosen if configs is not None and remote_log_enabled(r.topic, configs[r.topic])}
    tiered = tiered_offsets(found, chosen, remote_storage, remote_storage_format, enabled)
    targets = [Target(r.topic, r.partition, r.path, r.log_dir, len(r.segments), tiered.get(id(r))) for r in chosen]
    groups = group_targets(targets, 2 * cores) if specs else []
    return OffsetsJob(tuple(tuple(g) for g in groups), specs, isolation_level, replicas == "all")


def tiered_offsets(found: Sequence[PartitionLog], chosen: Sequence[PartitionLog],
                   remote_storage: str | None = None, remote_storage_format: str = "auto",
                   remote_enabled: Collection[str] = ()) -> dict[int, TieredOffsets]:
    """The tiered replicas among ``chosen`` (by ``id``) and what their remote tier tells ListOffsets:
    the ``__remote_log_metadata`` partitions among ``found`` replayed once
    (:func:`kafka_format.read.remote_log_metadata.load_remote_log_metadata`), a replica tiered when
    that metadata holds its topic id's partition (no metadata partition: none is).  ``remote_storage``:
    the remote storage's root, whose files answer the timestamps the remote tier answers (one
    listing per tiered partition; without it those timestamps are refused), in ``remote_storage_format``.
    ``remote_enabled``: topics whose config turns remote storage on
    (:func:`kafka_format.log.retention.remote_log_enabled`): their partitions are tiered even before
    anything is copied (then -5 has no offset and -6 is the log start while the local log starts there,
    as ``UnifiedLog`` answers with ``remoteLogEnabled()``)."""
    from kafka_format.read.remote_log_metadata import metadata_of, remote_sides
    from kafka_format.storage.tiered_history import leader_epoch_lineage

    view = metadata_of(found)
    sides = remote_sides(view, chosen, remote_enabled=remote_enabled)
    store = None
    copied = [side.partition for side in sides.values() if side.partition is not None]
    if remote_storage is not None and copied:
        from kafka_format.read.tiers import open_remote_tier

        store = open_remote_tier(remote_storage, remote_storage_format, copied)
    out: dict[int, TieredOffsets] = {}
    for r in chosen:
        side = sides.get(id(r))
        if side is None:
            continue
        candidates: tuple[RemoteCandidate, ...] = ()
        if side.partition is not None:
            directory = store.partition_dir(side.partition) if store is not None else None
            candidates = _search_order(r, side.cache, list(leader_epoch_lineage(r)), side.log_start_offset, directory)
        out[id(r)] = TieredOffsets(side.log_start_offset, side.highest_remote_offset, candidates)
    return out


def _search_order(replica: PartitionLog, cache: Any, lineage: list[tuple[int, int]], log_start: int,
                  directory: Any) -> tuple[RemoteCandidate, ...]:
    """The copied segments ``RemoteLogManager.findOffsetByTimestamp`` goes through, in its order: the
    epochs of the lineage from ``epochForOffset(logStartOffset)`` on (``nextEpoch``), each epoch's
    ``listRemoteLogSegments``, those ``COPY_SEGMENT_FINISHED`` and within the leader epochs
    (``isRemoteSegmentWithinLeaderEpochs`` against the log end offset); each with its fileset's files
    when ``directory`` (the remote partition dir) holds them complete."""
    from kafka_format.internal.remote_log_metadata import RemoteLogSegmentState
    from kafka_format.storage.partition_state import log_end_offset
    from kafka_format.storage.tiered_history import epoch_for_offset, within_leader_epochs

    epochs = sorted({e for e, _ in lineage})
    first = epoch_for_offset(sorted(lineage), log_start)
    if first is None:
        return ()
    leo = log_end_offset(replica)
    out: list[RemoteCandidate] = []
    for epoch in (e for e in epochs if e >= first):
        for m in cache.list_remote_log_segments(epoch):
            if m.state is not RemoteLogSegmentState.COPY_SEGMENT_FINISHED or not within_leader_epochs(m, leo, lineage):
                continue
            fileset = directory.fileset(m.segment_id) if directory is not None else None
            files = (fileset.segment() if fileset is not None and fileset.complete
                     and fileset.start_offset == m.start_offset else None)
            out.append(RemoteCandidate(m.start_offset, m.end_offset, m.max_timestamp_ms, m.segment_id, files))
    return tuple(out)


def list_offsets(executor: Executor, logdirs: str | Sequence[str] | LogDirSet, timestamps: Sequence[int | str], *,
                 topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                 isolation_level: str = "read_uncommitted", replicas: str = "longest",
                 remote_storage: str | None = None, remote_storage_format: str = "auto",
                 configs: TopicConfigs | None = None) -> pa.Table:
    """Every answer as one Arrow table (:data:`SCHEMA`; + ``logDir``/``brokerId`` with
    ``replicas="all"``), in the order of topic, partition (log dir), then ``timestamps``; the
    lookups run on ``executor``.  ``topics`` and ``topic_pattern`` (full match) select the union of
    what they name; neither = every topic."""
    job = offsets_job(logdirs, timestamps, cores=executor.cores(), topics=topics, topic_pattern=topic_pattern,
                      isolation_level=isolation_level, replicas=replicas, remote_storage=remote_storage,
                      remote_storage_format=remote_storage_format, configs=configs)
    tables = list(executor.map(job.task(), job.groups, weights=job.weights()))
    return pa.concat_tables(tables) if tables else job.schema.empty_table()


def list_offsets_local(logdirs: str | Sequence[str] | LogDirSet, timestamps: Sequence[int | str], *,
                       topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                       isolation_level: str = "read_uncommitted", replicas: str = "longest",
                       remote_storage: str | None = None, remote_storage_format: str = "auto",
                       configs: TopicConfigs | None = None) -> list[dict[str, Any]]:
    """:func:`list_offsets` on this process's cores, as dicts."""
    from kafka_format.engine.runtime import LocalExecutor

    return list_offsets(LocalExecutor(), logdirs, timestamps, topics=topics, topic_pattern=topic_pattern,
                        isolation_level=isolation_level, replicas=replicas,
                        remote_storage=remote_storage, remote_storage_format=remote_storage_format,
                        configs=configs).to_pylist()
