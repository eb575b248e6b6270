"""The tiered-storage workload (KIP-405, ``LocalTieredStorage``) and what it captures for comparisons.

:func:`run` drives a :meth:`broker.KafkaBroker.tiered` broker (Kafka 4.3.1: see ``kafka_dist``):

1. creates ``TOPIC`` (``PARTITIONS`` partitions, :data:`TOPIC_CONFIG`: remote storage on, 8 KiB
   segments, ``local.retention.bytes`` 16 KiB so the local disk keeps about two rolled segments
   and the active one; total retention stays Kafka's default, so nothing leaves remote storage);
2. writes to every partition, before a clean restart: a producer per codec (none, gzip, snappy,
   lz4, zstd), then transactions committed and aborted (uncompressed and zstd) between plain
   records; waits until every rolled segment is uploaded (a shutdown during an upload leaves an
   orphan fileset, see :func:`run`), restarts the broker (new leader epochs: the controlled
   shutdown bumps each partition's epoch, the start once more, 0 -> 2); after it: three codecs and
   one committed and one aborted transaction more;
3. waits, polling the files (bounded, :data:`SETTLE_TIMEOUT_S`), until for every partition remote
   storage holds at least :data:`MIN_REMOTE_SEGMENTS` complete filesets, the first local segment
   is above the third uploaded one (local retention deleted them from the local disk), every
   rolled local segment is uploaded (nothing pending but the active segment), and
   ``__remote_log_metadata`` holds at least two records per uploaded base offset (started and
   finished); then the same state must hold unchanged for :data:`STABLE_FOR_S` (no upload or
   local deletion in flight);
4. captures, with the broker up and no client writing: Kafka's admin client's ListOffsets answer
   for every spec (-1 latest, -2 earliest, -3 max timestamp, -4 earliest local, -5 latest tiered,
   -6 earliest pending upload, and timestamps taken from the records read), both isolation
   levels, for the topic's partitions and ``__remote_log_metadata``'s (``ListOffsetsDriver.java``:
   kafka-python cannot send -6); a kafka-python consumer's read of every partition from offset 0
   to the end offset (high watermark; last stable offset for read_committed), both isolation
   levels -- offset 0 is in remote storage only, so the broker serves those records from the
   remote tier;
5. stops the broker cleanly (SIGTERM, controlled shutdown) and copies the log dir and the remote
   storage.  A clean stop, rather than a copy of the live broker: the remote log manager's copy
   and expiration tasks and the log manager's retention stop with the broker, so no upload or
   local deletion can fall between the two copies (a live copy could hold a segment in neither,
   or a fileset whose ``__remote_log_metadata`` record is not yet written); the checkpoints
   (high watermark, log start, recovery point, leader epochs) and producer snapshots are flushed
   and the clean-shutdown marker written, as an operator's copy of a stopped broker would be.
   The captured answers were taken just before the stop, from the same state (step 3;
   ``state_unchanged_during_capture`` says the files did not move meanwhile).  The local copy
   keeps the ``*.deleted`` files of the segments local retention removed: Kafka deletes them
   ``file.delete.delay.ms`` (60 s) later, and a stop before then leaves them (the next start
   deletes them).
6. starts the broker again on its own files (the copies are taken), sets ``retention.bytes`` to half
   the smallest partition's bytes, and once its remote log manager's expiration pass has deleted remote
   segments (the remote storage unchanged for :data:`STABLE_FOR_S`), records the complete filesets left
   (``remote_retention``); stops the broker.

The capture (``capture.json`` in the work dir; :func:`load` reads it back)::

    {"format": 1, "kafka_version": "4.3.1", "topic": "tiered", "topic_id": "<22 chars>",
     "partitions": 3, "topic_config": {...}, "broker_config": {... server.properties ...},
     "log_dir": "copy/kafka-logs", "remote_storage_dir": "copy/kafka-tiered-storage",
     "copy_taken": "after a clean stop (SIGTERM, controlled shutdown)",
     "workload": {"restarts": 1, "phases": [PHASES: codecs, records per codec, transactions],
                  "txn_records": 30, "plain_after_txn": 5,
                  "transactions": {"<transactional id>": "commit"|"abort"}},
     "state": {"tiered-0": {"local_segments": [base offsets of the copy's .log files],
                            "remote_segments": [{"base_offset": N, "segment_id": "<uuid>",
                                                 "files": [".index", ".leader_epoch_checkpoint", ...]}],
                            (every fileset in the copy, by base offset; a base offset twice is an
                             orphaned upload and its redo -- __remote_log_metadata says which counts)
                            "log_start_offset_checkpoint": N or null,
                            "leader_epochs": [[epoch, start offset], ...]}, ...},
     "list_offsets": [{"topic": t, "partition": p, "spec": -4, "isolation": "read_committed",
                       "offset": N, "timestamp": N, "leader_epoch": N or null, "error": null}, ...],
     "remote_retention": {"retention_bytes": N, "totals": {"tiered-0": N, ...},
                          "remaining_segments": {"tiered-0": [segment ids of the complete filesets left]}},
     "reads": {"read_uncommitted": {"tiered-0": {"end_offset": N, "records": [
                 {"offset": N, "timestamp": N, "timestamp_type": 0, "leader_epoch": N or null,
                  "key": base64 or null, "value": base64 or null,
                  "headers": [[name, base64 or null], ...]}, ...]}, ...},
               "read_committed": {...}}}

Paths are relative to the capture's directory.  ListOffsets answers are Kafka's as sent: -1 for
"no offset" and ``timestamp`` -1 for the specs that give none, ``leader_epoch`` null when the
broker sent none.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kafka_dist
import workloads
from broker import KafkaBroker, consume_from_start, wait_until
from cleaning_workloads import read_offset_checkpoint, segment_bases

__all__ = [
    "CAPTURE_NAME",
    "PARTITIONS",
    "REMOTE_FILE",
    "SPECIALS",
    "TOPIC",
    "TOPIC_CONFIG",
    "Capture",
    "expected_rows",
    "list_offsets",
    "load",
    "remote_filesets",
    "run",
]

log = logging.getLogger("conformance")

HERE = Path(__file__).resolve().parent
DRIVER_SOURCE = HERE / "ListOffsetsDriver.java"
CAPTURE_NAME = "capture.json"
FORMAT = 1

TOPIC = "tiered"
PARTITIONS = 3
#: the tiered topic's config (create_topic turns the small segment.bytes into internal.segment.bytes)
TOPIC_CONFIG: dict[str, str] = {
    "remote.storage.enable": "true",
    "segment.bytes": "8192",
    "local.retention.bytes": "16384",
}
METADATA_TOPIC = "__remote_log_metadata"
SPECIALS = (-1, -2, -3, -4, -5, -6)
ISOLATIONS = ("read_uncommitted", "read_committed")
MIN_REMOTE_SEGMENTS = 4
TXN_RECORDS = 30          # records per partition in each transaction
PLAIN_AFTER_TXN = 5       # plain records per partition after each transaction
#: the writes, per phase (before and after the restart): codecs with records per partition each,
#: then transactions (codec, outcome), each followed by PLAIN_AFTER_TXN plain records
PHASES: tuple[dict[str, Any], ...] = (
    {"name": "before", "codecs": ["none", "gzip", "snappy", "lz4", "zstd"], "records_per_codec": 200,
     "transactions": [[None, "commit"], ["zstd", "abort"], ["zstd", "commit"], [None, "abort"]]},
    {"name": "after", "codecs": ["lz4", "none", "gzip"], "records_per_codec": 150,
     "transactions": [["gzip", "commit"], [None, "abort"]]},
)
SETTLE_TIMEOUT_S = 180.0
STABLE_FOR_S = 2.0

#: a remote fileset's file: ``<base offset, 20 digits>-<remote segment id, 22 chars>.<type>``
REMOTE_FILE = re.compile(r"^(\d{20})-([A-Za-z0-9_-]{22})(\.[a-z_]+)$")
#: the files every uploaded segment has (``.txnindex`` only when it holds aborted transactions)
REQUIRED_REMOTE_FILES = frozenset({".log", ".index", ".timeindex", ".snapshot", ".leader_epoch_checkpoint"})


# ------------------------------------------------------------------------------------ files


def remote_filesets(remote_root: Path) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """The filesets under a ``kafka-tiered-storage`` directory, per (topic, partition), sorted by
    base offset: ``{"base_offset", "segment_id", "files"}`` (the files' suffixes).  Directories
    are ``<topic>-<partition>-<topic id>``; files not named as a fileset's are ignored."""
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    if not remote_root.is_dir():
        return out
    for d in sorted(remote_root.iterdir()):
        m = re.match(r"^(.+)-(\d+)-([A-Za-z0-9_-]{22})$", d.name)
        if not d.is_dir() or not m:
            continue
        sets: dict[str, dict[str, Any]] = {}
        for f in d.iterdir():
            fm = REMOTE_FILE.match(f.name)
            if fm:
                entry = sets.setdefault(fm.group(2), {"base_offset": int(fm.group(1)),
                                                      "segment_id": fm.group(2), "files": []})
                entry["files"].append(fm.group(3))
        for entry in sets.values():
            entry["files"].sort()
        out[(m.group(1), int(m.group(2)))] = sorted(sets.values(), key=lambda e: e["base_offset"])
    return out


def complete(fileset: Mapping[str, Any]) -> bool:
    """Whether a fileset has every required file (LocalTieredStorage writes them one by one)."""
    return REQUIRED_REMOTE_FILES <= set(fileset["files"])


def topic_id(partition_dir: Path) -> str:
    """The topic id in ``partition.metadata``."""
    for line in (partition_dir / "partition.metadata").read_text().splitlines():
        if line.startswith("topic_id:"):
            return line.split(":", 1)[1].strip()
    raise ValueError(f"no topic_id in {partition_dir / 'partition.metadata'}")


def _leader_epochs(partition_dir: Path) -> list[list[int]]:
    path = partition_dir / "leader-epoch-checkpoint"
    if not path.exists():
        return []
    return [[int(a), int(b)] for a, b in (line.split() for line in path.read_text().splitlines()[2:] if line.strip())]


# ------------------------------------------------------------------------------------ clients


def _driver_dir(classpath: str) -> Path:
    from kafka_dump import _driver_dir as compiled

    return compiled(DRIVER_SOURCE, classpath)


def list_offsets(broker: KafkaBroker, jobs: Iterable[tuple[str, int, int, str]], workdir: Path
                 ) -> list[dict[str, Any]]:
    """Kafka's admin client's ListOffsets answers (``ListOffsetsDriver.java``, one JVM) for jobs
    ``(topic, partition, spec, isolation)``, in the jobs' order (see the module doc)."""
    jobs = list(jobs)
    java = kafka_dist.java()
    assert java is not None
    workdir.mkdir(parents=True, exist_ok=True)
    jobs_file = workdir / "list-offsets.jobs"
    jobs_file.write_text("".join(f"{t}\t{p}\t{s}\t{i}\n" for t, p, s, i in jobs))
    log4j2 = workdir / "driver-log4j2.properties"
    log4j2.write_text("status = error\nappender.f.type = File\nappender.f.name = F\n"
                      f"appender.f.fileName = {workdir / 'driver.log'}\n"
                      "appender.f.layout.type = PatternLayout\nappender.f.layout.pattern = [%d] %p %m (%c)%n\n"
                      "rootLogger.level = WARN\nrootLogger.appenderRef.f.ref = F\n")
    cp = broker.classpath
    cmd = [java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", f"-Dlog4j2.configurationFile={log4j2}",
           "-cp", f"{_driver_dir(cp)}{os.pathsep}{cp}", "ListOffsetsDriver", broker.bootstrap, str(jobs_file)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"ListOffsetsDriver failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    answers: dict[tuple[str, int, int, str], dict[str, Any]] = {}
    for line in proc.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) < 5 or not parts[1].isdigit():
            continue  # not an answer line
        key = (parts[0], int(parts[1]), int(parts[2]), parts[3])
        entry: dict[str, Any] = {"topic": key[0], "partition": key[1], "spec": key[2], "isolation": key[3],
                                 "offset": None, "timestamp": None, "leader_epoch": None, "error": None}
        if parts[4] == "OK":
            entry["offset"], entry["timestamp"] = int(parts[5]), int(parts[6])
            entry["leader_epoch"] = int(parts[7]) if len(parts) > 7 and parts[7] else None
        else:
            entry["error"] = "\t".join(parts[5:])
        answers[key] = entry
    missing = [j for j in jobs if j not in answers]
    if missing:
        raise RuntimeError(f"ListOffsetsDriver answered no line for {missing[:5]}: {proc.stdout[-1000:]}")
    return [answers[j] for j in jobs]


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def consume_all(broker: KafkaBroker, partitions: list[tuple[str, int]], isolation: str,
                timeout: float = 180.0) -> dict[str, dict[str, Any]]:
    """A kafka-python consumer's read of each partition from offset 0 (the log start of a tiered
    log: the remote tier served) to its end offset, as the capture's ``reads`` entries (see the
    module doc)."""
    ends, rows = consume_from_start(broker, partitions, isolation, lambda m: {
        "offset": m.offset, "timestamp": m.timestamp, "timestamp_type": m.timestamp_type,
        "leader_epoch": getattr(m, "leader_epoch", None),
        "key": _b64(m.key), "value": _b64(m.value),
        "headers": [[k, _b64(v)] for k, v in m.headers]}, timeout)
    return {f"{t}-{p}": {"end_offset": ends[(t, p)], "records": rows[(t, p)]} for t, p in partitions}


# ------------------------------------------------------------------------------------ workload


@dataclass
class Capture:
    """A loaded ``capture.json`` (see the module doc), paths resolved against its directory."""

    path: Path
    data: dict[str, Any]
    log_dir: Path = field(init=False)
    remote_storage_dir: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_dir = self.path.parent / self.data["log_dir"]
        self.remote_storage_dir = self.path.parent / self.data["remote_storage_dir"]

    @property
    def topic(self) -> str:
        return str(self.data["topic"])

    def partitions(self) -> list[tuple[str, int]]:
        return [(self.topic, p) for p in range(int(self.data["partitions"]))]

    def answer(self, topic: str, partition: int, spec: int, isolation: str = "read_uncommitted"
               ) -> dict[str, Any]:
        """The captured ListOffsets answer of one (partition, spec, isolation)."""
        for a in self.data["list_offsets"]:
            if (a["topic"], a["partition"], a["spec"], a["isolation"]) == (topic, partition, spec, isolation):
                return dict(a)
        raise KeyError((topic, partition, spec, isolation))

    def records(self, topic: str, partition: int, isolation: str = "read_uncommitted"
                ) -> list[dict[str, Any]]:
        """The consumer's records of one partition, keys/values/header values decoded to bytes."""
        out = []
        for r in self.data["reads"][isolation][f"{topic}-{partition}"]["records"]:
            d = dict(r)
            d["key"] = None if r["key"] is None else base64.b64decode(r["key"])
            d["value"] = None if r["value"] is None else base64.b64decode(r["value"])
            d["headers"] = [(k, None if v is None else base64.b64decode(v)) for k, v in r["headers"]]
            out.append(d)
        return out

    def end_offset(self, topic: str, partition: int, isolation: str = "read_uncommitted") -> int:
        return int(self.data["reads"][isolation][f"{topic}-{partition}"]["end_offset"])


def load(path: Path) -> Capture:
    """Read a capture written by :func:`run` (``path``: the JSON file or its directory)."""
    path = Path(path)
    if path.is_dir():
        path = path / CAPTURE_NAME
    data = json.loads(path.read_text())
    if data.get("format") != FORMAT:
        raise ValueError(f"{path}: capture format {data.get('format')}, expected {FORMAT}")
    return Capture(path, data)


def _seeds(phase: Mapping[str, Any], part: int) -> Iterator[tuple[str, str, int, str | None]]:
    """(kind, seed, count, transaction outcome) of one phase's writes to ``part``, in order;
    kind: the codec, or "txn"/"plain"."""
    for codec in phase["codecs"]:
        yield codec, f"{phase['name']}-{codec}-p{part}", int(phase["records_per_codec"]), None
    for n, (_, outcome) in enumerate(phase["transactions"]):
        tid = f"tiered-{phase['name']}-{n}"
        yield "txn", f"{tid}-{outcome}-p{part}", TXN_RECORDS, outcome
        yield "plain", f"{tid}-plain-p{part}", PLAIN_AFTER_TXN, None


def expected_rows(workload: Mapping[str, Any], part: int, isolation: str
                  ) -> list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]]:
    """(key, value, headers) of every record the workload wrote to ``part``, in order, as a
    consumer of ``isolation`` sees them (read_committed: without the aborted transactions')."""
    out = []
    for phase in workload["phases"]:
        for _, seed, n, outcome in _seeds(phase, part):
            if outcome == "abort" and isolation == "read_committed":
                continue
            for key, value, headers in workloads.records(seed, n):
                out.append((key, b"" if key is None and value is None else value, list(headers)))
    return out


