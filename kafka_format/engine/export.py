"""``klogs export``'s batch Parquet export on the job runtime (either executor), and the parts of
an export both engines share (the options, the output claims, the published file listing).

:func:`export_parquet` runs one task per planned split (:func:`export_split`) on the executor it is
given (:mod:`kafka_format.engine.runtime`: this process's cores, or Spark's executors); each task
reads the ``kafka-log`` rows of its split (the data source's own plan and split reader,
:func:`kafka_format.read.split_reader.read_split`), streaming, and converts the columns as
:func:`kafka_format.spark.export.convert_columns` does -- ``key``/``value`` as Kafka's
``StringDeserializer`` (:func:`kafka_format.records.batch_v2.java_utf8`), ``date`` the UTC day of
``timestamp`` (null for ``NO_TIMESTAMP``) -- and writes ``OUT/topic=T/partition=P/part-*.parquet``
(or ``OUT/date=.../``) with ``TIMESTAMP_MICROS`` timestamps under its attempt's directory of the
staging; the driver commits the kept attempts' files (:mod:`kafka_format.output.attempts`) and
publishes the staging by one rename (a store: by the store's publish).  Typed keys and values (``--key-as``/``--value-as avro``, ...)
are decoded by :func:`decode_table` with the plan made on the command line, batch by batch, as the
Spark source's reader decodes them.  Skipped byte ranges (``mode=PERMISSIVE`` or
``DROPMALFORMED``, the latter read as PERMISSIVE with the ``_corrupt`` rows left out) come back
with each split's task and are merged by :func:`merge_skipped`, the rule of both engines.  What
needs Spark's DataFrame writers (:func:`needs_spark`, :mod:`kafka_format.spark.export`): Delta,
``--checkpoint`` (Spark's streaming checkpoint), ``--value-as json`` (Spark's JSON parser decides
what passes).  No pyspark here.
"""

from __future__ import annotations

import itertools
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from kafka_format.common.errors import KafkaFormatError
from kafka_format.output.attempts import AttemptFiles, AttemptRoot, WrittenFile
from kafka_format.output.ownership import OutputRefused, Owner
from kafka_format.output.parquet import write_options, write_row_groups
from kafka_format.output.publish import (
    CRASH_ENV,
    claim_output,
    crash_point,
    local_path,
    read_point,
    staging_dir,
)
from kafka_format.output.store import claim, is_store
from kafka_format.records.record_batch import NO_TIMESTAMP
from kafka_format.storage.fsio import redact

if TYPE_CHECKING:
    from kafka_format.engine.runtime import Executor

__all__ = [
    "BATCH_OWNER",
    "CHECKPOINT_OWNER",
    "DELTA_OWNER",
    "FORMATS",
    "ICEBERG_OWNER",
    "INCREMENTAL_OWNER",
    "KEY_AS",
    "PARQUET_OWNER",
    "PARTITION_LAYOUTS",
    "TYPED_AS",
    "VALUE_AS",
    "ExportError",
    "ExportResult",
    "SplitTasks",
    "check_choice",
    "check_location",
    "convert_table",
    "decode_table",
    "export_local",
    "export_parquet",
    "export_schema",
    "export_split",
    "hold_outputs",
    "merge_skipped",
    "needs_spark",
    "output_owner",
    "parse_partition_by",
    "read_mode",
    "run_split_tasks",
    "skip_reading_options",
    "source_options",
]

