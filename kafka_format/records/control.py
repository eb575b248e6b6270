"""Control records: keys and end-transaction marker values.

Source: ``clients/src/main/java/org/apache/kafka/common/record/ControlRecordType.java``,
``EndTransactionMarker.java``.

Key (at least 4 bytes; extra bytes ignored)::

    version int16    must be >= 0; versions above 0 are read as version 0
    type    int16    0 ABORT, 1 COMMIT, 2 LEADER_CHANGE, 3 SNAPSHOT_HEADER,
                     4 SNAPSHOT_FOOTER, 5 KRAFT_VERSION, 6 KRAFT_VOTERS, other: UNKNOWN

ABORT/COMMIT value (at least 6 bytes; extra bytes ignored)::

    version          int16    must be >= 0
    coordinatorEpoch int32

KRaft control values (types 2-6) are Kafka-protocol messages decoded elsewhere.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from kafka_format.common.errors import CorruptRecordError

__all__ = [
    "CONTROL_ABORT",
    "CONTROL_COMMIT",
    "CONTROL_KEY",
    "CONTROL_TYPE_NAMES",
    "END_TXN_VALUE",
    "ControlRecordType",
    "EndTransactionMarker",
    "parse_control_key",
    "parse_end_txn_marker",
]

CONTROL_KEY = struct.Struct(
    ">"
    "h"  # version
    "h"  # type
)
END_TXN_VALUE = struct.Struct(
    ">"
    "h"  # version
    "i"  # coordinatorEpoch
)


class ControlRecordType(enum.IntEnum):
    """``ControlRecordType``: the ``type`` of a control record key."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6
    UNKNOWN = -1

    @classmethod
    def from_id(cls, type_id: int) -> ControlRecordType:
        """The type of id ``type_id``; ``UNKNOWN`` for ids Kafka does not define."""
        try:
            return cls(type_id) if type_id >= 0 else cls.UNKNOWN
        except ValueError:
            return cls.UNKNOWN


#: The end-transaction marker types as plain ints (numpy columns, the writer's arguments).
CONTROL_ABORT = int(ControlRecordType.ABORT)
CONTROL_COMMIT = int(ControlRecordType.COMMIT)
#: ``ControlRecordType`` names (``toString``) by type id, UNKNOWN left out.
CONTROL_TYPE_NAMES: dict[int, str] = {int(t): t.name for t in ControlRecordType if t is not ControlRecordType.UNKNOWN}


@dataclass(frozen=True)
class EndTransactionMarker:
    """Value of an ABORT / COMMIT control record."""

    type: ControlRecordType
    version: int
    coordinator_epoch: int


def parse_control_key(key: bytes | None) -> tuple[int, ControlRecordType]:
    """(version, type) of a control record key (``ControlRecordType.parse``)."""
    if key is None or len(key) < CONTROL_KEY.size:
        raise CorruptRecordError("control record key too short", expected=f">= {CONTROL_KEY.size} bytes",
                                 found="null" if key is None else f"{len(key)} bytes")
    version, type_id = CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise CorruptRecordError("invalid control record key version", expected=">= 0", found=str(version))
    return version, ControlRecordType.from_id(type_id)


def parse_end_txn_marker(key: bytes | None, value: bytes | None) -> EndTransactionMarker:
    """The end-transaction marker of a control record (``EndTransactionMarker.deserialize``)."""
    _version, type_ = parse_control_key(key)
    if type_ not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise CorruptRecordError("control record is not a transaction marker",
                                 expected="ABORT or COMMIT", found=type_.name)
    if value is None or len(value) < END_TXN_VALUE.size:
        raise CorruptRecordError("end transaction marker value too short",
                                 expected=f">= {END_TXN_VALUE.size} bytes",
                                 found="null" if value is None else f"{len(value)} bytes")
    version, epoch = END_TXN_VALUE.unpack_from(value)
    if version < 0:
        raise CorruptRecordError("invalid end transaction marker version", expected=">= 0",
                                 found=str(version))
    return EndTransactionMarker(type_, version, epoch)
