"""The tiered-storage (KIP-405) remote log metadata of ``__remote_log_metadata``, as values, and
their records decoded, encoded and printed as Kafka does.

Kafka's ``TopicBasedRemoteLogMetadataManager`` keeps, per topic-id-partition, the remote segments
and their states in that topic's records (``RemoteLogMetadataSerde``): a segment's metadata when
its copy starts, updates as it is copied and deleted, and partition-delete events.  This module
declares those values once (``storage/api/.../remote/storage/RemoteLogSegmentMetadata.java`` and
its siblings, ``RemoteLogSegmentMetadataSnapshot``); replaying the records as the manager's cache
does is :mod:`kafka_format.internal.remote_log_metadata_cache`.

Ids are Kafka ``Uuid`` text (``Uuid.toString``: 22 characters of unpadded base64url).

Records (``storage/src/main/resources/message/*.json``, all flexible, version 0) are framed by
``BytesApiMessageSerde`` (:mod:`kafka_format.internal.api_message`) with the ``storage`` area's
api keys -- 0 ``RemoteLogSegmentMetadataRecord``, 1 ``RemoteLogSegmentMetadataUpdateRecord``, 2
``RemotePartitionDeleteMetadataRecord``, 3 ``RemoteLogSegmentMetadataSnapshotRecord`` (the
generated ``storage.generated.MetadataRecordType``; the KRaft records reuse 0 to 3) -- and have no
key.  :func:`decode_remote_log_metadata` reads them as ``RemoteLogMetadataSerde.deserialize`` and
its transforms do: a segment record becomes ``new RemoteLogSegmentMetadata(...)`` (start offset >=
0, end offset >= start offset, at least one leader epoch) ``.createWithUpdates(...)`` with the
record's state (an unknown state id is ``state can not be null``).  Kafka 4.0 added the tagged field
``TxnIndexEmpty`` (KIP-1058) to the segment and snapshot records, and ``txnIdxEmpty=`` to their
``toString``; each ``release`` argument reads and prints as that release does.

:func:`format_remote_log_metadata` is ``DumpLogSegments``' ``--remote-log-metadata-decoder``
payload: the value's ``toString()``, or ``Error at offset N, skipping. <message>`` with the message
of the exception Kafka throws.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from kafka_format.common.errors import InternalTopicFormatError
from kafka_format.internal.api_message import (
    ApiMessageSerdeError,
    FramedRecord,
    Lookup,
    read_framed,
    write_framed,
)
from kafka_format.internal.protocol import MessageSpec, compile_spec, message_spec
from kafka_format.internal.schemas.releases import STORAGE_CHANGES, area_schemas, storage_schemas

__all__ = [
    "REMOTE_LOG_METADATA_RECORD_TYPES",
    "TXN_INDEX_EMPTY_SINCE",
    "CustomMetadata",
    "RemoteLogMetadata",
    "RemoteLogSegmentId",
    "RemoteLogSegmentMetadata",
    "RemoteLogSegmentMetadataSnapshot",
    "RemoteLogSegmentMetadataUpdate",
    "RemoteLogSegmentState",
    "RemotePartitionDeleteMetadata",
    "RemotePartitionDeleteState",
    "TopicIdPartition",
    "as_json_object",
    "decode_remote_log_metadata",
    "encode_remote_log_metadata",
    "format_remote_log_metadata",
    "java_map_text",
]

Release = tuple[int, int]
#: A custom metadata blob of the remote storage manager (``RemoteLogSegmentMetadata.CustomMetadata``),
#: None for ``Optional.empty()``.
CustomMetadata = bytes | None

#: api key -> record name, the ``storage`` area's (``storage.generated.MetadataRecordType``)
REMOTE_LOG_METADATA_RECORD_TYPES: dict[int, str] = {
    int(doc["apiKey"]): name for name, doc in area_schemas("storage").items() if "apiKey" in doc
}
_SEGMENT_RECORD = "RemoteLogSegmentMetadataRecord"
_UPDATE_RECORD = "RemoteLogSegmentMetadataUpdateRecord"
_DELETE_RECORD = "RemotePartitionDeleteMetadataRecord"
_SNAPSHOT_RECORD = "RemoteLogSegmentMetadataSnapshotRecord"
_TXN_INDEX_EMPTY = "TxnIndexEmpty"
#: the release whose segment and snapshot records (and their ``toString``) carry ``TxnIndexEmpty``
TXN_INDEX_EMPTY_SINCE: Release = next(since for since, name, _, fields in STORAGE_CHANGES
                                      if name == _SEGMENT_RECORD and _TXN_INDEX_EMPTY in fields)
_WHAT = "remote log metadata record"


class RemoteLogSegmentState(IntEnum):
    """``RemoteLogSegmentState``: the id each state is stored as."""

    COPY_SEGMENT_STARTED = 0
    COPY_SEGMENT_FINISHED = 1
    DELETE_SEGMENT_STARTED = 2
    DELETE_SEGMENT_FINISHED = 3

    @staticmethod
    def is_valid_transition(source: RemoteLogSegmentState | None, target: RemoteLogSegmentState) -> bool:
        """``RemoteLogSegmentState.isValidTransition``: from nothing only to COPY_SEGMENT_STARTED; a
        state to itself (retries); STARTED to FINISHED or DELETE_SEGMENT_STARTED; FINISHED to
        DELETE_SEGMENT_STARTED; DELETE_SEGMENT_STARTED to DELETE_SEGMENT_FINISHED."""
        s = RemoteLogSegmentState
        if source is None:
            return target == s.COPY_SEGMENT_STARTED
        if source == target:
            return True
        return target in {
            s.COPY_SEGMENT_STARTED: (s.COPY_SEGMENT_FINISHED, s.DELETE_SEGMENT_STARTED),
            s.COPY_SEGMENT_FINISHED: (s.DELETE_SEGMENT_STARTED,),
            s.DELETE_SEGMENT_STARTED: (s.DELETE_SEGMENT_FINISHED,),
        }.get(source, ())


class RemotePartitionDeleteState(IntEnum):
    """``RemotePartitionDeleteState``: the id each state is stored as."""

    DELETE_PARTITION_MARKED = 0
    DELETE_PARTITION_STARTED = 1
    DELETE_PARTITION_FINISHED = 2

    @staticmethod
    def is_valid_transition(source: RemotePartitionDeleteState | None,
                            target: RemotePartitionDeleteState) -> bool:
        """``RemotePartitionDeleteState.isValidTransition``: from nothing only to MARKED; a state to
        itself; MARKED to STARTED; STARTED to FINISHED."""
        s = RemotePartitionDeleteState
        if source is None:
            return target == s.DELETE_PARTITION_MARKED
        if source == target:
            return True
        return (source, target) in ((s.DELETE_PARTITION_MARKED, s.DELETE_PARTITION_STARTED),
                                    (s.DELETE_PARTITION_STARTED, s.DELETE_PARTITION_FINISHED))


@dataclass(frozen=True, order=True)
class TopicIdPartition:
    """``TopicIdPartition``: a partition of a topic incarnation (its topic id)."""

    topic_id: str
    topic: str
    partition: int

    def __str__(self) -> str:
        """``TopicIdPartition.toString``: ``<topicId>:<topic>-<partition>``."""
        return f"{self.topic_id}:{self.topic}-{self.partition}"


@dataclass(frozen=True, order=True)
class RemoteLogSegmentId:
    """``RemoteLogSegmentId``: a remote segment's Uuid within its topic-id-partition."""

    partition: TopicIdPartition
    id: str

    def __str__(self) -> str:
        """``RemoteLogSegmentId.toString``."""
        return f"RemoteLogSegmentId{{topicIdPartition={self.partition}, id={self.id}}}"


