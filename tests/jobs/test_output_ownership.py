"""Never delete what klogs did not write: every job x every kind of target (issue 12).

For each job's output (``--out`` of offsets, retention, audit, compaction with ``--write-segments``,
export batch Parquet, incremental Parquet and Delta, and export's ``--checkpoint``):

* refused targets (foreign files, another job's output, a file where a directory is expected, a
  symbolic link, a Kafka log dir, an input log dir, a path inside one, a path holding one, a path
  inside another klogs output, a newer format, a busy output): exit 2, one line on stderr naming
  the path and what was found, and every file under the test's root byte-for-byte as before
  (tree, content, link targets).  These run the real job entry point in-process; the claim is
  taken before Spark starts, so no session is needed;
* accepted targets (absent, empty, the same job's previous output with a symbolic link planted in
  it): exit 0, the output complete with its marker, the link's outside target still there;
* killed runs (``KLA_CRASH_AT`` at every publish step): the next run restores or removes only
  klogs' own leftovers, never a directory that merely looks like one.

The marker format is pinned here by hand-written JSON (not produced by the code under test).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_export_job import write_log_dir

REPO = Path(__file__).resolve().parents[2]
KLOGS = [sys.executable, "-c", "import sys; from kafka_format.cli import main; sys.exit(main(sys.argv[1:]))"]
MARKER = ".klogs-output"
SOURCE_ROWS = 40 + 25                     # write_log_dir's two partitions


# --- the jobs -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Job:
    name: str                                        # test id
    prog: str                                        # klogs sub-command
    job: str                                         # marker "job"
    kind: str                                        # marker "kind"
    argv: Callable[[Path, Path], list[str]]          # (logdir, target) -> arguments after the sub-command
    complete: Callable[[Path], None]                 # asserts a published target is whole
    file: bool = False                               # a single-file output


def _names(path: Path) -> set[str]:
    return set(os.listdir(path))


def _marker_of(path: Path) -> dict[str, object]:
    return json.loads((path / MARKER).read_text())


def _complete_offsets(target: Path) -> None:
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert [(r["topic"], r["partition"], r["offset"]) for r in lines] == [("orders", 0, 40), ("orders", 1, 25)]
    side = json.loads((target.parent / f".{target.name}{MARKER}").read_text())
    assert (side["marker"], side["job"], side["kind"]) == ("klogs-output", "offsets", "answers")


def _complete_retention(target: Path) -> None:
    assert {"segments.jsonl", "summary.json", "disk-usage.png", "disk-usage.html", MARKER} <= _names(target)
    segments = [json.loads(line) for line in (target / "segments.jsonl").read_text().splitlines()]
    assert {(s["topic"], s["partition"]) for s in segments} == {("orders", 0), ("orders", 1)}
    assert json.loads((target / "summary.json").read_text())["total"]["segments"] == len(segments)


def _complete_audit(target: Path) -> None:
    import pyarrow.parquet as pq

    assert {"findings", "files", "report.html", MARKER} <= _names(target)
    assert pq.read_table(target / "files").num_rows >= 2          # one row per .log


def _complete_compaction(target: Path) -> None:
    import pyarrow.parquet as pq

    assert {"records", "segments", "summary.json", MARKER} <= _names(target)
    assert pq.read_table(target / "records").num_rows == SOURCE_ROWS
    assert (target / "segments" / "logs" / "orders-0").is_dir()


def _parquet_rows(target: Path) -> int:
    import pyarrow.dataset as ds

    return ds.dataset(str(target), format="parquet", partitioning="hive").count_rows()


def _complete_parquet(target: Path) -> None:
    assert {"_SUCCESS", "topic=orders", MARKER} <= _names(target)
    assert _parquet_rows(target) == SOURCE_ROWS


def _complete_incremental(target: Path) -> None:
    assert {"exportBatch=0", MARKER} <= _names(target)
    assert _parquet_rows(target) == SOURCE_ROWS


def _complete_delta(target: Path) -> None:
    from deltalake import DeltaTable

    assert {"_delta_log", MARKER} <= _names(target)
    assert DeltaTable(str(target)).to_pyarrow_table().num_rows == SOURCE_ROWS


def _complete_checkpoint(target: Path) -> None:
    assert {"offsets", "commits", MARKER} <= _names(target)
    assert _parquet_rows(target.parent / "ckpt-out") == SOURCE_ROWS     # target is root/out here


JOBS = [
    Job("offsets", "offsets", "offsets", "answers",
        lambda logs, t: [str(logs), "--timestamp", "latest", "--out", str(t)], _complete_offsets, file=True),
    Job("retention", "retention", "retention", "report",
        lambda logs, t: [str(logs), "--out", str(t)], _complete_retention),
    Job("audit", "audit", "audit", "report",
        lambda logs, t: [str(logs), "--out", str(t)], _complete_audit),
    Job("compaction", "compaction", "compaction", "results",
        lambda logs, t: [str(logs), "--out", str(t), "--write-segments", "--force",
                         "--config", "orders:cleanup.policy=compact"], _complete_compaction),
    Job("export-parquet", "export", "export", "parquet",
        lambda logs, t: [str(logs), "--out", str(t)], _complete_parquet),
    Job("export-incremental", "export", "export", "parquet-incremental",
        lambda logs, t: [str(logs), "--out", str(t), "--checkpoint", str(t.parent / "ckpt")], _complete_incremental),
    Job("export-delta", "export", "export", "delta",
        lambda logs, t: [str(logs), "--out", str(t), "--format", "delta"], _complete_delta),
    Job("export-checkpoint", "export", "export", "checkpoint",
        lambda logs, t: [str(logs), "--out", str(logs.parent / "ckpt-out"), "--checkpoint", str(t)],
        _complete_checkpoint),
]
DIR_JOBS = [j for j in JOBS if not j.file]


# --- snapshots ----------------------------------------------------------------------------------------
def snapshot(root: Path) -> dict[str, tuple[str, object]]:
    """Every entry under ``root`` (links not followed): kind and content / link target / nothing."""
    out: dict[str, tuple[str, object]] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", None)
            else:
                out[rel] = ("file", Path(path).read_bytes())
    return out


def run_inprocess(job: Job, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from kafka_format.cli import main

    capsys.readouterr()
    code = main([job.prog, *argv])
    return code, capsys.readouterr().err


def marker_json(job: str, kind: str, version: int = 1) -> str:
    """A marker as klogs writes it (format pinned by hand)."""
    return json.dumps({"marker": "klogs-output", "job": job, "kind": kind, "formatVersion": version,
                       "run": "0" * 32, "created": "2026-01-01T00:00:00Z"}) + "\n"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_log_dir(tmp_path_factory.mktemp("source") / "logs")


@pytest.fixture
def root(tmp_path: Path, source: Path) -> Path:
    """A fresh root holding a copy of the input log dir (``root/logs``)."""
    shutil.copytree(source, tmp_path / "logs")
    return tmp_path


# --- refused targets ----------------------------------------------------------------------------------
def _foreign_dir(root: Path, job: Job) -> tuple[Path, str]:
    t = root / "reports"
    (t / "sub").mkdir(parents=True)
    (t / "notes.txt").write_text("mine")
    (t / "sub" / "deep.bin").write_bytes(b"\x00\x01")
    return t, "a directory klogs did not write (holding notes.txt, sub)"


def _foreign_file(root: Path, job: Job) -> tuple[Path, str]:
    t = root / "answers.jsonl"
    t.write_text('{"mine": true}\n')
    if job.file:
        return t, "a file klogs did not write"
    return t, "found a file"


def _other_job(root: Path, job: Job) -> tuple[Path, str]:
    t = root / "other"
    t.mkdir()
    other = ("audit", "report") if job.job != "audit" else ("retention", "report")
    if job.file:
        t = root / "other.jsonl"
        t.write_text("{}\n")
        (root / f".{t.name}{MARKER}").write_text(json.dumps({**json.loads(marker_json(*other)),
                                                            "sha256": [], "pending": []}))
        return t, f"the output of klogs {other[0]} {other[1]}"
    (t / MARKER).write_text(marker_json(*other))
    (t / "report.html").write_text("<html></html>")
    return t, f"the output of klogs {other[0]} {other[1]}"


def _other_kind(root: Path, job: Job) -> tuple[Path, str]:
    """The same job, another kind of output (export's batch vs incremental vs Delta vs checkpoint)."""
    t = root / "prev"
    t.mkdir()
    kind = "parquet-incremental" if job.kind != "parquet-incremental" else "parquet"
    (t / MARKER).write_text(marker_json("export", kind))
    (t / "keep.parquet").write_bytes(b"PAR1")
    return t, f"the output of klogs export {kind}"


def _newer_format(root: Path, job: Job) -> tuple[Path, str]:
    if job.file:
        t = root / "prev.jsonl"
        t.write_text("{}\n")
        digest = "ca3d163bab055381827226140568f3bef7eaac187cebd76878e0b63e9e442356"   # sha256 of b"{}\n"
        (root / f".{t.name}{MARKER}").write_text(json.dumps({**json.loads(marker_json(job.job, job.kind, 99)),
                                                            "sha256": [digest], "pending": []}))
        return t, "format 99, newer than this klogs"
    t = root / "prev"
    t.mkdir()
    (t / MARKER).write_text(marker_json(job.job, job.kind, version=99))
    (t / "data").write_text("from a newer klogs")
    return t, "format 99, newer than this klogs"


def _directory_for_file(root: Path, job: Job) -> tuple[Path, str]:
    t = root / "answers.jsonl"
    t.mkdir()
    (t / "x").write_text("mine")
    return t, "a directory klogs did not write"


def _changed_file(root: Path, job: Job) -> tuple[Path, str]:
    t = root / "answers.jsonl"
    t.write_text("edited by hand\n")
    (root / f".{t.name}{MARKER}").write_text(json.dumps({**json.loads(marker_json(job.job, job.kind)),
                                                        "sha256": ["0" * 64], "pending": []}))
    return t, "a file changed since klogs wrote it"


def _symlink(root: Path, job: Job) -> tuple[Path, str]:
    real = root / "real"
    real.mkdir()
    (real / "precious").write_text("mine")
    t = root / "link"
    t.symlink_to(real, target_is_directory=True)
    return t, f"a symbolic link to {real}"


def _kafka_log_dir(root: Path, job: Job) -> tuple[Path, str]:
    t = root / "other-broker"
    shutil.copytree(root / "logs", t)
    return t, "a Kafka log dir (meta.properties)"


def _input_itself(root: Path, job: Job) -> tuple[Path, str]:
    return root / "logs", "an input log dir of this run"


def _inside_input(root: Path, job: Job) -> tuple[Path, str]:
    return root / "logs" / "report", "a path inside input log dir"


def _inside_partition(root: Path, job: Job) -> tuple[Path, str]:
    return root / "logs" / "orders-0" / "x", "a path inside input log dir"


def _holding_input(root: Path, job: Job) -> tuple[Path, str]:
    if job.kind == "checkpoint":          # the root also holds this case's --out: that overlap is named first
        return root, "the checkpoint and the output overlap"
    return root, "a directory holding input log dir"


def _inside_other_output(root: Path, job: Job) -> tuple[Path, str]:
    outer = root / "audit-out"
    outer.mkdir()
    (outer / MARKER).write_text(marker_json("audit", "report"))
    return outer / "nested", f"a path inside {outer}, the output of klogs audit report"


REFUSED: dict[str, Callable[[Path, Job], tuple[Path, str]]] = {
    "foreign-dir": _foreign_dir, "foreign-file": _foreign_file, "other-job": _other_job,
    "newer-format": _newer_format, "symlink": _symlink, "kafka-log-dir": _kafka_log_dir,
    "input-log-dir": _input_itself, "inside-input": _inside_input, "inside-partition": _inside_partition,
    "holding-input": _holding_input, "inside-other-output": _inside_other_output,
}
FILE_ONLY = {"directory-for-file": _directory_for_file, "changed-file": _changed_file}
CASES = [(j, c, f) for j in JOBS for c, f in REFUSED.items()
         if not (j.file and c == "kafka-log-dir")] \
    + [(j, c, f) for j in JOBS if j.file for c, f in FILE_ONLY.items()] \
    + [(j, "other-kind", _other_kind) for j in JOBS if j.job == "export"]


def assert_refused(code: int, err: str, job: Job, target: Path, found: str) -> None:
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"klogs {job.prog}: {target}: "), lines[0]
    assert found in lines[0], lines[0]


