"""Values of KRaft control records (``ControlRecordUtils.java``).

A control record's key names its type (``ControlRecordType``); its value is a
flexible Kafka message read at version 0 (``ControlRecordUtils.*_CURRENT_VERSION``)
whose first field is its own int16 ``version``::

    2 LEADER_CHANGE     LeaderChangeMessage   {version, leaderId, voters[], grantingVoters[]}
    3 SNAPSHOT_HEADER   SnapshotHeaderRecord  {version, lastContainedLogTimestamp}
    4 SNAPSHOT_FOOTER   SnapshotFooterRecord  {version}
    5 KRAFT_VERSION     KRaftVersionRecord    {version, kRaftVersion}
    6 KRAFT_VOTERS      VotersRecord          {version, voters[{voterId, voterDirectoryId,
                                              endpoints[], kRaftVersionFeature}]}

:func:`format_kraft_control` renders the fragment ``kafka-dump-log`` prints after
the record metadata (``DumpLogSegments.dumpLog``).
"""

from __future__ import annotations

from typing import Any

from kafka_format.common.errors import InternalTopicFormatError
from kafka_format.internal.protocol import read_message, to_json, write_message
from kafka_format.records.control import (  # CONTROL_TYPE_NAMES re-exported
    CONTROL_TYPE_NAMES,
    ControlRecordType,
)

__all__ = [
    "CONTROL_READ_VERSION",
    "CONTROL_TYPE_NAMES",
    "CONTROL_VALUE_SCHEMAS",
    "decode_kraft_control_value",
    "decode_kraft_version",
    "decode_leader_change",
    "decode_snapshot_footer",
    "decode_snapshot_header",
    "decode_voters",
    "encode_kraft_control_value",
    "format_kraft_control",
]

LEADER_CHANGE = ControlRecordType.LEADER_CHANGE.value   # the KRaft control types' ids (ControlRecordType)
SNAPSHOT_HEADER = ControlRecordType.SNAPSHOT_HEADER.value
SNAPSHOT_FOOTER = ControlRecordType.SNAPSHOT_FOOTER.value
KRAFT_VERSION = ControlRecordType.KRAFT_VERSION.value
KRAFT_VOTERS = ControlRecordType.KRAFT_VOTERS.value

#: control type id → value schema
CONTROL_VALUE_SCHEMAS: dict[int, str] = {
    LEADER_CHANGE: "LeaderChangeMessage",
    SNAPSHOT_HEADER: "SnapshotHeaderRecord",
    SNAPSHOT_FOOTER: "SnapshotFooterRecord",
    KRAFT_VERSION: "KRaftVersionRecord",
    KRAFT_VOTERS: "VotersRecord",
}
CONTROL_READ_VERSION = 0  # ControlRecordUtils.*_CURRENT_VERSION
_DUMP_LABELS = {SNAPSHOT_HEADER: "SnapshotHeader", SNAPSHOT_FOOTER: "SnapshotFooter",
                KRAFT_VERSION: "KRaftVersion", KRAFT_VOTERS: "KRaftVoters"}


def decode_kraft_control_value(control_type: int, value: bytes | bytearray | memoryview) -> dict[str, Any]:
    """Value of a KRaft control record of type ``control_type`` (2..6) as a dict."""
    name = CONTROL_VALUE_SCHEMAS.get(control_type)
    if name is None:
        raise InternalTopicFormatError("not a KRaft control record type", expected="type 2..6",
                                       found=str(control_type))
    data, _ = read_message(name, value, CONTROL_READ_VERSION)
    return data


def decode_leader_change(value: bytes | bytearray | memoryview) -> dict[str, Any]:
    """``LeaderChangeMessage``."""
    return decode_kraft_control_value(LEADER_CHANGE, value)


def decode_snapshot_header(value: bytes | bytearray | memoryview) -> dict[str, Any]:
    """``SnapshotHeaderRecord``."""
    return decode_kraft_control_value(SNAPSHOT_HEADER, value)


def decode_snapshot_footer(value: bytes | bytearray | memoryview) -> dict[str, Any]:
    """``SnapshotFooterRecord``."""
    return decode_kraft_control_value(SNAPSHOT_FOOTER, value)


def decode_kraft_version(value: bytes | bytearray | memoryview) -> dict[str, Any]:
    """``KRaftVersionRecord``."""
    return decode_kraft_control_value(KRAFT_VERSION, value)


def decode_voters(value: bytes | bytearray | memoryview) -> dict[str, Any]:
    """``VotersRecord``."""
    return decode_kraft_control_value(KRAFT_VOTERS, value)


def encode_kraft_control_value(control_type: int, data: dict[str, Any]) -> bytes:
    """Value bytes of a KRaft control record (written at version 0)."""
    return write_message(CONTROL_VALUE_SCHEMAS[control_type], data, CONTROL_READ_VERSION)


def format_kraft_control(control_type: int, value: bytes | bytearray | memoryview, *,
                         leader_change_json: bool = True) -> str:
    """The text kafka-dump-log appends for a KRaft control record.

    `` SnapshotHeader {json}``, `` SnapshotFooter {json}``, `` KRaftVersion {json}``,
    `` KRaftVoters {json}``, `` LeaderChange: {json}`` (Kafka 4.1+, KAFKA-19069); with
    ``leader_change_json=False`` (Kafka before 4.1) a leader change prints
    `` controlType: LEADER_CHANGE(2)``.
    """
    if control_type == LEADER_CHANGE and leader_change_json:
        return f" LeaderChange: {to_json(decode_leader_change(value))}"
    label = _DUMP_LABELS.get(control_type)
    if label is None:
        name = CONTROL_TYPE_NAMES.get(control_type, "UNKNOWN")
        return f" controlType: {name}({control_type})"
    return f" {label} {to_json(decode_kraft_control_value(control_type, value))}"
