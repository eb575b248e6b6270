"""Schema-driven reader and writer for Kafka protocol messages.

Kafka generates Java classes from JSON message definitions
(``generator/src/main/java/org/apache/kafka/message/MessageDataGenerator.java``);
this module interprets the same definitions (trimmed copies in
:mod:`kafka_format.internal.schemas`) at run time, with the generated reader's
rules:

Non-flexible versions (``org.apache.kafka.common.protocol.ByteBufferAccessor``)::

    string   int16 length (-1 = null) + UTF-8         max length 0x7fff
    bytes    int32 length (-1 = null) + bytes
    array    int32 count  (-1 = null) + elements      count <= remaining bytes
    struct   fields in order (nullable struct: int8 presence, < 0 = null)

Flexible versions (field ``flexibleVersions`` overrides the message's)::

    string / bytes / array   unsigned varint (length + 1, 0 = null) + data
    every struct ends with   uvarint count, then per field: uvarint tag,
                             uvarint size, data (known tags decoded in place,
                             unknown tags kept as raw bytes)

Fixed-width fields are big-endian; ``uuid`` is two int64 rendered as Kafka's
``Uuid.toString()`` (URL-safe base64 without padding).  Unsigned varints are
read as Java's ``ByteUtils.readUnsignedVarint`` does: at most 5 bytes, int32
wrap-around.

Decoded messages are plain dicts keyed by the JSON names Kafka's generated
``*JsonConverter`` classes print (field name with a lower-case first letter).
As in those converters, fields absent from the version are omitted and tagged
fields appear only when they differ from their default.  Unknown tagged fields
are kept under :data:`UNKNOWN_TAGS_KEY` (``{tag: bytes}``); :func:`to_json`
leaves them out, as Kafka does.

Every failure raises :class:`~kafka_format.common.errors.InternalTopicFormatError`
with ``position`` = byte offset inside the decoded buffer (the key or value).
"""

from __future__ import annotations

import base64
import json
import re
import struct
from dataclasses import dataclass, field
from typing import Any

from kafka_format.common.errors import InternalTopicFormatError
from kafka_format.common.kafka_uuid import ZERO_UUID  # re-exported (__all__)
from kafka_format.common.kafka_uuid import uuid_to_string as uuid_to_str  # re-exported (__all__)
from kafka_format.internal.schemas import SCHEMAS
from kafka_format.internal.schemas import newer as _newer_schemas
from kafka_format.records.batch_v2 import java_utf8

_newer_schemas.apply(SCHEMAS)   # fields of Kafka 4.4.0 newer than the generated set

__all__ = [
    "DELETE_TEXT",
    "INT16",
    "UNKNOWN_TAGS_KEY",
    "VERSION_MAX",
    "ZERO_UUID",
    "FieldSpec",
    "MessageSpec",
    "Reader",
    "StructSpec",
    "compile_spec",
    "java_abs",
    "java_string_hash",
    "message_spec",
    "murmur2",
    "partition_for",
    "read_message",
    "read_version_prefixed",
    "to_json",
    "uuid_from_str",
    "uuid_to_str",
    "write_message",
    "write_uvarint",
    "write_version_prefixed",
]

# ``ByteBufferAccessor`` primitive reads (big-endian, Java types).
INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")
UUID = struct.Struct(">16s")  # Uuid = mostSignificantBits int64 + leastSignificantBits int64

_PRIMITIVES: dict[str, struct.Struct] = {
    "int8": INT8,
    "int16": INT16,
    "uint16": UINT16,
    "int32": INT32,
    "uint32": UINT32,
    "int64": INT64,
    "float64": FLOAT64,
}

#: Key under which unknown tagged fields ({tag: raw bytes}) are kept in decoded dicts.
UNKNOWN_TAGS_KEY = "_unknownTaggedFields"
#: What DumpLogSegments' decoders print for a tombstone (a null value) of an internal topic.
DELETE_TEXT = "<DELETE>"
MAX_STRING_LENGTH = 0x7FFF  # generated readers reject longer strings
MAX_VARINT_SHIFT = 28  # ByteUtils.readUnsignedVarint: at most 5 bytes
JAVA_NULL_MESSAGE = "null"   # the getMessage() of a BufferUnderflowException, as Kafka's tools print it
VERSION_MAX = 0x7FFF  # "N+" means N..Short.MAX_VALUE
NULL_LENGTH = -1

