"""Ctrl-C during a job: one line on stderr, exit code 130, and the outputs as the run's clean-up
leaves them (a staged output removed, a previous output kept, no temporaries, no lock).

Each run is a real ``klogs`` process in a session of its own.  ``KLA_STOP_AT=<step>`` makes the
process that reaches that step stop itself there (SIGSTOP, :func:`kafka_format.output.publish.crash_point`);
the test waits for the stopped state, sends a real SIGINT -- to the ``klogs`` process alone, or to
its whole process group as a terminal's Ctrl-C does -- and lets the stopped process go on (SIGCONT),
so the interrupt lands at that exact step without any timing:

* ``retention:staged``: the local engine's report staged beside ``--out``, not yet published;
* ``pool:worker-started``: the local engine's worker processes (an audit of a log dir big enough
  for the pool) -- the group's Ctrl-C reaches the workers too;
* ``read:<topic>-<partition>``: a task starting to read
  that partition (in a Python worker), the driver waiting in the job that writes the export.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from testhelpers import own_spark_env

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
KLOGS = "import sys; from kafka_format.cli import main; sys.exit(main(sys.argv[1:]))"
STOPPED_WITHIN_S = 600.0


def _session_processes(sid: int) -> dict[int, str]:
    """pid -> state of every process of session ``sid``."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:
            found[int(entry)] = fields[0]
    return found


def interrupt_at(step: str, args: list[str], tmp_path: Path, *, group: bool, env: dict[str, str] | None = None,
                 stopped_seen: list[list[bool]] | None = None) -> tuple[subprocess.CompletedProcess[str], list[int]]:
    """Run ``klogs ARGS`` until a process of it stops at ``step``, SIGINT it (the process group when
    ``group``), let it go on; how it ended, and the processes of its session still there then.
    ``stopped_seen`` gets the stopped processes' SIGINT dispositions (True: ignored) as they were."""
    env = {**(env or os.environ), "KLA_STOP_AT": step, "KLOGS_LOG_DIR": str(tmp_path / "logs")}
    proc = subprocess.Popen([sys.executable, "-c", KLOGS, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + STOPPED_WITHIN_S
        stopped: list[int] = []
        while not stopped:
            assert proc.poll() is None, f"klogs ended before {step}: {proc.communicate()}"
            assert time.monotonic() < deadline, f"klogs never reached {step}"
            stopped = [pid for pid, state in _session_processes(proc.pid).items() if state == "T"]
            time.sleep(0.05)            # polling for a state, not waiting for one to come
        if stopped_seen is not None:
            stopped_seen.append([_ignores_sigint(pid) for pid in stopped])
        if group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGINT)
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        out, err = proc.communicate(timeout=300)
        left = sorted(_session_processes(proc.pid))
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)      # whatever of the session is left (a JVM)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), left


def _ignores_sigint(pid: int) -> bool:
    """Whether process ``pid`` ignores SIGINT (the kernel's SigIgn mask in /proc/PID/status)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        mask = next(int(line.split()[1], 16) for line in f if line.startswith("SigIgn:"))
    return bool(mask & (1 << (signal.SIGINT - 1)))


def assert_interrupted(done: subprocess.CompletedProcess[str], job: str) -> None:
    assert done.returncode == 130, done.stderr[-3000:]
    assert done.stderr.splitlines() == [f"klogs {job}: interrupted"], done.stderr[-3000:]


def _entries(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir())


def test_ctrl_c_before_the_report_is_published_keeps_the_previous_report(tmp_path: Path) -> None:
    out = tmp_path / "runs" / "retention"
    args = ["retention", str(SAMPLES), "--engine", "local", "--now", "2023-11-22T00:00:00Z", "--format", "table",
            "--out", str(out)]
    first = subprocess.run([sys.executable, "-c", KLOGS, *args], capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    done, _ = interrupt_at("retention:staged", [*args[:-4], "--now", "2023-11-29T00:00:00Z", "--out", str(out)],
                           tmp_path, group=False)
    assert_interrupted(done, "retention")
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert _entries(out.parent) == ["retention"]        # the staged report removed, the lock released


def test_ctrl_c_at_a_terminal_ends_the_local_engines_worker_processes_quietly(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "tests" / "jobs"))
    from test_export_job import write_log_dir

    logs = write_log_dir(tmp_path / "logs-in", counts=(3000, 3000))      # 240 segments: the pool's work
    out = tmp_path / "runs" / "audit"
    (tmp_path / "runs").mkdir()
    seen: list[list[bool]] = []
    done, left = interrupt_at("pool:worker-started", ["audit", str(logs), "--engine", "local", "--out", str(out)],
                              tmp_path, group=True, stopped_seen=seen)
    assert seen[0] and all(seen[0])                     # a worker leaves Ctrl-C to the job's process
    assert_interrupted(done, "audit")                   # no KeyboardInterrupt of any worker
    assert left == []                                   # the workers were ended and joined
    assert _entries(tmp_path / "runs") == []


@pytest.mark.spark
def test_ctrl_c_during_a_spark_export_stops_its_tasks_before_the_staged_output_is_removed(tmp_path: Path) -> None:
    """The Spark job writing the export is cancelled and its tasks have ended before the run removes
    the staging directory they write into: nothing is left beside ``--out``."""
    conf = tmp_path / "spark_conf"       # `klogs` reads the local profile: the suite's test one
    conf.mkdir()
    (conf / "local.conf").write_text((REPO / "spark_conf" / "test.conf").read_text())
    env = {**own_spark_env(), "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "KLOGS_SPARK_CONF_DIR": str(conf),
           "KLA_CRASH_AT": "none"}       # the source's test hooks are armed only with KLA_CRASH_AT set
    runs = tmp_path / "runs"
    runs.mkdir()
    done, _ = interrupt_at("read:compacted-0", ["export", str(SAMPLES), "--engine", "spark", "--master", "local[2]",
                                                   "--out", str(runs / "table")], tmp_path, group=True, env=env)
    assert_interrupted(done, "export")
    assert _entries(runs) == []                         # no table, no staging dir, no lock
