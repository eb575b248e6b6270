"""The cleaner's memory is bounded by its configuration, not by the partition.

One partition of 40,000 records in 40,000 batches (about 8 MB of keys and values, uncompressed, 16
segments) is cleaned twice: with the defaults (one round: the offset map holds every key) and in a
separate process with a deliberately tiny budget: an offset map of 450 keys
(``log.cleaner.dedupe.buffer.size`` = 12,000 bytes, so the 800 keys take two rounds, Kafka's
shape), 256 rows of work files at a time (``batch_rows``, ``klogs compaction --cleaner-batch-rows``)
and a 64 KiB read buffer (``log.cleaner.io.buffer.size``).  The tiny run's peak (Python allocations
by tracemalloc, which sees numpy and the compiled offset map, plus the Arrow memory pool's
high-water mark) must stay under 2.5 MB, below what holding the partition would take: its key and
value bytes alone are 8 MB, and even 80 bytes of state per batch would be 3.2 MB (the run peaks
near 1 MB).  Both runs must agree: every decision, and the written segments byte for byte.

Oracle for the kept set (independent of the product): with no transactions, a record below the
active segment is kept when it is its key's last record there (tombstones are kept: their delete
horizon is not reached) and every record in the active segment is kept; null keys are removed
below it.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
from test_compaction_cleaner import T0, config, replica

from kafka_format.log.cleaner import clean_partition, map_capacity, write_cleaned_partition
from kafka_format.log.topicconfig import load_topic_configs
from kafka_format.writer import LogDirWriter, Record, build_v2_batch

RECORDS = 40_000
PER_BATCH = 1
BATCHES_PER_SEGMENT = 2_500
KEYS_PER_HALF = 400                 # keys 0..399 in the first half of the log, 400..799 in the second
DEDUPE_BYTES = 24 * 500             # 500 slots * 0.9 = 450 keys: fills 50 keys into the second half
MAP_KEYS = 450
BUDGET_BYTES = 2_500_000
NOW = T0 + 86_400_000


def _write(root: Path) -> Path:
    rng = random.Random(14)
    ld = LogDirWriter(root, node_id=1, cluster_id="TWVtb3J5QnVkZ2V0VGVzdA")
    w = ld.partition("t", 0, topic_id=b"\x0e" * 16)
    rows: list[tuple[int, bytes | None, bytes | None]] = []
    for n, base in enumerate(range(0, RECORDS, PER_BATCH)):
        if n and n % BATCHES_PER_SEGMENT == 0:
            w.roll()
        records = []
        for i in range(base, base + PER_BATCH):
            k = rng.randrange(KEYS_PER_HALF) + (KEYS_PER_HALF if i >= RECORDS // 2 else 0)
            key = None if rng.random() < 0.01 else b"key-%05d" % k
            value = None if rng.random() < 0.02 else b"value-%08d-" % i + b"x" * rng.randrange(90, 290)
            records.append(Record(key, value, T0 + i))
            rows.append((i, key, value))
        w.append(build_v2_batch(records, base_offset=base, codec=0))
    w.close()
    ld.close(written_at_ms=T0 + 3_600_000)
    return root


TINY_RUN = textwrap.dedent("""
    import json, sys, tracemalloc
    import pyarrow as pa, pyarrow.ipc as ipc
    from kafka_format.log.cleaner import DECISION_SCHEMA, clean_partition, write_cleaned_partition
    from kafka_format.storage.logdir import open_log_dirs
    from kafka_format.log.topicconfig import load_topic_configs

    root, out, decisions, now, dedupe = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    (rep,) = [p for p in open_log_dirs(root).all_partitions() if p.topic == "t"]
    cfg = load_topic_configs(None, overrides=["t:cleanup.policy=compact",
                                               "*:log.cleaner.dedupe.buffer.size=" + dedupe,
                                               "*:log.cleaner.io.buffer.size=65536"])["t"]
    from kafka_format.common.crc import crc32c
    crc32c(b"")          # the checksum's one-time imports (the crc32c package, lazily) outside the measured span
    pool = pa.default_memory_pool()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    arrow_base = pool.bytes_allocated()
    res = clean_partition(rep, cfg, now, batch_rows=256)
    write_cleaned_partition(rep, cfg, now, out, result=res)
    with ipc.new_file(decisions, DECISION_SCHEMA) as w:
        for batch in res.iter_decisions(max_rows=256):
            w.write_batch(batch)
    peak = tracemalloc.get_traced_memory()[1] - base
    print(json.dumps({"python_peak": peak, "arrow_peak": pool.max_memory() - arrow_base, "rounds": res.rounds,
                      "records_after": res.records_after}))
