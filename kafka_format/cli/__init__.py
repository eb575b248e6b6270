"""``klogs``: the command line of kafka-log-analytics (docs/jobs/).

Subcommands:

* ``klogs dump FILES...`` — kafka-dump-log compatible text (or ``--json`` lines),
  no Spark (:mod:`kafka_format.cli.dump`);
* ``klogs schemas LOGDIR...`` — the Schema Registry's subjects, versions and ids from its
  ``_schemas`` topic, no Spark (:mod:`kafka_format.cli.schemas`);
* ``klogs demo --out DIR`` — what ``make demo`` runs (:mod:`kafka_format.cli.demo`);
* ``klogs offsets|retention|compaction|audit|export ARGS`` — the same code as
  ``spark-submit jobs/JOB.py ARGS``: ``main(argv)`` of :mod:`kafka_format.jobs.JOB`.

``main(argv=None) -> int`` never calls ``sys.exit`` itself; the console script
wrapper does.

May import: every layer (the top one).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from kafka_format import __version__
from kafka_format.engine import one_blas_thread
from kafka_format.jobs import JOBS, find_job
from kafka_format.jobs.interrupts import EXIT_INTERRUPTED, interrupted, interrupts_handled

__all__ = ["EXIT_FINDINGS", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "JOBS", "build_parser", "find_job", "main"]

EXIT_OK = 0
EXIT_FINDINGS = 1   # errors found in the input (dump) / findings at or above --fail-on (audit)
EXIT_USAGE = 2      # could not run: bad arguments, missing module, unreadable input
# EXIT_INTERRUPTED = 130: Ctrl-C (kafka_format.jobs.interrupts)


def build_parser() -> argparse.ArgumentParser:
    """The ``klogs`` argument parser (dump and demo; job subcommands pass their args through)."""
    from kafka_format.cli import demo, dump, schemas

    parser = argparse.ArgumentParser(
        prog="klogs",
        description="Read, audit, compact, retain, look up and export Kafka log directories offline.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}",
                        help="print the version of kafka-log-analytics and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    dump.add_arguments(sub.add_parser(
        "dump", help="print segment/index files like kafka-dump-log (no Spark)",
        description="kafka-dump-log compatible output for .log, .index, .timeindex, .snapshot, "
                    ".txnindex and KRaft .checkpoint files.",
    ))
    schemas.add_arguments(sub.add_parser(
        "schemas", help="subjects, versions and ids of the Schema Registry's _schemas topic (no Spark)",
        description="The subjects, versions, ids and types the Schema Registry's storage topic holds, "
                    "replayed as the registry replays it.",
    ))
    demo.add_arguments(sub.add_parser(
        "demo", help="run the product on data_samples/ and print where results are",
    ))
    for name, text in JOBS.items():
        sub.add_parser(name, help=text, add_help=False)
    return parser


def _run_job(name: str, argv: list[str]) -> int:
    try:
        entry = find_job(name)
    except ImportError as exc:  # an install without what the job needs
        print(f"klogs {name}: cannot load the job ({exc})", file=sys.stderr)
        return EXIT_USAGE
    return int(entry(argv) or 0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``klogs`` with ``argv`` (default ``sys.argv[1:]``); return the exit code (130 after a
    Ctrl-C: one line on stderr, the run's clean-up done)."""
    one_blas_thread()
    args_list = list(sys.argv[1:] if argv is None else argv)
    command = args_list[0] if args_list and not args_list[0].startswith("-") else None
    try:
        with interrupts_handled():
            return _main(args_list)
    except KeyboardInterrupt:    # a job's own run turns it into its line; here: parsing, dump, demo, schemas
        return interrupted(command or "")


def _main(args_list: list[str]) -> int:
    if args_list and args_list[0] in JOBS:
        return _run_job(args_list[0], args_list[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # argparse: --help, --version (0) or a usage error (2)
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except BrokenPipeError:  # `klogs dump ... | head`
        # Python's documented recipe: point stdout at devnull so the flush at exit is silent.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