Versions = tuple[int, int] | None  # inclusive range, None = no versions


def _parse_versions(text: str | None) -> Versions:
    """``"0+"``, ``"1-3"``, ``"2"`` or ``"none"`` → inclusive range (``Versions.parse``)."""
    if text is None:
        return None
    text = str(text).strip()
    if text == "none":
        return None
    if text.endswith("+"):
        return (int(text[:-1]), VERSION_MAX)
    if "-" in text:
        lo, hi = text.split("-", 1)
        return (int(lo), int(hi))
    return (int(text), int(text))


def _contains(versions: Versions, v: int) -> bool:
    return versions is not None and versions[0] <= v <= versions[1]


def _lower_first(name: str) -> str:
    """``MessageGenerator.lowerCaseFirst`` (the camelCase JSON name)."""
    return name[:1].lower() + name[1:]


@dataclass(slots=True)
class FieldSpec:
    """One field of a struct, compiled from the JSON definition."""

    name: str  # JSON (camelCase) name
    type: str  # type as written in the schema ("int32", "[]string", "PartitionsSchema")
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: str | None  # raw default from the schema
    flexible: Versions | str  # field override or "message" (inherit)
    element: str | None = None  # element type of an array
    struct: StructSpec | None = None  # struct of a struct or struct-array field

    @property
    def is_array(self) -> bool:
        """Whether the field is an array (``"[]T"``)."""
        return self.type.startswith("[]")


@dataclass(slots=True)
class StructSpec:
    """A struct: ordered fields plus the versions it exists in."""

    name: str
    versions: Versions
    fields: list[FieldSpec] = field(default_factory=list)
    # (version, message flexible versions) -> how its fields are read (:func:`_struct_plan`)
    plans: dict[tuple[int, Versions], _StructPlan] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class _StructPlan:
    """A struct's fields as one version reads them: the plain fields in order, each ``(name, field,
    fixed, what, flexible, nullable)`` (``fixed``: the struct of a fixed-width scalar, read at once),
    and whether a tagged-field section follows."""

    plain: tuple[tuple[str, FieldSpec, struct.Struct | None, str, bool, bool], ...]
    flexible: bool


@dataclass(slots=True)
class MessageSpec:
    """A top-level message: valid and flexible versions, root struct, api key."""

    name: str
    valid: Versions
    flexible: Versions
    root: StructSpec
    api_key: int | None
    kind: str


_SPEC_CACHE: dict[str, MessageSpec] = {}
_NON_STRUCT_TYPES = set(_PRIMITIVES) | {"bool", "string", "bytes", "uuid", "records"}


def message_spec(name: str) -> MessageSpec:
    """Compiled spec of the Kafka message ``name`` (e.g. ``"OffsetCommitValue"``)."""
    spec = _SPEC_CACHE.get(name)
    if spec is None:
        spec = compile_spec(SCHEMAS[name])
        _SPEC_CACHE[name] = spec
    return spec


def compile_spec(doc: dict[str, Any]) -> MessageSpec:
    """Compile one schema (an entry of :data:`SCHEMAS`, or a release's own version of one)."""
    valid = _parse_versions(doc["validVersions"])
    common: dict[str, StructSpec] = {}
    for cs in doc.get("commonStructs", []):
        common[cs["name"]] = StructSpec(cs["name"], _parse_versions(cs.get("versions", "0+")))
    for cs in doc.get("commonStructs", []):
        common[cs["name"]].fields = [_compile_field(f, common) for f in cs["fields"]]
    root = StructSpec(doc["name"], valid, [_compile_field(f, common) for f in doc["fields"]])
    _clamp_structs(root, valid, set())
    return MessageSpec(doc["name"], valid, _parse_versions(doc.get("flexibleVersions", "none")),
                       root, None if doc.get("apiKey") is None else int(doc["apiKey"]),
                       doc.get("type", "data"))


