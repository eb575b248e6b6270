"""The compiled extensions have one ``.pyi`` stub each, shipped with the package and declaring what
the C module holds."""

from __future__ import annotations

import ast
import fnmatch
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kafka_format"


def _c_extensions() -> set[str]:
    """Dotted names of the modules the C sources initialise (``PyInit_<name>`` in ``<dir>/<name>.c``)."""
    found = set()
    for source in PACKAGE.rglob("*.c"):
        for name in re.findall(r"PyMODINIT_FUNC\s+PyInit_(\w+)", source.read_text()):
            assert name == source.stem, f"{source}: PyInit_{name} in a file of another name"
            found.add(".".join(source.relative_to(ROOT).with_suffix("").parts))
    return found


def _stub_of(name: str) -> Path:
    return ROOT.joinpath(*name.split(".")).with_suffix(".pyi")


@pytest.mark.parametrize("name", sorted(_c_extensions()))
def test_every_extension_has_a_stub_declaring_its_names(name: str) -> None:
    stub = _stub_of(name)
    assert stub.is_file(), f"{name} has no stub beside its C source: add {stub.relative_to(ROOT)}"
    declared = set()
    for node in ast.parse(stub.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            declared.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            declared.add(node.target.id)
        elif isinstance(node, ast.Assign):
            declared.update(t.id for t in node.targets if isinstance(t, ast.Name))
    declared = {n for n in declared if not n.startswith("_")}
    module = pytest.importorskip(name, reason=f"{name} is not built")
    assert declared == {n for n in dir(module) if not n.startswith("_")}


def test_the_stubs_ship_with_the_package() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["kafka_format"]
    for stub in PACKAGE.rglob("*.pyi"):
        rel = stub.relative_to(PACKAGE).as_posix()
        assert any(fnmatch.fnmatch(rel, g) for g in globs), f"{rel} is not in pyproject's package-data"

