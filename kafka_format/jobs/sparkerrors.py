"""A Spark failure as one line for the user: what failed, where, what ran out and the knob.

:func:`kafka_format.jobs.jobargs.run_job` calls :func:`spark_failure` for any exception a job body
raises; a Spark or Py4J error (a failed task, an out-of-memory JVM, a JVM that died and left only
a refused socket behind) becomes one line instead of a Py4J traceback or ``[Errno 111] Connection
refused``.  Nothing here imports pyspark at module level.
"""

from __future__ import annotations

import re
import time
from typing import Any

__all__ = ["DRIVER_MEMORY_KNOB", "JVM_OOM_EXIT", "PYTHON_MEMORY_KNOB", "SparkFailure", "spark_failure"]

JVM_OOM_EXIT = 52   # SparkExitCode.OOM: SparkUncaughtExceptionHandler's exit on OutOfMemoryError

DRIVER_MEMORY_KNOB = ("raise spark.driver.memory (spark_conf/local.conf for klogs; spark-submit --driver-memory or "
                      "--conf spark.driver.memory=4g), or spark.executor.memory on a cluster")
PYTHON_MEMORY_KNOB = ("give each Python worker more memory or run fewer at once (--master local[1], "
                      "spark.executor.cores); for compaction lower log.cleaner.dedupe.buffer.size")
_DEATH_WAIT_S = 15.0   # how long a JVM that is shutting down may take to exit


class SparkFailure(Exception):
    """A Spark failure described for the user (``str()`` is the one line)."""


_REPLICA = re.compile(r"ReplicaTaskError: (\S+ \([^)\n]*\))")
_TASK = re.compile(r"Task (\d+) in stage ([\d.]+) failed")
_JAVA_OOM = re.compile(r"java\.lang\.OutOfMemoryError(?:: ([^\n]*))?")
_PY_OOM = re.compile(r"\bMemoryError\b:?\s*([^\n]*)")
_WORKER_CRASH = re.compile(r"Python worker exited unexpectedly[^\n]*")


def _is_spark_error(exc: BaseException) -> bool:
    for cls in type(exc).__mro__:
        mod = cls.__module__ or ""
        if mod.startswith(("py4j", "pyspark")):
            return True
    return False


def _gateway_exit_code() -> int | None:
    """Exit code of the driver JVM pyspark started (waits briefly for a dying JVM), else None."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return None
    gateway = getattr(SparkContext, "_gateway", None)
    proc = getattr(gateway, "proc", None)
    if proc is None:
        return None
    deadline = time.monotonic() + _DEATH_WAIT_S
    while True:
        code = proc.poll()
        if code is not None or time.monotonic() >= deadline:
            return code
        time.sleep(0.1)


# What a call meets while the SparkContext stops under it (the JVM dying: its uncaught-exception
# handler stops the context, then exits): the context gone, or its stop half done (SparkContext.stop
# nulls the DAG scheduler before the JVM exits).
_STOPPING = ("SparkContext was shut down", "Answer from Java side is empty",
             "Cannot call methods on a stopped SparkContext", 'SparkContext.dagScheduler()" is null')


def _looks_like_dead_jvm(exc: BaseException, text: str) -> bool:
    if isinstance(exc, (ConnectionRefusedError, ConnectionResetError, BrokenPipeError)):
        return True
    return type(exc).__name__ == "Py4JNetworkError" or any(s in text for s in _STOPPING)


def _where(text: str, task_names: Any, running: Any) -> str:
    m = _REPLICA.search(text)
    if m:
        return f" in partition {m.group(1)}"
    m = _TASK.search(text)
    if m:
        task = int(m.group(1))
        if task_names is not None and 0 <= task < len(task_names):
            return f" in partition {task_names[task]}"
        return f" in task {task} of stage {m.group(2)}"
    if running:
        return (f" in partition {running[0]}" if len(running) == 1
                else f" while partitions {', '.join(running)} were running")
    return ""


def _stage_tasks(exc: BaseException) -> Any:
    """The ``klogs_stage_tasks`` attached to ``exc`` or to an exception it was raised from or
    while handling (a failed stage's error, then the session's own failure to stop)."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        cur = todo.pop()
        if cur is None or id(cur) in seen:
            continue
        seen.add(id(cur))
        stage = getattr(cur, "klogs_stage_tasks", None)
        if stage is not None:
            return stage
        todo += [cur.__cause__, cur.__context__]
    return None


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip().lstrip(":").strip()
        if line and not line.startswith(("An error occurred while calling", "Traceback", "File ")):
            return line[:300]
    return text.strip()[:300]


