"""``klogs compaction`` in cleaner mode, the job's outputs, and crash consistency.

Oracles: kafka-python's ``MemoryRecords`` over the same ``.log`` bytes (records, batch sizes,
the bytes of the written segments), the cleaner core called directly in the test (the records
DataFrame must carry exactly its decisions: a join check), plain sums over the records frame for
the summary, Kafka's rules for what can never be removed (the active segment, records at/after
firstUncleanable; a superseded record's winner has the same key and a higher offset).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_compaction_full import (
    committed_records,
    oracle_decisions,
    oracle_table,
    read_checkpoint,
    write_table_topic,
)

from kafka_format.output import publish

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record import MemoryRecords

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
CONFIG_FILE = SAMPLES / "topic-configs.json"
T0 = 1_700_000_000_000
NOW = T0 + 2 * 86_400_000            # one day after the stamped horizons of compacted-0 (clean time + 1 day)
TOPICS = ["compacted", "transactions", "v2-codecs", "legacy-v0"]
OVERRIDES = ["transactions:cleanup.policy=compact", "v2-codecs:cleanup.policy=compact,delete",
             "*:min.cleanable.dirty.ratio=0.01"]
COMPACT_REPLICAS = [("compacted", 0, "broker-1"), ("transactions", 0, "broker-1"),
                    *[("v2-codecs", p, "broker-1") for p in range(5)], ("v2-codecs", 0, "broker-2")]


def configs():  # type: ignore[no-untyped-def]
    from kafka_format.log.topicconfig import load_topic_configs

    return load_topic_configs([str(SAMPLES)], overrides=OVERRIDES, config_file=str(CONFIG_FILE))


def decode_dir(pdir: Path) -> tuple[list[tuple[int, bytes | None, bytes | None, bool]], int]:
    """kafka-python: (offset, key, value, isControl) of every record of every .log, and the bytes
    of all complete batches."""
    out, size = [], 0
    for log in sorted(pdir.glob("*.log")):
        mr = MemoryRecords(log.read_bytes())
        while (b := mr.next_batch()) is not None:
            size += b.size_in_bytes
            ctrl = bool(getattr(b, "is_control_batch", False))
            for r in b:
                out.append((r.offset, None if r.key is None else bytes(r.key),
                            None if r.value is None else bytes(r.value), ctrl))
    return out, size


def log_start(pdir: Path) -> int:
    topic, _, part = pdir.name.rpartition("-")
    first = min(int(p.name[:20]) for p in pdir.glob("*.log"))
    return max(first, read_checkpoint(pdir.parent / "log-start-offset-checkpoint").get((topic, int(part)), 0))


# --- one cleaner pass over the samples, shared -------------------------------------------------------
@pytest.fixture(scope="module")
def cleaner_run(spark, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from kafka_format.engine.compaction import finish_segments_dir
    from kafka_format.spark.frames import compaction_cleaner

    segments = tmp_path_factory.mktemp("cleaner") / "segments"
    records, summary = compaction_cleaner(spark, [str(SAMPLES)], configs(), NOW, topics=TOPICS,
                                          segments_dir=str(segments))
    summary_rows = summary.collect()
    assert finish_segments_dir(str(segments), summary_rows) == []
    summ = {(r["topic"], r["partition"], Path(r["logDir"]).name): r.asDict() for r in summary_rows}
    rows = records.select("topic", "partition", "logDir", "offset", "key", "value", "isControl", "segment",
                          "decision", "reason", "supersededBy").collect()
    columns = records.columns
    spark.catalog.clearCache()
    by_replica: dict[tuple[str, int, str], list] = {}
    for r in rows:
        by_replica.setdefault((r["topic"], r["partition"], Path(r["logDir"]).name), []).append(r)
    return {"summary": summ, "rows": by_replica, "segments": segments, "columns": columns}


def _pdir(replica: tuple[str, int, str]) -> Path:
    topic, partition, broker = replica
    return SAMPLES / broker / f"{topic}-{partition}"


def test_summary_lists_every_selected_replica(cleaner_run) -> None:  # type: ignore[no-untyped-def]
    assert set(cleaner_run["summary"]) == {*COMPACT_REPLICAS, ("legacy-v0", 0, "broker-1")}
    delete_only = cleaner_run["summary"][("legacy-v0", 0, "broker-1")]
    assert (delete_only["compact"], delete_only["wouldCleanNow"], delete_only["reason"]) == (
        False, False, "cleanup.policy=delete")
    assert delete_only["recordsBefore"] is None and ("legacy-v0", 0, "broker-1") not in cleaner_run["rows"]


@pytest.mark.parametrize("replica", COMPACT_REPLICAS, ids=lambda r: f"{r[2]}/{r[0]}-{r[1]}")
def test_records_are_the_decoded_records(cleaner_run, replica) -> None:  # type: ignore[no-untyped-def]
    """Every record at/after the log start offset, control records included, exactly once."""
    decoded, _ = decode_dir(_pdir(replica))
    start = log_start(_pdir(replica))
    expected = sorted((o, k, v, c) for o, k, v, c in decoded if o >= start)
    got = sorted((r["offset"], r["key"], r["value"], r["isControl"]) for r in cleaner_run["rows"][replica])
    assert got == expected


@pytest.mark.parametrize("replica", COMPACT_REPLICAS, ids=lambda r: f"{r[2]}/{r[0]}-{r[1]}")
def test_decisions_are_the_core_decisions(cleaner_run, replica) -> None:  # type: ignore[no-untyped-def]
    from kafka_format.log import cleaner as core
    from kafka_format.storage.logdir import open_log_dirs

    (rep,) = [p for p in open_log_dirs(str(_pdir(replica))).all_partitions() if p.kind == "live"]
    result = core.clean_partition(rep, configs()[replica[0]], NOW)
    want = {o: (d, r, s) for o, d, r, s in zip(*(result.decisions.column(c).to_pylist() for c in
                                                  ("offset", "decision", "reason", "supersededBy")))}
    got = {r["offset"]: (r["decision"], r["reason"], r["supersededBy"]) for r in cleaner_run["rows"][replica]}
    assert got == want


@pytest.mark.parametrize("replica", COMPACT_REPLICAS, ids=lambda r: f"{r[2]}/{r[0]}-{r[1]}")
def test_summary_numbers_are_sums_over_records(cleaner_run, replica) -> None:  # type: ignore[no-untyped-def]
    s = cleaner_run["summary"][replica]
    rows = cleaner_run["rows"][replica]
    keep = [r for r in rows if r["decision"] == "keep"]
    gone = [r for r in rows if r["decision"] == "remove"]
    tomb = lambda r: r["value"] is None and not r["isControl"]  # noqa: E731
    assert s["recordsBefore"] == len(rows)
    assert s["recordsAfter"] == len(keep)
    assert s["tombstonesKept"] == sum(map(tomb, keep))
    assert s["tombstonesRemoved"] == sum(map(tomb, gone))
    assert s["markersKept"] == sum(r["isControl"] for r in keep)
    assert s["markersRemoved"] == sum(r["isControl"] for r in gone)
    _, batch_bytes = decode_dir(_pdir(replica))
    assert s["bytesBefore"] == batch_bytes


@pytest.mark.parametrize("replica", COMPACT_REPLICAS, ids=lambda r: f"{r[2]}/{r[0]}-{r[1]}")
def test_kafka_rules_hold(cleaner_run, replica) -> None:  # type: ignore[no-untyped-def]
    """Never removed: records at/after firstUncleanable (active segment, LSO, lag); a superseded
    record's winner is a later record with the same key; null keys survive only uncleaned."""
    s = cleaner_run["summary"][replica]
    rows = {r["offset"]: r for r in cleaner_run["rows"][replica]}
    active = max(r["segment"] for r in rows.values())
    for off, r in rows.items():
        if off >= s["firstUncleanableOffset"] or r["segment"] == active:
            assert r["decision"] == "keep", off
        if r["reason"] == "superseded":
            winner = rows[r["supersededBy"]]
            assert winner["key"] == r["key"] and r["supersededBy"] > off
        else:
            assert r["supersededBy"] is None
    assert s["firstUncleanableOffset"] <= s["lastStableOffset"] or s["firstUncleanableOffset"] == active


