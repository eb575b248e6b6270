"""The ``compaction`` job's cleaner mode: the log cleaner per replica (full mode, the table view, is
:mod:`kafka_format.engine.table_view`).

:func:`cleaner_tasks` plans on the driver (one :class:`CleanerTask` per live replica) and
:func:`run_cleaner_file_task` is the task: plan and clean the replica with
:mod:`kafka_format.log.cleaner`, stream its records with their decisions to Parquet, write its
cleaned segments, return its summary row.  :func:`cleaner_pass` runs the tasks on any executor
(:mod:`kafka_format.engine.runtime`: this process's cores, or Spark tasks); the Parquet files,
segments and summaries are written by the same functions on both.

No pyspark here.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_format.common.errors import KafkaFormatError
from kafka_format.common.topics import METADATA_TOPIC  # re-exported (__all__)
from kafka_format.engine import task_work
from kafka_format.log.topicconfig import ConfigError, TopicConfig, TopicConfigs
from kafka_format.output.ownership import Owner
from kafka_format.records.schema import RECORD_SCHEMA
from kafka_format.storage.fsio import redact
from kafka_format.storage.logdir import LogDirSet, PartitionLog, open_log_dirs
from kafka_format.storage.partition_state import PartitionRef, TopicSelection

if TYPE_CHECKING:
    from kafka_format.engine.runtime import Executor

__all__ = [
    "CLEANER_RECORD_SCHEMA",
    "DECISION_FIELDS",
    "METADATA_TOPIC",
    "SEGMENTS_ATTEMPT_OWNER",
    "SUMMARY_SCHEMA",
    "CleanerTask",
    "ReplicaTaskError",
    "cleaner_pass",
    "cleaner_pass_local",
    "cleaner_tasks",
    "finish_records_dir",
    "finish_segments_dir",
    "refuse_tiered_compaction",
    "run_cleaner_file_task",
    "run_cleaner_task",
    "topic_selector",
    "without_clean_shutdown",
]

# KRaft's metadata log is a Raft log, not a LogManager log: the log cleaner never touches it.

DECISION_FIELDS = (
    pa.field("decision", pa.string()),
    pa.field("reason", pa.string()),
    pa.field("supersededBy", pa.int64()),
)
# the data source's columns (docs/datasource.md) + the decision columns
CLEANER_RECORD_SCHEMA = pa.schema([*RECORD_SCHEMA, *DECISION_FIELDS])

# One row per partition replica the cleaner was asked about (cleaner mode summary).
SUMMARY_SCHEMA = pa.schema([
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("logDir", pa.string()),
    pa.field("brokerId", pa.int32()),
    pa.field("cleanupPolicy", pa.string()),
    pa.field("compact", pa.bool_()),
    pa.field("cleaned", pa.bool_()),              # at least one cleaning round ran (now, or forced)
    pa.field("logStartOffset", pa.int64()),
    pa.field("logEndOffset", pa.int64()),
    pa.field("highWatermark", pa.int64()),
    pa.field("lastStableOffset", pa.int64()),
    pa.field("firstDirtyOffset", pa.int64()),
    pa.field("firstUncleanableOffset", pa.int64()),
    pa.field("cleanBytes", pa.int64()),
    pa.field("cleanableBytes", pa.int64()),
    pa.field("dirtyRatio", pa.float64()),
    pa.field("needsCompactionNow", pa.bool_()),
    pa.field("wouldCleanNow", pa.bool_()),
    pa.field("reason", pa.string()),
    pa.field("rounds", pa.int64()),
    pa.field("recordsBefore", pa.int64()),
    pa.field("recordsAfter", pa.int64()),
    pa.field("bytesBefore", pa.int64()),
    pa.field("bytesAfter", pa.int64()),
    pa.field("tombstonesKept", pa.int64()),
    pa.field("tombstonesRemoved", pa.int64()),
    pa.field("markersKept", pa.int64()),
    pa.field("markersRemoved", pa.int64()),
    pa.field("emptyBatchesKept", pa.int64()),
    pa.field("firstDirtyAfter", pa.int64()),
    pa.field("segmentsDir", pa.string()),         # where --write-segments put this replica, else null
])

_SUMMARY_COLUMN = "_summary"
SEGMENTS_ATTEMPT_OWNER = Owner("compaction", "segments-attempt")   # an executor's partition dir being written
_SUMMARY_TYPE = pa.struct(list(SUMMARY_SCHEMA))
_COMBINED_SCHEMA = CLEANER_RECORD_SCHEMA.append(pa.field(_SUMMARY_COLUMN, _SUMMARY_TYPE))



# --- topic selection -----------------------------------------------------------------------------
def topic_selector(topics: Sequence[str] | None = None, topic_pattern: str | None = None) -> str:
    """The cleaner's topics as one ``re.fullmatch`` pattern: ``--topic``/``--topic-pattern``
    (:class:`TopicSelection`); with neither, every topic but ``__cluster_metadata`` (KRaft cleans its
    metadata log with snapshots, not the log cleaner)."""
    return TopicSelection.of(topics, topic_pattern).regex(unless_named=(METADATA_TOPIC,))


# --- cleaner mode: driver side ---------------------------------------------------------------------
@dataclass(frozen=True)
class CleanerTask(PartitionRef):
    """What one executor task needs to clean one partition replica (picklable, no open files):
    the replica is re-opened from its directory on the executor."""

    config: TopicConfig
    now_ms: int
    force: bool = False
    segments_dest: str | None = None      # <segments dir>/<log-dir name>/<topic>-<partition>, or None
    records_path: str | None = None       # the Parquet file this task writes its record rows to, or None
    batch_rows: int = 8192                # records the cleaner decodes at a time (its working set)
    read_buffer: int | None = None        # bytes read at a time (None: log.cleaner.io.buffer.size)
    weight: int = 0                       # bytes of work, for the local engine's pool (engine.run_tasks)


def _log_dir_names(log_dirs: Iterable[str]) -> dict[str, str]:
    """A directory name per log dir: its base name, made unique with ``-2``, ``-3``... in path order."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for path in sorted(set(log_dirs)):
        base = os.path.basename(path.rstrip("/")) or "logdir"
        name, n = base, 1
        while name in used:
            n += 1
            name = f"{base}-{n}"
        used.add(name)
        out[path] = name
    return out


