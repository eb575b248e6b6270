"""The compiled extensions have one chooser (``common/extensions.py``: the only reader of
``KAFKA_FORMAT_DECODER`` and the only importer of the extensions) and one ``.pyi`` stub each, shipped
with the package and declaring what the C module holds."""

from __future__ import annotations

import ast
import fnmatch
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from testhelpers import imported_from

from kafka_format.common import extensions

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kafka_format"
CHOOSER = PACKAGE / "common" / "extensions.py"


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


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING"))


def _run_time_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` but those only under ``if TYPE_CHECKING:`` (its ``else`` is kept)."""
    out: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        out.append(node)
        if _is_type_checking(node):
            assert isinstance(node, ast.If)
            for child in node.orelse:
                visit(child)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def test_the_chooser_knows_every_compiled_extension() -> None:
    assert extensions.EXTENSIONS == _c_extensions()


def test_only_the_chooser_reads_the_variable_and_imports_the_extensions() -> None:
    readers, importers = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == CHOOSER:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        docs = _docstrings(tree)
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in _run_time_nodes(tree):
            if isinstance(node, ast.Constant) and node.value == extensions.ENV_VAR and id(node) not in docs:
                readers.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}")
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = imported_from(node, package)
                names = [base, *(f"{base}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called in ("import_module", "__import__"):
                    names = [str(node.args[0].value)]
            if any(n in extensions.EXTENSIONS for n in names):
                importers.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}")
    assert readers == [], "read KAFKA_FORMAT_DECODER through kafka_format.common.extensions.reference_forced"
    assert importers == [], "take the extension from kafka_format.common.extensions (import it for mypy only)"


def test_compiled_is_none_when_the_reference_is_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    name = "kafka_format.records._fastdecode"
    monkeypatch.delenv(extensions.ENV_VAR, raising=False)
    assert not extensions.reference_forced()
    built = extensions.extension(name)
    assert extensions.compiled(name) is built
    monkeypatch.setenv(extensions.ENV_VAR, " Reference ")
    assert extensions.reference_forced()
    assert extensions.compiled(name) is None
    assert extensions.extension(name) is built          # the mode does not unload anything
    with pytest.raises(ValueError, match="compiled extensions"):
        extensions.compiled("kafka_format.records.fast")


def test_a_missing_extension_is_none_and_require_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    name = "kafka_format.log.cleaner._kernels"
    monkeypatch.delenv(extensions.ENV_VAR, raising=False)
    monkeypatch.setitem(sys.modules, name, None)      # what an import of a module not built does
    assert extensions.extension(name) is None and extensions.compiled(name) is None
    with pytest.raises(ImportError):
        extensions.require(name)


def test_the_reference_mode_forces_every_twin_it_forced_before() -> None:
    """In a process started with ``KAFKA_FORMAT_DECODER=reference``: the reference record decoder,
    the cleaner's plain-Python kernels and the typed columns' reference decoders."""
    code = (
        "import kafka_format\n"
        "from kafka_format.log.cleaner import kernels\n"
        "from kafka_format.registry.typed import ColumnDecoder\n"
        "print(kafka_format.IMPLEMENTATION, kernels.COMPILED, ColumnDecoder(None).compiled)\n"
    )
    env = {**os.environ, extensions.ENV_VAR: "reference"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=ROOT)
    assert out.stdout.split() == ["reference", "False", "False"]


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

