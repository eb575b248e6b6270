"""Text state files of a log dir: offset checkpoints, leader epochs, partition.metadata,
meta.properties, ``.kafka_cleanshutdown`` and ``quorum-state``.

Checkpoint text format (server-common/.../common/CheckpointFile.java, storage/.../checkpoint/
OffsetCheckpointFile.java, LeaderEpochCheckpointFile.java)::

    line 1   version        Integer.parseInt, must equal 0 ("Unrecognised version")
    line 2   N              Integer.parseInt (missing line = no entries)
    N lines  entry          split on \\s+, exactly 3 fields (offsets) or 2 fields (leader epochs)

An empty file has no entries.  Lines end at \\n, \\r or \\r\\n (``BufferedReader.readLine``).
A malformed line or a count different from the number of entry lines is an error.

``partition.metadata`` (PartitionMetadataFile.java, PartitionMetadataReadBuffer.java)::

    version: 0
    topic_id: <base64url Uuid, 16 bytes>     (lines split on ":\\s+"; zero Uuid invalid)

``meta.properties`` (metadata/.../properties/MetaProperties.java): a java.util.Properties file
read as ISO-8859-1.  ``version=0`` (ZooKeeper era): optional ``broker.id``, ``cluster.id``;
``version=1`` (KRaft): ``node.id`` and ``cluster.id`` required, optional ``directory.id`` (Uuid).

Every error is a :class:`CheckpointFormatError` with the byte position of the offending line.
"""

from __future__ import annotations

import base64
import json
import os
import re
import struct
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kafka_format.common.errors import CheckpointFormatError, KafkaFormatError
from kafka_format.common.kafka_uuid import ZERO_UUID, uuid_to_string  # re-exported (__all__)
from kafka_format.common.limits import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from kafka_format.storage import fsio

__all__ = [
    "CLEANER_OFFSET_CHECKPOINT",
    "CLEAN_SHUTDOWN",
    "LEADER_EPOCH_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT",
    "META_PROPERTIES",
    "OFFSET_CHECKPOINT_FILES",
    "PARTITION_METADATA",
    "QUORUM_STATE",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "ZERO_UUID",
    "CleanShutdown",
    "EpochEntry",
    "LeaderEpochCheckpoint",
    "MetaProperties",
    "OffsetCheckpoint",
    "PartitionMetadata",
    "QuorumState",
    "format_clean_shutdown",
    "format_leader_epoch_checkpoint",
    "format_meta_properties",
    "format_offset_checkpoint",
    "format_partition_metadata",
    "parse_clean_shutdown",
    "parse_java_properties",
    "parse_leader_epoch_checkpoint",
    "parse_meta_properties",
    "parse_offset_checkpoint",
    "parse_partition_metadata",
    "parse_quorum_state",
    "read_clean_shutdown",
    "read_leader_epoch_checkpoint",
    "read_meta_properties",
    "read_offset_checkpoint",
    "read_partition_metadata",
    "read_quorum_state",
    "read_state_bytes",
    "uuid_from_string",
    "uuid_to_string",
    "write_leader_epoch_checkpoint",
    "write_meta_properties",
    "write_offset_checkpoint",
    "write_partition_metadata",
]

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"  # LogManager.RecoveryPointCheckpointFile
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"  # LogManager.LogStartOffsetCheckpointFile
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"  # ReplicaManager.HighWatermarkFilename
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"  # LogCleanerManager.offsetCheckpointFile
OFFSET_CHECKPOINT_FILES = (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT,
                           REPLICATION_OFFSET_CHECKPOINT, CLEANER_OFFSET_CHECKPOINT)
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"  # CleanShutdownFileHandler.CLEAN_SHUTDOWN_FILE_NAME
QUORUM_STATE = "quorum-state"

OFFSET_CHECKPOINT_VERSION = 0  # OffsetCheckpointFile.CURRENT_VERSION
LEADER_EPOCH_CHECKPOINT_VERSION = 0
PARTITION_METADATA_VERSION = 0
CLEAN_SHUTDOWN_VERSION = 0
MAX_STATE_FILE_BYTES = 256 * 1024 * 1024

