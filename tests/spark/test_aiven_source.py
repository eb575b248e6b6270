"""The ``kafka-log`` source and the jobs over a tiered partition whose remote tier is in Aiven's
``RemoteStorageManager`` layout, in stores written by Aiven's own code (``tests/format/aiven_rsm/``):
plain, zstd-compressed chunks, encrypted chunks, both.

The expected rows are ``tiered_builders.write_tiered_cluster``'s (offset, value) as it wrote them, each
with the tier the broker serves it from (below the local log start 50: remote), and the same read with
the remote tier in Kafka's ``LocalTieredStorage`` layout (the cluster's own copy of the same segments)
must give the same rows, column for column.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "format"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "jobs"))
from aiven_fixture import CONFIGS, KEY_B, AivenCluster, aiven_cluster  # noqa: E402
from tiered_builders import TieredCluster, timestamp_of  # noqa: E402

from kafka_format.common.errors import KafkaFormatError  # noqa: E402
from kafka_format.storage.aiven_rsm import forget_keys  # noqa: E402

LOCAL_START = 50
COMPARED = ("offset", "timestamp", "key", "value", "tier", "segment", "position")


@pytest.fixture(autouse=True)
def _no_keys_left() -> None:
    forget_keys()


def _local(options: dict[str, str]) -> pa.Table:
    from kafka_format.engine.read import read_table

    return read_table(options)


def _opts(a: AivenCluster, **extra: str) -> dict[str, str]:
    out = {"paths": json.dumps([str(a.cluster.log_dir)]), "topics": "orders", "remoteStorage": str(a.root)}
    if a.keys:
        out["remoteStorageKey"] = ",".join(a.keys)
    return {**out, **extra}


def expected(c: TieredCluster, lo: int = 0, hi: int = 100, *, committed: bool = False) -> list[tuple[int, bytes, str]]:
    return [(o, v, "remote" if o < LOCAL_START else "local") for o, v in c.rows
            if lo <= o < hi and not (committed and o in c.aborted)]


def rows(table: pa.Table) -> list[tuple[int, bytes, str]]:
    got = zip(table.column("offset").to_pylist(), table.column("value").to_pylist(),
              table.column("tier").to_pylist(), strict=True)
    return sorted((o, bytes(v), t) for o, v, t in got)


def _columns(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r[c] for c in COMPARED) for r in table.select(list(COMPARED)).to_pylist())


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_the_whole_history_is_the_one_local_tiered_storage_gives(tmp_path: Path, config: str) -> None:
    a = aiven_cluster(tmp_path, config)
    table = _local(_opts(a))                                   # remoteStorageFormat auto
    assert rows(table) == expected(a.cluster)
    same_segments = _local({"paths": json.dumps([str(a.cluster.log_dir)]), "topics": "orders",
                            "remoteStorage": str(a.cluster.remote_root)})
    assert _columns(table) == _columns(same_segments)
    remote_dirs = {d for d, t in zip(table.column("logDir").to_pylist(), table.column("tier").to_pylist(), strict=True)
                   if t == "remote"}
    assert remote_dirs == {str(a.root)}
    committed = _local(_opts(a, remoteStorageFormat="aiven", isolationLevel="read_committed"))
    assert rows(committed) == expected(a.cluster, committed=True)       # the aborted txn spans the tiers
    bounded = _local(_opts(a, startingTimestamp=str(timestamp_of(12)), endingOffsets=json.dumps({"orders": {"0": 45}})))
    assert rows(bounded) == expected(a.cluster, 12, 45)
    remote_only = _local(_opts(a, tier="remote"))
    assert rows(remote_only) == expected(a.cluster, 0, LOCAL_START)


@pytest.mark.spark
def test_spark_reads_encrypted_chunks_with_the_key_option(tmp_path: Path, spark: Any) -> None:
    a = aiven_cluster(tmp_path, "zstd-encrypted")
    df = spark.read.format("kafka-log").options(**_opts(a)).load()
    got = pa.Table.from_pylist([r.asDict() for r in df.select("offset", "value", "tier").collect()])
    assert rows(got) == expected(a.cluster)
    forget_keys()                                              # the executors read with the option's keys
    committed = spark.read.format("kafka-log").options(**_opts(a, isolationLevel="read_committed")).load()
    assert sorted(r["offset"] for r in committed.select("offset").collect()) == [
        o for o, _, _ in expected(a.cluster, committed=True)]


def test_without_the_key_the_read_names_the_key_id(tmp_path: Path) -> None:
    a = aiven_cluster(tmp_path, "zstd-encrypted")
    opts = _opts(a)
    del opts["remoteStorageKey"]
    with pytest.raises(KafkaFormatError, match=r"rsm-manifest.*key id 'key-b'|'key-b'.*remoteStorageKey"):
        _local(opts)
    assert rows(_local({**opts, "remoteStorageKey": KEY_B})) == expected(a.cluster)


def test_permissive_reads_report_a_segment_whose_upload_stopped(tmp_path: Path) -> None:
    a = aiven_cluster(tmp_path, "zstd")
    a.object(0, ".rsm-manifest").unlink()
    with pytest.raises(KafkaFormatError, match="cannot be read"):
        _local(_opts(a))
    table = _local(_opts(a, mode="PERMISSIVE"))
    (bad,) = [x for x in table.column("_corrupt").to_pylist() if x is not None]
    assert bad["file"] == str(a.object(0, ".log")) and bad["length"] == a.cluster.uploaded[0].segment_size_in_bytes
    assert "objects missing: .rsm-manifest" in bad["reason"]
    assert rows(table.filter(table.column("_corrupt").is_null())) == expected(a.cluster, 40)


def test_the_remote_tier_in_a_bucket(tmp_path: Path, moto_s3: Any) -> None:
    """Aiven's S3 backend writes the same keys into a bucket: read through ``s3://`` (credentials in the
    URI never shown) and through ``s3a://`` with S3A's settings."""
    from s3store import KEY, SECRET, SECRET_IN_URI

    a = aiven_cluster(tmp_path, "encrypted")
    bucket = moto_s3.bucket("aiven-tier", {"cluster-x": a.root})
    store = f"s3://{KEY}:{SECRET_IN_URI}@{bucket}/cluster-x?{moto_s3.query}"
    table = _local(_opts(a, remoteStorage=store))
    assert rows(table) == expected(a.cluster)
    shown = [str(v) for v in table.column("logDir").to_pylist()]
    assert any(bucket in v for v in shown) and all(SECRET not in v and SECRET_IN_URI not in v for v in shown)
    from kafka_format.storage import s3a

    s3a.use_settings(moto_s3.hadoop_settings(bucket))
    try:
        assert rows(_local(_opts(a, remoteStorage=f"s3a://{bucket}/cluster-x"))) == expected(a.cluster)
    finally:
        s3a.use_settings(None)


