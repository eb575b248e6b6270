"""Last stable offset offline: from the latest producer snapshot, as the broker loads it."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from kafka_format.storage import partition_state

from kafka_format.read import planning
from kafka_format.records.file_records import decode_file
from kafka_format.storage.logdir import open_log_dirs

SAMPLES = Path(__file__).resolve().parents[2] / "data_samples" / "logdirs"


def _replica(root: Path, topic: str = "transactions"):
    return next(p for p in open_log_dirs(str(root)).all_partitions() if p.topic == topic)


def _brute_force_lso(part_dir: Path, hw: int, log_start: int) -> int:
    """Spec §6.5 over every decoded record (control records included), written plainly."""
    open_txn: dict[int, int] = {}
    for log in sorted(part_dir.glob("*.log")):
        for batch in decode_file(log):
            for r in batch.to_pylist():
                if r["offset"] >= hw or not r["isTransactional"]:
                    continue
                if r["isControl"]:
                    open_txn.pop(r["producerId"], None)
                else:
                    open_txn.setdefault(r["producerId"], r["batchBaseOffset"])
    return max(min([hw, *open_txn.values()]), log_start)


@pytest.mark.parametrize("hw", [0, 10, 79, 100, 154, 160, 174])
def test_snapshot_start_equals_full_replay_and_oracle(hw: int) -> None:
    rep = _replica(SAMPLES)
    assert rep.snapshots, "the sample keeps producer snapshots"
    with_snap = planning.last_stable_offset(rep, hw)
    without = planning.last_stable_offset(dataclasses.replace(rep, snapshots=()), hw)
    assert with_snap == without == _brute_force_lso(SAMPLES / "broker-1" / "transactions-0", hw, 0)


def test_replay_starts_at_the_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    rep = _replica(SAMPLES)
    seen: list[int] = []
    real = partition_state.iter_batch_heads

    def spy(replica, seg, start=0, stop=None):  # type: ignore[no-untyped-def]
        seen.append(seg.base_offset)
        return real(replica, seg, start, stop)

    monkeypatch.setattr(partition_state, "iter_batch_heads", spy)
    planning.last_stable_offset(rep, 174)
    assert seen == [154]             # snapshot 154 covers [0, 154): segments 0 and 79 are not read


def test_a_corrupt_snapshot_falls_back_to_an_older_one(tmp_path: Path) -> None:
    shutil.copytree(SAMPLES / "broker-1", tmp_path / "broker-1")
    part = tmp_path / "broker-1" / "transactions-0"
    for name in ("00000000000000000174.snapshot", "00000000000000000154.snapshot"):
        data = bytearray((part / name).read_bytes())
        data[-1] ^= 0xFF                               # CRC no longer matches
        (part / name).write_bytes(bytes(data))
    rep = _replica(tmp_path)
    assert planning.last_stable_offset(rep, 174) == _brute_force_lso(part, 174, 0)