@pytest.mark.parametrize(("job", "case", "make"), CASES, ids=[f"{j.name}-{c}" for j, c, _ in CASES])
def test_refused_touches_nothing(root: Path, job: Job, case: str, make: Callable[[Path, Job], tuple[Path, str]],
                                 capsys: pytest.CaptureFixture[str]) -> None:
    target, found = make(root, job)
    before = snapshot(root)
    code, err = run_inprocess(job, job.argv(root / "logs", target), capsys)
    assert_refused(code, err, job, target, found)
    assert snapshot(root) == before


# --- a second run while one holds the output ----------------------------------------------------------
_HOLDER = textwrap.dedent("""
    import sys
    from kafka_format.output.runlock import hold
    with hold(sys.argv[1], what=sys.argv[2]):
        print("held", flush=True)
        sys.stdin.read()
""")


@pytest.mark.parametrize("job", JOBS, ids=[j.name for j in JOBS])
def test_busy_output_exit_2_names_the_holder(root: Path, job: Job, capsys: pytest.CaptureFixture[str]) -> None:
    target = root / ("out.jsonl" if job.file else "out")
    what = "checkpoint" if job.kind == "checkpoint" else "output"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(target), what], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        before = snapshot(root)
        assert f".{target.name}.klogs-lock" in before           # the lock file beside the output
        code, err = run_inprocess(job, job.argv(root / "logs", target), capsys)
        assert_refused(code, err, job, target, f"the {what} is in use")
        assert f"pid {holder.pid} on {socket.gethostname()}, started 20" in err
        assert snapshot(root) == before
    finally:
        holder.communicate("")
    assert holder.returncode == 0
    assert not (root / f".{target.name}.klogs-lock").exists()     # released and removed by its holder


