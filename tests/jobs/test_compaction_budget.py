"""``klogs compaction`` under a deliberately tiny memory budget: an offset map of 18 keys
(``log.cleaner.dedupe.buffer.size`` turned down) on a partition of 300 distinct keys, 6,000 records
in 20 segments.  The cleaner needs many rounds (Kafka's shape: each round maps what fits, then
rewrites everything below its end) and still finishes with what one big map would give.

Oracle (independent of the product): kafka-python reads the records; with no tombstones, null
keys or transactions, after all rounds a record below the first uncleanable offset (the active
segment's base) is kept exactly when no later record of its key lies below that offset, and every
record at/after it is kept.
"""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import pyarrow.parquet as pq
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record import MemoryRecords

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
KEYS = 300
RECORDS = 6_000
PER_BATCH = 20
MAP_KEYS = 18           # int(20 slots * 0.9): dedupe buffer 480 bytes / (16-byte MD5 + 8-byte offset)


def _write(root: Path) -> Path:
    from kafka_format.writer import LogDirWriter, Record, build_v2_batch

    rng = random.Random(14)
    ld = LogDirWriter(root / "broker", node_id=1, cluster_id="QnVkZ2V0VGVzdENsdXN0ZXI")
    w = ld.partition("budget", 0, topic_id=b"\x0e" * 16)
    for base in range(0, RECORDS, PER_BATCH):
        if base and base % (RECORDS // 20) == 0:
            w.roll()
        w.append(build_v2_batch([Record(b"key-%04d" % rng.randrange(KEYS), b"v%06d" % (base + i), T0 + base + i)
                                 for i in range(PER_BATCH)], base_offset=base, codec=3))
    w.close()
    ld.close(written_at_ms=T0 + 3_600_000)
    return root / "broker"


def _records(pdir: Path) -> list[tuple[int, bytes, bytes]]:
    out = []
    for log in sorted(pdir.glob("*.log")):
        mr = MemoryRecords(log.read_bytes())
        while (batch := mr.next_batch()) is not None:
            out += [(r.offset, bytes(r.key), bytes(r.value)) for r in batch]
    return out


def test_tiny_offset_map_many_rounds_same_outcome(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from kafka_format.cli import main

    logdir = _write(tmp_path / "in")
    pdir = logdir / "budget-0"
    before = _records(pdir)
    assert len(before) == RECORDS and len({k for _, k, _ in before}) == KEYS
    first_uncleanable = max(int(p.name[:20]) for p in pdir.glob("*.log"))   # the active segment's base
    later: dict[bytes, int] = {}
    for off, key, _ in before:
        if off < first_uncleanable:
            later[key] = off
    expected_kept = {off for off, key, _ in before if off >= first_uncleanable or later[key] == off}

    out = tmp_path / "out"
    code = main(["compaction", str(logdir), "--now", str(T0 + 86_400_000), "--force", "--write-segments",
                 "--config", "*:cleanup.policy=compact",
                 "--config", f"*:log.cleaner.dedupe.buffer.size={24 * 20}", "--out", str(out)])
    assert code == 0
    (part,) = json.loads((out / "summary.json").read_text())["partitions"]
    assert part["rounds"] >= KEYS // MAP_KEYS            # the map filled again and again
    assert part["firstDirtyAfter"] == first_uncleanable
    table = pq.read_table(out / "records")
    decided = dict(zip(table.column("offset").to_pylist(), table.column("decision").to_pylist()))
    assert sorted(decided) == [off for off, _, _ in before]
    assert {off for off, d in decided.items() if d == "keep"} == expected_kept
    assert part["recordsAfter"] == len(expected_kept)
    cleaned = _records(out / part["segmentsDir"])
    assert [off for off, _, _ in cleaned] == sorted(expected_kept)
    values = {off: (key, value) for off, key, value in before}
    assert all(values[off] == (key, value) for off, key, value in cleaned)
