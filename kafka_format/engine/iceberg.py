"""``klogs export --format iceberg``: topic history into an Apache Iceberg table, on either executor.

The export's own tasks write the data files (:func:`kafka_format.engine.export.run_split_tasks`,
on this process's cores or Spark's executors: the job runtime), each a split's rows with every
column, partition columns too (Iceberg reads partition values from the files' statistics); the
driver moves the kept attempts' files into a run directory of the table's ``data/`` and commits them
with pyiceberg (``add_files``: the table's name mapping ties the files' columns to the table's
field ids) in one transaction:

* the table is created on the first run: its schema the export's Arrow schema (``timestamp`` a
  ``timestamptz``, ``headers`` a ``list<struct<key, value>>``, typed key and value columns as the
  Schema Registry decode gives them), partition spec from ``--partition-by`` (``identity(topic)``,
  ``identity(partition)``, or ``day(timestamp)``), sort order ``partition, offset``, and the
  properties :data:`OWNER_PROPERTY` (the mark of this job's own table) and :data:`SOURCE_PROPERTY`;
* a table without the mark is refused (:class:`~kafka_format.output.ownership.OutputRefused`, exit
  2), as one with another partition layout;
* a batch run replaces the table's rows (one transaction: a delete and an append snapshot); an
  incremental one (``--checkpoint``) appends one snapshot whose summary holds
  :data:`OFFSETS_SUMMARY`, the next offset of every topic-partition exported so far.  The next run
  reads from those offsets, taken from the table's current snapshot and its ancestors: the table
  is the checkpoint, so a run killed with its files written or its commit in flight left no
  snapshot and is redone whole, and one killed after its commit is not redone;
* a later writer schema with a new optional field adds the column (``union_by_name``) in the same
  transaction: Iceberg's schema evolution, no file rewritten.

A run's files live in ``data/klogs-run-<id>/`` with a :data:`PENDING` marker until its commit is
done; the next run removes the directories of runs that never committed (no snapshot names them).

Catalogs (``--catalog``): none = pyiceberg's ``SqlCatalog`` on SQLite at ``WAREHOUSE/catalog.db``;
``sql:URI`` a SQLAlchemy URI; ``rest:URL`` an Iceberg REST catalog (``https://user:secret@host/``:
the user info is sent as the OAuth2 client credential, never shown: :func:`redact`).  No pyspark here.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

import pyarrow as pa

from kafka_format.common.redaction import redact
from kafka_format.engine.export import (
    DAY_COLUMN,
    KEY_AS,
    VALUE_AS,
    ExportError,
    ExportResult,
    check_choice,
    export_schema,
    hold_outputs,
    merge_skipped,
    parse_partition_by,
    run_split_tasks,
)
from kafka_format.output.attempts import AttemptRoot
from kafka_format.output.ownership import OutputRefused, remove_tree
from kafka_format.output.publish import crash_point

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

    from kafka_format.engine.runtime import Executor

__all__ = [
    "DEFAULT_TABLE",
    "OFFSETS_SUMMARY",
    "OWNER_PROPERTY",
    "PENDING",
    "RUN_SUMMARY",
    "SOURCE_PROPERTY",
    "committed_offsets",
    "export_iceberg",
    "open_catalog",
]

DEFAULT_TABLE = "kafka.topic_history"
OWNER_PROPERTY = "klogs.owner"            # "export": a table klogs export created (appended to only then)
OWNER_VALUE = "export"
SOURCE_PROPERTY = "klogs.source"          # the log dirs it was exported from (JSON list, credentials redacted)
LAYOUT_PROPERTY = "klogs.partition-by"    # --partition-by of the table
OFFSETS_SUMMARY = "klogs.offsets"         # snapshot summary: {"topic": {"partition": next offset}}
RUN_SUMMARY = "klogs.run"                 # snapshot summary: the run id (its files' directory)
PENDING = "_klogs_pending"                # in a run directory until its commit is done
RUN_PREFIX = "klogs-run-"


def _rest_properties(url: str) -> dict[str, str]:
    """pyiceberg ``RestCatalog`` properties of ``url``: its user info as the OAuth2 credential."""
    parts = urlsplit(url)
    props: dict[str, str] = {}
    if parts.username is not None:
        host = parts.hostname or ""
        netloc = host if parts.port is None else f"{host}:{parts.port}"
        url = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
        props["credential"] = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        props["oauth2-server-uri"] = url.rstrip("/") + "/v1/oauth/tokens"     # the REST spec's token endpoint
    props["uri"] = url
    return props


def open_catalog(warehouse: str, catalog: str | None = None) -> Catalog:
    """The Iceberg catalog of ``--catalog`` (None: SQLite at ``WAREHOUSE/catalog.db``), its
    warehouse ``warehouse``."""
    from kafka_format.output.publish import local_path

    kind, _, target = (catalog or "").partition(":")
    if catalog is None:
        from pyiceberg.catalog.sql import SqlCatalog

        root = os.path.abspath(local_path(warehouse))
        return SqlCatalog("klogs", uri=f"sqlite:///{os.path.join(root, 'catalog.db')}", warehouse=f"file://{root}")
    if kind == "sql" and target:
        from pyiceberg.catalog.sql import SqlCatalog

        return SqlCatalog("klogs", uri=target, warehouse=_warehouse_uri(warehouse))
    if kind == "rest" and target:
        from pyiceberg.catalog.rest import RestCatalog

        return RestCatalog("klogs", warehouse=_warehouse_uri(warehouse), **_rest_properties(target))
    raise ValueError(f"--catalog {redact(catalog or '')!r}: expected rest:URL or sql:URI")


def _warehouse_uri(warehouse: str) -> str:
    if "://" in warehouse:
        return warehouse
    return "file://" + os.path.abspath(warehouse)


def _identifier(table: str) -> tuple[str, str]:
    namespace, sep, name = table.rpartition(".")
    if not sep or not namespace or not name:
        raise ValueError(f"--table {table!r}: expected NAMESPACE.NAME")
    return namespace, name


def committed_offsets(table: Table) -> dict[tuple[str, int], int]:
    """The next offset per topic-partition of the newest snapshot (current, then its ancestors)
    whose summary holds :data:`OFFSETS_SUMMARY`; empty when none does."""
    snapshot = table.current_snapshot()
    while snapshot is not None:
        summary = snapshot.summary
        raw = summary.get(OFFSETS_SUMMARY) if summary is not None else None
        if raw is not None:
            return {(t, int(p)): int(o) for t, parts in json.loads(raw).items() for p, o in parts.items()}
        parent = snapshot.parent_snapshot_id
        snapshot = table.snapshot_by_id(parent) if parent is not None else None
    return {}


def _offsets_json(offsets: Mapping[tuple[str, int], int]) -> str:
    out: dict[str, dict[str, int]] = {}
    for (t, p), o in sorted(offsets.items()):
        out.setdefault(t, {})[str(p)] = o
    return json.dumps(out, sort_keys=True, separators=(",", ":"))


def _resume(splits: Sequence[Any], committed: Mapping[tuple[str, int], int]) -> list[Any]:
    """``splits`` reading only offsets at or above ``committed`` (a split whose follower in its
    partition starts at or below the committed offset holds nothing new and is left out)."""
    out = []
    for i, s in enumerate(splits):
        c = committed.get((s.topic, s.partition))
        if c is None:
            out.append(s)
            continue
        nxt = splits[i + 1] if i + 1 < len(splits) else None
        if (nxt is not None and (nxt.topic, nxt.partition, nxt.log_dir) == (s.topic, s.partition, s.log_dir)
                and nxt.ranges and nxt.ranges[0].first_offset <= c):
            continue
        out.append(replace(s, start_offset=c if s.start_offset is None else max(s.start_offset, c)))
    return out


def _spec_and_order(schema: Any, cols: tuple[str, ...]) -> tuple[Any, Any]:
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.table.sorting import SortField, SortOrder
    from pyiceberg.transforms import DayTransform, IdentityTransform

    def fid(name: str) -> int:
        return int(schema.find_field(name).field_id)

    if cols == ("date",):
        fields = [PartitionField(fid("timestamp"), 1000, DayTransform(), "timestamp_day")]
    else:
        fields = [PartitionField(fid(c), 1000 + i, IdentityTransform(), c) for i, c in enumerate(cols)]
    order = SortOrder(SortField(source_id=fid("partition"), transform=IdentityTransform()),
                      SortField(source_id=fid("offset"), transform=IdentityTransform()))
    return PartitionSpec(*fields), order


def _iceberg_schema(arrow: pa.Schema) -> Any:
    """The Iceberg schema of the export's Arrow schema (fresh field ids; timestamps ``timestamptz``)."""
    from pyiceberg.catalog import Catalog
    from pyiceberg.schema import assign_fresh_schema_ids

    return assign_fresh_schema_ids(Catalog._convert_schema_if_needed(arrow))


