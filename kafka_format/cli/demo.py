"""``klogs demo --out DIR``: the product end to end on small log dirs (what ``make demo`` runs).

Steps: a per-partition summary computed by the format library (segments, batches, records,
codecs, offset range), a few kafka-dump-log lines of one segment, the jobs on the local engine
(``--engine local``: each in a fresh ``klogs`` process, no JVM, outputs under ``DIR/local/``,
wall time shown), then — unless ``--no-spark`` is given — one local Spark session that reads the
``kafka-log`` data source (record count per topic, rows to ``DIR/records`` as Parquet) and runs
every job of docs/jobs/ in it (offsets, retention, compaction, audit, export) with its outputs
under ``DIR``, and a table of both engines' times.  A failing step is
reported and the others still run; the exit code is 0 when every step worked.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import shlex
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kafka_format.cli.output import TextOutput, table
from kafka_format.common.errors import KafkaFormatError
from kafka_format.jobs.interrupts import EXIT_INTERRUPTED, take_interrupts
from kafka_format.output.ownership import DEMO, new_run_id, write_marker
from kafka_format.output.publish import claim_output

__all__ = ["PartitionSummary", "add_arguments", "command_line", "default_log_dirs", "mtime_note", "run", "summarize"]

SAMPLES_LOGDIRS = Path(__file__).resolve().parent.parent.parent / "data_samples" / "logdirs"
DUMP_PREVIEW_LINES = 8


@dataclass
class PartitionSummary:
    """What the format library tells about one partition directory."""

    log_dir: str
    topic: str
    partition: int
    segments: int = 0
    batches: int = 0
    records: int = 0
    codecs: list[str] = field(default_factory=list)
    first_offset: int | None = None
    last_offset: int | None = None
    first_segment: str | None = None   # a non-empty .log, for the dump preview
    # non-empty .log files without a record timestamp >= 0 (magic 0): retention goes by their mtime
    untimed_logs: list[str] = field(default_factory=list)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``klogs demo`` flags on ``parser``."""
    parser.add_argument("--out", default="build/demo", metavar="DIR",
                        help="where results go (default %(default)s)")
    parser.add_argument("--logdir", action="append", default=[], metavar="DIR",
                        help="log dir to use (repeatable); default: data_samples/logdirs")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark part")
    parser.add_argument("--master", default="local[*]", help="Spark master (default %(default)s)")
    parser.add_argument("--verbose", action="store_true",
                        help="show Spark's own output (start-up lines, warnings) on stderr instead of in a "
                             "log file")
    parser.set_defaults(handler=run)


def command_line(name: str, argv: list[str]) -> str:
    """``klogs NAME ARGV`` as a shell line a user can paste (``--topic-pattern 'a|b'`` quoted)."""
    return shlex.join(["klogs", name, *argv])


def _no_samples() -> str:
    """Why there are no default log dirs, and what to do: in a checkout ``make samples`` writes
    them; an installed package has no ``data_samples/`` (and no Makefile) beside it."""
    generator = SAMPLES_LOGDIRS.parent / "generate.py"
    if generator.is_file():
        return f"{SAMPLES_LOGDIRS} is absent and no --logdir was given (run `make samples` in the checkout)"
    return ("this installation has no sample log dirs (they come with the source checkout); give a broker's "
            "log dir (or a copy of one) with --logdir DIR")


def default_log_dirs(explicit: Iterable[str]) -> list[str]:
    """``--logdir`` values if any, else ``data_samples/logdirs`` (a parent of broker log dirs)."""
    dirs = [d for d in explicit if d]
    if dirs:
        return dirs
    return [str(SAMPLES_LOGDIRS)] if SAMPLES_LOGDIRS.is_dir() else []


