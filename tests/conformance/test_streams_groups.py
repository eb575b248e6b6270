"""Comparison ``streams-groups``: KIP-1071 streams groups and a KIP-848 regular-expression group as
``klogs`` reads them offline, against a broker.

Kafka 4.4.0 only (streams groups are production-ready from 4.2's ``streams.version=1``, which the
storage tool of 4.4.0 formats by default; earlier releases of the list are skipped).  A dedicated
broker, its defaults but one-second group heartbeats and no initial streams rebalance delay.
``StreamsDriver.java`` (one JVM: Kafka Streams with ``group.protocol=streams``, Kafka's consumer with
``group.protocol=consumer``, Kafka's ``Admin``; Kafka Streams comes from the pom's ``streams``
profile, on this driver's classpath only) runs the scenario on topics ``st-in`` (2 partitions, 100
records) and ``st-out`` (2 partitions):

* ``sg-done``: a Streams app ``st-in -> mapValues -> st-out`` that processes everything, commits and
  closes (leaves: the group is Empty);
* ``sg-live``: ``st-in -> mapValues -> repartition -> st-out`` (a repartition topic the broker
  creates, read back by the app's second subtopology), still running (one member, Stable);
* ``rg-848``: a consumer subscribed by the broker-side regular expression
  ``SubscriptionPattern("st-.*")`` (record type 16, ConsumerGroupRegularExpression), having read and
  committed both topics to their ends, still a member.

The driver then records the broker's answers (``listStreamsGroupOffsets`` and
``listConsumerGroupOffsets``: offset, leader epoch; ``describeStreamsGroups`` and
``describeConsumerGroups``: state, group epoch, members), once more just before the broker is
stopped cleanly with the apps and the consumer still members (the driver halts only after), and the
log dir is copied.  On the copy:

1. every ``__consumer_offsets-N`` segment holding records: ``klogs dump --offsets-decoder`` against
   Kafka's ``DumpLogSegments --offsets-decoder`` (stdout line for line, exit code), the record types
   16, 17 and 19-23 among them;
2. ``klogs groups --format jsonl --engine local``: the set of (group, topic, partition) rows and per
   row ``committedOffset`` / ``leaderEpoch`` against the Admin's offsets; per group ``groupType``,
   ``state`` (Kafka's state names), ``generation`` (the group epoch) and ``members`` against the
   Admin's description;
3. ``offsetExpiresAtMs``: null on every row of a group the Admin describes with members (the streams
   group is subscribed to its topology's source and repartition-source topics, the regex group to
   the topics its resolved expression lists: ``isSubscribedToTopic``), set on every row of the Empty
   streams group (``StreamsGroup.isSubscribedToTopic`` is false when Empty: its offsets expire).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import kafka_dist
import kafka_dump
import pytest
from broker import KafkaBroker, wait_until
from kafka_dump import _driver_dir

pytestmark = pytest.mark.conformance

COMPARISON = "streams-groups"
VERSION = "4.4.0"
RECORDS = 100
OFFSETS_TOPIC = "__consumer_offsets"
STREAMS_DRIVER = Path(__file__).with_name("StreamsDriver.java")
SCENARIO_TIMEOUT_S = 150.0
#: the record types of the scenario: 16 ConsumerGroupRegularExpression, 17 and 19-23 the streams group's
EXPECTED_TYPES = {"16", "17", "19", "20", "21", "22", "23"}
BROKER_CONFIG = {
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.min.heartbeat.interval.ms": "500",
    "group.streams.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
}

#: (group, topic, partition) -> (offset, leaderEpoch) as the Admin lists them
Offsets = dict[tuple[str, str, int], tuple[int | None, int | None]]
#: group -> (type, state, groupEpoch, members) as the Admin describes it
Described = dict[str, tuple[str, str, int | None, int]]


@dataclass
class Truth:
    """One ``truth`` of ``StreamsDriver``: the Admin's offsets and descriptions."""

    offsets: Offsets = field(default_factory=dict)
    described: Described = field(default_factory=dict)


def _nullable(text: str) -> int | None:
    return None if text == "null" else int(text)