def _create(cat: Catalog, ident: tuple[str, str], arrow: pa.Schema, cols: tuple[str, ...],
            logdirs: Sequence[str]) -> Table:
    from pyiceberg.exceptions import NamespaceAlreadyExistsError

    try:
        cat.create_namespace(ident[0])
    except NamespaceAlreadyExistsError:
        pass
    schema = _iceberg_schema(arrow)
    spec, order = _spec_and_order(schema, cols)
    props = {OWNER_PROPERTY: OWNER_VALUE, LAYOUT_PROPERTY: ",".join(cols), "format-version": "2",
             SOURCE_PROPERTY: json.dumps([redact(str(d)) for d in logdirs])}
    table = cat.create_table(ident, schema=schema, partition_spec=spec, sort_order=order, properties=props)
    with table.transaction() as tx:        # the files carry no field ids: readers map them by name
        tx.set_properties({"schema.name-mapping.default": table.schema().name_mapping.model_dump_json()})
    return cat.load_table(ident)


def _check_own(table: Table, name: str, cols: tuple[str, ...]) -> None:
    props = table.properties
    if props.get(OWNER_PROPERTY) != OWNER_VALUE:
        raise OutputRefused("the Iceberg table is not one klogs export created", path=name,
                            expected=f"a table with property {OWNER_PROPERTY}={OWNER_VALUE} (or no table)",
                            found=f"{OWNER_PROPERTY}={props.get(OWNER_PROPERTY)!r}")
    if props.get(LAYOUT_PROPERTY) != ",".join(cols):
        raise OutputRefused("the Iceberg table has another partition layout", path=name,
                            expected=f"--partition-by {props.get(LAYOUT_PROPERTY)}",
                            found=f"--partition-by {','.join(cols)}")


