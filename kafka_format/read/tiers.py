"""Planning a read over both tiers of tiered partitions (KIP-405): the ``tier`` option.

A partition has a remote tier when the ``__remote_log_metadata`` partitions among the log dirs name
it (:func:`kafka_format.read.remote_log_metadata.tiered_partition`).  ``tier=all`` (the default) reads
such a partition as the broker serves it (:func:`kafka_format.storage.tiered_history.tiered_history`):
the offsets below its local log start from the remote segments ``RemoteLogManager.read`` chooses, the
rest from the local log; ``tier=local`` reads the local log alone (what the broker's disk holds),
``tier=remote`` the remote segments alone.  A partition without a remote tier is read as it is
(``tier=remote``: not at all).

The remote segments are read where they lie, from ``remoteStorage`` (the root of Kafka's
``LocalTieredStorage``: :func:`kafka_format.storage.remote_tier.open_remote_storage`, one listing per
partition read).  The bounds of a read apply to the whole history:

* offsets (``startingOffsets``/``endingOffsets``, pushed ``offset`` filters) prune remote segments by
  their metadata's offsets, and pushed ``timestamp`` filters by its ``maxTimestampMs``, so a pruned
  segment's files are never opened;
* ``earliest`` is the history's log start (the ``log-start-offset-checkpoint`` entry a remote log
  keeps below its first local segment), ``upTo=highWatermark`` and ``read_committed`` cap it at the
  local replica's high watermark and last stable offset;
* a starting or ending timestamp is answered by the first log of the history (remote runs in offset
  order, then the local log) that holds a batch reaching it, as ``UnifiedLog.fetchOffsetByTimestamp``
  searches the remote tier before the local log;
* ``read_committed`` joins the aborted transactions of both tiers' transaction indexes
  (``RemoteLogManager.collectAbortedTransactions`` reads the remote segments' ``.txnindex`` and then the
  local log's), so a transaction aborted across the tiers is dropped in both.

Offsets of the history no segment serves, and remote segments the store cannot serve, are never
skipped silently: a :class:`~kafka_format.common.errors.LogDirError` naming them (``FAILFAST``), or,
for a permissive read, one :attr:`~kafka_format.read.planning.Split.skipped` entry each, reported as
a ``_corrupt`` row.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace

from kafka_format.common.errors import LogDirError
from kafka_format.common.topics import REMOTE_LOG_METADATA_TOPIC
from kafka_format.internal.remote_log_metadata import TopicIdPartition
from kafka_format.internal.remote_log_metadata_cache import RemoteLogMetadataView
from kafka_format.read.options import (
    ALL_TIERS,
    REMOTE_STORAGE_FORMATS,
    TIERS,
    KafkaLogOptionError,
    ReadOptions,
)
from kafka_format.read.planning import (
    Bounds,
    PlanOptions,
    Split,
    check_assignment,
    fetch_upper,
    open_partitions,
    plan_splits,
    read_txn_index,
    resolve_timestamp,
    select_replicas,
)
from kafka_format.read.remote_log_metadata import metadata_of, tiered_partition
from kafka_format.storage.aiven_rsm import use_keys
from kafka_format.storage.aiven_tier import has_aiven_layout, open_aiven_storage
from kafka_format.storage.partition_log import PartitionLog
from kafka_format.storage.remote_tier import RemoteStorage, open_remote_storage
from kafka_format.storage.tiered_history import (
    LOCAL_TIER,
    REMOTE_TIER,
    OffsetGap,
    RemotePiece,
    TieredHistory,
    TierLog,
    tiered_history,
)

__all__ = ["ALL_TIERS", "REMOTE_STORAGE_FORMATS", "TIERS", "open_remote_tier", "plan_read", "plan_tiered_read",
           "plan_tiered_splits", "tiered_replicas"]

EARLIEST, LATEST = -2, -1
#: ``remoteStorageFormat`` values naming one layout
LOCAL_TIERED_FORMAT = "local-tiered"
AIVEN_FORMAT = "aiven"


def plan_read(opts: ReadOptions, *, selects: Callable[[str, int], bool] | None = None, bounds: Bounds | None = None,
              impossible: bool = False, plan: PlanOptions | None = None) -> list[Split]:
    """The splits of a batch read (discovery + :func:`kafka_format.read.tiers.plan_tiered_read` over
    the tiers ``opts.tier`` names): ``selects(topic, partition)`` narrows the partitions (pushed
    filters), ``bounds`` replaces the options' bounds and ``plan`` their
    :class:`~kafka_format.read.planning.PlanOptions`, ``impossible`` (filters no row passes) plans
    nothing.  Per-partition bounds that do not name exactly the selected partitions are a
    ``KafkaLogOptionError``."""
    use_keys(opts.remote_storage_keys)
    plan = opts.plan if plan is None else plan
    bounds = opts.bounds if bounds is None else bounds
    found = open_partitions(list(opts.paths))
    try:
        check_assignment(found, plan, bounds)
    except ValueError as e:
        raise KafkaLogOptionError("startingOffsets/endingOffsets", str(e)) from None
    if impossible:
        return []
    replicas = found if selects is None else [r for r in found if selects(r.topic, r.partition)]
    return plan_tiered_read(replicas, replace(plan, require_all_partitions=False), bounds, tier=opts.tier,
                            remote_storage=opts.remote_storage, remote_storage_format=opts.remote_storage_format,
                            found=found, skip_unreadable=opts.mode != "FAILFAST")


def plan_tiered_read(replicas: Sequence[PartitionLog], options: PlanOptions, bounds: Bounds, *,
                     tier: str = ALL_TIERS, remote_storage: str | None = None,
                     remote_storage_format: str = "auto", found: Sequence[PartitionLog] | None = None,
                     skip_unreadable: bool = False) -> list[Split]:
    """The splits of a read of ``replicas`` (discovered, pushed filters applied) over the tiers
    ``tier`` names: :func:`~kafka_format.read.planning.plan_splits` for partitions without a remote
    tier, :func:`plan_tiered_splits` over each tiered partition's history.  ``found``: every replica
    discovered (whose ``__remote_log_metadata`` partitions tell which are tiered; default
    ``replicas``).  A tiered partition read with ``tier=all`` or ``remote`` and no ``remote_storage``
    is a ``KafkaLogOptionError`` naming it.  ``skip_unreadable`` (a permissive read): offsets no segment
    serves and remote segments the store cannot serve are skipped and reported
    (:attr:`~kafka_format.read.planning.Split.skipped`) instead of failing the read."""
    if tier not in TIERS:
        raise KafkaLogOptionError("tier", f"expected one of {', '.join(TIERS)}, got {tier!r}")
    chosen = select_replicas(replicas, options)
    whole = replace(options, replicas="all", require_all_partitions=False)
    if tier == LOCAL_TIER:
        return plan_splits(chosen, whole, bounds)
    view, tiered = tiered_replicas(chosen, replicas if found is None else found)
    if not tiered:
        return [] if tier == REMOTE_TIER else plan_splits(chosen, whole, bounds)
    if remote_storage is None:
        r, _ = tiered[0]
        names = ", ".join(f"{x.topic}-{x.partition}" for x, _ in tiered[:5]) + (" ..." if len(tiered) > 5 else "")
        raise KafkaLogOptionError(
            "remoteStorage", f"{len(tiered)} partition(s) read have a remote tier ({names}: segments named by "
            f"__remote_log_metadata in {r.log_dir}): give remoteStorage (klogs: --remote-storage), the remote "
            "storage's root, to read their whole history, or tier=local to read the local log dirs alone")
    store = open_remote_tier(remote_storage, remote_storage_format, {tip for _, tip in tiered})
    histories: dict[int, TieredHistory] = {}
    for r, tip in tiered:
        cache = view.cache(tip) if view is not None else None
        assert cache is not None                      # tiered_partition found it
        histories[id(r)] = tiered_history(r, cache, store)
    plain = [r for r in chosen if id(r) not in histories] if tier == ALL_TIERS else []
    by_replica: dict[tuple[str, int, str], list[Split]] = {}
    for s in plan_splits(plain, whole, bounds) if plain else ():
        by_replica.setdefault((s.topic, s.partition, s.log_dir), []).append(s)
    out: list[Split] = []
    for r in chosen:                                  # the plan's order: topic, partition, log dir, offset
        if id(r) in histories:
            out.extend(plan_tiered_splits(histories[id(r)], options, bounds, tier=tier,
                                          skip_unreadable=skip_unreadable))
        else:
            out.extend(by_replica.get((r.topic, r.partition, r.log_dir), ()))
    return out


def open_remote_tier(uri: str, remote_storage_format: str, partitions: Collection[TopicIdPartition]
                     ) -> RemoteStorage:
    """The remote storage at ``uri`` in ``remote_storage_format`` (``remoteStorageFormat``), listing only
    the partition dirs of ``partitions`` (one listing each): ``local-tiered`` Kafka's ``LocalTieredStorage``
    (:func:`~kafka_format.storage.remote_tier.open_remote_storage`), ``aiven`` Aiven's
    ``RemoteStorageManager`` (:func:`~kafka_format.storage.aiven_tier.open_aiven_storage`: one manifest
    read per segment besides), ``auto`` the first when ``uri`` holds a ``kafka-tiered-storage`` dir, else
    the second when it holds Aiven's directory of one of ``partitions``."""
    if remote_storage_format not in REMOTE_STORAGE_FORMATS:
        raise KafkaLogOptionError("remoteStorageFormat", f"expected one of {', '.join(REMOTE_STORAGE_FORMATS)}, "
                                                         f"got {remote_storage_format!r}")
    wanted = set(partitions)
    if remote_storage_format == AIVEN_FORMAT:
        return open_aiven_storage(uri, wanted)
    if remote_storage_format == LOCAL_TIERED_FORMAT:
        return open_remote_storage(uri, select=lambda tip: tip in wanted)
    try:
        return open_remote_storage(uri, select=lambda tip: tip in wanted)
    except LogDirError as exc:
        if exc.code != "REMOTE_STORAGE_NOT_FOUND" or not has_aiven_layout(uri, wanted):
            if exc.code == "REMOTE_STORAGE_NOT_FOUND":
                exc.with_hint("or Aiven's RemoteStorageManager layout: <root>/<key.prefix><topic>-<topicId>/"
                              "<partition>/ (remoteStorageFormat=aiven)")
            raise
    return open_aiven_storage(uri, wanted)


