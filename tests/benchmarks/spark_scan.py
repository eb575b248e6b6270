"""Full scan through Spark (``kafka-log`` source) next to the bare decoder on the same bytes.

``python tests/benchmarks/spark_scan.py [--size-mib 128] [--codec none] [--master local[2]]``
prints a Markdown table; :func:`spark_scan` returns the numbers and :func:`markdown` formats
them, for ``tests/benchmarks/run.py`` (``BENCHMARKS.md``).

* bare decoder: ``decode_segment`` over every ``.log`` of the log dir, every record into Arrow
  columns, CRC verified, on one thread; per-core rate = bytes / CPU time of that thread;
* Spark: ``spark.read.format("kafka-log").load(dir)`` written to the ``noop`` sink (every column
  of every row produced and handed to the JVM), best wall time of ``repeats`` runs after a warm-up;
  per-core rate = bytes / (wall time x cores of the master), i.e. what each core delivered.

The log dir is the benchmark corpus of :mod:`gen` (aiokafka-built batches) cut at batch
boundaries into ``partitions`` topic-partitions of one segment each.
"""

from __future__ import annotations

import argparse
import gc
import os
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen  # noqa: E402  (benchmark-local module beside this file)

MIB = 1 << 20
ENTRY = struct.Struct(">qi")     # baseOffset int64, length int32 (Records.LOG_OVERHEAD = 12)

__all__ = ["make_log_dir", "spark_scan", "markdown", "main"]


def make_log_dir(root: Path, codec: str, size_mib: int, partitions: int) -> Path:
    """A log dir of ``partitions`` partitions of topic ``bench`` holding the corpus (reused if present)."""
    log_dir = root / f"spark-scan-{codec}-{size_mib}m-{partitions}p"
    if (log_dir / "meta.properties").is_file():
        return log_dir
    data = gen.corpus_path(root, codec, size_mib * MIB).read_bytes()
    cuts = [0]
    pos, target = 0, len(data) / partitions
    while pos < len(data):
        _, length = ENTRY.unpack_from(data, pos)
        pos += ENTRY.size + length
        if pos >= target * len(cuts) and pos < len(data):
            cuts.append(pos)
    cuts.append(len(data))
    for p, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
        d = log_dir / f"bench-{p}"
        d.mkdir(parents=True, exist_ok=True)
        base, _ = ENTRY.unpack_from(data, lo)
        (d / f"{base:020d}.log").write_bytes(data[lo:hi])
    (log_dir / "meta.properties").write_text("version=0\nbroker.id=0\n")
    return log_dir


def _bare_decode(log_dir: Path) -> tuple[int, int, float]:
    """(rows, log bytes, CPU seconds of this thread) of decoding every .log once."""
    from kafka_format.api import decode_segment

    rows = size = 0
    gc.collect()
    c0 = time.thread_time()
    for log in sorted(log_dir.rglob("*.log")):
        size += log.stat().st_size
        for batch in decode_segment(str(log)):
            rows += batch.num_rows
    return rows, size, time.thread_time() - c0


def spark_scan(data_dir: Path = Path("build/bench-data"), *, size_mib: int = 128, codec: str = "none",
               master: str = "local[2]", repeats: int = 2) -> dict[str, float | str]:
    """Measure a full scan through Spark and the bare decoder on the same log dir."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from kafka_format.spark.session import build_session

    spark = build_session(master=master, profile="local", app_name="klogs-bench",
                          extra_conf={"spark.ui.enabled": "false"})
    try:
        cores = spark.sparkContext.defaultParallelism
        log_dir = make_log_dir(data_dir, codec, size_mib, partitions=2 * cores)
        rows, size, _ = _bare_decode(log_dir)                      # warm-up (page cache)
        bare_cpu = min(_bare_decode(log_dir)[2] for _ in range(repeats))
        df = spark.read.format("kafka-log").load(str(log_dir))
        if df.count() != rows:
            raise AssertionError("Spark and the bare decoder disagree on the row count")
        best = float("inf")
        for _ in range(repeats):
            w0 = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            best = min(best, time.perf_counter() - w0)
    finally:
        spark.stop()
    return {
        "codec": codec, "master": master, "cores": float(cores), "log_bytes": float(size), "rows": float(rows),
        "bare_mb_s_per_core": size / bare_cpu / 1e6, "bare_rows_s_per_core": rows / bare_cpu,
        "spark_wall_s": best, "spark_mb_s": size / best / 1e6,
        "spark_mb_s_per_core": size / best / cores / 1e6, "spark_rows_s_per_core": rows / best / cores,
    }


def markdown(results: list[dict[str, float | str]]) -> list[str]:
    """A Markdown section for BENCHMARKS.md."""
    lines = ["## Full scan through Spark (`kafka-log` source, `noop` sink)", "",
             "| corpus | master | MB | rows | Spark MB/s | Spark MB/s per core | Spark rows/s per core "
             "| bare decoder MB/s per core | bare rows/s per core | Spark / bare per core |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(
            f"| {r['codec']} | {r['master']} | {float(r['log_bytes']) / 1e6:.0f} | {float(r['rows']):.0f} "
            f"| {float(r['spark_mb_s']):.1f} | {float(r['spark_mb_s_per_core']):.1f} "
            f"| {float(r['spark_rows_s_per_core']):.0f} | {float(r['bare_mb_s_per_core']):.1f} "
            f"| {float(r['bare_rows_s_per_core']):.0f} "
            f"| {float(r['spark_mb_s_per_core']) / float(r['bare_mb_s_per_core']):.2f} |")
    lines += ["", "Per core: Spark = bytes / (best wall time x cores); bare = bytes / CPU time of one thread.", ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("build/bench-data"))
    parser.add_argument("--size-mib", type=int, default=128)
    parser.add_argument("--codec", default="none")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    result = spark_scan(args.data_dir, size_mib=args.size_mib, codec=args.codec, master=args.master,
                        repeats=args.repeats)
    print("\n".join(markdown([result])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
