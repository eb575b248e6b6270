"""``klogs export`` / ``spark-submit jobs/export.py``: topic history to Parquet, Delta or Iceberg (docs/jobs/).

    klogs export LOGDIR... --out URI [--format parquet|delta|iceberg] [--partition-by topic,partition|date]
        [--table NS.NAME] [--catalog rest:URL|sql:URI]
        [--checkpoint URI] [--key-as binary|string|F] [--value-as binary|string|json|F]
        [--schemas SOURCE] [--key-subject S] [--value-subject S] [--key-schema FILE]
        [--value-schema FILE] [--key-message NAME] [--value-message NAME]
        [--topic T]... [--topic-pattern RE] [--master URL]
        [--isolation-level read_uncommitted|read_committed] [--option KEY=VALUE]...

``--now``/``--config``/``--config-file`` are accepted (common flags) and unused.  Extensions:
``--isolation-level`` and ``--option KEY=VALUE`` (repeatable) pass options to the ``kafka-log``
source (e.g. ``--option mode=PERMISSIVE``, ``--option upTo=highWatermark``).  Prints one JSON
object (what was published, with every byte range the read skipped: ``skipped_ranges``) on
stdout, and the skipped ranges' totals on stderr when there are any; a FAILFAST error about
damaged bytes names the ``--option mode=`` values that would skip them.  F is ``avro``,
``protobuf``, ``json-schema`` or ``auto``: typed columns from the Schema Registry wire format (:mod:`kafka_format.jobs.typedargs`).
A local ``--out`` / ``--checkpoint`` that is not absent, empty or this kind of export's own previous
output, or that another run holds, is refused with exit 2 before Spark starts.  Logic: :mod:`kafka_format.spark.export`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from kafka_format.common.errors import KafkaFormatError
from kafka_format.jobs.jobargs import (
    EXIT_OK,
    JobContext,
    UsageError,
    add_common_arguments,
    add_remote_storage_arguments,
    engine_for,
    executor_for,
    job_context,
    remote_storage_options,
    run_main,
    session_for,
)
from kafka_format.jobs.typedargs import TYPED_AS, add_typed_arguments, typed_from_args

if TYPE_CHECKING:
    from kafka_format.engine.export import ExportResult
    from kafka_format.registry.typed import TypedPlan

__all__ = ["build_parser", "main"]

PROG = "export"
# The data source's FAILFAST hint (kafka_format.read.split_reader.SKIP_HINT) in this job's flags.
SKIP_FLAGS = "use --option mode=PERMISSIVE or --option mode=DROPMALFORMED to skip the range (each skipped range is reported)"


def build_parser() -> argparse.ArgumentParser:
    """The ``klogs export`` argument parser."""
    from kafka_format.engine.export import FORMATS

    parser = argparse.ArgumentParser(prog=f"klogs {PROG}", description="Topic history to Parquet, Delta or Iceberg with every kafka-log "
                                     "column; with --checkpoint, incrementally and exactly once.")
    add_common_arguments(parser, formats=FORMATS, default_format="parquet", out_required=True)
    parser.add_argument("--table", default=None, metavar="NS.NAME",
                        help="--format iceberg: the table (default kafka.topic_history)")
    parser.add_argument("--catalog", default=None, metavar="rest:URL|sql:URI",
                        help="--format iceberg: the catalog (default: SQLite at OUT/catalog.db, warehouse OUT); "
                             "rest:URL an Iceberg REST catalog (user:secret@ in URL: its OAuth2 credential), "
                             "sql:URI a SQLAlchemy database")
    parser.add_argument("--partition-by", default="topic,partition", choices=["topic,partition", "date"],
                        metavar="topic,partition|date",
                        help="output partitioning: topic=T/partition=P/ directories (the default) or date=YYYY-MM-DD/ "
                             "(the records' UTC day)")
    parser.add_argument("--checkpoint", metavar="URI",
                        help="Spark streaming checkpoint: export incrementally, exactly once across runs")
    typed = "|".join(TYPED_AS)
    parser.add_argument("--key-as", default="binary", choices=["binary", "string", *TYPED_AS],
                        metavar=f"binary|string|{typed}",
                        help="the key column: bytes (default), a string as Kafka's StringDeserializer "
                             "decodes it, or typed columns from the Schema Registry wire format")
    parser.add_argument("--value-as", default="binary", choices=["binary", "string", "json", *TYPED_AS],
                        metavar=f"binary|string|json|{typed}",
                        help="the value column: as --key-as, or json (the record's JSON text, every value "
                             "checked to parse; Spark)")
    add_typed_arguments(parser)
    parser.add_argument("--isolation-level", choices=["read_uncommitted", "read_committed"],
                        help="kafka-log isolationLevel (extension)")
    add_remote_storage_arguments(parser)
    parser.add_argument("--option", action="append", default=[], dest="options", metavar="KEY=VALUE",
                        help="kafka-log data-source option (repeatable, extension)")
    return parser


def _options(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--option {pair!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


def main(argv: list[str] | None = None) -> int:
    """Run ``klogs export``; returns the exit code."""
    return run_main(build_parser(), argv, _body, prog=PROG)


def _body(args: argparse.Namespace) -> int:
    from kafka_format.engine.export import check_location, hold_outputs, source_options

    ctx = job_context(args)
    if (args.table is not None or args.catalog is not None) and ctx.format != "iceberg":
        raise UsageError("--table and --catalog are --format iceberg's")
    opts = source_options(topics=ctx.topics, topic_pattern=ctx.topic_pattern,
                          isolation_level=args.isolation_level,
                          extra={**remote_storage_options(args), **_options(args.options)})
    if ctx.format == "iceberg":
        return _iceberg(ctx, args, opts)
    try:
        check_location(str(ctx.out), format=ctx.format or "parquet", incremental=bool(args.checkpoint))
    except ValueError as exc:
        raise UsageError(f"--out: {exc}") from None
    typed = typed_from_args(args, ctx.logdirs, ctx.topics, ctx.topic_pattern, opts)   # before Spark starts
    # refused or busy: exit 2 now (s3a:// ones once the session has S3A's settings: export() checks them)
    with hold_outputs(str(ctx.out), format=ctx.format or "parquet", incremental=bool(args.checkpoint),
                      checkpoint=args.checkpoint, inputs=ctx.logdirs, stores=False), _skip_flags():
        return _run(ctx, args, opts, typed)


def _iceberg(ctx: JobContext, args: argparse.Namespace, opts: dict[str, str]) -> int:
    """``--format iceberg`` on either engine: the tasks write the files, the driver commits them
    (:mod:`kafka_format.engine.iceberg`); ``--checkpoint``: the table's snapshots hold the offsets."""
    from kafka_format.engine.export import check_location, hold_outputs, needs_spark
    from kafka_format.engine.iceberg import DEFAULT_TABLE, export_iceberg

    incremental = bool(args.checkpoint)
    if args.catalog is None:
        try:
            check_location(str(ctx.out), format="iceberg", incremental=incremental)
        except ValueError as exc:
            raise UsageError(f"--out: {exc}") from None
    typed = typed_from_args(args, ctx.logdirs, ctx.topics, ctx.topic_pattern, opts)
    why = needs_spark(format="iceberg", checkpoint=args.checkpoint, value_as=args.value_as, key_as=args.key_as)
    with contextlib.ExitStack() as stack:
        if args.catalog is None:                # the default catalog's warehouse: refused or busy, exit 2 now
            stack.enter_context(hold_outputs(str(ctx.out), format="iceberg", incremental=incremental,
                                             inputs=ctx.logdirs, stores=False))
        stack.enter_context(_skip_flags())
        executor = executor_for(ctx, PROG, needs_spark=why)
        try:
            result = export_iceberg(executor, ctx.logdirs, str(ctx.out), table=args.table or DEFAULT_TABLE,
                                    catalog=args.catalog, options=opts, partition_by=args.partition_by,
                                    key_as=args.key_as, value_as=args.value_as, typed=typed,
                                    incremental=incremental)
        except ValueError as exc:      # bad option values, a bad --table or --catalog
            raise UsageError(str(exc)) from None
    _print_result(result, opts)
    return EXIT_OK


