"""Comparison ``audit-live-copy``: ``klogs audit`` on a copy of a running broker's log dir, taken
while the broker runs, against what Kafka does with the same files.

A running broker preallocates the active segment's ``.index``/``.timeindex`` (``segment.index.bytes``,
zero past the entries), so ``TimeIndex.sanityCheck`` calls the copy's active time indexes corrupt (the
last slot is zero); the broker never runs it on them: without ``.kafka_cleanshutdown`` it recovers the
newest segment of every log when it starts (``LogLoader.recoverLog``), rebuilding both indexes.  The
audit must find nothing wrong in such a copy and say, for each active segment, what it took the files
for.

How the copy is taken: a dedicated broker, a few topics produced to (several segments with every
codec, a compacted topic, committed and aborted transactions, an idempotent producer); once every
transaction is complete and ``replication-offset-checkpoint`` holds the high watermarks the broker
answers, the log dir is copied file by file with the broker running.  Nothing writes meanwhile: the
metadata log's no-op heartbeat (``metadata.max.idle.interval.ms``) is set to an hour, so no file
changes under the copy (a copy that races a write is not a healthy copy).

Cases, Kafka the oracle:
* ``sanity <file>``: the audit says ``TimeIndex.sanityCheck`` fails on an active segment's time index
  exactly where Kafka's ``DumpLogSegments --index-sanity-check`` reports it corrupt;
* ``recovered <partition>``: the audit took the newest segment for one the broker recovers, and a
  broker started on a copy of the copy logs ``Recovering unflushed segment <base>`` for it (and no
  "corrupted index file" anywhere);
* ``log end <partition>``: the log end offset of the copy equals that broker's ListOffsets latest.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kafka_dist
import pytest
import workloads
from broker import KafkaBroker, wait_until
from kafka_dump import run_kafka

pytestmark = pytest.mark.conformance

COMPARISON = "audit-live-copy"
QUIET = {"metadata.max.idle.interval.ms": "3600000"}


def _complete(broker: KafkaBroker, tids: list[str]) -> bool:
    described = broker.admin().describe_transactions(tids)
    return all(str(getattr(d.state, "value", d.state)) in ("CompleteCommit", "CompleteAbort")
               for d in described.values())


def _live_copy(broker: KafkaBroker, dest: Path) -> tuple[Path, list[tuple[str, int]]]:
    """The workload, then the copy of the running broker's log dir, and the partitions written to."""
    wl = workloads.codecs(broker, topic="lc-codecs", partitions=2, n=120)
    wl.merge(workloads.compacted(broker, topic="lc-compact", partitions=1))
    wl.merge(workloads.transactions(broker, topic="lc-txn", partitions=1, n=15, prefix="lc-txn"))
    wl.merge(workloads.idempotent(broker, topic="lc-idem", partitions=1, n=40))
    wait_until(lambda: _complete(broker, sorted(wl.transactions)), 60, "transactions completed")
    parts = [(t, p) for t, n in sorted(wl.topics.items()) for p in range(n)]
    internal = sorted((d.name.rsplit("-", 1)[0], int(d.name.rsplit("-", 1)[1])) for d in broker.log_dir.iterdir()
                      if d.name.startswith(("__consumer_offsets-", "__transaction_state-")))
    broker.wait_high_watermarks_checkpointed(parts + internal)
    copy = broker.copy_log_dirs(dest)
    assert broker.pid is not None and not (copy / ".kafka_cleanshutdown").exists()
    return copy, parts + internal


def _sanity_by_kafka(version: str, files: list[Path], workdir: Path) -> dict[str, bool]:
    """File name -> whether Kafka's ``DumpLogSegments --index-sanity-check`` passes it (one run each)."""
    runs = run_kafka(version, [["--index-sanity-check", "--files", str(f)] for f in files], workdir)
    return {f.name: any(line.endswith("passed sanity check.") for line in run.stdout)
            for f, run in zip(files, runs, strict=True)}


