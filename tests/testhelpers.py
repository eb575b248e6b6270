"""Small helpers shared by tests in different folders (``tests/`` is on ``sys.path`` via its conftest)."""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pyarrow.fs as pafs

REPO = Path(__file__).resolve().parent.parent


def load_module(name: str, path: Path) -> ModuleType:
    """Import the file ``path`` as module ``name`` (a job under ``jobs/``, or another folder's test
    module whose oracle a test reuses); registered in ``sys.modules`` so dataclasses and pickling work."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def own_spark_env(*drop: str) -> dict[str, str]:
    """This process's environment for a child that starts its own Spark: without the shared
    session's gateway and ``SPARK_*`` variables (nor any of the prefixes ``drop``), with the suite's
    JVM options (``SPARK_SUBMIT_OPTS``, tests/conftest.py)."""
    gone = ("PYSPARK_GATEWAY", "SPARK_", *drop)
    return {k: v for k, v in os.environ.items() if not k.startswith(gone) or k == "SPARK_SUBMIT_OPTS"}


def imported_from(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a ``from ... import`` names, its relative levels resolved against
    ``package`` (the importing module's package)."""
    base = node.module or ""
    if not node.level:
        return base
    pkg = package
    for _ in range(node.level - 1):
        pkg = pkg.rpartition(".")[0]
    return f"{pkg}.{base}" if base else pkg


class CountingLocalFS(pafs.FileSystemHandler):
    """The local filesystem through ``pyarrow.fs.PyFileSystem``, read-only, counting what an object
    store would answer as requests: ``stats`` (paths given to ``get_file_info``), ``listings``
    (``(base dir, recursive)`` of each ``FileSelector``), ``opened`` (files opened for reading).
    Discovery and planning only read: every write raises."""

    def __init__(self) -> None:
        self.fs = pafs.LocalFileSystem()
        self.stats = 0
        self.listings: list[tuple[str, bool]] = []
        self.opened: list[str] = []

    def get_type_name(self) -> str:
        return "counting"

    def equals(self, other: object) -> bool:
        return other is self

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        self.stats += len(paths)
        return self.fs.get_file_info(paths)

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        self.listings.append((selector.base_dir, selector.recursive))
        return self.fs.get_file_info(selector)

    def open_input_file(self, path: str) -> object:
        self.opened.append(path)
        return self.fs.open_input_file(path)

    def open_input_stream(self, path: str) -> object:
        self.opened.append(path)
        return self.fs.open_input_stream(path)

    def _no_writes(self, *args: object, **kwargs: object) -> None:
        raise NotImplementedError

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _no_writes
    move = copy_file = open_output_stream = open_append_stream = _no_writes
