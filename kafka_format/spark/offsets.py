"""``offsets_for_timestamps``: Kafka's ListOffsets answers for many partitions, as a DataFrame.

Partitions are discovered on the driver (:func:`kafka_format.engine.offsets.lookup_targets`); the
lookups (:func:`kafka_format.engine.offsets.lookup_group`, which the local engine runs too) run in
executors, one task per group of partitions.  Tasks get plain picklable
descriptors (topic, partition, partition-dir location) and re-open the partition there, so the
log dirs may live on any filesystem the executors can reach.  Semantics:
:mod:`kafka_format.log.list_offsets`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from kafka_format.engine.offsets import group_targets, lookup_group, lookup_targets
from kafka_format.storage.logdir import LogDirSet

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
    targets, specs = lookup_targets(logdirs, timestamps, topics=topics, topic_pattern=topic_pattern,
                                    isolation_level=isolation_level, replicas=replicas)
    with_replica = replicas == "all"
    fields = list(OFFSETS_SCHEMA.fields) + (_ALL_EXTRA if with_replica else [])
    schema = StructType(fields)
    if not targets or not specs:
        return spark.createDataFrame([], schema)
    sc = spark.sparkContext
    groups = group_targets(targets, 2 * sc.defaultParallelism)
    iso = isolation_level
    rdd = sc.parallelize(groups, len(groups)).flatMap(lambda g: lookup_group(g, specs, iso, with_replica))
    # groups are consecutive slices of the ordered targets and each task yields its rows in order,
    # so the partition order of the RDD is the row order (no sort, no shuffle)
    return spark.createDataFrame(rdd, schema)
