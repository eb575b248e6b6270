"""Offline log cleaner (kafka_format.log.cleaner): plan and per-record decisions.

Oracles: batches and records decoded by kafka-python from the files, and Kafka's rules applied
plainly in this file (highest offset per key wins, tombstone horizon, aborted data found by
replaying markers the way a read_committed consumer does), plus hand-derived facts per case.
"""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka.record.memory_records import MemoryRecords as KpMemoryRecords

from kafka_format.log.cleaner import (
    DECISIONS,
    REASONS,
    clean_partition,
    map_capacity,
    plan_cleaning,
)
from kafka_format.log.topicconfig import load_topic_configs
from kafka_format.storage.logdir import open_log_dirs
from kafka_format.writer import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    LogDirWriter,
    Record,
    build_control_batch,
    build_legacy_messages,
    build_v2_batch,
)

T0 = 1_700_000_000_000
DAY = 86_400_000
SAMPLES = Path(__file__).resolve().parents[2] / "data_samples" / "logdirs"


# --- helpers (also used by test_compaction_write.py) -------------------------------------------
class Log:
    """A partition built with the Kafka-exact writer; offsets assigned in order."""

    def __init__(self, root: Path, topic: str = "t", **opts: Any) -> None:
        self.ld = LogDirWriter(root, node_id=1, cluster_id="S2xhU2FtcGxlc0NsdXN0ZQ")
        self.topic = topic
        self.w = self.ld.partition(topic, 0, topic_id=b"\x07" * 16, **opts)
        self.next = 0
        self.ts = T0
        self.seq: dict[int, int] = {}

    def data(self, pairs: list[tuple[bytes | None, bytes | None]], *, codec: int = CODEC_NONE, pid: int = -1,
             txn: bool = False, ts: int | None = None) -> int:
        recs = []
        for k, v in pairs:
            self.ts += 10
            recs.append(Record(k, v, self.ts if ts is None else ts))
        kw: dict[str, Any] = {}
        if pid >= 0:
            kw = {"producer_id": pid, "producer_epoch": 0, "base_sequence": self.seq.get(pid, 0),
                  "transactional": txn}
            self.seq[pid] = self.seq.get(pid, 0) + len(recs)
        b = build_v2_batch(recs, base_offset=self.next, codec=codec, **kw)
        self.w.append(b)
        base = self.next
        self.next = b.last_offset + 1
        return base

    def legacy(self, pairs: list[tuple[bytes | None, bytes | None]], *, magic: int = 1) -> int:
        base = self.next
        for b in build_legacy_messages([Record(k, v, self.ts + i) for i, (k, v) in enumerate(pairs)],
                                       magic=magic, base_offset=self.next):
            self.w.append(b)
            self.next = b.last_offset + 1
        return base

    def marker(self, pid: int, kind: int) -> int:
        self.ts += 10
        b = build_control_batch(kind, base_offset=self.next, timestamp=self.ts, producer_id=pid,
                                producer_epoch=0, coordinator_epoch=3)
        self.w.append(b)
        self.next += 1
        return b.base_offset

    def roll(self) -> None:
        self.w.roll()

    def close(self, *, cleaner_offset: int | None = None, log_start: int | None = None,
              hw: int | None = None, mtimes: Any = None) -> Path:
        self.w.close(mtimes=mtimes)
        st = self.ld.state(self.topic, 0)
        st.cleaner_offset, st.log_start_offset, st.high_watermark = cleaner_offset, log_start, hw
        self.ld.close(written_at_ms=T0 + DAY)
        return self.ld.path


def replica(root: Path, topic: str = "t", partition: int = 0):
    for p in open_log_dirs(str(root)).all_partitions():
        if p.topic == topic and p.partition == partition:
            return p
    raise AssertionError(f"{topic}-{partition} not found under {root}")


def config(topic: str = "t", **values: str):
    flags = [f"{topic}:cleanup.policy=compact"] + [f"{topic}:{k.replace('_', '.')}={v}" for k, v in values.items()]
    return load_topic_configs(None, overrides=flags)[topic]


def written_batches(rep: Any, res: Any, out: Path) -> list[dict[str, Any]]:
    """The batches of the cleaned partition ``res`` describes, written to ``out`` (kafka-python)."""
    from kafka_format.log.cleaner import write_cleaned_partition

    out.mkdir(parents=True)
    write_cleaned_partition(rep, config(), 0, str(out), result=res)
    return kp_batches(out)


