"""The jobs on the local engine vs Spark: ``python tests/benchmarks/engine_bench.py [--size-mib 1024]``.

Two measurements, printed as a Markdown section (``tests/benchmarks/run.py`` puts it in
``BENCHMARKS.md``):

* **a question in a second**: ``klogs offsets|retention|compaction|audit`` on ``data_samples/``
  with ``--engine local``, each in a fresh process (interpreter start, imports, discovery, the
  work, the output), the jobs run in turn in every round (a shared machine's load hits them
  alike), best wall time and best CPU time (user + system of the process and its children) of
  ``repeats`` rounds after one warm-up round; the bar is 1 s of wall time.  The package is run
  as installed (its bytecode compiled: the warm-up writes it even where
  ``PYTHONDONTWRITEBYTECODE`` is set in the caller's environment).
* **throughput per core on one large partition**: every job (offsets, retention, audit,
  compaction cleaner ``--force``, compaction ``--mode full``, export to Parquet) over one
  partition of ``--size-mib`` MiB of record bytes (:mod:`scale_gen`: lz4 batches of ~16 KiB,
  repeating keys, 5 % tombstones, 128 MiB segments with indexes), on ``--engine local`` and on
  ``--engine spark`` in a ``local[1]`` session.  Each engine runs in one warm process (the
  session started once) that runs every job on a one-batch partition and on the large one;
  per core = log bytes / (CPU seconds of the large run - of the one-batch run), CPU seconds of
  the whole process tree (the JVM and Spark's Python workers included, read from ``/proc``:
  live processes plus what they reaped).  CPU time, not wall time, so that other work on a
  shared machine does not count, and start-up (JVM, session, imports) is left out on both
  sides.  The bar is the local engine within 1.2x of Spark per core.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
NOW = "2023-11-16T22:13:20Z"
MIB = 1 << 20
SAMPLE_JOBS: dict[str, tuple[str, list[str]]] = {
    "offsets": ("offsets", ["--timestamp", "latest", "--timestamp", "earliest"]),
    "retention": ("retention", ["--now", NOW]),
    "retention --out (PNG chart)": ("retention", ["--now", NOW, "--out", "{out}"]),
    "compaction": ("compaction", ["--now", NOW, "--out", "{out}"]),
    "audit": ("audit", ["--now", NOW, "--out", "{out}", "--fail-on", "never"]),
}
# the jobs on one large partition: name -> (subcommand, flags)
LARGE_JOBS: dict[str, tuple[str, list[str]]] = {
    "offsets": ("offsets", ["--timestamp", "earliest", "--timestamp", "latest", "--timestamp", "1700000000500",
                            "--timestamp", "max-timestamp"]),
    "retention": ("retention", ["--now", NOW, "--config", "*:retention.ms=60000"]),
    "audit": ("audit", ["--now", NOW, "--out", "{out}", "--fail-on", "never"]),
    "compaction cleaner": ("compaction", ["--now", NOW, "--out", "{out}", "--config", "*:cleanup.policy=compact",
                                          "--force"]),
    "compaction full": ("compaction", ["--now", NOW, "--out", "{out}", "--mode", "full"]),
    "export": ("export", ["--out", "{out}"]),
}

__all__ = ["main", "markdown", "sample_times", "throughput"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


@dataclass(frozen=True)
class KlogsRun:
    """One ``klogs`` run: wall and CPU seconds (the process and the children it waited for: the
    local engine's pool) and the peak RSS of the driver process itself (its own ``VmHWM``: see
    ``peak_memory``)."""

    wall: float
    cpu: float
    driver_mb: float


_MAXRSS = "klogs-driver-maxrss-kb "


def klogs_run(args: list[str]) -> KlogsRun:
    """``klogs ARGS`` in a fresh interpreter (output discarded; must exit 0), measured."""
    cmd = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(BENCH_DIR)!r}); "
           "from peak_memory import peak_rss_bytes; from kafka_format.cli import main; rc = main(sys.argv[1:]); "
           f"sys.stderr.write('\\n{_MAXRSS}%d\\n' % (peak_rss_bytes() // 1024)); "
           "sys.exit(rc)", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(), cwd=REPO)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    err = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"klogs {' '.join(args)} exited {proc.returncode}: {err[-800:]}")
    kb = [int(line[len(_MAXRSS):]) for line in err.splitlines() if line.startswith(_MAXRSS)]
    return KlogsRun(wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
                    kb[-1] / 1024 if kb else float("nan"))


def _klogs(args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of ``klogs ARGS`` (:func:`klogs_run`)."""
    run = klogs_run(args)
    return run.wall, run.cpu


def _args(job: str, logdir: Path, extra: list[str], out: Path) -> list[str]:
    if out.exists():
        shutil.rmtree(out) if out.is_dir() else out.unlink()
    return [job, str(logdir), *[a.replace("{out}", str(out)) for a in extra]]


