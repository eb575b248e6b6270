"""``make bench-scale``: every job on generated log dirs of 1, 4 and 16 GB (uncompressed), each as a
user runs it (``klogs JOB``, its own process, ``local[2]``, a 1 GB driver), timed and watched.

Per run: wall time, CPU time of the whole process tree (the klogs process, the JVM, the Python
workers: user + system of each, as last sampled), records/s per core
(records in the log dir / wall / 2 cores) and per CPU second, the peak resident memory of the
driver JVM and the peak summed resident memory of the Python workers (the PySpark daemon and its
workers; sampled from /proc every 0.2 s), and the exit code.  CPU time is the figure to read on a
shared machine: waiting for a core does not count in it.  Results
are one section of BENCHMARKS.md (sizes actually run are listed), after ``make bench``'s report:
each invocation replaces the section of the previous one, which moves to the top of
BENCHMARKS-history.md.
Generated data lives under ``--data`` and is removed after each size unless ``--keep``.

    python tests/benchmarks/scale.py --sizes 1g,4g --out BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_gen  # noqa: E402  (benchmark-local module)

REPO = Path(__file__).resolve().parents[2]
CORES = 2
CONF = """spark.master                                    local[2]
spark.sql.session.timeZone                      UTC
spark.sql.execution.arrow.pyspark.enabled       true
spark.sql.shuffle.partitions                    16
spark.driver.memory                             1g
spark.python.worker.reuse                       true
spark.ui.showConsoleProgress                    false
spark.ui.enabled                                false
"""


@dataclass
class Run:
    size: str
    job: str
    wall_s: float
    cpu_s: float
    exit_code: int
    jvm_peak_mb: float
    python_peak_mb: float
    records: int
    error: str


def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


def _tree(pid: int) -> list[int]:
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += _children(p)
    return seen


_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_ticks(pid: int) -> int:
    """utime + stime of ``pid`` itself, in clock ticks (what it reaped is sampled on its own)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])        # utime, stime
    except (OSError, IndexError, ValueError):
        return 0


def _rss_and_cmd(pid: int) -> tuple[int, str]:
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        return rss * 1024, cmd
    except OSError:
        return 0, ""


def _watch(proc: subprocess.Popen[bytes], peaks: dict[str, int], stop: threading.Event,
           extra_roots: tuple[int, ...] = (), cpu: dict[int, int] | None = None) -> None:
    """Sample the job's process tree (and, on a standalone cluster, the worker's children: the
    executor JVM and its Python workers; the cluster's own daemons are not counted).  ``cpu``
    collects each process's latest CPU ticks (the worker daemon's own are left out)."""
    roots = (proc.pid, *extra_roots)
    while not stop.is_set():
        jvm = py = 0
        for pid in (p for root in roots for p in _tree(root)):
            if cpu is not None and pid not in extra_roots:
                cpu[pid] = max(cpu.get(pid, 0), _cpu_ticks(pid))
            if pid in roots:
                continue                      # the klogs driver process itself (its Python), the worker daemon
            rss, cmd = _rss_and_cmd(pid)
            if "java" in cmd.split(" ")[0]:
                jvm += rss
            elif "pyspark.daemon" in cmd or "pyspark.worker" in cmd or "python" in cmd.split(" ")[0]:
                py += rss
        peaks["jvm"] = max(peaks["jvm"], jvm)
        peaks["py"] = max(peaks["py"], py)
        stop.wait(0.2)


