"""SparkSession builder for the profiles in ``spark_conf/`` (local, test, cluster).

Only module besides the data source that imports pyspark at module level.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pyspark import SparkContext
from pyspark.sql import SparkSession

# ALWAYS: settings the product relies on, applied over any profile.  Its redaction pattern hides
# the user:secret of a URI (``s3://KEY:SECRET@bucket``) wherever Spark shows a plan or its options
# (explain output, the SQL UI), as :func:`kafka_format.common.redaction.redact` does for klogs' own output.
from kafka_format.spark import ALWAYS
from kafka_format.spark.jars import with_jars

__all__ = ["ALWAYS", "INTERRUPT_WAIT_S", "build_session", "conf_dir", "read_profile", "stop_spark_work"]


def conf_dir() -> Path:
    """Directory of profile files: ``$KLOGS_SPARK_CONF_DIR`` or ``spark_conf/`` of the checkout."""
    env = os.environ.get("KLOGS_SPARK_CONF_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "spark_conf"


def read_profile(profile: str) -> dict[str, str]:
    """Settings of ``spark_conf/<profile>.conf`` (spark-defaults format); {} if the file is absent
    (an installed wheel has no ``spark_conf/``: Spark's own defaults then apply)."""
    path = conf_dir() / f"{profile}.conf"
    if not path.is_file():
        if profile not in ("local", "test", "cluster"):
            raise ValueError(f"unknown Spark profile {profile!r}: no {path}")
        return {}
    conf: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        conf[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    return conf


KEEP_JVM_LOGS = 50


@contextlib.contextmanager
def _stderr_to(path: str | None) -> Iterator[None]:
    """While the block runs, file descriptor 2 is ``path`` (appended): a JVM started inside keeps it
    as its stderr for good, so Spark's start-up warnings, log4j lines and Python workers' stderr go
    there, while this process's own stderr is restored when the block ends."""
    if path is None:
        yield
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError as exc:       # e.g. $KLOGS_LOG_DIR names a file
        raise OSError(exc.errno, f"cannot create the directory of Spark's log {os.path.dirname(path)!r} "
                                 f"($KLOGS_LOG_DIR, default ~/.cache/kafka-log-analytics/logs): {exc.strerror}") from None
    _prune_logs(os.path.dirname(path))
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def _prune_logs(root: str) -> None:
    """Keep the newest :data:`KEEP_JVM_LOGS` ``klogs-*.log`` files of ``root``."""
    try:
        logs = sorted((e for e in os.scandir(root) if e.name.startswith("klogs-") and e.name.endswith(".log")
                       and e.is_file(follow_symlinks=False)), key=lambda e: e.stat().st_mtime)
    except OSError:
        return
    for entry in logs[:-KEEP_JVM_LOGS] if len(logs) > KEEP_JVM_LOGS else []:
        with contextlib.suppress(OSError):
            os.unlink(entry.path)


def build_session(master: str | None = None, profile: str = "local", app_name: str = "klogs",
                  extra_conf: Mapping[str, str] | None = None, jvm_log: str | None = None,
                  s3a: bool = False, delta: bool = False, source: bool = True) -> SparkSession:
    """Get or create a SparkSession from a profile, with the ``kafka-log`` source registered
    (unless not ``source``: a job running its own tasks on the session reads without it).

    Precedence (lowest first): ``spark_conf/<profile>.conf``, ``extra_conf``, ``master``.
    Workers use this interpreter unless ``PYSPARK_PYTHON`` is already set.  When this call starts
    the JVM, ``jvm_log`` (when given) receives its output (start-up warnings, Spark's log, workers'
    stderr) instead of this process's stderr, and the JVM loads only the packages asked for
    (:func:`kafka_format.spark.jars.with_jars`): ``delta`` delta-spark and its SQL extension, so
    ``--format delta`` writes through Spark's Delta writer; ``s3a`` hadoop-aws, for ``s3a://``
    locations.  Neither is loaded otherwise (a plain session starts faster and smaller).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    conf = read_profile(profile)
    conf.update(extra_conf or {})
    conf.update(ALWAYS)
    if master is not None:
        conf["spark.master"] = master
    if not _jvm_running():
        conf = with_jars(conf, [name for name, wanted in (("delta", delta), ("s3a", s3a)) if wanted])
    builder = SparkSession.builder.appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    starts_jvm = SparkContext._active_spark_context is None and SparkContext._gateway is None
    with _stderr_to(jvm_log if starts_jvm else None):
        spark = builder.getOrCreate()
    for key, value in ALWAYS.items():           # runtime SQL conf also on a pre-existing session
        spark.conf.set(key, value)
    if source:
        from kafka_format.spark import register

        register(spark)
    return spark


def _jvm_running() -> bool:
    """Whether a JVM is already up (a live SparkContext, or spark-submit launched this process):
    its classpath is fixed, so packages set now would not apply."""
    return SparkContext._active_spark_context is not None or bool(os.environ.get("PYSPARK_GATEWAY_PORT"))


INTERRUPT_WAIT_S = 20.0     # how long a Ctrl-C waits for Spark's jobs and queries to stop


def stop_spark_work(wait_s: float = INTERRUPT_WAIT_S) -> None:
    """Stop what Spark runs for this process and wait for it (at most ``wait_s``): its streaming
    queries stopped, its jobs cancelled, until no job is active and no task runs (a cancelled job
    ends at once; its tasks, maybe still writing files, end when they are killed).  A no-op
    without a running SparkContext.

    For a Ctrl-C (:func:`kafka_format.jobs.interrupts.interrupts_handled` calls it from its SIGINT
    handler): the work is stopped from a thread of its own, with a Py4J connection of its own,
    because the interrupted thread's connection is waiting for the answer of the call the Ctrl-C
    interrupted -- PySpark's own handler cancels on it, which fails, and raises at once, so a run's
    clean-up would delete a staged output while Spark's tasks still write into it.

    Then the interrupted thread's Py4J connection is closed, before the ``KeyboardInterrupt``
    reaches Py4J: Py4J (0.10.9.9) cleans up after an interrupted call by sending the JVM, on that
    connection, a request to shut its socket down, which the JVM reads only once the interrupted
    call has returned -- by then the run's clean-up has opened the thread's next connection, and
    the JVM closes that one as well ("Answer from Java side is empty").  A closed connection is
    one Py4J leaves alone; the thread's next call opens a new one."""
    sc = SparkContext._active_spark_context
    if sc is None:
        return
    interrupted = _thread_connection(sc)
    stopper = threading.Thread(target=_stop_all, args=(sc, time.monotonic() + wait_s), name="klogs-interrupt",
                               daemon=True)
    stopper.start()
    stopper.join(wait_s)
    if interrupted is not None:
        interrupted.close()


def _thread_connection(sc: SparkContext) -> Any:
    """The calling thread's Py4J connection to Spark's JVM (PySpark's pinned-thread client), if any."""
    client = getattr(getattr(sc, "_gateway", None), "_gateway_client", None)
    get = getattr(client, "get_thread_connection", None)
    return get() if get is not None else None


def _stop_all(sc: SparkContext, deadline: float) -> None:
    try:
        session = SparkSession._instantiatedSession       # pyspark's record of this process's session
        for query in session.streams.active if session is not None else []:
            query.stop()
        sc.cancelAllJobs()
        tracker = sc.statusTracker()
        jvm_tracker = sc._jsc.sc().statusTracker()         # the executors' running tasks (killed ones too)
        while time.monotonic() < deadline and (tracker.getActiveJobsIds() or any(
                e.numRunningTasks() for e in jvm_tracker.getExecutorInfos())):
            time.sleep(0.05)
    except Exception:       # noqa: BLE001 - a JVM already gone runs nothing more
        pass
