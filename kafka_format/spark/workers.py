"""Which Python interpreter runs the ``kafka-log`` source's workers, checked when it is registered.

Spark starts its Python workers with the interpreter of ``PYSPARK_PYTHON`` (set from
``spark.pyspark.python`` by ``spark-submit``; ``python3`` from ``PATH`` when neither is set), or
``spark.sql.execution.pyspark.python`` when that SQL conf is set.  A session built in a virtualenv
without ``PYSPARK_PYTHON`` therefore starts workers with the system ``python3``, which usually
cannot import numpy, pyarrow or this package, and the first query fails deep inside a worker with
``ModuleNotFoundError``.  :func:`source_python` finds that out at registration:

* local mode (``local``, ``local[N]``, ``local[*]``): the interpreter is tried on this machine;
  if it lacks what the source needs, the source is registered with the driver's own interpreter
  (``sys.executable``, same machine, same packages) and one warning line on stderr says so.
* any other master (a cluster, ``local-cluster``): the driver's interpreter may not exist on the
  executors, so a one-task job tries the imports where the workers run; if they fail,
  :class:`WorkerPythonError` names the interpreter and the fix.

:func:`quiet_closed_sockets` keeps the workers quiet where Spark closes their socket on purpose.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import traceback
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "NEEDED",
    "WorkerPythonError",
    "is_local_master",
    "quiet_closed_sockets",
    "source_python",
    "worker_python",
]

NEEDED = ("numpy", "pyarrow", "kafka_format")
SQL_PYTHON_CONF = "spark.sql.execution.pyspark.python"
PROBE_TIMEOUT_S = 120.0
_FIX = ("set PYSPARK_PYTHON (or spark.pyspark.python) to an interpreter that has kafka-log-analytics "
        "installed on every executor, e.g. `make package` and spark-submit --archives "
        "dist/kla-env.tar.gz#environment --conf spark.pyspark.python=./environment/bin/python")

_checked: dict[tuple[str, str], str | None] = {}     # (master or app id, interpreter) -> what is missing
_warned: set[str] = set()


class WorkerPythonError(RuntimeError):
    """Spark's Python workers would run an interpreter that cannot import what the source needs."""


def is_local_master(master: str) -> bool:
    """``local``, ``local[N]``, ``local[N,F]``, ``local[*]``: workers run on this machine (not ``local-cluster``)."""
    return master == "local" or master.startswith("local[")


def worker_python(spark: SparkSession) -> tuple[str, str]:
    """(interpreter Spark's Python workers start for SQL sources, the setting it comes from)."""
    conf = spark.conf.get(SQL_PYTHON_CONF, None)
    if conf:
        return conf, SQL_PYTHON_CONF
    return str(spark.sparkContext.pythonExec), "PYSPARK_PYTHON / spark.pyspark.python"


def _missing_here(python: str) -> str | None:
    """What ``python`` (on this machine) cannot import of :data:`NEEDED`; None when it can."""
    exe = python if os.path.sep in python else shutil.which(python)
    if exe is None or not os.access(exe, os.X_OK):
        return "no such interpreter on this machine"
    if os.path.realpath(exe) == os.path.realpath(sys.executable):
        return None
    code = ("import importlib, sys\n"
            f"for m in {NEEDED!r}:\n"
            "    try: importlib.import_module(m)\n"
            "    except Exception as e: print(m); sys.exit(1)\n")
    try:
        proc = subprocess.run([exe, "-c", code], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"it does not run ({exc})"
    if proc.returncode == 0:
        return None
    module = (proc.stdout.strip().splitlines() or ["?"])[-1]
    return f"it cannot import {module}"


def _probe_task(_: Any) -> Any:
    """Executor side: import what the source needs (the import of this module needs the package)."""
    import importlib

    for module in NEEDED:
        importlib.import_module(module)
    yield sys.executable


_NO_MODULE = re.compile(r"No module named '([^']+)'")


def _missing_on_executors(spark: SparkSession) -> str | None:
    """What the workers on the executors cannot import (one one-task job); None when they can."""
    sc = spark.sparkContext
    sc.setLocalProperty("spark.job.description", "kafka-log: checking the Python workers' interpreter")
    try:
        sc.parallelize([0], 1).mapPartitions(_probe_task).collect()
    except Exception as exc:      # a Py4J/Spark failure carrying the worker's traceback
        m = _NO_MODULE.search(str(exc))
        return f"it cannot import {m.group(1)}" if m else "its workers fail to start"
    finally:
        sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]
    return None


