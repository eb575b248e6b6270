"""Which record decoder a process uses: the compiled one when it imports, else the reference.

``KAFKA_FORMAT_DECODER=reference`` pins the reference decoder for a whole process (read by
:func:`kafka_format.common.extensions.reference_forced`, the one chooser of every compiled module;
``ENV_VAR`` is its name); ``IMPLEMENTATION`` says which one is active (``"fast"`` or
``"reference"``).  This module sits above both decoders, so the reference decoder never imports
its compiled override.
"""

from __future__ import annotations

import warnings
from typing import Any

from kafka_format.common.extensions import ENV_VAR, reference_forced
from kafka_format.records.decoder import REFERENCE, Decoder

__all__ = ["ENV_VAR", "IMPLEMENTATION", "crc32c", "get_decoder"]  # noqa: F822 (IMPLEMENTATION: module __getattr__)

FAST = "fast"

_chosen: Decoder | None = None
_implementation: str | None = None


def _choose() -> tuple[Decoder, str]:
    if reference_forced():
        return Decoder(), REFERENCE
    try:
        from kafka_format.records.fast import FastDecoder
    except ImportError as exc:
        if isinstance(exc, ModuleNotFoundError) and exc.name == "kafka_format.records.fast":
            return Decoder(), REFERENCE  # no compiled decoder in this build
        warnings.warn(f"kafka_format: compiled decoder unavailable ({exc}); using the slower "
                      f"reference decoder", RuntimeWarning, stacklevel=3)
        return Decoder(), REFERENCE
    return FastDecoder(), FAST


def get_decoder() -> Decoder:
    """The active decoder (compiled when available; see ``IMPLEMENTATION``)."""
    global _chosen, _implementation
    if _chosen is None:
        _chosen, _implementation = _choose()
    return _chosen


def crc32c(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32C (Castagnoli) of ``data`` continuing from ``value`` with the active decoder chosen
    first, so that the compiled decoder's function computes it where that decoder runs
    (:func:`kafka_format.common.crc.crc32c`), even before any record was decoded."""
    from kafka_format.common.crc import crc32c as compute

    get_decoder()
    return compute(data, value)


def __getattr__(name: str) -> Any:
    if name == "IMPLEMENTATION":
        get_decoder()
        return _implementation
    raise AttributeError(f"module 'kafka_format.records.implementation' has no attribute {name!r}")
