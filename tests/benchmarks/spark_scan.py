"""Full scan through Spark (``kafka-log`` source) next to the bare decoder and Spark's own Parquet path.

``python tests/benchmarks/spark_scan.py [--sizes-mib 64,256,1024] [--codec none] [--master local[2]]``
prints a Markdown section; :func:`spark_scan` returns the numbers of one size,
:func:`spark_scans` those of several sizes plus the fixed per-job overhead, and :func:`markdown`
formats them, for ``tests/benchmarks/run.py`` (``BENCHMARKS.md``).

What is measured, on the same rows:

* bare decoder: ``decode_segment`` over every ``.log`` of the log dir, every record into Arrow
  columns, CRC verified, on one thread; per core = bytes / CPU time of that thread;
* ``kafka-log``: ``spark.read.format("kafka-log").load(dir)`` written to the ``noop`` sink (every
  column of every row produced and handed to the JVM as rows);
* Parquet: the same rows written once as Parquet by Spark, then ``spark.read.parquet(...)`` to the
  ``noop`` sink: the speed of Spark's own columnar source on this machine, the ceiling to compare with;
* fixed per-job overhead: a ``kafka-log`` job over one partition holding a single small batch
  (planning, scheduling, one Python task), and the intercept of wall time against size.

Every Spark job is run once to warm up (Python workers, page cache), then ``repeats`` times; the
best wall time is kept.  Sizes are measured largest first, kafka-log then Parquet: the JVM's JIT
keeps speeding up the Arrow-to-row conversion for about a gigabyte of rows, and a cold JVM halves
the rate of a 64 MB scan.  Two per-core rates are given: *wall* = bytes / (wall time x cores of
the master) and *CPU* = bytes / CPU seconds consumed by the whole Spark process tree (driver, JVM,
Python workers) during the job.  The CPU rate is what a core delivers and does not move when other
processes share the machine; the wall rate does.

The log dir is the benchmark corpus of :mod:`gen` (aiokafka-built batches) cut at batch
boundaries into ``partitions`` topic-partitions of one segment each.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import itertools

import gen  # noqa: E402  (benchmark-local module beside this file)

MIB = 1 << 20
ENTRY = struct.Struct(">qi")     # baseOffset int64, length int32 (Records.LOG_OVERHEAD = 12)
# /proc/<pid>/stat after the ")" that closes comm: field 3 is state; ppid is field 4 and
# utime, stime, cutime, cstime are fields 14..17 (proc(5)), i.e. indexes 1 and 11..14 here.
STAT_PPID, STAT_CPU = 1, slice(11, 15)
TINY_BATCH_RECORDS = 10

__all__ = ["main", "make_log_dir", "markdown", "spark_scan", "spark_scans"]

Result = dict[str, Any]


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
    for p, (lo, hi) in enumerate(itertools.pairwise(cuts)):
        d = log_dir / f"bench-{p}"
        d.mkdir(parents=True, exist_ok=True)
        base, _ = ENTRY.unpack_from(data, lo)
        (d / f"{base:020d}.log").write_bytes(data[lo:hi])
    (log_dir / "meta.properties").write_text("version=0\nbroker.id=0\n")
    return log_dir


def _tiny_log_dir(root: Path) -> Path:
    """One partition holding one batch of a few records (for the fixed per-job overhead)."""
    from kafka_format.writer.batches import Record, build_v2_batch

    log_dir = root / "spark-scan-tiny"
    if (log_dir / "meta.properties").is_file():
        return log_dir
    d = log_dir / "bench-0"
    d.mkdir(parents=True, exist_ok=True)
    batch = build_v2_batch([Record(key=b"k", value=b"v" * 100, timestamp=1_700_000_000_000 + i)
                            for i in range(TINY_BATCH_RECORDS)], base_offset=0)
    (d / f"{0:020d}.log").write_bytes(bytes(batch.data))
    (log_dir / "meta.properties").write_text("version=0\nbroker.id=0\n")
    return log_dir


def _bare_decode(log_dir: Path) -> tuple[int, int, float]:
    """(rows, log bytes, CPU seconds of this thread) of decoding every .log once."""
    from kafka_format.records.file_records import decode_segment

    rows = size = 0
    gc.collect()
    c0 = time.thread_time()
    for log in sorted(log_dir.rglob("*.log")):
        size += log.stat().st_size
        for batch in decode_segment(str(log)):
            rows += batch.num_rows
    return rows, size, time.thread_time() - c0


def _tree_cpu(root_pid: int) -> float:
    """CPU seconds (user + system, with reaped children) of ``root_pid`` and all its descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    cpu: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue                                   # exited while we looked
        pid = int(entry.name)
        parent[pid] = int(fields[STAT_PPID])
        cpu[pid] = sum(int(x) for x in fields[STAT_CPU])
    total = 0
    for pid, ticks in cpu.items():
        p = pid
        while p and p != root_pid:
            p = parent.get(p, 0)
        if p == root_pid:
            total += ticks
    return total / tick


