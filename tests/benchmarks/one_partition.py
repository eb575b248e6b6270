"""One large partition on ``local[2]``: a full scan and an export, wall and CPU time.

The issue's parallelism case: a single ~96 MB partition (one segment of uncompressed v2 batches of
:mod:`gen`) read on ``local[2]``.  Planned as one split, one core idles; sized as Spark's file
sources size theirs (``min(maxBytesPerPartition, max(openCost, total / defaultParallelism))``, cut
at index entries), both cores work.  Prints the input partitions Spark planned, then the best wall
time and least CPU time (Spark process tree) of a ``noop`` scan and of ``export`` (Parquet) after a
warm-up run.

Before/after on the same code: ``--parallelism 1`` (``spark.default.parallelism=1``: the sizing
plans the whole partition as one split, as before it existed) against the default (2 on
``local[2]``).  An older checkout can also be measured: ``PYTHONPATH=<checkout, its extension built
in place>`` in front (the driver plans with that checkout's ``kafka_format``; the Python workers
inherit the path).  ``python tests/benchmarks/one_partition.py [--size-mib 96] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen  # noqa: E402  (benchmark-local modules beside this file)
from spark_scan import _noop, _timed  # noqa: E402

MIB = 1 << 20
_V2_HEAD = struct.Struct(">qi4xbxxxhiqq")    # base offset, length, magic, attributes, last delta, ts, max ts


def make_partition(root: Path, size_mib: int) -> Path:
    """A log dir of one partition: the :mod:`gen` corpus appended batch by batch to one segment
    by the writer's ``SegmentWriter`` (the broker's index rule: an entry per 4 KiB appended), so
    the segment has its ``.index`` and ``.timeindex`` as a broker leaves them (reused if present)."""
    from kafka_format.writer.batches import BuiltBatch
    from kafka_format.writer.segments import SegmentWriter

    log_dir = root / f"one-partition-{size_mib}m"
    if (log_dir / "meta.properties").is_file():
        return log_dir
    data = gen.corpus_path(root, "none", size_mib * MIB).read_bytes()
    part = log_dir / "bench-0"
    part.mkdir(parents=True, exist_ok=True)
    seg = SegmentWriter(part, 0)
    pos = 0
    while pos + 12 <= len(data):
        base, length, magic, _attrs, last_delta, _ts, max_ts = _V2_HEAD.unpack_from(data, pos)
        end = pos + 12 + length
        seg.append([BuiltBatch(data=data[pos:end], magic=magic, base_offset=base, last_offset=base + last_delta,
                               max_timestamp=max_ts, offset_of_max_timestamp=base + last_delta,
                               record_count=last_delta + 1)])
        pos = end
    seg.close()
    (log_dir / "meta.properties").write_text("version=0\nbroker.id=0\n")
    return log_dir


def _input_partitions(spark: Any, df: Any) -> int:
    """Input partitions of a scan of ``df`` (the splits the source planned): the tasks of the
    last stage of a ``noop`` write."""
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("klogs-count-splits", "count splits")
    df.write.format("noop").mode("overwrite").save()
    jobs = tracker.getJobIdsForGroup("klogs-count-splits")
    stages = [s for j in jobs for s in (tracker.getJobInfo(j).stageIds if tracker.getJobInfo(j) else [])]
    infos = [tracker.getStageInfo(s) for s in stages]
    return max((i.numTasks for i in infos if i is not None), default=-1)


def run(size_mib: int, data_dir: Path, repeats: int, master: str, parallelism: int | None = None) -> dict[str, object]:
    """Plan, scan and export one ``size_mib`` MiB partition; the numbers as a dict."""
    import kafka_format
    from kafka_format.spark.export import export
    from kafka_format.spark.session import build_session

    log_dir = make_partition(data_dir, size_mib)
    log_bytes = sum(p.stat().st_size for p in log_dir.rglob("*.log"))
    conf = {"spark.ui.enabled": "false"}
    if parallelism:
        conf["spark.default.parallelism"] = str(parallelism)
    spark = build_session(master=master, profile="local", app_name="klogs-one-partition", extra_conf=conf)
    work = data_dir / f"one-partition-{size_mib}m-export"
    try:
        df = spark.read.format("kafka-log").load(str(log_dir))
        rows = df.count()
        splits = _input_partitions(spark, df)
        scan_wall, scan_cpu = _timed(_noop(df), repeats)

        def run_export() -> None:
            shutil.rmtree(work, ignore_errors=True)
            result = export(spark.read.format("kafka-log").load(str(log_dir)), str(work))
            if result.rows != rows:
                raise AssertionError(f"export wrote {result.rows} rows, the source has {rows}")

        export_wall, export_cpu = _timed(run_export, repeats)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return {"kafka_format": str(Path(kafka_format.__file__).parent.parent), "master": master,
            "default_parallelism": parallelism,
            "log_bytes": log_bytes, "rows": rows, "splits": splits,
            "scan_wall_s": scan_wall, "scan_cpu_s": scan_cpu,
            "export_wall_s": export_wall, "export_cpu_s": export_cpu}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("build/bench-data"))
    parser.add_argument("--size-mib", type=int, default=96)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--parallelism", type=int, help="spark.default.parallelism (1: the split sizing "
                        "plans one split for the partition, as before it existed)")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    print(json.dumps(run(args.size_mib, args.data_dir, args.repeats, args.master, args.parallelism)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
