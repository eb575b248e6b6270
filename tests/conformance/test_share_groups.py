"""Comparison ``share-groups``: share groups (KIP-932) as ``klogs`` reads them offline against a broker.

Kafka 4.x only.  A dedicated broker whose share coordinator runs on one node
(``share.coordinator.state.topic.replication.factor=1``, ``min.isr=1``), with four
``__share_group_state`` partitions (several share-partitions per segment), a snapshot after every
three updates of a share-partition (``snapshot.update.records.per.snapshot=3``: snapshots and updates
both on disk), cold-partition snapshots every 5 s and pruning off.  ``ShareDriver.java`` (one JVM,
Kafka's ``KafkaShareConsumer`` and ``Admin``) runs the scenario on topic ``share-t`` (2 partitions,
200 records):

* ``sg-a``: explicit acknowledgement by offset (REJECT, RELEASE up to delivery count 3 then ACCEPT,
  RELEASE always, ACCEPT), two sessions: released records come back with higher delivery counts;
* ``sg-b``: everything, implicit acknowledgement;
* ``sg-c``: everything, then ``alterShareGroupOffsets(share-t-0 -> 50)`` (a new state epoch);
* ``sg-d``: everything, then ``deleteShareGroups`` (``ShareSnapshotKey`` tombstones).

The driver then records the broker's answers (``listGroups`` of share groups,
``listShareGroupOffsets``: start offset, leader epoch, lag; ``describeShareGroups``: state, group
epoch, members).  The broker is stopped cleanly (the high watermarks are checkpointed), its log dir
copied, and on the copy:

1. every ``__share_group_state-N`` segment holding records: ``klogs dump --share-group-state-decoder``
   against Kafka's ``DumpLogSegments --share-group-state-decoder`` (stdout line for line, exit code);
2. every ``__consumer_offsets-N`` segment (share-group record types 10-15): ``--offsets-decoder``
   the same way;
3. ``klogs groups --format jsonl --engine local``: per share group and partition ``committedOffset``
   (the share-partition start offset), ``leaderEpoch`` and ``lag`` against ``listShareGroupOffsets``;
   the set of share-group rows against the broker's (the deleted ``sg-d`` has none); per group
   ``state``, ``generation`` and ``members`` against ``describeShareGroups``; and per live
   share-partition the state as Kafka's own dump text of the copy shows it (no Admin API serves it):
   ``shareStateEpoch`` = the ``stateEpoch`` of the key's last snapshot, ``deliveryCompleteCount`` =
   that of the key's last record (null when absent, i.e. -1; an update's replaces the state's), and,
   when the key's last record is a snapshot (a snapshot replaces the state wholesale), ``inFlight`` =
   its ``stateBatches`` with Kafka's ``RecordState`` names.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kafka_dump
import pytest
from broker import KafkaBroker, major
from kafka_dump import _driver_dir

pytestmark = pytest.mark.conformance

COMPARISON = "share-groups"
TOPIC = "share-t"
PARTITIONS = 2
RECORDS = 200
STATE_TOPIC = "__share_group_state"
OFFSETS_TOPIC = "__consumer_offsets"
SHARE_DRIVER = Path(__file__).with_name("ShareDriver.java")
BROKER_CONFIG = {
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "share.coordinator.state.topic.num.partitions": "4",
    "share.coordinator.snapshot.update.records.per.snapshot": "3",
    "share.coordinator.cold.partition.snapshot.interval.ms": "5000",
    "share.coordinator.state.topic.prune.interval.ms": "3600000",
}

#: (group, topic, partition) -> (startOffset, leaderEpoch, lag) as listShareGroupOffsets answers
Offsets = dict[tuple[str, str, int], tuple[int | None, int | None, int | None]]
#: group -> (state, groupEpoch, members) as describeShareGroups answers
Described = dict[str, tuple[str, int, int]]
#: org.apache.kafka.server.share.fetch.RecordState: id -> name
RECORD_STATES = {0: "Available", 1: "Acquired", 2: "Acknowledged", 3: "Archiving", 4: "Archived"}


@dataclass
class Truth:
    """What the broker answered after the scenario (``ShareDriver truth``)."""

    groups: list[str] = field(default_factory=list)
    topic_ids: dict[str, str] = field(default_factory=dict)     # name -> id
    offsets: Offsets = field(default_factory=dict)
    described: Described = field(default_factory=dict)


@dataclass
class KeyState:
    """One share-partition key as Kafka's ``--share-group-state-decoder`` text shows it, record by record."""

    state_epoch: int | None = None          # of the last snapshot
    delivery_complete_count: int = -1       # of the last record
    last_batches: list[dict[str, int]] | None = None   # the last record's, when it is a snapshot


