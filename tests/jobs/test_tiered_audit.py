"""``klogs audit`` over both tiers of a tiered partition (``--remote-storage``): the checks of
``kafka_format.log.audit.tiers`` on logs damaged in known ways, each finding written from the damage
done (``tiered_builders.write_tiered_cluster``: ``orders-0``, segments 0 and 40 copied and deleted
locally, local log start 50)."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "format"))
from tiered_builders import (  # noqa: E402
    TieredCluster,
    copy_records,
    put_fileset,
    remote_dir,
    segment_uuid,
    write_metadata_log,
    write_tiered_cluster,
)

from kafka_format.engine.audit import audit_local  # noqa: E402

NOW = 1_700_000_000_000 + 20_000_000


def _audit(c: TieredCluster, *, remote: bool = True) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    findings, files = audit_local([str(c.log_dir)], topics=["orders"], now_ms=NOW,
                                  remote_storage=(str(c.remote_root), "auto") if remote else None)
    return findings.to_pylist(), files.to_pylist()


def _tier_rows(findings: list[dict[str, Any]]) -> list[tuple[str, str, int | None]]:
    return sorted((f["severity"], f["check"], f["offset"]) for f in findings if f["check"].startswith("remote-"))


def _remote_log(c: TieredCluster, base: int) -> Path:
    (log,) = remote_dir(c.remote_root).glob(f"{base:020d}-*.log")
    return log


def _rewrite_metadata(c: TieredCluster, segments: list[Any]) -> None:
    shutil.rmtree(c.log_dir / "__remote_log_metadata-0")
    write_metadata_log(c.log_dir, copy_records(segments))


def test_a_clean_tiered_partition_has_no_tier_finding_and_its_remote_bytes_are_accounted(tmp_path: Path) -> None:
    c = write_tiered_cluster(tmp_path)
    findings, files = _audit(c)
    assert _tier_rows(findings) == []
    assert not [f for f in findings if f["severity"] == "error"], findings
    accounted = {Path(f["file"]).name: (f["sizeBytes"], f["validBytes"]) for f in files}
    for base in (0, 40):
        log = _remote_log(c, base)
        assert accounted[log.name] == (log.stat().st_size, log.stat().st_size)


def test_damage_in_the_remote_tier_is_found(tmp_path: Path) -> None:
    c = write_tiered_cluster(tmp_path)
    log0 = _remote_log(c, 0)
    data = bytearray(log0.read_bytes())
    data[-3] ^= 0xFF                                          # a record byte of the last batch of segment 0
    log0.write_bytes(bytes(data))
    put_fileset(c.remote_root, 90, segment_uuid(90))          # files no metadata names (a failed copy)
    wrong = replace(c.uploaded[1], max_timestamp_ms=c.uploaded[1].max_timestamp_ms + 1)
    _rewrite_metadata(c, [c.uploaded[0], wrong])
    findings, _ = _audit(c)
    got = {(f["severity"], f["check"], Path(f["file"]).name) for f in findings if f["severity"] != "info"}
    assert ("error", "batch-crc", log0.name) in got
    assert ("warning", "remote-orphan-fileset", remote_dir(c.remote_root).name) in got
    assert ("error", "remote-metadata-mismatch", _remote_log(c, 40).name) in got
    mismatch = next(f for f in findings if f["check"] == "remote-metadata-mismatch")
    assert mismatch["expected"].endswith(f"max timestamp {wrong.max_timestamp_ms}")
    assert mismatch["actual"].endswith(f"max timestamp {c.uploaded[1].max_timestamp_ms}")


def test_an_offset_gap_and_missing_files(tmp_path: Path) -> None:
    """Segment 40's metadata gone: offsets 40..49 are served by nothing and its files are an orphan;
    then segment 0's files gone: its metadata names files the store lacks."""
    c = write_tiered_cluster(tmp_path)
    _rewrite_metadata(c, c.uploaded[:1])
    assert ("error", "remote-offset-gap", 40) in _tier_rows(_audit(c)[0])
    assert ("error", "remote-offset-gap", 40) in _tier_rows(_audit(c, remote=False)[0])   # metadata alone
    for f in remote_dir(c.remote_root).glob("00000000000000000000-*"):
        f.unlink()
    rows = _tier_rows(_audit(c)[0])
    assert ("error", "remote-files-missing", 0) in rows
    assert not [r for r in _tier_rows(_audit(c, remote=False)[0]) if r[1] == "remote-files-missing"]


def test_the_audit_job_takes_remote_storage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kafka_format.jobs.audit import main

    c = write_tiered_cluster(tmp_path / "c")
    _rewrite_metadata(c, c.uploaded[:1])
    code = main([str(c.log_dir), "--topic", "orders", "--out", str(tmp_path / "out"), "--format", "json",
                 "--remote-storage", str(c.remote_root), "--now", str(NOW)])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert code == 1 and any(r["check"] == "remote-offset-gap" for r in rows)
