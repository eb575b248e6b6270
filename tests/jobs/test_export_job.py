"""``klogs export`` in-process (jobs/export.py main() on the shared local[2] session).

Oracles: the ``kafka-log`` batch read of the same log dirs (rows of an export == the source's rows),
aiokafka's decoding of the writer-made ``.log`` files (offsets, keys, values, timestamps), and
hand-derived facts (Java's ``new String(bytes, UTF_8)`` replacements, UTC calendar days).  Outputs are
read back with plain readers: ``pyarrow.dataset`` (hive partitioning) and ``deltalake``.
"""

from __future__ import annotations

import importlib
import json
import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():   # aiokafka imports deprecated importlib.resources APIs
    warnings.simplefilter("ignore", DeprecationWarning)
    from aiokafka.record.memory_records import MemoryRecords

from kafka_format.writer import LogDirWriter, PartitionWriter, Record, build_legacy_messages, build_v2_batch

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
MIDNIGHT = 1_700_006_400_000                  # 2023-11-15T00:00:00Z
FIRST_TS = MIDNIGHT - 20_000                  # records straddle a UTC day boundary
# Hand-derived: Java's UTF-8 decoder (Kafka's StringDeserializer) on malformed keys.
ODD_KEYS = {
    b"\xff": "\ufffd",                         # lone invalid byte
    b"a\xed\xa0\x80b": "a\ufffdb",             # encoded surrogate: Java reads 3 bytes, one U+FFFD
    b"\xc0\xaf": "\ufffd\ufffd",               # overlong '/', two ill-formed bytes
    b"\xe2\x82": "\ufffd",                     # truncated 3-byte sequence: one maximal subpart
}
DATA_COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers",
                "leaderEpoch", "producerId", "producerEpoch", "sequence", "isTransactional", "isControl",
                "magic", "compression", "batchBaseOffset", "batchLastOffset", "segment", "position", "logDir",
                "brokerId"]


# --- inputs -------------------------------------------------------------------------------
def key_of(partition: int, offset: int) -> bytes | None:
    odd = list(ODD_KEYS)
    if offset % 11 == 3:
        return None
    if offset % 7 == 2:
        return odd[(offset + partition) % len(odd)]
    return f"k-{partition}-{offset % 13}".encode()


def value_of(partition: int, offset: int) -> bytes | None:
    if offset % 17 == 5:
        return None                                               # tombstone
    return json.dumps({"p": partition, "o": offset, "s": "é€"}, ensure_ascii=False).encode()


def batches(partition: int, start: int, count: int, per_batch: int = 5) -> list[Any]:
    out = []
    for base in range(start, start + count, per_batch):
        recs = [Record(key=key_of(partition, o), value=value_of(partition, o), timestamp=FIRST_TS + o * 1000,
                       headers=(("h", f"{o}".encode()),) if o % 3 == 0 else ())
                for o in range(base, min(base + per_batch, start + count))]
        out.append(build_v2_batch(recs, base_offset=base, partition_leader_epoch=0))
    return out


def write_log_dir(root: Path, topic: str = "orders", counts: Iterable[int] = (40, 25),
                  legacy: int = 0) -> Path:
    """A KRaft log dir with ``topic``'s partitions 0.. holding offsets [0, count) as v2 batches, and
    with ``legacy`` > 0 a partition ``old-0`` of that many magic-0 messages (no timestamps)."""
    d = LogDirWriter(root, node_id=1, cluster_id="exportTestCluster00000", kraft=True)
    for p, n in enumerate(counts):
        w = d.partition(topic, p, topic_id=bytes([p + 1]) * 16, segment_bytes=1500)
        for b in batches(p, 0, n):
            w.append(b)
        w.close()
    if legacy:
        w = d.partition("old", 0, topic_id=b"\x07" * 16)
        w.append(build_legacy_messages([Record(key=key_of(9, o), value=value_of(9, o)) for o in range(legacy)],
                                       magic=0, base_offset=0))
        w.close()
    d.close(written_at_ms=FIRST_TS + 100_000)
    return root


def append_records(root: Path, topic: str, partition: int, count: int) -> None:
    """The broker rolled and appended: a new segment at the current log end with ``count`` records."""
    pdir = root / f"{topic}-{partition}"
    start = 1 + max(o for log in pdir.glob("*.log") for o, *_ in aiokafka_rows(log))
    w = PartitionWriter(pdir, base_offset=start, segment_bytes=1500)
    for b in batches(partition, start, count):
        w.append(b)
    w.close()


