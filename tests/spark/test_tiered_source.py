"""The ``kafka-log`` source over both tiers of a tiered partition (``tier``, ``remoteStorage``), on
the local engine and on Spark, against rows written from Kafka's rules: the broker serves offsets
below the local log start from the remote segments and the rest from the local log; a consumer's
read_committed drops every record of an aborted transaction, also of one whose records lie on both
sides of the local log start (its ``.txnindex`` entry is in the local segment of its marker).

The log (``tiered_builders.write_tiered_cluster``): ``orders-0`` with offsets 0-99, segments 0 and 40
copied to the remote storage and deleted locally (local log start 50); ``plain-0`` beside it.
A real broker's tiered topic is compared in ``tests/conformance/test_tiered.py``.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "format"))
from tiered_builders import TieredCluster, remote_dir, timestamp_of, write_tiered_cluster  # noqa: E402

from kafka_format.common.errors import KafkaFormatError  # noqa: E402
from kafka_format.read.options import KafkaLogOptionError  # noqa: E402

LOCAL_START = 50
Row = tuple[int, bytes, str]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> TieredCluster:
    return write_tiered_cluster(tmp_path_factory.mktemp("tiered"))


def _local(options: dict[str, str]) -> pa.Table:
    from kafka_format.engine.read import read_table

    return read_table(options)


@pytest.fixture(params=["local-engine", "spark"])
def read(request: pytest.FixtureRequest) -> Callable[[dict[str, str]], pa.Table]:
    """A read of the source with options, as a table, on one engine."""
    if request.param == "local-engine":
        return _local
    spark = request.getfixturevalue("spark")

    def on_spark(options: dict[str, str]) -> pa.Table:
        df = spark.read.format("kafka-log").options(**options).load()
        return pa.Table.from_pylist([r.asDict() for r in df.select("offset", "value", "tier", "segment").collect()])

    return on_spark


def _opts(c: TieredCluster, **extra: str) -> dict[str, str]:
    return {"paths": json.dumps([str(c.log_dir)]), "topics": "orders", **extra}


def rows(table: pa.Table) -> list[Row]:
    got = zip(table.column("offset").to_pylist(), table.column("value").to_pylist(),
              table.column("tier").to_pylist(), strict=True)
    return sorted((o, bytes(v), t) for o, v, t in got)


def expected(c: TieredCluster, lo: int = 0, hi: int = 100, *, committed: bool = False) -> list[Row]:
    """The consumer's rows of ``[lo, hi)``, each with the tier the broker serves it from."""
    return [(o, v, "remote" if o < LOCAL_START else "local") for o, v in c.rows
            if lo <= o < hi and not (committed and o in c.aborted)]


# ------------------------------------------------------------------------------- whole history


def test_the_whole_history_is_read_remote_tier_first(cluster: TieredCluster, read: Any) -> None:
    table = read(_opts(cluster, remoteStorage=str(cluster.remote_root)))
    assert rows(table) == expected(cluster)
    segments = dict(zip(table.column("offset").to_pylist(), table.column("segment").to_pylist(), strict=True))
    assert {segments[o] for o in range(0, 40) if o in segments} == {0}      # the remote segments' own bases
    assert {segments[o] for o in range(40, 50)} == {40}


def test_read_committed_drops_a_transaction_aborted_across_the_tiers(cluster: TieredCluster, read: Any) -> None:
    table = read(_opts(cluster, remoteStorage=str(cluster.remote_root), isolationLevel="read_committed"))
    assert rows(table) == expected(cluster, committed=True)
    assert not {40, 41, 42, 43, 44} & {r[0] for r in rows(table)}          # remote records, local marker


def test_tier_local_and_tier_remote(cluster: TieredCluster, read: Any) -> None:
    assert rows(read(_opts(cluster, tier="local"))) == expected(cluster, LOCAL_START)
    assert rows(read(_opts(cluster, tier="remote", remoteStorage=str(cluster.remote_root)))) == \
        expected(cluster, 0, LOCAL_START)
    # a partition without a remote tier: all of it with tier=all, nothing with tier=remote
    both = _opts(cluster, topics="orders,plain", tier="remote", remoteStorage=str(cluster.remote_root))
    assert {r[0] for r in rows(read(both))} == set(range(LOCAL_START)) - {15}


def test_a_tiered_partition_without_remote_storage_is_refused_not_cut(cluster: TieredCluster) -> None:
    with pytest.raises(KafkaLogOptionError, match=r"remoteStorage.*orders-0.*tier=local"):
        _local(_opts(cluster))
    plain = _local(_opts(cluster, topics="plain"))                         # no remote tier: nothing needed
    assert plain.num_rows == cluster.plain_rows and set(plain.column("tier").to_pylist()) == {"local"}


def test_a_tiered_partition_without_remote_storage_is_refused_on_spark(cluster: TieredCluster, spark: Any) -> None:
    with pytest.raises(Exception, match=r"remoteStorage.*orders-0"):
        spark.read.format("kafka-log").options(**_opts(cluster)).load().count()