def kp_batches(partition_dir: Path) -> list[dict[str, Any]]:
    """Every batch of every .log (kafka-python), with its records, in offset order."""
    out = []
    for log in sorted(partition_dir.glob("*.log")):
        data = log.read_bytes()
        records = KpMemoryRecords(data)
        pos = 0
        while records.has_next():
            b = records.next_batch()
            size = b.size_in_bytes
            info: dict[str, Any] = {"segment": int(log.stem), "position": pos, "size": size, "magic": b.magic,
                                    "raw": data[pos:pos + size], "crc_ok": b.validate_crc()}
            if b.magic == 2:
                info.update(base=b.base_offset, last=b.base_offset + b.last_offset_delta, control=b.is_control_batch,
                            txn=b.is_transactional, pid=b.producer_id, attributes=b.attributes,
                            first_ts=b.first_timestamp, max_ts=b.max_timestamp, count=b.records_count)
            else:
                info.update(control=False, txn=False, pid=-1, attributes=0)
            info["records"] = [{"offset": r.offset, "key": None if r.key is None else bytes(r.key),
                                "value": None if r.value is None else bytes(r.value), "timestamp": r.timestamp,
                                "headers": [(k, None if v is None else bytes(v)) for k, v in (r.headers or [])]
                                if b.magic == 2 else []}
                               for r in b]
            if b.magic < 2:
                info["base"] = info["records"][0]["offset"]
                info["last"] = info["records"][-1]["offset"]
            out.append(info)
            pos += size
    return sorted(out, key=lambda x: x["base"])


def aborted_offsets(batches: list[dict[str, Any]]) -> set[int]:
    """Offsets of aborted transactional data (read_committed replay: data waits for its marker)."""
    pending: dict[int, list[int]] = {}
    aborted: set[int] = set()
    for b in batches:
        if b["control"]:
            key = b["records"][0]["key"] if b["records"] else None
            offs = pending.pop(b["pid"], [])
            if key is not None and int.from_bytes(key[2:4], "big") == CONTROL_ABORT:
                aborted.update(offs)
        elif b["txn"]:
            pending.setdefault(b["pid"], []).extend(r["offset"] for r in b["records"])
    return aborted


HORIZON_BIT = 0x40


def brute_force_kept(batches: list[dict[str, Any]], first_dirty: int, uncleanable: int, now: int,
                     legacy_keep_tombstones: bool = True) -> set[int]:
    """Offsets Kafka keeps among data records (spec §4.3 applied plainly, one big map)."""
    aborted = aborted_offsets(batches)
    latest: dict[bytes, int] = {}
    for b in batches:
        for r in b["records"]:
            if (not b["control"] and r["key"] is not None and r["offset"] not in aborted
                    and first_dirty <= r["offset"] < uncleanable):
                latest[r["key"]] = r["offset"]
    kept = set()
    for b in batches:
        if b["control"]:
            continue
        for r in b["records"]:
            o = r["offset"]
            if o >= uncleanable:
                kept.add(o)
                continue
            if o in aborted or r["key"] is None or o < latest.get(r["key"], -1):
                continue
            if r["value"] is None:
                if b["magic"] == 2:
                    if b["attributes"] & HORIZON_BIT and now >= b["first_ts"]:
                        continue
                elif not legacy_keep_tombstones:
                    continue
            kept.add(o)
    return kept


def kept_offsets(result) -> set[int]:
    t = result.decisions
    return {o for o, d in zip(t["offset"].to_pylist(), t["decision"].to_pylist()) if d == "keep"}


def reasons(result) -> dict[int, str]:
    t = result.decisions
    return dict(zip(t["offset"].to_pylist(), t["reason"].to_pylist()))


def data_offsets(batches: list[dict[str, Any]], control: bool = False) -> list[int]:
    return [r["offset"] for b in batches if b["control"] == control for r in b["records"]]


K = [f"k{i}".encode() for i in range(40)]


def v(i: int) -> bytes:
    return f"value-{i}".encode()


# --- plan (LogCleanerManager) -------------------------------------------------------------------
def test_plan_active_segment_never_cleaned_and_ratio(tmp_path: Path) -> None:
    log = Log(tmp_path)
    log.data([(K[0], v(0)), (K[1], v(1))])
    log.data([(K[0], v(2))])
    log.roll()
    log.data([(K[1], v(3)), (K[2], v(4))])
    log.roll()
    active_base = log.next
    log.data([(K[0], v(5))])
    root = log.close(cleaner_offset=3)  # first segment clean, second dirty
    rep = replica(root)
    sizes = [p.stat().st_size for p in sorted((root / "t-0").glob("*.log"))]
    plan = plan_cleaning(rep, config(), T0 + DAY)
    assert plan.first_dirty_offset == 3
    assert plan.first_uncleanable_offset == active_base
    assert plan.clean_bytes == sizes[0]
    assert plan.cleanable_bytes == sizes[1]
    assert plan.dirty_ratio == pytest.approx(sizes[1] / (sizes[0] + sizes[1]))
    assert plan.would_clean_now == (plan.dirty_ratio > 0.5)
    res = clean_partition(rep, config(), T0 + DAY, force=True)
    r = reasons(res)
    assert r[active_base] == "uncleanable"  # K0 at 5 is newer but never mapped
    assert kept_offsets(res) == brute_force_kept(kp_batches(root / "t-0"), 3, active_base, T0 + DAY)