def test_crashed_holder_does_not_leave_the_lock_stuck(tmp_path: Path) -> None:
    """A holder SIGKILLed with the lock: the kernel releases it; the next run takes it over."""
    from kafka_format.output.runlock import hold

    target = tmp_path / "out"
    script = _HOLDER.replace('print("held", flush=True)', 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)')
    proc = subprocess.run([sys.executable, "-c", script, str(target), "output"], cwd=REPO)
    assert proc.returncode == -signal.SIGKILL
    assert (tmp_path / ".out.klogs-lock").exists()                 # left behind, but not held
    with hold(str(target)):
        assert json.loads((tmp_path / ".out.klogs-lock").read_text())["pid"] == os.getpid()
    assert os.listdir(tmp_path) == []


# --- accepted targets: the same job's previous output (with links planted in it), an empty dir ---------
def _previous_output(target: Path, job: Job, outside: Path, neighbour: Path) -> None:
    """What a previous run of ``job`` leaves (its marker, hand-written), plus two links a user put
    in it pointing outside (hidden names, so data readers skip them)."""
    target.mkdir()
    (target / MARKER).write_text(marker_json(job.job, job.kind))
    if job.kind in ("report", "results", "parquet"):                 # replaced outputs: an old data file
        (target / "old-data.json").write_text("{}")
    os.symlink(outside, target / "_link-out")
    os.symlink(neighbour, target / "_dir-link")


