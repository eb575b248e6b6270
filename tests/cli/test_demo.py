"""``klogs demo`` through the real console script, Spark part skipped (``--no-spark``).

The log dir is written here with kafka-python's builders; the summary table the
demo prints (segments, batches, records, codecs, offset range per partition) is
compared with kafka-python's decode of the same files.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import crc32c
import pytest

pytest.importorskip("kafka")
from kafka.record import MemoryRecords, MemoryRecordsBuilder  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
KLOGS = REPO / ".venv" / "bin" / "klogs"
CODECS = {"none": 0, "gzip": 1, "lz4": 3, "zstd": 4}
CODEC_NAMES = {v: k for k, v in CODECS.items()}
T0 = 1_700_000_000_000


def _batch(codec: str, base: int, n: int, *, control: bool = False) -> bytes:
    """A v2 batch at ``base`` (kafka-python writes baseOffset 0; the broker's rewrite is done here)."""
    producer = dict(transactional=True, producer_id=9, producer_epoch=0, base_sequence=0) if control else {}
    builder = MemoryRecordsBuilder(2, CODECS[codec], 1 << 20, offset=0, **producer)
    for i in range(n):
        if control:   # COMMIT marker: key (version, type), value (version, coordinatorEpoch)
            key, value = struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 3)
        else:
            key, value = b"k%d" % i, b"v" * i
        builder.append(T0 + base + i, key, value, [])
    builder.close()
    raw = bytearray(builder.buffer())
    struct.pack_into(">q", raw, 0, base)
    if control:   # set the control bit and recompute CRC-32C (attributes .. end)
        (attributes,) = struct.unpack_from(">h", raw, 21)
        struct.pack_into(">h", raw, 21, attributes | 0x20)
        struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[21:])))
    return bytes(raw)


def _log_dir(root: Path) -> Path:
    log_dir = root / "broker-0"
    segments = {
        ("orders", 0): {0: [_batch("none", 0, 3), _batch("gzip", 3, 4)], 7: [_batch("lz4", 7, 5)]},
        ("orders", 1): {0: [_batch("zstd", 0, 2), _batch("none", 2, 1, control=True), _batch("none", 3, 6)]},
        ("audit", 0): {10: [_batch("none", 10, 1), _batch("none", 11, 2)]},
    }
    for (topic, partition), segs in segments.items():
        part = log_dir / f"{topic}-{partition}"
        part.mkdir(parents=True)
        for base, batches in segs.items():
            (part / f"{base:020d}.log").write_bytes(b"".join(batches))
    (log_dir / "meta.properties").write_text("version=0\nbroker.id=0\n")
    return log_dir


def _kafka_python_summary(log_dir: Path) -> dict[tuple[str, int], tuple[int, int, int, str, str]]:
    out = {}
    for part in sorted(p for p in log_dir.iterdir() if p.is_dir()):
        topic, partition = part.name.rsplit("-", 1)
        segments = sorted(part.glob("*.log"))
        batches = records = 0
        codecs, offsets = set(), []
        for seg in segments:
            mr = MemoryRecords(seg.read_bytes())
            while (batch := mr.next_batch()) is not None:
                batches += 1
                codecs.add(CODEC_NAMES[batch.compression_type])
                offsets += [batch.base_offset, batch.last_offset]
                records += sum(1 for _ in batch)
        out[(topic, int(partition))] = (len(segments), batches, records, ",".join(sorted(codecs)),
                                        f"{min(offsets)}..{max(offsets)}")
    return out


def test_demo_summary_equals_kafka_python(tmp_path: Path) -> None:
    if not KLOGS.exists():
        pytest.skip(f"{KLOGS} not installed")
    log_dir = _log_dir(tmp_path / "data")
    out_dir = tmp_path / "out"
    done = subprocess.run([str(KLOGS), "demo", "--no-spark", "--logdir", str(log_dir), "--out", str(out_dir)],
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert f"Results are in: {out_dir}" in lines
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["logDir", "topic", "partition"])
    rows = {}
    for line in lines[header + 2:]:
        if not line.strip() or line.startswith("total:"):
            break
        _, topic, partition, segments, batches, records, codecs, offsets = line.split()
        rows[(topic, int(partition))] = (int(segments), int(batches), int(records), codecs, offsets)
    expected = _kafka_python_summary(log_dir)
    assert rows == expected
    total = f"total: {len(expected)} partitions, {sum(e[1] for e in expected.values())} batches, " \
            f"{sum(e[2] for e in expected.values())} records"
    assert total in lines
    # the dump preview is kafka-dump-log text of a real segment of this log dir
    assert any(line.startswith("  Dumping ") and str(log_dir) in line for line in lines)
    saved = json.loads((out_dir / "summary.json").read_text())
    saved_records = {(s["topic"], s["partition"]): s["records"] for s in saved}
    assert saved_records == {k: v[2] for k, v in expected.items()}
    assert "Spark part and jobs skipped (--no-spark)" in done.stdout


def test_demo_without_log_dirs_fails_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from kafka_format.cli import demo, main

    monkeypatch.setattr(demo, "SAMPLES_LOGDIRS", tmp_path / "absent")
    assert main(["demo", "--no-spark", "--out", str(tmp_path / "out")]) == 2
    assert "no log dirs" in capsys.readouterr().err


