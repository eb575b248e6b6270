"""Crash consistency of ``klogs export``: a run killed mid-write leaves nothing partial visible, and
re-running it yields exactly the source's records (no loss, no duplicate).

Each scenario runs ``klogs export`` in a subprocess with ``KLA_CRASH_AT`` set; the process SIGKILLs
itself at that step (kafka_format.output.publish.crash_point).  ``read:orders-1`` kills the whole job
-- driver, JVM and Python workers -- when a task starts reading partition orders-1, after the task
of orders-0 wrote its files: a delta-spark write killed mid-batch, its files written and no commit.
The subprocesses run two at a time (JVM start-up dominates them); the re-runs, and the first batch
of the incremental mid-batch scenario, are in-process on the shared session.  Oracle: aiokafka's
decoding of the writer-made log dirs.  The incremental Parquet crash before publishing is the same
staging_dir path as the batch one and is not run separately.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pyspark
import pytest
from test_export_job import (
    REPO,
    append_records,
    assert_exactly,
    oracle,
    read_delta,
    read_parquet_dir,
    run_export,
    write_log_dir,
)
from testhelpers import own_spark_env

pytestmark = pytest.mark.spark

FILES_WRITTEN = "export:files-written"
BATCH_COMMITTED = "export:batch-committed"
MID_WRITE = "read:orders-1"          # the whole job killed once orders-0's task wrote its files
ATTEMPT_WRITTEN = "export:first-attempt-written:orders-0"    # one task's first attempt killed after writing
PARALLEL = 2
SPARK_SUBMIT = Path(pyspark.__file__).parent / "bin" / "spark-submit"
KLOGS = "import sys; from kafka_format.cli import main; sys.exit(main(sys.argv[1:]))"


@dataclass(frozen=True)
class Scenario:
    fmt: str
    incremental: bool
    crash_at: str
    master: str = "local[1]"


SCENARIOS = {
    "parquet-batch": Scenario("parquet", False, FILES_WRITTEN),
    "parquet-batch-task-retried": Scenario("parquet", False, ATTEMPT_WRITTEN, "local[1,2]"),   # 2 attempts per task
    "parquet-incremental-published": Scenario("parquet", True, BATCH_COMMITTED),
    "delta-batch": Scenario("delta", False, FILES_WRITTEN),      # the delta-rs fallback: no Delta jars
    "delta-incremental-committed": Scenario("delta", True, BATCH_COMMITTED),
    "delta-spark-batch-mid-write": Scenario("delta", False, MID_WRITE),
    "delta-spark-incremental-mid-batch": Scenario("delta", True, MID_WRITE),    # batch 1, after batch 0
}


@dataclass(frozen=True)
class Crashed:
    logs: Path
    out: Path
    ckpt: Path
    args: list[str]
    returncode: int
    stderr: str


@pytest.fixture(scope="module")
def crashed(spark, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Crashed]:  # type: ignore[no-untyped-def]
    """Every scenario's killed run (started in parallel)."""
    conf = tmp_path_factory.mktemp("spark_conf")      # `klogs` reads the local profile: use the test one
    (conf / "local.conf").write_text((REPO / "spark_conf" / "test.conf").read_text())
    env = {**own_spark_env(), "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "KLOGS_SPARK_CONF_DIR": str(conf)}
    running: dict[str, tuple] = {}
    done: dict[str, Crashed] = {}

    def finish(name: str) -> None:
        proc, logs, out, ckpt, args = running.pop(name)
        _, err = proc.communicate()
        try:                                   # the JVM exits when its parent's pipe closes; be sure
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        done[name] = Crashed(logs, out, ckpt, args, proc.returncode, err)

    for name, sc in SCENARIOS.items():
        if len(running) >= PARALLEL:
            finish(next(iter(running)))
        root = tmp_path_factory.mktemp(name)
        logs = write_log_dir(root / "logs")
        out, ckpt = root / "out", root / "ckpt"
        args = [str(logs), "--out", str(out), "--format", sc.fmt, "--key-as", "string"]
        if sc.incremental:
            args += ["--checkpoint", str(ckpt)]
        if sc.crash_at in (MID_WRITE, ATTEMPT_WRITTEN):        # a task per segment (small ones share a task otherwise), so
            args += ["--option", "maxBytesPerPartition=1k"]     # orders-0's tasks end before orders-1's
        if name == "delta-spark-incremental-mid-batch":
            assert run_export(*args) == 0                   # batch 0, whole; then the broker appended
            for partition in (0, 1):
                append_records(logs, "orders", partition, 6)
        command = [sys.executable, "-c", KLOGS, "export", *args, "--master", sc.master]
        if sc.crash_at == ATTEMPT_WRITTEN:      # Spark's log on stderr: the lost attempt shows there
            command.append("--verbose")
        if name == "delta-batch":           # spark-submit without --packages: a session without Delta's jars
            command = [str(SPARK_SUBMIT), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
                       str(REPO / "jobs" / "export.py"), *args]
        proc = subprocess.Popen(command, env={**env, "KLA_CRASH_AT": sc.crash_at}, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        running[name] = (proc, logs, out, ckpt, args)
    while running:
        finish(next(iter(running)))
    return done


def hidden_parquet(parent: Path) -> list[Path]:
    """Parquet files under hidden (staging) directories of ``parent``."""
    return [p for p in parent.rglob("*.parquet")
            if any(part.startswith((".", "_")) for part in p.relative_to(parent).parts[:-1])]


def rerun(c: Crashed) -> int:
    return run_export(*c.args)


def assert_killed(c: Crashed, *, submitted: bool = False) -> None:
    """The run died by SIGKILL (``submitted``: its Python driver did, and spark-submit exited with the
    shell's 128 + signal number)."""
    assert c.returncode == (128 + signal.SIGKILL if submitted else -signal.SIGKILL), c.stderr[-2000:]


# --- Parquet ------------------------------------------------------------------------------
def test_a_retried_tasks_dead_attempt_never_reaches_the_output(spark, crashed) -> None:  # type: ignore[no-untyped-def]
    """A Spark task's first attempt writes its files and its Python worker dies; Spark runs the task
    again (two attempts allowed), the retry writes its own files under its own attempt's name, and
    the driver publishes the files of the attempt it kept: every record exactly once, one file per
    task, nothing of the dead attempt left anywhere."""
    c = crashed["parquet-batch-task-retried"]
    assert c.returncode == 0, c.stderr[-3000:]
    assert "Lost task" in c.stderr and "Python worker exited unexpectedly" in c.stderr   # the attempt died
    assert_exactly(read_parquet_dir(c.out), oracle(c.logs))
    files = sorted(p.relative_to(c.out).as_posix() for p in c.out.rglob("*.parquet"))
    assert len(files) == len(set(files)) and files and all("_attempts" not in f for f in files)
    assert not hidden_parquet(c.out) and not [p for p in c.out.parent.iterdir() if p.name.startswith(".")]
    with_rows = [p for p in c.out.rglob("*.parquet") if "partition=0" in p.as_posix()]
    assert len(with_rows) == len({p.name for p in with_rows})       # the retried task's files once


def test_parquet_batch_killed_before_publish_shows_nothing(spark, crashed) -> None:  # type: ignore[no-untyped-def]
    c = crashed["parquet-batch"]
    assert_killed(c)
    assert not c.out.exists()                                  # readers see no output at all
    assert hidden_parquet(c.out.parent)                         # the files were written, then the kill
    assert rerun(c) == 0
    assert_exactly(read_parquet_dir(c.out), oracle(c.logs))
    assert not [p for p in c.out.parent.iterdir() if p.name.startswith(".")]   # leftovers removed


def test_parquet_incremental_killed_after_publish_is_not_duplicated(spark, crashed) -> None:  # type: ignore[no-untyped-def]
    c = crashed["parquet-incremental-published"]
    assert_killed(c)
    assert (c.ckpt / "offsets" / "0").is_file() and not (c.ckpt / "commits" / "0").exists()
    assert_exactly(read_parquet_dir(c.out), oracle(c.logs))    # batch 0 is visible, whole
    assert rerun(c) == 0                                       # Spark replays batch 0: skipped
    assert (c.ckpt / "commits" / "0").is_file()
    assert sorted(os.listdir(c.out)) == [".klogs-output", "exportBatch=0"]
    assert_exactly(read_parquet_dir(c.out), oracle(c.logs))


# --- Delta --------------------------------------------------------------------------------
def test_delta_batch_killed_before_commit_has_no_version(spark, crashed, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The delta-rs fallback, killed under ``spark-submit`` without ``--packages`` (a session without
    Delta's jars: only the fallback has this crash point, so the kill shows it was taken): staged
    files, no table; the re-run (the fallback forced on the shared session) makes one delta-rs commit."""
    from deltalake import DeltaTable

    monkeypatch.setenv("KLOGS_DELTA_ENGINE", "delta-rs")
    c = crashed["delta-batch"]
    assert_killed(c, submitted=True)
    assert not DeltaTable.is_deltatable(str(c.out))
    assert hidden_parquet(c.out)                                # staged under _klogs_staging, uncommitted
    assert rerun(c) == 0
    assert DeltaTable(str(c.out)).version() == 0
    assert_exactly(read_delta(c.out), oracle(c.logs))
    assert not hidden_parquet(c.out)


def test_delta_incremental_killed_after_commit_is_not_committed_twice(spark, crashed, capsys) -> None:  # type: ignore[no-untyped-def]
    from deltalake import DeltaTable

    c = crashed["delta-incremental-committed"]
    assert_killed(c)
    table = DeltaTable(str(c.out))
    assert table.version() == 0
    assert not (c.ckpt / "commits" / "0").exists()
    query_id = json.loads((c.ckpt / "metadata").read_text())["id"]          # Spark's streaming query id
    assert table.transaction_version(f"klogs-export-{query_id}") == 0       # the batch id rode the commit
    capsys.readouterr()
    assert rerun(c) == 0
    assert DeltaTable(str(c.out)).version() == 0                 # the replayed batch made no commit
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (result["replayed_batches"], result["batches"], result["rows"]) == ([0], [], 0)   # and says so
    assert (c.ckpt / "commits" / "0").is_file()
    assert_exactly(read_delta(c.out), oracle(c.logs))


# --- delta-spark killed mid-write ----------------------------------------------------------------
def data_files(out: Path) -> set[str]:
    """The Parquet files in the table directory (committed or not)."""
    return {p.relative_to(out).as_posix() for p in out.rglob("*.parquet") if "_delta_log" not in p.parts}


def committed(out: Path) -> set[str]:
    """The data files the Delta table's current version references (read by delta-rs)."""
    from deltalake import DeltaTable

    return {uri.split(f"{out.name}/", 1)[1] for uri in DeltaTable(str(out)).file_uris()}


def test_delta_spark_batch_killed_mid_write_commits_nothing(spark, crashed) -> None:  # type: ignore[no-untyped-def]
    from deltalake import DeltaTable

    c = crashed["delta-spark-batch-mid-write"]
    assert_killed(c)
    written = data_files(c.out)
    assert any("partition=0" in f for f in written) and not any("partition=1" in f for f in written)  # mid-write
    assert not DeltaTable.is_deltatable(str(c.out))            # Delta's commit never came: no table at all
    assert rerun(c) == 0
    assert DeltaTable(str(c.out)).version() == 0
    assert_exactly(read_delta(c.out), oracle(c.logs))
    assert written <= data_files(c.out) and not written & committed(c.out)      # the orphans stay unreferenced


def test_delta_spark_incremental_killed_mid_batch_is_exactly_once(spark, crashed, capsys) -> None:  # type: ignore[no-untyped-def]
    from deltalake import DeltaTable

    c = crashed["delta-spark-incremental-mid-batch"]
    assert_killed(c)
    assert DeltaTable(str(c.out)).version() == 0                # batch 0 only: batch 1 never committed
    assert (c.ckpt / "offsets" / "1").is_file() and not (c.ckpt / "commits" / "1").exists()
    orphans = data_files(c.out) - committed(c.out)
    assert orphans and all("partition=0" in f for f in orphans)    # orders-0's files of batch 1, uncommitted
    capsys.readouterr()
    assert rerun(c) == 0                                        # Spark replays batch 1 with the same offsets
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (result["batches"], result["replayed_batches"], result["version"]) == ([1], [], 1)
    assert_exactly(read_delta(c.out), oracle(c.logs))           # every record once: old, appended
    assert not orphans & committed(c.out)
