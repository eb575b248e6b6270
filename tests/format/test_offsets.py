"""ListOffsets offline (kafka_format.log.list_offsets) against a brute-force oracle and the index-only bar.

The oracle decodes every record of a partition (decode_file / iter_batches) and applies spec §6
plainly: the first record in offset order with ts >= target and offset >= logStartOffset, in a
batch with maxTimestamp >= target, inside the first segment whose largest timestamp >= target
(mtime when it has none); MAX_TIMESTAMP = first record carrying the greatest batch maxTimestamp
of the first segment holding it; then the HW (read_uncommitted) / LSO (read_committed) filter.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import kafka_format as kf
from kafka_format.log.list_offsets import OffsetAnswer, PartitionLookup, list_offsets, parse_timestamp_spec
from kafka_format.read.planning import open_partitions
from kafka_format.storage.logdir import PartitionLog
from kafka_format.writer import (
    CODEC_GZIP,
    CODEC_NONE,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    LOG_APPEND_TIME,
    LogDirWriter,
    Record,
    build_control_batch,
    build_v2_batch,
)

SAMPLES = Path(__file__).resolve().parents[2] / "data_samples" / "logdirs"
SPECIALS = (-1, -2, -3, -4, -5, -6)
ISOLATIONS = ("read_uncommitted", "read_committed")


# --- the oracle ----------------------------------------------------------------------------
@dataclass
class _Batch:
    segment: int
    base_offset: int
    last_offset: int
    max_ts: int
    magic: int
    epoch: int
    txn: bool
    control: bool
    pid: int
    offsets: np.ndarray
    stamps: np.ndarray


class Oracle:
    """Every batch and record of a replica, decoded, and spec §6 applied by brute force."""

    def __init__(self, replica: PartitionLog) -> None:
        self.replica = replica
        self.batches: list[_Batch] = []
        self.seg_max: list[int] = []
        for i, seg in enumerate(replica.segments):
            by_pos: dict[int, tuple[list[int], list[int]]] = {}
            for rb in kf.decode_file(seg.log_path):
                cols = rb.select(["offset", "timestamp", "position"])
                us = cols.column("timestamp").cast("int64").fill_null(-1000).to_pylist()
                for off, t, pos in zip(cols.column("offset").to_pylist(), us,
                                       cols.column("position").to_pylist(), strict=True):
                    o, s = by_pos.setdefault(pos, ([], []))
                    o.append(off)
                    s.append(t // 1000)
            seg_max = -1
            for h in kf.iter_batches(seg.log_path):
                o, s = by_pos.get(h.position, ([], []))
                self.batches.append(_Batch(
                    i, h.last_offset if h.base_offset is None else h.base_offset, h.last_offset, h.max_timestamp,
                    h.magic, -1 if h.partition_leader_epoch is None else h.partition_leader_epoch,
                    h.is_transactional, h.is_control, -1 if h.producer_id is None else h.producer_id,
                    np.array(o, np.int64), np.array(s, np.int64)))
                seg_max = max(seg_max, h.max_timestamp)
            self.seg_max.append(seg_max)
        self.log_start = max(replica.log_start_offset_checkpoint or 0,
                             replica.segments[0].base_offset if replica.segments else 0)
        last_seg = len(replica.segments) - 1
        in_last = [b for b in self.batches if b.segment == last_seg]
        self.leo = in_last[-1].last_offset + 1 if in_last else replica.segments[-1].base_offset
        hw = replica.high_watermark_checkpoint
        self.hw = self.leo if hw is None else max(self.log_start, min(hw, self.leo))
        open_txns: dict[int, int] = {}
        for b in self.batches:
            if b.base_offset >= self.hw or not b.txn:
                continue
            if b.control:
                open_txns.pop(b.pid, None)
            else:
                open_txns.setdefault(b.pid, b.base_offset)
        # first unstable offset, raised to logStartOffset (UnifiedLog.maybeIncrementFirstUnstableOffset)
        unstable = [max(first, self.log_start) for first in open_txns.values()]
        self.lso = min([self.hw, *unstable])
        entries = replica.leader_epochs.entries if replica.leader_epochs else ()
        self.latest_epoch = entries[-1].epoch if entries else None
        starting = [e.epoch for e in entries if e.start_offset <= self.log_start]
        self.earliest_epoch = starting[-1] if starting else None

    def largest(self, i: int) -> int:
        if self.seg_max[i] >= 0:
            return self.seg_max[i]
        mtime = self.replica.segments[i].log_mtime_ms
        return -1 if mtime is None else mtime

    def timestamps(self) -> list[int]:
        stamps = sorted({int(t) for b in self.batches for t in b.stamps.tolist()})
        return stamps

    def _search(self, target: int) -> tuple[int, int, int | None] | None:
        chosen = next((i for i in range(len(self.seg_max)) if self.largest(i) >= target), None)
        if chosen is None:
            return None
        for b in self.batches:
            if b.segment != chosen or b.max_ts < target:
                continue
            for off, ts in zip(b.offsets.tolist(), b.stamps.tolist(), strict=True):
                if ts >= target and off >= self.log_start:
                    return ts, off, None if b.epoch == -1 else b.epoch
        return None

    def _max_timestamp(self) -> tuple[int, int, int | None] | None:
        if not self.seg_max:
            return None
        top = max(self.seg_max)
        chosen = self.seg_max.index(top)
        b = next((b for b in self.batches if b.segment == chosen and b.max_ts == top), None)
        if b is None or b.magic == 0:
            return None
        for off, ts in zip(b.offsets.tolist(), b.stamps.tolist(), strict=True):
            if ts == top:
                return ts, off, b.epoch if b.epoch >= 0 else None
        return None

    def answer(self, spec: int, isolation: str) -> OffsetAnswer:
        fetchable = self.lso if isolation == "read_committed" else self.hw
        if spec == -1:
            return OffsetAnswer(spec, fetchable, None, self.latest_epoch)
        if spec in (-2, -4):
            return OffsetAnswer(spec, self.log_start, None, self.earliest_epoch)
        if spec in (-5, -6):
            return OffsetAnswer(spec, None, None, None)
        found = self._max_timestamp() if spec == -3 else self._search(spec)
        if found is None or found[1] >= fetchable:
            return OffsetAnswer(spec, None, None, None)
        ts, off, epoch = found
        return OffsetAnswer(spec, off, None if ts == -1 else ts, epoch)


def _targets(oracle: Oracle, limit: int = 40) -> list[int]:
    stamps = oracle.timestamps()
    if len(stamps) > limit:
        stamps = [stamps[int(i)] for i in np.linspace(0, len(stamps) - 1, limit)]
    out = {0, 1}
    for t in stamps:
        out.update((t - 1, t, t + 1))
    for i in range(len(oracle.seg_max)):
        out.update((oracle.largest(i) - 1, oracle.largest(i), oracle.largest(i) + 1))
    return [t for t in sorted(out) if t >= 0] + list(SPECIALS)


def _check_partition(replica: PartitionLog, *, limit: int = 40) -> int:
    oracle = Oracle(replica)
    checked = 0
    # read_committed differs from read_uncommitted only through transactional batches
    isolations = ISOLATIONS if any(b.txn for b in oracle.batches) else ISOLATIONS[:1]
    with PartitionLookup(replica) as lookup:
        for isolation in isolations:
            for spec in _targets(oracle, limit):
                expected = oracle.answer(spec, isolation)
                got = lookup.list_offsets(spec, isolation)
                assert got == expected, (replica.path, isolation, spec)
                checked += 1
    return checked


# --- data_samples --------------------------------------------------------------------------
_SAMPLE_REPLICAS = [(r.log_dir.rsplit("/", 1)[-1], r.topic, r.partition) for r in open_partitions(str(SAMPLES))]


@pytest.mark.parametrize(("broker", "topic", "partition"), _SAMPLE_REPLICAS,
                         ids=[f"{b}/{t}-{p}" for b, t, p in _SAMPLE_REPLICAS])
def test_samples_match_oracle(broker: str, topic: str, partition: int) -> None:
    replica = next(r for r in open_partitions(str(SAMPLES / broker)) if (r.topic, r.partition) == (topic, partition))
    assert _check_partition(replica) > 8


def test_sample_facts_hand_derived() -> None:
    """Facts read off data_samples/README.md and the checkpoints, not from the code under test."""
    parts = {(r.log_dir.rsplit("/", 1)[-1], r.topic, r.partition): r for r in open_partitions(str(SAMPLES))}
    # v2-codecs-1: HW 390 below LEO (checkpoint) -> latest = HW; epochs 0 -> 1
    assert list_offsets(parts["broker-1", "v2-codecs", 1], -1) == OffsetAnswer(-1, 390, None, 1)
    # v2-codecs-2: log-start-offset-checkpoint 185 -> earliest 185 (epoch 0 starts at 0 <= 185)
    assert list_offsets(parts["broker-1", "v2-codecs", 2], -2) == OffsetAnswer(-2, 185, None, 0)
    # legacy-v0: no timestamps anywhere -> a time search finds nothing, max-timestamp none (magic 0)
    v0 = parts["broker-1", "legacy-v0", 0]
    assert list_offsets(v0, 0).offset is None
    assert list_offsets(v0, -3).offset is None
    # first record written at 1 700 000 000 000 ms; offset 0 of v2-codecs-0 carries the first time >= it
    first = list_offsets(parts["broker-1", "v2-codecs", 0], 1_700_000_000_000)
    assert first.offset == 0 and first.record_timestamp is not None and first.record_timestamp >= 1_700_000_000_000
    # transactions: producer 3003's transaction is still open at the end -> LSO < HW = 174
    txn = parts["broker-1", "transactions", 0]
    assert list_offsets(txn, -1).offset == 174
    assert list_offsets(txn, -1, isolation="read_committed").offset < 174
    # broker-2 (crashed follower): HW checkpoint 237 below its log end -> latest 237
    assert list_offsets(parts["broker-2", "v2-codecs", 0], -1).offset == 237


def test_missing_high_watermark_uses_log_end(tmp_path: Path) -> None:
    shutil.copytree(SAMPLES / "broker-1", tmp_path / "b1")
    (tmp_path / "b1" / "replication-offset-checkpoint").unlink()
    replica = next(r for r in open_partitions(str(tmp_path / "b1")) if (r.topic, r.partition) == ("v2-codecs", 1))
    with PartitionLookup(replica) as lookup:
        answer = lookup.list_offsets(-1)
        assert answer.offset == Oracle(replica).leo == 403      # recovery-point = LEO in the README
        assert any("high watermark taken as the log end offset" in n for n in lookup.notes)
    assert _check_partition(replica) > 8


def test_segment_without_index_files_is_searched_as_recovered(tmp_path: Path) -> None:
    """No .index: the broker recovers the segment and rebuilds its indexes (LogSegment.sanityCheck
    -> recover), so its largest timestamp comes from its batches, not from the mtime."""
    shutil.copytree(SAMPLES / "broker-1", tmp_path / "b1")
    part = tmp_path / "b1" / "v2-codecs-3"
    for index in sorted(part.glob("*.index")) + sorted(part.glob("*.timeindex")):
        index.unlink()
    (replica,) = [r for r in open_partitions(str(tmp_path / "b1")) if (r.topic, r.partition) == ("v2-codecs", 3)]
    assert all(s.index_path is None for s in replica.segments)
    assert _check_partition(replica) > 20


def test_corrupt_framing_names_file_and_position(tmp_path: Path) -> None:
    shutil.copytree(SAMPLES / "broker-1" / "v2-codecs-0", tmp_path / "b" / "v2-codecs-0")
    log = tmp_path / "b" / "v2-codecs-0" / "00000000000000000345.log"
    *_, before, last = kf.iter_batches(str(log))
    data = bytearray(log.read_bytes())
    data[last.position + 8:last.position + 12] = (5).to_bytes(4, "big")   # size field 5 < 14
    log.write_bytes(bytes(data))
    (replica,) = open_partitions(str(tmp_path / "b" / "v2-codecs-0"))
    with pytest.raises(kf.CorruptRecordError) as info:
        list_offsets(replica, -1)          # the log end offset scans the active segment's tail
    assert info.value.path == str(log) and info.value.position == last.position
    with PartitionLookup(replica, strict=False) as lookup:   # recovery's view: the log ends there
        assert lookup.log_end_offset() == before.last_offset + 1


# --- writer-made logs ----------------------------------------------------------------------
def _write_log(root: Path, *, stamps: list[int], per_batch: int = 3, segment_bytes: int = 6000,
               lat_every: int = 0, txn_every: int = 0, hw: int | None = None, log_start: int | None = None,
               clean: bool = True, epochs_every: int = 0, value_size: int = 20,
               segment_index_bytes: int = 4096, open_txn_at: int | None = None) -> Path:
    d = LogDirWriter(root / "broker", node_id=1, cluster_id="c" * 22)
    p = d.partition("t", 0, segment_bytes=segment_bytes, index_interval_bytes=256,
                    segment_index_bytes=segment_index_bytes)
    offset = 0
    epoch = 0
    pid = 77
    for n in range(0, len(stamps), per_batch):
        chunk = stamps[n:n + per_batch]
        k = n // per_batch
        if epochs_every and k and k % epochs_every == 0:
            epoch += 1
        recs = [Record(key=b"k%d" % (offset + j), value=b"v" * value_size, timestamp=t) for j, t in enumerate(chunk)]
        txn = bool(txn_every) and k % txn_every == 1
        kwargs: dict[str, Any] = {"partition_leader_epoch": epoch}
        if k == open_txn_at:     # a transaction that never ends (hanging)
            kwargs.update(producer_id=99, producer_epoch=0, base_sequence=0, transactional=True)
        if lat_every and k % lat_every == 0:
            kwargs.update(timestamp_type=LOG_APPEND_TIME, log_append_time=max(chunk) + 5)
        if txn:
            kwargs.update(producer_id=pid, producer_epoch=0, base_sequence=0, transactional=True)
        batch = build_v2_batch(recs, base_offset=offset, codec=CODEC_GZIP if k % 5 == 4 else CODEC_NONE, **kwargs)
        p.append(batch)
        offset = batch.last_offset + 1
        if txn:
            marker = CONTROL_ABORT if k % 2 else CONTROL_COMMIT
            p.append(build_control_batch(marker, base_offset=offset, timestamp=max(chunk), producer_id=pid,
                                         producer_epoch=0, coordinator_epoch=3, partition_leader_epoch=epoch))
            offset += 1
    p.close(clean_shutdown=clean, preallocate_index_bytes=None if clean else segment_index_bytes)
    state = d.state("t", 0)
    if hw is not None:
        state.high_watermark = hw
    if log_start is not None:
        state.log_start_offset = log_start
    d.close(written_at_ms=max(stamps) + 10, clean_shutdown=clean)
    return root / "broker"


def _random_stamps(seed: int, n: int, *, skew: bool) -> list[int]:
    rng = np.random.default_rng(seed)
    base = 1_700_000_000_000
    steps = rng.integers(0, 40, n).cumsum() + base
    if skew:   # producer clock skew: some records far in the past / future, plateaus
        jumps = rng.random(n)
        steps = np.where(jumps < 0.05, steps + 5_000_000, steps)
        steps = np.where((jumps > 0.95), steps - 3_000_000, steps)
    return [int(x) for x in steps]


WRITER_CASES = {
    "monotonic": {"stamps": _random_stamps(1, 900, skew=False)},
    "non-monotonic-future": {"stamps": _random_stamps(2, 900, skew=True)},
    "log-append-time": {"stamps": _random_stamps(3, 600, skew=True), "lat_every": 3},
    "transactions-hw": {"stamps": _random_stamps(4, 600, skew=False), "txn_every": 4, "hw": 500},
    "log-start-inside": {"stamps": _random_stamps(5, 700, skew=True), "log_start": 333},
    "crashed-preallocated": {"stamps": _random_stamps(6, 700, skew=True), "clean": False, "epochs_every": 40},
    "plateau": {"stamps": [1_700_000_000_000 + (i // 200) * 1000 for i in range(800)]},
    "hanging-txn-below-log-start": {"stamps": _random_stamps(7, 600, skew=True), "txn_every": 5,
                                    "open_txn_at": 20, "log_start": 200},
}


@pytest.mark.parametrize("case", sorted(WRITER_CASES))
def test_writer_logs_match_oracle(tmp_path: Path, case: str) -> None:
    root = _write_log(tmp_path, **WRITER_CASES[case])
    (replica,) = open_partitions(str(root))
    assert len(replica.segments) > 2
    assert _check_partition(replica, limit=100) > 15


# --- realdata ------------------------------------------------------------------------------
def test_realdata_matches_oracle(realdata: Path) -> None:
    checked = 0
    for case in sorted(p for p in realdata.iterdir() if p.is_dir()):
        for replica in open_partitions(str(case)):
            if not replica.segments or not any(s.log_size for s in replica.segments):
                continue
            checked += _check_partition(replica, limit=10)
    assert checked > 400


# --- parsing of specs ----------------------------------------------------------------------
@pytest.mark.parametrize(("text", "value"), [
    ("earliest", -2), ("latest", -1), ("max-timestamp", -3), ("-4", -4), ("-6", -6),
    ("1700000000000", 1_700_000_000_000), ("2023-11-14T22:13:20Z", 1_700_000_000_000),
    ("2023-11-14T23:13:20+01:00", 1_700_000_000_000), ("0", 0),
])
def test_parse_timestamp_spec(text: str, value: int) -> None:
    assert parse_timestamp_spec(text) == value


@pytest.mark.parametrize("text", ["-7", "yesterday", "", "12:00", "1969-12-31T23:59:59.999Z"])
def test_parse_timestamp_spec_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="timestamp"):
        parse_timestamp_spec(text)


@pytest.mark.parametrize("text", ["9223372036854775808", "99999999999999999999"])
def test_a_timestamp_outside_javas_long_gets_the_message_of_every_time_flag(text: str) -> None:
    from kafka_format.log.topicconfig import parse_time

    with pytest.raises(ValueError) as as_time:
        parse_time(text)
    with pytest.raises(ValueError) as as_spec:
        parse_timestamp_spec(text)
    assert str(as_spec.value) == str(as_time.value) and "outside Java's long range" in str(as_spec.value)
    assert parse_timestamp_spec("9223372036854775807") == (1 << 63) - 1


# --- the index-only bar (DESIGN §5) --------------------------------------------------------
class _Counting:
    """A positioned-read file that counts the bytes it hands out, per file suffix."""

    def __init__(self, path: str, counts: dict[str, int]) -> None:
        self._f = open(path, "rb")  # noqa: SIM115 - closed by close()
        self._suffix = Path(path).suffix
        self._counts = counts

    def read_at(self, n: int, offset: int) -> bytes:
        self._f.seek(offset)
        data = self._f.read(n)
        self._counts[self._suffix] = self._counts.get(self._suffix, 0) + len(data)
        return data

    def close(self) -> None:
        self._f.close()


BAR_STAMPS = {
    "increasing": _random_stamps(9, 12000, skew=False),
    # long plateaus: few time-index entries, Kafka's own scan would cross many intervals
    "plateaus": [1_700_000_000_000 + (i // 1500) * 1000 + (i % 7 == 0) for i in range(12000)],
}


@pytest.mark.parametrize("shape", sorted(BAR_STAMPS))
def test_lookup_reads_log_n_index_entries_and_one_interval(tmp_path: Path, shape: str) -> None:
    interval = 256
    stamps = BAR_STAMPS[shape]
    root = _write_log(tmp_path, stamps=stamps, per_batch=2, segment_bytes=300_000, value_size=30,
                      segment_index_bytes=1 << 20)
    (replica,) = open_partitions(str(root))
    segs = replica.segments
    entries = max((s.index_size or 0) // 8 for s in segs)
    assert len(segs) >= 3 and entries > 600
    oracle = Oracle(replica)
    biggest = max(int(b.offsets.size) for b in oracle.batches)
    sizes = [h.size for s in segs for h in kf.iter_batches(s.log_path)]
    max_batch = max(sizes)
    assert biggest <= 2
    index_cap = 2 * math.ceil(math.log2(entries) + 2) * 12
    rng = np.random.default_rng(0)
    distinct = np.array(oracle.timestamps())
    targets = sorted({int(t) + d for t in rng.choice(distinct, min(20, distinct.size), replace=False) for d in (0, 1)})
    for target in targets:
        counts: dict[str, int] = {}
        with PartitionLookup(replica, opener=lambda loc: _Counting(loc, counts)) as lookup:  # noqa: B023
            lookup.list_offsets(-1)        # warm-up: per-segment largest timestamps, LEO, HW
            counts.clear()
            got = lookup.list_offsets(target)
        assert got == oracle.answer(target, "read_uncommitted")
        # per lookup: two binary searches in each index of the chosen segment
        assert counts.get(".index", 0) + counts.get(".timeindex", 0) <= 2 * index_cap, (target, counts)
        # batch headers of at most one index interval, plus the one batch decoded
        assert counts.get(".log", 0) <= interval + 2 * max_batch + max_batch, (target, counts)
    # cold: one fresh lookup pays one last-entry read per segment on top (time index + offset index)
    counts = {}
    with PartitionLookup(replica, opener=lambda loc: _Counting(loc, counts)) as lookup:
        lookup.list_offsets(targets[len(targets) // 2])
    per_segment = len(segs) * (12 + 8)
    assert counts[".index"] + counts[".timeindex"] <= 2 * index_cap + per_segment + 2 * index_cap
    whole_index = sum((s.index_size or 0) + (s.timeindex_size or 0) for s in segs)
    assert counts[".index"] + counts[".timeindex"] < whole_index / 20


def test_hanging_transaction_below_log_start_caps_lso_at_log_start(tmp_path: Path) -> None:
    """UnifiedLog.maybeIncrementFirstUnstableOffset raises the first unstable offset to logStartOffset:
    a transaction left open below logStartOffset pins read_committed answers there, not below it."""
    root = _write_log(tmp_path, **WRITER_CASES["hanging-txn-below-log-start"])
    (replica,) = open_partitions(str(root))
    assert replica.log_start_offset == 200
    assert list_offsets(replica, -1, isolation="read_committed") == OffsetAnswer(-1, 200, None, 0)
    assert list_offsets(replica, -2, isolation="read_committed").offset == 200
    assert list_offsets(replica, -3, isolation="read_committed").offset is None    # max is above 200
