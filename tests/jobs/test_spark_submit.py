"""The documented way to run a job on a user's own Spark: the README's ``spark-submit --packages``
command, run as written (pyspark's own ``spark-submit``), from ``s3a://`` to a Delta table on
``s3a://``.

The packages, exclusions and settings are read from the README's block (and docs/jobs/export.md
must show the same), so the test fails when the documentation and the code drift apart; only the
master, the store's endpoint and the locations are the test's.  Credentials come from an AWS
profile (``AWS_SHARED_CREDENTIALS_FILE`` / ``AWS_PROFILE``), which both S3A and the source's
workers must find: the store (tests/s3store.py) refuses any request not signed with its key.
Oracle: aiokafka's decoding of the exported log dir, against the table read by delta-rs from
the objects boto3 downloads.  This is the suite's one extra JVM for ``s3a://`` (its own jars and
settings, launched as a user launches it).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from s3store import KEY, SECRET
from test_export_job import assert_exactly, oracle, read_delta, write_log_dir
from testhelpers import own_spark_env

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
BUCKET = "submitted"


def documented_command(text: str) -> list[str]:
    """The ``spark-submit ... jobs/export.py ... s3a://`` command of a Markdown text, as argv."""
    for block in fenced_blocks(text):
        if block.startswith("spark-submit") and "s3a://" in block and "jobs/export.py" in block:
            return shlex.split(block.replace("\\\n", " "))
    raise AssertionError("no spark-submit block with s3a:// for jobs/export.py")


def fenced_blocks(text: str) -> list[str]:
    """The contents of the fenced code blocks of a Markdown text."""
    blocks, current = [], None
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            if current is None:
                current = []
            else:
                blocks.append("".join(current))
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def flag_values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_docs_show_the_packages_klogs_resolves() -> None:
    from kafka_format.spark.delta import SQL_CONF, delta_package
    from kafka_format.spark.s3a import EXCLUDES, packages

    readme = documented_command((REPO / "README.md").read_text(encoding="utf-8"))
    assert documented_command((REPO / "docs" / "jobs" / "export.md").read_text(encoding="utf-8")) == readme
    (pkgs,), (excludes,) = flag_values(readme, "--packages"), flag_values(readme, "--exclude-packages")
    assert pkgs.split(",") == [delta_package(), *packages()]
    assert excludes.split(",") == list(EXCLUDES)
    assert dict(c.split("=", 1) for c in flag_values(readme, "--conf")) == SQL_CONF


def test_the_sdk_modules_are_at_the_version_hadoop_aws_names() -> None:
    """hadoop-aws's own descriptor (resolved by ``make setup`` into Ivy's cache) names the SDK
    bundle version that :data:`HADOOP_AWS_SDK` must give the modules klogs takes instead."""
    from kafka_format.spark.s3a import HADOOP_AWS_SDK, hadoop_version

    version = hadoop_version()
    descriptor = Path.home() / ".ivy2.5.2" / "cache" / "org.apache.hadoop" / "hadoop-aws" / f"ivy-{version}.xml"
    if not descriptor.is_file():
        pytest.skip(f"{descriptor} not resolved (make setup resolves it)")
    bundle = re.search(r'<dependency org="software\.amazon\.awssdk" name="bundle" rev="([^"]+)"',
                       descriptor.read_text(encoding="utf-8"))
    assert bundle is not None and HADOOP_AWS_SDK[version] == bundle.group(1)


def test_the_readme_spark_submit_exports_s3a_to_a_delta_table(moto_s3, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import pyspark

    logs = write_log_dir(tmp_path / "logs")
    moto_s3.bucket(BUCKET, {"backups/kafka-logs": logs})
    argv = documented_command((REPO / "README.md").read_text(encoding="utf-8"))
    script = argv.index("jobs/export.py")
    job_args = [a.replace("s3a://backups/", f"s3a://{BUCKET}/backups/").replace("s3a://lake/", f"s3a://{BUCKET}/lake/")
                for a in argv[script + 1:]]
    endpoint = [a for k, v in moto_s3.hadoop_settings(BUCKET, credentials=False).items()
                for a in ("--conf", f"spark.hadoop.{k}={v}")]
    credentials = tmp_path / "aws-credentials"
    credentials.write_text(f"[klogs-tests]\naws_access_key_id = {KEY}\naws_secret_access_key = {SECRET}\n")
    env = own_spark_env("AWS_")
    env.update(AWS_SHARED_CREDENTIALS_FILE=str(credentials), AWS_PROFILE="klogs-tests", AWS_REGION="us-east-1",
               AWS_EC2_METADATA_DISABLED="true", PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               KLOGS_LOG_DIR=str(tmp_path / "klogs-logs"))
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    command = [str(submit), "--master", "local[1]", "--conf", "spark.ui.enabled=false", *endpoint,
               *argv[1:script], str(REPO / "jobs" / "export.py"), *job_args]
    proc = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900,
                          start_new_session=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = proc.stdout.strip().splitlines()[-1]
    assert '"engine": "spark"' in result and '"writer": "delta-spark"' in result and f'"out": "s3a://{BUCKET}/lake/kafka"' in result
    table = moto_s3.download(BUCKET, "lake/kafka", tmp_path / "table")
    assert_exactly(read_delta(table), oracle(logs))
