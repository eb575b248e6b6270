"""Comparisons 3 (compaction) and 4 (retention) of issue 8: Kafka's log cleaner and retention pass
against ``klogs compaction --mode cleaner --write-segments`` and ``klogs retention``.

One broker per Kafka version, four starts:

A. held back (``log.cleaner.min.cleanable.ratio=1.0``: a ratio is never above 1, and
   ``max.compaction.lag.ms`` is unset, so ``grabFilthiestCompactedLog`` picks nothing; retention
   and the other log-manager tasks wait ``log.initial.task.delay.ms``): fill the compacted
   topics; stop; copy the log dirs (S0).
B. free (ratio 0.01, ``log.cleaner.backoff.ms=100``): poll ``cleaner-offset-checkpoint`` until
   every compacted partition reaches the offset our prediction ends at (bounded); stop; compare.
C. held back: more updates to ``cc-expire`` (its tombstones and markers were stamped in B with
   ``delete.retention.ms=0``) and the retention workload; stop; copy (S2); predict retention at T.
D. free, retention every 300 ms: the second cleaning of ``cc-expire`` must remove what B
   stamped; the retention pass must delete exactly our deletable segments, move the log start
   offset where we say, keep the boundary segment until its ``deletableAtMs`` and delete it after.

"now" for the compaction prediction: the cleaner takes ``time.milliseconds()`` twice, at
selection (``LogCleanerManager.grabFilthiestCompactedLog``: min/max compaction lag, producer
expiry having been applied at load) and at cleaning (``Cleaner.clean``: tombstone and marker
horizons, new horizons ``now + delete.retention.ms``).  The workload keeps every selection-time
comparison hours away from its threshold; the cleaning time is read back from the horizons the
broker stamped (``horizon - delete.retention.ms``), and the partition is predicted at that time
(byte comparisons need it: a stamped horizon becomes the batch's base timestamp).

The predictions call what ``klogs compaction --mode cleaner --write-segments`` and ``klogs
retention`` run per partition (``kafka_format.log.cleaner.clean_partition`` /
``write_cleaned_partition``, ``kafka_format.log.retention.plan_retention`` / ``run_task``), with the
same ``--config`` layers (the broker's cleaner settings, the topic configs; the rest from the
copy's KRaft metadata): the Spark jobs around them cost minutes per run here and are tested
against the same modules in tests/jobs, and the retention window is timed.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cleaning_workloads as wl
import pytest

pytestmark = pytest.mark.conformance


HELD = {"log.cleaner.min.cleanable.ratio": "1.0", "log.cleaner.backoff.ms": "100",
        "log.initial.task.delay.ms": "3600000", "log.retention.check.interval.ms": "3600000"}
FREE = {"log.cleaner.min.cleanable.ratio": "0.01", "log.cleaner.backoff.ms": "100",
        "log.initial.task.delay.ms": "0", "log.retention.check.interval.ms": "300"}
#: broker settings the prediction must be told (server.properties is not in the KRaft metadata)
#: the internal topics' segments at Kafka 4.x's floor (1 MiB): this module reads none of them
INTERNAL = {"transaction.state.log.segment.bytes": "1048576", "offsets.topic.segment.bytes": "1048576"}
BROKER_FLAGS = ["*:log.cleaner.min.cleanable.ratio=0.01", "*:log.cleaner.dedupe.buffer.size=4194304",
                "*:log.cleaner.threads=1"]
BOUNDARY_DELAY_MS = 45_000


@dataclass
class Lifecycle:
    """What one version's broker run produced for the two comparisons."""

    version: str
    work: Path
    s0: Path                       # log dir copy after phase A
    after_b: Path                  # log dir copy after phase B (first cleaning)
    s2: Path                       # after phase C
    after_d: Path                  # after phase D
    cleaned_b: dict[str, int]      # topic -> checkpoint the broker reached in B
    cleaned_d: dict[str, int]
    expected_b: dict[str, int]
    expected_d: dict[str, int]
    clean_time_b: dict[str, int]   # topic -> broker's cleaning time (stamped horizons), else None
    clean_time_d: dict[str, int]
    retention: dict[str, Any] = field(default_factory=dict)


def _copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