def cleaner_tasks(logdirs: str | Sequence[str] | LogDirSet, configs: TopicConfigs, now_ms: int, *,
                  topics: Sequence[str] | None = None, topic_pattern: str | None = None, force: bool = False,
                  segments_dir: str | None = None, records_dir: str | None = None,
                  batch_rows: int = 8192) -> list[CleanerTask]:
    """Driver: one task per live partition replica selected (every log dir: each broker's cleaner
    works on its own replica), in (topic, partition, log dir) order.  With ``records_dir`` task
    ``i`` writes its record rows to ``records_dir/part-<i>.parquet``."""
    sets = logdirs if isinstance(logdirs, LogDirSet) else open_log_dirs(
        [logdirs] if isinstance(logdirs, str) else list(logdirs))
    selector = re.compile(topic_selector(topics, topic_pattern))
    replicas = sorted((p for p in sets.all_partitions() if p.kind == "live" and selector.fullmatch(p.topic)),
                      key=lambda p: (p.topic, p.partition, p.log_dir))
    refuse_tiered_compaction(replicas, sets.all_partitions(), configs)
    names = _log_dir_names(p.log_dir for p in replicas)
    return [CleanerTask(
        topic=p.topic, partition=p.partition, path=p.path, log_dir=p.log_dir,
        config=configs[p.topic],
        now_ms=now_ms, force=force,
        segments_dest=(None if segments_dir is None
                       else os.path.join(segments_dir, names[p.log_dir], f"{p.topic}-{p.partition}")),
        records_path=None if records_dir is None else os.path.join(records_dir, f"part-{i:05d}.parquet"),
        batch_rows=batch_rows,
        weight=task_work(rewritten_bytes=p.size_bytes, scanned_segments=len(p.segments)),
    ) for i, p in enumerate(replicas)]