def java_map_text(entries: Mapping[int, int]) -> str:
    """``AbstractMap.toString`` of a ``TreeMap``: ``{0=0, 3=120}`` in key order."""
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(entries.items())) + "}"


def _optional_custom_metadata(custom: CustomMetadata) -> str:
    """``Optional<CustomMetadata>.toString``."""
    return "Optional.empty" if custom is None else f"Optional[CustomMetadata{{{len(custom)} bytes}}]"


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _knows_txn_index_empty(release: Release | None) -> bool:
    return release is None or release >= TXN_INDEX_EMPTY_SINCE


# --- the values' constructor checks (Kafka's IllegalArgumentException / NullPointerException texts) ------

_Problem = tuple[str, str, str, str]   # (field, Kafka's message, expected, found)


def _segment_problem(start_offset: int, end_offset: int, leader_epochs: Mapping[int, int]) -> _Problem | None:
    """``RemoteLogSegmentMetadata``'s constructor checks, in its order."""
    if start_offset < 0:
        return ("startOffset", f"Unexpected start offset = {start_offset}. StartOffset for a remote segment "
                "cannot be negative", "startOffset >= 0", str(start_offset))
    if end_offset < start_offset:
        return ("endOffset", f"Unexpected end offset = {end_offset}. EndOffset for a remote segment cannot "
                f"be less than startOffset = {start_offset}", f"endOffset >= startOffset ({start_offset})",
                str(end_offset))
    return _epochs_problem(leader_epochs)


