"""Split planner (kafka_format.read.planning): pure, no Spark.

Log dirs are generated here: batches built by kafka-python's DefaultRecordBatchBuilder
(an independent encoder), segments and indexes laid out by the broker's per-batch index
rule (LogSegment.append: an entry when more than index.interval.bytes were appended since
the last one, checked before counting the batch; offset = batch last offset).  Expected
answers come from brute force over the rows we wrote, never from the planner.
"""

from __future__ import annotations

import os
import pickle
import struct
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

with warnings.catch_warnings():      # kafka-python 3 imports importlib.resources.read_text (deprecated)
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.default_records import DefaultRecordBatchBuilder

from kafka_format.common.crc import crc32c
from kafka_format.read import planning
from kafka_format.read.planning import Bounds, PlanOptions, Split, open_partitions, plan_splits

INDEX_INTERVAL = 4096
CRC_FROM = 21        # v2 CRC covers attributes..end; attributes start at byte 21
ATTR_AT = 21
CONTROL_BIT = 0x20


@dataclass
class Row:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    producer_id: int = -1
    transactional: bool = False
    control: bool = False
    marker: int | None = None   # 0 abort / 1 commit for control rows


@dataclass
class BatchSpec:
    rows: list[Row]
    producer_id: int = -1
    transactional: bool = False
    control: bool = False


@dataclass
class WrittenPartition:
    path: Path
    batches: list[tuple[int, int, int, int, int]] = field(default_factory=list)  # (seg base, pos, size, base, last)
    rows: list[Row] = field(default_factory=list)
    segments: list[int] = field(default_factory=list)


