"""``klogs compaction --mode full``: the table view, one rule for both engines.

The rule (:func:`decide_sorted`): per ``(topic, partition, logDir, key)`` the highest offset is
``latest`` (kept) unless its value is null (``tombstone``: removed, the key is absent); lower
offsets are ``superseded`` by it; null keys are ``null-key`` (removed: the cleaner never keeps
them, ``Cleaner.shouldRetainRecord``).  Key identity is byte equality (the cleaner hashes keys
with MD5, ``SkimpyOffsetMap``; a collision there would merge two keys, here it cannot).

It is a pure function over a stream of Arrow batches in which the rows of each key are
contiguous.  The job (:func:`full_pass`, on any executor) feeds it one task per partition replica,
whose rows it sorts by ``(key, offset)`` in runs of at most ``sort_buffer`` bytes, spilled to Arrow
files and merged when there is more than one run (:func:`sorted_by_key`).  A DataFrame of any
origin gets the same rule after Spark's shuffle and sort
(:func:`kafka_format.spark.frames.compaction_full_decisions`).

The per-partition counts are one function too: :func:`summary_counts` on decided rows (a
task's, or one Spark batch's) and :func:`merge_counts` over those partial rows.

No pyspark here.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_format.engine.compaction import DECISION_FIELDS, topic_selector
from kafka_format.storage.fsio import redact
from kafka_format.storage.tiered_history import LOCAL_TIER

if TYPE_CHECKING:
    from kafka_format.engine.runtime import Executor

__all__ = [
    "COUNTS_SCHEMA",
    "COUNT_COLUMNS",
    "FULL_GROUP",
    "FULL_SUMMARY_COLUMNS",
    "FULL_SUMMARY_INPUT",
    "SORT_BUFFER",
    "FullTask",
    "decide_sorted",
    "decided_schema",
    "full_local",
    "full_pass",
    "full_read_options",
    "full_tasks",
    "merge_counts",
    "run_full_task",
    "sorted_by_key",
    "summary_counts",
]

FULL_GROUP = ("topic", "partition", "logDir")
COUNT_COLUMNS = ("recordsBefore", "recordsAfter", "keys", "keysDeleted", "recordsSuperseded", "nullKeyRecords")
FULL_SUMMARY_COLUMNS = (*FULL_GROUP, *COUNT_COLUMNS)
FULL_SUMMARY_INPUT = (*FULL_GROUP, "decision", "reason")     # the columns summary_counts reads
SORT_BUFFER = 64 << 20           # bytes of rows a local task sorts in memory at a time
SPILL_CHUNK_BYTES = 1 << 20      # at most this much of a spilled run is read at a time


# --- the rule ------------------------------------------------------------------------------------
def decided_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` (the ``kafka-log`` rows) plus ``decision``, ``reason``, ``supersededBy``."""
    return pa.schema([*schema, *DECISION_FIELDS])