# ------------------------------------------------------------------------------------- bounds


def test_offset_and_timestamp_bounds_span_the_tiers(cluster: TieredCluster, read: Any) -> None:
    store = str(cluster.remote_root)
    between = read(_opts(cluster, remoteStorage=store, startingOffsets='{"orders": {"0": 42}}',
                         endingOffsets='{"orders": {"0": 57}}'))
    assert rows(between) == expected(cluster, 42, 57)
    by_time = read(_opts(cluster, remoteStorage=store, startingTimestamp=str(timestamp_of(30)),
                         endingTimestamp=str(timestamp_of(60))))
    assert rows(by_time) == expected(cluster, 30, 60)
    late = read(_opts(cluster, remoteStorage=store, startingTimestamp=str(timestamp_of(72))))
    assert rows(late) == expected(cluster, 72)                              # answered by the local log
    early_end = read(_opts(cluster, remoteStorage=store, endingTimestamp=str(timestamp_of(20))))
    assert rows(early_end) == expected(cluster, 0, 20)                      # answered by a remote segment


def test_pushed_filters_on_a_reused_frame(cluster: TieredCluster, spark: Any) -> None:
    df = spark.read.format("kafka-log").options(**_opts(cluster, remoteStorage=str(cluster.remote_root))).load()
    want = expected(cluster)
    assert df.count() == len(want)
    assert sorted(r.offset for r in df.where("offset >= 45 AND offset < 52").collect()) == \
        [o for o, _, _ in want if 45 <= o < 52]
    ts = df.where(f"timestamp >= timestamp_millis({timestamp_of(90)})")
    assert sorted(r.offset for r in ts.select("offset").collect()) == list(range(90, 100))
    assert df.where("tier = 'remote'").count() == len([r for r in want if r[2] == "remote"])
    assert df.count() == len(want)                                          # nothing leaks into the frame


