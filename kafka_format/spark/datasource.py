"""The ``kafka-log`` PySpark data source: Kafka log dirs read offline as a DataFrame.

Name
    ``kafka-log`` — ``spark.read.format("kafka-log").load(path)`` after
    :func:`kafka_format.spark.register` (done by ``build_session``).

Options
    See :mod:`kafka_format.read.options` and docs/datasource.md (Spark Kafka source names where the
    idea exists: ``topics``/``topicPattern``/``assign``, ``startingOffsets``/``endingOffsets``,
    ``startingTimestamp``/``endingTimestamp``/``*OffsetsByTimestamp``, ``isolationLevel``,
    ``includeHeaders``, plus ``includeControlRecords``, ``granularity``, ``maxBytesPerPartition``,
    ``minPartitions``, ``replicas``, ``mode``, ``upTo``, ``verifyCrc``; streaming:
    ``maxOffsetsPerTrigger``, ``maxBytesPerTrigger``).

Schema
    ``RECORD_SCHEMA`` of :mod:`kafka_format.records.schema` (``headers`` only with ``includeHeaders=true``,
    the default, as in Spark's source); ``BATCH_SCHEMA`` for ``granularity=batch``; with
    ``mode=PERMISSIVE`` an extra ``_corrupt`` struct column (``file``, ``position``, ``length``,
    ``reason``), null on good rows, set on one row per skipped byte range.

Partitioning strategy
    Discovery is :func:`kafka_format.storage.logdir.open_log_dirs` (a partition dir, a log dir, or a
    parent of several brokers' log dirs; the broker's swap/cleaned reconciliation), then
    :func:`kafka_format.read.planning.plan_splits` on the driver: ~``maxBytesPerPartition`` of log
    per split, cut at ``.index`` positions (batch boundaries), small segments packed together,
    ``minPartitions`` honoured as a hint; one split never spans two topic-partitions.  Small splits
    are then packed into Spark partitions as Spark's file sources pack small files
    (:func:`kafka_format.read.planning.pack_splits`).

Pushdown
    ``pushFilters`` (``spark.sql.python.filterPushdown.enabled=true``): see
    :mod:`kafka_format.spark.filters` for what is handled and what is returned to Spark -- only
    on a Spark that keeps a pushdown's read with its own scan (:mod:`kafka_format.spark.compat`;
    no release through 4.3.0 does).  Elsewhere every filter is returned to Spark and the plan is
    the options' alone, the same for every scan of a relation, so that no query can change
    another's rows; pruning is then asked for with options (``assign``, ``startingOffsets``,
    ``endingOffsets``, ``startingTimestamp``, ...), which belong to one ``load()``.

Performance notes
    ``read()`` streams: it decodes one split chunk by chunk with ``decode_segment`` and yields
    Arrow record batches, never a whole segment in memory.  Files are opened in ``read()``.  The
    decoding and the rules applied to it (bounds, ``read_committed``, control records, modes)
    are :func:`kafka_format.read.split_reader.read_split`, shared with the local engine.

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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    Filter,
    InputPartition,
)
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from kafka_format.output.publish import read_point
from kafka_format.read.options import KafkaLogOptionError, ReadOptions, parse_options
from kafka_format.read.planning import (
    DEFAULT_OPEN_COST_BYTES,
    Bounds,
    Split,
    last_stable_offset,
    log_end_offset,
    open_partitions,
    pack_splits,
)
from kafka_format.read.split_reader import CORRUPT_COLUMN, arrow_schema, read_split
from kafka_format.read.tiers import plan_read, tiered_replicas
from kafka_format.spark.filters import Pushed, push_filters
from kafka_format.storage.logdir import PartitionLog
from kafka_format.storage.tiered_history import LOCAL_TIER, REMOTE_TIER

__all__ = [
    "CORRUPT_COLUMN",
    "FilterPushdown",
    "KafkaLogDataSource",
    "KafkaLogReader",
    "KafkaLogStreamReader",
    "PushingKafkaLogReader",
    "SplitPartition",
    "arrow_schema",
    "bind_session_sizing",
    "read_split",
]


@dataclass
class SplitPartition(InputPartition):
    """One Spark input partition (picklable): a planned :class:`~kafka_format.read.planning.Split`,
    or small ones packed together (:func:`~kafka_format.read.planning.pack_splits`)."""

    splits: tuple[Split, ...]


def _read_splits(splits: Sequence[Split], opts: ReadOptions) -> Iterator[pa.RecordBatch]:
    for split in splits:
        read_point(split.topic, split.partition)
        yield from read_split(split, opts)


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

    # The session's sizing and whether its Spark keeps a pushdown's read with the scan (set by
    # :func:`bind_session_sizing` on the class ``register`` registers: the planner runs in a Python
    # worker that has no SparkContext to ask).  Unbound: no pushdown (safe on every Spark).
    default_parallelism: int | None = None
    open_cost_bytes: int = DEFAULT_OPEN_COST_BYTES
    pushdown: bool = False

    def reader(self, schema: StructType) -> KafkaLogReader:
        """Driver: a reader holding the parsed options (pushdown then planning)."""
        opts = self._parsed()
        if self.default_parallelism:
            opts = replace(opts, plan=replace(opts.plan, default_parallelism=self.default_parallelism,
                                              open_cost_bytes=self.open_cost_bytes))
        return (PushingKafkaLogReader if self.pushdown else KafkaLogReader)(opts)

    def streamReader(self, schema: StructType) -> KafkaLogStreamReader:
        """Driver: incremental reads; offsets are per topic-partition next offsets."""
        return KafkaLogStreamReader(parse_options(dict(self.options), streaming=True))


class KafkaLogReader(DataSourceReader):
    """Plans splits on the driver (``partitions``) and decodes them on executors.

    Takes no pushed filter (Spark's own ``pushFilters`` returns them all): the plan is the
    options' alone, the same for every scan of one relation.  That is the reader of every Spark
    that stores a pushdown's read on the relation's shared provider (:mod:`kafka_format.spark.compat`);
    :class:`PushingKafkaLogReader` is the one for a Spark that keeps it with its scan."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self.pushed = Pushed()
        self.accepted: list[Filter] = []

    def plan(self) -> list[Split]:
        """Driver: discovery + :func:`plan_splits` with options and pushed filters."""
        opts, pushed = self.opts, self.pushed
        bounds: Bounds = replace(opts.bounds, min_offset=pushed.min_offset, max_offset=pushed.max_offset,
                                 min_timestamp=pushed.min_timestamp)
        return plan_read(opts, selects=pushed.selects, bounds=bounds, impossible=pushed.impossible)

    def partitions(self) -> Sequence[InputPartition]:
        """Driver, once: the planned splits packed into input partitions as Spark's file sources pack
        files (at least one partition, possibly empty)."""
        splits = self.plan()
        if not splits:
            return [InputPartition(None)]
        return [SplitPartition(group) for group in pack_splits(splits, self.opts.plan)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Executor, once per input partition: decoded rows of its splits, in order, as Arrow record
        batches."""
        splits = getattr(partition, "splits", None)
        if not splits:
            return iter(())
        return _read_splits(splits, self.opts)


class FilterPushdown:
    """``pushFilters`` for a :class:`KafkaLogReader` (a mixin: the typed readers take it too)."""

    opts: ReadOptions
    pushed: Pushed
    accepted: list[Filter]

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Driver, once at planning: keep what planning/read prove exactly, yield the rest."""
        self.pushed, self.accepted, returned = push_filters(
            filters, record_granularity=self.opts.granularity == "record")
        yield from returned


class PushingKafkaLogReader(FilterPushdown, KafkaLogReader):
    """:class:`KafkaLogReader` that prunes by pushed filters (only where reads are scan-scoped)."""


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
        self._tiers_checked = opts.tier == LOCAL_TIER
        self._log_starts: dict[tuple[str, int], int] = {}          # tiered partitions: the history's

    def _replicas(self) -> list[PartitionLog]:
        plan = self.opts.plan
        by_tp: dict[tuple[str, int], PartitionLog] = {}
        found = open_partitions(list(self.opts.paths))
        for r in found:
            if plan.selects(r.topic, r.partition):
                cur = by_tp.get((r.topic, r.partition))
                if cur is None or (log_end_offset(r), r.leader_epoch or -1) > (log_end_offset(cur), cur.leader_epoch or -1):
                    by_tp[(r.topic, r.partition)] = r
        chosen = [by_tp[tp] for tp in sorted(by_tp)]
        if not self._tiers_checked:
            self._refuse_remote_tiers(chosen, found)
        return chosen

    def _refuse_remote_tiers(self, chosen: list[PartitionLog], found: list[PartitionLog]) -> None:
        """Once per query: the partitions with a remote tier.  With ``remoteStorage`` a stream reads
        their whole history (``earliest`` is the history's log start; micro-batches are planned by
        :func:`kafka_format.read.tiers.plan_read`); without it they are refused unless ``tier=local``
        says that the local log is what is wanted; ``tier=remote`` is not streamed (the remote tier of
        a live topic grows from the local log's oldest end, not at its end)."""
        from kafka_format.storage.tiered_history import tiered_log_start

        view, tiered = tiered_replicas(chosen, found)
        if tiered:
            names = ", ".join(f"{r.topic}-{r.partition}" for r, _ in tiered[:5])
            if self.opts.tier == REMOTE_TIER:
                raise KafkaLogOptionError("tier", f"tier=remote cannot be streamed ({names}): use tier=all or "
                                                  "tier=local, or read the remote tier as a batch")
            if self.opts.remote_storage is None:
                raise KafkaLogOptionError("remoteStorage", f"{names} have a remote tier: give remoteStorage (the "
                                                           "remote storage's root) to stream their whole history, "
                                                           "or tier=local to stream their local logs")
            for r, tip in tiered:
                cache = view.cache(tip) if view is not None else None
                assert cache is not None
                self._log_starts[(r.topic, r.partition)] = tiered_log_start(r, cache)[0]
        self._tiers_checked = True

    def _log_start(self, r: PartitionLog) -> int:
        """The partition's log start: its history's for a tiered one read over both tiers."""
        return self._log_starts.get((r.topic, r.partition), r.log_start_offset)

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
                value = self._log_start(r)
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
            earliest[tp] = self._log_start(r)
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
        for split in plan_read(self.opts, plan=plan, bounds=bounds):
            known = {i: (g.end_position if g.end_position is not None else sizes[g.path]) - g.start_position
                     for i, g in enumerate(split.ranges) if g.end_position is not None or g.path in sizes}
            unknown = len(split.ranges) - len(known)    # remote segments read to their end: the planned rest
            rest = max(0, split.planned_bytes - sum(known.values())) // max(1, unknown)
            for i, g in enumerate(split.ranges):
                ranges.setdefault((split.topic, split.partition), []).append(
                    (g.segment, g.start_position, g.first_offset, max(0, known.get(i, rest))))
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
        return [SplitPartition(group) for group in pack_splits(plan_read(self.opts, plan=plan, bounds=bounds), plan)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Executor: the same decoding as the batch reader."""
        return _read_splits(partition.splits, self.opts)  # type: ignore[attr-defined]

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


def bind_session_sizing(parallelism: int, open_cost_bytes: int = DEFAULT_OPEN_COST_BYTES, *,
                        pushdown: bool = False) -> type[KafkaLogDataSource]:
    """The data source class with a session's ``defaultParallelism`` and ``openCostInBytes`` bound,
    and whether its Spark lets pushed filters prune (:func:`kafka_format.spark.compat.read_is_scan_scoped`),
    for ``spark.dataSource.register``: the class travels to the planner's worker by value."""
    return type(KafkaLogDataSource.__name__, (KafkaLogDataSource,), {
        "__module__": KafkaLogDataSource.__module__, "__doc__": KafkaLogDataSource.__doc__,
        "default_parallelism": max(1, int(parallelism)), "open_cost_bytes": max(1, int(open_cost_bytes)),
        "pushdown": bool(pushdown)})
