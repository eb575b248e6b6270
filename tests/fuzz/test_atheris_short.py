"""Coverage-guided fuzzing with atheris: a short bounded run in ``make test``, long runs in ``make fuzz``.

The harness (atheris_targets.py) runs in a subprocess; libFuzzer writes any crashing input to
tests/fuzz/crashers/<target>/ and the test fails with the crash report.  Every file under
tests/fuzz/crashers/<target>/ is replayed by :func:`test_crasher_regressions`; inputs that crash
code this area may not fix (the compiled decoder) are listed in ``KNOWN_UNFIXED`` (xfail strict).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import atheris_targets as harness
import pytest

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
CRASHERS = HERE / "crashers"
REALDATA = Path(os.environ.get("KLA_SHARED_DIR", HERE.parent.parent.parent / "shared")) / "realdata"

#: Wall-clock budget of the short run (all targets in one process) in ``make test``.
SHORT_SECONDS = 10
#: Per-target budget of ``make fuzz`` in seconds (env KLA_FUZZ_SECONDS, default 120).
LONG_SECONDS = int(os.environ.get("KLA_FUZZ_SECONDS", "120"))
_RSS_LIMIT_MB = 2048

#: Crashers of modules this area may not fix (fast decoder): name -> reason (xfail strict).
KNOWN_UNFIXED: dict[str, str] = {}


def _run(target: str, seconds: int, work: Path, *, extra_seeds: list[Path] = ()) -> None:  # type: ignore[assignment]
    pytest.importorskip("atheris")
    fresh = work / "corpus"
    fresh.mkdir()
    seeds = harness.corpus_for(target, CORPUS, work / "seeds")
    for extra in extra_seeds:
        harness.corpus_for(target, extra, seeds)
    artifacts = CRASHERS / target
    artifacts.mkdir(parents=True, exist_ok=True)
    before = set(artifacts.iterdir())
    cmd = [sys.executable, str(HERE / "atheris_targets.py"), target, f"-max_total_time={seconds}",
           f"-artifact_prefix={artifacts}/", f"-rss_limit_mb={_RSS_LIMIT_MB}", "-timeout=25",
           "-print_final_stats=1", str(fresh), str(seeds)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120, check=False,
                          cwd=HERE.parent.parent)
    new = sorted(set(artifacts.iterdir()) - before)
    if not any(artifacts.iterdir()):
        artifacts.rmdir()
    assert proc.returncode == 0 and not new, (
        f"atheris target {target!r} crashed (exit {proc.returncode}); inputs saved: {[str(p) for p in new]}\n"
        + proc.stderr[-6000:])
    assert "Done" in proc.stderr, proc.stderr[-3000:]


def test_atheris_short(tmp_path: Path) -> None:
    """All targets (byte 0 picks one) for ~10 s from the committed seeds; any crash fails."""
    _run("all", SHORT_SECONDS, tmp_path)


@pytest.mark.fuzz_long
@pytest.mark.parametrize("target", sorted(t for t in harness.TARGETS if t != "all"))
def test_atheris_long(target: str, tmp_path: Path) -> None:
    """``make fuzz``: each target for KLA_FUZZ_SECONDS (default 120), seeded also from realdata."""
    extra = []
    if REALDATA.is_dir():
        harness.write_seeds(tmp_path / "real", [REALDATA])
        extra.append(tmp_path / "real")
    _run(target, LONG_SECONDS, tmp_path, extra_seeds=extra)


def _crashers() -> list[pytest.param]:  # type: ignore[type-arg]
    params = []
    if CRASHERS.is_dir():
        for target_dir in sorted(p for p in CRASHERS.iterdir() if p.is_dir()):
            for f in sorted(target_dir.iterdir()):
                marks = []
                if f.name in KNOWN_UNFIXED:
                    marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_UNFIXED[f.name]))
                params.append(pytest.param(target_dir.name, f, id=f"{target_dir.name}/{f.name}", marks=marks))
    return params


@pytest.mark.parametrize(("target", "path"), _crashers())
def test_crasher_regressions(target: str, path: Path) -> None:
    """Every saved crashing input now passes its target (only KafkaFormatError, invariants hold)."""
    harness.replay(target, path.read_bytes())
