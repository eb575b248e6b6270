"""Comparison 2 (offsets): the live broker's ListOffsets answers against ``klogs offsets``'s
function (``kafka_format.spark.frames.offsets_for_timestamps``) over a copy of its log dirs.

How the copy is taken: the broker keeps running (as when a user copies a live broker's dirs);
no client writes during a phase; the copy is taken once ``replication-offset-checkpoint`` holds the
high watermark the broker answers now (and, after DeleteRecords, once ``log-start-offset-checkpoint``
holds the new log start offset).  The open transaction of the standard workload stays open, so
read_committed has a last stable offset below the high watermark on ``w-txn-0``.

Phases: ``initial`` (after the standard workload), ``delete-records`` (DeleteRecords moved the log
start of ``w-retention-0`` into the middle of a segment and of ``w-codecs-1`` past the first
segment; the broker's retention check then deletes the segments below it).

Specs per phase: earliest, latest, max-timestamp, earliest-local, latest-tiered, and timestamps
taken from the batches on disk: before the first record, on batch first/max timestamps, one past
them (between records), and after the last.  Every spec goes to every partition, both isolation
levels; the answer compared is (offset, timestamp, leader epoch), -1 as null.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from broker import KafkaBroker

pytestmark = pytest.mark.conformance

COMPARISON = "offsets"
SPECIALS = [-1, -2, -3, -4, -5]
ISOLATIONS = ("read_uncommitted", "read_committed")


def _partitions(workload, broker: KafkaBroker) -> list[tuple[str, int]]:
    parts = [(t, p) for t, n in sorted(workload.topics.items()) for p in range(n)]
    for internal in ("__consumer_offsets", "__transaction_state"):
        parts += sorted((internal, int(d.name.rsplit("-", 1)[1]))
                        for d in broker.log_dir.glob(f"{internal}-*"))
    return parts


def _query_timestamps(copy: Path, partition: tuple[str, int]) -> list[int]:
    """Timestamps around and on the batches of one partition of the copy: before the first
    record, on the first/max timestamps of a few batches, one past them, and after the last."""
    from kafka_format.records.file_records import iter_batches

    topic, part = partition
    stamps: list[tuple[int, int]] = []
    for log in sorted((copy / f"{topic}-{part}").glob("*.log")):
        for b in iter_batches(str(log)):
            if b.is_control or b.base_timestamp is None or b.max_timestamp < 0:
                continue
            stamps.append((b.base_timestamp, b.max_timestamp))
    if not stamps:
        return []
    lo = min(s[0] for s in stamps)
    hi = max(s[1] for s in stamps)
    chosen = {lo - 1, lo, hi, hi + 1}
    for base, mx in stamps[:: max(1, len(stamps) // 3)]:
        chosen.update({base, mx, mx + 1})
    return sorted(t for t in chosen if t >= 0)


Answer = tuple[int | None, int | None, int | None]


def _kafka_answers(broker: KafkaBroker, specs: dict[tuple[str, int], list[int]], isolation: str
                   ) -> dict[tuple[str, int, int], Answer]:
    """One ListOffsets request per round: round i asks every partition its i-th spec."""
    from kafka import TopicPartition
    from kafka.protocol.consumer.offsets import IsolationLevel

    level = IsolationLevel.READ_COMMITTED if isolation == "read_committed" else IsolationLevel.READ_UNCOMMITTED
    out: dict[tuple[str, int, int], Answer] = {}
    for i in range(max(len(v) for v in specs.values())):
        ask = {TopicPartition(t, p): v[i] for (t, p), v in specs.items() if i < len(v)}
        for tp, v in broker.admin().list_partition_offsets(ask, isolation_level=level).items():
            out[(tp.topic, tp.partition, ask[tp])] = (None if v.offset < 0 else v.offset,
                                                      None if v.timestamp < 0 else v.timestamp,
                                                      v.leader_epoch)
    return out


def _our_answers(spark, copy: Path, specs: dict[tuple[str, int], list[int]], isolation: str
                 ) -> dict[tuple[str, int, int], Answer]:
    """The special specs through the job's Spark function over the copy; the timestamps of each
    partition through the library lookup behind it (``PartitionLookup``, one per partition)."""
    from kafka_format.log.list_offsets import PartitionLookup
    from kafka_format.read.planning import open_partitions
    from kafka_format.spark.frames import offsets_for_timestamps

    topics = sorted({t for t, _ in specs})
    rows = offsets_for_timestamps(spark, [str(copy)], SPECIALS, topics=topics,
                                  isolation_level=isolation).collect()
    out = {(r["topic"], r["partition"], r["timestamp"]): (r["offset"], r["recordTimestamp"], r["leaderEpoch"])
           for r in rows if (r["topic"], r["partition"]) in specs}
    for replica in open_partitions([str(copy)]):
        key = (replica.topic, replica.partition)
        if key not in specs:
            continue
        with PartitionLookup(replica) as lookup:
            for spec in specs[key]:
                if spec >= 0:
                    a = lookup.list_offsets(spec, isolation)
                    out[(*key, spec)] = (a.offset, a.record_timestamp, a.leader_epoch)
    return out


def _compare_phase(phase: str, broker: KafkaBroker, spark, conformance, version: str,
                   partitions: list[tuple[str, int]], tmp: Path) -> None:
    broker.wait_high_watermarks_checkpointed(partitions)
    copy = broker.copy_log_dirs(tmp / phase)
    specs = {tp: SPECIALS + _query_timestamps(copy, tp) for tp in partitions}
    for isolation in ISOLATIONS:
        kafka = _kafka_answers(broker, specs, isolation)
        ours = _our_answers(spark, copy, specs, isolation)
        for key in sorted(kafka):
            topic, part, spec = key
            conformance.compare(COMPARISON, version, f"{phase} {isolation} {topic}-{part} spec={spec}",
                                ours.get(key, "missing"), kafka[key])


def test_list_offsets_equal_the_broker(kafka_broker: KafkaBroker, standard_workload, spark, conformance,
                                       kafka_version: str, tmp_path: Path) -> None:
    partitions = _partitions(standard_workload, kafka_broker)
    _compare_phase("initial", kafka_broker, spark, conformance, kafka_version, partitions, tmp_path)

    from broker import wait_until
    from kafka import TopicPartition

    targets = {("w-retention", 0): 0, ("w-codecs", 1): 0}
    for (t, p) in targets:
        first_segments = sorted(int(f.stem) for f in kafka_broker.partition_dir(t, p).glob("*.log"))
        # w-retention-0: the middle of its second segment; w-codecs-1: the start of its third
        targets[(t, p)] = (first_segments[1] + 3) if t == "w-retention" else first_segments[2]
    kafka_broker.admin().delete_records({TopicPartition(t, p): o for (t, p), o in targets.items()})

    def moved() -> bool:
        """The new log start is on disk: its checkpoint entry, or (once retention deleted the
        segments below it and it equals the first segment's base) no entry is needed."""
        disk = kafka_broker.read_checkpoint("log-start-offset-checkpoint")
        for (t, p), o in targets.items():
            bases = sorted(int(f.name[:20]) for f in kafka_broker.partition_dir(t, p).glob("*.log"))
            if not bases or bases[0] > o or (len(bases) > 1 and bases[1] <= o):
                return False  # segments wholly below the log start not yet deleted
            if disk.get((t, p), bases[0]) != o:
                return False
        return True

    wait_until(moved, 30, "the DeleteRecords log start on disk and the segments below it deleted")
    _compare_phase("delete-records", kafka_broker, spark, conformance, kafka_version, partitions, tmp_path)
    conformance.assert_equal(COMPARISON, kafka_version, at_least=100)

