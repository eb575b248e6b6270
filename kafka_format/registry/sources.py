"""Where schemas come from: the ``_schemas`` topic in log dirs, a registry URL, a directory of files.

Every source answers the same three questions (:class:`SchemaSource`): the schema an id stands for,
one subject-version (to resolve references), and the latest live version of a subject.

* :func:`schemas_from_log_dirs` -- the registry's storage topic found in the log dirs, replayed as
  the registry replays it (:mod:`kafka_format.registry.store`).  The topic is read through the
  format library: the longest replica of each partition, records at or above the log start
  offset, control records skipped (what the registry's consumer sees).
* :class:`RegistryUrlSource` -- a running registry's REST API: ``GET /schemas/ids/{id}``,
  ``GET /subjects/{subject}/versions/{version}`` (``latest`` included); answers are cached;
  ``user:password@`` in the URL becomes HTTP basic auth and never appears in errors.
* :func:`schemas_from_directory` -- files named ``<id>.avsc`` (Avro), ``<id>.proto`` (Protobuf)
  or ``<id>.json`` (JSON Schema), each registered under the subject ``<id>`` version 1, or a
  directory holding ``<subject>/<version>-<id>.<ext>`` files; a Protobuf import naming another
  file (flat layout) or subject (nested layout) of the directory becomes a reference.
"""

from __future__ import annotations

import base64
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any, Protocol

from kafka_format.common.errors import KafkaFormatError
from kafka_format.registry.store import (
    AVRO,
    DEFAULT_CONTEXT,
    JSON,
    PROTOBUF,
    RegisteredSchema,
    SchemaReference,
    SchemaStore,
)

__all__ = [
    "SCHEMAS_TOPIC",
    "RegistryUrlSource",
    "SchemaSource",
    "SchemaSourceError",
    "open_schema_source",
    "schemas_from_directory",
    "schemas_from_log_dirs",
]

SCHEMAS_TOPIC = "_schemas"  # the registry's kafkastore.topic default
_EXTENSIONS = {".avsc": AVRO, ".proto": PROTOBUF, ".json": JSON}


class SchemaSourceError(KafkaFormatError):
    """A schema source could not be read."""

    code = "SCHEMA_SOURCE"


class SchemaSource(Protocol):
    """What typed decoding asks of a source of schemas."""

    def by_id(self, schema_id: int, context: str = DEFAULT_CONTEXT) -> RegisteredSchema | None: ...

    def version(self, subject: str, version: int) -> RegisteredSchema | None: ...

    def latest(self, subject: str) -> RegisteredSchema | None: ...


# --- _schemas in log dirs ------------------------------------------------------------------------
def schemas_from_log_dirs(paths: str | Sequence[str], *, topic: str = SCHEMAS_TOPIC) -> SchemaStore:
    """The registry state held by ``topic`` in the log dirs under ``paths`` (an empty store when
    the topic is not there).  Raises :class:`~kafka_format.common.errors.KafkaFormatError` for bad bytes."""
    from kafka_format.read.planning import longest_replicas
    from kafka_format.records.file_records import decode_segment
    from kafka_format.storage.logdir import open_log_dirs

    dirs = open_log_dirs([paths] if isinstance(paths, str) else list(paths))
    replicas = [p for p in dirs.all_partitions() if p.topic == topic and p.kind == "live"]
    store = SchemaStore()
    for part in sorted(longest_replicas(replicas), key=lambda p: p.partition):
        h = part.filesystem
        start = part.log_start_offset
        for seg in part.segments:
            if seg.log_path is None:
                continue
            with h.opened(h.fs_path(seg.log_path)) as f:
                for batch in decode_segment(f):
                    cols = batch.to_pydict()
                    for off, ctl, key, value in zip(
                        cols["offset"], cols["isControl"], cols["key"], cols["value"]
                    ):
                        if off >= start and not ctl:
                            store.apply(key, value, off)
    return store


