"""Share groups' state offline: ``__share_group_state`` replayed as the share coordinator loads it.

Kafka source of record (Kafka 4.4.0, ``share-coordinator/.../coordinator/share/``):
``ShareCoordinatorShard.replay`` / ``handleShareSnapshot`` / ``handleShareUpdate`` / ``merge``,
``ShareGroupOffset.fromRecord``, ``PersisterStateBatchCombiner`` and ``readStateSummary``; the lag
is ``GroupCoordinatorService.computeShareGroupLagAndBuildResponse``'s.

The rules kept here:

* **Loading.** A ``__share_group_state`` partition is replayed record by record in offset order
  (records decoded by :mod:`kafka_format.internal.share_group_state`).  An unknown record type is
  skipped; a record that does not decode, or an update without a value (the shard's replay fails
  on it), is refused: an :class:`~kafka_format.log.groups.Anomaly`, and the replay goes on.
* **A snapshot** replaces the share-partition's state wholesale; its tombstone removes it.
* **An update** on top of a state: the start offset and the leader epoch move unless the update
  says -1, the delivery-complete count is the update's, the snapshot and state epochs and the
  timestamps stay, and the state batches are combined (:func:`combine_state_batches`).  An update
  with no state before it becomes the state (state epoch 0, timestamps 0).
* **Reading it** (``readStateSummary``): start offset, delivery-complete count, leader epoch and
  state epoch; a share-partition without state reads as start offset -1.  The lag is the partition's
  end offset (its high watermark) - start offset - delivery-complete count, unknown when either is -1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kafka_format.common.errors import InternalTopicFormatError
from kafka_format.common.topics import SHARE_GROUP_STATE_TOPIC
from kafka_format.internal.coordinator_records import UnknownRecordTypeError
from kafka_format.internal.share_group_state import (
    DELIVERY_STATES,
    SHARE_SNAPSHOT,
    decode_share_group_state_record,
)
from kafka_format.log.groups import Anomaly

__all__ = [
    "ACKNOWLEDGED",
    "ARCHIVED",
    "ShareCoordinatorState",
    "SharePartitionState",
    "StateBatch",
    "combine_state_batches",
    "replay_share_state_partition",
]

ACKNOWLEDGED = 2                   # RecordState.ACKNOWLEDGED
ARCHIVED = 4                       # RecordState.ARCHIVED
_COMPLETE = (ACKNOWLEDGED, ARCHIVED)
NO_OFFSET = -1


class StateBatch(NamedTuple):
    """``PersisterStateBatch``: offsets ``first_offset``..``last_offset`` (inclusive), one delivery
    state (:data:`~kafka_format.internal.share_group_state.DELIVERY_STATES`) and delivery count."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int

    def as_row(self) -> dict[str, Any]:
        """The batch as the groups job's ``inFlight`` element."""
        return {"firstOffset": self.first_offset, "lastOffset": self.last_offset,
                "deliveryState": DELIVERY_STATES.get(self.delivery_state, str(self.delivery_state)),
                "deliveryCount": self.delivery_count}


@dataclass(frozen=True)
class SharePartitionState:
    """``ShareGroupOffset``: what the share coordinator holds for one share-partition."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int                  # -1: not initialized yet
    delivery_complete_count: int       # -1: unknown
    batches: tuple[StateBatch, ...]
    create_timestamp: int
    write_timestamp: int

    def lag(self, end_offset: int) -> int | None:
        """``computeShareGroupLagAndBuildResponse``'s lag at the partition's ``end_offset``."""
        if self.start_offset == NO_OFFSET or self.delivery_complete_count == NO_OFFSET:
            return None
        return end_offset - self.start_offset - self.delivery_complete_count

    def first_incomplete(self) -> int:
        """The first offset at or past the start offset that is neither acknowledged nor archived:
        the first record the group still has to deliver (-1 when not initialized)."""
        at = self.start_offset
        for b in sorted(self.batches):
            if b.first_offset > at:
                break
            if b.delivery_state in _COMPLETE and b.last_offset >= at:
                at = b.last_offset + 1
        return at

    def incomplete_between(self, lo: int, hi: int) -> int:
        """How many offsets in ``[lo, hi)`` at or past the start offset are not delivery-complete
        (neither acknowledged nor archived): what deleting them takes from the group unread."""
        lo = max(lo, self.start_offset, 0)
        if hi <= lo:
            return 0
        done = sum(max(0, min(b.last_offset + 1, hi) - max(b.first_offset, lo))
                   for b in self.batches if b.delivery_state in _COMPLETE)
        return hi - lo - done


def _batches(rows: Iterable[dict[str, Any]] | None) -> tuple[StateBatch, ...]:
    return tuple(StateBatch(int(b["firstOffset"]), int(b["lastOffset"]), int(b["deliveryState"]),
                            int(b["deliveryCount"])) for b in rows or ())


def combine_state_batches(so_far: Sequence[StateBatch], new: Sequence[StateBatch],
                          start_offset: int) -> tuple[StateBatch, ...]:
    """``PersisterStateBatchCombiner.combineStateBatches``: both lists pruned below ``start_offset``
    (-1: no pruning; a batch across it is cut there), then, unless one batch is left, swept in offset
    order with old and new batches alike: where they overlap the highest delivery count wins, then
    the highest delivery state; adjacent results of the same state and count are joined, gaps stay.
    Raises ValueError where Kafka's sweep fails (a batch ending before it begins)."""
    pruned = [b if start_offset == NO_OFFSET or b.first_offset >= start_offset else b._replace(first_offset=start_offset)
              for b in (*so_far, *new) if start_offset == NO_OFFSET or b.last_offset >= start_offset]
    if len(pruned) <= 1:
        return tuple(pruned)
    events: dict[int, list[tuple[bool, tuple[int, int]]]] = {}
    for b in pruned:
        priority = (b.delivery_count, b.delivery_state)
        events.setdefault(b.first_offset, []).append((True, priority))
        events.setdefault(b.last_offset + 1, []).append((False, priority))
    active: dict[tuple[int, int], int] = {}
    out: list[StateBatch] = []
    open_from, winner = NO_OFFSET, None
    for offset in sorted(events):
        if winner is not None and offset > open_from:
            count, state = winner
            tail = out[-1] if out else None
            if tail is not None and tail.last_offset + 1 == open_from and (tail.delivery_count, tail.delivery_state) == winner:
                out[-1] = tail._replace(last_offset=offset - 1)
            else:
                out.append(StateBatch(open_from, offset - 1, state, count))
        for begin, priority in sorted(events[offset], key=lambda e: e[0]):    # ends first, as Kafka sorts
            if begin:
                active[priority] = active.get(priority, 0) + 1
            elif priority not in active:
                raise ValueError(f"a state batch ends at {offset - 1} before it begins")
            elif active[priority] == 1:
                del active[priority]
            else:
                active[priority] -= 1
        winner = max(active) if active else None
        open_from = offset
    return tuple(out)