def _local_dir(location: str) -> str:
    parts = urlsplit(location)
    if parts.scheme not in ("", "file"):
        raise ExportError("the Iceberg table's location is not a local path (object-store warehouses are not "
                          "supported by this export yet)", path=redact(location))
    return unquote(parts.path) if parts.scheme else location


def _clean_uncommitted(table: Table) -> None:
    """Remove the run directories of runs that never committed (a :data:`PENDING` marker, no
    snapshot naming the run); a committed run's marker only."""
    data = os.path.join(_local_dir(table.location()), "data")
    if not os.path.isdir(data):
        return
    committed = {s.summary.get(RUN_SUMMARY) for s in table.snapshots() if s.summary is not None}
    for name in os.listdir(data):
        path = os.path.join(data, name)
        if not name.startswith(RUN_PREFIX) or not os.path.exists(os.path.join(path, PENDING)):
            continue
        if name[len(RUN_PREFIX):] in committed or _referenced(table, path):
            os.remove(os.path.join(path, PENDING))
        else:
            remove_tree(path)


def _referenced(table: Table, path: str) -> bool:
    """Whether a data file of the current snapshot lies under ``path`` (a run whose snapshot was
    expired: its files are live)."""
    if table.current_snapshot() is None:
        return False
    prefix = path.rstrip("/") + "/"
    return any(_local_dir(t.file.file_path).startswith(prefix) for t in table.scan().plan_files())


@contextmanager
def _held(warehouse: str, catalog: str | None, incremental: bool, logdirs: Sequence[str]) -> Iterator[None]:
    """The default catalog's warehouse claimed and locked for the run (other catalogs: the table
    property is the ownership rule)."""
    if catalog is None:
        from kafka_format.engine.export import ICEBERG_OWNER
        from kafka_format.output.publish import ensure_output_dir

        with hold_outputs(warehouse, format="iceberg", incremental=incremental, inputs=logdirs):
            ensure_output_dir(warehouse, ICEBERG_OWNER)     # the marker, before the catalog's files
            yield
    else:
        yield


