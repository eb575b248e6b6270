"""``klogs export --format iceberg`` (kafka_format.engine.iceberg) on both engines.

Oracles: aiokafka's decoding of the writer-made log dirs (every record exactly once) and the batch
Parquet export of the same log dirs (the same rows, column for column).  The tables are read back
with pyiceberg and, where its iceberg extension installs, DuckDB.  Kill tests run ``klogs export``
on the local engine in a subprocess that SIGKILLs itself at a step (``KLA_CRASH_AT``); the re-run
is in-process.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_export_job import (
    DATA_COLUMNS,
    append_records,
    assert_exactly,
    canonical,
    ident,
    oracle,
    run_export,
    write_log_dir,
)

pytest.importorskip("pyiceberg")

KLOGS = "import sys; from kafka_format.cli import main; sys.exit(main(sys.argv[1:]))"
TABLE = "kafka.topic_history"


def load(warehouse: Path, table: str = TABLE) -> Any:
    from kafka_format.engine.iceberg import open_catalog

    return open_catalog(str(warehouse)).load_table(table)


def rows_of(warehouse: Path) -> list[dict[str, Any]]:
    return load(warehouse).scan().to_arrow().to_pylist()


def parquet_rows(logs: Path, out: Path, *extra: str) -> list[dict[str, Any]]:
    import pyarrow.dataset as ds

    assert run_export(str(logs), "--out", str(out), "--engine", "local", *extra) == 0
    return ds.dataset(str(out), format="parquet", partitioning="hive").to_table().to_pylist()


def same_rows(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    cols = [c for c in DATA_COLUMNS if c not in ("topic", "partition", "offset")]
    assert len(got) == len(want)
    assert ({ident(r): canonical(r, cols) for r in got} == {ident(r): canonical(r, cols) for r in want})


def test_local_export_is_the_parquet_exports_rows_with_iceberg_types(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    logs = write_log_dir(tmp_path / "logs")
    wh = tmp_path / "wh"
    assert run_export(str(logs), "--out", str(wh), "--format", "iceberg", "--engine", "local",
                      "--key-as", "string") == 0
    result = json.loads(capsys.readouterr().out)
    assert result["table"] == TABLE and result["rows"] == len(oracle(logs)) and result["engine"] == "local"
    table = load(wh)
    schema = table.schema()
    assert str(schema.find_field("timestamp").field_type) == "timestamptz"
    headers = schema.find_field("headers").field_type
    assert [(f.name, str(f.field_type)) for f in headers.element_field.field_type.fields] == [("key", "string"),
                                                                                            ("value", "binary")]
    assert str(schema.find_field("key").field_type) == "string"
    assert [(f.name, str(f.transform)) for f in table.spec().fields] == [("topic", "identity"),
                                                                           ("partition", "identity")]
    assert [schema.find_column_name(f.source_id) for f in table.sort_order().fields] == ["partition", "offset"]
    assert table.properties["klogs.owner"] == "export" and str(logs) in table.properties["klogs.source"]
    got = rows_of(wh)
    assert_exactly(got, oracle(logs))
    same_rows(got, parquet_rows(logs, tmp_path / "pq", "--key-as", "string"))


def test_duckdb_reads_the_table(tmp_path: Path) -> None:
    logs = write_log_dir(tmp_path / "logs")
    wh = tmp_path / "wh"
    assert run_export(str(logs), "--out", str(wh), "--format", "iceberg", "--engine", "local") == 0
    table = load(wh)
    got = rows_of(wh)
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    try:
        con.execute("INSTALL iceberg; LOAD iceberg")
    except Exception as exc:     # the extension is downloaded from DuckDB's site
        pytest.skip(f"DuckDB's iceberg extension is not installable here: {exc}")
    n = con.execute(f"SELECT count(*) FROM iceberg_scan('{table.metadata_location}')").fetchone()
    assert n is not None and n[0] == len(got)


def test_date_layout_is_day_of_timestamp(tmp_path: Path) -> None:
    logs = write_log_dir(tmp_path / "logs")
    wh = tmp_path / "wh"
    assert run_export(str(logs), "--out", str(wh), "--format", "iceberg", "--engine", "local",
                      "--partition-by", "date") == 0
    table = load(wh)
    assert [str(f.transform) for f in table.spec().fields] == ["day"]
    days = {t.file.partition[0] for t in table.scan().plan_files()}
    assert days == {19675, 19676}                     # the records straddle 2023-11-15 00:00 UTC
    got = rows_of(wh)
    same_rows(got, parquet_rows(logs, tmp_path / "pq", "--partition-by", "date"))
    assert {r["date"].isoformat() for r in got} == {"2023-11-14", "2023-11-15"}


def test_batch_rerun_replaces_and_checkpoint_runs_append_one_snapshot_each(tmp_path: Path) -> None:
    from kafka_format.engine.iceberg import committed_offsets

    logs = write_log_dir(tmp_path / "logs")
    wh = tmp_path / "wh"
    args = [str(logs), "--out", str(wh), "--format", "iceberg", "--engine", "local"]
    assert run_export(*args) == 0 and run_export(*args) == 0
    assert_exactly(rows_of(wh), oracle(logs))               # replaced, not appended
    inc = tmp_path / "inc"
    args = [str(logs), "--out", str(inc), "--format", "iceberg", "--engine", "local",
            "--checkpoint", str(tmp_path / "ck")]
    assert run_export(*args) == 0
    append_records(logs, "orders", 1, 7)
    assert run_export(*args) == 0
    assert run_export(*args) == 0                          # nothing new: no snapshot
    table = load(inc)
    assert len(table.snapshots()) == 2
    assert committed_offsets(table) == {("orders", 0): 40, ("orders", 1): 32}
    assert_exactly(rows_of(inc), oracle(logs))


def test_a_foreign_table_is_refused_with_exit_2(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import pyarrow as pa

    from kafka_format.engine.iceberg import open_catalog

    logs = write_log_dir(tmp_path / "logs")
    wh = tmp_path / "wh"
    assert run_export(str(logs), "--out", str(wh), "--format", "iceberg", "--engine", "local") == 0
    cat = open_catalog(str(wh))
    cat.create_table("kafka.theirs", schema=pa.schema([pa.field("x", pa.int64())]))
    capsys.readouterr()
    assert run_export(str(logs), "--out", str(wh), "--format", "iceberg", "--engine", "local",
                      "--table", "kafka.theirs") == 2
    assert "not one klogs export created" in capsys.readouterr().err
    assert load(wh, "kafka.theirs").current_snapshot() is None
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    assert run_export(str(logs), "--out", str(tmp_path / "other"), "--format", "iceberg", "--engine", "local") == 2


@pytest.mark.parametrize("crash_at", ["export:files-written", "export:commit-in-flight", "export:batch-committed"])
def test_a_killed_checkpoint_run_is_redone_exactly_once(tmp_path: Path, crash_at: str) -> None:
    """Run 1 commits; the broker appends; run 2 is killed at ``crash_at``; the re-run leaves every
    record exactly once, and the killed run's uncommitted files are removed."""
    logs = write_log_dir(tmp_path / "logs")
    wh = tmp_path / "wh"
    args = [str(logs), "--out", str(wh), "--format", "iceberg", "--engine", "local",
            "--checkpoint", str(tmp_path / "ck")]
    assert run_export(*args) == 0
    for p in (0, 1):
        append_records(logs, "orders", p, 6)
    proc = subprocess.run([sys.executable, "-c", KLOGS, "export", *args], env={**_env(), "KLA_CRASH_AT": crash_at},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    snapshots = len(load(wh).snapshots())
    assert snapshots == (2 if crash_at == "export:batch-committed" else 1)
    assert run_export(*args) == 0
    assert len(load(wh).snapshots()) == 2                  # the re-run committed only what was missing
    assert_exactly(rows_of(wh), oracle(logs))
    data = next(wh.rglob("data"))
    assert not list(data.rglob("_klogs_pending"))
    live = {Path(t.file.file_path).parent.parent.parent for t in load(wh).scan().plan_files()}
    assert {p for p in data.iterdir()} == live            # the killed run's files did not stay


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_GATEWAY", "SPARK_"))}


def test_new_optional_field_of_a_later_writer_schema_becomes_a_column(tmp_path: Path) -> None:
    """Typed export: a later run's rows carry a field the table lacks; the commit adds the column
    (union by name: an optional column, the earlier files unchanged and read with it null)."""
    import pyarrow as pa

    from kafka_format.engine.iceberg import _create, open_catalog

    wh = tmp_path / "wh"
    (wh).mkdir()
    first = pa.schema([pa.field("offset", pa.int64()), pa.field("partition", pa.int32()),
                       pa.field("topic", pa.string()),
                       pa.field("value", pa.struct([pa.field("id", pa.int64())]))])
    table = _create(open_catalog(str(wh)), ("kafka", "t"), first, ("topic", "partition"), [])
    from kafka_format.engine.iceberg import _new_fields

    later = pa.schema([*first.remove(3), pa.field("value", pa.struct([pa.field("id", pa.int64()),
                                                                       pa.field("note", pa.string())]))])
    assert not _new_fields(table, first) and _new_fields(table, later)
    with table.update_schema() as update:
        update.union_by_name(later)
    table = open_catalog(str(wh)).load_table("kafka.t")
    assert str(table.schema().find_field("value.note").field_type) == "string"
    assert not table.schema().find_field("value.note").required


@pytest.mark.spark
def test_spark_engine_writes_the_local_engines_rows(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    logs = write_log_dir(tmp_path / "logs")
    for engine in ("local", "spark"):
        assert run_export(str(logs), "--out", str(tmp_path / engine), "--format", "iceberg", "--engine", engine,
                          "--checkpoint", str(tmp_path / f"ck-{engine}")) == 0
    same_rows(rows_of(tmp_path / "spark"), rows_of(tmp_path / "local"))
    assert_exactly(rows_of(tmp_path / "spark"), oracle(logs))


def test_a_rest_catalogs_credential_never_shows(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """An unreachable REST catalog (nothing listens on the port): exit 2, the message names the
    catalog without its secret, and nothing was written to the warehouse."""
    import socket

    logs = write_log_dir(tmp_path / "logs")
    with socket.socket() as s:                  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = run_export(str(logs), "--out", str(tmp_path / "wh"), "--format", "iceberg", "--engine", "local",
                      "--catalog", f"rest:http://client:s3cr3t-value@127.0.0.1:{port}/")
    captured = capsys.readouterr()
    assert code == 2
    assert "s3cr3t-value" not in captured.err + captured.out
    assert "127.0.0.1" in captured.err
    assert not (tmp_path / "wh").exists()


def test_typed_export_adds_a_later_writer_schemas_field_as_a_column(tmp_path: Path) -> None:
    """Run 1 exports v1 Avro values (no ``note``); the broker's log then holds v2 records (``note``
    added, optional) and the registry v2: run 2 appends them and the table gains ``value.note``
    by Iceberg's schema evolution; run 1's rows read it as null, no file rewritten."""
    from testhelpers import REPO, load_module

    corpus = load_module("registry_corpus", REPO / "tests" / "registry" / "registry_corpus.py")
    first = corpus.make_corpus(tmp_path / "v1", "avro", n1=3, n2=0)
    later = corpus.make_corpus(tmp_path / "v2", "avro", n1=3, n2=3)
    wh = tmp_path / "wh"
    for c in (first, later):
        assert run_export(c.root, "--out", str(wh), "--format", "iceberg", "--engine", "local", "--topic", "orders",
                          "--value-as", "avro", "--checkpoint", str(tmp_path / "ck")) == 0
    table = load(wh)
    assert not table.schemas()[0].find_field("value").field_type.fields[-1].name == "note"
    assert str(table.schema().find_field("value.note").field_type) == "string"
    files = [t.file.file_path for t in table.scan().plan_files()]
    assert len(files) == 2 and len(table.snapshots()) == 2
    rows = sorted(rows_of(wh), key=lambda r: r["offset"])
    assert [r["value"] for r in rows] == [{**v, "note": v.get("note")} for v in later.values]