def test_cleaning_really_happened(cleaner_run) -> None:  # type: ignore[no-untyped-def]
    """The fixture exercises removals of every kind the samples allow."""
    reasons = {r["reason"] for rows in cleaner_run["rows"].values() for r in rows if r["decision"] == "remove"}
    assert {"superseded", "aborted", "null-key", "tombstone-expired"} <= reasons
    assert all(cleaner_run["summary"][r]["cleaned"] for r in COMPACT_REPLICAS)


def test_cleaning_keeps_the_table_view(spark, cleaner_run) -> None:  # type: ignore[no-untyped-def]
    """The compacted table view is invariant under cleaning: the written log dir (opened as a log
    dir through its checkpoints) gives the same latest record per key, every column a consumer
    sees, as the input (aborted data must not resurface, markers must not vanish too early)."""
    from chispa import assert_df_equality

    from kafka_format.spark.frames import compaction_full, read_full_input
    from kafka_format.storage.logdir import open_log_dirs

    written = cleaner_run["segments"] / "broker-1"
    for p in open_log_dirs(str(written)).all_partitions():
        s = cleaner_run["summary"][(p.topic, p.partition, "broker-1")]
        assert (p.cleaner_offset_checkpoint, p.broker_id, p.log_start_offset) == (
            s["firstDirtyAfter"], 1, s["logStartOffset"])
    cols = ["topic", "partition", "offset", "key", "value", "timestamp", "timestampType", "headers",
            "producerId", "producerEpoch", "sequence", "isTransactional", "magic", "compression",
            "batchBaseOffset", "batchLastOffset", "leaderEpoch"]
    topics = ["compacted", "transactions", "v2-codecs"]
    before = compaction_full(read_full_input(spark, str(SAMPLES / "broker-1"), topics=topics)).select(*cols)
    after = compaction_full(read_full_input(spark, str(written), topics=topics)).select(*cols)
    assert_df_equality(after, before, ignore_row_order=True, ignore_nullable=True)