def _clamp_structs(struct: StructSpec, valid: Versions, seen: set[int]) -> None:
    """Nested structs exist only in the message's valid versions (``"0+"`` inside a ``"0-3"``
    message is 0-3), as the generated classes of the nested structs check on read."""
    for f in struct.fields:
        nested = f.struct
        if nested is None or id(nested) in seen:
            continue
        seen.add(id(nested))
        if nested.versions is not None and valid is not None:
            lo, hi = max(nested.versions[0], valid[0]), min(nested.versions[1], valid[1])
            nested.versions = (lo, hi) if lo <= hi else None
        _clamp_structs(nested, valid, seen)


def _compile_field(f: dict[str, Any], common: dict[str, StructSpec]) -> FieldSpec:
    ftype = f["type"]
    element = ftype[2:] if ftype.startswith("[]") else None
    base = element if element is not None else ftype
    versions = _parse_versions(f.get("versions", f.get("taggedVersions")))
    spec = FieldSpec(
        name=_lower_first(f["name"]),
        type=ftype,
        versions=versions,
        nullable=_parse_versions(f.get("nullableVersions")),
        tagged=_parse_versions(f.get("taggedVersions")),
        tag=None if f.get("tag") is None else int(f["tag"]),  # some schemas quote it ("tag": "2")
        # a JSON null default is no default (the generator's FieldSpec: ""), unlike the string "null":
        # a tagged nullable struct or array then defaults to an empty one, and an explicit null is printed
        default=None if f.get("default") is None else str(f["default"]),
        flexible=_parse_versions(f["flexibleVersions"]) if "flexibleVersions" in f else "message",
        element=element,
    )
    if base not in _NON_STRUCT_TYPES:
        if "fields" in f:
            spec.struct = StructSpec(base, versions, [_compile_field(x, common) for x in f["fields"]])
        elif base in common:
            spec.struct = common[base]
        else:  # pragma: no cover - schema tables are generated from Kafka's and always resolve
            raise KeyError(f"unresolved struct type {base}")
    return spec


# --------------------------------------------------------------------------- helpers


def uuid_from_str(text: str) -> bytes:
    """Inverse of :func:`uuid_to_str` (``Uuid.fromString``)."""
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != UUID.size:
        raise ValueError(f"a Uuid has 16 bytes, {text!r} decodes to {len(raw)}")
    return raw


def java_string_hash(text: str) -> int:
    """Java ``String.hashCode()`` (over UTF-16 code units, int32 wrap-around)."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (the partitioners' hash; seed 0x9747b28c), as a Java int."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    length = len(data)
    h = (0x9747B28C ^ length) & mask
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    rest = length % 4
    tail = length - rest
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return _java_int(h)


def java_abs(n: int) -> int:
    """Kafka ``Utils.abs``: ``abs`` with ``abs(Integer.MIN_VALUE) == 0``."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(ident: str, partitions: int = 50) -> int:
    """Partition of a group id / transactional id (``GroupMetadataManager.partitionFor``)."""
    return java_abs(java_string_hash(ident)) % partitions


def _java_int(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


# --------------------------------------------------------------------------- reading


class Reader:
    """Bounded cursor over one buffer; every read checks the remaining bytes first."""

    __slots__ = ("data", "end", "pos", "what")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0, what: str = "message") -> None:
        self.data = bytes(data)
        self.pos = pos
        self.end = len(self.data)
        self.what = what

    def remaining(self) -> int:
        """Bytes left after the cursor."""
        return self.end - self.pos

    def fail(self, reason: str, expected: str, found: str, position: int | None = None,
             java: str = JAVA_NULL_MESSAGE) -> InternalTopicFormatError:
        """An error at ``position`` (default: the cursor), named after the message being read;
        ``java_message`` is what Kafka's generated reader throws there (``getMessage()``: "null"
        for a ``BufferUnderflowException``)."""
        err = InternalTopicFormatError(
            f"{self.what}: {reason}", position=self.pos if position is None else position,
            expected=expected, found=found)
        err.java_message = java     # type: ignore[attr-defined]
        return err

    def need(self, n: int, what: str) -> None:
        """Fail unless ``n`` more bytes are available (checked before any slicing)."""
        if n > self.end - self.pos:
            raise self.fail(f"truncated {what}", f"{n} bytes", f"{self.end - self.pos} bytes remaining")

    def fixed(self, s: struct.Struct, what: str) -> Any:
        """One fixed-width big-endian value."""
        self.need(s.size, what)
        v = s.unpack_from(self.data, self.pos)[0]
        self.pos += s.size
        return v

    def raw(self, n: int, what: str) -> bytes:
        """The next ``n`` bytes."""
        self.need(n, what)
        v = self.data[self.pos:self.pos + n]
        self.pos += n
        return v

    def uvarint(self, what: str) -> int:
        """``ByteUtils.readUnsignedVarint`` (≤ 5 bytes, int32 result)."""
        start = self.pos
        value = 0
        shift = 0
        while True:
            if self.pos >= self.end:
                raise self.fail(f"truncated unsigned varint ({what})", "a varint byte", "end of data", start)
            b = self.data[self.pos]
            self.pos += 1
            if not b & 0x80:
                break
            value |= (b & 0x7F) << shift
            shift += 7
            if shift > MAX_VARINT_SHIFT:
                raise self.fail(f"unsigned varint too long ({what})", "at most 5 bytes", "more", start)
        return _java_int(value | (b << shift))


