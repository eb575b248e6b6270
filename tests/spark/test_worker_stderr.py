"""A user's Spark script that queries the ``kafka-log`` source and stops prints no traceback.

A query with a limit (``show(3)``: the tutorial's step 6) ends its tasks once it has its rows: the JVM
closes the Python worker's socket while the worker may still be writing, and pyspark's daemon used to
print that worker's ``BrokenPipeError`` on stderr (:func:`kafka_format.spark.workers.quiet_closed_sockets`).
Each script is a driver process of its own (the daemon's stderr is the JVM's, which a test cannot
capture in the shared session's process): a plain ``SparkSession`` with ``register``, and
``build_session``.  The rows shown are checked against aiokafka's decoding of the segment.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from aiokafka.record.memory_records import MemoryRecords
from testhelpers import own_spark_env

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
SEGMENT = SAMPLES / "broker-1" / "v2-codecs-0" / "00000000000000000000.log"

QUERY = """
df = spark.read.format("kafka-log").load(sys.argv[1])
rows = df.where("topic = 'v2-codecs' AND partition = 0 AND offset >= 60").select("offset", "key")
rows.show(3)                                        # a limit: the tasks end before their rows do
print("ROWS", sorted((r.offset, None if r.key is None else bytes(r.key).decode()) for r in rows.orderBy("offset").limit(3).collect()))
print("COUNT", df.count())
spark.stop()
"""
SCRIPTS = {
    "plain-session": "import sys\nfrom pyspark.sql import SparkSession\nimport kafka_format.spark\n"
                     "spark = SparkSession.builder.master('local[2]').config('spark.ui.enabled', 'false')"
                     ".config('spark.sql.session.timeZone', 'UTC').getOrCreate()\n"
                     "kafka_format.spark.register(spark)\n" + QUERY,
    "build-session": "import sys\nfrom kafka_format.spark.session import build_session\n"
                     "spark = build_session(master='local[2]', extra_conf={'spark.ui.enabled': 'false'})\n" + QUERY,
}


def _expected() -> list[tuple[int, str | None]]:
    """(offset, key) of offsets 60, 61, 62 of v2-codecs-0, decoded by aiokafka."""
    found = []
    records = MemoryRecords(SEGMENT.read_bytes())
    while (batch := records.next_batch()) is not None:
        found += [(r.offset, None if r.key is None else bytes(r.key).decode()) for r in batch if r.offset >= 60]
    return sorted(found)[:3]


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_script_querying_the_source_with_a_limit_ends_without_a_traceback(script: str, tmp_path: Path) -> None:
    path = tmp_path / f"{script}.py"
    path.write_text(SCRIPTS[script])
    env = {**own_spark_env(), "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, str(path), str(SAMPLES)], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path, env=env, start_new_session=True)
    assert done.returncode == 0, done.stderr[-4000:]
    assert f"ROWS {_expected()!r}" in done.stdout and "only showing top 3 rows" in done.stdout
    assert int(done.stdout.split("COUNT ", 1)[1].split()[0]) > 0
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr[-4000:]


def test_outside_a_daemon_worker_tracebacks_print_as_ever() -> None:
    """In any other process (this driver) importing the package changes nothing."""
    import traceback

    import kafka_format.spark
    from kafka_format.spark.workers import quiet_closed_sockets

    quiet_closed_sockets()
    assert kafka_format.spark.FORMAT == "kafka-log"
    assert not getattr(traceback.print_exc, "_quiet_closed_sockets", False)
