"""``klogs compaction LOGDIR... --out DIR [--mode cleaner|full] [--write-segments]`` (docs/jobs/).

``cleaner`` (default): what Kafka's log cleaner keeps after cleaning everything cleanable at
``--now``; ``full``: the compacted table view.  Writes ``DIR/records/`` (Parquet: the data
source's columns + ``decision``, ``reason``, ``supersededBy``), ``DIR/summary.json`` and, with
``--write-segments`` (cleaner mode), ``DIR/segments/<log-dir name>/<topic>-<partition>/`` in
Kafka's format.  Everything is built in a staging directory beside ``DIR`` and published as
``DIR`` with one rename (``s3a://DIR``: built locally, then uploaded as
:mod:`kafka_format.output.store` publishes).  ``DIR`` must be absent, empty or a previous output of this job (its
``.klogs-output`` marker), else the job exits 2 touching nothing; a second run on the same ``DIR``
exits 2 naming the first.  Leftovers of a crashed run of the same ``DIR`` are removed first.  The logic lives in :mod:`kafka_format.engine.compaction` and :mod:`kafka_format.engine.table_view`.

Also runs as ``spark-submit jobs/compaction.py ARGS``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from kafka_format.common.redaction import redact
from kafka_format.jobs.jobargs import (
    EXIT_OK,
    JobContext,
    UsageError,
    add_common_arguments,
    add_remote_storage_arguments,
    claim_out,
    describe,
    executor_for,
    job_context,
    run_main,
)
from kafka_format.output import publish
from kafka_format.output.ownership import Owner
from kafka_format.output.store import is_store, output_dir
from kafka_format.report.compaction_page import render_compaction_page, summary_line
from kafka_format.report.text import table

PROG = "compaction"
OWNER = Owner(PROG, "results")          # the marker of DIR


def build_parser() -> argparse.ArgumentParser:
    """Common job flags plus ``--mode`` and ``--write-segments``."""
    parser = argparse.ArgumentParser(prog=f"klogs {PROG}", description="What Kafka's log cleaner keeps at --now (cleaner mode) or the compacted table "
                                     "view (full mode), with a per-partition summary; --write-segments also writes the "
                                     "cleaned log dirs in Kafka's format.")
    add_common_arguments(parser, out_required=True)
    parser.add_argument("--mode", choices=("cleaner", "full"), default="cleaner",
                        help="cleaner: what the log cleaner keeps at --now (default); full: the table view")
    parser.add_argument("--write-segments", action="store_true",
                        help="cleaner mode: also write the cleaned partitions in Kafka's format to DIR/segments/")
    parser.add_argument("--force", action="store_true",
                        help="cleaner mode: clean partitions the cleaner would not pick now (dirty ratio)")
    parser.add_argument("--cleaner-batch-rows", type=int, default=8192, metavar="N",
                        help="cleaner mode: records a cleaner task decodes at a time (default 8192); with the "
                             "offset map (log.cleaner.dedupe.buffer.size) and the read buffer "
                             "(log.cleaner.io.buffer.size) it bounds a task's memory, whatever the partition's size")
    add_remote_storage_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the job; exit code 0 on success, 2 when it cannot run."""
    return run_main(build_parser(), argv, _body, prog=PROG)


def _body(args: argparse.Namespace) -> int:
    if args.cleaner_batch_rows < 1:
        raise UsageError(f"--cleaner-batch-rows must be at least 1, not {args.cleaner_batch_rows}")
    if args.write_segments and args.mode != "cleaner":
        raise UsageError("--write-segments needs --mode cleaner (the table view has no log format)")
    if args.remote_storage and args.mode != "full":
        raise UsageError("--remote-storage needs --mode full (the log cleaner does not run on tiered topics: "
                         "Kafka refuses compaction with remote storage)")
    if is_store(args.out):
        out = args.out
    else:
        try:
            out = os.path.abspath(publish.local_path(args.out))
        except ValueError as exc:
            raise UsageError(f"--out: {exc}; a directory of outputs may also be s3a://") from None
    ctx = job_context(args)
    with claim_out(ctx, OWNER):          # refused or busy: exit 2 before any work; own leftovers removed
        return _run(ctx, args, out)