def _timed(job: Callable[[], None], repeats: int) -> tuple[float, float]:
    """(best wall seconds, least CPU seconds of the Spark process tree) of ``repeats`` runs after a
    warm-up run; each minimum is the run least disturbed by other processes."""
    job()
    wall = cpu = float("inf")
    me = os.getpid()
    for _ in range(repeats):
        c0, w0 = _tree_cpu(me), time.perf_counter()
        job()
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, _tree_cpu(me) - c0)
    return wall, cpu


def _noop(df: Any) -> Callable[[], None]:
    def run() -> None:
        df.write.format("noop").mode("overwrite").save()
    return run


def _prepare(spark: Any, data_dir: Path, size_mib: int, codec: str, cores: int, repeats: int) -> Result:
    """Log dir + Parquet copy of one size, row count checked, bare decoder measured."""
    log_dir = make_log_dir(data_dir, codec, size_mib, partitions=2 * cores)
    rows, size, _ = _bare_decode(log_dir)                      # warm-up (page cache)
    bare_cpu = min(_bare_decode(log_dir)[2] for _ in range(repeats))
    df = spark.read.format("kafka-log").load(str(log_dir))
    if df.count() != rows:
        raise AssertionError("Spark and the bare decoder disagree on the row count")
    parquet = data_dir / f"{log_dir.name}.parquet"
    if not (parquet / "_SUCCESS").is_file():
        df.write.mode("overwrite").parquet(str(parquet))
    return {"codec": codec, "size_mib": float(size_mib), "cores": float(cores), "log_bytes": float(size),
            "rows": float(rows), "bare_cpu_s": bare_cpu, "log_dir": str(log_dir), "parquet": str(parquet),
            "bare_mb_s_per_core": size / bare_cpu / 1e6, "bare_rows_s_per_core": rows / bare_cpu}


def _rates(r: Result) -> Result:
    """Per-core rates of a result holding the wall/CPU seconds of both Spark jobs."""
    size, rows, cores = r["log_bytes"], r["rows"], r["cores"]
    wall, cpu, pq_wall, pq_cpu = r["spark_wall_s"], r["spark_cpu_s"], r["parquet_wall_s"], r["parquet_cpu_s"]
    return {**r,
            "spark_mb_s": size / wall / 1e6,
            "spark_mb_s_per_core": size / wall / cores / 1e6, "spark_rows_s_per_core": rows / wall / cores,
            "spark_mb_s_per_cpu": size / cpu / 1e6, "spark_rows_s_per_cpu": rows / cpu,
            "parquet_mb_s_per_core": size / pq_wall / cores / 1e6,
            "parquet_rows_s_per_core": rows / pq_wall / cores,
            "parquet_mb_s_per_cpu": size / pq_cpu / 1e6}


def _session(master: str) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from kafka_format.spark.session import build_session

    return build_session(master=master, profile="local", app_name="klogs-bench",
                         extra_conf={"spark.ui.enabled": "false"})


