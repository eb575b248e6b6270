"""The flags every job shares (DESIGN.md §4) and the plumbing around a job's body.

``jobs/<name>.py`` builds its parser with :func:`add_common_arguments`, turns the parsed flags
into a :class:`JobContext` with :func:`job_context`, gets a session with :func:`session_for`
and runs its body under :func:`run_job`, which turns bad input into exit code 2 with a one-line
message instead of a traceback.  Nothing here imports pyspark at module level.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_format.errors import KafkaFormatError
from kafka_format.topicconfig import ConfigError, TopicConfigs, load_topic_configs, parse_time

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["add_common_arguments", "JobContext", "job_context", "session_for", "run_job", "run_main", "parse_args",
           "describe",
           "UsageError",
           "EXIT_OK", "EXIT_FINDINGS", "EXIT_USAGE"]

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


class UsageError(ValueError):
    """A flag combination or value the job cannot run with (exit code 2)."""


def add_common_arguments(parser: argparse.ArgumentParser, *, formats: Sequence[str] | None = None,
                         default_format: str | None = None, out_required: bool = False) -> None:
    """Declare DESIGN §4's common flags on ``parser``."""
    parser.add_argument("logdirs", nargs="+", metavar="LOGDIR",
                        help="broker log dirs, partition dirs or a parent of several brokers' log dirs "
                             "(local paths or pyarrow.fs URIs)")
    parser.add_argument("--topic", action="append", default=[], dest="topics", metavar="T",
                        help="only this topic (repeatable)")
    parser.add_argument("--topic-pattern", metavar="RE", help="only topics whose whole name matches RE")
    parser.add_argument("--now", metavar="TIME",
                        help="the time to evaluate at: ms since the epoch or ISO-8601 (default: now)")
    parser.add_argument("--config", action="append", default=[], dest="configs", metavar="TOPIC:KEY=VALUE",
                        help="topic config override (repeatable; TOPIC '*' = every topic; broker synonyms "
                             "such as log.retention.hours only with '*')")
    parser.add_argument("--config-file", metavar="F",
                        help='topic configs: JSON {"topic": {"key": "value"}} or properties topic.key=value')
    parser.add_argument("--out", required=out_required, metavar="PATH", help="where results go")
    if formats:
        parser.add_argument("--format", choices=list(formats), default=default_format or formats[0],
                            help="output format (default %(default)s)")
    parser.add_argument("--master", metavar="URL",
                        help="Spark master (default: the session spark-submit made, else spark_conf/local.conf)")


@dataclass
class JobContext:
    """Parsed common flags, with the time and the topic configs resolved."""

    logdirs: list[str]
    topics: list[str]
    topic_pattern: str | None
    now_ms: int
    configs: TopicConfigs
    out: str | None
    format: str | None
    master: str | None
    args: argparse.Namespace

    def selects(self, topic: str) -> bool:
        """--topic / --topic-pattern (full match); with neither, every topic."""
        if not self.topics and self.topic_pattern is None:
            return True
        if topic in self.topics:
            return True
        return self.topic_pattern is not None and re.fullmatch(self.topic_pattern, topic) is not None


def job_context(args: argparse.Namespace) -> JobContext:
    """Resolve ``--now``, the topic selection and the topic configs of parsed common flags."""
    try:
        now_ms = parse_time(args.now) if args.now is not None else int(time.time() * 1000)
    except ValueError as exc:
        raise UsageError(f"--now: {exc}") from None
    if args.topic_pattern is not None:
        try:
            re.compile(args.topic_pattern)
        except re.error as exc:
            raise UsageError(f"--topic-pattern {args.topic_pattern!r}: {exc}") from None
    configs = load_topic_configs(list(args.logdirs), overrides=list(args.configs), config_file=args.config_file)
    return JobContext(
        logdirs=list(args.logdirs), topics=list(args.topics), topic_pattern=args.topic_pattern, now_ms=now_ms,
        configs=configs, out=args.out, format=getattr(args, "format", None), master=args.master, args=args)


def session_for(ctx: JobContext, app_name: str) -> SparkSession:
    """The active session (in tests, or the one spark-submit configures: its ``--master`` and
    ``--conf`` rule) or, for ``klogs JOB``, one built from ``spark_conf/local.conf``; ``--master``
    applies when a new session is built."""
    from pyspark.sql import SparkSession

    from kafka_format.spark import register
    from kafka_format.spark.session import ALWAYS, build_session

    active = SparkSession.getActiveSession()
    if active is None and ctx.master is None and os.environ.get("PYSPARK_GATEWAY_PORT"):
        # Launched by spark-submit: its --master/--conf rule; spark_conf/local.conf must not.
        active = SparkSession.builder.appName(f"klogs {app_name}").getOrCreate()
    if active is not None and ctx.master is None:
        for key, value in ALWAYS.items():
            active.conf.set(key, value)
        register(active)
        return active
    return build_session(master=ctx.master, profile="local", app_name=f"klogs {app_name}")


def run_job(body: Callable[[], int], *, prog: str) -> int:
    """Run a job body; bad input, bad flags, I/O errors and Spark failures (a failed task, a JVM out
    of memory or gone: :mod:`kafka_format.cli.sparkerrors`) become one line on stderr and exit 2."""
    from kafka_format.cli.sparkerrors import spark_failure

    try:
        return int(body() or 0)
    except BrokenPipeError:   # `klogs JOB | head`
        return EXIT_OK
    except (KafkaFormatError, ConfigError, UsageError, OSError) as exc:
        failure = spark_failure(exc) if isinstance(exc, OSError) else None   # a dead JVM's refused socket
        print(f"klogs {prog}: {failure or exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        failure = spark_failure(exc)
        if failure is None:
            raise
        print(f"klogs {prog}: {failure}", file=sys.stderr)
        return EXIT_USAGE


def run_main(parser: argparse.ArgumentParser, argv: Sequence[str] | None,
             body: Callable[[argparse.Namespace], int], *, prog: str) -> int:
    """A job's ``main``: parse ``argv`` (argparse's own exit codes for --help and bad usage), then
    :func:`run_job` the body with the parsed flags."""
    args = parse_args(parser, argv)
    if isinstance(args, int):
        return args
    return run_job(lambda: body(args), prog=prog)


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace | int:
    """``parser.parse_args`` that returns argparse's exit code (0 for --help, 2 for bad usage)
    instead of raising SystemExit, so ``main(argv)`` can return it."""
    try:
        return parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE


def describe(ctx: JobContext) -> dict[str, Any]:
    """The inputs of a run, for summaries (log dirs, selection, now, non-default configs)."""
    return {"logdirs": ctx.logdirs, "topics": ctx.topics, "topicPattern": ctx.topic_pattern, "nowMs": ctx.now_ms}
