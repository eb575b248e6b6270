"""How the export's tasks (on either executor) encode their Parquet files: dictionary encoding where it pays, row groups of
many batches.

Arrow's Parquet writer dictionary-encodes every column until a column chunk's dictionary passes
``dictionary_pagesize_limit`` (1 MiB), hashing every value on the way.  For the columns of a Kafka
export that never repeat (offsets, positions, ids, amounts, most payloads) that is work thrown away
and a 1 MiB dictionary page written for nothing.  Spark's writer (parquet-mr) checks after the first
page whether the dictionary paid (``DictionaryValuesWriter.isCompressionSatisfying``: encoded size
plus dictionary size below the plain size) and writes the rest of the chunk plain when it did not.
:func:`dictionary_columns` applies that rule to a sample of the first rows a file gets, so the same
columns end up dictionary-encoded as in Spark's files without hashing the others.

A streaming ``ParquetWriter`` makes a row group of every batch it is given; the reader's batches
are at most 65,536 rows (a few MB), where parquet-mr closes a row group at 128 MB of encoded data.
:func:`row_groups` gathers batches into tables of one row group each, up to :data:`ROW_GROUP_BYTES`
of Arrow data or :data:`ROW_GROUP_ROWS` rows: fewer, larger groups (each column chunk's statistics,
dictionary page and levels set up once per group), and the memory of one group's rows per writer.
"""

from __future__ import annotations

import functools
import io
import os
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = ["ROW_GROUP_BYTES", "ROW_GROUP_ROWS", "SAMPLE_ROWS", "dictionary_columns", "leaf_paths", "row_groups",
           "write_options", "write_row_groups"]

SAMPLE_ROWS = 20_000        # about one data page of small values: what parquet-mr decides on
ROW_GROUP_BYTES = 64 << 20  # Arrow bytes gathered into one row group (parquet-mr: 128 MB encoded)
ROW_GROUP_ROWS = 1 << 20    # rows in one row group at most (Arrow's writer's own default)


def row_groups(batches: Iterable[pa.RecordBatch], *, max_bytes: int = ROW_GROUP_BYTES,
               max_rows: int = ROW_GROUP_ROWS) -> Iterator[pa.Table]:
    """``batches`` (one schema) gathered, in order, into tables of one row group each: a batch joins
    the table until it would pass ``max_bytes`` of Arrow data or ``max_rows`` rows (a batch larger
    than either makes a group alone; no batch is split; empty batches are left out, so no group is
    empty).  Write each with ``row_group_size=table.num_rows``."""
    pending: list[pa.RecordBatch] = []
    size = rows = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        if pending and (size + batch.nbytes > max_bytes or rows + batch.num_rows > max_rows):
            yield pa.Table.from_batches(pending)
            pending, size, rows = [], 0, 0
        pending.append(batch)
        size += batch.nbytes
        rows += batch.num_rows
    if pending:
        yield pa.Table.from_batches(pending)


def write_options(sample: pa.Table | pa.RecordBatch) -> dict[str, Any]:
    """The local engine's Parquet writer options for a file whose first rows are ``sample``:
    timestamps in microseconds (as Spark writes them) and dictionary encoding where parquet-mr's
    rule says it pays (:func:`dictionary_columns`)."""
    return {"coerce_timestamps": "us", "allow_truncated_timestamps": False,
            "use_dictionary": dictionary_columns(sample) or False}


def write_row_groups(where: str | os.PathLike[str], schema: pa.Schema, batches: Iterable[pa.RecordBatch],
                     options: dict[str, Any], *, filesystem: Any = None) -> int:
    """Write ``batches`` (of ``schema``) to the Parquet file ``where`` (on ``filesystem``, default
    local) with ``options``, in the row groups of :func:`row_groups`; the rows written."""
    rows = 0
    with pq.ParquetWriter(where, schema, filesystem=filesystem, **options) as writer:
        for group in row_groups(batches):
            writer.write_table(group, row_group_size=group.num_rows)
            rows += group.num_rows
    return rows


def leaf_paths(schema: pa.Schema) -> list[str]:
    """The Parquet column paths of ``schema``'s leaves, in order (``a.b``, ``l.list.element``, ...),
    as Arrow's writer names them."""
    return list(_leaf_paths(schema))


@functools.lru_cache(maxsize=32)
def _leaf_paths(schema: pa.Schema) -> tuple[str, ...]:
    """:func:`leaf_paths`, once per schema and process (every split of an export asks for it)."""
    sink = io.BytesIO()
    pq.write_table(schema.empty_table(), sink)
    parquet = pq.ParquetFile(io.BytesIO(sink.getvalue())).schema
    return tuple(parquet.column(i).path for i in range(len(parquet)))


def _leaves(arr: pa.Array) -> Iterator[pa.Array]:
    """The leaf value arrays of ``arr`` in Parquet's column order (values under null parents
    included: the sample only estimates)."""
    t = arr.type
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            yield from _leaves(arr.field(i))
    elif pa.types.is_map(t):
        yield from _leaves(arr.keys)
        yield from _leaves(arr.items)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        yield from _leaves(arr.flatten())
    elif pa.types.is_dictionary(t):
        yield from _leaves(arr.dictionary_decode())
    else:
        yield arr


def _bits(distinct: int) -> int:
    return max(1, (distinct - 1).bit_length())


def _pays(leaf: pa.Array) -> bool:
    """parquet-mr's first-page rule on ``leaf``: indices at the distinct count's bit width plus the
    dictionary page smaller than the plain encoding."""
    t = leaf.type
    values = leaf.drop_null() if leaf.null_count else leaf
    n = len(values)
    if n == 0 or pa.types.is_boolean(t) or pa.types.is_null(t):
        return n == 0            # nothing seen yet: keep Arrow's default
    unique = pc.unique(values)
    if pa.types.is_binary(t) or pa.types.is_string(t) or pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        plain = pc.sum(pc.binary_length(values)).as_py() + 4 * n
        page = pc.sum(pc.binary_length(unique)).as_py() + 4 * len(unique)
    else:
        try:
            width = max(1, t.bit_width // 8)
        except ValueError:       # not fixed-width
            width = 8
        plain, page = width * n, width * len(unique)
    return page + (n * _bits(len(unique)) + 7) // 8 < plain


def dictionary_columns(sample: pa.Table | pa.RecordBatch) -> list[str] | bool:
    """The Parquet column paths of ``sample``'s schema worth dictionary encoding, judged on its first
    :data:`SAMPLE_ROWS` rows by parquet-mr's rule (for ``use_dictionary``); ``True`` (every column)
    when the leaves cannot be paired with the Parquet columns."""
    head = sample.slice(0, SAMPLE_ROWS)
    paths = leaf_paths(head.schema)
    leaves = [leaf for col in head.columns
              for leaf in _leaves(col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col)]
    if len(leaves) != len(paths):
        return True
    return [path for path, leaf in zip(paths, leaves, strict=True) if _pays(leaf)]