def _epochs_problem(leader_epochs: Mapping[int, int]) -> _Problem | None:
    if not leader_epochs:
        return ("segmentLeaderEpochs", "segmentLeaderEpochs can not be null or empty",
                "at least one leader epoch", "none")
    return None


def _raise_for(problem: _Problem | None, what: str) -> None:
    if problem is not None:
        _field, message, expected, found = problem
        raise InternalTopicFormatError(f"{what}: {message}", expected=expected, found=found)


def _state_of(cls: type[IntEnum], value: Any, what: str) -> None:
    if not isinstance(value, cls):
        raise InternalTopicFormatError(f"{what}: state can not be null", expected=f"a {cls.__name__}",
                                       found=repr(value))


def _sorted_epochs(epochs: Mapping[int, int]) -> dict[int, int]:
    return {int(k): int(epochs[k]) for k in sorted(epochs)}


@dataclass(frozen=True)
class RemoteLogSegmentMetadata:
    """``RemoteLogSegmentMetadata``: one remote segment (``segment_id`` is the segment's Uuid)
    in one state.  ``segment_leader_epochs`` maps each leader epoch of the segment's records to
    its start offset, in epoch order; ``custom_metadata`` is the remote storage manager's opaque
    bytes (None: ``Optional.empty()``); ``txn_index_empty`` is ``isTxnIdxEmpty`` (Kafka 4.0+).

    Built with Kafka's constructor checks: start offset >= 0, end offset >= start offset, at least
    one leader epoch (:class:`~kafka_format.common.errors.InternalTopicFormatError` with Kafka's
    message otherwise)."""

    partition: TopicIdPartition
    segment_id: str
    start_offset: int
    end_offset: int
    broker_id: int
    max_timestamp_ms: int
    event_timestamp_ms: int
    segment_leader_epochs: Mapping[int, int]
    segment_size_in_bytes: int
    custom_metadata: CustomMetadata
    state: RemoteLogSegmentState
    txn_index_empty: bool = False

    def __post_init__(self) -> None:
        _raise_for(_segment_problem(self.start_offset, self.end_offset, self.segment_leader_epochs),
                   "RemoteLogSegmentMetadata")
        _state_of(RemoteLogSegmentState, self.state, "RemoteLogSegmentMetadata")
        object.__setattr__(self, "segment_leader_epochs", _sorted_epochs(self.segment_leader_epochs))

    @property
    def remote_log_segment_id(self) -> RemoteLogSegmentId:
        """``remoteLogSegmentId()``."""
        return RemoteLogSegmentId(self.partition, self.segment_id)

    def create_with_updates(self, update: RemoteLogSegmentMetadataUpdate) -> RemoteLogSegmentMetadata:
        """``createWithUpdates``: this segment with the update's broker, event time, custom metadata
        and state (offsets, epochs, size, max timestamp and ``txn_index_empty`` kept)."""
        if update.remote_log_segment_id != self.remote_log_segment_id:
            raise ValueError("Given rlsmUpdate does not have this instance's remoteLogSegmentId.")
        return RemoteLogSegmentMetadata(
            self.partition, self.segment_id, self.start_offset, self.end_offset, update.broker_id,
            self.max_timestamp_ms, update.event_timestamp_ms, self.segment_leader_epochs,
            self.segment_size_in_bytes, update.custom_metadata, update.state, self.txn_index_empty)

    def kafka_text(self, release: Release | None = None) -> str:
        """``toString()`` of Kafka ``release`` (None: the newest; ``txnIdxEmpty`` from 4.0)."""
        text = (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={self.remote_log_segment_id}, "
                f"startOffset={self.start_offset}, endOffset={self.end_offset}, brokerId={self.broker_id}, "
                f"maxTimestampMs={self.max_timestamp_ms}, eventTimestampMs={self.event_timestamp_ms}, "
                f"segmentLeaderEpochs={java_map_text(self.segment_leader_epochs)}, "
                f"segmentSizeInBytes={self.segment_size_in_bytes}, "
                f"customMetadata={_optional_custom_metadata(self.custom_metadata)}, state={self.state.name}")
        if _knows_txn_index_empty(release):
            text += f", txnIdxEmpty={_bool(self.txn_index_empty)}"
        return text + "}"

    def __str__(self) -> str:
        return self.kafka_text()