def source_python(spark: SparkSession) -> str | None:
    """The interpreter to register the source's workers with: None keeps Spark's own choice;
    ``sys.executable`` in local mode when the configured one lacks :data:`NEEDED` (one warning
    line on stderr).  Raises :class:`WorkerPythonError` on a cluster whose workers lack them."""
    sc = spark.sparkContext
    master = str(sc.master)
    python, source = worker_python(spark)
    local = is_local_master(master)
    key = (master if local else str(sc.applicationId), python)
    if key not in _checked:
        _checked[key] = _missing_here(python) if local else _missing_on_executors(spark)
    missing = _checked[key]
    if missing is None:
        return None
    if local and source != SQL_PYTHON_CONF:
        if python not in _warned:
            _warned.add(python)
            print(f"WARNING kafka-log: Spark's Python workers would run {python} ({source}), but {missing}; "
                  f"the kafka-log source's workers run the driver's interpreter {sys.executable} instead",
                  file=sys.stderr, flush=True)
        return sys.executable
    where = "this machine" if local else f"the executors of {master}"
    raise WorkerPythonError(f"kafka-log: Spark's Python workers run {python} ({source}) on {where}, and {missing}; "
                            + (f"unset {SQL_PYTHON_CONF} or point it at an interpreter with kafka-log-analytics"
                               if source == SQL_PYTHON_CONF else _FIX))


def quiet_closed_sockets() -> None:
    """In a Python worker forked by pyspark's daemon (``python -m pyspark.daemon``; a no-op in any
    other process): no traceback on stderr when the JVM has closed the worker's socket.

    The JVM closes it whenever it needs no more of a task's output -- a query with a limit
    (``show(n)``, ``take``, ``LIMIT``) takes its rows and ends the task, and a session that stops
    ends its workers -- while the worker may still be writing rows.  The worker's last flush then
    fails, and ``pyspark.daemon.manager`` prints that ``BrokenPipeError`` (or
    ``ConnectionResetError``) with ``traceback.print_exc()`` before the worker exits: a traceback on
    the user's console for a query that worked.  Nothing is lost by not printing it: the JVM asked
    for the end, and a JVM that died is reported by the driver.  Every other traceback of the daemon
    and of the workers is printed as before.  Installed when :mod:`kafka_format.spark` is imported,
    which a worker does to run any of the product's tasks (the ``kafka-log`` reader, the jobs' tasks)."""
    main = sys.modules.get("__main__")
    if getattr(getattr(main, "__spec__", None), "name", None) != "pyspark.daemon":
        return
    if getattr(traceback.print_exc, "_quiet_closed_sockets", False):
        return
    original = traceback.print_exc

    def print_exc(limit: int | None = None, file: Any = None, chain: bool = True) -> None:
        exc = sys.exc_info()[1]
        caller = sys._getframe(1).f_code
        if isinstance(exc, (BrokenPipeError, ConnectionResetError)) and caller.co_name == "manager" \
                and os.path.basename(caller.co_filename) == "daemon.py":
            return                     # the JVM closed the socket: the end it asked for
        original(limit=limit, file=file, chain=chain)

    print_exc._quiet_closed_sockets = True        # type: ignore[attr-defined]
    traceback.print_exc = print_exc