def _predict_partition(logdir: Path, topic: str, now_ms: int, out: Path) -> tuple[int, Path]:
    """The cleaner model on one partition of a log-dir copy at ``now_ms``: (checkpoint after, the
    written partition dir).  Same code the job runs per partition."""
    from kafka_format.log.cleaner import clean_partition, write_cleaned_partition
    from kafka_format.log.topicconfig import load_topic_configs
    from kafka_format.storage.logdir import open_log_dirs

    dirs = open_log_dirs([str(logdir)])
    configs = load_topic_configs(dirs, overrides=[*BROKER_FLAGS, *wl.topic_flags({topic: wl.COMPACTED_TOPICS[topic]})])
    replica = dirs.log_dirs[0].partition(topic, 0)
    assert replica is not None, f"{topic}-0 missing in {logdir}"
    result = clean_partition(replica, configs[topic], now_ms)
    dest = out / f"{topic}-0"
    dest.mkdir(parents=True)
    write_cleaned_partition(replica, configs[topic], now_ms, str(dest), result=result)
    return result.first_dirty_after, dest


def _expected_checkpoints(logdir: Path, topics: list[str], now_ms: int, scratch: Path) -> dict[str, int]:
    return {t: _predict_partition(logdir, t, now_ms, scratch / "plan")[0] for t in topics}


def _wait_cleaned(broker: Any, expected: dict[str, int], timeout_s: float = 90.0) -> dict[str, int]:
    """Poll the broker's cleaner-offset-checkpoint until each topic's partition 0 reached its
    expected offset; returns what it shows (also on timeout, for the comparison to report)."""
    ck = broker.log_dir / "cleaner-offset-checkpoint"

    def reached() -> dict[str, int] | None:
        got = wl.read_offset_checkpoint(ck)
        now = {t: got.get((t, 0), -1) for t in expected}
        return now if all(now[t] >= expected[t] for t in expected) else None

    try:
        return wl.wait_for(reached, timeout_s, "the cleaner's checkpoint")
    except TimeoutError:
        got = wl.read_offset_checkpoint(ck)
        return {t: got.get((t, 0), -1) for t in expected}


def _mark(what: str, t0: list[float]) -> None:
    """Progress on stderr (pytest -s shows it): where the module's minutes go."""
    import sys

    print(f"[cleaning] {time.monotonic() - t0[0]:6.1f}s {what}", file=sys.stderr, flush=True)


def _run_lifecycle(version: str, work: Path, broker_factory: Any) -> Lifecycle:
    t0 = [time.monotonic()]
    broker = broker_factory("cleaning", {**INTERNAL, **HELD})   # started
    topics = list(wl.COMPACTED_TOPICS)
    try:
        # A: fill, cleaner held back
        _mark(f"{version} A started", t0)
        for t, cfg in {**wl.COMPACTED_TOPICS, **wl.RETENTION_TOPICS}.items():
            broker.create_topic(t, partitions=1, config=cfg)
        wl.fill_compacted(broker.bootstrap, int(time.time() * 1000))
        broker.stop()
        _mark("A filled and stopped", t0)
        s0 = _copy(broker.log_dir, work / "s0")
        t_pred = int(time.time() * 1000)
        expected_b = _expected_checkpoints(s0, topics, t_pred, work / "expect-b")
        # B: clean
        broker.overrides.update(FREE)
        broker.start()
        _mark("B started", t0)
        cleaned_b = _wait_cleaned(broker, expected_b)
        _mark("B cleaned", t0)
        broker.stop()
        after_b = _copy(broker.log_dir, work / "after-b")
        # C: refill cc-expire, retention workload
        broker.overrides.update(HELD)
        broker.start()
        _mark("C started", t0)
        wl.refill_expire(broker.bootstrap)
        plan = wl.RetentionPlan(t0=int(time.time() * 1000), boundary_delay_ms=BOUNDARY_DELAY_MS)
        wl.fill_retention(broker.bootstrap, plan)
        broker.stop()
        s2 = _copy(broker.log_dir, work / "s2")
        t_ret = int(time.time() * 1000)
        retention = {"plan": plan, "now": t_ret, "rows": _predict_retention(s2, t_ret)}
        expected_d = _expected_checkpoints(s2, ["cc-expire"], int(time.time() * 1000), work / "expect-d")
        # D: clean again, retention passes
        broker.overrides.update(FREE)
        broker.start()
        _mark("D started", t0)
        retention["observed"] = _observe_retention(broker, retention["rows"], plan)
        cleaned_d = _wait_cleaned(broker, expected_d)
        retention["earliest"] = _earliest_offsets(broker, list(wl.RETENTION_TOPICS))
        broker.stop()
        after_d = _copy(broker.log_dir, work / "after-d")
        _mark("D done", t0)
    finally:
        broker.stop()
    times_b = {t: wl.stamped_clean_time(after_b / f"{t}-0", _drm(t)) for t in topics}
    times_d = {"cc-expire": wl.stamped_clean_time(after_d / "cc-expire-0", _drm("cc-expire"))}
    return Lifecycle(version, work, s0, after_b, s2, after_d, cleaned_b, cleaned_d, expected_b, expected_d,
                     {t: v for t, v in times_b.items() if v is not None},
                     {t: v for t, v in times_d.items() if v is not None}, retention)


