"""The ``kafka-log`` source read without Spark: the same plan and the same split reader.

:func:`read_splits` plans a batch read from the source's options
(:func:`kafka_format.read.split_reader.plan_read`) and :func:`read_table` decodes it into one table
(for small inputs and interactive use); the local engine's tasks (an export's splits,
the table view's partitions) decode their splits with :func:`kafka_format.read.split_reader.read_split`
-- the code the Spark data source runs on its executors -- streaming, each in its own task.  Filters
are not pushed (there is no query): the rows are those of ``spark.read.format("kafka-log")
.options(...).load()``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pyarrow as pa

from kafka_format.read.planning import Split
from kafka_format.read.split_reader import arrow_schema, read_split
from kafka_format.read.tiers import plan_read

__all__ = ["compiled_decoders", "read_splits", "read_table", "split_bytes", "split_weights", "split_work"]


def read_splits(options: Mapping[str, str], *, cores: int | None = None) -> tuple[Any, list[Split]]:
    """Parsed options (``paths``: a JSON list) and the planned splits, sized for ``cores`` (default:
    this machine's) as Spark's file sources size theirs for ``defaultParallelism``."""
    from kafka_format.engine import workers
    from kafka_format.read.options import parse_options  # pyspark-free

    opts = parse_options(dict(options))
    opts = replace(opts, plan=replace(opts.plan, default_parallelism=cores or workers()))
    return opts, plan_read(opts)


def read_table(options: Mapping[str, str]) -> pa.Table:
    """Every row of a batch read with these ``kafka-log`` options (``paths`` as JSON), in split order,
    as one table in memory, decoded in this process (on one thread per core where the splits' bytes
    are most of the work and the compiled decoder is active).  For small inputs and interactive use;
    the jobs stream split by split instead."""
    from kafka_format.engine import run_tasks

    # Never over the local engine's process pool: its workers would send the decoded rows back
    # pickled, which costs more than decoding them (1M records, 148 MiB of log, 2 workers: 1.8 s
    # against 0.15 s in this process).
    opts, splits = read_splits(options)
    schema = arrow_schema(opts)
    weights, gil_free = split_weights(splits, rewritten=False, gil_free=compiled_decoders())
    tables = run_tasks(functools.partial(_split_table, opts, schema), splits, weights=weights, gil_free=gil_free,
                       processes=False)
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _split_table(opts: Any, schema: pa.Schema, split: Split) -> pa.Table:
    return pa.Table.from_batches(list(read_split(split, opts)), schema=schema)


def compiled_decoders(typed: Any = None) -> bool:
    """Whether a read decodes with the compiled decoders, which release the GIL (its tasks may run
    on threads): the log's, and the typed columns' of ``typed`` (a
    :class:`kafka_format.registry.typed.TypedPlan`) where there are any.  The reference decoders
    are Python, which threads would take turns on."""
    from kafka_format.records import implementation

    if implementation.IMPLEMENTATION != "fast":
        return False
    if typed is None:
        return True
    from kafka_format.registry.typed import ColumnDecoder

    return all(ColumnDecoder.for_plan(p).compiled_columns for p in typed.plans.values())


def split_bytes(split: Split) -> int:
    """Bytes a split covers (a range to the end of its file: that file's size, when local)."""
    known = split.size_bytes
    if known is not None:
        return known
    total = 0
    for r in split.ranges:
        end = r.end_position
        if end is None:
            try:
                end = os.path.getsize(r.path)
            except OSError:
                end = r.start_position + (1 << 20)
        total += max(0, end - r.start_position)
    return total


def split_work(split: Split) -> int:
    """The work of a task that reads a split and writes its rows again (an export, the table view),
    in bytes for ``run_tasks``' weights: its bytes as rewritten bytes, a fixed cost per segment it
    reads and one for the split (re-opening its partition, its output)."""
    from kafka_format.engine import task_work

    return task_work(rewritten_bytes=split_bytes(split), scanned_segments=len(split.ranges))


def split_weights(splits: list[Split], *, rewritten: bool,
                  gil_free: bool) -> tuple[list[int], list[int] | None]:
    """``run_tasks``' ``weights`` and ``gil_free`` for one task per split that reads it
    (``rewritten``: and writes its rows again, as an export does), each split's bytes measured once:
    the weight is :func:`split_work`'s (its bytes as read or rewritten bytes, plus the fixed costs);
    the part without the GIL (the compiled decoder, the typed column decoders, pyarrow's Parquet
    writer) is the bytes' share, when ``gil_free`` (those decoders active), else None."""
    from kafka_format.engine import task_work

    sizes = [split_bytes(s) for s in splits]
    kind = "rewritten_bytes" if rewritten else "data_bytes"
    weights = [task_work(**{kind: n}, scanned_segments=len(s.ranges)) for n, s in zip(sizes, splits, strict=True)]
    return weights, [task_work(**{kind: n}, partitions=0) for n in sizes] if gil_free else None
