"""Typed keys and values: a column plan made once on the driver, decoded batch by batch anywhere.

:func:`plan_column` fixes the table type of a ``key`` or ``value`` column: the reader schema given,
or else the latest live version of the subject (default: ``<topic>-key`` / ``<topic>-value``,
Confluent's ``TopicNameStrategy``).  ``auto`` takes the subject's registered type and leaves the
column binary when there is no such subject.  :class:`ColumnDecoder` decodes an Arrow binary
column with the plan: headers read column-wise (:mod:`kafka_format.registry.wire`), rows grouped by
schema id, each id's writer schema looked up and parsed once per process, every payload decoded
into the table type (Avro resolution, Protobuf by message name, JSON fitted to the declared types).
Rows that do not decode are returned with their reason; the caller applies the read mode.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from kafka_format.common.errors import KafkaFormatError
from kafka_format.common.extensions import reference_forced
from kafka_format.records.file_records import MODES  # the read modes, re-exported (__all__)
from kafka_format.registry.store import AVRO, DEFAULT_CONTEXT, JSON, PROTOBUF, RegisteredSchema

__all__ = [
    "AS_TYPES",
    "MODES",
    "TYPED_FORMATS",
    "ColumnDecoder",
    "ColumnPlan",
    "DecodeProblem",
    "SchemaBundle",
    "TypedDecodeError",
    "TypedPlan",
    "bundle_of",
    "plan_column",
    "plan_columns",
]

TYPED_FORMATS = {"avro": AVRO, "protobuf": PROTOBUF, "json-schema": JSON}
AS_TYPES = (*TYPED_FORMATS, "auto")


class TypedDecodeError(KafkaFormatError):
    """A typed column cannot be planned (no subject, unusable schema) or a record does not decode."""

    code = "SCHEMA_DECODE"


@dataclass(frozen=True)
class SchemaBundle:
    """A schema with every schema it references (name -> bundle), resolved from a source."""

    id: int
    schema_type: str
    schema: str
    references: tuple[tuple[str, SchemaBundle], ...] = ()

    def flat_references(self) -> dict[str, str]:
        """Every transitively referenced schema, name -> text, dependencies first."""
        out: dict[str, str] = {}
        for name, ref in self.references:
            for n, t in ref.flat_references().items():
                out.setdefault(n, t)
            out.setdefault(name, ref.schema)
        return out


def bundle_of(s: RegisteredSchema, source: Any, depth: int = 0) -> SchemaBundle:
    """``s`` with its references looked up in ``source`` (recursively)."""
    if depth > 32:
        raise TypedDecodeError("schema references nest too deep", found=f"{s.subject} version {s.version}")
    refs = []
    for r in s.references:
        target = source.version(r.subject, r.version)
        if target is None:
            raise TypedDecodeError(
                "a schema reference does not resolve",
                path=f"{s.subject} version {s.version}",
                expected=f"subject {r.subject} version {r.version} ({r.name})",
                found="nothing",
            )
        refs.append((r.name, bundle_of(target, source, depth + 1)))
    return SchemaBundle(s.id, s.schema_type, s.schema, tuple(refs))


@dataclass(frozen=True)
class ColumnPlan:
    """How one column is decoded: format, table (reader) schema and type, where writers come from."""

    column: str
    schema_type: str
    reader: SchemaBundle
    arrow_type: pa.DataType
    source: Any
    subject: str | None = None
    message: str | None = None  # Protobuf: full name of the table's message
    context: str = DEFAULT_CONTEXT
    token: str = field(default_factory=lambda: uuid.uuid4().hex)


def plan_column(
    source: Any,
    column: str,
    as_type: str,
    *,
    topic: str | None = None,
    subject: str | None = None,
    reader_schema: str | None = None,
    message: str | None = None,
    context: str = DEFAULT_CONTEXT,
) -> ColumnPlan | None:
    """The plan of ``column`` (``key``/``value``) decoded ``as_type`` (``avro``, ``protobuf``,
    ``json-schema`` or ``auto``); None for ``auto`` without a subject.  Raises
    :class:`TypedDecodeError` naming the subject when there is no table schema."""
    if as_type not in AS_TYPES:
        raise ValueError(f"{column}: expected one of {list(AS_TYPES)}, got {as_type!r}")
    if subject is None and topic is not None:
        subject = f"{topic}-{column}"
    latest = source.latest(subject) if subject is not None else None
    if as_type == "auto":
        if latest is None and reader_schema is None:
            return None
        stype = latest.schema_type if latest is not None else AVRO
    else:
        stype = TYPED_FORMATS[as_type]
    if reader_schema is not None:
        reader = SchemaBundle(-1, stype, reader_schema)
    elif latest is not None:
        if latest.schema_type != stype:
            raise TypedDecodeError(
                f"subject {subject} holds {latest.schema_type} schemas",
                path=subject,
                expected=f"{stype} (--{column}-as {as_type})",
                found=latest.schema_type,
            )
        reader = bundle_of(latest, source)
    else:
        raise TypedDecodeError(
            f"no schema for the {column} column",
            path=subject or "<no subject>",
            expected=f"a live version of subject {subject} or a reader schema",
            found="no such subject" if subject else "neither a topic nor a subject",
        )
    arrow_type, message = _table_type(reader, message)
    return ColumnPlan(
        column=column,
        schema_type=stype,
        reader=reader,
        arrow_type=arrow_type,
        source=source,
        subject=subject,
        message=message,
        context=context,
    )


@dataclass
class TypedPlan:
    """The typed columns of one read: a plan per typed column, the read mode for rows that do not
    decode, and the ``auto`` columns left binary (no subject)."""

    plans: dict[str, ColumnPlan]
    mode: str = "FAILFAST"
    untyped: tuple[str, ...] = ()

    def report(self, counts: Mapping[str, int]) -> dict[str, Any]:
        """A JSON-ready summary: columns, subjects, table types, mode, rows that did not decode."""
        return {
            "columns": [describe(p) for p in self.plans.values()],
            "untyped": list(self.untyped),
            "mode": self.mode,
            "decodeErrors": {c: int(counts.get(c, 0)) for c in self.plans},
        }


def plan_columns(
    source: Any,
    *,
    key_as: str = "binary",
    value_as: str = "binary",
    topic: str | None = None,
    key_subject: str | None = None,
    value_subject: str | None = None,
    key_schema: str | None = None,
    value_schema: str | None = None,
    key_message: str | None = None,
    value_message: str | None = None,
    mode: str = "FAILFAST",
) -> TypedPlan:
    """Plan the typed columns (no data read).  ``source``: a schema source
    (:mod:`kafka_format.registry.sources`); ``*_as`` other than the typed formats leave the column
    alone; ``*_schema``: a reader schema text (the table schema; default: the latest version of
    ``*_subject``, default ``<topic>-key``/``<topic>-value``); ``*_message``: the Protobuf message
    of the table (default: the schema's first message)."""
    mode = mode.upper()
    if mode not in MODES:
        raise ValueError(f"mode must be one of {list(MODES)}, got {mode!r}")
    plans: dict[str, ColumnPlan] = {}
    untyped: list[str] = []
    for column, as_type, subject, schema, message in (
        ("key", key_as, key_subject, key_schema, key_message),
        ("value", value_as, value_subject, value_schema, value_message),
    ):
        if as_type not in AS_TYPES:
            continue
        plan = plan_column(
            source, column, as_type, topic=topic, subject=subject, reader_schema=schema, message=message
        )
        if plan is None:
            untyped.append(column)
        else:
            plans[column] = plan
    return TypedPlan(plans, mode, tuple(untyped))


def _table_type(reader: SchemaBundle, message: str | None) -> tuple[pa.DataType, str | None]:
    try:
        if reader.schema_type == AVRO:
            from kafka_format.registry.avro import avro_arrow_type, parse_avro

            return avro_arrow_type(*parse_avro(reader.schema, list(reader.flat_references().values())))[
                0
            ], None
        if reader.schema_type == PROTOBUF:
            proto = _compiled_proto(reader)
            name = message or proto.message_at([0]).full_name
            return proto.arrow(name)[0], name
        from kafka_format.registry.jsonschema import json_arrow_type

        return json_arrow_type(reader.schema, reader.flat_references())[0], None
    except TypedDecodeError:
        raise
    except Exception as exc:  # noqa: BLE001 - any parse failure of a registered schema
        raise TypedDecodeError(
            "the table schema cannot be used",
            expected=f"a valid {reader.schema_type} schema",
            found=f"{type(exc).__name__}: {exc}",
        ) from None


def _compiled_proto(b: SchemaBundle) -> Any:
    from kafka_format.registry.protobuf import ProtoSchema, compile_proto

    fds, main = compile_proto(b.schema, b.flat_references())
    return ProtoSchema(fds, main)


@dataclass(frozen=True)
class DecodeProblem:
    """A row that did not decode."""

    row: int
    reason: str
    schema_id: int | None


SHORT = "shorter than the 5-byte wire-format header"
_OBJECT_AT = re.compile(r" from <[\w.]+ object at 0x[0-9a-f]+>")  # fastavro names its stream object
_DECODERS = threading.local()  # .by_token: this thread's decoders (ColumnDecoder.for_plan)
# Plans whose decoders a thread keeps (a run has one or two: key and value; a reused Spark worker
# serves many runs, each with plans of their own tokens).
PLANS_PER_THREAD = 8
WRITERS_AHEAD = 32  # a subject's latest writers compiled before the first batch (ColumnDecoder._learn_subject)


class ColumnDecoder:
    """Decodes Arrow binary columns with one :class:`ColumnPlan` (writer schemas cached per id)."""

    def __init__(self, plan: ColumnPlan, *, compiled: bool = True) -> None:
        self.plan = plan
        self.compiled = compiled and not reference_forced()   # KAFKA_FORMAT_DECODER=reference: the reference decoders alone
        self.rows = {"compiled": 0, "reference": 0}  # rows decoded by each path so far
        self._codecs: dict[int, Any] = {}
        self._reader: Any = None
        self._reader_named: dict[str, Any] = {}
        self._convert: Any = None
        self._fast: Any = None  # the compiled decoder of the table schema (*_columns.py), when there is one
        self._programs: list[Any] = []  # compiled writers, and their index per schema id
        self._slots: dict[int, int] = {}

    @classmethod
    def for_plan(cls, plan: ColumnPlan) -> ColumnDecoder:
        """This thread's decoder of a plan (schemas parsed once per thread, not per batch): a
        decoder's caches, compiled programs and row counts change as it decodes, so the threads
        of the local engine's tasks each have their own."""
        decoders: dict[str, ColumnDecoder] | None = getattr(_DECODERS, "by_token", None)
        if decoders is None:
            decoders = _DECODERS.by_token = {}
        dec = decoders.get(plan.token)
        if dec is None:
            while len(decoders) >= PLANS_PER_THREAD:      # a long-lived worker: earlier runs' plans go
                del decoders[next(iter(decoders))]
            dec = decoders[plan.token] = cls(plan)
        return dec

    @property
    def compiled_columns(self) -> bool:
        """Whether this plan's values go through a compiled column decoder (which releases the GIL),
        not the reference decoders alone (``KAFKA_FORMAT_DECODER=reference``, or a table type that
        does not lay out)."""
        if self._reader is None:
            self._setup_reader()
        return self._fast is not None

    # -- per id ---------------------------------------------------------------------------------
    def _setup_reader(self) -> None:
        p = self.plan
        if p.schema_type == AVRO:
            from kafka_format.registry.avro import avro_arrow_type, parse_avro
            from kafka_format.registry.avro_columns import compile_table

            self._reader, named = parse_avro(p.reader.schema, list(p.reader.flat_references().values()))
            self._reader_named = named
            self._convert = avro_arrow_type(self._reader, named)[1]
            if self.compiled:
                self._fast = compile_table(self._reader, named, p.arrow_type)
        elif p.schema_type == PROTOBUF:
            self._reader = _compiled_proto(p.reader)
            self._convert = self._reader.arrow(p.message)[1]
            if self.compiled:
                from kafka_format.registry.proto_columns import compile_table as compile_proto_table

                self._fast = compile_proto_table(self._reader, p.message or "", p.arrow_type)
        else:
            from kafka_format.registry.jsonschema import JsonCodec, json_shape

            shape = json_shape(p.reader.schema, p.reader.flat_references())
            self._reader = JsonCodec(shape.convert)
            if self.compiled:
                from kafka_format.registry.json_columns import compile_table as compile_json_table

                self._fast = compile_json_table(shape, p.arrow_type)

    def _codec(self, schema_id: int) -> Any:
        """A decoder of one writer id, or a str saying why there is none (cached either way)."""
        got = self._codecs.get(schema_id)
        if got is not None:
            return got
        if self._reader is None:
            self._setup_reader()
        p = self.plan
        try:
            found = p.source.by_id(schema_id, p.context)
        except KafkaFormatError as exc:
            found = None
            got = f"schema id {schema_id}: {exc.reason}"
        if found is None:
            got = got or f"unknown schema id {schema_id}"
        elif found.schema_type != p.schema_type:
            got = f"schema id {schema_id} is {found.schema_type}, the column is {p.schema_type}"
        else:
            try:
                got = self._make_codec(bundle_of(found, p.source))
            except Exception as exc:  # noqa: BLE001 - a writer schema that does not parse
                got = f"schema id {schema_id} cannot be used: {type(exc).__name__}: {exc}"
        self._codecs[schema_id] = got
        return got

    def _make_codec(self, writer: SchemaBundle) -> Any:
        p = self.plan
        if p.schema_type == AVRO:
            from kafka_format.registry.avro import AvroCodec, parse_avro

            same = writer.schema == p.reader.schema and writer.references == p.reader.references
            w, named = (
                (self._reader, self._reader_named)
                if same
                else parse_avro(writer.schema, list(writer.flat_references().values()))
            )
            program = None
            if self._fast is not None:
                try:
                    program = self._fast.program(w, named, same)
                except Exception:  # noqa: BLE001 - a writer the compiler does not take: fastavro reads it
                    program = None
            return AvroCodec(w, None if same else self._reader, program)
        if p.schema_type == PROTOBUF:
            same = writer.schema == p.reader.schema
            written = self._reader if same else _compiled_proto(writer)
            program = self._fast.program(written) if self._fast is not None else None
            return _ProtoCodec(written, self._reader, p.message or "", program)
        return _JsonWriter(self._reader, self._fast.program() if self._fast is not None else None)

    # -- batches --------------------------------------------------------------------------------
    def decode(self, arr: pa.Array) -> tuple[pa.Array, list[DecodeProblem]]:
        """Typed values of a binary column (null where the input is null or the row failed) and
        the rows that failed.  The column goes through the compiled column decoder of its format
        when the table type lays out (:mod:`~kafka_format.registry.avro_columns`,
        :mod:`~kafka_format.registry.proto_columns`, :mod:`~kafka_format.registry.json_columns`:
        wire header, schema id and payload read in one C call per batch); the rows it does not
        take, and every row of a table without a layout, through the reference decoders."""
        if self._reader is None:
            self._setup_reader()
            self._learn_subject()
        if self._fast is not None:
            return self._decode_compiled(arr)
        from kafka_format.registry.wire import wire_headers

        h = wire_headers(arr)
        n = len(arr)
        problems: list[DecodeProblem] = []
        for row in np.flatnonzero(h.short):
            problems.append(DecodeProblem(int(row), SHORT, None))
        for row in np.flatnonzero(h.bad_magic):
            problems.append(DecodeProblem(int(row), f"magic byte {h.data[int(h.start[row]) - 5]} is not 0", None))
        slow: list[np.ndarray] = []
        ok_rows = np.flatnonzero(h.ok)
        if ok_rows.size:
            ids = h.ids[ok_rows]
            order = np.argsort(ids, kind="stable")
            bounds = np.flatnonzero(np.diff(ids[order])) + 1
            for group in np.split(ok_rows[order], bounds):
                sid = int(h.ids[group[0]])
                codec = self._codec(sid)
                if isinstance(codec, str):
                    problems.extend(DecodeProblem(int(r), codec, sid) for r in group)
                else:
                    slow.append(group)
        rows = np.sort(np.concatenate(slow)) if slow else np.zeros(0, dtype=np.int64)
        payloads = [h.data[a:b] for a, b in zip(h.start[rows].tolist(), h.end[rows].tolist())]
        patch = self._reference(rows, payloads, h.ids[rows].tolist(), problems)
        index = np.full(n, rows.size, dtype=np.int64)  # rows without a value: the null at the end
        index[rows] = np.arange(rows.size)
        typed = pa.concat_arrays([patch, pa.nulls(1, self.plan.arrow_type)]).take(pa.array(index))
        return typed, sorted(problems, key=lambda p: p.row)

    def _decode_compiled(self, arr: pa.Array) -> tuple[pa.Array, list[DecodeProblem]]:
        from kafka_format.registry import columns as ac

        typed, status, ids = self._fast.decode(arr, self._programs, self._slots)
        unseen = np.unique(ids[(status == ac.ST_NO_PROGRAM)])
        learned = [self._learn(int(sid)) for sid in unseen.tolist() if int(sid) not in self._codecs]
        if any(learned):
            typed, status, ids = self._fast.decode(arr, self._programs, self._slots)  # new writers compiled
        problems: list[DecodeProblem] = []
        slow: list[int] = []
        for r in np.flatnonzero(status > ac.ST_NULL).tolist():
            st, sid = int(status[r]), int(ids[r])
            if st == ac.ST_SHORT:
                problems.append(DecodeProblem(r, SHORT, None))
            elif st == ac.ST_BAD_MAGIC:
                problems.append(DecodeProblem(r, f"magic byte {arr[r].as_py()[0]} is not 0", None))
            elif st == ac.ST_NO_PROGRAM and isinstance(self._codecs[sid], str):
                problems.append(DecodeProblem(r, self._codecs[sid], sid))
            elif st in (ac.ST_NO_PROGRAM, ac.ST_FAILED):
                slow.append(r)
            else:
                raise ValueError(f"row {r} of the binary column has offsets outside its data")
        self.rows["compiled"] += int(np.count_nonzero(status == ac.ST_OK))
        if slow:
            rows = np.asarray(slow, dtype=np.int64)
            patch = self._reference(rows, [arr[r].as_py()[5:] for r in slow], [int(ids[r]) for r in slow], problems)
            index = np.arange(len(arr), dtype=np.int64)
            index[rows] = len(arr) + np.arange(rows.size)
            typed = pa.concat_arrays([typed, patch]).take(pa.array(index))
        return typed, sorted(problems, key=lambda p: p.row)

    def _learn_subject(self) -> None:
        """Compile the writers of the plan's subject ahead (its :data:`WRITERS_AHEAD` latest versions,
        soft-deleted ones too: old records use them), when the source lists them without a round
        trip (a :class:`~kafka_format.registry.store.SchemaStore`).  A batch then decodes once, not
        again from its first row of a writer not seen yet."""
        p = self.plan
        versions = getattr(p.source, "versions", None)
        if self._fast is None or p.subject is None or versions is None:
            return
        for s in versions(p.subject, include_deleted=True)[-WRITERS_AHEAD:]:
            if s.id not in self._codecs:
                self._learn(s.id)

    def _learn(self, sid: int) -> bool:
        """Look up and compile writer ``sid``; True when it has a compiled program now."""
        codec = self._codec(sid)
        program = getattr(codec, "program", None)
        if isinstance(codec, str) or program is None:
            return False
        self._slots[sid] = len(self._programs)
        self._programs.append(program)
        return True

    def _reference(
        self, rows: np.ndarray, payloads: Sequence[Any], sids: Sequence[int], problems: list[DecodeProblem]
    ) -> pa.Array:
        """The values of ``rows`` (their payloads after the wire header, their schema ids) by the
        reference decoders, as an array of len(rows) (null where a row fails; its problem appended)."""
        values: list[Any] = [None] * rows.size
        convert = self._convert
        self.rows["reference"] += int(rows.size)
        for i, (r, payload, sid) in enumerate(zip(rows.tolist(), payloads, sids)):
            try:
                v = self._codecs[sid].decode(payload)
                values[i] = convert(v) if convert is not None else v
            except Exception as exc:  # noqa: BLE001 - any payload that does not decode
                reason = _OBJECT_AT.sub("", f"{type(exc).__name__}: {exc}")
                problems.append(DecodeProblem(r, f"payload does not decode with schema id {sid}: {reason}"[:500], sid))
        return self._to_arrow(values, rows, problems, sids)

    def _to_arrow(
        self, values: list[Any], rows: np.ndarray, problems: list[DecodeProblem], sids: Sequence[int]
    ) -> pa.Array:
        t = self.plan.arrow_type
        try:
            return pa.array(values, type=t)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            pass
        for i, v in enumerate(values):  # find the rows Arrow refuses
            if v is None:
                continue
            try:
                pa.array([v], type=t)
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
                values[i] = None
                r = int(rows[i])
                problems.append(DecodeProblem(r, f"value does not fit the table type: {exc}"[:500], int(sids[i])))
        return pa.array(values, type=t)


class _ProtoCodec:
    """Writer file (for the message-index path) + reader class of the table's message."""

    def __init__(self, writer: Any, reader: Any, table_message: str, program: Any = None) -> None:
        self.writer = writer
        self.program = program  # proto_columns.Program of this writer, when compiled
        self.reader = reader
        self.table_message = table_message
        self.cls = reader.message_class(table_message)
        self._names: dict[tuple[int, ...], str] = {}

    def decode(self, payload: memoryview) -> Any:
        from kafka_format.registry.protobuf import read_message_indexes

        if len(payload) and payload[0] == 0:  # the usual single 0 byte: the file's first message
            path, pos = [0], 1
        else:
            path, pos = read_message_indexes(payload, 0)
        key = tuple(path)
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = self.writer.message_at(path).full_name
        if name != self.table_message:
            raise ValueError(
                f"message {name} (indexes {path}) is not the table's message {self.table_message}"
            )
        msg = self.cls.FromString(bytes(payload[pos:]))
        return msg


class _JsonWriter:
    """A JSON Schema writer id: payloads read by the table schema (the reference codec), and the
    table's compiled program when there is one."""

    def __init__(self, codec: Any, program: Any) -> None:
        self.decode = codec.decode
        self.program = program


def describe(plan: ColumnPlan) -> dict[str, Any]:
    """A JSON-ready summary of a plan (what a job reports)."""
    return {
        "column": plan.column,
        "schemaType": plan.schema_type,
        "subject": plan.subject,
        "readerSchemaId": plan.reader.id if plan.reader.id >= 0 else None,
        "message": plan.message,
        "type": str(plan.arrow_type),
    }


def plans_json(plans: Sequence[ColumnPlan]) -> str:
    return json.dumps([describe(p) for p in plans])
