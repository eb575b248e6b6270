"""Java's integer limits, as Kafka's fields, files and configs hit them: ``Integer.MIN_VALUE`` /
``MAX_VALUE`` (int32 fields, ``Int.MaxValue`` defaults) and ``Long.MIN_VALUE`` / ``MAX_VALUE``
(offsets, timestamps, ``Long.MaxValue`` defaults and "never")."""

from __future__ import annotations

__all__ = ["INT32_MAX", "INT32_MIN", "INT64_MAX", "INT64_MIN"]

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
