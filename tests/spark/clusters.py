"""Spark clusters started by the tests themselves, from the pyspark installation, on loopback.

* :class:`StandaloneCluster`: a standalone master and one worker (``bin/spark-class`` of the
  pyspark package, which sets ``SPARK_SCALA_VERSION`` so the worker can build executor class
  paths), ports chosen by the JVMs (``--port 0``), readiness read from their logs and the
  master's JSON status page, with bounded waits (no fixed sleeps).  ``stop()`` kills both.
* :func:`run_driver`: a driver in a subprocess (one SparkContext per Python process: the run's
  shared ``local[2]`` session stays untouched) that reads paths with the ``kafka-log`` source
  and prints a JSON summary.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
STARTUP_TIMEOUT_S = 180.0
POLL_S = 0.25

_MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
_MASTER_UI = re.compile(r"Bound MasterWebUI to \S+ and started at (http://\S+)")


# the suite's JVM options (tests/conftest.py) for executors too
EXECUTOR_JVM_CONF = {"spark.executor.extraJavaOptions": os.environ["KLA_TEST_JVM_OPTS"]} \
    if os.environ.get("KLA_TEST_JVM_OPTS") else {}


def _env() -> dict[str, str]:
    return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


class StandaloneCluster:
    """A standalone master + one worker (``cores`` cores, ``memory``) on 127.0.0.1."""

    def __init__(self, workdir: Path, *, cores: int = 2, memory: str = "1g") -> None:
        self.workdir = workdir
        self.cores = cores
        self.memory = memory
        self.procs: list[subprocess.Popen[bytes]] = []
        self.url: str | None = None
        self.ui: str | None = None

    def _launch(self, name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.workdir / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], stdout=out,
                                    stderr=subprocess.STDOUT, env=_env(), cwd=self.workdir)
        self.procs.append(proc)
        return proc, log

    def _wait_for(self, proc: subprocess.Popen[bytes], log: Path, pattern: re.Pattern[str], deadline: float) -> str:
        while True:
            m = pattern.search(log.read_text(errors="replace"))
            if m:
                return m.group(1)
            if proc.poll() is not None:
                raise RuntimeError(f"{log.name}: process exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{log.name}: no {pattern.pattern!r} within {STARTUP_TIMEOUT_S} s")
            try:
                proc.wait(timeout=POLL_S)          # bounded poll interval; returns early if it dies
            except subprocess.TimeoutExpired:
                pass

    def alive_workers(self) -> int:
        assert self.ui is not None
        with urllib.request.urlopen(self.ui.rstrip("/") + "/json/", timeout=10) as r:
            return int(json.load(r).get("aliveworkers", 0))

    def start(self) -> StandaloneCluster:
        """Start master then worker; return once the master lists the worker ALIVE."""
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        master, mlog = self._launch("master", "-Dspark.master.rest.enabled=false",
                                    "org.apache.spark.deploy.master.Master",
                                    "--host", "127.0.0.1", "--port", "0", "--webui-port", "0")
        self.url = self._wait_for(master, mlog, _MASTER_URL, deadline)
        self.ui = self._wait_for(master, mlog, _MASTER_UI, deadline).replace("localhost", "127.0.0.1")
        worker, wlog = self._launch("worker", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                    "--port", "0", "--webui-port", "0", "--cores", str(self.cores),
                                    "--memory", self.memory, "--work-dir", str(self.workdir / "work"), self.url)
        while self.alive_workers() < 1:
            if worker.poll() is not None:
                raise RuntimeError(f"worker exited ({worker.returncode}):\n{wlog.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"worker not registered within {STARTUP_TIMEOUT_S} s")
            try:
                worker.wait(timeout=POLL_S)
            except subprocess.TimeoutExpired:
                pass
        return self

    def stop(self) -> None:
        """Kill the worker then the master (always safe to call)."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=30)
        self.procs.clear()


