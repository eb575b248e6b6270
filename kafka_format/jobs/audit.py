"""``klogs audit LOGDIR... --out DIR [--format text|json] [--fail-on error|warning|never]`` (docs/jobs/).

Every check of kafka-dump-log (``--deep-iteration``, ``--verify-index-only``,
``--index-sanity-check``) plus checkpoint, leader-epoch, producer-snapshot, ``.txnindex``,
hanging-transaction and cross-replica checks, over all partitions in parallel
(:func:`kafka_format.engine.audit.audit_run`; the checks: :mod:`kafka_format.log.audit.auditor`).

Writes ``DIR/findings/`` (Parquet: severity, check, topic, partition, file, position, offset,
expected, actual, message), ``DIR/files/`` (Parquet: byte accounting per ``.log``) and
``DIR/report.html``, published atomically (only over an absent path, an empty directory or a
previous audit output: its ``.klogs-output`` marker; else exit 2, nothing touched); prints the findings to stdout (text lines, or JSON
lines with ``--format json``; on a terminal the informational findings of a check are one line), then,
for the text lines, a line of sums and the report's path (piped: on stderr, stdout one finding a line).  Exit 0 clean, 1 findings at or above ``--fail-on`` (default
error), 2 could not run.  Also runs as ``spark-submit jobs/audit.py ARGS``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_format.jobs.jobargs import (
    EXIT_FINDINGS,
    EXIT_OK,
    JobContext,
    add_common_arguments,
    add_remote_storage_arguments,
    claim_out,
    describe,
    executor_for,
    job_context,
    run_main,
)
from kafka_format.log.audit.auditor import at_or_above, format_finding
from kafka_format.log.audit.tables import findings_table, iter_rows
from kafka_format.report.audit_page import summary_line
from kafka_format.report.audit_report import REPORT_OWNER, write_outputs
from kafka_format.storage.fsio import redact

FAIL_ON = ("error", "warning", "never")


def build_parser() -> argparse.ArgumentParser:
    """Common job flags plus ``--format text|json``, ``--fail-on`` and ``--shallow``."""
    parser = argparse.ArgumentParser(
        prog="klogs audit",
        description="Find corruption, index damage, checkpoint and epoch inconsistencies, hanging "
                    "transactions and replica divergence in Kafka log dirs, offline.")
    add_common_arguments(parser, formats=("text", "json"), default_format="text", out_required=True)
    parser.add_argument("--fail-on", choices=FAIL_ON, default="error",
                        help="exit 1 when a finding has this severity or worse (default %(default)s)")
    parser.add_argument("--shallow", action="store_true",
                        help="skip record-level checks (non-consecutive offsets, time index vs "
                             "record timestamps)")
    add_remote_storage_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the job; returns the exit code (0 clean, 1 findings at or above --fail-on, 2 could not run)."""
    return run_main(build_parser(), argv, _body, prog="audit")


def _body(args: argparse.Namespace) -> int:
    ctx = job_context(args)
    with claim_out(ctx, REPORT_OWNER):      # refused or busy: exit 2 before any work
        return _run(ctx, args)


def _run(ctx: JobContext, args: argparse.Namespace) -> int:
    from kafka_format.engine.audit import audit_run

    findings, files = audit_run(executor_for(ctx, "audit"), ctx.logdirs, topics=ctx.topics or None,
                                topic_pattern=ctx.topic_pattern, configs=ctx.configs, deep=not args.shallow,
                                now_ms=ctx.now_ms,
                                remote_storage=(None if args.remote_storage is None
                                                else (args.remote_storage, args.remote_storage_format or "auto")))
    write_outputs(str(ctx.out), findings, files, now_ms=ctx.now_ms, logdirs=describe(ctx)["logdirs"])
    if ctx.format == "json":
        lines: Iterable[str] = (json.dumps(row, sort_keys=False) for row in iter_rows(findings))
        fold = False
    else:
        fold = sys.stdout.isatty()
        lines = finding_lines(findings, fold=fold, out=redact(str(ctx.out)))
    for line in lines:
        sys.stdout.write(line + "\n")
    sys.stdout.flush()
    if ctx.format != "json":      # the sums, and where the page is: last on a terminal; piped, on stderr
        last = f"{summary_line(findings, files)}; report: {redact(str(ctx.out))}/report.html"
        print(last, file=sys.stdout if fold else sys.stderr, flush=True)     # (stdout: one finding a line)
    return EXIT_FINDINGS if at_or_above(findings, args.fail_on) else EXIT_OK


def finding_lines(findings: pa.Table | Sequence[dict[str, Any]], *, fold: bool, out: str) -> Iterator[str]:
    """The text lines: one per finding; with ``fold`` (a person at a terminal) every error and
    warning line, then the informational findings one line per check when a check has several
    (every finding stays in ``out``: ``findings/`` and ``report.html``, and in ``--format json``)."""
    table = findings_table(findings)
    if not fold:
        yield from (format_finding(row) for row in iter_rows(table))
        return
    info = pc.equal(table["severity"], "info")
    yield from (format_finding(row) for row in iter_rows(table.filter(pc.invert(info))))
    infos = table.filter(info)
    counts = dict(zip(*infos.group_by("check", use_threads=False).aggregate([([], "count_all")])
                      .to_pydict().values()))
    where: dict[str, list[str]] = {}
    placed = infos.filter(pc.is_valid(infos["topic"])).group_by(["check", "topic", "partition"], use_threads=False)
    for check, topic, part in zip(*placed.aggregate([]).select(["check", "topic", "partition"]).to_pydict().values()):
        where.setdefault(check, []).append(f"{topic}-{part}")
    for check in pc.unique(infos["check"]).to_pylist():
        if counts[check] == 1:
            yield format_finding(next(iter_rows(infos.filter(pc.equal(infos["check"], check)))))
            continue
        names = sorted(set(where.get(check, [])))
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        yield (f"INFO {check}: {counts[check]} findings" + (f" in {shown}" if shown else "")
               + f" (each one in {out}/report.html)")


if __name__ == "__main__":
    sys.exit(main())