def _partition_dirs(log_dirs: list[str]) -> list[tuple[str, str, int, list[str]]]:
    """(log dir, topic, partition, .log paths in offset order) per partition (``open_log_dirs``)."""
    from kafka_format.storage.logdir import open_log_dirs

    parts = [(p.log_dir, p.topic, p.partition, [s.log_path for s in p.segments if s.log_path])
             for p in open_log_dirs(log_dirs).all_partitions()]
    return sorted(parts, key=lambda p: (p[1], p[2], p[0]))


def summarize(log_dirs: list[str]) -> list[PartitionSummary]:
    """Per-partition summary computed from batch headers and records by the format library."""
    from kafka_format.records import file_records as api

    summaries = []
    for log_dir, topic, partition, logs in _partition_dirs(log_dirs):
        s = PartitionSummary(log_dir=log_dir, topic=topic, partition=partition, segments=len(logs))
        codecs: set[str] = set()
        for log in logs:
            if os.path.getsize(log) == 0:
                continue
            if s.first_segment is None:
                s.first_segment = log
            timed = False
            for batch_table in api.decode_segment(log, granularity="batch"):
                s.batches += batch_table.num_rows
                timed = timed or any(t is not None and t >= 0 for t in batch_table.column("maxTimestamp").to_pylist())
                codecs.update(batch_table.column("compression").to_pylist())
                for base, last in zip(batch_table.column("baseOffset").to_pylist(),
                                      batch_table.column("lastOffset").to_pylist(), strict=True):
                    lo = last if base is None else base
                    s.first_offset = lo if s.first_offset is None else min(s.first_offset, lo)
                    s.last_offset = last if s.last_offset is None else max(s.last_offset, last)
            for record_table in api.decode_segment(log, granularity="record"):
                s.records += record_table.num_rows
            if not timed:
                s.untimed_logs.append(log)
        s.codecs = sorted(codecs)
        summaries.append(s)
    return summaries


def _print_summary(out: TextOutput, summaries: list[PartitionSummary]) -> None:
    rows = [[os.path.basename(s.log_dir.rstrip("/")), s.topic, s.partition, s.segments, s.batches, s.records,
             ",".join(s.codecs) or "-",
             "-" if s.first_offset is None else f"{s.first_offset}..{s.last_offset}"] for s in summaries]
    headers = ["logDir", "topic", "partition", "segments", "batches", "records", "codecs", "offsets"]
    for line in table(headers, rows):
        out.line(line)
    out.line(f"total: {len(summaries)} partitions, {sum(s.batches for s in summaries)} batches, "
             f"{sum(s.records for s in summaries)} records")


def mtime_note(summaries: list[PartitionSummary]) -> str | None:
    """The note under retention's answers when some segments carry no record timestamp: Kafka's
    retention then goes by the ``.log`` file's mtime, which a git clone sets to the checkout time
    (``make samples`` sets the generator's), so those lines depend on the files' times."""
    from kafka_format.common.units import utc_text

    untimed = [(s, log) for s in summaries for log in s.untimed_logs]
    if not untimed:
        return None
    parts = sorted({f"{s.topic}-{s.partition}" for s, _ in untimed})
    times = sorted({int(os.stat(log).st_mtime * 1000) for _, log in untimed})
    when = utc_text(times[0]) if len(times) == 1 else f"{utc_text(times[0])} to {utc_text(times[-1])}"
    return (f"note: {len(untimed)} segments ({', '.join(parts)}) hold no record timestamps, so retention goes by "
            f"their .log files' mtimes, here {when}: a git clone gives them its checkout time (`make samples` "
            "sets the generator's), so their retention lines depend on this copy's file times")


def _dump_preview(out: TextOutput, segment: str) -> bool:
    from kafka_format.cli.dump import DumpOptions, dump

    buf, err = io.StringIO(), io.StringIO()
    code = dump(DumpOptions(files=(segment,), deep_iteration=True), buf, err)
    lines = buf.getvalue().splitlines()
    for line in lines[:DUMP_PREVIEW_LINES]:
        out.line(f"  {line}")
    if len(lines) > DUMP_PREVIEW_LINES:
        more = len(lines) - DUMP_PREVIEW_LINES
        out.line(f"  ... ({more} more lines: {shlex.join(['klogs', 'dump', '--deep-iteration', segment])})")
    for line in err.getvalue().splitlines()[:3]:
        out.line(f"  (stderr) {line}")
    return code in (0, 1)


