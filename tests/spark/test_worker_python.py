"""``register(spark)`` on a session whose Python workers would start an interpreter without pyarrow.

The worker interpreter is a bare virtualenv (``python -m venv --without-pip``: the standard
library only).  A driver in a subprocess (one SparkContext per process) builds plain sessions the
way a user does (``SparkSession.builder``, ``PYSPARK_PYTHON`` pointing at the bare interpreter):

* ``local[1]``: ``register`` warns in one line and the source reads every record (oracle: the
  format core's decode of the same files in the driver); the job runtime's Spark executor runs its
  tasks with the driver's interpreter too;
* ``local-cluster[1,1,1024]`` (executors in their own JVMs: a cluster as far as the check knows):
  ``register`` and the job runtime's Spark executor raise one clear error naming the interpreter
  and the fix, before any query or task.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from clusters import SPARK_HOME

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"

DRIVER = r"""
import json, sys
from pyspark.sql import SparkSession
from kafka_format import decode_file
from kafka_format.spark import register
from kafka_format.spark.executor import SparkExecutor
from kafka_format.spark.workers import WorkerPythonError

samples = sys.argv[1]
out = {}
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
register(spark)
print("REGISTERED", file=sys.stderr, flush=True)
topics = ["compacted", "transactions", "legacy-v0", "legacy-v1"]   # whole files (log start offset 0)
df = (spark.read.format("kafka-log").option("includeControlRecords", "true").option("replicas", "all")
      .option("topics", ",".join(topics)).load(samples))
out["local_rows"] = df.count()
import pathlib
out["oracle_rows"] = sum(b.num_rows for p in sorted(pathlib.Path(samples).rglob("*.log"))
                         if p.parent.name.rsplit("-", 1)[0] in topics for b in decode_file(str(p)))
probe = lambda t: (t, __import__("pyarrow").__version__, __import__("kafka_format").__name__)
out["executor"] = list(SparkExecutor(spark).map(probe, [0, 1]))
spark.stop()
spark = (SparkSession.builder.master("local-cluster[1,1,1024]").config("spark.ui.enabled", "false")
         .config("spark.task.maxFailures", "1").getOrCreate())
try:
    register(spark)
    out["cluster"] = None
except WorkerPythonError as exc:
    out["cluster"] = str(exc)
try:
    list(SparkExecutor(spark).map(probe, [0]))
    out["cluster_executor"] = None
except WorkerPythonError as exc:
    out["cluster_executor"] = str(exc)
spark.stop()
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, str]:
    """(the driver's RESULT, its stderr, the bare interpreter)."""
    root = tmp_path_factory.mktemp("bare")
    venv.EnvBuilder(with_pip=False).create(root / "venv")
    bare = str(root / "venv" / "bin" / "python")
    assert subprocess.run([bare, "-c", "import pyarrow"], capture_output=True).returncode != 0
    env = {**os.environ, "PYSPARK_PYTHON": bare, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(SAMPLES)], capture_output=True, text=True,
                          timeout=600, cwd=root, env=env)
    results = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and results, proc.stderr[-5000:]
    return json.loads(results[-1][len("RESULT "):]), proc.stderr, bare


def test_local_session_runs_the_source_with_the_drivers_interpreter_and_says_so_once(run) -> None:  # type: ignore[no-untyped-def]
    out, stderr, bare = run
    assert out["local_rows"] == out["oracle_rows"] > 0
    before = stderr.split("REGISTERED", 1)[0]
    warnings = [line for line in stderr.splitlines() if line.startswith("WARNING kafka-log:")]
    assert len(warnings) == 1 and warnings[0] in before
    assert bare in warnings[0] and "cannot import" in warnings[0] and sys.executable in warnings[0]


def test_the_runtime_executor_runs_its_tasks_with_the_drivers_interpreter_in_local_mode(run) -> None:  # type: ignore[no-untyped-def]
    import pyarrow

    out, _, _ = run
    assert out["executor"] == [[0, pyarrow.__version__, "kafka_format"], [1, pyarrow.__version__, "kafka_format"]]


def test_cluster_session_raises_one_error_naming_the_interpreter_and_the_fix(run) -> None:  # type: ignore[no-untyped-def]
    out, _, bare = run
    message = out["cluster"]
    assert message is not None
    assert bare in message and "executors" in message and "cannot import" in message
    assert "spark.pyspark.python" in message and "PYSPARK_PYTHON" in message
    assert "\n" not in message
    assert out["cluster_executor"] == message
