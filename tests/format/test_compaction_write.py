"""write_cleaned_partition: the cleaned partition in Kafka's format.

Oracles: kafka-python decodes the source and the written files; the kept set comes from the
brute-force rules in test_compaction_cleaner; index expectations come from the broker's
per-batch rule applied here to the batch sizes kafka-python reports.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest
from test_compaction_cleaner import (
    DAY,
    HORIZON_BIT,
    SAMPLES,
    T0,
    K,
    Log,
    brute_force_kept,
    config,
    kept_offsets,
    kp_batches,
    reasons,
    replica,
    v,
)

from kafka_format.log.cleaner import clean_partition, write_cleaned_partition
from kafka_format.log.topicconfig import load_topic_configs
from kafka_format.records.file_records import decode_file
from kafka_format.storage.index import (
    offset_index_sanity_check,
    read_offset_index,
    read_time_index,
    time_index_sanity_check,
)
from kafka_format.storage.logdir import open_log_dirs
from kafka_format.storage.txnindex import read_transaction_index
from kafka_format.writer import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    Record,
    build_legacy_wrapper,
)


def write(rep, cfg, now: int, out_root: Path, result=None) -> Path:
    out = out_root / f"{rep.topic}-{rep.partition}"
    out.mkdir(parents=True)
    write_cleaned_partition(rep, cfg, now, str(out), result=result)
    return out


def records_of(batches) -> list[dict]:
    return [r for b in batches for r in b["records"]]


def check_indexes(out: Path, interval: int = 4096) -> None:
    """Each segment's .index/.timeindex: sane, and equal to the per-batch rule over its batches."""
    for log in sorted(out.glob("*.log")):
        base = int(log.stem)
        seg_batches = [b for b in kp_batches(out) if b["segment"] == base]
        oi = read_offset_index(str(log.with_suffix(".index")), base)
        ti = read_time_index(str(log.with_suffix(".timeindex")), base)
        assert offset_index_sanity_check(oi)
        assert time_index_sanity_check(ti)
        expected, since, max_ts, max_off, times = [], 0, -1, base, []
        for b in seg_batches:
            ts = b.get("max_ts", -1)
            if ts > max_ts:
                max_ts, max_off = ts, b["last"]
            if since > interval:
                expected.append((b["last"], b["position"]))
                if not times or max_ts > times[-1][0]:
                    times.append((max_ts, max_off))
                since = 0
            since += b["size"]
        if max_ts >= 0 and (not times or max_ts > times[-1][0]):
            times.append((max_ts, max_off))
        assert list(zip(oi.offsets.tolist(), oi.positions.tolist())) == expected
        assert list(zip(ti.timestamps.tolist(), ti.offsets.tolist())) == times


def mixed_log(root: Path, codec: int) -> Log:
    log = Log(root, segment_bytes=2000)
    for i in range(45):
        pairs = [(K[(i * 7 + j) % 37], None if (i + j) % 9 == 4 else v(i * 10 + j)) for j in range(3)]
        if i % 13 == 5:
            pairs.append((None, v(7)))
        log.data(pairs, codec=codec, pid=33 if i % 4 == 0 else -1)
    log.data([(K[38], v(5))], pid=33)
    log.data([(K[38], v(6))])   # producer 33's last batch is superseded: kept empty
    log.roll()
    log.data([(K[0], v(1000))])
    return log