UUID_BYTES = struct.Struct(">qq")  # Uuid(mostSignificantBits, leastSignificantBits)

_LINE_END = re.compile(rb"\r\n|\r|\n")
_JAVA_WS = re.compile(r"[ \t\n\x0b\f\r]+")  # java.util.regex \s
_COLON_WS = re.compile(r":[ \t\n\x0b\f\r]+")  # PartitionMetadataReadBuffer ":\s+"
_JAVA_INT = re.compile(r"[+-]?[0-9]+\Z")
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*={0,2}\Z")


# -- small Java-compatible helpers ---------------------------------------------------------------

def _lines(data: bytes) -> list[tuple[int, bytes]]:
    """(byte position, content) of each line as ``BufferedReader.readLine`` returns them."""
    out: list[tuple[int, bytes]] = []
    pos = 0
    for m in _LINE_END.finditer(data):
        out.append((pos, data[pos:m.start()]))
        pos = m.end()
    if pos < len(data):
        out.append((pos, data[pos:]))
    return out


def _java_split(line: str, pattern: re.Pattern[str]) -> list[str]:
    """``String.split(regex)``: leading empty field kept, trailing empty fields dropped."""
    if line == "" or not pattern.search(line):
        return [line]
    parts = pattern.split(line)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _parse_java_int(text: str, lo: int, hi: int) -> int | None:
    """``Integer.parseInt`` / ``Long.parseLong`` on ASCII digits; None when it would throw."""
    if not _JAVA_INT.match(text):
        return None
    value = int(text)
    return value if lo <= value <= hi else None


def _decode_utf8(line: bytes, path: str | None, position: int) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CheckpointFormatError("line is not valid UTF-8", path=path, position=position + exc.start,
                                    expected="UTF-8 text",
                                    found=repr(line[exc.start:exc.start + 4])) from None


def _malformed(path: str | None, position: int, line: str, lineno: int,
               expected: str) -> CheckpointFormatError:
    return CheckpointFormatError(f"Malformed line in checkpoint file (line {lineno}): {line!r}",
                                 path=path, position=position, expected=expected, found=repr(line))


def uuid_from_string(text: str) -> bytes:
    """``Uuid.fromString``: base64url (padding optional) of exactly 16 bytes; ValueError otherwise."""
    if len(text) > 24:
        raise ValueError(f"Input string with prefix `{text[:24]}` is too long to be decoded as a base64 UUID")
    if not _BASE64URL.match(text) or len(text.rstrip("=")) % 4 == 1:
        raise ValueError(f"Input string `{text}` is not valid base64url")
    bare = text.rstrip("=")
    try:
        raw = base64.urlsafe_b64decode(bare + "=" * (-len(bare) % 4))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"Input string `{text}` is not valid base64url: {exc}") from None
    if len(raw) != 16:
        raise ValueError(f"Input string `{text}` decoded as {len(raw)} bytes, which is not equal to the "
                         "expected 16 bytes of a base64-encoded UUID")
    return raw


def read_state_bytes(source: str | os.PathLike[str], *, filesystem: Any = None) -> tuple[bytes, str]:
    """The bytes of a state file (at most ``MAX_STATE_FILE_BYTES``) and its location, for a parser
    of this module; errors as the ``read_*`` functions raise them."""
    return _read(source, filesystem)


def _read(source: str | os.PathLike[str], filesystem: Any) -> tuple[bytes, str]:
    handle, fs_path = fsio.resolve(source, filesystem)
    location = handle.location(fs_path)
    try:
        return handle.read_bytes(fs_path, max_bytes=MAX_STATE_FILE_BYTES), location
    except KafkaFormatError as err:
        raise CheckpointFormatError(err.reason, path=location, expected=err.expected, found=err.found,
                                    code=err.code) from err


def _write(target: str | os.PathLike[str], data: bytes, filesystem: Any) -> None:
    handle, fs_path = fsio.resolve(target, filesystem)
    try:
        with handle.filesystem.open_output_stream(fs_path) as out:
            out.write(data)
    except OSError as exc:
        raise CheckpointFormatError(f"cannot write: {exc}", path=handle.location(fs_path),
                                    code=fsio.IO_ERROR) from exc


