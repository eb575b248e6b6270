"""Filter pushdown of the kafka-log source: exactly which filters are accepted, how many splits
are planned, and that results equal Spark filtering the unfiltered read (style anchor 16).

The readers here are built with ``pushdown=True``: the rules as they apply on a Spark that keeps a
pushdown's read with its own scan.  The session's Spark (4.2) stores it on the shared provider
(:mod:`kafka_format.spark.compat`), so a registered source accepts no filter there
(:class:`TestWithoutPushdown`, and tests/spark/test_dataframe_semantics.py for what it protects)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
    StringStartsWith,
)
from test_planning import simple_specs, write_partition

from kafka_format.spark.datasource import KafkaLogDataSource, SplitPartition

pytestmark = pytest.mark.spark

MAX_BYTES = 20_000


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("push")
    for p in range(3):
        write_partition(root, "orders", p, simple_specs(60, ts_step=10), segment_bytes=30_000)
    write_partition(root, "audit", 0, simple_specs(20), segment_bytes=30_000)
    return root


class PushingSource(KafkaLogDataSource):
    """The source as ``register`` binds it on a Spark whose pushdown reads are scan-scoped."""

    pushdown = True


def reader(path: Path, source: type[KafkaLogDataSource] = PushingSource, **options: str):  # type: ignore[no-untyped-def]
    ds = source({"path": str(path), "maxBytesPerPartition": str(MAX_BYTES), **options})
    return ds.reader(ds.schema())


def _splits(r) -> list:  # type: ignore[no-untyped-def]
    return [(s.topic, s.partition, s.start_offset, s.end_offset, s.ranges) for p in r.partitions()
            for s in getattr(p, "splits", ())]


class TestWithoutPushdown:
    """The source unbound, or bound on a Spark that keeps pushdown reads on the provider: every
    filter is returned (the same objects) and the plan is the plan of no filter at all."""

    FILTERS: ClassVar[list[Any]] = [EqualTo(("topic",), "orders"), In(("partition",), (0, 2)), GreaterThanOrEqual(("offset",), 100),
               LessThan(("offset",), 150), GreaterThan(("timestamp",), dt.datetime(2023, 11, 14, tzinfo=dt.UTC)),
               In(("offset",), (5, 500)), GreaterThan(("offset",), 10), LessThanOrEqual(("offset",), 10)]

    def test_every_filter_is_returned_and_the_plan_is_unfiltered(self, logs: Path) -> None:
        r = reader(logs, KafkaLogDataSource)
        returned = list(r.pushFilters(self.FILTERS))
        assert [id(f) for f in returned] == [id(f) for f in self.FILTERS]
        assert r.accepted == []
        assert _splits(r) == _splits(reader(logs, KafkaLogDataSource))
        assert len(_splits(r)) > 8

    def test_session_binding_carries_the_decision(self, logs: Path) -> None:
        from kafka_format.spark.datasource import bind_session_sizing

        for pushdown in (False, True):
            cls = bind_session_sizing(2, pushdown=pushdown)
            r = reader(logs, cls)
            returned = list(r.pushFilters([EqualTo(("topic",), "audit")]))
            assert (returned == []) is pushdown
            assert ({s[0] for s in _splits(r)} == {"audit"}) is pushdown


class TestAcceptedFilters:
    """The reader alone (driver side): which filters come back, what planning does with the rest."""

    def test_handled_filters_are_not_returned(self, logs: Path) -> None:
        ts = dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC)
        f_topic = EqualTo(("topic",), "orders")
        f_part = In(("partition",), (0, 2))
        f_lo = GreaterThanOrEqual(("offset",), 100)
        f_hi = LessThan(("offset",), 150)
        f_ts = GreaterThan(("timestamp",), ts)
        f_val = StringStartsWith(("topic",), "or")
        f_nn = IsNotNull(("key",))
        r = reader(logs)
        returned = list(r.pushFilters([f_topic, f_part, f_lo, f_hi, f_ts, f_val, f_nn]))
        assert [id(f) for f in returned] == [id(f_ts), id(f_val), id(f_nn)]   # same objects, by reference
        assert r.accepted == [f_topic, f_part, f_lo, f_hi]
        splits = [s for p in r.partitions() for s in p.splits]
        assert {(s.topic, s.partition) for s in splits} == {("orders", 0), ("orders", 2)}
        assert all(s.start_offset == 100 and s.end_offset == 150 for s in splits)
        assert len(splits) == 2          # 50 offsets of ~110-byte records: one index interval each

    def test_unfiltered_plan_for_comparison(self, logs: Path) -> None:
        r = reader(logs)
        assert list(r.pushFilters([])) == []
        assert len(r.partitions()) > 8

    def test_timestamp_lower_bound_prunes_closed_segments_but_is_returned(self, logs: Path) -> None:
        # orders-p record timestamps are 1_700_000_000_000 + offset * 10 ms; keep offsets >= 400
        f = GreaterThanOrEqual(("timestamp",), dt.datetime.fromtimestamp(1_700_000_004_000 / 1000, dt.UTC))
        r = reader(logs, topics="orders")
        assert list(r.pushFilters([f])) == [f]
        pruned = [s for p in r.partitions() for s in p.splits]
        full = reader(logs, topics="orders").partitions()
        assert 0 < len(pruned) < len(full)
        for p in range(3):   # something was skipped, and nothing at or above offset 400
            first = min(s.ranges[0].first_offset for s in pruned if s.partition == p)
            assert 0 < first <= 400

    def test_offset_in_prunes_but_is_returned(self, logs: Path) -> None:
        f = In(("offset",), (5, 500))
        r = reader(logs)
        assert list(r.pushFilters([f])) == [f]
        splits = [s for p in r.partitions() for s in p.splits]
        assert all(s.start_offset == 5 and s.end_offset == 501 for s in splits)

    def test_contradiction_plans_nothing(self, logs: Path) -> None:
        r = reader(logs)
        assert list(r.pushFilters([GreaterThan(("offset",), 10), LessThanOrEqual(("offset",), 10)])) == []
        assert not any(isinstance(p, SplitPartition) for p in r.partitions())

    def test_non_integer_values_stay_with_spark(self, logs: Path) -> None:
        f = EqualTo(("partition",), "1")
        g = EqualTo(("offset",), 1.5)
        r = reader(logs)
        assert list(r.pushFilters([f, g])) == [f, g]

    def test_batch_granularity_accepts_topic_and_partition_only(self, logs: Path) -> None:
        f_part, f_off = EqualTo(("partition",), 1), GreaterThan(("offset",), 3)
        r = reader(logs, granularity="batch")
        assert list(r.pushFilters([f_part, f_off])) == [f_off]


@pytest.mark.parametrize("condition,max_partitions", [
    ("topic = 'orders' and partition = 1", 10),
    ("partition in (0, 2) and offset >= 100 and offset < 150", 3),   # orders-0, orders-2, audit-0
    ("offset = 321", 4),
    ("offset > 590 or partition = 1", None),           # OR: nothing pushed
    ("timestamp >= timestamp_millis(1700000004000)", None),
    ("partition >= 1 and topic in ('orders', 'nope') and offset <= 20", 2),
])
def test_results_equal_spark_filtering_the_full_read(spark, logs: Path, condition: str,  # type: ignore[no-untyped-def]
                                                     max_partitions: int | None) -> None:
    from chispa import assert_df_equality

    from kafka_format.spark.compat import read_is_scan_scoped

    full = spark.read.format("kafka-log").option("maxBytesPerPartition", MAX_BYTES).load(str(logs))
    expected = spark.createDataFrame(full.collect(), full.schema).filter(condition)   # local rows: no pushdown
    got = full.filter(condition)
    assert_df_equality(got, expected, ignore_row_order=True)
    assert full.count() == len(expected.collect()) + full.filter(f"NOT ({condition})").count()   # the frame still whole
    if not read_is_scan_scoped(spark):        # this Spark: nothing pruned, every query reads the options' plan
        assert got.rdd.getNumPartitions() == full.rdd.getNumPartitions()
    elif max_partitions is not None:
        assert got.rdd.getNumPartitions() <= max_partitions < full.rdd.getNumPartitions()