def _drm(topic: str) -> int:
    return int(wl.COMPACTED_TOPICS[topic].get("delete.retention.ms", wl.DAY_MS))


# ---------------------------------------------------------------------------------------------
# retention


def _predict_retention(logdir: Path, now_ms: int) -> list[dict[str, Any]]:
    """What ``klogs retention LOGDIR --now T --topic rt-...`` prints (its jsonl rows), from the
    module the job runs per partition (no Spark here: the retention window is timed)."""
    from kafka_format.log.retention import plan_retention, run_task, segment_rows
    from kafka_format.log.topicconfig import load_topic_configs
    from kafka_format.storage.logdir import open_log_dirs

    dirs = open_log_dirs([str(logdir)])
    configs = load_topic_configs(dirs, overrides=wl.topic_flags(wl.RETENTION_TOPICS))
    rows: list[dict[str, Any]] = []
    for task in plan_retention(dirs, configs, now_ms, topics=list(wl.RETENTION_TOPICS)):
        facts, decisions = run_task(task)
        rows.extend(segment_rows(facts, decisions))
    return rows


def _observe_retention(broker: Any, rows: list[dict[str, Any]], plan: wl.RetentionPlan) -> dict[str, Any]:
    """Watch rt-time / rt-size in the running broker: the segments gone once the first passes ran,
    whether the boundary segment survived until its deletableAtMs, and when it went."""
    obs: dict[str, Any] = {}
    deletable = {t: sorted(r["baseOffset"] for r in rows if r["topic"] == t and r["deletable"])
                 for t in wl.RETENTION_TOPICS}
    # every segment we call deletable now goes in the first passes
    for t in wl.RETENTION_TOPICS:
        pdir = broker.partition_dir(t, 0)
        try:
            wl.wait_for(lambda: not (set(deletable[t]) & set(wl.segment_bases(pdir))), 30,  # noqa: B023
                        f"retention of {t}")
        except TimeoutError:
            pass
    # give the pass a few more rounds (300 ms apart) to delete anything else it would
    deadline = time.time() + 2.0
    while time.time() < deadline:
        time.sleep(0.3)
    obs["after_first_passes"] = {t: wl.segment_bases(broker.partition_dir(t, 0)) for t in wl.RETENTION_TOPICS}
    obs["first_passes_done_ms"] = int(time.time() * 1000)
    # the boundary: first rt-time segment not deletable now, with a deletableAtMs
    pending = [r for r in rows if r["topic"] == "rt-time" and not r["deletable"] and r["deletableAtMs"] is not None]
    if pending:
        first = min(pending, key=lambda r: r["baseOffset"])
        at = int(first["deletableAtMs"])
        obs["boundary"] = {"baseOffset": first["baseOffset"], "deletableAtMs": at}
        pdir = broker.partition_dir("rt-time", 0)
        if at > time.time() * 1000 + 180_000:
            obs["boundary"]["error"] = f"deletableAtMs {at} is too far ahead for the test to wait"
            return obs
        seen: int | None = None
        while time.time() * 1000 < at - 200:
            if first["baseOffset"] not in wl.segment_bases(pdir):
                obs["boundary"]["gone_early_at_ms"] = int(time.time() * 1000)
                break
            seen = int(time.time() * 1000)
            time.sleep(0.1)
        obs["boundary"]["seen_present_ms"] = seen
        try:
            wl.wait_for(lambda: first["baseOffset"] not in wl.segment_bases(pdir), 20, "the boundary segment")
            obs["boundary"]["deleted"] = True
        except TimeoutError:
            obs["boundary"]["deleted"] = False
        obs["boundary"]["segments_after"] = wl.segment_bases(pdir)
    return obs