# -- the generic checkpoint reader ----------------------------------------------------------------

def _read_checkpoint(data: bytes, path: str | None, version: int, fields: int, kind: str
                     ) -> tuple[int, list[tuple[int, int, list[str]]]]:
    """(version, [(line position, line number, fields)]) per ``CheckpointReadBuffer.read``."""
    lines = _lines(data)
    if not lines:
        return version, []
    pos, raw = lines[0]
    text = _decode_utf8(raw, path, pos)
    read_version = _parse_java_int(text, INT32_MIN, INT32_MAX)
    if read_version is None:
        raise _malformed(path, pos, text, 1, "an integer version")
    if read_version != version:
        raise CheckpointFormatError(f"Unrecognised version:{read_version}, expected version: {version}",
                                    path=path, position=pos, expected=f"version {version}",
                                    found=f"version {read_version}")
    if len(lines) < 2:
        return version, []
    pos, raw = lines[1]
    text = _decode_utf8(raw, path, pos)
    expected = _parse_java_int(text, INT32_MIN, INT32_MAX)
    if expected is None:
        raise _malformed(path, pos, text, 2, "an integer entry count")
    if expected < 0:
        raise CheckpointFormatError("negative entry count", path=path, position=pos,
                                    expected="entry count >= 0", found=str(expected))
    entries: list[tuple[int, int, list[str]]] = []
    for n, (pos, raw) in enumerate(lines[2:], start=3):
        text = _decode_utf8(raw, path, pos)
        parts = _java_split(text, _JAVA_WS)
        if len(parts) != fields:
            raise _malformed(path, pos, text, n, f"{fields} whitespace-separated fields ({kind})")
        entries.append((pos, n, parts))
    if len(entries) != expected:
        end = len(data)
        raise CheckpointFormatError(
            f"Expected [{expected}] entries in checkpoint file, but found only [{len(entries)}]",
            path=path, position=end if len(entries) < expected else entries[expected][0],
            expected=f"{expected} entries", found=f"{len(entries)} entries")
    return version, entries


@dataclass(frozen=True)
class OffsetCheckpoint:
    """One of the four per-log-dir offset checkpoints: ``entries`` in file order."""

    entries: tuple[tuple[str, int, int], ...] = ()
    path: str | None = None
    version: int = OFFSET_CHECKPOINT_VERSION

    @property
    def offsets(self) -> dict[tuple[str, int], int]:
        """(topic, partition) -> offset (a repeated partition: the last line wins, as in Kafka's map)."""
        return {(t, p): o for t, p, o in self.entries}

    def __len__(self) -> int:
        return len(self.entries)


def parse_offset_checkpoint(data: bytes, *, path: str | None = None) -> OffsetCheckpoint:
    """Parse an offset checkpoint (``topic partition offset`` lines)."""
    version, rows = _read_checkpoint(bytes(data), path, OFFSET_CHECKPOINT_VERSION, 3,
                                     "topic partition offset")
    out: list[tuple[str, int, int]] = []
    for pos, n, (topic, part, off) in rows:
        partition = _parse_java_int(part, INT32_MIN, INT32_MAX)
        offset = _parse_java_int(off, INT64_MIN, INT64_MAX)
        if partition is None or offset is None:
            raise _malformed(path, pos, f"{topic} {part} {off}", n, "int partition and long offset")
        out.append((topic, partition, offset))
    return OffsetCheckpoint(tuple(out), path, version)


class EpochEntry(NamedTuple):
    """``EpochEntry``: first offset written in a leader epoch."""

    epoch: int
    start_offset: int


@dataclass(frozen=True)
class LeaderEpochCheckpoint:
    entries: tuple[EpochEntry, ...] = ()
    path: str | None = None
    version: int = LEADER_EPOCH_CHECKPOINT_VERSION

    def epoch_for_offset(self, offset: int) -> int | None:
        """Leader epoch whose range holds ``offset`` (greatest start_offset <= offset), None if before all."""
        best: int | None = None
        for e in self.entries:
            if e.start_offset <= offset:
                best = e.epoch
        return best

    @property
    def latest_epoch(self) -> int | None:
        return self.entries[-1].epoch if self.entries else None

    def __len__(self) -> int:
        return len(self.entries)


