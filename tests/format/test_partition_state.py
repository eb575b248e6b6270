"""Partition state offline (kafka_format.storage.partition_state, kafka_format.storage.watermarks): one high-watermark
rule for every job, and one batch-header walker.

High watermark on load (Kafka: ``Partition.createLog`` -> ``UnifiedLog.updateHighWatermark``): the
``replication-offset-checkpoint`` entry, raised to the log start offset, capped at the log end
offset.  Before this module ``logdir`` and ``compaction`` only capped it; the cases below are the
ones where that differed (a checkpoint below the log start offset), with the expected numbers
written out from the rule.

Walker oracle: :func:`kafka_format.iter_batches` (the decoder's scan, an independent reader).
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from kafka_format import iter_batches
from kafka_format.common.errors import CorruptRecordError
from kafka_format.log.cleaner import plan_cleaning
from kafka_format.log.list_offsets import list_offsets
from kafka_format.log.retention import partition_facts
from kafka_format.log.topicconfig import load_topic_configs
from kafka_format.storage import partition_state
from kafka_format.storage.logdir import PartitionLog, open_log_dirs
from kafka_format.storage.watermarks import high_watermark_on_load, last_stable_offset_from
from kafka_format.writer import LogDirWriter, Record, build_v2_batch

SAMPLES = Path(__file__).resolve().parents[2] / "data_samples" / "logdirs"
T0 = 1_700_000_000_000


def _partition(tmp_path: Path, *, hw: int | None, log_start: int | None) -> PartitionLog:
    """``t-0`` with offsets [0, 100) in two segments (base 0 and 50), 10 records a batch."""
    d = LogDirWriter(tmp_path / "broker", node_id=1, cluster_id="c" * 22)
    p = d.partition("t", 0)
    for k in range(10):
        if k == 5:
            p.roll()
        recs = [Record(b"k%d" % (10 * k + j), b"v", T0 + 10 * k + j) for j in range(10)]
        p.append(build_v2_batch(recs, base_offset=10 * k))
    p.close()
    st = d.state("t", 0)
    st.high_watermark, st.log_start_offset = hw, log_start
    d.close(written_at_ms=T0 + 1000)
    return open_log_dirs(str(tmp_path / "broker")).replicas("t", 0)[0]


def test_rule_as_written_in_unified_log() -> None:
    assert high_watermark_on_load(30, log_start_offset=55, log_end_offset=100) == 55    # floor
    assert high_watermark_on_load(130, log_start_offset=55, log_end_offset=100) == 100  # cap
    assert high_watermark_on_load(100, log_start_offset=55, log_end_offset=100) == 100
    assert high_watermark_on_load(70, log_start_offset=55, log_end_offset=100) == 70
    assert high_watermark_on_load(30, log_start_offset=55, log_end_offset=None) == 55
    # a damaged replica with LEO below the log start: the cap is applied last
    assert high_watermark_on_load(80, log_start_offset=55, log_end_offset=40) == 40
    assert last_stable_offset_from(None, high_watermark=70, log_start_offset=55) == 70
    assert last_stable_offset_from(60, high_watermark=70, log_start_offset=55) == 60
    assert last_stable_offset_from(20, high_watermark=70, log_start_offset=55) == 55   # raised to log start
    assert last_stable_offset_from(80, high_watermark=70, log_start_offset=55) == 70


def test_checkpoint_below_log_start_is_raised_everywhere(tmp_path: Path) -> None:
    """Checkpoint 30, log start 55, LEO 100: every job sees HW 55 (the old logdir/compaction rule
    gave 30)."""
    rep = _partition(tmp_path, hw=30, log_start=55)
    assert (rep.high_watermark_checkpoint, rep.log_start_offset) == (30, 55)
    assert rep.high_watermark == 55
    assert partition_state.log_end_offset(rep) == 100
    assert partition_state.high_watermark(rep, log_end_offset=100) == 55
    assert partition_facts(rep).high_watermark == 55
    answer = list_offsets(rep, -1)                        # LATEST = HW (read_uncommitted)
    assert answer.offset == 55
    config = load_topic_configs(None, overrides=["t:cleanup.policy=compact"])["t"]
    plan = plan_cleaning(rep, config, T0 + 1000)
    assert (plan.log_end_offset, plan.high_watermark, plan.last_stable_offset) == (100, 55, 55)


def test_checkpoint_above_leo_is_capped_everywhere(tmp_path: Path) -> None:
    rep = _partition(tmp_path, hw=130, log_start=None)
    assert partition_state.high_watermark(rep, log_end_offset=100) == 100
    assert partition_facts(rep).high_watermark == 100
    assert list_offsets(rep, -1).offset == 100
    config = load_topic_configs(None, overrides=["t:cleanup.policy=compact"])["t"]
    plan = plan_cleaning(rep, config, T0 + 1000)
    assert (plan.high_watermark, plan.last_stable_offset) == (100, 100)


def test_missing_checkpoint_entry_loads_zero_then_the_floor(tmp_path: Path) -> None:
    rep = _partition(tmp_path, hw=None, log_start=55)
    # the writer always writes an entry; drop it to get Kafka's "No checkpointed highwatermark"
    rep = type(rep)(**{**rep.__dict__, "high_watermark_checkpoint": None})
    assert rep.high_watermark is None
    assert partition_state.high_watermark(rep, log_end_offset=100) == 55
    assert partition_state.high_watermark(rep, log_end_offset=100, missing=100) == 100


# --- the walker ---------------------------------------------------------------------------------
def _sample_logs() -> list[Path]:
    logs = sorted(p for p in SAMPLES.rglob("*.log") if p.stat().st_size > 0)
    assert logs, "data_samples/logdirs holds segments"
    return logs


@pytest.mark.parametrize("chunk", [0, 100, partition_state.SCAN_CHUNK])
def test_walker_agrees_with_the_decoder_scan(chunk: int) -> None:
    for log in _sample_logs():
        data = log.read_bytes()

        def read_at(n: int, pos: int, data: bytes = data) -> bytes:
            return data[pos:pos + n]

        heads = list(partition_state.walk_batch_heads(read_at, 0, len(data), path=str(log), chunk=chunk))
        want = list(iter_batches(str(log)))
        assert len(heads) == len(want), log
        for h, b in zip(heads, want):
            assert (h.position, h.size, h.magic, h.last_offset) == (b.position, b.size, b.magic, b.last_offset)
            assert h.max_timestamp == b.max_timestamp, log
            if b.magic == 2:
                assert (h.base_offset, h.count, h.producer_id, h.producer_epoch, h.leader_epoch) == \
                    (b.base_offset, b.count, b.producer_id, b.producer_epoch, b.partition_leader_epoch)
                assert (h.is_transactional, h.is_control) == (b.is_transactional, b.is_control)


def _two_batches(tmp_path: Path) -> tuple[Path, int]:
    rep = _partition(tmp_path, hw=None, log_start=None)
    log = Path(rep.segments[0].log_path or "")
    first = next(iter(iter_batches(str(log))))
    return log, first.size


def test_walker_ends_at_partial_and_zero_tails(tmp_path: Path) -> None:
    log, size = _two_batches(tmp_path)
    data = log.read_bytes()
    n = len(list(iter_batches(str(log))))
    for tail in (data[:size + 30], data + bytes(200)):      # a cut batch; a preallocated zero tail
        heads = list(partition_state.walk_batch_heads(lambda k, p, d=tail: d[p:p + k], 0, len(tail)))
        assert len(heads) == (1 if len(tail) < len(data) else n)


def test_walker_corrupt_size_raises_when_strict_and_stops_otherwise(tmp_path: Path) -> None:
    log, size = _two_batches(tmp_path)
    data = bytearray(log.read_bytes())
    struct.pack_into(">i", data, size + 8, 5)                # second entry: size 5 < 14
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError) as err:
        list(partition_state.walk_batch_heads(lambda k, p: bytes(data[p:p + k]), 0, len(data), path=str(log)))
    assert err.value.path == str(log) and err.value.position == size
    assert len(list(partition_state.walk_batch_heads(lambda k, p: bytes(data[p:p + k]), 0, len(data),
                                                     strict=False))) == 1
    rep = open_log_dirs(str(log.parent.parent)).replicas("t", 0)[0]
    assert [h.position for h in partition_state.iter_batch_heads(rep, rep.segments[0])] == [0]
    # LogSegment.readNextOffset of a segment cut there: recovery keeps the first batch
    assert partition_state.next_offset_after(list(partition_state.iter_batch_heads(rep, rep.segments[0])), 0) == 10


def test_sample_replicas_log_end_offset_matches_a_full_decode() -> None:
    for rep in open_log_dirs(str(SAMPLES)).all_partitions():
        if not rep.segments or rep.segments[-1].log_path is None:
            continue
        batches = list(iter_batches(rep.segments[-1].log_path))
        want = batches[-1].last_offset + 1 if batches else rep.segments[-1].base_offset
        assert partition_state.log_end_offset(rep) == want, (rep.topic, rep.partition)


def test_copied_sample_without_offset_index_still_walks(tmp_path: Path) -> None:
    src = SAMPLES / "broker-1" / "transactions-0"
    shutil.copytree(src.parent, tmp_path / "broker-1")
    for idx in (tmp_path / "broker-1" / "transactions-0").glob("*.index"):
        idx.unlink()
    rep = next(p for p in open_log_dirs(str(tmp_path / "broker-1")).all_partitions() if p.topic == "transactions")
    last = rep.segments[-1]
    want = list(iter_batches(last.log_path or ""))
    assert partition_state.log_end_offset(rep) == want[-1].last_offset + 1