def _write_phase(broker: KafkaBroker, phase: Mapping[str, Any]) -> dict[str, str]:
    """One phase's writes (see PHASES); returns transactional id -> outcome."""
    for codec in phase["codecs"]:
        p = workloads.producer(broker, compression_type=None if codec == "none" else codec)
        try:
            for part in range(PARTITIONS):
                workloads.produce(p, TOPIC, f"{phase['name']}-{codec}-p{part}", phase["records_per_codec"],
                                  partition=part)
        finally:
            p.close(timeout=10)
    done: dict[str, str] = {}
    plain = workloads.producer(broker)
    try:
        for n, (codec, outcome) in enumerate(phase["transactions"]):
            tid = f"tiered-{phase['name']}-{n}"
            p = workloads.producer(broker, transactional_id=tid, compression_type=codec,
                                   transaction_timeout_ms=60000)
            try:
                p.init_transactions()
                p.begin_transaction()
                for part in range(PARTITIONS):
                    workloads.produce(p, TOPIC, f"{tid}-{outcome}-p{part}", TXN_RECORDS, partition=part,
                                      flush=False)
                p.flush(timeout=60)
                if outcome == "commit":
                    p.commit_transaction()
                else:
                    p.abort_transaction()
                done[tid] = outcome
            finally:
                p.close(timeout=10)
            for part in range(PARTITIONS):
                workloads.produce(plain, TOPIC, f"{tid}-plain-p{part}", PLAIN_AFTER_TXN, partition=part)
    finally:
        plain.close(timeout=10)
    return done