def refuse_tiered_compaction(replicas: Sequence[PartitionLog], found: Sequence[PartitionLog],
                             configs: TopicConfigs) -> None:
    """Kafka refuses a compacted topic with remote storage (``LogConfig.validateNoRemoteStorageForCompactedTopic``:
    "Remote log storage is unsupported for the compacted topics"), so no cleaner ever runs on one:
    :class:`ConfigError` when a replica's ``cleanup.policy`` holds ``compact`` while its config enables
    remote storage or the log dirs' ``__remote_log_metadata`` (among ``found``) holds its partition."""
    compacted = [p for p in replicas if configs[p.topic].compact]
    if not compacted:
        return
    from kafka_format.read.remote_log_metadata import metadata_of, tiered_partition

    view = metadata_of(found) if any(not configs[p.topic].remote_storage_enable for p in compacted) else None
    for p in compacted:
        config = configs[p.topic]
        if config.remote_storage_enable or tiered_partition(view, p) is not None:
            why = ("remote.storage.enable=true" if config.remote_storage_enable
                   else "its partitions in the log dirs' __remote_log_metadata")
            raise ConfigError(f"topic {p.topic!r}: Remote log storage is unsupported for the compacted topics "
                              f"(cleanup.policy={','.join(sorted(config.cleanup_policy))} with {why}: Kafka refuses "
                              "this configuration, LogConfig.validateNoRemoteStorageForCompactedTopic, and no "
                              "cleaner runs on it)")


def finish_segments_dir(segments_dir: str, summary_rows: Iterable[Any]) -> list[str]:
    """Driver, after the cleaner pass wrote ``segments_dir``: remove what failed task attempts left
    (temporary names) and give each ``<log-dir name>/`` the files a broker's log dir holds after the
    broker stopped cleanly (``LogManager.shutdown``), so that it opens as one
    (:func:`kafka_format.storage.logdir.open_log_dirs`, Kafka):

    * ``meta.properties``, copied from the source log dir;
    * the offset checkpoints of its partitions: ``recovery-point-offset-checkpoint`` = the log end
      (flushed and closed), ``log-start-offset-checkpoint`` where the log start offset is beyond the
      partition's first segment (``checkpointLogStartOffsetsInDir``), ``replication-offset-checkpoint``
      (HW, where known) and ``cleaner-offset-checkpoint`` = the first dirty offset after cleaning;
    * ``.kafka_cleanshutdown``, copied from the source log dir (``{"version":0,"brokerEpoch":N}``,
      what 3.9 and 4.x write, N the broker's epoch).  Kafka writes it only over logs that were shut
      down cleanly or recovered at start; the cleaner rewrites closed segments only and copies the
      others, so a source log dir without one (a running or crashed broker's: active segments with
      preallocated indexes, perhaps a partial batch, which the broker recovers on start) gives a
      log dir without one too (:func:`without_clean_shutdown` names them).

    Returns the removed leftovers' paths."""
    from kafka_format.output.ownership import is_klogs_temp, remove_tree
    from kafka_format.output.publish import is_temp_name
    from kafka_format.storage.partition_files import offset_from_name
    from kafka_format.writer.logdir import (
        CLEAN_SHUTDOWN,
        CLEANER_OFFSET_CHECKPOINT,
        LOG_START_OFFSET_CHECKPOINT,
        META_PROPERTIES,
        RECOVERY_POINT_CHECKPOINT,
        REPLICATION_OFFSET_CHECKPOINT,
        encode_offset_checkpoint,
    )

    removed: list[str] = []
    by_dir: dict[str, list[Any]] = {}
    for row in summary_rows:
        if row["segmentsDir"] is not None:
            by_dir.setdefault(os.path.dirname(row["segmentsDir"]), []).append(row)
    for name in sorted(os.listdir(segments_dir)) if os.path.isdir(segments_dir) else []:
        for entry in sorted(os.listdir(os.path.join(segments_dir, name))):
            path = os.path.join(segments_dir, name, entry)
            if is_temp_name(entry) and is_klogs_temp(path):     # a failed attempt's (marked) directory
                remove_tree(path)
                removed.append(path)

    def first_base(partition_dir: str) -> int | None:
        bases = [offset_from_name(n) for n in os.listdir(partition_dir) if n.endswith(".log")]
        return min((b for b in bases if b is not None), default=None)

    for target, rows in by_dir.items():
        files = {
            CLEANER_OFFSET_CHECKPOINT: {(r["topic"], r["partition"]): r["firstDirtyAfter"] for r in rows},
            LOG_START_OFFSET_CHECKPOINT: {(r["topic"], r["partition"]): r["logStartOffset"] for r in rows
                                          if r["logStartOffset"] > (first_base(r["segmentsDir"]) or 0)},
            REPLICATION_OFFSET_CHECKPOINT: {(r["topic"], r["partition"]): r["highWatermark"] for r in rows
                                            if r["highWatermark"] is not None},
            RECOVERY_POINT_CHECKPOINT: {(r["topic"], r["partition"]): r["logEndOffset"] for r in rows},
        }
        for file_name, entries in files.items():
            with open(os.path.join(target, file_name), "wb") as f:
                f.write(encode_offset_checkpoint(entries))
        for file_name in (META_PROPERTIES, CLEAN_SHUTDOWN):
            data = _log_dir_file(str(rows[0]["logDir"]), file_name)
            if data is not None:
                with open(os.path.join(target, file_name), "wb") as f:
                    f.write(data)
    return removed