@dataclass(frozen=True)
class RemoteLogSegmentMetadataUpdate:
    """``RemoteLogSegmentMetadataUpdate``: a segment's new state (and custom metadata)."""

    partition: TopicIdPartition
    segment_id: str
    custom_metadata: CustomMetadata
    state: RemoteLogSegmentState
    event_timestamp_ms: int
    broker_id: int

    def __post_init__(self) -> None:
        _state_of(RemoteLogSegmentState, self.state, "RemoteLogSegmentMetadataUpdate")

    @property
    def remote_log_segment_id(self) -> RemoteLogSegmentId:
        """``remoteLogSegmentId()``."""
        return RemoteLogSegmentId(self.partition, self.segment_id)

    def kafka_text(self, release: Release | None = None) -> str:
        """``toString()`` (the same in every release)."""
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={self.remote_log_segment_id}, "
                f"customMetadata={_optional_custom_metadata(self.custom_metadata)}, state={self.state.name}, "
                f"eventTimestampMs={self.event_timestamp_ms}, brokerId={self.broker_id}}}")

    def __str__(self) -> str:
        return self.kafka_text()


@dataclass(frozen=True)
class RemotePartitionDeleteMetadata:
    """``RemotePartitionDeleteMetadata``: a partition's remote data being deleted."""

    partition: TopicIdPartition
    state: RemotePartitionDeleteState
    event_timestamp_ms: int
    broker_id: int

    def __post_init__(self) -> None:
        _state_of(RemotePartitionDeleteState, self.state, "RemotePartitionDeleteMetadata")

    def kafka_text(self, release: Release | None = None) -> str:
        """``toString()`` (the same in every release)."""
        return (f"RemotePartitionDeleteMetadata{{topicPartition={self.partition}, state={self.state.name}, "
                f"eventTimestampMs={self.event_timestamp_ms}, brokerId={self.broker_id}}}")

    def __str__(self) -> str:
        return self.kafka_text()


