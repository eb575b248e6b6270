"""Comparison 6 (groups and transactions) on a copy of the shared broker's log dirs.

* Committed offsets: ``__consumer_offsets`` read with the ``kafka-log`` source (read_committed, up
  to the high watermark: transactional offset commits count once their COMMIT marker is there),
  each record decoded by ``kafka_format.internal.consumer_offsets``, the last value per
  (group, topic, partition) in offset order, a tombstone removing it -- against the broker's
  OffsetFetch (admin ``list_group_offsets``): offset, metadata, leader epoch.
* Transactions: ``__transaction_state`` decoded by ``kafka_format.internal.transaction_log``, the
  last value per transactional id -- against DescribeTransactions: state, producer id and epoch,
  timeout, start time, partitions.
* Open and hanging transactions: the audit's ``open-transaction`` / ``hanging-transaction``
  findings on the data partitions (with the coordinator's view read from the copy's
  ``__transaction_state``) -- against DescribeProducers (each producer's
  ``currentTransactionStartOffset``) and ``kafka-transactions find-hanging``'s rule applied to the
  broker's answers (:func:`find_hanging`).  The workload leaves one transaction open with
  timestamps 20 minutes old: a find-hanging candidate that is not hanging, since the coordinator
  still lists the partition (the audit called it hanging before it read ``__transaction_state``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from broker import KafkaBroker, major

pytestmark = pytest.mark.conformance

COMPARISON = "groups-transactions"
OFFSET_COMMIT_TYPES = (0, 1)


def _read_topics(spark, copy: Path, topics: list[str]) -> dict[str, list[Any]]:
    """Records of ``topics`` in the copy (one Spark query), per topic in partition/offset order."""
    rows = (spark.read.format("kafka-log").option("topics", ",".join(topics))
            .option("isolationLevel", "read_committed").option("upTo", "highWatermark")
            .load(str(copy)).select("topic", "partition", "offset", "key", "value")
            .orderBy("topic", "partition", "offset").collect())
    return {t: [r for r in rows if r["topic"] == t] for t in topics}


def committed_offsets_from_log(rows: list[Any]) -> dict[tuple[str, str, int], tuple[int, str, int]]:
    """{(group, topic, partition): (offset, metadata, leaderEpoch)} replayed from the records of
    ``__consumer_offsets`` (offset order per partition; a tombstone deletes)."""
    from kafka_format.internal.consumer_offsets import (
        decode_consumer_offsets_key,
        decode_consumer_offsets_value,
    )

    out: dict[tuple[str, str, int], tuple[int, str, int]] = {}
    for r in rows:
        if r["key"] is None:
            continue
        key = bytes(r["key"])
        record_type = int.from_bytes(key[:2], "big", signed=True)
        if record_type not in OFFSET_COMMIT_TYPES:
            continue
        k = decode_consumer_offsets_key(key)["data"]
        ident = (k["group"], k["topic"], k["partition"])
        v = decode_consumer_offsets_value(record_type, None if r["value"] is None else bytes(r["value"]))
        if v is None:
            out.pop(ident, None)
        else:
            d = v["data"]
            out[ident] = (d["offset"], d.get("metadata") or "", d.get("leaderEpoch", -1))
    return out


def transactions_from_log(rows: list[Any]) -> dict[str, dict[str, Any]]:
    """{transactionalId: last decoded TransactionLogValue} of ``__transaction_state`` records."""
    from kafka_format.internal.transaction_log import decode_transaction_log_key, decode_transaction_log_value

    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["key"] is None:
            continue
        k = decode_transaction_log_key(bytes(r["key"]))["data"]
        if not isinstance(k, dict):
            continue
        v = decode_transaction_log_value(None if r["value"] is None else bytes(r["value"]))
        if v is None:
            out.pop(k["transactionalId"], None)
        else:
            out[k["transactionalId"]] = v["data"]
    return out


def test_groups_and_transactions_equal_the_broker(kafka_broker: KafkaBroker, standard_workload, spark,
                                                  conformance, kafka_version: str, tmp_path: Path) -> None:
    from kafka import TopicPartition

    from kafka_format.internal.transaction_log import TRANSACTION_STATES

    internal = sorted((d.name.rsplit("-", 1)[0], int(d.name.rsplit("-", 1)[1]))
                      for d in kafka_broker.log_dir.iterdir()
                      if d.name.startswith(("__consumer_offsets-", "__transaction_state-")))
    data_parts = [("w-txn", p) for p in range(standard_workload.topics["w-txn"])]
    kafka_broker.wait_high_watermarks_checkpointed(internal + data_parts)
    copy = kafka_broker.copy_log_dirs(tmp_path / "copy")
    admin = kafka_broker.admin()

    # committed offsets of every group the broker knows
    internal_rows = _read_topics(spark, copy, ["__consumer_offsets", "__transaction_state"])
    ours = committed_offsets_from_log(internal_rows["__consumer_offsets"])
    groups = sorted(g["group_id"] for g in admin.list_groups())
    assert set(standard_workload.groups) <= set(groups), (standard_workload.groups, groups)
    fetched = admin.list_group_offsets({g: None for g in groups})
    for group in groups:
        for tp, om in sorted(fetched.get(group, {}).items()):
            kafka = (om.offset, om.metadata or "", -1 if om.leader_epoch is None else om.leader_epoch)
            conformance.compare(COMPARISON, kafka_version, f"offset {group} {tp.topic}-{tp.partition}",
                                ours.get((group, tp.topic, tp.partition)), kafka)
    broker_keys = {(g, tp.topic, tp.partition) for g in groups for tp in fetched.get(g, {})}
    for extra in sorted(set(ours) - broker_keys):
        conformance.compare(COMPARISON, kafka_version, f"offset {extra[0]} {extra[1]}-{extra[2]}",
                            ours[extra], None)

    # transactions
    txns = transactions_from_log(internal_rows["__transaction_state"])
    described = admin.describe_transactions(sorted(standard_workload.transactions))
    for tid in sorted(standard_workload.transactions):
        d = described[tid]
        kafka = {"state": str(getattr(d.state, "value", d.state)), "producerId": d.producer_id,
                 "producerEpoch": d.producer_epoch, "timeoutMs": d.transaction_timeout_ms,
                 "startMs": d.transaction_start_time_ms,
                 "partitions": sorted((tp.topic, tp.partition) for tp in d.topic_partitions)}
        v = txns.get(tid)
        mine = None if v is None else {
            "state": TRANSACTION_STATES.get(v["transactionStatus"], str(v["transactionStatus"])),
            "producerId": v["producerId"], "producerEpoch": v["producerEpoch"],
            "timeoutMs": v["transactionTimeoutMs"], "startMs": v["transactionStartTimestampMs"],
            "partitions": sorted((p["topic"], i) for p in v.get("transactionPartitions") or ()
                                 for i in p["partitionIds"])}
        conformance.compare(COMPARISON, kafka_version, f"transaction {tid}", mine, kafka)

    # open / hanging transactions on the data partitions
    from kafka_format.log.audit.auditor import audit_partition, coordinator_transactions
    from kafka_format.read.planning import open_partitions

    now = int(time.time() * 1000)
    partitions = open_partitions([str(copy)])
    coordinator = coordinator_transactions(partitions)
    replicas = {(r.topic, r.partition): r for r in partitions}
    producers = admin.describe_producers([TopicPartition(t, p) for t, p in data_parts])
    hanging_by_kafka = find_hanging(admin, producers, now)
    for t, p in data_parts:
        findings = audit_partition(replicas[(t, p)], now_ms=now, coordinator=coordinator)
        mine_open = sorted(f.offset for f in findings if f.check in ("open-transaction", "hanging-transaction"))
        kafka_open = sorted(ps.current_transaction_start_offset
                            for ps in producers[TopicPartition(t, p)].active_producers
                            if ps.current_transaction_start_offset >= 0)
        conformance.compare(COMPARISON, kafka_version, f"open transactions {t}-{p}", mine_open, kafka_open)
        mine_hanging = sorted(f.offset for f in findings if f.check == "hanging-transaction")
        conformance.compare(COMPARISON, kafka_version, f"hanging transactions {t}-{p}", mine_hanging,
                            sorted(o for (tt, pp, o) in hanging_by_kafka if (tt, pp) == (t, p)))
    conformance.fixed(COMPARISON, "an open transaction past transaction.max.timeout.ms (by its producer's last "
                      "timestamp) that the coordinator still lists was audited as hanging; Kafka's "
                      "find-hanging also asks the coordinator (tools/src/main/java/org/apache/kafka/tools/"
                      "TransactionsCommand.java, FindHangingTransactionsCommand): the audit now reads "
                      "__transaction_state (regression: tests/format/test_audit_hanging.py)")
    conformance.assert_equal(COMPARISON, kafka_version, at_least=10)


def find_hanging(admin: Any, producers: dict[Any, Any], now_ms: int,
                 max_timeout_ms: int = 900_000) -> list[tuple[str, int, int]]:
    """(topic, partition, first offset) of the hanging transactions, by the rule of
    ``kafka-transactions find-hanging`` (``TransactionsCommand.FindHangingTransactionsCommand``)
    over the broker's DescribeProducers, ListTransactions and DescribeTransactions answers:
    candidates are open transactions whose producer last wrote more than ``max_timeout_ms`` ago;
    a candidate hangs unless its producer's transactional id is known and its description lists
    the partition."""
    candidates = [(tp, ps) for tp, state in producers.items() for ps in state.active_producers
                  if ps.current_transaction_start_offset >= 0 and now_ms - ps.last_timestamp > max_timeout_ms]
    if not candidates:
        return []
    listed = admin.list_transactions(producer_id_filters=sorted({ps.producer_id for _, ps in candidates}))
    tids = {t.producer_id: t.transactional_id for per_broker in listed.values() for t in per_broker}
    described = admin.describe_transactions(sorted(set(tids.values()))) if tids else {}
    out = []
    for tp, ps in candidates:
        tid = tids.get(ps.producer_id)
        d = described.get(tid) if tid is not None else None
        if d is None or tp not in d.topic_partitions:
            out.append((tp.topic, tp.partition, ps.current_transaction_start_offset))
    return sorted(out)


GROUPS_COMPARISON = "groups-job"
DESCRIBE_TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


def test_the_groups_job_equals_the_brokers_answers(kafka_broker: KafkaBroker, standard_workload,
                                                   conformance, kafka_version: str, tmp_path: Path) -> None:
    """``klogs groups`` on a copy of the broker's log dirs against the broker: each committed offset,
    metadata and leader epoch (OffsetFetch), each partition's LOG-END-OFFSET (ListOffsets latest, a
    consumer's end offsets), and on 4.x the text of ``kafka-consumer-groups --describe --all-groups``
    (stdout byte for byte, the state messages of stderr)."""
    import subprocess

    from kafka import KafkaConsumer, TopicPartition

    from kafka_format.engine.groups import groups_local
    from kafka_format.report.groups_report import format_kafka

    internal = sorted((d.name.rsplit("-", 1)[0], int(d.name.rsplit("-", 1)[1]))
                      for d in kafka_broker.log_dir.iterdir() if d.name.startswith("__consumer_offsets-"))
    data = sorted({(t, p) for g in standard_workload.groups.values() for (t, p) in g})
    kafka_broker.wait_high_watermarks_checkpointed(internal + data)
    copy = kafka_broker.copy_log_dirs(tmp_path / "copy")
    admin = kafka_broker.admin()
    groups = sorted(g["group_id"] for g in admin.list_groups())
    fetched = admin.list_group_offsets({g: None for g in groups})
    describe = None
    if major(kafka_version) >= 4:
        describe = subprocess.run(kafka_broker._java(DESCRIBE_TOOL, "--bootstrap-server", kafka_broker.bootstrap,
                                                     "--describe", "--all-groups"),
                                  capture_output=True, text=True, timeout=120, check=True)
    result = groups_local([str(copy)], int(time.time() * 1000),
                          offsets_partitions=int(kafka_broker.config()["offsets.topic.num.partitions"]))
    rows = result.rows.to_pylist()
    conformance.compare(GROUPS_COMPARISON, kafka_version, "notes and refused records",
                        (list(result.notes), [a for a in result.anomalies.to_pylist() if a["kind"] == "refused"]),
                        ([], []))
    ours = {(r["group"], r["topic"], r["partition"]): r for r in rows if r["committedOffset"] is not None}
    for group in groups:
        for tp, om in sorted(fetched.get(group, {}).items()):
            r = ours.get((group, tp.topic, tp.partition))
            mine = None if r is None else (r["committedOffset"], r["metadata"] or "",
                                           -1 if r["leaderEpoch"] is None else r["leaderEpoch"])
            kafka = (om.offset, om.metadata or "", -1 if om.leader_epoch is None else om.leader_epoch)
            conformance.compare(GROUPS_COMPARISON, kafka_version, f"committed {group} {tp.topic}-{tp.partition}",
                                mine, kafka)
    broker_keys = {(g, tp.topic, tp.partition) for g in groups for tp in fetched.get(g, {})}
    conformance.compare(GROUPS_COMPARISON, kafka_version, "no offsets the broker does not serve",
                        sorted(set(ours) - broker_keys), [])
    consumer = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap)
    try:
        tps = sorted({(r["topic"], r["partition"]) for r in rows if r["topic"] is not None})
        ends = consumer.end_offsets([TopicPartition(t, p) for t, p in tps])
    finally:
        consumer.close()
    for t, p in tps:
        mine_hw = {r["highWatermark"] for r in rows if (r["topic"], r["partition"]) == (t, p)}
        conformance.compare(GROUPS_COMPARISON, kafka_version, f"log end offset {t}-{p}", sorted(mine_hw),
                            [ends[TopicPartition(t, p)]])
    if describe is not None:
        assert "CURRENT-OFFSET" in describe.stdout, describe.stdout     # the workload's groups have tables
        text, messages = format_kafka(rows)
        conformance.compare(GROUPS_COMPARISON, kafka_version, "kafka-consumer-groups --describe stdout",
                            text, describe.stdout)
        kafka_messages = sorted(line for line in describe.stderr.splitlines()
                                if line.startswith(("Consumer group '", "Warning: Consumer group '")))
        conformance.compare(GROUPS_COMPARISON, kafka_version, "kafka-consumer-groups --describe state messages",
                            sorted(line for line in messages.splitlines() if line), kafka_messages)
    conformance.assert_equal(GROUPS_COMPARISON, kafka_version, at_least=5)
