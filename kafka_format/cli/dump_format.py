"""What kafka-dump-log prints, declared once for ``klogs dump``: DumpLogSegments' constants and
Java class names, the run's options, the text line formats and the ``--json`` objects."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka_format.common.limits import INT32_MAX
from kafka_format.common.redaction import redact
from kafka_format.records import batch_v2
from kafka_format.records.record_batch import CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP_TYPE

# --- constants of DumpLogSegments / Kafka ------------------------------------------------------

RECORD_INDENT = "|"                       # DumpLogSegments.RecordIndent
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024  # --max-message-size default
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"  # BootstrapDirectory.BINARY_BOOTSTRAP_FILENAME
# Index checks read a few batches at an index position, not megabytes: small chunks (the library
# still reads a larger batch whole).
LOOKUP_READ_SIZE = 64 * 1024
JAVA_LONG = re.compile(r"^[+-]?[0-9]+$")    # what Long.parseLong accepts (ASCII digits only)
# The suffixes DumpLogSegments dumps (the rest: "Ignoring unknown file"): .log and KRaft .checkpoint
# as logs, the offset and time indexes, producer snapshots, transaction indexes.
DUMPED_SUFFIXES = (".log", ".checkpoint", ".index", ".timeindex", ".snapshot", ".txnindex")
SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")  # Snapshots.parse: offset-epoch

TIMESTAMP_TYPE_NAMES = {CREATE_TIME: "CreateTime", LOG_APPEND_TIME: "LogAppendTime",   # TimestampType.name
                        NO_TIMESTAMP_TYPE: "NoTimestampType"}
KRAFT_CONTROL_LABELS = {2: "LeaderChange", 3: "SnapshotHeader", 4: "SnapshotFooter", 5: "KRaftVersion", 6: "KRaftVoters"}

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2

# Java exception class names Kafka's tool would print for each kind of failure.
JAVA_CORRUPT_RECORD = "org.apache.kafka.common.errors.CorruptRecordException"
JAVA_INVALID_RECORD = "org.apache.kafka.common.InvalidRecordException"
JAVA_CORRUPT_INDEX = "org.apache.kafka.storage.internals.log.CorruptIndexException"  # 3.9.1 and 4.4.0
JAVA_KAFKA = "org.apache.kafka.common.KafkaException"
JAVA_NO_SUCH_FILE = "java.nio.file.NoSuchFileException"
JAVA_NO_SUCH_ELEMENT = "java.util.NoSuchElementException"
JAVA_STRING_INDEX = "java.lang.StringIndexOutOfBoundsException"   # the Scala tool on a name without a '.'

DEFAULT_KAFKA_VERSION = "4.4"
LEADER_CHANGE_JSON_SINCE = (4, 1)   # KAFKA-19069: " LeaderChange: {json}" instead of "controlType: ..."
TRANSACTION_LOG_JSON_SINCE = (4, 1)  # --transaction-log-decoder prints coordinator-record JSON
SHARE_GROUP_STATE_DECODER = "share-group-state"
SHARE_GROUP_STATE_SINCE = (4, 4)     # the release whose __share_group_state layouts and text we print
TRANSACTION_STATE_NAMES_SINCE = (4, 4)  # ... with transactionStatus as the state's name
JAVA_TOOL_SINCE = (4, 3)   # KAFKA-14579: DumpLogSegments in Java (org.apache.kafka.tools) from 4.3.0
KAFKA_VERSION = re.compile(r"^(\d+)\.(\d+)(\.\d+)?$")


def _optional_long(value: int | None) -> str:
    """Java ``OptionalLong.toString``."""
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def _bool(value: Any) -> str:
    """Java boolean ``toString``."""
    return "true" if value else "false"


def _java_string(data: bytes | None) -> str:
    """``StringDecoder``: ``new String(bytes, UTF_8)``, malformed input replaced as Java sizes it
    (``batch_v2.java_utf8``: an encoded surrogate is one U+FFFD, not Python's three)."""
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return str(batch_v2.java_utf8(data).decode("utf-8"))


def _version_tuple(version: str) -> tuple[int, int]:
    match = KAFKA_VERSION.match(version)
    if match is None:
        raise ValueError(f"not a Kafka version: {version!r}")
    return int(match.group(1)), int(match.group(2))


def _java_tool(version: str) -> bool:
    return _version_tuple(version) >= JAVA_TOOL_SINCE


# --- options -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DumpOptions:
    """What to dump and how (the flags of ``kafka-dump-log``)."""

    files: tuple[str, ...]
    deep_iteration: bool = False
    print_data_log: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    decoder: str | None = None   # "offsets" | "transaction-log" | "cluster-metadata" | "remote-log-metadata"
    #                              | SHARE_GROUP_STATE_DECODER
    skip_record_metadata: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_bytes: int = INT32_MAX
    json: bool = False
    kafka_version: str = DEFAULT_KAFKA_VERSION   # whose DumpLogSegments text to print

    @property
    def java_tool(self) -> bool:
        """Whether ``kafka_version`` has the Java ``DumpLogSegments`` (4.3+) rather than the Scala one."""
        return _java_tool(self.kafka_version)

    @property
    def release(self) -> tuple[int, int]:
        """``kafka_version`` as (major, minor): whose schemas the decoders read with."""
        return _version_tuple(self.kafka_version)

    def since(self, major: int, minor: int) -> bool:
        """Whether ``kafka_version`` is ``major.minor`` or later."""
        return _version_tuple(self.kafka_version) >= (major, minor)

    @property
    def should_print_data(self) -> bool:
        """``shouldPrintDataLog``: --print-data-log or any decoder option."""
        return self.print_data_log or self.decoder is not None

    @property
    def is_deep(self) -> bool:
        """``isDeepIteration``: --deep-iteration, implied by printing data."""
        return self.deep_iteration or self.should_print_data


# --- text line formats (DumpLogSegments.printBatchLevel and dumpLog) ---------------------------

def format_batch_line(batch: Mapping[str, Any], position: int) -> str:
    """The batch line of ``printBatchLevel`` for one ``BATCH_SCHEMA`` row at byte ``position``."""
    magic = batch["magic"]
    if magic >= 2:
        head = (
            f"baseOffset: {batch['baseOffset']} lastOffset: {batch['lastOffset']} count: {batch['count']}"
            f" baseSequence: {batch['baseSequence']} lastSequence: {batch['lastSequence']}"
            f" producerId: {batch['producerId']} producerEpoch: {batch['producerEpoch']}"
            f" partitionLeaderEpoch: {batch['partitionLeaderEpoch']}"
            f" isTransactional: {_bool(batch['isTransactional'])} isControl: {_bool(batch['isControl'])}"
            f" deleteHorizonMs: {_optional_long(batch['deleteHorizonMs'])}"
        )
    else:
        head = f"offset: {batch['lastOffset']}"
    return (
        f"{head} position: {position} {TIMESTAMP_TYPE_NAMES[batch['timestampType']]}: {batch['maxTimestamp']}"
        f" size: {batch['size']} magic: {magic} compresscodec: {batch['compression']}"
        f" crc: {batch['crc']} isvalid: {_bool(batch['crcValid'])}"
    )


def format_record_metadata(batch: Mapping[str, Any], record: Mapping[str, Any],
                           legacy_crc: tuple[bool, int] | None = None, *, java_tool: bool = True) -> str:
    """``| offset: O <type>: T keySize: K valueSize: V`` (+ v2 sequence/headerKeys, + legacy isValid/crc).

    ``java_tool=False``: the Scala tool's text (before Kafka 4.3), whose legacy lines end ``crc: N}``.
    """
    key, value = record["key"], record["value"]
    text = (
        f"{RECORD_INDENT} offset: {record['offset']} {TIMESTAMP_TYPE_NAMES[batch['timestampType']]}:"
        f" {record['timestamp_ms']} keySize: {-1 if key is None else len(key)}"
        f" valueSize: {-1 if value is None else len(value)}"
    )
    if batch["magic"] >= 2:
        keys = ",".join(h["key"] for h in (record["headers"] or ()))
        text += f" sequence: {record['sequence']} headerKeys: [{keys}]"
    elif legacy_crc is not None:
        valid, crc = legacy_crc
        text += f" isValid: {_bool(valid)} crc: {crc}"
        if not java_tool:
            text += "}"   # DumpLogSegments.scala: s" isValid: ${r.isValid} crc: ${r.checksum}}"
    return text


# --- JSON objects --------------------------------------------------------------------------------

def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _batch_json(path: str, batch: Mapping[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    base = batch["baseOffset"]
    if base is None and records:  # legacy compressed wrapper: first inner offset
        base = records[0]["offset"]
    return {
        "type": "batch", "file": redact(path), "position": batch["position"], "baseOffset": base,
        "lastOffset": batch["lastOffset"], "count": batch["count"], "magic": batch["magic"],
        "compression": batch["compression"], "crc": batch["crc"], "isValid": bool(batch["crcValid"]),
        "producerId": batch["producerId"], "producerEpoch": batch["producerEpoch"],
        "baseSequence": batch["baseSequence"], "partitionLeaderEpoch": batch["partitionLeaderEpoch"],
        "isTransactional": bool(batch["isTransactional"]), "isControl": bool(batch["isControl"]),
        "timestampType": batch["timestampType"], "maxTimestamp": batch["maxTimestamp"], "size": batch["size"],
    }


def _record_json(record: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "record", "offset": record["offset"], "timestamp": record["timestamp_ms"],
        "timestampType": record["timestampType"], "key": _b64(record["key"]), "value": _b64(record["value"]),
        "headers": [{"key": h["key"], "value": _b64(h["value"])} for h in (record["headers"] or ())],
        "sequence": record["sequence"], "isControl": bool(record["isControl"]),
    }
