"""The driver of the DataFrame-semantics suite (tests/spark/test_dataframe_semantics.py).

Run as ``python semantics_driver.py MASTER LOGDIR SCRATCH [all|compositions]``: a plain user-built session
(``SparkSession.builder`` + :func:`kafka_format.spark.register`, no ``build_session``) composes
queries over **one** ``kafka-log`` DataFrame the way users do -- different pushed filters in
every order, repeated actions, ``cache()``/``unpersist()``, unions and self-joins of differently
filtered views, ``explain()`` between actions, two threads at once, a stream beside batch reads --
and answers each step twice: on the reused DataFrame and on a fresh ``load()``.  It prints one
``RESULT`` line of JSON: ``{scenario: [[label, spec, reused, fresh], ...]}``; ``spec`` says what
was asked (``{"action": "rows"|"count"|"group", "where": NAME}``, or ``"union": [NAMES]``, or
``"join": [LEFT, RIGHT]``: the left view's rows whose place the right view also has), every answer
is a sorted list of row keys, a count, or ``[topic, partition, n]`` groups, so that the test
computes the expected answer of each step from the rows filtered in Python.

One SparkContext per process: the run's shared ``local[2]`` session (tests/conftest.py) stays
untouched, and ``local-cluster`` gets executors in their own JVMs.  ``compositions`` runs every
scenario but the two exhaustive orderings (every ordered pair, every query forwards and back),
which plan on the driver alone and cost a minute and a half more on ``local-cluster``.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# One WHERE clause per query the suite composes (the test holds the same predicates in Python):
# each kind of pushed filter, alone and combined, one that is never pushed, and one that is empty.
WHERE: dict[str, str | None] = {
    "all": None,
    "issue": "topic = 'v2-codecs' AND partition = 0 AND offset >= 60",
    "partition": "partition = 1",
    "offset": "offset < 5",
    "topics-range": "topic IN ('transactions', 'v2-codecs') AND offset BETWEEN 10 AND 40",
    "timestamp": "timestamp >= TIMESTAMP '2023-11-14 22:15:00 UTC'",
    "offset-in": "offset IN (1, 7, 300)",
    "partition-gt": "partition > 2 AND topic = 'v2-codecs'",
    "not-pushed": "length(value) > 40",
    "empty": "topic = 'v2-codecs' AND offset > 100000",
}

# The queries whose every ordered pair runs on a DataFrame of its own (the others run in sequences).
PAIRED = ("all", "issue", "partition", "offset", "timestamp", "empty")

# The columns an answer is made of: the row's place and a digest of its bytes and time.
KEY_COLUMNS = ("topic", "partition", "offset", "digest")
DIGEST_SQL = ("sha2(concat(cast(isnull(key) AS string), cast(isnull(value) AS string), "
              "coalesce(hex(key), ''), '|', coalesce(hex(value), ''), '|', "
              "cast(unix_millis(timestamp) AS string)), 256)")


def rows_of(df: Any) -> list[list[Any]]:
    """Sorted ``[topic, partition, offset, digest]`` of every row of ``df`` (a kafka-log frame)."""
    got = df.selectExpr("topic", "partition", "offset", f"{DIGEST_SQL} AS digest").collect()
    return sorted([r["topic"], r["partition"], r["offset"], r["digest"]] for r in got)


def grouped(df: Any) -> list[list[Any]]:
    """Sorted ``[topic, partition, count]`` (an aggregation over the filtered rows)."""
    return sorted([r["topic"], r["partition"], r["count"]] for r in df.groupBy("topic", "partition").count().collect())


def where(df: Any, name: str) -> Any:
    clause = WHERE[name]
    return df if clause is None else df.where(clause)


class Driver:
    """Runs the scenarios of one session over ``logdir``; ``scratch`` holds Parquet and checkpoints."""

    def __init__(self, spark: Any, logdir: str, scratch: Path) -> None:
        self.spark = spark
        self.logdir = logdir
        self.scratch = scratch
        self.fresh_memo: dict[tuple[str, str], Any] = {}
        self.results: dict[str, list[list[Any]]] = {}
        self.parquet_runs = itertools.count()

    def load(self) -> Any:
        return self.spark.read.format("kafka-log").load(self.logdir)

    def answer(self, df: Any, action: str, name: str) -> Any:
        """One action on ``where(df, name)``: ``count``, ``rows``, ``group`` or ``parquet``."""
        view = where(df, name)
        if action == "count":
            return view.count()
        if action == "rows":
            return rows_of(view)
        if action == "group":
            return grouped(view)
        if action == "parquet":
            out = self.scratch / f"parquet-{next(self.parquet_runs)}"
            view.write.parquet(str(out))
            return rows_of(self.spark.read.parquet(str(out)))
        raise ValueError(action)

    def fresh(self, action: str, name: str) -> Any:
        """The same action on a DataFrame loaded for it alone (once per action and query)."""
        key = (action if action != "parquet" else "rows", name)
        if key not in self.fresh_memo:
            self.fresh_memo[key] = self.answer(self.load(), key[0], name)
        return self.fresh_memo[key]

    def step(self, scenario: str, df: Any, action: str, name: str, label: str | None = None) -> None:
        reused = self.answer(df, action, name)
        spec = {"action": "rows" if action == "parquet" else action, "where": name}
        self.results.setdefault(scenario, []).append(
            [label or f"{action}:{name}", spec, reused, self.fresh(action, name)])

    def record(self, scenario: str, label: str, spec: dict[str, Any], reused: Any, fresh: Any) -> None:
        self.results.setdefault(scenario, []).append([label, spec, reused, fresh])

    # -- the scenarios ---------------------------------------------------------------------------

    def issue_sequence(self) -> None:
        """The reported sequence, then every action kind after a pushed filter."""
        df = self.load()
        for action, name in [("count", "all"), ("count", "issue"), ("count", "all"), ("rows", "issue"),
                             ("rows", "all"), ("group", "partition"), ("group", "all"),
                             ("parquet", "offset"), ("parquet", "all"), ("count", "all")]:
            self.step("issue-sequence", df, action, name)

    def pairs_in_every_order(self) -> None:
        """Every ordered pair of two different queries (each kind of pushed filter, none, and one
        that selects nothing) on a DataFrame of its own, both answered."""
        for first, second in itertools.permutations(PAIRED, 2):
            df = self.load()
            self.step("pairs", df, "count", first, f"{first} then {second}: {first}")
            self.step("pairs", df, "rows", second, f"{first} then {second}: {second}")

    def one_frame_forward_and_back(self) -> None:
        """All queries on one DataFrame, forwards then backwards, each answered twice in a row."""
        df = self.load()
        names = list(WHERE)
        for name in names + names[::-1]:
            self.step("forward-back", df, "rows", name, f"rows:{name}")
            self.step("forward-back", df, "rows", name, f"again:{name}")

    def cache_and_unpersist(self) -> None:
        df = self.load()
        cached = where(df, "partition").cache()
        self.record("cache", "cached count", {"action": "count", "where": "partition"}, cached.count(),
                    self.fresh("count", "partition"))
        self.step("cache", df, "count", "all", "unfiltered while a filtered view is cached")
        self.step("cache", df, "rows", "offset", "other filter while cached")
        self.record("cache", "cached rows", {"action": "rows", "where": "partition"}, rows_of(cached),
                    self.fresh("rows", "partition"))
        cached.unpersist(blocking=True)
        self.step("cache", df, "rows", "partition", "after unpersist")
        self.step("cache", df, "rows", "all", "unfiltered after unpersist")
        whole = df.cache()
        self.record("cache", "whole cached", {"action": "rows", "where": "all"}, rows_of(whole), self.fresh("rows", "all"))
        self.step("cache", df, "rows", "issue", "filter over the cached whole")
        whole.unpersist(blocking=True)
        self.step("cache", df, "rows", "timestamp", "after the whole is unpersisted")

    def unions_and_joins(self) -> None:
        df = self.load()
        union = where(df, "partition").union(where(df, "offset"))
        fresh_union = sorted(self.fresh("rows", "partition") + self.fresh("rows", "offset"))
        self.record("union-join", "union of partition and offset", {"action": "rows", "union": ["partition", "offset"]},
                    rows_of(union), fresh_union)
        self.step("union-join", df, "count", "all", "unfiltered after the union")
        three = where(df, "issue").unionByName(where(df, "timestamp")).unionByName(where(df, "all"))
        fresh_three = sorted(self.fresh("rows", "issue") + self.fresh("rows", "timestamp") + self.fresh("rows", "all"))
        self.record("union-join", "union of three", {"action": "rows", "union": ["issue", "timestamp", "all"]},
                    rows_of(three), fresh_three)
        left = where(df, "topics-range").alias("l")
        right = where(df, "offset").alias("r")
        joined = left.join(right, ["topic", "partition", "offset"]).select("l.*")
        fresh_rows = {tuple(r[:3]) for r in self.fresh("rows", "offset")}
        self.record("union-join", "self-join of two filtered views", {"action": "rows", "join": ["topics-range", "offset"]},
                    rows_of(joined),
                    [r for r in self.fresh("rows", "topics-range") if tuple(r[:3]) in fresh_rows])
        self.step("union-join", df, "rows", "all", "unfiltered after the join")

    def explain_between_actions(self) -> None:
        df = self.load()
        for name in ("issue", "all", "partition", "all", "offset-in"):
            where(df, name).explain(True)
            self.step("explain", df, "rows", name, f"after explain: {name}")

    def two_threads(self) -> None:
        """Two threads run different filtered queries on one DataFrame at the same time."""
        df = self.load()
        plan = {"thread-a": ["issue", "all", "offset", "all", "timestamp", "all"],
                "thread-b": ["partition", "topics-range", "all", "offset-in", "all", "empty"]}
        out: dict[str, list[tuple[str, Any]]] = {t: [] for t in plan}
        errors: list[BaseException] = []
        start = threading.Barrier(len(plan))

        def run(thread: str) -> None:
            try:
                start.wait(timeout=120)
                for name in plan[thread]:
                    out[thread].append((name, rows_of(where(df, name))))
            except BaseException as exc:  # noqa: BLE001 -- reported in the result
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(t,)) for t in plan]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=900)
        if errors:
            raise errors[0]
        for thread, answers in out.items():
            for i, (name, rows) in enumerate(answers):
                self.record("threads", f"{thread} #{i}: {name}", {"action": "rows", "where": name}, rows,
                            self.fresh("rows", name))

    def stream_beside_batch(self) -> None:
        """``readStream`` with ``availableNow`` over the same path, between batch reads of one frame."""
        df = self.load()
        self.step("stream", df, "rows", "issue", "batch before the stream")
        stream = self.spark.readStream.format("kafka-log").load(self.logdir)
        query = (stream.where(WHERE["partition"]).writeStream.format("parquet")
                 .option("path", str(self.scratch / "stream-out"))
                 .option("checkpointLocation", str(self.scratch / "stream-checkpoint"))
                 .trigger(availableNow=True).start())
        self.step("stream", df, "rows", "all", "batch while the stream runs")
        query.awaitTermination(600)
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
        self.record("stream", "stream rows", {"action": "rows", "where": "partition"},
                    rows_of(self.spark.read.parquet(str(self.scratch / "stream-out"))), self.fresh("rows", "partition"))
        self.step("stream", df, "rows", "all", "batch after the stream")
        self.step("stream", df, "rows", "offset", "filtered batch after the stream")

    def run(self, scenarios: list[Callable[[], None]]) -> dict[str, list[list[Any]]]:
        for scenario in scenarios:
            began = time.perf_counter()
            scenario()
            print(f"{scenario.__name__}: {time.perf_counter() - began:.1f} s", file=sys.stderr, flush=True)
        return self.results


def main(argv: list[str]) -> int:
    master, logdir, scratch = argv[0], argv[1], Path(argv[2])
    which = argv[3] if len(argv) > 3 else "all"
    from pyspark.sql import SparkSession

    from kafka_format.spark import register

    spark = (SparkSession.builder.master(master).appName("kafka-log semantics")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "4")
             .config("spark.driver.host", "127.0.0.1").config("spark.executor.memory", "512m")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    d = Driver(spark, logdir, scratch)
    orders = [d.pairs_in_every_order, d.one_frame_forward_and_back] if which == "all" else []
    results = d.run([d.issue_sequence, *orders, d.cache_and_unpersist, d.unions_and_joins, d.explain_between_actions,
                     d.two_threads, d.stream_beside_batch])
    print("RESULT " + json.dumps(results), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
