"""``make package``'s archive (:mod:`kafka_format.cli.package`): venv-pack's own output is mode 0600
(a temporary file renamed); the archive klogs publishes is readable as any file its user creates."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from kafka_format.cli.package import pack_venv


@pytest.fixture(scope="module")
def packable(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small virtualenv with venv-pack in it (from the package index), as build_archive makes one."""
    root = tmp_path_factory.mktemp("package") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=300)
    pip = subprocess.run([str(root / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                          "venv-pack>=0.2"], capture_output=True, text=True, timeout=600)
    if pip.returncode != 0:
        pytest.fail(f"installing venv-pack failed: {pip.stderr[-2000:]}")
    return root


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_the_packed_archive_has_the_mode_of_a_file_its_user_creates(packable: Path, tmp_path: Path,
                                                                     umask: int) -> None:
    out = tmp_path / "dist" / "kla-env.tar.gz"
    saved = os.umask(umask)
    try:
        pack_venv(packable, out)
    finally:
        os.umask(saved)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask      # venv-pack alone leaves 0600
    with tarfile.open(out) as tar:                                   # a real archive of the venv
        assert "bin/venv-pack" in tar.getnames()
