"""The record framing the group and share coordinators share (``CoordinatorRecordSerde``).

Framing (``coordinator-common/.../CoordinatorRecordSerde.java``)::

    key    int16 record type + key message          (this package reads it at the type as version)
    value  int16 value version + value message      (null value = tombstone)

A record type the coordinator does not know is ``UnknownRecordTypeException`` (its loader skips
the record); a value version outside the value message's valid versions is
``UnknownRecordVersionException`` (Kafka 4.4's wording); trailing bytes after a message are
ignored, as Kafka does.  Decoded shapes follow
``DumpLogSegments.CoordinatorRecordMessageParser``: key ``{"type": "<recordType>", "data": {...}}``,
value ``{"version": "<v>", "data": {...}}``, a tombstone ``<DELETE>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka_format.common.errors import InternalTopicFormatError
from kafka_format.internal.protocol import (
    DELETE_TEXT,
    INT16,
    message_spec,
    read_message,
    to_json,
    write_version_prefixed,
)

__all__ = ["CoordinatorRecordSerde", "UnknownRecordTypeError", "read_version"]

Buffer = bytes | bytearray | memoryview


class UnknownRecordTypeError(InternalTopicFormatError):
    """The key's record type is none the coordinator knows (``Deserializer.UnknownRecordTypeException``)."""

    code = "UNKNOWN_RECORD_TYPE"

    @property
    def record_type(self) -> int:
        return int(self.found or -1)


def read_version(data: Buffer, what: str) -> int:
    """The int16 version (or record type) heading ``data``; Kafka's wording when it is too short."""
    if len(data) < INT16.size:
        raise InternalTopicFormatError(f"Could not read version from {what}'s buffer.", position=0,
                                       expected=f"{INT16.size} bytes", found=f"{len(data)} bytes")
    return int(INT16.unpack_from(data, 0)[0])


def _read(name: str, data: Buffer, version: int, what: str) -> dict[str, Any]:
    """``CoordinatorRecordSerde.readMessage``: the message after the int16 version, in Kafka's
    wording; the error's ``java_message`` is the text Kafka's tools print (with the generated
    reader's own message, e.g. "null" for a truncated buffer), its reason says what was wrong."""
    try:
        msg, _ = read_message(name, data, version, offset=INT16.size)
    except InternalTopicFormatError as e:
        head = f"Could not read record with version {version} from {what}'s buffer due to: "
        err = InternalTopicFormatError(f"{head}{e.reason}.", position=e.position, expected=e.expected,
                                       found=e.found)
        err.java_message = f"{head}{getattr(e, 'java_message', None) or e.reason}."    # type: ignore[attr-defined]
        raise err from e
    return msg


@dataclass(frozen=True)
class CoordinatorRecordSerde:
    """One coordinator's records: ``record_types`` maps a record type to its (key, value) message
    names; ``value_hook`` rewrites a decoded value's data (by value message name) after reading."""

    record_types: Mapping[int, tuple[str, str]]
    value_hook: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None

    def types_for(self, record_type: int) -> tuple[str, str]:
        """The (key, value) message names of ``record_type``, or :class:`UnknownRecordTypeError`."""
        names = self.record_types.get(record_type)
        if names is None:
            raise UnknownRecordTypeError(f"unknown record type {record_type}", position=0,
                                         expected=f"a record type in {sorted(self.record_types)}",
                                         found=str(record_type))
        return names

    def decode_key(self, key: Buffer) -> dict[str, Any]:
        """Key bytes -> ``{"type": "<recordType>", "data": {...}}``."""
        record_type = read_version(key, "key")
        key_name, _ = self.types_for(record_type)
        return {"type": str(record_type), "data": _read(key_name, key, record_type, "key")}

    def decode_value(self, record_type: int | str, value: Buffer | None) -> dict[str, Any] | None:
        """Value bytes of a record of ``record_type`` -> ``{"version": "<v>", "data": {...}}``; None for
        a tombstone."""
        _, value_name = self.types_for(int(record_type))
        if value is None:
            return None
        version = read_version(value, "value")
        valid = message_spec(value_name).valid
        if valid is None or not valid[0] <= version <= valid[1]:
            raise InternalTopicFormatError(f"Found an unknown record version {version} for {record_type} type",
                                           position=0, expected=f"a {value_name} version in {valid}",
                                           found=str(version))
        data = _read(value_name, value, version, "value")
        if self.value_hook is not None:
            data = self.value_hook(value_name, data)
        return {"version": str(version), "data": data}

    def decode_record(self, key: Buffer, value: Buffer | None) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """A key/value pair decoded; the value is None for a tombstone."""
        k = self.decode_key(key)
        return k, self.decode_value(int(k["type"]), value)

    def format_record(self, key: Buffer | None, value: Buffer | None, offset: int,
                      missing_key: str) -> tuple[str, str | None]:
        """``CoordinatorRecordMessageParser.parse``: the (key, payload) texts of ``kafka-dump-log``.
        A record without a key raises with ``missing_key`` (Kafka aborts the dump); an unknown type
        gives ``Unknown record type N at offset O, skipping.``, any other failure ``Error at offset O,
        skipping. <Kafka's message>``."""
        if key is None:
            raise InternalTopicFormatError(missing_key, expected="a key", found="null key")
        try:
            k, v = self.decode_record(key, value)
        except UnknownRecordTypeError as e:
            return f"Unknown record type {e.found} at offset {offset}, skipping.", None
        except InternalTopicFormatError as e:
            return f"Error at offset {offset}, skipping. {getattr(e, 'java_message', None) or e.reason}", None
        return to_json(k), DELETE_TEXT if v is None else to_json(v)

    def encode_key(self, record_type: int, data: dict[str, Any]) -> bytes:
        """Key bytes for ``record_type`` with fields ``data`` (camelCase)."""
        key_name, _ = self.types_for(record_type)
        return write_version_prefixed(key_name, data, record_type)

    def encode_value(self, record_type: int, data: dict[str, Any], version: int) -> bytes:
        """Value bytes (int16 ``version`` + message) for a record of ``record_type``."""
        _, value_name = self.types_for(record_type)
        return write_version_prefixed(value_name, data, version)
