"""Retention (spec §5): the segments Kafka's retention pass deletes at ``now``, and when.

Oracle: a plain re-implementation of ``UnifiedLog.deleteOldSegments`` written here, run over segment
facts gathered independently of the code under test: ``.log`` sizes from ``os.stat``, largest
timestamps from the decoded records (``decode_file``; the ``.log`` mtime when no record has a
timestamp), checkpoint files parsed by hand.  ``deletableAtMs`` is checked by running the oracle at
``deletableAtMs - 1`` and ``deletableAtMs``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kafka_format import decode_file
from kafka_format.log.retention import (
    RetentionPolicy,
    SegmentFacts,
    disk_usage_steps,
    plan_retention,
    retention_walk,
    run_task,
    segment_rows,
    summarize,
)
from kafka_format.log.topicconfig import load_topic_configs
from kafka_format.writer import LogDirWriter, Record, build_legacy_messages, build_v2_batch

T0 = 1_700_000_000_000
HOUR = 3_600_000
DAY = 24 * HOUR
FAR_FUTURE = T0 + 100 * 365 * DAY
REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"


# ---------------------------------------------------------------------------------------------
# fixtures built with the Kafka-exact writer


@dataclass
class Part:
    """A partition to write: one list of record timestamps per segment (one batch per record)."""

    topic: str
    segments: list[list[int]]
    partition: int = 0
    hw: int | None = None                 # replication-offset-checkpoint entry (None: writer default = LEO)
    drop_hw: bool = False                 # no replication-offset-checkpoint entry at all
    log_start: int | None = None
    empty_active: bool = False            # roll once more: an empty last segment at LEO
    magic: int = 2
    mtimes: dict[int, int] = field(default_factory=dict)   # segment base -> .log mtime (ms)
    value_size: int = 100


def write_logdir(root: Path, parts: list[Part]) -> Path:
    d = LogDirWriter(root, node_id=1, cluster_id="retention-test")
    for spec in parts:
        w = d.partition(spec.topic, spec.partition, topic_id=bytes([len(spec.topic)] * 16))
        offset = 0
        for n, timestamps in enumerate(spec.segments):
            if n:
                w.roll()
            for ts in timestamps:
                rec = Record(key=b"k%d" % offset, value=b"v" * spec.value_size, timestamp=ts)
                if spec.magic == 2:
                    w.append(build_v2_batch([rec], base_offset=offset))
                else:
                    w.append(build_legacy_messages([Record(key=rec.key, value=rec.value)], magic=spec.magic,
                                                   base_offset=offset))
                offset += 1
        if spec.empty_active:
            w.roll()
        w.close()
        st = d.state(spec.topic, spec.partition)
        st.high_watermark = spec.hw
        st.log_start_offset = spec.log_start
    d.close(written_at_ms=T0)
    for spec in parts:
        pdir = root / f"{spec.topic}-{spec.partition}"
        for base, ms in spec.mtimes.items():
            os.utime(pdir / f"{base:020d}.log", ns=(ms * 1_000_000, ms * 1_000_000))
        if spec.drop_hw:
            _rewrite_checkpoint(root / "replication-offset-checkpoint", drop=(spec.topic, spec.partition))
    return root


def _rewrite_checkpoint(path: Path, drop: tuple[str, int]) -> None:
    lines = path.read_text().split("\n")
    entries = [ln for ln in lines[2:] if ln.strip() and ln.split()[:2] != [drop[0], str(drop[1])]]
    path.write_text("\n".join(["0", str(len(entries)), *entries]) + "\n")


# ---------------------------------------------------------------------------------------------
# independent facts and the oracle walk


@dataclass(frozen=True)
class Seg:
    base: int
    size: int
    largest: int


@dataclass(frozen=True)
class Facts:
    segs: tuple[Seg, ...]
    lso: int
    leo: int
    hw: int


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """version line, count line, then ``topic partition offset`` lines."""
    if not path.exists() or not path.read_text().strip():
        return {}
    lines = path.read_text().splitlines()
    assert lines[0].strip() == "0"
    out = {}
    for line in lines[2:2 + int(lines[1])]:
        topic, part, off = line.split()
        out[(topic, int(part))] = int(off)
    return out


def gather(logdir: Path, topic: str, partition: int) -> Facts:
    pdir = logdir / f"{topic}-{partition}"
    segs = []
    last_offset = None
    logs = sorted(p for p in pdir.iterdir() if p.name.endswith(".log"))
    for path in logs:
        base = int(path.name.split(".")[0])
        stamps: list[int] = []
        offsets: list[int] = []
        for rb in decode_file(str(path)):
            stamps += [t // 1000 for t in rb.column("timestamp").cast(pa.int64()).to_pylist()]
            offsets += rb.column("offset").to_pylist()
        good = [t for t in stamps if t >= 0]
        largest = max(good) if good else os.stat(path).st_mtime_ns // 1_000_000
        segs.append(Seg(base, os.stat(path).st_size, largest))
        if path == logs[-1]:
            last_offset = max(offsets) if offsets else None
    leo = segs[-1].base if last_offset is None else last_offset + 1
    first = segs[0].base
    lso = max(read_checkpoint(logdir / "log-start-offset-checkpoint").get((topic, partition), 0), first)
    hw_ckpt = read_checkpoint(logdir / "replication-offset-checkpoint").get((topic, partition))
    hw = leo if hw_ckpt is None else max(min(hw_ckpt, leo), lso)
    return Facts(tuple(segs), lso, leo, hw)


def oracle(f: Facts, *, policy: str, retention_ms: int, retention_bytes: int, now: int) -> dict[int, str]:
    """``deleteOldSegments`` at ``now``: base offset -> reason of every deleted segment."""
    segs = list(f.segs)
    deleted: dict[int, str] = {}

    def run(predicate: Any, reason: str) -> None:
        found = []
        for i, s in enumerate(segs):
            nxt = segs[i + 1] if i + 1 < len(segs) else None
            upper = nxt.base if nxt else f.leo
            if not (f.hw >= upper and predicate(s, nxt)):
                break
            if nxt is None and s.size == 0:
                break
            found.append(s)
        for s in found:
            deleted[s.base] = reason
        del segs[:len(found)]
        if not segs:            # the broker rolls an empty segment at LEO before deleting them all
            segs.append(Seg(f.leo, 0, now))

    run(lambda s, nxt: nxt is not None and nxt.base <= f.lso, "log-start-offset")
    if "delete" in policy.split(","):
        total = sum(s.size for s in segs)
        if retention_bytes >= 0 and total >= retention_bytes:
            diff = [total - retention_bytes]

            def by_size(s: Seg, nxt: Seg | None) -> bool:
                if diff[0] - s.size >= 0:
                    diff[0] -= s.size
                    return True
                return False

            run(by_size, "retention.bytes")
        if retention_ms >= 0:
            run(lambda s, nxt: now - s.largest > retention_ms, "retention.ms")
    return deleted


def tool_rows(logdir: Path, flags: list[str], now: int, **kw: Any) -> list[dict[str, Any]]:
    configs = load_topic_configs(logdir, overrides=flags)
    rows = []
    for task in plan_retention(str(logdir), configs, now, **kw):
        facts, decisions = run_task(task)
        rows += list(segment_rows(facts, decisions))
    return rows


def check_against_oracle(logdir: Path, flags: list[str], now: int, *, policy: str = "delete",
                         retention_ms: int = 7 * DAY, retention_bytes: int = -1) -> list[dict[str, Any]]:
    rows = tool_rows(logdir, flags, now)
    assert rows
    by_tp: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in rows:
        by_tp.setdefault((r["topic"], r["partition"]), []).append(r)
    for (topic, partition), got in by_tp.items():
        facts = gather(logdir, topic, partition)

        def at(t: int, facts: Facts = facts) -> dict[int, str]:
            return oracle(facts, policy=policy, retention_ms=retention_ms, retention_bytes=retention_bytes, now=t)

        assert [(r["baseOffset"], r["sizeBytes"], r["largestTimestamp"]) for r in got] == \
            [(s.base, s.size, s.largest) for s in facts.segs]
        expected = at(now)
        assert {r["baseOffset"]: r["reason"] for r in got if r["deletable"]} == expected
        for r in got:
            assert r["reason"] == expected.get(r["baseOffset"])
            when = r["deletableAtMs"]
            if when is None:
                assert r["baseOffset"] not in at(FAR_FUTURE)
            elif when == now:
                assert r["baseOffset"] in expected
            else:
                assert when > now
                assert r["baseOffset"] not in at(when - 1)
                assert r["baseOffset"] in at(when)
    return rows


def deleted(rows: list[dict[str, Any]]) -> dict[int, str]:
    return {r["baseOffset"]: r["reason"] for r in rows if r["deletable"]}


# ---------------------------------------------------------------------------------------------
# time retention


def test_future_timestamp_blocks_later_segments(tmp_path: Path) -> None:
    now = T0 + 10 * DAY
    part = Part("t", [[T0, T0 + 1], [T0 + HOUR], [now + 30 * DAY], [T0 + 2 * HOUR], [T0 + 3 * HOUR]])
    rows = check_against_oracle(write_logdir(tmp_path, [part]), [f"t:retention.ms={DAY}"], now,
                                retention_ms=DAY)
    # hand-derived: segments 0 and 2 expired; 3 is in the future and stops the walk.
    assert deleted(rows) == {0: "retention.ms", 2: "retention.ms"}
    blocked = [r for r in rows if r["baseOffset"] >= 4]
    assert [r["deletableAtMs"] for r in blocked] == [now + 31 * DAY + 1] * 2


def test_strictly_greater_and_deletable_at(tmp_path: Path) -> None:
    logdir = write_logdir(tmp_path, [Part("t", [[T0], [T0 + 5 * HOUR], [T0 + 2 * HOUR], [T0 + 9 * HOUR]])])
    flags = [f"t:retention.ms={HOUR}"]
    rows = tool_rows(logdir, flags, T0 + HOUR)        # now - largest == retention: not yet
    assert deleted(rows) == {}
    # a later, older segment waits for the newer one before it: max over the prefix.
    assert [r["deletableAtMs"] for r in rows] == [T0 + HOUR + 1, T0 + 6 * HOUR + 1, T0 + 6 * HOUR + 1,
                                                    T0 + 10 * HOUR + 1]
    check_against_oracle(logdir, flags, T0 + HOUR, retention_ms=HOUR)
    check_against_oracle(logdir, flags, T0 + 6 * HOUR + 1, retention_ms=HOUR)


def test_retention_ms_unlimited(tmp_path: Path) -> None:
    logdir = write_logdir(tmp_path, [Part("t", [[T0], [T0 + 1]])])
    rows = check_against_oracle(logdir, ["t:retention.ms=-1"], T0 + 1000 * DAY, retention_ms=-1)
    assert deleted(rows) == {} and all(r["deletableAtMs"] is None for r in rows)


# ---------------------------------------------------------------------------------------------
# size retention


@pytest.mark.parametrize("extra,expect", [
    (0, {0}),            # diff - size == 0 exactly: deleted
    (1, {0}),            # one byte more to free: the second segment would overshoot it
    (-1, set()),         # diff one byte below the first segment's size
    ("two", {0, 1}),
    ("total", set()),    # size == limit: diff 0, nothing of size > 0 goes
], ids=["boundary", "one-byte-over", "one-byte-short", "two-segments", "at-limit"])
def test_size_retention_boundary(tmp_path: Path, extra: Any, expect: set[int]) -> None:
    part = Part("t", [[T0, T0 + 1], [T0 + 2, T0 + 3], [T0 + 4], [T0 + 5]])
    logdir = write_logdir(tmp_path, [part])
    facts = gather(logdir, "t", 0)
    sizes = [s.size for s in facts.segs]
    total = sum(sizes)
    if extra == "two":
        limit = total - sizes[0] - sizes[1]
    elif extra == "total":
        limit = total
    else:
        limit = total - sizes[0] - extra
    flags = ["t:retention.ms=-1", f"t:retention.bytes={limit}"]
    rows = check_against_oracle(logdir, flags, T0, retention_ms=-1, retention_bytes=limit)
    bases = [s.base for s in facts.segs]
    assert set(deleted(rows)) == {bases[i] for i in expect}
    assert all(r["deletableAtMs"] == T0 for r in rows if r["deletable"])
    assert all(r["deletableAtMs"] is None for r in rows if not r["deletable"])


def test_size_limit_is_per_partition(tmp_path: Path) -> None:
    small = Part("t", [[T0], [T0 + 1]], partition=0)
    big = Part("t", [[T0], [T0 + 1], [T0 + 2], [T0 + 3]], partition=1)
    logdir = write_logdir(tmp_path, [small, big])
    seg = gather(logdir, "t", 0).segs[0].size
    limit = 2 * seg                  # partition 0 fits exactly (diff 0), partition 1 sheds two
    rows = check_against_oracle(logdir, ["t:retention.ms=-1", f"t:retention.bytes={limit}"], T0,
                                retention_ms=-1, retention_bytes=limit)
    assert {(r["partition"], r["baseOffset"]) for r in rows if r["deletable"]} == {(1, 0), (1, 1)}


def test_size_then_time_recompute(tmp_path: Path) -> None:
    now = T0 + 3 * DAY
    part = Part("t", [[T0 + 2 * DAY + 23 * HOUR], [T0], [T0 + HOUR], [now + DAY], [T0]])
    logdir = write_logdir(tmp_path, [part])
    seg0 = gather(logdir, "t", 0).segs[0].size
    total = sum(s.size for s in gather(logdir, "t", 0).segs)
    limit = total - seg0
    rows = check_against_oracle(logdir, [f"t:retention.bytes={limit}", f"t:retention.ms={DAY}"], now,
                                retention_ms=DAY, retention_bytes=limit)
    # size removes the young first segment, then time continues from the second
    assert deleted(rows) == {0: "retention.bytes", 1: "retention.ms", 2: "retention.ms"}


# ---------------------------------------------------------------------------------------------
# logStartOffset, HW, active segment, policies


@pytest.mark.parametrize("log_start,expect", [
    (3, {0: "log-start-offset"}),                              # inside segment 2..3
    (4, {0: "log-start-offset", 2: "log-start-offset"}),       # at segment 4's base
], ids=["mid-segment", "at-boundary"])
@pytest.mark.parametrize("policy", ["compact", "delete"])
def test_log_start_offset(tmp_path: Path, log_start: int, expect: dict[int, str], policy: str) -> None:
    part = Part("t", [[T0, T0], [T0, T0], [T0, T0]], log_start=log_start)
    flags = [f"t:cleanup.policy={policy}", "t:retention.ms=-1"]
    rows = check_against_oracle(write_logdir(tmp_path, [part]), flags, T0, policy=policy, retention_ms=-1)
    assert deleted(rows) == expect


def test_high_watermark_protects_segments(tmp_path: Path) -> None:
    part = Part("t", [[T0, T0], [T0, T0], [T0, T0], [T0]], hw=5)     # HW inside segment 4..5
    now = T0 + 30 * DAY
    rows = check_against_oracle(write_logdir(tmp_path, [part]), [], now)
    assert deleted(rows) == {0: "retention.ms", 2: "retention.ms"}
    assert [r["deletableAtMs"] for r in rows if not r["deletable"]] == [None, None]


def test_missing_hw_assumed_leo(tmp_path: Path) -> None:
    part = Part("t", [[T0], [T0]], drop_hw=True)
    logdir = write_logdir(tmp_path, [part])
    assert ("t", 0) not in read_checkpoint(logdir / "replication-offset-checkpoint")
    rows = check_against_oracle(logdir, [], T0 + 30 * DAY)
    assert set(deleted(rows)) == {0, 1}
    kafka_load = tool_rows(logdir, [], T0 + 30 * DAY, missing_hw="log-start")
    assert deleted(kafka_load) == {}


def test_active_segment_deletable_when_hw_at_leo(tmp_path: Path) -> None:
    rows = check_against_oracle(write_logdir(tmp_path, [Part("t", [[T0], [T0 + 1]])]), [], T0 + 30 * DAY)
    assert deleted(rows) == {0: "retention.ms", 1: "retention.ms"}


def test_empty_active_segment_never_deleted(tmp_path: Path) -> None:
    logdir = write_logdir(tmp_path, [Part("t", [[T0], [T0 + 1]], empty_active=True)])
    rows = check_against_oracle(logdir, [], T0 + 30 * DAY)
    assert [r["sizeBytes"] for r in rows][-1] == 0
    assert deleted(rows) == {0: "retention.ms", 1: "retention.ms"}
    assert rows[-1]["deletableAtMs"] is None


@pytest.mark.parametrize("policy,expect", [
    ("delete", {0, 1, 2}), ("compact", set()), ("compact,delete", {0, 1, 2}), ("", set()),
], ids=["delete", "compact", "compact-delete", "empty"])
def test_cleanup_policy(tmp_path: Path, policy: str, expect: set[int]) -> None:
    logdir = write_logdir(tmp_path, [Part("t", [[T0], [T0], [T0]])])
    rows = check_against_oracle(logdir, [f"t:cleanup.policy={policy}"], T0 + 30 * DAY, policy=policy)
    assert set(deleted(rows)) == expect


@pytest.mark.parametrize("policy", ["compact", "compact,delete"])
def test_compacted_without_cleaner_never_retained(tmp_path: Path, policy: str) -> None:
    # LogManager.cleanupLogs skips compacted logs; only the cleaner thread runs their pass
    logdir = write_logdir(tmp_path, [Part("t", [[T0], [T0], [T0]], log_start=2)])
    flags = [f"t:cleanup.policy={policy}"]
    assert deleted(tool_rows(logdir, flags, T0 + 30 * DAY)) != {}
    rows = tool_rows(logdir, [*flags, "*:log.cleaner.enable=false"], T0 + 30 * DAY)
    assert deleted(rows) == {} and all(r["deletableAtMs"] is None for r in rows)


def test_tiered_uses_local_retention(tmp_path: Path) -> None:
    logdir = write_logdir(tmp_path, [Part("t", [[T0], [T0 + DAY], [T0 + 2 * DAY]])])
    flags = ["t:remote.storage.enable=true", f"t:local.retention.ms={DAY}", f"t:retention.ms={30 * DAY}"]
    now = T0 + 2 * DAY              # segment 1 is exactly DAY old: kept (strict >)
    rows = check_against_oracle(logdir, flags, now, retention_ms=DAY)
    assert set(deleted(rows)) == {0}
    # remote copy disabled: the topic-wide retention applies again
    rows = tool_rows(logdir, [*flags, "t:remote.log.copy.disable=true"], now)
    assert deleted(rows) == {}


def test_legacy_v0_mtime_fallback(tmp_path: Path) -> None:
    mt = {0: T0 - 10 * DAY, 3: T0 - 2 * DAY, 5: T0}
    part = Part("old", [[-1] * 3, [-1] * 2, [-1] * 2], magic=0, mtimes=mt)
    logdir = write_logdir(tmp_path, [part])
    rows = check_against_oracle(logdir, [f"old:retention.ms={3 * DAY}"], T0, retention_ms=3 * DAY)
    assert [r["largestTimestamp"] for r in rows] == [mt[0], mt[3], mt[5]]
    assert deleted(rows) == {0: "retention.ms"}
    assert [r["deletableAtMs"] for r in rows] == [T0, T0 + DAY + 1, T0 + 3 * DAY + 1]


def test_missing_index_files(tmp_path: Path) -> None:
    # LogLoader: a missing .timeindex is recreated empty (largestTimestamp falls back to the mtime);
    # a missing .index makes the broker recover the segment, rebuilding the time index from batches.
    mtime = T0 - 50 * DAY
    logdir = write_logdir(tmp_path, [Part("t", [[T0], [T0 + DAY], [T0 + 2 * DAY]], mtimes={0: mtime, 1: mtime})])
    pdir = logdir / "t-0"
    (pdir / f"{0:020d}.timeindex").unlink()
    (pdir / f"{1:020d}.index").unlink()
    rows = tool_rows(logdir, [], T0)
    assert [r["largestTimestamp"] for r in rows] == [mtime, T0 + DAY, T0 + 2 * DAY]
    assert deleted(rows) == {0: "retention.ms"}


# ---------------------------------------------------------------------------------------------
# the pure walk, summaries, shipped samples, real data


def test_walk_zero_size_segment_at_size_limit() -> None:
    segs = [SegmentFacts(0, 0, T0), SegmentFacts(5, 10, T0), SegmentFacts(9, 10, T0)]
    policy = RetentionPolicy(retention_ms=-1, retention_bytes=20)
    out = retention_walk(segs, log_start_offset=0, log_end_offset=12, high_watermark=12, policy=policy, now_ms=T0)
    # size == limit: diff 0, a zero-byte segment still satisfies diff - size >= 0
    assert [d.deletable for d in out] == [True, False, False]


def test_summary_and_disk_usage(tmp_path: Path) -> None:
    logdir = write_logdir(tmp_path, [Part("t", [[T0], [T0 + DAY], [T0 + 2 * DAY]]),
                                     Part("u", [[T0], [T0]], hw=1)])
    now = T0 + 8 * DAY
    rows = tool_rows(logdir, [], now)
    summary = {(s["topic"], s["partition"]): s for s in summarize(rows)}
    for key, s in summary.items():
        mine = [r for r in rows if (r["topic"], r["partition"]) == key]
        assert s["bytes"] == sum(r["sizeBytes"] for r in mine)
        assert s["deletableBytes"] == sum(r["sizeBytes"] for r in mine if r["deletable"])
        assert s["bytesRemaining"] == s["bytes"] - s["deletableBytes"]
    # default retention.ms = 7 days: segment 1 is exactly 7 days old at now
    assert summary[("t", 0)]["nextDeletionMs"] == T0 + 8 * DAY + 1
    assert summary[("u", 0)]["bytesNeverDeletable"] == rows[-1]["sizeBytes"]
    steps = disk_usage_steps(rows, now)
    assert steps[0] == (now, sum(r["sizeBytes"] for r in rows))
    assert [t for t, _ in steps] == [now, now, T0 + 8 * DAY + 1, T0 + 9 * DAY + 1]   # before/after the pass
    assert steps[-1][1] == sum(r["sizeBytes"] for r in rows if r["deletableAtMs"] is None)


def test_output_lines(tmp_path: Path) -> None:
    import json

    from kafka_format.log.retention import SEGMENT_FIELDS
    from kafka_format.report.retention_report import format_segments

    logdir = write_logdir(tmp_path, [Part("t", [[T0], [T0 + DAY]], hw=1)])
    rows = tool_rows(logdir, [], T0 + 8 * DAY)
    objs = [json.loads(line) for line in format_segments(rows, "jsonl").splitlines()]
    assert [list(o) for o in objs] == [list(SEGMENT_FIELDS)] * 2
    assert objs == [{k: r[k] for k in SEGMENT_FIELDS} for r in rows]
    lines = format_segments(rows, "table").splitlines()
    assert lines[0].split() == list(SEGMENT_FIELDS) and len(lines) == 2 + len(rows)
    from datetime import datetime

    def iso(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    size = rows[0]["sizeBytes"]
    assert size < 1024                                  # below 1 KiB the table shows the exact count
    assert lines[2].split() == ["t", "0", "0", str(size), "B", iso(T0), "true", "retention.ms", iso(T0 + 8 * DAY),
                                "local"]
    assert lines[3].split()[6:] == ["false", "local"]   # behind the HW: no reason, never deletable


def test_data_samples(tmp_path: Path) -> None:
    logdir = tmp_path / "logdirs"
    shutil.copytree(SAMPLES, logdir)
    configs = load_topic_configs(logdir, config_file=str(logdir / "topic-configs.json"))
    now = T0 + 7 * DAY + 100_000
    seen = 0
    for task in plan_retention(str(logdir), configs, now):
        _facts, decisions = run_task(task)
        broker_dir = Path(task.log_dir)
        f = gather(broker_dir, task.topic, task.partition)
        cfg = configs[task.topic]
        expected = oracle(f, policy=",".join(sorted(cfg.cleanup_policy)), retention_ms=cfg.retention_ms,
                          retention_bytes=cfg.retention_bytes, now=now)
        assert [(d.base_offset, d.size, d.largest_timestamp) for d in decisions] == \
            [(s.base, s.size, s.largest) for s in f.segs]
        assert {d.base_offset: d.reason for d in decisions if d.deletable} == expected
        seen += 1
    assert seen >= 10


def _realdata_partitions(root: Path) -> list[tuple[Path, str, int]]:
    """Partitions of every log dir with a replication-offset-checkpoint: all user topics, and two
    ``__consumer_offsets`` partitions per log dir (hundreds of near-identical ones otherwise)."""
    out = []
    for ckpt in sorted(root.rglob("replication-offset-checkpoint")):
        logdir = ckpt.parent
        for pdir in sorted(logdir.iterdir()):
            if not pdir.is_dir() or "-" not in pdir.name or pdir.name.startswith("__cluster_metadata"):
                continue
            topic, _, part = pdir.name.rpartition("-")
            if topic == "__consumer_offsets" and sum(t == topic and d == logdir for d, t, _ in out) >= 2:
                continue
            if part.isdigit() and any(p.name.endswith(".log") for p in pdir.iterdir()):
                out.append((logdir, topic, int(part)))
    return out


@pytest.mark.realdata
def test_realdata_consistent_with_oracle(realdata: Path) -> None:
    parts = _realdata_partitions(realdata)
    if not parts:
        pytest.skip("no partition with a replication-offset-checkpoint in realdata")
    now = T0 + 400 * DAY
    checked = 0
    by_dir: dict[Path, list[tuple[str, int]]] = {}
    for logdir, topic, part in parts[::max(1, len(parts) // 150)]:      # every set, ~150 partitions
        by_dir.setdefault(logdir, []).append((topic, part))
    for logdir, tps in by_dir.items():
        configs = load_topic_configs(logdir, use_metadata=False)
        for task in plan_retention(str(logdir), configs, now, topics=sorted({t for t, _ in tps})):
            if (task.topic, task.partition) not in tps:
                continue
            _facts, decisions = run_task(task)
            f = gather(Path(task.log_dir), task.topic, task.partition)
            cfg = configs[task.topic]
            expected = oracle(f, policy=",".join(sorted(cfg.cleanup_policy)), retention_ms=cfg.retention_ms,
                              retention_bytes=cfg.retention_bytes, now=now)
            assert [(d.base_offset, d.size, d.largest_timestamp) for d in decisions] == \
                [(s.base, s.size, s.largest) for s in f.segs], (task.topic, task.partition)
            assert {d.base_offset: d.reason for d in decisions if d.deletable} == expected
            checked += 1
    assert checked