@dataclass(frozen=True)
class RemoteLogSegmentMetadataSnapshot:
    """``RemoteLogSegmentMetadataSnapshot``: a segment's metadata as a snapshot holds it (no
    topic-id-partition: the snapshot is per partition).  Kafka checks only that it has leader
    epochs; its ``toString`` leaves out the broker id and event time."""

    segment_id: str
    start_offset: int
    end_offset: int
    broker_id: int
    max_timestamp_ms: int
    event_timestamp_ms: int
    segment_leader_epochs: Mapping[int, int]
    segment_size_in_bytes: int
    custom_metadata: CustomMetadata
    state: RemoteLogSegmentState
    txn_index_empty: bool = False

    def __post_init__(self) -> None:
        _state_of(RemoteLogSegmentState, self.state, "RemoteLogSegmentMetadataSnapshot")
        _raise_for(_epochs_problem(self.segment_leader_epochs), "RemoteLogSegmentMetadataSnapshot")
        object.__setattr__(self, "segment_leader_epochs", _sorted_epochs(self.segment_leader_epochs))

    @classmethod
    def create(cls, metadata: RemoteLogSegmentMetadata) -> RemoteLogSegmentMetadataSnapshot:
        """``RemoteLogSegmentMetadataSnapshot.create``."""
        return cls(metadata.segment_id, metadata.start_offset, metadata.end_offset, metadata.broker_id,
                   metadata.max_timestamp_ms, metadata.event_timestamp_ms, metadata.segment_leader_epochs,
                   metadata.segment_size_in_bytes, metadata.custom_metadata, metadata.state,
                   metadata.txn_index_empty)

    def kafka_text(self, release: Release | None = None) -> str:
        """``toString()`` of Kafka ``release`` (None: the newest; ``txnIdxEmpty`` from 4.0)."""
        text = (f"RemoteLogSegmentMetadataSnapshot{{segmentId={self.segment_id}, startOffset={self.start_offset}, "
                f"endOffset={self.end_offset}, maxTimestampMs={self.max_timestamp_ms}, "
                f"segmentLeaderEpochs={java_map_text(self.segment_leader_epochs)}, "
                f"segmentSizeInBytes={self.segment_size_in_bytes}, "
                f"customMetadata={_optional_custom_metadata(self.custom_metadata)}, state={self.state.name}")
        if _knows_txn_index_empty(release):
            text += f", txnIdxEmpty={_bool(self.txn_index_empty)}"
        return text + "}"

    def __str__(self) -> str:
        return self.kafka_text()


#: What a ``__remote_log_metadata`` record (or a snapshot's) holds (``RemoteLogMetadata``).
RemoteLogMetadata = (RemoteLogSegmentMetadata | RemoteLogSegmentMetadataUpdate | RemotePartitionDeleteMetadata
                     | RemoteLogSegmentMetadataSnapshot)


# --- reading (RemoteLogMetadataSerde.deserialize and the transforms) ------------------------------------


@functools.cache
def _release_record(api_key: int, release: Release | None) -> tuple[str, MessageSpec] | None:
    """(record name, its compiled schema in ``release``) of an api key; None: not a record type."""
    name = REMOTE_LOG_METADATA_RECORD_TYPES.get(api_key)
    if name is None:
        return None
    if release is None:
        return name, message_spec(name)
    return name, compile_spec(storage_schemas(release)[name])


def _lookup(release: Release | None) -> Lookup:
    return functools.partial(_release_record, release=release)


def decode_remote_log_metadata(value: bytes | bytearray | memoryview, *,
                               release: Release | None = None) -> RemoteLogMetadata:
    """A ``__remote_log_metadata`` record value (or a snapshot's record) as its value class, read as
    ``RemoteLogMetadataSerde.deserialize`` of Kafka ``release`` reads it (None: the newest).

    Raises :class:`~kafka_format.internal.api_message.ApiMessageSerdeError` (an
    ``InternalTopicFormatError``) with the byte position, what was expected there and, as
    ``kafka_message``, the message of the exception Kafka throws: framing and reading failures
    (``Failed to deserialize record with type 0``, ``... Unknown metadata id 7``, garbage after the
    record), the value classes' checks (``Unexpected start offset = -1. ...``, ``segmentLeaderEpochs
    can not be null or empty``), an unknown state id (``state can not be null``; a partition delete's
    ``null``: ``Objects.requireNonNull`` without a message).  Lengths are checked against the bytes
    left before anything is allocated (:mod:`~kafka_format.internal.protocol`).
    """
    rec = read_framed(value, _WHAT, _lookup(release))
    if rec.name == _SEGMENT_RECORD:
        return _segment_from(rec)
    if rec.name == _UPDATE_RECORD:
        return _update_from(rec)
    if rec.name == _DELETE_RECORD:
        return _delete_from(rec)
    return _snapshot_from(rec)


