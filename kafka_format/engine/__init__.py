"""Where a job's per-partition work runs: in this process (``local``) or on Spark (``spark``).

Every job's work is a list of picklable tasks and a pure function per task (the modules of this
package: :mod:`~kafka_format.engine.offsets`, :mod:`~kafka_format.engine.retention`,
:mod:`~kafka_format.engine.audit`, :mod:`~kafka_format.engine.compaction`,
:mod:`~kafka_format.engine.export`).  The Spark jobs (:mod:`kafka_format.spark`) ship those tasks
to executors; the local engine runs the same functions here, over a process pool (or threads, for
the jobs whose tasks run in code that releases the GIL) where there is more than one partition's
worth of work (:func:`run_tasks`).  Nothing in this package imports
pyspark, so ``klogs JOB --engine local`` starts no JVM.

``--engine auto`` (the default) chooses with :func:`choose_engine`: ``local`` when no ``--master``
is given, the input's segment bytes are at most :data:`LOCAL_MAX_BYTES` (1 GiB; environment
``KLOGS_LOCAL_MAX_BYTES`` overrides it) and nothing asked for needs Spark (Delta, an incremental
export through Spark's checkpoint, ``--value-as json`` with Spark's JSON parser); else ``spark``.

May import: every layer below it; never pyspark, :mod:`kafka_format.spark`, :mod:`kafka_format.jobs`
or :mod:`kafka_format.cli`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["ENGINES", "LOCAL_MAX_BYTES", "PARALLEL_MIN_BYTES", "PARTITION_OPEN_BYTES", "REWRITE_BYTE_COST",
           "SEGMENT_LOOKUP_BYTES", "SEGMENT_SCAN_BYTES", "THREADS_MIN_BYTES", "THREADS_SHARE", "EngineChoice", "TaskFailed",
           "allow_pandas", "choose_engine", "input_bytes", "iter_tasks", "local_max_bytes", "on_threads", "one_blas_thread",
           "remote_input_bytes", "run_tasks", "task_work", "without_pandas", "workers"]

ENGINES = ("auto", "local", "spark")
MAX_CHUNK_TASKS = 64             # tasks a pool worker takes at a time (iter_tasks)
LOCAL_MAX_BYTES = 1 << 30        # auto: above this many segment bytes the work goes to Spark
# Below this many bytes of work in all, the tasks run one after another in this process: starting
# worker processes costs more than it saves (one Spark partition's worth, maxBytesPerPartition).
PARALLEL_MIN_BYTES = 128 << 20
# Fixed costs of a task's files, counted as bytes of work in ``run_tasks``' weights: without them
# a tree of many small segments weighs nothing and runs in one process.  Measured on make bench's
# 5-broker tree (20,000 segments of ~70 B; BENCHMARKS.md, planning at cluster scale): a segment
# read record by record (audit, export) costs 0.6-0.8 ms of CPU, a segment whose indexes are looked
# up (offsets, retention) 0.1-0.15 ms, re-opening a partition ~0.4 ms.  1 MiB stands for ~0.7 ms,
# so PARALLEL_MIN_BYTES is ~0.1 s of such work, about what starting the pool costs.
SEGMENT_SCAN_BYTES = 1 << 20
SEGMENT_LOOKUP_BYTES = 64 << 10
PARTITION_OPEN_BYTES = 384 << 10
# A byte that a task decodes and writes again (an export's Parquet rows, the cleaner's segments and
# rows, the table view's sorted rows) weighs this many bytes of a scan.  Measured on 1M-record topics
# of 35 and 148 MiB (the typed-export benchmark's shapes): these jobs cost 5-25 ms of CPU per MiB of
# log, a checking scan (audit) ~2 ms; at 1 the pool started only above ~1 s of such work, where it
# pays from ~0.1 s (35 MiB on 2 cores: export 0.28 -> 0.21 s, cleaner 0.77 -> 0.60 s of wall time).
REWRITE_BYTE_COST = 10
# Tasks run on threads (run_tasks' gil_free) from this many bytes of work, and when at least this
# share of it runs without the GIL.  A thread starts in ~0.1 ms and a typed column decoder compiles
# its schemas again in each (1-3 ms); 16 MiB of a rewrite's work is ~10 ms.  Measured exports on 2
# cores (BENCHMARKS.md, "the local engine's export on threads"): topics of 35-150 MiB, whose bytes
# are > 95 % of the weight, take 20-30 % less wall time and CPU on threads than over the pool in a
# process that has exported before, 3-6 % less wall time (5-9 % less CPU) as a fresh `klogs export`;
# 9-15 MiB topics 25-40 % less than in one thread; the 5-broker tree of 20,000 segments of ~70 B
# (bytes ~0 % of the weight) would take 80 % more (every task's Python on one GIL): it stays on the pool.
THREADS_MIN_BYTES = 16 << 20
THREADS_SHARE = 0.75


def task_work(*, data_bytes: int = 0, rewritten_bytes: int = 0, scanned_segments: int = 0,
              looked_up_segments: int = 0, partitions: int = 1) -> int:
    """A task's work in bytes, for ``run_tasks``' weights: the bytes it decodes (those it also
    writes again :data:`REWRITE_BYTE_COST` times) plus the fixed cost of each segment it reads whole,
    each segment whose indexes it looks up, and each partition it re-opens."""
    return (data_bytes + rewritten_bytes * REWRITE_BYTE_COST + scanned_segments * SEGMENT_SCAN_BYTES
            + looked_up_segments * SEGMENT_LOOKUP_BYTES + partitions * PARTITION_OPEN_BYTES)

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class EngineChoice:
    """The engine a run uses and why (the line ``auto`` prints on stderr)."""

    engine: str          # local | spark
    reason: str

    def line(self) -> str:
        """``engine: local (…)`` — one line for stderr."""
        return f"engine: {self.engine} ({self.reason})"


def local_max_bytes() -> int:
    """The ``auto`` threshold: ``$KLOGS_LOCAL_MAX_BYTES`` or :data:`LOCAL_MAX_BYTES`."""
    raw = os.environ.get("KLOGS_LOCAL_MAX_BYTES")
    if raw:
        try:
            return max(0, int(raw))
        except ValueError:
            pass
    return LOCAL_MAX_BYTES


def input_bytes(logdirs: Sequence[str]) -> int:
    """Bytes of ``.log`` segments of the live partitions under ``logdirs`` (listing only)."""
    from kafka_format.read.planning import open_partitions

    return sum(p.size_bytes for p in open_partitions(list(logdirs)))


def remote_input_bytes(uri: str, remote_storage_format: str = "auto") -> int:
    """Bytes of the remote segments (``.log`` files or objects) of the remote storage at ``uri`` in
    ``remote_storage_format`` (listing only; Aiven's objects as stored, compressed or not)."""
    from kafka_format.common.errors import LogDirError
    from kafka_format.storage.aiven_tier import log_object_bytes
    from kafka_format.storage.remote_tier import open_remote_storage

    if remote_storage_format == "aiven":
        return log_object_bytes(uri)
    try:
        store = open_remote_storage(uri)
    except LogDirError as exc:
        if remote_storage_format == "auto" and exc.code == "REMOTE_STORAGE_NOT_FOUND":
            return log_object_bytes(uri)
        raise
    return sum(f.log_size or 0 for d in store.partitions for f in d.filesets)


def _human(n: int) -> str:
    from kafka_format.report.units import human_bytes

    return str(human_bytes(n))


def choose_engine(requested: str, *, master: str | None, logdirs: Sequence[str],
                  needs_spark: str | None = None, remote_storage: str | None = None,
                  remote_storage_format: str = "auto") -> EngineChoice:
    """Resolve ``--engine``: ``local``/``spark`` as asked (``local`` refused where ``needs_spark``
    or ``master`` says Spark is required), ``auto`` by :func:`local_max_bytes` (the segments of the log
    dirs and of ``remote_storage``, a tiered topic's remote tier) and what needs Spark."""
    if requested not in ENGINES:
        raise ValueError(f"--engine must be one of {', '.join(ENGINES)}, got {requested!r}")
    if requested == "spark":
        return EngineChoice("spark", "--engine spark")
    if requested == "local":
        if master is not None:
            raise ValueError("--engine local runs without Spark: drop --master or use --engine spark")
        if needs_spark is not None:
            raise ValueError(f"--engine local cannot run this: {needs_spark}; use --engine spark")
        return EngineChoice("local", "--engine local")
    if master is not None:
        return EngineChoice("spark", f"--master {master}")
    if needs_spark is not None:
        return EngineChoice("spark", needs_spark)
    size, limit = input_bytes(logdirs), local_max_bytes()
    what = "segments"
    if remote_storage is not None:
        size += remote_input_bytes(remote_storage, remote_storage_format)
        what = "segments, local and remote"
    if size > limit:
        return EngineChoice("spark", f"{_human(size)} of {what} > {_human(limit)}")
    return EngineChoice("local", f"{_human(size)} of {what} <= {_human(limit)}, no --master")


def one_blas_thread() -> None:
    """Have numpy's OpenBLAS start one thread, unless the user's environment chose a number.

    Importing numpy starts OpenBLAS's pool: a thread for every further core, each spinning for
    about 0.1 s before it sleeps.  No job multiplies matrices, so that is only lost CPU, taken
    from the job's own workers: ~110 ms of a 0.45 s local audit on 2 cores, and it grows with the
    cores.  For program entry points (``klogs``, ``jobs/*.py``), not for library use; call it
    before numpy is imported (after, it changes nothing).  The variable passes to the processes
    the program starts (spawned pool workers, Spark's Python workers)."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def without_pandas() -> None:
    """Keep pandas out of a local-engine process.

    pyarrow imports pandas (about half a second, a third of a small local run) the first time it
    converts a value or an array to numpy, only to recognise pandas objects and pandas' NaT; the
    local engine never uses pandas.  A meta path finder makes ``import pandas`` fail for the rest
    of the process (and its forked workers), which pyarrow takes as "pandas is not installed".
    Does nothing where pandas or pyspark is already imported (a Spark session needs pandas)."""
    if "pandas" in sys.modules or "pyspark" in sys.modules:
        return
    if not any(isinstance(f, _NoPandas) for f in sys.meta_path):
        sys.meta_path.insert(0, _NoPandas())


def allow_pandas() -> None:
    """Undo :func:`without_pandas` (before a Spark session starts in a process that ran locally)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _NoPandas)]


