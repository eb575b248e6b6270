"""Spark's own defects that the product works around, each reduced to a minimal reproduction.

**A Python source's pushdown read is kept on the relation's provider** (Spark 4.2.0 to 4.3.0):
``PythonScanBuilder.pushFilters`` stores the read the pushdown worker planned (partitions + read
function) on ``PythonDataSourceV2``, which every DataFrame of one ``load()`` shares; a later scan
that pushes nothing gets it, and of two scans in one query both get the last one pushed.  The
source below is ten lines: ``n`` from 0 to 9, one partition per value, ``n < k`` pruned by planning
fewer partitions.  :func:`kafka_format.spark.compat.read_is_scan_scoped` must tell which kind of
JVM this is: on a provider-scoped one the reproduction gives the wrong answers written here (so the
``kafka-log`` source pushes nothing there), on a fixed one the right ones.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition, LessThan

pytestmark = pytest.mark.spark

SAMPLES = Path(__file__).resolve().parents[2] / "data_samples" / "logdirs"


class PruningReader(DataSourceReader):
    def __init__(self) -> None:
        self.below = 10

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:
        for f in filters:
            if isinstance(f, LessThan) and f.attribute == ("n",) and isinstance(f.value, int):
                self.below = min(self.below, f.value)       # handled: only partitions below it are planned
            else:
                yield f

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(n) for n in range(max(0, self.below))]

    def read(self, partition: InputPartition) -> Iterator[tuple[int]]:
        yield (partition.value,)


class PruningSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "klogs-test-pruning"

    def schema(self) -> str:
        return "n int"

    def reader(self, schema: Any) -> PruningReader:
        return PruningReader()


@pytest.fixture
def toy(spark):  # type: ignore[no-untyped-def]
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])      # the workers cannot import tests/
    saved = spark.conf.get("spark.sql.python.filterPushdown.enabled")
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(PruningSource)
    yield spark
    spark.conf.set("spark.sql.python.filterPushdown.enabled", saved)


def test_pushdown_read_leaks_into_later_scans_of_the_relation(toy) -> None:  # type: ignore[no-untyped-def]
    from kafka_format.spark.compat import read_is_scan_scoped

    df = toy.read.format("klogs-test-pruning").load()
    answers = [df.count(), df.where("n < 3").count(), df.count(),
               df.where("n < 2").union(df.where("n < 4")).count(), df.where("n < 5").count(), df.count()]
    if read_is_scan_scoped(toy):
        assert answers == [10, 3, 10, 6, 5, 10]
    else:       # the defect: the last pushed read answers every later scan, and both sides of the union
        assert answers == [10, 3, 3, 8, 5, 5]


def test_the_session_and_the_source_agree_on_pushdown(spark) -> None:  # type: ignore[no-untyped-def]
    """``register`` turned filter pushdown on for the kafka-log source only if reads are scan-scoped."""
    from kafka_format.spark import PUSHDOWN_CONF
    from kafka_format.spark.compat import read_is_scan_scoped

    assert (spark.conf.get(PUSHDOWN_CONF) == "true") is read_is_scan_scoped(spark)
    df = spark.read.format("kafka-log").load(str(SAMPLES))
    plan = df.where("partition = 1")._jdf.queryExecution().executedPlan().toString()
    pushed = re.search(r"PushedFilters: \[([^\]]*)\]", plan)
    assert (pushed is not None and "partition" in pushed.group(1)) is read_is_scan_scoped(spark), plan
    assert ("Filter (isnotnull(partition" in plan) is not read_is_scan_scoped(spark), plan   # Spark filters instead
