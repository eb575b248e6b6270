"""Tiered storage: ``klogs export`` of a tiered topic against the same records in local segments, and
the store requests planning needs.

``python tests/benchmarks/tiered_bench.py [--size-mib 256] [--segment-mib 8] [--partitions 4]`` prints a
Markdown section (also part of ``make bench``: :func:`run_tiered_benchmark`, :func:`markdown`).

The corpus: topic ``bench`` written by the project's writer (v2 batches of 100 records, 1 KiB values,
uncompressed), ``--segment-mib`` segments.  The tiered copy has every segment but the last two of each
partition copied to a ``LocalTieredStorage`` tree on the local filesystem as ``RemoteLogManager`` copies
them (``tests/format/tiered_builders.upload``), deleted locally, and named in ``__remote_log_metadata``;
the local copy is the same log dir before that.

* export: ``klogs export --engine local`` of each (the tiered one with ``--remote-storage``), CPU of the
  whole process tree (``RUSAGE_CHILDREN`` around the run: the CLI and every worker it waited for), best of
  ``repeats``; per-core throughput = log bytes / CPU seconds.  Target: the tiered export at the local
  one's per-core speed.
* planning: the splits of every tiered partition planned over a store that counts requests
  (``testhelpers.CountingLocalFS``): stats, listings and files opened.  Target: one listing per
  partition (plus the root's), no request per segment on the driver.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))              # tests/: testhelpers
sys.path.insert(0, str(HERE.parent / "format"))   # tests/format: tiered_builders

__all__ = ["main", "markdown", "run_tiered_benchmark"]

MIB = 1 << 20
TOPIC = "bench"


def _write(root: Path, size_mib: int, segment_mib: int, partitions: int) -> tuple[Path, Path, Path, int]:
    """(local log dir, tiered log dir, remote root, remote segments) under ``root`` (reused if there)."""
    from tiered_builders import (
        FIRST_TS,
        TOPIC_ID_BYTES,
        LocalReplica,
        copy_records,
        segment_uuid,
        upload,
        write_metadata_log,
    )

    from kafka_format.writer import LogDirWriter, Record, build_v2_batch

    base = root / f"tiered-{size_mib}m-{segment_mib}s-{partitions}p"
    local, tiered, remote = base / "local", base / "tiered", base / "remote"
    done = base / "done.json"
    if done.is_file():
        return local, tiered, remote, int(json.loads(done.read_text())["remote_segments"])
    shutil.rmtree(base, ignore_errors=True)
    d = LogDirWriter(tiered, node_id=1, cluster_id="tieredBenchCluster0000", kraft=True)
    value = bytes(range(256)) * 4
    per_partition = size_mib * MIB // partitions
    writers = []
    for p in range(partitions):
        w = d.partition(TOPIC, p, topic_id=TOPIC_ID_BYTES, segment_bytes=segment_mib * MIB)
        offset, written = 0, 0
        while written < per_partition:
            recs = [Record(key=b"k%d" % (o % 97), value=value, timestamp=FIRST_TS + o) for o in range(offset, offset + 100)]
            batch = build_v2_batch(recs, base_offset=offset, partition_leader_epoch=0)
            w.append(batch)
            offset += 100
            written += batch.size
        w.close()
        writers.append(w)
    d.close(written_at_ms=FIRST_TS + 10**9)
    shutil.copytree(tiered, local)
    uploaded = []
    for p, w in enumerate(writers):
        replica = LocalReplica(tiered, TOPIC, p, w)
        bases = [s.base_offset for s in w.segments]
        for i, b in enumerate(bases[:-2]):
            uploaded.append(upload(replica, b, remote, segment_uuid(p * 100_000 + i)))
        replica.delete_below(bases[-2], log_start=0)
    write_metadata_log(tiered, copy_records(uploaded))
    done.write_text(json.dumps({"remote_segments": len(uploaded)}))
    return local, tiered, remote, len(uploaded)


def _export_cpu(args: list[str], out: Path) -> tuple[float, float]:
    """(CPU seconds of the process tree, wall seconds) of one ``klogs export`` run."""
    shutil.rmtree(out, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import sys; from kafka_format.cli import main; sys.exit(main(sys.argv[1:]))",
                    "export", *args, "--out", str(out), "--engine", "local"], check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def _planning_requests(tiered: Path, remote: Path) -> dict[str, int]:
    import pyarrow.fs as pafs
    from testhelpers import CountingLocalFS

    from kafka_format.read.planning import open_partitions
    from kafka_format.read.remote_log_metadata import metadata_of, tiered_partition
    from kafka_format.read.tiers import plan_tiered_splits
    from kafka_format.storage.remote_tier import open_remote_storage
    from kafka_format.storage.tiered_history import tiered_history

    found = open_partitions([str(tiered)])
    view = metadata_of(found)
    handler = CountingLocalFS()
    store = open_remote_storage(str(remote), filesystem=pafs.PyFileSystem(handler))
    splits = 0
    partitions = 0
    for r in found:
        tip = tiered_partition(view, r)
        if view is None or tip is None:
            continue
        cache = view.cache(tip)
        assert cache is not None
        partitions += 1
        splits += len(plan_tiered_splits(tiered_history(r, cache, store)))
    return {"partitions": partitions, "splits": splits, "stats": handler.stats, "listings": len(handler.listings),
            "opened": len(handler.opened)}


def run_tiered_benchmark(*, size_mib: int = 256, segment_mib: int = 8, partitions: int = 4,
                         data_dir: Path = Path("build/bench-data"), repeats: int = 3) -> dict[str, Any]:
    """The numbers of the module doc as a dict."""
    local, tiered, remote, remote_segments = _write(data_dir, size_mib, segment_mib, partitions)
    log_bytes = sum(p.stat().st_size for p in local.rglob("*.log") if p.parent.name.startswith(TOPIC))
    out = data_dir / "tiered-bench-out"
    runs = {"local": ([str(local), "--topic", TOPIC], []), "tiered": (
        [str(tiered), "--topic", TOPIC, "--remote-storage", str(remote)], [])}
    for _ in range(repeats + 1):                 # the first round warms the page cache
        for _name, (args, times) in runs.items():
            times.append(_export_cpu(args, out))
    result: dict[str, Any] = {"size_mib": size_mib, "segment_mib": segment_mib, "partitions": partitions,
                              "log_bytes": log_bytes, "remote_segments": remote_segments}
    for name, (_, times) in runs.items():
        cpu = min(t[0] for t in times[1:])
        wall = min(t[1] for t in times[1:])
        result[f"{name}_cpu_s"], result[f"{name}_wall_s"] = cpu, wall
        result[f"{name}_mb_per_cpu_s"] = log_bytes / MIB / cpu
    result["ratio_cpu"] = result["tiered_cpu_s"] / result["local_cpu_s"]
    result["planning"] = _planning_requests(tiered, remote)
    shutil.rmtree(out, ignore_errors=True)
    return result


def markdown(r: dict[str, Any]) -> str:
    """The section of BENCHMARKS.md."""
    p = r["planning"]
    return "\n".join([
        "## Tiered storage: export and planning",
        "",
        f"`tests/benchmarks/tiered_bench.py`: topic `{TOPIC}`, {r['partitions']} partitions, "
        f"{r['log_bytes'] / MIB:.0f} MiB of uncompressed v2 log in {r['segment_mib']} MiB segments; the tiered copy "
        f"has {r['remote_segments']} of them in a local-filesystem `LocalTieredStorage` (every segment but each "
        "partition's last two). `klogs export --engine local`, CPU of the whole process tree, best of the runs "
        "after a warm-up.",
        "",
        "| export | CPU s | wall s | MiB per CPU second |",
        "|---|---:|---:|---:|",
        f"| local segments | {r['local_cpu_s']:.2f} | {r['local_wall_s']:.2f} | {r['local_mb_per_cpu_s']:.0f} |",
        f"| tiered (`--remote-storage`) | {r['tiered_cpu_s']:.2f} | {r['tiered_wall_s']:.2f} | "
        f"{r['tiered_mb_per_cpu_s']:.0f} |",
        "",
        f"Tiered / local CPU: {r['ratio_cpu']:.2f} (target: 1, the same per-core speed).",
        "",
        f"Planning the {p['partitions']} tiered partitions ({p['splits']} splits) over a store counting requests: "
        f"{p['stats']} stat, {p['listings']} listings (the root and one per partition), {p['opened']} files opened "
        f"(index files of segments an end bound cuts; none per segment).",
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=256)
    parser.add_argument("--segment-mib", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--data-dir", type=Path, default=Path("build/bench-data"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    r = run_tiered_benchmark(size_mib=args.size_mib, segment_mib=args.segment_mib, partitions=args.partitions,
                             data_dir=args.data_dir, repeats=args.repeats)
    print(markdown(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
