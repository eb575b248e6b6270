"""The built wheel is the whole product: installed into a fresh virtualenv outside the repository, every
``klogs`` subcommand runs on ``data_samples/`` (``schemas`` also on a written ``_schemas`` topic, which
the samples lack) from another directory and answers exactly as the checkout does.  Nothing may reach back into the repo (jobs, C sources, profiles)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
NOW = "2026-01-01T00:00:00Z"
SEGMENT = SAMPLES / "broker-1" / "v2-codecs-0" / "00000000000000000000.log"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``bin/`` of a fresh virtualenv holding only the wheel built from this checkout and its
    dependencies (from the package index)."""
    root = tmp_path_factory.mktemp("wheel")
    dist, venv = root / "dist", root / "venv"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(dist), str(REPO)], check=True, capture_output=True, text=True, timeout=600)
    (wheel,) = dist.glob("kafka_log_analytics-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                          "--disable-pip-version-check", str(wheel)],
                         capture_output=True, text=True, timeout=900)
    if pip.returncode != 0:
        pytest.fail(f"installing the wheel failed: {pip.stderr[-2000:]}")
    return venv / "bin"


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "KLOGS_LOG_DIR": str(tmp / "logs")}


def _run(klogs: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(klogs), *args], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env=_env(cwd))


def _both(installed: Path, tmp_path: Path, args: list[str]) -> tuple[subprocess.CompletedProcess[str], ...]:
    """The command run by the wheel's ``klogs`` (in a directory outside the repo) and by the checkout's."""
    out = []
    for name, klogs in (("wheel", installed / "klogs"), ("checkout", Path(sys.executable).parent / "klogs")):
        cwd = tmp_path / name
        cwd.mkdir(exist_ok=True)
        out.append(_run(klogs, [a.replace("OUT", str(cwd / "out")) for a in args], cwd))
    return tuple(out)