@dataclass
class ShareCoordinatorState:
    """What a share coordinator holds after loading ``__share_group_state`` partitions: per
    (group id, topic id, partition) its state, and the records it skipped or refused."""

    states: dict[tuple[str, str, int], SharePartitionState] = field(default_factory=dict)
    anomalies: list[Anomaly] = field(default_factory=list)
    where: dict[tuple[str, str, int], int] = field(default_factory=dict)   # key -> its topic partition

    def replay(self, partition: int, offset: int, key: bytes | None, value: bytes | None) -> None:
        """One record of ``__share_group_state-<partition>`` at ``offset``."""
        if key is None:
            self._anomaly(partition, offset, "refused", "a record without a key (the coordinator's serde "
                                                        "refuses it: \"Key cannot be null\")")
            return
        try:
            k, v = decode_share_group_state_record(key, value)
        except UnknownRecordTypeError as exc:
            self._anomaly(partition, offset, "skipped", f"unknown record type {exc.found}: Kafka ignores it")
            return
        except InternalTopicFormatError as exc:
            self._anomaly(partition, offset, "refused", f"the record does not decode: {exc.reason}")
            return
        data = k["data"]
        sp = (str(data["groupId"]), str(data["topicId"]), int(data["partition"]))
        self.where.setdefault(sp, partition)
        body = None if v is None else v["data"]
        if int(k["type"]) == SHARE_SNAPSHOT:
            if body is None:
                self.states.pop(sp, None)
                return
            self.states[sp] = SharePartitionState(
                int(body["snapshotEpoch"]), int(body["stateEpoch"]), int(body["leaderEpoch"]),
                int(body["startOffset"]), int(body.get("deliveryCompleteCount", NO_OFFSET)),
                _batches(body.get("stateBatches")), int(body["createTimestamp"]), int(body["writeTimestamp"]))
            return
        if body is None:
            self._anomaly(partition, offset, "refused", "a ShareUpdate record without a value (the share "
                                                        "coordinator's replay fails on it)")
            return
        self._update(partition, offset, sp, body)

    def _update(self, partition: int, offset: int, sp: tuple[str, str, int], body: dict[str, Any]) -> None:
        """``handleShareUpdate``: ``merge`` onto the state, or the update itself without one."""
        start, leader = int(body["startOffset"]), int(body["leaderEpoch"])
        dcc = int(body.get("deliveryCompleteCount", NO_OFFSET))
        new = _batches(body.get("stateBatches"))
        cur = self.states.get(sp)
        if cur is None:
            self.states[sp] = SharePartitionState(int(body["snapshotEpoch"]), 0, leader, start, dcc, new, 0, 0)
            return
        start = cur.start_offset if start == NO_OFFSET else start
        leader = cur.leader_epoch if leader == NO_OFFSET else leader
        try:
            batches = combine_state_batches(cur.batches, new, start)
        except ValueError as exc:
            self._anomaly(partition, offset, "refused", f"the share coordinator cannot combine its batches: {exc}")
            return
        self.states[sp] = SharePartitionState(cur.snapshot_epoch, cur.state_epoch, leader, start, dcc, batches,
                                              cur.create_timestamp, cur.write_timestamp)

    def _anomaly(self, partition: int, offset: int, kind: str, message: str) -> None:
        self.anomalies.append(Anomaly(partition, offset, kind, message, SHARE_GROUP_STATE_TOPIC))


def replay_share_state_partition(partition: int, records: Iterable[tuple[int, int, bool, bytes | None, bytes | None]],
                                 state: ShareCoordinatorState | None = None) -> ShareCoordinatorState:
    """Replay ``__share_group_state-<partition>``'s records (``(offset, producerId, isControl, key,
    value)`` in offset order) into ``state`` (a new one by default); control records are ignored (the
    share coordinator writes none)."""
    state = ShareCoordinatorState() if state is None else state
    for offset, _producer, control, key, value in records:
        if not control:
            state.replay(partition, offset, key, value)
    return state
