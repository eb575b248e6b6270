"""The kafka-log data source through a real local[2] Spark session.

Oracles: aiokafka's and kafka-python's MemoryRecords decoding the same .log bytes (real broker files and
generated dirs); bounds and isolation expectations are brute force over those rows.
"""

from __future__ import annotations

import re
import shutil
import struct
import warnings
from pathlib import Path

import pytest

from test_planning import BatchSpec, Row, list_offsets_oracle, simple_specs, write_partition

with warnings.catch_warnings():   # both clients import deprecated importlib.resources APIs
    warnings.simplefilter("ignore", DeprecationWarning)
    from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
    from kafka.record.memory_records import MemoryRecords

pytestmark = pytest.mark.spark

PLAIN_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
COLS = ["topic", "partition", "offset", "ts", "key", "value", "headers"]


def oracle_rows(root: Path, *, include_control: bool = True) -> list[tuple]:
    """Every record of every .log under root (plain partition dirs), decoded by aiokafka
    (its C decoder has every codec; kafka-python lacks python-snappy here)."""
    out = []
    for log in sorted(root.rglob("*.log")):
        m = PLAIN_PARTITION_DIR.match(log.parent.name)
        if m is None or "." in m.group(2):
            continue
        mr = AioMemoryRecords(log.read_bytes())
        while (batch := mr.next_batch()) is not None:
            control = bool(getattr(batch, "is_control_batch", False))
            if control and not include_control:
                continue
            for rec in batch:
                headers = tuple((k, bytes(v) if v is not None else None) for k, v in (rec.headers or []))
                ts = -1 if rec.timestamp is None else rec.timestamp     # aiokafka: None for "no timestamp"
                out.append((m.group(1), int(m.group(2)), rec.offset, ts,
                            None if rec.key is None else bytes(rec.key),
                            None if rec.value is None else bytes(rec.value), headers))
    return sorted(out, key=repr)


def spark_rows(df) -> list[tuple]:  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    sel = df.select("topic", "partition", "offset",
                    (F.col("timestamp").cast("double") * 1000).cast("long").alias("ts"),
                    "key", "value", "headers")
    out = []
    for r in sel.collect():
        headers = tuple((h["key"], None if h["value"] is None else bytes(h["value"])) for h in r["headers"])
        out.append((r["topic"], r["partition"], r["offset"], r["ts"],
                    None if r["key"] is None else bytes(r["key"]),
                    None if r["value"] is None else bytes(r["value"]), headers))
    return sorted(out, key=repr)


def load(spark, path, **options):  # type: ignore[no-untyped-def]
    reader = spark.read.format("kafka-log")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(str(path))


# --- real broker files -------------------------------------------------------------------
REAL_SETS = [
    "BiggerBrain__kafka",                 # gzip + none, record headers
    "hermag__kafkademo",                  # lz4 (Kafka 1.1)
    "DonaldY__kafka-2.7.1",               # compacted __consumer_offsets, offset gaps
    "seanorth__kafka-server",             # snappy
    "xpxwo100__bullShit",                 # magic 1 messages
    "Danielowo2000__BigDataTechnologies-Version-2",  # transactions + COMMIT markers, KRaft metadata
    "vitormoschetti__kafka-services",     # two brokers' log dirs
]