def _text(exc: BaseException) -> tuple[str, bool]:
    """``str(exc)``, and whether the JVM could not be asked for it: a Py4J error reads its text from
    the JVM, which may have died meanwhile (a task's OutOfMemoryError, the JVM exiting before the
    error's message is read); then the text says what the connection said."""
    try:
        return str(exc), False
    except Exception as lost:  # noqa: BLE001 - any failure to reach the JVM
        return f"{type(exc).__name__} (its message was not read: {type(lost).__name__}: {lost})", True


def spark_failure(exc: BaseException, *, task_names: Any = None) -> SparkFailure | None:
    """``exc`` as a :class:`SparkFailure` when it comes from Spark (or from a dead Spark JVM), else
    None.  ``task_names``: what each task index of the failing stage worked on (e.g. the cleaner's
    ``topic-partition (log dir)`` per task), used when the error names a task but not a partition;
    by default the ``klogs_stage_tasks`` a job attached to ``exc`` (its ``names``, and the tasks
    ``running`` when the JVM died, which the error cannot say)."""
    if isinstance(exc, SparkFailure):
        return exc                          # already described (a job re-worded it)
    text, unreadable = _text(exc)
    spark_made = _is_spark_error(exc)
    if not spark_made and not isinstance(exc, (ConnectionError, MemoryError)):
        return None
    stage = _stage_tasks(exc)
    if task_names is None and stage is not None:
        task_names = stage.names
    where = _where(text, task_names, getattr(stage, "running", None))
    if isinstance(exc, MemoryError):
        return SparkFailure(f"out of memory in the driver's Python process ({exc or 'MemoryError'}): "
                            f"{PYTHON_MEMORY_KNOB}")
    m = _JAVA_OOM.search(text)
    if m:
        what = m.group(1) or "Java heap space"
        return SparkFailure(f"Spark's JVM ran out of memory{where} (java.lang.OutOfMemoryError: {what}): "
                            f"{DRIVER_MEMORY_KNOB}")
    if unreadable or _looks_like_dead_jvm(exc, text):
        code = _gateway_exit_code()
        if code is None and not spark_made:
            return None   # a connection error with a live (or no) Spark JVM: not Spark's failure
        if code == JVM_OOM_EXIT:
            return SparkFailure(f"Spark's JVM ran out of memory and exited{where} (java.lang.OutOfMemoryError, "
                                f"exit code {JVM_OOM_EXIT}; Spark's log says where): {DRIVER_MEMORY_KNOB}")
        if code is not None:
            return SparkFailure(f"Spark's JVM exited with code {code}{where} (killed? out of memory?): "
                                f"{DRIVER_MEMORY_KNOB}")
        return SparkFailure(f"lost Spark's JVM{where}: {_first_line(text)}")
    m = _PY_OOM.search(text)
    if m:
        detail = m.group(1).strip()
        return SparkFailure(f"a Python worker ran out of memory{where}"
                            f"{f' (MemoryError: {detail[:200]})' if detail else ' (MemoryError)'}: {PYTHON_MEMORY_KNOB}")
    m = _WORKER_CRASH.search(text)
    if m:
        return SparkFailure(f"a Python worker died{where} (killed for memory?): {PYTHON_MEMORY_KNOB}")
    if not spark_made:
        return None
    cause = _cause(text)
    return SparkFailure(f"Spark failed{where}: {cause}")


def _cause(text: str) -> str:
    """The innermost error line of a Spark/Py4J message (the Python exception of a failed task, or
    the Java exception)."""
    py = re.findall(r"^(\w+(?:\.\w+)*(?:Error|Exception)): (.*)$", text, flags=re.M)
    if py:
        name, msg = py[-1]
        return f"{name}: {msg}"[:400]
    return _first_line(text)
