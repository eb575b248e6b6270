"""``klogs audit``: the distributed DataFrame function, the job in-process (outputs, exit codes,
--fail-on, --format) and one ``klogs audit`` subprocess that dies just before publishing.

Oracles: a plain framing walk of the damaged ``.log`` (the position of the batch whose byte the
test flipped), ``os.stat`` sizes, pyarrow reading the Parquet outputs, the samples' documented
facts (broker-2 is a crashed follower: warnings only), and the library's per-partition functions
called directly (the distributed run must return exactly their findings).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark
pytest.importorskip("pyspark")

import pyarrow.parquet as pq  # noqa: E402

from kafka_format.log.audit.auditor import (  # noqa: E402
    ACCOUNTING_COLUMNS,
    FINDING_COLUMNS,
    audit_log_dir,
    audit_partition_report,
    audit_replicas,
    replica_groups,
)
from kafka_format.output.publish import is_temp_name  # noqa: E402
from kafka_format.storage.logdir import open_log_dirs  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
NOW = "2023-11-16T00:00:00Z"
NOW_MS = 1_700_092_800_000
SEG = "00000000000000000000"
ENTRY = struct.Struct(">qi")


def batch_positions(path: Path) -> list[int]:
    data = path.read_bytes()
    out, pos = [], 0
    while len(data) - pos > 17:
        _offset, size = ENTRY.unpack_from(data, pos)
        if size < 14 or pos + 12 + size > len(data):
            break
        out.append(pos)
        pos += 12 + size
    return out


def flip_crc(root: Path, k: int = 2) -> tuple[Path, int]:
    """Flip the last byte of batch ``k`` of broker-1 v2-codecs-0's first segment: (file, batch position)."""
    path = root / "broker-1" / "v2-codecs-0" / f"{SEG}.log"
    positions = batch_positions(path)
    data = bytearray(path.read_bytes())
    data[positions[k + 1] - 1] ^= 0x5A
    path.write_bytes(bytes(data))
    return path, positions[k]


@pytest.fixture()
def samples(tmp_path: Path) -> Path:
    root = tmp_path / "logdirs"
    shutil.copytree(SAMPLES, root)
    return root


def _library_rows(root: Path) -> set[tuple[Any, ...]]:
    found = open_log_dirs([str(root)])
    rows = []
    for d in found.log_dirs:
        rows += [f.row() for f in audit_log_dir(d)]
        for p in d.partitions:
            rows += [f.row() for f in audit_partition_report(p, now_ms=NOW_MS).findings]
    for g in replica_groups(found.log_dirs):
        rows += [f.row() for f in audit_replicas(g)]
    return {tuple(r[c] for c in FINDING_COLUMNS) for r in rows}


def test_distributed_audit_equals_the_per_partition_checks(spark: Any, samples: Path) -> None:
    from kafka_format.spark.frames import audit

    path, position = flip_crc(samples)
    findings, files = audit(spark, [str(samples)], now_ms=NOW_MS)
    assert [(f.name, f.dataType.simpleString()) for f in findings.schema.fields] == [
        ("severity", "string"), ("check", "string"), ("topic", "string"), ("partition", "int"),
        ("file", "string"), ("position", "bigint"), ("offset", "bigint"), ("expected", "string"),
        ("actual", "string"), ("message", "string")]
    assert tuple(files.schema.names) == ACCOUNTING_COLUMNS
    rows = {tuple(r) for r in findings.collect()}
    assert rows == _library_rows(samples)
    crc = [(r[4], r[5]) for r in rows if r[1] == "batch-crc"]
    assert crc == [(str(path), position)]
    acct = files.collect()
    assert sorted(Path(r["file"]) for r in acct) == sorted(samples.rglob("*.log"))
    for r in acct:
        assert r["validBytes"] + r["skippedBytes"] + r["zeroTailBytes"] + r["cutBytes"] == r["sizeBytes"]
        assert r["sizeBytes"] == os.stat(r["file"]).st_size