@pytest.mark.realdata
@pytest.mark.parametrize("name", REAL_SETS)
def test_real_broker_files_equal_kafka_python(spark, realdata: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    root = realdata / name
    df = load(spark, root, replicas="all", includeControlRecords="true")
    assert spark_rows(df) == oracle_rows(root)


@pytest.mark.realdata
def test_real_data_control_records_hidden_by_default(spark, realdata: Path) -> None:  # type: ignore[no-untyped-def]
    root = realdata / "Danielowo2000__BigDataTechnologies-Version-2" / "kafka_data" / "_confluent-ksql-default__command_topic-0"
    df = load(spark, root)
    assert spark_rows(df) == oracle_rows(root, include_control=False)
    assert df.filter("isControl").count() == 0


# --- generated dirs ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def two_partitions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gen")
    write_partition(root, "orders", 0, simple_specs(120, ts_step=10), segment_bytes=30_000, hw=700)
    write_partition(root, "orders", 1, simple_specs(60, start=0, ts_step=7), segment_bytes=30_000, hw=600)
    return root


def test_whole_read_and_split_count(spark, two_partitions: Path) -> None:  # type: ignore[no-untyped-def]
    from kafka_format.planning import PlanOptions, plan_splits
    from pyspark.sql import functions as F

    df = load(spark, two_partitions, maxBytesPerPartition="20000")
    assert spark_rows(df) == oracle_rows(two_partitions)
    planned = plan_splits([str(two_partitions)], PlanOptions(max_bytes_per_partition=20000))
    assert df.select(F.spark_partition_id()).distinct().count() == len(planned) > 2
    one = df.filter("partition = 1").select("logDir", "brokerId", "segment").distinct().collect()
    assert {r["brokerId"] for r in one} == {1}
    assert {r["logDir"] for r in one} == {str(two_partitions)}


def test_include_headers_false_drops_the_column(spark, two_partitions: Path) -> None:  # type: ignore[no-untyped-def]
    df = load(spark, two_partitions, includeHeaders="false")
    assert "headers" not in df.columns
    assert df.columns[:7] == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]


def test_offsets_json_and_high_watermark(spark, two_partitions: Path) -> None:  # type: ignore[no-untyped-def]
    df = load(spark, two_partitions, startingOffsets='{"orders": {"0": 333, "1": -2}}',
              endingOffsets='{"orders": {"0": 1000, "1": 77}}', upTo="highWatermark")
    want = [r for r in oracle_rows(two_partitions)
            if (r[1] == 0 and 333 <= r[2] < 700) or (r[1] == 1 and r[2] < 77)]
    assert spark_rows(df) == want


def test_starting_and_ending_timestamp(spark, two_partitions: Path) -> None:  # type: ignore[no-untyped-def]
    rows = oracle_rows(two_partitions)
    p0 = [r for r in rows if r[1] == 0]
    t_start, t_end = p0[250][3] + 3, p0[900][3] + 5
    df = load(spark, two_partitions, assign='{"orders": [0]}', startingTimestamp=str(t_start),
              endingTimestamp=str(t_end))

    class W:   # adapter for list_offsets_oracle over oracle rows of partition 0
        segments = sorted({int(p.stem) for p in (two_partitions / "orders-0").glob("*.log")})
        rows = [Row(r[2], r[3], None, None) for r in p0]

    lo, hi = list_offsets_oracle(W, t_start), list_offsets_oracle(W, t_end)  # type: ignore[arg-type]
    assert spark_rows(df) == [r for r in p0 if lo <= r[2] < hi]