@pytest.mark.spark
@pytest.mark.parametrize("job", DIR_JOBS, ids=[j.name for j in DIR_JOBS])
def test_replaces_own_previous_output(spark, root: Path, job: Job,  # type: ignore[no-untyped-def]
                                      capsys: pytest.CaptureFixture[str]) -> None:
    target = root / "out"
    neighbour = root / "neighbour"
    neighbour.mkdir()
    (neighbour / "keep.txt").write_text("beside the output")
    outside = root / "outside.txt"
    outside.write_text("not klogs'")
    _previous_output(target, job, outside, neighbour)
    keep = {k: v for k, v in snapshot(root).items() if not k.startswith(("out", "ckpt", "logs"))}
    code, err = run_inprocess(job, job.argv(root / "logs", target), capsys)
    assert code == 0, err
    job.complete(target)
    marker = _marker_of(target)
    assert (marker["marker"], marker["job"], marker["kind"], marker["formatVersion"]) == \
        ("klogs-output", job.job, job.kind, 1)
    after = snapshot(root)
    assert {k: v for k, v in after.items() if k in keep} == keep       # outside file, neighbour untouched
    if job.kind in ("parquet-incremental", "delta", "checkpoint"):    # written in place, never replaced
        assert marker["run"] == "0" * 32 and (target / "_link-out").is_symlink()
    else:                                                             # a new output replaced the old
        assert marker["run"] != "0" * 32
        assert not (target / "_link-out").is_symlink() and not (target / "old-data.json").exists()
    assert not [n for n in os.listdir(root) if n.startswith(".")]     # no temporaries, no lock left


