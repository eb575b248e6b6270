"""The program entry points keep numpy's OpenBLAS to one thread (``engine.one_blas_thread``).

Importing numpy starts OpenBLAS's pool, a thread per further core that spins before it sleeps:
CPU lost by a process that never multiplies matrices.  ``klogs`` and the spark-submit scripts
set ``OPENBLAS_NUM_THREADS=1`` before numpy is imported, unless the user set it.  Each case runs
in a fresh interpreter (numpy reads the variable once, at import) and asks the OpenBLAS that
numpy loaded how many threads it has.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

_ASK = """
import ctypes, glob, os, sys
{run}
import numpy
libs = glob.glob(os.path.join(os.path.dirname(numpy.__file__) + ".libs", "*openblas*"))
if not libs:
    print("none")
else:
    lib = ctypes.CDLL(libs[0])
    ask = getattr(lib, "scipy_openblas_get_num_threads64_", None) or getattr(lib, "openblas_get_num_threads")
    print(ask())
"""

_KLOGS = """
import io, contextlib
from kafka_format.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["dump", {log!r}]) == 0
"""

_JOB_SCRIPT = """
import runpy
sys.argv = ["offsets.py", "--help"]
with open(os.devnull, "w") as out, __import__("contextlib").redirect_stdout(out):
    try:
        runpy.run_path({script!r}, run_name="__main__")
    except SystemExit:
        pass
"""


def _blas_threads(run: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "GOTO_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", _ASK.format(run=run)], capture_output=True, text=True,
                          env={**clean, **env}, cwd=REPO, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="module")
def default_threads() -> int:
    """OpenBLAS's threads when nothing limits them: the cores (the control of every case)."""
    got = _blas_threads("")
    if got == "none":
        pytest.skip("this numpy does not bundle OpenBLAS")
    if int(got) < 2:
        pytest.skip("one core: OpenBLAS starts no pool to limit")
    return int(got)


@pytest.fixture(scope="module")
def log() -> str:
    found = sorted((REPO / "data_samples" / "logdirs").rglob("*.log"))
    assert found, "data_samples/logdirs holds segments"
    return str(found[0])


def test_klogs_starts_one_blas_thread(default_threads: int, log: str) -> None:
    assert _blas_threads(_KLOGS.format(log=log)) == "1"


def test_spark_submit_script_starts_one_blas_thread(default_threads: int) -> None:
    assert _blas_threads(_JOB_SCRIPT.format(script=str(REPO / "jobs" / "offsets.py"))) == "1"


def test_a_users_own_setting_is_kept(default_threads: int, log: str) -> None:
    assert _blas_threads(_KLOGS.format(log=log), OPENBLAS_NUM_THREADS="2") == "2"
