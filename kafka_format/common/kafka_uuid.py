"""Kafka's ``Uuid`` (topic ids, directory ids, cluster ids) as text: ``Uuid.toString`` and
``Uuid.ZERO_UUID``; the checkpoint files (:mod:`kafka_format.storage.checkpoints`) and the internal
topics' payloads (:mod:`kafka_format.internal.protocol`) both use them."""

from __future__ import annotations

import base64
import binascii

__all__ = ["ZERO_UUID", "uuid_string_problem", "uuid_to_string"]

#: ``Uuid.ZERO_UUID.toString()``.
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def uuid_to_string(raw: bytes) -> str:
    """``Uuid.toString``: unpadded base64url of the 16 bytes."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def uuid_string_problem(text: str) -> str | None:
    """Why ``Uuid.fromString(text)`` would not give back ``text`` (None: it does)."""
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError):
        return f"{text!r} is not base64url"
    if len(raw) != 16:
        return f"{text!r} decodes to {len(raw)} bytes, a Uuid has 16"
    canonical = uuid_to_string(raw)
    if canonical != text:
        return f"{text!r} is not Uuid.toString's form ({canonical!r}): the broker names its files by the latter"
    return None
