"""klogs export --value-as avro|protobuf|json-schema|auto: typed struct columns in Parquet and Delta,
schemas from the _schemas topic in the same log dirs, schema evolution to the latest version,
rows that do not decode reported in the result (never dropped silently), and exit 2 for FAILFAST."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from testhelpers import REPO, load_module

pytestmark = pytest.mark.spark

corpus_mod = load_module("registry_corpus", REPO / "tests" / "registry" / "registry_corpus.py")
damaged_corpus = load_module("export_skipped", REPO / "tests" / "jobs" / "test_export_skipped.py").damaged_corpus


def run_export(*args: Any) -> int:
    job = importlib.import_module("kafka_format.jobs.export")
    return int(job.main([str(a) for a in args]))


def read_parquet_dir(out: Path) -> list[dict[str, Any]]:
    import pyarrow.dataset as ds

    return sorted(
        ds.dataset(str(out), format="parquet", partitioning="hive").to_table().to_pylist(),
        key=lambda r: r["offset"],
    )


def expected(corpus: Any) -> list[dict[str, Any]]:
    return [{**v, "note": v.get("note")} for v in corpus.values]


def read_table_dir(out: Path) -> Any:
    import pyarrow.dataset as ds

    return ds.dataset(str(out), format="parquet", partitioning="hive").to_table().sort_by("offset")


@pytest.mark.parametrize(
    "fmt,value_as", [("avro", "avro"), ("protobuf", "auto"), ("json-schema", "json-schema")]
)
def test_typed_parquet_export_on_both_engines(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, value_as: str
) -> None:
    """The local engine and Spark publish the same typed table (the same types, the same values)."""
    c = corpus_mod.make_corpus(tmp_path / "logs", fmt, n1=3, n2=3)
    tables = {}
    for engine in ("local", "spark"):
        out = tmp_path / engine
        argv = [c.root, "--out", out, "--topic", "orders", "--value-as", value_as, "--key-as", "auto"]
        assert run_export(*argv, "--engine", engine) == 0
        result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert result["rows"] == 6 and result["engine"] == engine
        assert result["typed"]["decodeErrors"] == {"value": 0} and result["typed"]["untyped"] == ["key"]
        rows = read_parquet_dir(out)
        assert [r["value"] for r in rows] == expected(c)
        assert [r["key"] for r in rows] == [v["id"].encode() for v in c.values]  # no orders-key subject: binary
        tables[engine] = read_table_dir(out)
    assert tables["local"].schema.field("value").type == tables["spark"].schema.field("value").type
    assert tables["local"].column("value").to_pylist() == tables["spark"].column("value").to_pylist()


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_typed_keys_and_values(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str) -> None:
    """Keys by confluent-kafka's Avro serializer under orders-key, values under orders-value: two
    typed columns, each counted."""
    c = corpus_mod.make_corpus(tmp_path / "logs", "avro", n1=2, n2=2, avro_keys=True,
                               extra=[(b"\x00\x00\x00\x00", None)])
    out = tmp_path / "out"
    argv = [c.root, "--out", out, "--topic", "orders", "--key-as", "avro", "--value-as", "avro", "--engine", engine,
            "--option", "mode=PERMISSIVE"]
    assert run_export(*argv) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["typed"]["decodeErrors"] == {"key": 1, "value": 0}
    assert [col["subject"] for col in result["typed"]["columns"]] == ["orders-key", "orders-value"]
    rows = read_parquet_dir(out)
    assert [r["key"] for r in rows] == [{"id": v["id"]} for v in c.values] + [None]
    assert [r["value"] for r in rows[:4]] == expected(c) and rows[4]["value"] is None
    assert "5-byte" in rows[4]["_keyDecodeError"]["reason"] and rows[4]["_valueDecodeError"] is None


@pytest.mark.parametrize("mode,kept", [("PERMISSIVE", 9), ("DROPMALFORMED", 6)])
def test_local_engine_modes_count_every_bad_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str, kept: int
) -> None:
    probe = corpus_mod.make_corpus(tmp_path / "probe", "avro", n1=1, n2=1)
    bad = [(b"bad-magic", b"\x01" + probe.wire[0][1:]), (b"unknown", b"\x00\x00\x01\x00\x00" + probe.wire[0][5:]),
           (b"short", b"\x00\x00"), (b"tombstone", None)]
    c = corpus_mod.make_corpus(tmp_path / "logs", "avro", n1=3, n2=3, extra=bad)
    out = tmp_path / "out"
    argv = [c.root, "--out", out, "--topic", "orders", "--value-as", "avro", "--option", f"mode={mode}"]
    assert run_export(*argv, "--engine", "local") == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["typed"]["decodeErrors"] == {"value": 3} and result["rows"] == kept + 1
    rows = read_parquet_dir(out)
    assert [r["value"] for r in rows[:6]] == expected(c) and rows[-1]["key"] == b"tombstone"
    if mode == "PERMISSIVE":
        errors = [r["_valueDecodeError"] for r in rows]
        assert [e is not None for e in errors] == [False] * 6 + [True] * 3 + [False]
        assert "magic byte 1" in errors[6]["reason"] and errors[7]["schemaId"] == 65536
        assert errors[8]["bytes"] == b"\x00\x00"
    else:
        assert "_valueDecodeError" not in rows[0]


def test_typed_delta_export_permissive_reports_bad_rows(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deltalake import DeltaTable

    probe = corpus_mod.make_corpus(tmp_path / "probe", "avro", n1=1, n2=1)
    c = corpus_mod.make_corpus(
        tmp_path / "logs", "avro", n1=2, n2=2, extra=[(b"x", b"\x00\x00\x00\x7f\x7f" + probe.wire[0][5:])]
    )
    out = tmp_path / "delta"
    assert (
        run_export(
            c.root,
            "--out",
            out,
            "--format",
            "delta",
            "--topic",
            "orders",
            "--value-as",
            "avro",
            "--option",
            "mode=PERMISSIVE",
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["typed"]["decodeErrors"] == {"value": 1} and result["typed"]["mode"] == "PERMISSIVE"
    rows = sorted(DeltaTable(str(out)).to_pyarrow_table().to_pylist(), key=lambda r: r["offset"])
    assert [r["value"] for r in rows[:4]] == expected(c)
    assert rows[4]["value"] is None and "unknown schema id 32639" in rows[4]["_valueDecodeError"]["reason"]


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_failfast_exits_2_naming_the_record(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    c = corpus_mod.make_corpus(tmp_path / "logs", "json-schema", n1=1, n2=1, extra=[(b"x", b"{not wire}")])
    out = tmp_path / "out"
    argv = [c.root, "--out", out, "--topic", "orders", "--value-as", "json-schema", "--engine", engine]
    assert run_export(*argv) == 2
    err = capsys.readouterr().err
    assert "orders-0/00000000000000000000.log" in err and "offset 2" in err and "magic byte 123" in err
    assert "record value does not decode at offset 2" in err
    assert not out.exists()


def test_usage_errors_before_spark(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = corpus_mod.make_corpus(tmp_path / "logs", "avro", n1=1, n2=1)
    assert run_export(c.root, "--out", tmp_path / "o1", "--value-as", "avro") == 2  # two topics selected
    assert "select it with --topic" in capsys.readouterr().err
    assert run_export(c.root, "--out", tmp_path / "o2", "--topic", "orders", "--key-as", "avro") == 2
    assert "orders-key" in capsys.readouterr().err
    argv = [c.root, "--out", tmp_path / "o3", "--topic", "orders", "--value-as", "avro", "--option", "granularity=batch"]
    assert run_export(*argv) == 2
    assert "granularity=batch" in capsys.readouterr().err


def test_incremental_typed_export_counts_across_micro_batches(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = corpus_mod.make_corpus(tmp_path / "logs", "avro", n1=2, n2=2, extra=[(b"x", b"\x00\x00\x00")])
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    assert (
        run_export(
            c.root,
            "--out",
            out,
            "--checkpoint",
            ckpt,
            "--topic",
            "orders",
            "--value-as",
            "avro",
            "--option",
            "mode=DROPMALFORMED",
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["rows"] == 4 and result["typed"]["decodeErrors"] == {"value": 1}
    assert [r["value"] for r in read_parquet_dir(out)] == expected(c)


# --- exact counts when a task dies and is retried ---------------------------------------------------
RETRY_DRIVER = r"""
import json, sys
from pyspark import TaskContext
from pyspark.sql import functions as F
from pyspark.sql.functions import arrow_udf
import kafka_format.spark.typed as typed_mod
from kafka_format.registry import schemas_from_log_dirs
from kafka_format.spark.export import export, export_incremental, read_source
from kafka_format.spark.session import build_session