def aiokafka_rows(log: Path) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(offset, timestamp ms, key, value) of every record of a .log, decoded by aiokafka."""
    out = []
    mr = MemoryRecords(log.read_bytes())
    while (batch := mr.next_batch()) is not None:
        for rec in batch:
            ts = -1 if rec.timestamp is None else rec.timestamp    # aiokafka: None = no timestamp (v0)
            out.append((rec.offset, ts, None if rec.key is None else bytes(rec.key),
                        None if rec.value is None else bytes(rec.value)))
    return out


def oracle(root: Path) -> dict[tuple[str, int, int], tuple[int, bytes | None, bytes | None]]:
    """(topic, partition, offset) -> (timestamp ms, key, value) over every partition dir of root."""
    out = {}
    for log in sorted(root.rglob("*.log")):
        topic, _, part = log.parent.name.rpartition("-")
        for o, ts, k, v in aiokafka_rows(log):
            out[(topic, int(part), o)] = (ts, k, v)
    return out


# --- outputs ------------------------------------------------------------------------------
def load_job() -> Any:
    return importlib.import_module("kafka_format.jobs.export")


def run_export(*args: str) -> int:
    return int(load_job().main([str(a) for a in args]))


def read_parquet_dir(out: Path) -> list[dict[str, Any]]:
    import pyarrow.dataset as ds

    table = ds.dataset(str(out), format="parquet", partitioning="hive").to_table()
    return table.to_pylist()


def read_delta(out: Path) -> list[dict[str, Any]]:
    from deltalake import DeltaTable

    return DeltaTable(str(out)).to_pyarrow_table().to_pylist()


def ident(row: dict[str, Any]) -> tuple[str, int, int]:
    return (str(row["topic"]), int(row["partition"]), int(row["offset"]))


def assert_exactly(rows: list[dict[str, Any]], expected: Iterable[tuple[str, int, int]]) -> None:
    """Every expected (topic, partition, offset) once, nothing else."""
    got = sorted(ident(r) for r in rows)
    assert len(got) == len(set(got)), "duplicate rows"
    assert got == sorted(expected)


def canonical(row: dict[str, Any], columns: list[str]) -> tuple:
    out = []
    for c in columns:
        v = row[c]
        if c == "partition":
            v = int(v)
        elif c == "timestamp" and v is not None:
            v = int(v.timestamp() * 1000)
        elif c == "headers":
            v = tuple((h["key"], h["value"]) for h in v or ())
        out.append(v)
    return tuple(out)


# --- fixtures -----------------------------------------------------------------------------
@pytest.fixture()
def orders(tmp_path: Path) -> Path:
    return write_log_dir(tmp_path / "logs")


# --- batch export: rows and layouts -------------------------------------------------------
def test_parquet_export_equals_source_read(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """data_samples (every codec, legacy v0/v1, transactions, compacted, replicas): every column of
    every row equals the kafka-log read; one topic=/partition= directory per source partition."""
    source_rows = spark.read.format("kafka-log").load(str(SAMPLES)).toArrow().to_pylist()
    out = tmp_path / "out"
    assert run_export(SAMPLES, "--out", out) == 0
    rows = read_parquet_dir(out)
    assert sorted((canonical(r, DATA_COLUMNS) for r in rows), key=repr) == \
        sorted((canonical(r, DATA_COLUMNS) for r in source_rows), key=repr)
    dirs = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_dir()}
    tps = {(r["topic"], r["partition"]) for r in source_rows}
    assert {d for d in dirs if "/" in d} == {f"topic={t}/partition={p}" for t, p in tps}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "staging left behind"


def test_key_value_as_string_and_date_layout(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Strings as Kafka's StringDeserializer decodes them; ``date`` = UTC day of the timestamp, null
    (``__HIVE_DEFAULT_PARTITION__``) for v0 messages, which have none."""
    logs = write_log_dir(tmp_path / "logs", legacy=6)
    out = tmp_path / "out"
    assert run_export(logs, "--out", out, "--partition-by", "date", "--key-as", "string",
                      "--value-as", "string") == 0
    expected = oracle(logs)
    rows = read_parquet_dir(out)
    assert_exactly(rows, expected)
    seen_odd = set()
    for r in rows:
        ts, k, v = expected[ident(r)]
        assert int(r["timestamp"].timestamp() * 1000) == ts
        if k in ODD_KEYS:
            seen_odd.add(k)
            assert r["key"] == ODD_KEYS[k]
        else:
            assert r["key"] == (None if k is None else k.decode("utf-8"))
        assert r["value"] == (None if v is None else v.decode("utf-8"))
        day = None if ts == -1 else "2023-11-14" if ts < MIDNIGHT else "2023-11-15"
        assert (None if r["date"] is None else str(r["date"])) == day
    assert seen_odd == set(ODD_KEYS)
    assert sorted(n for n in os.listdir(out) if not n.startswith(".")) == \
        ["_SUCCESS", "date=2023-11-14", "date=2023-11-15", "date=__HIVE_DEFAULT_PARTITION__"]
    assert {r["topic"] for r in rows if r["date"] is None} == {"old"}


