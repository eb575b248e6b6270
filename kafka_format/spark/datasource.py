"""The ``kafka-log`` PySpark data source: Kafka log dirs read offline as a DataFrame.

Name
    ``kafka-log`` — ``spark.read.format("kafka-log").load(path)`` after
    :func:`kafka_format.spark.register` (done by ``build_session``).

Options
    See :mod:`kafka_format.spark.options` and docs/datasource.md (Spark Kafka source names where the
    idea exists: ``topics``/``topicPattern``/``assign``, ``startingOffsets``/``endingOffsets``,
    ``startingTimestamp``/``endingTimestamp``/``*OffsetsByTimestamp``, ``isolationLevel``,
    ``includeHeaders``, plus ``includeControlRecords``, ``granularity``, ``maxBytesPerPartition``,
    ``minPartitions``, ``replicas``, ``mode``, ``upTo``, ``verifyCrc``; streaming:
    ``maxOffsetsPerTrigger``, ``maxBytesPerTrigger``).

Schema
    ``RECORD_SCHEMA`` of :mod:`kafka_format.schema` (``headers`` only with ``includeHeaders=true``,
    the default, as in Spark's source); ``BATCH_SCHEMA`` for ``granularity=batch``; with
    ``mode=PERMISSIVE`` an extra ``_corrupt`` struct column (``file``, ``position``, ``length``,
    ``reason``), null on good rows, set on one row per skipped byte range.

Partitioning strategy
    Discovery is :func:`kafka_format.logdir.open_log_dirs` (a partition dir, a log dir, or a
    parent of several brokers' log dirs; the broker's swap/cleaned reconciliation), then
    :func:`kafka_format.planning.plan_splits` on the driver: ~``maxBytesPerPartition`` of log
    per Spark partition, cut at ``.index`` positions (batch boundaries), small segments packed
    together, ``minPartitions`` honoured as a hint.  One Spark partition never spans two
    topic-partitions.

Pushdown
    ``pushFilters`` (Spark 4.1+, ``spark.sql.python.filterPushdown.enabled=true``): see
    :mod:`kafka_format.spark.filters` for what is handled and what is returned to Spark.

Performance notes
    ``read()`` streams: it decodes one split chunk by chunk with ``decode_segment`` and yields
    Arrow record batches, never a whole segment in memory.  Files are opened in ``read()``.

Streaming
    ``spark.readStream.format("kafka-log")`` (:class:`KafkaLogStreamReader`): offsets are
    ``{"topic": {"partition": nextOffset}}``; each micro-batch reads ``[previous end, current log
    end)`` per partition, so ``trigger(availableNow=True)`` with a checkpoint reads each record
    once across runs.  Ending options are rejected; ``startingOffsets=latest`` is allowed.
    ``maxOffsetsPerTrigger`` / ``maxBytesPerTrigger`` bound each micro-batch (admission control;
    ``availableNow`` then runs several micro-batches up to the end fixed at its start).

Examples
    >>> spark.read.format("kafka-log").option("topics", "orders").load("/var/lib/kafka/data")  # doctest: +SKIP
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, Filter, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from kafka_format.errors import CorruptRecordError, KafkaFormatError
from kafka_format.fsio import redact
from kafka_format.logdir import PartitionLog
from kafka_format.planning import (
    DEFAULT_OPEN_COST_BYTES,
    Bounds,
    PlanOptions,
    SegmentRange,
    Split,
    check_assignment,
    last_stable_offset,
    log_end_offset,
    open_partitions,
    plan_splits,
)
from kafka_format.records.control import ControlRecordType, parse_control_key
from kafka_format.schema import BATCH_SCHEMA, CORRUPT_TYPE, RECORD_SCHEMA
from kafka_format.spark.filters import Pushed, push_filters
from kafka_format.spark.options import KafkaLogOptionError, ReadOptions, parse_options

__all__ = ["KafkaLogDataSource", "KafkaLogReader", "KafkaLogStreamReader", "SplitPartition", "arrow_schema",
           "bind_session_sizing"]

CORRUPT_COLUMN = "_corrupt"
# Records.LOG_OVERHEAD (clients/.../record/Records.java): baseOffset int64, size int32 of every entry
LOG_ENTRY = struct.Struct(">qi")
ZERO_CHECK_CHUNK = 1 << 20


def arrow_schema(opts: ReadOptions) -> pa.Schema:
    """Arrow schema of the rows a read with these options yields."""
    schema = BATCH_SCHEMA if opts.granularity == "batch" else RECORD_SCHEMA
    if opts.granularity == "record" and not opts.include_headers:
        schema = schema.remove(schema.get_field_index("headers"))
    if opts.mode == "PERMISSIVE":
        schema = schema.append(pa.field(CORRUPT_COLUMN, CORRUPT_TYPE))
    return schema


@dataclass
class SplitPartition(InputPartition):
    """A planned :class:`~kafka_format.planning.Split` as a Spark input partition (picklable)."""

    split: Split


class KafkaLogDataSource(DataSource):
    """Kafka log dirs (``.log`` + indexes + checkpoints) as a batch DataFrame."""

    @classmethod
    def name(cls) -> str:
        """``kafka-log``."""
        return "kafka-log"

    def _parsed(self) -> ReadOptions:
        return parse_options(dict(self.options))

    def schema(self) -> StructType:
        """Driver, at load time: the Spark schema for the options (errors for bad options here)."""
        return from_arrow_schema(arrow_schema(self._parsed()))

    # The session's sizing (set by :func:`bind_session_sizing` on the class ``register`` registers:
    # the planner runs in a Python worker that has no SparkContext to ask).
    default_parallelism: int | None = None
    open_cost_bytes: int = DEFAULT_OPEN_COST_BYTES

    def reader(self, schema: StructType) -> KafkaLogReader:
        """Driver: a reader holding the parsed options (pushdown then planning)."""
        opts = self._parsed()
        if self.default_parallelism:
            opts = replace(opts, plan=replace(opts.plan, default_parallelism=self.default_parallelism,
                                              open_cost_bytes=self.open_cost_bytes))
        return KafkaLogReader(opts)

    def streamReader(self, schema: StructType) -> KafkaLogStreamReader:
        """Driver: incremental reads; offsets are per topic-partition next offsets."""
        return KafkaLogStreamReader(parse_options(dict(self.options), streaming=True))


class KafkaLogReader(DataSourceReader):
    """Plans splits on the driver (``pushFilters``, ``partitions``) and decodes them on executors."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self.pushed = Pushed()
        self.accepted: list[Filter] = []

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Driver, once at planning: keep what planning/read prove exactly, yield the rest."""
        self.pushed, self.accepted, returned = push_filters(
            filters, record_granularity=self.opts.granularity == "record")
        yield from returned

    def plan(self) -> list[Split]:
        """Driver: discovery + :func:`plan_splits` with options and pushed filters."""
        opts, pushed = self.opts, self.pushed
        replicas = open_partitions(list(opts.paths))
        try:
            check_assignment(replicas, opts.plan, opts.bounds)
        except ValueError as e:
            raise KafkaLogOptionError("startingOffsets/endingOffsets", str(e)) from None
        if pushed.impossible:
            return []
        replicas = [r for r in replicas if pushed.selects(r.topic, r.partition)]
        bounds: Bounds = replace(opts.bounds, min_offset=pushed.min_offset, max_offset=pushed.max_offset,
                                 min_timestamp=pushed.min_timestamp)
        plan: PlanOptions = replace(opts.plan, require_all_partitions=False)
        return plan_splits(replicas, plan, bounds)

    def partitions(self) -> Sequence[InputPartition]:
        """Driver, once: one input partition per planned split (at least one, possibly empty)."""
        splits = self.plan()
        if not splits:
            return [InputPartition(None)]
        return [SplitPartition(s) for s in splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Executor, once per split: decoded rows of the split as Arrow record batches."""
        split = getattr(partition, "split", None)
        if split is None:
            return iter(())
        return read_split(split, self.opts)


class KafkaLogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``readStream`` over log dirs that keep growing (or new snapshots of them).

    Offsets are JSON ``{"topic": {"partition": nextOffset}}`` like Spark's Kafka source; the
    latest offset of a partition is its log end offset (``upTo=highWatermark``: the HW;
    ``read_committed``: the LSO).  ``replicas=all`` is not supported for streams (one copy per
    topic-partition is needed for a single offset).

    Admission control (Spark 4.2's ``latestOffset(start, limit)``): ``maxOffsetsPerTrigger``
    caps the offsets of a micro-batch, shared among partitions in proportion to their backlog
    exactly as Spark's Kafka source does (``KafkaMicroBatchStream.rateLimit``: a share below one
    is rounded up so no partition starves, else down); ``maxBytesPerTrigger`` caps the bytes of
    log the same way, each partition's share cut at an index entry (at least one index interval
    per partition with a backlog).  ``trigger(availableNow=True)`` fixes the end of every
    partition when the query starts (:meth:`prepareForTriggerAvailableNow`) and runs as many
    bounded micro-batches as it takes to reach it.
    """

    def __init__(self, opts: ReadOptions) -> None:
        if opts.plan.replicas == "all":
            raise KafkaLogOptionError("replicas", "replicas=all cannot be streamed; use longest")
        self.opts = opts
        self.target: dict[tuple[str, int], int] | None = None     # Trigger.AvailableNow's end

    def _replicas(self) -> list[PartitionLog]:
        plan = self.opts.plan
        by_tp: dict[tuple[str, int], PartitionLog] = {}
        for r in open_partitions(list(self.opts.paths)):
            if plan.selects(r.topic, r.partition):
                cur = by_tp.get((r.topic, r.partition))
                if cur is None or (log_end_offset(r), r.leader_epoch or -1) > (log_end_offset(cur), cur.leader_epoch or -1):
                    by_tp[(r.topic, r.partition)] = r
        return [by_tp[tp] for tp in sorted(by_tp)]

    def _upper(self, r: PartitionLog) -> int:
        upper = log_end_offset(r)
        if (self.opts.plan.up_to == "highWatermark" or self.opts.plan.read_committed) \
                and r.high_watermark is not None:
            upper = min(upper, r.high_watermark)
        if self.opts.plan.read_committed:
            upper = last_stable_offset(r, upper)
        return upper

    def initialOffset(self) -> dict:
        """Driver: ``startingOffsets`` (earliest = log start offset, latest = current end)."""
        out: dict[str, dict[str, int]] = {}
        for r in self._replicas():
            given = self.opts.bounds.start.get((r.topic, r.partition), -1 if self.opts.start_latest else -2)
            if given == -2:
                value = r.log_start_offset
            elif given == -1:
                value = self._upper(r)
            else:
                value = given
            out.setdefault(r.topic, {})[str(r.partition)] = value
        return out

    def getDefaultReadLimit(self) -> ReadLimit:
        """Driver: the limit the options ask for (``maxOffsetsPerTrigger`` first, then
        ``maxBytesPerTrigger``; with both, both apply); none given = everything available."""
        if self.opts.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.max_bytes_per_trigger is not None:
            return ReadMaxBytes(self.opts.max_bytes_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Driver, once at the start of an ``availableNow`` query: every partition's current end
        is the query's target; nothing written later is read by this query."""
        self.target = {(r.topic, r.partition): self._upper(r) for r in self._replicas()}

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        """Driver: the end of the next micro-batch: every selected partition's current end (the
        ``availableNow`` target once fixed), never below ``start``, cut to the read limit."""
        begin = {(t, int(p)): int(o) for t, ps in (start or {}).items() for p, o in ps.items()}
        ends: dict[tuple[str, int], int] = {}
        earliest: dict[tuple[str, int], int] = {}
        for r in self._replicas():
            tp = (r.topic, r.partition)
            if self.target is not None and tp not in self.target:
                continue                                # appeared after the availableNow target
            end = self.target[tp] if self.target is not None else self._upper(r)
            ends[tp] = end if tp not in begin else max(begin[tp], end)
            earliest[tp] = r.log_start_offset
        max_offsets, max_bytes = self._limits(limit)
        if start is not None and (max_offsets is not None or max_bytes is not None):
            first = {tp: begin.get(tp, earliest[tp]) for tp in ends}
            if max_offsets is not None:
                ends = _rate_limit(max_offsets, first, ends, {tp: ends[tp] - first[tp] for tp in ends})
            if max_bytes is not None:
                ends = self._bytes_limit(max_bytes, first, ends)
        out: dict[str, dict[str, int]] = {}
        for (t, p), o in sorted(ends.items()):
            out.setdefault(t, {})[str(p)] = o
        return out

    def _limits(self, limit: ReadLimit | None) -> tuple[int | None, int | None]:
        """(max offsets, max bytes) for ``limit`` (``ReadAllAvailable``/None: neither, as the
        engine asks, e.g. for ``Trigger.Once``)."""
        if limit is None or isinstance(limit, ReadAllAvailable):
            return None, None
        offsets = limit.max_rows if isinstance(limit, ReadMaxRows) else self.opts.max_offsets_per_trigger
        size = limit.max_bytes if isinstance(limit, ReadMaxBytes) else self.opts.max_bytes_per_trigger
        return offsets, size

    def _bytes_limit(self, limit: int, first: dict[tuple[str, int], int],
                     ends: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """Each partition's share of ``limit`` bytes (prorated by backlog bytes) as an end offset:
        whole planned ranges (cut at index entries) while they fit, at least one."""
        wanted = sorted(tp for tp in ends if ends[tp] > first[tp])
        if not wanted:
            return ends
        assign: dict[str, tuple[int, ...]] = {}
        for t, p in wanted:
            assign[t] = (*assign.get(t, ()), p)
        plan = replace(self.opts.plan, topics=None, topic_pattern=None, assign=assign, require_all_partitions=False,
                       max_bytes_per_partition=max(4096, limit // 16), min_partitions=None)
        bounds = Bounds(start={tp: first[tp] for tp in wanted}, end={tp: ends[tp] for tp in wanted})
        ranges: dict[tuple[str, int], list[tuple[int, int, int, int]]] = {}
        sizes = {}
        for r in self._replicas():
            for seg in r.segments:
                if seg.log_path is not None:
                    sizes[seg.log_path] = seg.log_size or 0
        for split in plan_splits(list(self.opts.paths), plan, bounds):
            for g in split.ranges:
                stop = g.end_position if g.end_position is not None else sizes.get(g.path, g.start_position)
                ranges.setdefault((split.topic, split.partition), []).append(
                    (g.segment, g.start_position, g.first_offset, max(0, stop - g.start_position)))
        backlog = {tp: sum(n for *_, n in ranges.get(tp, [])) for tp in wanted}
        shares = _prorate(limit, backlog)
        out = dict(ends)
        for tp, share in shares.items():
            taken = 0
            for i, (_, _, first_offset, n) in enumerate(sorted(ranges[tp])):
                if i and taken + n > share and first_offset > first[tp]:
                    out[tp] = min(first_offset, ends[tp])
                    break
                taken += n
        return out

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        """Driver: splits of ``[start, end)`` per topic-partition; new partitions from their log start."""
        begin = {(t, int(p)): o for t, ps in start.items() for p, o in ps.items()}
        stop = {(t, int(p)): o for t, ps in end.items() for p, o in ps.items()}
        wanted = [tp for tp, o in stop.items() if begin.get(tp, -2) != o]
        if not wanted:
            return []
        assign: dict[str, tuple[int, ...]] = {}
        for t, p in wanted:
            assign[t] = (*assign.get(t, ()), p)
        plan = replace(self.opts.plan, topics=None, topic_pattern=None, assign=assign,
                       require_all_partitions=False)
        bounds = Bounds(start={tp: begin.get(tp, -2) for tp in wanted}, end={tp: stop[tp] for tp in wanted})
        return [SplitPartition(s) for s in plan_splits(list(self.opts.paths), plan, bounds)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Executor: the same decoding as the batch reader."""
        return read_split(partition.split, self.opts)  # type: ignore[attr-defined]

    def commit(self, end: dict) -> None:
        """Nothing to release: the log dirs are only read."""


def _prorate(limit: int, sizes: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    """``limit`` shared in proportion to ``sizes`` (> 0 only), as Spark's Kafka source shares
    ``maxOffsetsPerTrigger``: a share below one rounds up (no partition starves), others down."""
    sizes = {tp: n for tp, n in sizes.items() if n > 0}
    total = float(sum(sizes.values()))
    out = {}
    for tp, n in sizes.items():
        share = limit * (n / total)
        out[tp] = math.ceil(share) if share < 1 else math.floor(share)
    return out


def _rate_limit(limit: int, first: dict[tuple[str, int], int], ends: dict[tuple[str, int], int],
                sizes: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    """``KafkaMicroBatchStream.rateLimit``: each partition with a backlog advances by its share."""
    shares = _prorate(limit, sizes)
    return {tp: min(end, first[tp] + shares[tp]) if tp in shares else end for tp, end in ends.items()}


# --- executor side ----------------------------------------------------------------------
def _keep_mask(batch: pa.RecordBatch, split: Split, opts: ReadOptions, state: dict[str, Any]) -> Any:
    """Boolean numpy mask of the rows of ``batch`` the split keeps (record granularity)."""
    import numpy as np

    n = batch.num_rows
    offset = batch.column("offset").to_numpy(zero_copy_only=False)
    keep = np.ones(n, dtype=bool)
    if split.start_offset is not None:
        keep &= offset >= split.start_offset
    if split.end_offset is not None:
        keep &= offset < split.end_offset
    position = batch.column("position").to_numpy(zero_copy_only=False)
    segment = batch.column("segment").to_numpy(zero_copy_only=False)
    ts_ms = None
    if split.start_timestamp is not None or split.end_timestamp is not None:
        ts_ms = batch.column("timestamp").cast(pa.int64()).to_numpy(zero_copy_only=False) // 1000
    if split.start_timestamp is not None:
        pos, target = split.start_timestamp      # the hit batch opens the split's first range
        sel = np.flatnonzero((position == pos) & (segment == split.ranges[0].segment))
        if sel.size and not state.get("start_found"):
            ok = (ts_ms[sel] >= target) & (offset[sel] >= split.log_start_offset)
            first = int(np.argmax(ok)) if ok.any() else sel.size
            keep[sel[:first]] = False
            if ok.any():
                state["start_found"] = True
    if split.end_timestamp is not None:
        pos, target = split.end_timestamp        # the hit batch closes the split's last range
        sel = np.flatnonzero((position == pos) & (segment == split.ranges[-1].segment))
        if sel.size:
            if state.get("end_found"):
                keep[sel] = False
            else:
                hit = ts_ms[sel] >= target
                if hit.any():
                    keep[sel[int(np.argmax(hit)):]] = False
                    state["end_found"] = True
    is_control = batch.column("isControl").to_numpy(zero_copy_only=False)
    if split.read_committed:
        keep &= _committed_mask(batch, split, state, is_control)
    if not opts.include_control_records:
        keep &= ~is_control
    return keep


def _committed_mask(batch: pa.RecordBatch, split: Split, state: dict[str, Any], is_control: Any) -> Any:
    """read_committed as the consumer does it (``CompletedFetch``): aborted txns from
    ``.txnindex`` enter an aborted-producer set when their first offset <= batch last offset; an
    ABORT marker of such a producer removes it; transactional batches of producers in the set are
    dropped."""
    import numpy as np

    n = batch.num_rows
    keep = np.ones(n, dtype=bool)
    if not split.aborted:
        return keep
    queue: list[tuple[int, int, int]] = state.setdefault("queue", sorted(split.aborted, key=lambda a: a[1]))
    aborting: set[int] = state.setdefault("aborting", set())
    bbase = batch.column("batchBaseOffset").to_numpy(zero_copy_only=False)
    blast = batch.column("batchLastOffset").to_numpy(zero_copy_only=False)
    pid = batch.column("producerId").fill_null(-1).to_numpy(zero_copy_only=False)
    txn = batch.column("isTransactional").to_numpy(zero_copy_only=False)
    keys = batch.column("key")
    starts = np.flatnonzero(np.r_[True, bbase[1:] != bbase[:-1]])
    ends = np.r_[starts[1:], n]
    for s, e in zip(starts.tolist(), ends.tolist()):
        while queue and queue[0][1] <= blast[s]:
            aborting.add(queue.pop(0)[0])
        if not txn[s] or pid[s] not in aborting:
            continue
        if is_control[s]:
            try:
                _, kind = parse_control_key(keys[s].as_py())
            except KafkaFormatError:
                continue
            if kind == ControlRecordType.ABORT:
                aborting.discard(int(pid[s]))          # ABORT marker ends the aborted txn
            continue
        keep[s:e] = False
    return keep


def _corrupt_rows(skips: list[Any], split: Split, schema: pa.Schema, segment: int) -> pa.RecordBatch:
    """One row per skipped byte range: provenance columns + ``_corrupt``, the rest null."""
    n = len(skips)
    cols = []
    for f in schema:
        if f.name == CORRUPT_COLUMN:
            cols.append(pa.array([{"file": redact(s.path), "position": s.position, "length": s.length,
                                   "reason": s.reason} for s in skips], type=CORRUPT_TYPE))
        elif f.name == "topic":
            cols.append(pa.array([split.topic] * n, f.type))
        elif f.name == "partition":
            cols.append(pa.array([split.partition] * n, f.type))
        elif f.name == "segment":
            cols.append(pa.array([segment] * n, f.type))
        elif f.name == "position":
            cols.append(pa.array([s.position for s in skips], f.type))
        elif f.name == "logDir":
            cols.append(pa.array([redact(split.log_dir)] * n, f.type))
        elif f.name == "brokerId":
            cols.append(pa.array([split.broker_id] * n, f.type))
        elif f.name == "headers":
            cols.append(pa.array([[]] * n, f.type))
        else:
            cols.append(pa.nulls(n, f.type))
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Select/append columns so ``batch`` has exactly ``schema``."""
    n = batch.num_rows
    cols = []
    for f in schema:
        idx = batch.schema.get_field_index(f.name)
        cols.append(batch.column(idx) if idx >= 0 else pa.nulls(n, f.type))
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def read_split(split: Split, opts: ReadOptions) -> Iterator[pa.RecordBatch]:
    """Decode one split (executor side): bounds, isolation and control-record rules applied."""
    import pyarrow.compute as pc

    from kafka_format.api import SkippedRange, decode_segment
    from kafka_format.planning import open_input
    from kafka_format.records.columns import FileContext

    schema = arrow_schema(opts)
    state: dict[str, Any] = {}
    record = opts.granularity == "record"
    for r in split.ranges:
        skips: list[Any] = []
        ctx = FileContext(path=redact(r.path), topic=split.topic, partition=split.partition, segment=r.segment,
                          log_dir=redact(split.log_dir), broker_id=split.broker_id)   # provenance: no secret
        with open_input(r.path) as f:
            last_batch = -1
            for batch in decode_segment(f, start=r.start_position, end=r.end_position, context=ctx,
                                        verify_crc=opts.verify_crc, mode=opts.mode, on_skip=skips.append,
                                        granularity=opts.granularity, include_headers=opts.include_headers):
                if batch.num_rows:
                    last_batch = max(last_batch, pc.max(batch.column("position")).as_py())
                if record:
                    mask = _keep_mask(batch, split, opts, state)
                    if not mask.all():
                        batch = batch.filter(pa.array(mask))
                else:
                    batch = _filter_batch_rows(batch, split, opts)
                if batch.num_rows:
                    yield _conform(batch, schema)
            gap = _unread_tail(f, r, last_batch, skips)
            gap_end = _range_end(f, r)
        if gap is not None:
            if opts.mode == "FAILFAST":
                raise gap
            skips.append(SkippedRange(r.path, gap.position or 0, gap_end - (gap.position or 0), gap.reason))
        if skips and opts.mode == "PERMISSIVE":
            yield _corrupt_rows(skips, split, schema, r.segment)


def _range_end(f: Any, r: SegmentRange) -> int:
    size = f.size()
    return size if r.end_position is None else min(r.end_position, size)


def _unread_tail(f: Any, r: SegmentRange, last_batch: int, skips: list[Any]) -> CorruptRecordError | None:
    """The decoder stops quietly at a batch that runs past the end of the file (a crash tail, as
    Kafka's reader does).  That is only legitimate at the end of the partition's last segment:
    anywhere else (a closed segment, or before an index entry that says a batch starts later)
    the bytes from there to the end of the range are corrupt (a lying length field)."""
    end = _range_end(f, r)
    reached = r.start_position
    if last_batch >= 0:
        head = f.read_at(LOG_ENTRY.size, last_batch)
        if len(head) == LOG_ENTRY.size:
            reached = max(reached, last_batch + LOG_ENTRY.size + LOG_ENTRY.unpack(head)[1])
    for s in skips:
        reached = max(reached, s.position + s.length)
    if reached >= end or (r.active and (r.end_position is None or r.end_position >= f.size())):
        return None
    pos = reached
    while pos < end:                    # a zero-filled (preallocated) rest is not data
        chunk = f.read_at(min(ZERO_CHECK_CHUNK, end - pos), pos)
        if not chunk or chunk.count(0) != len(chunk):
            break
        pos += len(chunk)
    else:
        return None
    head = f.read_at(LOG_ENTRY.size, reached)
    found = (f"a batch of {LOG_ENTRY.unpack(head)[1] + LOG_ENTRY.size} bytes" if len(head) == LOG_ENTRY.size
             else f"{end - reached} bytes")
    return CorruptRecordError("batch runs past the end of a closed segment or split", path=r.path,
                              position=reached, expected=f"a complete batch ending by byte {end}", found=found)


def _filter_batch_rows(batch: pa.RecordBatch, split: Split, opts: ReadOptions) -> pa.RecordBatch:
    """granularity=batch: keep batches overlapping the offset bounds (and control batches only
    with includeControlRecords=true)."""
    import pyarrow.compute as pc

    last = batch.column("lastOffset")
    first = pc.fill_null(batch.column("baseOffset"), last)
    keep = pc.and_(pc.greater_equal(last, split.start_offset if split.start_offset is not None else -(1 << 62)),
                   pc.less(first, split.end_offset if split.end_offset is not None else (1 << 62)))
    if not opts.include_control_records:
        keep = pc.and_(keep, pc.invert(batch.column("isControl")))
    return batch.filter(keep)


def bind_session_sizing(parallelism: int, open_cost_bytes: int = DEFAULT_OPEN_COST_BYTES) -> type[KafkaLogDataSource]:
    """The data source class with a session's ``defaultParallelism`` and ``openCostInBytes`` bound,
    for ``spark.dataSource.register``: the class travels to the planner's worker by value."""
    return type(KafkaLogDataSource.__name__, (KafkaLogDataSource,), {
        "__module__": KafkaLogDataSource.__module__, "__doc__": KafkaLogDataSource.__doc__,
        "default_parallelism": max(1, int(parallelism)), "open_cost_bytes": max(1, int(open_cost_bytes))})