def _run(ctx: JobContext, args: argparse.Namespace, out: str) -> int:
    executor = executor_for(ctx, PROG)
    summary: dict[str, object] = {"mode": args.mode, **describe(ctx)}
    unclean: list[str] = []             # written log dirs left without .kafka_cleanshutdown
    with output_dir(out, OWNER) as stage:
        records_dir = os.path.join(stage, "records")
        if args.mode == "full":
            from kafka_format.engine.table_view import full_pass

            summary["partitions"] = sorted(full_pass(executor, ctx.logdirs, records_dir, topics=ctx.topics,
                                                     topic_pattern=ctx.topic_pattern, remote_storage=args.remote_storage,
                                                     remote_storage_format=args.remote_storage_format or "auto"),
                                           key=_partition_order)
        else:
            pending = os.path.join(stage, ".records")     # named records/ once the segments are complete
            segments = os.path.join(stage, "segments") if args.write_segments else None
            from kafka_format.engine.compaction import cleaner_pass

            rows = cleaner_pass(executor, ctx.logdirs, ctx.configs, ctx.now_ms, records_dir=pending, topics=ctx.topics,
                                topic_pattern=ctx.topic_pattern, force=args.force, segments_dir=segments,
                                batch_rows=args.cleaner_batch_rows)       # records and segments written by the tasks
            if args.write_segments:
                from kafka_format.engine.compaction import finish_segments_dir, without_clean_shutdown

                finish_segments_dir(os.path.join(stage, "segments"), rows)
                unclean = without_clean_shutdown(os.path.join(stage, "segments"))
            summary["partitions"] = sorted(({**r, "segmentsDir": None if r["segmentsDir"] is None
                                             else os.path.relpath(str(r["segmentsDir"]), stage)} for r in rows),
                                           key=_partition_order)
            if args.write_segments:
                publish.crash_point("compaction:segments-written")
            os.rename(pending, records_dir)
        publish.crash_point("compaction:records-written")
        with open(os.path.join(stage, "summary.json"), "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2, sort_keys=False)
            f.write("\n")
        with open(os.path.join(stage, "report.html"), "w", encoding="utf-8") as f:
            f.write(render_compaction_page(summary))
    _print_summary(summary["partitions"], args.mode)  # type: ignore[arg-type]
    if args.mode == "cleaner":
        print(summary_line(summary))
    for name in unclean:
        print(f"segments/{name}: no .kafka_cleanshutdown, as its input log dir has none (a running or crashed "
              "broker's): its active segments are left for the broker to recover when it starts")
    print(f"results: {redact(out)}")
    return EXIT_OK


def _print_summary(parts: list[dict[str, object]], mode: str) -> None:
    """One line per partition replica on stdout (the whole summary is in summary.json)."""
    if mode == "full":
        headers = ["topic", "partition", "recordsBefore", "recordsAfter", "keys"]
    else:
        headers = ["topic", "partition", "logDir", "recordsBefore", "recordsAfter", "bytesBefore", "bytesAfter",
                   "dirtyRatio", "wouldCleanNow", "reason"]
    rows = [[_cell(p.get(h), h) if h != "dirtyRatio" or p.get("compact") else "-" for h in headers]
            for p in parts]
    for line in table(headers, rows):
        print(line)


def _cell(value: object, header: str) -> object:
    """A summary value as a person reads it (summary.json keeps the exact numbers)."""
    from kafka_format.common.units import human_bytes

    if value is None:
        return "-"
    if header == "logDir":
        return os.path.basename(str(value).rstrip("/"))
    if header in ("bytesBefore", "bytesAfter"):
        return human_bytes(int(value))  # type: ignore[call-overload]
    if header == "dirtyRatio":
        return f"{float(value):.1%}"  # type: ignore[arg-type]
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return value


def _partition_order(row: dict[str, object]) -> tuple[str, int, str]:
    return str(row["topic"]), int(row["partition"]), str(row["logDir"])  # type: ignore[call-overload]


if __name__ == "__main__":
    sys.exit(main())