def without_clean_shutdown(segments_dir: str) -> list[str]:
    """The log dirs of a finished ``segments_dir`` (:func:`finish_segments_dir`) written without
    ``.kafka_cleanshutdown``, because their source log dirs have none: names, sorted."""
    from kafka_format.writer.logdir import CLEAN_SHUTDOWN

    names = sorted(os.listdir(segments_dir)) if os.path.isdir(segments_dir) else []
    return [n for n in names if os.path.isdir(os.path.join(segments_dir, n))
            and not os.path.exists(os.path.join(segments_dir, n, CLEAN_SHUTDOWN))]


def _log_dir_file(log_dir: str, name: str) -> bytes | None:
    """The bytes of the source log dir's own file ``name`` (``meta.properties``,
    ``.kafka_cleanshutdown``): None when it has none, or when ``log_dir`` is a location shown with
    its secret redacted, which cannot be opened again."""
    from kafka_format.storage.fsio import REDACTED, resolve

    if f":{REDACTED}@" in log_dir:
        return None
    handle, path = resolve(log_dir)
    target = handle.join(path, name)
    return handle.read_bytes(target) if handle.stat(target) is not None else None


def finish_records_dir(records_dir: str) -> None:
    """A records directory where no task wrote records gets one empty file with the schema."""
    import pyarrow.parquet as pq

    os.makedirs(records_dir, exist_ok=True)
    if not any(n.endswith(".parquet") and not n.startswith((".", "_")) for n in os.listdir(records_dir)):
        pq.write_table(CLEANER_RECORD_SCHEMA.empty_table(), os.path.join(records_dir, "part-empty.parquet"))


# --- cleaner mode: one task -------------------------------------------------------------------------
def run_cleaner_file_task(task: CleanerTask) -> list[dict[str, Any]]:
    """One task whose records go to ``task.records_path``: its summary rows (``SUMMARY_SCHEMA``
    dicts).  A failure names the replica it happened in (:class:`ReplicaTaskError`).  Test hook:
    ``KLA_CRASH_AT=cleaner:jvm`` kills the Spark JVM the task's worker serves
    (:func:`kafka_format.output.publish.crash_point`)."""
    from kafka_format.output.publish import crash_point

    crash_point("cleaner:jvm", jvm=True)
    try:
        return [row for out in run_cleaner_task(task) for row in out.column(_SUMMARY_COLUMN).to_pylist()
                if row is not None]
    except (KafkaFormatError, OSError, MemoryError, RuntimeError) as exc:
        raise ReplicaTaskError(redact(f"{task.topic}-{task.partition} ({task.log_dir}): "
                                      f"{type(exc).__name__}: {exc}")) from exc


class ReplicaTaskError(RuntimeError):
    """A cleaner task failed; the message starts with ``<topic>-<partition> (<log dir>)``."""


