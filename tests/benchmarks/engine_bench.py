"""The jobs on the local engine vs Spark: ``python tests/benchmarks/engine_bench.py [--size-mib 256]``.

Two measurements, printed as a Markdown section (``tests/benchmarks/run.py`` puts it in
``BENCHMARKS.md``):

* **a question in a second**: ``klogs offsets|retention|compaction|audit`` on ``data_samples/``
  with ``--engine local``, each in a fresh process (interpreter start, imports, discovery, the
  work, the output), best wall time of ``repeats``; the bar is 1 s;
* **throughput per core on one large partition**: ``klogs audit`` (every record decoded and
  checked) and ``klogs compaction --force`` (the cleaner, records to Parquet) over one partition
  of the benchmark corpus (:mod:`gen`), on ``--engine local`` and on ``--engine spark --master
  local[1]``.  A partition is one task on both engines, so one core works on it either way: per
  core = log bytes / wall seconds, each engine's fixed start-up excluded (the same job on a
  one-batch partition, measured apart and subtracted: the JVM and session for Spark, the
  interpreter and imports for local).  The bar is the local engine within 1.2x of Spark per core.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
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

__all__ = ["sample_times", "throughput", "markdown", "main"]


def _klogs(args: list[str]) -> float:
    """Wall seconds of ``klogs ARGS`` in a fresh interpreter (output discarded; must exit 0)."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    cmd = [sys.executable, "-c", "import sys; from kafka_format.cli import main; sys.exit(main(sys.argv[1:]))",
           *args]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"klogs {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return wall


def _args(job: str, logdir: Path, extra: list[str], out: Path) -> list[str]:
    if out.exists():
        shutil.rmtree(out)
    return [job, str(logdir), *[a.replace("{out}", str(out)) for a in extra]]


def sample_times(repeats: int = 3) -> dict[str, float]:
    """Best wall seconds of each job on ``data_samples/`` with ``--engine local`` in a fresh process."""
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for job, extra in SAMPLE_JOBS.items():
            times = [_klogs([*_args(job, SAMPLES, extra, Path(tmp) / job), "--engine", "local"])
                     for _ in range(repeats)]
            out[job] = min(times)
            print(f"data_samples {job:10} local {out[job]:.2f} s", flush=True)
    return out


def throughput(data_dir: Path, size_mib: int, repeats: int = 2) -> list[dict[str, Any]]:
    """Per-core MB/s of audit and compaction on one partition of ``size_mib`` on both engines."""
    import spark_scan  # noqa: PLC0415  (benchmark-local module)

    big = spark_scan.make_log_dir(data_dir, "none", size_mib, 1)
    tiny = spark_scan._tiny_log_dir(data_dir)
    size = sum(p.stat().st_size for p in big.rglob("*.log"))
    jobs = {"audit": ["--now", NOW, "--out", "{out}", "--fail-on", "never"],
            "compaction": ["--now", NOW, "--out", "{out}", "--config", "*:cleanup.policy=compact", "--force"]}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for job, extra in jobs.items():
            spark_flags = ["--engine", "spark", "--master", "local[1]"]
            overhead = min(_klogs([*_args(job, tiny, extra, Path(tmp) / "o"), *spark_flags])
                           for _ in range(repeats))
            local_overhead = min(_klogs([*_args(job, tiny, extra, Path(tmp) / "t"), "--engine", "local"])
                                 for _ in range(repeats))
            local = min(_klogs([*_args(job, big, extra, Path(tmp) / "l"), "--engine", "local"])
                        for _ in range(repeats))
            spark = min(_klogs([*_args(job, big, extra, Path(tmp) / "s"), *spark_flags])
                        for _ in range(repeats))
            row = {"job": job, "bytes": size, "local_s": local, "spark_s": spark, "spark_overhead_s": overhead,
                   "local_overhead_s": local_overhead,
                   "local_mb_s": size / max(1e-3, local - local_overhead) / 1e6,
                   "spark_mb_s": size / max(1e-3, spark - overhead) / 1e6}
            rows.append(row)
            print(f"{job:10} one {size / MIB:.0f} MiB partition: local {row['local_mb_s']:.1f} MB/s per core, "
                  f"spark {row['spark_mb_s']:.1f} MB/s per core (start-up {overhead:.1f} s excluded)", flush=True)
    return rows


def markdown(samples: dict[str, float], rows: list[dict[str, Any]]) -> list[str]:
    """The ``BENCHMARKS.md`` section."""
    lines = ["## Engines: local vs Spark", "",
             "`klogs JOB data_samples/ --engine local`, each run a fresh process (interpreter start, imports, "
             "discovery, the work, the output), best wall time (bar: 1 s):", "",
             "| job | wall (s) | bar |", "|---|---:|---|"]
    for job, wall in samples.items():
        lines.append(f"| {job} | {wall:.2f} | {'met' if wall <= 1.0 else 'NOT met'} |")
    if rows:
        lines += ["", "One large partition (one task, so one core, on either engine; Spark `local[1]`); each "
                  "engine's fixed start-up (the same job on a one-batch partition) subtracted; per core = log "
                  "bytes / wall seconds (bar: local within 1.2x of Spark):", "",
                  "| job | partition | local MB/s per core | Spark MB/s per core | Spark / local | bar |",
                  "|---|---:|---:|---:|---:|---|"]
        for r in rows:
            ratio = r["spark_mb_s"] / r["local_mb_s"]
            lines.append(f"| {r['job']} | {r['bytes'] / MIB:.0f} MiB | {r['local_mb_s']:.1f} | "
                         f"{r['spark_mb_s']:.1f} | {ratio:.2f}x | {'met' if ratio <= 1.2 else 'NOT met'} |")
    return lines + [""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=REPO / "build" / "bench-data")
    parser.add_argument("--size-mib", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-spark", action="store_true", help="only the data_samples timings")
    args = parser.parse_args(argv)
    samples = sample_times(args.repeats)
    rows = [] if args.no_spark else throughput(args.data_dir, args.size_mib, max(1, args.repeats - 1))
    print("\n".join(markdown(samples, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
