"""What a person sees when a job cannot run, and that a run's stderr holds klogs' own lines only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"

JOB_ARGS = {
    "offsets": ["--timestamp", "latest"],
    "retention": [],
    "compaction": ["--out", "{out}"],
    "audit": ["--out", "{out}"],
    "export": ["--out", "{out}"],
    "recover": ["--out", "{out}"],
}


def _klogs(args: list[str], log_dir: Path) -> subprocess.CompletedProcess[str]:
    klogs = Path(sys.executable).with_name("klogs")
    cmd = [str(klogs)] if klogs.exists() else [sys.executable, "-c",
                                               "import sys; from kafka_format.cli import main; sys.exit(main())"]
    env = {**os.environ, "KLOGS_LOG_DIR": str(log_dir)}
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=300, cwd=REPO, env=env)


@pytest.mark.parametrize("job", sorted(JOB_ARGS))
def test_a_path_without_partitions_exits_2_before_spark_starts(job: str, tmp_path: Path) -> None:
    not_kafka = tmp_path / "etc"
    not_kafka.mkdir()
    (not_kafka / "hosts").write_text("127.0.0.1 localhost\n")
    logs = tmp_path / "logs"
    extra = [a.format(out=tmp_path / "out") for a in JOB_ARGS[job]]
    proc = _klogs([job, str(not_kafka), *extra], logs)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"klogs {job}: {not_kafka}: no Kafka partition directory")
    assert proc.stdout == ""
    assert not logs.exists()              # no Spark session was started: no JVM log was opened
    assert not (tmp_path / "out").exists()


def test_a_missing_path_exits_2_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    proc = _klogs(["retention", str(missing)], tmp_path / "logs")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"klogs retention: {missing}: path does not exist"]


@pytest.mark.spark
def test_spark_start_up_lines_go_to_the_log_file_not_stderr(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    proc = _klogs(["retention", str(SAMPLES), "--topic", "compacted", "--now", "2023-11-14T22:13:20Z",
                   "--engine", "spark"], logs)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.count("\n") >= 1 and all('"topic":"compacted"' in line for line in proc.stdout.splitlines())
    (log,) = list(logs.glob("klogs-retention-*.log"))
    assert "log4j" in log.read_text()     # Spark announced its log profile there, not on our stderr


@pytest.mark.parametrize("job, where", [*[(j, "proc") for j in ("offsets", "retention", "audit", "compaction",
                                                                  "export")],
                                         ("offsets", "under-a-file"), ("audit", "under-a-file")])   # a file, a dir
def test_an_output_that_cannot_be_created_names_the_users_path(job: str, where: str, tmp_path: Path) -> None:
    if where == "proc":
        target, reason = "/proc/klogs-no-such-output", "No such file or directory"   # /proc refuses new files, even to root
    else:
        (tmp_path / "a-file").write_text("x")
        target, reason = str(tmp_path / "a-file" / "out"), "Not a directory"
    extra = ["--timestamp", "latest"] if job == "offsets" else []
    proc = _klogs([job, str(SAMPLES), *extra, "--out", target], tmp_path / "logs")
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line == (f"klogs {job}: {target}: cannot create the output here; expected a path whose parent "
                    f"directory exists and is writable; found {reason}")
    assert not (tmp_path / "logs").exists()                             # refused before Spark started
