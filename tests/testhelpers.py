"""Small helpers shared by tests in different folders (``tests/`` is on ``sys.path`` via its conftest)."""

from __future__ import annotations

import importlib.util
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