@pytest.mark.parametrize("codec", [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_written_partition_holds_exactly_the_kept_records(tmp_path: Path, codec: int) -> None:
    root = mixed_log(tmp_path / "src", codec).close()
    rep = replica(root)
    cfg = config(segment_bytes="5000")
    now = T0 + 60_000  # producer 33 still active
    res = clean_partition(rep, cfg, now, force=True)
    src = kp_batches(root / "t-0")
    assert kept_offsets(res) == brute_force_kept(src, 0, rep.segments[-1].base_offset, now)
    out = write(rep, cfg, now, tmp_path / "out", res)
    got = kp_batches(out)
    assert all(b["crc_ok"] for b in got)
    raw = {b["raw"] for b in src}
    assert any(b["raw"] in raw for b in got)                          # copied batches
    assert any(b["raw"] not in raw and b["count"] > 0 for b in got)   # rebuilt ones
    assert any(b["count"] == 0 for b in got)                          # and an empty one
    written = sorted(int(p.stem) for p in out.glob("*.log"))
    assert len(written) - 1 < len(rep.segments) - 1                   # groups merged
    keep = kept_offsets(res)
    assert records_of(got) == [r for r in records_of(src) if r["offset"] in keep]
    by_base = {b["base"]: b for b in src}
    for b in got:
        orig = by_base[b["base"]]
        assert b["last"] == orig["last"]  # v2 batches keep [baseOffset, lastOffset]
        has_tomb = any(r["value"] is None for r in b["records"])
        if len(b["records"]) == len(orig["records"]) and not has_tomb:
            assert b["raw"] == orig["raw"]  # copied byte for byte
        if has_tomb:
            assert b["attributes"] & HORIZON_BIT and b["first_ts"] == now + DAY
        if b["count"] == 0:
            assert b["size"] == 61 and orig["pid"] == 33
    assert any(b["attributes"] & HORIZON_BIT for b in got)
    ours = []
    for log_file in sorted(out.glob("*.log")):
        for rb in decode_file(str(log_file)):
            ts = rb.column("timestamp").cast(pa.int64()).to_pylist()
            for row, t in zip(rb.to_pylist(), ts):
                ours.append({"offset": row["offset"], "key": row["key"], "value": row["value"], "timestamp": t // 1000,
                             "headers": [(h["key"], h["value"]) for h in row["headers"]]})
    assert ours == records_of(got)  # kafka_format and kafka-python read the same written records
    assert res.bytes_after == sum(b["size"] for b in got)
    assert res.records_after == len(records_of(got))
    check_indexes(out)
    p = replica(out.parent)
    assert [s.base_offset for s in p.segments] == written
    assert (out / "partition.metadata").read_bytes() == (root / "t-0" / "partition.metadata").read_bytes()
    active = rep.segments[-1]
    assert (out / f"{active.base_offset:020d}.log").read_bytes() == Path(active.log_path).read_bytes()


def test_tombstones_expire_when_cleaned_again_after_the_horizon(tmp_path: Path) -> None:
    log = Log(tmp_path / "src")
    log.data([(K[0], v(0)), (K[1], v(1))])
    log.data([(K[0], None)])
    log.data([(K[2], v(2))])
    log.roll()
    log.data([(K[3], v(3))])
    rep = replica(log.close())
    cfg = config()
    now = T0 + DAY
    first = clean_partition(rep, cfg, now, force=True)
    assert reasons(first)[2] == "tombstone-horizon"
    out = write(rep, cfg, now, tmp_path / "o1", first)
    again = replica(out.parent)
    still = clean_partition(again, cfg, now + DAY - 1, force=True)
    assert reasons(still)[2] == "tombstone-horizon"
    later = clean_partition(again, cfg, now + DAY, force=True)
    assert reasons(later)[2] == "tombstone-expired"
    out2 = write(again, cfg, now + DAY, tmp_path / "o2", later)
    assert [r["offset"] for r in records_of(kp_batches(out2))] == [1, 3, 4]


def test_aborted_txn_across_segments_keeps_marker_and_txnindex(tmp_path: Path) -> None:
    log = Log(tmp_path / "src")
    log.data([(K[0], v(0))], pid=5, txn=True)        # 0: aborted data
    log.data([(K[1], v(1))], pid=6, txn=True)        # 1: committed data of producer 6
    log.roll()
    log.data([(K[0], v(2))], pid=5, txn=True)        # 2: aborted data
    abort = log.marker(5, CONTROL_ABORT)             # 3
    log.marker(6, CONTROL_COMMIT)                    # 4
    log.data([(K[4], v(5))])                         # 5
    log.roll()
    log.data([(K[5], v(6))])
    rep = replica(log.close())
    src_txn = read_transaction_index(str(Path(rep.segments[1].txnindex_path)), rep.segments[1].base_offset)
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in src_txn.entries] == [(5, 0, 3)]
    cfg = config()
    now = T0 + 60_000
    res = clean_partition(rep, cfg, now, force=True)
    r = reasons(res)
    assert r[0] == r[2] == "aborted" and r[abort] == "marker-retained"
    out = write(rep, cfg, now, tmp_path / "o", res)
    cleaned = [int(p.stem) for p in sorted(out.glob("*.log")) if int(p.stem) < rep.segments[-1].base_offset]
    assert cleaned == [0]                       # one group: both segments below the active one
    txn = read_transaction_index(str(out / f"{cleaned[0]:020d}.txnindex"), cleaned[0])
    assert [(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset) for t in txn.entries] == \
        [(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset) for t in src_txn.entries]
    got = kp_batches(out)
    # producer 5's last data batch (offset 2) is kept empty: producer state needs its sequence
    empties = [(b["base"], b["pid"]) for b in got if b.get("count") == 0]
    assert empties == [(2, 5)]
    assert [r["offset"] for r in records_of(got)] == [1, 3, 4, 5, 6]
    check_indexes(out)


@pytest.mark.parametrize("magic, codec, log_append", [(1, CODEC_GZIP, False), (1, CODEC_LZ4, True),
                                                      (0, CODEC_GZIP, False), (0, CODEC_SNAPPY, False)])
def test_legacy_wrapper_rewrapped_from_first_retained_record(tmp_path: Path, magic: int, codec: int,
                                                             log_append: bool) -> None:
    log = Log(tmp_path / "src")
    recs = [Record(K[i % 3], v(i), T0 + i) for i in range(5)]   # keys 0,1,2,0,1 -> 0..1 superseded
    kw = {"timestamp_type": 1, "log_append_time": T0 + 99} if log_append else {}
    b = build_legacy_wrapper(recs, magic=magic, base_offset=0, codec=codec, **kw)
    log.w.append(b)
    log.next = b.last_offset + 1
    log.roll()
    log.legacy([(K[9], v(9))], magic=magic)
    rep = replica(log.close())
    cfg = config()
    res = clean_partition(rep, cfg, T0 + DAY, force=True)
    assert kept_offsets(res) == {2, 3, 4, 5}
    assert res.decisions["batchBaseOffset"].to_pylist()[:5] == [0] * 5  # the source wrapper's range
    out = write(rep, cfg, T0 + DAY, tmp_path / "o", res)
    got = kp_batches(out)
    assert all(x["crc_ok"] for x in got)
    first = got[0]
    assert first["magic"] == magic and [r["offset"] for r in first["records"]] == [2, 3, 4]
    src_records = {r["offset"]: r for r in records_of(kp_batches(Path(rep.path)))}
    assert first["records"] == [src_records[o] for o in (2, 3, 4)]  # keys, values, timestamps as read
    if log_append:
        assert {r["timestamp"] for r in first["records"]} == {T0 + 99}
    else:  # MemoryRecordsBuilder re-wrap == the broker's wrapper of those three records (the writer)
        assert first["raw"] == build_legacy_wrapper(recs[2:5], magic=magic, base_offset=2, codec=codec).data
    assert open_log_dirs(str(out.parent)).all_partitions()[0].segments[0].base_offset == 0


def test_sample_compacted_clean_section_written_byte_identical(tmp_path: Path) -> None:
    rep = replica(SAMPLES / "broker-1", "compacted")
    cfg = load_topic_configs(None, config_file=str(SAMPLES / "topic-configs.json"))["compacted"]
    part = replace(rep, segments=tuple(s for s in rep.segments if s.base_offset <= 329),
                   cleaner_offset_checkpoint=None)
    res = clean_partition(part, cfg, T0 + 3_600_000, force=True)
    out = write(part, cfg, T0 + 3_600_000, tmp_path, res)
    for seg in part.segments[:-1]:
        for suffix in (".log", ".index", ".timeindex"):
            src = Path(getattr(seg, {".log": "log_path", ".index": "index_path",
                                     ".timeindex": "timeindex_path"}[suffix]))
            assert (out / src.name).read_bytes() == src.read_bytes(), src.name
    check_indexes(out)


def test_sample_transactions_written_and_readable(tmp_path: Path) -> None:
    rep = replica(SAMPLES / "broker-1", "transactions")
    cfg = config("transactions", segment_bytes="8192")
    now = T0 + 3 * DAY
    res = clean_partition(rep, cfg, now, force=True)
    out = write(rep, cfg, now, tmp_path, res)
    got = kp_batches(out)
    assert all(b["crc_ok"] for b in got)
    keep = kept_offsets(res)
    assert [r["offset"] for r in records_of(got)] == sorted(keep)
    check_indexes(out)
    again = clean_partition(replica(out.parent, "transactions"), cfg, now, force=True)
    # a second cleaning at the same time: data already clean stays, markers of emptied txns remain
    assert kept_offsets(again) == keep