def sample_times(repeats: int = 5) -> dict[str, tuple[float, float]]:
    """Best (wall, CPU) seconds of each job on ``data_samples/`` with ``--engine local`` in a fresh
    process, the jobs interleaved, after a warm-up round."""
    best: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(repeats + 1):
            for name, (job, extra) in SAMPLE_JOBS.items():
                wall, cpu = _klogs([*_args(job, SAMPLES, extra, Path(tmp) / job), "--engine", "local"])
                if round_ == 0:
                    continue                  # warm-up: bytecode, page cache
                w0, c0 = best.get(name, (float("inf"), float("inf")))
                best[name] = (min(w0, wall), min(c0, cpu))
    for job, (wall, cpu) in best.items():
        print(f"data_samples {job:28} local wall {wall:.2f} s, CPU {cpu:.2f} s", flush=True)
    return best


def large_partition(data_dir: Path, size_mib: int) -> Path:
    """One broker log dir holding one partition of ``size_mib`` MiB of record bytes (reused)."""
    import scale_gen  # noqa: PLC0415  (benchmark-local module)

    root = data_dir / f"engine-1p-{size_mib}m"
    log_dir = root / "broker-1"
    if (log_dir / "meta.properties").is_file():
        return log_dir
    if root.exists():
        shutil.rmtree(root)
    scale_gen.generate(root, scale_gen.ScaleLayout("1p", (size_mib * MIB,)))
    return log_dir


