"""``klogs audit LOGDIR... --out DIR [--format text|json] [--fail-on error|warning|never]`` (docs/jobs/).

Every check of kafka-dump-log (``--deep-iteration``, ``--verify-index-only``,
``--index-sanity-check``) plus checkpoint, leader-epoch, producer-snapshot, ``.txnindex``,
hanging-transaction and cross-replica checks, over all partitions in parallel
(:func:`kafka_format.spark.audit.audit`; the checks: :mod:`kafka_format.log.audit.auditor`).

Writes ``DIR/findings/`` (Parquet: severity, check, topic, partition, file, position, offset,
expected, actual, message), ``DIR/files/`` (Parquet: byte accounting per ``.log``) and
``DIR/report.html``, published atomically (only over an absent path, an empty directory or a
previous audit output: its ``.klogs-output`` marker; else exit 2, nothing touched); prints the findings to stdout (text lines, or JSON
lines with ``--format json``; on a terminal the informational findings of a check are one line).  Exit 0 clean, 1 findings at or above ``--fail-on`` (default
error), 2 could not run.  Also runs as ``spark-submit jobs/audit.py ARGS``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kafka_format.log.audit.auditor import REPORT_OWNER, at_or_above, format_finding
from kafka_format.jobs.jobargs import (
    EXIT_FINDINGS,
    EXIT_OK,
    JobContext,
    add_common_arguments,
    claim_out,
    describe,
    engine_for,
    job_context,
    run_main,
    session_for,
)
from kafka_format.report.audit_page import summary_line
from kafka_format.report.audit_report import write_outputs

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
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the job; returns the exit code (0 clean, 1 findings at or above --fail-on, 2 could not run)."""
    return run_main(build_parser(), argv, _body, prog="audit")


def _body(args: argparse.Namespace) -> int:
    ctx = job_context(args)
    with claim_out(ctx, REPORT_OWNER):      # refused or busy: exit 2 before any work
        return _run(ctx, args)


def _run(ctx: JobContext, args: argparse.Namespace) -> int:
    if engine_for(ctx) == "local":
        from kafka_format.engine.audit import audit_local

        findings, files = audit_local(ctx.logdirs, topics=ctx.topics or None, topic_pattern=ctx.topic_pattern,
                                      configs=ctx.configs, deep=not args.shallow, now_ms=ctx.now_ms)
    else:
        spark = session_for(ctx, "audit")
        from kafka_format.spark.audit import audit

        findings_df, files_df = audit(spark, ctx.logdirs, topics=ctx.topics or None,
                                      topic_pattern=ctx.topic_pattern, configs=ctx.configs,
                                      deep=not args.shallow, now_ms=ctx.now_ms)
        findings = [r.asDict() for r in findings_df.collect()]
        files = [r.asDict() for r in files_df.collect()]
    write_outputs(str(ctx.out), findings, files, now_ms=ctx.now_ms, logdirs=describe(ctx)["logdirs"])
    if ctx.format == "json":
        lines = [json.dumps(row, sort_keys=False) for row in findings]
    else:
        fold = sys.stdout.isatty()
        lines = finding_lines(findings, fold=fold, out=str(ctx.out))
        if fold:                      # a person at a terminal: the sums, and where the page is
            lines.append(f"{summary_line(findings, files)}; report: {ctx.out}/report.html")
    for line in lines:
        sys.stdout.write(line + "\n")
    sys.stdout.flush()
    return EXIT_FINDINGS if at_or_above(findings, args.fail_on) else EXIT_OK


def finding_lines(findings: list[dict[str, Any]], *, fold: bool, out: str) -> list[str]:
    """The text lines: one per finding; with ``fold`` (a person at a terminal) every error and
    warning line, then the informational findings one line per check when a check has several
    (every finding stays in ``out``: ``findings/`` and ``report.html``, and in ``--format json``)."""
    if not fold:
        return [format_finding(row) for row in findings]
    infos: dict[str, list[dict[str, Any]]] = {}
    lines = []
    for row in findings:
        if row["severity"] == "info":
            infos.setdefault(row["check"], []).append(row)
        else:
            lines.append(format_finding(row))
    for check, rows in infos.items():
        if len(rows) == 1:
            lines.append(format_finding(rows[0]))
        else:
            where = sorted({f"{r['topic']}-{r['partition']}" for r in rows if r["topic"] is not None})
            shown = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
            lines.append(f"INFO {check}: {len(rows)} findings" + (f" in {shown}" if shown else "")
                         + f" (each one in {out}/report.html)")
    return lines


if __name__ == "__main__":
    sys.exit(main())
