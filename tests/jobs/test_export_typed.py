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


@pytest.mark.parametrize(
    "fmt,value_as", [("avro", "avro"), ("protobuf", "auto"), ("json-schema", "json-schema")]
)
def test_typed_parquet_export(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, value_as: str
) -> None:
    c = corpus_mod.make_corpus(tmp_path / "logs", fmt, n1=3, n2=3)
    out = tmp_path / "out"
    assert (
        run_export(c.root, "--out", out, "--topic", "orders", "--value-as", value_as, "--key-as", "auto") == 0
    )
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["rows"] == 6
    assert result["typed"]["decodeErrors"] == {"value": 0} and result["typed"]["untyped"] == ["key"]
    rows = read_parquet_dir(out)
    assert [r["value"] for r in rows] == expected(c)
    assert [r["key"] for r in rows] == [v["id"].encode() for v in c.values]  # no orders-key subject: binary


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


def test_failfast_exits_2_naming_the_record(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = corpus_mod.make_corpus(tmp_path / "logs", "json-schema", n1=1, n2=1, extra=[(b"x", b"{not wire}")])
    out = tmp_path / "out"
    assert run_export(c.root, "--out", out, "--topic", "orders", "--value-as", "json-schema") == 2
    err = capsys.readouterr().err
    assert "orders-0/00000000000000000000.log" in err and "offset 2" in err and "magic byte 123" in err
    assert not out.exists()


def test_usage_errors_before_spark(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = corpus_mod.make_corpus(tmp_path / "logs", "avro", n1=1, n2=1)
    assert run_export(c.root, "--out", tmp_path / "o1", "--value-as", "avro") == 2  # two topics selected
    assert "select it with --topic" in capsys.readouterr().err
    assert run_export(c.root, "--out", tmp_path / "o2", "--topic", "orders", "--key-as", "avro") == 2
    assert "orders-key" in capsys.readouterr().err


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