def _flex_for(f: FieldSpec, msg_flexible: Versions, version: int) -> bool:
    fl = msg_flexible if f.flexible == "message" else f.flexible
    return _contains(fl if not isinstance(fl, str) else None, version)


def _read_length(r: Reader, flexible: bool, what: str, kind: str) -> int:
    if flexible:
        return _java_int(r.uvarint(what) - 1)
    if kind == "string":
        return int(r.fixed(INT16, what))
    return int(r.fixed(INT32, what))


def _read_string(r: Reader, length: int, what: str) -> str:
    if length > MAX_STRING_LENGTH:
        raise r.fail(f"string field {what} had invalid length", f"length <= {MAX_STRING_LENGTH}", str(length),
                     java=f"string field {_lower_first(what)} had invalid length {length}")
    return java_utf8(r.raw(length, f"string {what}")).decode("utf-8")   # Java's U+FFFD for malformed bytes


def _read_varlen(r: Reader, base: str, flexible: bool, nullable: bool, what: str) -> Any:
    kind = "string" if base == "string" else "other"
    start = r.pos
    length = _read_length(r, flexible, what, kind)
    if length < 0:
        if not nullable:
            raise r.fail(f"non-nullable field {what} was serialized as null", "length >= 0",
                         str(length), start, java=f"non-nullable field {_lower_first(what)} was serialized as null")
        return None
    if base == "string":
        return _read_string(r, length, what)
    if base in ("bytes", "records"):
        return r.raw(length, f"bytes {what}")
    raise AssertionError(base)  # pragma: no cover


def _read_value(r: Reader, f: FieldSpec, version: int, msg_flexible: Versions, tagged: bool,
                flexible: bool | None = None, nullable: bool | None = None) -> Any:
    """Read one field's value at ``r.pos`` (``generateVariableLengthReader`` & co); ``flexible`` and
    ``nullable``: the field's at ``version`` when the caller knows them."""
    if flexible is None:
        flexible = _flex_for(f, msg_flexible, version)
    if nullable is None:
        nullable = _contains(f.nullable, version)
    what = f.name
    if f.is_array:
        start = r.pos
        count = _read_length(r, flexible, what, "array")
        if count < 0:
            if not nullable:
                raise r.fail(f"non-nullable field {what} was serialized as null", "count >= 0",
                             str(count), start,
                             java=f"non-nullable field {_lower_first(what)} was serialized as null")
            return None
        if count > r.remaining():
            raise r.fail(f"tried to allocate a collection of size {count} for {what}",
                         f"at most {r.remaining()} elements (bytes remaining)", str(count), start,
                         java=f"Tried to allocate a collection of size {count}, but there are only "
                              f"{r.remaining()} bytes remaining.")
        out: list[Any] = []
        elem = f.element
        assert elem is not None
        if f.struct is not None:
            for _ in range(count):
                out.append(_read_struct(r, f.struct, version, msg_flexible))
        elif elem in ("string", "bytes"):
            for _ in range(count):
                out.append(_read_varlen(r, elem, flexible, False, f"{what} element"))
        else:
            for _ in range(count):
                out.append(_read_scalar(r, elem, what))
        return out
    if f.struct is not None:
        if nullable:
            if tagged:
                if r.uvarint(what) <= 0:
                    return None
            elif r.fixed(INT8, what) < 0:
                return None
        return _read_struct(r, f.struct, version, msg_flexible)
    if f.type in ("string", "bytes", "records"):
        return _read_varlen(r, f.type, flexible, nullable, what)
    return _read_scalar(r, f.type, what)


