"""``__consumer_offsets`` replayed as Kafka's group coordinator loads it (kafka_format.log.groups).

Every expectation is written from Kafka's rules (OffsetMetadataManager.replay and
replayEndTransactionMarker, GroupMetadataManager.replay, ClassicGroup/ConsumerGroup
offsetExpirationCondition, OffsetExpirationConditionImpl), never from this code's output.
"""

from __future__ import annotations

from groups_builders import (
    DAY_MS,
    FIRST_TS,
    ORDERS_ID,
    Rec,
    classic_group,
    commit,
    commit_tombstone,
    consumer_record,
    kip848_group,
    streams_group,
)

from kafka_format.internal.consumer_offsets import decode_consumer_offsets_record, encode_consumer_offsets_key
from kafka_format.log.groups import (
    CLASSIC,
    CONSUMER,
    DEFAULT_OFFSETS_RETENTION_MS,
    SHARE,
    STREAMS,
    CoordinatorState,
    offset_expiry,
    replay_partition,
)

RET = DEFAULT_OFFSETS_RETENTION_MS
ABORT_KEY = b"\x00\x00\x00\x00"
COMMIT_KEY = b"\x00\x00\x00\x01"


def _replay(*items: Rec | tuple[str, int, bool]) -> CoordinatorState:
    """Records at offsets 0, 1, ...; ``("txn", pid, ...)``-marked items come from producer ``pid``;
    ``("marker", pid, commit)`` is a control record."""
    records = []
    for offset, item in enumerate(items):
        if item[0] == "marker":
            _, pid, ok = item
            records.append((offset, pid, True, COMMIT_KEY if ok else ABORT_KEY, b"\x00\x00\x00\x00\x00\x00"))
        elif item[0] == "txn":
            _, pid, (k, v) = item   # type: ignore[misc]
            records.append((offset, pid, False, k, v))
        else:
            k, v = item             # type: ignore[misc]
            records.append((offset, -1, False, k, v))
    return replay_partition(0, records)


def _offset(state: CoordinatorState, group: str, partition: int = 0) -> int | None:
    c = state.offsets.get((group, "orders", partition))
    return None if c is None else c.offset


class TestOffsets:
    def test_the_latest_commit_wins_and_a_tombstone_deletes_it(self) -> None:
        s = _replay(commit("g", 0, 5, FIRST_TS), commit("g", 0, 9, FIRST_TS + 1), commit("g", 1, 3, FIRST_TS),
                    commit_tombstone("g", 1))
        assert _offset(s, "g") == 9
        assert _offset(s, "g", 1) is None
        c = s.offsets[("g", "orders", 0)]
        assert (c.record_offset, c.commit_timestamp, c.producer_id) == (1, FIRST_TS + 1, -1)

    def test_fields_of_the_commit_record(self) -> None:
        s = _replay(commit("g", 0, 7, FIRST_TS, metadata="m", leader_epoch=4),
                    commit("h", 0, 8, FIRST_TS, version=1, expire=FIRST_TS + 5))
        g, h = s.offsets[("g", "orders", 0)], s.offsets[("h", "orders", 0)]
        assert (g.metadata, g.leader_epoch, g.expire_timestamp) == ("m", 4, None)
        assert (h.leader_epoch, h.expire_timestamp) == (None, FIRST_TS + 5)      # v1 has no leader epoch

    def test_a_transactional_commit_counts_once_committed(self) -> None:
        s = _replay(("txn", 7, commit("g", 0, 30, FIRST_TS)))
        assert _offset(s, "g") is None and s.has_pending("g", "orders", 0)
        s = _replay(("txn", 7, commit("g", 0, 30, FIRST_TS)), ("marker", 7, True))
        assert _offset(s, "g") == 30 and not s.has_pending("g", "orders", 0)
        assert s.offsets[("g", "orders", 0)].producer_id == 7

    def test_an_aborted_transactional_commit_is_dropped(self) -> None:
        s = _replay(commit("g", 0, 10, FIRST_TS), ("txn", 7, commit("g", 0, 30, FIRST_TS)), ("marker", 7, False))
        assert _offset(s, "g") == 10 and not s.pending and not s.open_transactions

    def test_a_commit_recorded_after_the_transactional_one_wins_over_it(self) -> None:
        # the transactional commit at record offset 0, a plain one at 1, then COMMIT: the higher
        # record offset stays ("We always keep the most recent committed offset")
        s = _replay(("txn", 7, commit("g", 0, 30, FIRST_TS)), commit("g", 0, 12, FIRST_TS), ("marker", 7, True))
        assert _offset(s, "g") == 12
        s = _replay(commit("g", 0, 12, FIRST_TS), ("txn", 7, commit("g", 0, 30, FIRST_TS)), ("marker", 7, True))
        assert _offset(s, "g") == 30

    def test_a_tombstone_also_removes_the_pending_transactional_commits(self) -> None:
        s = _replay(("txn", 7, commit("g", 0, 30, FIRST_TS)), commit_tombstone("g", 0), ("marker", 7, True))
        assert _offset(s, "g") is None

    def test_a_marker_of_another_producer_leaves_the_transaction_open(self) -> None:
        s = _replay(("txn", 7, commit("g", 0, 30, FIRST_TS)), ("marker", 8, True))
        assert _offset(s, "g") is None and s.open_transactions == {"g": {7}}