def tiered_replicas(replicas: Sequence[PartitionLog], found: Sequence[PartitionLog]
                    ) -> tuple[RemoteLogMetadataView | None, list[tuple[PartitionLog, TopicIdPartition]]]:
    """The remote log metadata of the log dirs ``found`` was discovered in, and those of ``replicas``
    it gives a remote tier, with their topic-id-partitions (no ``__remote_log_metadata`` among
    ``found``: none, and nothing is read)."""
    if not any(r.topic != REMOTE_LOG_METADATA_TOPIC for r in replicas):
        return None, []
    view = metadata_of(found)
    return view, [(r, tip) for r in replicas if (tip := tiered_partition(view, r)) is not None]


def _offset_range(history: TieredHistory, options: PlanOptions, bounds: Bounds) -> tuple[int, int | None] | None:
    """``[lo, hi)``: the offsets of the history the bounds ask for (hi None: to the log end), None
    when none."""
    tp = (history.local.topic, history.local.partition)
    so = bounds.start.get(tp, EARLIEST)
    if so == LATEST:
        return None
    lo = history.log_start_offset if so < 0 else so
    eo = bounds.end.get(tp, LATEST)
    hi: int | None = None if eo < 0 else eo
    if bounds.min_offset is not None:
        lo = max(lo, bounds.min_offset)
    if bounds.max_offset is not None:
        hi = bounds.max_offset + 1 if hi is None else min(hi, bounds.max_offset + 1)
    upper = fetch_upper(history.local, options, lambda: history.log_end_offset)
    if upper is not None:
        hi = upper if hi is None else min(hi, upper)
    if hi is not None and lo >= hi:
        return None
    return lo, hi