def build_batch(spec: BatchSpec, codec: int = 0) -> bytes:
    """v2 batch bytes from kafka-python, base offset patched in (not covered by the CRC)."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=spec.transactional,
                                  producer_id=spec.producer_id, producer_epoch=0 if spec.producer_id >= 0 else -1,
                                  base_sequence=0 if spec.producer_id >= 0 else -1, batch_size=1 << 30)
    base = spec.rows[0].offset
    for r in spec.rows:
        b.append(r.offset - base, timestamp=r.timestamp, key=r.key, value=r.value, headers=[])
    raw = bytearray(b.build())
    struct.pack_into(">q", raw, 0, base)
    if spec.control:
        attrs = struct.unpack_from(">h", raw, ATTR_AT)[0] | CONTROL_BIT
        struct.pack_into(">h", raw, ATTR_AT, attrs)
        struct.pack_into(">I", raw, 17, crc32c(bytes(raw[CRC_FROM:])))
    return bytes(raw)


def write_partition(root: Path, topic: str, partition: int, specs: list[BatchSpec], *,
                    segment_bytes: int = 1 << 30, codec: int = 0,
                    aborted: list[tuple[int, int, int, int]] = (),
                    broker_id: int | None = 1, hw: int | None = None) -> WrittenPartition:
    """Write a partition dir like a broker would (roll when the next batch would not fit)."""
    d = root / f"{topic}-{partition}"
    d.mkdir(parents=True, exist_ok=True)
    out = WrittenPartition(d)
    seg_base = None
    log = idx = tidx = None
    pos = since = 0
    max_ts, max_ts_off = -1, 0
    last_time_entry = None

    def close() -> None:
        if seg_base is None:
            return
        if max_ts > (last_time_entry or (-1,))[0] and max_ts >= 0:
            tidx.write(struct.pack(">qi", max_ts, max_ts_off - seg_base))
        log.close()
        idx.close()
        tidx.close()

    for spec in specs:
        data = build_batch(spec, codec)
        base, last = spec.rows[0].offset, spec.rows[-1].offset
        if seg_base is None or pos + len(data) > segment_bytes:
            close()
            seg_base, pos, since = base, 0, 0
            max_ts, max_ts_off, last_time_entry = -1, base, None
            name = d / f"{base:020d}"
            log, idx, tidx = open(f"{name}.log", "wb"), open(f"{name}.index", "wb"), open(f"{name}.timeindex", "wb")
            out.segments.append(base)
        bmax = max(r.timestamp for r in spec.rows)
        if bmax > max_ts:
            max_ts, max_ts_off = bmax, last
        if since > INDEX_INTERVAL:
            idx.write(struct.pack(">ii", last - seg_base, pos))
            if last_time_entry is None or max_ts > last_time_entry[0]:
                tidx.write(struct.pack(">qi", max_ts, max_ts_off - seg_base))
                last_time_entry = (max_ts, max_ts_off)
            since = 0
        log.write(data)
        out.batches.append((seg_base, pos, len(data), base, last))
        pos += len(data)
        since += len(data)
        for r in spec.rows:
            r.producer_id, r.transactional, r.control = spec.producer_id, spec.transactional, spec.control
        out.rows.extend(spec.rows)
    close()
    for first, last, lso, pid in aborted:
        # the entry goes to the segment holding the marker
        seg = max(b for b in out.segments if b <= last)
        with open(d / f"{seg:020d}.txnindex", "ab") as f:
            f.write(struct.pack(">hqqqq", 0, pid, first, last, lso))
    if broker_id is not None:
        (root / "meta.properties").write_text(f"version=0\nbroker.id={broker_id}\n")
    if hw is not None:
        cp = root / "replication-offset-checkpoint"
        lines = cp.read_text().splitlines()[2:] if cp.exists() else []
        lines.append(f"{topic} {partition} {hw}")
        cp.write_text("0\n{}\n{}\n".format(len(lines), "\n".join(lines)))
    return out


def simple_specs(n_batches: int, per_batch: int = 10, value_size: int = 100, start: int = 0,
                 ts0: int = 1_700_000_000_000, ts_step: int = 1, gap: int = 0) -> list[BatchSpec]:
    """Plain data batches with increasing offsets (optional offset gaps between batches)."""
    specs, off = [], start
    for _ in range(n_batches):
        rows = [Row(off + i, ts0 + (off + i) * ts_step, b"k%d" % ((off + i) % 7), os.urandom(value_size))
                for i in range(per_batch)]
        specs.append(BatchSpec(rows))
        off += per_batch + gap
    return specs


def rows_of(splits: list[Split], written: WrittenPartition) -> list[int]:
    """Offsets the splits cover: every written record inside a split's ranges and offset bounds."""
    by_pos = {(s, p): (base, last) for s, p, _, base, last in written.batches}
    out = []
    for sp in splits:
        for r in sp.ranges:
            for (seg, pos), _ in sorted(by_pos.items()):
                if seg == r.segment and pos >= r.start_position and (r.end_position is None or pos < r.end_position):
                    for row in written.rows:
                        b0, b1 = by_pos[(seg, pos)]
                        if b0 <= row.offset <= b1 and (sp.start_offset is None or row.offset >= sp.start_offset) \
                                and (sp.end_offset is None or row.offset < sp.end_offset):
                            out.append(row.offset)
    return out


@pytest.fixture
def big_partition(tmp_path: Path) -> WrittenPartition:
    # 400 batches of ~1.1 KB, segments of ~64 KiB => several segments, each with index entries
    return write_partition(tmp_path, "orders", 0, simple_specs(400), segment_bytes=64 * 1024)