@pytest.mark.parametrize("replica", COMPACT_REPLICAS, ids=lambda r: f"{r[2]}/{r[0]}-{r[1]}")
def test_written_segments_hold_the_kept_records(cleaner_run, replica) -> None:  # type: ignore[no-untyped-def]
    topic, partition, broker = replica
    s = cleaner_run["summary"][replica]
    written = cleaner_run["segments"] / broker / f"{topic}-{partition}"
    assert s["segmentsDir"] == str(written)
    decoded, batch_bytes = decode_dir(written)
    start = log_start(_pdir(replica))
    kept = sorted(r["offset"] for r in cleaner_run["rows"][replica] if r["decision"] == "keep")
    assert sorted(o for o, *_ in decoded if o >= start) == kept
    assert s["bytesAfter"] == batch_bytes


def _audit(log_dir: Path, topics: list[str]) -> set[tuple[str, str, str | None, int | None, int | None]]:
    """(severity, check, topic, partition, offset) of the audit of ``log_dir`` (its own files and the
    partitions of ``topics``), with the topic configs of the cleaning."""
    from kafka_format.log.audit.auditor import audit_log_dir, audit_partition_report
    from kafka_format.storage.logdir import open_log_dirs

    cfg = configs()
    out = set()
    for d in open_log_dirs([str(log_dir)]).log_dirs:
        out |= {(f.severity, f.check, f.topic, f.partition, f.offset) for f in audit_log_dir(d)}
        for p in d.partitions:
            if p.topic in topics:
                out |= {(f.severity, f.check, f.topic, f.partition, f.offset)
                        for f in audit_partition_report(p, config=cfg[p.topic], now_ms=NOW).findings}
    return out


