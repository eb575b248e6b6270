"""``klogs export`` of a tiered topic (tiered storage, KIP-405) on both engines: with
``--remote-storage`` the export holds the whole history as the broker serves it (remote segments
below the local log start, then the local log; ``tier`` tells which), read_committed included;
without it the export is refused naming the partition.  An incremental export into a table an earlier
version made without ``tier`` keeps that table's columns.

The log is ``tiered_builders.write_tiered_cluster``'s (the expected rows are written from Kafka's rules
there); a real broker's tiered topic is compared in ``tests/conformance/test_tiered.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from test_export_job import append_records, read_parquet_dir, run_export

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "format"))
from tiered_builders import TieredCluster, write_tiered_cluster  # noqa: E402

LOCAL_START = 50


def _expected(c: TieredCluster, *, committed: bool = False) -> list[tuple[int, bytes, str]]:
    return [(o, v, "remote" if o < LOCAL_START else "local") for o, v in c.rows
            if not (committed and o in c.aborted)]


def _rows(out: Path) -> list[tuple[int, bytes, str]]:
    return sorted((r["offset"], r["value"], r["tier"]) for r in read_parquet_dir(out) if r["topic"] == "orders")


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_export_of_a_tiered_topic_holds_its_whole_history(engine: str, tmp_path: Path,
                                                          request: pytest.FixtureRequest) -> None:
    if engine == "spark":
        request.getfixturevalue("spark")
    c = write_tiered_cluster(tmp_path / "cluster")
    base = [c.log_dir, "--topic", "orders", "--remote-storage", c.remote_root, "--engine", engine]
    assert run_export(*base, "--out", tmp_path / "all") == 0
    assert _rows(tmp_path / "all") == _expected(c)
    assert run_export(*base, "--isolation-level", "read_committed", "--out", tmp_path / "committed") == 0
    assert _rows(tmp_path / "committed") == _expected(c, committed=True)


def test_export_of_a_tiered_topic_without_remote_storage_is_refused(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    c = write_tiered_cluster(tmp_path / "cluster")
    out = tmp_path / "out"
    assert run_export(c.log_dir, "--out", out, "--engine", "local") == 2
    err = capsys.readouterr().err
    assert "orders-0" in err and "--remote-storage" in err and "tier=local" in err
    assert not out.exists()
    assert run_export(c.log_dir, "--option", "tier=local", "--out", out, "--engine", "local") == 0
    assert _rows(out) == [r for r in _expected(c) if r[0] >= LOCAL_START]


def test_incremental_export_keeps_the_columns_of_an_older_table(spark: Any, tmp_path: Path) -> None:
    """An incremental Parquet export whose first batch an earlier version wrote without ``tier``:
    the next batch leaves ``tier`` out too, so the directory keeps one schema."""
    c = write_tiered_cluster(tmp_path / "cluster")
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    args = [c.log_dir, "--topic", "plain", "--out", out, "--checkpoint", ckpt]
    assert run_export(*args) == 0
    first = sorted(out.rglob("*.parquet"))
    assert first and all("tier" in pq.read_schema(f).names for f in first)
    for f in first:                                   # as the earlier version wrote them
        pq.write_table(pq.ParquetFile(f).read().drop(["tier"]), f)
    append_records(c.log_dir, "plain", 0, 7)
    assert run_export(*args) == 0
    later = sorted(set(out.rglob("*.parquet")) - set(first))
    assert later and all("tier" not in pq.read_schema(f).names for f in later)
    offsets = sorted(r["offset"] for r in read_parquet_dir(out))
    assert offsets == list(range(c.plain_rows + 7))


def test_the_engine_is_chosen_by_the_bytes_of_both_tiers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--engine auto`` sizes a run by its segments: the log dirs' and, with ``--remote-storage``, the
    remote tier's ``.log`` files."""
    from kafka_format.engine import choose_engine

    c = write_tiered_cluster(tmp_path / "cluster")
    local = sum(f.stat().st_size for f in c.log_dir.rglob("*.log"))
    remote = sum(f.stat().st_size for f in c.remote_root.rglob("*.log"))
    monkeypatch.setenv("KLOGS_LOCAL_MAX_BYTES", str(local + remote // 2))
    assert choose_engine("auto", master=None, logdirs=[str(c.log_dir)]).engine == "local"
    choice = choose_engine("auto", master=None, logdirs=[str(c.log_dir)], remote_storage=str(c.remote_root))
    assert choice.engine == "spark" and "local and remote" in choice.reason


@pytest.mark.parametrize("fmt", ["delta", "delta-rs"])
def test_incremental_delta_export_keeps_the_columns_of_an_older_table(spark: Any, tmp_path: Path, fmt: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A Delta table an earlier version made without ``tier`` (rewritten here without the column, as
    that version wrote it): the next incremental run appends to it without ``tier``, on delta-spark and
    on the delta-rs fallback."""
    from deltalake import DeltaTable, write_deltalake

    if fmt == "delta-rs":
        monkeypatch.setenv("KLOGS_DELTA_ENGINE", "delta-rs")
    c = write_tiered_cluster(tmp_path / "cluster")
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    args = [c.log_dir, "--topic", "plain", "--out", out, "--checkpoint", ckpt, "--format", "delta"]
    assert run_export(*args) == 0
    first = DeltaTable(str(out)).to_pyarrow_table()
    assert "tier" in first.schema.names
    older = first.drop(["tier"])
    write_deltalake(str(out), older, mode="overwrite", schema_mode="overwrite", partition_by=["topic", "partition"])
    append_records(c.log_dir, "plain", 0, 7)
    assert run_export(*args) == 0
    table = DeltaTable(str(out))
    after = table.to_pyarrow_table()
    assert "tier" not in after.schema.names
    assert sorted(after.column("offset").to_pylist()) == list(range(c.plain_rows + 7))
    files = [f.removeprefix("file://") for f in table.file_uris()]   # the files too: delta-rs reads past a column
    assert files and all("tier" not in pq.read_schema(f).names for f in files)


def test_a_permissive_export_reports_a_remote_segment_it_cannot_read(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from tiered_builders import remote_dir

    c = write_tiered_cluster(tmp_path / "cluster")
    for f in remote_dir(c.remote_root).glob("00000000000000000000-*"):
        f.unlink()
    base = [c.log_dir, "--topic", "orders", "--remote-storage", c.remote_root, "--engine", "local"]
    assert run_export(*base, "--out", tmp_path / "failfast") == 2                  # FAILFAST: refused, named
    assert "cannot be read" in capsys.readouterr().err
    assert run_export(*base, "--option", "mode=DROPMALFORMED", "--out", tmp_path / "out") == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    (skipped,) = result["skipped_ranges"]
    assert skipped["file"].endswith(f"-{c.uploaded[0].segment_id}.log") and skipped["length"] == \
        c.uploaded[0].segment_size_in_bytes
    assert _rows(tmp_path / "out") == [r for r in _expected(c) if r[0] >= 40]


def test_an_incremental_export_of_a_tiered_topic_starts_at_its_remote_log_start(spark: Any, tmp_path: Path) -> None:
    """``--checkpoint`` with ``--remote-storage``: the first run exports the whole history (remote tier
    first), the next one only what the local log gained since."""
    c = write_tiered_cluster(tmp_path / "cluster")
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    args = [c.log_dir, "--topic", "orders", "--remote-storage", c.remote_root, "--out", out, "--checkpoint", ckpt]
    assert run_export(*args) == 0
    assert _rows(out) == _expected(c)
    append_records(c.log_dir, "orders", 0, 6)
    assert run_export(*args) == 0
    offsets = sorted(r["offset"] for r in read_parquet_dir(out) if r["topic"] == "orders")
    assert offsets == sorted([o for o, _, _ in _expected(c)] + list(range(100, 106)))