def _read_scalar(r: Reader, t: str, what: str) -> Any:
    s = _PRIMITIVES.get(t)
    if s is not None:
        return r.fixed(s, f"{t} {what}")
    if t == "bool":
        return r.fixed(INT8, f"bool {what}") != 0
    if t == "uuid":
        return uuid_to_str(r.raw(UUID.size, f"uuid {what}"))
    raise AssertionError(t)  # pragma: no cover


def _read_struct(r: Reader, s: StructSpec, version: int, msg_flexible: Versions,
                 check_version: bool = True, positions: dict[str, int] | None = None) -> dict[str, Any]:
    """``generateClassReader``: fields in order, then the tagged-field section (``positions``: where
    each field read starts, by name)."""
    if check_version and not _contains(s.versions, version):
        raise InternalTopicFormatError(f"Can't read version {version} of {s.name}", position=r.pos,
                                       expected=f"versions {s.versions}", found=str(version))
    plan = s.plans.get((version, msg_flexible)) or _struct_plan(s, version, msg_flexible)
    out: dict[str, Any] = {}
    tagged_values: dict[str, Any] = {}
    for name, f, fixed, what, flexible, nullable in plan.plain:
        if positions is not None:
            positions[name] = r.pos
        out[name] = r.fixed(fixed, what) if fixed is not None else \
            _read_value(r, f, version, msg_flexible, False, flexible, nullable)
    if plan.flexible:
        by_tag = {f.tag: f for f in s.fields if f.tag is not None and f.tagged is not None}
        count = r.uvarint("tagged field count")
        unknown: dict[int, bytes] = {}
        for _ in range(count):
            tag_pos = r.pos
            tag = r.uvarint("tag")
            size = r.uvarint("tagged field size")
            spec = by_tag.get(tag)
            if spec is None:
                if size < 0:
                    raise r.fail("negative tagged field size", "size >= 0", str(size), tag_pos)
                unknown[tag] = r.raw(size, f"unknown tagged field {tag}")
                continue
            if not (_contains(spec.versions, version) and _contains(spec.tagged, version)):
                raise r.fail(f"tag {tag} is not valid for version {version}", "a tag of this version",
                             str(tag), tag_pos)
            if positions is not None:
                positions[spec.name] = r.pos
            tagged_values[spec.name] = _read_value(r, spec, version, msg_flexible, True)
        for f in s.fields:  # JSON order = schema order; tagged fields only when not default
            if f.name in tagged_values and not _is_default(f, tagged_values[f.name], version, msg_flexible):
                out[f.name] = tagged_values[f.name]
        if unknown:
            out[UNKNOWN_TAGS_KEY] = unknown
        if tagged_values:  # restore schema order of keys
            order = {f.name: i for i, f in enumerate(s.fields)}
            out = dict(sorted(out.items(), key=lambda kv: order.get(kv[0], len(order))))
    return out


def _struct_plan(s: StructSpec, version: int, msg_flexible: Versions) -> _StructPlan:
    """How ``s``'s fields are read at ``version`` (its plain fields, in order), computed once per
    version and kept on the struct."""
    plain = tuple((f.name, f, None if f.is_array or f.struct is not None else _PRIMITIVES.get(f.type),
                   f"{f.type} {f.name}", _flex_for(f, msg_flexible, version), _contains(f.nullable, version))
                  for f in s.fields if _contains(f.versions, version) and not _contains(f.tagged, version))
    plan = s.plans[(version, msg_flexible)] = _StructPlan(plain, _contains(msg_flexible, version))
    return plan


