"""Every job's answer as a DataFrame, for users who compose queries over them.

Each function plans its job on the driver (the job's own module, the same plan as ``klogs JOB``)
and returns the job's Arrow output as a lazy DataFrame whose partitions are the job's tasks
(:func:`kafka_format.spark.executor.frame`): its schema is the job's Arrow schema, its rows are in
the job's order.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_format.spark.executor import frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kafka_format.storage.logdir import LogDirSet

__all__ = ["audit", "compaction_cleaner", "compaction_full", "compaction_full_decisions", "compaction_full_summary",
           "groups", "offsets_for_timestamps", "read_full_input", "retention_candidates", "retention_summary"]


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


def retention_candidates(spark: SparkSession, logdirs: Any, configs: Any, now_ms: int, *,
                         topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                         replicas: str = "longest", missing_hw: str = "leo") -> DataFrame:
    """One row per segment: ``topic, partition, baseOffset, sizeBytes, largestTimestamp, deletable,
    reason, deletableAtMs`` (:data:`kafka_format.log.retention.SEGMENT_SCHEMA`), ordered by topic,
    partition, baseOffset.

    ``logdirs``: paths or a ``LogDirSet``; ``configs``: ``TopicConfigs`` (``configs[topic]``).
    ``replicas``: ``longest`` (default: per topic-partition the replica with the highest log end
    offset, then leader epoch, as the data source picks) or ``all`` (every replica, with ``logDir``
    and ``brokerId`` columns added).  ``missing_hw``: see :func:`kafka_format.log.retention.partition_facts`.
    The driver only lists files; each task re-opens the replicas of a few topic-partitions and reads
    their indexes and last-segment batch headers.  No shuffle.
    """
    from kafka_format.engine.retention import evaluate_groups, retention_job

    job = retention_job(logdirs, configs, now_ms, cores=spark.sparkContext.defaultParallelism, topics=topics,
                        topic_pattern=topic_pattern, replicas=replicas, missing_hw=missing_hw)
    return frame(spark, partial(evaluate_groups, with_replica=job.with_replica), job.tasks, job.schema)


def groups(spark: SparkSession, logdirs: Any, now_ms: int, *, configs: Any = None,
           groups: Sequence[str] = (), group_pattern: str | None = None, topics: Sequence[str] | None = None,
           topic_pattern: str | None = None, offsets_retention_ms: int | None = None,
           offsets_partitions: int | None = None) -> DataFrame:
    """The ``klogs groups`` rows (:data:`kafka_format.log.groups.SCHEMA`): one per consumer group,
    topic and partition, ordered by group, topic, partition -- committed offset, lag, expiry and what
    the retention pass at ``now_ms`` deletes unread.  Unlike the other functions here the job runs
    when called (its stages depend on each other: the ``__consumer_offsets`` replay, then the
    partitions the groups name, then their retention), each stage on the session's executors; the
    DataFrame holds its answer, one partition per few groups.  ``offsets_retention_ms``: the brokers'
    ``offsets.retention.minutes`` in ms (default 7 days); ``offsets_partitions``: their
    ``offsets.topic.num.partitions`` (default: not checked)."""
    from kafka_format.engine.groups import GroupSelection, group_rows
    from kafka_format.log.groups import DEFAULT_OFFSETS_RETENTION_MS, SCHEMA
    from kafka_format.spark.executor import SparkExecutor

    result = group_rows(SparkExecutor(spark, description="kafka-log groups"), logdirs, now_ms, configs=configs,
                        groups=GroupSelection(tuple(groups), group_pattern), topics=topics,
                        topic_pattern=topic_pattern,
                        retention_ms=DEFAULT_OFFSETS_RETENTION_MS if offsets_retention_ms is None
                        else offsets_retention_ms, offsets_partitions=offsets_partitions)
    table = result.rows
    per = max(1, -(-table.num_rows // max(1, spark.sparkContext.defaultParallelism)))
    chunks = [table.slice(i, per) for i in range(0, table.num_rows, per)]
    return frame(spark, _identity, chunks, SCHEMA)


def _identity(table: pa.Table) -> pa.Table:
    """A task whose answer is its description (rows computed by the driver's job)."""
    return table


def _summarize_group(table: pa.Table) -> pa.Table:
    """``applyInArrow``: :func:`kafka_format.log.retention.summarize` of one topic-partition."""
    from kafka_format.log.retention import SUMMARY_SCHEMA, summarize

    return pa.Table.from_pylist(summarize(table.to_pylist()), schema=SUMMARY_SCHEMA)


def retention_summary(df: DataFrame) -> DataFrame:
    """Per topic-partition of :func:`retention_candidates`' rows: segments, bytes, deletable
    segments/bytes now, bytes remaining after this pass, bytes no deletion reaches without new data,
    next deletion time after now, time of the last deletion, oldest/newest segment largestTimestamp
    (:func:`kafka_format.log.retention.summarize`, the rule every executor's run uses)."""
    from kafka_format.log.retention import SEGMENT_FIELDS, SUMMARY_SCHEMA
    from kafka_format.spark.executor import spark_schema

    return (df.select(*SEGMENT_FIELDS).groupBy("topic", "partition")
            .applyInArrow(_summarize_group, spark_schema(SUMMARY_SCHEMA)).orderBy("topic", "partition"))


def audit(spark: SparkSession, logdirs: Sequence[str], *, topics: Sequence[str] | None = None,
          topic_pattern: str | None = None, configs: Any = None, deep: bool = True,
          now_ms: int | None = None) -> tuple[DataFrame, DataFrame]:
    """Audit every partition replica, log dir and replica group under ``logdirs`` on the session's
    executors: (findings, files) DataFrames of :data:`kafka_format.log.audit.model.FINDING_SCHEMA`
    (sorted: errors first) and ``ACCOUNTING_SCHEMA`` (by file).  ``configs``:
    :class:`kafka_format.log.topicconfig.TopicConfigs`."""
    from kafka_format.engine.audit import audit_run
    from kafka_format.log.audit.model import ACCOUNTING_SCHEMA, FINDING_SCHEMA
    from kafka_format.spark.executor import SparkExecutor, spark_schema

    findings, files = audit_run(SparkExecutor(spark), logdirs, topics=topics, topic_pattern=topic_pattern,
                                configs=configs, deep=deep, now_ms=now_ms)
    return (spark.createDataFrame(findings, spark_schema(FINDING_SCHEMA)),
            spark.createDataFrame(files, spark_schema(ACCOUNTING_SCHEMA)))


# --- compaction ------------------------------------------------------------------------------------
def compaction_cleaner(spark: SparkSession, logdirs: str | Sequence[str], configs: Any, now_ms: int, *,
                       topics: Sequence[str] | None = None, topic_pattern: str | None = None, force: bool = False,
                       segments_dir: str | None = None, records_dir: str | None = None) -> tuple[DataFrame, DataFrame]:
    """What the log cleaner keeps after cleaning everything cleanable at ``now_ms``.

    Returns ``(records, summary)``.  ``records``: the data source's columns of every record at
    or above the log start offset of each replica whose ``cleanup.policy`` contains ``compact``
    (control records included: markers are kept or removed too), plus ``decision``, ``reason``,
    ``supersededBy`` from the cleaner core (``CLEANER_RECORD_SCHEMA``).  ``summary``: one row per
    selected replica (``SUMMARY_SCHEMA``).  The cleaner runs now, one task per replica on the
    session's executors (:func:`kafka_format.engine.compaction.cleaner_pass`); the records go to
    Parquet files in ``records_dir`` (default: a fresh temporary directory removed when the
    interpreter exits) and ``records`` reads them, so nothing that holds records is cached.
    ``segments_dir``: each cleaned replica is also written there in Kafka's format."""
    import atexit
    import shutil
    import tempfile

    from kafka_format.engine.compaction import CLEANER_RECORD_SCHEMA, SUMMARY_SCHEMA, cleaner_pass
    from kafka_format.spark.executor import SparkExecutor, spark_schema

    if records_dir is None:
        records_dir = tempfile.mkdtemp(prefix="klogs-cleaner-records-")
        atexit.register(shutil.rmtree, records_dir, True)
    rows = cleaner_pass(SparkExecutor(spark), logdirs, configs, now_ms, records_dir=records_dir, topics=topics,
                        topic_pattern=topic_pattern, force=force, segments_dir=segments_dir)
    records = spark.read.schema(spark_schema(CLEANER_RECORD_SCHEMA)).parquet(records_dir)
    return records, spark.createDataFrame(pa.Table.from_pylist(rows, schema=SUMMARY_SCHEMA), spark_schema(SUMMARY_SCHEMA))


def read_full_input(spark: SparkSession, logdirs: str | Sequence[str], *, topics: Sequence[str] | None = None,
                    topic_pattern: str | None = None) -> DataFrame:
    """The ``kafka-log`` rows the table view is built from: committed (``read_committed``: aborted
    data dropped, reading stops at the LSO), no control records, from the log start offset, the
    longest replica of each partition."""
    import json

    from kafka_format.engine.table_view import full_read_options

    opts = full_read_options(logdirs, topics=topics, topic_pattern=topic_pattern)
    paths = json.loads(opts.pop("paths"))
    return spark.read.format("kafka-log").options(**opts).load(paths)


def compaction_full_decisions(df: DataFrame) -> DataFrame:
    """Every row of a ``kafka-log`` DataFrame plus ``decision``, ``reason``, ``supersededBy`` of the
    table view: the rows shuffled by ``(topic, partition, logDir, key)`` and sorted by it within each
    Spark partition (Spark's exchange and external sort: both spill), so that each key's rows arrive
    together at :func:`kafka_format.engine.table_view.decide_sorted`, the rule the job applies
    (``mapInArrow``: one Python call per Arrow batch).  For DataFrames of any origin; the
    ``compaction`` job reads and decides each partition in one task instead
    (:func:`kafka_format.engine.table_view.full_pass`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    from kafka_format.engine.compaction import DECISION_FIELDS
    from kafka_format.engine.table_view import FULL_GROUP, decide_sorted
    from kafka_format.spark.executor import spark_schema

    out = StructType([*df.schema.fields, *spark_schema(pa.schema(list(DECISION_FIELDS))).fields])
    return (df.repartition(*[F.col(c) for c in (*FULL_GROUP, "key")])
            .sortWithinPartitions(*FULL_GROUP, "key", "offset")
            .mapInArrow(decide_sorted, out))


def compaction_full(df: DataFrame) -> DataFrame:
    """The table view: the latest record of every non-null key, keys whose latest record is a
    tombstone left out; the input's columns (the kept rows of :func:`compaction_full_decisions`)."""
    from pyspark.sql import functions as F

    return compaction_full_decisions(df).where(F.col("decision") == "keep").select(*df.columns)


def _summary_counts(batches: Any) -> Any:
    from kafka_format.engine.table_view import summary_counts

    for batch in batches:
        if batch.num_rows:
            yield from summary_counts(batch).to_batches()


def compaction_full_summary(decisions: DataFrame) -> list[dict[str, Any]]:
    """Per partition of :func:`compaction_full_decisions` (``FULL_SUMMARY_INPUT`` columns suffice):
    ``recordsBefore``, ``recordsAfter``, ``keys``, ``keysDeleted``, ``recordsSuperseded``,
    ``nullKeyRecords`` (``FULL_SUMMARY_COLUMNS``) as dicts in partition order: partial counts per
    Arrow batch on the executors, added up on the driver (the job's own functions)."""
    from kafka_format.engine.table_view import COUNTS_SCHEMA, FULL_SUMMARY_INPUT, merge_counts
    from kafka_format.spark.executor import spark_schema

    counts = decisions.select(*FULL_SUMMARY_INPUT).mapInArrow(_summary_counts, spark_schema(COUNTS_SCHEMA))
    return merge_counts(r.asDict() for r in counts.collect())
