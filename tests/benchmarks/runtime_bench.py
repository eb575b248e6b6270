"""The job runtime's targets: ``klogs JOB --engine spark`` against ``--engine local``, as users run
them, by the CPU of the whole process tree (:mod:`treecpu`: the driver, its JVM, Spark's Python
workers and every process they leave behind, counted by a cgroup of their own).

``python tests/benchmarks/runtime_bench.py [--rounds 3] [--master local[2]] [--out FILE]`` prints
(or writes) a Markdown section; :func:`run` returns the rows for ``tests/benchmarks/run.py``.

Per corpus shape (a 1 MB log dir for the fixed cost; larger ones of several shapes for the cost
per byte), in interleaved rounds (a load change hits every command alike), the median of each:

* ``plain session``: a Python process that starts a plain local SparkSession and stops it -- what
  any Spark job pays at least;
* ``export --engine spark`` / ``--engine local`` of the log dir to Parquet, and the same for
  ``offsets``, ``retention`` and ``audit``;
* the targets: CPU beyond the fixed cost (the same job on the 1 MB log dir) within 1.5x of the local
  engine's beyond its own; the 1 MB Spark export within 3 s of the plain session; the Spark
  export's wall time within 1.3x of the local one's plus one plain-session start.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from spark_scan import make_log_dir  # noqa: E402  (benchmark-local modules beside this file)
from treecpu import measure  # noqa: E402

__all__ = ["SHAPES", "main", "markdown", "run"]

REPO = HERE.parents[1]
PLAIN_SESSION = ("from pyspark.sql import SparkSession; "
                 "s = SparkSession.builder.master({master!r}).getOrCreate(); s.range(1).count(); s.stop()")


@dataclass(frozen=True)
class Shape:
    """A corpus shape: ``codec`` records (tests/benchmarks/gen.py) of ``size_mib`` MiB over
    ``partitions`` partitions."""

    name: str
    codec: str
    size_mib: int
    partitions: int


SHAPES = (
    Shape("lz4, 4 partitions", "lz4", 2048, 4),             # ~0.9 GB of log
    Shape("uncompressed, 2 partitions", "none", 1024, 2),
    Shape("zstd, 16 partitions", "zstd", 1024, 16),         # ~0.4 GB of log
)
TINY = Shape("1 MB, 1 partition", "none", 1, 1)


def _klogs(job: str, log_dir: Path, out: Path | None, engine: str, master: str) -> list[str]:
    cmd = [str(Path(sys.executable).parent / "klogs"), job, str(log_dir), "--engine", engine]
    if engine == "spark":
        cmd += ["--master", master]
    if out is not None:
        cmd += ["--out", str(out)]
    if job == "offsets":            # earliest, latest and a lookup by time per partition
        cmd += ["--timestamp", "earliest", "--timestamp", "latest", "--timestamp", "1700000000000"]
    if job == "audit":
        cmd += ["--fail-on", "never"]
    return cmd


def _once(cmd: list[str], out: Path | None) -> tuple[float, float]:
    if out is not None:
        shutil.rmtree(out, ignore_errors=True)
    r = measure(cmd, env={**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable},
                cwd=str(REPO))
    findings = len(cmd) > 1 and cmd[1] in ("audit", "retention")      # exit 1: the job found something
    if r.rc != 0 and not (findings and r.rc == 1):
        raise RuntimeError(f"{' '.join(cmd)} exited {r.rc}")
    if not r.exact:
        raise RuntimeError("no cgroup to measure in (run as root on Linux): without one, the CPU of PySpark's "
                           "workers is not counted (treecpu.py says why)")
    return r.cpu_s, r.wall_s


def run(data_dir: Path, *, rounds: int = 3, master: str = "local[2]", jobs: tuple[str, ...] = ("export",),
        shapes: tuple[Shape, ...] = SHAPES) -> list[dict[str, object]]:
    """The medians of ``rounds`` interleaved runs of every command (see the module doc)."""
    work = data_dir / "runtime-bench"
    work.mkdir(parents=True, exist_ok=True)
    dirs = {s: make_log_dir(data_dir, s.codec, s.size_mib, s.partitions) for s in (TINY, *shapes)}
    commands: dict[tuple[str, str, str], tuple[list[str], Path | None]] = {
        ("plain session", TINY.name, "spark"): ([sys.executable, "-c", PLAIN_SESSION.format(master=master)], None)}
    for s, log_dir in dirs.items():
        for job in jobs:
            for engine in ("local", "spark"):
                out = work / f"{job}-{engine}" if job in ("export", "retention", "audit") else None
                commands[(job, s.name, engine)] = (_klogs(job, log_dir, out, engine, master), out)
    samples: dict[tuple[str, str, str], list[tuple[float, float]]] = {k: [] for k in commands}
    for cmd, out in commands.values():         # warm-up: page cache, Ivy, compiled caches
        _once(cmd, out)
    for _ in range(rounds):
        for key, (cmd, out) in commands.items():
            samples[key].append(_once(cmd, out))
    shutil.rmtree(work, ignore_errors=True)
    rows = []
    for (job, shape, engine), got in samples.items():
        rows.append({"job": job, "shape": shape, "engine": engine,
                     "cpu_s": statistics.median(c for c, _ in got), "wall_s": statistics.median(w for _, w in got),
                     "bytes": sum(p.stat().st_size for p in dirs[next(s for s in dirs if s.name == shape)].rglob("*.log"))})
    return rows


def _get(rows: list[dict[str, object]], job: str, shape: str, engine: str) -> dict[str, object]:
    return next(r for r in rows if (r["job"], r["shape"], r["engine"]) == (job, shape, engine))


def markdown(rows: list[dict[str, object]], master: str) -> str:
    """The section: every command's CPU and wall time, then the targets per shape."""
    lines = [f"## Job runtime: Spark ({master}) against the local engine, whole process tree", "",
             "| job | corpus | engine | log MB | CPU s | wall s |", "|---|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['job']} | {r['shape']} | {r['engine']} | {int(r['bytes']) / 1e6:,.1f} | "  # type: ignore[call-overload]
                     f"{float(r['cpu_s']):.2f} | {float(r['wall_s']):.2f} |")  # type: ignore[arg-type]
    plain = _get(rows, "plain session", TINY.name, "spark")
    lines += ["", "| target | corpus | measured | bar | met |", "|---|---|---|---|---|"]
    jobs = sorted({str(r["job"]) for r in rows} - {"plain session"})
    for job in jobs:
        tiny_s, tiny_l = _get(rows, job, TINY.name, "spark"), _get(rows, job, TINY.name, "local")
        fixed = float(tiny_s["cpu_s"]) - float(plain["cpu_s"])  # type: ignore[arg-type]
        lines.append(f"| {job}: Spark fixed cost beyond a plain session | {TINY.name} | {fixed:+.2f} s CPU | "
                     f"<= 3 s | {'yes' if fixed <= 3 else 'no'} |")
        for shape in sorted({str(r["shape"]) for r in rows if r["job"] == job} - {TINY.name}):
            s, loc = _get(rows, job, shape, "spark"), _get(rows, job, shape, "local")
            beyond_s = float(s["cpu_s"]) - float(tiny_s["cpu_s"])  # type: ignore[arg-type]
            beyond_l = max(1e-3, float(loc["cpu_s"]) - float(tiny_l["cpu_s"]))  # type: ignore[arg-type]
            ratio = beyond_s / beyond_l
            lines.append(f"| {job}: Spark CPU beyond its fixed cost / local's | {shape} | {ratio:.2f}x | <= 1.5x | "
                         f"{'yes' if ratio <= 1.5 else 'no'} |")
            wall_bar = 1.3 * (float(loc["wall_s"]) + float(plain["wall_s"]))  # type: ignore[arg-type]
            lines.append(f"| {job}: Spark wall / (local wall + a session start) | {shape} | "
                         f"{float(s['wall_s']) / (wall_bar / 1.3):.2f}x | <= 1.3x | "  # type: ignore[arg-type]
                         f"{'yes' if float(s['wall_s']) <= wall_bar else 'no'} |")  # type: ignore[arg-type]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run and print (or write ``--out``) the section."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=REPO / "build" / "bench-data")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--jobs", default="export", help="comma-separated: export,offsets,retention,audit")
    parser.add_argument("--shapes", default=",".join(str(i) for i in range(len(SHAPES))),
                        help="indexes into SHAPES")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--json", type=Path, help="also the raw rows as JSON")
    args = parser.parse_args(argv)
    shapes = tuple(SHAPES[int(i)] for i in args.shapes.split(",") if i)
    rows = run(args.data_dir, rounds=args.rounds, master=args.master, jobs=tuple(args.jobs.split(",")), shapes=shapes)
    text = markdown(rows, args.master)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.out:
        args.out.write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