def test_two_threads_read_different_tiers_of_one_frame(cluster: TieredCluster, spark: Any) -> None:
    df = spark.read.format("kafka-log").options(**_opts(cluster, remoteStorage=str(cluster.remote_root))).load()
    got: dict[str, list[int]] = {}

    def run(name: str, where: str) -> None:
        got[name] = sorted(r.offset for r in df.where(where).select("offset").collect())

    threads = [threading.Thread(target=run, args=("low", "offset < 30")),
               threading.Thread(target=run, args=("high", "offset >= 60"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == {"low": [o for o, _, _ in expected(cluster, 0, 30)], "high": [o for o, _, _ in expected(cluster, 60)]}


# --------------------------------------------------------------- pruning and missing remote files


def test_pruned_remote_segments_are_never_opened(tmp_path: Path, read: Any) -> None:
    """Segment 0's remote files deleted: a read whose bounds prune it (by offset, or by a pushed
    timestamp filter) does not notice; a read that needs it fails naming the file the broker opens."""
    c = write_tiered_cluster(tmp_path)
    for f in remote_dir(c.remote_root).glob("00000000000000000000-*"):
        f.unlink()
    store = str(c.remote_root)
    assert rows(read(_opts(c, remoteStorage=store, startingOffsets='{"orders": {"0": 41}}'))) == expected(c, 41)
    with pytest.raises(Exception, match=r"00000000000000000000-\w+\.log: remote segment \w+ cannot be read"):
        read(_opts(c, remoteStorage=store))


def test_planning_prunes_by_the_metadata_alone(tmp_path: Path) -> None:
    from dataclasses import replace

    from kafka_format.read.options import parse_options
    from kafka_format.read.tiers import plan_read

    c = write_tiered_cluster(tmp_path)
    shutil.rmtree(remote_dir(c.remote_root))            # no remote file at all: only metadata is used
    remote_dir(c.remote_root)
    opts = parse_options(_opts(c, remoteStorage=str(c.remote_root)))
    splits = plan_read(opts, bounds=replace(opts.bounds, min_timestamp=timestamp_of(50)))
    assert {s.tier for s in splits} == {"local"} and min(s.ranges[0].first_offset for s in splits) == LOCAL_START
    with pytest.raises(KafkaFormatError, match="cannot be read"):
        plan_read(opts, bounds=replace(opts.bounds, min_offset=39))


def test_an_offset_gap_between_the_tiers_is_an_error(tmp_path: Path) -> None:
    """Only segment 0 named by the metadata: offsets 40-49 are served by no segment."""
    from tiered_builders import copy_records, write_metadata_log

    c = write_tiered_cluster(tmp_path)
    shutil.rmtree(c.log_dir / "__remote_log_metadata-0")
    write_metadata_log(c.log_dir, copy_records(c.uploaded[:1]))
    with pytest.raises(KafkaFormatError, match=r"offsets 40\.\.49 .* served by no segment"):
        _local(_opts(c, remoteStorage=str(c.remote_root)))
    assert rows(_local(_opts(c, remoteStorage=str(c.remote_root), startingOffsets='{"orders": {"0": 50}}'))) == \
        expected(c, 50)


def test_a_stream_reads_the_whole_history_with_remote_storage(cluster: TieredCluster, spark: Any) -> None:
    """``readStream`` from ``earliest``: with ``remoteStorage`` the history's rows, remote tier first
    (one micro-batch per few offsets: ``maxOffsetsPerTrigger``); without it a failure that says so
    rather than a start at the local log start; ``tier=local`` streams the local log."""
    def run(name: str, **options: str) -> list[Row]:
        stream = spark.readStream.format("kafka-log").options(**_opts(cluster, **options)).load()
        query = stream.writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
        query.awaitTermination()
        return sorted((r.offset, bytes(r.value), r.tier) for r in spark.table(name).collect())

    assert run("tiered_whole", remoteStorage=str(cluster.remote_root), maxOffsetsPerTrigger="30") == expected(cluster)
    assert run("tiered_local", tier="local") == expected(cluster, LOCAL_START)
    stream = spark.readStream.format("kafka-log").options(**_opts(cluster)).load()
    query = stream.writeStream.format("memory").queryName("tiered_refused").trigger(availableNow=True).start()
    with pytest.raises(Exception, match=r"orders-0 have a remote tier.*remoteStorage.*tier=local"):
        query.awaitTermination()


def test_the_remote_tier_in_a_bucket(tmp_path: Path, moto_s3: Any) -> None:
    """Local log dirs and the remote tier in an object store (``s3://`` through pyarrow): the same rows,
    and the remote rows name the bucket's files, without the secret."""
    from s3store import KEY, SECRET, SECRET_IN_URI

    c = write_tiered_cluster(tmp_path)
    bucket = moto_s3.bucket("tiered-remote", {"tier": c.remote_root})
    store = f"s3://{KEY}:{SECRET_IN_URI}@{bucket}/tier?{moto_s3.query}"
    table = _local(_opts(c, remoteStorage=store))
    assert rows(table) == expected(c)
    remote_dirs = {d for d, t in zip(table.column("logDir").to_pylist(), table.column("tier").to_pylist(), strict=True)
                   if t == "remote"}
    assert len(remote_dirs) == 1 and bucket in remote_dirs.pop()
    assert all(SECRET not in str(v) and SECRET_IN_URI not in str(v) for v in table.column("logDir").to_pylist())


def test_permissive_reads_report_what_the_tiers_cannot_serve(tmp_path: Path, spark: Any) -> None:
    """PERMISSIVE: a remote segment without files and offsets no segment serves are each one
    ``_corrupt`` row (the ``.log`` the broker would open, ``segmentSizeInBytes`` long; the partition dir,
    no bytes), the rest is read; DROPMALFORMED reads the rest without them; FAILFAST fails (above)."""
    from tiered_builders import copy_records, write_metadata_log

    c = write_tiered_cluster(tmp_path / "missing")
    for f in remote_dir(c.remote_root).glob("00000000000000000000-*"):
        f.unlink()
    store = str(c.remote_root)
    table = _local(_opts(c, remoteStorage=store, mode="PERMISSIVE"))
    bad = [x for x in table.column("_corrupt").to_pylist() if x is not None]
    good = table.filter(table.column("_corrupt").is_null())
    assert rows(good) == expected(c, 40)
    assert len(bad) == 1 and bad[0]["file"].endswith(f"00000000000000000000-{c.uploaded[0].segment_id}.log")
    assert (bad[0]["position"], bad[0]["length"]) == (0, c.uploaded[0].segment_size_in_bytes)
    assert "cannot be read" in bad[0]["reason"]
    df = spark.read.format("kafka-log").options(**_opts(c, remoteStorage=store, mode="PERMISSIVE")).load()
    assert [r["_corrupt"]["length"] for r in df.where("_corrupt IS NOT NULL").collect()] == [bad[0]["length"]]
    dropped = _local(_opts(c, remoteStorage=store, mode="DROPMALFORMED"))
    assert "_corrupt" not in dropped.schema.names and rows(dropped) == expected(c, 40)

    g = write_tiered_cluster(tmp_path / "gap")
    shutil.rmtree(g.log_dir / "__remote_log_metadata-0")
    write_metadata_log(g.log_dir, copy_records(g.uploaded[:1]))          # 40..49 served by nothing
    table = _local(_opts(g, remoteStorage=str(g.remote_root), mode="PERMISSIVE"))
    bad = [x for x in table.column("_corrupt").to_pylist() if x is not None]
    assert len(bad) == 1 and bad[0]["length"] == 0 and "40..49 are served by no segment" in bad[0]["reason"]
    assert rows(table.filter(table.column("_corrupt").is_null())) == [r for r in expected(g) if not 40 <= r[0] < 50]
