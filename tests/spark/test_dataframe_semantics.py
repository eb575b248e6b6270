"""DataFrame semantics of the ``kafka-log`` source: one DataFrame composed the way users compose it.

Issue 33: after any pushed-down filter, every later action on the same unfiltered DataFrame saw
only the filtered rows (Spark kept the read that filter pushdown planned on the relation's provider
and handed it to later scans, tests/spark/test_spark_defects.py).  Every pushdown test started from
a fresh ``load()``, so none caught it.  Here a plain user-built session (no ``build_session``) on
``local[2]`` and on ``local-cluster`` (executors in their own JVMs) reuses one DataFrame across
different pushed filters in every order, repeated actions, ``cache()``/``unpersist()``, unions and
self-joins of differently filtered views, ``explain()`` between actions, two threads at once and a
stream beside batch reads (tests/spark/semantics_driver.py); every answer must equal the same query
on a fresh load *and* the rows of the local engine's unfiltered read filtered here in Python.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from semantics_driver import WHERE

pytestmark = pytest.mark.spark

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
LOGDIR = REPO / "data_samples" / "logdirs"
# local[2] runs every scenario; local-cluster (executors in their own JVMs) every composition, not the
# exhaustive orderings (they plan on the driver alone, the same JVM code either way).
MASTERS = {"local[2]": "all", "local-cluster[2,1,1024]": "compositions"}

_TS = int(dt.datetime(2023, 11, 14, 22, 15, tzinfo=dt.UTC).timestamp() * 1000)

# The WHERE clauses of the driver as Python predicates over (topic, partition, offset, ts_ms, value).
PREDICATES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "all": lambda r: True,
    "issue": lambda r: r["topic"] == "v2-codecs" and r["partition"] == 0 and r["offset"] >= 60,
    "partition": lambda r: r["partition"] == 1,
    "offset": lambda r: r["offset"] < 5,
    "topics-range": lambda r: r["topic"] in ("transactions", "v2-codecs") and 10 <= r["offset"] <= 40,
    "timestamp": lambda r: r["ts"] >= _TS,
    "offset-in": lambda r: r["offset"] in (1, 7, 300),
    "partition-gt": lambda r: r["partition"] > 2 and r["topic"] == "v2-codecs",
    "not-pushed": lambda r: r["value"] is not None and len(r["value"]) > 40,
    "empty": lambda r: r["topic"] == "v2-codecs" and r["offset"] > 100000,
}


def test_predicates_cover_the_driver() -> None:
    assert set(PREDICATES) == set(WHERE)


def _digest(key: bytes | None, value: bytes | None, ts: int) -> str:
    """The driver's ``DIGEST_SQL`` computed in Python."""
    text = (f"{str(key is None).lower()}{str(value is None).lower()}{(key or b'').hex().upper()}|"
            f"{(value or b'').hex().upper()}|{ts}")
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(scope="module")
def python_rows() -> list[dict[str, Any]]:
    """Every row of the samples, read by the local engine (no Spark), as plain values."""
    from kafka_format.engine.read import read_table

    table = read_table({"path": str(LOGDIR)})
    ts = table["timestamp"].cast("int64").to_pylist()          # microseconds
    rows = []
    for r, t in zip(table.select(["topic", "partition", "offset", "key", "value"]).to_pylist(), ts, strict=True):
        r["ts"] = t // 1000
        rows.append(r)
    assert len(rows) == 2627          # data_samples/README.md
    return rows


def expected(rows: list[dict[str, Any]], name: str) -> list[list[Any]]:
    return sorted([r["topic"], r["partition"], r["offset"], _digest(r["key"], r["value"], r["ts"])]
                  for r in rows if PREDICATES[name](r))


