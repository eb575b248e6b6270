"""The ``groups`` job: consumer groups' committed offsets, lag, expiry and what retention takes from
them (:mod:`kafka_format.log.groups` holds the coordinator's rules).

Two kinds of tasks, each run by any executor (:mod:`kafka_format.engine.runtime`):

1. :func:`replay_coordinator` -- one per ``__consumer_offsets`` partition (its longest replica):
   its records below the high watermark replayed as the coordinator loads them, returned as the
   selected groups' :class:`~kafka_format.log.groups.CoordinatorState`;
2. :func:`partition_facts` -- one per few partitions the groups name: log start, high watermark
   and log end offset (Kafka's ListOffsets answers), and for each committed offset the batch
   position and first unread record's timestamp (index lookups and one batch per offset).

The retention pass at ``now`` (:func:`kafka_format.engine.retention.retention_rows`, index bytes
only) gives each partition's log start after it and when each segment goes.  The driver joins the
three into :data:`SCHEMA` rows: one per group, topic and partition (a group without any: one row
with null topic and partition), ordered by group, topic, partition.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

import pyarrow as pa

from kafka_format.common.topics import CONSUMER_OFFSETS_TOPIC, SHARE_GROUP_STATE_TOPIC
from kafka_format.log.groups import (
    ANOMALY_SCHEMA,
    COLUMNS,
    DEFAULT_OFFSETS_RETENTION_MS,
    NO_PRODUCER_ID,
    SCHEMA,
    SHARE,
    CommittedOffset,
    CoordinatorState,
    Group,
    Member,
    offset_expiry,
    replay_partition,
)
from kafka_format.log.share_state import (
    ShareCoordinatorState,
    SharePartitionState,
    replay_share_state_partition,
)
from kafka_format.storage.logdir import LogDirSet, PartitionLog, open_log_dirs
from kafka_format.storage.partition_state import PartitionRef, TopicSelection

if TYPE_CHECKING:
    from kafka_format.engine.runtime import Executor

__all__ = [
    "ANOMALY_SCHEMA",
    "COLUMNS",
    "SCHEMA",
    "GroupSelection",
    "GroupsResult",
    "PartitionFacts",
    "UnreadFrom",
    "group_rows",
    "groups_local",
    "partition_facts",
    "replay_coordinator",
]


@dataclass(frozen=True)
class GroupSelection(TopicSelection):
    """The groups a run reports: one of the names given, or a whole-name match of ``pattern``; with
    neither, every group (:class:`TopicSelection`'s rule, for group ids)."""


class UnreadFrom(NamedTuple):
    """Where a committed offset's first unread record is (:attr:`PartitionFacts.at`)."""

    lag_bytes: int                 # bytes of the batches holding its unread offsets below the high watermark
    segment_base: int              # base offset of the segment holding its batch
    position: int                  # the batch's file position in that segment
    timestamp: int | None          # the first unread record's timestamp (None: none)


@dataclass(frozen=True)
class PartitionFacts:
    """What one partition's files say for the groups' offsets on it."""

    topic: str
    partition: int
    log_start_offset: int
    high_watermark: int
    log_end_offset: int
    local_start: int | None = None      # a tiered partition's local log start (None: untiered)
    at: Mapping[int, UnreadFrom] = field(default_factory=dict)   # committed offset -> its first unread record


@dataclass(frozen=True)
class FactsTarget(PartitionRef):
    """A partition to look up, and the committed offsets on it.  ``history_start``: a tiered
    partition's log start over both tiers (its remote log metadata), below the local one."""

    offsets: tuple[int, ...] = ()
    history_start: int | None = None


def _coordinator_records(replica: PartitionLog) -> Iterable[tuple[int, int, bool, bytes | None, bytes | None]]:
    """``(offset, producerId, isControl, key, value)`` of a ``__consumer_offsets`` replica below its
    high watermark, control records included, in offset order (the read path, FAILFAST).  Without a
    ``replication-offset-checkpoint`` entry, up to its log end: a leader alone in its ISR advances its
    high watermark to the log end as soon as it leads (noted by the driver)."""
    from kafka_format.read.options import parse_options
    from kafka_format.read.planning import plan_splits
    from kafka_format.read.split_reader import read_split

    up_to = "logEnd" if replica.high_watermark_checkpoint is None else "highWatermark"
    opts = parse_options({"paths": replica.log_dir, "topics": replica.topic, "upTo": up_to,
                          "includeControlRecords": "true", "includeHeaders": "false", "tier": "local"})
    for split in plan_splits([replica], opts.plan, opts.bounds):
        for batch in read_split(split, opts):
            producers = batch.column("producerId").fill_null(NO_PRODUCER_ID)     # legacy batches: none
            yield from zip(batch.column("offset").to_pylist(), producers.to_pylist(),
                           batch.column("isControl").to_pylist(), batch.column("key").to_pylist(),
                           batch.column("value").to_pylist(), strict=True)


def replay_share_coordinator(ref: PartitionRef, selection: GroupSelection) -> ShareCoordinatorState:
    """Task 1b: one ``__share_group_state`` partition replayed, only the selected groups' state kept."""
    state = replay_share_state_partition(ref.partition, _coordinator_records(ref.open()))
    state.states = {k: v for k, v in state.states.items() if selection.matches(k[0])}
    return state


def replay_coordinator(ref: PartitionRef, selection: GroupSelection) -> CoordinatorState:
    """Task 1: one ``__consumer_offsets`` partition replayed, only the selected groups kept."""
    state = replay_partition(ref.partition, _coordinator_records(ref.open()))
    keep = {g for g in set(state.groups) | set(state.group_partition) if selection.matches(g)}
    state.groups = {g: v for g, v in state.groups.items() if g in keep}
    state.offsets = {k: v for k, v in state.offsets.items() if k[0] in keep}
    state.pending = {pid: kept for pid, p in state.pending.items()
                     if (kept := {k: v for k, v in p.items() if k[0] in keep})}
    state.open_transactions = {g: t for g, t in state.open_transactions.items() if g in keep}
    state.group_partition = {g: p for g, p in state.group_partition.items() if g in keep}
    return state


def partition_facts(targets: Sequence[FactsTarget]) -> list[PartitionFacts]:
    """Task 2: the log start, HW and LEO of a few partitions, and where each committed offset is."""
    from kafka_format.log.list_offsets import PartitionLookup

    out = []
    for target in targets:
        replica = target.open()
        with PartitionLookup(replica) as lookup:
            hw, leo = lookup.high_watermark(), lookup.log_end_offset()
            start = replica.log_start_offset
            local_start = start
            if target.history_start is not None:        # tiered: remote segments hold what is below
                start = min(start, target.history_start)
            segs = replica.segments
            sizes = [int(s.log_size or 0) for s in segs]
            last = lookup.locate_offset(hw - 1) if hw > start else None     # the batch of the last readable offset
            hw_pos = _absolute(sizes, last.segment, last.position + last.size) if last else 0
            at: dict[int, UnreadFrom] = {}
            for offset in target.offsets:
                if max(offset, start) < local_start:    # in the remote tier: its bytes are not looked up
                    continue
                loc = lookup.locate_offset(max(offset, start)) if max(offset, start) < hw else None
                if loc is None:
                    continue
                pos = _absolute(sizes, loc.segment, loc.position)
                ts = loc.timestamp if loc.timestamp is not None and loc.timestamp >= 0 else None
                at[offset] = UnreadFrom(max(0, hw_pos - pos), segs[loc.segment].base_offset, loc.position, ts)
        out.append(PartitionFacts(target.topic, target.partition, start, hw, leo,
                                  None if target.history_start is None else local_start, at))
    return out


def _absolute(sizes: Sequence[int], segment: int, position: int) -> int:
    """A byte position counted over the replica's segments in order."""
    return sum(sizes[:segment]) + position


@dataclass(frozen=True)
class GroupsResult:
    """The job's output: the rows (:data:`SCHEMA`) and the anomalies (:data:`ANOMALY_SCHEMA`)."""

    rows: pa.Table
    anomalies: pa.Table
    notes: tuple[str, ...] = ()


def _merge(states: Sequence[CoordinatorState], partitions: int | None) -> tuple[CoordinatorState, list[str]]:
    """One view of every ``__consumer_offsets`` partition.  A group's coordinator is the partition
    ``abs(hash(group)) % partitions`` (``partitions``: ``offsets.topic.num.partitions`` when known):
    records of a group in another partition are not served, and are left out with a note.  With
    ``partitions`` unknown, a group found in several partitions keeps the first (noted)."""
    from kafka_format.internal.consumer_offsets import group_partition

    merged = CoordinatorState()
    notes = []
    for st in states:
        merged.anomalies.extend(st.anomalies)
        for g, p in st.group_partition.items():
            home = group_partition(g, partitions) if partitions else merged.group_partition.get(g, p)
            if p != home:
                why = (f"not in its own partition {home} of {partitions}: its coordinator does not serve them"
                       if partitions else f"and in partition {home}: the records of {home} are shown")
                notes.append(f"group {g!r} has records in {CONSUMER_OFFSETS_TOPIC}-{p}, {why}")
                continue
            merged.group_partition[g] = p
            if g in st.groups:
                merged.groups[g] = st.groups[g]
            if g in st.open_transactions:
                merged.open_transactions[g] = st.open_transactions[g]
        mine = {g for g, p in st.group_partition.items() if merged.group_partition.get(g) == p}
        merged.offsets.update({k: v for k, v in st.offsets.items() if k[0] in mine})
        for pid, pend in st.pending.items():
            kept = {k: v for k, v in pend.items() if k[0] in mine}
            if kept:
                merged.pending.setdefault(pid, {}).update(kept)
    return merged, notes


def _merge_share(states: Sequence[ShareCoordinatorState]) -> tuple[ShareCoordinatorState, list[str]]:
    """One view of every ``__share_group_state`` partition; a share-partition found in several keeps
    the first one's state (noted)."""
    merged = ShareCoordinatorState()
    notes = []
    for st in states:
        merged.anomalies.extend(st.anomalies)
        for key, where in st.where.items():
            first = merged.where.setdefault(key, where)
            if first != where:
                notes.append(f"share-partition {key[0]!r} {key[1]}:{key[2]} has records in {SHARE_GROUP_STATE_TOPIC}-"
                             f"{where} and in partition {first}: the records of {first} are shown")
            elif key in st.states:
                merged.states[key] = st.states[key]
    return merged, notes


def _share_partitions(group: Group, names: Mapping[str, str]) -> dict[tuple[str, int], str]:
    """A share group's initialized share-partitions (``initializedShareGroupPartitions``) as (topic
    name, partition) -> topic id; the name from the log dirs' ``partition.metadata``, else the
    record's."""
    return {(names.get(tid) or name or tid, p): tid for tid, (name, parts) in group.share_partitions.items()
            for p in parts}


def _history_starts(found: Sequence[PartitionLog], replicas: Sequence[PartitionLog]) -> dict[tuple[str, int], int]:
    """The log start over both tiers of the tiered partitions among ``replicas``, from the
    ``__remote_log_metadata`` in the log dirs (:func:`kafka_format.read.remote_log_metadata.remote_sides`)."""
    from kafka_format.read.remote_log_metadata import metadata_of, remote_sides

    view = metadata_of(found)
    if view is None:
        return {}
    sides = remote_sides(view, replicas)
    return {(r.topic, r.partition): sides[id(r)].log_start_offset for r in replicas if id(r) in sides}


def _topic_names(replicas: Iterable[PartitionLog]) -> dict[str, str]:
    """Topic id (``Uuid.toString``) -> name, from the partition dirs' ``partition.metadata``."""
    return {r.topic_id: r.topic for r in replicas if r.topic_id}


def _assignments(group: Group, names: Mapping[str, str]) -> dict[tuple[str, int], Member]:
    out: dict[tuple[str, int], Member] = {}
    for m in group.members.values():
        for topic, partition in m.assignment:
            name = names.get(topic, topic) if m.by_topic_id else topic
            out.setdefault((name, partition), m)
    return out


def _retention_view(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], list[Mapping[str, Any]]]:
    """Per partition, its segments in offset order as retention deletes them: a tiered partition's
    remote segments, then its local segments past them (not copied yet); local copies of copied data
    go from the disk without removing anything a consumer reads."""
    by: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for r in rows:
        by.setdefault((r["topic"], r["partition"]), []).append(r)
    out = {}
    for tp, segs in by.items():
        remote = sorted((s for s in segs if s.get("tier") == "remote"), key=lambda s: int(s["baseOffset"]))
        local = sorted((s for s in segs if s.get("tier") != "remote"), key=lambda s: int(s["baseOffset"]))
        if remote:
            last = int(remote[-1]["baseOffset"])
            local = [s for s in local if int(s["baseOffset"]) > last]
        out[tp] = remote + local
    return out


