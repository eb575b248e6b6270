"""Kafka's own ``DumpLogSegments`` as the oracle of ``klogs dump``, and the per-file comparison.

Kafka's tool runs in one JVM per (version, batch of runs): ``DumpDriver.java`` (beside this file,
compiled once into the cache) calls the tool's ``main`` for each run listed in a jobs file and
marks where each run's output starts, so a JVM start (1-2 s) is paid once, not per flag set, and
a run that dies (Kafka throws on damaged files) does not end the others.  ``klogs dump`` runs the
same argument lists in process.

Stdout is compared per file, line for line.  Stderr carries the JVM's SLF4J/log4j noise (dropped),
``Ignoring unknown file`` lines, the end-of-run reports (mismatches, non-consecutive offsets) and a
dying run's exception line; the rest is compared line for line too, in order: Kafka lists the
files of each report in its hash map's order (``java.util.HashMap`` / Scala ``mutable.HashMap``),
and so must ``klogs dump``.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kafka_dist

__all__ = [
    "Case",
    "Run",
    "compare_run",
    "first_difference",
    "jvm_map_orders",
    "kafka_exit",
    "klogs",
    "remote_log_metadata_serde",
    "run_kafka",
    "run_ours",
    "segment_dumps",
    "segments_of",
    "tool_class",
]

HERE = Path(__file__).resolve().parent
DRIVER_SOURCE = HERE / "DumpDriver.java"
MAP_DRIVER_SOURCE = HERE / "MapOrderDriver.java"
SERDE_DRIVER_SOURCE = HERE / "RemoteLogMetadataSerdeDriver.java"
RUN_MARK = "##KLOGS-RUN "
EXIT_MARK = "##KLOGS-EXIT "
NOISE = re.compile(r"^(SLF4J|log4j):")   # the JVM's logging noise on stderr, not the tool's output
JVM_TIMEOUT_S = 480


@dataclass
class Run:
    """One ``DumpLogSegments`` / ``klogs dump`` invocation and what it printed."""

    args: list[str]
    stdout: list[str]
    stderr: list[str]


def tool_class(version: str) -> str:
    """The main class of kafka-dump-log in ``version``: Java from 4.3 (KAFKA-14579), Scala before."""
    major, minor = (int(x) for x in version.split(".")[:2])
    return "org.apache.kafka.tools.DumpLogSegments" if (major, minor) >= (4, 3) else "kafka.tools.DumpLogSegments"


def _driver_dir(source: Path = DRIVER_SOURCE, classpath: str | None = None) -> Path:
    """A driver beside this file (``DumpDriver``, ``MapOrderDriver``) compiled, once per source text,
    into the conformance cache (against ``classpath`` when it needs one)."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    out = kafka_dist.cache_dir() / f"{source.stem.lower()}-{digest}"
    if not (out / f"{source.stem}.class").exists():
        java = kafka_dist.java()
        assert java is not None
        javac = Path(java).with_name("javac")
        tmp = out.with_name(out.name + f".tmp{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        cp = ["-cp", classpath] if classpath else []
        subprocess.run([str(javac), *cp, "-d", str(tmp), str(source)], check=True, capture_output=True,
                       timeout=120)
        if out.exists():            # another run compiled it meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            os.replace(tmp, out)
    return out


def jvm_map_orders(version: str, call_lists: Sequence[Sequence[str]]) -> list[tuple[list[str], list[str]]]:
    """For each list of keys: the key order of a ``java.util.HashMap`` after ``computeIfAbsent`` per key,
    and of a Scala ``mutable.HashMap`` after ``put`` per key, as Kafka ``version``'s runtime (its JVM
    and scala-library) iterates them (``MapOrderDriver.java``)."""
    classpath = kafka_dist.classpath(version)
    java = kafka_dist.java()
    assert classpath is not None and java is not None
    for keys in call_lists:
        if any("\n" in k or "\t" in k or k == "--" for k in keys):
            raise ValueError(f"a key the driver cannot take: {keys}")
    text = "".join("\n".join(keys) + "\n--\n" for keys in call_lists)
    driver = _driver_dir(MAP_DRIVER_SOURCE, classpath)
    proc = subprocess.run([java, "-cp", f"{driver}{os.pathsep}{classpath}", "MapOrderDriver"],
                          input=text.encode("utf-8"), capture_output=True, timeout=JVM_TIMEOUT_S, check=True)
    lines = proc.stdout.decode("utf-8").splitlines()
    assert len(lines) == 2 * len(call_lists), proc.stderr.decode("utf-8", "replace")[-2000:]
    return [(lines[2 * i].split("\t")[1:], lines[2 * i + 1].split("\t")[1:]) for i in range(len(call_lists))]


def remote_log_metadata_serde(version: str, values: Sequence[bytes]) -> list[tuple[str, str, str]]:
    """For each record value: Kafka ``version``'s ``RemoteLogMetadataSerde`` on it
    (``RemoteLogMetadataSerdeDriver.java``): ``("OK", serialize(deserialize(value)) as hex, toString())``
    or ``("ERROR", exception class, message)``."""
    classpath = kafka_dist.classpath(version)
    java = kafka_dist.java()
    assert classpath is not None and java is not None
    driver = _driver_dir(SERDE_DRIVER_SOURCE, classpath)
    proc = subprocess.run([java, "-cp", f"{driver}{os.pathsep}{classpath}", "RemoteLogMetadataSerdeDriver"],
                          input="".join(v.hex() + "\n" for v in values).encode("ascii"), capture_output=True,
                          timeout=JVM_TIMEOUT_S, check=True)
    lines = [line for line in proc.stdout.decode("utf-8").splitlines() if line.startswith(("OK\t", "ERROR\t"))]
    assert len(lines) == len(values), proc.stderr.decode("utf-8", "replace")[-2000:]
    out: list[tuple[str, str, str]] = []
    for line in lines:
        kind, first, rest = line.split("\t", 2)
        out.append((kind, first, rest))
    return out


def _split_runs(text: str, mark: str, count: int, *, newline_before_mark: bool = False) -> list[list[str]]:
    runs: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith(mark):
            runs.append([])
        elif line.startswith(EXIT_MARK) or NOISE.match(line):
            continue
        elif runs:
            runs[-1].append(line)
    if len(runs) != count:
        raise AssertionError(f"the Kafka driver printed {len(runs)} of {count} runs:\n{text[-2000:]}")
    if newline_before_mark:             # the newline the driver prints before each stdout marker
        for previous in runs[:-1]:
            if previous and previous[-1] == "":
                previous.pop()
    return runs


def run_kafka(version: str, jobs: Sequence[Sequence[str]], workdir: Path) -> list[Run]:
    """Run Kafka ``version``'s tool once per argument list in ``jobs``, all in one JVM."""
    classpath = kafka_dist.classpath(version)
    java = kafka_dist.java()
    assert classpath is not None and java is not None
    jobs_file = workdir / f"dump-jobs-{version}.tsv"
    for job in jobs:
        if any("\t" in a or "\n" in a for a in job):
            raise ValueError(f"argument with a tab or newline: {job}")
    jobs_file.write_text("".join("\t".join(job) + "\n" for job in jobs))
    cmd = [java, "-Xshare:auto", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dfile.encoding=UTF-8",
           "-Dsun.stdout.encoding=UTF-8", "-Dsun.stderr.encoding=UTF-8",
           "-cp", f"{_driver_dir()}{os.pathsep}{classpath}", "DumpDriver", tool_class(version), str(jobs_file)]
    proc = subprocess.run(cmd, capture_output=True, timeout=JVM_TIMEOUT_S, cwd=workdir)
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 0:
        raise AssertionError(f"the Kafka {version} driver failed ({proc.returncode}):\n{err[-3000:]}")
    outs = _split_runs(out, RUN_MARK, len(jobs), newline_before_mark=True)
    errs = _split_runs(err, RUN_MARK, len(jobs))
    return [Run(list(job), o, e) for job, o, e in zip(jobs, outs, errs, strict=True)]


def run_ours(version: str, args: Sequence[str]) -> Run:
    """``klogs dump --kafka-version version`` with Kafka's ``--files a,b,c`` argument list, in process."""
    import argparse

    from kafka_format.cli.dump import add_arguments, dump, options_from_args

    parser = argparse.ArgumentParser(prog="klogs dump")
    add_arguments(parser)
    argv = list(args)
    files = argv.pop(argv.index("--files") + 1)
    argv.remove("--files")
    opts = options_from_args(parser.parse_args([*argv, "--kafka-version", version, files]))
    out, err = io.StringIO(), io.StringIO()
    dump(opts, out, err)
    return Run(list(args), out.getvalue().splitlines(), err.getvalue().splitlines())


def _per_file(lines: list[str]) -> list[tuple[str, list[str]]]:
    """stdout cut at each ``Dumping <file>`` line."""
    files: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.startswith("Dumping "):
            files.append((line[len("Dumping "):], []))
        elif files:
            files[-1][1].append(line)
        else:
            files.append(("(before the first file)", [line]))
    return files


def first_difference(kafka: list[str], ours: list[str]) -> str:
    """Where two tools' lines first differ, for a comparison's detail."""
    for i, (a, b) in enumerate(zip(kafka, ours, strict=False)):
        if a != b:
            return f"line {i + 1}:\n    kafka: {a!r}\n    klogs: {b!r}"
    i = min(len(kafka), len(ours))
    if len(kafka) > i:
        return f"line {i + 1}: kafka has {len(kafka) - i} more line(s), first {kafka[i]!r}"
    return f"line {i + 1}: klogs has {len(ours) - i} more line(s), first {ours[i]!r}"


@dataclass
class Case:
    """One compared unit: a file's stdout under one flag set, or one run's stderr reports."""

    name: str
    equal: bool
    detail: str = ""


def compare_run(kafka: Run, ours: Run) -> list[Case]:
    """Cases of one run: each dumped file's stdout line for line, then stderr line for line."""
    files_arg = kafka.args[kafka.args.index("--files") + 1]
    flags = " ".join(a for a in kafka.args if a not in ("--files", files_arg)) or "(no flags)"
    cases: list[Case] = []
    k_files, o_files = _per_file(kafka.stdout), _per_file(ours.stdout)
    for (k_name, k_lines), (o_name, o_lines) in zip(k_files, o_files, strict=False):
        name = f"[{flags}] {k_name}"
        if k_name != o_name:
            cases.append(Case(name, False, f"klogs dumped {o_name} here"))
            break
        equal = k_lines == o_lines
        cases.append(Case(name, equal, "" if equal else first_difference(k_lines, o_lines)))
    if len(k_files) != len(o_files):
        cases.append(Case(f"[{flags}] files of {files_arg[:120]}", False,
                          f"kafka dumped {len(k_files)} files, klogs {len(o_files)}"
                          f" (kafka stderr: {kafka.stderr[-1:]}, klogs stderr: {ours.stderr[-1:]})"))
    equal = kafka.stderr == ours.stderr
    detail = "" if equal else first_difference(kafka.stderr, ours.stderr)
    cases.append(Case(f"[{flags}] stderr of {files_arg[:120]}", equal, detail))
    return cases


#: the venv's ``klogs`` beside this interpreter
KLOGS = Path(sys.executable).with_name("klogs")


def klogs(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[bytes]:
    """The ``klogs`` command (the venv's script; else its entry point under this interpreter)."""
    cmd = [str(KLOGS)] if KLOGS.exists() else [sys.executable, "-c",
                                               "import sys; from kafka_format.cli import main; sys.exit(main())"]
    return subprocess.run([*cmd, *args], capture_output=True, timeout=timeout)


def segments_of(copy: Path, topic: str) -> list[Path]:
    """The non-empty ``.log`` segments of ``topic``'s partitions in a log dir, by partition."""
    found = [seg for seg in copy.glob(f"{topic}-*/*.log") if seg.stat().st_size > 0]
    return sorted(found, key=lambda s: (int(s.parent.name.rsplit("-", 1)[1]), s.name))


def kafka_exit(run: Run) -> int:
    """The exit code of one ``DumpDriver`` run: 1 when the tool threw (its exception line on stderr)."""
    return 1 if any(line.startswith('Exception in thread "main"') for line in run.stderr) else 0


def segment_dumps(conformance: Any, comparison: str, version: str, flag: str, segments: Sequence[Path],
                  workdir: Path) -> list[tuple[Run, list[str]]]:
    """One case per segment: the ``klogs dump --kafka-version <major.minor> <flag> SEG`` command
    against Kafka's ``DumpLogSegments --files SEG <flag>`` (stdout line for line, and the exit code),
    recorded under ``comparison``; per segment Kafka's run and our stdout lines."""
    kafka_runs = run_kafka(version, [["--files", str(s), flag] for s in segments], workdir)
    short = ".".join(version.split(".")[:2])
    out = []
    for seg, kafka in zip(segments, kafka_runs, strict=True):
        ours = klogs("dump", "--kafka-version", short, flag, str(seg))
        our_lines = ours.stdout.decode("utf-8", "replace").splitlines()
        out.append((kafka, our_lines))
        k_exit = kafka_exit(kafka)
        case = f"dump {flag} {seg.parent.name}/{seg.name}"
        if our_lines == kafka.stdout and ours.returncode == k_exit:
            conformance.record(comparison, version, case, True)
            continue
        err = ours.stderr.decode("utf-8", "replace").strip().splitlines()
        conformance.record(comparison, version, case, False,
                           f"exit klogs {ours.returncode} kafka {k_exit}; {first_difference(kafka.stdout, our_lines)}; "
                           f"klogs stderr: {err[-1:] or '(none)'}")
    return out