def _fail(rec: FramedRecord, problem: _Problem | tuple[str, str | None, str, str]) -> ApiMessageSerdeError:
    name, message, expected, found = problem
    return ApiMessageSerdeError(message, what=f"{_WHAT} ({rec.name})", position=rec.positions.get(name, 0),
                                expected=expected, found=found)


def _epochs_of(rec: FramedRecord) -> dict[int, int]:
    epochs: dict[int, int] = {}   # a HashMap: a repeated epoch keeps its last offset
    for entry in rec.data["segmentLeaderEpochs"]:
        epochs[int(entry["leaderEpoch"])] = int(entry["offset"])
    return epochs


def _partition_of(entry: Mapping[str, Any]) -> TopicIdPartition:
    return TopicIdPartition(entry["id"], entry["name"], int(entry["partition"]))


def _segment_state(rec: FramedRecord) -> RemoteLogSegmentState:
    raw = int(rec.data["remoteLogSegmentState"])
    if raw not in RemoteLogSegmentState._value2member_map_:   # RemoteLogSegmentState.forId: null
        raise _fail(rec, ("remoteLogSegmentState", "state can not be null",
                          "a RemoteLogSegmentState id (0 to 3)", str(raw)))
    return RemoteLogSegmentState(raw)


def _segment_from(rec: FramedRecord) -> RemoteLogSegmentMetadata:
    """``RemoteLogSegmentMetadataTransform.fromApiMessageAndVersion``."""
    d = rec.data
    epochs = _epochs_of(rec)
    problem = _segment_problem(int(d["startOffset"]), int(d["endOffset"]), epochs)   # the base metadata first
    if problem is not None:
        raise _fail(rec, problem)
    state = _segment_state(rec)                                                     # then the update
    sid = d["remoteLogSegmentId"]
    return RemoteLogSegmentMetadata(
        _partition_of(sid["topicIdPartition"]), sid["id"], int(d["startOffset"]), int(d["endOffset"]),
        int(d["brokerId"]), int(d["maxTimestampMs"]), int(d["eventTimestampMs"]), epochs,
        int(d["segmentSizeInBytes"]), d["customMetadata"], state, bool(d.get("txnIndexEmpty", False)))


def _update_from(rec: FramedRecord) -> RemoteLogSegmentMetadataUpdate:
    """``RemoteLogSegmentMetadataUpdateTransform.fromApiMessageAndVersion``."""
    d = rec.data
    sid = d["remoteLogSegmentId"]
    return RemoteLogSegmentMetadataUpdate(_partition_of(sid["topicIdPartition"]), sid["id"], d["customMetadata"],
                                          _segment_state(rec), int(d["eventTimestampMs"]), int(d["brokerId"]))


def _delete_from(rec: FramedRecord) -> RemotePartitionDeleteMetadata:
    """``RemotePartitionDeleteMetadataTransform.fromApiMessageAndVersion``."""
    d = rec.data
    raw = int(d["remotePartitionDeleteState"])
    if raw not in RemotePartitionDeleteState._value2member_map_:   # Objects.requireNonNull(state): no message
        raise _fail(rec, ("remotePartitionDeleteState", None, "a RemotePartitionDeleteState id (0 to 2)", str(raw)))
    return RemotePartitionDeleteMetadata(_partition_of(d["topicIdPartition"]), RemotePartitionDeleteState(raw),
                                         int(d["eventTimestampMs"]), int(d["brokerId"]))