def _uploaded(broker: KafkaBroker) -> dict[str, Any] | None:
    """{partition: (local bases, uploaded bases)} once every rolled local segment of every
    partition has a complete fileset in remote storage (only the active one is not uploaded)."""
    remote = remote_filesets(broker.remote_storage_dir)
    state: dict[str, Any] = {}
    for part in range(PARTITIONS):
        bases = sorted({s["base_offset"] for s in remote.get((TOPIC, part), []) if complete(s)})
        local = segment_bases(broker.partition_dir(TOPIC, part))
        if not local or any(b not in bases for b in local[:-1]):
            return None
        state[f"{TOPIC}-{part}"] = (local, bases)
    return state


def _settled(broker: KafkaBroker) -> dict[str, Any] | None:
    """:func:`_uploaded`'s state once step 3 of the module doc holds, else None."""
    state = _uploaded(broker)
    if state is None:
        return None
    for local, bases in state.values():
        if len(bases) < MIN_REMOTE_SEGMENTS or local[0] <= bases[2]:
            return None  # local retention has not deleted three uploaded segments yet
    # a started and a finished record per uploaded base offset (an upload that a shutdown cut off
    # leaves its fileset with a started record only, and the segment is uploaded again)
    ends = workloads.end_offsets(broker, METADATA_TOPIC, 2)
    if sum(ends.values()) < 2 * sum(len(bases) for _, bases in state.values()):
        return None
    return state