class TestGroups:
    def test_a_commit_alone_makes_a_simple_empty_classic_group(self) -> None:
        g = _replay(commit("g", 0, 1, FIRST_TS)).groups["g"]
        assert (g.type, g.simple, g.protocol_type, g.state, g.members) == (CLASSIC, True, None, "Empty", {})

    def test_group_metadata_makes_a_stable_classic_group_and_its_tombstone_removes_it(self) -> None:
        members = [{"id": "m1", "client": "c1", "host": "/h1", "topics": ["orders"], "assigned": {"orders": [0, 1]}}]
        s = _replay(classic_group("g", generation=4, members=members, state_ts=FIRST_TS))
        g = s.groups["g"]
        assert (g.state, g.generation, g.protocol, g.leader, g.current_state_timestamp) == \
            ("Stable", 4, "range", "m1", FIRST_TS)
        assert g.members["m1"].assignment == (("orders", 0), ("orders", 1))
        assert g.subscribed_topics == frozenset({"orders"})
        s = _replay(classic_group("g", generation=4, members=members), (encode_consumer_offsets_key(
            2, {"group": "g"}), None))
        assert "g" not in s.groups

    def test_a_classic_group_without_members_is_empty(self) -> None:
        g = _replay(classic_group("g", generation=5, members=[], protocol=None)).groups["g"]
        assert (g.state, g.subscribed_topics) == ("Empty", frozenset())

    def test_a_consumer_protocol_group_replaces_the_simple_group_of_its_first_commit(self) -> None:
        s = _replay(commit("g", 0, 1, FIRST_TS), *kip848_group("g", "m", epoch=3, partitions=[0, 1], topics=["orders"]))
        g = s.groups["g"]
        assert (g.type, g.state, g.generation, g.target_assignment_epoch) == (CONSUMER, "Stable", 3, 3)
        assert g.members["m"].assignment == ((ORDERS_ID, 0), (ORDERS_ID, 1))
        assert _offset(s, "g") == 1

    def test_consumer_group_states(self) -> None:
        recs = kip848_group("g", "m", epoch=3, partitions=[0], topics=["orders"])
        # group epoch bumped past the target assignment's: Assigning
        s = _replay(*recs, consumer_record(3, {"groupId": "g"}, {"epoch": 4}))
        assert s.groups["g"].state == "Assigning"
        # target assignment at 4, the member still at 3: Reconciling
        s = _replay(*recs, consumer_record(3, {"groupId": "g"}, {"epoch": 4}),
                    consumer_record(6, {"groupId": "g"}, {"assignmentEpoch": 4}))
        assert s.groups["g"].state == "Reconciling"

    def test_a_consumer_group_leaves_by_kafkas_tombstones_in_order(self) -> None:
        recs = kip848_group("g", "m", epoch=3, partitions=[0], topics=["orders"])
        leave = [consumer_record(8, {"groupId": "g", "memberId": "m"}, None),
                 consumer_record(7, {"groupId": "g", "memberId": "m"}, None),
                 consumer_record(5, {"groupId": "g", "memberId": "m"}, None),
                 consumer_record(6, {"groupId": "g"}, None), consumer_record(3, {"groupId": "g"}, None)]
        s = _replay(*recs, *leave)
        assert "g" not in s.groups and not s.anomalies

    def test_a_tombstone_kafka_refuses_is_an_anomaly_at_its_offset(self) -> None:
        recs = kip848_group("g", "m", epoch=3, partitions=[0], topics=["orders"])
        s = _replay(*recs, consumer_record(3, {"groupId": "g"}, None))
        assert [(a.offset, a.kind) for a in s.anomalies] == [(len(recs), "refused")]
        assert "still has 1 members" in s.anomalies[0].message
        assert "g" in s.groups

    def test_an_unknown_record_type_is_skipped(self) -> None:
        s = replay_partition(0, [(0, -1, False, b"\x00\x63\x00\x00", b"\x00\x00")])
        assert [(a.offset, a.kind) for a in s.anomalies] == [(0, "skipped")]

    def test_record_types_kafka_4_4_no_longer_knows_are_skipped(self) -> None:
        # 9: ShareGroupPartitionMetadata (4.0's share-group early access), 18: never released
        s = replay_partition(0, [(0, -1, False, b"\x00\x09\x00\x01g", b"\x00\x00\x00"),
                                 (1, -1, False, b"\x00\x12\x00\x01g", b"\x00\x00\x00")])
        assert [(a.offset, a.kind) for a in s.anomalies] == [(0, "skipped"), (1, "skipped")]
        assert s.groups == {}

    def test_a_share_group_never_replaces_a_simple_group(self) -> None:
        # getOrMaybeCreatePersistedShareGroup, unlike the consumer and streams ones
        s = _replay(commit("g", 0, 1, FIRST_TS), consumer_record(11, {"groupId": "g"}, {"epoch": 1, "metadataHash": 0}))
        assert [(a.offset, a.kind, a.message) for a in s.anomalies] == [(1, "refused", "Group g is not a share group.")]
        assert s.groups["g"].type == CLASSIC
        s = _replay(consumer_record(11, {"groupId": "g"}, {"epoch": 4, "metadataHash": 0}))
        assert (s.groups["g"].type, s.groups["g"].generation) == (SHARE, 4)

    def test_a_share_group_is_stable_with_members_whatever_its_epochs(self) -> None:
        # ShareGroup.maybeUpdateGroupState: Empty or Stable, no Assigning/Reconciling
        s = _replay(consumer_record(10, {"groupId": "g", "memberId": "m"},
                                    {"rackId": None, "clientId": "c", "clientHost": "/h", "subscribedTopicNames": ["t"]}),
                    consumer_record(11, {"groupId": "g"}, {"epoch": 9, "metadataHash": 0}))
        assert (s.groups["g"].state, len(s.groups["g"].members)) == ("Stable", 1)

    def test_share_group_metadata_is_read_in_kafka_4_4s_layout(self) -> None:
        # ShareGroupMetadataKey: type 11, GroupId "sg"; value v0: Epoch int32 7, MetadataHash int64, no tags
        key = b"\x00\x0b\x00\x02sg"
        value = b"\x00\x00" + (7).to_bytes(4, "big") + (0x0102030405060708).to_bytes(8, "big") + b"\x00"
        assert decode_consumer_offsets_record(key, value)[1] == {
            "version": "0", "data": {"epoch": 7, "metadataHash": 0x0102030405060708}}
        s = replay_partition(0, [(0, -1, False, key, value)])
        assert s.anomalies == []
        assert (s.groups["sg"].type, s.groups["sg"].generation) == (SHARE, 7)

    def test_a_streams_group_is_replayed_with_its_state(self) -> None:
        s = _replay(*streams_group("app", "m1", epoch=3, source_topics=["orders"]))
        g = s.groups["app"]
        assert (g.type, g.state, g.generation, len(g.members)) == (STREAMS, "Stable", 3, 1)
        assert s.anomalies == []
        # the metadata names no validated topology epoch (-1): NotReady
        assert _replay(*streams_group("app", "m1", epoch=3, source_topics=["orders"], validated=-1)) \
            .groups["app"].state == "NotReady"
        # the member is not yet STABLE (2: UNREVOKED_TASKS)
        assert _replay(*streams_group("app", "m1", epoch=3, source_topics=["orders"], member_state=2)) \
            .groups["app"].state == "Reconciling"
        # group epoch past the target assignment's
        recs = streams_group("app", "m1", epoch=3, source_topics=["orders"])
        assert _replay(*recs, consumer_record(17, {"groupId": "app"}, {"epoch": 4, "metadataHash": 0,
                                                                        "validatedTopologyEpoch": 1})) \
            .groups["app"].state == "Assigning"

    def test_a_streams_group_leaves_by_kafkas_tombstones_and_a_premature_one_is_refused(self) -> None:
        recs = streams_group("app", "m1", epoch=3, source_topics=["orders"])
        s = _replay(*recs, consumer_record(17, {"groupId": "app"}, None))
        assert [(a.offset, a.message) for a in s.anomalies] == [
            (len(recs), "Received a tombstone record to delete group app but the group still has 1 members.")]
        gone = [consumer_record(22, {"groupId": "app", "memberId": "m1"}, None),
                consumer_record(21, {"groupId": "app", "memberId": "m1"}, None),
                consumer_record(20, {"groupId": "app"}, None),
                consumer_record(19, {"groupId": "app", "memberId": "m1"}, None),
                consumer_record(17, {"groupId": "app"}, None),
                consumer_record(23, {"groupId": "app"}, None)]
        s = _replay(*recs, *gone)
        assert s.anomalies == [] and "app" not in s.groups
        # the member's tombstone before its assignment's: Kafka's check
        s = _replay(*recs, consumer_record(19, {"groupId": "app", "memberId": "m1"}, None))
        assert [a.message for a in s.anomalies] == [
            "Received a tombstone record to delete member m1 but did not receive "
            "StreamsGroupCurrentMemberAssignmentValue tombstone."]

    def test_a_consumer_group_replaces_nothing_of_another_kind(self) -> None:
        s = _replay(*streams_group("app", "m1", epoch=3, source_topics=["orders"]),
                    consumer_record(3, {"groupId": "app"}, {"epoch": 9}))
        assert [a.message for a in s.anomalies] == ["Group app is not a consumer group"]

    def test_a_record_without_a_key_or_that_does_not_decode_is_refused(self) -> None:
        s = replay_partition(0, [(0, -1, False, None, b"x"), (1, -1, False, b"\x00\x01\xff", b"x")])
        assert [(a.offset, a.kind) for a in s.anomalies] == [(0, "refused"), (1, "refused")]