def _retention_loss(segs: Sequence[Mapping[str, Any]], facts: PartitionFacts, first_unread: int,
                    loc: UnreadFrom | None) -> tuple[int, int, int, int | None]:
    """(log start after the pass at now, unread records it deletes, their bytes, when retention first
    deletes an unread record) for unread records from ``first_unread`` (``loc``: where its batch is,
    :attr:`PartitionFacts.at`)."""
    bases = [int(s["baseOffset"]) for s in segs]
    start_after = facts.log_start_offset
    for i, s in enumerate(segs):
        if not s["deletable"]:
            break
        start_after = max(start_after, bases[i + 1] if i + 1 < len(segs) else facts.log_end_offset)
    lost = max(0, min(start_after, facts.high_watermark) - first_unread)
    lost_bytes = 0
    if lost:
        for i, s in enumerate(segs):
            nxt = bases[i + 1] if i + 1 < len(segs) else facts.log_end_offset
            if not s["deletable"]:
                break
            if nxt <= first_unread:
                continue
            size = int(s["sizeBytes"])
            if loc is not None and loc.segment_base == bases[i]:
                size -= loc.position
            lost_bytes += max(0, size)
    at: int | None = None
    reach = None
    for i, s in enumerate(segs):      # a pass deletes a prefix: the walk's running maximum
        when = s["deletableAtMs"]
        if when is None:
            break
        reach = int(when) if reach is None else max(reach, int(when))
        nxt = bases[i + 1] if i + 1 < len(segs) else facts.log_end_offset
        if nxt > first_unread and first_unread < facts.high_watermark:
            at = reach
            break
    return start_after, lost, lost_bytes, at


