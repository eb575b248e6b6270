"""``klogs groups LOGDIR... [--group G ...|--group-pattern RE] [--now T] [--offsets-retention-minutes M]
[--offsets-topic-partitions N] [--format jsonl|table|kafka] [--out DIR]`` (docs/jobs/groups.md).

One line per consumer group, topic and partition (:data:`kafka_format.engine.groups.COLUMNS`): the
committed offset as the group coordinator loads it from ``__consumer_offsets``, the partition's log
start, high watermark and log end, the lag in records, bytes and time, when the offset expires,
and what the retention pass at ``--now`` deletes that the group has not read.  ``--format kafka``
prints what ``kafka-consumer-groups --describe --all-groups`` prints (Kafka 4.4, offsets view).  ``--out DIR`` also
writes ``groups.jsonl`` (or ``groups.txt``), ``summary.json`` and ``report.html``, published
atomically to a path that does not exist, an empty directory or a previous report of this job.

Exit codes: 0 no group has lost or is losing unread records, 1 some group has (``lostRecords`` or
``retentionLossRecords`` > 0) or a ``__consumer_offsets`` record Kafka's loader refuses was found,
2 the job could not run.  Also runs as ``spark-submit jobs/groups.py ARGS``.  Semantics:
:mod:`kafka_format.log.groups`.
"""

from __future__ import annotations

import argparse
import re
import sys

from kafka_format.engine.groups import GroupSelection
from kafka_format.jobs.jobargs import (
    EXIT_FINDINGS,
    EXIT_OK,
    JobContext,
    UsageError,
    add_common_arguments,
    claim_out,
    describe,
    executor_for,
    job_context,
    run_main,
)
from kafka_format.log.groups import DEFAULT_OFFSETS_RETENTION_MS
from kafka_format.report.groups_report import (
    REPORT_OWNER,
    format_kafka,
    format_rows,
    summarize,
    summary_line,
    write_report,
)


def build_parser() -> argparse.ArgumentParser:
    """Common job flags plus ``--group``, ``--group-pattern`` and ``--offsets-retention-minutes``."""
    parser = argparse.ArgumentParser(
        prog="klogs groups",
        description="Consumer groups from __consumer_offsets as the group coordinator loads them: committed "
                    "offsets, lag in records, bytes and time, offset expiry, and the unread records the "
                    "retention pass at --now deletes (no broker).")
    add_common_arguments(parser, formats=("jsonl", "table", "kafka"), default_format="jsonl")
    parser.add_argument("--group", action="append", default=[], dest="groups", metavar="G",
                        help="only this group (repeatable)")
    parser.add_argument("--group-pattern", metavar="RE", help="only groups whose whole id matches RE")
    parser.add_argument("--offsets-retention-minutes", type=int, default=DEFAULT_OFFSETS_RETENTION_MS // 60_000,
                        metavar="M", help="the brokers' offsets.retention.minutes (default %(default)s)")
    parser.add_argument("--offsets-topic-partitions", type=int, default=None, metavar="N",
                        help="the brokers' offsets.topic.num.partitions: a group's records count only in its "
                             "own partition, abs(hash(group)) %% N (default: not checked)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the job; returns the exit code (0 ok, 1 data at risk or refused records, 2 could not run)."""
    return run_main(build_parser(), argv, _body, prog="groups")


def _body(args: argparse.Namespace) -> int:
    ctx = job_context(args)
    if args.group_pattern is not None:
        try:
            re.compile(args.group_pattern)
        except re.error as exc:
            raise UsageError(f"--group-pattern {args.group_pattern!r}: {exc}") from None
    if args.offsets_retention_minutes <= 0:
        raise UsageError("--offsets-retention-minutes: must be a positive number of minutes")
    if args.offsets_topic_partitions is not None and args.offsets_topic_partitions <= 0:
        raise UsageError("--offsets-topic-partitions: must be a positive number of partitions")
    with claim_out(ctx, REPORT_OWNER):      # refused or busy: exit 2 before any work
        return _run(ctx, args)


def _run(ctx: JobContext, args: argparse.Namespace) -> int:
    from kafka_format.engine.groups import group_rows

    result = group_rows(executor_for(ctx, "groups"), ctx.logdirs, ctx.now_ms, configs=ctx.configs,
                        groups=GroupSelection(tuple(args.groups), args.group_pattern),
                        topics=ctx.topics or None, topic_pattern=ctx.topic_pattern,
                        retention_ms=args.offsets_retention_minutes * 60_000,
                        offsets_partitions=args.offsets_topic_partitions)
    rows = result.rows.to_pylist()
    anomalies = result.anomalies.to_pylist()
    summary = summarize(rows)
    fmt = ctx.format or "jsonl"
    if fmt == "kafka":              # kafka-consumer-groups --describe --all-groups, its stdout and stderr
        text, messages = format_kafka(rows)
        sys.stderr.write(messages)
        sys.stdout.write(text)
    else:
        sys.stdout.write(format_rows(rows, fmt, ctx.now_ms))
    sys.stdout.flush()
    for note in result.notes:
        print(f"klogs groups: note: {note}", file=sys.stderr)
    for a in anomalies:
        print(f"klogs groups: {a['topic']}-{a['partition']} offset {a['offset']}: {a['kind']}: "
              f"{a['message']}", file=sys.stderr)
    if fmt == "table":
        print(summary_line(summary))
    elif not sys.stdout.isatty():   # piped: the sums on stderr
        print(summary_line(summary), file=sys.stderr)
    if ctx.out:
        inputs = {**describe(ctx), "groups": list(args.groups), "groupPattern": args.group_pattern,
                  "offsetsRetentionMinutes": args.offsets_retention_minutes,
                  "offsetsTopicPartitions": args.offsets_topic_partitions}
        write_report(ctx.out, rows, summary, anomalies, ctx.now_ms, fmt=fmt, inputs=inputs, notes=result.notes)
        print(f"klogs groups: report in {ctx.out}", file=sys.stderr)
    at_risk = summary["total"]["groupsLosing"] or summary["total"]["groupsLost"]
    refused = any(a["kind"] == "refused" for a in anomalies)
    return EXIT_FINDINGS if at_risk or refused else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