FORMATS = ("parquet", "delta", "iceberg")
PARTITION_LAYOUTS: dict[str, tuple[str, ...]] = {"topic,partition": ("topic", "partition"), "date": ("date",)}
TYPED_AS = ("avro", "protobuf", "json-schema", "auto")     # kafka_format.registry.typed.AS_TYPES
KEY_AS = ("binary", "string", *TYPED_AS)
VALUE_AS = ("binary", "string", "json", *TYPED_AS)
MICROS_PER_DAY = 86_400_000_000
PARQUET_OWNER = Owner("export", "parquet")                      # batch Parquet OUT (replaced per run)
INCREMENTAL_OWNER = Owner("export", "parquet-incremental")      # OUT of exportBatch=N directories
DELTA_OWNER = Owner("export", "delta")                          # a Delta table klogs created
CHECKPOINT_OWNER = Owner("export", "checkpoint")                # the Spark checkpoint of --checkpoint
BATCH_OWNER = Owner("export", "micro-batch")                    # one exportBatch=N directory
ICEBERG_OWNER = Owner("export", "iceberg")                      # the warehouse of the default Iceberg catalog
DAY_COLUMN = "klogs_day"        # Iceberg files of --partition-by date: grouped by day, ``date`` kept in the files
class ExportError(KafkaFormatError):
    """The export cannot run or its output location holds something it must not overwrite."""

    code = "EXPORT_FAILED"