""")


def test_tiny_budget_cleans_a_partition_many_times_its_size_like_the_defaults(tmp_path: Path) -> None:
    root = _write(tmp_path / "in")
    rep = replica(root)
    cfg = config()
    pdir = Path(rep.path)
    logs = sorted(pdir.glob("*.log"))
    data_bytes = sum(p.stat().st_size for p in logs)
    assert data_bytes > 2 * BUDGET_BYTES      # compressed, the partition alone is larger than the budget
    tiny_cfg = load_topic_configs(None, overrides=["t:cleanup.policy=compact",
                                                   f"*:log.cleaner.dedupe.buffer.size={DEDUPE_BYTES}"])["t"]
    assert map_capacity(tiny_cfg) == MAP_KEYS

    tiny_out = tmp_path / "tiny" / "t-0"
    tiny_out.mkdir(parents=True)
    decisions_file = tmp_path / "tiny-decisions.arrow"
    proc = subprocess.run([sys.executable, "-c", TINY_RUN, str(root), str(tiny_out), str(decisions_file),
                           str(NOW), str(DEDUPE_BYTES)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    tiny = json.loads(proc.stdout.strip().splitlines()[-1])
    assert tiny["rounds"] == 2                       # the map filled: a second round, as Kafka's cleaner
    assert tiny["python_peak"] + tiny["arrow_peak"] < BUDGET_BYTES, tiny

    normal = clean_partition(rep, cfg, NOW, force=False)
    assert normal.rounds == 1
    normal_out = tmp_path / "normal" / "t-0"
    normal_out.mkdir(parents=True)
    write_cleaned_partition(rep, cfg, NOW, str(normal_out), result=normal)
    with ipc.open_file(str(decisions_file)) as f:
        tiny_decisions = f.read_all()
    assert tiny_decisions.num_rows == RECORDS
    expected = normal.decisions
    for name in ("offset", "decision", "isTombstone", "batchBaseOffset"):
        assert tiny_decisions.column(name).to_pylist() == expected.column(name).to_pylist(), name
    # a record two rounds remove in the first is superseded by its key's last offset that round's
    # map saw (Kafka's supersededBy is per round), never a later one than in one round
    for a, b in zip(tiny_decisions.column("supersededBy").to_pylist(), expected.column("supersededBy").to_pylist()):
        assert a == b or (a is not None and b is not None and a < b), (a, b)
    # reasons agree but where the second round's map (the second half's keys) cannot tell: a key of
    # the first half kept by round one is "not-in-map" for round two, "latest" in one round
    for (off, a), b in zip(zip(tiny_decisions.column("offset").to_pylist(), tiny_decisions.column("reason").to_pylist()),
                           expected.column("reason").to_pylist()):
        assert a == b or (a, b) == ("not-in-map", "latest"), (off, a, b)
    assert tiny["records_after"] == normal.records_after

    files = sorted(p.name for p in normal_out.iterdir())
    assert files == sorted(p.name for p in tiny_out.iterdir())
    for name in files:
        assert (normal_out / name).read_bytes() == (tiny_out / name).read_bytes(), name

    # the kept set from the source records, independently of the product
    first_uncleanable = int(logs[-1].name[:20])
    last_of: dict[bytes, int] = {}
    offsets = []
    keys = {}
    for off, key in _source_keys(pdir):
        offsets.append(off)
        keys[off] = key
        if key is not None and off < first_uncleanable:
            last_of[key] = off
    want = {o for o in offsets if o >= first_uncleanable or (keys[o] is not None and last_of[keys[o]] == o)}
    got = {o for o, d in zip(tiny_decisions.column("offset").to_pylist(), tiny_decisions.column("decision").to_pylist())
           if d == "keep"}
    assert got == want


def _source_keys(pdir: Path) -> list[tuple[int, bytes | None]]:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.record import MemoryRecords
    out = []
    for log in sorted(pdir.glob("*.log")):
        mr = MemoryRecords(log.read_bytes())
        while (batch := mr.next_batch()) is not None:
            out += [(r.offset, None if r.key is None else bytes(r.key)) for r in batch]
    return out


def test_batch_rows_must_be_positive(tmp_path: Path) -> None:
    root = _write_small(tmp_path)
    try:
        clean_partition(replica(root), config(), NOW, batch_rows=0)
    except ValueError as exc:
        assert "batch_rows" in str(exc)
    else:
        raise AssertionError("batch_rows=0 accepted")


def _write_small(tmp_path: Path) -> Path:
    ld = LogDirWriter(tmp_path / "small", node_id=1, cluster_id="TWVtb3J5QnVkZ2V0VGVzdA")
    w = ld.partition("t", 0, topic_id=b"\x0e" * 16)
    w.append(build_v2_batch([Record(b"k", b"v", T0)], base_offset=0))
    w.close()
    ld.close(written_at_ms=T0)
    return tmp_path / "small"


_ = pa  # pyarrow is imported for the IPC reader's types
