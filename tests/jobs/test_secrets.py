"""Credentials given inside a URI (``s3://KEY:SECRET@bucket/...``, ``s3a://KEY:SECRET@bucket/...``)
open the store and nothing else.

Every job reads ``data_samples/logdirs`` from the run's S3-compatible server (moto, on loopback;
tests/s3store.py), which accepts only requests signed with its one key, through a URI carrying that
key and its secret; each run must finish (so the URI's credentials were used), and the secret must
appear in no byte of any file the job writes -- local outputs, and every object the ``s3a://`` runs
publish (Parquet, Delta log, checkpoints, JSON, HTML) -- in none of its stdout/stderr, not in the
one-line error of a store that cannot be reached, not in the traceback of an unexpected error, and
not in what Spark keeps of the jobs' queries (plans, job descriptions).
The redacted form (``KEY:***@``) must be what the outputs show, so the checks cannot pass by
writing nothing.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from s3store import KEY, SECRET, SECRET_IN_URI, use_s3a

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
BUCKET = "backups"
SECRET_FORMS = (SECRET, SECRET_IN_URI, SECRET.replace("/", "%2F"), SECRET.replace("+", "%2B"))
NOW = "2023-11-14T22:13:20Z"

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def store(moto_s3) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """(the s3:// URI of data_samples/logdirs with KEY:SECRET inside, the same as s3a://)."""
    moto_s3.bucket(BUCKET, {"samples": SAMPLES})
    return (f"s3://{KEY}:{SECRET_IN_URI}@{BUCKET}/samples?{moto_s3.query}",
            f"s3a://{KEY}:{SECRET_IN_URI}@{BUCKET}/samples")


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
PUBLISHED = ("audit", "compaction", "export", "delta-incremental", "checkpoint")


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
                          rows=1, files=1, batches=(), replayed_batches=(), version=None, engine="spark",
                          skipped_ranges=({"file": f"s3://{KEY}:{SECRET}@{BUCKET}/t-0/0.log", "position": 5,
                                           "length": 7, "reason": "CRC mismatch"},))
    line = result.to_json()
    assert line["out"] == f"s3a://{KEY}:***@{BUCKET}/out"
    assert line["skipped_ranges"] == [{"file": f"s3://{KEY}:***@{BUCKET}/t-0/0.log", "position": 5, "length": 7,
                                       "reason": "CRC mismatch"}]
    assert not shown(json.dumps(line))


def job_runs(uri: str, out: str) -> dict[str, tuple[str, list[str]]]:
    """Every job over ``uri``, its outputs under ``out``."""
    return {
        "offsets": ("offsets", [uri, "--timestamp", "earliest", "--timestamp", "latest", "--format", "jsonl"]),
        "retention": ("retention", [uri, "--now", NOW, "--format", "jsonl", "--out", f"{out}/retention"]),
        "compaction": ("compaction", [uri, "--now", NOW, "--topic", "compacted", "--out", f"{out}/compaction"]),
        "audit": ("audit", [uri, "--now", NOW, "--fail-on", "never", "--out", f"{out}/audit"]),
        "export": ("export", [uri, "--topic", "v2-codecs", "--option", "replicas=all", "--option", "mode=PERMISSIVE",
                              "--out", f"{out}/export"]),
        "incremental": ("export", [uri, "--topic", "compacted", "--out", f"{out}/incremental",
                                   "--checkpoint", f"{out}/checkpoint"]),
    }