class _NoPandas:
    """A meta path finder under which ``import pandas`` raises ImportError."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError(f"{name}: not imported by the local engine")
        return None


def workers() -> int:
    """Cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def run_tasks(fn: Callable[[T], R], tasks: Sequence[T], *, weights: Iterable[int] | None = None,
              max_workers: int | None = None, gil_free: Iterable[int] | None = None,
              processes: bool = True) -> list[R]:
    """``[fn(t) for t in tasks]``, in order: in this process when there is at most one task, one
    core, or too little work in all (``weights``: bytes of work per task); else over one worker per
    core.  The workers are processes (``fn`` and the tasks picklable), or threads of this process
    when most of the work runs without the GIL (``gil_free``: the part of each task's weight spent
    in code that releases it -- the compiled decoders, pyarrow's Parquet writer; see
    :func:`iter_tasks`).  ``processes=False``: never a process pool (results that cost more to send
    back than to compute): this thread where threads are not chosen."""
    return list(iter_tasks(fn, tasks, weights=weights, max_workers=max_workers, gil_free=gil_free,
                           processes=processes))


def _pool_worker_start() -> None:
    """A pool worker's first step: Ctrl-C is left to the process that runs the job (SIGINT ignored:
    a terminal sends it to every process of the job's group, and each worker would print a
    ``KeyboardInterrupt`` traceback of its own; the job's process ends the pool, see
    :func:`iter_tasks`), and a worker forked inside a job run does not keep the run's memo
    (:func:`kafka_format.storage.fsio.forget_run_memo`)."""
    import signal

    from kafka_format.output.publish import crash_point
    from kafka_format.storage import fsio

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    fsio.forget_run_memo()
    crash_point("pool:worker-started")      # test hook (the interrupt tests)


