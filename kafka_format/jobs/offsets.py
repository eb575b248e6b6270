"""``klogs offsets LOGDIR... --timestamp T [--timestamp T ...] [--format jsonl|table]
[--isolation-level read_uncommitted|read_committed] [--remote-storage URI] [--out PATH]`` (docs/jobs/).

One line per partition and timestamp: ``{"topic","partition","timestamp","offset","recordTimestamp",
"leaderEpoch"}`` -- exactly Kafka's ListOffsets answer, ``offset`` null when Kafka returns none.
``T`` is ms since the epoch, ISO-8601, ``earliest``, ``latest``, ``max-timestamp`` or Kafka's
numeric -1..-6.  Output goes to stdout, or atomically to the file ``--out``: a path that does not
exist, or this job's previous file unchanged since (the hidden marker ``.NAME.klogs-output``
beside it names the job and the file's SHA-256); anything else is refused with exit 2.

Also runs as ``spark-submit jobs/offsets.py ARGS``.  Semantics: :mod:`kafka_format.log.list_offsets`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from kafka_format.common.units import utc_text_ms
from kafka_format.engine.offsets import COLUMNS
from kafka_format.jobs.jobargs import (
    EXIT_OK,
    JobContext,
    add_common_arguments,
    add_remote_storage_arguments,
    claim_out,
    executor_for,
    job_context,
    run_main,
)
from kafka_format.log.list_offsets import ISOLATION_LEVELS, SPEC_NAMES, parse_timestamp_spec
from kafka_format.output.ownership import Owner
from kafka_format.report.text import table

OWNER = Owner("offsets", "answers")          # the sidecar marker of an --out file


def _spec(text: str) -> int:
    try:
        return parse_timestamp_spec(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    """Common job flags plus ``--timestamp`` (repeatable) and ``--isolation-level``."""
    parser = argparse.ArgumentParser(
        prog="klogs offsets",
        description="Offset for timestamp per partition, exactly as Kafka's ListOffsets answers, from "
                    "index files (no broker).")
    add_common_arguments(parser, formats=("jsonl", "table"), default_format="jsonl")
    parser.add_argument("--timestamp", action="append", required=True, type=_spec, dest="timestamps",
                        metavar="T", help="ms, ISO-8601, earliest, latest, max-timestamp or -1..-6 (repeatable)")
    parser.add_argument("--isolation-level", choices=ISOLATION_LEVELS, default="read_uncommitted",
                        help="HW (read_uncommitted) or LSO (read_committed) hides later answers "
                             "(default %(default)s)")
    add_remote_storage_arguments(parser)
    return parser


def format_rows(rows: Sequence[dict[str, Any]], fmt: str) -> str:
    """jsonl (one object per line, exactly :data:`COLUMNS`) or an aligned text table for a person:
    ``timestamp`` as the name of a special value (``latest``) or a UTC date, ``recordTimestamp`` a
    UTC date (to the millisecond: the jsonl keeps the numbers), ``-`` where Kafka answers none."""
    if fmt == "jsonl":
        return "".join(json.dumps({k: r[k] for k in COLUMNS}) + "\n" for r in rows)
    return "".join(line + "\n" for line in table(list(COLUMNS), [[_cell(k, r[k]) for k in COLUMNS] for r in rows]))


_SPEC_TEXT = {v: k for k, v in SPEC_NAMES.items()}


def _cell(column: str, value: Any) -> str:
    if value is None:
        return "-"
    if column == "timestamp":
        return _SPEC_TEXT.get(int(value)) or utc_text_ms(int(value))
    if column == "recordTimestamp":
        return utc_text_ms(int(value))
    return str(value)


def main(argv: list[str] | None = None) -> int:
    """Run the job; returns the exit code (0 ok, 2 could not run)."""
    return run_main(build_parser(), argv, _body, prog="offsets")


def _body(args: argparse.Namespace) -> int:
    ctx = job_context(args)
    with claim_out(ctx, OWNER, file=True):    # refused or busy: exit 2 before any work
        return _run(ctx, args)


def _run(ctx: JobContext, args: argparse.Namespace) -> int:
    from kafka_format.engine.offsets import list_offsets

    rows = list_offsets(executor_for(ctx, "offsets"), ctx.logdirs, args.timestamps, topics=ctx.topics or None,
                        topic_pattern=ctx.topic_pattern, isolation_level=args.isolation_level,
                        remote_storage=args.remote_storage,
                        remote_storage_format=args.remote_storage_format or "auto", configs=ctx.configs).to_pylist()
    text = format_rows(rows, ctx.format or "jsonl")
    if ctx.out:
        from kafka_format.output.publish import publish_file

        publish_file(ctx.out, text.encode("utf-8"), OWNER)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
