"""Every job reading log dirs from ``s3a://`` and writing its output to ``s3a://``, on the shared
session (it carries hadoop-aws) against the run's moto server, which refuses any request not
signed with its one key: here the key comes from Hadoop's settings (``fs.s3a.bucket.<b>.*`` on the
session), as a Spark user configures S3A.

Oracles: the same job on the same files from the local disk into a local directory (the local
outputs are checked against Kafka's rules by each job's own tests), with locations rewritten;
aiokafka's decoding of the exported log dir for the exports.  The published objects are read
back with boto3, independently of klogs and Hadoop.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from s3store import KEY, SECRET_IN_URI, use_s3a
from test_compaction_job import CONFIG_FILE, NOW, OVERRIDES
from test_export_job import (
    append_records,
    assert_exactly,
    oracle,
    read_delta,
    read_parquet_dir,
    write_log_dir,
)
from testhelpers import own_spark_env

from kafka_format.storage.s3a import CONF_ENV as S3A_CONF_ENV

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
BUCKET = "s3a-jobs"
S3A = f"s3a://{BUCKET}"


@pytest.fixture(scope="module")
def store(spark, moto_s3, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The bucket with data_samples under ``samples/`` and an export log dir under ``orders/``;
    S3A's settings for it on the shared session."""
    logs = write_log_dir(tmp_path_factory.mktemp("s3a-orders") / "logs")
    moto_s3.bucket(BUCKET, {"samples": SAMPLES, "orders": logs})
    use_s3a(spark, moto_s3.hadoop_settings(BUCKET))
    return moto_s3, logs


def klogs(*argv: str) -> int:
    """``klogs ARGV`` in this process (the shared session is the active one)."""
    from kafka_format.cli import main

    return main([str(a) for a in argv])


def fetched(store, prefix: str, dest: Path) -> Path:  # type: ignore[no-untyped-def]
    moto_s3, _ = store
    return moto_s3.download(BUCKET, prefix, dest)


def localised(text: str) -> str:
    return text.replace(f"{S3A}/samples", str(SAMPLES))


# --- reports ------------------------------------------------------------------------------------
JOBS = {      # retention: not legacy-v0, whose segments have no timestamps (Kafka takes the file's mtime: the upload's)
    "retention": ["retention", "--now", str(NOW), "--format", "jsonl", "--topic-pattern", "(?!legacy-v0).*"],
    "audit": ["audit", "--now", str(NOW), "--fail-on", "never", "--format", "json"],
    "compaction": ["compaction", "--topic", "compacted", "--topic", "transactions", "--now", str(NOW),
                   "--config-file", str(CONFIG_FILE), *[a for o in OVERRIDES for a in ("--config", o)],
                   "--write-segments"],
    "groups": ["groups", "--now", str(NOW), "--format", "jsonl"],
}
TEXT_OUTPUTS = {"retention": ["segments.jsonl", "summary.json", "disk-usage.html"], "audit": ["report.html"],
                "compaction": ["summary.json"], "groups": ["groups.jsonl", "summary.json", "report.html"]}
PARQUET_OUTPUTS = {"retention": [], "audit": ["findings", "files"], "compaction": ["records"], "groups": []}


def rows(directory: Path) -> list[str]:
    table = pq.read_table(directory)
    return sorted(localised(json.dumps(r, sort_keys=True, default=str)) for r in table.to_pylist())


@pytest.mark.parametrize("job", list(JOBS))
def test_reports_from_and_to_s3a_equal_the_local_run(store, tmp_path: Path, capsys, job: str) -> None:  # type: ignore[no-untyped-def]
    name, *flags = JOBS[job]
    local = tmp_path / "local"
    assert klogs(name, str(SAMPLES), *flags, "--out", str(local)) in (0, 1)
    local_out = capsys.readouterr().out
    assert klogs(name, f"{S3A}/samples", *flags, "--out", f"{S3A}/reports/{job}") in (0, 1)
    remote_out = capsys.readouterr().out
    assert localised(remote_out).replace(f"results: {S3A}/reports/{job}", f"results: {local}") == local_out
    remote = fetched(store, f"reports/{job}", tmp_path / "remote")
    listing = sorted(p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file())
    assert sorted(p.relative_to(remote).as_posix() for p in remote.rglob("*") if p.is_file()) == listing
    for name_ in TEXT_OUTPUTS[job]:
        assert localised((remote / name_).read_text()) == (local / name_).read_text(), name_
    for name_ in PARQUET_OUTPUTS[job]:
        assert rows(remote / name_) == rows(local / name_), name_
    for seg in (local / "segments").rglob("*") if job == "compaction" else []:
        if seg.is_file():                                       # the cleaned log dirs, byte for byte
            assert (remote / seg.relative_to(local)).read_bytes() == seg.read_bytes()
    marker = json.loads((remote / ".klogs-output").read_text())
    assert (marker["job"], marker["state"]) == (name, "complete")