# ------------------------------------------------------------------------------- the jobs


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_export_of_the_whole_history(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    from test_export_job import read_parquet_dir, run_export

    if engine == "spark":
        request.getfixturevalue("spark")
    a = aiven_cluster(tmp_path, "zstd-encrypted")
    keys = [x for k in a.keys for x in ("--remote-storage-key", k)]
    assert run_export(a.cluster.log_dir, "--topic", "orders", "--remote-storage", a.root,
                      "--remote-storage-format", "aiven", *keys, "--engine", engine, "--out", tmp_path / "out") == 0
    got = sorted((r["offset"], r["value"], r["tier"]) for r in read_parquet_dir(tmp_path / "out"))
    assert got == expected(a.cluster)


def test_offsets_audit_and_the_table_view(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``klogs offsets`` answers a timestamp from the Aiven segment's time index and batches, ``klogs
    audit`` checks the remote segments as the local ones (no finding on a clean store, a truncated object
    found), ``klogs compaction --mode full`` decides over both tiers."""
    import pyarrow.dataset as ds

    from kafka_format.jobs.audit import main as audit_main
    from kafka_format.jobs.compaction import main as compaction_main
    from kafka_format.jobs.offsets import main as offsets_main

    a = aiven_cluster(tmp_path, "encrypted")
    keys = [x for k in a.keys for x in ("--remote-storage-key", k)]
    remote = ["--remote-storage", str(a.root), *keys]
    assert offsets_main([str(a.cluster.log_dir), "--topic", "orders", "--timestamp", str(timestamp_of(45)),
                         "--timestamp", str(timestamp_of(7)), *remote, "--format", "jsonl"]) == 0
    answers = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["offset"], r["leaderEpoch"]) for r in answers] == [(45, 0), (7, 0)]

    now = 1_700_000_000_000 + 20_000_000
    assert audit_main([str(a.cluster.log_dir), "--topic", "orders", "--out", str(tmp_path / "audit"),
                       "--format", "json", *remote, "--now", str(now)]) == 0
    clean = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert not [r for r in clean if r["severity"] == "error" or r["check"].startswith("remote-")]

    out = tmp_path / "table"
    assert compaction_main([str(a.cluster.log_dir), "--topic", "orders", "--mode", "full", "--out", str(out),
                            *remote]) == 0
    decided = ds.dataset(str(out / "records"), format="parquet").to_table().to_pylist()
    latest: dict[int, int] = {}
    for o, _ in a.cluster.rows:
        if o not in a.cluster.aborted:
            latest[o % 7] = o
    assert sorted(r["offset"] for r in decided if r["decision"] == "keep") == sorted(latest.values())

    log = a.object(40, ".log")
    log.write_bytes(log.read_bytes()[:-10])
    shutil.rmtree(tmp_path / "audit")
    assert audit_main([str(a.cluster.log_dir), "--topic", "orders", "--out", str(tmp_path / "audit"),
                       "--format", "json", *remote, "--now", str(now)]) == 1
    damaged = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [r["check"] for r in damaged if r["check"].startswith("remote-")] == ["remote-files-missing"]
