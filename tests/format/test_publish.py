"""Crash-safe publishing: readers see all of an output or none of it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kafka_format.output.publish import (
    CRASH_ENV,
    atomic_write_text,
    cleanup_stale,
    crash_point,
    is_temp_name,
    local_path,
    publish_dir,
    staging_dir,
)


def _visible(parent: Path) -> list[str]:
    return sorted(n for n in os.listdir(parent) if not is_temp_name(n))


class TestAtomicFiles:
    def test_write_replace_and_no_leftovers(self, tmp_path: Path) -> None:
        target = tmp_path / "sub" / "summary.json"
        atomic_write_text(target, "one")
        atomic_write_text(target, "two")
        assert target.read_text() == "two"
        assert os.listdir(target.parent) == ["summary.json"]

    def test_file_uri(self, tmp_path: Path) -> None:
        atomic_write_text(f"file://{tmp_path}/x.txt", "hi")
        assert (tmp_path / "x.txt").read_text() == "hi"

    def test_object_store_refused(self) -> None:
        with pytest.raises(ValueError, match="atomic rename"):
            local_path("s3://bucket/key")


class TestStagingDir:
    def test_publishes_on_success_and_replaces(self, tmp_path: Path) -> None:
        out = tmp_path / "records"
        for content in ("first", "second"):
            with staging_dir(out) as d:
                assert not out.exists() or (out / "part-0").read_text() == "first"
                Path(d, "part-0").write_text(content)
            assert (out / "part-0").read_text() == content
        assert _visible(tmp_path) == os.listdir(tmp_path) == ["records"]

    def test_exception_leaves_the_old_output(self, tmp_path: Path) -> None:
        out = tmp_path / "records"
        with staging_dir(out) as d:
            Path(d, "a").write_text("kept")
        with pytest.raises(RuntimeError), staging_dir(out) as d:
            Path(d, "a").write_text("half")
            raise RuntimeError("writer failed")
        assert (out / "a").read_text() == "kept"
        assert os.listdir(tmp_path) == ["records"]


_CHILD = textwrap.dedent("""
    import sys
    from pathlib import Path
    from kafka_format.output.publish import crash_point, staging_dir
    out = Path(sys.argv[1])
    with staging_dir(out / "records") as d:
        Path(d, "part-0.parquet").write_bytes(b"x" * 1000)
        crash_point("test:written")
        Path(d, "part-1.parquet").write_bytes(b"y" * 1000)
    print("published")
""")


class TestCrash:
    def test_kill_before_publish_shows_nothing_and_cleans_up(self, tmp_path: Path) -> None:
        env = {**os.environ, CRASH_ENV: "test:written"}
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path)], env=env, capture_output=True)
        assert proc.returncode == -signal.SIGKILL
        assert _visible(tmp_path) == []                       # nothing partial is visible
        leftovers = os.listdir(tmp_path)
        assert len(leftovers) == 1 and is_temp_name(leftovers[0])
        assert cleanup_stale(tmp_path) == leftovers and os.listdir(tmp_path) == []
        ok = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path)], capture_output=True, text=True)
        assert ok.returncode == 0 and ok.stdout.strip() == "published"
        assert sorted(os.listdir(tmp_path / "records")) == [".klogs-output", "part-0.parquet", "part-1.parquet"]

    def test_crash_point_is_a_noop_without_the_variable(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv(CRASH_ENV, raising=False)
        crash_point("anything")
        monkeypatch.setenv(CRASH_ENV, "other")
        crash_point("anything")

    def test_crash_between_the_two_renames_restores_the_old_output(self, tmp_path: Path) -> None:
        out = tmp_path / "records"
        with staging_dir(out) as d:
            Path(d, "a").write_text("old")
        # publish_dir's first rename done, the second not: the old output sits under a temp name.
        aside = tmp_path / f".records.old-{'0' * 32}"
        os.rename(out, aside)
        staged = tmp_path / f".records.tmp-{'1' * 32}"
        staged.mkdir()
        assert _visible(tmp_path) == []
        removed = cleanup_stale(tmp_path)
        assert sorted(removed) == sorted([aside.name, staged.name])
        assert (out / "a").read_text() == "old" and os.listdir(tmp_path) == ["records"]

    def test_cleanup_of_one_output_leaves_its_neighbours(self, tmp_path: Path) -> None:
        mine = tmp_path / f".records.tmp-{'2' * 32}"
        theirs = tmp_path / f".report.tmp-{'3' * 32}"
        mine.mkdir()
        theirs.mkdir()
        assert cleanup_stale(tmp_path, "records") == [mine.name]
        assert os.listdir(tmp_path) == [theirs.name]

    def test_publish_dir_moves_a_finished_dir(self, tmp_path: Path) -> None:
        staged = tmp_path / "done"
        staged.mkdir()
        (staged / "f").write_text("1")
        publish_dir(str(staged), str(tmp_path / "final"))
        assert (tmp_path / "final" / "f").read_text() == "1" and not staged.exists()