def _scalar_default(t: str, raw: str | None) -> Any:
    if t == "bool":
        return str(raw).lower() == "true"
    if t == "uuid":
        return ZERO_UUID if raw in (None, "") else raw
    if raw is None or raw == "":
        return 0.0 if t == "float64" else 0
    if t == "float64":
        return float(raw)
    return int(raw, 0)


def default_value(f: FieldSpec, version: int, msg_flexible: Versions) -> Any:
    """``FieldSpec.fieldDefault``: the value a field takes when absent."""
    if f.default == "null":
        return None
    if f.is_array:
        return []
    if f.struct is not None:
        return {g.name: default_value(g, version, msg_flexible) for g in f.struct.fields
                if _contains(g.versions, version) and not _contains(g.tagged, version)}
    if f.type == "string":
        return f.default or ""
    if f.type in ("bytes", "records"):
        return b""
    return _scalar_default(f.type, f.default)


def _is_default(f: FieldSpec, value: Any, version: int, msg_flexible: Versions) -> bool:
    return bool(value == default_value(f, version, msg_flexible))


def read_message(name: str, data: bytes | bytearray | memoryview, version: int, *,
                 offset: int = 0, require_end: bool = False, spec: MessageSpec | None = None,
                 any_version: bool = False, positions: dict[str, int] | None = None
                 ) -> tuple[dict[str, Any], int]:
    """Decode message ``name`` at ``version`` from ``data[offset:]``.

    Returns ``(dict, end position)``.  ``require_end`` rejects trailing bytes
    (as ``AbstractApiMessageSerde.read`` does for metadata records).  ``spec``: read with this
    compiled schema instead of ``name``'s in :data:`SCHEMAS` (a release's own, for example).
    ``any_version``: as a generated class's ``read(readable, version)`` itself does, read a version
    outside the valid ones too (fields by their ``N+`` ranges, unknown tags kept aside); its
    nested structs still accept only the valid versions.  ``positions``: filled with the byte
    position where each top-level field starts (tagged ones: where their value starts).
    """
    if spec is None:
        spec = message_spec(name)
    r = Reader(data, offset, name)
    try:
        out = _read_struct(r, spec.root, version, spec.flexible, check_version=not any_version,
                           positions=positions)
    except RecursionError as e:  # pragma: no cover - schemas are not deeply nested
        raise r.fail("nesting too deep", "a bounded message", "recursion") from e
    if require_end and r.pos != r.end:
        raise r.fail(f"found {r.end - r.pos} byte(s) of garbage after {name}", "end of data",
                     f"{r.end - r.pos} more bytes")
    return out, r.pos


def read_version_prefixed(name: str, data: bytes | bytearray | memoryview | None,
                          what: str) -> tuple[int, dict[str, Any]] | None:
    """int16 version + message (``CoordinatorRecordSerde``); ``None`` for a null buffer."""
    if data is None:
        return None
    r = Reader(data, 0, what)
    version = int(r.fixed(INT16, f"{what} version"))
    msg, _ = read_message(name, data, version, offset=INT16.size)
    return version, msg


# --------------------------------------------------------------------------- writing


def write_uvarint(n: int) -> bytes:
    n &= 0xFFFFFFFF
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _write_length(out: bytearray, n: int, flexible: bool, kind: str) -> None:
    if flexible:
        out += write_uvarint(n + 1)
    elif kind == "string":
        out += INT16.pack(n)
    else:
        out += INT32.pack(n)


def _write_value(out: bytearray, f: FieldSpec, value: Any, version: int, msg_flexible: Versions,
                 tagged: bool) -> None:
    flexible = _flex_for(f, msg_flexible, version)
    nullable = _contains(f.nullable, version)
    if value is None and (f.is_array or f.struct is not None or f.type in ("string", "bytes", "records")):
        if not nullable:
            raise ValueError(f"field {f.name} is not nullable in version {version}")
        if f.struct is not None and not f.is_array:
            out += write_uvarint(0) if tagged else INT8.pack(-1)
        else:
            _write_length(out, NULL_LENGTH, flexible, "string" if f.type == "string" else "other")
        return
    if f.is_array:
        _write_length(out, len(value), flexible, "array")
        for item in value:
            if f.struct is not None:
                _write_struct(out, f.struct, item, version, msg_flexible)
            elif f.element in ("string", "bytes"):
                _write_varlen(out, f.element, item, flexible)
            else:
                _write_scalar(out, f.element or "", item)
        return
    if f.struct is not None:
        if nullable:
            out += write_uvarint(1) if tagged else INT8.pack(1)
        _write_struct(out, f.struct, value, version, msg_flexible)
        return
    if f.type in ("string", "bytes", "records"):
        _write_varlen(out, f.type, value, flexible)
        return
    _write_scalar(out, f.type, value)