@dataclass(frozen=True)
class ExportResult:
    """What one export run published."""

    out: str
    format: str
    partition_by: tuple[str, ...]
    rows: int = 0                                   # rows this run published
    files: int = 0                                  # data files this run published
    batches: tuple[int, ...] = ()                   # micro-batches published by this run
    replayed_batches: tuple[int, ...] = ()          # replayed micro-batches found already published
    version: int | None = None                      # Delta table version after the run
    engine: str = "spark"                           # where it ran: local | spark
    writer: str = "spark"                           # what wrote the files: pyarrow | spark | delta-spark | delta-rs
    typed: dict[str, Any] | None = None             # typed key/value: table types, mode, decode errors
    table: str | None = None                        # Iceberg: the table (NAMESPACE.NAME)
    snapshot: int | None = None                     # Iceberg: the table's snapshot after the run
    # byte ranges the reads of this run skipped (PERMISSIVE, DROPMALFORMED): merge_skipped(...)
    skipped_ranges: tuple[dict[str, Any], ...] = ()

    @property
    def skipped_bytes(self) -> int:
        """The bytes of :attr:`skipped_ranges`."""
        return sum(int(r["length"]) for r in self.skipped_ranges)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (lists for tuples; ``out`` and the skipped ranges' files without URI
        credentials; ``typed`` only when typed columns were exported; ``skipped_bytes`` the sum of
        ``skipped_ranges``)."""
        d = asdict(self)
        d["out"] = redact(str(d["out"]))
        d["skipped_ranges"] = [{**r, "file": redact(str(r["file"]))} for r in self.skipped_ranges]
        d["skipped_bytes"] = self.skipped_bytes
        for optional in ("typed", "table", "snapshot"):
            if d.get(optional) is None:
                d.pop(optional, None)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


# --- skipped byte ranges ------------------------------------------------------------------------
def merge_skipped(found: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """The skipped byte ranges of an export: ``found`` (values of the ``_corrupt`` column, from
    any number of reads) per file, merged where they overlap or touch as ``klogs dump --json``
    and the audit merge them (:func:`kafka_format.log.audit.scan.merge_skipped_ranges`: the
    reason of a merged run's first range), so a range read twice -- by two micro-batches, or
    by two splits of one segment -- is reported once; ``{"file", "position", "length",
    "reason"}`` by file and position."""
    from kafka_format.log.audit.scan import merge_skipped_ranges
    from kafka_format.records.walker import SkippedRange

    by_file: dict[str, list[SkippedRange]] = {}
    for r in found:
        file = redact(str(r["file"]))
        by_file.setdefault(file, []).append(SkippedRange(file, int(r["position"]), int(r["length"]),
                                                         str(r["reason"])))
    out: list[dict[str, Any]] = []
    for file in sorted(by_file):
        ranges = by_file[file]
        limit = max(x.position + x.length for x in ranges)
        out += [{"file": file, "position": m.position, "length": m.length, "reason": m.reason}
                for m in merge_skipped_ranges(ranges, limit, file)]
    return tuple(out)


def read_mode(options: Mapping[str, str]) -> str:
    """The ``mode`` of data-source ``options`` (keys are case-insensitive; FAILFAST by default)."""
    value = next((v for k, v in options.items() if k.lower() == "mode"), "FAILFAST")
    return str(value).strip().upper()


def skip_reading_options(options: Mapping[str, str]) -> dict[str, str]:
    """``options`` as an export reads them: ``mode=DROPMALFORMED`` becomes ``PERMISSIVE`` (the
    skipped ranges arrive as ``_corrupt`` rows, which the export counts, then drops: the ranges of
    both modes are the same), anything else unchanged."""
    if read_mode(options) != "DROPMALFORMED":
        return dict(options)
    return {**{k: v for k, v in options.items() if k.lower() != "mode"}, "mode": "PERMISSIVE"}


# --- options ----------------------------------------------------------------------------------
def parse_partition_by(text: str | Sequence[str]) -> tuple[str, ...]:
    """``"topic,partition"`` or ``"date"`` (or a sequence of the same names) -> column tuple."""
    key = text if isinstance(text, str) else ",".join(text)
    key = ",".join(part.strip() for part in key.split(","))
    if key not in PARTITION_LAYOUTS:
        raise ValueError(f"partition_by must be one of {sorted(PARTITION_LAYOUTS)}, got {text!r}")
    return PARTITION_LAYOUTS[key]


def check_choice(name: str, value: str, choices: Sequence[str]) -> None:
    """A ``ValueError`` naming ``name`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")


def source_options(*, topics: Sequence[str] = (), topic_pattern: str | None = None,
                   isolation_level: str | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """``kafka-log`` options for job flags: ``--topic`` (repeatable) and ``--topic-pattern`` select
    the union (one ``topicPattern`` when both are given: the data source takes only one of them),
    ``--isolation-level``, then ``--option KEY=VALUE`` pass-through (validated by the source)."""
    opts: dict[str, str] = {}
    if topics and topic_pattern is not None:
        alternatives = [re.escape(t) for t in topics] + [f"(?:{topic_pattern})"]
        opts["topicPattern"] = "|".join(alternatives)
    elif topics:
        opts["topics"] = ",".join(topics)
    elif topic_pattern is not None:
        opts["topicPattern"] = topic_pattern
    if isolation_level is not None:
        opts["isolationLevel"] = isolation_level
    opts.update(extra or {})
    return opts


# --- file listings ----------------------------------------------------------------------------
def _hidden(rel: str) -> bool:
    return any(part.startswith((".", "_")) for part in rel.split("/"))


@dataclass(frozen=True)
class _DataFile:
    rel: str              # path relative to the listed root, "/"-separated
    size: int
    rows: int
    mtime_ms: int


def _data_files(fs: pafs.FileSystem, root: str) -> list[_DataFile]:
    """Parquet data files under ``root`` (hidden names skipped), rows from their footers."""
    out: list[_DataFile] = []
    for info in fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True)):
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(root.rstrip("/")) + 1:]
        if _hidden(rel) or not rel.endswith(".parquet"):
            continue
        with fs.open_input_file(info.path) as f:
            rows = pq.ParquetFile(f).metadata.num_rows
        mtime = int(info.mtime.timestamp() * 1000) if info.mtime is not None else int(time.time() * 1000)
        out.append(_DataFile(rel, int(info.size or 0), rows, mtime))
    return sorted(out, key=lambda d: d.rel)


# --- guards -------------------------------------------------------------------------------------
def _is_local(uri: str) -> bool:
    try:
        local_path(uri)
    except ValueError:
        return False
    return True


def output_owner(format: str, incremental: bool) -> Owner:
    """The marker kind of an export's ``OUT``."""
    if format == "delta":
        return DELTA_OWNER
    if format == "iceberg":
        return ICEBERG_OWNER
    return INCREMENTAL_OWNER if incremental else PARQUET_OWNER


def check_location(out: str, *, format: str, incremental: bool) -> None:
    """ValueError unless ``out`` can receive this export: Parquet goes to a local path (published by
    one rename) or, batch only, to ``s3a://`` (:mod:`kafka_format.output.store`'s publish: the
    files copied into place, ``_SUCCESS`` and the marker last); Delta goes anywhere Spark writes;
    Iceberg's default catalog (SQLite in ``WAREHOUSE/catalog.db``) needs a local warehouse (other
    catalogs: :func:`kafka_format.engine.iceberg.check_warehouse`)."""
    if format == "iceberg" and not _is_local(out):
        raise ValueError(f"{out}: the default Iceberg catalog keeps its SQLite database in the warehouse, "
                         f"which must be a local path; name a catalog (--catalog rest:URL or sql:URI) for others")
    if format != "parquet" or _is_local(out):
        return
    if is_store(out) and not incremental:
        return
    if is_store(out):
        raise ValueError(f"{out}: an incremental Parquet export publishes each micro-batch with one rename, "
                         f"which an object store lacks; use --format delta there (exactly once through "
                         f"Delta's commits) or a local --out")
    try:
        local_path(out)
    except ValueError as exc:
        raise ValueError(f"{exc}; a Parquet export may go to s3a://, and Delta (--format delta) anywhere "
                         f"Spark writes") from None


@contextmanager
def hold_outputs(out: str, *, format: str, incremental: bool, checkpoint: str | None = None,
                 inputs: Sequence[str] = (), stores: bool = True) -> Iterator[None]:
    """Claim a local ``OUT`` (and a local ``checkpoint``) for the run: refused unless absent, empty
    or the same kind of klogs export output (:class:`OutputRefused`), locked against a second run
    (:class:`~kafka_format.output.runlock.OutputBusy`).  Re-entrant: the job claims first, the library
    functions again.  ``s3a://`` ones are checked by the same rules
    (:func:`kafka_format.output.store.claim`; no lock there) when ``stores`` (False before a
    session holds S3A's settings); other URIs are not claimed."""
    from contextlib import ExitStack

    if checkpoint is not None and _is_local(out) and _is_local(checkpoint):
        o, c = (os.path.realpath(os.path.abspath(local_path(p))) for p in (out, checkpoint))
        if o == c or c.startswith(o.rstrip(os.sep) + os.sep) or o.startswith(c.rstrip(os.sep) + os.sep):
            raise OutputRefused("the checkpoint and the output overlap", path=checkpoint,
                                expected="a --checkpoint outside --out (and --out outside it)",
                                found=f"--out {out}")
    check_location(out, format=format, incremental=incremental)
    with ExitStack() as stack:
        if _is_local(out):
            stack.enter_context(claim_output(out, output_owner(format, incremental), inputs=inputs))
        elif stores and is_store(out):
            claim(out, output_owner(format, incremental), inputs=inputs)
        if checkpoint is not None and _is_local(checkpoint):
            stack.enter_context(claim_output(checkpoint, CHECKPOINT_OWNER, inputs=inputs, what="checkpoint"))
        elif checkpoint is not None and stores and is_store(checkpoint):
            claim(checkpoint, CHECKPOINT_OWNER, inputs=inputs)
        yield



# --- the local engine ---------------------------------------------------------------------------
def needs_spark(*, format: str, checkpoint: str | None, value_as: str, key_as: str = "binary") -> str | None:
    """Why an export cannot run on the local engine, or None."""
    if format == "delta":
        return "Delta output (delta-spark)"
    if checkpoint is not None and format != "iceberg":     # Iceberg: the table's snapshots are the checkpoint
        return "an incremental export (Spark's streaming checkpoint)"
    if value_as == "json":
        return "--value-as json (Spark's JSON parser)"
    return None


def _java_strings(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Binary -> string as Kafka's ``StringDeserializer`` (``new String(bytes, UTF_8)``)."""
    from kafka_format.records.batch_v2 import java_utf8

    binary = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    try:
        return binary.cast(pa.string())                      # valid UTF-8 (the usual case): unchanged
    except pa.ArrowInvalid:
        return pa.array([None if v is None else java_utf8(v).decode("utf-8") for v in binary.to_pylist()],
                        pa.string())


def convert_table(table: pa.Table, *, partition_by: Sequence[str], key_as: str, value_as: str) -> pa.Table:
    """The exported columns of ``kafka-log`` rows: ``key_as``/``value_as`` ``string`` decoded as
    Java does, ``date`` (UTC day of ``timestamp``, null for ``NO_TIMESTAMP``) when partitioned by it.
    Typed ``key_as``/``value_as`` columns are :func:`decode_table`'s, taken as they are."""
    check_choice("key_as", key_as, KEY_AS)
    check_choice("value_as", value_as, VALUE_AS)
    if value_as == "json":
        raise ValueError("--value-as json needs Spark's JSON parser (--engine spark)")
    needed = ({"key"} if key_as != "binary" else set()) | ({"value"} if value_as != "binary" else set()) \
        | (set(partition_by) - {"date"}) | ({"timestamp"} if "date" in partition_by else set())
    missing = sorted(needed - set(table.column_names))
    if missing:
        raise ExportError("the rows lack columns the export needs (granularity=batch?)",
                          expected="the kafka-log record columns " + ", ".join(missing),
                          found=", ".join(table.column_names))
    out = table
    if key_as == "string":
        out = out.set_column(out.schema.get_field_index("key"), "key", _java_strings(out.column("key")))
    if value_as == "string":
        out = out.set_column(out.schema.get_field_index("value"), "value", _java_strings(out.column("value")))
    if "date" in partition_by:
        micros = out.column("timestamp").combine_chunks().cast(pa.int64()).to_numpy(zero_copy_only=False)
        days = micros // MICROS_PER_DAY
        mask = micros == NO_TIMESTAMP * 1000
        out = out.append_column("date", pa.array(days.astype("int32"), pa.int32(), mask=mask).cast(pa.date32()))
    return out


def decode_table(table: pa.Table, typed: Any) -> tuple[pa.Table, dict[str, int]]:
    """``kafka-log`` rows with the typed columns of ``typed`` (a
    :class:`kafka_format.registry.typed.TypedPlan`) decoded batch by batch and its mode applied
    (:func:`kafka_format.registry.batches.decode_batch`), and the rows that did not decode per column."""
    from kafka_format.registry.batches import decode_batch, typed_schema

    schema = typed_schema(table.schema, typed.plans, typed.mode == "PERMISSIVE")
    counts = {c: 0 for c in typed.plans}
    batches = []
    for batch in table.to_batches():
        decoded, found = decode_batch(batch, typed.plans, typed.mode)
        batches.append(decoded)
        for c, n in found.items():
            counts[c] += n
    return pa.Table.from_batches(batches, schema=schema), counts


@dataclass(frozen=True)
class _SplitExport:
    """One split of an export: read, converted and written under ``root`` by one task."""

    split: Any                    # kafka_format.read.planning.Split
    options: Any                  # the parsed read options
    root: AttemptRoot             # where the task's attempt writes (the output's staging)
    index: int                    # names its files part-<index>-<i>.parquet
    partition_by: tuple[str, ...]
    key_as: str
    value_as: str
    typed: Any = None             # a kafka_format.registry.typed.TypedPlan, or None
    whole_rows: bool = False      # every column in the files, partition columns too (Iceberg's data files)


@dataclass(frozen=True)
class _SplitDone:
    """What one split's task reports: rows that did not decode per typed column, and the values of
    the ``_corrupt`` rows its read yielded (the byte ranges it skipped)."""

    decode_errors: dict[str, int]
    skipped: tuple[dict[str, Any], ...]
    files: AttemptFiles           # the files its attempt wrote (relative to the output's root)
    last_offset: int | None = None    # the highest offset among the rows written (None: no rows)


def _skipped_rows(batch: pa.RecordBatch, drop: bool) -> tuple[pa.RecordBatch, list[dict[str, Any]]]:
    """``batch`` and the ``_corrupt`` values of its rows where set; ``drop``: those rows and the
    column left out (DROPMALFORMED, read as PERMISSIVE)."""
    import pyarrow.compute as pc

    from kafka_format.read.split_reader import CORRUPT_COLUMN

    i = batch.schema.get_field_index(CORRUPT_COLUMN)
    if i < 0:
        return batch, []
    column = batch.column(i)
    found = [v for v in column.to_pylist() if v is not None] if column.null_count < len(column) else []
    if drop:
        if found:
            batch = batch.filter(pc.is_null(column))
        batch = batch.remove_column(i)
    return batch, found


def export_split(task: _SplitExport) -> _SplitDone:
    """One task: stream a split's rows into Parquet files (hive directories of ``partition_by``)
    under its attempt's directory of ``task.root``, typed columns decoded batch by batch
    (:func:`decode_table`'s rule); the files written, the rows that did not decode per typed
    column and the skipped byte ranges.  DROPMALFORMED reads as PERMISSIVE and leaves out the
    ``_corrupt`` rows once their ranges are taken.  Holds one row group's rows at a time
    (:func:`kafka_format.output.parquet.row_groups`; the dataset writer's own groups when
    partitioned by other columns).  The same on every executor."""
    from dataclasses import replace

    import pyarrow.dataset as ds

    from kafka_format.engine.runtime import attempt
    from kafka_format.read.split_reader import arrow_schema, read_split

    read_point(task.split.topic, task.split.partition)
    typed = task.typed if task.typed is not None and task.typed.plans else None
    source = arrow_schema(task.options)
    if typed is not None:
        from kafka_format.registry.batches import typed_schema

        source = typed_schema(source, typed.plans, typed.mode == "PERMISSIVE")
    counts = {c: 0 for c in (typed.plans if typed is not None else ())}
    dropping = task.options.mode == "DROPMALFORMED"
    reading = replace(task.options, mode="PERMISSIVE") if dropping else task.options
    skipped: list[dict[str, Any]] = []

    grouping = (DAY_COLUMN,) if task.whole_rows and "date" in task.partition_by else task.partition_by
    last: list[int] = []

    def convert(table: pa.Table) -> pa.Table:
        out = convert_table(table, partition_by=task.partition_by, key_as=task.key_as, value_as=task.value_as)
        if grouping != task.partition_by:           # files of one day each, the date column kept in them
            out = out.append_column(DAY_COLUMN, out.column("date"))
        if task.whole_rows and out.num_rows:
            import pyarrow.compute as pc

            last.append(int(pc.max(out.column("offset")).as_py()))
        return out

    schema = convert(source.empty_table()).schema

    def converted() -> Iterator[pa.RecordBatch]:
        for batch in read_split(task.split, reading):
            batch, ranges = _skipped_rows(batch, dropping)
            skipped.extend(ranges)
            if not batch.num_rows:
                continue
            table = pa.Table.from_batches([batch])
            if typed is not None:
                table, found = decode_table(table, typed)
                for c, n in found.items():
                    counts[c] += n
            if table.num_rows:
                yield from convert(table).to_batches()

    name = AttemptRoot.directory(task.index, attempt())
    rows = converted()
    first = next(rows, None)
    if first is None:
        return _SplitDone(counts, tuple(skipped), AttemptFiles(name))
    fs, base = task.root.open(task.index, attempt())
    in_files = [n for n in schema.names if n not in grouping or (task.whole_rows and n != DAY_COLUMN)]
    options = write_options(first.select(in_files))
    if set(grouping) <= {"topic", "partition"}:
        # A split is one topic-partition: its rows go to one hive directory, in row groups of many batches.
        keys = {"topic": task.split.topic, "partition": task.split.partition}
        rel = "/".join([*(f"{c}={quote(str(keys[c]), safe='')}" for c in task.partition_by),
                        f"part-{task.index:05d}-0.parquet"])
        path = f"{base}/{rel}"
        if not task.root.is_store:      # a store has no directories (creating one leaves placeholder objects)
            fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        n = write_row_groups(path, pa.schema([schema.field(c) for c in in_files]),
                             (batch.select(in_files) for batch in itertools.chain([first], rows)), options,
                             filesystem=fs)
        written = (WrittenFile(rel, n, int(fs.get_file_info(path).size or 0)),)
        _written_point(task)
        return _SplitDone(counts, tuple(skipped), AttemptFiles(name, written), max(last, default=None))
    part_schema = pa.schema([schema.field(c) for c in grouping])
    files: list[WrittenFile] = []

    def visit(f: Any) -> None:
        files.append(WrittenFile(f.path[len(base) + 1:], int(f.metadata.num_rows), int(f.size)))

    ds.write_dataset(pa.RecordBatchReader.from_batches(schema, itertools.chain([first], rows)), base,
                     filesystem=fs, format="parquet", partitioning=ds.partitioning(part_schema, flavor="hive"),
                     basename_template=f"part-{task.index:05d}-{{i}}.parquet",
                     existing_data_behavior="overwrite_or_ignore", preserve_order=True, file_visitor=visit,
                     create_dir=not task.root.is_store,
                     file_options=ds.ParquetFileFormat().make_write_options(**options))
    _written_point(task)
    return _SplitDone(counts, tuple(skipped), AttemptFiles(name, tuple(sorted(files, key=lambda f: f.rel))),
                      max(last, default=None))


def _written_point(task: _SplitExport) -> None:
    """Test hook: ``export:first-attempt-written:<topic>-<partition>`` kills the process running a
    task's first attempt once its files are written (a Spark Python worker: the task fails and is
    retried; the files the dead attempt left must never reach the output)."""
    from kafka_format.engine.runtime import first_attempt

    if CRASH_ENV in os.environ and first_attempt():
        crash_point(f"export:first-attempt-written:{task.split.topic}-{task.split.partition}")


@dataclass
class SplitTasks:
    """What the tasks of :func:`run_split_tasks` returned, merged on the driver."""

    manifests: list[AttemptFiles]                   # the kept attempts' files, in task order
    decode_errors: dict[str, int]                   # rows that did not decode per typed column
    skipped: list[dict[str, Any]]                   # the ``_corrupt`` values (skipped byte ranges)
    last_offsets: dict[tuple[str, int], int]        # the highest offset written per topic-partition


def run_split_tasks(executor: Executor, root: AttemptRoot, parsed: Any, splits: Sequence[Any], *,
                    partition_by: tuple[str, ...], key_as: str, value_as: str, typed: Any = None,
                    whole_rows: bool = False) -> SplitTasks:
    """One :func:`export_split` task per split of ``splits`` (read with the parsed options
    ``parsed``) on ``executor``, writing under ``root``'s attempts; the merged results.
    ``whole_rows``: the files keep the partition columns (Iceberg's data files)."""
    from kafka_format.engine.read import compiled_decoders, split_weights

    weights, gil_free = split_weights(list(splits), rewritten=True, gil_free=compiled_decoders(typed))
    names = [f"{s.topic}-{s.partition} ({redact(s.log_dir)})" for s in splits]
    root.prepare()
    tasks = [_SplitExport(s, parsed, root, i, partition_by, key_as, value_as, typed, whole_rows)
             for i, s in enumerate(splits)]
    out = SplitTasks([], {}, [], {})
    for split, done in zip(splits, executor.map(export_split, tasks, weights=weights, gil_free=gil_free,
                                                 names=names), strict=True):
        for c, n in done.decode_errors.items():
            out.decode_errors[c] = out.decode_errors.get(c, 0) + n
        out.skipped += done.skipped
        out.manifests.append(done.files)
        if done.last_offset is not None:
            tp = (split.topic, split.partition)
            out.last_offsets[tp] = max(out.last_offsets.get(tp, -1), done.last_offset)
    return out


def export_parquet(executor: Executor, logdirs: Sequence[str], out: str, *, options: Mapping[str, str] | None = None,
                   partition_by: str | Sequence[str] = ("topic", "partition"), key_as: str = "binary",
                   value_as: str = "binary", typed: Any = None) -> ExportResult:
    """A batch Parquet export of ``logdirs`` to ``out``, its tasks on ``executor``, published
    atomically: a local ``out`` replaced by one rename, an ``s3a://`` one by the store's publish
    (:func:`kafka_format.output.store.publish_staged`: files copied into place, ``_SUCCESS`` and the
    marker last).  One task per planned split (the data source's own plan, sized for the
    executor's cores), each streaming its rows to files of its own under its attempt's directory
    and returning their manifest (:func:`export_split`); the driver publishes the files of the
    attempts the executor kept, nothing else (:mod:`kafka_format.output.attempts`).
    ``typed``: the :class:`kafka_format.registry.typed.TypedPlan` of typed ``key_as``/``value_as``."""
    import json
    import uuid

    from kafka_format.engine.read import read_splits
    from kafka_format.output import store as store_output

    cols = parse_partition_by(partition_by)
    check_choice("key_as", key_as, KEY_AS)
    check_choice("value_as", value_as, VALUE_AS)
    on_store = is_store(out)
    if not on_store:
        local_path(out)             # ValueError for other URIs: no atomic publish there
    opts = {**dict(options or {}), "paths": json.dumps(list(logdirs))}
    with hold_outputs(out, format="parquet", incremental=False, inputs=logdirs):
        parsed, splits = read_splits(opts, cores=executor.cores())
        export_schema(parsed, typed, partition_by=cols, key_as=key_as, value_as=value_as)  # refuses early

        def run(root: AttemptRoot) -> tuple[list[AttemptFiles], dict[str, int], list[dict[str, Any]]]:
            ran = run_split_tasks(executor, root, parsed, splits, partition_by=cols, key_as=key_as,
                                  value_as=value_as, typed=typed)
            return ran.manifests, ran.decode_errors, ran.skipped

        if on_store:
            store_output.ensure_publishing(out, PARQUET_OWNER)
            store_output.cleanup(out)                   # a crashed run's staging (the claim made OUT ours)
            staged = store_output.staging_uri(out, uuid.uuid4().hex)
            root = AttemptRoot(staged)
            manifests, counts, skipped = run(root)
            files = root.commit(manifests)
            sources = root.sources(manifests)
            t = store_output.target(staged)
            with t.fs.open_output_stream(t.join(store_output.SUCCESS)):
                pass
            sources[store_output.SUCCESS] = store_output.SUCCESS
            crash_point("export:files-written")
            store_output.publish_staged(staged, out, PARQUET_OWNER, sources=sources)
        else:
            with staging_dir(out, PARQUET_OWNER) as tmp:
                root = AttemptRoot(tmp)
                manifests, counts, skipped = run(root)
                files = root.commit(manifests)
                with open(os.path.join(tmp, "_SUCCESS"), "wb"):
                    pass
                crash_point("export:files-written")
    return ExportResult(out=out, format="parquet", partition_by=cols, rows=sum(f.rows for f in files),
                        files=len(files), engine=executor.name, writer="pyarrow",
                        typed=None if typed is None else typed.report(counts), skipped_ranges=merge_skipped(skipped))


def export_local(logdirs: Sequence[str], out: str, *, options: Mapping[str, str] | None = None,
                 partition_by: str | Sequence[str] = ("topic", "partition"), key_as: str = "binary",
                 value_as: str = "binary", typed: Any = None) -> ExportResult:
    """:func:`export_parquet` on this process's cores (threads for a topic's large segments, a
    process pool for many small files: :func:`kafka_format.engine.run_tasks`)."""
    from kafka_format.engine.runtime import LocalExecutor

    return export_parquet(LocalExecutor(), logdirs, out, options=options, partition_by=partition_by, key_as=key_as,
                          value_as=value_as, typed=typed)


def export_schema(options: Any, typed: Any, *, partition_by: Sequence[str], key_as: str,
                  value_as: str) -> pa.Schema:
    """The schema of the files an export of a read with ``options`` writes (typed columns decoded,
    key and value converted, partition columns added); raises for what it cannot convert, so a
    run refuses before any work."""
    from kafka_format.read.split_reader import arrow_schema

    probe = arrow_schema(options).empty_table()
    if typed is not None and typed.plans:
        probe = decode_table(probe, typed)[0]
    return convert_table(probe, partition_by=partition_by, key_as=key_as, value_as=value_as).schema
