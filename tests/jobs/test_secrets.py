"""Credentials given inside a URI (``s3://KEY:SECRET@bucket/...``) open the store and nothing else.

Every job reads ``data_samples/logdirs`` from a local S3-compatible server (moto, on loopback)
through a URI carrying an access key and a secret; each run must finish, and the secret must
appear in no byte of any file the job writes (Parquet, Delta log, checkpoints, JSON, HTML), in
none of its stdout/stderr, and not in the one-line error of a store that cannot be reached.
The redacted form (``KEY:***@``) must be what the outputs show, so the checks cannot pass by
writing nothing.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
BUCKET = "backups"
KEY = "AKIAKLOGSTESTKEY"
SECRET = "kl0gsS3cretValue+x"              # '+' percent-encoded in the URI; both forms are checked
SECRET_FORMS = (SECRET, SECRET.replace("+", "%2B"))
NOW = "2023-11-14T22:13:20Z"

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def store() -> Iterator[tuple[str, str]]:
    """(the S3 URI of data_samples/logdirs with KEY:SECRET inside, the URI options)."""
    boto3 = pytest.importorskip("boto3")
    moto_server = pytest.importorskip("moto.server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        client = boto3.client("s3", endpoint_url=f"http://{host}:{port}", region_name="us-east-1",
                              aws_access_key_id=KEY, aws_secret_access_key=SECRET)
        client.create_bucket(Bucket=BUCKET)
        for f in SAMPLES.rglob("*"):
            if f.is_file():
                client.upload_file(str(f), BUCKET, f"samples/{f.relative_to(SAMPLES).as_posix()}")
        query = f"endpoint_override={host}:{port}&scheme=http&region=us-east-1"
        yield f"s3://{KEY}:{SECRET_FORMS[1]}@{BUCKET}/samples?{query}", query
    finally:
        server.stop()


def leaks(root: Path) -> list[str]:
    """Files under ``root`` whose bytes hold the secret (in either form)."""
    found = []
    for f in sorted(root.rglob("*")):
        if f.is_file():
            data = f.read_bytes()
            if any(s.encode() in data for s in SECRET_FORMS):
                found.append(str(f.relative_to(root)))
    return found


def shown(text: str) -> bool:
    return any(s in text for s in SECRET_FORMS)


def run_job(name: str, args: list[str], capfd: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    job: Any = importlib.import_module(f"kafka_format.jobs.{name}")
    code = int(job.main(args))
    out, err = capfd.readouterr()
    return code, out, err


REDACTED_DIR = f"s3://{KEY}:***@{BUCKET}/samples/broker-1"


def test_redact_masks_the_secret_only() -> None:
    from kafka_format.storage.fsio import redact

    assert redact(f"s3://{KEY}:{SECRET}@b/x?region=r") == f"s3://{KEY}:***@b/x?region=r"
    assert redact("see s3://K:a/b+c@b/x and gs://u:p%2F@c/d") == "see s3://K:***@b/x and gs://u:***@c/d"
    assert redact('["s3://K:S1@b/x","s3://K:S2@b/y"]') == '["s3://K:***@b/x","s3://K:***@b/y"]'
    for kept in ("hdfs://namenode:8020/a@b", "s3://bucket/dir/a:b@c", "/var/lib/kafka@x", "hdfs://user@nn/x"):
        assert redact(kept) == kept


def test_errors_never_carry_the_secret() -> None:
    import pickle

    from kafka_format.common.errors import CorruptRecordError

    err = CorruptRecordError("bad", path=f"s3://{KEY}:{SECRET}@b/t-0/0.log", position=3)
    assert err.path == f"s3://{KEY}:***@b/t-0/0.log" and not shown(str(err))
    assert not shown(str(pickle.loads(pickle.dumps(err))))


def test_export_result_line_hides_an_output_uris_secret() -> None:
    from kafka_format.spark.export import ExportResult

    result = ExportResult(out=f"s3a://{KEY}:{SECRET}@{BUCKET}/out", format="parquet", partition_by=("topic",),
                          rows=1, files=1, batches=(), skipped=(), version=None, engine="spark")
    assert result.to_json()["out"] == f"s3a://{KEY}:***@{BUCKET}/out"


def test_every_job_keeps_the_secret_out_of_outputs_and_terminal(
        spark: Any, store: tuple[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    import pyarrow.dataset as ds

    uri, _ = store
    capfd.readouterr()
    runs = {
        "offsets": ("offsets", [uri, "--timestamp", "earliest", "--timestamp", "latest", "--format", "jsonl"]),
        "retention": ("retention", [uri, "--now", NOW, "--format", "jsonl", "--out", str(tmp_path / "retention")]),
        "compaction": ("compaction", [uri, "--now", NOW, "--topic", "compacted", "--out",
                                      str(tmp_path / "compaction")]),
        "audit": ("audit", [uri, "--now", NOW, "--fail-on", "never", "--out", str(tmp_path / "audit")]),
        "export": ("export", [uri, "--topic", "v2-codecs", "--option", "replicas=all", "--option", "mode=PERMISSIVE",
                              "--out", str(tmp_path / "export")]),
        "incremental": ("export", [uri, "--topic", "compacted", "--out", str(tmp_path / "incremental"),
                                   "--checkpoint", str(tmp_path / "checkpoint")]),
    }
    for label, (job, args) in runs.items():
        code, out, err = run_job(job, args, capfd)
        assert code == 0, (label, err)
        assert out, label
        assert not shown(out) and not shown(err), (label, out, err)
    assert leaks(tmp_path) == []
    # what the outputs show instead: the redacted location
    exported = ds.dataset(str(tmp_path / "export"), format="parquet", partitioning="hive").to_table()
    assert {d.split("?")[0] for d in exported.column("logDir").to_pylist()} == {
        REDACTED_DIR, REDACTED_DIR.replace("broker-1", "broker-2")}
    summary = (tmp_path / "retention" / "summary.json").read_text()
    assert f"s3://{KEY}:***@{BUCKET}/samples?" in summary
    assert REDACTED_DIR in (tmp_path / "compaction" / "summary.json").read_text()


def test_an_unreachable_store_fails_in_one_line_without_the_secret(tmp_path: Path) -> None:
    """Nothing listens on the endpoint: exit 2 before Spark starts, the line names the redacted URI."""
    import socket

    with socket.socket() as s:                       # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    uri = (f"s3://{KEY}:{SECRET_FORMS[1]}@{BUCKET}/samples?endpoint_override=127.0.0.1:{port}"
           f"&scheme=http&region=us-east-1")
    env = {**os.environ, "KLOGS_LOG_DIR": str(tmp_path / "logs"), "AWS_EC2_METADATA_DISABLED": "true"}
    proc = subprocess.run([sys.executable, "-c", "import sys; from kafka_format.cli import main; sys.exit(main())",
                           "retention", uri, "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"klogs retention: s3://{KEY}:***@{BUCKET}/samples"), line
    assert not shown(proc.stderr) and not shown(proc.stdout)
    assert leaks(tmp_path) == []
