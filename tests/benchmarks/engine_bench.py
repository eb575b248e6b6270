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
  ``--engine spark --master local[1]``.  Per core = log bytes / CPU seconds of the whole process
  tree (the JVM and Spark's Python workers included: sampled from ``/proc`` every 50 ms, a
  lower bound off by at most that much per process), each engine's fixed start-up (the same job
  on a one-batch partition) subtracted.  CPU time, not wall time, so that other work on a shared
  machine does not count.  The bar is the local engine within 1.2x of Spark per core.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
NOW = "2023-11-16T22:13:20Z"
MIB = 1 << 20
SAMPLE_JOBS: dict[str, list[str]] = {
    "offsets": ["--timestamp", "latest", "--timestamp", "earliest"],
    "retention": ["--now", NOW],
    "compaction": ["--now", NOW, "--out", "{out}"],
    "audit": ["--now", NOW, "--out", "{out}", "--fail-on", "never"],
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
PROC_SAMPLE_S = 0.05

__all__ = ["sample_times", "throughput", "markdown", "main"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


def _tree_cpu(root: int, seen: dict[int, float]) -> None:
    """Record user + system seconds of ``root`` and its descendants (by /proc) into ``seen``."""
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
        times[int(name)] = (int(fields[11]) + int(fields[12])) / tick
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in tree:
                tree.add(child)
                frontier.append(child)
    for pid in tree:
        if pid in times:
            seen[pid] = max(seen.get(pid, 0.0), times[pid])


def _klogs(args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of ``klogs ARGS`` in a fresh interpreter (output discarded; must exit 0).
    CPU: the larger of the reaped children's rusage and the /proc samples of the process tree."""
    cmd = [sys.executable, "-c", "import sys; from kafka_format.cli import main; sys.exit(main(sys.argv[1:]))",
           *args]
    seen: dict[int, float] = {}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(), cwd=REPO)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(PROC_SAMPLE_S):
            _tree_cpu(proc.pid, seen)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"klogs {' '.join(args)} exited {proc.returncode}: {err.decode(errors='replace')[-800:]}")
    rusage = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, max(rusage, sum(seen.values()))


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
            for job, extra in SAMPLE_JOBS.items():
                wall, cpu = _klogs([*_args(job, SAMPLES, extra, Path(tmp) / job), "--engine", "local"])
                if round_ == 0:
                    continue                  # warm-up: bytecode, page cache
                w0, c0 = best.get(job, (float("inf"), float("inf")))
                best[job] = (min(w0, wall), min(c0, cpu))
    for job, (wall, cpu) in best.items():
        print(f"data_samples {job:10} local wall {wall:.2f} s, CPU {cpu:.2f} s", flush=True)
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


def throughput(data_dir: Path, size_mib: int, repeats: int = 1, jobs: list[str] | None = None
               ) -> list[dict[str, Any]]:
    """Per-core MB/s (log bytes per CPU second) of every job on one partition, both engines."""
    import spark_scan  # noqa: PLC0415  (benchmark-local module)

    big = large_partition(data_dir, size_mib)
    tiny = spark_scan._tiny_log_dir(data_dir)
    size = sum(p.stat().st_size for p in big.rglob("*.log"))
    engines = {"local": ["--engine", "local"], "spark": ["--engine", "spark", "--master", "local[1]"]}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(dir=data_dir) as tmp:
        for name in jobs or list(LARGE_JOBS):
            job, extra = LARGE_JOBS[name]
            row: dict[str, Any] = {"job": name, "bytes": size}
            for _ in range(repeats):                  # engines in turn: the machine's load hits both
                for engine, flags in engines.items():
                    wall0, cpu0 = _klogs([*_args(job, tiny, extra, Path(tmp) / "o"), *flags])
                    wall, cpu = _klogs([*_args(job, big, extra, Path(tmp) / "o"), *flags])
                    for key, value in ((f"{engine}_overhead_cpu_s", cpu0), (f"{engine}_cpu_s", cpu),
                                       (f"{engine}_wall_s", wall), (f"{engine}_overhead_wall_s", wall0)):
                        row[key] = min(row.get(key, float("inf")), value)
            for engine in engines:
                row[f"{engine}_mb_s"] = size / max(1e-3, row[f"{engine}_cpu_s"] - row[f"{engine}_overhead_cpu_s"]) / 1e6
            rows.append(row)
            print(f"{name:18} one {size / MIB:.0f} MiB partition: local {row['local_mb_s']:.1f} MB/s per core "
                  f"(CPU {row['local_cpu_s']:.1f} s - {row['local_overhead_cpu_s']:.1f} s), spark "
                  f"{row['spark_mb_s']:.1f} MB/s per core (CPU {row['spark_cpu_s']:.1f} s - "
                  f"{row['spark_overhead_cpu_s']:.1f} s); wall {row['local_wall_s']:.1f} s vs "
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
        lines += ["", f"One partition of {size_mib} MiB of record bytes (lz4 on disk; one task, so one core, on "
                  "either engine; Spark `--master local[1]`). Per core = log bytes / CPU seconds of the whole "
                  "process tree (Spark: the JVM and its Python workers), each engine's fixed start-up (the "
                  "same job on a one-batch partition) subtracted (bar: local within 1.2x of Spark):", "",
                  "| job | log bytes | local MB/s per core | Spark MB/s per core | Spark / local | local CPU (s) "
                  "| Spark CPU (s) | local wall (s) | Spark wall (s) | bar |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in rows:
            ratio = r["spark_mb_s"] / r["local_mb_s"]
            lines.append(f"| {r['job']} | {r['bytes'] / MIB:.0f} MiB | {r['local_mb_s']:.1f} | "
                         f"{r['spark_mb_s']:.1f} | {ratio:.2f}x | {r['local_cpu_s']:.1f} | {r['spark_cpu_s']:.1f} "
                         f"| {r['local_wall_s']:.1f} | {r['spark_wall_s']:.1f} | "
                         f"{'met' if ratio <= 1.2 else 'NOT met'} |")
    return lines + [""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=REPO / "build" / "bench-data")
    parser.add_argument("--size-mib", type=int, default=1024, help="record bytes of the large partition")
    parser.add_argument("--repeats", type=int, default=5, help="rounds on data_samples/")
    parser.add_argument("--large-repeats", type=int, default=1, help="rounds on the large partition")
    parser.add_argument("--jobs", default=None, help="comma-separated subset of the large-partition jobs")
    parser.add_argument("--no-spark", action="store_true", help="only the data_samples timings")
    args = parser.parse_args(argv)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    samples = sample_times(args.repeats)
    rows = [] if args.no_spark else throughput(args.data_dir, args.size_mib, args.large_repeats,
                                               args.jobs.split(",") if args.jobs else None)
    print("\n".join(markdown(samples, rows, size_mib=args.size_mib)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