def _check_gaps(history: TieredHistory, lo: int, hi: int | None) -> None:
    for gap in history.findings_of(OffsetGap):
        if gap.end_offset > lo and (hi is None or gap.start_offset < hi):
            raise LogDirError(f"offsets {gap.start_offset}..{gap.end_offset - 1} of {history.partition} are served "
                              "by no segment", path=history.local.path,
                              expected=f"a remote or local segment for every offset from {lo}", found=gap.message,
                              code="TIERED_OFFSET_GAP").with_hint(
                f"read from offset {gap.end_offset} on (startingOffsets), or the local log alone (tier=local)")


def plan_tiered_splits(history: TieredHistory, options: PlanOptions | None = None, bounds: Bounds | None = None, *,
                       tier: str = ALL_TIERS, skip_unreadable: bool = False) -> list[Split]:
    """The splits of a tiered partition's history (:class:`~kafka_format.storage.tiered_history.TieredHistory`)
    within ``bounds`` (keyed by the partition; see the module doc), in offset order: each log of
    :meth:`~kafka_format.storage.tiered_history.TieredHistory.read_logs` (runs of remote filesets, then
    the local replica) that ``tier`` names, planned by :func:`~kafka_format.read.planning.plan_splits`
    within the offsets it serves, so that every offset is read from the segment the broker serves it
    from, once; each split's ``tier`` says which.  ``options`` size the splits.  A remote segment to
    read that the store cannot serve raises unless ``skip_unreadable``; offsets to read that no
    segment serves raise."""
    options = options or PlanOptions()
    bounds = bounds or Bounds()
    tp = (history.local.topic, history.local.partition)
    wanted = _offset_range(history, options, bounds)
    if wanted is None:
        return []
    lo, hi = wanted
    start_ts = bounds.start_timestamp_all if bounds.start_timestamp_all is not None else bounds.start_timestamp.get(tp)
    end_ts = bounds.end_timestamp_all if bounds.end_timestamp_all is not None else bounds.end_timestamp.get(tp)
    prune_ts = bounds.min_timestamp if start_ts is None and end_ts is None else None

    def keep(piece: RemotePiece) -> bool:
        if tier == LOCAL_TIER or piece.end_offset <= lo or (hi is not None and piece.start_offset >= hi):
            return False
        return prune_ts is None or piece.max_timestamp_ms >= prune_ts

    skipped: list[tuple[str, int, int, str, int]] = []
    if tier != LOCAL_TIER:
        if skip_unreadable:
            skipped = _skipped(history, lo, hi, keep)
        else:
            _check_gaps(history, lo, hi)
    units = [u for u in history.read_logs(skip_unreadable=skip_unreadable, keep=keep)
             if tier == ALL_TIERS or u.tier == tier]
    whole = replace(options, topics=None, topic_pattern=None, assign=None, partition_filter=None, replicas="all",
                    require_all_partitions=False)
    remote_options = replace(whole, up_to="logEnd", read_committed=False)
    base = Bounds(min_offset=bounds.min_offset, max_offset=bounds.max_offset,
                  starting_timestamp_strategy=bounds.starting_timestamp_strategy)
    started = start_ts is None
    out: list[Split] = []
    for k, unit in enumerate(units):
        last = k == len(units) - 1
        remote = unit.tier == REMOTE_TIER
        u_lo = max(lo, unit.start_offset)
        u_hi = hi                                 # a remote run ends where the next log begins
        if remote:
            u_hi = unit.end_offset if hi is None else min(unit.end_offset, hi)
        if u_hi is not None and u_lo >= u_hi:
            continue
        b = replace(base, start={tp: u_lo}, end={} if u_hi is None else {tp: u_hi}, min_timestamp=prune_ts)
        if not started:
            assert start_ts is not None
            if not last and resolve_timestamp(unit.log, start_ts, last_fetchable=u_hi) is None:
                continue                          # the answer lies in a later log
            b = replace(b, start_timestamp_all=start_ts)
            started = True
        ended = False
        if end_ts is not None and (last or resolve_timestamp(unit.log, end_ts, last_fetchable=u_hi) is not None):
            b = replace(b, end_timestamp_all=end_ts)
            ended = not last
        planned = plan_splits([unit.log], remote_options if remote else whole, b)
        out.extend(replace(s, tier=unit.tier) for s in planned)
        if ended:
            break
    if options.read_committed and out:
        out = _join_aborted(history, out)
    if skipped:
        local = history.local
        out.insert(0, Split(topic=local.topic, partition=local.partition, log_dir=local.log_dir,
                            broker_id=local.broker_id, ranges=(), tier=REMOTE_TIER, skipped=tuple(skipped)))
    return out


