"""The cleaner core alone on one (large) partition, with its resident memory sampled over time.

    python tests/benchmarks/scale_cleaner.py LOGDIR TOPIC PARTITION --samples OUT.jsonl [--limit-s N]

Runs what one ``klogs compaction --write-segments`` task runs (``clean_partition``,
``write_cleaned_partition``, the decisions streamed in offset order) in this process, without Spark,
on the default broker settings with ``cleanup.policy=compact``, forced.  A thread writes a sample
every 2 s to ``OUT.jsonl``: elapsed seconds, the stage, resident set (``/proc/self/status``), and
the Arrow pool's bytes.  With ``--limit-s`` the run stops after that many seconds (the samples
written so far show whether memory stayed flat while the partition was being read).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time

import pyarrow as pa
from peak_memory import peak_rss_bytes  # benchmark-local module beside this script

from kafka_format.log.cleaner import clean_partition, write_cleaned_partition
from kafka_format.log.topicconfig import load_topic_configs
from kafka_format.storage.logdir import open_log_dirs

STAGE = {"name": "start"}


def _rss() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def _sampler(path: str, t0: float, stop: threading.Event) -> None:
    with open(path, "a", encoding="utf-8") as out:
        while not stop.is_set():
            out.write(json.dumps({"t": round(time.monotonic() - t0, 1), "stage": STAGE["name"],
                                  "rss_mb": round(_rss() / 2**20, 1),
                                  "arrow_mb": round(pa.total_allocated_bytes() / 2**20, 1)}) + "\n")
            out.flush()
            stop.wait(2.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logdir")
    parser.add_argument("topic")
    parser.add_argument("partition", type=int)
    parser.add_argument("--samples", required=True)
    parser.add_argument("--limit-s", type=float, default=None)
    args = parser.parse_args(argv)
    (rep,) = [p for p in open_log_dirs(args.logdir).all_partitions()
              if p.topic == args.topic and p.partition == args.partition]
    cfg = load_topic_configs(None, overrides=[f"{args.topic}:cleanup.policy=compact"])[args.topic]
    t0 = time.monotonic()
    stop = threading.Event()
    threading.Thread(target=_sampler, args=(args.samples, t0, stop), daemon=True).start()
    if args.limit_s:
        threading.Timer(args.limit_s, lambda: os._exit(3)).start()
    out = tempfile.mkdtemp(prefix="klogs-scale-cleaner-")
    try:
        STAGE["name"] = "clean"
        res = clean_partition(rep, cfg, 1_700_000_000_000 + 86_400_000, force=True)
        STAGE["name"] = "write segments"
        dest = os.path.join(out, f"{rep.topic}-{rep.partition}")
        os.mkdir(dest)
        write_cleaned_partition(rep, cfg, 0, dest, result=res)
        STAGE["name"] = "decisions"
        n = sum(b.num_rows for b in res.iter_decisions())
        res.close()
        print(json.dumps({"wall_s": round(time.monotonic() - t0, 1), "records": n, "rounds": res.rounds,
                          "records_after": res.records_after, "peak_rss_mb": round(peak_rss_bytes() / 2**20, 1)}))
    finally:
        stop.set()
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