def _write_varlen(out: bytearray, base: str, value: Any, flexible: bool) -> None:
    raw = value.encode("utf-8") if base == "string" else bytes(value)
    if base == "string" and len(raw) > MAX_STRING_LENGTH:
        raise ValueError(f"string of {len(raw)} bytes is longer than {MAX_STRING_LENGTH}")
    _write_length(out, len(raw), flexible, "string" if base == "string" else "other")
    out += raw


def _write_scalar(out: bytearray, t: str, value: Any) -> None:
    s = _PRIMITIVES.get(t)
    if s is not None:
        out += s.pack(value)
    elif t == "bool":
        out += INT8.pack(1 if value else 0)
    elif t == "uuid":
        out += uuid_from_str(value)
    else:  # pragma: no cover
        raise AssertionError(t)


def _write_struct(out: bytearray, s: StructSpec, value: dict[str, Any], version: int,
                  msg_flexible: Versions) -> None:
    if not _contains(s.versions, version):
        raise ValueError(f"can't write version {version} of {s.name}")
    tagged: list[tuple[int, bytes]] = []
    for f in s.fields:
        if not _contains(f.versions, version):
            continue
        if _contains(f.tagged, version):
            if f.name in value and not _is_default(f, value[f.name], version, msg_flexible):
                buf = bytearray()
                _write_value(buf, f, value[f.name], version, msg_flexible, True)
                tagged.append((int(f.tag or 0), bytes(buf)))
            continue
        v = value[f.name] if f.name in value else default_value(f, version, msg_flexible)
        _write_value(out, f, v, version, msg_flexible, False)
    if _contains(msg_flexible, version):
        for tag, raw in value.get(UNKNOWN_TAGS_KEY, {}).items():
            tagged.append((int(tag), bytes(raw)))
        tagged.sort(key=lambda t: t[0])
        out += write_uvarint(len(tagged))
        for tag, raw in tagged:
            out += write_uvarint(tag) + write_uvarint(len(raw)) + raw


def write_message(name: str, value: dict[str, Any], version: int) -> bytes:
    """Encode ``value`` (a dict as returned by :func:`read_message`) as message ``name``."""
    spec = message_spec(name)
    if not _contains(spec.valid, version):
        raise ValueError(f"{name} has no version {version}")
    out = bytearray()
    _write_struct(out, spec.root, value, version, spec.flexible)
    return bytes(out)


def write_version_prefixed(name: str, value: dict[str, Any], version: int) -> bytes:
    """int16 version + message (``MessageUtil.toVersionPrefixedBytes``)."""
    return INT16.pack(version) + write_message(name, value, version)


# --------------------------------------------------------------------------- JSON


def _json_default(o: Any) -> Any:
    if isinstance(o, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(o)).decode("ascii")  # Jackson BinaryNode
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _strip_private(o: Any) -> Any:
    if isinstance(o, dict):
        return {k: _strip_private(v) for k, v in o.items() if not (isinstance(k, str) and k.startswith("_"))}
    if isinstance(o, list):
        return [_strip_private(v) for v in o]
    return o


# json.dumps writes \u001f, Jackson \u001F: upper-case the hex of escapes not preceded by an
# escaped backslash.
_LOWER_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u00([0-9a-f]{2})")


def to_json(obj: Any) -> str:
    """Compact JSON as Jackson's ``JsonNode.toString()`` prints it (bytes → base64).

    Keys starting with ``_`` (unknown tagged fields) are left out, as Kafka does.
    """
    text = json.dumps(_strip_private(obj), separators=(",", ":"), ensure_ascii=False,
                      default=_json_default)
    if "\\u00" in text:
        text = _LOWER_ESCAPE.sub(lambda m: f"{m[1]}\\u00{m[2].upper()}", text)
    return text