def _snapshot_from(rec: FramedRecord) -> RemoteLogSegmentMetadataSnapshot:
    """``RemoteLogSegmentMetadataSnapshotTransform.fromApiMessageAndVersion`` (state checked before
    the leader epochs, as that constructor does)."""
    d = rec.data
    state = _segment_state(rec)
    epochs = _epochs_of(rec)
    problem = _epochs_problem(epochs)
    if problem is not None:
        raise _fail(rec, problem)
    return RemoteLogSegmentMetadataSnapshot(
        d["segmentId"], int(d["startOffset"]), int(d["endOffset"]), int(d["brokerId"]), int(d["maxTimestampMs"]),
        int(d["eventTimestampMs"]), epochs, int(d["segmentSizeInBytes"]), d["customMetadata"], state,
        bool(d.get("txnIndexEmpty", False)))


# --- writing (RemoteLogMetadataSerde.serialize) ---------------------------------------------------------


def _partition_entry(p: TopicIdPartition) -> dict[str, Any]:
    return {"name": p.topic, "id": p.topic_id, "partition": p.partition}


def _epoch_entries(epochs: Mapping[int, int]) -> list[dict[str, int]]:
    return [{"leaderEpoch": k, "offset": v} for k, v in sorted(epochs.items())]


def encode_remote_log_metadata(metadata: RemoteLogMetadata) -> bytes:
    """The record value ``RemoteLogMetadataSerde.serialize`` writes for ``metadata`` (each record at
    its highest version, 0; ``TxnIndexEmpty`` written only when true, as a tagged field is)."""
    if isinstance(metadata, RemoteLogSegmentMetadata):
        name = _SEGMENT_RECORD
        data: dict[str, Any] = {
            "remoteLogSegmentId": {"topicIdPartition": _partition_entry(metadata.partition),
                                   "id": metadata.segment_id},
            "startOffset": metadata.start_offset, "endOffset": metadata.end_offset,
            "brokerId": metadata.broker_id, "maxTimestampMs": metadata.max_timestamp_ms,
            "eventTimestampMs": metadata.event_timestamp_ms,
            "segmentLeaderEpochs": _epoch_entries(metadata.segment_leader_epochs),
            "segmentSizeInBytes": metadata.segment_size_in_bytes, "customMetadata": metadata.custom_metadata,
            "remoteLogSegmentState": int(metadata.state), "txnIndexEmpty": metadata.txn_index_empty,
        }
    elif isinstance(metadata, RemoteLogSegmentMetadataUpdate):
        name = _UPDATE_RECORD
        data = {
            "remoteLogSegmentId": {"topicIdPartition": _partition_entry(metadata.partition),
                                   "id": metadata.segment_id},
            "brokerId": metadata.broker_id, "eventTimestampMs": metadata.event_timestamp_ms,
            "customMetadata": metadata.custom_metadata, "remoteLogSegmentState": int(metadata.state),
        }
    elif isinstance(metadata, RemotePartitionDeleteMetadata):
        name = _DELETE_RECORD
        data = {"topicIdPartition": _partition_entry(metadata.partition), "brokerId": metadata.broker_id,
                "eventTimestampMs": metadata.event_timestamp_ms,
                "remotePartitionDeleteState": int(metadata.state)}
    elif isinstance(metadata, RemoteLogSegmentMetadataSnapshot):
        name = _SNAPSHOT_RECORD
        data = {
            "segmentId": metadata.segment_id, "startOffset": metadata.start_offset,
            "endOffset": metadata.end_offset, "brokerId": metadata.broker_id,
            "maxTimestampMs": metadata.max_timestamp_ms, "eventTimestampMs": metadata.event_timestamp_ms,
            "segmentLeaderEpochs": _epoch_entries(metadata.segment_leader_epochs),
            "segmentSizeInBytes": metadata.segment_size_in_bytes, "customMetadata": metadata.custom_metadata,
            "remoteLogSegmentState": int(metadata.state), "txnIndexEmpty": metadata.txn_index_empty,
        }
    else:
        raise TypeError(f"RemoteLogMetadataTransform for given RemoteStorageMetadata class: "
                        f"{type(metadata).__name__} does not exist.")
    return write_framed(name, data, 0, _api_key_of(name))