def export_iceberg(executor: Executor, logdirs: Sequence[str], warehouse: str, *, table: str = DEFAULT_TABLE,
                   catalog: str | None = None, options: Mapping[str, str] | None = None,
                   partition_by: str | Sequence[str] = ("topic", "partition"), key_as: str = "binary",
                   value_as: str = "binary", typed: Any = None, incremental: bool = False) -> ExportResult:
    """Export ``logdirs`` into the Iceberg table ``table`` of ``catalog`` (warehouse ``warehouse``),
    the files written by tasks on ``executor``, committed in one transaction (see the module doc).
    ``incremental``: append what arrived since the table's last recorded offsets."""
    from pyiceberg.exceptions import NoSuchTableError
    from pyiceberg.expressions import AlwaysTrue

    from kafka_format.engine.read import read_splits

    cols = parse_partition_by(partition_by)
    check_choice("key_as", key_as, KEY_AS)
    check_choice("value_as", value_as, VALUE_AS)
    ident = _identifier(table)
    opts = {**dict(options or {}), "paths": json.dumps(list(logdirs))}
    with _held(warehouse, catalog, incremental, logdirs):
        parsed, splits = read_splits(opts, cores=executor.cores())
        arrow = export_schema(parsed, typed, partition_by=cols, key_as=key_as, value_as=value_as)
        cat = open_catalog(warehouse, catalog)
        try:
            tbl = cat.load_table(ident)
        except NoSuchTableError:
            tbl = _create(cat, ident, arrow, cols, logdirs)
        _check_own(tbl, table, cols)
        _clean_uncommitted(tbl)
        committed = committed_offsets(tbl) if incremental else {}
        if committed:
            splits = _resume(splits, committed)
        run = uuid.uuid4().hex
        run_dir = os.path.join(_local_dir(tbl.location()), "data", RUN_PREFIX + run)
        os.makedirs(run_dir)
        with open(os.path.join(run_dir, PENDING), "wb"):
            pass
        root = AttemptRoot(run_dir)
        ran = run_split_tasks(executor, root, parsed, splits, partition_by=cols, key_as=key_as, value_as=value_as,
                              typed=typed, whole_rows=True)
        files = root.commit(ran.manifests)
        crash_point("export:files-written")
        offsets = {**committed, **{tp: o + 1 for tp, o in ran.last_offsets.items()}}
        snapshot = None
        if files or not incremental:
            props = {RUN_SUMMARY: run, "klogs.rows": str(sum(f.rows for f in files))}
            if incremental:
                props[OFFSETS_SUMMARY] = _offsets_json(offsets)
            tx = tbl.transaction()
            written = pa.schema([f for f in arrow if f.name != DAY_COLUMN])
            if _new_fields(tbl, written):
                with tx.update_schema() as update:
                    update.union_by_name(written)
            if not incremental and tbl.current_snapshot() is not None:
                tx.delete(AlwaysTrue(), snapshot_properties={RUN_SUMMARY: run})
            if files:
                tx.add_files([os.path.join(run_dir, *f.rel.split("/")) for f in files], snapshot_properties=props,
                             check_duplicate_files=False)
            crash_point("export:commit-in-flight")       # manifests written, the catalog not yet updated
            tbl = tx.commit_transaction()
            crash_point("export:batch-committed")
            current = tbl.current_snapshot()
            snapshot = None if current is None else current.snapshot_id
        os.remove(os.path.join(run_dir, PENDING))
        if not files:
            remove_tree(run_dir)
    return ExportResult(out=warehouse, format="iceberg", partition_by=cols, rows=sum(f.rows for f in files),
                        files=len(files), engine=executor.name, writer="pyiceberg", table=table,
                        snapshot=snapshot, typed=None if typed is None else typed.report(ran.decode_errors),
                        skipped_ranges=merge_skipped(ran.skipped))


def _new_fields(table: Table, arrow: pa.Schema) -> bool:
    """Whether ``arrow`` has a field (at any depth) the table's schema lacks."""
    from pyiceberg.schema import index_by_name

    return bool(set(index_by_name(_iceberg_schema(arrow))) - set(index_by_name(table.schema())))