def test_the_wheel_imports_from_the_virtualenv_with_its_compiled_decoder(installed: Path, tmp_path: Path) -> None:
    code = "import kafka_format, kafka_format.jobs.export as e; print(kafka_format.__file__, e.__file__, " \
           "kafka_format.IMPLEMENTATION)"
    done = subprocess.run([str(installed / "python"), "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env=_env(tmp_path), timeout=120)
    assert done.returncode == 0, done.stderr
    init, job, implementation = done.stdout.split()
    venv = str(installed.parent)
    assert init.startswith(venv) and job.startswith(venv) and not init.startswith(str(REPO))
    assert implementation == "fast"


@pytest.mark.parametrize("args", [
    ["dump", str(SEGMENT), "--deep-iteration", "--print-data-log"],
    ["offsets", str(SAMPLES), "--timestamp", "earliest", "--timestamp", "latest", "--timestamp",
     "max-timestamp", "--now", NOW],
    ["retention", str(SAMPLES), "--now", NOW, "--format", "jsonl", "--out", "OUT"],
    ["audit", str(SAMPLES), "--now", NOW, "--format", "json", "--fail-on", "never", "--out", "OUT"],
    ["compaction", str(SAMPLES), "--now", NOW, "--out", "OUT", "--write-segments"],
    ["export", str(SAMPLES), "--out", "OUT"],
    ["groups", str(SAMPLES), "--group", "billing-service", "--now", NOW, "--out", "OUT"],
    ["schemas", str(SAMPLES)],
], ids=lambda a: a[0])
def test_every_subcommand_answers_as_the_checkout_does(installed: Path, tmp_path: Path, args: list[str]) -> None:
    wheel, checkout = _both(installed, tmp_path, args)
    assert wheel.returncode == checkout.returncode, wheel.stderr
    assert wheel.returncode in (0, 2)

    def same(text: str) -> str:
        return text.replace(str(tmp_path / "wheel"), "CWD").replace(str(tmp_path / "checkout"), "CWD")

    assert same(wheel.stdout) == same(checkout.stdout)
    if args[0] == "schemas":          # data_samples hold no Schema Registry topic: one line, exit 2
        assert wheel.returncode == 2 and "no '_schemas' partition" in wheel.stderr
        return
    assert wheel.returncode == 0 and wheel.stdout.strip()
    out_w, out_c = tmp_path / "wheel" / "out", tmp_path / "checkout" / "out"
    if "OUT" in args:
        files_w = sorted(p.relative_to(out_w) for p in out_w.rglob("*") if p.is_file())
        files_c = sorted(p.relative_to(out_c) for p in out_c.rglob("*") if p.is_file())
        if args[0] != "export":       # Parquet part files carry a per-run name
            assert files_w == files_c
        for rel in files_w:
            if rel.suffix == ".json" and rel.name != ".klogs-output":
                a, b = json.loads((out_w / rel).read_text()), json.loads((out_c / rel).read_text())
                for doc in (a, b):
                    if isinstance(doc, dict):
                        for timing in ("elapsedMs", "generatedAt", "run", "inputs"):
                            doc.pop(timing, None)
                assert a == b, rel


def test_schemas_lists_a_registry_topic_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    # data_samples/ hold no _schemas topic (the run above is the exit-2 path): a log dir written by the
    # checkout's writer with two registered versions, one soft-deleted
    from testhelpers import load_module

    corpus = load_module("registry_corpus", REPO / "tests" / "registry" / "registry_corpus.py")
    key = {"keytype": "SCHEMA", "subject": "t-value", "magic": 1}
    records = [({**key, "version": v}, {"subject": "t-value", "version": v, "id": 10 + v, "schema": '"string"',
                                         "deleted": v == 2}) for v in (1, 2)]
    root = corpus.write_log_dir(tmp_path / "logs", records, {})
    wheel, checkout = _both(installed, tmp_path, ["schemas", str(root), "--format", "jsonl", "--include-deleted"])
    assert wheel.returncode == checkout.returncode == 0, wheel.stderr
    assert wheel.stdout == checkout.stdout
    rows = [json.loads(line) for line in wheel.stdout.splitlines()]
    assert [(r["subject"], r["version"], r["id"], r["deleted"]) for r in rows] == [
        ("t-value", 1, 11, False), ("t-value", 2, 12, True)]


def test_demo_runs_from_the_wheel_on_given_log_dirs(installed: Path, tmp_path: Path) -> None:
    done = _run(installed / "klogs", ["demo", "--logdir", str(SAMPLES), "--out", str(tmp_path / "demo")], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert str(tmp_path / "demo") in done.stdout


@pytest.mark.parametrize("args", [
    ["retention", str(SAMPLES), "--engine", "spark", "--now", NOW],
    ["retention", str(SAMPLES), "--master", "local[1]", "--now", NOW],
    ["export", str(SAMPLES), "--format", "delta", "--out", "OUT"],
    ["export", str(SAMPLES), "--out", "OUT", "--checkpoint", "OUT-checkpoint"],
], ids=["engine-spark", "master", "delta", "incremental"])
def test_a_spark_run_without_the_spark_extra_names_the_extra(installed: Path, tmp_path: Path, args: list[str]) -> None:
    """The wheel installed without ``[spark]`` (no pyspark): one line naming the extra, exit 2, no output."""
    done = _run(installed / "klogs", [a.replace("OUT", str(tmp_path / "out")) for a in args], tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith(f"klogs {args[0]}: ") and "pip install 'kafka-log-analytics[spark]'" in done.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "out-checkpoint").exists()


def test_the_wheel_knows_its_version(installed: Path, tmp_path: Path) -> None:
    done = _run(installed / "klogs", ["--version"], tmp_path)
    meta = subprocess.run([str(installed / "python"), "-c", "import importlib.metadata as m; "
                           "print(m.version('kafka-log-analytics'))"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == f"klogs {meta.stdout.strip()}\n"


def test_demo_from_the_wheel_without_log_dirs_asks_for_one(installed: Path, tmp_path: Path) -> None:
    """An installation has no data_samples/ and no Makefile: the demo asks for --logdir, not `make samples`."""
    done = _run(installed / "klogs", ["demo", "--out", str(tmp_path / "demo")], tmp_path)
    assert done.returncode == 2
    assert "--logdir" in done.stderr and "make samples" not in done.stderr
