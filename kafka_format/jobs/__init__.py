"""The seven jobs (``docs/jobs/``): ``klogs JOB ARGS`` and ``spark-submit jobs/JOB.py ARGS`` run the
same ``main(argv) -> int`` of the module :mod:`kafka_format.jobs.<JOB>`.

* :mod:`~kafka_format.jobs.offsets`, :mod:`~kafka_format.jobs.retention`,
  :mod:`~kafka_format.jobs.compaction`, :mod:`~kafka_format.jobs.audit`,
  :mod:`~kafka_format.jobs.export`, :mod:`~kafka_format.jobs.groups`, :mod:`~kafka_format.jobs.recover` — each a parser (``build_parser``) and a run over the library's
  functions, on the local engine or on Spark;
* :mod:`~kafka_format.jobs.jobargs` — the flags every job shares, its context, the session, the one
  error line and exit code (``run_main``); :mod:`~kafka_format.jobs.sparkerrors` — a Spark failure
  as its cause in one line; :mod:`~kafka_format.jobs.interrupts` — Ctrl-C as one line and exit code
  130; :mod:`~kafka_format.jobs.typedargs` — the typed key/value flags of export.

The ``jobs/*.py`` files beside the package are the spark-submit entry points, a few lines each.
May import every layer below: :mod:`kafka_format.spark` (lazily, so the local engine starts no JVM),
:mod:`kafka_format.engine`, :mod:`kafka_format.report` and what they build on; never
:mod:`kafka_format.cli`.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from types import ModuleType

__all__ = ["JOBS", "find_job", "job_module"]

# name -> one-line summary (``klogs --help``)
JOBS: dict[str, str] = {
    "offsets": "offset for timestamp per partition (ListOffsets semantics)",
    "retention": "segments Kafka's retention pass would delete, and when",
    "compaction": "what the log cleaner keeps, or the compacted table view",
    "audit": "every kafka-dump-log check plus checkpoint/epoch/replica checks",
    "export": "topic history to Parquet, Delta or Iceberg, incrementally",
    "groups": "consumer groups: committed offsets, lag, expiry, what retention takes unread",
    "recover": "what the broker's log loader keeps, truncates and rebuilds on its next start",
}


def job_module(name: str) -> ModuleType:
    """The module of job ``name`` (``build_parser()`` and ``main(argv) -> int``)."""
    if name not in JOBS:
        raise KeyError(f"no job named {name!r}: one of {', '.join(JOBS)}")
    return import_module(f"kafka_format.jobs.{name}")


def find_job(name: str) -> Callable[[list[str] | None], int]:
    """``main`` of job ``name``."""
    main: Callable[[list[str] | None], int] = job_module(name).main
    return main
