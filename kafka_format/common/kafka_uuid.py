"""Kafka's ``Uuid`` (topic ids, directory ids, cluster ids) as text: ``Uuid.toString`` and
``Uuid.ZERO_UUID``; the checkpoint files (:mod:`kafka_format.storage.checkpoints`) and the internal
topics' payloads (:mod:`kafka_format.internal.protocol`) both use them."""

from __future__ import annotations

import base64

__all__ = ["ZERO_UUID", "uuid_to_string"]

#: ``Uuid.ZERO_UUID.toString()``.
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def uuid_to_string(raw: bytes) -> str:
    """``Uuid.toString``: unpadded base64url of the 16 bytes."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
