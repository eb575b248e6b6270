"""``klogs retention LOGDIR... [--format jsonl|table] [--out DIR]`` (docs/jobs/).

One line per segment: ``{"topic","partition","baseOffset","sizeBytes","largestTimestamp","deletable",
"reason","deletableAtMs"}`` -- exactly the segments Kafka's retention pass would delete at ``--now``,
and when each becomes deletable.  ``--out DIR`` also writes ``segments.jsonl`` (or ``segments.txt``),
``summary.json`` (per partition; with ``__consumer_offsets`` in the log dirs, per consumer group too:
unread records lost and taken, as ``klogs groups`` counts them) and ``disk-usage.png`` /
``disk-usage.html``, published atomically --
only to a path that does not exist, an empty directory or a previous report (its ``.klogs-output``
marker); anything else, or a ``DIR`` another run holds, exits 2 before any work.

Also runs as ``spark-submit jobs/retention.py ARGS``.  Semantics: :mod:`kafka_format.log.retention`.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from kafka_format.jobs.jobargs import (
    EXIT_OK,
    JobContext,
    add_common_arguments,
    claim_out,
    describe,
    executor_for,
    job_context,
    run_main,
)
from kafka_format.log.retention import summarize
from kafka_format.report.retention_page import summary_line
from kafka_format.report.retention_report import REPORT_OWNER, format_segments, write_report

if TYPE_CHECKING:
    from kafka_format.engine.runtime import Executor


def build_parser() -> argparse.ArgumentParser:
    """Common job flags plus ``--format jsonl|table``."""
    parser = argparse.ArgumentParser(
        prog="klogs retention",
        description="Which segments Kafka's retention pass deletes at --now, and when each becomes "
                    "deletable (no new data assumed).")
    add_common_arguments(parser, formats=("jsonl", "table"), default_format="jsonl")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the job; returns the exit code (0 ok, 2 could not run)."""
    return run_main(build_parser(), argv, _body, prog="retention")


def _body(args: argparse.Namespace) -> int:
    ctx = job_context(args)
    with claim_out(ctx, REPORT_OWNER):      # refused or busy: exit 2 before any work
        return _run(ctx)


def _run(ctx: JobContext) -> int:
    from kafka_format.engine.retention import retention_rows

    executor = executor_for(ctx, "retention")
    rows = retention_rows(executor, ctx.logdirs, ctx.configs, ctx.now_ms,
                          topics=ctx.topics or None, topic_pattern=ctx.topic_pattern).to_pylist()
    summary = summarize(rows)           # one row per segment is small: the same rule on both engines
    fmt = ctx.format or "jsonl"
    sys.stdout.write(format_segments(rows, fmt))
    if fmt == "table":                  # for a person: the sums under the table (summary.json has them exact)
        sys.stdout.write(summary_line(summary, ctx.now_ms) + "\n")
    sys.stdout.flush()
    if ctx.out:
        write_report(ctx.out, rows, summary, ctx.now_ms, fmt=fmt, inputs=describe(ctx),
                     groups=_groups(executor, ctx))
    return EXIT_OK


def _groups(executor: Executor, ctx: JobContext) -> list[dict[str, Any]] | None:
    """The consumer groups' summary for the report (problems first: the groups job's rules at the
    same ``--now`` and configs), or None when the log dirs hold no ``__consumer_offsets``."""
    from kafka_format.common.topics import CONSUMER_OFFSETS_TOPIC
    from kafka_format.engine.groups import group_rows
    from kafka_format.read.planning import open_partitions
    from kafka_format.report.groups_report import summarize as summarize_groups
    from kafka_format.storage.logdir import open_log_dirs
    dirs = open_log_dirs(ctx.logdirs)               # listed once, for the check and the job
    if not any(r.topic == CONSUMER_OFFSETS_TOPIC for r in open_partitions(dirs)):
        return None
    result = group_rows(executor, dirs, ctx.now_ms, configs=ctx.configs, topics=ctx.topics or None,
                        topic_pattern=ctx.topic_pattern)
    groups: list[dict[str, Any]] = summarize_groups(result.rows.to_pylist())["groups"]
    return groups


if __name__ == "__main__":
    sys.exit(main())