def spark_scans(data_dir: Path = Path("build/bench-data"), *, sizes_mib: tuple[int, ...] = (64, 256, 1024),
                codec: str = "none", master: str = "local[2]", repeats: int = 3) -> dict[str, Any]:
    """Measure full scans at several sizes, and the fixed per-job overhead, in one Spark session.

    Returns ``{"master", "cores", "results": [per-size dicts], "cold_s", "tiny_wall_s", "tiny_cpu_s",
    "intercept_s", "slope_s_per_mb"}`` (intercept/slope: least squares of kafka-log wall time
    against MB; with one size they are NaN; ``cold_s``: the one-batch job as the session's first job,
    i.e. with JVM and Python-worker start-up, when this call created the session).
    """
    spark = _session(master)
    try:
        cores = spark.sparkContext.defaultParallelism
        tiny = _tiny_log_dir(data_dir)
        w0 = time.perf_counter()
        _noop(spark.read.format("kafka-log").load(str(tiny)))()   # first job of the session: cold
        cold = time.perf_counter() - w0
        prepared = [_prepare(spark, data_dir, s, codec, cores, repeats) for s in sizes_mib]
        # Largest first: the JVM's JIT keeps speeding the row conversion up for ~1 GB of rows, so
        # the small sizes are measured on a warm JVM (the warm-up run of each job is not enough).
        order = sorted(range(len(prepared)), key=lambda i: -prepared[i]["log_bytes"])
        for i in order:
            r = prepared[i]
            r["spark_wall_s"], r["spark_cpu_s"] = _timed(
                _noop(spark.read.format("kafka-log").load(r["log_dir"])), repeats)
        for i in order:
            r = prepared[i]
            r["parquet_wall_s"], r["parquet_cpu_s"] = _timed(_noop(spark.read.parquet(r["parquet"])), repeats)
        tiny_wall, tiny_cpu = _timed(_noop(spark.read.format("kafka-log").load(str(tiny))), repeats)
        results = [_rates(r) for r in prepared]
    finally:
        spark.stop()
    xs = [r["log_bytes"] / 1e6 for r in results]
    ys = [r["spark_wall_s"] for r in results]
    intercept = slope = float("nan")
    if len(set(xs)) > 1:
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        intercept = my - slope * mx
    return {"master": master, "cores": float(cores), "results": results, "cold_s": cold,
            "tiny_wall_s": tiny_wall, "tiny_cpu_s": tiny_cpu, "intercept_s": intercept,
            "slope_s_per_mb": slope}


def spark_scan(data_dir: Path = Path("build/bench-data"), *, size_mib: int = 128, codec: str = "none",
               master: str = "local[2]", repeats: int = 3) -> Result:
    """Measure one size (see :func:`spark_scans`); the per-size dict, with ``master``."""
    out = spark_scans(data_dir, sizes_mib=(size_mib,), codec=codec, master=master, repeats=repeats)
    return {**out["results"][0], "master": master}


def markdown(scans: list[dict[str, Any]]) -> list[str]:
    """A Markdown section for BENCHMARKS.md (one entry per :func:`spark_scans` call)."""
    lines = ["## Full scan through Spark (`kafka-log` source, `noop` sink)", "",
             "| corpus | master | MB | rows | kafka-log wall s | kafka-log MB/s per core (wall / CPU) "
             "| kafka-log rows/s per core (wall / CPU) | Parquet→noop MB/s per core (wall / CPU) "
             "| kafka-log / Parquet (CPU) | bare decoder MB/s per core | bare rows/s per core |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for scan in scans:
        for r in scan["results"]:
            lines.append(
                f"| {r['codec']} | {scan['master']} | {r['log_bytes'] / 1e6:.0f} | {r['rows']:,.0f} "
                f"| {r['spark_wall_s']:.2f} "
                f"| {r['spark_mb_s_per_core']:.1f} / {r['spark_mb_s_per_cpu']:.1f} "
                f"| {r['spark_rows_s_per_core']:,.0f} / {r['spark_rows_s_per_cpu']:,.0f} "
                f"| {r['parquet_mb_s_per_core']:.1f} / {r['parquet_mb_s_per_cpu']:.1f} "
                f"| {r['spark_cpu_s'] / r['parquet_cpu_s']:.2f}x "
                f"| {r['bare_mb_s_per_core']:,.0f} | {r['bare_rows_s_per_core']:,.0f} |")
    lines.append("")
    for scan in scans:
        fit = ("n/a (one size)" if math.isnan(scan["intercept_s"]) else
               f"{scan['intercept_s']:.2f} s + {scan['slope_s_per_mb'] * 1e3:.2f} ms/MB")
        lines.append(
            f"Fixed per-job overhead ({scan['master']}): {scan['tiny_wall_s']:.2f} s wall "
            f"({scan['tiny_cpu_s']:.2f} CPU s) for a one-batch `kafka-log` job; wall-time fit over sizes: "
            f"{fit}; the same one-batch job as the first job of a new session: {scan['cold_s']:.1f} s.")
    lines += ["",
              "Per core: wall = bytes / (best wall time x cores); CPU = bytes / CPU seconds of the "
              "Spark process tree (driver, JVM, Python workers) in that run; bare = bytes / CPU time "
              "of one thread.  Parquet→noop reads the same rows (written once by Spark) through "
              "Spark's own columnar source.",
              ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("build/bench-data"))
    parser.add_argument("--sizes-mib", default="64,256,1024", help="comma-separated corpus sizes")
    parser.add_argument("--codec", default="none")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes_mib.split(","))
    scan = spark_scans(args.data_dir, sizes_mib=sizes, codec=args.codec, master=args.master,
                       repeats=args.repeats)
    print("\n".join(markdown([scan])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
