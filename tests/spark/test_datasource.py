"""The kafka-log data source through a real local[2] Spark session.

Oracles: aiokafka's and kafka-python's MemoryRecords decoding the same .log bytes (real broker files and
generated dirs); bounds and isolation expectations are brute force over those rows.
"""

from __future__ import annotations

import re
import struct
import warnings
from pathlib import Path
from typing import ClassVar

import pytest
from test_planning import BatchSpec, Row, list_offsets_oracle, simple_specs, write_partition

from kafka_format.read.split_reader import SKIP_HINT

with warnings.catch_warnings():   # both clients import deprecated importlib.resources APIs
    warnings.simplefilter("ignore", DeprecationWarning)
    from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
    from kafka.record.memory_records import MemoryRecords

pytestmark = pytest.mark.spark

PLAIN_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
COLS = ["topic", "partition", "offset", "ts", "key", "value", "headers"]


def oracle_rows(root: Path, *, include_control: bool = True) -> list[tuple]:
    """Every record of every .log under root (plain partition dirs), decoded by aiokafka
    (its C decoder has every codec; kafka-python lacks python-snappy here); records below the
    partition's log-start-offset-checkpoint entry are left out, as a consumer reading from
    ``earliest`` never sees them."""
    from test_acceptance import checkpoint

    out = []
    for log in sorted(root.rglob("*.log")):
        m = PLAIN_PARTITION_DIR.match(log.parent.name)
        if m is None or "." in m.group(2):
            continue
        log_start = checkpoint(log.parent.parent / "log-start-offset-checkpoint").get(
            (m.group(1), int(m.group(2))), 0)
        mr = AioMemoryRecords(log.read_bytes())
        while (batch := mr.next_batch()) is not None:
            control = bool(getattr(batch, "is_control_batch", False))
            if control and not include_control:
                continue
            for rec in batch:
                if rec.offset < log_start:
                    continue
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
    return reader.load(path if isinstance(path, list) else str(path))


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
def test_real_broker_files_equal_aiokafka(spark, realdata: Path) -> None:  # type: ignore[no-untyped-def]
    """One read over several real sets (every replica, control records included)."""
    roots = [realdata / name for name in REAL_SETS]
    df = load(spark, [str(r) for r in roots], replicas="all", includeControlRecords="true")
    assert spark_rows(df) == sorted((row for r in roots for row in oracle_rows(r)), key=repr)


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
    from pyspark.sql import functions as F

    from kafka_format.read.planning import PlanOptions, plan_splits

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
        rows: ClassVar[list[Row]] = [Row(r[2], r[3], None, None) for r in p0]

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
CORRUPT_BATCH = 12


