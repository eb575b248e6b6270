"""Small helpers shared by tests in different folders (``tests/`` is on ``sys.path`` via its conftest)."""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

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