def _nullable(text: str) -> int | None:
    return None if text == "null" else int(text)


def _run_scenario(b: KafkaBroker) -> Truth:
    """``ShareDriver scenario`` on ``b``: the live share groups, topic ids, offsets and descriptions."""
    driver = _driver_dir(SHARE_DRIVER, b.classpath)
    done = subprocess.run([b.java, "-cp", f"{driver}{os.pathsep}{b.classpath}", "ShareDriver", b.bootstrap,
                           "scenario", TOPIC, str(PARTITIONS), str(RECORDS)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"ShareDriver failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    truth = Truth()
    for line in done.stdout.splitlines():
        f = line.split("\t")
        if f[0] == "GROUPS":
            truth.groups = f[1:]
        elif f[0] == "TOPIC":
            truth.topic_ids[f[1]] = f[2]
        elif f[0] == "OFFSETS":
            truth.offsets[(f[1], f[2], int(f[3]))] = (_nullable(f[4]), _nullable(f[5]), _nullable(f[6]))
        elif f[0] == "DESCRIBE":
            truth.described[f[1]] = (f[2], int(f[3]), int(f[4]))
    assert truth.groups and truth.offsets, f"ShareDriver printed no share groups:\n{done.stdout[-2000:]}"
    return truth


def _compare_dumps(conformance: Any, version: str, flag: str, segments: list[Path], workdir: Path
                   ) -> list[kafka_dump.Run]:
    """One case per segment (:func:`kafka_dump.segment_dumps`); Kafka's runs."""
    return [kafka for kafka, _ in kafka_dump.segment_dumps(conformance, COMPARISON, version, flag, segments, workdir)]


def _kafka_states(runs: list[kafka_dump.Run]) -> dict[tuple[str, str, int], KeyState]:
    """Per live (group, topic id, partition): :class:`KeyState` from Kafka's decoded record lines
    (in log order; a tombstone removes the key)."""
    states: dict[tuple[str, str, int], KeyState] = {}
    for run in runs:
        for line in run.stdout:
            if not line.startswith("| offset: ") or " key: {" not in line:
                continue
            key_text, payload_text = line.split(" key: ", 1)[1].split(" payload: ", 1)
            key = json.loads(key_text)
            k = (key["data"]["groupId"], key["data"]["topicId"], key["data"]["partition"])
            if payload_text == "<DELETE>":
                states.pop(k, None)
                continue
            value = json.loads(payload_text)["data"]
            st = states.setdefault(k, KeyState())
            st.delivery_complete_count = value.get("deliveryCompleteCount", -1)
            if key["type"] == "0":
                st.state_epoch = value["stateEpoch"]
                st.last_batches = value["stateBatches"]
            else:
                st.state_epoch = 0 if st.state_epoch is None else st.state_epoch
                st.last_batches = None
    return states


def _our_groups(copy: Path, now_ms: int, offsets_partitions: int) -> tuple[list[dict[str, Any]], str]:
    """``klogs groups COPY --format jsonl --engine local``: its share-group rows, and what went wrong."""
    done = kafka_dump.klogs("groups", str(copy), "--now", str(now_ms), "--format", "jsonl", "--engine", "local",
                  "--offsets-topic-partitions", str(offsets_partitions))
    err = done.stderr.decode("utf-8", "replace").strip().splitlines()
    if done.returncode != 0:
        return [], f"klogs groups exited {done.returncode}: {err[-3:]}"
    rows = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines() if line.startswith("{")]
    return [r for r in rows if r.get("groupType") == "share"], ""


def test_share_groups_equal_what_the_broker_says(broker_factory, conformance, kafka_version: str,
                                                 tmp_path: Path) -> None:
    if major(kafka_version) < 4:
        pytest.skip("share groups are Kafka 4.x")
    b = broker_factory("share-groups", BROKER_CONFIG)
    truth = _run_scenario(b)
    offsets, described, groups = truth.offsets, truth.described, truth.groups
    b.wait_high_watermarks_checkpointed([(TOPIC, p) for p in range(PARTITIONS)])
    offsets_partitions = int(b.config()["offsets.topic.num.partitions"])
    now = int(time.time() * 1000)
    b.stop()                                   # clean: every checkpoint written, nothing in flight
    copy = b.copy_log_dirs(tmp_path / "copy")

    # 1, 2. the dump text of every state and offsets segment
    state_segments = kafka_dump.segments_of(copy, STATE_TOPIC)
    offsets_segments = kafka_dump.segments_of(copy, OFFSETS_TOPIC)
    assert state_segments, f"no {STATE_TOPIC} segment holds records in {copy}"
    state_runs = _compare_dumps(conformance, kafka_version, "--share-group-state-decoder", state_segments, tmp_path)
    _compare_dumps(conformance, kafka_version, "--offsets-decoder", offsets_segments, tmp_path)

    # 3. the groups job's share-group rows
    rows, failure = _our_groups(copy, now, offsets_partitions)
    by_key = {(r["group"], r["topic"], r["partition"]): r for r in rows if r.get("topic") is not None}
    conformance.compare(COMPARISON, kafka_version, "share-group rows (group, topic, partition)",
                        failure or sorted(by_key), sorted(offsets))
    for key, (start, epoch, lag) in sorted(offsets.items()):
        r = by_key.get(key)
        conformance.compare(COMPARISON, kafka_version, f"startOffset/leaderEpoch/lag {key[0]} {key[1]}-{key[2]}",
                            failure or (None if r is None else (r["committedOffset"], r["leaderEpoch"], r["lag"])),
                            (start, epoch, lag))
    for group in groups:
        seen = {(r.get("state"), r.get("generation"), r.get("members")) for r in rows if r["group"] == group}
        conformance.compare(COMPARISON, kafka_version, f"state/groupEpoch/members {group}",
                            failure or sorted(seen, key=repr), [described[group]])
    conformance.compare(COMPARISON, kafka_version, "share groups", failure or sorted({r["group"] for r in rows}),
                        groups)

    # 3b. the persisted state Kafka's dump text shows (live keys only)
    states = _kafka_states(state_runs)
    names = {tid: name for name, tid in truth.topic_ids.items()}
    live = {(g, names.get(tid, tid), p): st for (g, tid, p), st in states.items()}
    assert sorted(live) == sorted(offsets), (f"the harness: Kafka's dump text has live keys {sorted(live)}, "
                                             f"listShareGroupOffsets {sorted(offsets)}")
    for key, st in sorted(live.items()):
        r = by_key.get(key) or {}
        where = f"{key[0]} {key[1]}-{key[2]}"
        dcc = None if st.delivery_complete_count == -1 else st.delivery_complete_count
        conformance.compare(COMPARISON, kafka_version, f"shareStateEpoch/deliveryCompleteCount {where}",
                            failure or (r.get("shareStateEpoch"), r.get("deliveryCompleteCount")),
                            (st.state_epoch, dcc))
        if st.last_batches is not None:
            in_flight = [{"firstOffset": x["firstOffset"], "lastOffset": x["lastOffset"],
                          "deliveryState": RECORD_STATES.get(x["deliveryState"], str(x["deliveryState"])),
                          "deliveryCount": x["deliveryCount"]} for x in st.last_batches]
            conformance.compare(COMPARISON, kafka_version, f"inFlight {where} (last record a snapshot)",
                                failure or r.get("inFlight"), in_flight)
    conformance.assert_equal(COMPARISON, kafka_version, at_least=len(state_segments) + len(offsets_segments)
                             + 2 + 2 * len(offsets) + len(groups))
