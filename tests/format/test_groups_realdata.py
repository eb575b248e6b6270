"""``klogs groups``' committed offsets on real brokers' ``__consumer_offsets`` (../shared/realdata).

Oracle: the plain rule, applied here to kafka-python's decode of the same segment files -- per
(group, topic, partition) the last OffsetCommit value in offset order below the partition's high
watermark (``replication-offset-checkpoint``, parsed here; no entry: every record), a tombstone
deleting it (these brokers wrote no transactional commits) -- with the commit's offset, metadata
and commit time read by this test from the record's bytes (OffsetCommitValue's layout).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from conftest import REALDATA

from kafka_format.engine.groups import groups_local

pytestmark = pytest.mark.realdata

NOW = 1_800_000_000_000


def _dirs() -> list[Path]:
    if not REALDATA.is_dir():
        return []
    return sorted({p.parent for p in REALDATA.rglob("__consumer_offsets-*") if p.is_dir()})


def _string(data: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">h", data, pos)
    return data[pos + 2:pos + 2 + n].decode(), pos + 2 + n


def _oracle(log_dir: Path) -> dict[tuple[str, str, int], tuple[int, str, int]]:
    """{(group, topic, partition): (offset, metadata, commitTimestamp)} from kafka-python's records."""
    from kafka.record import MemoryRecords

    out: dict[tuple[str, str, int], tuple[int, str, int]] = {}
    hw: dict[str, int] = {}
    checkpoint = log_dir / "replication-offset-checkpoint"
    if checkpoint.exists():
        for line in checkpoint.read_text().splitlines()[2:]:
            topic, part, value = line.rsplit(" ", 2)
            hw[f"{topic}-{part}"] = int(value)
    for pdir in sorted(log_dir.glob("__consumer_offsets-*")):
        limit = hw.get(pdir.name, 2 ** 63)
        for seg in sorted(pdir.glob("*.log")):
            records = MemoryRecords(seg.read_bytes())
            while True:
                batch = records.next_batch()
                if batch is None:
                    break
                if getattr(batch, "is_control_batch", False):
                    continue
                for rec in batch:
                    if rec.offset >= limit:
                        continue
                    key = rec.key
                    if key is None or struct.unpack_from(">h", key, 0)[0] not in (0, 1):
                        continue
                    group, pos = _string(key, 2)
                    topic, pos = _string(key, pos)
                    (partition,) = struct.unpack_from(">i", key, pos)
                    if rec.value is None:
                        out.pop((group, topic, partition), None)
                        continue
                    v = rec.value
                    (version,) = struct.unpack_from(">h", v, 0)
                    (offset,) = struct.unpack_from(">q", v, 2)
                    pos = 10 + (4 if version >= 3 else 0)          # leaderEpoch from v3
                    if version >= 4:                                # flexible: compact string
                        n, pos = v[pos] - 1, pos + 1
                        metadata, pos = v[pos:pos + n].decode(), pos + n
                    else:
                        metadata, pos = _string(v, pos)
                    (commit_ts,) = struct.unpack_from(">q", v, pos)
                    out[(group, topic, partition)] = (offset, metadata, commit_ts)
    return out


@pytest.mark.parametrize("log_dir", _dirs(), ids=lambda p: p.parent.name)
def test_committed_offsets_equal_the_plain_replay_of_a_real_broker(realdata: Path, log_dir: Path) -> None:
    result = groups_local([str(log_dir)], NOW)
    assert [a for a in result.anomalies.to_pylist() if a["kind"] == "refused"] == []
    ours = {(r["group"], r["topic"], r["partition"]): (r["committedOffset"], r["metadata"], r["commitTimestamp"])
            for r in result.rows.to_pylist() if r["committedOffset"] is not None}
    assert ours == _oracle(log_dir)
