"""``klogs export`` throughput next to Spark copying the same rows Parquet -> Parquet (target: within 2x).

``python tests/benchmarks/export_bench.py [--size-mib 256] [--master local[2]]`` prints a Markdown
section; :func:`run_export_benchmark` returns the numbers for ``tests/benchmarks/run.py``.

What is measured, on the same rows and the same output layout (``topic=/partition=`` directories,
Parquet with Spark's default codec, ``TIMESTAMP_MICROS``):

* export: :func:`kafka_format.spark.export.export` of ``spark.read.format("kafka-log")`` over the
  benchmark log dir (uncompressed v2 batches of :mod:`gen`, one segment per topic-partition), i.e.
  decode + write + atomic publish;
* copy: the same rows, written once (untimed) as plain Parquet, then
  ``spark.read.parquet(src).write.partitionBy("topic", "partition").parquet(dst)``.

Each job runs once to warm up, then ``repeats`` times; the best wall time and the least CPU time of
the Spark process tree (driver, JVM, Python workers; the CPU figure does not move when other
processes share the machine) are kept.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_scan import _timed, make_log_dir  # noqa: E402  (benchmark-local module beside this file)

__all__ = ["main", "markdown", "run_export_benchmark"]

BAR = 2.0                                   # target: export within 2x of Parquet -> Parquet


def run_export_benchmark(spark: Any, size_mb: int, *, data_dir: Path = Path("build/bench-data"),
                         repeats: int = 3) -> dict[str, Any]:
    """Export vs Parquet -> Parquet copy of ``size_mb`` MiB of uncompressed v2 log in ``spark``.

    Returns ``{"size_mib", "log_bytes", "rows", "cores", "export_wall_s", "export_cpu_s",
    "copy_wall_s", "copy_cpu_s", "ratio_wall", "ratio_cpu", "export_mb_s", "copy_mb_s",
    "within_bar"}`` (ratios = export / copy; ``within_bar``: CPU ratio <= 2).
    """
    from kafka_format.spark.export import export, write_conf

    cores = spark.sparkContext.defaultParallelism
    log_dir = make_log_dir(data_dir, "none", size_mb, partitions=2 * cores)
    log_bytes = sum(p.stat().st_size for p in log_dir.rglob("*.log"))
    work = data_dir / f"export-bench-{size_mb}m"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    source = spark.read.format("kafka-log").load(str(log_dir))
    try:
        with write_conf(spark):                          # the copy writes timestamps as export does
            src = work / "rows.parquet"
            source.write.parquet(str(src))               # the same rows as plain Parquet (untimed)
            rows = spark.read.parquet(str(src)).count()

            def run_export() -> None:
                result = export(spark.read.format("kafka-log").load(str(log_dir)), str(work / "export"))
                if result.rows != rows:
                    raise AssertionError(f"export wrote {result.rows} rows, the source has {rows}")

            def run_copy() -> None:
                spark.read.parquet(str(src)).write.mode("overwrite").partitionBy("topic", "partition") \
                    .parquet(str(work / "copy"))

            export_wall, export_cpu = _timed(run_export, repeats)
            copy_wall, copy_cpu = _timed(run_copy, repeats)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"size_mib": float(size_mb), "log_bytes": float(log_bytes), "rows": float(rows), "cores": float(cores),
            "export_wall_s": export_wall, "export_cpu_s": export_cpu, "copy_wall_s": copy_wall,
            "copy_cpu_s": copy_cpu, "ratio_wall": export_wall / copy_wall, "ratio_cpu": export_cpu / copy_cpu,
            "export_mb_s": log_bytes / export_wall / 1e6, "copy_mb_s": log_bytes / copy_wall / 1e6,
            "within_bar": export_cpu / copy_cpu <= BAR}


def markdown(results: list[dict[str, Any]], master: str) -> list[str]:
    """A Markdown section for BENCHMARKS.md."""
    lines = ["## Export (`klogs export`, Parquet) vs Spark Parquet→Parquet copy of the same rows", "",
             "| master | MiB of log | rows | export wall s / CPU s | copy wall s / CPU s "
             "| export / copy (wall, CPU) | export MB/s | within 2x (CPU) |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        lines.append(f"| {master} | {r['size_mib']:.0f} | {r['rows']:,.0f} "
                     f"| {r['export_wall_s']:.2f} / {r['export_cpu_s']:.2f} "
                     f"| {r['copy_wall_s']:.2f} / {r['copy_cpu_s']:.2f} "
                     f"| {r['ratio_wall']:.2f}x / {r['ratio_cpu']:.2f}x | {r['export_mb_s']:.1f} "
                     f"| {'yes' if r['within_bar'] else 'NO'} |")
    lines += ["", "Export = kafka-log read + key/value as binary + Parquet write + atomic publish; copy = "
              "`spark.read.parquet` of the same rows + the same partitioned write.  Best wall time and "
              "least CPU time (Spark process tree) of the repeats after a warm-up run.", ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("build/bench-data"))
    parser.add_argument("--size-mib", default="256", help="comma-separated sizes")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from kafka_format.spark.session import build_session

    spark = build_session(master=args.master, profile="local", app_name="klogs-export-bench",
                          extra_conf={"spark.ui.enabled": "false"})
    try:
        results = [run_export_benchmark(spark, int(s), data_dir=args.data_dir, repeats=args.repeats)
                   for s in args.size_mib.split(",")]
    finally:
        spark.stop()
    print("\n".join(markdown(results, args.master)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