def answer(rows: list[dict[str, Any]], spec: dict[str, Any]) -> Any:
    """The answer a driver step must give, from the Python rows and the step's ``spec``."""
    if "union" in spec:
        keys = sorted(k for name in spec["union"] for k in expected(rows, name))
    elif "join" in spec:
        left, right = spec["join"]
        places = {tuple(k[:3]) for k in expected(rows, right)}
        keys = [k for k in expected(rows, left) if tuple(k[:3]) in places]
    else:
        keys = expected(rows, spec["where"])
    if spec["action"] == "count":
        return len(keys)
    if spec["action"] == "group":
        groups: dict[tuple[str, int], int] = {}
        for t, p, *_ in keys:
            groups[(t, p)] = groups.get((t, p), 0) + 1
        return sorted([t, p, n] for (t, p), n in groups.items())
    return keys


@pytest.fixture(scope="module")
def drivers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both masters' drivers started at once (one subprocess, one session each, every scenario the
    master runs): their JVM start-ups and task latencies overlap."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    procs = {}
    for master, which in MASTERS.items():
        scratch = tmp_path_factory.mktemp("semantics")
        procs[master] = subprocess.Popen(
            [sys.executable, str(HERE / "semantics_driver.py"), master, str(LOGDIR), str(scratch), which],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=scratch)
    out = {}
    for master, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=1500)
        lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
        out[master] = {"master": master, "rc": proc.returncode, "stdout": stdout, "stderr": stderr,
                       "results": json.loads(lines[-1][len("RESULT "):]) if lines else None}
    return out


@pytest.fixture(params=list(MASTERS))
def driven(request: pytest.FixtureRequest, drivers: dict[str, Any]) -> dict[str, Any]:
    """One master's answers."""
    run = drivers[request.param]
    assert run["rc"] == 0 and run["results"] is not None, (run["rc"], run["stdout"][-2000:], run["stderr"][-4000:])
    return run


def _check(driven: dict[str, Any], scenario: str, python_rows: list[dict[str, Any]]) -> None:
    if scenario not in driven["results"]:
        pytest.skip(f"{scenario}: the exhaustive orderings run on local[2] (they plan on the driver alone)")
    steps = driven["results"][scenario]
    assert steps, scenario
    for label, spec, reused, fresh in steps:
        want = answer(python_rows, spec)
        assert fresh == want, f"{driven['master']} {scenario}: {label!r}: a fresh load != the rows filtered in Python"
        assert reused == want, f"{driven['master']} {scenario}: {label!r}: the reused DataFrame != a fresh load"


def test_the_reported_sequence(driven: dict[str, Any], python_rows: list[dict[str, Any]]) -> None:
    steps = driven["results"]["issue-sequence"]
    assert [reused for label, _, reused, _ in steps if label == "count:all"] == [2627, 2627, 2627]
    assert [reused for label, _, reused, _ in steps if label == "count:issue"] == [336]
    _check(driven, "issue-sequence", python_rows)


def test_every_order_of_two_pushed_filters(driven: dict[str, Any], python_rows: list[dict[str, Any]]) -> None:
    _check(driven, "pairs", python_rows)


def test_every_filter_forwards_and_back_on_one_frame(driven: dict[str, Any], python_rows: list[dict[str, Any]]) -> None:
    _check(driven, "forward-back", python_rows)


def test_cache_and_unpersist(driven: dict[str, Any], python_rows: list[dict[str, Any]]) -> None:
    _check(driven, "cache", python_rows)


def test_unions_and_self_joins(driven: dict[str, Any], python_rows: list[dict[str, Any]]) -> None:
    _check(driven, "union-join", python_rows)


def test_explain_between_actions(driven: dict[str, Any], python_rows: list[dict[str, Any]]) -> None:
    _check(driven, "explain", python_rows)


def test_two_threads_on_one_frame(driven: dict[str, Any], python_rows: list[dict[str, Any]]) -> None:
    assert len(driven["results"]["threads"]) == 12
    _check(driven, "threads", python_rows)


def test_stream_beside_batch_reads(driven: dict[str, Any], python_rows: list[dict[str, Any]]) -> None:
    _check(driven, "stream", python_rows)


def test_no_traceback_on_stderr(driven: dict[str, Any]) -> None:
    """A plain session's run ends without a Python traceback (issue 33, defect 9)."""
    assert "Traceback (most recent call last)" not in driven["stderr"], driven["stderr"][-3000:]
