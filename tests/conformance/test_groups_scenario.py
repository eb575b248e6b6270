"""Comparison ``groups-retention``: ``klogs groups``' predictions against what a broker then does.

A dedicated broker with ``offsets.retention.minutes=1`` and one-second expiry and retention checks.
Topic ``g-data`` (2 partitions, 4 KiB segments): 120 records per partition two hours old, then 80
new ones.  Groups:

* ``g-behind``: offsets committed without membership (a simple group), far behind (10, 20);
* ``g-lag``: a classic consumer group (subscribe, commit 150 and 190, leave: Empty);
* ``g-txn``: offsets committed by a committed transaction (100 on partition 0), then by an aborted
  one (180): the committed offset stays 100;
* ``g-848`` (Kafka 4.x): a consumer-protocol group (KIP-848, Kafka's Java client) committing 130 and 140.

The log dirs are copied once the high watermarks are on disk, and the job runs on the copy with the
retention the broker is given next (``retention.ms`` one hour) and the broker's
``offsets.retention.minutes``.  Compared with the broker:

1. every committed offset (OffsetFetch) and, on 4.x, the ``kafka-consumer-groups --describe
   --all-groups`` text (stdout byte for byte, the state messages);
2. the log start of each partition after the broker's retention pass (ListOffsets earliest, once
   it settles) with the predicted ``retentionLogStartOffset``, and per group and partition the
   unread records lost with ``retentionLossRecords``;
3. each group's offsets disappearing from OffsetFetch within the coordinator's check interval
   (1 s, plus 4 s for polling and scheduling) after the predicted ``offsetExpiresAtMs``.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from broker import KafkaBroker, major, wait_until
from kafka_dump import _driver_dir
from workloads import produce, producer

pytestmark = pytest.mark.conformance

COMPARISON = "groups-retention"
TOPIC = "g-data"
OLD, NEW = 120, 80
HOUR_MS = 3_600_000
OFFSETS_RETENTION_MS = 60_000
CHECK_MS = 1000
SLACK_MS = 4000
DESCRIBE_TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
GROUPS_DRIVER = Path(__file__).with_name("GroupsDriver.java")
BROKER_CONFIG = {
    "offsets.retention.minutes": "1",
    "offsets.retention.check.interval.ms": str(CHECK_MS),
    "log.retention.check.interval.ms": str(CHECK_MS),
    "group.initial.rebalance.delay.ms": "0",
}


def _commit_simple(b: KafkaBroker, group: str, offsets: dict[int, int]) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.consumer.fetcher import OffsetAndMetadata

    c = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        c.assign([TopicPartition(TOPIC, p) for p in offsets])
        c.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(o, f"{group}-meta", -1) for p, o in offsets.items()})
    finally:
        c.close()


def _commit_classic(b: KafkaBroker, group: str, offsets: dict[int, int]) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.consumer.fetcher import OffsetAndMetadata

    c = KafkaConsumer(TOPIC, bootstrap_servers=b.bootstrap, group_id=group, enable_auto_commit=False,
                      session_timeout_ms=10000, heartbeat_interval_ms=1000)
    try:
        def assigned() -> bool | None:
            c.poll(timeout_ms=200)
            return True if len(c.assignment()) == len(offsets) else None

        wait_until(assigned, 60, f"{group}'s assignment")
        c.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()})
    finally:
        c.close()


def _commit_transactional(b: KafkaBroker, group: str, offset: int, *, commit: bool, tid: str) -> None:
    from kafka import TopicPartition
    from kafka.consumer.fetcher import OffsetAndMetadata

    p = producer(b, transactional_id=tid, transaction_timeout_ms=60000)
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send_offsets_to_transaction({TopicPartition(TOPIC, 0): OffsetAndMetadata(offset, "txn", -1)}, group)
        if commit:
            p.commit_transaction()
        else:
            p.abort_transaction()
    finally:
        p.close(timeout=10)


def _commit_kip848(b: KafkaBroker, group: str, offsets: list[int]) -> None:
    driver = _driver_dir(GROUPS_DRIVER, b.classpath)
    done = subprocess.run([b.java, "-cp", f"{driver}{os.pathsep}{b.classpath}", "GroupsDriver", b.bootstrap,
                           group, TOPIC, *map(str, offsets)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "COMMITTED" in done.stdout, done.stderr[-2000:]


def _earliest(b: KafkaBroker) -> dict[int, int]:
    from kafka import TopicPartition
    from kafka.admin import OffsetSpec

    got = b.admin().list_partition_offsets({TopicPartition(TOPIC, p): OffsetSpec.EARLIEST for p in (0, 1)})
    return {tp.partition: v.offset for tp, v in got.items()}


def test_groups_predictions_equal_what_the_broker_does(broker_factory, conformance, kafka_version: str,
                                                        tmp_path: Path) -> None:
    from kafka_format.engine.groups import groups_local
    from kafka_format.log.topicconfig import load_topic_configs
    from kafka_format.report.groups_report import format_kafka

    b = broker_factory("groups", BROKER_CONFIG)
    b.create_topic(TOPIC, 2)
    prod = producer(b)
    try:
        old = int(time.time() * 1000) - 2 * HOUR_MS
        for p in (0, 1):
            produce(prod, TOPIC, f"old-{p}", OLD, partition=p, timestamp_ms=old)
            produce(prod, TOPIC, f"new-{p}", NEW, partition=p)
    finally:
        prod.close(timeout=10)
    groups = {"g-behind": {0: 10, 1: 20}, "g-lag": {0: 150, 1: 190}, "g-txn": {0: 100}}
    _commit_simple(b, "g-behind", groups["g-behind"])
    _commit_classic(b, "g-lag", groups["g-lag"])
    _commit_transactional(b, "g-txn", 100, commit=True, tid="g-txn-1")
    _commit_transactional(b, "g-txn", 180, commit=False, tid="g-txn-2")
    if major(kafka_version) >= 4:
        groups["g-848"] = {0: 130, 1: 140}
        _commit_kip848(b, "g-848", [130, 140])

    internal = sorted((d.name.rsplit("-", 1)[0], int(d.name.rsplit("-", 1)[1])) for d in b.log_dir.iterdir()
                      if d.name.startswith(("__consumer_offsets-", "__transaction_state-")))
    b.wait_high_watermarks_checkpointed([*internal, (TOPIC, 0), (TOPIC, 1)])
    copy = b.copy_log_dirs(tmp_path / "copy")
    now = int(time.time() * 1000)
    admin = b.admin()
    fetched = admin.list_group_offsets({g: None for g in groups})
    describe = None
    if major(kafka_version) >= 4:
        describe = subprocess.run(b._java(DESCRIBE_TOOL, "--bootstrap-server", b.bootstrap, "--describe",
                                          "--all-groups"), capture_output=True, text=True, timeout=120, check=True)
    configs = load_topic_configs([str(copy)], overrides=[f"{TOPIC}:retention.ms={HOUR_MS}"])
    result = groups_local([str(copy)], now, configs=configs, retention_ms=OFFSETS_RETENTION_MS,
                          offsets_partitions=int(b.config()["offsets.topic.num.partitions"]))
    rows = {(r["group"], r["partition"]): r for r in result.rows.to_pylist() if r["topic"] == TOPIC}

    # 1. what the broker serves now
    for group, parts in groups.items():
        for p in parts:
            om = fetched[group].get(_tp(p))
            r = rows.get((group, p))
            conformance.compare(COMPARISON, kafka_version, f"committed {group} {TOPIC}-{p}",
                                None if r is None else (r["committedOffset"], r["metadata"]),
                                None if om is None else (om.offset, om.metadata))
    if describe is not None:
        text, messages = format_kafka(result.rows.to_pylist())
        conformance.compare(COMPARISON, kafka_version, "kafka-consumer-groups --describe stdout", text,
                            describe.stdout)
        conformance.compare(COMPARISON, kafka_version, "kafka-consumer-groups --describe state messages",
                            sorted(x for x in messages.splitlines() if x),
                            sorted(x for x in describe.stderr.splitlines()
                                   if x.startswith(("Consumer group '", "Warning: Consumer group '"))))

    # 2. the retention pass the broker runs once told retention.ms = 1 hour
    before = _earliest(b)
    b.alter_topic_config(TOPIC, {"retention.ms": str(HOUR_MS)})
    def moved() -> dict[int, int] | None:
        now_earliest = _earliest(b)
        return now_earliest if all(now_earliest[p] > before[p] for p in now_earliest) else None

    wait_until(moved, 60, "the retention pass")
    time.sleep(2 * CHECK_MS / 1000)          # one more pass: nothing else is deletable
    after = _earliest(b)
    for p in (0, 1):
        predicted = {r["retentionLogStartOffset"] for (g, pp), r in rows.items() if pp == p}
        conformance.compare(COMPARISON, kafka_version, f"log start after retention {TOPIC}-{p}",
                            sorted(predicted), [after[p]])
    for (group, p), r in sorted(rows.items()):
        if r["committedOffset"] is None:
            continue
        hw = r["highWatermark"]
        lost = max(0, min(after[p], hw) - max(r["committedOffset"], before[p]))
        conformance.compare(COMPARISON, kafka_version, f"unread records retention took {group} {TOPIC}-{p}",
                            r["retentionLossRecords"], lost)

    # 3. offsets expire when predicted
    expiring = {(g, p): r["offsetExpiresAtMs"] for (g, p), r in rows.items() if r["committedOffset"] is not None}
    gone: dict[tuple[str, int], int] = {}

    def all_gone() -> bool | None:
        for g in groups:
            try:
                offsets = admin.list_group_offsets({g: None}).get(g, {})
            except Exception:  # noqa: BLE001 - a deleted group has no offsets
                offsets = {}
            t = int(time.time() * 1000)
            for gg, p in expiring:
                if gg == g and (g, p) not in gone and offsets.get(_tp(p)) is None:
                    gone[(g, p)] = t
        return True if len(gone) == len(expiring) else None

    wait_until(all_gone, (OFFSETS_RETENTION_MS + 30_000) / 1000, "the offsets to expire", interval=0.25)
    for (g, p), predicted in sorted(expiring.items()):
        conformance.compare(COMPARISON, kafka_version, f"offset expiry {g} {TOPIC}-{p}",
                            predicted is not None,
                            predicted is not None and predicted - 500 <= gone[(g, p)] <= predicted + CHECK_MS + SLACK_MS)
    conformance.assert_equal(COMPARISON, kafka_version, at_least=10)


def _tp(p: int) -> Any:
    from kafka import TopicPartition

    return TopicPartition(TOPIC, p)
