"""The Spark executor of the job runtime (:mod:`kafka_format.engine.runtime`): a job's tasks as Spark tasks.

:class:`SparkExecutor` runs a task function over a job's tasks with one Spark partition per task
(an RDD of the task descriptions): Spark schedules, retries and speculates them and grows or shrinks
the executors (dynamic allocation) as for any job; each runs the same pure function the local
engine runs, in a Python worker, and sends back only its result (a manifest, a summary, an Arrow
table's IPC bytes).  Rows never become JVM rows, and no Spark writer is involved.

:func:`frame` is the DataFrame of a job's Arrow output for users who compose queries: the tasks run
lazily inside ``mapInArrow`` (one partition per task), with the Spark schema derived from the
job's Arrow schema (:func:`spark_schema`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from kafka_format.engine.runtime import running_attempt
from kafka_format.spark.workers import source_python

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["SparkExecutor", "StageTasks", "frame", "spark_schema", "task_attempt_name"]

T = TypeVar("T")
R = TypeVar("R")


def task_attempt_name() -> str:
    """The running Spark task attempt's name, unique within its application: the stage, the
    partition, the attempt number and the task attempt id (``s3-p0-a1-t17``)."""
    return _task_attempt()[0]


def _task_attempt() -> tuple[str, int]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        raise RuntimeError("not inside a Spark task")
    name = f"s{ctx.stageId()}-p{ctx.partitionId()}-a{ctx.attemptNumber()}-t{ctx.taskAttemptId()}"
    return name, int(ctx.attemptNumber())


def _mark(markers: str | None, index: int, what: str) -> None:
    if markers is not None and os.path.isdir(markers):
        with open(os.path.join(markers, f"{index}.{what}"), "wb"):
            pass


def _run_partition(fn: Callable[[Any], Any], markers: str | None,
                   items: Iterable[tuple[int, Any]]) -> Iterator[tuple[int, Any]]:
    """One Spark partition: its tasks (one, as planned) run under this attempt's name; with
    ``markers`` (local mode) each leaves a ``started`` and a ``done`` file there."""
    with running_attempt(*_task_attempt()):
        for index, task in items:
            _mark(markers, index, "started")
            result = fn(task)
            _mark(markers, index, "done")
            yield index, result


class StageTasks:
    """What the tasks of a failed stage worked on, attached to its exception as
    ``klogs_stage_tasks`` (read by :mod:`kafka_format.jobs.sparkerrors`): ``names[i]`` for task
    ``i`` of the stage, ``running`` the ones started and not finished when it failed (known in
    local mode, where the executors' marker files are the driver's: a JVM that died says nothing)."""

    def __init__(self, names: list[str], running: list[str]) -> None:
        self.names = names
        self.running = running


def _running(markers: str | None, n: int) -> list[int]:
    """Tasks with a ``started`` marker and no ``done`` one."""
    if markers is None or not os.path.isdir(markers):
        return []
    seen = set(os.listdir(markers))
    return [i for i in range(n) if f"{i}.started" in seen and f"{i}.done" not in seen]


class SparkExecutor:
    """A Spark session's executors (see the module doc)."""

    name = "spark"

    def __init__(self, spark: SparkSession, description: str | None = None) -> None:
        self.spark = spark
        self.description = description

    def cores(self) -> int:
        """The session's ``defaultParallelism`` (its executors' cores)."""
        return int(self.spark.sparkContext.defaultParallelism)

    def map(self, fn: Callable[[T], R], tasks: Sequence[T], *, weights: Iterable[int] | None = None,
            gil_free: Iterable[int] | None = None, names: Sequence[str] | None = None) -> Iterator[R]:
        """``fn(t)`` for every task as one Spark job of ``len(tasks)`` tasks; the results in task
        order once the job is done.  ``weights``/``gil_free`` are the local executor's hints;
        ``names`` (what each task works on) go with a failure as its ``klogs_stage_tasks``."""
        if not tasks:
            return iter(())
        sc = self.spark.sparkContext
        markers = tempfile.mkdtemp(prefix="klogs-tasks-") if names is not None and \
            (sc.master or "").startswith("local") else None
        if self.description:
            sc.setJobDescription(self.description)
        saved = sc.pythonExec
        python = source_python(self.spark)     # local mode: the driver's interpreter if Spark's lacks the package
        try:
            if python is not None:      # the RDD's function carries the interpreter its workers start
                sc.pythonExec = python
            rdd = sc.parallelize(list(enumerate(tasks)), len(tasks))
            results = rdd.mapPartitions(partial(_run_partition, fn, markers)).collect()
        except BaseException as exc:
            if names is not None:
                listed = list(names)
                exc.klogs_stage_tasks = StageTasks(listed, [listed[i] for i in _running(markers, len(listed))])  # type: ignore[attr-defined]
            raise
        finally:
            sc.pythonExec = saved
            if self.description:
                sc.setJobDescription(None)  # type: ignore[arg-type]  # pyspark accepts None: the default
            if markers is not None:
                shutil.rmtree(markers, ignore_errors=True)
        results.sort(key=lambda pair: pair[0])
        return (r for _, r in results)


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of an Arrow schema (names, types, nullability), as Spark's own Arrow
    conversion maps them."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def _arrow_tasks(fn: Callable[[Any], pa.Table], schema: pa.Schema,
                 batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import pickle

    for batch in batches:
        for blob in batch.column(1).to_pylist():
            with running_attempt(*_task_attempt()):
                table = fn(pickle.loads(blob))
            yield from table.cast(schema).to_batches()


def frame(spark: SparkSession, fn: Callable[[Any], pa.Table], tasks: Sequence[Any], schema: pa.Schema) -> DataFrame:
    """The rows of ``fn(t)`` for every task (Arrow tables of ``schema``) as a DataFrame, computed
    lazily, one partition per task, in task order; each partition receives its own task only."""
    from pyspark import cloudpickle
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    struct = spark_schema(schema)
    if not tasks:
        return spark.createDataFrame([], struct)
    rows = [(i, cloudpickle.dumps(t)) for i, t in enumerate(tasks)]
    described = spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)),
                                      StructType([StructField("task", LongType(), False),
                                                  StructField("description", BinaryType(), False)]))
    return described.mapInArrow(partial(_arrow_tasks, fn, schema), struct)