root, out, damaged = sys.argv[1], sys.argv[2], sys.argv[3]
spark = build_session(master="local[2,2]", profile="test", app_name="typed-retries")   # a task may fail once
tracker = spark.sparkContext.statusTracker()


def first_attempt_dies(offsets):
    # Above the export's count: the rows of this batch have been counted by this attempt.
    if TaskContext.get().attemptNumber() == 0:
        raise RuntimeError("the first attempt of the task dies")
    import pyarrow as pa
    return pa.array([True] * len(offsets))


dies = arrow_udf(first_attempt_dies, "boolean").asNondeterministic()
prepare = typed_mod.TypedColumns.for_export
typed_mod.TypedColumns.for_export = lambda self, df: prepare(self, df).where(dies(F.col("offset")))


def failed_tasks():
    infos = (tracker.getStageInfo(i) for i in range(400))
    return sum(info.numFailedTasks for info in infos if info is not None)


result = {}
for name, mode, fmt, incremental, logs in (
        ("parquet-permissive", "PERMISSIVE", "parquet", False, root),
        ("delta-incremental-dropmalformed", "DROPMALFORMED", "delta", True, root),
        ("damaged-parquet-dropmalformed", "DROPMALFORMED", "parquet", False, damaged),
        ("damaged-delta-incremental-permissive", "PERMISSIVE", "delta", True, damaged)):
    before = failed_tasks()
    typed = typed_mod.typed_columns(schemas_from_log_dirs([logs]), value_as="avro", topic="orders", mode=mode)
    opts = {"topics": "orders", "mode": mode}
    if incremental:
        r = export_incremental(spark, [logs], f"{out}/{name}", f"{out}/{name}-ckpt", options=opts, format=fmt,
                               value_as="avro", typed=typed)
    else:
        r = export(read_source(spark, [logs], opts, typed=typed), f"{out}/{name}", format=fmt, value_as="avro",
                   typed=typed)
    result[name] = {"export": r.to_json(), "failedTasks": failed_tasks() - before}