def _wait_stable(broker: KafkaBroker, check: Any, what: str) -> Any:
    """Poll ``check`` (bounded) until it gives a state that is unchanged STABLE_FOR_S later."""
    def stable() -> Any:
        first = check(broker)
        if first is None:
            return None
        time.sleep(STABLE_FOR_S)
        return first if check(broker) == first else None

    return wait_until(stable, SETTLE_TIMEOUT_S, what, interval=0.5)


def run(broker: KafkaBroker, workdir: Path) -> Capture:
    """The whole workload on a started tiered broker (steps 1-5 of the module doc); the broker
    is stopped when it returns.  Writes ``workdir/capture.json`` and the copies under
    ``workdir/copy``."""
    workdir = Path(workdir)
    t0 = time.monotonic()

    def step(name: str) -> None:
        log.info("tiered workload: %s done at %.1fs", name, time.monotonic() - t0)

    broker.create_topic(TOPIC, PARTITIONS, TOPIC_CONFIG)
    txns = _write_phase(broker, PHASES[0])
    step("before restart")
    # a shutdown during an upload cancels it after LocalTieredStorage wrote the fileset and before
    # its COPY_SEGMENT_FINISHED record (the metadata producer's request fails: "Disconnected from
    # node 1"); the orphan stays in remote storage and the segment is uploaded again after the start.
    # Waiting for the uploads first keeps the capture the same from run to run.
    _wait_stable(broker, _uploaded, "the rolled segments uploaded before the restart")
    broker.restart()
    step("restart")
    txns.update(_write_phase(broker, PHASES[1]))
    step("after restart")

    settled = _wait_stable(broker, _settled, "uploads, local deletion and __remote_log_metadata to settle")
    step("settled")

    partitions = [(TOPIC, p) for p in range(PARTITIONS)]
    reads = {iso: consume_all(broker, partitions, iso) for iso in ISOLATIONS}
    step("consumer reads")
    jobs: list[tuple[str, int, int, str]] = []
    for t, p in [*partitions, (METADATA_TOPIC, 0), (METADATA_TOPIC, 1)]:
        stamps: list[int] = []
        recs = reads["read_uncommitted"].get(f"{t}-{p}", {}).get("records", [])
        if recs:
            ts = [r["timestamp"] for r in recs]
            picks = {ts[0], ts[len(ts) // 3], ts[len(ts) // 2], ts[-1], min(ts) - 1, max(ts) + 1}
            stamps = sorted(picks)
        for iso in ISOLATIONS:
            jobs += [(t, p, s, iso) for s in (*SPECIALS, *stamps)]
    answers = list_offsets(broker, jobs, workdir / "driver")
    step("list offsets")
    unchanged = _settled(broker) == settled
    broker.stop()
    step("stop")

    copy = workdir / "copy"
    log_copy = broker.copy_log_dirs(copy)
    remote_copy = broker.copy_remote_storage(copy)
    remote = remote_filesets(remote_copy)
    state = {}
    lso_checkpoint = read_offset_checkpoint(log_copy / "log-start-offset-checkpoint")
    for t, p in partitions:
        pdir = log_copy / f"{t}-{p}"
        state[f"{t}-{p}"] = {"local_segments": segment_bases(pdir),
                             "remote_segments": remote.get((t, p), []),
                             "log_start_offset_checkpoint": lso_checkpoint.get((t, p)),
                             "leader_epochs": _leader_epochs(pdir)}
    data = {
        "format": FORMAT, "kafka_version": broker.version, "topic": TOPIC,
        "topic_id": topic_id(log_copy / f"{TOPIC}-0"), "partitions": PARTITIONS,
        "topic_config": broker.topic_config(TOPIC_CONFIG), "broker_config": broker.config(),
        "log_dir": os.path.relpath(log_copy, workdir), "remote_storage_dir": os.path.relpath(remote_copy, workdir),
        "copy_taken": "after a clean stop (SIGTERM, controlled shutdown)",
        "state_unchanged_during_capture": unchanged,
        "workload": {"restarts": 1, "phases": list(PHASES), "txn_records": TXN_RECORDS,
                     "plain_after_txn": PLAIN_AFTER_TXN, "transactions": txns},
        "state": state, "list_offsets": answers, "reads": reads,
    }
    tiered_ends = {(a["topic"], a["partition"]): a["offset"] for a in answers
                   if a["topic"] == TOPIC and a["spec"] == -5 and a["isolation"] == "read_uncommitted"}
    data["remote_retention"] = _remote_retention(broker, log_copy, remote_copy, tiered_ends, workdir / "driver")
    step("remote retention")
    path = workdir / CAPTURE_NAME
    path.write_text(json.dumps(data, indent=1, sort_keys=True))
    step("capture written")
    return load(path)


def _remote_retention(broker: KafkaBroker, log_copy: Path, remote_copy: Path,
                      tiered_ends: Mapping[tuple[str, int], int], driver: Path) -> dict[str, Any]:
    """Step 6: the broker started again on its files (the copies are taken), ``retention.bytes`` set
    to half the smallest partition's bytes (local ``.log`` files and complete remote filesets), so that
    its remote log manager's expiration pass deletes the oldest remote segments by size; once the remote
    storage is unchanged for :data:`STABLE_FOR_S`, the complete filesets left per partition.  The
    broker is stopped again.  Deterministic: no client writes, no upload is pending (step 3), time
    retention stays Kafka's 7 days, and the setting is made only once the broker answers ListOffsets
    -5 as before the stop (``tiered_ends``): its copy task has found the highest copied offset again.
    Until then ``highestOffsetInRemoteStorage`` is -1 after a start, and ``onlyLocalLogSegmentsSize``
    counts every local segment, the copied ones too: an expiration pass in that window deletes more."""
    totals = {}
    remote = remote_filesets(remote_copy)
    for part in range(PARTITIONS):
        local = sum(f.stat().st_size for f in (log_copy / f"{TOPIC}-{part}").glob("*.log"))
        uploaded = sum(f.stat().st_size for f in remote_copy.glob(f"{TOPIC}-{part}-*/*.log"))
        totals[part] = local + uploaded
    limit = min(totals.values()) // 2
    broker.start()
    jobs = [(t, p, -5, "read_uncommitted") for t, p in sorted(tiered_ends)]

    def highest_known() -> bool:
        now = {(a["topic"], a["partition"]): a["offset"] for a in list_offsets(broker, jobs, driver)}
        return now == dict(tiered_ends)

    wait_until(highest_known, SETTLE_TIMEOUT_S, "the restarted broker's highest copied offsets", interval=0.5)
    broker.alter_topic_config(TOPIC, {"retention.bytes": str(limit)})

    def left(b: KafkaBroker) -> dict[str, list[str]] | None:
        now = remote_filesets(b.remote_storage_dir)
        kept = {f"{TOPIC}-{p}": sorted(s["segment_id"] for s in now.get((TOPIC, p), []) if complete(s))
                for p in range(PARTITIONS)}
        before = {f"{TOPIC}-{p}": sorted(s["segment_id"] for s in remote.get((TOPIC, p), []) if complete(s))
                  for p in range(PARTITIONS)}
        return kept if kept != before else None     # the pass has run (it deletes something: limit < totals)

    kept = _wait_stable(broker, left, "the remote log manager's expiration pass under retention.bytes")
    broker.stop()
    return {"retention_bytes": limit, "totals": {f"{TOPIC}-{p}": t for p, t in totals.items()},
            "remaining_segments": kept}