@contextmanager
def _skip_flags() -> Iterator[None]:
    """A FAILFAST error about the bytes read (its hint the data source's
    :data:`~kafka_format.read.split_reader.SKIP_HINT`) names this job's flags instead, on either
    engine (on Spark the error reaches the driver as the text of a failed task)."""
    from kafka_format.jobs.sparkerrors import SparkFailure, spark_failure
    from kafka_format.read.split_reader import SKIP_HINT

    try:
        yield
    except KafkaFormatError as exc:
        if exc.hint == SKIP_HINT:
            exc.with_hint(SKIP_FLAGS)
        raise
    except Exception as exc:
        failure = spark_failure(exc)
        if failure is None or SKIP_HINT not in str(failure):
            raise
        raise SparkFailure(str(failure).replace(SKIP_HINT, SKIP_FLAGS)) from None


def _print_result(result: ExportResult, opts: dict[str, str]) -> None:
    """The result on stdout (one JSON object, exact numbers); the skipped ranges' totals on stderr."""
    from kafka_format.common.units import human_bytes
    from kafka_format.engine.export import read_mode

    print(json.dumps(result.to_json(), sort_keys=True), flush=True)
    ranges = result.skipped_ranges
    if ranges:
        files = len({r["file"] for r in ranges})
        print(f"klogs {PROG}: {read_mode(opts)} skipped {len(ranges)} damaged byte range{'s' * (len(ranges) != 1)} "
              f"({human_bytes(result.skipped_bytes)}) in {files} "
              f"file{'s' * (files != 1)}; each one (file, position, length, reason) is in skipped_ranges on stdout",
              file=sys.stderr, flush=True)


