"""Every job's answer as a DataFrame, for users who compose queries over them.

Each function plans its job on the driver (the job's own module, the same plan as ``klogs JOB``)
and returns the job's Arrow output as a lazy DataFrame whose partitions are the job's tasks
(:func:`kafka_format.spark.executor.frame`): its schema is the job's Arrow schema, its rows are in
the job's order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafka_format.spark.executor import frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kafka_format.storage.logdir import LogDirSet

__all__ = ["offsets_for_timestamps"]


def offsets_for_timestamps(spark: SparkSession, logdirs: str | Sequence[str] | LogDirSet,
                           timestamps: Sequence[int | str], *, topics: Sequence[str] | None = None,
                           topic_pattern: str | None = None, isolation_level: str = "read_uncommitted",
                           replicas: str = "longest") -> DataFrame:
    """One row per selected partition and timestamp spec: Kafka's ListOffsets answer.

    Columns: :data:`kafka_format.engine.offsets.SCHEMA` (``timestamp`` = the spec as ms or the
    negative special value; ``offset``/``recordTimestamp``/``leaderEpoch`` null where Kafka sends
    -1), plus ``logDir``/``brokerId`` with ``replicas="all"`` (one row per copy).  ``topics`` and
    ``topic_pattern`` (full match) select the union of what they name; neither = every topic.
    Rows are ordered by topic, partition (log dir), then the order of ``timestamps``.
    """
    from kafka_format.engine.offsets import offsets_job

    job = offsets_job(logdirs, timestamps, cores=spark.sparkContext.defaultParallelism, topics=topics,
                      topic_pattern=topic_pattern, isolation_level=isolation_level, replicas=replicas)
    return frame(spark, job.task(), job.groups, job.schema)