def run_cleaner_task(task: CleanerTask) -> Iterator[pa.RecordBatch]:
    """Executor: plan and clean one replica, then yield its records joined with the decisions
    (``CLEANER_RECORD_SCHEMA`` columns + a null ``_summary``) and finally one summary row (record
    columns null but the partition's, ``_summary`` set).  Writes the cleaned replica when the task
    says so."""
    from kafka_format.log import cleaner as core

    replica = task.open()
    inputs = core.plan_inputs(replica, task.config, task.now_ms)      # one header scan for both
    plan = core.plan_from(replica, task.config, task.now_ms, inputs, replica.cleaner_offset_checkpoint)
    policy = ",".join(sorted(task.config.cleanup_policy))
    summary: dict[str, Any] = {
        "topic": task.topic, "partition": task.partition, "logDir": redact(replica.log_dir),
        "brokerId": replica.broker_id, "cleanupPolicy": policy, "compact": bool(plan.compact), "cleaned": False,
        "logStartOffset": plan.log_start_offset, "logEndOffset": plan.log_end_offset,
        "highWatermark": plan.high_watermark, "lastStableOffset": plan.last_stable_offset,
        "firstDirtyOffset": plan.first_dirty_offset, "firstUncleanableOffset": plan.first_uncleanable_offset,
        "cleanBytes": plan.clean_bytes, "cleanableBytes": plan.cleanable_bytes,
        "dirtyRatio": float(plan.dirty_ratio), "needsCompactionNow": bool(plan.needs_compaction_now),
        "wouldCleanNow": bool(plan.would_clean_now),
        "reason": plan.reason if plan.compact else f"cleanup.policy={policy}", "segmentsDir": None,
    }
    if plan.compact:
        try:
            # work files in Spark's own local dir (SPARK_LOCAL_DIRS, set for Python workers): removed with
            # it even when the worker is killed before the result is closed
            local_dirs = [d for d in os.environ.get("SPARK_LOCAL_DIRS", "").split(",") if d and os.path.isdir(d)]
            result = core.clean_partition(replica, task.config, task.now_ms, force=task.force,
                                          batch_rows=task.batch_rows, read_buffer=task.read_buffer,
                                          work_dir=local_dirs[0] if local_dirs else None, inputs=inputs)
        except KafkaFormatError as exc:
            # LogCleaner.cleanFilthiestLog: a failed cleaning marks the partition uncleanable and the
            # log stays as it is.  Reported in the summary (the error names file and position);
            # the partition contributes no record rows.
            summary.update({"wouldCleanNow": False, "reason": f"uncleanable: {exc}"})
            yield _summary_row(summary)
            return
        try:
            joined = _joined_records(replica, result, plan.log_start_offset, task.batch_rows)
            if task.records_path is None:
                for batch in joined:
                    yield pa.RecordBatch.from_arrays([*batch.columns, pa.nulls(batch.num_rows, _SUMMARY_TYPE)],
                                                     schema=_COMBINED_SCHEMA)
            else:
                _write_parquet(task.records_path, joined)
            summary.update({
                "cleaned": result.rounds > 0, "rounds": result.rounds,
                "recordsBefore": result.records_before, "recordsAfter": result.records_after,
                "bytesBefore": result.bytes_before, "bytesAfter": result.bytes_after,
                "tombstonesKept": result.tombstones_kept, "tombstonesRemoved": result.tombstones_removed,
                "markersKept": result.markers_kept, "markersRemoved": result.markers_removed,
                "emptyBatchesKept": result.empty_batches_kept, "firstDirtyAfter": result.first_dirty_after,
            })
            if task.segments_dest is not None:
                _write_segments(replica, task, result)
                summary["segmentsDir"] = task.segments_dest
        finally:
            result.close()                    # the cleaner's work files (decisions, cleaned segments)
    yield _summary_row(summary)


def _write_segments(replica: PartitionLog, task: CleanerTask, result: Any) -> None:
    """Write the cleaned replica to ``task.segments_dest``: into ``part/`` of a fresh sibling that
    carries the ownership marker, then renamed into place and the sibling removed (a retried task
    replaces what an earlier attempt left; :func:`finish_segments_dir` removes a killed attempt's
    marked sibling)."""
    from kafka_format.log import cleaner as core
    from kafka_format.output.ownership import new_run_id, remove_tree, write_marker

    dest = task.segments_dest
    assert dest is not None
    parent, name = os.path.split(dest)
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".{name}.tmp-{uuid.uuid4().hex}")
    os.mkdir(tmp)
    try:
        write_marker(tmp, SEGMENTS_ATTEMPT_OWNER, new_run_id())
        part = os.path.join(tmp, "part")
        os.mkdir(part)
        core.write_cleaned_partition(replica, task.config, task.now_ms, part, result=result)
        remove_tree(dest)                     # an earlier attempt's result (inside our own staging)
        os.rename(part, dest)
    finally:
        remove_tree(tmp)


