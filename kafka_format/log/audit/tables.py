"""An audit's results as Arrow tables: their schemas, their order, and :class:`ResultCollector`,
which builds them from the tasks' rows a bounded batch at a time.

A run's findings and accounting rows can number in the millions (a cluster of 200,000 segments:
about 620,000 findings and 200,000 accounting rows).  As Python dicts they took 1.1 GB of the
driver's memory, then were copied again for Parquet; as Arrow columns they take a tenth of that, and
Parquet, the page and the printed lines are made from the columns (:mod:`kafka_format.report.audit_page`,
:mod:`kafka_format.jobs.audit`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_format.log.audit.model import ACCOUNTING_SCHEMA, FINDING_SCHEMA

__all__ = [
    "ACCOUNTING_SCHEMA",
    "FINDING_SCHEMA",
    "SEVERITY_ORDER",
    "ResultCollector",
    "files_table",
    "findings_table",
    "iter_rows",
    "order_files",
    "order_findings",
    "place_keys",
    "severity_rank",
    "sort_findings",
]


#: severities, worst first (any other text sorts with "info", as SEVERITY_RANK.get(s, 0) ranks it)
SEVERITY_ORDER = ("error", "warning", "info")
_BATCH_ROWS = 8_192            # rows held as Python tuples before they become Arrow columns
_SCHEMAS = {"findings": FINDING_SCHEMA, "files": ACCOUNTING_SCHEMA}


def _batch(rows: Sequence[Sequence[Any]], schema: pa.Schema) -> pa.RecordBatch:
    columns = list(zip(*rows)) if rows else [()] * len(schema)
    return pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema)], schema=schema)


def _table(rows: Iterable[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    names = schema.names
    return pa.Table.from_batches([_batch([tuple(r[n] for n in names) for r in rows], schema)], schema=schema)


def findings_table(rows: pa.Table | Iterable[Mapping[str, Any]]) -> pa.Table:
    """Finding rows (dicts with :data:`FINDING_COLUMNS`) as a table of :data:`FINDING_SCHEMA`, in their order;
    a table is returned as it is."""
    return rows if isinstance(rows, pa.Table) else _table(rows, FINDING_SCHEMA)


def files_table(rows: pa.Table | Iterable[Mapping[str, Any]]) -> pa.Table:
    """Accounting rows (dicts with :data:`ACCOUNTING_COLUMNS`) as a table of :data:`ACCOUNTING_SCHEMA`."""
    return rows if isinstance(rows, pa.Table) else _table(rows, ACCOUNTING_SCHEMA)


def severity_rank(table: pa.Table) -> pa.Array:
    """0 for errors, 1 for warnings, 2 for the rest: ascending is worst first."""
    return pc.fill_null(pc.index_in(table["severity"], value_set=pa.array(SEVERITY_ORDER)), 2)


def place_keys(table: pa.Table, names: Sequence[str]) -> dict[str, pa.ChunkedArray | pa.Array]:
    """Sort keys for ``names`` of ``table`` (topic, partition, file, position) with a missing value
    first: each column preceded by whether it is set (no null placement option: its form differs
    across pyarrow versions).  The key columns are the table's own, not copies."""
    keys: dict[str, pa.ChunkedArray | pa.Array] = {}
    for name in names:
        keys[f"{name} set"] = pc.is_valid(table[name])
        keys[name] = table[name]
    return keys


def _finding_order(table: pa.Table) -> pa.Array:
    keys = {"rank": severity_rank(table), **place_keys(table, ("topic", "partition", "file", "position")),
            "check": table["check"]}
    return pc.sort_indices(pa.table(keys), sort_keys=[(name, "ascending") for name in keys])


def _file_order(table: pa.Table) -> pa.Array:
    return pc.sort_indices(table, sort_keys=[("file", "ascending")])


def _taken(holder: list[pa.Table], indices: pa.Array) -> pa.Table:
    """``table.take(indices)`` of the one table in ``holder``, taken out of it: a column at a time,
    each source column let go once it is copied, so at most one column more than the table is held
    (a whole-table take holds two tables; the caller must hold no other reference to it)."""
    table = holder.pop()
    schema, columns = table.schema, []
    while table.num_columns:
        columns.append(table.column(0).take(indices))
        table = table.remove_column(0)
    return pa.Table.from_arrays(columns, schema=schema)


def order_findings(table: pa.Table) -> pa.Table:
    """The findings by severity (errors first), topic, partition, file, position and check; rows equal
    in all of these keep their order (a stable sort: the tasks' order, the same for both engines)."""
    return table if table.num_rows < 2 else _taken([table], _finding_order(table))


def order_files(table: pa.Table) -> pa.Table:
    """The accounting rows by file (stable)."""
    return table if table.num_rows < 2 else _taken([table], _file_order(table))


def sort_findings(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Finding rows (dicts) in :func:`order_findings`' order, as dicts."""
    return order_findings(findings_table(rows)).to_pylist()


def iter_rows(table: pa.Table, chunk: int = 8192) -> Iterator[dict[str, Any]]:
    """The table's rows as dicts, converted ``chunk`` rows at a time (never all at once)."""
    for batch in table.to_batches(max_chunksize=chunk):
        yield from batch.to_pylist()


class ResultCollector:
    """The findings and accounting rows of an audit's tasks, in task order, as Arrow tables.

    :meth:`add` takes one task's rows (tuples in column order) and turns every :data:`_BATCH_ROWS`
    of them into a record batch; :meth:`add_tables` takes tables a Spark slice built the same way;
    :meth:`tables` returns both tables, ordered (:func:`order_findings`, :func:`order_files`)."""

    def __init__(self) -> None:
        self._parts: dict[str, list[pa.RecordBatch]] = {"findings": [], "files": []}
        self._rows: dict[str, list[tuple[Any, ...]]] = {"findings": [], "files": []}

    def add(self, findings: Iterable[tuple[Any, ...]], files: Iterable[tuple[Any, ...]]) -> None:
        """One task's rows, in column order (:data:`FINDING_COLUMNS`, :data:`ACCOUNTING_COLUMNS`)."""
        for kind, rows in (("findings", findings), ("files", files)):
            held = self._rows[kind]
            held.extend(rows)
            if len(held) >= _BATCH_ROWS:
                self._flush(kind)

    def add_tables(self, findings: pa.Table, files: pa.Table) -> None:
        """Rows already in columns (a Spark slice's), after every row added so far."""
        for kind, table in (("findings", findings), ("files", files)):
            self._flush(kind)
            self._parts[kind].extend(table.to_batches())

    def _flush(self, kind: str) -> None:
        if self._rows[kind]:
            self._parts[kind].append(_batch(self._rows[kind], _SCHEMAS[kind]))
            self._rows[kind] = []

    def tables(self, *, ordered: bool = True) -> tuple[pa.Table, pa.Table]:
        """(findings, files), ordered (else in the order added).  The collector is empty after."""
        out = []
        for kind, order in (("findings", _finding_order), ("files", _file_order)):
            self._flush(kind)
            holder = [pa.Table.from_batches(self._parts[kind], schema=_SCHEMAS[kind])]
            self._parts[kind] = []          # the table holds the batches: ordering it lets them go
            out.append(_taken(holder, order(holder[0])) if ordered and holder[0].num_rows > 1 else holder[0])
        return out[0], out[1]
