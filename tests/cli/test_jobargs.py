"""The common job flags of DESIGN §4 and the job wrapper's exit codes."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from kafka_format.common.errors import CorruptRecordError
from kafka_format.jobs.jobargs import (
    EXIT_USAGE,
    UsageError,
    add_common_arguments,
    check_inputs,
    job_context,
    parse_args,
    run_job,
)

SAMPLES = Path(__file__).resolve().parents[2] / "data_samples" / "logdirs"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="klogs test")
    add_common_arguments(p, formats=["jsonl", "table"])
    return p


def test_flags_resolve_into_a_context() -> None:
    args = _parser().parse_args([str(SAMPLES), "--topic", "compacted", "--topic-pattern", "v2-.*",
                                 "--now", "2023-11-14T22:13:20Z", "--config", "compacted:retention.ms=5",
                                 "--config-file", str(SAMPLES / "topic-configs.json"), "--format", "table"])
    ctx = job_context(args)
    assert ctx.now_ms == 1_700_000_000_000 and ctx.format == "table" and ctx.logdirs == [str(SAMPLES)]
    assert [t for t in ("compacted", "v2-codecs", "v2", "transactions") if ctx.selects(t)] == ["compacted", "v2-codecs"]
    assert ctx.configs["compacted"].retention_ms == 5 and ctx.configs["compacted"].segment_bytes == 8192


def test_no_selection_selects_every_topic() -> None:
    ctx = job_context(_parser().parse_args([str(SAMPLES)]))
    assert ctx.selects("anything") and ctx.format == "jsonl"


@pytest.mark.parametrize("argv, needle", [
    (["--now", "soon"], "--now"),
    (["--topic-pattern", "("], "--topic-pattern"),
])
def test_bad_common_flags_are_usage_errors(argv: list[str], needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        job_context(_parser().parse_args([str(SAMPLES), *argv]))


def test_parse_args_returns_argparse_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_args(_parser(), ["--help"]) == 0
    assert parse_args(_parser(), ["--format", "xml", str(SAMPLES)]) == 2
    assert isinstance(parse_args(_parser(), [str(SAMPLES)]), argparse.Namespace)


def test_run_job_turns_bad_input_into_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    def body() -> int:
        raise CorruptRecordError("bad batch", path="/x/0.log", position=61, expected="CRC 1", found="CRC 2")

    assert run_job(body, prog="audit") == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("klogs audit: ") and "/x/0.log" in err and "61" in err
    assert run_job(lambda: 1, prog="audit") == 1


def test_run_job_lets_bugs_through() -> None:
    with pytest.raises(ZeroDivisionError):
        run_job(lambda: 1 // 0, prog="x")


def test_py4j_records_on_the_root_logger_go_to_the_spark_log_not_stderr(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Py4J logs a send to a dead JVM with ``logging.exception`` on the root logger: that
    traceback goes to the run's Spark log; anything else on the root logger is left alone."""
    import logging

    from kafka_format.jobs import jobargs

    log = tmp_path / "spark.log"
    monkeypatch.setattr(jobargs, "_jvm_log", str(log))
    monkeypatch.setattr(jobargs, "_verbose", False)
    # code whose frames say it is Py4J's, logging as java_gateway.send_command does
    py4j_like = compile("try:\n    raise ConnectionResetError(104, 'Connection reset by peer')\n"
                        "except OSError:\n    logging.exception('Exception while sending command.')\n",
                        "/site-packages/py4j/java_gateway.py".replace("/", os.sep), "exec")

    def body() -> int:
        exec(py4j_like, {"logging": logging})
        logging.getLogger().warning("a warning of the user's own")
        return 0

    with caplog.at_level(logging.INFO):
        assert run_job(body, prog="probe") == 0
    assert [r.getMessage() for r in caplog.records] == ["a warning of the user's own"]
    written = log.read_text()
    assert "Exception while sending command." in written and "ConnectionResetError" in written
    logging.getLogger().warning("after the run")      # the filter is gone with the run
    assert caplog.records[-1].getMessage() == "after the run"