def test_a_written_log_dir_is_the_stopped_brokers_after_cleaning(cleaner_run) -> None:  # type: ignore[no-untyped-def]
    """What ``LogManager.shutdown`` leaves: ``meta.properties``, ``.kafka_cleanshutdown``
    (``{"version":0,"brokerEpoch":N}``, 3.9 and 4.x alike) as the stopped source broker-1 has them, the
    offset checkpoints with the broker's rules (log start offsets only beyond the first segment:
    ``checkpointLogStartOffsetsInDir``; recovery point = log end).  Auditing it finds no unclean
    shutdown and nothing its source does not have but the gaps cleaning leaves."""
    source, written = SAMPLES / "broker-1", cleaner_run["segments"] / "broker-1"
    for name in (".kafka_cleanshutdown", "meta.properties"):
        assert (written / name).read_bytes() == (source / name).read_bytes()
    assert json.loads((written / ".kafka_cleanshutdown").read_text()) == {"version": 0, "brokerEpoch": 42}
    pdirs = sorted(p for p in written.iterdir() if p.is_dir())
    assert {p.name for p in pdirs} == {f"{t}-{p}" for t, p, b in COMPACT_REPLICAS if b == "broker-1"}
    starts, recovery = (read_checkpoint(written / n) for n in ("log-start-offset-checkpoint",
                                                                "recovery-point-offset-checkpoint"))
    for pdir in pdirs:
        topic, _, part = pdir.name.rpartition("-")
        key = (topic, int(part))
        first = min(int(p.name[:20]) for p in pdir.glob("*.log"))
        start = log_start(SAMPLES / "broker-1" / pdir.name)
        assert starts.get(key) == (start if start > first else None)
        assert recovery[key] == max(o for o, *_ in decode_dir(pdir)[0]) + 1
    assert any(start > min(int(p.name[:20]) for p in (written / f"{t}-{p}").glob("*.log"))
               for (t, p), start in starts.items())                 # the rule is exercised both ways

    topics = sorted({t for t, _, b in COMPACT_REPLICAS if b == "broker-1"})
    before, after = _audit(source, topics), _audit(written, topics)
    assert not [f for f in after if f[1] == "unclean-shutdown"]
    assert {f for f in after if f[0] != "info"} == {f for f in before if f[0] != "info"}
    assert {f[1] for f in after if f[0] == "info"} == {"non-consecutive-offsets"}


def test_a_crashed_brokers_log_dir_is_written_without_a_clean_shutdown_marker(cleaner_run) -> None:  # type: ignore[no-untyped-def]
    """broker-2 crashed (no .kafka_cleanshutdown; its active segment ends in half a batch, its
    indexes preallocated): Kafka writes the marker only over logs closed cleanly or recovered, and
    the cleaner copies the active segment as it is, so the written log dir has no marker either and
    its audit says what the source's says about the active segment."""
    source, written = SAMPLES / "broker-2", cleaner_run["segments"] / "broker-2"
    assert not (source / ".kafka_cleanshutdown").exists() and not (written / ".kafka_cleanshutdown").exists()
    assert (written / "meta.properties").read_bytes() == (source / "meta.properties").read_bytes()
    before, after = _audit(source, ["v2-codecs"]), _audit(written, ["v2-codecs"])
    assert ("info", "unclean-shutdown", None, None, None) in after
    crash = {f for f in before if f[1] in ("invalid-bytes-at-end", "index-zero-tail", "timeindex-zero-tail")}
    assert {f[1] for f in crash} == {"invalid-bytes-at-end", "index-zero-tail", "timeindex-zero-tail"}
    assert crash <= after


