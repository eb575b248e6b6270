"""The table view's one rule and the local engine's bounded-memory sort, without Spark.

:func:`decide_sorted` is what both engines call (Spark after its shuffle and sort, the local
engine after :func:`sorted_by_key`); here it meets a brute-force oracle on random rows whose keys
repeat across batch boundaries, fed in batches as small as one row, and the local sort is forced
to spill and merge many runs.  The engines' own runs against kafka-python are in
``test_compaction_full.py``; their equality on whole jobs in ``test_engine_parity.py``.
"""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from kafka_format.engine import table_view
from kafka_format.engine.table_view import (
    decide_sorted,
    merge_counts,
    sorted_by_key,
    summary_counts,
)

SCHEMA = pa.schema([pa.field("key", pa.binary()), pa.field("value", pa.binary()), pa.field("topic", pa.string()),
                    pa.field("partition", pa.int32()), pa.field("offset", pa.int64()), pa.field("logDir", pa.string())])


def _rows(seed: int, n: int, keys: int, *, partitions: int = 1) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        k = rnd.randrange(keys + 1)
        out.append({"key": None if k == keys else b"k%d" % k + b"\xff" * rnd.randrange(2),
                    "value": None if rnd.random() < 0.2 else b"v%d" % i, "topic": "t",
                    "partition": rnd.randrange(partitions), "offset": i, "logDir": "/d"})
    return out


def _oracle(rows: list[dict[str, Any]]) -> dict[tuple[int, int], tuple[str, str, int | None]]:
    """(partition, offset) -> (decision, reason, supersededBy): highest offset per key wins."""
    latest: dict[tuple[int, bytes], int] = {}
    for r in rows:
        if r["key"] is not None:
            k = (r["partition"], r["key"])
            latest[k] = max(latest.get(k, -1), r["offset"])
    out = {}
    for r in rows:
        at = (r["partition"], r["offset"])
        if r["key"] is None:
            out[at] = ("remove", "null-key", None)
        elif r["offset"] < latest[(r["partition"], r["key"])]:
            out[at] = ("remove", "superseded", latest[(r["partition"], r["key"])])
        elif r["value"] is None:
            out[at] = ("remove", "tombstone", None)
        else:
            out[at] = ("keep", "latest", None)
    return out


def _batches(rows: list[dict[str, Any]], size: int) -> list[pa.RecordBatch]:
    return [pa.RecordBatch.from_pylist(rows[i:i + size], schema=SCHEMA) for i in range(0, len(rows), size)]


def _got(batches: Any) -> dict[tuple[int, int], tuple[str, str, int | None]]:
    got = {}
    for b in batches:
        for r in b.to_pylist():
            at = (r["partition"], r["offset"])
            assert at not in got, at                        # every row once
            got[at] = (r["decision"], r["reason"], r["supersededBy"])
    return got


@pytest.mark.parametrize("batch_rows", [1, 3, 64, 5000])
def test_decide_sorted_keys_across_batches(batch_rows: int) -> None:
    """Sorted by (partition, key): runs of one key cut by batch boundaries at every place."""
    rows = _rows(1, 600 if batch_rows == 1 else 3000, 40, partitions=3)
    ordered = sorted(rows, key=lambda r: (r["partition"], r["key"] is not None, r["key"] or b"", r["offset"]))
    assert _got(decide_sorted(_batches(ordered, batch_rows))) == _oracle(rows)


def test_decide_sorted_needs_keys_together_not_offsets_in_order() -> None:
    rows = _rows(2, 500, 7)
    shuffled = sorted(rows, key=lambda r: (r["key"] or b"", random.Random(r["offset"]).random()))
    assert _got(decide_sorted(_batches(shuffled, 17))) == _oracle(rows)


def test_decide_sorted_empty_input() -> None:
    assert list(decide_sorted([])) == []
    assert list(decide_sorted([pa.RecordBatch.from_pylist([], schema=SCHEMA)])) == []


@pytest.mark.parametrize("sort_buffer", [2048, 16384, 1 << 30], ids=["many-runs", "several-runs", "in-memory"])
def test_local_sort_then_rule_matches_oracle(sort_buffer: int, monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Any) -> None:
    """The local engine's path: offset-ordered batches sorted by key in bounded runs, merged, decided."""
    spilled: list[str] = []
    real = table_view._spill
    monkeypatch.setattr(table_view, "_spill", lambda *a: spilled.append(real(*a)) or spilled[-1])
    rows = _rows(3, 2000, 150)
    out = list(decide_sorted(sorted_by_key(_batches(rows, 50), SCHEMA, sort_buffer=sort_buffer,
                                           work_dir=str(tmp_path))))
    assert _got(out) == _oracle(rows)
    assert (len(spilled) > 10) if sort_buffer == 2048 else (len(spilled) > 1) if sort_buffer == 16384 else not spilled
    assert list(tmp_path.iterdir()) == []                  # the runs' files are gone


def test_sorted_by_key_order_and_block_memory() -> None:
    """Non-null keys come out in (key, offset) order; merged blocks stay near the sort buffer."""
    rows = _rows(4, 3000, 50)
    buffer = 8192
    out = list(sorted_by_key(_batches(rows, 40), SCHEMA, sort_buffer=buffer))
    keyed = [(r["key"], r["offset"]) for b in out for r in b.to_pylist() if r["key"] is not None]
    assert keyed == sorted(keyed)
    assert sorted(r["offset"] for b in out for r in b.to_pylist()) == list(range(3000))
    assert max(b.nbytes for b in out) <= 2 * buffer


def test_counts_add_up_over_batches() -> None:
    rows = _rows(5, 2000, 30, partitions=2)
    ordered = sorted(rows, key=lambda r: (r["partition"], r["key"] or b"", r["offset"]))
    decided = list(decide_sorted(_batches(ordered, 33)))
    partial = merge_counts(r for b in decided for r in summary_counts(b).to_pylist())
    oracle = _oracle(rows)
    for s in partial:
        mine = [v for (p, _), v in oracle.items() if p == s["partition"]]
        assert s["recordsBefore"] == len(mine)
        assert s["recordsAfter"] == sum(d == "keep" for d, _, _ in mine)
        assert s["keys"] == len({r["key"] for r in rows if r["partition"] == s["partition"] and r["key"] is not None})
        assert s["keysDeleted"] == sum(r == "tombstone" for _, r, _ in mine)
        assert s["recordsSuperseded"] == sum(r == "superseded" for _, r, _ in mine)
        assert s["nullKeyRecords"] == sum(r == "null-key" for _, r, _ in mine)
    assert sorted(s["partition"] for s in partial) == [0, 1]
