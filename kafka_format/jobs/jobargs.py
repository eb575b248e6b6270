"""The flags every job shares (docs/jobs/) and the plumbing around a job's body.

``jobs/<name>.py`` builds its parser with :func:`add_common_arguments`, turns the parsed flags
into a :class:`JobContext` with :func:`job_context`, gets a session with :func:`session_for`
and runs its body under :func:`run_job`, which turns bad input into exit code 2 with a one-line
message instead of a traceback.  Nothing here imports pyspark at module level.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_format.common.errors import KafkaFormatError, KafkaLogOptionError
from kafka_format.jobs.interrupts import EXIT_INTERRUPTED, interrupted, interrupts_handled, take_interrupts
from kafka_format.log.topicconfig import ConfigError, TopicConfigs, load_topic_configs, parse_time
from kafka_format.storage.partition_state import TopicSelection
from kafka_format.storage.s3a import is_s3a

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafka_format.engine.runtime import Executor
    from kafka_format.output.ownership import Owner
    from kafka_format.output.publish import Claim

__all__ = [
    "EXIT_FINDINGS",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "SPARK_EXTRA_HINT",
    "JobContext",
    "UsageError",
    "add_common_arguments",
    "add_remote_storage_arguments",
    "check_inputs",
    "claim_out",
    "describe",
    "engine_for",
    "executor_for",
    "install_redacting_hooks",
    "interrupted",
    "interrupts_handled",
    "job_context",
    "jvm_log_path",
    "locations",
    "missing_extra",
    "parse_args",
    "redacting_excepthook",
    "remote_storage_options",
    "run_job",
    "run_main",
    "session_for",
]

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


class UsageError(ValueError):
    """A flag combination or value the job cannot run with (exit code 2)."""


# What Spark runs need beyond the base install: pyproject.toml's [spark] extra, by top-level module
SPARK_EXTRA_MODULES = {"pyspark": "pyspark", "py4j": "pyspark", "delta": "delta-spark", "pandas": "pandas",
                       "deltalake": "deltalake", "fastavro": "fastavro", "google": "protobuf",
                       "grpc_tools": "grpcio-tools"}
SPARK_EXTRA_HINT = "install the spark extra: pip install 'kafka-log-analytics[spark]'"


def missing_extra(exc: ImportError) -> str | None:
    """The one line for an import of a package of the ``[spark]`` extra that this install lacks
    (None for any other import error: a bug, shown as itself)."""
    name = (getattr(exc, "name", None) or "").split(".")[0]
    if not isinstance(exc, ModuleNotFoundError) or name not in SPARK_EXTRA_MODULES:
        return None
    return f"this needs {SPARK_EXTRA_MODULES[name]}, which is not installed here: {SPARK_EXTRA_HINT}"


def add_common_arguments(parser: argparse.ArgumentParser, *, formats: Sequence[str] | None = None,
                         default_format: str | None = None, out_required: bool = False) -> None:
    """Declare docs/jobs/index.md's common flags on ``parser``."""
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
        default = default_format or formats[0]
        tty = "table" if "table" in formats and default != "table" else None
        parser.add_argument("--format", choices=list(formats), default=None,
                            help=f"output format (default {default}"
                                 + (", or table when stdout is a terminal)" if tty else ")"))
        parser.set_defaults(_default_format=default, _tty_format=tty)
    parser.add_argument("--master", metavar="URL",
                        help="Spark master (default: the session spark-submit made, else spark_conf/local.conf)")
    parser.add_argument("--engine", choices=("auto", "local", "spark"), default="auto",
                        help="where the work runs: local (this process, no JVM), spark, or auto (default: "
                             "local without --master for inputs up to 1 GiB of segments, else spark)")
    parser.add_argument("--verbose", action="store_true",
                        help="show Spark's own log lines on stderr (default: they go to a log file, "
                             "named when a run fails)")


