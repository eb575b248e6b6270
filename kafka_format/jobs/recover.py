"""``klogs recover LOGDIR... --out DIR [--write-segments] [--format jsonl|table]`` (docs/jobs/recover.md).

A dry run of the broker's next start: per replica, what ``LogManager``/``LogLoader``/``LogSegment.recover``
keep, truncate, delete and rebuild (:mod:`kafka_format.log.recovery`), one line per replica on stdout
and in ``DIR/partitions.jsonl``, ``DIR/report.html``; ``--write-segments`` also writes
``DIR/segments/`` as the broker leaves them.  ``--out`` publishes only to a path that does not exist,
an empty directory or a previous report.  Exit 0 nothing lost, 1 records would be dropped, 2 could
not run.  Also runs as ``spark-submit jobs/recover.py ARGS``.
"""

from __future__ import annotations

import argparse
import sys

from kafka_format.jobs.jobargs import (
    EXIT_OK,
    JobContext,
    add_common_arguments,
    claim_out,
    executor_for,
    job_context,
    run_main,
)
from kafka_format.report.recover_report import REPORT_OWNER, format_rows, write_report

EXIT_RECORDS_DROPPED = 1


def build_parser() -> argparse.ArgumentParser:
    """Common job flags, ``--out`` required, ``--write-segments``, ``--format jsonl|table``."""
    parser = argparse.ArgumentParser(
        prog="klogs recover",
        description="What the broker's log loader will keep, truncate, delete and rebuild on its next "
                    "start (dry run: the input is never changed).")
    add_common_arguments(parser, formats=("jsonl", "table"), default_format="jsonl", out_required=True)
    parser.add_argument("--write-segments", action="store_true",
                        help="also write DIR/segments/: the segment files as the broker leaves them")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the job; returns the exit code (0 nothing lost, 1 records would be dropped, 2 could not run)."""
    return run_main(build_parser(), argv, _body, prog="recover")


def _body(args: argparse.Namespace) -> int:
    ctx = job_context(args)
    with claim_out(ctx, REPORT_OWNER):      # refused or busy: exit 2 before any work
        return _run(ctx)


def _run(ctx: JobContext) -> int:
    from kafka_format.engine.recover import recover_plans, recover_tasks
    from kafka_format.storage.logdir import open_log_dirs

    dirs = open_log_dirs(ctx.logdirs, include_special=True)
    tasks = recover_tasks(dirs, ctx.configs, topics=ctx.topics or None, topic_pattern=ctx.topic_pattern)
    plans = recover_plans(executor_for(ctx, "recover"), tasks)
    rows = [p.row() for p in plans]
    sys.stdout.write(format_rows(rows, ctx.format or "jsonl"))
    sys.stdout.flush()
    if ctx.out:
        index = {d.path: i for i, d in enumerate(dirs)}
        write_report(ctx.out, rows, segments=[(index.get(t.part.log_dir, 0), t.part, p)
                                              for t, p in zip(tasks, plans, strict=True)]
                     if ctx.args.write_segments else None)
    return EXIT_RECORDS_DROPPED if any(r["recordsDropped"] for r in rows) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
