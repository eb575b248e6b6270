"""kafka_format: read every file of an Apache Kafka log directory exactly and fast.

Stable entry points (docs/api.md):

* :func:`decode_file` — records of one ``.log`` file as Arrow record batches;
* :func:`decode_bytes` — the same over a buffer;
* :func:`iter_batches` — batch headers only, no decompression;
* :func:`open_log_dirs` — topics, partitions, segments, checkpoints, replicas.

This package never imports pyspark; the Spark side lives in
:mod:`kafka_format.spark`.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from kafka_format.common.errors import *  # noqa: F403
from kafka_format.common.errors import __all__ as _error_names

__version__ = "0.1.0"

_LAZY = {
    "decode_file": "kafka_format.records.file_records",
    "decode_bytes": "kafka_format.records.file_records",
    "iter_batches": "kafka_format.records.file_records",
    "decode_segment": "kafka_format.records.file_records",
    "open_log_dirs": "kafka_format.storage.logdir",
    "IMPLEMENTATION": "kafka_format.records.implementation",
}

__all__ = [*_LAZY, *_error_names, "__version__"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kafka_format' has no attribute {name!r}")
    return getattr(import_module(module), name)