def _skipped(history: TieredHistory, lo: int, hi: int | None, keep: Callable[[RemotePiece], bool]
             ) -> list[tuple[str, int, int, str, int]]:
    """What a permissive read of ``[lo, hi)`` skips: each gap (no bytes: length 0, at the partition dir)
    and each remote segment to read that the store cannot serve (its ``.log`` as the broker's fetch
    names it, ``segmentSizeInBytes`` long)."""
    out: list[tuple[str, int, int, str, int]] = []
    for gap in history.findings_of(OffsetGap):
        if gap.end_offset > lo and (hi is None or gap.start_offset < hi):
            out.append((history.local.path, 0, 0, gap.message, gap.start_offset))
    for piece in history.remote_pieces:
        if keep(piece) and not piece.readable:
            problems = "; ".join(piece.fileset.problems) if piece.fileset is not None else "no file of it"
            out.append((history.expected_location(piece), 0, piece.size,
                        f"remote segment {piece.segment_id} (offsets {piece.segment_start_offset}.."
                        f"{piece.segment_end_offset}) cannot be read: {problems}", piece.segment_start_offset))
    return out


def _join_aborted(history: TieredHistory, splits: list[Split]) -> list[Split]:
    """Every split marked read_committed with the aborted transactions of both tiers' transaction
    indexes that can touch it (those ending at or after its first offset and starting before the
    next split's)."""
    txns: list[tuple[int, int, int, int]] = []
    logs: list[TierLog] = history.read_logs(skip_unreadable=True)
    for unit in logs:
        for seg in unit.log.segments:
            txns.extend(read_txn_index(unit.log, seg))
    if not any(u.tier == LOCAL_TIER for u in logs):
        for seg in history.local.segments:
            txns.extend(read_txn_index(history.local, seg))
    txns = sorted(set(txns), key=lambda t: (t[1], t[0]))
    out = []
    for i, split in enumerate(splits):
        first = split.ranges[0].first_offset if split.ranges else (split.start_offset or 0)
        nxt = splits[i + 1].ranges[0].first_offset if i + 1 < len(splits) and splits[i + 1].ranges else split.end_offset
        aborted = tuple((pid, f, la) for pid, f, la, _ in txns if la >= first and (nxt is None or f < nxt))
        out.append(replace(split, read_committed=True, aborted=aborted))
    return out