def test_value_as_json_keeps_the_text_and_rejects_non_json(spark, orders: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    assert run_export(orders, "--out", out, "--value-as", "json") == 0
    expected = oracle(orders)
    for r in read_parquet_dir(out):
        v = expected[ident(r)][2]
        assert r["value"] == (None if v is None else v.decode("utf-8"))
        assert r["key"] is None or isinstance(r["key"], bytes)            # --key-as binary
    bad = tmp_path / "bad"
    d = LogDirWriter(bad, node_id=1, cluster_id="exportTestCluster00000", kraft=True)
    w = d.partition("bad", 0, topic_id=b"\x09" * 16)
    w.append(build_v2_batch([Record(value=b'{"ok": 1}', timestamp=FIRST_TS),
                             Record(value=b'{"oops": ', timestamp=FIRST_TS)], base_offset=0))
    w.close()
    d.close(written_at_ms=FIRST_TS)
    bad_out = tmp_path / "bad-out"
    assert run_export(bad, "--out", bad_out, "--value-as", "json") == 2
    assert not bad_out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".bad-out")]


def test_delta_batch_export_is_one_commit_readable_by_deltalake_and_spark(spark, orders: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from deltalake import DeltaTable

    out = tmp_path / "table"
    expected = oracle(orders)
    assert run_export(orders, "--out", out, "--format", "delta", "--key-as", "string") == 0
    table = DeltaTable(str(out))
    assert table.version() == 0
    rows = read_delta(out)
    assert_exactly(rows, expected)
    for r in rows:
        assert r["value"] == expected[ident(r)][2]
    # Spark over exactly the Parquet files the Delta log lists (partition values from the paths)
    files = table.file_uris()
    assert files and all(Path(f.removeprefix("file://")).is_file() for f in files)
    listed = spark.read.option("basePath", str(out)).parquet(*files)
    assert sorted((r["topic"], r["partition"], r["offset"]) for r in listed.collect()) == sorted(expected)
    # a second batch export overwrites in one more commit
    append_records(orders, "orders", 1, 10)
    assert run_export(orders, "--out", out, "--format", "delta") == 0
    assert DeltaTable(str(out)).version() == 1
    assert_exactly(read_delta(out), oracle(orders))
    assert not (out / "_klogs_staging").exists() or not any((out / "_klogs_staging").iterdir())


def test_delta_export_goes_through_spark_delta_writer_and_reads_in_spark_deltalake_duckdb(  # type: ignore[no-untyped-def]
        spark, orders: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import duckdb
    from deltalake import DeltaTable

    from kafka_format.spark.export import delta_spark_available

    assert delta_spark_available(spark)                 # make setup put delta-spark's jars on the session
    out = tmp_path / "table"
    capsys.readouterr()
    assert run_export(orders, "--out", out, "--format", "delta", "--partition-by", "date") == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["engine"], result["writer"]) == ("spark", "delta-spark")
    truth = oracle(orders)
    expected = sorted(truth)
    days = {k: "2023-11-14" if ts < MIDNIGHT else "2023-11-15" for k, (ts, _, _) in truth.items()}
    # the result line counts what Delta committed (its commitInfo metrics), not zero
    assert result["rows"] == len(expected)
    table = DeltaTable(str(out))
    assert result["files"] == len(table.file_uris()) > 0
    # partitioned as the Parquet export is: by the records' UTC day
    assert table.metadata().partition_columns == ["date"]
    files = [f.removeprefix("file://") for f in table.file_uris()]
    assert {Path(f).parent.name for f in files} == {f"date={d}" for d in days.values()} == \
        {"date=2023-11-14", "date=2023-11-15"}
    via_spark = spark.read.format("delta").load(str(out)).select("topic", "partition", "offset", "date").collect()
    assert sorted(tuple(r)[:3] for r in via_spark) == expected
    assert all(str(r["date"]) == days[ident(r)] for r in via_spark)
    assert sorted(ident(r) for r in read_delta(out)) == expected
    # DuckDB over the files the Delta log lists (its delta extension is not on a package registry)
    got = duckdb.sql(f"SELECT topic, partition, \"offset\", date FROM read_parquet({files!r}, hive_partitioning=true)").fetchall()
    assert sorted((t, int(p), int(o)) for t, p, o, _ in got) == expected
    assert all(str(d) == days[(t, int(p), int(o))] for t, p, o, d in got)


# --- incremental --------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["parquet", "delta", "delta-rs"])
def test_incremental_export_adds_only_new_records(spark, orders: Path, tmp_path: Path, fmt: str,  # type: ignore[no-untyped-def]
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """``delta``: Spark's Delta writer; ``delta-rs``: the fallback of a session without Delta's jars
    (forced here on the shared session), whose commits carry the app transaction too."""
    if fmt == "delta-rs":
        monkeypatch.setenv("KLOGS_DELTA_ENGINE", "delta-rs")
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    args = [orders, "--out", out, "--checkpoint", ckpt, "--format", fmt.removesuffix("-rs")]
    read = read_parquet_dir if fmt == "parquet" else read_delta
    assert run_export(*args) == 0
    first = read(out)
    assert_exactly(first, oracle(orders))
    append_records(orders, "orders", 0, 12)
    append_records(orders, "orders", 1, 3)
    assert run_export(*args) == 0
    rows = read(out)
    assert_exactly(rows, oracle(orders))                      # union == full read, nothing twice
    added = {ident(r) for r in rows} - {ident(r) for r in first}
    assert added == {("orders", 0, o) for o in range(40, 52)} | {("orders", 1, o) for o in range(25, 28)}
    if fmt == "parquet":
        assert sorted(os.listdir(out)) == [".klogs-output", "exportBatch=0", "exportBatch=1"]
        assert {r["exportBatch"] for r in rows if ident(r) in added} == {1}
    else:
        from deltalake import DeltaTable

        table = DeltaTable(str(out))
        assert table.version() == 1
        results = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
        assert [(r["engine"], r["writer"]) for r in results] == [("spark", "delta-spark" if fmt == "delta" else "delta-rs")] * 2
        infos = [json.loads(line)["commitInfo"] for f in sorted((out / "_delta_log").glob("*.json"))
                 for line in f.read_text().splitlines() if "commitInfo" in line]
        spark_made = [str(i.get("engineInfo", "")).startswith("Apache-Spark/") for i in infos]
        assert spark_made == [fmt == "delta"] * 2             # the commits' own record of their writer
    if fmt == "delta-rs":
        # the state a crash between the Delta commit and Spark's commit log leaves: Spark replays
        # batch 1 with the same offsets, and the table's app transaction makes the fallback skip it
        query_id = json.loads((ckpt / "metadata").read_text())["id"]
        assert table.transaction_version(f"klogs-export-{query_id}") == 1
        for name in ("1", ".1.crc"):
            (ckpt / "commits" / name).unlink(missing_ok=True)
        assert run_export(*args) == 0
        result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert (result["batches"], result["replayed_batches"], result["version"]) == ([], [1], 1)
        assert DeltaTable(str(out)).version() == 1
        assert_exactly(read_delta(out), oracle(orders))


def test_incremental_export_of_a_backlog_over_the_read_limit_runs_in_several_batches_exactly_once(  # type: ignore[no-untyped-def]
        spark, orders: Path, tmp_path: Path) -> None:
    """65 records, maxOffsetsPerTrigger=20: Spark's Kafka rule shares 20 offsets per micro-batch
    between the partitions by backlog, so at least ceil(65 / 20) = 4 micro-batches, each at most
    20 offsets (+1 per partition for the round-up of a share below one)."""
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    args = [orders, "--out", out, "--checkpoint", ckpt, "--option", "maxOffsetsPerTrigger=20"]
    assert run_export(*args) == 0
    rows = read_parquet_dir(out)
    assert_exactly(rows, oracle(orders))                      # every record, each once
    per_batch: dict[int, int] = {}
    for r in rows:
        per_batch[r["exportBatch"]] = per_batch.get(r["exportBatch"], 0) + 1
    assert len(per_batch) >= 4 and max(per_batch.values()) <= 20 + 2


def test_incremental_refuses_output_of_another_query(spark, orders: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    foreign = out / "exportBatch=0"
    foreign.mkdir(parents=True)
    (out / ".klogs-output").write_text(json.dumps({"marker": "klogs-output", "job": "export",   # an incremental
                                                   "kind": "parquet-incremental", "formatVersion": 1,  # export's OUT
                                                   "run": "0" * 32, "created": "2026-01-01T00:00:00Z"}))
    (foreign / "_klogs_batch.json").write_text(json.dumps({"queryId": "someone-else", "batchId": 0}))
    assert run_export(orders, "--out", out, "--checkpoint", tmp_path / "ckpt") == 2
    assert sorted(p.name for p in out.rglob("*")) == [".klogs-output", "_klogs_batch.json", "exportBatch=0"]


# --- flags --------------------------------------------------------------------------------
def test_topic_flags_select_the_union(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from kafka_format.spark.export import source_options

    opts = source_options(topics=["a.b"], topic_pattern="v2-.*")
    import re
    pattern = re.compile(opts["topicPattern"])
    assert [t for t in ("a.b", "axb", "v2-codecs", "x-v2-codecs") if pattern.fullmatch(t)] == ["a.b", "v2-codecs"]
    out = tmp_path / "out"
    assert run_export(SAMPLES, "--out", out, "--topic", "transactions", "--topic-pattern", "legacy-v.",
                      "--isolation-level", "read_committed") == 0
    topics = {r["topic"] for r in read_parquet_dir(out)}
    assert topics == {"transactions", "legacy-v0", "legacy-v1"}


@pytest.mark.parametrize("argv", [
    ["--option", "noSuchOption=1"],
    ["--option", "isolationLevel=sometimes"],
    ["--option", "nokeyvalue"],
    ["--checkpoint", "CKPT", "--option", "endingOffsets=latest"],
])
def test_bad_flags_exit_2_without_output(spark, tmp_path: Path, argv: list[str]) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    argv = [str(tmp_path / "ckpt") if a == "CKPT" else a for a in argv]
    assert run_export(SAMPLES, "--out", out, *argv) == 2
    assert not out.exists()


@pytest.mark.parametrize("existing,argv", [
    ("topic=orders/partition=0/x.parquet", ["--checkpoint", "CKPT"]),     # a batch export's layout
    ("_delta_log/00000000000000000000.json", ["--checkpoint", "CKPT"]),   # a Delta table
    ("notes.txt", []),                                                     # someone's directory
    ("notes.txt", ["--format", "delta"]),
])
def test_output_that_is_not_an_export_is_never_replaced(spark, orders: Path, tmp_path: Path, existing: str,
                                                         argv: list[str]) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    (out / existing).parent.mkdir(parents=True, exist_ok=True)
    (out / existing).write_bytes(b"keep me")
    argv = [str(tmp_path / "ckpt") if a == "CKPT" else a for a in argv]
    assert run_export(orders, "--out", out, *argv) == 2
    assert [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()] == [existing]
    assert (out / existing).read_bytes() == b"keep me"
    assert not (tmp_path / "ckpt").exists()



@pytest.mark.realdata
def test_real_broker_files_export_as_aiokafka_decodes_them(spark, realdata: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A Kafka 1.1 broker's lz4 topics (hermag__kafkademo), read in place: every record once, values
    as Kafka's StringDeserializer gives them (Java's UTF-8 decoding: the repo's model of it)."""
    from kafka_format.records.batch_v2 import java_utf8

    logs = realdata / "hermag__kafkademo" / "kafka" / "data"
    out = tmp_path / "out"
    assert run_export(logs, "--out", out, "--value-as", "string") == 0
    expected = oracle(logs)
    rows = read_parquet_dir(out)
    assert_exactly(rows, expected)
    for r in rows:
        ts, k, v = expected[ident(r)]
        assert (int(r["timestamp"].timestamp() * 1000), r["key"]) == (ts, k)
        assert r["value"] == (None if v is None else java_utf8(v).decode("utf-8"))
