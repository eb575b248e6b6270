"""Log dirs in object storage: an S3-compatible server (moto, in this process, on loopback).

The data is uploaded with boto3; the source reads it through ``pyarrow.fs`` from the URI the
user gives (credentials and endpoint in the URI, so Spark's Python workers reach the same
store).  Oracle: the same files read from the local disk, which test_acceptance checks against
the format core's decode; and the rows written by kafka-python's encoder for the planner test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chispa import assert_df_equality

from test_acceptance import segment_digest
from test_planning import simple_specs, write_partition

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
BUCKET = "logs"


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """(URI of data_samples/logdirs in S3, URI of a generated log dir, its written partition)."""
    boto3 = pytest.importorskip("boto3")
    moto_server = pytest.importorskip("moto.server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        client = boto3.client("s3", endpoint_url=f"http://{host}:{port}", region_name="us-east-1",
                              aws_access_key_id="testing", aws_secret_access_key="testing")
        client.create_bucket(Bucket=BUCKET)
        gen = tmp_path_factory.mktemp("s3gen")
        written = write_partition(gen, "s3t", 0, simple_specs(40), segment_bytes=20_000, hw=100)
        for local, prefix in ((SAMPLES, "samples"), (gen, "gen")):
            for f in local.rglob("*"):
                if f.is_file():
                    client.upload_file(str(f), BUCKET, f"{prefix}/{f.relative_to(local).as_posix()}")
        query = f"endpoint_override={host}:{port}&scheme=http&region=us-east-1"
        yield (f"s3://testing:testing@{BUCKET}/samples?{query}", f"s3://testing:testing@{BUCKET}/gen?{query}",
               written)
    finally:
        server.stop()


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


def test_spark_reads_s3_like_local_disk(spark, s3) -> None:  # type: ignore[no-untyped-def]
    """Two brokers' log dirs under one S3 prefix read through Spark equal the local read."""
    from pyspark.sql import functions as F

    uri, _, _ = s3

    def read(path: str):  # type: ignore[no-untyped-def]
        return (spark.read.format("kafka-log").option("replicas", "all").option("includeControlRecords", "true")
                .option("maxBytesPerPartition", "65536").load(path))

    remote = read(uri)
    local = read(str(SAMPLES))
    assert {r["logDir"].split("?")[0] for r in remote.select("logDir").distinct().collect()} == {
        f"s3://testing:***@{BUCKET}/samples/broker-1", f"s3://testing:***@{BUCKET}/samples/broker-2"}
    strip = F.regexp_extract("logDir", r"/(broker-\d+)", 1)
    assert_df_equality(segment_digest(remote.withColumn("logDir", strip)),
                       segment_digest(local.withColumn("logDir", strip)))