@pytest.mark.spark
def test_empty_dir_is_written(spark, root: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    job = next(j for j in JOBS if j.name == "audit")
    target = root / "out"
    target.mkdir()
    code, err = run_inprocess(job, job.argv(root / "logs", target), capsys)
    assert code == 0, err
    job.complete(target)
    assert _marker_of(target)["job"] == "audit"


@pytest.mark.spark
def test_offsets_file_replaced_only_while_unchanged(spark, root: Path,  # type: ignore[no-untyped-def]
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    job = JOBS[0]
    target = root / "answers.jsonl"
    for _ in range(2):                                                # absent, then its own previous file
        code, err = run_inprocess(job, job.argv(root / "logs", target), capsys)
        assert code == 0, err
        job.complete(target)
    assert sorted(n for n in os.listdir(root) if n != "logs") == [f".answers.jsonl{MARKER}", "answers.jsonl"]
    with open(target, "a") as f:
        f.write("a note the user added\n")
    before = snapshot(root)
    code, err = run_inprocess(job, job.argv(root / "logs", target), capsys)
    assert_refused(code, err, job, target, "a file changed since klogs wrote it")
    assert snapshot(root) == before


# --- real `klogs` processes: the exit code at the process boundary ----------------------------------
@pytest.mark.parametrize("job", JOBS, ids=[j.name for j in JOBS])
def test_cli_process_refuses_foreign_dir(root: Path, job: Job) -> None:
    target, found = (_foreign_file if job.file else _foreign_dir)(root, job)
    before = snapshot(root)
    proc = subprocess.run([*KLOGS, job.prog, *job.argv(root / "logs", target)], capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert_refused(proc.returncode, proc.stderr, job, target, found)
    assert proc.stdout == ""
    assert snapshot(root) == before


# --- killed runs never lead the next run to delete what is not klogs' --------------------------------
_PUBLISHER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from kafka_format.output.ownership import Owner
    from kafka_format.output.publish import claim_output, staging_dir
    owner = Owner("retention", "report")
    with claim_output(sys.argv[1], owner) as claim, staging_dir(claim.path, owner) as d:
        Path(d, "summary.json").write_text(sys.argv[2])
    print("published")
""")
_FILE_PUBLISHER = textwrap.dedent("""
    import sys
    from kafka_format.output.ownership import Owner
    from kafka_format.output.publish import claim_output, publish_file
    owner = Owner("offsets", "answers")
    with claim_output(sys.argv[1], owner, file=True) as claim:
        publish_file(claim.path, sys.argv[2].encode(), owner)
    print("published")
""")


def _publish(script: str, target: Path, content: str, crash_at: str | None = None) -> int:
    env = {k: v for k, v in os.environ.items() if k != "KLA_CRASH_AT"}
    if crash_at:
        env["KLA_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-c", script, str(target), content], env=env, cwd=REPO,
                          capture_output=True, text=True).returncode


def _bait(parent: Path, name: str) -> dict[str, tuple[str, object]]:
    """Directories named like klogs' temporaries but not klogs' (no marker): must survive."""
    for kind in ("tmp", "old"):
        d = parent / f".{name}.{kind}-{'a' * 32}"
        d.mkdir()
        (d / "user-data").write_text(f"not klogs' {kind}")
    f = parent / f".{name}.tmp-{'b' * 32}"
    f.write_text("a user's file with a temporary-looking name")
    return {k: v for k, v in snapshot(parent).items() if ".tmp-" in k or ".old-" in k}


@pytest.mark.parametrize("point", ["retention:none", "publish:old-aside", "publish:new-in-place"])
def test_killed_directory_publish_then_rerun(tmp_path: Path, point: str) -> None:
    target = tmp_path / "report"
    assert _publish(_PUBLISHER, target, "v1") == 0
    bait = _bait(tmp_path, "report")
    outside = tmp_path / "outside"
    outside.write_text("not klogs'")
    os.symlink(outside, target / "link")                 # a link inside the previous output
    if point != "retention:none":
        assert _publish(_PUBLISHER, target, "v2", crash_at=point) == -signal.SIGKILL
        state = (target / "summary.json").read_text() if target.exists() else None
        assert state in (None, "v2")                      # aside: none visible; in place: the whole new one
    assert _publish(_PUBLISHER, target, "v3") == 0
    assert (target / "summary.json").read_text() == "v3"
    assert _marker_of(target)["job"] == "retention"
    assert outside.read_text() == "not klogs'"
    now = {k: v for k, v in snapshot(tmp_path).items() if ".tmp-" in k or ".old-" in k}
    assert now == bait                                    # klogs' own leftovers gone, the look-alikes kept
    assert sorted(os.listdir(tmp_path)) == sorted(["report", "outside", *{k.split("/")[0] for k in bait}])


def test_killed_before_the_aside_copy_is_removed_restores_it(tmp_path: Path) -> None:
    """Killed between the two renames: no output visible; the next run puts the old one back
    first (it is klogs' own by its marker), then replaces it."""
    target = tmp_path / "report"
    assert _publish(_PUBLISHER, target, "v1") == 0
    assert _publish(_PUBLISHER, target, "v2", crash_at="publish:old-aside") == -signal.SIGKILL
    assert not target.exists()
    aside = [n for n in os.listdir(tmp_path) if ".old-" in n]
    assert len(aside) == 1 and (tmp_path / aside[0] / "summary.json").read_text() == "v1"
    from kafka_format.output.publish import cleanup_stale

    cleanup_stale(tmp_path, "report")
    assert (target / "summary.json").read_text() == "v1"
    assert sorted(os.listdir(tmp_path)) == [".report.klogs-lock", "report"]   # the dead run's (unheld) lock


@pytest.mark.parametrize("point", ["publish:file-staged", None])
def test_killed_file_publish_then_rerun(tmp_path: Path, point: str | None) -> None:
    target = tmp_path / "answers.jsonl"
    assert _publish(_FILE_PUBLISHER, target, "v1\n") == 0
    bait = _bait(tmp_path, "answers.jsonl")
    if point:
        assert _publish(_FILE_PUBLISHER, target, "v2\n", crash_at=point) == -signal.SIGKILL
        assert target.read_text() == "v1\n"
    assert _publish(_FILE_PUBLISHER, target, "v3\n") == 0
    assert target.read_text() == "v3\n"
    now = {k: v for k, v in snapshot(tmp_path).items() if ".tmp-" in k or ".old-" in k}
    assert now == bait
    assert sorted(os.listdir(tmp_path)) == sorted([f".answers.jsonl{MARKER}", "answers.jsonl",
                                                   *{k.split("/")[0] for k in bait}])


def test_remove_tree_unlinks_links_without_following(tmp_path: Path) -> None:
    from kafka_format.output.ownership import remove_tree

    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "f").write_text("keep")
    doomed = tmp_path / "doomed"
    (doomed / "d").mkdir(parents=True)
    os.symlink(outside, doomed / "d" / "to-dir")
    os.symlink(outside / "sub" / "f", doomed / "to-file")
    link = tmp_path / "top-link"
    os.symlink(outside, link)
    before = snapshot(outside)
    remove_tree(str(doomed))
    remove_tree(str(link))
    assert not doomed.exists() and not link.is_symlink()
    assert snapshot(outside) == before


def test_user_files_at_the_lock_or_marker_paths_are_not_taken_over(tmp_path: Path) -> None:
    """A user's file that happens to sit where klogs would put its lock or a file's marker is
    neither rewritten nor deleted."""
    from kafka_format.output.ownership import OutputRefused, Owner
    from kafka_format.output.publish import claim_output

    lock = tmp_path / ".out.klogs-lock"
    lock.write_text("my notes")
    side = tmp_path / f".answers.jsonl{MARKER}"
    side.write_text("also mine")
    before = snapshot(tmp_path)
    with pytest.raises(OutputRefused, match="a file klogs did not write"), \
            claim_output(tmp_path / "out", Owner("audit", "report")):
        pass
    with pytest.raises(OutputRefused, match="refusing to write the output's marker there"), \
            claim_output(tmp_path / "answers.jsonl", Owner("offsets", "answers"), file=True):
        pass
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("where", ["inside", "same"])
def test_export_checkpoint_overlapping_out_is_refused(root: Path, where: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    job = next(j for j in JOBS if j.name == "export-incremental")
    out = root / "out"
    ckpt = out / "_checkpoint" if where == "inside" else out
    before = snapshot(root)
    code, err = run_inprocess(job, [str(root / "logs"), "--out", str(out), "--checkpoint", str(ckpt)], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"klogs export: {ckpt}: the checkpoint and the output overlap"), err
    assert snapshot(root) == before