def test_a_report_is_not_written_over_what_klogs_did_not_write(store, capsys) -> None:  # type: ignore[no-untyped-def]
    moto_s3, _ = store
    moto_s3.client().put_object(Bucket=BUCKET, Key="someone/else.csv", Body=b"theirs")
    assert klogs("retention", f"{S3A}/samples", "--now", str(NOW), "--out", f"{S3A}/someone") == 2
    (line,) = capsys.readouterr().err.splitlines()[-1:]
    assert line.startswith(f"klogs retention: {S3A}/someone: refusing to replace it") and "else.csv" in line
    assert moto_s3.objects(BUCKET, "someone/") == {"someone/else.csv": b"theirs"}


# --- export ---------------------------------------------------------------------------------------
def test_parquet_export_to_s3a_is_published_whole(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Staged under OUT/_klogs_staging, copied into place, marker last (replacing a previous output:
    tests/format/test_object_store_outputs.py); every record once."""
    moto_s3, logs = store
    assert klogs("export", f"{S3A}/orders", "--out", f"{S3A}/export/parquet", "--key-as", "string",
                 "--engine", "spark") == 0
    got = fetched(store, "export/parquet", tmp_path / "parquet")
    assert_exactly(read_parquet_dir(got), oracle(logs))
    names = sorted(p.relative_to(got).as_posix() for p in got.rglob("*") if p.is_file())
    assert names[:2] == [".klogs-output", "_SUCCESS"] and all(n.endswith(".parquet") for n in names[2:])
    assert json.loads((got / ".klogs-output").read_text())["state"] == "complete"
    assert not moto_s3.objects(BUCKET, "export/parquet/_klogs_staging")


def test_a_fresh_klogs_process_hands_uri_credentials_to_its_tasks(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``klogs export s3a://KEY:SECRET@bucket/... --engine spark`` in a process of its own (the
    endpoint from the profile's ``spark.hadoop.fs.s3a.*``, the key from the URI): the export's
    tasks, in Spark's Python workers of a session that registered no source, read every record --
    nothing here comes from the suite's shared session."""
    moto_s3, logs = store
    conf = tmp_path / "spark_conf"
    conf.mkdir()
    settings = moto_s3.hadoop_settings(BUCKET, credentials=False)
    (conf / "local.conf").write_text((REPO / "spark_conf" / "test.conf").read_text() + "".join(
        f"\nspark.hadoop.{k} {v}" for k, v in settings.items()) + "\n")
    env = {**own_spark_env(S3A_CONF_ENV), "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "KLOGS_SPARK_CONF_DIR": str(conf)}      # not the shared session's S3A settings: the child's own
    source = f"s3a://{KEY}:{SECRET_IN_URI}@{BUCKET}/orders"
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", "import sys; from kafka_format.cli import main; "
                           "sys.exit(main(sys.argv[1:]))", "export", source, "--out", str(out), "--engine", "spark",
                           "--master", "local[1]", "--key-as", "string"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["engine"] == "spark"
    assert_exactly(read_parquet_dir(out), oracle(logs))


def test_incremental_delta_export_to_s3a_is_exactly_once(store, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Two runs, the log dir grown in between, the checkpoint on s3a:// too (a batch Delta export to
    s3a://: tests/jobs/test_spark_submit.py)."""
    moto_s3, logs = store
    inc = ["export", f"{S3A}/orders", "--out", f"{S3A}/export/delta-inc", "--format", "delta",
           "--checkpoint", f"{S3A}/export/checkpoint"]
    capsys.readouterr()
    assert klogs(*inc) == 0
    append_records(logs, "orders", 0, 7)                       # the broker appended; the backup is re-synced
    moto_s3.upload(BUCKET, "orders", logs)
    assert klogs(*inc) == 0
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [(r["batches"], r["version"]) for r in results] == [([0], 0), ([1], 1)]
    assert_exactly(read_delta(fetched(store, "export/delta-inc", tmp_path / "inc")), oracle(logs))
    checkpoint = moto_s3.objects(BUCKET, "export/checkpoint/")
    assert {"export/checkpoint/commits/0", "export/checkpoint/commits/1"} <= set(checkpoint)
    assert json.loads(checkpoint["export/checkpoint/.klogs-output"])["kind"] == "checkpoint"


def test_incremental_parquet_to_s3a_is_refused_before_spark(store, capsys) -> None:  # type: ignore[no-untyped-def]
    assert klogs("export", f"{S3A}/orders", "--out", f"{S3A}/export/inc-parquet",
                 "--checkpoint", f"{S3A}/export/inc-parquet-ckpt") == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "incremental Parquet export" in line and "--format delta" in line
    moto_s3, _ = store
    assert not moto_s3.objects(BUCKET, "export/inc-parquet")

