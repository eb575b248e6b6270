"""Tiered storage's ``__remote_log_metadata`` read from broker log dirs the way the remote log
metadata manager's consumer reads it, and replayed
(:func:`kafka_format.internal.remote_log_metadata_cache.replay_remote_log_metadata`).

``TopicBasedRemoteLogMetadataManagerConfig`` gives its consumer no ``isolation.level``: it reads
``read_uncommitted`` (the consumer's default; ``remote.log.metadata.consumer.isolation.level`` can
change it, hence ``isolation_level``), from the earliest offset, and never sees control records.  The
records come from this package's read path (:func:`kafka_format.read.planning.plan_splits` and
:func:`kafka_format.read.split_reader.read_split`: the longest replica of each partition among the log dirs, ``read_committed`` as
``CompletedFetch`` applies it with the ``.txnindex`` aborted transactions, bounded by ``up_to``), one
``__remote_log_metadata-<n>`` partition after the other, each in offset order.  Records without a
value are passed on as such (the consumer task fails on them, and the replay says so).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from kafka_format.common.topics import REMOTE_LOG_METADATA_TOPIC
from kafka_format.internal.remote_log_metadata import TopicIdPartition
from kafka_format.internal.remote_log_metadata_cache import (
    RemoteLogMetadataCache,
    RemoteLogMetadataView,
    replay_remote_log_metadata,
)
from kafka_format.storage.partition_log import PartitionLog

__all__ = ["RemoteSide", "load_remote_log_metadata", "metadata_of", "read_remote_log_metadata", "remote_sides",
           "tiered_partition"]

Paths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def _path_list(log_dirs: Paths) -> list[str]:
    if isinstance(log_dirs, (str, os.PathLike)):
        return [os.fspath(log_dirs)]
    return [os.fspath(p) for p in log_dirs]


def read_remote_log_metadata(log_dirs: Paths, *, isolation_level: str = "read_uncommitted",
                             up_to: str = "logEnd", mode: str = "FAILFAST",
                             topic: str = REMOTE_LOG_METADATA_TOPIC) -> Iterator[tuple[int, int, bytes | None]]:
    """(partition, offset, value) of every record a consumer of ``topic`` would get from the log dirs
    (broker log dirs, parents of them, or partition dirs), partition by partition in offset order.

    ``isolation_level``: ``read_uncommitted`` (the manager's) or ``read_committed``; ``up_to``:
    ``logEnd`` or ``highWatermark`` (from ``replication-offset-checkpoint``); ``mode``: the read path's
    (``FAILFAST`` raises on bad bytes, ``DROPMALFORMED`` skips them).  No partition of ``topic``: no
    records.
    """
    from kafka_format.read.options import parse_options
    from kafka_format.read.planning import open_partitions, plan_splits
    from kafka_format.read.split_reader import read_split

    opts = parse_options({"paths": json.dumps(_path_list(log_dirs)), "topics": topic,
                          "isolationLevel": isolation_level, "upTo": up_to, "mode": mode,
                          "includeHeaders": "false", "tier": "local"})
    splits = sorted((s for s in plan_splits(open_partitions(list(opts.paths)), opts.plan, opts.bounds)
                     if s.topic == topic),
                    key=lambda s: (s.partition, s.ranges[0].first_offset if s.ranges else -1))
    for split in splits:
        for batch in read_split(split, opts):
            if "_corrupt" in batch.schema.names:
                batch = batch.filter(batch.column("_corrupt").is_null())
            yield from zip(batch.column("partition").to_pylist(), batch.column("offset").to_pylist(),
                           batch.column("value").to_pylist(), strict=True)


def load_remote_log_metadata(log_dirs: Paths, *, isolation_level: str = "read_uncommitted",
                             up_to: str = "logEnd", stop_at_failure: bool = True,
                             num_metadata_partitions: int | None = None,
                             release: tuple[int, int] | None = None) -> RemoteLogMetadataView:
    """The remote log metadata of the log dirs' ``__remote_log_metadata`` partitions, replayed as the
    broker's ``TopicBasedRemoteLogMetadataManager`` builds it (see :func:`read_remote_log_metadata` for
    the reading, :func:`~kafka_format.internal.remote_log_metadata_cache.replay_remote_log_metadata` for
    ``stop_at_failure``, ``num_metadata_partitions`` and ``release``)."""
    return replay_remote_log_metadata(
        read_remote_log_metadata(log_dirs, isolation_level=isolation_level, up_to=up_to),
        stop_at_failure=stop_at_failure, num_metadata_partitions=num_metadata_partitions, release=release)


def metadata_of(found: Sequence[PartitionLog]) -> RemoteLogMetadataView | None:
    """The remote log metadata of the log dirs ``found`` was discovered in: their
    ``__remote_log_metadata`` replicas' log dirs loaded once (:func:`load_remote_log_metadata`); None
    when they hold no such partition (no topic there is tiered, as far as the files tell)."""
    dirs = sorted({r.log_dir for r in found if r.topic == REMOTE_LOG_METADATA_TOPIC})
    return load_remote_log_metadata(dirs) if dirs else None


def tiered_partition(view: RemoteLogMetadataView | None, replica: PartitionLog) -> TopicIdPartition | None:
    """The replica's topic-id-partition when the remote log metadata holds it (the partition has a
    remote tier), else None (no metadata, no topic id, or nothing of it there)."""
    if view is None or replica.topic_id is None:
        return None
    tip = TopicIdPartition(replica.topic_id, replica.topic, replica.partition)
    return tip if view.cache(tip) is not None else None


@dataclass(frozen=True)
class RemoteSide:
    """What a tiered replica's remote log metadata tells the jobs: its topic-id-partition (None: remote
    storage is on, nothing copied yet), its metadata cache, the log start of the whole history
    (:func:`kafka_format.storage.tiered_history.tiered_log_start`) and ``highestOffsetInRemoteStorage``
    (-1: nothing copied)."""

    partition: TopicIdPartition | None
    cache: RemoteLogMetadataCache
    log_start_offset: int
    highest_remote_offset: int


def remote_sides(view: RemoteLogMetadataView | None, replicas: Sequence[PartitionLog], *,
                 remote_enabled: Collection[str] = ()) -> dict[int, RemoteSide]:
    """The remote side of each tiered replica of ``replicas`` (by ``id``): those the metadata holds, and
    those of ``remote_enabled`` topics it does not (remote storage on, nothing copied yet)."""
    from kafka_format.storage.tiered_history import leader_epoch_lineage, tiered_log_start

    out: dict[int, RemoteSide] = {}
    nothing_copied: RemoteLogMetadataCache | None = None
    for r in replicas:
        tip = tiered_partition(view, r)
        cache = view.cache(tip) if view is not None and tip is not None else None
        if cache is None and r.topic not in remote_enabled:
            continue
        lineage = leader_epoch_lineage(r)
        if cache is None or view is None or tip is None:
            nothing_copied = nothing_copied or RemoteLogMetadataCache.from_finished_segments(())
            cache, highest = nothing_copied, -1
        else:
            highest = view.highest_offset(tip, leader_epochs=lineage or None)[0]
        out[id(r)] = RemoteSide(tip, cache, tiered_log_start(r, cache, lineage or None)[0], highest)
    return out