def test_a_live_copy_audits_clean_as_kafka_loads_it(broker_factory: Callable[..., KafkaBroker], kafka_version: str,
                                                    conformance: Any, tmp_path: Path) -> None:
    from kafka_format.engine.audit import audit_local
    from kafka_format.log.audit.tables import iter_rows
    from kafka_format.storage.logdir import open_log_dirs
    from kafka_format.storage.partition_state import log_end_offset

    if shutil.which("javac") is None and not Path(str(kafka_dist.java())).with_name("javac").exists():
        pytest.skip("javac not found (the dump driver is compiled on first use)")
    broker = broker_factory("live-copy", QUIET)
    copy, parts = _live_copy(broker, tmp_path / "live")
    findings, _ = audit_local([str(copy)], now_ms=int(time.time() * 1000))
    rows = list(iter_rows(findings))
    assert [r for r in rows if r["severity"] != "info"] == []

    replicas = {(p.topic, p.partition): p for p in open_log_dirs([str(copy)]).all_partitions()}
    active = {key: r.segments[-1] for key, r in replicas.items()}
    zero_tails = {Path(r["file"]).name: r for r in rows if r["check"] in ("index-zero-tail", "timeindex-zero-tail")}
    # the files are what the defect was about: active time indexes with entries and a zero tail
    with_entries = [key for key, seg in active.items() if seg.timeindex_path and Path(seg.timeindex_path).name in
                    zero_tails and zero_tails[Path(seg.timeindex_path).name]["position"]]
    assert len(with_entries) >= 4, sorted(zero_tails)

    timeindexes = [Path(seg.timeindex_path) for seg in active.values() if seg.timeindex_path]
    kafka_sane = _sanity_by_kafka(kafka_version, timeindexes, tmp_path)
    for path in timeindexes:
        row = zero_tails.get(path.name)
        ours = row is None or "sanityCheck" not in row["message"]
        conformance.compare(COMPARISON, kafka_version, f"sanity {path.parent.name}/{path.name}", ours,
                            kafka_sane[path.name])
    assert not all(kafka_sane.values())

    # Kafka's broker on the same files: it recovers every newest segment, finds no corrupt index
    shutil.copytree(copy, tmp_path / "again" / copy.name)
    again = KafkaBroker.on_log_dir(kafka_version, tmp_path / "restarted", tmp_path / "again" / copy.name, QUIET)
    again.start()
    try:
        from kafka import TopicPartition
        from kafka.admin import OffsetSpec

        latest = again.admin().list_partition_offsets({TopicPartition(t, p): OffsetSpec.LATEST for t, p in parts})
        log = again.broker_log.read_text(errors="replace")
    finally:
        again.stop()
    assert "Found a corrupted index file" not in log
    for topic, partition in parts:
        seg = active[(topic, partition)]
        stated = any(r["topic"] == topic and r["partition"] == partition and "taken as the active segment" in
                     r["message"] for r in rows if r["check"] in ("index-zero-tail", "timeindex-zero-tail"))
        recovered = re.compile(rf"Recovering unflushed segment {seg.base_offset}\. [0-9/]+ recovered for "
                               rf"{re.escape(f'{topic}-{partition}')}\.")
        kafka = recovered.search(log) is not None
        conformance.compare(COMPARISON, kafka_version, f"recovered {topic}-{partition}", stated, kafka)
        conformance.compare(COMPARISON, kafka_version, f"log end {topic}-{partition}",
                            log_end_offset(replicas[(topic, partition)]),
                            latest[TopicPartition(topic, partition)].offset)
    conformance.fixed(COMPARISON, "a healthy copy of a running broker's log dir audited with a warning per "
                      "partition (index-sanity: \"Corrupt time index found ... last timestamp is 0\") for the "
                      "active segment's preallocated time index; the broker recovers that segment on start "
                      "(storage/.../log/LogLoader.java, recoverLog; KafkaMetadataLog always): the audit now "
                      "says so in an info finding (regression: tests/format/test_audit_active_segment.py)")
    conformance.assert_equal(COMPARISON, kafka_version, at_least=12)