# --- discovery ---------------------------------------------------------------------------
class TestDiscovery:
    def test_finds_segments_checkpoints_and_broker(self, tmp_path: Path) -> None:
        w = write_partition(tmp_path, "a.b-c", 3, simple_specs(5), broker_id=7, hw=42)
        (tmp_path / "a.b-c-3.0123456789abcdef0123456789abcdef-delete").mkdir()
        reps = open_partitions([str(tmp_path)])
        assert [(r.topic, r.partition, r.broker_id, r.high_watermark) for r in reps] == [("a.b-c", 3, 7, 42)]
        assert [s.base_offset for s in reps[0].segments] == w.segments

    def test_partition_dir_and_parent_of_log_dirs(self, tmp_path: Path) -> None:
        write_partition(tmp_path / "b1", "t", 0, simple_specs(2), broker_id=1)
        write_partition(tmp_path / "b2", "t", 0, simple_specs(3), broker_id=2)
        assert {r.broker_id for r in open_partitions([str(tmp_path)])} == {1, 2}
        only = open_partitions([str(tmp_path / "b2" / "t-0")])
        assert [(r.topic, r.broker_id) for r in only] == [("t", 2)]

    def test_parent_of_two_brokers_log_dirs(self) -> None:
        """data_samples/logdirs holds broker-1/ and broker-2/ (names that look like <topic>-<n>)."""
        samples = Path(__file__).resolve().parents[2] / "data_samples" / "logdirs"
        both = open_partitions([str(samples)])
        one = open_partitions([str(samples / "broker-1")]) + open_partitions([str(samples / "broker-2")])
        assert sorted((r.topic, r.partition, r.broker_id) for r in both) == sorted(
            (r.topic, r.partition, r.broker_id) for r in one)
        assert {r.broker_id for r in both} == {1, 2} and len(both) == 12
        assert len(plan_splits([str(samples)])) == 11          # longest replica of v2-codecs-0 only

    def test_swap_cleaned_and_orphans_reconciled_as_the_broker_does(self, tmp_path: Path) -> None:
        """An interrupted cleaner swap: ``.log.swap`` replaces the segment; ``.cleaned`` files
        and index files without a ``.log`` (orphans) are not read (spec §1.4)."""
        w = write_partition(tmp_path, "sw", 0, simple_specs(60), segment_bytes=20_000)
        second = w.path / f"{w.segments[1]:020d}.log"
        second.rename(second.with_name(second.name + ".swap"))
        (w.path / f"{w.segments[-1] + 10_000:020d}.log.cleaned").write_bytes(os.urandom(500))
        (w.path / f"{w.segments[-1] + 20_000:020d}.index").write_bytes(bytes(8))
        rep = open_partitions([str(tmp_path)])[0]
        assert [s.base_offset for s in rep.segments] == w.segments
        assert rep.segments[1].from_swap and rep.segments[1].log_path.endswith(".log.swap")
        splits = plan_splits([str(tmp_path)], PlanOptions(max_bytes_per_partition=7000))
        assert sorted(rows_of(splits, w)) == [r.offset for r in w.rows]

    def test_missing_path_is_a_log_dir_error(self, tmp_path: Path) -> None:
        from kafka_format.common.errors import LogDirError

        with pytest.raises(LogDirError):
            open_partitions([str(tmp_path / "nope")])

    def test_file_uri(self, tmp_path: Path) -> None:
        write_partition(tmp_path, "t", 1, simple_specs(3))
        reps = open_partitions([tmp_path.as_uri()])
        assert reps[0].segments[0].log_path == str(tmp_path / "t-1" / "00000000000000000000.log")
        assert planning.log_end_offset(reps[0]) == 30