# The jobs on data_samples/: the samples' first record is at 2023-11-14T22:13:20Z; "now" is chosen
# so that retention and compaction have something to say.
_SAMPLES_NOW = "2023-11-22T00:00:00Z"
_PREVIEW_LINES = 12


def _job_runs(log_dirs: list[str], out_dir: Path) -> list[tuple[str, list[str], str]]:
    """(job, argv, where its results are) for the demo."""
    configs = [] if not SAMPLES_LOGDIRS.is_dir() else ["--config-file", str(SAMPLES_LOGDIRS / "topic-configs.json")]
    common = [*log_dirs, *configs, "--now", _SAMPLES_NOW]
    return [
        ("offsets", [*common, "--timestamp", "earliest", "--timestamp", "2023-11-14T22:15:00Z",
                     "--timestamp", "latest", "--timestamp", "max-timestamp", "--format", "table",
                     "--topic-pattern", "v2-codecs|transactions"], "(stdout)"),
        ("retention", [*common, "--format", "table", "--out", str(out_dir / "retention")],
         str(out_dir / "retention" / "disk-usage.html")),
        ("compaction", [*common, "--config", "compacted:min.cleanable.dirty.ratio=0.25", "--out",
                        str(out_dir / "compaction"), "--write-segments"],
         str(out_dir / "compaction" / "report.html")),
        ("audit", [*common, "--out", str(out_dir / "audit"), "--fail-on", "never"],
         str(out_dir / "audit" / "report.html")),
        ("export", [*common, "--out", str(out_dir / "export"), "--checkpoint", str(out_dir / "export-checkpoint"),
                    "--key-as", "string"], str(out_dir / "export")),
    ]


# the jobs the local engine runs in the demo (export's run there uses --checkpoint: Spark's)
_LOCAL_JOBS = ("offsets", "retention", "compaction", "audit")


def _local_part(out: TextOutput, log_dirs: list[str], out_dir: Path, note: str | None = None) -> dict[str, float]:
    """Each job with ``--engine local`` in a fresh ``klogs`` process; wall seconds per job that worked."""
    import time

    times: dict[str, float] = {}
    local_dir = out_dir / "local"
    for name, argv, _ in _job_runs(log_dirs, local_dir):
        if name not in _LOCAL_JOBS:
            continue
        # a job replaces its own previous output (a second demo run) and refuses anything else
        cmd = [sys.executable, "-c", "import sys; from kafka_format.cli import main; sys.exit(main(sys.argv[1:]))",
               name, *argv, "--engine", "local"]
        start = time.perf_counter()
        code, stderr = _run_child(cmd)
        wall = time.perf_counter() - start
        if code == 0:
            times[name] = wall
            out.line(f"  klogs {name} --engine local: {wall:.2f} s")
            if name == "retention" and note:
                out.line(f"  {note}")
        else:
            last = (stderr.strip().splitlines() or ["(no message)"])[-1]
            out.line(f"error: klogs {name} --engine local exited {code}: {last}")
    out.line(f"  outputs: {local_dir}")
    return times


def _run_child(cmd: list[str]) -> tuple[int, str]:
    """Run ``cmd`` (a ``klogs`` job); its exit code and stderr.  Ctrl-C: the job gets the SIGINT
    too (a terminal sends it to the whole group; sent on when only this process got it), its own
    clean-up runs to the end, then ``KeyboardInterrupt`` goes on here."""
    import signal
    import subprocess

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, stderr = proc.communicate()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)        # ignored by a job already handling its own
        proc.communicate()
        raise
    if proc.returncode in (EXIT_INTERRUPTED, -signal.SIGINT):
        raise KeyboardInterrupt
    return proc.returncode, stderr