spark.stop()
print("RESULT " + json.dumps(result))
"""


@pytest.fixture(scope="module")
def retried(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any], Path, Any]:
    """Typed exports in a driver where the first attempt of every task fails after it counted its
    rows and its skipped ranges (a filter above the export's observations raises on attempt 0;
    ``local[2,2]`` retries once), also of a damaged corpus (:func:`damaged_corpus`);
    (the corpus, each export's result, the outputs, the damaged corpus's expected range and offsets)."""
    import os
    import subprocess
    import sys

    tmp = tmp_path_factory.mktemp("retries")
    probe = corpus_mod.make_corpus(tmp / "probe", "avro", n1=1, n2=1)
    bad = [(b"unknown-%d" % i, b"\x00\x00\x00\x7f\x7f" + probe.wire[0][5:]) for i in range(3)] + [
        (b"short", b"\x00\x00")]
    c = corpus_mod.make_corpus(tmp / "logs", "avro", n1=3, n2=3, extra=bad)
    _, bad_range, intact = damaged_corpus(tmp / "damaged")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    proc = subprocess.run([sys.executable, "-c", RETRY_DRIVER, str(c.root), str(tmp / "out"), str(tmp / "damaged")],
                          capture_output=True, text=True, timeout=900, env=env, cwd=tmp)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert proc.returncode == 0 and line is not None, proc.stderr[-5000:]
    return c, json.loads(line[len("RESULT "):]), tmp / "out", (bad_range, intact)


@pytest.mark.parametrize("name", ["parquet-permissive", "delta-incremental-dropmalformed"])
def test_decode_errors_are_counted_once_when_a_task_is_retried(
    retried: tuple[Any, dict[str, Any], Path, Any], name: str
) -> None:
    c, results, out, _ = retried
    got = results[name]
    assert got["failedTasks"] >= 1  # the first attempt died after counting its rows
    assert got["export"]["typed"]["decodeErrors"] == {"value": 4}
    good = len(c.values)
    if name.startswith("delta"):
        from deltalake import DeltaTable

        rows = sorted(DeltaTable(str(out / name)).to_pyarrow_table().to_pylist(), key=lambda r: r["offset"])
    else:
        rows = read_parquet_dir(out / name)
    assert [r["value"] for r in rows[:good]] == expected(c)
    if "permissive" in name:
        assert len(rows) == good + 4 and got["export"]["rows"] == good + 4
        assert sum(r["_valueDecodeError"] is not None for r in rows) == 4  # what was published, counted
    else:
        assert len(rows) == good and got["export"]["rows"] == good


@pytest.mark.parametrize("name", ["damaged-parquet-dropmalformed", "damaged-delta-incremental-permissive"])
def test_skipped_ranges_are_reported_once_when_a_task_is_retried(
    retried: tuple[Any, dict[str, Any], Path, Any], name: str
) -> None:
    """The damaged corpus's one CRC-bad batch: one range, though the attempt that first read it died."""
    _, results, out, (bad, offsets) = retried
    got = results[name]
    assert got["failedTasks"] >= 1
    assert (got["export"]["skipped_ranges"], got["export"]["skipped_bytes"]) == ([bad], bad["length"])
    assert got["export"]["typed"]["decodeErrors"] == {"value": 0}
    if name.startswith("damaged-delta"):
        from deltalake import DeltaTable

        rows = DeltaTable(str(out / name)).to_pyarrow_table().to_pylist()
    else:
        rows = read_parquet_dir(out / name)
    good = sorted(r["offset"] for r in rows if r.get("_corrupt") is None)
    assert good == offsets and got["export"]["rows"] == len(rows)
    corrupt = [r["_corrupt"] for r in rows if r.get("_corrupt") is not None]
    assert corrupt == ([bad] if "permissive" in name else [])


def test_a_replayed_micro_batch_is_not_counted_again(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A micro-batch Delta committed but Spark had not (its commit-log entry lost, as after a crash
    between the two) is replayed by the next run: Delta skips it, and its rows are not counted again."""
    from deltalake import DeltaTable

    c = corpus_mod.make_corpus(tmp_path / "logs", "avro", n1=2, n2=2, extra=[(b"x", b"\x00\x00\x00")])
    out, ckpt = tmp_path / "delta", tmp_path / "ckpt"
    argv = [c.root, "--out", out, "--checkpoint", ckpt, "--format", "delta", "--topic", "orders",
            "--value-as", "avro", "--option", "mode=DROPMALFORMED"]
    assert run_export(*argv) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert first["batches"] == [0] and first["typed"]["decodeErrors"] == {"value": 1}
    for name in ("0", ".0.crc"):
        (ckpt / "commits" / name).unlink(missing_ok=True)
    assert run_export(*argv) == 0
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert again["replayed_batches"] == [0] and again["batches"] == []
    assert again["typed"]["decodeErrors"] == {"value": 0}
    assert len(DeltaTable(str(out)).to_pyarrow_table()) == 4
