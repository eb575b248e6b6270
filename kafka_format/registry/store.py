"""The Schema Registry's state as its own storage topic (``_schemas``) replays it.

The registry keeps everything in one compacted topic of JSON keys and values and rebuilds its
state by consuming it from the beginning (Confluent schema-registry,
``core/.../storage/KafkaStoreReaderThread.java`` ``doWork``, ``KafkaStoreMessageHandler.java``,
``InMemoryCache.java``, keys/values in ``SchemaKey``/``SchemaValue``/``ConfigKey``/``ModeKey``/
``DeleteSubjectKey``/``ClearSubjectKey``/``NoopKey``, parsed by
``serialization/SchemaRegistrySerializer.java``).  :class:`SchemaStore` applies the same rules:

* keys: ``{"keytype": "SCHEMA", "subject", "version", "magic"}`` (magic 0 or 1, else the record is
  skipped as the registry skips keys it cannot deserialize), ``CONFIG``, ``MODE``, ``NOOP``,
  ``CONTEXT``, ``ASSOC``, ``DELETE_SUBJECT``, ``CLEAR_SUBJECT``; a key that is not JSON or names
  another key type is skipped;
* ``SCHEMA`` values ``{"subject","version","id","schemaType","references","schema","deleted",...}``;
  ``schemaType`` absent means AVRO; ``"deleted": true`` is a soft delete (the version stays, its id
  still resolves); a null value (tombstone) is a hard delete of that subject-version: the id
  resolves while another subject-version still carries it; a subject-version registered again
  under another id leaves the old id pointing at it (``InMemoryCache.schemaRegistered`` never
  unmaps it), so the old id now resolves to the new schema;
* a ``SCHEMA`` whose id is already held by a different schema text is ignored (the registry's
  "duplicate ID" validation);
* ``DELETE_SUBJECT`` ``{"subject","version"}`` soft-deletes versions 1..version;
  ``CLEAR_SUBJECT`` ``{"subject"}`` removes the soft-deleted versions of the subject (of every
  subject of a context for ``:.ctx:``, of every subject for ``:.__GLOBAL:``);
* ``CONFIG``/``MODE`` values are kept per subject (null subject = global); tombstones of non-schema
  keys are ignored, as the registry ignores them.

Schema ids are per context: a subject ``:.ctx:name`` lives in context ``.ctx``, an unqualified one
in the default context ``.``.  The wire format's ids are looked up in the default context unless
told otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "AVRO",
    "DEFAULT_CONTEXT",
    "JSON",
    "PROTOBUF",
    "SCHEMA_TYPES",
    "RegisteredSchema",
    "SchemaReference",
    "SchemaStore",
    "StoreEvent",
    "context_of",
]

AVRO = "AVRO"
PROTOBUF = "PROTOBUF"
JSON = "JSON"
SCHEMA_TYPES = (AVRO, PROTOBUF, JSON)
DEFAULT_CONTEXT = "."
GLOBAL_CONTEXT = ".__GLOBAL"  # QualifiedSubject.GLOBAL_CONTEXT_NAME
_KEY_TYPES = ("ASSOC", "CONFIG", "SCHEMA", "MODE", "NOOP", "DELETE_SUBJECT", "CLEAR_SUBJECT", "CONTEXT")


def context_of(subject: str) -> str:
    """The context of a (possibly qualified) subject: ``:.ctx:name`` -> ``.ctx``, else ``.``
    (``QualifiedSubject``)."""
    if subject.startswith(":.") and ":" in subject[2:]:
        return subject[1 : subject.index(":", 2)]
    return DEFAULT_CONTEXT


def _clears(target: str, subject: str) -> bool:
    """Whether a ``CLEAR_SUBJECT`` of ``target`` covers ``subject`` (``matchingSubjectPredicate``:
    the subject itself; a context without a subject, ``:.ctx:``, covers the context's subjects,
    ``:.__GLOBAL:`` every subject)."""
    if target == subject:
        return True
    if not (target.startswith(":.") and target.endswith(":") and target.count(":") == 2):
        return False
    context = target[1:-1]
    return context == GLOBAL_CONTEXT or context_of(subject) == context


@dataclass(frozen=True)
class SchemaReference:
    """A named reference of a schema to a version of another subject (``SchemaReference``)."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class RegisteredSchema:
    """One subject-version as the registry holds it."""

    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = AVRO
    references: tuple[SchemaReference, ...] = ()
    deleted: bool = False
    offset: int | None = None  # where it was last written in _schemas (None: other sources)

    @property
    def context(self) -> str:
        return context_of(self.subject)

    def to_json(self) -> dict[str, Any]:
        """The registry REST API's view of a subject-version (plus ``deleted``)."""
        return {
            "subject": self.subject,
            "version": self.version,
            "id": self.id,
            "schemaType": self.schema_type,
            "references": [
                {"name": r.name, "subject": r.subject, "version": r.version} for r in self.references
            ],
            "deleted": self.deleted,
        }


