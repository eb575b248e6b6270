"""Log dirs in object storage: the run's S3-compatible server (moto, tests/s3store.py), which
refuses any request not signed with its one key.

The data is uploaded with boto3; the source reads it through ``pyarrow.fs`` from the URI the user
gives: ``s3://KEY:SECRET@bucket/...?endpoint_override=...`` (pyarrow's options and credentials in
the URI, so Spark's Python workers reach the same store).  Oracle: the same files read
from the local disk, which test_acceptance checks against the format core's decode; and the rows
written by kafka-python's encoder for the planner test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chispa import assert_df_equality
from s3store import KEY, SECRET_IN_URI
from test_acceptance import segment_digest
from test_planning import simple_specs, write_partition

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
BUCKET = "object-store-reads"


@pytest.fixture(scope="module")
def s3(moto_s3, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """(URI of data_samples/logdirs in S3, URI of a generated log dir, its written partition)."""
    gen = tmp_path_factory.mktemp("s3gen")
    written = write_partition(gen, "s3t", 0, simple_specs(40), segment_bytes=20_000, hw=100)
    moto_s3.bucket(BUCKET, {"samples": SAMPLES, "gen": gen})
    auth = f"{KEY}:{SECRET_IN_URI}@"
    return (f"s3://{auth}{BUCKET}/samples?{moto_s3.query}", f"s3://{auth}{BUCKET}/gen?{moto_s3.query}", written)


def test_planner_reads_s3_uri(s3) -> None:  # type: ignore[no-untyped-def]
    from kafka_format.read.planning import PlanOptions, open_partitions, plan_splits
    from kafka_format.spark.datasource import read_split
    from kafka_format.spark.options import parse_options

    _, uri, w = s3
    reps = open_partitions([uri])
    assert [(r.topic, r.partition, r.high_watermark) for r in reps] == [("s3t", 0, 100)]
    assert reps[0].segments[0].log_path.endswith("00000000000000000000.log?" + uri.split("?")[1])
    splits = plan_splits(reps, PlanOptions(max_bytes_per_partition=8000))
    assert len(splits) > 2
    opts = parse_options({"path": uri})
    got = sorted(o for sp in splits for b in read_split(sp, opts) for o in b.column("offset").to_pylist())
    assert got == [r.offset for r in w.rows]


def _read(spark, path: str):  # type: ignore[no-untyped-def]
    return (spark.read.format("kafka-log").option("replicas", "all").option("includeControlRecords", "true")
            .option("maxBytesPerPartition", "65536").load(path))


def test_spark_reads_object_storage_like_local_disk(spark, s3) -> None:  # type: ignore[no-untyped-def]
    """Two brokers' log dirs under one prefix read through Spark equal the local read (``s3a://``
    through S3A's settings: tests/jobs/test_s3a_jobs.py, every job and the export against aiokafka)."""
    from pyspark.sql import functions as F

    uri, shown = s3[0], f"s3://{KEY}:***@{BUCKET}/samples"
    remote = _read(spark, uri)
    local = _read(spark, str(SAMPLES))
    assert {r["logDir"].split("?")[0] for r in remote.select("logDir").distinct().collect()} == {
        f"{shown}/broker-1", f"{shown}/broker-2"}
    strip = F.regexp_extract("logDir", r"/(broker-\d+)", 1)
    assert_df_equality(segment_digest(remote.withColumn("logDir", strip)),
                       segment_digest(local.withColumn("logDir", strip)))