def test_run_main_parses_then_runs_the_body(capsys: pytest.CaptureFixture[str]) -> None:
    from kafka_format.jobs.jobargs import run_main

    seen: list[argparse.Namespace] = []

    def body(args: argparse.Namespace) -> int:
        seen.append(args)
        if args.topics == ["bad"]:
            raise UsageError("--topic bad: no such topic")
        return 1

    assert run_main(_parser(), [str(SAMPLES), "--topic", "t"], body, prog="x") == 1
    assert seen[-1].topics == ["t"]
    assert run_main(_parser(), [str(SAMPLES), "--topic", "bad"], body, prog="x") == EXIT_USAGE
    assert "klogs x: --topic bad" in capsys.readouterr().err
    assert run_main(_parser(), ["--format", "xml", str(SAMPLES)], body, prog="x") == 2
    assert run_main(_parser(), ["--help"], body, prog="x") == 0
    assert len(seen) == 2


@pytest.mark.parametrize("layout", ["empty", "foreign-files", "partition-dir-names-only"])
def test_a_path_with_no_partitions_is_a_usage_error_naming_it(tmp_path: Path, layout: str) -> None:
    root = tmp_path / "not-kafka"
    root.mkdir()
    if layout == "foreign-files":
        (root / "passwd").write_text("root:x:0:0\n")
        (root / "conf.d").mkdir()
        (root / "conf.d" / "a.conf").write_text("x=1\n")
    elif layout == "partition-dir-names-only":
        (root / "orders").mkdir()          # no <topic>-<partition> name, no .log segments
    with pytest.raises(UsageError) as info:
        check_inputs([str(root)])
    message = str(info.value)
    assert message.startswith(f"{root}: no Kafka partition directory found")
    assert "<topic>-<partition>" in message and "\n" not in message


def test_check_inputs_names_the_one_bad_path_among_good_ones(tmp_path: Path) -> None:
    check_inputs([str(SAMPLES)])
    check_inputs([str(SAMPLES / "broker-1" / "compacted-0")])        # a single partition dir
    with pytest.raises(UsageError, match=str(tmp_path)):
        check_inputs([str(SAMPLES), str(tmp_path)])


def test_stderr_redirect_sends_child_processes_to_the_log_and_restores_ours(tmp_path: Path) -> None:
    import subprocess
    import sys

    from kafka_format.spark.session import _stderr_to

    log = tmp_path / "logs" / "klogs-test.log"
    probe = [sys.executable, "-c", "import sys; sys.stderr.write('from the child\\n')"]
    with _stderr_to(str(log)):
        subprocess.run(probe, check=True)           # inherits fd 2, as the Spark JVM does
    assert log.read_text() == "from the child\n"
    after = subprocess.run(probe, check=True, stderr=subprocess.PIPE, text=True)
    assert after.stderr == "from the child\n"
    assert log.read_text() == "from the child\n"


def test_table_is_the_default_format_for_a_person_at_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    args = _parser().parse_args([str(SAMPLES)])
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert job_context(args).format == "table"
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert job_context(args).format == "jsonl"                   # pipes and files keep the exact lines
    assert job_context(_parser().parse_args([str(SAMPLES), "--format", "jsonl"])).format == "jsonl"


def test_retention_table_uses_human_units_and_jsonl_keeps_exact_numbers() -> None:
    from kafka_format.report.retention_report import format_segments

    row = {"topic": "t", "partition": 0, "baseOffset": 5, "sizeBytes": 1288490188,
           "largestTimestamp": 1_700_000_000_000, "deletable": True, "reason": "retention.ms",
           "deletableAtMs": 1_700_000_000_001, "tier": "local"}
    line = format_segments([row], "table").splitlines()[-1]
    assert line.split() == ["t", "0", "5", "1.2", "GiB", "2023-11-14T22:13:20Z", "true", "retention.ms",
                            "2023-11-14T22:13:20Z", "local"]
    assert '"sizeBytes":1288490188' in format_segments([row], "jsonl")


def test_a_spark_failure_names_the_runs_spark_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from kafka_format.jobs import jobargs

    log = tmp_path / "klogs-probe.log"
    log.write_text("WARN ... java.lang.OutOfMemoryError\n")
    monkeypatch.setattr(jobargs, "_jvm_log", str(log))

    def body() -> int:
        raise MemoryError("numpy could not allocate 8 GiB")

    assert run_job(body, prog="probe") == EXIT_USAGE
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("klogs probe: out of memory") and line.endswith(f" (Spark's log: {log})")
    assert run_job(lambda: (_ for _ in ()).throw(UsageError("bad")), prog="probe") == EXIT_USAGE
    assert capsys.readouterr().err == "klogs probe: bad\n"          # not a Spark failure: no log named


