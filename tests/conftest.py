"""Shared fixtures: real broker data from ../shared, one Spark session per run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("KLA_SHARED_DIR", REPO.parent / "shared"))
REALDATA = SHARED / "realdata"
SAMPLES = REPO / "data_samples"

# The suite starts some 40 Spark JVMs (the session, spark-submit jobs, crash scenarios, clusters),
# each on a few MB of data: C1 only and the serial collector cut a JVM's start-up CPU by a third
# (24 -> 16 CPU s for a session that runs one query, 2 cores) and change nothing Spark computes.
# Drivers take SPARK_SUBMIT_OPTS, the standalone daemons SPARK_DAEMON_JAVA_OPTS, executors
# spark.executor.extraJavaOptions (tests/spark/clusters.py).
TEST_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
os.environ["KLA_TEST_JVM_OPTS"] = TEST_JVM_OPTS
for _var in ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS"):
    os.environ[_var] = f"{os.environ.get(_var, '')} {TEST_JVM_OPTS}".strip()


def pytest_report_header(config: pytest.Config) -> list[str]:
    from kafka_format.records import implementation

    return [
        f"kafka_format decoder: {implementation.IMPLEMENTATION}",
        f"realdata: {REALDATA if REALDATA.is_dir() else 'absent (tests that need it skip)'}",
    ]


@pytest.fixture(scope="session")
def realdata() -> Path:
    """Root of ../shared/realdata (15 sets of real broker files); skips when absent."""
    if not REALDATA.is_dir():
        pytest.skip(f"real broker data not found at {REALDATA} (../shared is not beside the repo)")
    return REALDATA


def realdata_logs() -> list[Path]:
    """Every non-empty .log under realdata (for parametrisation; empty list when absent)."""
    if not REALDATA.is_dir():
        return []
    return sorted(p for p in REALDATA.rglob("*.log") if p.stat().st_size > 0)


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole run (starting one costs ~10 s)."""
    if os.environ.get("KLA_SANITIZED"):
        pytest.skip("make sanitize: Spark's JVM does not start with the sanitizer runtimes preloaded")
    pytest.importorskip("pyspark")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from kafka_format.spark.session import build_session

    session = build_session(master="local[2]", profile="test", s3a=True, delta=True)   # s3a:// and Delta tests share it
    yield session
    session.stop()


@pytest.fixture(scope="session")
def moto_s3():  # type: ignore[no-untyped-def]
    """One local S3-compatible server (moto) for the whole run (tests/s3store.py); each module takes
    its own bucket."""
    pytest.importorskip("boto3")
    pytest.importorskip("moto.server")
    from s3store import start

    yield from start()