class _PersonBuffer(io.StringIO):
    """The jobs' stdout in the demo: a person reads it, so the jobs write what they write at a
    terminal (audit's informational findings folded, the sums at the end)."""

    def isatty(self) -> bool:
        return True


def _run_job(out: TextOutput, name: str, argv: list[str]) -> bool:
    """Run job ``name`` in this process (it uses the active session); preview its stdout."""
    from kafka_format.jobs import find_job

    entry = find_job(name)
    buf, err = _PersonBuffer(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = int(entry(argv) or 0)
    if code == EXIT_INTERRUPTED:       # Ctrl-C: the job cleaned up; the demo stops too
        raise KeyboardInterrupt
    lines = buf.getvalue().splitlines()
    if lines and lines[-1].startswith("results: "):
        lines.pop()                    # the demo names the results itself, below
    # the first lines and the last: the jobs end with their sums for a person
    shown: list[str | None] = list(lines) if len(lines) <= _PREVIEW_LINES + 1 else \
        [*lines[:_PREVIEW_LINES], None, lines[-1]]
    for line in shown:
        out.line(f"  ... ({len(lines) - _PREVIEW_LINES - 1} more lines)" if line is None else f"  {line}")
    for line in err.getvalue().splitlines()[:3]:
        out.line(f"  (stderr) {line}")
    return code == 0


def _spark_part(out: TextOutput, log_dirs: list[str], out_dir: Path, master: str,
                times: dict[str, float] | None = None, *, verbose: bool = False, note: str | None = None) -> bool:
    """Read the log dirs with the ``kafka-log`` source, write Parquet, then run every job.  Spark's
    own output goes to a log file (named on stdout) unless ``verbose``, as for the jobs."""
    import time

    from kafka_format.jobs.jobargs import jvm_log_path
    from kafka_format.spark.session import build_session

    start = time.perf_counter()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    jvm_log = None if verbose else jvm_log_path("demo")
    spark = build_session(master=master, profile="local", app_name="klogs demo", jvm_log=jvm_log)
    take_interrupts()                  # Ctrl-C: Spark's work stops first (PySpark's handler replaced)
    if jvm_log is not None:
        out.line(f"(Spark's own output: {jvm_log})")
    if times is not None:
        times["(session start)"] = time.perf_counter() - start
    ok = True
    try:
        df = spark.read.format("kafka-log").load(log_dirs if len(log_dirs) > 1 else log_dirs[0])
        counts = df.groupBy("topic").count().orderBy("topic").collect()
        out.line("records per topic (Spark, kafka-log data source):")
        for line in table(["topic", "count"], [[r["topic"], r["count"]] for r in counts]):
            out.line(f"  {line}")
        target = out_dir / "records"
        df.write.mode("overwrite").parquet(str(target))
        out.line(f"Parquet rows written to: {target}")
        for step, (name, argv, where) in enumerate(_job_runs(log_dirs, out_dir), 5):
            out.line("")
            out.line(f"== {step}. klogs {name}")
            out.line(f"$ {command_line(name, argv)}")
            out.flush()
            started = time.perf_counter()
            try:
                good = _run_job(out, name, argv)
            except Exception as exc:  # noqa: BLE001 - report, the other jobs still run
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
                out.line(f"error: klogs {name} failed: {first}")
                good = False
            if good and times is not None:
                times[name] = time.perf_counter() - started
            if good and name == "retention" and note:
                out.line(note)
            out.line(f"results: {where}" if good else f"error: klogs {name} did not finish")
            ok = ok and good
        return ok
    finally:
        spark.stop()


def run(args: argparse.Namespace) -> int:
    """Entry point of ``klogs demo``."""
    out = TextOutput()
    out_dir = Path(args.out).resolve()
    log_dirs = default_log_dirs(args.logdir)
    if not log_dirs:
        out.error_line(f"klogs demo: no log dirs: {_no_samples()}")
        return 2
    try:
        with claim_output(out_dir, DEMO, inputs=log_dirs, what="demo output") as claim:
            out_dir.mkdir(parents=True, exist_ok=True)
            if claim.state != "own":
                write_marker(str(out_dir), DEMO, new_run_id())
            return _run_steps(args, out, out_dir, log_dirs)
    except KafkaFormatError as exc:        # refused (a user's directory) or busy (another demo)
        out.error_line(f"klogs demo: --out {exc}")
        return 2


def _run_steps(args: argparse.Namespace, out: TextOutput, out_dir: Path, log_dirs: list[str]) -> int:
    """The demo's steps, writing under ``out_dir`` (held by this run)."""
    out.line(f"== kafka-log-analytics demo on {', '.join(log_dirs)}")
    ok = True
    summaries: list[PartitionSummary] = []
    out.line("")
    out.line("== 1. partitions (format library, no Spark)")
    try:
        summaries = summarize(log_dirs)
    except Exception as exc:  # noqa: BLE001 - report and go on with the next step
        out.line(f"error: summary failed: {exc}")
        ok = False
    if summaries:
        _print_summary(out, summaries)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "summary.json").write_text(
            json.dumps([asdict(s) for s in summaries], indent=2) + "\n", encoding="utf-8")

    # preview a user topic's segment when there is one (internal topics start with "__")
    ordered = sorted(summaries, key=lambda s: s.topic.startswith("__"))
    segment = next((s.first_segment for s in ordered if s.first_segment), None)
    out.line("")
    out.line("== 2. klogs dump (kafka-dump-log format)")
    if segment is None:
        out.line("note: dump preview skipped: no non-empty segment found")
    else:
        out.line(f"$ {shlex.join(['klogs', 'dump', '--deep-iteration', segment])}")
        ok = _dump_preview(out, segment) and ok

    out.line("")
    out.line("== 3. the jobs on the local engine (--engine local: no JVM, a fresh process each)")
    local_times: dict[str, float] = {}
    try:
        local_times = _local_part(out, log_dirs, out_dir, mtime_note(summaries))
        ok = ok and len(local_times) == len(_LOCAL_JOBS)
    except Exception as exc:  # noqa: BLE001 - report and go on with the next step
        out.line(f"error: local engine part failed: {exc}")
        ok = False
    spark_times: dict[str, float] = {}

    out.line("")
    out.line("== 4. Spark (kafka-log data source)")
    if args.no_spark:
        out.line("note: Spark part and jobs skipped (--no-spark)")
    elif importlib.util.find_spec("pyspark") is None:
        out.line("note: Spark part and jobs skipped: pyspark is not installed")
    else:
        # the log dirs the library found (a parent directory is resolved to its broker log dirs)
        spark_dirs = sorted({s.log_dir for s in summaries}) or log_dirs
        try:
            ok = _spark_part(out, spark_dirs, out_dir, args.master, spark_times,
                             verbose=bool(getattr(args, "verbose", False)), note=mtime_note(summaries)) and ok
        except Exception as exc:  # noqa: BLE001 - report, the other steps stand
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            out.line(f"error: Spark part failed: {first}")
            ok = False

    if spark_times:
        out.line("")
        out.line("== both engines (wall seconds on these log dirs; Spark's jobs share one session)")
        start = spark_times.get("(session start)")
        rows = [[name, f"{local_times[name]:.2f}" if name in local_times else "-",
                 f"{spark_times[name]:.2f}" if name in spark_times else "-"] for name in _LOCAL_JOBS]
        for line in table(["job", "local (fresh process)", "spark (in the session)"], rows):
            out.line(f"  {line}")
        if start is not None:
            out.line(f"  (starting the Spark session took {start:.2f} s more)")

    out.line("")
    out_dir.mkdir(parents=True, exist_ok=True)
    out.line(f"Results are in: {out_dir}")
    out.flush()
    return 0 if ok else 1