def test_the_job_says_which_written_log_dirs_have_no_marker(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    argv = [str(SAMPLES), "--topic", "v2-codecs", "--now", str(NOW), "--config-file", str(CONFIG_FILE),
            *[a for o in OVERRIDES for a in ("--config", o)], "--out", str(out), "--write-segments"]
    assert _main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if "kafka_cleanshutdown" in line] == [
        "segments/broker-2: no .kafka_cleanshutdown, as its input log dir has none (a running or crashed "
        "broker's): its active segments are left for the broker to recover when it starts"]
    assert (out / "segments" / "broker-1" / ".kafka_cleanshutdown").is_file()
    # klogs' ownership rules over a DIR holding Kafka log dirs: its own output is replaced; no job
    # writes into a written log dir (a Kafka log dir inside klogs' output); it is read like any other
    assert _main(argv) == 0
    capsys.readouterr()
    before = sorted(p.name for p in (out / "segments" / "broker-1").iterdir())
    inside = out / "segments" / "broker-1" / "audit"
    assert main_audit([str(SAMPLES / "broker-1"), "--out", str(inside)]) == 2
    err = capsys.readouterr().err
    assert "refusing to write the output here" in err and "Kafka log dir" in err
    assert sorted(p.name for p in (out / "segments" / "broker-1").iterdir()) == before
    assert main_audit([str(SAMPLES / "broker-1"), "--out", str(out / "segments")]) == 2
    assert "the output of klogs compaction results" in capsys.readouterr().err
    assert main_audit([str(out / "segments" / "broker-1"), "--out", str(tmp_path / "audit"), "--topic",
                       "v2-codecs", "--config", "v2-codecs:cleanup.policy=compact,delete"]) == 0
    assert "unclean-shutdown" not in capsys.readouterr().out


def main_audit(argv: list[str]) -> int:
    from kafka_format.cli import main

    return main(["audit", *argv, "--now", str(NOW), "--engine", "local"])


def test_records_columns(cleaner_run) -> None:  # type: ignore[no-untyped-def]
    from kafka_format.records.schema import RECORD_SCHEMA

    assert cleaner_run["columns"] == [*RECORD_SCHEMA.names, "decision", "reason", "supersededBy"]


# --- the job, in process ------------------------------------------------------------------------------
def _main(argv: list[str]) -> int:
    """``klogs compaction ARGV`` in this process (the shared session is the active one)."""
    from kafka_format.cli import main

    return main(["compaction", *argv])


def _cleaner_argv(out: Path, *extra: str) -> list[str]:
    return [str(SAMPLES / "broker-1"), "--topic", "compacted", "--topic", "transactions", "--now", str(NOW),
            "--config-file", str(CONFIG_FILE), *[a for o in OVERRIDES for a in ("--config", o)],
            "--out", str(out), *extra]


def _check_cleaner_output(out: Path, cleaner_run) -> None:  # type: ignore[no-untyped-def]
    """DIR/records, DIR/summary.json, DIR/segments equal the library pass; no temp leftovers."""
    assert sorted(p.name for p in out.iterdir()) == [".klogs-output", "records", "report.html", "segments",
                                                      "summary.json"]
    assert not [n for n in os.listdir(out.parent) if publish.is_temp_name(n)]
    table = pq.read_table(out / "records")
    assert table.column_names == cleaner_run["columns"]
    got = sorted(zip(*(table.column(c).to_pylist() for c in ("topic", "partition", "offset", "decision",
                                                              "reason", "supersededBy"))))
    want = sorted((r["topic"], r["partition"], r["offset"], r["decision"], r["reason"], r["supersededBy"])
                  for rep in (("compacted", 0, "broker-1"), ("transactions", 0, "broker-1"))
                  for r in cleaner_run["rows"][rep])
    assert got == want
    summary = json.loads((out / "summary.json").read_text())
    assert summary["mode"] == "cleaner" and summary["nowMs"] == NOW
    parts = {(p["topic"], p["partition"]): p for p in summary["partitions"]}
    assert set(parts) == {("compacted", 0), ("transactions", 0)}
    for (topic, partition), p in parts.items():
        lib = cleaner_run["summary"][(topic, partition, "broker-1")]
        assert {k: v for k, v in p.items() if k != "segmentsDir"} == {k: v for k, v in lib.items()
                                                                       if k != "segmentsDir"}
        assert p["segmentsDir"] == f"segments/broker-1/{topic}-{partition}"
        assert decode_dir(out / p["segmentsDir"])[1] == p["bytesAfter"]