@pytest.mark.parametrize("policy, expected", [("delete", False), ("compact,delete", True)])
def test_plan_needs_compact_policy(tmp_path: Path, policy: str, expected: bool) -> None:
    log = Log(tmp_path)
    for i in range(6):
        log.data([(K[i % 2], v(i))])
    log.roll()
    log.data([(K[0], v(9))])
    rep = replica(log.close())
    cfg = load_topic_configs(None, overrides=[f"t:cleanup.policy={policy}"])["t"]
    plan = plan_cleaning(rep, cfg, T0 + DAY)
    assert plan.compact is expected
    assert plan.would_clean_now is expected  # all dirty: ratio 1.0
    res = clean_partition(rep, cfg, T0 + DAY)
    if not expected:
        assert set(res.decisions["reason"].to_pylist()) == {"not-eligible"}
        assert res.records_after == res.records_before


def test_plan_min_compaction_lag_holds_recent_segments(tmp_path: Path) -> None:
    log = Log(tmp_path)
    log.data([(K[0], v(0))], ts=T0)
    log.roll()
    second = log.next
    log.data([(K[0], v(1))], ts=T0 + 50_000)
    log.roll()
    log.data([(K[0], v(2))], ts=T0 + 90_000)
    rep = replica(log.close())
    now = T0 + 100_000
    # second segment's largest timestamp T0+50s > now - 60s: it and everything after stay dirty
    plan = plan_cleaning(rep, config(min_compaction_lag_ms="60000"), now)
    assert plan.first_uncleanable_offset == second
    plan = plan_cleaning(rep, config(min_compaction_lag_ms="40000"), now)
    assert plan.first_uncleanable_offset == rep.segments[-1].base_offset


def test_plan_max_compaction_lag_forces_cleaning(tmp_path: Path) -> None:
    log = Log(tmp_path)
    log.data([(K[0], v(0))], ts=T0)
    log.roll()
    for i in range(8):
        log.data([(K[i], v(i))], ts=T0 + 1000)
    root = log.close(cleaner_offset=1)
    rep = replica(root)
    base = dict(min_cleanable_dirty_ratio="0.99")
    plan = plan_cleaning(rep, config(**base), T0 + 10_000)
    assert not plan.needs_compaction_now and not plan.would_clean_now
    # the first dirty non-active segment is the active one here: nothing non-active is dirty
    log2 = Log(tmp_path / "b")
    log2.data([(K[0], v(0))], ts=T0)
    log2.roll()
    log2.data([(K[1], v(1))], ts=T0 + 100)
    log2.roll()
    log2.data([(K[2], v(2))], ts=T0 + 200)
    rep2 = replica(log2.close(cleaner_offset=1))
    plan = plan_cleaning(rep2, config(max_compaction_lag_ms="5000", **base), T0 + 5_101)
    assert plan.needs_compaction_now and plan.would_clean_now  # T0+100 < now - 5000
    plan = plan_cleaning(rep2, config(max_compaction_lag_ms="5000", **base), T0 + 5_100)
    assert not plan.needs_compaction_now and not plan.would_clean_now


def test_plan_lso_bounds_cleaning_with_open_transaction(tmp_path: Path) -> None:
    log = Log(tmp_path)
    log.data([(K[0], v(0))])
    log.roll()
    open_first = log.data([(K[1], v(1))], pid=50, txn=True)
    log.roll()
    log.data([(K[0], v(2))])
    log.roll()
    log.data([(K[3], v(3))])
    rep = replica(log.close())
    plan = plan_cleaning(rep, config(), T0 + DAY)
    assert plan.last_stable_offset == open_first
    assert plan.first_uncleanable_offset == open_first  # the segment holding the open txn
    res = clean_partition(rep, config(), T0 + DAY, force=True)
    r = reasons(res)
    assert r[0] == "latest" and r[2] == "uncleanable"  # K0@2 is beyond the LSO: not in the map


# --- records (Cleaner.shouldRetainRecord) -------------------------------------------------------
@pytest.mark.parametrize("codec", [CODEC_NONE, CODEC_GZIP, CODEC_LZ4])
def test_duplicates_across_clean_and_dirty_sections(tmp_path: Path, codec: int) -> None:
    log = Log(tmp_path)
    for i in range(12):
        log.data([(K[i % 5], v(i)), (K[(i + 2) % 7], v(100 + i))], codec=codec)
    log.roll()
    checkpoint = log.next
    for i in range(10):
        log.data([(K[i % 4], v(200 + i))], codec=codec)
    log.roll()
    log.data([(K[0], v(999))])
    root = log.close(cleaner_offset=checkpoint)
    rep = replica(root)
    res = clean_partition(rep, config(), T0 + DAY, force=True)
    batches = kp_batches(root / "t-0")
    assert kept_offsets(res) == brute_force_kept(batches, checkpoint, rep.segments[-1].base_offset, T0 + DAY)
    r = reasons(res)
    latest_dirty = {}
    for b in batches:
        for rec in b["records"]:
            if checkpoint <= rec["offset"] < rep.segments[-1].base_offset:
                latest_dirty[rec["key"]] = rec["offset"]
    sup = dict(zip(res.decisions["offset"].to_pylist(), res.decisions["supersededBy"].to_pylist()))
    for b in batches:
        for rec in b["records"]:
            o = rec["offset"]
            if o >= rep.segments[-1].base_offset:
                continue
            if rec["key"] in latest_dirty and o < latest_dirty[rec["key"]]:
                assert r[o] == "superseded" and sup[o] == latest_dirty[rec["key"]]
            elif rec["key"] in latest_dirty:
                assert r[o] == "latest" and sup[o] is None
            else:
                assert r[o] == "not-in-map"
    assert res.first_dirty_after == rep.segments[-1].base_offset
    assert res.records_before == sum(len(b["records"]) for b in batches)