def _api_key_of(name: str) -> int:
    return next(k for k, n in REMOTE_LOG_METADATA_RECORD_TYPES.items() if n == name)


# --- DumpLogSegments' RemoteMetadataLogMessageParser -----------------------------------------------------

#: The ``Record`` interface the dump tool calls ``value()`` on: moved to ``...record.internal`` in
#: the Java tool's releases (4.3+).
_RECORD_CLASS = {True: "org.apache.kafka.common.record.internal.Record",
                 False: "org.apache.kafka.common.record.Record"}


def format_remote_log_metadata(value: bytes | bytearray | memoryview | None, offset: int,
                               release: Release | None = None, *, java_tool: bool = True) -> str:
    """The payload text of ``kafka-dump-log --remote-log-metadata-decoder`` for one record.

    ``RemoteLogMetadataSerde.deserialize(value).toString()`` of Kafka ``release`` (None: the newest),
    or ``Error at offset <offset>, skipping. <message>`` with the ``getMessage()`` of what Kafka
    throws (``null`` when it has none).  A record without a value: the JVM's own
    ``NullPointerException`` text for ``record.value().remaining()`` (JDK 14+ helpful messages), whose
    ``Record`` class is the tool's (``java_tool``: 4.3+).
    """
    if value is None:
        return (f'Error at offset {offset}, skipping. Cannot invoke "java.nio.ByteBuffer.remaining()" '
                f'because the return value of "{_RECORD_CLASS[java_tool]}.value()" is null')
    try:
        metadata = decode_remote_log_metadata(value, release=release)
    except ApiMessageSerdeError as e:
        return f"Error at offset {offset}, skipping. {'null' if e.kafka_message is None else e.kafka_message}"
    return metadata.kafka_text(release)


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def as_json_object(metadata: RemoteLogMetadata) -> dict[str, Any]:
    """``metadata`` as a JSON object (``klogs dump --json``): ``type`` (the value class), the fields by
    their record names (the topic-id-partition as ``topicId``/``topic``/``partition``), states by name,
    custom metadata as base64, leader epochs as ``[{"leaderEpoch", "offset"}]`` in epoch order."""
    out: dict[str, Any] = {"type": type(metadata).__name__}
    if not isinstance(metadata, RemoteLogSegmentMetadataSnapshot):
        p = metadata.partition
        out.update(topicId=p.topic_id, topic=p.topic, partition=p.partition)
    if isinstance(metadata, RemotePartitionDeleteMetadata):
        return {**out, "state": metadata.state.name, "eventTimestampMs": metadata.event_timestamp_ms,
                "brokerId": metadata.broker_id}
    out["segmentId"] = metadata.segment_id
    if isinstance(metadata, RemoteLogSegmentMetadataUpdate):
        return {**out, "customMetadata": _b64(metadata.custom_metadata), "state": metadata.state.name,
                "eventTimestampMs": metadata.event_timestamp_ms, "brokerId": metadata.broker_id}
    return {**out, "startOffset": metadata.start_offset, "endOffset": metadata.end_offset,
            "brokerId": metadata.broker_id, "maxTimestampMs": metadata.max_timestamp_ms,
            "eventTimestampMs": metadata.event_timestamp_ms,
            "segmentLeaderEpochs": _epoch_entries(metadata.segment_leader_epochs),
            "segmentSizeInBytes": metadata.segment_size_in_bytes, "customMetadata": _b64(metadata.custom_metadata),
            "state": metadata.state.name, "txnIndexEmpty": metadata.txn_index_empty}