def summarize(spark, paths: list[str]) -> dict:  # type: ignore[no-untyped-def]
    """Per (logDir, topic, partition): row count, offset sum and a content hash sum; split and
    executor counts.  Every replica and control record is read (``replicas=all``)."""
    from pyspark.sql import functions as F

    df = (spark.read.format("kafka-log").option("replicas", "all").option("includeControlRecords", "true")
          .option("maxBytesPerPartition", "65536").load(paths))
    content = F.xxhash64("key", "value", "headers", "timestamp", "position").cast("decimal(38,0)")
    per = (df.groupBy("logDir", "topic", "partition")
           .agg(F.count("*").alias("n"), F.sum("offset").alias("s"), F.sum(content).alias("h")).collect())
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    return {"per_partition": sorted([r["logDir"], r["topic"], r["partition"], r["n"], r["s"], str(r["h"])]
                                    for r in per),
            "splits": df.rdd.getNumPartitions(), "executors": executors}


DRIVER = r"""
import json, sys
import clusters
from kafka_format.spark.session import build_session
spark = build_session(master=sys.argv[1], profile="test", app_name="klogs-test",
                      extra_conf={"spark.driver.host": "127.0.0.1", "spark.executor.memory": "512m",
                                  "spark.cores.max": "2", **clusters.EXECUTOR_JVM_CONF})
print("RESULT " + json.dumps(clusters.summarize(spark, json.loads(sys.argv[2]))))
spark.stop()
"""


