"""The framing Kafka's ``AbstractApiMessageSerde`` writes around a generated message, read and written
once for every internal topic that uses it: KRaft ``__cluster_metadata`` records
(``MetadataRecordSerde``) and tiered storage's ``__remote_log_metadata`` records
(``RemoteLogMetadataSerde`` through ``BytesApiMessageSerde``).

``server-common/.../serialization/AbstractApiMessageSerde.java``::

    frame version   unsigned varint   must be 1 (0 = the 2.8 preview format, rejected)
    api key         unsigned varint   record type (``apiKey`` of the schema), <= 0x7fff
    version         unsigned varint   record version, <= 0x7fff
    message         the record at that version (its generated class's ``read``)
    (no trailing bytes allowed)

Each number goes through ``unsignedIntToShort``: a varint that cannot be read is "Error while reading
<entity>", one above 0x7fff is "Value for <entity> was too large.", the rest is cast to a Java short
(a 5-byte varint may wrap to a negative int and short).  The api key picks the message class, per
topic: the KRaft records and the remote log metadata records share api keys 0 to 3, so each caller
passes its own lookup (:func:`read_framed`).

Failures raise :class:`ApiMessageSerdeError`, an
:class:`~kafka_format.common.errors.InternalTopicFormatError` with the byte position, what was expected
there, and the message of the exception Kafka's serde throws at that point (``kafka_message``: what
``DumpLogSegments`` prints after ``skipping.``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka_format.common.errors import InternalTopicFormatError
from kafka_format.internal.protocol import (
    VERSION_MAX,
    MessageSpec,
    Reader,
    read_message,
    write_message,
    write_uvarint,
)

__all__ = [
    "FRAME_VERSION",
    "UNSUPPORTED_VERSION_EXCEPTION",
    "ApiMessageSerdeError",
    "FramedRecord",
    "Lookup",
    "read_frame_header",
    "read_framed",
    "write_framed",
]

FRAME_VERSION = 1  # AbstractApiMessageSerde.DEFAULT_FRAME_VERSION
#: the exception the generated ``MetadataRecordType.fromId`` throws for an api key it does not know
UNSUPPORTED_VERSION_EXCEPTION = "org.apache.kafka.common.errors.UnsupportedVersionException"

#: (api key) -> (message name, its compiled schema), or None for an api key the topic does not know
Lookup = Callable[[int], "tuple[str, MessageSpec] | None"]


class ApiMessageSerdeError(InternalTopicFormatError):
    """A framed record Kafka's serde (or the value class built from it) refuses.

    ``kafka_message``: the ``getMessage()`` of the exception Kafka throws there (``None`` for an
    exception without one, which Kafka prints as ``null``).
    """

    def __init__(self, kafka_message: str | None, *, what: str, position: int, expected: str,
                 found: str) -> None:
        self.kafka_message = kafka_message
        shown = kafka_message if kafka_message is not None else "rejected (Kafka's exception has no message)"
        super().__init__(f"{what}: {shown}", position=position, expected=expected, found=found)


@dataclass(frozen=True, slots=True)
class FramedRecord:
    """A record read by :func:`read_framed`: api key, version, message name and its fields (the
    JSON-converter dict of :mod:`~kafka_format.internal.protocol`), and the byte position where each
    top-level field starts in the value."""

    api_key: int
    version: int
    name: str
    data: dict[str, Any]
    positions: dict[str, int] = field(default_factory=dict)


def _unsigned_int_to_short(r: Reader, entity: str) -> int:
    """``AbstractApiMessageSerde.unsignedIntToShort``."""
    start = r.pos
    try:
        value = r.uvarint(entity)
    except InternalTopicFormatError as e:
        raise ApiMessageSerdeError(f"Error while reading {entity}", what=r.what, position=start,
                                   expected=f"an unsigned varint ({entity})", found=e.found or "") from None
    if value > VERSION_MAX:
        raise ApiMessageSerdeError(f"Value for {entity} was too large.", what=r.what, position=start,
                                   expected=f"{entity} <= {VERSION_MAX}", found=str(value))
    value &= 0xFFFF
    return value - 0x10000 if value & 0x8000 else value


def read_frame_header(value: bytes | bytearray | memoryview, what: str) -> tuple[Reader, int, int, int]:
    """(a reader at the message, api key, version, the api key's byte position) of a framed record;
    the frame version must be 1."""
    r = Reader(value, 0, what)
    frame = _unsigned_int_to_short(r, "frame version")
    if frame == 0:
        raise ApiMessageSerdeError(
            "Could not deserialize metadata record with frame version 0. Note that upgrades from the "
            "preview release of KRaft in 2.8 to newer versions are not supported.",
            what=what, position=0, expected=f"frame version {FRAME_VERSION}", found="0")
    if frame != FRAME_VERSION:
        raise ApiMessageSerdeError(
            f"Could not deserialize metadata record due to unknown frame version {frame}"
            f"(only frame version {FRAME_VERSION} is supported)",
            what=what, position=0, expected=f"frame version {FRAME_VERSION}", found=str(frame))
    key_position = r.pos
    api_key = _unsigned_int_to_short(r, "type")
    version = _unsigned_int_to_short(r, "version")
    return r, api_key, version, key_position


def read_framed(value: bytes | bytearray | memoryview, what: str, lookup: Lookup) -> FramedRecord:
    """``AbstractApiMessageSerde.read``: the header, the message class of the api key (``lookup``;
    an unknown key fails as ``MetadataRecordType.fromId`` does), the message read at its version as
    the generated class reads it (no version check of its own; nested structs refuse versions they do
    not know), and no trailing bytes."""
    r, api_key, version, key_position = read_frame_header(value, what)
    found = lookup(api_key)
    if found is None:   # new MetadataParseException(cause): the cause's toString
        raise ApiMessageSerdeError(f"{UNSUPPORTED_VERSION_EXCEPTION}: Unknown metadata id {api_key}",
                                   what=what, position=key_position, expected="a known record type (api key)",
                                   found=str(api_key))
    name, spec = found
    positions: dict[str, int] = {}
    try:
        data, end = read_message(name, r.data, version, offset=r.pos, spec=spec, any_version=True,
                                 positions=positions)
    except InternalTopicFormatError as e:
        raise ApiMessageSerdeError(f"Failed to deserialize record with type {api_key}", what=f"{what} ({name})",
                                   position=e.position if e.position is not None else r.pos,
                                   expected=f"{name} v{version}: {e.expected}",
                                   found=f"{e.reason}: {e.found}") from None
    if end != r.end:
        raise ApiMessageSerdeError(f"Found {r.end - end} byte(s) of garbage after {api_key}", what=what,
                                   position=end, expected=f"the end of the {name}",
                                   found=f"{r.end - end} more bytes")
    return FramedRecord(api_key, version, name, data, positions)


def write_framed(name: str, data: dict[str, Any], version: int, api_key: int) -> bytes:
    """``AbstractApiMessageSerde.write``: frame version 1, api key, version, then the message."""
    return (write_uvarint(FRAME_VERSION) + write_uvarint(api_key) + write_uvarint(version)
            + write_message(name, data, version))
