"""The ``kafka-log`` source read without Spark: the same plan and the same split reader.

:func:`read_splits` plans a batch read from the source's options
(:func:`kafka_format.read.split_reader.plan_read`); the local engine's tasks (an export's splits,
the table view's partitions) decode their splits with :func:`kafka_format.read.split_reader.read_split`
-- the code the Spark data source runs on its executors -- streaming, each in its own task.  Filters
are not pushed (there is no query): the rows are those of ``spark.read.format("kafka-log")
.options(...).load()``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kafka_format.read.planning import Split
from kafka_format.read.split_reader import plan_read

__all__ = ["read_splits", "split_bytes"]


def read_splits(options: Mapping[str, str]) -> tuple[Any, list[Split]]:
    """Parsed options (``paths``: a JSON list) and the planned splits, sized for this machine's cores."""
    from kafka_format.engine import workers
    from kafka_format.read.options import parse_options     # pyspark-free

    opts = parse_options(dict(options))
    opts = replace(opts, plan=replace(opts.plan, default_parallelism=workers()))
    return opts, plan_read(opts)


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

