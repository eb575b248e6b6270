"""How the local engine encodes its Parquet files: dictionary encoding where it pays.

Arrow's Parquet writer dictionary-encodes every column until a column chunk's dictionary passes
``dictionary_pagesize_limit`` (1 MiB), hashing every value on the way.  For the columns of a Kafka
export that never repeat (offsets, positions, ids, amounts, most payloads) that is work thrown away
and a 1 MiB dictionary page written for nothing.  Spark's writer (parquet-mr) checks after the first
page whether the dictionary paid (``DictionaryValuesWriter.isCompressionSatisfying``: encoded size
plus dictionary size below the plain size) and writes the rest of the chunk plain when it did not.
:func:`dictionary_columns` applies that rule to a sample of the first rows a file gets, so the same
columns end up dictionary-encoded as in Spark's files without hashing the others.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = ["SAMPLE_ROWS", "dictionary_columns", "leaf_paths"]

SAMPLE_ROWS = 20_000        # about one data page of small values: what parquet-mr decides on


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