class _DecisionCursor:
    """The cleaner's decisions (offset order, streamed from its work files) taken ``n`` rows at a time."""

    def __init__(self, batches: Iterator[pa.RecordBatch]) -> None:
        self.batches = batches
        self.buf: pa.RecordBatch | None = None
        self.taken = 0

    def take(self, n: int) -> pa.Table:
        from kafka_format.log.cleaner import DECISION_SCHEMA

        parts: list[pa.RecordBatch] = []
        while n > 0:
            if self.buf is None or self.buf.num_rows == 0:
                self.buf = next(self.batches, None)
                if self.buf is None:
                    break
            part = self.buf.slice(0, n)
            self.buf = self.buf.slice(part.num_rows)
            parts.append(part)
            n -= part.num_rows
        self.taken += sum(p.num_rows for p in parts)
        return pa.Table.from_batches(parts, schema=DECISION_SCHEMA)

    def rest(self) -> int:
        left = 0 if self.buf is None else self.buf.num_rows
        for batch in self.batches:
            left += batch.num_rows
        return left


def _joined_records(replica: PartitionLog, result: Any, log_start_offset: int,
                    batch_rows: int = 65536) -> Iterator[pa.RecordBatch]:
    """Decode the replica's segments (streaming, FAILFAST) and attach each record's decision.

    Both streams are in offset order: every decoded record at or above ``log_start_offset`` must
    meet its own decision row (the core decides every record there, control records included)."""
    from kafka_format.read.planning import open_input
    from kafka_format.records.columns import FileContext
    from kafka_format.records.file_records import decode_segment

    cursor = _DecisionCursor(result.iter_decisions())
    name = f"{replica.topic}-{replica.partition} ({redact(replica.log_dir)})"
    for seg in replica.segments:
        if seg.log_path is None:
            continue
        ctx = FileContext(path=redact(seg.log_path), topic=replica.topic, partition=replica.partition,
                          segment=seg.base_offset, log_dir=redact(replica.log_dir), broker_id=replica.broker_id)
        with open_input(seg.log_path) as f:
            for batch in decode_segment(f, context=ctx, max_rows_per_batch=batch_rows):
                off = batch.column("offset").to_numpy(zero_copy_only=False)
                keep = off >= log_start_offset
                if not keep.all():
                    batch = batch.filter(pa.array(keep))
                    off = off[keep]
                if batch.num_rows == 0:
                    continue
                dec = cursor.take(batch.num_rows)
                got = dec.column("offset").to_numpy()
                if len(got) != len(off) or not bool((got == off).all()):
                    bad = next((int(o) for i, o in enumerate(off) if i >= len(got) or got[i] != o), int(off[0]))
                    raise RuntimeError(f"{name}: the cleaner core gave no decision for offset {bad}")
                yield pa.RecordBatch.from_arrays(
                    [*batch.columns, dec.column("decision").combine_chunks(), dec.column("reason").combine_chunks(),
                     dec.column("supersededBy").combine_chunks().cast(pa.int64())],
                    schema=CLEANER_RECORD_SCHEMA)
    left = cursor.rest()
    if left:
        raise RuntimeError(f"{name}: the cleaner core decided {cursor.taken + left} records, the log holds "
                           f"{cursor.taken} at or above {log_start_offset}")


PARQUET_ROW_GROUP_BYTES = 32 << 20   # record rows buffered before a row group is written