@pytest.mark.parametrize("message", [
    'java.lang.NullPointerException: Cannot invoke "org.apache.spark.scheduler.DAGScheduler.cleanupQueryJobs(long)" '
    'because the return value of "org.apache.spark.SparkContext.dagScheduler()" is null',
    "java.lang.IllegalStateException: Cannot call methods on a stopped SparkContext.",
    "org.apache.spark.SparkException: Job 0 cancelled because SparkContext was shut down",
])
def test_an_error_of_a_stopping_context_waits_for_the_jvms_exit_code(message: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A call that meets the SparkContext stopping under it (the JVM's uncaught-exception handler
    stops it, then exits 52 on OutOfMemoryError) is reported by how the JVM exited, not as the
    stopping context's own error (a race the real out-of-memory test met once)."""
    from py4j.protocol import Py4JError

    from kafka_format.jobs import sparkerrors

    class Py4JJavaErrorLike(Py4JError):
        pass

    monkeypatch.setattr(sparkerrors, "_gateway_exit_code", lambda: sparkerrors.JVM_OOM_EXIT)
    failure = sparkerrors.spark_failure(Py4JJavaErrorLike(f"An error occurred while calling o42.collect.\n: {message}"))
    assert failure is not None and str(failure).startswith("Spark's JVM ran out of memory and exited")
    assert str(failure).endswith(sparkerrors.DRIVER_MEMORY_KNOB)
    monkeypatch.setattr(sparkerrors, "_gateway_exit_code", lambda: None)   # a context stopped, the JVM alive
    assert str(sparkerrors.spark_failure(Py4JJavaErrorLike(message))).startswith("lost Spark's JVM: ")


def test_an_error_whose_message_the_dead_jvm_cannot_give_is_the_jvms_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Py4JJavaError reads its message from the JVM.  When the JVM exits between the failed call
    and that read (the real out-of-memory test met it once: ``str(exc)`` raised ConnectionRefusedError
    inside the failure handler, and the run ended in a traceback), the failure is the JVM's exit."""
    from py4j.protocol import Py4JError

    from kafka_format.jobs import sparkerrors

    class Py4JJavaErrorLike(Py4JError):
        def __str__(self) -> str:
            raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(sparkerrors, "_gateway_exit_code", lambda: sparkerrors.JVM_OOM_EXIT)
    failure = sparkerrors.spark_failure(Py4JJavaErrorLike("An error occurred while calling o42.collect."))
    assert failure is not None and str(failure).startswith("Spark's JVM ran out of memory and exited")
    monkeypatch.setattr(sparkerrors, "_gateway_exit_code", lambda: None)
    lost = str(sparkerrors.spark_failure(Py4JJavaErrorLike("")))
    assert lost.startswith("lost Spark's JVM: Py4JJavaErrorLike (its message was not read: ConnectionRefusedError")


@pytest.mark.parametrize("verbose", [False, True])
def test_spark_start_up_output_goes_to_a_log_file_unless_verbose(verbose: bool, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --verbose the JVM's output (Spark's start-up lines, its progress bar) goes to one
    log file per run under $KLOGS_LOG_DIR; with --verbose it stays on the console.  (That the
    JVM's lines really land there: test_job_errors' Spark run.)"""
    pytest.importorskip("pyspark")
    import kafka_format.spark.session as session
    from kafka_format.jobs import jobargs

    seen: dict[str, object] = {}
    monkeypatch.setenv("KLOGS_LOG_DIR", str(tmp_path))
    monkeypatch.setattr(session, "build_session", lambda **kw: seen.update(kw) or object())
    monkeypatch.setattr("pyspark.sql.SparkSession.getActiveSession", staticmethod(lambda: None))
    monkeypatch.setattr("atexit.register", lambda *a, **k: None)

    class NoBar:
        def __init__(self, spark: object) -> None:
            seen["bar"] = True

        def start(self) -> NoBar:
            return self

        def stop(self) -> None:
            pass

    monkeypatch.setattr("kafka_format.spark.progress.ConsoleProgress", NoBar)
    monkeypatch.setattr(jobargs, "_ready", lambda spark, ctx, *_: spark)     # no source to register on the fake
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    ctx = job_context(_parser().parse_args([str(SAMPLES), *(["--verbose"] if verbose else [])]))
    jobargs.session_for(ctx, "probe")
    if verbose:
        assert seen["jvm_log"] is None and "bar" not in seen          # Spark's own bar, on the console
    else:
        assert seen["bar"]                                            # klogs draws the bar instead
        log = Path(str(seen["jvm_log"]))
        assert log.parent == tmp_path and log.name.startswith("klogs-probe-") and log.suffix == ".log"


def test_a_log_dir_that_is_a_file_is_named_in_the_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$KLOGS_LOG_DIR naming a file: the one line says it is Spark's log directory that cannot be made."""
    pytest.importorskip("pyspark")
    from kafka_format.jobs.jobargs import jvm_log_path
    from kafka_format.spark.session import _stderr_to

    taken = tmp_path / "logs"
    taken.write_text("a file\n")
    monkeypatch.setenv("KLOGS_LOG_DIR", str(taken))
    with pytest.raises(OSError, match=r"Spark's log .*logs.*KLOGS_LOG_DIR.*File exists"):
        with _stderr_to(jvm_log_path("probe")):
            pass


BEYOND_LONG = "99999999999999999999"


@pytest.mark.parametrize("job", ["retention", "audit", "compaction", "offsets", "export", "groups"])
def test_every_job_reads_now_as_offsets_reads_timestamp(job: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """One parser for times: ``--now`` past Java's long is refused by every job (exit 2, one line,
    nothing written) with the words ``offsets --timestamp`` refuses it with."""
    from kafka_format.jobs import find_job

    extra = {"offsets": ["--timestamp", "latest"]}.get(job, [])
    out = tmp_path / "out"
    assert find_job(job)([str(SAMPLES), "--now", BEYOND_LONG, "--out", str(out), *extra]) == EXIT_USAGE
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"klogs {job}: --now: not a time: '{BEYOND_LONG}' is outside "
                                                "Java's long range")
    assert not out.exists()
    assert find_job("offsets")([str(SAMPLES), "--timestamp", BEYOND_LONG]) == EXIT_USAGE
    said = capsys.readouterr().err.splitlines()[-1]
    assert said.endswith(err[0].split("--now: ", 1)[1])


def test_retention_at_javas_last_millisecond_shows_dates_not_milliseconds(capsys: pytest.CaptureFixture[str]) -> None:
    from kafka_format.jobs import find_job

    assert find_job("retention")([str(SAMPLES), "--topic", "legacy-v0", "--now", str((1 << 63) - 1),
                                  "--format", "table", "--engine", "local"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines[2:] if line.startswith("legacy-v0")]
    assert rows and all(r[-2:] == ["+292278994-08-17T07:12:55Z", "local"] for r in rows)   # deletableAtMs: --now
    assert str((1 << 63) - 1) not in "\n".join(lines)


def test_klogs_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.metadata

    from kafka_format.cli import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"klogs {importlib.metadata.version('kafka-log-analytics')}\n"


def test_a_missing_package_of_the_spark_extra_is_one_line_naming_the_extra(capsys: pytest.CaptureFixture[str]) -> None:
    def body() -> int:
        raise ModuleNotFoundError("No module named 'deltalake'", name="deltalake")

    assert run_job(body, prog="export") == EXIT_USAGE
    assert capsys.readouterr().err.splitlines() == [
        "klogs export: this needs deltalake, which is not installed here: install the spark extra: "
        "pip install 'kafka-log-analytics[spark]'"]

    def bug() -> int:
        raise ModuleNotFoundError("No module named 'kafka_format.nowhere'", name="kafka_format.nowhere")

    with pytest.raises(ModuleNotFoundError):          # not a package of the extra: a bug, shown as itself
        run_job(bug, prog="export")


def test_an_interrupted_body_is_one_line_and_130_and_the_handler_is_given_back(
        capsys: pytest.CaptureFixture[str]) -> None:
    import signal

    from kafka_format.jobs.jobargs import EXIT_INTERRUPTED

    before = signal.getsignal(signal.SIGINT)
    seen: list[object] = []

    def body() -> int:
        seen.append(signal.getsignal(signal.SIGINT))
        raise KeyboardInterrupt

    assert run_job(body, prog="retention") == EXIT_INTERRUPTED == 130
    assert capsys.readouterr().err == "klogs retention: interrupted\n"
    assert seen[0] is not before and signal.getsignal(signal.SIGINT) is before