def test_read_committed(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    abort_key, commit_key = struct.pack(">hh", 0, 0), struct.pack(">hh", 0, 1)
    marker_value = struct.pack(">hi", 0, 0)
    a, b, c = 11, 22, 33
    specs = simple_specs(1, per_batch=5)                                              # 0..4 plain
    specs.append(BatchSpec([Row(5, 1, b"a", b"x"), Row(6, 1, b"a", b"y")], a, True))  # aborted
    specs.append(BatchSpec([Row(7, 1, b"b", b"z")], b, True))                         # committed
    specs.append(BatchSpec([Row(8, 1, abort_key, marker_value)], a, True, True))     # ABORT a
    specs.append(BatchSpec([Row(9, 1, commit_key, marker_value)], b, True, True))    # COMMIT b
    specs.append(BatchSpec([Row(10, 1, b"a", b"again")], a, True))                   # new txn of a
    specs.append(BatchSpec([Row(11, 1, commit_key, marker_value)], a, True, True))   # COMMIT a
    specs.append(BatchSpec([Row(12, 1, b"c", b"open")], c, True))                    # open: LSO = 12
    specs.extend(simple_specs(1, per_batch=3, start=13))
    write_partition(tmp_path, "tx", 0, specs, aborted=[(5, 8, 9, a)])
    committed = load(spark, tmp_path, isolationLevel="read_committed")
    assert sorted(r["offset"] for r in committed.select("offset").collect()) == [0, 1, 2, 3, 4, 7, 10]
    uncommitted = load(spark, tmp_path)
    assert sorted(r["offset"] for r in uncommitted.select("offset").collect()) == [
        0, 1, 2, 3, 4, 5, 6, 7, 10, 12, 13, 14, 15]
    with_markers = load(spark, tmp_path, isolationLevel="read_committed", includeControlRecords="true")
    assert sorted(r["offset"] for r in with_markers.select("offset").collect()) == [0, 1, 2, 3, 4, 7, 8, 9, 10, 11]


def test_batch_granularity(spark, two_partitions: Path) -> None:  # type: ignore[no-untyped-def]
    df = load(spark, two_partitions, granularity="batch")
    want = []
    for log in sorted(two_partitions.rglob("*.log")):
        mr = MemoryRecords(log.read_bytes())
        while (batch := mr.next_batch()) is not None:
            want.append((int(log.parent.name.rsplit("-", 1)[1]), batch.base_offset, batch.last_offset,
                         batch.records_count, batch.max_timestamp))
    got = [(r["partition"], r["baseOffset"], r["lastOffset"], r["count"], r["maxTimestamp"])
           for r in df.select("partition", "baseOffset", "lastOffset", "count", "maxTimestamp").collect()]
    assert sorted(got) == sorted(want)


def test_multiple_paths(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write_partition(tmp_path / "b1", "m", 0, simple_specs(3), broker_id=1)
    write_partition(tmp_path / "b2", "m", 1, simple_specs(4), broker_id=2)
    df = spark.read.format("kafka-log").load([str(tmp_path / "b1"), str(tmp_path / "b2")])
    assert spark_rows(df) == oracle_rows(tmp_path)


# --- options errors ----------------------------------------------------------------------
@pytest.mark.parametrize("options,needle", [
    ({"startingOffsets": "latest"}, "can't be latest"),
    ({"noSuchOption": "1"}, "unknown option"),
    ({"startingOffsets": '{"orders": {"0": 5}}'}, "must specify all topic partitions"),
])
def test_option_errors_surface(spark, two_partitions: Path, options: dict, needle: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Exception, match=needle):
        load(spark, two_partitions, **options).count()


# --- corrupt input -----------------------------------------------------------------------
@pytest.fixture
def corrupted(tmp_path: Path) -> tuple[Path, int, list[tuple]]:
    """A copy with one flipped byte inside a batch's records: (root, corrupt position, good rows)."""
    w = write_partition(tmp_path, "bad", 0, simple_specs(30), segment_bytes=1 << 30)
    good = oracle_rows(tmp_path)
    seg, pos, size, base, last = w.batches[12]
    log = w.path / f"{seg:020d}.log"
    data = bytearray(log.read_bytes())
    data[pos + size - 20] ^= 0xFF
    log.write_bytes(bytes(data))
    return tmp_path, pos, [r for r in good if not base <= r[2] <= last]


def test_failfast_names_file_and_position(spark, corrupted) -> None:  # type: ignore[no-untyped-def]
    root, pos, _ = corrupted
    with pytest.raises(Exception) as e:
        load(spark, root).count()
    assert "00000000000000000000.log" in str(e.value) and str(pos) in str(e.value)


def test_permissive_records_skipped_ranges(spark, corrupted) -> None:  # type: ignore[no-untyped-def]
    root, pos, good = corrupted
    df = load(spark, root, mode="PERMISSIVE")
    assert "_corrupt" in df.columns
    bad = df.filter("_corrupt is not null").select("_corrupt.*", "topic", "partition").collect()
    assert bad and all(r["topic"] == "bad" and r["partition"] == 0 for r in bad)
    assert any(r["position"] <= pos < r["position"] + r["length"] for r in bad)
    kept = spark_rows(df.filter("_corrupt is null"))
    assert set(kept) <= set(good)
    # rows lost beyond the corrupt batch must lie in a reported range
    lost_positions = {r[2] for r in good} - {r[2] for r in kept}
    assert not lost_positions or all(r["length"] > 0 for r in bad)


def test_dropmalformed_has_no_corrupt_column(spark, corrupted) -> None:  # type: ignore[no-untyped-def]
    root, _, good = corrupted
    df = load(spark, root, mode="DROPMALFORMED")
    assert "_corrupt" not in df.columns
    assert set(spark_rows(df)) <= set(good)
    assert len(spark_rows(df)) >= len(good) - 10


# --- a real multi-JVM cluster ------------------------------------------------------------
CLUSTER_SCRIPT = r"""
import hashlib, json, sys
from kafka_format.spark.session import build_session
spark = build_session(master="local-cluster[2,1,1024]", profile="test")
df = spark.read.format("kafka-log").option("maxBytesPerPartition", "8000").load(sys.argv[1])
rows = sorted((r["topic"], r["partition"], r["offset"], hashlib.sha256(r["value"]).hexdigest())
              for r in df.select("topic", "partition", "offset", "value").collect())
print("RESULT " + json.dumps({"rows": rows, "partitions": df.rdd.getNumPartitions()}))
spark.stop()
"""


@pytest.mark.cluster
def test_local_cluster_two_workers(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """local-cluster[2,1,1024]: executors in other JVMs/Pythons unpickle splits and read files
    (own session in a subprocess: the run's shared local session stays untouched)."""
    import hashlib
    import json
    import os
    import subprocess
    import sys

    if "cluster" not in (request.config.getoption("-m") or "") and not os.environ.get("KLOGS_CLUSTER_TESTS"):
        pytest.skip("starts a local-cluster (two worker JVMs, ~2 min): run with -m cluster or KLOGS_CLUSTER_TESTS=1")
    write_partition(tmp_path, "lc", 0, simple_specs(50), segment_bytes=20_000)
    write_partition(tmp_path, "lc", 1, simple_specs(30), segment_bytes=20_000)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    proc = subprocess.run([sys.executable, "-c", CLUSTER_SCRIPT, str(tmp_path)], capture_output=True,
                          text=True, env=env, timeout=900)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line is not None, proc.stderr[-3000:]
    got = json.loads(line[len("RESULT "):])
    want = sorted([r[0], r[1], r[2], hashlib.sha256(r[5]).hexdigest()] for r in oracle_rows(tmp_path))
    assert got["rows"] == want
    assert got["partitions"] > 2


# --- streaming ---------------------------------------------------------------------------
def test_stream_available_now_is_incremental_and_exactly_once(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    logs, out, ckpt = tmp_path / "logs", tmp_path / "out", tmp_path / "ckpt"
    write_partition(logs, "s", 0, simple_specs(10))                     # offsets 0..99
    write_partition(logs, "s", 1, simple_specs(3))                      # offsets 0..29

    def run() -> None:
        q = (spark.readStream.format("kafka-log").option("maxBytesPerPartition", "4000").load(str(logs))
             .select("topic", "partition", "offset", "value")
             .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
             .trigger(availableNow=True).start())
        q.awaitTermination()
        assert q.exception() is None

    run()
    first = {(r["partition"], r["offset"]) for r in spark.read.parquet(str(out)).collect()}
    assert first == {(0, o) for o in range(100)} | {(1, o) for o in range(30)}
    write_partition(logs, "s", 0, simple_specs(5, start=100))           # broker rolled: new segment 100
    write_partition(logs, "t", 0, simple_specs(2))                      # a new topic appears
    run()
    rows = [(r["topic"], r["partition"], r["offset"]) for r in spark.read.parquet(str(out)).collect()]
    assert len(rows) == len(set(rows))                                  # nothing twice
    assert sorted(rows) == sorted([("s", 0, o) for o in range(150)] + [("s", 1, o) for o in range(30)]
                                  + [("t", 0, o) for o in range(20)])


def test_stream_rejects_ending_offsets(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write_partition(tmp_path, "s", 0, simple_specs(1))
    q = (spark.readStream.format("kafka-log").option("endingOffsets", "latest").load(str(tmp_path))
         .writeStream.format("memory").queryName("never").trigger(availableNow=True).start())
    try:
        with pytest.raises(Exception, match="not valid for streaming"):   # raised in the query thread
            q.awaitTermination()
    finally:
        q.stop()