def _parse_truths(lines: list[str]) -> list[Truth]:
    """The truths the driver printed so far (each ends with ``END``)."""
    truths: list[Truth] = []
    current = Truth()
    for line in lines:
        f = line.split("\t")
        if f[0] == "OFFSETS":
            current.offsets[(f[1], f[2], int(f[3]))] = (_nullable(f[4]), _nullable(f[5]))
        elif f[0] == "DESCRIBE":
            current.described[f[1]] = (f[2], f[3], _nullable(f[4]), int(f[5]))
        elif f[0] == "END":
            truths.append(current)
            current = Truth()
    return truths


def _streams_classpath(version: str) -> str:
    """The driver's classpath: the pom with its ``streams`` profile (Kafka Streams on top of the
    broker's jars)."""
    cp = kafka_dist.classpath(version, profile="streams")
    if cp is None:
        pytest.fail(kafka_dist.unavailable_reason(version, profile="streams"))
    return cp


class Driver:
    """``StreamsDriver`` running beside the broker: its stdout lines collected by a thread, its
    stderr in a file, ``truth`` asked for on its stdin."""

    def __init__(self, b: KafkaBroker, workdir: Path) -> None:
        cp = _streams_classpath(b.version)
        classes = _driver_dir(STREAMS_DRIVER, cp)
        self.stderr_path = workdir / "streams-driver.stderr"
        self._stderr = self.stderr_path.open("wb")
        self.proc = subprocess.Popen([b.java, "-Xmx512m", "-cp", f"{classes}{os.pathsep}{cp}", "StreamsDriver",
                                      b.bootstrap, str(workdir / "streams-state"), str(RECORDS)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                     text=True)
        self.lines: list[str] = []
        assert self.proc.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _read(self, out: IO[str]) -> None:
        for line in out:
            self.lines.append(line.rstrip("\n"))

    def _failure(self) -> str:
        tail = self.stderr_path.read_text(errors="replace").splitlines()[-25:]
        return "\n".join(["stdout:", *self.lines[-20:], "stderr:", *tail])

    def wait_truth(self, n: int, timeout: float) -> Truth:
        """The ``n``-th truth (1-based), once printed."""
        def printed() -> list[Truth] | None:
            if self.proc.poll() is not None:
                raise AssertionError(f"StreamsDriver exited {self.proc.returncode}:\n{self._failure()}")
            truths = _parse_truths(list(self.lines))
            return truths if len(truths) >= n else None

        try:
            return wait_until(printed, timeout, f"StreamsDriver's truth #{n}", interval=0.5)[n - 1]
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\n{self._failure()}") from None

    def ask_truth(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("truth\n")
        self.proc.stdin.flush()

    def finish(self) -> None:
        """End of stdin: the driver halts (bounded; killed by its pid past the deadline)."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (subprocess.TimeoutExpired, BrokenPipeError):
            self.proc.kill()
            self.proc.wait(timeout=30)
        finally:
            self._stderr.close()


def _record_type(line: str) -> str | None:
    """The record type of one ``--offsets-decoder`` record line (its key's ``type``), else None."""
    if " key: {" not in line:
        return None
    key = json.loads(line.split(" key: ", 1)[1].split(" payload: ", 1)[0])
    return str(key.get("type"))


def _compare_dumps(conformance: Any, version: str, segments: list[Path], workdir: Path) -> set[str]:
    """One case per segment: ``klogs dump --offsets-decoder SEG`` against Kafka's ``DumpLogSegments
    --files SEG --offsets-decoder`` (stdout line for line, exit code); then one case per record type,
    its record lines over every segment (so that a difference in one type hides none in another).
    Returns the record types Kafka printed."""
    flag = "--offsets-decoder"
    by_type: dict[str, list[tuple[str, str | None]]] = {}    # type -> (kafka line, ours at the same line)
    for kafka, our_lines in kafka_dump.segment_dumps(conformance, COMPARISON, version, flag, segments, workdir):
        for i, line in enumerate(kafka.stdout):
            t = _record_type(line)
            if t is not None:
                by_type.setdefault(t, []).append((line, our_lines[i] if i < len(our_lines) else None))
    for t, pairs in sorted(by_type.items(), key=lambda kv: int(kv[0])):
        bad = [(k, o) for k, o in pairs if k != o]
        detail = "" if not bad else (f"{len(bad)} of {len(pairs)} lines differ, the first:\n"
                                     f"    kafka: {bad[0][0]!r}\n    klogs: {bad[0][1]!r}")
        conformance.record(COMPARISON, version, f"dump {flag} record type {t} ({len(pairs)} records)",
                           not bad, detail)
    return set(by_type)


def _our_groups(copy: Path, now_ms: int, offsets_partitions: int, groups: set[str]
                ) -> tuple[list[dict[str, Any]], str]:
    """``klogs groups COPY --format jsonl --engine local``: the rows of ``groups``, and what went wrong."""
    done = kafka_dump.klogs("groups", str(copy), "--now", str(now_ms), "--format", "jsonl", "--engine", "local",
                  "--offsets-topic-partitions", str(offsets_partitions))
    err = done.stderr.decode("utf-8", "replace").strip().splitlines()
    if done.returncode != 0:
        return [], f"klogs groups exited {done.returncode}: {err[-3:]}"
    rows = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines() if line.startswith("{")]
    return [r for r in rows if r.get("group") in groups], ""


def test_streams_groups_equal_what_the_broker_says(broker_factory: Callable[..., KafkaBroker], conformance: Any,
                                                   kafka_version: str, tmp_path: Path) -> None:
    if kafka_version != VERSION:
        pytest.skip(f"streams groups (KIP-1071) are compared on Kafka {VERSION} only")
    b = broker_factory("streams-groups", BROKER_CONFIG)
    driver = Driver(b, tmp_path)
    try:
        first = driver.wait_truth(1, SCENARIO_TIMEOUT_S)
        driver.ask_truth()                       # again, right before the stop: the state the copy holds
        truth = driver.wait_truth(2, 30.0)
        offsets_partitions = int(b.config()["offsets.topic.num.partitions"])
        now = int(time.time() * 1000)
        b.stop()                                 # clean, with the apps and the consumer still members
    finally:
        driver.finish()
    if first != truth:
        conformance.note(COMPARISON, "the Admin's answers changed between the two truths; the second "
                                     "(just before the stop) is compared")
    copy = b.copy_log_dirs(tmp_path / "copy")
    offsets, described = truth.offsets, truth.described
    assert set(described) == {"sg-done", "sg-live", "rg-848"}, f"the harness: described {described}"
    assert described["sg-live"][3] > 0 and described["rg-848"][3] > 0, f"the harness: {described}"

    # 1. the dump text of every offsets segment
    segments = kafka_dump.segments_of(copy, OFFSETS_TOPIC)
    assert segments, f"no {OFFSETS_TOPIC} segment holds records in {copy}"
    types = _compare_dumps(conformance, kafka_version, segments, tmp_path)
    assert EXPECTED_TYPES <= types, f"the harness: Kafka's dump shows record types {sorted(types)}"

    # 2. the groups job's rows
    rows, failure = _our_groups(copy, now, offsets_partitions, set(described))
    by_key = {(r["group"], r["topic"], r["partition"]): r for r in rows if r.get("topic") is not None}
    conformance.compare(COMPARISON, kafka_version, "rows (group, topic, partition)",
                        failure or sorted(by_key), sorted(offsets))
    for key, (offset, epoch) in sorted(offsets.items()):
        r = by_key.get(key)
        conformance.compare(COMPARISON, kafka_version, f"committedOffset/leaderEpoch {key[0]} {key[1]}-{key[2]}",
                            failure or (None if r is None else (r["committedOffset"], r["leaderEpoch"])),
                            (offset, epoch))
    for group, (gtype, state, epoch, members) in sorted(described.items()):
        seen = {(r.get("groupType"), r.get("state"), r.get("generation"), r.get("members"))
                for r in rows if r["group"] == group}
        conformance.compare(COMPARISON, kafka_version, f"groupType/state/generation/members {group}",
                            failure or sorted(seen, key=repr), [(gtype, state, epoch, members)])

    # 3. expiry: none while the group is subscribed (it has members), a deadline for the Empty group
    for key in sorted(offsets):
        r = by_key.get(key)
        live = described[key[0]][3] > 0
        expires = None if r is None else r.get("offsetExpiresAtMs")
        want = "null (subscribed)" if live else "set (Empty: expires)"
        ours = "no row" if r is None else ("null (subscribed)" if expires is None else "set (Empty: expires)")
        conformance.compare(COMPARISON, kafka_version, f"offsetExpiresAtMs {key[0]} {key[1]}-{key[2]}",
                            failure or (ours if ours == want else f"{ours}: {expires}"), want)
    conformance.assert_equal(COMPARISON, kafka_version,
                             at_least=len(segments) + len(EXPECTED_TYPES) + 1 + 2 * len(offsets)
                             + len(described))