class TestExpiry:
    def _expiry(self, *items: Rec | tuple[str, int, bool], group: str = "g") -> int | None:
        s = _replay(*items)
        return offset_expiry(s, s.offsets[(group, "orders", 0)], RET)

    def test_a_simple_groups_offset_expires_by_its_commit_time(self) -> None:
        assert self._expiry(commit("g", 0, 1, FIRST_TS)) == FIRST_TS + RET

    def test_an_empty_consumer_groups_offsets_expire_from_when_it_became_empty(self) -> None:
        assert self._expiry(commit("g", 0, 1, FIRST_TS),
                            classic_group("g", generation=2, members=[], protocol=None,
                                          state_ts=FIRST_TS + DAY_MS)) == FIRST_TS + DAY_MS + RET
        # no currentStateTimestamp (an old GroupMetadataValue): the commit time
        assert self._expiry(commit("g", 0, 1, FIRST_TS),
                            classic_group("g", generation=2, members=[], protocol=None)) == FIRST_TS + RET

    def test_a_stable_consumer_group_keeps_the_offsets_of_topics_it_subscribes_to(self) -> None:
        m = [{"id": "m1", "client": "c", "host": "/h", "topics": ["orders"], "assigned": {"orders": [0]}}]
        assert self._expiry(classic_group("g", generation=2, members=m), commit("g", 0, 1, FIRST_TS)) is None
        other = [dict(m[0], topics=["payments"], assigned={"payments": [0]})]
        assert self._expiry(classic_group("g", generation=2, members=other),
                            commit("g", 0, 1, FIRST_TS)) == FIRST_TS + RET

    def test_a_stable_group_of_another_protocol_keeps_every_offset(self) -> None:
        m = [{"id": "m1", "client": "c", "host": "/h", "topics": [], "assigned": {}}]
        assert self._expiry(classic_group("g", generation=2, members=m, protocol_type="connect"),
                            commit("g", 0, 1, FIRST_TS)) is None

    def test_a_v1_commit_expires_at_its_expire_timestamp(self) -> None:
        assert self._expiry(commit("g", 0, 1, FIRST_TS, version=1, expire=FIRST_TS + 60_000)) == FIRST_TS + 60_000

    def test_a_pending_transactional_commit_holds_the_offset(self) -> None:
        assert self._expiry(commit("g", 0, 1, FIRST_TS), ("txn", 7, commit("g", 0, 2, FIRST_TS))) is None

    def test_a_consumer_group_keeps_the_topics_its_regular_expressions_resolved(self) -> None:
        recs = kip848_group("g", "m", epoch=3, partitions=[0], topics=[])
        regex = consumer_record(16, {"groupId": "g", "regularExpression": "ord.*"},
                                {"topics": ["orders"], "version": 5, "timestamp": FIRST_TS})
        assert self._expiry(*recs, regex, commit("g", 0, 1, FIRST_TS)) is None
        dropped = consumer_record(16, {"groupId": "g", "regularExpression": "ord.*"}, None)
        assert self._expiry(*recs, regex, dropped, commit("g", 0, 1, FIRST_TS)) == FIRST_TS + RET

    def test_a_streams_group_keeps_its_source_topics_unless_it_is_empty(self) -> None:
        recs = streams_group("app", "m1", epoch=3, source_topics=["orders"])
        assert self._expiry(*recs, commit("app", 0, 1, FIRST_TS), group="app") is None
        other = streams_group("app", "m1", epoch=3, source_topics=["payments"])
        assert self._expiry(*other, commit("app", 0, 1, FIRST_TS), group="app") == FIRST_TS + RET
        # a repartition source topic counts too
        s = _replay(*recs, commit("app", 0, 1, FIRST_TS, topic="app-repartition"))
        assert offset_expiry(s, s.offsets[("app", "app-repartition", 0)], RET) is None
        # no members left: Empty, the commit time rules (StreamsGroup.isSubscribedToTopic)
        left = [consumer_record(22, {"groupId": "app", "memberId": "m1"}, None),
                consumer_record(21, {"groupId": "app", "memberId": "m1"}, None),
                consumer_record(19, {"groupId": "app", "memberId": "m1"}, None)]
        assert self._expiry(*recs, *left, commit("app", 0, 1, FIRST_TS), group="app") == FIRST_TS + RET

    def test_a_consumer_protocol_group_keeps_its_subscribed_topics(self) -> None:
        recs = kip848_group("g", "m", epoch=3, partitions=[0], topics=["orders"])
        assert self._expiry(*recs, commit("g", 0, 1, FIRST_TS)) is None
        recs = kip848_group("g", "m", epoch=3, partitions=[0], topics=["payments"])
        assert self._expiry(*recs, commit("g", 0, 1, FIRST_TS)) == FIRST_TS + RET