def _group_row(group: Group, partition: int | None) -> dict[str, Any]:
    return {"group": group.group_id, "topic": None, "partition": None, "groupType": group.type,
            "state": group.state, "protocolType": group.protocol_type, "protocol": group.protocol,
            "generation": group.generation, "members": len(group.members), "coordinatorPartition": partition}


def _rows(state: CoordinatorState, share: ShareCoordinatorState, facts: Mapping[tuple[str, int], PartitionFacts],
          retention: Mapping[tuple[str, int], list[Mapping[str, Any]]], names: Mapping[str, str],
          topics: TopicSelection, now_ms: int, retention_ms: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    commits: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
    for (g, t, p), committed in state.offsets.items():
        commits.setdefault(g, {})[(t, p)] = committed
    pending = {k for p in state.pending.values() for k in p}
    for gid in sorted(set(state.groups) | set(commits)):
        group = state.groups.get(gid) or Group(gid, "classic", simple=True)
        base = _group_row(group, state.group_partition.get(gid))
        if group.type == SHARE:
            rows.extend(_share_rows(base, group, share, facts, retention, names, topics, now_ms))
            continue
        assigned = _assignments(group, names)
        keys = sorted(k for k in set(commits.get(gid, {})) | set(assigned) if topics.matches(k[0]))
        if not keys:
            if topics.everything:
                rows.append(base)
            continue
        for tp in keys:
            row = dict(base, topic=tp[0], partition=tp[1])
            member = assigned.get(tp)
            if member is not None:
                row.update(consumerId=member.member_id, host=member.host, clientId=member.client_id)
            c = commits.get(gid, {}).get(tp)
            f = facts.get(tp)
            row["pendingTransaction"] = (gid, *tp) in pending
            if f is not None:
                row.update(logStartOffset=f.log_start_offset, highWatermark=f.high_watermark,
                           logEndOffset=f.log_end_offset)
            if c is not None:
                expires = offset_expiry(state, c, retention_ms)
                row.update(committedOffset=c.offset, leaderEpoch=c.leader_epoch, metadata=c.metadata,
                           commitTimestamp=c.commit_timestamp, commitAgeMs=now_ms - c.commit_timestamp,
                           transactional=c.producer_id >= 0, offsetExpiresAtMs=expires,
                           offsetExpired=expires is not None and now_ms >= expires)
                if f is not None:
                    _lag_columns(row, c.offset, f, retention.get(tp, []), now_ms)
                    _records_lost(row)
            rows.append(row)
    return rows


def _share_rows(base: dict[str, Any], group: Group, share: ShareCoordinatorState,
                facts: Mapping[tuple[str, int], PartitionFacts], retention: Mapping[tuple[str, int], list[Mapping[str, Any]]],
                names: Mapping[str, str], topics: TopicSelection, now_ms: int) -> list[dict[str, Any]]:
    """A share group's rows, one per initialized share-partition, with its ``__share_group_state``
    (``readStateSummary``; none: start offset -1).  ``committedOffset`` is the share-partition start
    offset, ``lag`` Kafka's share lag; the bytes, time and retention columns count from the first
    offset not yet acknowledged or archived, the records lost only those."""
    parts = _share_partitions(group, names)
    keys = sorted(k for k in parts if topics.matches(k[0]))
    if not keys:
        return [base] if topics.everything else []
    out = []
    for tp in keys:
        row = dict(base, topic=tp[0], partition=tp[1])
        st: SharePartitionState | None = share.states.get((group.group_id, parts[tp], tp[1]))
        f = facts.get(tp)
        if f is not None:
            row.update(logStartOffset=f.log_start_offset, highWatermark=f.high_watermark, logEndOffset=f.log_end_offset)
        if st is not None:
            row.update(leaderEpoch=None if st.leader_epoch == -1 else st.leader_epoch, shareStateEpoch=st.state_epoch,
                       deliveryCompleteCount=None if st.delivery_complete_count == -1 else st.delivery_complete_count,
                       inFlight=[b.as_row() for b in st.batches])
        if st is None or st.start_offset < 0:
            out.append(row)
            continue
        row["committedOffset"] = st.start_offset
        if f is not None:
            _lag_columns(row, st.first_incomplete(), f, retention.get(tp, []), now_ms)
            row["lag"] = st.lag(f.high_watermark)
            row["lostRecords"] = st.incomplete_between(st.start_offset, f.log_start_offset)
            if row.get("retentionLogStartOffset") is not None:
                row["retentionLossRecords"] = st.incomplete_between(
                    max(st.start_offset, f.log_start_offset), min(row["retentionLogStartOffset"], f.high_watermark))
            _records_lost(row)
        out.append(row)
    return out


def _records_lost(row: dict[str, Any]) -> None:
    """``recordsLost``: the unread records below the log start the retention pass at now leaves (those
    gone already and those the pass deletes; without a retention view, those gone already)."""
    row["recordsLost"] = row["lostRecords"] + (row.get("retentionLossRecords") or 0)


def _lag_columns(row: dict[str, Any], committed: int, f: PartitionFacts, segs: Sequence[Mapping[str, Any]],
                 now_ms: int) -> None:
    row["lag"] = f.high_watermark - committed
    row["lostRecords"] = max(0, f.log_start_offset - committed)
    at = f.at.get(committed)
    # a tiered partition's unread records in the remote tier: their bytes are not looked up
    unread_remote = f.local_start is not None and max(committed, f.log_start_offset) < f.local_start \
        and committed < f.high_watermark
    row["lagBytes"] = None if unread_remote else (at.lag_bytes if at is not None else 0)
    if at is not None and at.timestamp is not None:
        row["firstUnreadTimestamp"] = at.timestamp
        row["timeLagMs"] = now_ms - at.timestamp
    first_unread = max(committed, f.log_start_offset)
    if segs:
        start_after, lost, lost_bytes, when = _retention_loss(segs, f, first_unread, at)
        row.update(retentionLogStartOffset=start_after, retentionLossRecords=lost,
                   retentionLossBytes=lost_bytes, losesRecordsAtMs=when)


def group_rows(executor: Executor, logdirs: Any, now_ms: int, *, configs: Any = None,
               groups: GroupSelection | None = None, topics: Sequence[str] | None = None,
               topic_pattern: str | None = None, retention_ms: int = DEFAULT_OFFSETS_RETENTION_MS,
               offsets_partitions: int | None = None) -> GroupsResult:
    """Every selected group's rows (:data:`SCHEMA`), its tasks run on ``executor``.  ``retention_ms``:
    ``offsets.retention.minutes`` in ms; ``offsets_partitions``: ``offsets.topic.num.partitions``
    (None: not known; see :func:`_merge`)."""
    from kafka_format.engine.retention import retention_rows
    from kafka_format.log.topicconfig import TopicConfigs
    from kafka_format.read.planning import longest_replicas, open_partitions

    selection = groups or GroupSelection()
    topic_sel = TopicSelection.of(topics, topic_pattern)
    dirs = logdirs if isinstance(logdirs, LogDirSet) else open_log_dirs(logdirs)
    found = open_partitions(dirs)
    longest = longest_replicas(found)
    coordinators = [r for r in longest if r.topic == CONSUMER_OFFSETS_TOPIC]
    states = list(executor.map(partial(replay_coordinator, selection=selection),
                               [PartitionRef.of(r) for r in coordinators],
                               weights=[sum(int(s.log_size or 0) for s in r.segments) for r in coordinators]))
    state, notes = _merge(states, offsets_partitions)
    share_logs = [r for r in longest if r.topic == SHARE_GROUP_STATE_TOPIC]
    share, share_notes = _merge_share(list(executor.map(
        partial(replay_share_coordinator, selection=selection), [PartitionRef.of(r) for r in share_logs],
        weights=[sum(int(s.log_size or 0) for s in r.segments) for r in share_logs])))
    notes.extend(share_notes)
    notes.extend(f"{r.topic}-{r.partition}: no replication-offset-checkpoint entry; read to its "
                 "log end (its high watermark once it leads alone)" for r in (*coordinators, *share_logs)
                 if r.high_watermark_checkpoint is None)
    names = _topic_names(found)
    wanted: dict[tuple[str, int], set[int]] = {}
    for (_g, t, p), c in state.offsets.items():
        if topic_sel.matches(t):
            wanted.setdefault((t, p), set()).add(c.offset)
    for g in state.groups.values():
        for tp in _assignments(g, names):
            if topic_sel.matches(tp[0]):
                wanted.setdefault(tp, set())
        for tp, tid in _share_partitions(g, names).items():
            st = share.states.get((g.group_id, tid, tp[1]))
            if topic_sel.matches(tp[0]):
                wanted.setdefault(tp, set()).update(() if st is None or st.start_offset < 0 else (st.first_incomplete(),))
    by_tp = {(r.topic, r.partition): r for r in longest if (r.topic, r.partition) in wanted}
    history = _history_starts(found, list(by_tp.values()))
    missing = sorted(set(wanted) - set(by_tp))
    notes.extend(f"{t}-{p}: no replica in the log dirs; its log offsets and lag are unknown" for t, p in missing)
    targets = [FactsTarget(r.topic, r.partition, r.path, r.log_dir, tuple(sorted(wanted[tp])), history.get(tp))
               for tp, r in sorted(by_tp.items())]
    per = math.ceil(len(targets) / max(1, min(len(targets), 2 * executor.cores()))) if targets else 1
    chunks = [tuple(targets[i:i + per]) for i in range(0, len(targets), per)]
    facts = {(f.topic, f.partition): f for chunk in executor.map(partition_facts, chunks,
                                                               weights=[len(c) << 20 for c in chunks])
             for f in chunk}
    seg_rows: list[Mapping[str, Any]] = []
    if by_tp:
        seg_rows = retention_rows(executor, dirs, configs if configs is not None else TopicConfigs(), now_ms,
                                  topics=sorted({t for t, _ in by_tp})).to_pylist()
        seg_rows = [r for r in seg_rows if (r["topic"], r["partition"]) in by_tp]
    rows = _rows(state, share, facts, _retention_view(seg_rows), names, topic_sel, now_ms, retention_ms)
    anomalies = pa.Table.from_pylist([{"topic": a.topic, "partition": a.partition, "offset": a.offset,
                                       "kind": a.kind, "message": a.message}
                                      for a in (*state.anomalies, *share.anomalies)], schema=ANOMALY_SCHEMA)
    return GroupsResult(pa.Table.from_pylist([{k: r.get(k) for k in COLUMNS} for r in rows], schema=SCHEMA),
                        anomalies, tuple(notes))


def groups_local(logdirs: Any, now_ms: int, **kwargs: Any) -> GroupsResult:
    """:func:`group_rows` on this process's cores."""
    from kafka_format.engine.runtime import LocalExecutor

    return group_rows(LocalExecutor(), logdirs, now_ms, **kwargs)
