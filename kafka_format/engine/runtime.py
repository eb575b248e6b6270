"""The job runtime: a job's tasks run by an executor chosen once, local or Spark.

A job is a list of picklable tasks, one pure function that runs a task (its result an Arrow table,
a manifest of the files it wrote, or a small summary), and the Arrow schema of each output.  An
:class:`Executor` runs the function over the tasks and yields the results in task order:

* :class:`LocalExecutor` -- this process: serially, on threads or over a process pool, as
  :func:`kafka_format.engine.iter_tasks` decides from the tasks' weights;
* :class:`kafka_format.spark.executor.SparkExecutor` -- one Spark task per task (an RDD of the task
  descriptions, each partition running the same function in a Python worker), with Spark's
  scheduling, retries, speculation and dynamic allocation.  Nothing crosses the JVM but the task
  descriptions and their results: rows never become JVM rows.

A task that writes files asks :func:`attempt` for the name of the attempt it runs in ("0" on the
local executor; on Spark one name per task attempt), writes under that name only and returns a
manifest; the driver commits the files of the manifests it received -- those of the attempt Spark
kept -- and nothing else (:mod:`kafka_format.output.attempts`).  A failed, retried or speculative
attempt never reaches an output.

No pyspark here (the Spark executor lives in :mod:`kafka_format.spark.executor`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol, TypeVar

__all__ = ["LOCAL_ATTEMPT", "Executor", "LocalExecutor", "attempt", "first_attempt", "running_attempt"]

T = TypeVar("T")
R = TypeVar("R")

LOCAL_ATTEMPT = "0"        # the one attempt of a task the local executor runs
_current = threading.local()


def attempt() -> str:
    """The name of the task attempt running in this thread: :data:`LOCAL_ATTEMPT` outside an
    executor's task (and on the local executor), else the executor's name for it (Spark: unique per
    attempt of the job)."""
    return str(getattr(_current, "name", LOCAL_ATTEMPT))


def first_attempt() -> bool:
    """Whether the task attempt running in this thread is its task's first (always on the local
    executor; a Spark retry or speculative copy is not)."""
    return int(getattr(_current, "number", 0)) == 0


class running_attempt:  # noqa: N801 -- a context manager used like a function
    """``with running_attempt(name, number):`` -- the block runs as task attempt ``name``
    (:func:`attempt`), its task's attempt ``number`` (0 first: :func:`first_attempt`)."""

    def __init__(self, name: str, number: int = 0) -> None:
        self.name = name
        self.number = number
        self.saved: tuple[str, int] | None = None

    def __enter__(self) -> str:
        if hasattr(_current, "name"):
            self.saved = (_current.name, _current.number)
        _current.name, _current.number = self.name, self.number
        return self.name

    def __exit__(self, *exc: object) -> None:
        if self.saved is None:
            del _current.name, _current.number
        else:
            _current.name, _current.number = self.saved


class Executor(Protocol):
    """Runs a job's tasks; the two kinds are interchangeable for every job."""

    name: str                       # "local" or "spark"

    def cores(self) -> int:
        """How many tasks run at once (the size a job cuts its work into)."""
        ...

    def map(self, fn: Callable[[T], R], tasks: Sequence[T], *, weights: Iterable[int] | None = None,
            gil_free: Iterable[int] | None = None, names: Sequence[str] | None = None) -> Iterator[R]:
        """``fn(t)`` for every task, yielded in task order.  ``weights`` (bytes of work per task)
        and ``gil_free`` (the part of it in code that releases the GIL) guide the local executor's
        choice of threads, processes or none; Spark schedules by itself.  ``names``: what each task
        works on, for a failure's message where the failure cannot say (a JVM that died)."""
        ...


class LocalExecutor:
    """This process's cores (:func:`kafka_format.engine.iter_tasks`)."""

    name = "local"

    def __init__(self, max_workers: int | None = None) -> None:
        self.max_workers = max_workers

    def cores(self) -> int:
        """This process's usable cores."""
        from kafka_format.engine import workers

        return self.max_workers or workers()

    def map(self, fn: Callable[[T], R], tasks: Sequence[T], *, weights: Iterable[int] | None = None,
            gil_free: Iterable[int] | None = None, names: Sequence[str] | None = None) -> Iterator[R]:
        """``fn`` over ``tasks`` here: serial, threads or a process pool by the weights (a failure
        here is raised by the task itself, which names what it worked on)."""
        from kafka_format.engine import iter_tasks

        return iter_tasks(fn, tasks, weights=weights, max_workers=self.max_workers, gil_free=gil_free)
