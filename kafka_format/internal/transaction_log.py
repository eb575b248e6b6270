"""``__transaction_state`` records.

Framing (``core/src/main/scala/kafka/coordinator/transaction/TransactionLog.scala``)::

    key    int16 version (0) + TransactionLogKey   {transactionalId string}
    value  int16 version (0, 1 = flexible) + TransactionLogValue   (null = tombstone)

Key/value versions outside the schema's range are not errors for the key
(Kafka's ``UnknownKey``); the JSON shape follows
``tools/.../consumer/TransactionLogMessageFormatter.java``:
``{"version": v, "data": {...}}`` with ``"data": "unknown"`` for unsupported
versions.  :func:`format_transaction_log_record` renders the text of
``kafka-dump-log --transaction-log-decoder`` (``TransactionLog.formatRecordKeyAndValue``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafka_format.common.errors import InternalTopicFormatError
from kafka_format.internal.protocol import (
    DELETE_TEXT,
    INT16,
    java_string_hash,
    message_spec,
    partition_for,
    read_message,
    to_json,
    write_version_prefixed,
)

__all__ = [
    "TRANSACTION_STATES",
    "TRANSACTION_STATE_PARTITIONS",
    "decode_transaction_log_key",
    "decode_transaction_log_value",
    "encode_transaction_log_key",
    "encode_transaction_log_value",
    "format_transaction_log_json",
    "format_transaction_log_record",
    "transactional_id_partition",
]

#: ``TransactionState.fromId`` (``TransactionMetadata.scala``)
TRANSACTION_STATES: dict[int, str] = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}
EMPTY_STATE = 0
TRANSACTION_STATE_PARTITIONS = 50  # transaction.state.log.num.partitions default
UNKNOWN = "unknown"

# Scala 2.13 mutable.HashSet layout, to print partitions in the broker's iteration order.
_HASHSET_INITIAL_CAPACITY = 16
_HASHSET_LOAD_FACTOR = 0.75
_SMALL_SET_MAX = 4  # immutable Set1..Set4 are added element by element (Growable.addAll)


def transactional_id_partition(transactional_id: str, partitions: int = TRANSACTION_STATE_PARTITIONS) -> int:
    """``TransactionStateManager.partitionFor``: ``abs(hash(id)) % partitions``."""
    return partition_for(transactional_id, partitions)


def _version(data: bytes | bytearray | memoryview, what: str) -> int:
    if len(data) < INT16.size:
        raise InternalTopicFormatError(f"could not read version from {what}'s buffer", position=0,
                                       expected=f"{INT16.size} bytes", found=f"{len(data)} bytes")
    return int(INT16.unpack_from(data, 0)[0])


def _decode(name: str, data: bytes | bytearray | memoryview, what: str) -> dict[str, Any]:
    version = _version(data, what)
    valid = message_spec(name).valid
    if valid is None or not valid[0] <= version <= valid[1]:
        return {"version": version, "data": UNKNOWN}
    msg, _ = read_message(name, data, version, offset=INT16.size)
    return {"version": version, "data": msg}


def decode_transaction_log_key(key: bytes | bytearray | memoryview) -> dict[str, Any]:
    """Key → ``{"version": v, "data": {"transactionalId": ...}}`` (``"data": "unknown"`` if unsupported)."""
    return _decode("TransactionLogKey", key, "key")


def decode_transaction_log_value(value: bytes | bytearray | memoryview | None) -> dict[str, Any] | None:
    """Value → ``{"version": v, "data": {...}}``; ``None`` for a tombstone."""
    if value is None:
        return None
    return _decode("TransactionLogValue", value, "value")


def _java_int(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _topic_partition_hash(topic: str, partition: int) -> int:
    """``TopicPartition.hashCode``: ``31 * (31 + partition) + topic.hashCode()``."""
    return _java_int(31 * (31 + partition) + java_string_hash(topic))


def _table_size_for(capacity: int) -> int:
    """``HashSet.tableSizeFor``: ``highestOneBit(max(capacity - 1, 4)) * 2``, at most 2^30."""
    return min((1 << (max(capacity - 1, 4).bit_length() - 1)) * 2, 1 << 30)


def _hashset_order(groups: Iterable[tuple[str, list[int]]]) -> list[tuple[str, int]]:
    """Iteration order of a Scala 2.13 ``mutable.HashSet[TopicPartition]`` filled group by group.

    ``TransactionMetadata.addPartitions`` does ``topicPartitions ++= <immutable Set>`` per
    topic: ``sizeHint(n)`` first; sets of up to 4 elements are then added one by one
    (growing the table x2 when ``size + 1 >= 0.75 * length``), larger ones
    (``immutable.HashSet``) without growth checks.  Iteration goes bucket by bucket
    (``improvedHash & (length - 1)``), each bucket in ascending (signed) hash order.
    """
    length = _HASHSET_INITIAL_CAPACITY
    items: dict[tuple[str, int], int] = {}
    for topic, partitions in groups:
        distinct = list(dict.fromkeys(partitions))
        length = max(length, _table_size_for(int((len(distinct) + 1) / _HASHSET_LOAD_FACTOR)))
        for p in distinct:
            if len(distinct) <= _SMALL_SET_MAX and len(items) + 1 >= int(length * _HASHSET_LOAD_FACTOR):
                length *= 2
            h = _topic_partition_hash(topic, p)
            items.setdefault((topic, p), _java_int(h ^ ((h & 0xFFFFFFFF) >> 16)))
    return sorted(items, key=lambda tp: (items[tp] & (length - 1), items[tp]))


def format_transaction_log_record(key: bytes | bytearray | memoryview,
                                  value: bytes | bytearray | memoryview | None) -> tuple[str, str | None]:
    """The ``(key, payload)`` texts of ``kafka-dump-log --transaction-log-decoder``.

    ``transaction_metadata::transactionalId=<id>`` and
    ``producerId:P,producerEpoch:E,state=S,partitions=[t-p,...],txnLastUpdateTimestamp=T,txnTimeoutMs=M``;
    ``<DELETE>`` for a tombstone; ``unknown::version=N`` (no payload) for an unknown key version.
    Kafka fails on an unknown value version or state id: so does this
    (:class:`InternalTopicFormatError`).
    """
    k = decode_transaction_log_key(key)
    if k["data"] == UNKNOWN:
        return f"unknown::version={k['version']}", None
    key_text = f"transaction_metadata::transactionalId={k['data']['transactionalId']}"
    v = decode_transaction_log_value(value)
    if v is None:
        return key_text, DELETE_TEXT
    if v["data"] == UNKNOWN:
        raise InternalTopicFormatError(
            f"Unknown version {v['version']} from the transaction log message value", position=0,
            expected="value version 0..1", found=str(v["version"]))
    d = v["data"]
    status = d["transactionStatus"]
    state = TRANSACTION_STATES.get(status)
    if state is None:
        raise InternalTopicFormatError(
            f"Unknown transaction state id {status} from the transaction status message",
            expected="a state id in 0..7", found=str(status))
    partitions: list[tuple[str, int]] = []
    if status != EMPTY_STATE:
        tps = d.get("transactionPartitions")
        if tps is None:
            raise InternalTopicFormatError("transactionPartitions is null for a non-Empty transaction",
                                           expected="a partition list", found="null")
        partitions = _hashset_order((t["topic"], list(t["partitionIds"])) for t in tps)
    parts = ",".join(f"{t}-{p}" for t, p in partitions)
    value_text = (f"producerId:{d['producerId']},producerEpoch:{d['producerEpoch']},state={state},"
                  f"partitions=[{parts}],txnLastUpdateTimestamp={d['transactionLastUpdateTimestampMs']},"
                  f"txnTimeoutMs={d['transactionTimeoutMs']}")
    return key_text, value_text


def format_transaction_log_json(key: bytes | bytearray | memoryview | None,
                                value: bytes | bytearray | memoryview | None, offset: int, *,
                                state_names: bool = True) -> tuple[str, str | None]:
    """The ``(key, payload)`` texts of ``kafka-dump-log --transaction-log-decoder`` in Kafka 4.1+.

    ``CoordinatorRecordMessageParser`` over ``TransactionCoordinatorRecordSerde``
    (``tools/.../DumpLogSegments.java``): key ``{"type":"0","data":{...}}``, value
    ``{"version":"<v>","data":{...}}`` or ``<DELETE>``; Kafka 4.4 prints ``transactionStatus`` as
    the state's name (``TransactionState.stateName``), earlier releases as its id
    (``state_names=False``).  An unknown record type or any decoding failure becomes the key text
    (``Unknown record type T at offset O, skipping.`` / ``Error at offset O, skipping. <reason>``);
    a record without a key raises, as Kafka's parser does.
    """
    if key is None:
        raise InternalTopicFormatError(
            f"Failed to decode message at offset {offset} using the specified decoder "
            "(message had a missing key)", expected="a key", found="null key")
    try:
        record_type = _version(key, "key")
        if record_type != 0:
            return f"Unknown record type {record_type} at offset {offset}, skipping.", None
        k, _ = read_message("TransactionLogKey", key, 0, offset=INT16.size)
        key_text = to_json({"type": str(record_type), "data": k})
        if value is None:
            return key_text, DELETE_TEXT
        version = _version(value, "value")
        valid = message_spec("TransactionLogValue").valid
        if valid is None or not valid[0] <= version <= valid[1]:
            raise InternalTopicFormatError(f"Unknown version {version} of the value", position=0,
                                           expected="value version 0..1", found=str(version))
        try:
            data, _ = read_message("TransactionLogValue", value, version, offset=INT16.size)
        except InternalTopicFormatError as e:
            raise InternalTopicFormatError(
                f"Could not read record with version {version} from value's buffer due to: {e.reason}.",
                position=e.position, expected=e.expected, found=e.found) from e
        if state_names:
            status = data["transactionStatus"]
            if status not in TRANSACTION_STATES:
                raise InternalTopicFormatError(f"Unknown transaction state id {status}",
                                               expected="a state id in 0..7", found=str(status))
            data["transactionStatus"] = TRANSACTION_STATES[status]   # same place in the object
        return key_text, to_json({"version": str(version), "data": data})
    except InternalTopicFormatError as e:
        return f"Error at offset {offset}, skipping. {e.reason}", None


def encode_transaction_log_key(transactional_id: str, *, version: int = 0) -> bytes:
    """``TransactionLogKey`` bytes."""
    return write_version_prefixed("TransactionLogKey", {"transactionalId": transactional_id}, version)


def encode_transaction_log_value(*, producer_id: int, producer_epoch: int, timeout_ms: int, status: int,
                                 partitions: dict[str, list[int]] | None, last_update_ms: int,
                                 start_ms: int, version: int = 0, previous_producer_id: int = -1,
                                 next_producer_id: int = -1, client_transaction_version: int = 0) -> bytes:
    """``TransactionLogValue`` v0 / v1 bytes (``TransactionLog.valueToBytes``: Empty ⇒ null partitions)."""
    tps = None if partitions is None else [
        {"topic": t, "partitionIds": list(ps)} for t, ps in partitions.items()]
    data = {
        "producerId": producer_id, "previousProducerId": previous_producer_id,
        "nextProducerId": next_producer_id, "producerEpoch": producer_epoch,
        "transactionTimeoutMs": timeout_ms, "transactionStatus": status,
        "transactionPartitions": tps, "transactionLastUpdateTimestampMs": last_update_ms,
        "transactionStartTimestampMs": start_ms, "clientTransactionVersion": client_transaction_version,
    }
    return write_version_prefixed("TransactionLogValue", data, version)
