"""Which compiled extension modules a process uses: the one place that reads ``KAFKA_FORMAT_DECODER``
and the one place that imports the package's C extensions (setup.py's ``ext_modules``).

Every extension has a plain-Python twin giving the same results: the reference record decoder
(:mod:`kafka_format.records.decoder`), the cleaner's kernels' twins, the typed columns' reference
decoders, numpy fills.  ``KAFKA_FORMAT_DECODER=reference`` forces those twins for a whole process.
A module asks here for its extension by its dotted name:

* :func:`compiled` — the extension as the chosen implementation: None when it is not built or the
  reference implementation is forced;
* :func:`extension` / :func:`require` — the extension whatever the mode (for code that is itself the
  compiled twin, such as :mod:`kafka_format.records.fast`, which a test may run beside the reference,
  and for the compiled helpers the reference mode has never switched off: Arrow fills, the partition
  dir listing); a module that chooses between the two (``records/implementation.py``,
  ``registry/typed.py``) asks :func:`reference_forced`.

A module that calls its extension names it for mypy under ``if TYPE_CHECKING:`` (the ``.pyi`` stub
beside the C source types it) and takes the module object from here at run time.  The extensions
live in higher layers; this module knows them by name only and imports nothing of the package.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["ENV_VAR", "EXTENSIONS", "REFERENCE", "compiled", "extension", "reference_forced", "require"]

ENV_VAR = "KAFKA_FORMAT_DECODER"
#: The value of :data:`ENV_VAR` that forces the reference implementations (and the reference
#: decoder's name, ``kafka_format.IMPLEMENTATION``).
REFERENCE = "reference"

#: The compiled extension modules setup.py builds (each optional: a build without a C compiler has none).
EXTENSIONS = frozenset({
    "kafka_format.records._fastdecode",       # the columnar decode loop (records/fast.py)
    "kafka_format.log.cleaner._kernels",      # the cleaner's MD5, offset map, record encoder
    "kafka_format.registry._avrocolumns",     # typed Avro columns
    "kafka_format.registry._protocolumns",    # typed Protobuf columns
    "kafka_format.registry._jsoncolumns",     # typed JSON Schema columns
})


def reference_forced() -> bool:
    """Whether ``KAFKA_FORMAT_DECODER=reference`` forces the reference implementations (read on
    every call, so a test may set it before it makes a decoder)."""
    return os.environ.get(ENV_VAR, "").strip().lower() == REFERENCE


def _known(name: str) -> str:
    if name not in EXTENSIONS:
        raise ValueError(f"{name!r} is not one of the package's compiled extensions: {sorted(EXTENSIONS)}")
    return name


def require(name: str) -> ModuleType:
    """Extension module ``name`` (one of :data:`EXTENSIONS`) whatever the mode; the ImportError of
    a build without it (or of a module that fails to load) is raised as it is."""
    return importlib.import_module(_known(name))


def extension(name: str) -> ModuleType | None:
    """Extension module ``name`` whatever the mode, or None when this build does not load it."""
    try:
        return require(name)
    except ImportError:
        return None


def compiled(name: str) -> ModuleType | None:
    """Extension module ``name`` as the chosen implementation: None when it is not built or the
    reference implementation is forced (then the caller's plain-Python twin runs)."""
    _known(name)
    return None if reference_forced() else extension(name)