def _run(ctx: JobContext, args: argparse.Namespace, opts: dict[str, str], typed: TypedPlan | None = None) -> int:
    from kafka_format.engine.export import needs_spark

    fmt = ctx.format or "parquet"
    why = needs_spark(format=fmt, checkpoint=args.checkpoint, value_as=args.value_as, key_as=args.key_as)
    if fmt == "parquet" and not args.checkpoint and args.value_as != "json":
        # a batch Parquet export: the job's tasks write their files from Arrow on either executor
        from kafka_format.engine.export import export_parquet

        executor = executor_for(ctx, PROG, needs_spark=why)
        try:
            result = export_parquet(executor, ctx.logdirs, str(ctx.out), options=opts,
                                    partition_by=args.partition_by, key_as=args.key_as, value_as=args.value_as,
                                    typed=typed)
        except ValueError as exc:      # bad option values
            raise UsageError(str(exc)) from None
        _print_result(result, opts)
        return EXIT_OK
    engine_for(ctx, needs_spark=why)     # "spark": refused with --engine local
    from kafka_format.spark.export import export, export_incremental, read_source

    spark = session_for(ctx, PROG)
    if typed is not None:
        from kafka_format.spark.typed import TypedColumns

        typed = TypedColumns.of(typed)
    common = dict(format=fmt, partition_by=args.partition_by,
                  key_as=args.key_as, value_as=args.value_as, typed=typed)
    try:
        if args.checkpoint:
            result = export_incremental(spark, ctx.logdirs, str(ctx.out), args.checkpoint, options=opts,
                                        **common)
        else:
            result = export(read_source(spark, ctx.logdirs, opts, typed=typed), str(ctx.out), **common)
    except ValueError as exc:          # bad option values, non-local Parquet target
        raise UsageError(str(exc)) from None
    _print_result(result, opts)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