@pytest.mark.parametrize("verbose", [False, True])
def test_demo_sends_sparks_own_output_to_a_log_file_unless_verbose(verbose: bool, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo's Spark session, like the jobs', writes the JVM's start-up lines and warnings to a log
    file named on stdout; ``--verbose`` keeps them on the console.  (No JVM: the session builder is
    stopped once it has been asked.)"""
    pytest.importorskip("pyspark")
    import kafka_format.spark.session as session
    from kafka_format.cli import demo
    from kafka_format.cli.output import TextOutput

    asked: dict[str, object] = {}

    class Stop(Exception):
        pass

    def build_session(**kw: object) -> None:
        asked.update(kw)
        raise Stop

    monkeypatch.setenv("KLOGS_LOG_DIR", str(tmp_path))
    monkeypatch.setattr(session, "build_session", build_session)
    with pytest.raises(Stop):
        demo._spark_part(TextOutput(), [str(tmp_path)], tmp_path / "out", "local[1]", verbose=verbose)
    if verbose:
        assert asked["jvm_log"] is None
    else:
        log = Path(str(asked["jvm_log"]))
        assert log.parent == tmp_path and log.name.startswith("klogs-demo-")


def test_the_demos_commands_run_as_printed_in_a_shell(tmp_path: Path) -> None:
    """Every ``$ klogs ...`` line the demo prints splits, by the shell's rules, into the job's argv; the
    offsets line (``--topic-pattern 'v2-codecs|transactions'``) runs as pasted into bash."""
    from kafka_format.cli import demo

    runs = demo._job_runs([str(demo.SAMPLES_LOGDIRS)], tmp_path)
    for name, argv, _ in runs:
        assert shlex.split(demo.command_line(name, argv)) == ["klogs", name, *argv]
    name, argv, _ = runs[0]
    line = demo.command_line(name, argv)
    assert "'v2-codecs|transactions'" in line
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    assert {row.split()[0] for row in done.stdout.splitlines()[2:]} == {"transactions", "v2-codecs"}


def test_the_demo_says_when_retention_goes_by_file_times(tmp_path: Path) -> None:
    """legacy-v0's segments hold no timestamps: retention goes by their .log mtimes, which a clone sets
    to its checkout time -- the note names the partition and the mtime the files really have."""
    from kafka_format.cli import demo

    copy = tmp_path / "logdirs"
    shutil.copytree(demo.SAMPLES_LOGDIRS, copy, copy_function=shutil.copy)       # fresh mtimes, as a clone
    when = 1_800_000_000
    for log in (copy / "broker-1" / "legacy-v0-0").glob("*.log"):
        os.utime(log, (when, when))
    note = demo.mtime_note(demo.summarize([str(copy)]))
    assert note is not None and "(legacy-v0-0)" in note and "2027-01-15 08:00:00 UTC" in note
    assert note.startswith("note: 2 segments ")
    assert demo.mtime_note(demo.summarize([str(copy / "broker-1" / "v2-codecs-0")])) is None


def test_without_samples_the_demo_says_what_to_do_where_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from kafka_format.cli import demo, main

    checkout = tmp_path / "checkout" / "data_samples"
    checkout.mkdir(parents=True)
    (checkout / "generate.py").write_text("")
    monkeypatch.setattr(demo, "SAMPLES_LOGDIRS", checkout / "logdirs")
    assert main(["demo", "--no-spark", "--out", str(tmp_path / "out")]) == 2
    assert "make samples" in capsys.readouterr().err
    monkeypatch.setattr(demo, "SAMPLES_LOGDIRS", tmp_path / "site-packages" / "data_samples" / "logdirs")
    assert main(["demo", "--no-spark", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "--logdir" in err and "make samples" not in err


def test_the_demo_never_writes_into_a_users_directory_and_reruns_into_its_own(tmp_path: Path) -> None:
    """``--out`` follows the product's output rule: a directory holding a user's file is refused
    (exit 2, one line, the file untouched); the demo's own previous output is reused; the jobs'
    outputs inside it are theirs."""
    if not KLOGS.exists():
        pytest.skip(f"{KLOGS} not installed")
    log_dir = _log_dir(tmp_path / "data")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "records").mkdir()
    (mine / "records" / "notes.txt").write_text("a user's file")
    (mine / "summary.json").write_text("{}")
    argv = [str(KLOGS), "demo", "--no-spark", "--logdir", str(log_dir)]
    done = subprocess.run([*argv, "--out", str(mine)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and str(mine) in done.stderr and "refusing" in done.stderr
    assert sorted(p.relative_to(mine).as_posix() for p in mine.rglob("*")) == ["records", "records/notes.txt",
                                                                               "summary.json"]
    assert (mine / "summary.json").read_text() == "{}"
    out_dir = tmp_path / "demo"
    for _ in range(2):
        done = subprocess.run([*argv, "--out", str(out_dir)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert (out_dir / ".klogs-output").is_file() and (out_dir / "summary.json").is_file()
        assert (out_dir / "local" / "retention" / ".klogs-output").is_file()