def run_driver(master: str, paths: list[str], timeout: float = 600) -> dict:
    """Run :data:`DRIVER` against ``master`` in a subprocess; its JSON summary."""
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parent), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", DRIVER, master, json.dumps(paths)], capture_output=True,
                          text=True, env=env, timeout=timeout)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise AssertionError(f"driver on {master} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(line[len("RESULT "):])


# --- the jobs, run against a master ------------------------------------------------------------
JOB_NOW = "2023-11-22T00:00:00Z"


def job_argvs(logdirs: list[str], out: Path, config_file: str, *, delta: bool = False) -> dict[str, list[str]]:
    """The five jobs of DESIGN §4 over ``logdirs``, outputs under ``out``; ``delta``: and
    :func:`delta_argvs`."""
    common = [*logdirs, "--config-file", config_file, "--now", JOB_NOW]
    return {
        "offsets": [*common, "--timestamp", "earliest", "--timestamp", "2023-11-14T22:14:00Z", "--timestamp",
                    "latest", "--timestamp", "max-timestamp", "--isolation-level", "read_committed",
                    "--out", str(out / "offsets.jsonl")],
        "retention": [*common, "--out", str(out / "retention")],
        "compaction": [*common, "--config", "compacted:min.cleanable.dirty.ratio=0.25", "--out",
                       str(out / "compaction"), "--write-segments"],
        "audit": [*common, "--out", str(out / "audit"), "--fail-on", "never", "--format", "json"],
        "export": [*common, "--out", str(out / "export")],
        **(delta_argvs(common, out) if delta else {}),
    }


def delta_argvs(common: list[str], out: Path) -> dict[str, list[str]]:
    """``export --format delta`` through Spark's Delta writer (build_session puts delta-spark on the
    session; Spark ships its jars to the executors): a batch export, and an incremental one (one
    micro-batch: a second one, through a read limit, tripled its time on the cluster; several are
    tests/jobs/test_export_job.py's) committed with its app transaction (txnAppId/txnVersion).
    The same options as ``export``, so the tables hold its rows."""
    return {
        "export-delta": [*common, "--out", str(out / "delta"), "--format", "delta"],
        "export-delta-incremental": [*common, "--out", str(out / "delta-incremental"), "--format", "delta",
                                     "--checkpoint", str(out / "delta-checkpoint")],
    }


def run_jobs(logdirs: list[str], out: Path, config_file: str, *, delta: bool = False) -> dict[str, int]:
    """Run every job in this process (the active session); exit code per run (``export-delta*``
    are runs of ``export``)."""
    import contextlib
    import io

    from kafka_format.cli import find_job

    codes = {}
    for name, argv in job_argvs(logdirs, out, config_file, delta=delta).items():
        entry = find_job(name.split("-", 1)[0])
        assert entry is not None, name
        with contextlib.redirect_stdout(io.StringIO()):
            codes[name] = int(entry(argv) or 0)
    return codes


def delta_digest(table: Path) -> dict:
    """A Delta table as its own log and delta-rs (not klogs) read it: rows (sorted), the
    partition directories of the files the current version references, and per commit the
    engine that wrote it, its operation and the app transaction versions it carries."""
    from deltalake import DeltaTable

    dt = DeltaTable(str(table))
    commits = []
    for entry in sorted((table / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in entry.read_text().splitlines() if line.strip()]
        info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
        commits.append([info.get("engineInfo"), info.get("operation"),
                        [a["txn"]["version"] for a in actions if "txn" in a]])
    root = table.resolve()
    layout = {Path(uri.removeprefix("file://")).parent.relative_to(root).as_posix() for uri in dt.file_uris()}
    return {"rows": _json_rows(dt.to_pyarrow_table()), "commits": commits, "layout": sorted(layout)}


def _json_rows(table, drop: tuple[str, ...] = ()) -> list[str]:  # type: ignore[no-untyped-def]
    keep = [c for c in table.column_names if c not in drop]
    return sorted(json.dumps(r, sort_keys=True, default=lambda b: b.hex() if isinstance(b, bytes) else str(b))
                  for r in table.select(keep).to_pylist())


def jobs_digest(out: Path) -> dict:
    """What the jobs wrote under ``out``, without paths that depend on ``out``: sorted rows."""
    import hashlib

    import pyarrow.parquet as pq

    def rows(path: Path, drop: tuple[str, ...] = ()) -> list[str]:
        return _json_rows(pq.read_table(path), drop)

    summary = json.loads((out / "compaction" / "summary.json").read_text())
    segments = out / "compaction" / "segments"
    return {
        "offsets": (out / "offsets.jsonl").read_text().splitlines(),
        "retention": (out / "retention" / "segments.jsonl").read_text().splitlines(),
        "compaction_summary": [{k: v for k, v in p.items() if k not in ("logDir", "segmentsDir")}
                               for p in summary["partitions"]],
        "compaction_records": rows(out / "compaction" / "records", drop=("logDir",)),
        "compaction_segments": sorted([str(f.relative_to(segments)), hashlib.sha256(f.read_bytes()).hexdigest()]
                                      for f in segments.rglob("*") if f.is_file()),
        "audit": rows(out / "audit" / "findings", drop=("file", "message")),
        "export": rows(out / "export", drop=("logDir",)),
        **({"delta": delta_digest(out / "delta"), "delta_incremental": delta_digest(out / "delta-incremental")}
           if (out / "delta").is_dir() else {}),
    }


JOBS_DRIVER = r"""
import json, sys
from pathlib import Path
import clusters
from kafka_format.spark.session import build_session
spark = build_session(master=sys.argv[1], profile="test", app_name="klogs-jobs-test", delta=True,
                      extra_conf={"spark.driver.host": "127.0.0.1", "spark.executor.memory": "512m",
                                  "spark.cores.max": "2", **clusters.EXECUTOR_JVM_CONF})
out = Path(sys.argv[2])
codes = clusters.run_jobs(json.loads(sys.argv[3]), out, sys.argv[4], delta=True)
executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
print("RESULT " + json.dumps({"codes": codes, "executors": executors, "digest": clusters.jobs_digest(out)}))
spark.stop()
"""


def run_jobs_driver(master: str, logdirs: list[str], out: Path, config_file: str, timeout: float = 900) -> dict:
    """Every job and the Delta exports against ``master`` from a driver in a subprocess; codes,
    executors and digest."""
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parent), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", JOBS_DRIVER, master, str(out), json.dumps(logdirs), config_file],
                          capture_output=True, text=True, env=env, timeout=timeout)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise AssertionError(f"jobs driver on {master} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(line[len("RESULT "):])