# --- splitting ---------------------------------------------------------------------------
class TestSplitting:
    def test_default_one_split_covers_everything(self, big_partition: WrittenPartition) -> None:
        splits = plan_splits([str(big_partition.path.parent)])
        assert len(splits) == 1
        assert sorted(rows_of(splits, big_partition)) == [r.offset for r in big_partition.rows]

    @pytest.mark.parametrize("max_bytes", [5000, 20_000, 64 * 1024, 200_000])
    def test_cuts_at_batch_boundaries_cover_every_row_once(self, big_partition: WrittenPartition,
                                                           max_bytes: int) -> None:
        splits = plan_splits([str(big_partition.path.parent)], PlanOptions(max_bytes_per_partition=max_bytes))
        starts = {(s, p) for s, p, *_ in big_partition.batches}
        for sp in splits:
            for r in sp.ranges:
                assert (r.segment, r.start_position) in starts       # never inside a batch
        assert sorted(rows_of(splits, big_partition)) == [r.offset for r in big_partition.rows]
        total = sum(b[2] for b in big_partition.batches)
        assert len(splits) >= total // (max_bytes + 64 * 1024)
        for sp in splits:
            first_batch = min((s, p) for s, p, *_ in big_partition.batches
                              if s == sp.ranges[0].segment and p >= sp.ranges[0].start_position)
            base = next(b[3] for b in big_partition.batches if (b[0], b[1]) == first_batch)
            assert sp.ranges[0].first_offset <= base

    def test_min_partitions_cuts_further(self, big_partition: WrittenPartition) -> None:
        splits = plan_splits([str(big_partition.path.parent)], PlanOptions(min_partitions=20))
        assert len(splits) >= 20
        assert sorted(rows_of(splits, big_partition)) == [r.offset for r in big_partition.rows]

    @pytest.mark.parametrize("parallelism", [2, 4, 7])
    def test_session_parallelism_sizes_splits_as_sparks_file_sources(self, big_partition: WrittenPartition,
                                                                      parallelism: int) -> None:
        total = sum(b[2] for b in big_partition.batches)
        one = plan_splits([str(big_partition.path.parent)])
        assert len(one) == 1                                   # 128 MiB default: one split for ~450 KB
        opts = PlanOptions(default_parallelism=parallelism, open_cost_bytes=16 * 1024)
        splits = plan_splits([str(big_partition.path.parent)], opts)
        want = min(128 << 20, max(16 * 1024, -(-total // parallelism)))      # FilePartition.maxSplitBytes
        assert len(splits) >= parallelism                      # every core gets work
        assert all((s.size_bytes or 0) <= want + 2 * 1100 for s in splits)    # cut at batch boundaries
        assert sorted(rows_of(splits, big_partition)) == [r.offset for r in big_partition.rows]

    def test_open_cost_keeps_small_reads_in_few_splits(self, big_partition: WrittenPartition) -> None:
        opts = PlanOptions(default_parallelism=64, open_cost_bytes=4 << 20)   # 4 MiB > the whole read
        assert len(plan_splits([str(big_partition.path.parent)], opts)) == 1

    def test_splits_are_picklable_frozen_values(self, big_partition: WrittenPartition) -> None:
        splits = plan_splits([str(big_partition.path.parent)], PlanOptions(max_bytes_per_partition=10_000))
        assert pickle.loads(pickle.dumps(splits)) == splits
        with pytest.raises(AttributeError):
            splits[0].topic = "x"  # type: ignore[misc]

    def test_missing_index_files_still_plan_whole_segments(self, big_partition: WrittenPartition) -> None:
        for p in big_partition.path.glob("*.index"):
            p.unlink()
        splits = plan_splits([str(big_partition.path.parent)], PlanOptions(max_bytes_per_partition=10_000))
        assert len(splits) == len(big_partition.segments)
        assert sorted(rows_of(splits, big_partition)) == [r.offset for r in big_partition.rows]

    def test_zero_filled_preallocated_index_tail_is_ignored(self, big_partition: WrittenPartition) -> None:
        last = big_partition.path / f"{big_partition.segments[-1]:020d}.index"
        with open(last, "ab") as f:
            f.write(bytes(8 * 1000))
        splits = plan_splits([str(big_partition.path.parent)], PlanOptions(max_bytes_per_partition=5000))
        assert sorted(rows_of(splits, big_partition)) == [r.offset for r in big_partition.rows]


class TestPacking:
    """Input partitions of a Spark read: splits packed as Spark's file sources pack files."""

    @staticmethod
    def file_partitions(sizes: list[int], max_bytes: int, open_cost: int, parallelism: int) -> list[list[int]]:
        """Spark's ``FilePartition.maxSplitBytes`` and ``getFilePartitions`` over file lengths, in the
        given order (indexes into ``sizes``)."""
        total = sum(n + open_cost for n in sizes)
        max_split = min(max_bytes, max(open_cost, total // parallelism))
        out: list[list[int]] = []
        current: list[int] = []
        size = 0
        for i, n in enumerate(sizes):
            if current and size + n > max_split:
                out.append(current)
                current, size = [], 0
            current.append(i)
            size += n + open_cost
        return out + ([current] if current else [])

    @pytest.fixture
    def many_small(self, tmp_path: Path) -> list[WrittenPartition]:
        return [write_partition(tmp_path, "many", p, simple_specs(2 + p % 3, start=0)) for p in range(24)]

    @pytest.mark.parametrize("parallelism,open_cost", [(2, 4 << 20), (3, 4 << 20), (2, 1024), (8, 4 << 20)])
    def test_small_partitions_share_tasks_as_sparks_small_files(self, many_small: list[WrittenPartition],
                                                                parallelism: int, open_cost: int) -> None:
        root = many_small[0].path.parent
        opts = PlanOptions(default_parallelism=parallelism, open_cost_bytes=open_cost)
        splits = plan_splits([str(root)], opts)
        assert len(splits) == 24                              # one split per partition
        assert [s.planned_bytes for s in splits] == [s.size_bytes for s in splits]
        assert [s.planned_bytes for s in splits] == [sum(b[2] for b in w.batches) for w in many_small]
        groups = planning.pack_splits(splits, opts)
        assert [s for g in groups for s in g] == splits      # each once, in the planned order
        want = self.file_partitions([s.planned_bytes for s in splits], 128 << 20, open_cost, parallelism)
        assert [[splits.index(s) for s in g] for g in groups] == want
        assert parallelism <= len(groups) < 24 if open_cost > 1024 else len(groups) >= parallelism

    @pytest.mark.parametrize("parallelism", [2, 4, 7])
    def test_a_partition_cut_for_every_core_keeps_every_core_busy(self, big_partition: WrittenPartition,
                                                                   parallelism: int) -> None:
        opts = PlanOptions(default_parallelism=parallelism, open_cost_bytes=16 * 1024)
        splits = plan_splits([str(big_partition.path.parent)], opts)
        groups = planning.pack_splits(splits, opts)
        assert len(groups) >= parallelism and [s for g in groups for s in g] == splits
        want = self.file_partitions([s.planned_bytes for s in splits], 128 << 20, 16 * 1024, parallelism)
        assert [[splits.index(s) for s in g] for g in groups] == want

    def test_min_partitions_is_never_packed_below(self, many_small: list[WrittenPartition]) -> None:
        opts = PlanOptions(default_parallelism=2, min_partitions=10)
        splits = plan_splits([str(many_small[0].path.parent)], opts)
        assert planning.pack_splits(splits, opts) == [(s,) for s in splits]


# --- offset bounds -----------------------------------------------------------------------
class TestOffsetBounds:
    @pytest.mark.parametrize("start,end", [(0, None), (1234, None), (1234, 2777), (3999, 4000), (None, 15),
                                           (2500, 2500)])
    def test_rows_equal_brute_force(self, big_partition: WrittenPartition, start: int | None,
                                    end: int | None) -> None:
        b = Bounds(min_offset=start, max_offset=None if end is None else end - 1)
        splits = plan_splits([str(big_partition.path.parent)], PlanOptions(max_bytes_per_partition=8000), b)
        want = [r.offset for r in big_partition.rows
                if (start is None or r.offset >= start) and (end is None or r.offset < end)]
        assert sorted(rows_of(splits, big_partition)) == want

    def test_skips_segments_and_index_ranges(self, big_partition: WrittenPartition) -> None:
        all_bytes = sum(sp.size_bytes for sp in plan_splits([str(big_partition.path.parent)]))
        b = Bounds(start={("orders", 0): 3000}, end={("orders", 0): 3010})
        splits = plan_splits([str(big_partition.path.parent)], PlanOptions(), b)
        covered = sum(sp.size_bytes for sp in splits)
        assert covered <= 2 * (INDEX_INTERVAL + 1200)           # about one index interval, not the log
        assert covered < all_bytes / 20
        assert sorted(rows_of(splits, big_partition)) == list(range(3000, 3010))

    def test_gappy_offsets(self, tmp_path: Path) -> None:
        w = write_partition(tmp_path, "c", 0, simple_specs(200, gap=5), segment_bytes=40_000)
        for start in (0, 12, 13, 17, 999, 2990):
            splits = plan_splits([str(tmp_path)], PlanOptions(max_bytes_per_partition=6000), Bounds(min_offset=start))
            assert sorted(rows_of(splits, w)) == [r.offset for r in w.rows if r.offset >= start]

    def test_latest_start_is_empty(self, big_partition: WrittenPartition) -> None:
        assert plan_splits([str(big_partition.path.parent)], None, Bounds(start={("orders", 0): -1})) == []

    def test_json_must_name_every_selected_partition(self, tmp_path: Path) -> None:
        write_partition(tmp_path, "t", 0, simple_specs(2))
        write_partition(tmp_path, "t", 1, simple_specs(2))
        with pytest.raises(ValueError, match="must specify all"):
            plan_splits([str(tmp_path)], PlanOptions(), Bounds(start={("t", 0): 0}))
        ok = plan_splits([str(tmp_path)], PlanOptions(assign={"t": (0,)}), Bounds(start={("t", 0): 5}))
        assert [(s.partition, s.start_offset) for s in ok] == [(0, 5)]


# --- timestamp bounds (ListOffsets, spec §6.1) ------------------------------------------
def list_offsets_oracle(w: WrittenPartition, target: int) -> int | None:
    """First record with timestamp >= target inside the first segment whose max timestamp >= target."""
    for i, seg in enumerate(w.segments):
        nxt = w.segments[i + 1] if i + 1 < len(w.segments) else None
        rows = [r for r in w.rows if r.offset >= seg and (nxt is None or r.offset < nxt)]
        if rows and max(r.timestamp for r in rows) >= target:
            return next((r.offset for r in rows if r.timestamp >= target), None)
    return None


class TestTimestamps:
    @pytest.fixture
    def shuffled(self, tmp_path: Path) -> WrittenPartition:
        import random

        rnd = random.Random(7)
        specs = simple_specs(300, ts_step=10)
        for s in specs:                       # non-monotonic timestamps inside and across batches
            for r in s.rows:
                r.timestamp += rnd.randint(-3000, 3000)
        return write_partition(tmp_path, "ts", 0, specs, segment_bytes=50_000)

    def test_resolve_matches_list_offsets_oracle(self, shuffled: WrittenPartition) -> None:
        rep = open_partitions([str(shuffled.path.parent)])[0]
        ts = sorted({r.timestamp for r in shuffled.rows})
        for target in [ts[0] - 1, ts[0], *ts[:: max(1, len(ts) // 40)], ts[-1], ts[-1] + 1]:
            want = list_offsets_oracle(shuffled, target)
            hit = planning.resolve_timestamp(rep, target)
            if want is None:
                assert hit is None
            else:
                assert hit is not None and hit.base_offset <= want <= hit.last_offset, target

    def test_starting_timestamp_plan_starts_at_the_hit_batch(self, shuffled: WrittenPartition) -> None:
        target = sorted(r.timestamp for r in shuffled.rows)[len(shuffled.rows) // 2]
        want = list_offsets_oracle(shuffled, target)
        splits = plan_splits([str(shuffled.path.parent)], PlanOptions(max_bytes_per_partition=9000),
                             Bounds(start_timestamp_all=target))
        assert splits[0].start_timestamp is not None and splits[0].start_timestamp[1] == target
        offsets = sorted(rows_of(splits, shuffled))
        assert offsets[0] <= want and want - offsets[0] < 10      # the hit batch, then everything after
        assert offsets[-1] == shuffled.rows[-1].offset

    def test_future_starting_timestamp(self, shuffled: WrittenPartition) -> None:
        future = max(r.timestamp for r in shuffled.rows) + 1
        from kafka_format.common.errors import LogDirError

        with pytest.raises(LogDirError, match="no offset for starting timestamp"):
            plan_splits([str(shuffled.path.parent)], None, Bounds(start_timestamp_all=future))
        assert plan_splits([str(shuffled.path.parent)], None,
                           Bounds(start_timestamp_all=future, starting_timestamp_strategy="latest")) == []

    def test_future_ending_timestamp_means_latest(self, shuffled: WrittenPartition) -> None:
        future = max(r.timestamp for r in shuffled.rows) + 1
        splits = plan_splits([str(shuffled.path.parent)], None, Bounds(end_timestamp_all=future))
        assert sorted(rows_of(splits, shuffled)) == [r.offset for r in shuffled.rows]

    def test_min_timestamp_prunes_closed_segments_only_safely(self, tmp_path: Path) -> None:
        w = write_partition(tmp_path, "m", 0, simple_specs(300, ts_step=10), segment_bytes=50_000)
        cut = w.rows[2000].timestamp
        splits = plan_splits([str(tmp_path)], PlanOptions(max_bytes_per_partition=6000), Bounds(min_timestamp=cut))
        got = set(rows_of(splits, w))
        assert {r.offset for r in w.rows if r.timestamp >= cut} <= got     # nothing needed is pruned
        assert len(got) < len(w.rows) * 0.6                                # and most is


# --- replicas, high watermark, read_committed --------------------------------------------
class TestReplicasAndIsolation:
    def test_longest_replica_wins_and_all_keeps_every_copy(self, tmp_path: Path) -> None:
        write_partition(tmp_path / "b1", "r", 0, simple_specs(5), broker_id=1)
        write_partition(tmp_path / "b2", "r", 0, simple_specs(8), broker_id=2)
        longest = plan_splits([str(tmp_path)])
        assert [s.broker_id for s in longest] == [2]
        every = plan_splits([str(tmp_path)], PlanOptions(replicas="all"))
        assert sorted(s.broker_id for s in every) == [1, 2]

    def test_high_watermark_caps_end(self, tmp_path: Path) -> None:
        w = write_partition(tmp_path, "h", 0, simple_specs(50), hw=123)
        splits = plan_splits([str(tmp_path)], PlanOptions(up_to="highWatermark"))
        assert splits[0].end_offset == 123
        assert sorted(rows_of(splits, w)) == list(range(123))

    def test_lso_and_aborted_txns(self, tmp_path: Path) -> None:
        pid_a, pid_b = 11, 22
        specs = simple_specs(2)                                              # 0..19
        specs.append(BatchSpec([Row(20, 1, b"a", b"1"), Row(21, 1, b"a", b"2")], pid_a, True))
        specs.append(BatchSpec([Row(22, 1, struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 0))], pid_a, True, True))
        specs.append(BatchSpec([Row(23, 1, b"b", b"1")], pid_b, True))      # never closed: open txn
        specs.extend(simple_specs(2, start=24))                              # 24..43
        w = write_partition(tmp_path, "x", 0, specs, aborted=[(20, 22, 23, pid_a)])
        splits = plan_splits([str(tmp_path)], PlanOptions(read_committed=True))
        assert splits[0].end_offset == 23                                    # LSO = first offset of open txn
        assert splits[0].aborted == ((pid_a, 20, 22),)
        assert max(rows_of(splits, w)) == 22


def test_log_dir_set_input_plans_like_discovery(tmp_path: Path) -> None:
    from kafka_format import open_log_dirs

    w = write_partition(tmp_path / "b1", "q", 0, simple_specs(200), segment_bytes=40_000, hw=1500)
    write_partition(tmp_path / "b2", "q", 0, simple_specs(120), segment_bytes=40_000, broker_id=2)
    opts = PlanOptions(max_bytes_per_partition=9000, up_to="highWatermark")

    def shape(splits: list[Split]) -> list[tuple]:
        return [(s.topic, s.partition, s.broker_id, s.start_offset, s.end_offset,
                 [(r.segment, r.start_position, r.end_position, r.first_offset) for r in s.ranges]) for s in splits]

    from_set = plan_splits(open_log_dirs([str(tmp_path)]), opts)
    assert shape(from_set) == shape(plan_splits([str(tmp_path)], opts))
    assert sorted(rows_of(from_set, w)) == list(range(1500))
