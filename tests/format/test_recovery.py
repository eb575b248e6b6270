"""klogs recover's core: the broker's log load predicted from crafted log dirs.

Each expectation is written from Kafka 4.4's rules (LogLoader, LogSegment.recover,
LeaderEpochFileCache), not by the code under test: nine batches of ten records, three per
segment (segments 0, 30, 60; LEO 90), epoch 0 for offsets 0-39 and 1 from 40.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from kafka_format.log.recovery import ROW_FIELDS, RecoveryPlan, plan_recovery, recovered_segment_files
from kafka_format.storage.logdir import open_log_dirs
from kafka_format.storage.partition_log import PartitionLog
from kafka_format.writer import BuiltBatch, LogDirWriter, Record, build_v2_batch

NOW = 1_700_000_000_000
INTERVAL = 300
TOPIC_ID = b"\x07" * 16


def _batch(i: int) -> BuiltBatch:
    records = [Record(key=b"k%d" % j, value=bytes([65 + j]) * 100, timestamp=NOW + 10 * i + j) for j in range(10)]
    return build_v2_batch(records, base_offset=10 * i, partition_leader_epoch=0 if i < 4 else 1)


BATCH_SIZE = _batch(0).size


def _logdir(tmp_path: Path, *, clean: bool = True, recovery_point: int | None = None,
            partial_tail: bytes | None = None) -> Path:
    root = tmp_path / "broker"
    d = LogDirWriter(root, node_id=1, cluster_id="recoveryTestCluster000")
    w = d.partition("t", 0, topic_id=TOPIC_ID, segment_bytes=3 * BATCH_SIZE, index_interval_bytes=INTERVAL)
    for i in range(9):
        w.append(_batch(i))
    w.close(partial_tail=partial_tail)
    d.state("t", 0).recovery_point = recovery_point
    d.close(written_at_ms=NOW, clean_shutdown=clean)
    return root


def _plan(root: Path, **kw: Any) -> tuple[PartitionLog, RecoveryPlan]:
    dirs = open_log_dirs(root, include_special=True)
    (ld,) = dirs.log_dirs
    (part,) = ld.partitions
    return part, plan_recovery(part, clean_shutdown=ld.had_clean_shutdown, index_interval_bytes=INTERVAL, **kw)


def _seg(root: Path, base: int, suffix: str) -> Path:
    return root / "t-0" / f"{base:020d}{suffix}"


def test_layout_is_what_the_cases_assume(tmp_path: Path) -> None:
    root = _logdir(tmp_path)
    assert sorted(p.name for p in (root / "t-0").glob("*.log")) == [f"{b:020d}.log" for b in (0, 30, 60)]
    assert all(os.path.getsize(_seg(root, b, ".log")) == 3 * BATCH_SIZE for b in (0, 30, 60))


def test_clean_shutdown_keeps_everything(tmp_path: Path) -> None:
    _part, plan = _plan(_logdir(tmp_path))
    row = plan.row()
    assert tuple(row) == ROW_FIELDS
    assert row["cleanShutdown"] is True
    assert (row["logEndOffset"], row["recoveryPoint"], row["logStartOffset"], row["highWatermark"]) == (90, 90, 0, 90)
    assert row["truncatedAt"] is None and row["bytesDropped"] == 0 and row["recordsDropped"] == 0
    assert row["rebuiltIndexes"] == [] and row["deletedSegments"] == []
    assert row["leaderEpochs"] == [[0, 0], [1, 40]]


def test_unclean_shutdown_recovers_from_the_recovery_point_segment(tmp_path: Path) -> None:
    root = _logdir(tmp_path, clean=False)          # recovery point = LEO 90: the floor segment is 60
    original = _seg(root, 60, ".index").read_bytes(), _seg(root, 60, ".timeindex").read_bytes()
    _part, plan = _plan(root)
    assert plan.rebuilt_indexes == (60,) and plan.truncated_at is None
    assert (plan.log_end_offset, plan.recovery_point) == (90, 90)
    r = plan.recovered[60]
    # batch 1 at 1 x BATCH_SIZE > 300 bytes since the entry at 0: entries for batches 2 and 3
    assert r.offset_entries == ((79, BATCH_SIZE), (89, 2 * BATCH_SIZE))
    assert r.time_entries == ((NOW + 79, 79), (NOW + 89, 89))
    assert (r.index_bytes(), r.timeindex_bytes()) == original


def test_stale_recovery_point_recovers_every_later_segment(tmp_path: Path) -> None:
    _part, plan = _plan(_logdir(tmp_path, clean=False, recovery_point=0))
    assert plan.rebuilt_indexes == (0, 30, 60)
    assert plan.recovery_point == 0 and plan.log_end_offset == 90


def test_cut_off_tail_is_truncated_after_a_crash_only(tmp_path: Path) -> None:
    tail = _batch(9).data[:200]
    _part, plan = _plan(_logdir(tmp_path, clean=False, partial_tail=tail))
    assert (plan.truncated_at, plan.bytes_dropped, plan.records_dropped) == (90, 200, 0)
    assert plan.log_end_offset == 90 and plan.deleted_segments == ()
    assert any("truncated 00000000000000000060.log to" in a and "cut off" in a for a in plan.actions)
    _part, clean = _plan(_logdir(tmp_path / "c", clean=True, partial_tail=tail))
    assert clean.truncated_at is None and clean.bytes_dropped == 0


def _flip(root: Path, base: int, position: int) -> None:
    path = _seg(root, base, ".log")
    data = bytearray(path.read_bytes())
    data[position] ^= 0x40
    path.write_bytes(bytes(data))


def test_flipped_byte_mid_segment_truncates_there_and_deletes_later_segments(tmp_path: Path) -> None:
    root = _logdir(tmp_path, clean=False, recovery_point=0)
    _flip(root, 30, BATCH_SIZE + 200)                 # inside batch 4 (offsets 40-49), a record's value
    part, plan = _plan(root)
    assert plan.log_end_offset == 40 and plan.truncated_at == 40
    assert plan.deleted_segments == (60,)
    assert plan.bytes_dropped == 2 * BATCH_SIZE + 3 * BATCH_SIZE
    assert plan.records_dropped == 50                 # offsets 40..89
    assert plan.leader_epochs == ((0, 0),)            # epoch 1 started at 40 >= LEO
    assert plan.high_watermark == 40 and plan.recovery_point == 0
    assert "CRC mismatch" in (plan.recovered[30].reason or "")
    files = dict(recovered_segment_files(part, plan))
    assert sorted(files) == [f"{b:020d}{s}" for b in (0, 30) for s in (".index", ".log", ".timeindex")]
    assert files[f"{30:020d}.log"] == _seg(root, 30, ".log").read_bytes()[:BATCH_SIZE]
    assert files[f"{30:020d}.index"] == b""           # one batch left: no entry
    assert files[f"{30:020d}.timeindex"] == b"".join([(NOW + 39).to_bytes(8, "big"), (9).to_bytes(4, "big")])


def test_flipped_byte_below_the_recovery_point_is_not_seen(tmp_path: Path) -> None:
    root = _logdir(tmp_path, clean=False, recovery_point=60)
    _flip(root, 30, BATCH_SIZE + 200)
    _part, plan = _plan(root)
    assert plan.truncated_at is None and plan.rebuilt_indexes == (60,) and plan.log_end_offset == 90


def test_deleted_index_is_rebuilt_even_after_a_clean_shutdown(tmp_path: Path) -> None:
    root = _logdir(tmp_path)
    original = _seg(root, 0, ".index").read_bytes(), _seg(root, 0, ".timeindex").read_bytes()
    _seg(root, 0, ".index").unlink()
    part, plan = _plan(root)
    assert plan.rebuilt_indexes == (0,) and plan.truncated_at is None and plan.log_end_offset == 90
    files = dict(recovered_segment_files(part, plan))
    assert (files[f"{0:020d}.index"], files[f"{0:020d}.timeindex"]) == original
    assert len(original[0]) == 2 * 8                  # hand check: entries for batches 2 and 3 (offsets 19, 29)


def test_zeroed_index_is_trusted_below_the_recovery_point(tmp_path: Path) -> None:
    root = _logdir(tmp_path)
    _seg(root, 0, ".index").write_bytes(bytes(16))     # sanityCheck only asks that the file exists
    _part, plan = _plan(root)
    assert plan.rebuilt_indexes == () and plan.log_end_offset == 90


def test_deleted_timeindex_alone_is_created_empty(tmp_path: Path) -> None:
    root = _logdir(tmp_path)
    _seg(root, 30, ".timeindex").unlink()
    _part, plan = _plan(root)
    assert plan.rebuilt_indexes == ()
    assert any("created an empty 00000000000000000030.timeindex" in a for a in plan.actions)


def test_swap_cleaned_and_deleted_leftovers(tmp_path: Path) -> None:
    root = _logdir(tmp_path)
    pdir = root / "t-0"
    shutil.copy(_seg(root, 0, ".log"), pdir / f"{0:020d}.log.swap")        # an interrupted cleaner swap
    shutil.copy(_seg(root, 30, ".log"), pdir / f"{30:020d}.log.deleted")
    (pdir / f"{60:020d}.log.cleaned").write_bytes(b"")
    shutil.copy(_seg(root, 60, ".log"), pdir / f"{60:020d}.log.swap")      # at/above the .cleaned: dropped
    _part, plan = _plan(root)
    actions = "\n".join(plan.actions)
    assert f"deleted {30:020d}.log.deleted" in actions
    assert f"deleted {60:020d}.log.cleaned" in actions
    assert f"deleted {60:020d}.log.swap" in actions
    assert f"swap completed: renamed {0:020d}.log.swap to {0:020d}.log" in actions
    assert plan.log_end_offset == 90


def test_delete_dir_is_not_recovered(tmp_path: Path) -> None:
    root = _logdir(tmp_path, clean=False, recovery_point=0)
    (root / "t-0").rename(root / "t-0.0123456789abcdef0123456789abcdef-delete")
    _part, plan = _plan(root)
    assert plan.kind == "delete" and plan.rebuilt_indexes == ()
    assert any("-delete dir" in a for a in plan.actions)


def test_topic_id_mismatch_is_reported(tmp_path: Path) -> None:
    part, plan = _plan(_logdir(tmp_path), expected_topic_id="AAAAAAAAAAAAAAAAAAAAAA")
    assert part.topic_id != "AAAAAAAAAAAAAAAAAAAAAA"
    assert any("stray" in a for a in plan.actions)


def test_log_start_checkpoint_moves_the_first_epoch(tmp_path: Path) -> None:
    root = tmp_path / "broker"
    d = LogDirWriter(root, node_id=1, cluster_id="recoveryTestCluster000")
    w = d.partition("t", 0, topic_id=TOPIC_ID, segment_bytes=3 * BATCH_SIZE, index_interval_bytes=INTERVAL)
    for i in range(9):
        w.append(_batch(i))
    w.close()
    d.state("t", 0).log_start_offset = 45
    d.close(written_at_ms=NOW)
    _part, plan = _plan(root)
    assert plan.log_start_offset == 45
    assert plan.leader_epochs == ((1, 45),)           # (0,0) and (1,40) start at or before 45: (1,45)


def test_a_batch_offset_beyond_the_segment_makes_the_load_fail(tmp_path: Path) -> None:
    root = _logdir(tmp_path, clean=False)
    _flip(root, 60, BATCH_SIZE + 0)                   # high byte of batch 7's baseOffset: CRC does not cover it
    _part, plan = _plan(root)
    assert plan.truncated_at is None and plan.bytes_dropped == 0
    assert any("offset overflow" in a and "does not start" in a for a in plan.actions)
