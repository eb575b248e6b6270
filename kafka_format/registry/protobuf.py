"""Protobuf payloads: descriptors compiled from the registered ``.proto`` text, message indexes honoured.

The registry stores a Protobuf schema as ``.proto`` text (``AbstractSchemaRegistry`` keeps
``parsedSchema.canonicalString()``); clients may also register a base64 ``FileDescriptorProto``
(confluent-kafka-python does), and both are accepted here.  Text is compiled with ``protoc``
(grpcio-tools' in-process compiler, which ships the well-known types), references become the
imports they name.  The result is a serialized ``FileDescriptorSet``, built into a private
``DescriptorPool`` per schema, so versions of the same file never clash.

A record's message-index list (after the schema id; Confluent's ``MessageIndexes``: a zigzag
varint count, then zigzag varint indexes, a single ``0`` byte meaning ``[0]``) picks the message
in the writer's file: ``[i]`` is the i-th top-level message, ``[i, j]`` the j-th nested message of
it, and so on.  The payload is parsed with the table's (reader) message of the same full name:
Protobuf's own compatibility rules (fields by number, unknown fields skipped) take the place of
Avro's resolution.  A record whose message is another one is a record error.

Arrow types follow Spark's ``from_protobuf``: int32/sint32/sfixed32 -> int, int64/sint64/sfixed64
and uint32 -> long, uint64 -> decimal(20, 0), float, double, bool, string, bytes -> binary, enum ->
string (its value name), message -> struct, repeated -> list, map -> map, ``google.protobuf.Timestamp``
-> timestamp.  Fields with presence (messages, ``optional``, oneof members, proto2) are null when
unset; other scalars read as their default, as a generated class's getters do.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa

__all__ = ["ProtoSchema", "ProtobufSchemaError", "compile_proto", "read_message_indexes"]


class ProtobufSchemaError(ValueError):
    """A registered Protobuf schema that does not compile."""


MAIN_FILE = "klogs_registered_schema.proto"


def _is_base64_descriptor(text: str) -> bytes | None:
    stripped = text.strip()
    if not stripped or "{" in stripped or ";" in stripped:
        return None
    try:
        return base64.b64decode(stripped, validate=True)
    except (binascii.Error, ValueError):
        return None


def compile_proto(schema: str, references: Mapping[str, str] = {}) -> tuple[bytes, str]:
    """(serialized ``FileDescriptorSet`` with every dependency, name of the main file) for a
    registered schema whose imports are ``references`` (import name -> schema text)."""
    from google.protobuf import descriptor_pb2

    texts = dict(references)
    raw = _is_base64_descriptor(schema)
    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    main = MAIN_FILE
    if raw is not None:
        fdp = descriptor_pb2.FileDescriptorProto()
        fdp.ParseFromString(raw)
        main = fdp.name or MAIN_FILE
        files[main] = fdp
        text_refs = {}
        for name, text in texts.items():
            ref_raw = _is_base64_descriptor(text)
            if ref_raw is not None:
                r = descriptor_pb2.FileDescriptorProto()
                r.ParseFromString(ref_raw)
                files[name] = r
            else:
                text_refs[name] = text
        if text_refs:
            fds = _protoc(text_refs, list(text_refs))
            for f in fds.file:
                files.setdefault(f.name, f)
    else:
        fds = _protoc({**texts, MAIN_FILE: schema}, [MAIN_FILE])
        for f in fds.file:
            files[f.name] = f
    _add_well_known(files)
    out = descriptor_pb2.FileDescriptorSet()
    for f in _topological(files):
        out.file.add().CopyFrom(f)
    return out.SerializeToString(), main


def _protoc(texts: Mapping[str, str], targets: Sequence[str]) -> Any:
    import grpc_tools
    from google.protobuf import descriptor_pb2
    from grpc_tools import protoc

    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    with tempfile.TemporaryDirectory(prefix="klogs-proto-") as tmp:
        for name, text in texts.items():
            path = os.path.join(tmp, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        out = os.path.join(tmp, "out.desc")
        import contextlib
        import io as _io

        err = _io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = protoc.main(
                [
                    "protoc",
                    f"-I{tmp}",
                    f"-I{include}",
                    "--include_imports",
                    f"--descriptor_set_out={out}",
                    *targets,
                ]
            )
        if rc != 0 or not os.path.exists(out):
            raise ProtobufSchemaError(f"protoc could not compile the schema (exit {rc})")
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            fds.ParseFromString(f.read())
        return fds


def _add_well_known(files: dict[str, Any]) -> None:
    """Dependencies of the google/protobuf/*.proto kind that were not supplied: from the
    protobuf runtime's own descriptors."""
    import importlib

    from google.protobuf import descriptor_pb2

    missing = True
    while missing:
        missing = False
        for f in list(files.values()):
            for dep in f.dependency:
                if dep in files:
                    continue
                if dep.startswith("google/protobuf/") and dep.endswith(".proto"):
                    mod = importlib.import_module(
                        "google.protobuf." + dep[len("google/protobuf/") : -6] + "_pb2"
                    )
                    fdp = descriptor_pb2.FileDescriptorProto()
                    mod.DESCRIPTOR.CopyToProto(fdp)
                    files[dep] = fdp
                    missing = True
                else:
                    raise ProtobufSchemaError(f"import {dep!r} is not among the schema's references")


def _topological(files: Mapping[str, Any]) -> list[Any]:
    done: dict[str, Any] = {}

    def visit(name: str) -> None:
        if name in done:
            return
        f = files[name]
        for dep in f.dependency:
            visit(dep)
        done[name] = f

    for n in files:
        visit(n)
    return list(done.values())


def read_message_indexes(buf: bytes | memoryview, pos: int) -> tuple[list[int], int]:
    """Confluent's message-index list at ``pos``: (indexes, position after it)."""

    def varint(p: int) -> tuple[int, int]:
        shift = result = 0
        while True:
            if p >= len(buf):
                raise ValueError("message indexes run past the end of the record")
            b = buf[p]
            p += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift > 63:
                raise ValueError("message index varint longer than 10 bytes")
        return (result >> 1) ^ -(result & 1), p

    count, pos = varint(pos)
    if count == 0:
        return [0], pos
    if count < 0 or count > len(buf):
        raise ValueError(f"bad message index count {count}")
    out = []
    for _ in range(count):
        v, pos = varint(pos)
        out.append(v)
    return out, pos


# --- descriptors -> Arrow --------------------------------------------------------------------------
Convert = Callable[[Any], Any]


def _scalar_type(fd: Any) -> pa.DataType:
    t = fd.type
    FD = type(fd)
    if t in (FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32):
        return pa.int32()
    if t in (FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64, FD.TYPE_UINT32, FD.TYPE_FIXED32):
        return pa.int64()
    if t in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
        return pa.decimal128(20, 0)
    if t == FD.TYPE_FLOAT:
        return pa.float32()
    if t == FD.TYPE_DOUBLE:
        return pa.float64()
    if t == FD.TYPE_BOOL:
        return pa.bool_()
    if t == FD.TYPE_STRING or t == FD.TYPE_ENUM:
        return pa.string()
    if t == FD.TYPE_BYTES:
        return pa.binary()
    raise ProtobufSchemaError(f"field {fd.full_name}: unsupported type {t}")


class _Mapper:
    def __init__(self) -> None:
        self.stack: list[str] = []

    def message(self, desc: Any) -> tuple[pa.DataType, Convert]:
        if desc.full_name == "google.protobuf.Timestamp":
            return pa.timestamp("us", tz="UTC"), _timestamp
        if desc.full_name in self.stack:
            raise ProtobufSchemaError(f"recursive message {desc.full_name} has no table type")
        self.stack.append(desc.full_name)
        fields, convs = [], []
        for fd in desc.fields:
            t, c = self.field(fd)
            fields.append(pa.field(fd.name, t))
            convs.append((fd, c))
        self.stack.pop()

        def conv(msg: Any) -> Any:
            out = {}
            for fd, c in convs:
                out[fd.name] = c(msg, fd)
            return out

        return pa.struct(fields), conv

    def field(self, fd: Any) -> tuple[pa.DataType, Callable[[Any, Any], Any]]:
        is_map = fd.message_type is not None and fd.message_type.GetOptions().map_entry
        if is_map:
            kf, vf = fd.message_type.fields_by_name["key"], fd.message_type.fields_by_name["value"]
            kt, kc = self.single(kf)
            vt, vc = self.single(vf)

            def map_conv(msg: Any, fd: Any) -> Any:
                return [(kc(k), vc(v)) for k, v in getattr(msg, fd.name).items()]

            return pa.map_(kt, vt), map_conv
        t, c = self.single(fd)
        if _repeated(fd):
            return pa.list_(t), lambda msg, fd: [c(v) for v in getattr(msg, fd.name)]
        if fd.has_presence:
            return t, lambda msg, fd: c(getattr(msg, fd.name)) if msg.HasField(fd.name) else None
        return t, lambda msg, fd: c(getattr(msg, fd.name))

    def single(self, fd: Any) -> tuple[pa.DataType, Convert]:
        FD = type(fd)
        if fd.type == FD.TYPE_MESSAGE or fd.type == FD.TYPE_GROUP:
            return self.message(fd.message_type)
        if fd.type == FD.TYPE_ENUM:
            values = {v.number: v.name for v in fd.enum_type.values}
            return pa.string(), lambda v: values.get(v, str(v))
        t = _scalar_type(fd)
        if pa.types.is_decimal(t):
            return t, Decimal
        return t, _identity


def _repeated(fd: Any) -> bool:
    """``FieldDescriptor.is_repeated`` (protobuf >= 6), ``label`` before it."""
    flag = getattr(fd, "is_repeated", None)
    return bool(flag) if flag is not None else fd.label == type(fd).LABEL_REPEATED


def _identity(v: Any) -> Any:
    return v


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def _timestamp(ts: Any) -> Any:
    return _EPOCH + _dt.timedelta(seconds=ts.seconds, microseconds=ts.nanos // 1000)


class ProtoSchema:
    """One compiled schema: its pool, messages by index path, Arrow types by message name."""

    def __init__(self, descriptor_set: bytes, main_file: str) -> None:
        from google.protobuf import descriptor_pb2, descriptor_pool

        fds = descriptor_pb2.FileDescriptorSet()
        fds.ParseFromString(descriptor_set)
        self.pool = descriptor_pool.DescriptorPool()
        for f in fds.file:
            self.pool.Add(f)
        self.file = self.pool.FindFileByName(main_file)
        self._classes: dict[str, Any] = {}
        self._types: dict[str, tuple[pa.DataType, Convert]] = {}

    def message_at(self, indexes: Sequence[int]) -> Any:
        """The message descriptor an index path names (ValueError when there is none)."""
        msgs = list(self.file.message_types_by_name.values())
        desc = None
        for i in indexes:
            if i < 0 or i >= len(msgs):
                raise ValueError(f"message index path {list(indexes)} names no message of the schema")
            desc = msgs[i]
            msgs = list(desc.nested_types)
        if desc is None:
            raise ValueError("empty message index path")
        return desc

    def message(self, full_name: str) -> Any:
        return self.pool.FindMessageTypeByName(full_name)

    def message_class(self, full_name: str) -> Any:
        cls = self._classes.get(full_name)
        if cls is None:
            from google.protobuf import message_factory

            cls = self._classes[full_name] = message_factory.GetMessageClass(self.message(full_name))
        return cls

    def arrow(self, full_name: str) -> tuple[pa.DataType, Convert]:
        """Arrow type of a message and the converter from a parsed message to a Python value."""
        got = self._types.get(full_name)
        if got is None:
            got = self._types[full_name] = _Mapper().message(self.message(full_name))
        return got
