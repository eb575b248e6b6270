"""State that must not outlive one run: two runs of a job in one process, with the log dirs
changed in between, answer as two fresh processes would (issue 33's review of caches and memos).

What a run remembers: the listing memo of the local engine (one listing and one read of each state
file per run, :func:`kafka_format.storage.fsio.listing_cache`), the parse of each state file by
the digest of its bytes (:mod:`kafka_format.storage.logdir`), the newest segment of a directory by
its mtime (:mod:`kafka_format.records.file_source`), the typed decoders per plan and thread
(:meth:`kafka_format.registry.typed.ColumnDecoder.for_plan`).  Each is checked here from outside:
the second answer must follow the files as they are at its start.
"""

from __future__ import annotations

import importlib
import json
import shutil
import threading
from pathlib import Path

import pyarrow.compute as pc
import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    shutil.copytree(SAMPLES / "broker-1", root / "broker-1")
    return root


def _earliest(logdir: Path, out: Path) -> dict[tuple[str, int], int | None]:
    job = importlib.import_module("kafka_format.jobs.offsets")
    if out.exists():
        out.unlink()
    assert job.main([str(logdir), "--timestamp", "earliest", "--engine", "local", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return {(r["topic"], r["partition"]): r["offset"] for r in rows}


def test_a_second_run_sees_changed_checkpoints_and_partitions(logdir: Path, tmp_path: Path) -> None:
    first = _earliest(logdir, tmp_path / "a.jsonl")
    assert first[("v2-codecs", 2)] == 185                    # from log-start-offset-checkpoint
    assert ("v2-codecs", 4) in first
    checkpoint = logdir / "broker-1" / "log-start-offset-checkpoint"
    checkpoint.write_text(checkpoint.read_text().replace("v2-codecs 2 185", "v2-codecs 2 190"))
    shutil.rmtree(logdir / "broker-1" / "v2-codecs-4")
    second = _earliest(logdir, tmp_path / "b.jsonl")
    assert second[("v2-codecs", 2)] == 190
    assert ("v2-codecs", 4) not in second
    assert {k: v for k, v in second.items() if k != ("v2-codecs", 2)} == \
        {k: v for k, v in first.items() if k not in (("v2-codecs", 2), ("v2-codecs", 4))}


def test_read_table_twice_follows_the_files(logdir: Path) -> None:
    from kafka_format.engine.read import read_table

    before = read_table({"path": str(logdir)})
    shutil.rmtree(logdir / "broker-1" / "v2-codecs-1")
    after = read_table({"path": str(logdir)})
    gone = before.filter(pc.and_(pc.equal(before["topic"], "v2-codecs"), pc.equal(before["partition"], 1)))
    assert gone.num_rows > 0
    assert after.num_rows == before.num_rows - gone.num_rows


def test_two_jobs_on_two_threads_answer_as_alone(logdir: Path, tmp_path: Path) -> None:
    """Two runs at once in one process (two threads, each its own listing memo or none) give the
    answers each gives alone."""
    other = tmp_path / "other"
    shutil.copytree(SAMPLES / "broker-2", other / "broker-2")
    alone = {"a": _earliest(logdir, tmp_path / "alone-a.jsonl"), "b": _earliest(other, tmp_path / "alone-b.jsonl")}
    got: dict[str, object] = {}

    def run(name: str, root: Path) -> None:
        try:
            got[name] = [_earliest(root, tmp_path / f"{name}-{i}.jsonl") for i in range(3)]
        except BaseException as exc:  # noqa: BLE001 -- reported below
            got[name] = exc

    threads = [threading.Thread(target=run, args=("a", logdir)), threading.Thread(target=run, args=("b", other))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert got["a"] == [alone["a"]] * 3
    assert got["b"] == [alone["b"]] * 3
