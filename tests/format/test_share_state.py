"""``__share_group_state`` replayed as Kafka 4.4's share coordinator loads it (kafka_format.log.share_state).

Every expectation is written from Kafka's rules (``ShareCoordinatorShard.handleShareSnapshot`` /
``handleShareUpdate`` / ``merge``, ``PersisterStateBatchCombiner``, ``readStateSummary`` and the
group coordinator's share lag), never from this code's output; the property test compares the
combiner with a per-offset model of the same rule.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kafka_format.internal.share_group_state import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    encode_share_snapshot,
    encode_share_state_key,
    encode_share_update,
)
from kafka_format.log.share_state import StateBatch, combine_state_batches, replay_share_state_partition

TID = "kNMR_1PAQWed_lrq6biHZw"
KEY = ("sg", TID, 0)
AVAILABLE, ACKED, ARCHIVED = 0, 2, 4


def _b(first: int, last: int, state: int, count: int) -> dict[str, int]:
    return {"firstOffset": first, "lastOffset": last, "deliveryState": state, "deliveryCount": count}


def _snapshot(start: int, batches: list[dict[str, int]], *, epoch: int = 0, state_epoch: int = 2, leader: int = 0,
              dcc: int = -1, ts: int = 1000) -> tuple[bytes, bytes | None]:
    return (encode_share_state_key(SHARE_SNAPSHOT, *KEY),
            encode_share_snapshot({"snapshotEpoch": epoch, "stateEpoch": state_epoch, "leaderEpoch": leader,
                                   "startOffset": start, "deliveryCompleteCount": dcc, "createTimestamp": ts,
                                   "writeTimestamp": ts, "stateBatches": batches}))


def _update(start: int, batches: list[dict[str, int]], *, epoch: int = 0, leader: int = 0,
            dcc: int = -1) -> tuple[bytes, bytes | None]:
    return (encode_share_state_key(SHARE_UPDATE, *KEY),
            encode_share_update({"snapshotEpoch": epoch, "leaderEpoch": leader, "startOffset": start,
                                 "deliveryCompleteCount": dcc, "stateBatches": batches}))


def _replay(*records: tuple[bytes | None, bytes | None]) -> Any:
    return replay_share_state_partition(36, [(i, -1, False, k, v) for i, (k, v) in enumerate(records)])


class TestCombiner:
    def test_the_higher_delivery_count_wins_whichever_list_it_comes_from(self) -> None:
        # Kafka 4.4: no "new wins" rule; (count, state) decides
        assert combine_state_batches([StateBatch(0, 0, AVAILABLE, 2)], [StateBatch(0, 0, ACKED, 3)], 0) == (
            StateBatch(0, 0, ACKED, 3),)
        assert combine_state_batches([StateBatch(0, 9, ACKED, 3)], [StateBatch(2, 4, AVAILABLE, 1)], 0) == (
            StateBatch(0, 9, ACKED, 3),)
        # same count: the higher state
        assert combine_state_batches([StateBatch(0, 4, ARCHIVED, 1)], [StateBatch(3, 6, ACKED, 1)], 0) == (
            StateBatch(0, 4, ARCHIVED, 1), StateBatch(5, 6, ACKED, 1))

    def test_the_start_offset_drops_and_cuts_batches_and_gaps_stay(self) -> None:
        so_far = [StateBatch(0, 3, ACKED, 1), StateBatch(4, 4, AVAILABLE, 2), StateBatch(8, 9, ACKED, 1)]
        assert combine_state_batches(so_far, [StateBatch(2, 5, AVAILABLE, 1)], 4) == (
            StateBatch(4, 4, AVAILABLE, 2), StateBatch(5, 5, AVAILABLE, 1), StateBatch(8, 9, ACKED, 1))

    def test_adjacent_equal_ranges_join_but_a_single_batch_is_left_as_it_is(self) -> None:
        assert combine_state_batches([StateBatch(0, 1, ACKED, 1)], [StateBatch(2, 5, ACKED, 1)], -1) == (
            StateBatch(0, 5, ACKED, 1),)
        assert combine_state_batches([], [StateBatch(0, 5, ACKED, 1)], 3) == (StateBatch(3, 5, ACKED, 1),)

    @given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 6), st.sampled_from([0, 2, 4]), st.integers(1, 4)),
                    max_size=6),
           st.lists(st.tuples(st.integers(0, 30), st.integers(0, 6), st.sampled_from([0, 2, 4]), st.integers(1, 4)),
                    max_size=6),
           st.integers(-1, 20))
    def test_every_offset_takes_the_best_batch_covering_it(self, a: list[Any], b: list[Any], start: int) -> None:
        so_far = [StateBatch(f, f + n, s, c) for f, n, s, c in a]
        new = [StateBatch(f, f + n, s, c) for f, n, s, c in b]
        out = combine_state_batches(so_far, new, start)
        covered = [x for x in so_far + new if start == -1 or x.last_offset >= start]
        model = {}
        for x in covered:
            for o in range(max(x.first_offset, start), x.last_offset + 1):
                model[o] = max(model.get(o, (0, -1)), (x.delivery_count, x.delivery_state))
        got = {o: (x.delivery_count, x.delivery_state) for x in out for o in range(x.first_offset, x.last_offset + 1)}
        assert got == model
        assert all(p.last_offset < q.first_offset for p, q in pairwise(out))
        if len(covered) > 1:    # swept: neighbours of one state and count are joined
            assert not any(p.last_offset + 1 == q.first_offset and (p.delivery_state, p.delivery_count)
                           == (q.delivery_state, q.delivery_count) for p, q in pairwise(out))


class TestReplay:
    def test_a_snapshot_is_the_state_and_its_tombstone_removes_it(self) -> None:
        s = _replay(_snapshot(5, [_b(5, 6, ACKED, 1)], dcc=2, state_epoch=3, leader=1))
        st_ = s.states[KEY]
        assert (st_.start_offset, st_.state_epoch, st_.leader_epoch, st_.delivery_complete_count) == (5, 3, 1, 2)
        assert st_.batches == (StateBatch(5, 6, ACKED, 1),)
        assert _replay(_snapshot(5, []), (encode_share_state_key(SHARE_SNAPSHOT, *KEY), None)).states == {}

    def test_an_update_merges_onto_the_snapshot(self) -> None:
        s = _replay(_snapshot(0, [_b(0, 0, AVAILABLE, 2)], epoch=4, state_epoch=2, dcc=5, ts=77),
                    _update(-1, [_b(0, 0, ACKED, 3), _b(1, 2, ACKED, 1)], epoch=9, leader=-1, dcc=8))
        st_ = s.states[KEY]
        # start and leader epoch kept (-1), dcc the update's, epochs and timestamps the snapshot's
        assert (st_.start_offset, st_.leader_epoch, st_.delivery_complete_count) == (0, 0, 8)
        assert (st_.snapshot_epoch, st_.state_epoch, st_.create_timestamp) == (4, 2, 77)
        assert st_.batches == (StateBatch(0, 0, ACKED, 3), StateBatch(1, 2, ACKED, 1))
        s = _replay(_snapshot(0, [_b(0, 3, ACKED, 1), _b(4, 9, AVAILABLE, 1)]), _update(4, [], leader=2, dcc=0))
        assert s.states[KEY].batches == (StateBatch(4, 9, AVAILABLE, 1),)
        assert s.states[KEY].leader_epoch == 2

    def test_an_update_without_a_snapshot_becomes_the_state(self) -> None:
        st_ = _replay(_update(3, [_b(3, 4, ACKED, 1)], epoch=2, dcc=2)).states[KEY]
        assert (st_.snapshot_epoch, st_.state_epoch, st_.start_offset, st_.create_timestamp) == (2, 0, 3, 0)

    def test_unknown_and_unreadable_records_are_reported(self) -> None:
        snap_key = encode_share_state_key(SHARE_SNAPSHOT, *KEY)
        s = _replay((b"\x00\x07" + snap_key[2:], b"\x00\x00"),
                    (encode_share_state_key(SHARE_UPDATE, *KEY), None),
                    (snap_key, b"\x00\x00\x00"),
                    (None, b"\x00\x00"))
        assert [(a.topic, a.offset, a.kind) for a in s.anomalies] == [
            ("__share_group_state", 0, "skipped"), ("__share_group_state", 1, "refused"),
            ("__share_group_state", 2, "refused"), ("__share_group_state", 3, "refused")]
        assert s.states == {}

    def test_lag_and_what_is_not_yet_delivered(self) -> None:
        st_ = _replay(_snapshot(4, [_b(4, 4, AVAILABLE, 4), _b(5, 9, ACKED, 1), _b(12, 12, ARCHIVED, 5)],
                                dcc=6)).states[KEY]
        assert st_.lag(20) == 20 - 4 - 6
        # offsets 4..14: 4 available, 5-9 and 12 complete, 10, 11, 13, 14 never delivered
        assert st_.incomplete_between(0, 15) == 5
        assert st_.first_incomplete() == 4
        done = _replay(_snapshot(4, [_b(4, 4, ACKED, 4), _b(5, 9, ARCHIVED, 1), _b(12, 12, ACKED, 5)])).states[KEY]
        assert done.first_incomplete() == 10
        assert _replay(_snapshot(-1, [])).states[KEY].lag(20) is None
        assert _replay(_snapshot(4, [], dcc=-1)).states[KEY].lag(20) is None