@pytest.fixture(scope="module", params=["flipped-byte", "lying-length", "length-past-eof"])
def corrupted(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A partition with one damaged batch: (kind, root, its position, its size, rows of every other
    batch, {offset: position of its batch}).

    ``flipped-byte``: a byte inside the records (CRC mismatch, framing intact);
    ``lying-length``: the batch length field is halved (framing broken: the reader must find
    the next batch again); ``length-past-eof``: the length field says 1 GiB, which the reader
    cannot tell from a crash tail until an index entry says a batch starts later."""
    root = tmp_path_factory.mktemp(request.param)
    w = write_partition(root, "bad", 0, simple_specs(30), segment_bytes=1 << 30)
    good = oracle_rows(root)
    seg, pos, size, base, last = w.batches[CORRUPT_BATCH]
    log = w.path / f"{seg:020d}.log"
    data = bytearray(log.read_bytes())
    if request.param == "flipped-byte":
        data[pos + size - 20] ^= 0xFF
    elif request.param == "lying-length":
        struct.pack_into(">i", data, pos + 8, (size - 12) // 2)      # batchLength, after baseOffset
    else:
        struct.pack_into(">i", data, pos + 8, 1 << 30)
    log.write_bytes(bytes(data))
    batch_of = {o: p for _, p, _, b0, b1 in w.batches for o in range(b0, b1 + 1)}
    return request.param, root, pos, size, [r for r in good if not base <= r[2] <= last], batch_of


def test_failfast_names_file_and_position(spark, corrupted) -> None:  # type: ignore[no-untyped-def]
    _, root, pos, _, _, _ = corrupted
    with pytest.raises(Exception) as e:
        load(spark, root, maxBytesPerPartition="8000").count()
    assert re.search(rf"00000000000000000000\.log\b.*\b{pos}\b", str(e.value), re.S), str(e.value)[:2000]
    assert SKIP_HINT in str(e.value)            # and the modes that would skip the damage


def test_permissive_accounts_every_skipped_range(spark, corrupted) -> None:  # type: ignore[no-untyped-def]
    """Every good record is a row, or (only when the framing cannot be recovered) lies in a range
    reported by a ``_corrupt`` row; one ``_corrupt`` row per skipped range."""
    kind, root, pos, size, good, batch_of = corrupted
    df = load(spark, root, mode="PERMISSIVE", maxBytesPerPartition="8000")
    assert "_corrupt" in df.columns
    bad = df.filter("_corrupt is not null").select("_corrupt.*", "topic", "partition", "position").collect()
    assert all(r["file"].endswith("bad-0/00000000000000000000.log") and r["reason"]
               and (r["topic"], r["partition"]) == ("bad", 0) for r in bad)
    kept = spark_rows(df.filter("_corrupt is null"))
    if kind != "length-past-eof":
        assert [(r["position"], r["length"]) for r in bad] == [(pos, size)]
        assert kept == good
    else:
        assert [r["position"] for r in bad] == [pos]
        assert set(kept) <= set(good)
        lost = set(good) - set(kept)
        assert all(bad[0]["position"] <= batch_of[row[2]] < bad[0]["position"] + bad[0]["length"]
                   for row in lost)


def test_dropmalformed_keeps_every_good_record(spark, corrupted) -> None:  # type: ignore[no-untyped-def]
    kind, root, _, _, good, _ = corrupted
    df = load(spark, root, mode="DROPMALFORMED", maxBytesPerPartition="8000")
    assert "_corrupt" not in df.columns
    if kind != "length-past-eof":
        assert spark_rows(df) == good
    else:
        assert set(spark_rows(df)) <= set(good)


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


@pytest.mark.parametrize("limit", [("maxOffsetsPerTrigger", "70"), ("maxBytesPerTrigger", "8k")])
def test_stream_available_now_reads_a_backlog_in_bounded_batches_exactly_once(  # type: ignore[no-untyped-def]
        spark, tmp_path: Path, limit: tuple[str, str]) -> None:
    """A backlog several times the read limit: several micro-batches, each within the limit
    (offsets: 70 shared by backlog, Spark's Kafka rule; bytes: 8 KiB of log cut at index entries,
    at most one index interval (4 KiB) over per partition), together exactly the batch read."""
    logs, ckpt = tmp_path / "logs", tmp_path / "ckpt"
    w0 = write_partition(logs, "s", 0, simple_specs(30))                # offsets 0..299, ~37 KB
    w1 = write_partition(logs, "s", 1, simple_specs(6))                 # offsets 0..59
    batches: list[list[tuple[int, int, int, int]]] = []

    def each(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        batches.append([(r["partition"], r["offset"], r["segment"], r["position"])
                        for r in df.select("partition", "offset", "segment", "position").collect()])

    q = (spark.readStream.format("kafka-log").option(*limit).load(str(logs)).writeStream.foreachBatch(each)
         .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
    q.awaitTermination()
    assert q.exception() is None
    rows = [(p, o) for b in batches for p, o, _, _ in b]
    expected = {(0, r.offset) for r in w0.rows} | {(1, r.offset) for r in w1.rows}
    batch_read = {(r["partition"], r["offset"]) for r in
                  spark.read.format("kafka-log").load(str(logs)).select("partition", "offset").collect()}
    assert batch_read == expected
    assert len(rows) == len(set(rows)) and set(rows) == expected        # exactly once
    nonempty = [b for b in batches if b]
    if limit[0] == "maxOffsetsPerTrigger":
        assert len(nonempty) >= 360 // 70 + 1 and all(len(b) <= 70 + 2 for b in nonempty)
    else:
        log_bytes = sum(f.stat().st_size for f in logs.rglob("*.log"))
        assert len(nonempty) >= log_bytes // 8192
        for b in nonempty:                                              # bytes of log each batch spans
            spans = {}
            for p, _, seg, pos in b:
                lo, hi = spans.get((p, seg), (pos, pos))
                spans[(p, seg)] = (min(lo, pos), max(hi, pos))
            assert sum(hi - lo for lo, hi in spans.values()) <= 8192 + 2 * 4096


def test_read_limit_shares_follow_sparks_kafka_rule() -> None:
    """``KafkaMicroBatchStream.rateLimit``: limit * size / total, a share below one rounded up,
    others down; a partition without backlog keeps its end."""
    from kafka_format.spark.datasource import _rate_limit

    first = {("a", 0): 0, ("a", 1): 100, ("b", 0): 7}
    ends = {("a", 0): 300, ("a", 1): 160, ("b", 0): 7}
    sizes = {tp: ends[tp] - first[tp] for tp in ends}
    # 70 * 300/360 = 58.3 -> 58; 70 * 60/360 = 11.7 -> 11; b-0 has nothing to read
    assert _rate_limit(70, first, ends, sizes) == {("a", 0): 58, ("a", 1): 111, ("b", 0): 7}
    # 2 * 1/1000 = 0.002 -> 1 (never starved); 2 * 999/1000 = 1.998 -> 1
    assert _rate_limit(2, {("a", 0): 0, ("a", 1): 0}, {("a", 0): 1, ("a", 1): 999},
                       {("a", 0): 1, ("a", 1): 999}) == {("a", 0): 1, ("a", 1): 1}
    assert _rate_limit(10, {("a", 0): 5}, {("a", 0): 5}, {("a", 0): 0}) == {("a", 0): 5}


def test_read_limit_options_parse() -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxBytes, ReadMaxRows

    from kafka_format.spark.datasource import KafkaLogStreamReader
    from kafka_format.spark.options import KafkaLogOptionError, parse_options

    def limit(**o: str) -> object:
        return KafkaLogStreamReader(parse_options({"path": "/x", **o}, streaming=True)).getDefaultReadLimit()

    assert limit() == ReadAllAvailable()
    assert limit(maxOffsetsPerTrigger="500") == ReadMaxRows(500)
    assert limit(maxBytesPerTrigger="64m") == ReadMaxBytes(64 << 20)
    assert limit(maxOffsetsPerTrigger="5", maxBytesPerTrigger="1k") == ReadMaxRows(5)
    for bad in ({"maxOffsetsPerTrigger": "0"}, {"maxBytesPerTrigger": "lots"}):
        with pytest.raises(KafkaLogOptionError, match=next(iter(bad))):
            parse_options({"path": "/x", **bad}, streaming=True)


def test_stream_rejects_ending_offsets(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write_partition(tmp_path, "s", 0, simple_specs(1))
    q = (spark.readStream.format("kafka-log").option("endingOffsets", "latest").load(str(tmp_path))
         .writeStream.format("memory").queryName("never").trigger(availableNow=True).start())
    try:
        with pytest.raises(Exception, match="not valid for streaming"):   # raised in the query thread
            q.awaitTermination()
    finally:
        q.stop()


@pytest.mark.spark
def test_one_large_partition_spreads_over_every_core(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Splits are sized from the session (Spark's file-source rule), so local[2] reads one
    partition with two tasks; the rows are the same as with one split."""
    from kafka_format.spark import register

    w = write_partition(tmp_path, "big", 0, simple_specs(400), segment_bytes=64 * 1024)
    key = "spark.sql.files.openCostInBytes"
    before = spark.conf.get(key, None)
    try:
        spark.conf.set(key, str(16 * 1024))
        register(spark)
        df = spark.read.format("kafka-log").load(str(tmp_path))
        assert df.rdd.getNumPartitions() >= spark.sparkContext.defaultParallelism == 2
        offsets = [r.offset for r in df.select("offset").collect()]
        assert sorted(offsets) == [r.offset for r in w.rows] and len(set(offsets)) == len(offsets)
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)
        register(spark)
    assert spark.read.format("kafka-log").load(str(tmp_path)).rdd.getNumPartitions() == 1   # 4 MiB open cost


def test_many_small_partitions_share_tasks(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """24 small topic-partitions are read by a few tasks (each split counted with the 4 MiB open
    cost, as Spark packs small files), every row once, in the planned order; before, one task each."""
    from pyspark.sql import functions as F

    for p in range(24):
        write_partition(tmp_path, "small", p, simple_specs(2 + p % 3))
    df = spark.read.format("kafka-log").load(str(tmp_path))
    tasks = df.rdd.getNumPartitions()
    assert spark.sparkContext.defaultParallelism == 2 and tasks == 2       # 24 x 4 MiB / 2 cores = 48 MiB each
    assert spark_rows(df) == oracle_rows(tmp_path)
    per_task = df.groupBy(F.spark_partition_id().alias("task")).agg(F.countDistinct("partition").alias("n"))
    assert sorted(r["n"] for r in per_task.collect()) == [12, 12]
    ordered = [(r.partition, r.offset) for r in df.select("partition", "offset").collect()]
    assert ordered == sorted(ordered)                                     # split order kept across tasks
