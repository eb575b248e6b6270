"""A Spark failure reaches the user as one line with its cause and exit code 2 (README: could not
run), never a Py4J traceback or the refused socket of a dead JVM.

Real failures only: a Python worker's real MemoryError, a cleaner task failing on a corrupt
segment (the line names the partition and the file), a real driver JVM that runs out of heap
and exits (code 52), and a JVM killed (SIGKILL, as the kernel's OOM killer does) while a cleaner
task runs (the line names the partition being cleaned), the last two in their own process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kafka_format.jobs.jobargs import EXIT_USAGE, run_job
from kafka_format.jobs.sparkerrors import DRIVER_MEMORY_KNOB, JVM_OOM_EXIT, PYTHON_MEMORY_KNOB

REPO = Path(__file__).resolve().parents[2]


def _stderr_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


@pytest.mark.spark
def test_python_worker_out_of_memory_is_one_line(spark, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    def hog(batches):  # type: ignore[no-untyped-def]
        for batch in batches:
            np.ones(1 << 62, dtype=np.uint8)     # numpy's own MemoryError: cannot allocate 4 EiB
            yield batch

    def body() -> int:
        spark.range(4, numPartitions=1).mapInArrow(hog, "id long").collect()
        return 0

    assert run_job(body, prog="probe") == EXIT_USAGE
    lines = _stderr_lines(capsys)
    assert len(lines) == 1, lines
    assert lines[0].startswith("klogs probe: a Python worker ran out of memory")
    assert "MemoryError" in lines[0] and lines[0].endswith(PYTHON_MEMORY_KNOB)


def write_garbled_partition(log_dir: Path) -> None:
    """A log dir whose ``t-3`` holds four batches of which only the first decodes (40 bytes of
    0xff over the second): a cleaner task on it fails, naming the partition and segment."""
    from kafka_format.writer import LogDirWriter, Record, build_v2_batch

    ld = LogDirWriter(log_dir, node_id=1, cluster_id="S2xhU2FtcGxlc0NsdXN0ZQ")
    w = ld.partition("t", 3, topic_id=b"\x07" * 16)
    for base in range(0, 40, 10):
        w.append(build_v2_batch([Record(b"k%d" % (i % 3), b"v", 1_700_000_000_000) for i in range(10)],
                                base_offset=base))
    w.close()
    ld.close(written_at_ms=1_700_000_000_000)
    log = log_dir / "t-3" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    second = len(data) // 4 + 1
    data[second:second + 40] = b"\xff" * 40           # the batches after the first one are garbage
    log.write_bytes(bytes(data))


@pytest.mark.spark
def test_a_failed_cleaner_task_names_its_partition(spark, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from kafka_format.cli import main

    write_garbled_partition(tmp_path / "broker")
    out = tmp_path / "out"
    code = main(["compaction", str(tmp_path / "broker"), "--config", "*:cleanup.policy=compact", "--force",
                 "--out", str(out)])
    lines = _stderr_lines(capsys)
    assert code == EXIT_USAGE and not out.exists()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"klogs compaction: Spark failed in partition t-3 ({tmp_path / 'broker'})")
    assert "00000000000000000000.log" in lines[0]


@pytest.mark.spark
def test_a_driver_jvm_out_of_memory_is_one_line(tmp_path: Path) -> None:
    """A real OutOfMemoryError in a task kills the local driver JVM (SparkUncaughtExceptionHandler,
    exit 52); the job's next Py4J call meets a refused socket.  The user gets the cause and the
    knob instead.  Own process: the JVM has 512 MB and dies."""
    script = tmp_path / "oom.py"
    script.write_text(textwrap.dedent("""
        import sys
        from kafka_format.jobs.jobargs import run_job
        from kafka_format.spark.session import build_session

        def body():
            spark = build_session(master="local[1]", profile="test", app_name="oom",
                                  extra_conf={"spark.driver.memory": "512m"})
            # each row builds a 1.2 GB string in the task: more than the whole heap
            spark.range(1).selectExpr("length(repeat('x', CAST(id AS INT) + 600000000)) AS n").collect()
            spark.range(1).count()   # the JVM is gone by now
            return 0

        sys.exit(run_job(body, prog="oom"))
    """))
    proc = subprocess.run([sys.executable, str(script)], cwd=str(REPO), capture_output=True, text=True,
                          timeout=300)
    ours = [line for line in proc.stderr.splitlines() if line.startswith("klogs oom:")]
    assert proc.returncode == EXIT_USAGE, proc.stderr[-3000:]
    assert len(ours) == 1 and "Traceback" not in proc.stderr and "Connection refused" not in proc.stderr
    assert "out of memory" in ours[0] and "OutOfMemoryError" in ours[0] and ours[0].endswith(DRIVER_MEMORY_KNOB)
    assert f"exit code {JVM_OOM_EXIT}" in ours[0] or "Java heap space" in ours[0]


@pytest.mark.spark
def test_a_jvm_killed_during_a_cleaner_task_names_the_partition(tmp_path: Path) -> None:
    """The JVM is SIGKILLed from inside the cleaner task's Python worker (``KLA_CRASH_AT=cleaner:jvm``):
    the job's error carries no task, so the line names the partition whose task had started and
    not finished.  Own process group and output files, never pipes: the PySpark daemon the dead JVM
    leaves behind must not keep the test waiting on a pipe (the group is killed afterwards)."""
    from kafka_format.writer import LogDirWriter, Record, build_v2_batch

    ld = LogDirWriter(tmp_path / "broker", node_id=1, cluster_id="S2xhU2FtcGxlc0NsdXN0ZQ")
    w = ld.partition("t", 3, topic_id=b"\x07" * 16)
    w.append(build_v2_batch([Record(b"k", b"v", 1_700_000_000_000)], base_offset=0))
    w.close()
    ld.close(written_at_ms=1_700_000_000_000)
    err, out = tmp_path / "stderr", tmp_path / "stdout"
    cmd = [sys.executable, "-c", "import sys; from kafka_format.cli import main; sys.exit(main(sys.argv[1:]))",
           "compaction", str(tmp_path / "broker"), "--config", "*:cleanup.policy=compact", "--force",
           "--out", str(tmp_path / "out"), "--master", "local[1]"]
    env = {**os.environ, "KLA_CRASH_AT": "cleaner:jvm", "KLOGS_LOG_DIR": str(tmp_path / "logs")}
    with open(err, "w") as e, open(out, "w") as o:
        proc = subprocess.Popen(cmd, cwd=str(REPO), env=env, stdout=o, stderr=e, start_new_session=True)
        try:
            code = proc.wait(timeout=300)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    stderr = err.read_text()
    ours = [line for line in stderr.splitlines() if line.startswith("klogs compaction:")]
    assert code == EXIT_USAGE, stderr[-3000:]
    assert len(ours) == 1 and "Traceback" not in stderr and "Connection refused" not in stderr, stderr[-3000:]
    assert ours[0].startswith(f"klogs compaction: Spark's JVM exited with code -9 in partition t-3 "
                              f"({tmp_path / 'broker'})"), ours[0]
    assert f"(killed? out of memory?): {DRIVER_MEMORY_KNOB}" in ours[0]