def run_job(size: str, job: str, argv: list[str], conf_dir: Path, records: int,
            extra_roots: tuple[int, ...] = ()) -> Run:
    env = {**os.environ, "KLOGS_SPARK_CONF_DIR": str(conf_dir), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    klogs = Path(sys.executable).parent / "klogs"
    # a standalone worker's children may still hold the previous job's executor: only what they
    # spend from now on is this job's
    baseline = {pid: _cpu_ticks(pid) for root in extra_roots for pid in _tree(root)}
    start = time.monotonic()
    proc = subprocess.Popen([str(klogs), *argv], env=env, cwd=str(REPO), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    peaks = {"jvm": 0, "py": 0}
    cpu: dict[int, int] = {}
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(proc, peaks, stop, extra_roots, cpu), daemon=True)
    watcher.start()
    _, err = proc.communicate()
    wall = time.monotonic() - start
    stop.set()
    watcher.join()
    # each process's last sample (at most 0.2 s of each is missed), less what it had spent before
    cpu_s = sum(max(0, ticks - baseline.get(pid, 0)) for pid, ticks in cpu.items()) / _TICK
    lines = [ln for ln in err.decode(errors="replace").splitlines() if ln.startswith("klogs ")]
    return Run(size, job, wall, cpu_s, proc.returncode, peaks["jvm"] / 2**20, peaks["py"] / 2**20, records,
               lines[-1] if (lines and proc.returncode) else "")


def jobs(logdir: Path, out: Path, engine: str = "spark") -> list[tuple[str, list[str]]]:
    """(label, klogs argv) per job; ``--engine`` as given (``spark``: local[2] from the conf, as the
    issue asks; ``auto`` would pick the JVM-free local engine below 1 GiB of segments)."""
    d = str(logdir)
    compact = ["--config", "*:cleanup.policy=compact"]
    eng = ["--engine", engine]
    return [
        ("offsets", ["offsets", d, "--timestamp", "latest", "--out", str(out / "offsets.jsonl"), *eng]),
        ("retention", ["retention", d, "--out", str(out / "retention.jsonl"), *eng]),
        ("audit", ["audit", d, "--out", str(out / "audit"), "--fail-on", "never", *eng]),
        ("compaction cleaner --write-segments", ["compaction", d, *compact, "--force", "--write-segments",
                                                 "--out", str(out / "cleaner"), *eng]),
        ("compaction full", ["compaction", d, "--mode", "full", "--out", str(out / "full"), *eng]),
        ("export parquet", ["export", d, "--format", "parquet", "--out", str(out / "export-parquet"), *eng]),
        ("export delta", ["export", d, "--format", "delta", "--out", str(out / "export-delta"),
                          *(eng if engine != "local" else [])]),
    ]


def markdown(runs: list[Run], sizes: list[str], notes: list[str]) -> str:
    lines = ["", "## Scale: every job on generated log dirs (make bench-scale)", "",
             f"Sizes run: {', '.join(sizes)} (uncompressed record bytes; layouts in tests/benchmarks/scale_gen.py). "
             "`klogs JOB` in its own process, local[2], spark.driver.memory 1g. Memory = peak resident set "
             "(driver JVM; sum of the PySpark daemon and workers). Records/s/core = records in the log dir "
             "/ wall / 2; CPU s = user + system of the whole process tree (klogs, JVM, Python workers), "
             "records/CPU s = records / CPU s: the figure to compare on a shared machine.", ""]
    lines += [*notes, ""]
    lines += ["| size | job | wall s | CPU s | records/s/core | records/CPU s | JVM peak MB | Python workers peak MB | exit |",
              "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in runs:
        rate = r.records / r.wall_s / CORES if r.exit_code == 0 else 0
        per_cpu = r.records / r.cpu_s if r.exit_code == 0 and r.cpu_s else 0
        lines.append(f"| {r.size} | {r.job} | {r.wall_s:.1f} | {r.cpu_s:.1f} | {rate:,.0f} | {per_cpu:,.0f} | {r.jvm_peak_mb:,.0f} | "
                     f"{r.python_peak_mb:,.0f} | {r.exit_code}{(' ' + r.error.replace('|', '/')) if r.error else ''} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1g,4g,16g", help="comma-separated: " + ",".join(scale_gen.LAYOUTS))
    parser.add_argument("--jobs", default="", help="comma-separated job labels to run (default all)")
    parser.add_argument("--data", default=None, help="where to generate (default: a temp dir)")
    parser.add_argument("--out", default=str(REPO / "BENCHMARKS.md"))
    parser.add_argument("--keep", action="store_true", help="keep the generated data")
    parser.add_argument("--engine", default="spark", choices=["spark", "local", "auto"],
                        help="--engine of every job (default spark: local[2] from the conf)")
    parser.add_argument("--standalone", action="store_true",
                        help="run on a standalone master + worker (2 cores, 1 GB executor) started from the pyspark "
                             "install on 127.0.0.1, stopped at the end")
    args = parser.parse_args(argv)
    sizes = [s for s in args.sizes.split(",") if s]
    data = Path(args.data or tempfile.mkdtemp(prefix="klogs-scale-"))
    runs: list[Run] = []
    notes: list[str] = []
    conf_dir = data / ("conf-standalone" if args.standalone else "conf")
    conf_dir.mkdir(parents=True, exist_ok=True)
    cluster = None
    extra_roots: tuple[int, ...] = ()
    if args.standalone:
        sys.path.insert(0, str(REPO / "tests" / "spark"))
        from clusters import StandaloneCluster

        (data / "cluster").mkdir(exist_ok=True)
        cluster = StandaloneCluster(data / "cluster", cores=CORES, memory="1g").start()
        extra_roots = (cluster.procs[-1].pid,)       # the worker: its executors are its children
        (conf_dir / "local.conf").write_text(CONF.replace("local[2]", str(cluster.url))
                                             + "spark.executor.memory                           1g\n")
    else:
        (conf_dir / "local.conf").write_text(CONF)
    try:
        _run_sizes(args, sizes, data, conf_dir, runs, notes, extra_roots)
    finally:
        if cluster is not None:
            cluster.stop()
    if args.standalone:
        notes.append("- on a standalone cluster (master + one worker with 2 cores, executor memory 1 GB, 127.0.0.1); "
                     "memory columns: the driver JVM plus the executor JVM, the executor's Python workers")
    from shapes import update_section  # the section it replaces goes to the history

    update_section(Path(args.out), [*markdown(runs, sizes, notes).strip("\n").splitlines(), ""], before=None)
    if not args.keep and args.data is None:
        shutil.rmtree(data, ignore_errors=True)
    return 0


def _run_sizes(args: argparse.Namespace, sizes: list[str], data: Path, conf_dir: Path, runs: list[Run],
               notes: list[str], extra_roots: tuple[int, ...]) -> None:
    for size in sizes:
        root = data / size
        t0 = time.monotonic()
        cached = data / f"{size}.totals.json"
        if args.keep and cached.is_file() and root.is_dir():
            totals = json.loads(cached.read_text())          # kept from an earlier --keep run
        else:
            shutil.rmtree(root, ignore_errors=True)
            totals = scale_gen.generate(root, scale_gen.LAYOUTS[size])
            totals["generated_s"] = int(time.monotonic() - t0)
            cached.write_text(json.dumps(totals))
        notes.append(f"- {size}: {totals['records']:,} records, {totals['record_bytes'] / 2**30:.2f} GiB of keys+values, "
                     f"{totals['log_bytes'] / 2**30:.2f} GiB of lz4 segments, partitions of "
                     f"{', '.join(f'{b / 2**30:.2f}' for b in scale_gen.LAYOUTS[size].partition_bytes)} GiB "
                     f"(generated in {totals.get('generated_s', 0)} s)")
        out = data / (f"out-{size}-standalone" if args.standalone else f"out-{size}")
        out.mkdir(exist_ok=True)
        for label, job_argv in jobs(root / "broker-1", out, args.engine):
            if args.jobs and label not in args.jobs.split(","):
                continue
            shown = label if args.engine == "spark" else f"{label} (--engine {args.engine})"
            run = run_job(size, shown, job_argv, conf_dir, totals["records"], extra_roots)
            print(f"{size} {label}: {run.wall_s:.1f} s cpu {run.cpu_s:.1f} s exit {run.exit_code} jvm {run.jvm_peak_mb:.0f} MB "
                  f"py {run.python_peak_mb:.0f} MB {run.error}", flush=True)
            runs.append(run)
            with open(data / "runs.jsonl", "a", encoding="utf-8") as log:   # survives an interrupted run
                log.write(json.dumps({**run.__dict__, "standalone": bool(args.standalone)}) + "\n")
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(exist_ok=True)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
