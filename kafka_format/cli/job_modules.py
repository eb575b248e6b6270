"""Which ``klogs`` subcommands are Spark jobs, and where their code is: ``jobs/<name>.py`` with
``main(argv) -> int`` (beside the package, or under the working directory)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

__all__ = ["JOBS", "load_job_module", "find_job"]

# Spark jobs of docs/jobs/, each a thin entry point ``jobs/<name>.py`` with ``main(argv) -> int``.
JOBS: dict[str, str] = {
    "offsets": "offset for timestamp per partition (ListOffsets semantics)",
    "retention": "segments Kafka's retention pass would delete, and when",
    "compaction": "what the log cleaner keeps, or the compacted table view",
    "audit": "every kafka-dump-log check plus checkpoint/epoch/replica checks",
    "export": "topic history to Parquet or Delta, incrementally",
}

_REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def load_job_module(name: str) -> ModuleType | None:
    """The module ``jobs/<name>.py`` (beside the package, or under the working directory) that
    defines ``main``; None when there is none."""
    for root in (_REPO_ROOT, Path.cwd()):
        path = root / "jobs" / f"{name}.py"
        if not path.is_file():
            continue
        spec = importlib.util.spec_from_file_location(f"_klogs_job_{name}", path)
        if spec is None or spec.loader is None:
            continue
        module: ModuleType = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if callable(getattr(module, "main", None)):
            return module
    return None


def find_job(name: str) -> Callable[[list[str]], int] | None:
    """``main`` of ``jobs/<name>.py`` (:func:`load_job_module`)."""
    module = load_job_module(name)
    return None if module is None else module.main  # type: ignore[no-any-return]
