"""Follower truncation and the agreed history (log/replication.py).  Every expected offset is worked by
hand from Kafka 4.4's rules: ``LeaderEpochFileCache.endOffsetFor``, the fetch-path divergence check of
``Partition.fetchRecords``, ``AbstractFetcherThread.getOffsetTruncationState`` and
``fetchOffsetAndTruncate``."""

from __future__ import annotations

import pytest

from kafka_format.log.replication import (
    UNDEFINED_EPOCH,
    UNDEFINED_OFFSET,
    Copy,
    HistoryRange,
    assemble_history,
    choose_leader,
    end_offset_for,
    follower_truncation,
)

UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_OFFSET)


def test_end_offset_for_is_the_epoch_caches_answer() -> None:
    epochs = [(0, 0), (2, 50), (4, 90)]
    assert end_offset_for(epochs, 4, 120) == (4, 120)        # the latest epoch: the log end
    assert end_offset_for(epochs, 2, 120) == (2, 90)         # the next epoch's start
    assert end_offset_for(epochs, 3, 120) == (2, 90)         # unknown: the greatest epoch below it
    assert end_offset_for([(3, 10), (5, 20)], 1, 30) == (1, 10)   # below every epoch: asked epoch, first start
    assert end_offset_for(epochs, 7, 120) == UNDEFINED       # above the latest
    assert end_offset_for(epochs, UNDEFINED_EPOCH, 120) == UNDEFINED
    assert end_offset_for([], 0, 0) == UNDEFINED


def test_a_follower_with_unreplicated_records_of_the_old_epoch_truncates_to_its_end() -> None:
    # A led epoch 0 to 100 and then epoch 1; B had appended epoch-0 records up to 120 A never got.
    leader = Copy("A", ((0, 0), (1, 100)), 0, 150)
    follower = Copy("B", ((0, 0),), 0, 120)
    t = follower_truncation(leader, follower)
    assert t.offset == 100 and t.start_again_at is None and len(t.steps) == 1
    assert "diverging epoch 0 end 100" in t.steps[0]


def test_after_an_unclean_election_the_follower_walks_back_epoch_by_epoch() -> None:
    # B led epoch 2 from 50 on a log A never had; A led 1 from 40 and leads 3 from 60.
    leader = Copy("A", ((0, 0), (1, 40), (3, 60)), 0, 90)
    follower = Copy("B", ((0, 0), (2, 50)), 0, 80)
    t = follower_truncation(leader, follower)
    # fetch(80, epoch 2) -> leader (1, 60): B knows no epoch 1, its end of epoch 0 is 50 -> 50;
    # fetch(50, epoch 0) -> leader (0, 40) < 50 -> min(50, 40) = 40; fetch(40, epoch 0) accepted.
    assert t.offset == 40 and len(t.steps) == 2
    assert "does not know epoch 1" in t.steps[0] and "truncate to 50" in t.steps[0]
    assert "truncate to 40" in t.steps[1]


def test_a_follower_in_step_keeps_everything() -> None:
    leader = Copy("A", ((0, 0), (1, 100)), 0, 150)
    assert follower_truncation(leader, Copy("B", ((0, 0), (1, 100)), 0, 130)).offset == 130
    assert follower_truncation(leader, Copy("C", ((0, 0),), 0, 100)).steps == ()


def test_out_of_range_fetches() -> None:
    leader = Copy("A", ((0, 0), (1, 100)), 500, 600)
    past = follower_truncation(leader, Copy("B", (), 0, 700))      # no epochs: no divergence check
    assert past.offset == 600 and past.start_again_at is None
    below = follower_truncation(leader, Copy("C", ((0, 0),), 0, 10))
    assert below.start_again_at == 500 and below.truncated(10)
    # an epoch above the leader's latest: no end offset, out of range, kept as fetchOffsetAndTruncate keeps it
    higher = follower_truncation(Copy("A", ((0, 0), (4, 20)), 0, 50), Copy("D", ((0, 0), (5, 30)), 0, 40))
    assert higher.offset == 40 and "no end offset for epoch 5" in higher.steps[0]


def test_the_leader_is_the_metadatas_or_the_latest_epoch() -> None:
    a = Copy("A", ((0, 0), (3, 10)), 0, 20)
    b = Copy("B", ((0, 0), (3, 10)), 0, 25)
    c = Copy("C", ((0, 0), (2, 10)), 0, 90)
    assert choose_leader([a, b, c])[0] is b                 # epoch 3 beats 2, then the log end
    assert choose_leader([a, c], leader="C")[0] is c
    with pytest.raises(ValueError, match="none of the copies"):
        choose_leader([a], leader="Z")


def test_each_range_comes_from_a_copy_that_holds_it_valid() -> None:
    leader = Copy("A", ((0, 0), (1, 100)), 0, 150, valid=((0, 60), (70, 150)))     # a bad batch at 60..70
    follower = Copy("B", ((0, 0),), 0, 120, valid=((0, 120),))                     # keeps 0..100
    ranges, truncations = assemble_history([leader, follower])
    assert [(r.start, r.end, r.source) for r in ranges] == [(0, 60, "A"), (60, 70, "B"), (70, 150, "A")]
    assert truncations["B"].offset == 100


def test_a_range_no_copy_keeps_is_reported_not_skipped() -> None:
    leader = Copy("A", ((0, 0), (1, 100)), 0, 150, valid=((0, 60), (110, 150)))
    follower = Copy("B", ((0, 0),), 0, 120, valid=((0, 80),))   # truncates to 100: its 80..100 is damaged
    ranges, _ = assemble_history([leader, follower])
    assert ranges == [
        HistoryRange(0, 60, "A", ranges[0].reason), HistoryRange(60, 80, "B", ranges[1].reason),
        HistoryRange(80, 110, None, "no copy holds these offsets valid"), HistoryRange(110, 150, "A", ranges[3].reason),
    ]
    # the follower's bytes above its truncation offset are another history: never used
    leader2 = Copy("A", ((0, 0), (1, 100)), 0, 150, valid=((0, 100),))
    ranges2, _ = assemble_history([leader2, Copy("B", ((0, 0),), 0, 150, valid=((0, 150),))])
    assert [(r.start, r.end, r.source) for r in ranges2] == [(0, 100, "A"), (100, 150, None)]
