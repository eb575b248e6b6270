"""Every job gives the same outputs on ``--engine local`` and ``--engine spark``.

Each job runs through ``klogs``' own entry point twice on the same inputs -- ``data_samples/``
(two brokers, legacy and v2 batches of every codec, a compacted topic, transactions) plus a log
dir with aborted, committed and open transactions, tombstones and a high watermark below the log
end (``write_table_topic``) -- once per engine, and the output trees are compared file by file:
text, JSON, HTML, PNG and Kafka segment files byte for byte; Parquet by its rows, sorted, per
directory (Spark names its part files itself).  Hidden files (the ``.klogs-output`` markers,
which carry a run id) are left out.  No output holds a timing field today, so nothing else is
dropped.  One Spark session for the module (the suite's).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from test_compaction_full import write_table_topic

from kafka_format.cli import main

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
CONFIG_FILE = SAMPLES / "topic-configs.json"
T0 = 1_700_000_000_000
NOW = str(T0 + 2 * 86_400_000)
COMPACT = ["--config-file", str(CONFIG_FILE), "--config", "transactions:cleanup.policy=compact",
           "--config", "v2-codecs:cleanup.policy=compact,delete", "--config", "table:cleanup.policy=compact",
           "--config", "*:min.cleanable.dirty.ratio=0.01"]


@pytest.fixture(scope="module")
def inputs(spark, tmp_path_factory: pytest.TempPathFactory) -> list[str]:  # type: ignore[no-untyped-def]
    """The input log dirs (and the suite's Spark session, which ``--engine spark`` runs in)."""
    root = tmp_path_factory.mktemp("parity-input")
    write_table_topic(root)
    return [str(SAMPLES), str(root / "broker-9")]


def _run_both(args: list[str], out: Path, capsys: pytest.CaptureFixture[str], *, out_flag: bool = True
              ) -> dict[str, Any]:
    """Run ``klogs ARGS --engine E [--out out/E]`` for both engines; exit codes and stdouts."""
    result: dict[str, Any] = {}
    for engine in ("local", "spark"):
        target = out / engine
        argv = [*args, "--engine", engine] + (["--out", str(target)] if out_flag else [])
        code = main(argv)
        captured = capsys.readouterr()
        assert code in (0, 1), captured.err
        result[engine] = (code, captured.out.replace(str(target), "OUT"))
    return result


def _rows(files: list[Path]) -> list[str]:
    rows: list[str] = []
    for f in files:
        for row in pq.read_table(f).to_pylist():
            rows.append(repr(sorted(row.items())))
    return sorted(rows)


def _tree(root: Path) -> dict[str, Any]:
    """Relative path -> comparable content: bytes, parsed JSON, or (for Parquet) the sorted rows of
    every Parquet file of that directory under the key ``DIR/*.parquet``."""
    out: dict[str, Any] = {}
    parquet: dict[str, list[Path]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if name.startswith((".", "_")):
                continue                       # markers (run ids), Spark's _SUCCESS / .crc files
            if name.endswith(".parquet"):
                parquet.setdefault(str(Path(rel).parent / "*.parquet"), []).append(path)
            elif name.endswith(".json"):
                out[rel] = json.loads(path.read_text())
            else:
                out[rel] = path.read_bytes()
    for key, files in parquet.items():
        out[key] = _rows(files)
    return out


def _same_trees(out: Path) -> dict[str, Any]:
    local, spark = _tree(out / "local"), _tree(out / "spark")
    assert sorted(local) == sorted(spark)
    for rel in local:
        if isinstance(local[rel], bytes) and local[rel] != spark[rel]:
            at = next(i for i, (a, b) in enumerate(zip(local[rel], spark[rel])) if a != b)
            assert local[rel][max(0, at - 200):at + 200] == spark[rel][max(0, at - 200):at + 200], rel
        if isinstance(local[rel], list) and local[rel] != spark[rel]:
            only_local = sorted(set(local[rel]) - set(spark[rel]))[:3]
            only_spark = sorted(set(spark[rel]) - set(local[rel]))[:3]
            assert only_local == only_spark, rel
        assert local[rel] == spark[rel], rel
    return local


def test_offsets(inputs: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stamps = ["earliest", "latest", "max-timestamp", "-5", str(T0 + 60_000), "2099-01-01T00:00:00Z"]
    for iso in ("read_uncommitted", "read_committed"):
        out = tmp_path / iso
        out.mkdir()
        args = ["offsets", *inputs, *[a for t in stamps for a in ("--timestamp", t)], "--isolation-level", iso]
        for engine in ("local", "spark"):
            assert main([*args, "--engine", engine, "--out", str(out / f"{engine}.jsonl")]) == 0
        local = (out / "local.jsonl").read_bytes()
        assert local == (out / "spark.jsonl").read_bytes()
        partitions = {log.parent.name for root in inputs for log in Path(root).rglob("*.log")}
        assert local.count(b"\n") == len(partitions) * len(stamps)    # the longest replica of each
    capsys.readouterr()


def test_retention(inputs: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = _run_both(["retention", *inputs, "--now", NOW, "--format", "jsonl"], tmp_path, capsys)
    assert runs["local"] == runs["spark"] and runs["local"][0] == 0
    tree = _same_trees(tmp_path)
    assert {"segments.jsonl", "summary.json"} <= set(tree)


def test_audit(inputs: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = _run_both(["audit", *inputs, "--now", NOW, "--format", "json", "--fail-on", "never"], tmp_path, capsys)
    assert runs["local"] == runs["spark"] and runs["local"][0] == 0
    assert runs["local"][1].count("\n") > 10
    tree = _same_trees(tmp_path)
    assert {"report.html", "findings/*.parquet", "files/*.parquet"} <= set(tree)


def test_compaction_cleaner_with_segments(inputs: list[str], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    runs = _run_both(["compaction", *inputs, "--now", NOW, *COMPACT, "--write-segments"], tmp_path, capsys)
    assert runs["local"] == runs["spark"] and runs["local"][0] == 0
    tree = _same_trees(tmp_path)
    summary = tree["summary.json"]["partitions"]
    assert any(p["cleaned"] and p["recordsAfter"] < p["recordsBefore"] for p in summary)
    assert any(rel.startswith("segments/broker-9/table-0/") and rel.endswith(".log") for rel in tree)
    assert any(len(v) for k, v in tree.items() if k.startswith("records/"))


def test_compaction_full(inputs: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = _run_both(["compaction", *inputs, "--mode", "full", "--now", NOW, *COMPACT], tmp_path, capsys)
    assert runs["local"] == runs["spark"] and runs["local"][0] == 0
    tree = _same_trees(tmp_path)
    table = [p for p in tree["summary.json"]["partitions"] if p["topic"] == "table"]
    # partition 0: offsets 1..17 (log start 1, LSO 18) minus 2 aborted records and 2 markers; 1: HW 3
    assert [p["recordsBefore"] for p in table] == [13, 3]


@pytest.mark.parametrize("flags", [["--key-as", "string", "--value-as", "string"],
                                   ["--partition-by", "date", "--isolation-level", "read_committed"]],
                         ids=["strings", "date-committed"])
def test_export(inputs: list[str], flags: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = _run_both(["export", *inputs, *flags], tmp_path, capsys)
    assert runs["local"][0] == runs["spark"][0] == 0
    local, spark = (json.loads(runs[e][1]) for e in ("local", "spark"))
    assert (local.pop("engine"), spark.pop("engine")) == ("local", "spark")
    assert (local["writer"], spark["writer"]) == ("pyarrow", "pyarrow")   # the tasks write on both executors
    assert local["rows"] > 0 and local == spark            # the same plan for the same cores: the same files
    tree = _same_trees(tmp_path)
    assert sum(len(v) for k, v in tree.items() if k.endswith("*.parquet")) == local["rows"]
