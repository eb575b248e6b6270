"""Last stable offset offline: from the latest producer snapshot, as the broker loads it."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from kafka_format.read import planning
from kafka_format.records.file_records import decode_file
from kafka_format.storage import partition_state
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


@pytest.mark.parametrize("hw", [0, 10, 79, 100, 154, 160, 174, None])
def test_the_cleaner_plan_takes_the_same_lso(tmp_path: Path, hw: int | None) -> None:
    """One replay for both: the cleaner replays producers up to the log end (its
    ``lastRecordsOfActiveProducers``) and takes the LSO from it when its snapshot lies at or below
    HW, else from a replay up to HW; either way the LSO every job computes.  The sample's snapshots
    (154, 174) lie above some of these HWs."""
    from kafka_format.log.cleaner import plan_cleaning
    from kafka_format.log.topicconfig import load_topic_configs

    rep = dataclasses.replace(_replica(SAMPLES), high_watermark_checkpoint=hw)
    leo = partition_state.log_end_offset(rep)
    cfg = load_topic_configs(None, overrides=["transactions:cleanup.policy=compact"])["transactions"]
    plan = plan_cleaning(rep, cfg, 1_700_000_000_000)
    effective = partition_state.high_watermark(rep, log_end_offset=leo, missing=leo)
    assert plan.last_stable_offset == planning.last_stable_offset(rep, effective) == \
        _brute_force_lso(SAMPLES / "broker-1" / "transactions-0", effective, 0)


def test_an_emptied_marker_does_not_end_a_transaction(tmp_path: Path) -> None:
    """``ProducerAppendInfo``: a control batch without its record (a marker batch the cleaner kept
    empty) changes no producer state; only a marker record ends the transaction."""
    from kafka_format.writer import (
        CONTROL_COMMIT,
        LogDirWriter,
        Record,
        build_control_batch,
        build_empty_batch,
        build_v2_batch,
    )

    ld = LogDirWriter(tmp_path / "b", node_id=1, cluster_id="S2xhU2FtcGxlc0NsdXN0ZQ")
    w = ld.partition("t", 0, topic_id=b"\x07" * 16, take_snapshots=False)
    w.append(build_v2_batch([Record(b"k", b"v", 1)], base_offset=0))
    w.append(build_v2_batch([Record(b"k", b"v", 2)], base_offset=1, producer_id=9, producer_epoch=0,
                            base_sequence=0, transactional=True))
    w.append(build_empty_batch(base_offset=2, last_offset_delta=0, max_timestamp=3, producer_id=9, producer_epoch=0,
                               transactional=True, control=True))
    w.append(build_v2_batch([Record(b"k", b"v", 4)], base_offset=3))
    w.append(build_control_batch(CONTROL_COMMIT, base_offset=4, timestamp=5, producer_id=9, producer_epoch=0,
                                 coordinator_epoch=0))
    w.append(build_v2_batch([Record(b"k", b"v", 6)], base_offset=5))
    w.close()
    ld.close(written_at_ms=10)
    rep = _replica(tmp_path / "b", "t")
    assert partition_state.replay_open_transactions(rep, 4) == {9: 1}
    assert partition_state.last_stable_offset(rep, 4) == 1
    assert partition_state.replay_open_transactions(rep, 6) == {}
    assert partition_state.last_stable_offset(rep, 6) == 6