def test_every_job_keeps_the_secret_out_of_outputs_and_terminal(
        spark: Any, store: tuple[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    import pyarrow.dataset as ds

    uri, _ = store
    capfd.readouterr()
    for label, (job, args) in job_runs(uri, str(tmp_path)).items():
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


def test_s3a_jobs_keep_the_secret_out_of_published_objects_and_terminal(
        spark: Any, moto_s3: Any, store: tuple[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:

    """``s3a://KEY:SECRET@`` in and out: S3A has only the bucket's endpoint, the key comes from the
    URI; no object the jobs publish, no local file, no line shows the secret."""
    _, uri = store
    out = f"s3a://{KEY}:{SECRET_IN_URI}@{BUCKET}/published"
    use_s3a(spark, moto_s3.hadoop_settings(BUCKET, credentials=False))
    every = job_runs(uri, out)          # offsets and retention read as the others do, and write no other kind
    runs = {k: every[k] for k in ("compaction", "audit", "export")}
    runs["incremental"] = ("export", [uri, "--topic", "compacted", "--format", "delta", "--out",
                                      f"{out}/delta-incremental", "--checkpoint", f"{out}/checkpoint"])
    capfd.readouterr()
    for label, (job, args) in runs.items():
        code, stdout, err = run_job(job, args, capfd)
        assert code == 0, (label, err)
        assert stdout, label
        assert not shown(stdout) and not shown(err), (label, stdout, err)
    published = moto_s3.objects(BUCKET, "published/")
    assert {k.split("/")[1] for k in published} == set(PUBLISHED), sorted(published)
    assert [k for k, data in published.items() if any(f.encode() in data for f in SECRET_FORMS)] == []
    assert leaks(tmp_path) == []
    shown_as = f"s3a://{KEY}:***@{BUCKET}/samples/broker-1".encode()
    assert shown_as in published["published/compaction/summary.json"]
    assert any(shown_as in data for k, data in published.items() if k.startswith("published/export/"))
    # what Spark itself keeps of the runs (its SQL UI, listeners and event logs show it): the writes'
    # plans name their outputs, without the credentials (the batch Parquet export's files are written
    # by its tasks, not by a Spark writer: no plan of Spark's names that output)
    texts = spark_texts(spark)
    assert not [t for t in texts if shown(t)]
    assert any(f"s3a://{BUCKET}/published/delta-incremental" in t for t in texts)


def spark_texts(spark: Any) -> list[str]:
    """What the session's status store keeps of every query and job it ran: each SQL execution's
    description, call site and physical plan, each job's name and description."""
    texts: list[str] = []
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()
    for i in range(executions.size()):
        e = executions.apply(i)
        texts += [str(e.description()), str(e.details()), str(e.physicalPlanDescription())]
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    for i in range(jobs.size()):
        j = jobs.apply(i)
        texts += [str(j.name()), str(j.description())]
    return texts


def test_an_unexpected_error_shows_its_traceback_without_the_secret(store: tuple[str, str], tmp_path: Path) -> None:
    """A bug (not bad input) whose message and cause carry the location: Python's traceback, exit
    code 1, the location in it redacted (the local engine: no JVM)."""
    uri, _ = store
    code = ("import sys\n"
            "import kafka_format.engine.retention as r\n"
            "def bug(executor, logdirs, *a, **k):\n"
            "    try:\n"
            "        raise OSError(f'while listing {logdirs[0]}')\n"
            "    except OSError as cause:\n"
            "        raise RuntimeError(f'unexpected state of {logdirs[0]}') from cause\n"
            "r.retention_rows = bug\n"
            "from kafka_format.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-c", code, "retention", uri, "--engine", "local"], capture_output=True,
                          text=True, timeout=300, cwd=REPO, env={**os.environ, "AWS_EC2_METADATA_DISABLED": "true"})
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" in proc.stderr and "RuntimeError: unexpected state of" in proc.stderr
    assert f"OSError: while listing s3://{KEY}:***@{BUCKET}/samples" in proc.stderr
    assert not shown(proc.stderr) and not shown(proc.stdout)


def test_a_java_error_is_one_line_without_the_secret(spark: Any, store: tuple[str, str],
                                                     capfd: pytest.CaptureFixture[str]) -> None:
    """An unexpected Java exception naming the location (Py4J's error carries the Java message and
    stack trace, both with the secret): one line, redacted, exit 2."""
    from kafka_format.jobs.jobargs import EXIT_USAGE
    from kafka_format.jobs.jobargs import run_job as run

    _, uri = store
    jvm = spark.sparkContext._jvm
    capfd.readouterr()
    assert run(lambda: jvm.java.lang.Class.forName(uri), prog="probe") == EXIT_USAGE
    out, err = capfd.readouterr()
    (line,) = err.splitlines()
    assert "java.lang.ClassNotFoundException" in line and f"s3a://{KEY}:***@{BUCKET}/samples" in line
    assert not shown(out) and not shown(err)


def test_an_unreachable_store_fails_in_one_line_without_the_secret(tmp_path: Path) -> None:
    """Nothing listens on the endpoint: exit 2 before Spark starts, the line names the redacted URI."""
    port = free_port()
    uri = (f"s3://{KEY}:{SECRET_IN_URI}@{BUCKET}/samples?endpoint_override=127.0.0.1:{port}"
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


def test_an_unreachable_s3a_store_fails_in_one_line_without_the_secret(
        spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The same through S3A's settings (the endpoint of bucket ``nowhere`` is a dead port)."""
    use_s3a(spark, {"fs.s3a.bucket.nowhere.endpoint": f"http://127.0.0.1:{free_port()}",
                    "fs.s3a.bucket.nowhere.path.style.access": "true",
                    "fs.s3a.bucket.nowhere.endpoint.region": "us-east-1"})
    capfd.readouterr()
    code, out, err = run_job("retention", [f"s3a://{KEY}:{SECRET_IN_URI}@nowhere/samples", "--out",
                                           str(tmp_path / "out")], capfd)
    assert code == 2, err
    (line,) = err.splitlines()
    assert line.startswith(f"klogs retention: s3a://{KEY}:***@nowhere/samples"), line
    assert not shown(out) and not shown(err)
    assert leaks(tmp_path) == []


def free_port() -> int:
    """A loopback port nobody listens on."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