# --- registry URL ---------------------------------------------------------------------------------
class RegistryUrlSource:
    """A Schema Registry's REST API (read-only GETs, answers cached)."""

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        parts = urllib.parse.urlsplit(url.rstrip("/"))
        self._auth: str | None = None
        if parts.username is not None:  # user:password@host -> HTTP basic auth, not in errors
            token = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            self._auth = "Basic " + base64.b64encode(token.encode()).decode("ascii")
        self.url = _redact(url.rstrip("/"))
        self.timeout = timeout
        self._cache: dict[str, Any] = {}

    def _get(self, path: str) -> Any:
        if path in self._cache:
            return self._cache[path]
        headers = {"Accept": "application/vnd.schemaregistry.v1+json, application/json"}
        if self._auth is not None:
            headers["Authorization"] = self._auth
        req = urllib.request.Request(self.url + path, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                self._cache[path] = None
                return None
            raise SchemaSourceError(
                "schema registry request failed",
                path=self.url + path,
                expected="HTTP 200 or 404",
                found=f"HTTP {exc.code}",
            ) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise SchemaSourceError(
                "schema registry not reachable",
                path=self.url + path,
                expected="a JSON answer",
                found=type(exc).__name__,
            ) from None
        self._cache[path] = body
        return body

    @staticmethod
    def _schema(body: Any, subject: str, version: int, sid: int | None) -> RegisteredSchema | None:
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            return None
        refs = tuple(
            SchemaReference(r["name"], r["subject"], int(r["version"])) for r in body.get("references") or []
        )
        return RegisteredSchema(
            subject=subject,
            version=version,
            id=int(body.get("id", sid if sid is not None else -1)),
            schema=body["schema"],
            schema_type=body.get("schemaType") or AVRO,
            references=refs,
        )

    def by_id(self, schema_id: int, context: str = DEFAULT_CONTEXT) -> RegisteredSchema | None:
        """``GET /schemas/ids/{id}`` (``?subject=:ctx:`` outside the default context)."""
        query = "" if context == DEFAULT_CONTEXT else "?subject=" + urllib.parse.quote(f":{context}:")
        return self._schema(
            self._get(f"/schemas/ids/{int(schema_id)}{query}"), f"<id {schema_id}>", 0, schema_id
        )

    def version(self, subject: str, version: int | str) -> RegisteredSchema | None:
        """``GET /subjects/{subject}/versions/{version}``."""
        body = self._get(f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/{version}")
        if not isinstance(body, dict):
            return None
        return self._schema(body, subject, int(body.get("version", 0)), None)

    def latest(self, subject: str) -> RegisteredSchema | None:
        """``GET /subjects/{subject}/versions/latest``."""
        return self.version(subject, "latest")


def _redact(url: str) -> str:
    """A URL without user info (credentials never appear in errors)."""
    p = urllib.parse.urlsplit(url)
    if p.username is None and p.password is None:
        return url
    host = p.hostname or ""
    if p.port:
        host += f":{p.port}"
    return urllib.parse.urlunsplit((p.scheme, host, p.path, p.query, p.fragment))


# --- a directory of files --------------------------------------------------------------------------
_FLAT = re.compile(r"^(?P<id>\d+)(?P<ext>\.avsc|\.proto|\.json)$")
_NESTED = re.compile(r"^(?P<version>\d+)-(?P<id>\d+)(?P<ext>\.avsc|\.proto|\.json)$")
_IMPORT = re.compile(r'^\s*import\s+(?:public\s+|weak\s+)?"([^"]+)"\s*;', re.MULTILINE)


def schemas_from_directory(path: str) -> SchemaStore:
    """Schemas kept as files (see the module doc).  Raises :class:`SchemaSourceError` for a
    directory that holds no schema file."""
    if not os.path.isdir(path):
        raise SchemaSourceError("not a directory", path=path, expected="a directory of schema files")
    found: list[tuple[str, RegisteredSchema]] = []
    for root, _dirs, files in os.walk(path):
        rel = os.path.relpath(root, path)
        for name in sorted(files):
            m = _FLAT.match(name) if rel == "." else _NESTED.match(name)
            if m is None:
                continue
            with open(os.path.join(root, name), encoding="utf-8") as f:
                text = f.read()
            subject = m["id"] if rel == "." else rel.replace(os.sep, "/")
            version = 1 if rel == "." else int(m["version"])
            found.append(
                (
                    name,
                    RegisteredSchema(
                        subject=subject,
                        version=version,
                        id=int(m["id"]),
                        schema=text,
                        schema_type=_EXTENSIONS[m["ext"]],
                    ),
                )
            )
    if not found:
        raise SchemaSourceError(
            "no schema files",
            path=path,
            expected="<id>.avsc|.proto|.json or <subject>/<version>-<id>.<ext> files",
        )
    by_file = {name: s for name, s in found}
    for _name, s in found:  # nested layout: the subject is the import name
        by_file.setdefault(s.subject, s)
    out = []
    for _name, s in found:
        if s.schema_type == PROTOBUF:
            refs = tuple(
                SchemaReference(imp, by_file[imp].subject, by_file[imp].version)
                for imp in _IMPORT.findall(s.schema)
                if imp in by_file
            )
            s = RegisteredSchema(s.subject, s.version, s.id, s.schema, s.schema_type, refs)
        out.append(s)
    return SchemaStore.from_schemas(out)


def open_schema_source(spec: str | None, logdirs: Sequence[str] = ()) -> SchemaSource:
    """A source from a user's ``--schemas`` value: ``http(s)://...`` = a registry, a directory of
    schema files, or a log dir holding ``_schemas``; None = the ``_schemas`` topic in ``logdirs``."""
    if spec is None:
        return schemas_from_log_dirs(list(logdirs))
    if spec.startswith(("http://", "https://")):
        return RegistryUrlSource(spec)
    if os.path.isdir(spec) and any(_FLAT.match(n) for n in os.listdir(spec)):
        return schemas_from_directory(spec)
    if os.path.isdir(spec):
        store = schemas_from_log_dirs([spec])
        if store.schemas:
            return store
        return schemas_from_directory(spec)
    raise SchemaSourceError(
        "schema source not found",
        path=spec,
        expected="a registry URL, a directory of schema files or a log dir with _schemas",
    )