def test_main_cleaner_mode(cleaner_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    out.mkdir()
    (out / ".klogs-output").write_text(json.dumps({                # an earlier run's DIR (its marker) ...
        "marker": "klogs-output", "job": "compaction", "kind": "results", "formatVersion": 1,
        "run": "0" * 32, "created": "2026-01-01T00:00:00Z"}))
    (out / "stale-file-from-an-earlier-run").write_text("x")     # ... is replaced
    assert _main(_cleaner_argv(out, "--write-segments")) == 0
    _check_cleaner_output(out, cleaner_run)
    assert json.loads((out / ".klogs-output").read_text())["run"] != "0" * 32


def test_main_full_mode(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = write_table_topic(tmp_path / "in")
    out = tmp_path / "full"
    assert _main([str(root), "--mode", "full", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [".klogs-output", "records", "report.html", "summary.json"]
    table = pq.read_table(out / "records")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["mode"] == "full"
    for partition in (0, 1):
        records = committed_records(root / f"table-{partition}")
        sel = [i for i, p in enumerate(table.column("partition").to_pylist()) if p == partition]
        got = {table.column("offset")[i].as_py(): (table.column("decision")[i].as_py(),
                                                   table.column("reason")[i].as_py(),
                                                   table.column("supersededBy")[i].as_py()) for i in sel}
        assert got == oracle_decisions(records)
        (part,) = [p for p in summary["partitions"] if p["partition"] == partition]
        assert part["recordsBefore"] == len(records)
        assert part["keys"] == len({r.key for r in records if r.key is not None})
        assert part["recordsAfter"] == sum(1 for d in got.values() if d[0] == "keep")


@pytest.mark.parametrize("argv, message", [
    (["--mode", "full", "--write-segments"], "--write-segments needs --mode cleaner"),
    (["--out", "s3://bucket/x"], "--out"),
    (["--now", "yesterday-ish"], "--now"),
])
def test_usage_errors_exit_2(tmp_path: Path, capsys, argv: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    base = [str(SAMPLES / "broker-1"), "--out", str(tmp_path / "o")]
    assert _main(base + argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_missing_logdir_exit_2(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert _main([str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "klogs compaction:" in capsys.readouterr().err


# --- crash consistency (real processes killed at exact steps) ------------------------------------------
def _klogs() -> list[str]:
    script = Path(sys.executable).parent / "klogs"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from kafka_format.cli import main; sys.exit(main(sys.argv[1:]))"]


def test_crash_leaves_nothing_partial_and_rerun_completes(cleaner_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """SIGKILL after the segments are written, and after the Parquet is written (two processes,
    two DIRs -- one run per DIR at a time): no records/, summary.json or segments/ appear, only
    temp names (carrying klogs' marker); a re-run publishes the full output and removes its own
    leftovers (not those of another output beside it, nor an unmarked look-alike)."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "local.conf").write_text((REPO / "spark_conf" / "test.conf").read_text())
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "KLOGS_SPARK_CONF_DIR": str(conf)}
    points = {"compaction:segments-written": (".records", "segments"),     # records staged under .records
              "compaction:records-written": ("records", "segments")}
    procs = {point: subprocess.Popen(
        [*_klogs(), "compaction", *_cleaner_argv(tmp_path / str(i) / "out", "--write-segments",
                                                 "--master", "local[1]")],
        env={**env, publish.CRASH_ENV: point}, cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for i, point in enumerate(points)}
    for i, (point, proc) in enumerate(procs.items()):
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == -signal.SIGKILL, (point, proc.returncode, err.decode()[-3000:])
        parent = tmp_path / str(i)
        assert not (parent / "out").exists()
        leftovers = sorted(n for n in os.listdir(parent) if n != ".out.klogs-lock")   # the dead run's lock
        assert len(leftovers) == 1 and publish.is_temp_name(leftovers[0]) and leftovers[0].startswith(".out.tmp-")
        assert sorted(os.listdir(parent / leftovers[0])) == [".klogs-output", *points[point]]
    parent = tmp_path / "1"
    other = parent / f".other.tmp-{'0' * 32}"          # another output being published beside DIR
    other.mkdir()
    lookalike = parent / f".out.tmp-{'1' * 32}"         # named like ours, but no marker: not ours
    lookalike.mkdir()
    (lookalike / "user-file").write_text("keep")
    assert _main(_cleaner_argv(parent / "out", "--write-segments")) == 0
    assert sorted(os.listdir(parent)) == sorted([lookalike.name, other.name, "out"])
    assert (lookalike / "user-file").read_text() == "keep"
    (lookalike / "user-file").unlink()
    lookalike.rmdir()
    other.rmdir()
    _check_cleaner_output(parent / "out", cleaner_run)


# --- real broker files ------------------------------------------------------------------------------------
@pytest.mark.realdata
def test_real_cleaned_consumer_offsets(spark, realdata: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Partitions a Kafka 2.7.1 broker had already cleaned (offset gaps, a cleaned first segment):
    the records frame is the decoded log, the written segments hold exactly the kept records, the
    table view matches the oracle and does not change under cleaning."""
    from kafka_format.engine.compaction import finish_segments_dir
    from kafka_format.log.topicconfig import load_topic_configs
    from kafka_format.spark.frames import compaction_cleaner, compaction_full, read_full_input

    logs = realdata / "DonaldY__kafka-2.7.1" / "kafka-logs"
    pdirs = [logs / f"__consumer_offsets-{p}" for p in (17, 28, 39)]
    if not all(p.is_dir() for p in pdirs):
        pytest.skip("DonaldY__kafka-2.7.1 __consumer_offsets-17/28/39 not in realdata")
    cfg = load_topic_configs(overrides=["__consumer_offsets:cleanup.policy=compact"])
    segments = tmp_path / "segments"
    records, summary = compaction_cleaner(spark, [str(p) for p in pdirs], cfg, NOW, force=True,
                                          segments_dir=str(segments))
    summary_rows = summary.collect()
    rows = records.select("partition", "offset", "key", "value", "isControl", "decision").collect()
    spark.catalog.clearCache()
    finish_segments_dir(str(segments), summary_rows)
    assert sorted(r["partition"] for r in summary_rows) == [17, 28, 39] and rows
    for pdir in pdirs:
        partition = int(pdir.name.rsplit("-", 1)[1])
        mine = [r for r in rows if r["partition"] == partition]
        decoded, _ = decode_dir(pdir)
        start = log_start(pdir)
        assert sorted((r["offset"], r["key"], r["value"], r["isControl"]) for r in mine) == sorted(
            d for d in decoded if d[0] >= start)
        written, written_bytes = decode_dir(segments / logs.name / pdir.name)
        assert sorted(o for o, *_ in written if o >= start) == sorted(
            r["offset"] for r in mine if r["decision"] == "keep")
        (s,) = [s for s in summary_rows if s["partition"] == partition]
        assert s["bytesAfter"] == written_bytes
    cols = ["partition", "offset", "key", "value"]
    before = {tuple(r) for r in compaction_full(read_full_input(spark, [str(p) for p in pdirs])).select(*cols).collect()}
    after = {tuple(r) for r in compaction_full(read_full_input(spark, str(segments / logs.name))).select(*cols).collect()}
    oracle = {(int(p.name.rsplit("-", 1)[1]), o, k, v) for p in pdirs
              for k, (o, v) in oracle_table(committed_records(p)).items()}
    assert before == oracle
    assert after == before


def test_a_partition_the_cleaner_cannot_clean_is_reported_uncleanable(tmp_path: Path) -> None:
    """Kafka's filterTo throws for an emptied legacy batch it must retain (the round's last batch)
    and LogCleaner marks the partition uncleanable: the task reports that, naming the file, and
    contributes no record rows instead of failing the whole job."""
    from kafka_format.engine.compaction import CleanerTask, run_cleaner_task
    from kafka_format.log.topicconfig import load_topic_configs
    from kafka_format.writer import LogDirWriter, Record, build_legacy_messages

    ld = LogDirWriter(tmp_path / "broker", node_id=1, cluster_id="S2xhU2FtcGxlc0NsdXN0ZQ")
    w = ld.partition("t", 0, topic_id=b"\x07" * 16)
    for b in build_legacy_messages([Record(b"k0", b"v0", 1_700_000_000_000),
                                    Record(None, b"v1", 1_700_000_000_001)], magic=1, base_offset=0):
        w.append(b)
    w.roll()
    for b in build_legacy_messages([Record(b"k1", b"v2", 1_700_000_000_002)], magic=1, base_offset=2):
        w.append(b)
    w.close()
    ld.close(written_at_ms=1_700_000_000_000)
    cfg = load_topic_configs(None, overrides=["t:cleanup.policy=compact"])["t"]
    task = CleanerTask(path=str(tmp_path / "broker" / "t-0"), log_dir=str(tmp_path / "broker"),
                       topic="t", partition=0, config=cfg, now_ms=1_700_086_400_000, force=True)
    rows = [b for b in run_cleaner_task(task)]
    assert len(rows) == 1 and rows[0].num_rows == 1              # the summary row only
    summary = rows[0].column("_summary").to_pylist()[0]
    assert summary["reason"].startswith("uncleanable: ") and "00000000000000000000.log" in summary["reason"]
    assert summary["compact"] and not summary["wouldCleanNow"] and not summary["cleaned"]


def test_terminal_summary_uses_human_units(capsys: pytest.CaptureFixture[str]) -> None:
    """The per-partition lines a person reads: sizes in binary units, the dirty ratio in percent,
    counts grouped; summary.json keeps the exact numbers."""
    from kafka_format.jobs import compaction as job
    job._print_summary([{"topic": "t", "partition": 0, "logDir": "/d/broker-1/", "recordsBefore": 1234567,
                         "recordsAfter": 10, "bytesBefore": 3 << 30, "bytesAfter": 1536, "dirtyRatio": 0.4567,
                         "compact": True, "wouldCleanNow": True, "reason": "dirty"},
                        {"topic": "d", "partition": 1, "logDir": "/d/broker-1/", "recordsBefore": None,
                         "recordsAfter": None, "bytesBefore": None, "bytesAfter": None, "dirtyRatio": 1.0,
                         "compact": False, "wouldCleanNow": False, "reason": "cleanup.policy=delete"}], "cleaner")
    header, _, line, delete = capsys.readouterr().out.splitlines()
    assert header.split()[:4] == ["topic", "partition", "logDir", "recordsBefore"]
    assert line.split() == ["t", "0", "broker-1", "1,234,567", "10", "3.0", "GiB", "1.5", "KiB", "45.7%", "yes",
                            "dirty"]
    # the cleaner never looks at a delete-only topic: no dirty ratio shown (summary.json keeps it)
    assert delete.split() == ["d", "1", "broker-1", "-", "-", "-", "-", "-", "no", "cleanup.policy=delete"]