def parse_leader_epoch_checkpoint(data: bytes, *, path: str | None = None) -> LeaderEpochCheckpoint:
    """Parse a ``leader-epoch-checkpoint`` (``epoch startOffset`` lines)."""
    version, rows = _read_checkpoint(bytes(data), path, LEADER_EPOCH_CHECKPOINT_VERSION, 2,
                                     "epoch startOffset")
    out: list[EpochEntry] = []
    for pos, n, (ep, off) in rows:
        epoch = _parse_java_int(ep, INT32_MIN, INT32_MAX)
        offset = _parse_java_int(off, INT64_MIN, INT64_MAX)
        if epoch is None or offset is None:
            raise _malformed(path, pos, f"{ep} {off}", n, "int epoch and long start offset")
        out.append(EpochEntry(epoch, offset))
    return LeaderEpochCheckpoint(tuple(out), path, version)


# -- partition.metadata -------------------------------------------------------------------------

@dataclass(frozen=True)
class PartitionMetadata:
    version: int
    topic_id: str  # canonical Uuid.toString
    path: str | None = None

    @property
    def topic_id_bytes(self) -> bytes:
        return uuid_from_string(self.topic_id)


def parse_partition_metadata(data: bytes, *, path: str | None = None) -> PartitionMetadata:
    """Parse ``partition.metadata`` as ``PartitionMetadataReadBuffer.read``."""
    lines = _lines(bytes(data))
    if not lines:
        raise CheckpointFormatError("empty partition metadata file", path=path, position=0,
                                    expected="'version: 0'", found="end of file")
    pos, raw = lines[0]
    text = _decode_utf8(raw, path, pos)
    parts = _java_split(text, _COLON_WS)
    version = _parse_java_int(parts[1], INT32_MIN, INT32_MAX) if len(parts) == 2 else None
    if version is None:
        raise _malformed(path, pos, text, 1, "'version: <int>'")
    if version < PARTITION_METADATA_VERSION:
        raise CheckpointFormatError(f"Unrecognized version of partition metadata file: {version}",
                                    path=path, position=pos,
                                    expected=f"version >= {PARTITION_METADATA_VERSION}",
                                    found=str(version))
    if len(lines) < 2:
        raise CheckpointFormatError("partition metadata file has no topic_id line", path=path,
                                    position=len(data), expected="'topic_id: <uuid>'", found="end of file")
    pos, raw = lines[1]
    text = _decode_utf8(raw, path, pos)
    parts = _java_split(text, _COLON_WS)
    if len(parts) != 2:
        raise _malformed(path, pos, text, 2, "'topic_id: <uuid>'")
    try:
        uuid = uuid_from_string(parts[1])
    except ValueError as exc:
        raise CheckpointFormatError(str(exc), path=path, position=pos, expected="base64 Uuid",
                                    found=repr(parts[1])) from None
    if uuid == bytes(16):
        raise CheckpointFormatError("Invalid topic ID in partition metadata file", path=path, position=pos,
                                    expected="non-zero Uuid", found=parts[1])
    return PartitionMetadata(version, uuid_to_string(uuid), path)


# -- java.util.Properties + meta.properties -----------------------------------------------------

_PROP_WS = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_java_properties(data: bytes, *, path: str | None = None) -> dict[str, str]:
    """``Properties.load(InputStream)``: ISO-8859-1, comments, continuations, ``=``/``:``/space, escapes."""
    # natural lines with their char position (= byte position: latin-1 is one byte per char)
    natural: list[tuple[int, str]] = [(p, raw.decode("latin-1")) for p, raw in _lines(bytes(data))]
    props: dict[str, str] = {}
    i = 0
    while i < len(natural):
        pos, line = natural[i]
        i += 1
        stripped = line.lstrip(_PROP_WS)
        if not stripped or stripped[0] in "#!":
            continue
        logical = stripped
        while _ends_with_odd_backslashes(logical):
            logical = logical[:-1]
            if i >= len(natural):
                break
            logical += natural[i][1].lstrip(_PROP_WS)
            i += 1
        key, value = _split_property(logical, path, pos)
        props[key] = value
    return props