def _earliest_offsets(broker: Any, topics: list[str]) -> dict[str, int]:
    """ListOffsets(earliest) of each topic's partition 0 from the live broker."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    try:
        tps = [TopicPartition(t, 0) for t in topics]
        got = consumer.beginning_offsets(tps)
        return {tp.topic: int(off) for tp, off in got.items()}
    finally:
        consumer.close()


# ---------------------------------------------------------------------------------------------
# fixtures and tests


@pytest.fixture(scope="module")
def lifecycle(kafka_version: str, broker_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Lifecycle:
    """Phases A-D on a dedicated broker of ``kafka_version`` (see the module doc)."""
    work = tmp_path_factory.mktemp(f"cleaning-{kafka_version}")
    return _run_lifecycle(kafka_version, work, broker_factory)


def test_compaction_matches_kafka(lifecycle: Lifecycle, conformance: Any, tmp_path: Path) -> None:
    """Broker's cleaned partitions == our prediction from the same files at the broker's cleaning
    time: same checkpoint, same segments, same records per segment, byte-identical files."""
    lc = lifecycle
    phases = (("first cleaning", lc.s0, lc.after_b, lc.cleaned_b, lc.clean_time_b),
              ("second cleaning", lc.s2, lc.after_d, lc.cleaned_d, lc.clean_time_d))
    for label, before, after, cleaned, times in phases:
        for topic in cleaned:
            now = times.get(topic, int(os.path.getmtime(after)) * 1000)
            checkpoint, ours = _predict_partition(before, topic, now, tmp_path / label.replace(" ", "-"))
            conformance.compare("compaction", lc.version, f"{label}: {topic}-0 cleaner checkpoint",
                                checkpoint, cleaned[topic])
            for case, equal, detail in wl.compare_partition(after / f"{topic}-0", ours):
                conformance.record("compaction", lc.version, f"{label}: {case}", equal, "" if equal else detail)
    conformance.assert_equal("compaction", lc.version, at_least=30)


def test_retention_matches_kafka(lifecycle: Lifecycle, conformance: Any) -> None:
    """The broker's retention pass deletes exactly the segments ``klogs retention --now T`` calls
    deletable, moves the log start offset to the first segment we keep, keeps the boundary
    segment until its deletableAtMs and deletes it after."""
    lc = lifecycle
    rows, obs = lc.retention["rows"], lc.retention["observed"]
    v = lc.version
    b = obs.get("boundary")
    assert b is not None, "rt-time: the workload must leave a segment with a deletableAtMs"
    assert "error" not in b, b.get("error")
    assert b["seen_present_ms"] is not None or "gone_early_at_ms" in b, \
        f"rt-time: the test reached deletableAtMs {b['deletableAtMs']} before it could watch the segment " \
        "(BOUNDARY_DELAY_MS too short for this machine)"
    for topic in wl.RETENTION_TOPICS:
        mine = [r for r in rows if r["topic"] == topic]
        before = wl.segment_bases(lc.s2 / f"{topic}-0")
        assert [r["baseOffset"] for r in mine] == before, f"{topic}: one row per segment of the copy"
        deletable = sorted(r["baseOffset"] for r in mine if r["deletable"])
        assert deletable, f"{topic}: the workload must make some segment deletable now"
        gone = sorted(set(before) - set(obs["after_first_passes"][topic]))
        if topic == "rt-time":
            gone = sorted(set(gone) - {b["baseOffset"]})   # the boundary is judged on its own below
        conformance.compare("retention", v, f"{topic}-0 segments deleted at --now", deletable, gone)
        kept = sorted(r["baseOffset"] for r in mine if not r["deletable"])
        if topic == "rt-size":
            conformance.compare("retention", v, f"{topic}-0 log start offset", kept[0],
                                lc.retention["earliest"][topic])
    # deletableAtMs: kept before it, deleted after it; the segment after it and the log start
    kept_time = sorted(r["baseOffset"] for r in rows if r["topic"] == "rt-time" and not r["deletable"])
    nxt = [x for x in kept_time if x > b["baseOffset"]]
    conformance.record("retention", v, "rt-time-0 boundary segment kept before its deletableAtMs",
                       "gone_early_at_ms" not in b,
                       f"deleted at {b.get('gone_early_at_ms')}, deletableAtMs {b['deletableAtMs']}")
    conformance.record("retention", v, "rt-time-0 boundary segment deleted after its deletableAtMs",
                       bool(b["deleted"]), f"still present after deletableAtMs {b['deletableAtMs']}")
    conformance.record("retention", v, "rt-time-0 the segment after the boundary kept",
                       bool(nxt) and nxt[0] in b["segments_after"], f"segments left {b['segments_after']}")
    conformance.compare("retention", v, "rt-time-0 log start offset after the boundary went",
                        nxt[0] if nxt else None, lc.retention["earliest"]["rt-time"])
    conformance.assert_equal("retention", v, at_least=7)
