"""`make package`: the wheel plus a packed virtualenv for ``spark-submit --archives``.

This is the PySpark-documented way to ship Python dependencies and compiled code
to executors (``venv-pack``): the archive holds a virtualenv with this package
(its compiled decoder included), pyarrow, numpy, pandas and the codec libraries.
pyspark itself is not packed: executors take it from the Spark installation.

Use it with::

    spark-submit --archives dist/kla-env.tar.gz#environment \\
        --conf spark.pyspark.python=./environment/bin/python jobs/export.py ...
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

EXECUTOR_EXTRAS = ["pandas>=2.2,<3"]


def build_archive(wheel_dir: Path, out: Path, work: Path) -> Path:
    """Create a fresh venv in ``work``, install the newest wheel of ``wheel_dir``, pack it to ``out``."""
    wheels = sorted(glob.glob(str(wheel_dir / "kafka_log_analytics-*.whl")))
    if not wheels:
        raise SystemExit(f"no kafka_log_analytics wheel in {wheel_dir}; run `pip wheel` first")
    if work.exists():
        shutil.rmtree(work)
    venv.EnvBuilder(with_pip=True, clear=True).create(work)
    py = work / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "venv-pack>=0.2", wheels[-1],
                    *EXECUTOR_EXTRAS], check=True)
    return pack_venv(work, out)


def pack_venv(venv_dir: Path, out: Path) -> Path:
    """``venv-pack`` the virtualenv ``venv_dir`` (which has venv-pack installed) to ``out``, readable
    as any file this user creates (venv-pack writes a temporary file, mode 0600, and renames it:
    ``spark-submit --archives`` on another account, a web server or a shared disk could not read
    that)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        out.unlink()
    subprocess.run([str(venv_dir / "bin" / "venv-pack"), "-p", str(venv_dir), "-o", str(out), "--quiet"],
                   check=True)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(out, 0o666 & ~umask)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: ``python -m kafka_format.cli.package --wheel-dir dist --out F``."""
    parser = argparse.ArgumentParser(prog="kafka_format.cli.package", description=__doc__.splitlines()[0])
    parser.add_argument("--wheel-dir", type=Path, default=Path("dist"))
    parser.add_argument("--out", type=Path, default=Path("dist/kla-env.tar.gz"))
    parser.add_argument("--work", type=Path, default=Path("build/package-venv"))
    args = parser.parse_args(argv)
    out = build_archive(args.wheel_dir, args.out, args.work)
    print(f"wheel(s) in {args.wheel_dir}; packed virtualenv: {out}")
    print(f"spark-submit --archives {out}#environment --conf spark.pyspark.python=./environment/bin/python ...")
    return 0


if __name__ == "__main__":
    sys.exit(main())