def iter_tasks(fn: Callable[[T], R], tasks: Sequence[T], *, weights: Iterable[int] | None = None,
               max_workers: int | None = None, gil_free: Iterable[int] | None = None,
               processes: bool = True) -> Iterator[R]:
    """:func:`run_tasks`, its results yielded in task order as they are ready: a caller that folds
    them into something smaller never holds them all.

    Where :func:`on_threads` says so, the tasks run on threads: no worker is forked (a forked
    worker faults in its own copy of every buffer it touches: an export took 40-50 % more CPU over
    the pool than in one process) and no result is pickled.  What the tasks reach that outlives a
    task is then per thread or shared under the GIL or a lock: the run's listing memo
    (:func:`kafka_format.storage.fsio.run_memo`, the calling thread's only), the typed column
    decoders (:meth:`kafka_format.registry.typed.ColumnDecoder.for_plan`, one per thread), the
    compiled decoder's block and scratch caches (taken and given back with the GIL held)."""
    n = max_workers or workers()
    weights = None if weights is None else [int(w) for w in weights]
    threads = on_threads(weights, gil_free)
    total = None if weights is None else sum(weights)
    least = THREADS_MIN_BYTES if threads else PARALLEL_MIN_BYTES
    if len(tasks) <= 1 or n <= 1 or (total is not None and total < least) or not (threads or processes):
        yield from (fn(t) for t in tasks)
        return
    if threads:
        yield from _on_threads(fn, tasks, min(n, len(tasks)))
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    method = "fork" if sys.platform.startswith("linux") and "pyspark" not in sys.modules else "spawn"
    with ProcessPoolExecutor(max_workers=min(n, len(tasks)), mp_context=multiprocessing.get_context(method),
                             initializer=_pool_worker_start) as pool:
        try:
            # a chunk's results come back together and wait for the chunks before them: at most
            # MAX_CHUNK_TASKS tasks a chunk keeps what is held at once small on any number of tasks
            yield from pool.map(fn, tasks, chunksize=max(1, min(MAX_CHUNK_TASKS, len(tasks) // (4 * n))))
        except KeyboardInterrupt:
            _end_workers(pool)
            raise


def _end_workers(pool: Any) -> None:
    """Ctrl-C: the pool's tasks not started are dropped and its workers killed at once (they ignore
    SIGINT), so leaving the ``with`` block does not run the rest of the work, and the job's clean-up
    (a staged output removed) runs once no worker writes any more (they are joined first)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        process.kill()         # SIGKILL: their work is dropped anyway, and it ends even a stopped one
    pool.shutdown(wait=True, cancel_futures=True)      # its manager thread sees the workers gone
    for process in processes:
        process.join()


def on_threads(weights: Sequence[int] | None, gil_free: Iterable[int] | None) -> bool:
    """Whether tasks of these ``weights`` run on threads rather than processes: when the part of
    their work spent without the GIL (``gil_free``, per task) is at least :data:`THREADS_SHARE` of
    it all.  Threads then share the cores without waiting on each other; where per-file Python
    (opening segments, planning, small writes) weighs more, they would take turns on the GIL."""
    if weights is None or gil_free is None:
        return False
    free = sum(int(w) for w in gil_free)
    return free > 0 and free >= THREADS_SHARE * sum(weights)


def _on_threads(fn: Callable[[T], R], tasks: Sequence[T], n: int) -> Iterator[R]:
    """``fn(t)`` for ``tasks`` on ``n`` threads, yielded in task order; at most
    :data:`MAX_CHUNK_TASKS` tasks are submitted ahead of the one awaited, so the results held at
    once stay few on any number of tasks.  On a failure (or the caller leaving) the tasks not
    started are cancelled and the running ones awaited."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor
    from itertools import islice

    pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="klogs-task")
    try:
        todo = iter(tasks)
        pending = deque(pool.submit(fn, t) for t in islice(todo, max(n, min(MAX_CHUNK_TASKS, 4 * n))))
        while pending:
            result = pending.popleft().result()
            pending.extend(pool.submit(fn, t) for t in islice(todo, 1))
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


from kafka_format.common.errors import KafkaFormatError  # noqa: E402  (after the pool helpers: no cycle)


class TaskFailed(KafkaFormatError):
    """A local task failed; ``reason`` names the partition (``<topic>-<partition> (<log dir>)``)
    and the cause, as the Spark engine's failure line does."""

    code = "TASK_FAILED"

    def _render(self) -> str:
        return f"failed in partition {self.reason}"
