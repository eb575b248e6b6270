"""Comparison 5 (reading): ``spark.read.format("kafka-log")`` over a copy of the shared broker's
log dirs against a real consumer (kafka-python) of the live broker, per isolation level.

The copy is taken with no writes in flight once ``replication-offset-checkpoint`` holds the
broker's high watermarks (see test_offsets).  The consumer reads every partition of the workload
topics from its beginning to its end offset (the high watermark for read_uncommitted, the last
stable offset for read_committed: the standard workload leaves a transaction open on ``w-txn-0``);
the source reads with ``upTo=highWatermark`` and the same ``isolationLevel``.

Compared per partition: the end (consumer ``end_offsets`` vs the offline HW / LSO) and the rows
(topic, partition, offset, timestamp ms, timestampType, key, value, headers).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from broker import KafkaBroker, consume_from_start

pytestmark = pytest.mark.conformance

COMPARISON = "reading"
ISOLATIONS = ("read_uncommitted", "read_committed")

Row = tuple[str, int, int, int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]


def _consume(broker: KafkaBroker, partitions: list[tuple[str, int]], isolation: str
             ) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], list[Row]]]:
    """End offsets and every record below them, read by a kafka-python consumer."""
    return consume_from_start(broker, partitions, isolation, lambda m: (
        m.topic, m.partition, m.offset, m.timestamp, m.timestamp_type, m.key, m.value,
        tuple((k, v) for k, v in m.headers)))


def _read(spark, copy: Path, topics: list[str], isolation: str) -> dict[tuple[str, int], list[Row]]:
    from pyspark.sql import functions as F

    df = (spark.read.format("kafka-log").option("topics", ",".join(topics))
          .option("isolationLevel", isolation).option("upTo", "highWatermark").load(str(copy))
          .select("topic", "partition", "offset", F.expr("unix_millis(timestamp)").alias("ts"),
                  "timestampType", "key", "value", "headers"))
    out: dict[tuple[str, int], list[Row]] = {}
    for r in df.orderBy("topic", "partition", "offset").collect():
        headers = tuple((h["key"], None if h["value"] is None else bytes(h["value"])) for h in r["headers"] or ())
        out.setdefault((r["topic"], r["partition"]), []).append(
            (r["topic"], r["partition"], r["offset"], r["ts"], r["timestampType"],
             None if r["key"] is None else bytes(r["key"]), None if r["value"] is None else bytes(r["value"]),
             headers))
    return out


def _offline_ends(copy: Path, partitions: list[tuple[str, int]], isolation: str) -> dict[tuple[str, int], Any]:
    """The end the source reads to: the HW of the copy (read_uncommitted) or its LSO."""
    from kafka_format.read.planning import last_stable_offset, open_partitions

    out: dict[tuple[str, int], Any] = {}
    for replica in open_partitions([str(copy)]):
        key = (replica.topic, replica.partition)
        if key in partitions:
            hw = replica.high_watermark
            out[key] = hw if isolation == "read_uncommitted" or hw is None else last_stable_offset(replica, hw)
    return out


def test_kafka_log_source_reads_what_a_consumer_reads(kafka_broker: KafkaBroker, standard_workload, spark,
                                                       conformance, kafka_version: str, tmp_path: Path) -> None:
    topics = sorted(standard_workload.topics)
    partitions = [(t, p) for t in topics for p in range(standard_workload.topics[t])]
    kafka_broker.wait_high_watermarks_checkpointed(partitions)
    copy = kafka_broker.copy_log_dirs(tmp_path / "copy")
    for isolation in ISOLATIONS:
        ends, consumed = _consume(kafka_broker, partitions, isolation)
        read = _read(spark, copy, topics, isolation)
        offline = _offline_ends(copy, partitions, isolation)
        for key in partitions:
            name = f"{isolation} {key[0]}-{key[1]}"
            conformance.compare(COMPARISON, kafka_version, f"{name} end", offline.get(key), ends[key])
            theirs, mine = consumed[key], read.get(key, [])
            if mine == theirs:
                conformance.record(COMPARISON, kafka_version, f"{name} rows ({len(theirs)})", True)
            else:
                first = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), min(len(mine), len(theirs)))
                conformance.record(COMPARISON, kafka_version, f"{name} rows", False,
                                   f"ours {len(mine)} rows, kafka {len(theirs)}; first difference at row {first}: "
                                   f"ours={mine[first] if first < len(mine) else None!r} "
                                   f"kafka={theirs[first] if first < len(theirs) else None!r}")
    conformance.assert_equal(COMPARISON, kafka_version, at_least=10)