def _ends_with_odd_backslashes(s: str) -> bool:
    n = len(s) - len(s.rstrip("\\"))
    return n % 2 == 1


def _split_property(line: str, path: str | None, pos: int) -> tuple[str, str]:
    k = 0
    n = len(line)
    has_sep = False
    while k < n:
        c = line[k]
        if c == "\\":
            k += 2
            continue
        if c in "=:":
            has_sep = True
            break
        if c in _PROP_WS:
            break
        k += 1
    key_raw = line[:min(k, n)]
    v = k
    if not has_sep:
        while v < n and line[v] in _PROP_WS:
            v += 1
        if v < n and line[v] in "=:":
            v += 1
    else:
        v += 1
    while v < n and line[v] in _PROP_WS:
        v += 1
    return _unescape(key_raw, path, pos), _unescape(line[v:], path, pos)


def _unescape(s: str, path: str | None, pos: int) -> str:
    if "\\" not in s:
        return s
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        i += 1
        if i >= len(s):
            break
        c = s[i]
        i += 1
        if c == "u":
            hexpart = s[i:i + 4]
            if len(hexpart) < 4 or any(h not in "0123456789abcdefABCDEF" for h in hexpart):
                raise CheckpointFormatError("Malformed \\uxxxx encoding.", path=path, position=pos,
                                            expected="\\u followed by 4 hex digits",
                                            found=repr("\\u" + hexpart))
            out.append(chr(int(hexpart, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    return "".join(out)


@dataclass(frozen=True)
class MetaProperties:
    """``meta.properties`` of a log dir: ``node_id`` is ``broker.id`` (v0) or ``node.id`` (v1)."""

    version: int
    node_id: int | None
    cluster_id: str | None
    directory_id: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    path: str | None = None

    @property
    def broker_id(self) -> int | None:
        return self.node_id

    @property
    def is_kraft(self) -> bool:
        return self.version == 1


def parse_meta_properties(data: bytes, *, path: str | None = None) -> MetaProperties:
    """Parse ``meta.properties`` with ``MetaProperties.Builder(Properties)`` + ``build()`` rules."""
    props = parse_java_properties(data, path=path)
    raw_version = props.get("version", "0")
    version = _parse_java_int(raw_version.strip(), INT32_MIN, INT32_MAX)
    if version is None:
        raise CheckpointFormatError(f"Invalid meta.properties version string '{raw_version}'", path=path,
                                    expected="version 0 or 1", found=repr(raw_version))
    if version not in (0, 1):
        raise CheckpointFormatError(f"Unknown meta.properties version number {version}", path=path,
                                    expected="version 0 or 1", found=str(version))
    id_key = "broker.id" if version == 0 else "node.id"
    node_id: int | None = None
    if id_key in props:
        node_id = _parse_java_int(props[id_key], INT32_MIN, INT32_MAX)
        if node_id is None:
            raise CheckpointFormatError(f"Unable to read {id_key} as a base-10 number.", path=path,
                                        expected="int", found=repr(props[id_key]))
    elif version == 1:
        raise CheckpointFormatError(f"Failed to find {id_key}", path=path, expected=id_key, found="absent")
    cluster_id = props.get("cluster.id")
    if version == 1 and cluster_id is None:
        raise CheckpointFormatError("cluster.id was not found.", path=path, expected="cluster.id",
                                    found="absent")
    directory_id = props.get("directory.id")
    if directory_id is not None:
        try:
            directory_id = uuid_to_string(uuid_from_string(directory_id))
        except ValueError as exc:
            raise CheckpointFormatError(f"Unable to read directory.id as a Uuid: {exc}", path=path,
                                        expected="base64 Uuid", found=repr(directory_id)) from None
    return MetaProperties(version, node_id, cluster_id, directory_id, dict(props), path)


# -- .kafka_cleanshutdown and quorum-state --------------------------------------------------------

@dataclass(frozen=True)
class CleanShutdown:
    """Presence of ``.kafka_cleanshutdown``; ``broker_epoch`` when its JSON names one (else None,
    as ``CleanShutdownFileHandler.read`` returns empty for an empty or unreadable file)."""

    broker_epoch: int | None = None
    version: int | None = None
    path: str | None = None


def parse_clean_shutdown(data: bytes, *, path: str | None = None) -> CleanShutdown:
    """Never raises: the broker treats any content as 'clean shutdown happened'."""
    try:
        doc = json.loads(bytes(data).decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: deeply nested JSON
        return CleanShutdown(path=path)
    if not isinstance(doc, dict):
        return CleanShutdown(path=path)
    epoch = doc.get("brokerEpoch")
    version = doc.get("version")
    return CleanShutdown(
        broker_epoch=epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else None,
        version=version if isinstance(version, int) and not isinstance(version, bool) else None,
        path=path)


@dataclass(frozen=True)
class QuorumState:
    """KRaft ``quorum-state`` (FileQuorumStateStore): JSON of QuorumStateData + ``data_version``."""

    leader_id: int
    leader_epoch: int
    voted_id: int
    applied_offset: int
    current_voters: tuple[int, ...] | None
    data_version: int
    cluster_id: str | None
    document: Mapping[str, Any] = field(default_factory=dict)
    path: str | None = None


def parse_quorum_state(data: bytes, *, path: str | None = None) -> QuorumState:
    """Parse the first line of ``quorum-state`` as JSON (data_version 0 or 1)."""
    lines = _lines(bytes(data))
    first = lines[0][1] if lines else b""
    try:
        doc = json.loads(first.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: deeply nested JSON
        raise CheckpointFormatError(f"quorum-state is not JSON: {exc}", path=path, position=0,
                                    expected="a JSON object", found=repr(first[:40])) from None
    if not isinstance(doc, dict):
        raise CheckpointFormatError("quorum-state is not a JSON object", path=path, position=0,
                                    expected="a JSON object", found=type(doc).__name__)

    def _int(name: str, default: int | None = None) -> int:
        v = doc.get(name, default)
        if not isinstance(v, int) or isinstance(v, bool):
            raise CheckpointFormatError(f"quorum-state field {name} missing or not an integer", path=path,
                                        position=0, expected=f"integer {name}", found=repr(v))
        return v

    data_version = _int("data_version")
    if data_version not in (0, 1):
        raise CheckpointFormatError(f"data_version ({data_version}) is not within the min (0) and max (1) "
                                    "supported version", path=path, position=0, expected="0 or 1",
                                    found=str(data_version))
    voters_doc = doc.get("currentVoters")
    voters: tuple[int, ...] | None = None
    if isinstance(voters_doc, list):
        voters = tuple(v["voterId"] for v in voters_doc
                       if isinstance(v, dict) and isinstance(v.get("voterId"), int))
    cluster = doc.get("clusterId")
    return QuorumState(
        leader_id=_int("leaderId", -1), leader_epoch=_int("leaderEpoch", -1), voted_id=_int("votedId", -1),
        applied_offset=_int("appliedOffset", 0), current_voters=voters, data_version=data_version,
        cluster_id=cluster if isinstance(cluster, str) else None, document=doc, path=path)


# -- readers over paths/URIs ---------------------------------------------------------------------

def read_offset_checkpoint(source: str | os.PathLike[str], *, filesystem: Any = None) -> OffsetCheckpoint:
    data, loc = _read(source, filesystem)
    return parse_offset_checkpoint(data, path=loc)


def read_leader_epoch_checkpoint(source: str | os.PathLike[str], *,
                                 filesystem: Any = None) -> LeaderEpochCheckpoint:
    data, loc = _read(source, filesystem)
    return parse_leader_epoch_checkpoint(data, path=loc)


def read_partition_metadata(source: str | os.PathLike[str], *, filesystem: Any = None) -> PartitionMetadata:
    data, loc = _read(source, filesystem)
    return parse_partition_metadata(data, path=loc)


def read_meta_properties(source: str | os.PathLike[str], *, filesystem: Any = None) -> MetaProperties:
    data, loc = _read(source, filesystem)
    return parse_meta_properties(data, path=loc)


def read_clean_shutdown(source: str | os.PathLike[str], *, filesystem: Any = None) -> CleanShutdown:
    data, loc = _read(source, filesystem)
    return parse_clean_shutdown(data, path=loc)


def read_quorum_state(source: str | os.PathLike[str], *, filesystem: Any = None) -> QuorumState:
    data, loc = _read(source, filesystem)
    return parse_quorum_state(data, path=loc)


# -- writers (the formats exactly as the broker writes them) -------------------------------------

def _checkpoint_text(version: int, lines: list[str]) -> bytes:
    return "".join(f"{x}\n" for x in [str(version), str(len(lines)), *lines]).encode("utf-8")


def format_offset_checkpoint(
        offsets: Mapping[tuple[str, int], int] | Iterable[tuple[str, int, int]]) -> bytes:
    """Bytes of an offset checkpoint (``CheckpointWriteBuffer`` + ``OffsetCheckpointFile.Formatter``)."""
    rows = ([(t, p, o) for (t, p), o in offsets.items()] if isinstance(offsets, Mapping)
            else [tuple(r) for r in offsets])
    return _checkpoint_text(OFFSET_CHECKPOINT_VERSION, [f"{t} {p} {o}" for t, p, o in rows])


def format_leader_epoch_checkpoint(entries: Iterable[tuple[int, int]]) -> bytes:
    return _checkpoint_text(LEADER_EPOCH_CHECKPOINT_VERSION, [f"{e} {o}" for e, o in entries])


def format_partition_metadata(topic_id: str | bytes) -> bytes:
    """``PartitionMetadata.encode``: two lines, no trailing newline."""
    raw = topic_id if isinstance(topic_id, bytes) else uuid_from_string(topic_id)
    tid = uuid_to_string(raw)
    return f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {tid}".encode()


def format_meta_properties(*, version: int, node_id: int | None, cluster_id: str | None = None,
                           directory_id: str | None = None, timestamp_ms: int | None = None) -> bytes:
    """``Properties.store(writer, "")``: ``#`` + date comment lines, then ``key=value`` lines."""
    when = time.gmtime((timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)) / 1000)
    lines = ["#", "#" + time.strftime("%a %b %d %H:%M:%S UTC %Y", when)]
    if cluster_id is not None:
        lines.append(f"cluster.id={cluster_id}")
    if directory_id is not None:
        lines.append(f"directory.id={directory_id}")
    if node_id is not None:
        lines.append(f"{'broker.id' if version == 0 else 'node.id'}={node_id}")
    lines.append(f"version={version}")
    return "".join(x + "\n" for x in lines).encode("utf-8")


def format_clean_shutdown(broker_epoch: int | None) -> bytes:
    """Newer brokers: ``{"version":0,"brokerEpoch":N}``; older ones: empty file (``None``)."""
    if broker_epoch is None:
        return b""
    return json.dumps({"version": CLEAN_SHUTDOWN_VERSION, "brokerEpoch": broker_epoch},
                      separators=(",", ":")).encode()


def write_offset_checkpoint(target: str | os.PathLike[str],
                            offsets: Mapping[tuple[str, int], int] | Iterable[tuple[str, int, int]], *,
                            filesystem: Any = None) -> None:
    _write(target, format_offset_checkpoint(offsets), filesystem)


def write_leader_epoch_checkpoint(target: str | os.PathLike[str], entries: Iterable[tuple[int, int]], *,
                                  filesystem: Any = None) -> None:
    _write(target, format_leader_epoch_checkpoint(entries), filesystem)


def write_partition_metadata(target: str | os.PathLike[str], topic_id: str | bytes, *,
                             filesystem: Any = None) -> None:
    _write(target, format_partition_metadata(topic_id), filesystem)


def write_meta_properties(target: str | os.PathLike[str], *, version: int, node_id: int | None,
                          cluster_id: str | None = None, directory_id: str | None = None,
                          filesystem: Any = None) -> None:
    _write(target, format_meta_properties(version=version, node_id=node_id, cluster_id=cluster_id,
                                          directory_id=directory_id), filesystem)
