"""Planning at cluster scale: discovery + split planning of a generated tree of many brokers.

The tree is shaped like a large cluster's data: ``brokers`` log dirs (``meta.properties`` and the
three offset checkpoints), ``partitions`` partitions spread over them, ``segments`` segments in
all, each with its ``.log`` (one tiny batch), ``.index`` and ``.timeindex`` (one entry each).
Tiny files keep the tree cheap to write; planning cost depends on the number of files and
entries, not on their bytes.

Measured (driver only, one thread, warm dentry cache, CPU time of the thread: the shared machine's
load inflates wall time several-fold, and the driver's work is one thread): the bare filesystem listing of the tree
(``os.scandir`` of every dir + a stat of every file: the floor any discovery pays), then
``open_partitions`` (discovery: listings, checkpoints, segment grouping) and ``plan_splits``
(with a session's default parallelism, as the data source plans); driver memory = peak of
Python allocations (tracemalloc, a separate run) and the process's peak RSS growth.

On the small tree, the jobs that answer for a whole cluster (offsets, retention, audit) and an export
also run over all of it on the local engine (:func:`whole_tree_jobs`): wall and CPU time per segment.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import struct
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))     # tests/: the suite's testhelpers

from peak_memory import peak_rss_bytes, reset_peak_rss  # noqa: E402  (benchmark-local module beside this file)

if TYPE_CHECKING:
    from kafka_format.storage.partition_log import PartitionLog


@dataclass(frozen=True)
class Scale:
    brokers: int
    partitions: int
    segments: int

    @property
    def name(self) -> str:
        return f"cluster-{self.brokers}b-{self.partitions}p-{self.segments}s"


def generate(root: Path, scale: Scale) -> Path:
    """Write the tree once (cached under ``root``); returns its directory."""
    tree = root / scale.name
    done = tree / ".complete"
    if done.exists():
        return tree
    batch = _tiny_batch()
    per_partition = max(1, scale.segments // scale.partitions)
    index_entry = struct.pack(">ii", 0, 0)
    time_entry = struct.pack(">qi", 0, 0)
    for b in range(scale.brokers):
        log_dir = tree / f"broker-{b}" / "kafka-logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        mine = [p for p in range(scale.partitions) if p % scale.brokers == b]
        names = [(f"topic-{p % 50}", p // 50) for p in mine]
        (log_dir / "meta.properties").write_text(f"version=1\nbroker.id={b}\ncluster.id=bench\n")
        for ckpt in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                     "log-start-offset-checkpoint"):
            lines = [f"{t} {n} {per_partition * 10 if ckpt != 'log-start-offset-checkpoint' else 0}"
                     for t, n in names]
            (log_dir / ckpt).write_text("0\n" + f"{len(lines)}\n" + "".join(x + "\n" for x in lines))
        for topic, num in names:
            d = log_dir / f"{topic}-{num}"
            d.mkdir(exist_ok=True)
            for s in range(per_partition):
                base = s * 10
                stem = str(d / f"{base:020d}")
                with open(stem + ".log", "wb") as f:
                    f.write(struct.pack(">q", base) + batch[8:])
                with open(stem + ".index", "wb") as f:
                    f.write(index_entry)
                with open(stem + ".timeindex", "wb") as f:
                    f.write(time_entry)
    done.write_text("ok\n")
    return tree


def _listing(tree: Path) -> tuple[int, float]:
    """Bare listing: scandir of every dir and a stat of every file (files, CPU seconds)."""
    t0 = time.thread_time()
    files = 0
    stack = [str(tree)]
    while stack:
        with os.scandir(stack.pop()) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                else:
                    e.stat(follow_symlinks=False)
                    files += 1
    return files, time.thread_time() - t0


@dataclass
class Result:
    scale: Scale
    files: int
    segments: int
    partitions: int
    splits: int
    listing_s: float
    discover_s: float
    plan_s: float
    peak_py_mb: float
    rss_growth_mb: float
    reopen_us: float = 0.0                     # CPU µs a task spends re-opening its partition (reopen)
    requests: dict[str, int] | None = None     # object-store requests (object_store_requests)
    jobs: dict[str, tuple[float, float, float]] | None = None   # job -> (wall s, CPU s, driver MB) (whole_tree_jobs)


def object_store_requests(tree: Path) -> dict[str, int]:
    """Requests discovery + planning send to a non-local filesystem: the tree read through a
    ``pyarrow.fs.PyFileSystem`` that counts the calls its handler gets (each would be a round trip
    to an object store): listings (one recursive listing per log dir), single stats, file opens."""
    import pyarrow.fs as pafs
    from testhelpers import CountingLocalFS

    from kafka_format.read.planning import PlanOptions, plan_splits
    from kafka_format.storage.logdir import open_log_dirs

    handler = CountingLocalFS()
    found = open_log_dirs(str(tree.resolve()), filesystem=pafs.PyFileSystem(handler))
    plan_splits(found, PlanOptions(default_parallelism=2))
    deep = sum(1 for _base, recursive in handler.listings if recursive)
    return {"listings": len(handler.listings) - deep, "recursive listings": deep, "stats": handler.stats,
            "opens": len(handler.opened)}


def reopen(parts: list[PartitionLog], sample: int = 2_000) -> float:
    """CPU µs per partition of what every job task does first on an executor or a pool worker:
    re-open its partition from the picklable reference (``PartitionRef.open``: the partition dir and
    its log dir's state files, outside a run's memo), over an even sample of ``parts``."""
    from kafka_format.storage.partition_state import PartitionRef

    refs = [PartitionRef.of(p) for p in parts[:: max(1, len(parts) // sample)]]
    gc.collect()
    t0 = time.thread_time()
    for ref in refs:
        ref.open()
    return (time.thread_time() - t0) / len(refs) * 1e6


# The jobs that answer for a whole cluster at once, over the tree (--now: after every tiny record),
# and an export of all of it (one Parquet file per partition).
WHOLE_TREE_JOBS = {
    "offsets": ["--timestamp", "earliest", "--timestamp", "1700000000000", "--out", "{out}"],
    "retention": ["--now", "2030-01-01T00:00:00Z", "--out", "{out}"],
    "audit": ["--now", "2030-01-01T00:00:00Z", "--out", "{out}", "--fail-on", "never"],
    "export": ["--out", "{out}"],
}


def whole_tree_jobs(tree: Path, repeats: int = 2) -> dict[str, tuple[float, float, float]]:
    """Best (wall, CPU) seconds and the highest driver peak RSS (MB) of each job of
    :data:`WHOLE_TREE_JOBS` over the whole tree with ``--engine local`` in a fresh process (CPU: the
    process and its pool workers; RSS: the driver process alone), the jobs in turn in every round."""
    from engine_bench import klogs_run

    best: dict[str, tuple[float, float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            for job, extra in WHOLE_TREE_JOBS.items():
                out = Path(tmp) / job
                if out.is_dir():
                    shutil.rmtree(out)
                elif out.exists():        # offsets writes one file
                    out.unlink()
                run = klogs_run([job, str(tree), "--engine", "local",
                                 *[a.replace("{out}", str(out)) for a in extra]])
                old = best.get(job, (float("inf"), float("inf"), 0.0))
                best[job] = (min(old[0], run.wall), min(old[1], run.cpu), max(old[2], run.driver_mb))
                print(f"  klogs {job}: {run.wall:.1f} s wall, {run.cpu:.1f} s CPU, driver peak RSS "
                      f"{run.driver_mb:.0f} MB", flush=True)
    return best


def measure(tree: Path, scale: Scale, repeats: int = 2) -> Result:
    from kafka_format.read.planning import PlanOptions, open_partitions, plan_splits

    options = PlanOptions(default_parallelism=2)
    best = [float("inf")] * 3
    files = segments = partitions = splits = 0
    gc.collect()
    reset_peak_rss()             # this step's own peak: the tree's generation may have passed it before
    rss0 = peak_rss_bytes()
    for _ in range(repeats):
        files, listing = _listing(tree)
        gc.collect()
        t0 = time.thread_time()
        parts = open_partitions(str(tree))
        t1 = time.thread_time()
        plan = plan_splits(parts, options)
        t2 = time.thread_time()
        best = [min(best[0], listing), min(best[1], t1 - t0), min(best[2], t2 - t1)]
        segments = sum(len(p.segments) for p in parts)
        partitions, splits = len(parts), len(plan)
        del parts, plan
    rss_growth = (peak_rss_bytes() - rss0) / (1 << 20)
    gc.collect()
    tracemalloc.start()
    parts = open_partitions(str(tree))
    plan = plan_splits(parts, options)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del parts, plan
    r = Result(scale, files, segments, partitions, splits, *best, peak / 1e6, rss_growth,
               reopen_us=min(reopen(open_partitions(str(tree))) for _ in range(repeats)))
    print(f"{scale.name}: {segments:,} segments, {partitions:,} partitions, {splits:,} splits; listing "
          f"{r.listing_s:.2f} s, discovery {r.discover_s:.2f} s, planning {r.plan_s:.2f} s, "
          f"peak Python {r.peak_py_mb:.0f} MB, a task's re-open {r.reopen_us:.0f} µs", flush=True)
    return r


def markdown(results: list[Result]) -> list[str]:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = ["## Planning at cluster scale (tests/benchmarks/planning_scale.py)", "",
             f"Measured {when} (this section can be run alone: `planning_scale.py --update BENCHMARKS.md`).  "
             "A generated tree like a large cluster's data (log dirs with checkpoints, partitions spread over "
             "them, segments with `.log` + `.index` + `.timeindex`, tiny files), discovered "
             "(`open_partitions`) and planned (`plan_splits`, default parallelism 2) on the driver, one "
             "thread, warm dentry cache, CPU seconds of the thread, best of 2.  Listing = `os.scandir` of every dir + a stat of every "
             "file (what any discovery pays).  Memory: peak Python allocations during discovery + planning "
             "(tracemalloc) and the process's peak RSS growth.  A task's re-open: CPU µs per partition of "
             "what every job task does first (`PartitionRef.open`: its partition dir and its log dir's state "
             "files, outside a run's memo), over up to 2,000 partitions; it does not grow with the partitions "
             "of the log dir.", "",
             "| brokers | partitions | segments | files | splits | listing s | discovery s | planning s "
             "| beyond listing µs/segment | µs/partition | peak Python MB | bytes/segment | RSS growth MB "
             "| a task's re-open µs |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        beyond = r.discover_s + r.plan_s - r.listing_s
        lines.append(
            f"| {r.scale.brokers} | {r.partitions:,} | {r.segments:,} | {r.files:,} | {r.splits:,} | "
            f"{r.listing_s:.2f} | {r.discover_s:.2f} | {r.plan_s:.2f} | {beyond / r.segments * 1e6:.1f} | "
            f"{(r.discover_s + r.plan_s) / r.partitions * 1e6:.0f} | {r.peak_py_mb:.0f} | "
            f"{r.peak_py_mb * 1e6 / r.segments:.0f} | {r.rss_growth_mb:.0f} | {r.reopen_us:.0f} |")
    lines.append("")
    for r in results:
        if r.requests is not None:
            q = r.requests
            lines += [f"Requests to a non-local filesystem ({r.scale.brokers} log dirs, {r.partitions:,} partitions, "
                      f"{r.segments:,} segments; counted through a `pyarrow.fs.PyFileSystem`): "
                      f"{q['recursive listings']} recursive listings (one per log dir), {q['listings']} single-dir "
                      f"listings (finding the log dirs), {q['stats']} stats, {q['opens']} file opens (checkpoints; "
                      "no index is read for a segment no bound or cut falls in).", ""]
    for r in results:
        if r.jobs is not None:
            lines += [f"Jobs over the whole {r.scale.brokers}-broker tree ({r.partitions:,} partitions, "
                      f"{r.segments:,} segments): `klogs offsets|retention|audit|export --engine local` in a fresh process, "
                      f"{os.cpu_count()} cores, best of 2; CPU = the process and its pool workers; driver RSS = "
                      "the peak resident memory of the `klogs` process itself (its results, report and output; "
                      "the pool workers' are apart; its own `VmHWM`: `ru_maxrss` would carry the peak of the "
                      "process that started it).  The audit "
                      "reads every `.log` whole and checks every index and state file; the export writes a Parquet file per "
                      "partition.", "",
                      "| job | wall s | CPU s | wall µs/segment | CPU µs/segment | driver peak RSS MB |",
                      "|---|---:|---:|---:|---:|---:|"]
            for job, (wall, cpu, driver_mb) in r.jobs.items():
                lines.append(f"| {job} | {wall:.1f} | {cpu:.1f} | {wall / r.segments * 1e6:.0f} | "
                             f"{cpu / r.segments * 1e6:.0f} | {driver_mb:.0f} |")
            lines.append("")
    return lines


def benchmark_planning(root: str, segments: int = 10_000, partitions: int = 10) -> dict[str, float]:
    """Write a synthetic log dir of ``segments`` tiny segments (with indexes) and time planning.

    For ``make bench``; returns ``{"segments", "splits", "discover_s", "plan_s"}``.
    """
    from kafka_format.read.planning import open_partitions, plan_splits

    batch = _tiny_batch()
    per = max(1, segments // partitions)
    with open(os.path.join(root, "meta.properties"), "w", encoding="utf-8") as f:
        f.write("version=0\nbroker.id=0\n")
    for p in range(partitions):
        d = os.path.join(root, f"bench-{p}")
        os.makedirs(d, exist_ok=True)
        for s in range(per):
            base = s
            name = os.path.join(d, f"{base:020d}")
            with open(name + ".log", "wb") as f:
                f.write(struct.pack(">q", base) + batch[8:])
            open(name + ".index", "wb").close()
            open(name + ".timeindex", "wb").close()
    t0 = time.perf_counter()
    parts = open_partitions(root)
    t1 = time.perf_counter()
    splits = plan_splits(parts)
    t2 = time.perf_counter()
    return {"segments": float(sum(len(p.segments) for p in parts)), "splits": float(len(splits)),
            "discover_s": t1 - t0, "plan_s": t2 - t1}


def _tiny_batch() -> bytes:
    """One small v2 batch (kafka_format.writer) used only to give benchmark segments content."""
    from kafka_format.writer.batches import Record, build_v2_batch

    return bytes(build_v2_batch([Record(key=b"k", value=b"v", timestamp=0)], base_offset=0).data)


SCALES = {"small": Scale(5, 2_000, 20_000), "large": Scale(50, 20_000, 200_000)}


def run(root: Path, names: list[str]) -> list[Result]:
    out = []
    for name in names:
        scale = SCALES[name]
        t0 = time.perf_counter()
        tree = generate(root, scale)
        print(f"{scale.name}: tree ready in {time.perf_counter() - t0:.0f} s", flush=True)
        result = measure(tree, scale)
        if scale.segments <= 20_000:        # counted once, on the small tree (the counts grow as stated)
            result.requests = object_store_requests(tree)
            result.jobs = whole_tree_jobs(tree)
        out.append(result)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("build/bench-data"))
    parser.add_argument("--scales", default="small,large")
    parser.add_argument("--update", type=Path, help="write the section into this BENCHMARKS.md")
    args = parser.parse_args(argv)
    lines = markdown(run(args.data_dir, args.scales.split(",")))
    print("\n".join(lines))
    if args.update:
        from shapes import update_section

        update_section(args.update, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