def test_tombstones_first_round_kept_and_null_keys_removed(tmp_path: Path) -> None:
    log = Log(tmp_path)
    log.data([(K[0], v(0)), (None, v(1)), (K[1], v(2))])
    log.data([(K[0], None), (K[2], v(3))])   # tombstone for K0
    log.data([(K[2], None)])                 # tombstone for K2
    log.roll()
    log.data([(K[5], v(5))])
    rep = replica(log.close())
    now = T0 + DAY
    res = clean_partition(rep, config(), now, force=True)
    r = reasons(res)
    assert r == {0: "superseded", 1: "null-key", 2: "latest", 3: "tombstone-horizon", 4: "superseded",
                 5: "tombstone-horizon", 6: "uncleanable"}
    assert res.tombstones_kept == 2 and res.tombstones_removed == 0
    assert set(res.decisions["decision"].to_pylist()) <= set(DECISIONS)
    assert set(r.values()) <= set(REASONS)


def test_log_start_offset_inside_a_segment(tmp_path: Path) -> None:
    log = Log(tmp_path)
    log.data([(K[i], v(i)) for i in range(6)])
    log.data([(K[0], v(10))])
    log.roll()
    log.data([(K[1], v(11))])
    rep = replica(log.close(log_start=3))
    res = clean_partition(rep, config(), T0 + DAY, force=True)
    assert res.plan.log_start_offset == 3 and res.plan.first_dirty_offset == 3
    assert res.decisions["offset"].to_pylist() == [3, 4, 5, 6, 7]
    # K0@0 is below the log start: never in the map (records < firstDirty are not mapped)
    assert reasons(res)[6] == "latest"


def test_tiny_map_forces_several_rounds(tmp_path: Path) -> None:
    log = Log(tmp_path)
    for i in range(30):
        log.data([(K[i % 9], v(i))])
    log.roll()
    log.data([(K[0], v(99))])
    root = log.close()
    rep = replica(root)
    one = clean_partition(rep, config(), T0 + DAY, map_slots=4, rounds="one", force=True)
    # 4 slots * 0.9 -> 3 keys; one record per batch: K0..K2 fill the map at offsets 0..2, K3@3 finds it full
    assert one.first_dirty_after == 3 and one.rounds == 1
    assert kept_offsets(one) == set(range(30 + 1))  # nothing in [0,3) superseded within the map range
    many = clean_partition(rep, config(), T0 + DAY, map_slots=4, force=True)
    assert many.rounds > 1
    assert many.first_dirty_after == 30
    assert kept_offsets(many) == brute_force_kept(kp_batches(root / "t-0"), 0, 30, T0 + DAY)
    big = clean_partition(rep, config(), T0 + DAY, force=True)
    assert big.rounds == 1 and kept_offsets(big) == kept_offsets(many)


@pytest.mark.parametrize("slots, keys, end", [
    (3, [K[0], K[1], K[2]], 2),   # 3*0.9 -> 2 keys: K0@0, K1@1 put, K2@2 finds the map full
    (2, [K[0], K[0], K[1]], 1),   # 2*0.9 -> 1 key: Kafka checks the size before every put, so a
])                                 # full map stops even at a key it already holds (K0@1)
def test_map_fills_mid_batch(tmp_path: Path, slots: int, keys: list[bytes], end: int) -> None:
    log = Log(tmp_path)
    log.data([(k, v(i)) for i, k in enumerate(keys)])
    log.data([(K[0], v(9))])
    log.roll()
    log.data([(K[5], v(5))])
    rep = replica(log.close())
    res = clean_partition(rep, config(), T0 + DAY, map_slots=slots, rounds="one", force=True)
    assert res.first_dirty_after == end  # SkimpyOffsetMap.latestOffset = the last record put, + 1
    r = reasons(res)
    assert all(r[o] == "uncleanable" for o in range(end, 4))  # beyond the map: kept unexamined


