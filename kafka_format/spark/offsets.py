"""``offsets_for_timestamps``: Kafka's ListOffsets answers for many partitions, as a DataFrame.

Partitions are discovered on the driver (:func:`kafka_format.planning.open_partitions`); the
lookups run in executors, one task per group of partitions.  Tasks get plain picklable
descriptors (topic, partition, partition-dir location) and re-open the partition there, so the
log dirs may live on any filesystem the executors can reach.  Semantics:
:mod:`kafka_format.offsets`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from kafka_format.fsio import redact
from kafka_format.logdir import LogDirSet, PartitionLog, open_log_dirs
from kafka_format.offsets import ISOLATION_LEVELS, PartitionLookup, parse_timestamp_spec
from kafka_format.planning import longest_replicas, open_partitions

__all__ = ["OFFSETS_SCHEMA", "offsets_for_timestamps"]

OFFSETS_SCHEMA = StructType([
    StructField("topic", StringType(), False),
    StructField("partition", IntegerType(), False),
    StructField("timestamp", LongType(), False),        # the requested spec: ms, or -1..-6
    StructField("offset", LongType(), True),            # null where Kafka answers -1
    StructField("recordTimestamp", LongType(), True),   # null where Kafka answers -1 (specials, none)
    StructField("leaderEpoch", IntegerType(), True),    # null where Kafka gives no epoch
])
_ALL_EXTRA = [StructField("logDir", StringType(), False), StructField("brokerId", IntegerType(), True)]


@dataclass(frozen=True)
class _Target:
    """What an executor needs to find one replica again."""

    topic: str
    partition: int
    path: str        # partition dir location (local path or URI)
    log_dir: str


def _reopen(target: _Target) -> PartitionLog:
    for replica in open_log_dirs(target.path).all_partitions():
        if (replica.topic, replica.partition, replica.kind) == (target.topic, target.partition, "live"):
            return replica
    from kafka_format.errors import LogDirError

    raise LogDirError("partition dir no longer holds the partition", path=target.path,
                      expected=f"{target.topic}-{target.partition}", found="nothing")


def _lookup_group(group: Sequence[_Target], specs: Sequence[int], isolation: str, with_replica: bool
                  ) -> Iterator[tuple[object, ...]]:
    for target in group:
        replica = _reopen(target)
        with PartitionLookup(replica) as lookup:
            for spec in specs:
                a = lookup.list_offsets(spec, isolation)
                row: tuple[object, ...] = (target.topic, target.partition, spec, a.offset, a.record_timestamp,
                                           a.leader_epoch)
                if with_replica:
                    row += (redact(target.log_dir), replica.broker_id)
                yield row


def _selected(replicas: Sequence[PartitionLog], topics: Sequence[str] | None, topic_pattern: str | None
              ) -> list[PartitionLog]:
    if not topics and topic_pattern is None:
        return list(replicas)
    wanted = set(topics or ())
    pattern = re.compile(topic_pattern) if topic_pattern is not None else None
    return [r for r in replicas
            if r.topic in wanted or (pattern is not None and pattern.fullmatch(r.topic) is not None)]


def offsets_for_timestamps(spark: SparkSession, logdirs: str | Sequence[str] | LogDirSet,
                           timestamps: Sequence[int | str], *, topics: Sequence[str] | None = None,
                           topic_pattern: str | None = None, isolation_level: str = "read_uncommitted",
                           replicas: str = "longest") -> DataFrame:
    """One row per selected partition and timestamp spec: Kafka's ListOffsets answer.

    Columns: :data:`OFFSETS_SCHEMA` (``timestamp`` = the spec as ms or the negative special
    value; ``offset``/``recordTimestamp``/``leaderEpoch`` null where Kafka sends -1), plus
    ``logDir``/``brokerId`` with ``replicas="all"`` (one row per copy).  ``topics`` and
    ``topic_pattern`` (full match) select the union of what they name; neither = every topic.
    Rows are ordered by topic, partition (log dir), then the order of ``timestamps``.
    """
    if isolation_level not in ISOLATION_LEVELS:
        raise ValueError(f"isolation_level must be one of {ISOLATION_LEVELS}, got {isolation_level!r}")
    if replicas not in ("longest", "all"):
        raise ValueError(f"replicas must be 'longest' or 'all', got {replicas!r}")
    specs = [parse_timestamp_spec(t) for t in timestamps]
    chosen = _selected(open_partitions(logdirs if isinstance(logdirs, LogDirSet) else
                                       ([logdirs] if isinstance(logdirs, str) else list(logdirs))),
                       topics, topic_pattern)
    if replicas == "longest":
        chosen = longest_replicas(chosen)
    targets = [_Target(r.topic, r.partition, r.path, r.log_dir) for r in chosen]
    with_replica = replicas == "all"
    fields = list(OFFSETS_SCHEMA.fields) + (_ALL_EXTRA if with_replica else [])
    schema = StructType(fields)
    if not targets or not specs:
        return spark.createDataFrame([], schema)
    sc = spark.sparkContext
    tasks = max(1, min(len(targets), 2 * sc.defaultParallelism))
    per = math.ceil(len(targets) / tasks)
    groups = [targets[i:i + per] for i in range(0, len(targets), per)]
    iso = isolation_level
    rdd = sc.parallelize(groups, len(groups)).flatMap(lambda g: _lookup_group(g, specs, iso, with_replica))
    # groups are consecutive slices of the ordered targets and each task yields its rows in order,
    # so the partition order of the RDD is the row order (no sort, no shuffle)
    return spark.createDataFrame(rdd, schema)