@dataclass(frozen=True)
class StoreEvent:
    """A record of the storage topic that the replay skipped, and why (what the registry logs)."""

    offset: int | None
    reason: str


def _as_int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


@dataclass
class SchemaStore:
    """Subjects, versions and ids replayed from the registry's storage records, in offset order."""

    schemas: dict[tuple[str, int], RegisteredSchema] = field(default_factory=dict)
    configs: dict[str | None, dict[str, Any]] = field(default_factory=dict)
    modes: dict[str | None, dict[str, Any]] = field(default_factory=dict)
    skipped: list[StoreEvent] = field(default_factory=list)
    records: int = 0
    # (context, id) -> {subject: version}: InMemoryCache.guidToSubjectVersions
    _ids: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)

    # --- replay -------------------------------------------------------------------------------
    def apply(self, key: bytes | None, value: bytes | None, offset: int | None = None) -> None:
        """Apply one record of the storage topic (its key and value bytes)."""
        self.records += 1
        k = self._json(key, offset, "key")
        if not isinstance(k, dict) or k.get("keytype") not in _KEY_TYPES:
            if k is not None:
                self.skipped.append(StoreEvent(offset, "key is not a registry key (keytype)"))
            return
        keytype = k["keytype"]
        if keytype == "NOOP":
            return
        if keytype == "SCHEMA":
            self._apply_schema(k, value, offset)
            return
        if value is None:
            return  # non-schema tombstones are ignored
        v = self._json(value, offset, "value")
        if not isinstance(v, dict):
            return
        subject = k.get("subject")
        if keytype == "CONFIG":
            self.configs[subject] = v
        elif keytype == "MODE":
            self.modes[subject] = v
        elif keytype == "DELETE_SUBJECT":
            upto = _as_int(v.get("version"))
            name = v.get("subject") if isinstance(v.get("subject"), str) else subject
            if upto is not None and isinstance(name, str):
                for version in range(1, upto + 1):
                    s = self.schemas.get((name, version))
                    if s is not None and not s.deleted:
                        self._put(replace(s, deleted=True))
        elif keytype == "CLEAR_SUBJECT":
            name = v.get("subject") if isinstance(v.get("subject"), str) else subject
            if isinstance(name, str):
                for sk in [sk for sk, s in self.schemas.items() if _clears(name, sk[0]) and s.deleted]:
                    self._drop(self.schemas.pop(sk))

    def _json(self, raw: bytes | None, offset: int | None, what: str) -> Any:
        if raw is None:
            return None
        try:
            return json.loads(bytes(raw))
        except (ValueError, UnicodeDecodeError):
            self.skipped.append(StoreEvent(offset, f"{what} is not JSON"))
            return None

    def _apply_schema(self, k: dict[str, Any], value: bytes | None, offset: int | None) -> None:
        subject, version, magic = k.get("subject"), _as_int(k.get("version")), k.get("magic")
        if not isinstance(subject, str) or version is None or magic not in (0, 1):
            self.skipped.append(
                StoreEvent(offset, "SCHEMA key without subject/version or with magic not 0/1")
            )
            return
        if value is None:  # hard delete
            old = self.schemas.pop((subject, version), None)
            if old is not None:
                self._drop(old)
            return
        v = self._json(value, offset, "value")
        if not isinstance(v, dict):
            return
        sid, text = _as_int(v.get("id")), v.get("schema")
        if sid is None or not isinstance(text, str):
            self.skipped.append(StoreEvent(offset, "SCHEMA value without id or schema"))
            return
        stype = v.get("schemaType") or AVRO
        references: list[SchemaReference] = []
        for r in v.get("references") or []:
            ref_version = _as_int(r.get("version")) if isinstance(r, dict) else None
            if ref_version is not None:
                references.append(SchemaReference(str(r.get("name")), str(r.get("subject")), ref_version))
        refs = tuple(references)
        new = RegisteredSchema(
            subject=subject,
            version=version,
            id=sid,
            schema=text,
            schema_type=str(stype),
            references=refs,
            deleted=bool(v.get("deleted", False)),
            offset=offset,
        )
        holder = self._ids.get((new.context, sid))
        if holder:
            other = next(iter(holder.items()))
            old = self.schemas.get(other)
            if old is not None and old.schema != text:
                self.skipped.append(
                    StoreEvent(
                        offset,
                        f"schema id {sid} already belongs to another schema "
                        f"({old.subject} version {old.version}); ignored",
                    )
                )
                return
        self._put(new)  # a previous id of this subject-version keeps pointing here, as in InMemoryCache

    def _put(self, s: RegisteredSchema) -> None:
        self.schemas[(s.subject, s.version)] = s
        self._ids.setdefault((s.context, s.id), {})[s.subject] = s.version

    def _drop(self, s: RegisteredSchema) -> None:
        holders = self._ids.get((s.context, s.id))
        if holders is not None and holders.get(s.subject) == s.version:
            del holders[s.subject]
            if not holders:
                del self._ids[(s.context, s.id)]

    # --- lookups ------------------------------------------------------------------------------
    def by_id(self, schema_id: int, context: str = DEFAULT_CONTEXT) -> RegisteredSchema | None:
        """The schema an id stands for (soft-deleted versions included, as ``GET /schemas/ids/N``)."""
        holders = self._ids.get((context, schema_id))
        if not holders:
            return None
        subject, version = next(iter(holders.items()))
        return self.schemas.get((subject, version))

    def version(self, subject: str, version: int) -> RegisteredSchema | None:
        """One subject-version (soft-deleted ones included)."""
        return self.schemas.get((subject, version))

    def latest(self, subject: str) -> RegisteredSchema | None:
        """The highest version of a subject that is not deleted (``GET .../versions/latest``)."""
        live = [s for (subj, _), s in self.schemas.items() if subj == subject and not s.deleted]
        return max(live, key=lambda s: s.version) if live else None

    def subjects(self, *, include_deleted: bool = False) -> list[str]:
        """Subjects with at least one live version (or any version with ``include_deleted``), sorted."""
        return sorted({s.subject for s in self.schemas.values() if include_deleted or not s.deleted})

    def versions(self, subject: str, *, include_deleted: bool = False) -> list[RegisteredSchema]:
        """A subject's versions in order."""
        return sorted(
            (
                s
                for (subj, _), s in self.schemas.items()
                if subj == subject and (include_deleted or not s.deleted)
            ),
            key=lambda s: s.version,
        )

    def ids(self, context: str = DEFAULT_CONTEXT) -> list[int]:
        """Every id that resolves in ``context``, sorted."""
        return sorted(i for (ctx, i) in self._ids if ctx == context)

    def __iter__(self) -> Iterator[RegisteredSchema]:
        return iter(sorted(self.schemas.values(), key=lambda s: (s.subject, s.version)))

    @classmethod
    def from_schemas(cls, schemas: Iterable[RegisteredSchema]) -> SchemaStore:
        """A store holding the given subject-versions (directory and test sources)."""
        store = cls()
        for s in schemas:
            store._put(s)
        return store