def add_remote_storage_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``--remote-storage``, ``--remote-storage-format`` and ``--remote-storage-key`` (the
    ``kafka-log`` options ``remoteStorage``/``remoteStorageFormat``/``remoteStorageKey``: a tiered
    partition's remote tier)."""
    from kafka_format.read.tiers import REMOTE_STORAGE_FORMATS

    parser.add_argument("--remote-storage", metavar="URI",
                        help="the remote tier of tiered partitions (tiered storage): the root of Kafka's "
                             "LocalTieredStorage, its kafka-tiered-storage dir or the dir holding it")
    parser.add_argument("--remote-storage-format", choices=REMOTE_STORAGE_FORMATS, default=None,
                        help="the remote storage's layout: local-tiered (Kafka's LocalTieredStorage), aiven "
                             "(Aiven's RemoteStorageManager: the storage root with its key.prefix), auto (default)")
    parser.add_argument("--remote-storage-key", metavar="[ID=]PEM", action="append", default=[],
                        help="the private RSA key (PEM file) of encrypted remote segments (Aiven's "
                             "encryption.key.pairs), as <key id>=<path> or <path> (tried for every id); "
                             "repeat for several key ids")


def remote_storage_options(args: argparse.Namespace) -> dict[str, str]:
    """The ``kafka-log`` options of ``--remote-storage``/``--remote-storage-format``/``--remote-storage-key``."""
    out: dict[str, str] = {}
    if getattr(args, "remote_storage", None):
        out["remoteStorage"] = args.remote_storage
    if getattr(args, "remote_storage_format", None):
        out["remoteStorageFormat"] = args.remote_storage_format
    if getattr(args, "remote_storage_key", None):
        out["remoteStorageKey"] = ",".join(args.remote_storage_key)
    return out


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
    # s3a:// outputs to claim once the session has S3A's settings (session_for): (location, owner)
    store_claims: list[tuple[str, Owner]] = field(default_factory=list)

    def selects(self, topic: str) -> bool:
        """--topic / --topic-pattern (full match); with neither, every topic."""
        return TopicSelection.of(self.topics, self.topic_pattern).matches(topic)


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
    # s3a:// log dirs are opened once the session has S3A's settings (session_for)
    check_inputs([d for d in args.logdirs if not is_s3a(d)])
    configs = _configs(args, [d for d in args.logdirs if not is_s3a(d)])
    _use_remote_storage_keys(args)
    return JobContext(
        logdirs=list(args.logdirs), topics=list(args.topics), topic_pattern=args.topic_pattern, now_ms=now_ms,
        configs=configs, out=args.out, format=_output_format(args), master=args.master, args=args)


def _use_remote_storage_keys(args: argparse.Namespace) -> None:
    """``--remote-storage-key``: the keys this run (and the workers it starts) decrypts remote segments with."""
    keys = getattr(args, "remote_storage_key", None)
    if not keys:
        return
    from kafka_format.common.errors import KafkaFormatError
    from kafka_format.storage.aiven_rsm import parse_key_specs, use_keys

    try:
        use_keys(parse_key_specs(keys))
    except KafkaFormatError as exc:
        raise UsageError(f"--remote-storage-key: {exc}") from None


def _configs(args: argparse.Namespace, logdirs: list[str]) -> TopicConfigs:
    """Topic configs from ``--config``, ``--config-file`` and the KRaft metadata in ``logdirs``."""
    return load_topic_configs(logdirs, overrides=list(args.configs), config_file=args.config_file)


def _output_format(args: argparse.Namespace) -> str | None:
    """``--format``, else the job's default: ``table`` for a person at a terminal where the job has one."""
    chosen = getattr(args, "format", None)
    if chosen is not None:
        return str(chosen)
    tty = getattr(args, "_tty_format", None)
    if tty is not None and sys.stdout.isatty():
        return str(tty)
    default = getattr(args, "_default_format", None)
    return None if default is None else str(default)


def check_inputs(logdirs: Sequence[str]) -> None:
    """Every LOGDIR must hold at least one partition directory; checked on the driver before any
    Spark session starts, so a mistyped path costs no JVM and is never an empty answer with exit 0."""
    from kafka_format.storage.logdir import DEFAULT_MAX_DEPTH, open_log_dirs

    for path in logdirs:
        found = open_log_dirs([path])          # a missing path or a file raises LogDirError (exit 2)
        if next(iter(found.partitions()), None) is None:
            raise UsageError(
                f"{path}: no Kafka partition directory found; expected a broker's log dir, a "
                f"<topic>-<partition> directory holding <offset>.log segments, or a parent of log dirs "
                f"(searched {DEFAULT_MAX_DEPTH} levels down)")


def engine_for(ctx: JobContext, *, needs_spark: str | None = None) -> str:
    """The engine of this run (:func:`kafka_format.engine.choose_engine`): ``spark`` under
    spark-submit or beside a session already running in this process, else ``--engine``
    (``auto``: by input size, ``--master`` and ``needs_spark``, named in one line on stderr)."""
    from kafka_format.engine import choose_engine

    requested = str(getattr(ctx.args, "engine", None) or "auto")
    if os.environ.get("PYSPARK_GATEWAY_PORT"):          # jobs/*.py under spark-submit
        return "spark"
    if needs_spark is None and any(is_s3a(loc) for loc in locations(ctx)):
        needs_spark = "s3a:// locations (Hadoop's S3A connector, set up by Spark's fs.s3a.* settings)"
    if requested == "auto" and _active_session() is not None:
        return "spark"
    try:
        choice = choose_engine(requested, master=ctx.master, logdirs=ctx.logdirs, needs_spark=needs_spark,
                               remote_storage=getattr(ctx.args, "remote_storage", None),
                               remote_storage_format=getattr(ctx.args, "remote_storage_format", None) or "auto")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if choice.engine == "spark" and importlib.util.find_spec("pyspark") is None:
        raise UsageError(f"{choice.reason} runs on Spark, and pyspark is not installed here: "
                         f"{SPARK_EXTRA_HINT}")
    if requested == "auto":
        print(f"klogs: {choice.line()}", file=sys.stderr, flush=True)
    if choice.engine == "local":
        from kafka_format.engine import without_pandas

        without_pandas()
    return choice.engine


def executor_for(ctx: JobContext, app_name: str, *, needs_spark: str | None = None) -> Executor:
    """The executor of this run, chosen once (:func:`engine_for`): this process's cores, or the
    session's Spark executors (:func:`session_for`)."""
    if engine_for(ctx, needs_spark=needs_spark) == "local":
        from kafka_format.engine.runtime import LocalExecutor

        return LocalExecutor()
    from kafka_format.spark.executor import SparkExecutor

    return SparkExecutor(session_for(ctx, app_name, source=False), description=f"klogs {app_name}")


def _active_session() -> Any:
    """The Spark session running in this process, without importing pyspark when none can be."""
    if "pyspark" not in sys.modules:
        return None
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def session_for(ctx: JobContext, app_name: str, *, source: bool = True) -> SparkSession:
    """The active session (in tests, or the one spark-submit configures: its ``--master`` and
    ``--conf`` rule) or, for ``klogs JOB``, one built from ``spark_conf/local.conf``; ``--master``
    applies when a new session is built.  ``source``: with the ``kafka-log`` source registered (a
    job whose tasks run on the runtime's executor reads without it)."""
    from kafka_format.engine import allow_pandas

    allow_pandas()                      # a local run earlier in this process kept pandas out
    from pyspark.sql import SparkSession

    from kafka_format.spark.session import ALWAYS, build_session

    active = SparkSession.getActiveSession()
    if active is None and ctx.master is None and os.environ.get("PYSPARK_GATEWAY_PORT"):
        # Launched by spark-submit: its --master/--conf rule; spark_conf/local.conf must not.
        active = SparkSession.builder.appName(f"klogs {app_name}").getOrCreate()
    if active is not None and ctx.master is None:
        for key, value in ALWAYS.items():
            active.conf.set(key, value)
        return _ready(active, ctx, source)
    global _jvm_log, _verbose
    verbose = _verbose = bool(getattr(ctx.args, "verbose", False))
    _jvm_log = None if verbose else jvm_log_path(app_name)
    spark = build_session(master=ctx.master, profile="local", app_name=f"klogs {app_name}", jvm_log=_jvm_log,
                          s3a=any(is_s3a(loc) for loc in locations(ctx)), delta=ctx.format == "delta",
                          source=source)
    if not verbose:                     # Spark's own bar went to the log file with the JVM's output
        import atexit

        from kafka_format.spark.progress import ConsoleProgress

        atexit.register(ConsoleProgress(spark).start().stop)
    return _ready(spark, ctx, source)


def _ready(spark: SparkSession, ctx: JobContext, source: bool = True) -> SparkSession:
    """``spark`` set up for this run's locations (``s3a://`` credentials and settings:
    :func:`kafka_format.spark.s3a.prepare`), the source registered if ``source``, the ``s3a://`` inputs and
    outputs checked; Ctrl-C handled by the run again (a SparkContext starting installs PySpark's
    own SIGINT handler)."""
    from kafka_format.spark import register
    from kafka_format.spark.s3a import prepare

    take_interrupts()
    prepare(spark, locations(ctx))
    if source:
        register(spark)
    if any(is_s3a(d) for d in ctx.logdirs):
        check_inputs([d for d in ctx.logdirs if is_s3a(d)])
        ctx.configs = _configs(ctx.args, ctx.logdirs)     # with the KRaft metadata of the s3a:// log dirs
    if ctx.store_claims:
        from kafka_format.output.store import claim

        for target, owner in ctx.store_claims:
            claim(target, owner, inputs=ctx.logdirs)
    return spark


def locations(ctx: JobContext) -> list[str]:
    """Every location of a run: its log dirs, ``--out`` and ``--checkpoint``."""
    extra = [getattr(ctx.args, "checkpoint", None), ctx.out]
    return [*ctx.logdirs, *(str(x) for x in extra if x)]


_jvm_log: str | None = None       # this run's Spark log file, once session_for started a JVM
_verbose = False                  # --verbose: Spark's and Py4J's own output stays on the console


class _Py4JToSparkLog(logging.Handler):
    """Py4J logs a dead JVM's broken socket with a traceback on stderr; a job's user gets
    :mod:`kafka_format.jobs.sparkerrors`' one line instead, and the record goes to this run's Spark
    log file (with ``--verbose``, to stderr as Py4J would have it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = _redact(self.format(record))
            if _verbose:
                print(text, file=sys.stderr)
            elif _jvm_log is not None:
                with open(_jvm_log, "a", encoding="utf-8") as log:
                    log.write(text + "\n")
        except Exception:   # a log record must never fail the job
            pass


class _RootPy4JRecords(logging.Filter):
    """Py4J logs a failed send on the *root* logger (``logging.exception`` in ``java_gateway``),
    which would print its traceback on stderr through ``logging``'s default handler: those records
    go where Py4J's own logger's go."""

    def __init__(self, handler: logging.Handler) -> None:
        super().__init__()
        self.handler = handler

    def filter(self, record: logging.LogRecord) -> bool:
        if f"{os.sep}py4j{os.sep}" in (record.pathname or ""):
            self.handler.handle(record)
            return False
        return True


def jvm_log_path(app_name: str) -> str:
    """Where a ``klogs`` run's Spark (JVM and Python workers) writes its own log lines:
    ``$KLOGS_LOG_DIR`` or ``~/.cache/kafka-log-analytics/logs``, one file per run."""
    root = os.environ.get("KLOGS_LOG_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "kafka-log-analytics", "logs")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return os.path.join(root, f"klogs-{app_name}-{stamp}-{os.getpid()}.log")


def claim_out(ctx: JobContext, owner: Owner, *, file: bool = False,
              path: str | None = None, flag: str = "--out") -> AbstractContextManager[Claim | None]:
    """Hold the job's output (``path``, default ``--out``) for the run: refused (exit 2) unless it
    is absent, empty or this job's previous output, or when another run holds it (see
    :func:`kafka_format.output.publish.claim_output`); a no-op without an output.  An ``s3a://`` output
    is checked by :func:`session_for` once the session has S3A's settings
    (:func:`kafka_format.output.store.claim`: the same rules, no lock)."""
    from kafka_format.output.publish import claim_output, local_path

    target = ctx.out if path is None else path
    if target is None:
        return nullcontext()
    if is_s3a(target) and not file:
        ctx.store_claims.append((target, owner))        # checked by session_for, before any work
        return nullcontext()
    try:
        local_path(target)
    except ValueError as exc:
        hint = "" if file else "; a directory of outputs may also be s3a://"
        raise UsageError(f"{flag}: {exc}{hint}") from None
    return claim_output(target, owner, inputs=ctx.logdirs, file=file, what="checkpoint" if flag == "--checkpoint" else "output")


def run_job(body: Callable[[], int], *, prog: str) -> int:
    """Run a job body; bad input, bad flags, I/O errors and Spark failures (a failed task, a JVM out
    of memory or gone: :mod:`kafka_format.jobs.sparkerrors`) become one line on stderr and exit 2.
    Anything else is a bug and goes through as itself; its traceback, when Python prints it, has
    URI credentials redacted like every other line (:func:`redacting_excepthook`)."""
    from kafka_format.jobs.sparkerrors import spark_failure
    from kafka_format.storage.fsio import listing_cache

    install_redacting_hooks()
    py4j = logging.getLogger("py4j")
    handler = _Py4JToSparkLog()
    root_filter = _RootPy4JRecords(handler)
    saved = py4j.propagate
    py4j.addHandler(handler)
    py4j.propagate = False
    logging.getLogger().addFilter(root_filter)
    try:
        with interrupts_handled():
            with listing_cache():    # the input dirs are listed and their state files read once per run
                return _run_body(body, prog, spark_failure)
    finally:
        logging.getLogger().removeFilter(root_filter)
        py4j.removeHandler(handler)
        py4j.propagate = saved


def _run_body(body: Callable[[], int], prog: str, spark_failure: Callable[[BaseException], Any]) -> int:
    try:
        return int(body() or 0)
    except KeyboardInterrupt:  # Ctrl-C: the run's own clean-up ran on the way out
        return interrupted(prog)
    except BrokenPipeError:   # `klogs JOB | head`
        return EXIT_OK
    except ModuleNotFoundError as exc:    # a package of the [spark] extra this install lacks
        line = missing_extra(exc)
        if line is None:
            raise
        print(f"klogs {prog}: {line}", file=sys.stderr)
        return EXIT_USAGE
    except (KafkaFormatError, ConfigError, UsageError, KafkaLogOptionError, OSError) as exc:
        failure = spark_failure(exc) if isinstance(exc, OSError) else None   # a dead JVM's refused socket
        print(_redact(f"klogs {prog}: {failure or exc}{_log_hint(failure)}"), file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        failure = spark_failure(exc)
        if failure is None:
            raise
        print(_redact(f"klogs {prog}: {failure}{_log_hint(failure)}"), file=sys.stderr)
        return EXIT_USAGE


def redacting_excepthook(exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
    """``sys.excepthook`` printing the traceback as Python would, URI credentials redacted (an
    unexpected error's message, a chained cause, a Py4J error's Java stack trace may name a
    ``scheme://user:secret@`` location)."""
    import traceback

    sys.stderr.write(_redact("".join(traceback.format_exception(exc_type, exc, tb))))
    sys.stderr.flush()


def _redacting_thread_hook(args: Any) -> None:
    if args.exc_type is SystemExit:
        return
    name = getattr(args.thread, "name", "?")
    sys.stderr.write(f"Exception in thread {name}:\n")
    redacting_excepthook(args.exc_type, args.exc_value, args.exc_traceback)


def install_redacting_hooks() -> None:
    """Make Python print uncaught exceptions (main thread and others) through
    :func:`redacting_excepthook`; idempotent."""
    import threading

    sys.excepthook = redacting_excepthook
    threading.excepthook = _redacting_thread_hook


def _redact(line: str) -> str:
    """The line with URI credentials redacted (:func:`kafka_format.storage.fsio.redact`)."""
    from kafka_format.storage.fsio import redact

    return redact(line)


def _log_hint(failure: object) -> str:
    """`` (Spark's log: PATH)`` after a Spark failure of a run whose JVM output went to a file."""
    if failure is None or _jvm_log is None or not os.path.exists(_jvm_log):
        return ""
    return f" (Spark's log: {_jvm_log})"


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
    from kafka_format.storage.fsio import redact

    return {"logdirs": [redact(d) for d in ctx.logdirs], "topics": ctx.topics, "topicPattern": ctx.topic_pattern, "nowMs": ctx.now_ms}