def _write_parquet(path: str, batches: Iterable[pa.RecordBatch]) -> None:
    """Stream ``batches`` (``CLEANER_RECORD_SCHEMA``) into the Parquet file ``path``: a hidden
    temporary sibling first, renamed at the end; at most ~``PARQUET_ROW_GROUP_BYTES`` of rows
    held at a time."""
    import pyarrow.parquet as pq

    parent, name = os.path.split(path)
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".{name}.tmp-{uuid.uuid4().hex}")
    try:
        with pq.ParquetWriter(tmp, CLEANER_RECORD_SCHEMA) as writer:
            pending: list[pa.RecordBatch] = []
            size = 0
            for batch in batches:
                pending.append(batch)
                size += batch.nbytes
                if size >= PARQUET_ROW_GROUP_BYTES:
                    writer.write_table(pa.Table.from_batches(pending, schema=CLEANER_RECORD_SCHEMA))
                    pending, size = [], 0
            if pending:
                writer.write_table(pa.Table.from_batches(pending, schema=CLEANER_RECORD_SCHEMA))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _summary_row(summary: dict[str, Any]) -> pa.RecordBatch:
    struct = pa.array([{f.name: summary.get(f.name) for f in SUMMARY_SCHEMA}], type=_SUMMARY_TYPE)
    cols = []
    for f in CLEANER_RECORD_SCHEMA:
        if f.name == "topic":
            cols.append(pa.array([summary["topic"]], f.type))
        elif f.name == "partition":
            cols.append(pa.array([summary["partition"]], f.type))
        elif f.name == "logDir":
            cols.append(pa.array([summary["logDir"]], f.type))
        elif f.name == "brokerId":
            cols.append(pa.array([summary["brokerId"]], f.type))
        elif f.name == "headers":
            cols.append(pa.array([[]], f.type))
        else:
            cols.append(pa.nulls(1, f.type))
    return pa.RecordBatch.from_arrays([*cols, struct], schema=_COMBINED_SCHEMA)


# --- cleaner mode: the local engine -----------------------------------------------------------------
def cleaner_pass(executor: Executor, logdirs: str | Sequence[str] | LogDirSet, configs: TopicConfigs, now_ms: int,
                 *, records_dir: str, topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                 force: bool = False, segments_dir: str | None = None, batch_rows: int = 8192) -> list[dict[str, Any]]:
    """Run the log cleaner on every selected replica, one task each on ``executor``; the summary
    rows (``SUMMARY_SCHEMA`` dicts, task order).

    Each task streams its replica's records with their decisions to ``records_dir/part-<i>.parquet``
    (``CLEANER_RECORD_SCHEMA``, written to a hidden temporary name and renamed: a retried task
    replaces what an earlier attempt left) and, with ``segments_dir``, its cleaned segments; only
    the one-row summaries come back, so memory on the driver does not grow with the records.
    ``records_dir`` and ``segments_dir`` must be paths the executor's tasks can write (this
    machine, Spark's local mode, or a shared file system).  A directory where no task wrote
    records gets one empty file with the schema."""
    from kafka_format.engine import TaskFailed

    tasks = cleaner_tasks(logdirs, configs, now_ms, topics=topics, topic_pattern=topic_pattern, force=force,
                          segments_dir=segments_dir, records_dir=records_dir, batch_rows=batch_rows)
    os.makedirs(records_dir, exist_ok=True)
    names = [f"{t.topic}-{t.partition} ({redact(t.log_dir)})" for t in tasks]
    try:
        rows = [row for out in executor.map(run_cleaner_file_task, tasks, weights=[t.weight for t in tasks],
                                            names=names) for row in out]
    except ReplicaTaskError as exc:
        raise TaskFailed(str(exc)) from exc
    finish_records_dir(records_dir)
    return rows


def cleaner_pass_local(logdirs: str | Sequence[str], configs: TopicConfigs, now_ms: int, *, records_dir: str,
                       topics: Sequence[str] | None = None, topic_pattern: str | None = None,
                       force: bool = False, segments_dir: str | None = None,
                       batch_rows: int = 8192) -> list[dict[str, Any]]:
    """:func:`cleaner_pass` on this process's cores."""
    from kafka_format.engine.runtime import LocalExecutor

    return cleaner_pass(LocalExecutor(), logdirs, configs, now_ms, records_dir=records_dir, topics=topics,
                        topic_pattern=topic_pattern, force=force, segments_dir=segments_dir, batch_rows=batch_rows)