def test_map_capacity_follows_broker_settings() -> None:
    cfg = config()
    assert map_capacity(cfg) == int((128 * 1024 * 1024 // 24) * 0.9)
    with pytest.raises(ValueError):
        map_capacity(cfg, 1)  # 1 slot * 0.9 <= 1: Kafka's Cleaner refuses such a map
    cfg2 = load_topic_configs(None, overrides=["t:cleanup.policy=compact",
                                               "*:log.cleaner.dedupe.buffer.size=2400",
                                               "*:log.cleaner.threads=2"])["t"]
    assert map_capacity(cfg2) == int((2400 // 2 // 24) * 0.9)


# --- transactions (CleanedTransactionMetadata) and batch retention ------------------------------
def test_aborted_committed_and_empty_transactions(tmp_path: Path) -> None:
    log = Log(tmp_path)
    log.data([(K[0], v(0)), (K[1], v(1))], pid=7, txn=True)       # 0-1 aborted (marker in next seg)
    log.data([(K[2], v(2))], pid=8, txn=True)                     # 2 committed
    log.roll()
    log.data([(K[0], v(3))], pid=7, txn=True)                     # 3 aborted
    abort = log.marker(7, CONTROL_ABORT)                          # 4
    commit = log.marker(8, CONTROL_COMMIT)                        # 5
    empty_commit = log.marker(9, CONTROL_COMMIT)                  # 6: producer 9 sent no data
    log.data([(K[5], v(7))])                                      # 7
    log.roll()
    log.data([(K[6], v(8))])
    root = log.close()
    rep = replica(root)
    now = T0 + DAY
    res = clean_partition(rep, config(), now, force=True)
    r = reasons(res)
    assert [r[o] for o in (0, 1, 3)] == ["aborted"] * 3
    assert r[2] == "latest"
    assert r[abort] == "marker-retained"       # its data was seen in this round
    assert r[commit] == "marker-retained"
    assert r[empty_commit] == "marker-retained"  # kept, stamped with a horizon this round
    batches = kp_batches(root / "t-0")
    assert aborted_offsets(batches) == {0, 1, 3}
    assert kept_offsets(res) - set(data_offsets(batches, control=True)) == \
        brute_force_kept(batches, 0, rep.segments[-1].base_offset, now)
    assert res.markers_kept == 3 and res.markers_removed == 0


def test_marker_of_empty_txn_removed_after_horizon(tmp_path: Path) -> None:
    from kafka_format.log.cleaner import write_cleaned_partition

    log = Log(tmp_path / "src")
    log.data([(K[0], v(0))])
    m = log.marker(9, CONTROL_COMMIT)   # a transaction without data
    log.data([(K[1], v(2))], pid=10)     # later batches of another producer
    log.data([(K[1], v(3))])
    log.roll()
    log.data([(K[2], v(4))])
    rep = replica(log.close())
    cfg = config()
    now = T0 + 5 * DAY   # producers 9 and 10 expired (default 1 day): no "last batch" protection
    first = clean_partition(rep, cfg, now, force=True)
    assert reasons(first)[m] == "marker-retained"
    out = tmp_path / "out" / "t-0"
    out.mkdir(parents=True)
    write_cleaned_partition(rep, cfg, now, str(out), result=first)
    stamped = [b for b in kp_batches(out) if b["control"]]
    assert stamped and stamped[0]["attributes"] & HORIZON_BIT and stamped[0]["first_ts"] == now + DAY
    again = clean_partition(replica(out.parent), cfg, now + DAY, force=True)
    assert reasons(again)[m] == "marker-removed"


def test_producer_last_batch_and_round_end_kept_empty(tmp_path: Path) -> None:
    log = Log(tmp_path)
    log.data([(K[0], v(0))], pid=21)     # 0: producer 21's last batch, superseded below
    log.data([(K[1], v(1))])             # 1
    log.data([(K[0], v(2))])             # 2
    log.data([(K[1], v(3))])             # 3
    log.data([(K[3], v(4)), (K[3], v(5))])  # 4-5: record 4 superseded by 5 in the same batch
    log.data([(K[2], v(6))])             # 6: superseded by 8 (beyond the round) - not here
    log.data([(K[1], v(7))])             # 7: supersedes 3; last batch of the round
    log.roll()
    log.data([(K[2], v(8))])
    root = log.close()
    rep = replica(root)
    now = T0 + 60_000  # producer 21 still active
    res = clean_partition(rep, config(), now, force=True)
    assert reasons(res)[0] == "superseded"
    assert res.empty_batches_kept == 1  # producer 21's batch [0,0]
    assert [(b["base"], b["last"]) for b in written_batches(rep, res, tmp_path / "out") if b["count"] == 0] == [(0, 0)]
    # same log, producer expired: the batch disappears
    res2 = clean_partition(rep, config(), T0 + 2 * DAY, force=True)
    assert res2.empty_batches_kept == 0


def test_last_batch_of_round_kept_empty_kafka_17076(tmp_path: Path) -> None:
    log = Log(tmp_path)
    log.data([(K[0], v(0))])
    log.data([(K[0], None)])            # 1: tombstone, the round's last batch (nextOffset == U)
    log.roll()
    log.data([(K[0], v(2))])            # active segment
    root = log.close()
    rep = replica(root)
    now = T0 + DAY
    res = clean_partition(rep, config(), now, force=True)
    assert reasons(res) == {0: "superseded", 1: "tombstone-horizon", 2: "uncleanable"}
    # a batch at the round end whose records all go: kept as an empty batch
    log2 = Log(tmp_path / "b")
    log2.data([(K[0], v(0))])
    log2.data([(None, v(1))])           # 1: null key, removed; nextOffset == U
    log2.roll()
    log2.data([(K[1], v(2))])
    rep2 = replica(log2.close())
    res2 = clean_partition(rep2, config(), now, force=True)
    assert reasons(res2)[1] == "null-key"
    assert [b["base"] for b in written_batches(rep2, res2, tmp_path / "out") if b["count"] == 0] == [1]


def test_legacy_batch_emptied_at_round_end_fails_like_kafka(tmp_path: Path) -> None:
    """filterTo throws IllegalStateException for an empty legacy batch it must retain (the round's
    last batch); Kafka's cleaner then marks the partition uncleanable."""
    from kafka_format.log.cleaner import CleanerError

    log = Log(tmp_path)
    log.legacy([(K[0], v(0)), (None, v(1))])   # offset 1: null key, nextOffset == firstUncleanable
    log.roll()
    log.legacy([(K[1], v(2))])
    rep = replica(log.close())
    with pytest.raises(CleanerError) as err:
        clean_partition(rep, config(), T0 + DAY, force=True)
    assert err.value.base_offset == 1 and err.value.path and err.value.position is not None


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_tombstones_use_segment_mtime_horizon(tmp_path: Path, magic: int) -> None:
    log = Log(tmp_path)
    log.legacy([(K[0], v(0)), (K[1], v(1))], magic=magic)
    log.roll()
    checkpoint = log.next
    log.legacy([(K[0], None), (K[2], v(3))], magic=magic)
    log.roll()
    log.legacy([(K[1], None)], magic=magic)
    log.roll()
    log.legacy([(K[9], v(9))], magic=magic)
    clean_mtime = T0 + 10 * DAY
    mt = {0: clean_mtime, 2: clean_mtime - 2 * DAY, 4: clean_mtime - DAY // 2, 5: clean_mtime}
    root = log.close(cleaner_offset=checkpoint, mtimes=mt)
    rep = replica(root)
    # legacyHorizon = mtime(last clean segment) - delete.retention.ms = clean_mtime - 1 day
    res = clean_partition(rep, config(), T0 + 20 * DAY, force=True)
    r = reasons(res)
    assert r[2] == "tombstone-expired"    # segment mtime clean_mtime - 2d <= horizon
    assert r[4] == "tombstone-horizon"    # segment mtime clean_mtime - 12h > horizon
    assert kept_offsets(res) - {4} == brute_force_kept(kp_batches(root / "t-0"), checkpoint, 5, T0,
                                                         legacy_keep_tombstones=False)


# --- segment grouping ----------------------------------------------------------------------------
def test_groups_follow_segment_bytes(tmp_path: Path) -> None:
    log = Log(tmp_path, segment_bytes=600)
    for i in range(40):
        log.data([(K[i % 3], v(i) * 3)])
    root = log.close()
    rep = replica(root)
    cfg = config(segment_bytes="1500")
    res = clean_partition(rep, cfg, T0 + DAY, force=True)
    sizes = [s.log_size for s in rep.segments[:-1]]
    groups, cur = [], [0]
    total = sizes[0]
    for i in range(1, len(sizes)):
        if total + sizes[i] <= 1500:
            cur.append(i)
            total += sizes[i]
        else:
            groups.append(cur)
            cur, total = [i], sizes[i]
    groups.append(cur)
    written_batches(rep, res, tmp_path / "out")
    got = [int(p.stem) for p in sorted((tmp_path / "out").glob("*.log")) if int(p.stem) < rep.segments[-1].base_offset]
    assert got == [rep.segments[g[0]].base_offset for g in groups]
    assert len(got) < len(sizes)


def test_group_offset_span_bound() -> None:
    """groupSegmentsBySize: a segment joins only while (its estimated last offset - the group's
    first base) <= Int.MAX; an empty segment always joins."""
    from kafka_format.log.cleaner import group_segments_by_size

    big = 1 << 31
    bases = [0, 10, big - 5, big + 20]
    sizes = [100, 100, 100, 100]
    zeros = [0] * 4
    # seg 1 ends at big-6 (next base - 1): joins; seg 2 would end at big+19 > 0 + Int.MAX: new group
    assert group_segments_by_size(sizes, zeros, zeros, bases, 10_000, 10_000, big + 40) == [[0, 1], [2, 3]]
    assert group_segments_by_size([100, 100, 0, 100], zeros, zeros, bases, 10_000, 10_000, big + 40) == \
        [[0, 1, 2], [3]]
    assert group_segments_by_size(sizes, zeros, zeros, bases, 200, 10_000, big + 40) == [[0, 1], [2, 3]]
    assert group_segments_by_size(sizes, [8, 8, 8, 8], zeros, bases, 10_000, 15, big + 40) == [[0], [1], [2], [3]]


# --- samples ---------------------------------------------------------------------------------------
def test_sample_compacted_clean_section_is_a_fixed_point(tmp_path: Path) -> None:
    from dataclasses import replace

    rep = replica(SAMPLES / "broker-1", "compacted")
    cfg = load_topic_configs(None, config_file=str(SAMPLES / "topic-configs.json"))["compacted"]
    clean_time = T0 + 3_600_000
    # only the clean section [0, 329) below an "active" segment at 329, cleaned from 0
    cut = [s for s in rep.segments if s.base_offset <= 329]
    part = replace(rep, segments=tuple(cut), cleaner_offset_checkpoint=None)
    res = clean_partition(part, cfg, clean_time, force=True)
    assert res.plan.first_uncleanable_offset == 329
    below = [d for o, d in zip(res.decisions["offset"].to_pylist(), res.decisions["decision"].to_pylist())
             if o < 329]
    assert len(below) > 100 and set(below) == {"keep"}
    # every batch copied (the empty batch's header, which Kafka writes again, has the same bytes)
    below_src = [b["raw"] for b in kp_batches(Path(part.path)) if b["last"] < 329]
    assert [b["raw"] for b in written_batches(part, res, tmp_path / "out") if b["last"] < 329] == below_src
    # the dirty tail: brute force over the real plan
    res2 = clean_partition(rep, cfg, clean_time, force=True)
    batches = kp_batches(Path(rep.path))
    assert kept_offsets(res2) == brute_force_kept(batches, 329, res2.plan.first_uncleanable_offset, clean_time)


def test_sample_compacted_plan_and_eligibility() -> None:
    import pickle

    rep = replica(SAMPLES / "broker-1", "compacted")
    cfg = load_topic_configs(None, config_file=str(SAMPLES / "topic-configs.json"))["compacted"]
    clean_time = T0 + 3_600_000
    sizes = {s.base_offset: s.log_size for s in rep.segments}
    plan = plan_cleaning(rep, cfg, clean_time)
    assert (plan.first_dirty_offset, plan.first_uncleanable_offset) == (329, 448)  # checkpoint, active base
    assert plan.clean_bytes == sizes[0] + sizes[277] and plan.cleanable_bytes == sizes[329]
    assert not plan.would_clean_now  # 8048 / 19232 = 0.418 <= 0.5
    idle = clean_partition(rep, cfg, clean_time)
    assert idle.rounds == 0 and set(idle.decisions["reason"].to_pylist()) == {"not-eligible"}
    assert idle.first_dirty_after == 329 and idle.records_after == idle.records_before
    forced = clean_partition(rep, cfg, clean_time, force=True)
    assert forced.rounds == 1 and forced.first_dirty_after == 448
    offsets = forced.decisions["offset"].to_pylist()
    assert offsets == sorted(offsets) and forced.decisions.schema.names == [
        "offset", "decision", "reason", "supersededBy", "isTombstone", "batchBaseOffset"]
    back = pickle.loads(pickle.dumps(forced))
    assert back.decisions.equals(forced.decisions) and back.plan == forced.plan


def test_sample_transactions(tmp_path: Path) -> None:
    rep = replica(SAMPLES / "broker-1", "transactions")
    cfg = config("transactions")
    now = T0 + 3 * DAY
    res = clean_partition(rep, cfg, now, force=True)
    batches = kp_batches(Path(rep.path))
    aborted = aborted_offsets(batches)
    r = reasons(res)
    u = res.plan.first_uncleanable_offset
    assert u <= res.plan.last_stable_offset
    # producer 3003's transaction is still open: the LSO is its first offset
    open_first = min(b["base"] for b in batches if b["pid"] == 3003 and b["txn"])
    assert res.plan.last_stable_offset == open_first
    assert {o for o in aborted if o < u} == {o for o, why in r.items() if why == "aborted"}
    assert kept_offsets(res) - set(data_offsets(batches, control=True)) == brute_force_kept(batches, 0, u, now)
    assert Counter(r.values())["marker-removed"] == 0  # first cleaning: every marker is kept or stamped


def test_abort_marker_retention_rounds(tmp_path: Path) -> None:
    """Round 1 keeps the ABORT marker (its data is seen), round 2 stamps it (no data left),
    a round past the horizon removes it (spec §4.6 net effect)."""
    from kafka_format.log.cleaner import write_cleaned_partition

    log = Log(tmp_path / "r0")
    log.data([(K[0], v(0))], pid=5, txn=True)
    log.data([(K[1], v(1))])
    abort = log.marker(5, CONTROL_ABORT)
    log.data([(K[2], v(3))])
    log.data([(K[3], v(4))])
    log.roll()
    log.data([(K[4], v(5))])
    rep = replica(log.close())
    cfg = config()
    now = T0 + 3 * DAY  # producer 5 expired: nothing is kept as a "last batch"
    seen = []
    for i in range(3):
        res = clean_partition(rep, cfg, now, force=True)
        seen.append(reasons(res).get(abort))
        out = tmp_path / f"r{i + 1}" / "t-0"
        out.mkdir(parents=True)
        write_cleaned_partition(rep, cfg, now, str(out), result=res)
        rep = replica(out.parent)
        ctrl = [b for b in kp_batches(out) if b["control"]]
        if i == 0:
            assert ctrl and not ctrl[0]["attributes"] & HORIZON_BIT and list((out).glob("*.txnindex"))
        if i == 1:
            assert ctrl and ctrl[0]["attributes"] & HORIZON_BIT and ctrl[0]["first_ts"] == now + DAY
            now += DAY
    assert seen == ["marker-retained", "marker-retained", "marker-removed"]
    assert reasons(clean_partition(rep, cfg, now, force=True)).get(0) is None  # data gone since round 1


def _real_offsets_partitions(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("__consumer_offsets-*/*.log") if p.stat().st_size > 4000)


def test_realdata_consumer_offsets_cleaned_like_brute_force(realdata: Path, tmp_path: Path) -> None:
    """Real broker bytes: treat the (only, active) segment as closed and clean it."""
    from dataclasses import replace

    from kafka_format.log.cleaner import write_cleaned_partition
    from kafka_format.storage.logdir import Segment

    dirs = _real_offsets_partitions(realdata)[-3:]
    if not dirs:
        pytest.skip("no __consumer_offsets data in realdata")
    for d in dirs:
        rep = replica(d, "__consumer_offsets", int(d.name.rsplit("-", 1)[1]))
        batches = kp_batches(d)
        leo = batches[-1]["last"] + 1
        closed = replace(rep, segments=(*rep.segments, Segment(base_offset=leo, log_path=None)),
                         cleaner_offset_checkpoint=None, high_watermark_checkpoint=None, snapshots=())
        cfg = load_topic_configs(None, overrides=["__consumer_offsets:cleanup.policy=compact"])["__consumer_offsets"]
        now = max(b.get("max_ts", -1) for b in batches) + 1000
        res = clean_partition(closed, cfg, now, force=True)
        assert res.plan.first_uncleanable_offset == leo
        expected = brute_force_kept(batches, rep.log_start_offset, leo, now)
        got = kept_offsets(res) - set(data_offsets(batches, control=True))
        assert got == expected, d
        out = tmp_path / d.parent.name / d.name
        out.mkdir(parents=True)
        write_cleaned_partition(closed, cfg, now, str(out), result=res)
        written = kp_batches(out)
        assert all(b["crc_ok"] for b in written)
        assert [r["offset"] for b in written for r in b["records"]] == sorted(kept_offsets(res))


@pytest.mark.parametrize("seed", range(6))
def test_random_logs_any_map_size_match_brute_force(tmp_path: Path, seed: int) -> None:
    """Random keys, tombstones, codecs, segment sizes and map sizes: after all rounds the kept
    records are the brute-force ones (highest offset per key; unstamped tombstones stay)."""
    import random

    from kafka_format.log.cleaner import write_cleaned_partition

    rng = random.Random(seed)
    log = Log(tmp_path / "src", segment_bytes=rng.choice([300, 600, 5000]))
    for i in range(rng.randint(10, 40)):
        pairs = [(rng.choice(K[:8]), None if rng.random() < 0.15 else v(i)) for _ in range(rng.randint(1, 4))]
        log.data(pairs, codec=rng.choice([CODEC_NONE, CODEC_GZIP, CODEC_LZ4]))
    log.roll()
    log.data([(K[0], v(1))])
    root = log.close()
    rep = replica(root)
    cfg = config(segment_bytes=str(rng.choice([400, 800, 100000])))
    slots = [3, 4, 6, 100, 3, 100][seed]
    res = clean_partition(rep, cfg, T0 + DAY, map_slots=slots, force=True)
    assert (res.rounds > 1) == (slots < 100)  # 8 keys do not fit a map of 2-5 keys
    assert kept_offsets(res) == brute_force_kept(kp_batches(root / "t-0"), 0, rep.segments[-1].base_offset, T0 + DAY)
    out = tmp_path / "out" / "t-0"
    out.mkdir(parents=True)
    write_cleaned_partition(rep, cfg, T0 + DAY, str(out), result=res)
    got = kp_batches(out)
    assert all(b["crc_ok"] for b in got)
    assert [r["offset"] for b in got for r in b["records"]] == sorted(kept_offsets(res))


def test_a_batch_emptied_by_a_later_round_keeps_its_rebuilt_max_timestamp(tmp_path: Path) -> None:
    """A later round reads what the earlier one wrote, as Kafka's next cleaning reads the cleaned
    segment: producer 21's batch [0, 2] is rebuilt by round one around B (its max timestamp now B's),
    then emptied by round two and kept as an empty header (the producer's last batch), which carries
    ``batch.maxTimestamp()`` of the batch it read: B's, not C's (``writeEmptyHeader``)."""
    log = Log(tmp_path / "src")
    log.data([(K[0], v(0)), (K[1], v(1)), (K[2], v(2))], pid=21)   # 0-2: A, B, C
    log.data([(K[2], v(3))])                                         # 3: C
    log.data([(K[0], v(4))])                                         # 4: A
    log.data([(K[1], v(5))])                                         # 5: B
    log.roll()
    log.data([(K[3], v(6))])
    rep = replica(log.close(cleaner_offset=3))
    src = kp_batches(Path(rep.path))
    ts = {r["offset"]: r["timestamp"] for b in src for r in b["records"]}
    res = clean_partition(rep, config(), T0 + 60_000, map_slots=3, force=True)   # 2 keys a round
    assert res.rounds == 2 and reasons(res)[1] == "superseded" and reasons(res)[2] == "superseded"
    (empty,) = [b for b in written_batches(rep, res, tmp_path / "out") if b["count"] == 0]
    assert (empty["base"], empty["last"], empty["pid"]) == (0, 2, 21)
    assert empty["max_ts"] == ts[1] != ts[2]