def _tree_total(root: int) -> float:
    """CPU seconds spent so far by ``root`` and every descendant: the live processes' own time plus
    what they reaped from finished children (``/proc/PID/stat`` utime, stime, cutime, cstime)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        parents[int(name)] = int(fields[1])
        times[int(name)] = sum(int(x) for x in fields[11:15]) / tick
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(times.get(pid, 0.0) for pid in tree)


def _inner(engine: str, jobs: list[str], big: Path, tiny: Path, repeats: int) -> None:
    """In one process (a warm interpreter; for Spark one ``local[1]`` session started once): each
    job on the one-batch partition and on the large one, ``repeats`` times; one JSON line per job
    with the best CPU seconds of the process tree for each (and the wall seconds of the large run)."""
    import json

    from kafka_format.cli import main as klogs

    if engine == "spark":
        from kafka_format.spark import register
        from kafka_format.spark.session import build_session

        register(build_session(master="local[1]", profile="local", app_name="klogs engine bench",
                               extra_conf={"spark.ui.enabled": "false"}))
    flags = ["--engine", engine]
    me = os.getpid()
    with tempfile.TemporaryDirectory(dir=big.parent.parent) as tmp:
        out = Path(tmp) / "o"

        def run(job: str, extra: list[str], logdir: Path) -> tuple[float, float]:
            args = _args(job, logdir, extra, out)
            c0, w0 = _tree_total(me), time.perf_counter()
            with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
                code = klogs([*args, *flags])
            c1, w1 = _tree_total(me), time.perf_counter()
            if code not in (0, 1):
                raise RuntimeError(f"klogs {' '.join(args)} exited {code}")
            return c1 - c0, w1 - w0

        for name in jobs:
            job, extra = LARGE_JOBS[name]
            run(job, extra, tiny)                                     # warm-up: imports, JIT, caches
            best = {"tiny": float("inf"), "big": float("inf"), "wall": float("inf")}
            for _ in range(repeats):
                best["tiny"] = min(best["tiny"], run(job, extra, tiny)[0])
                cpu, wall = run(job, extra, big)
                best["big"], best["wall"] = min(best["big"], cpu), min(best["wall"], wall)
            print("RESULT " + json.dumps({"job": name, **best}), flush=True)


#: Least CPU seconds beyond the one-batch run, on both engines, for a job to be compared per core.
MIN_WORK_CPU_S = 0.5


def throughput(data_dir: Path, size_mib: int, repeats: int = 2, jobs: list[str] | None = None
               ) -> list[dict[str, Any]]:
    """Per-core MB/s (log bytes per CPU second of the whole process tree) of every job on one
    partition, both engines: each engine in its own warm process (:func:`_inner`), the same job
    on a one-batch partition subtracted, so that start-up (the JVM, the session, imports) is not
    counted."""
    import json

    import spark_scan  # noqa: PLC0415  (benchmark-local module)

    big = large_partition(data_dir, size_mib)
    tiny = spark_scan._tiny_log_dir(data_dir)
    size = sum(p.stat().st_size for p in big.rglob("*.log"))
    names = jobs or list(LARGE_JOBS)
    measured: dict[str, dict[str, dict[str, float]]] = {}
    for engine in ("local", "spark"):
        cmd = [sys.executable, __file__, "--inner", engine, "--jobs", ",".join(names), "--big", str(big),
               "--tiny", str(tiny), "--large-repeats", str(repeats)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=REPO)
        if proc.returncode != 0:
            raise RuntimeError(f"{engine} engine bench failed: {proc.stderr[-2000:]}")
        for line in proc.stdout.splitlines():
            if line.startswith("RESULT "):
                r = json.loads(line[7:])
                measured.setdefault(r["job"], {})[engine] = r
    rows: list[dict[str, Any]] = []
    for name in names:
        row: dict[str, Any] = {"job": name, "bytes": size}
        for engine in ("local", "spark"):
            r = measured[name][engine]
            row[f"{engine}_cpu_s"], row[f"{engine}_overhead_cpu_s"], row[f"{engine}_wall_s"] = r["big"], r["tiny"], r["wall"]
            row[f"{engine}_mb_s"] = size / max(1e-3, r["big"] - r["tiny"]) / 1e6
        rows.append(row)
        print(f"{name:18} one {size / MIB:.0f} MiB partition: local {row['local_mb_s']:.1f} MB/s per core "
              f"(CPU {row['local_cpu_s']:.1f} s - {row['local_overhead_cpu_s']:.2f} s), spark "
              f"{row['spark_mb_s']:.1f} MB/s per core (CPU {row['spark_cpu_s']:.1f} s - "
              f"{row['spark_overhead_cpu_s']:.2f} s); wall {row['local_wall_s']:.1f} s vs "
              f"{row['spark_wall_s']:.1f} s", flush=True)
    return rows


def markdown(samples: dict[str, tuple[float, float]], rows: list[dict[str, Any]], *, size_mib: int = 0
             ) -> list[str]:
    """The ``BENCHMARKS.md`` section."""
    load = os.getloadavg()
    lines = ["## Engines: local vs Spark", "",
             f"`klogs JOB data_samples/ --engine local`, each run a fresh process (interpreter start, imports, "
             f"discovery, the work, the output), bytecode compiled, jobs interleaved, best of the rounds "
             f"(bar: 1 s of wall time). Load average at the end: {load[0]:.1f} on {os.cpu_count()} cores "
             f"(a shared machine: wall time includes waiting for a core, CPU time does not):", "",
             "| job | wall (s) | CPU (s) | bar |", "|---|---:|---:|---|"]
    for job, (wall, cpu) in samples.items():
        lines.append(f"| {job} | {wall:.2f} | {cpu:.2f} | {'met' if wall <= 1.0 else 'NOT met'} |")
    if rows:
        lines += ["", f"One partition of {size_mib} MiB of record bytes (lz4 on disk). Each engine in one warm "
                  "process (Spark: one `local[1]` session); per core = log bytes / CPU seconds of the whole "
                  "process tree (Spark: the JVM and its Python workers) of the run, minus the same job's on a "
                  "one-batch partition (bar: local within 1.2x of Spark):", "",
                  "| job | log bytes | local MB/s per core | Spark MB/s per core | Spark / local | local CPU (s) "
                  "| Spark CPU (s) | local wall (s) | Spark wall (s) | bar |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in rows:
            net = {e: r[f"{e}_cpu_s"] - r[f"{e}_overhead_cpu_s"] for e in ("local", "spark")}
            times = (f"{r['local_cpu_s']:.1f} | {r['spark_cpu_s']:.1f} | {r['local_wall_s']:.1f} | "
                     f"{r['spark_wall_s']:.1f}")
            if min(net.values()) < MIN_WORK_CPU_S:    # a few clock ticks: the difference is noise
                lines.append(f"| {r['job']} | {r['bytes'] / MIB:.0f} MiB | ({net['local'] * 1e3:.0f} ms of work) | "
                             f"({net['spark'] * 1e3:.0f} ms of work) | - | {times} | - |")
                continue
            ratio = r["spark_mb_s"] / r["local_mb_s"]
            lines.append(f"| {r['job']} | {r['bytes'] / MIB:.0f} MiB | {r['local_mb_s']:.1f} | "
                         f"{r['spark_mb_s']:.1f} | {ratio:.2f}x | {times} | {'met' if ratio <= 1.2 else 'NOT met'} |")
        lines += ["", f"A job with less than {MIN_WORK_CPU_S} s of CPU on either engine beyond the one-batch run "
                  "is not compared: CPU time comes in 10 ms ticks, and the one-batch run's own variation is of "
                  "that order, so its MB/s would be noise (use a larger `--size-mib`)."]
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=REPO / "build" / "bench-data")
    parser.add_argument("--size-mib", type=int, default=1024, help="record bytes of the large partition")
    parser.add_argument("--repeats", type=int, default=5, help="rounds on data_samples/")
    parser.add_argument("--large-repeats", type=int, default=2, help="rounds on the large partition")
    parser.add_argument("--jobs", default=None, help="comma-separated subset of the large-partition jobs")
    parser.add_argument("--no-spark", action="store_true", help="only the data_samples timings")
    parser.add_argument("--no-samples", action="store_true", help="only the large partition")
    parser.add_argument("--inner", choices=("local", "spark"), help=argparse.SUPPRESS)
    parser.add_argument("--big", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--tiny", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    jobs = args.jobs.split(",") if args.jobs else list(LARGE_JOBS)
    if args.inner:
        _inner(args.inner, jobs, args.big, args.tiny, args.large_repeats)
        return 0
    args.data_dir.mkdir(parents=True, exist_ok=True)
    samples = {} if args.no_samples else sample_times(args.repeats)
    rows = [] if args.no_spark else throughput(args.data_dir, args.size_mib, args.large_repeats, jobs)
    print("\n".join(markdown(samples, rows, size_mib=args.size_mib)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