class TestJob:
    def run(self, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
        module = importlib.import_module("kafka_format.jobs.audit")
        capsys.readouterr()
        code = module.main(argv)
        return code, capsys.readouterr().out.splitlines()

    def test_warnings_only_exit_0_then_1_with_fail_on_warning(self, spark: Any, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
        root = tmp_path / "dirs" / "broker-2"
        shutil.copytree(SAMPLES / "broker-2", root)
        # a second partition dir whose name needs escaping in the HTML report
        shutil.copytree(root / "v2-codecs-0", root / "x<b>&y-0")
        out = tmp_path / "out"
        code, lines = self.run([str(root), "--out", str(out), "--now", NOW], capsys)
        assert code == 0
        table = pq.read_table(out / "findings")
        assert tuple(table.column_names) == FINDING_COLUMNS
        rows = table.to_pylist()
        assert len(lines) == len(rows) > 0
        assert {r["severity"] for r in rows} <= {"warning", "info"}
        assert {r["topic"] for r in rows if r["check"] == "invalid-bytes-at-end"} == {"v2-codecs", "x<b>&y"}
        assert any(line.startswith("WARNING invalid-bytes-at-end v2-codecs-0 ") for line in lines)
        files = pq.read_table(out / "files").to_pylist()
        assert sorted(Path(r["file"]) for r in files) == sorted(root.rglob("*.log"))
        page = (out / "report.html").read_text()
        assert "x<b>" not in page and "x&lt;b&gt;&amp;y" in page
        assert not [n for n in os.listdir(tmp_path) if is_temp_name(n)]

        code, _ = self.run([str(root), "--out", str(out), "--now", NOW, "--fail-on", "warning",
                            "--topic", "v2-codecs"], capsys)
        assert code == 1
        assert {r["topic"] for r in pq.read_table(out / "findings").to_pylist()} <= {"v2-codecs", None}

    def test_errors_exit_1_unless_fail_on_never_and_json_lines(self, spark: Any, samples: Path,
                                                               tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
        path, position = flip_crc(samples)
        out = tmp_path / "out"
        argv = [str(samples / "broker-1"), "--out", str(out), "--now", NOW, "--format", "json",
                "--topic-pattern", "v2-codecs"]
        code, lines = self.run(argv, capsys)
        assert code == 1
        objs = [json.loads(line) for line in lines]
        crc = [(o["file"], o["position"]) for o in objs if o["check"] == "batch-crc"]
        assert crc == [(str(path), position)]
        assert all(tuple(o) == FINDING_COLUMNS for o in objs)
        code, _ = self.run([*argv, "--fail-on", "never"], capsys)
        assert code == 0

    @pytest.mark.parametrize("argv", [
        [],
        ["{root}"],                                            # --out is required
        ["{root}", "--out", "{out}", "--fail-on", "sometimes"],
        ["{root}/does-not-exist", "--out", "{out}"],
        ["{empty}", "--out", "{out}"],                         # no Kafka log dir under it
        ["{root}", "--out", "{out}", "--now", "yesterday"],
    ], ids=["no-args", "no-out", "bad-fail-on", "missing-logdir", "no-log-dir-inside", "bad-now"])
    def test_could_not_run_is_exit_2(self, spark: Any, tmp_path: Path, argv: list[str],
                                     capsys: pytest.CaptureFixture[str]) -> None:
        out = tmp_path / "out"
        (tmp_path / "empty").mkdir()
        code, _ = self.run([a.format(root=SAMPLES / "broker-2", out=out, empty=tmp_path / "empty")
                            for a in argv], capsys)
        assert code == 2
        assert not out.exists()


def test_a_live_copy_passes_fail_on_warning_on_both_engines(spark: Any, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A running broker's log dir (the active segment's indexes preallocated, no clean-shutdown
    marker; tests/format/test_audit_active_segment.py builds it): no warning on either engine, the
    same findings, and the assumption stated in the info findings of the JSON lines."""
    from testhelpers import load_module

    from kafka_format.cli import main

    live = load_module("_active_segment_cases", REPO / "tests" / "format" / "test_audit_active_segment.py")
    part = live.write_log_dir(tmp_path / "live", clean_shutdown=False)
    outputs = {}
    for engine in ("local", "spark"):
        code = main(["audit", str(part.parent), "--out", str(tmp_path / engine), "--format", "json",
                     "--fail-on", "warning", "--engine", engine])
        lines = capsys.readouterr().out.splitlines()
        assert code == 0, lines
        outputs[engine] = sorted(lines)
    assert outputs["local"] == outputs["spark"]
    objs = [json.loads(line) for line in outputs["local"]]
    assumed = [o for o in objs if o["check"] in ("index-zero-tail", "timeindex-zero-tail")]
    assert len(assumed) == 2 and all("taken as the active segment of a running broker" in o["message"]
                                     for o in assumed)


def test_klogs_audit_killed_before_publish_leaves_no_output(tmp_path: Path) -> None:
    klogs = Path(sys.executable).with_name("klogs")
    entry = "import sys; from kafka_format.cli import main; sys.exit(main())"
    cmd = [str(klogs)] if klogs.exists() else [sys.executable, "-c", entry]
    out = tmp_path / "out"
    env = {**os.environ, "KLA_CRASH_AT": "audit-before-publish", "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run([*cmd, "audit", str(SAMPLES / "broker-2"), "--out", str(out), "--now", NOW,
                           "--master", "local[1]"], capture_output=True, text=True, timeout=300, env=env,
                          cwd=tmp_path)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert not out.exists()
    leftovers = [n for n in os.listdir(tmp_path) if is_temp_name(n)]
    assert len(leftovers) == 1
    assert sorted(os.listdir(tmp_path / leftovers[0])) == [".klogs-output", "files", "findings", "report.html"]


def test_a_terminal_gets_problems_in_full_and_expected_facts_folded() -> None:
    """On a TTY (``fold``) errors and warnings keep their lines, a check's informational findings
    become one line with their count; piped output keeps one line per finding."""
    module = importlib.import_module("kafka_format.jobs.audit")

    def row(sev: str, check: str, part: int, offset: int) -> dict[str, Any]:
        return {"severity": sev, "check": check, "topic": "t", "partition": part, "file": "/d/t-0/0.log",
                "position": 0, "offset": offset, "expected": None, "actual": None, "message": "m"}

    findings = [row("warning", "hanging-transaction", 1, 9), *[row("info", "non-consecutive-offsets", p % 5, p)
                                                               for p in range(60)], row("info", "open-transaction", 2, 3),
                row("error", "batch-crc", 0, 4)]
    piped = list(module.finding_lines(findings, fold=False, out="/o"))
    assert len(piped) == 63 and piped[1].startswith("INFO non-consecutive-offsets t-0 /d/t-0/0.log:0 offset=0: m")
    folded = list(module.finding_lines(findings, fold=True, out="/o"))
    assert folded == [piped[0], piped[-1], "INFO non-consecutive-offsets: 60 findings in t-0, t-1, t-2 and 2 more "
                                           "(each one in /o/report.html)", piped[-2]]


def test_a_terminal_gets_a_last_line_with_the_sums(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """At a terminal the findings end with one line of counts and where the page is; the counts are
    those of the Parquet output (the warnings of the crashed broker-2, the compacted topic's gaps)."""
    module = importlib.import_module("kafka_format.jobs.audit")
    samples = Path(__file__).resolve().parents[2] / "data_samples" / "logdirs"
    out = tmp_path / "audit"
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert module.main([str(samples), "--out", str(out), "--now", "2023-11-21T22:14:00Z", "--engine", "local",
                        "--config-file", str(samples / "topic-configs.json")]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    rows = pq.read_table(out / "findings").to_pylist()
    count = {sev: sum(1 for r in rows if r["severity"] == sev) for sev in ("error", "warning", "info")}
    assert count["warning"] > 0 and count["info"] > 0
    assert last.startswith(f"{count['error']} errors, {count['warning']} warnings, {count['info']} informational; ")
    assert last.endswith(f"; report: {out}/report.html")


def test_piped_the_findings_stay_one_a_line_and_the_sums_go_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Piped (``klogs audit ... | grep``): stdout holds the findings only, one a line; the line of sums
    and the report's path goes to stderr; ``--format json`` prints the findings alone."""
    module = importlib.import_module("kafka_format.jobs.audit")
    samples = Path(__file__).resolve().parents[2] / "data_samples" / "logdirs"
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    common = [str(samples), "--now", "2023-11-21T22:14:00Z", "--engine", "local",
              "--config-file", str(samples / "topic-configs.json")]
    assert module.main([*common, "--out", str(tmp_path / "text")]) == 0
    captured = capsys.readouterr()
    rows = pq.read_table(tmp_path / "text" / "findings").to_pylist()
    lines = captured.out.splitlines()
    assert len(lines) == len(rows) and all(line.split()[0] in ("ERROR", "WARNING", "INFO") for line in lines)
    count = {sev: sum(1 for r in rows if r["severity"] == sev) for sev in ("error", "warning", "info")}
    assert captured.err.splitlines() == [
        f"{count['error']} errors, {count['warning']} warnings, {count['info']} informational; "
        + captured.err.split("informational; ", 1)[1].rstrip("\n")]
    assert captured.err.rstrip().endswith(f"; report: {tmp_path / 'text'}/report.html")
    assert module.main([*common, "--out", str(tmp_path / "json"), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and len(captured.out.splitlines()) == len(rows)
