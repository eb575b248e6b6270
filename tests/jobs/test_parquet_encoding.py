"""The local engine's Parquet files: dictionary encoding only where it pays (parquet-mr's rule),
every row written once, in the hive directory of its topic-partition."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_format.output.parquet import SAMPLE_ROWS, dictionary_columns, leaf_paths, row_groups

N = 5_000


def _encodings(path: Path) -> dict[str, set[str]]:
    """Every column path of a Parquet file and the encodings of its chunks."""
    md = pq.ParquetFile(path).metadata
    out: dict[str, set[str]] = {}
    for g in range(md.num_row_groups):
        for c in range(md.num_columns):
            col = md.row_group(g).column(c)
            out.setdefault(col.path_in_schema, set()).update(col.encodings)
    return out


def _table() -> pa.Table:
    """Columns that never repeat beside columns of a few values, nested ones included."""
    few = ["alpha", "beta", "gamma"]
    return pa.table({
        "offset": pa.array(range(N), pa.int64()),
        "id": pa.array([f"event-{i:08d}" for i in range(N)]),
        "amount": pa.array([i * 0.37 for i in range(N)]),
        "topic": pa.array([few[i % 3] for i in range(N)]),
        "epoch": pa.array([i % 4 for i in range(N)], pa.int32()),
        "flag": pa.array([i % 2 == 0 for i in range(N)]),
        "nothing": pa.nulls(N, pa.string()),
        "value": pa.array([{"kind": few[i % 3], "seq": i, "tags": few[: i % 3]} for i in range(N)],
                          pa.struct([("kind", pa.string()), ("seq", pa.int64()), ("tags", pa.list_(pa.string()))])),
        "labels": pa.array([[(few[i % 3], f"v{i}")] for i in range(N)], pa.map_(pa.string(), pa.string())),
    })


def test_leaf_paths_are_the_written_files_column_paths(tmp_path: Path) -> None:
    table = _table()
    pq.write_table(table, tmp_path / "t.parquet")
    paths = leaf_paths(table.schema)
    assert paths == list(_encodings(tmp_path / "t.parquet"))
    # the Parquet spec's nested names: LIST is <name>.list.element, MAP <name>.key_value.key/value
    assert paths == ["offset", "id", "amount", "topic", "epoch", "flag", "nothing", "value.kind", "value.seq",
                     "value.tags.list.element", "labels.key_value.key", "labels.key_value.value"]


def test_only_repeating_columns_are_dictionary_encoded(tmp_path: Path) -> None:
    table = _table()
    chosen = dictionary_columns(table)
    assert isinstance(chosen, list)
    # repeating values (a handful of distinct ones), and a column with nothing seen yet
    repeating = {"topic", "epoch", "nothing", "value.kind", "value.tags.list.element", "labels.key_value.key"}
    assert set(chosen) == repeating
    pq.write_table(table, tmp_path / "t.parquet", use_dictionary=chosen)
    for path, encodings in _encodings(tmp_path / "t.parquet").items():
        if path in repeating:
            assert "RLE_DICTIONARY" in encodings, path
        else:
            assert "RLE_DICTIONARY" not in encodings, path
    assert pq.read_table(tmp_path / "t.parquet").equals(table)


def test_the_rule_is_judged_on_the_first_rows_only() -> None:
    # unique from row SAMPLE_ROWS on: the first page decides, as parquet-mr's fallback check does
    n = SAMPLE_ROWS + 1_000
    table = pa.table({"k": pa.array([i % 7 if i < SAMPLE_ROWS else i for i in range(n)], pa.int64())})
    assert dictionary_columns(table) == ["k"]
    assert dictionary_columns(table.slice(SAMPLE_ROWS)) == []


@pytest.mark.parametrize("distinct, pays", [(1, True), (N // 2, True), (N - 1, False)])
def test_wide_values_pay_until_nearly_unique(distinct: int, pays: bool) -> None:
    # 100-byte values: a dictionary of `distinct` of them plus 1-2 byte indices against 104 bytes a row
    values = pa.array([(b"%099d" % (i % distinct)) for i in range(N)], pa.binary())
    assert dictionary_columns(pa.table({"v": values})) == (["v"] if pays else [])


def test_local_export_writes_each_split_into_its_partition_directory(tmp_path: Path) -> None:
    from kafka_format.engine.export import export_local
    from kafka_format.writer.batches import Record, build_v2_batch
    from kafka_format.writer.logdir import LogDirWriter

    d = LogDirWriter(tmp_path / "logs", node_id=1, cluster_id="parquetEncodingTest000", kraft=True)
    for p in range(2):
        w = d.partition("orders.v1", p, topic_id=bytes([p + 1]) * 16, segment_bytes=16_384)
        for b in range(20):
            w.append(build_v2_batch([Record(key=b"k%d" % (i % 5), value=b"order-%d-%d-%d" % (p, b, i),
                                            timestamp=1_700_000_000_000 + b) for i in range(50)], base_offset=b * 50))
        w.close()
    d.close(written_at_ms=1_700_000_100_000)
    result = export_local([str(tmp_path / "logs")], str(tmp_path / "out"))
    assert result.rows == 2 * 20 * 50
    for p in range(2):
        where = tmp_path / "out" / "topic=orders.v1" / f"partition={p}"
        files = sorted(where.glob("*.parquet"))
        assert files, where
        table = pa.concat_tables(pq.read_table(f) for f in files).sort_by("offset")
        assert table.column("offset").to_pylist() == list(range(1000))
        assert table.column("value").to_pylist() == [b"order-%d-%d-%d" % (p, o // 50, o % 50) for o in range(1000)]
        assert "topic" not in table.column_names and "partition" not in table.column_names
        assert [pq.ParquetFile(f).metadata.num_row_groups for f in files] == [1] * len(files)  # not one per batch
        encodings = _encodings(files[0])
        assert "RLE_DICTIONARY" not in encodings["offset"]
        assert "RLE_DICTIONARY" in encodings["key"]


def test_batches_are_gathered_into_row_groups_in_order() -> None:
    """Batches join a row group until it would pass the byte or row bound; a batch over a bound is a
    group of its own; none is split or reordered; empty ones are left out (no group is empty)."""
    batches = [pa.record_batch({"i": pa.array(range(10 * k, 10 * k + 10), pa.int64())}) for k in range(7)]
    by_rows = list(row_groups(batches, max_rows=25))
    assert [t.num_rows for t in by_rows] == [20, 20, 20, 10]
    assert pa.concat_tables(by_rows).column("i").to_pylist() == list(range(70))
    size = batches[0].nbytes
    assert [t.num_rows for t in row_groups(batches, max_bytes=3 * size)] == [30, 30, 10]
    big = pa.record_batch({"i": pa.array(range(100), pa.int64())})
    assert [t.num_rows for t in row_groups([batches[0], big, batches[1]], max_rows=25)] == [10, 100, 10]
    assert list(row_groups([])) == []
    empty = batches[0].slice(0, 0)
    assert [t.num_rows for t in row_groups([empty, batches[0], empty, big, empty], max_rows=25)] == [10, 100]
    assert list(row_groups([empty])) == []