def decide_sorted(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The table view's decision of every row of ``batches``: each row with ``decision``,
    ``reason`` and ``supersededBy`` appended (:func:`decided_schema`), in input order.

    The input holds ``topic``, ``partition``, ``logDir``, ``key``, ``offset``, ``value`` (other
    columns pass through) and must keep the rows of each ``(topic, partition, logDir, key)``
    together (sorted, or shuffled and sorted by it); null keys may be anywhere.  A key's rows may
    span batches: the last key of a batch is held until the next batch shows where it ends."""
    held: pa.Table | None = None
    for batch in batches:
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        if held is not None:
            table = pa.concat_tables([held, table])
            held = None
        if table.num_rows == 0:
            continue
        starts = _run_starts(table)
        cut = int(starts[-1])                 # the last run may go on in the next batch
        if cut > 0:
            held = table.slice(cut)
            yield from _decided(table.slice(0, cut), starts[:-1]).to_batches()
        else:
            held = table
    if held is not None:
        yield from _decided(held, _run_starts(held)).to_batches()


def _run_starts(table: pa.Table) -> Any:
    """Row indexes (numpy) where a new ``(topic, partition, logDir, key)`` run starts; null keys
    are runs of their own."""
    import numpy as np
    import pyarrow.compute as pc

    n = table.num_rows
    change = np.zeros(n, dtype=bool)
    change[0] = True
    if n > 1:
        for name in (*FULL_GROUP, "key"):
            col = table.column(name)
            prev, this = col.slice(0, n - 1), col.slice(1)
            ne = pc.fill_null(pc.not_equal(this, prev), True)
            change[1:] |= ne.to_numpy(zero_copy_only=False)
    return np.flatnonzero(change)


def _decided(table: pa.Table, starts: Any) -> pa.Table:
    """Decisions of ``table`` whose runs (complete keys) start at ``starts``."""
    import numpy as np

    n = table.num_rows
    offset = table.column("offset").to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    run = np.zeros(n, dtype=np.int64)
    run[starts[1:]] = 1
    run = np.cumsum(run)
    latest = np.maximum.reduceat(offset, starts)[run]
    null_key = table.column("key").is_null().to_numpy(zero_copy_only=False)
    superseded = ~null_key & (offset < latest)
    tombstone = table.column("value").is_null().to_numpy(zero_copy_only=False)
    decision = np.where(null_key | superseded | tombstone, "remove", "keep")
    reason = np.where(null_key, "null-key", np.where(superseded, "superseded",
                                                     np.where(tombstone, "tombstone", "latest")))
    return table.append_column(DECISION_FIELDS[0], pa.array(decision, pa.string())) \
        .append_column(DECISION_FIELDS[1], pa.array(reason, pa.string())) \
        .append_column(DECISION_FIELDS[2], pa.array(latest, pa.int64(), mask=~superseded))


# --- the per-partition counts ----------------------------------------------------------------------
COUNTS_SCHEMA = pa.schema([pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
                            pa.field("logDir", pa.string()),
                            *[pa.field(c, pa.int64()) for c in COUNT_COLUMNS]])


def summary_counts(batch: pa.RecordBatch | pa.Table) -> pa.Table:
    """Counts per ``(topic, partition, logDir)`` of decided rows (``FULL_SUMMARY_INPUT`` columns):
    ``recordsBefore`` (rows), ``recordsAfter`` (kept), ``keys`` (latest or tombstone),
    ``keysDeleted`` (tombstone), ``recordsSuperseded``, ``nullKeyRecords``; one row per group
    (``FULL_SUMMARY_COLUMNS``).  Partial counts of one stream add up (:func:`merge_counts`)."""
    import pyarrow.compute as pc

    table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
    reason, decision = table.column("reason"), table.column("decision")
    flags = {
        "recordsBefore": pc.is_valid(reason),
        "recordsAfter": pc.equal(decision, "keep"),
        "keys": pc.is_in(reason, value_set=pa.array(["latest", "tombstone"])),
        "keysDeleted": pc.equal(reason, "tombstone"),
        "recordsSuperseded": pc.equal(reason, "superseded"),
        "nullKeyRecords": pc.equal(reason, "null-key"),
    }
    flat = pa.table({**{c: table.column(c) for c in FULL_GROUP},
                     **{c: pc.cast(v, pa.int64()) for c, v in flags.items()}})
    summed = flat.group_by(list(FULL_GROUP)).aggregate([(c, "sum") for c in COUNT_COLUMNS])
    return pa.table({**{c: summed.column(c).cast(COUNTS_SCHEMA.field(c).type) for c in FULL_GROUP},
                     **{c: summed.column(f"{c}_sum") for c in COUNT_COLUMNS}}, schema=COUNTS_SCHEMA)


def merge_counts(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Partial :func:`summary_counts` rows (dicts) added up per group, in group order."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        key = tuple(row[c] for c in FULL_GROUP)
        acc = out.setdefault(key, {**{c: row[c] for c in FULL_GROUP}, **{c: 0 for c in COUNT_COLUMNS}})
        for c in COUNT_COLUMNS:
            acc[c] += int(row[c] or 0)
    return [out[k] for k in sorted(out, key=lambda k: tuple("" if v is None else v for v in k))]


# --- the local engine: rows of one partition in key order, in bounded memory ------------------------
_ORDER = [("key", "ascending"), ("offset", "ascending")]


def sorted_by_key(batches: Iterable[pa.RecordBatch], schema: pa.Schema, *, sort_buffer: int = SORT_BUFFER,
                  work_dir: str | None = None) -> Iterator[pa.RecordBatch]:
    """The rows of ``batches`` (one partition replica: ``offset`` unique) in ``(key, offset)``
    order, null keys first (unsorted).  Rows are sorted ``sort_buffer`` bytes at a time; with more
    than one such run the runs are written to Arrow files in ``work_dir`` (a temporary directory,
    removed at the end) and merged a block at a time, so memory stays near ``sort_buffer``."""
    import pyarrow.compute as pc

    pending: list[pa.RecordBatch] = []
    size = 0
    runs: list[str] = []
    chunk_bytes = max(1, min(SPILL_CHUNK_BYTES, sort_buffer // 64))   # the merge reads a run this much at a time
    tmp: tempfile.TemporaryDirectory[str] | None = None
    try:
        for batch in batches:
            null = pc.is_null(batch.column("key"))
            if pc.any(null).as_py():
                yield batch.filter(null)                   # null keys: each its own run, decided at once
                batch = batch.filter(pc.invert(null))
            if batch.num_rows:
                pending.append(batch)
                size += batch.nbytes
            if size >= sort_buffer:
                if tmp is None:
                    tmp = tempfile.TemporaryDirectory(prefix="klogs-sort-", dir=work_dir)
                runs.append(_spill(pa.Table.from_batches(pending, schema=schema).sort_by(_ORDER), tmp.name,
                                   len(runs), chunk_bytes))
                pending, size = [], 0
                pa.default_memory_pool().release_unused()     # the sorted copy's memory back to the system
        last = pa.Table.from_batches(pending, schema=schema).sort_by(_ORDER)
        if not runs:
            yield from last.to_batches()
            return
        assert tmp is not None
        if last.num_rows:
            runs.append(_spill(last, tmp.name, len(runs), chunk_bytes))
        del pending, last
        yield from _merge(runs, schema, block_bytes=max(1, sort_buffer // (len(runs) + 1)))
    finally:
        if tmp is not None:
            tmp.cleanup()


def _spill(table: pa.Table, directory: str, i: int, chunk_bytes: int) -> str:
    """Write a sorted run to an Arrow file in record batches of about ``chunk_bytes``."""
    import pyarrow.ipc as ipc

    path = os.path.join(directory, f"run-{i:05d}.arrow")
    rows = max(1, table.num_rows * chunk_bytes // max(1, table.nbytes))
    with ipc.new_file(path, table.schema) as writer:
        writer.write_table(table, max_chunksize=rows)
    return path


class _Run:
    """A sorted run file read ``block_bytes`` at a time (memory-mapped record batches)."""

    def __init__(self, path: str, block_bytes: int) -> None:
        import pyarrow.ipc as ipc

        self.reader = ipc.open_file(pa.OSFile(path, "rb"))     # read, not mapped: resident memory stays bounded
        self.next_batch = 0
        self.block_bytes = block_bytes
        self.head: pa.Table | None = None

    def fill(self) -> bool:
        """Top the head up to about ``block_bytes``; False when the run is exhausted."""
        parts = [] if self.head is None or self.head.num_rows == 0 else [self.head]
        size = sum(p.nbytes for p in parts)
        while size < self.block_bytes and self.next_batch < self.reader.num_record_batches:
            batch = self.reader.get_batch(self.next_batch)
            self.next_batch += 1
            parts.append(pa.Table.from_batches([batch]))
            size += batch.nbytes
        self.head = pa.concat_tables(parts) if parts else None
        return self.head is not None and self.head.num_rows > 0


def _merge(paths: Sequence[str], schema: pa.Schema, *, block_bytes: int) -> Iterator[pa.RecordBatch]:
    """k-way merge of sorted run files by ``(key, offset)``: each step takes from every run's head
    the rows up to the smallest last row among the heads (all rows at or below it are in the
    heads), sorts them and yields them."""
    import pyarrow.compute as pc

    runs = [_Run(p, block_bytes) for p in paths]
    live = [r for r in runs if r.fill()]
    while live:
        lasts = []
        for r in live:
            assert r.head is not None
            i = r.head.num_rows - 1
            lasts.append((r.head.column("key")[i].as_py(), r.head.column("offset")[i].as_py()))
        bound_key, bound_offset = min(lasts)
        key_scalar = pa.scalar(bound_key, pa.binary())
        taken: list[pa.Table] = []
        for r in live:
            assert r.head is not None
            key = r.head.column("key")
            below = pc.or_(pc.less(key, key_scalar),
                           pc.and_(pc.equal(key, key_scalar), pc.less_equal(r.head.column("offset"), bound_offset)))
            k = int(pc.sum(below).as_py() or 0)              # the head is sorted: a prefix
            if k:
                taken.append(r.head.slice(0, k))
                r.head = r.head.slice(k)
        yield from pa.concat_tables(taken).sort_by(_ORDER).combine_chunks().to_batches()
        live = [r for r in live if r.fill()]


# --- the local engine: tasks --------------------------------------------------------------------------
def full_read_options(logdirs: str | Sequence[str], *, topics: Sequence[str] | None = None,
                      topic_pattern: str | None = None, remote_storage: str | None = None,
                      remote_storage_format: str = "auto") -> dict[str, str]:
    """The ``kafka-log`` options the table view reads with: committed (``read_committed``), no
    control records, from the log start offset, the longest replica of each partition (a tiered one's
    whole history with ``remote_storage``)."""
    import json

    paths = [logdirs] if isinstance(logdirs, str) else list(logdirs)
    out = {"paths": json.dumps(paths), "topicPattern": topic_selector(topics, topic_pattern),
           "isolationLevel": "read_committed", "includeControlRecords": "false", "startingOffsets": "earliest"}
    if remote_storage is not None:
        out |= {"remoteStorage": remote_storage, "remoteStorageFormat": remote_storage_format}
    return out


@dataclass(frozen=True)
class FullTask:
    """One partition replica's splits, read, sorted, decided and written to ``records_path``."""

    splits: tuple[Any, ...]
    options: Any                  # the parsed read options
    records_path: str
    sort_buffer: int = SORT_BUFFER
    #: the replica's log dir, the ``logDir`` of its rows read from a remote tier (a tiered partition's
    #: history is one replica: its keys meet across the tiers)
    log_dir: str | None = None


def full_tasks(options: dict[str, str], records_dir: str, *, sort_buffer: int = SORT_BUFFER
               ) -> tuple[list[FullTask], list[int], pa.Schema]:
    """One task per partition replica read (its splits in order), their bytes, the rows' schema."""
    from kafka_format.engine.read import read_splits, split_work
    from kafka_format.read.split_reader import arrow_schema

    opts, splits = read_splits(options)
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for s in splits:                  # the longest replica of each partition: one group per partition
        groups.setdefault((s.topic, s.partition), []).append(s)
    tasks = [FullTask(tuple(g), opts, os.path.join(records_dir, f"part-{i:05d}.parquet"), sort_buffer,
                      next((s.log_dir for s in g if s.tier == LOCAL_TIER), g[0].log_dir))
             for i, g in enumerate(groups.values())]
    weights = [sum(split_work(s) for s in t.splits) for t in tasks]
    return tasks, weights, arrow_schema(opts)


def _as_replica_rows(batch: pa.RecordBatch, log_dir: str) -> pa.RecordBatch:
    """A remote tier's rows with the replica's ``logDir`` (``tier`` still says where they were read)."""
    i = batch.schema.get_field_index("logDir")
    cols = list(batch.columns)
    cols[i] = pa.repeat(pa.scalar(redact(log_dir), batch.schema.field(i).type), batch.num_rows)
    return pa.RecordBatch.from_arrays(cols, schema=batch.schema)


def run_full_task(task: FullTask) -> list[dict[str, Any]]:
    """Decide one partition replica's rows, write them to ``task.records_path`` (Parquet, when
    there are rows); its partial counts (:func:`summary_counts` rows)."""
    import pyarrow.parquet as pq

    from kafka_format.read.split_reader import arrow_schema, read_split

    schema = arrow_schema(task.options)
    rows = (_as_replica_rows(b, task.log_dir) if s.tier != LOCAL_TIER and task.log_dir is not None else b
            for s in task.splits for b in read_split(s, task.options))
    counts: list[dict[str, Any]] = []
    writer: pq.ParquetWriter | None = None
    from kafka_format.engine.runtime import attempt

    # the attempt's own temporary file (a speculative copy of the task writes beside it); each
    # attempt's file is the same rows, so whichever is renamed into place last is the task's
    tmp = os.path.join(os.path.dirname(task.records_path), f".{os.path.basename(task.records_path)}.{attempt()}.tmp")
    try:
        for batch in decide_sorted(sorted_by_key(rows, schema, sort_buffer=task.sort_buffer)):
            if batch.num_rows == 0:
                continue
            if writer is None:
                writer = pq.ParquetWriter(tmp, batch.schema)
            writer.write_batch(batch)
            counts.extend(summary_counts(batch).to_pylist())
        if writer is not None:
            writer.close()
            writer = None
            os.replace(tmp, task.records_path)
    finally:
        if writer is not None:
            writer.close()
        if os.path.exists(tmp):
            os.unlink(tmp)
    return merge_counts(counts)


def full_pass(executor: Executor, logdirs: str | Sequence[str], records_dir: str, *,
              topics: Sequence[str] | None = None, topic_pattern: str | None = None,
              sort_buffer: int = SORT_BUFFER, remote_storage: str | None = None,
              remote_storage_format: str = "auto") -> list[dict[str, Any]]:
    """Full mode on ``executor``: one task per partition replica decides its rows and writes them
    to ``records_dir`` as Parquet (one file each; one empty file when there are no rows); the
    per-partition summary returned.  Keys only meet within their partition, so no task needs
    another's rows: memory per task stays near ``sort_buffer`` (:func:`sorted_by_key`), whatever
    the executor."""
    import pyarrow.parquet as pq

    options = full_read_options(logdirs, topics=topics, topic_pattern=topic_pattern, remote_storage=remote_storage,
                                remote_storage_format=remote_storage_format)
    tasks, weights, schema = full_tasks(options, records_dir, sort_buffer=sort_buffer)
    os.makedirs(records_dir, exist_ok=True)
    names = [f"{t.splits[0].topic}-{t.splits[0].partition} ({redact(t.log_dir or t.splits[0].log_dir)})" for t in tasks]
    counts = [row for out in executor.map(run_full_task, tasks, weights=weights, names=names) for row in out]
    if not any(os.path.exists(t.records_path) for t in tasks):
        pq.write_table(decided_schema(schema).empty_table(), os.path.join(records_dir, "part-00000.parquet"))
    return merge_counts(counts)


def full_local(logdirs: str | Sequence[str], records_dir: str, *, topics: Sequence[str] | None = None,
               topic_pattern: str | None = None, sort_buffer: int = SORT_BUFFER) -> list[dict[str, Any]]:
    """:func:`full_pass` on this process's cores."""
    from kafka_format.engine.runtime import LocalExecutor

    return full_pass(LocalExecutor(), logdirs, records_dir, topics=topics, topic_pattern=topic_pattern,
                     sort_buffer=sort_buffer)
