"""``__remote_log_metadata`` replayed as ``TopicBasedRemoteLogMetadataManager`` does: segment lifecycles,
the leader-epoch views (cases of Kafka's ``RemoteLogSegmentLifecycleTest``, ``RemoteLogMetadataCacheTest``
and ``RemoteLogLeaderEpochStateTest``, expected values from their assertions), what happens to records
that do not fit, partition deletes, ``latest-tiered``, and the log-dir reader.

Expected values follow Kafka's rules: an epoch's end offset in a segment is the next epoch's start - 1
(or the segment's end); ``highestOffsetForEpoch`` counts segments that reached COPY_SEGMENT_FINISHED;
invalid transitions and updates for unknown segments are dropped; the consumer task stops on what
``RemotePartitionMetadataStore`` throws.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from kafka_format.internal.remote_log_metadata import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataSnapshot,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    TopicIdPartition,
    encode_remote_log_metadata,
)
from kafka_format.internal.remote_log_metadata_cache import (
    RemoteLogLeaderEpochState,
    RemoteLogMetadataView,
    iter_anomalies,
    metadata_partition,
    replay_remote_log_metadata,
)

S, D = RemoteLogSegmentState, RemotePartitionDeleteState
TP = TopicIdPartition("Z6fTYnNWSnSE0_4EuHe7CA", "foo", 3)
OTHER = TopicIdPartition("kc3DgRmLTsKz-uI7a1jPvA", "bar", 0)


def _id(n: int) -> str:
    """A segment Uuid: 15 zero bytes and ``n``, as ``Uuid.toString`` writes it."""
    return base64.urlsafe_b64encode(bytes(15) + bytes([n])).decode().rstrip("=")


def _seg(n: int, start: int, end: int, epochs: dict[int, int], tp: TopicIdPartition = TP,
         state: RemoteLogSegmentState = S.COPY_SEGMENT_STARTED) -> RemoteLogSegmentMetadata:
    return RemoteLogSegmentMetadata(tp, _id(n), start, end, 0, -1, 1000 + n, epochs, 1048576, None, state)


def _upd(n: int, state: RemoteLogSegmentState, tp: TopicIdPartition = TP) -> RemoteLogSegmentMetadataUpdate:
    return RemoteLogSegmentMetadataUpdate(tp, _id(n), None, state, 2000 + n, 1)


def _replay(*metadata: object, view: RemoteLogMetadataView | None = None, partition: int = 0, first: int = 0,
            **options: object) -> RemoteLogMetadataView:
    records = [(partition, first + i, encode_remote_log_metadata(m)) for i, m in enumerate(metadata)]  # type: ignore[arg-type]
    return replay_remote_log_metadata(records, view, **options)  # type: ignore[arg-type]


def test_segment_ids_are_distinct() -> None:
    assert len({_id(n) for n in range(1, 12)}) == 11 and all(len(_id(n)) == 22 for n in range(12))


# --- lifecycle ---------------------------------------------------------------------------------------


def test_lifecycle_started_finished_delete_started_delete_finished() -> None:
    seg = _seg(1, 0, 50, {0: 0})
    view = _replay(seg)
    assert view.segments_by_state(TP)[S.COPY_SEGMENT_STARTED] == [seg]
    assert view.remote_log_segment_metadata(TP, 0, 0) is None       # not readable until copied
    assert view.list_remote_log_segments(TP, 0) == [seg] == view.list_remote_log_segments(TP)
    assert view.highest_offset_for_epoch(TP, 0) is None

    view = _replay(_upd(1, S.COPY_SEGMENT_FINISHED), view=view, first=1)
    copied = seg.create_with_updates(_upd(1, S.COPY_SEGMENT_FINISHED))
    assert view.copied_segments(TP) == [copied] and view.segment(TP, _id(1)) == copied
    assert copied.event_timestamp_ms == 2001 and copied.broker_id == 1 and copied.max_timestamp_ms == -1
    assert view.remote_log_segment_metadata(TP, 0, 50) == copied
    assert view.remote_log_segment_metadata(TP, 0, 51) is None
    assert view.highest_offset_for_epoch(TP, 0) == 50

    view = _replay(_upd(1, S.DELETE_SEGMENT_STARTED), view=view, first=2)
    assert view.segments_by_state(TP)[S.DELETE_SEGMENT_STARTED] == [seg.create_with_updates(_upd(1, S.DELETE_SEGMENT_STARTED))]
    assert view.remote_log_segment_metadata(TP, 0, 10) is None       # unmapped, still listed for retries
    assert [m.state for m in view.list_remote_log_segments(TP, 0)] == [S.DELETE_SEGMENT_STARTED]
    assert view.highest_offset_for_epoch(TP, 0) == 50                # Kafka does not lower it

    view = _replay(_upd(1, S.DELETE_SEGMENT_FINISHED), view=view, first=3)
    assert view.list_remote_log_segments(TP) == [] == view.list_remote_log_segments(TP, 0)
    assert view.segment(TP, _id(1)) is None
    assert view.anomalies == [] and view.records == 4 and view.read_offsets == {0: 3}


def _lifecycle_test_view() -> tuple[RemoteLogMetadataView, list[RemoteLogSegmentMetadata]]:
    """``RemoteLogSegmentLifecycleTest.testRemoteLogSegmentLifeCycle``'s four segments, all copied."""
    segs = [_seg(1, 0, 100, {0: 0, 1: 20, 2: 80}), _seg(2, 101, 200, {2: 101}),
            _seg(3, 201, 300, {2: 201, 3: 240}), _seg(4, 250, 400, {3: 250, 4: 370})]
    records: list[object] = []
    for i, seg in enumerate(segs, 1):
        records += [seg, _upd(i, S.COPY_SEGMENT_FINISHED)]
    return _replay(*records), [s.create_with_updates(_upd(i, S.COPY_SEGMENT_FINISHED)) for i, s in enumerate(segs, 1)]


@pytest.mark.parametrize(("epoch", "offset", "segment"), [
    (1, 40, 0), (2, 110, 1), (3, 240, 2), (3, 250, 3), (4, 375, 3),
    (1, 110, None), (4, 401, None), (5, 301, None),
    (0, 19, 0), (0, 20, None), (2, 80, 0), (2, 100, 0), (3, 249, 2), (4, 369, None),
])
def test_leader_epoch_lookups_across_overlapping_segments(epoch: int, offset: int, segment: int | None) -> None:
    view, segs = _lifecycle_test_view()
    assert view.remote_log_segment_metadata(TP, epoch, offset) == (None if segment is None else segs[segment])


def test_highest_offset_per_epoch_survives_deletes() -> None:
    view, segs = _lifecycle_test_view()
    view = _replay(_upd(1, S.DELETE_SEGMENT_STARTED), _upd(1, S.DELETE_SEGMENT_FINISHED), view=view, first=8)
    assert view.remote_log_segment_metadata(TP, 0, 10) is None
    assert {e: view.highest_offset_for_epoch(TP, e) for e in range(6)} == {0: 19, 1: 79, 2: 239, 3: 369, 4: 400,
                                                                           5: None}
    assert view.copied_segments(TP) == segs[1:]


def test_list_segments_per_epoch() -> None:
    """``testCacheListSegments``: epoch 0 lists all three in start order, epoch 1 the last only."""
    segs = [_seg(1, 0, 100, {0: 0}), _seg(2, 101, 200, {0: 101}), _seg(3, 201, 400, {0: 201, 1: 301})]
    view = _replay(*[x for i, s in enumerate(segs, 1) for x in (s, _upd(i, S.COPY_SEGMENT_FINISHED))])
    done = [s.create_with_updates(_upd(i, S.COPY_SEGMENT_FINISHED)) for i, s in enumerate(segs, 1)]
    assert view.list_remote_log_segments(TP, 0) == done
    assert view.list_remote_log_segments(TP, 1) == done[2:]
    assert view.list_remote_log_segments(TP, 7) == []
    assert view.list_remote_log_segments(OTHER) == []


def test_a_later_upload_over_the_same_offsets_replaces_the_earlier_one() -> None:
    # L0 uploaded S1 0-100 in epoch 0; the next leader uploaded S2 0-200 covering it: S1 becomes
    # unreferenced (still listed, so that it can be deleted), reads find S2
    view = _replay(_seg(1, 0, 100, {0: 0}), _upd(1, S.COPY_SEGMENT_FINISHED),
                   _seg(2, 0, 200, {0: 0}), _upd(2, S.COPY_SEGMENT_FINISHED))
    cache = view.cache(TP)
    assert cache is not None
    state = cache.leader_epochs[0]
    assert state.referenced() == [(0, RemoteLogSegmentId(TP, _id(2)))]
    assert state.unreferenced() == [RemoteLogSegmentId(TP, _id(1))]
    assert view.remote_log_segment_metadata(TP, 0, 50).segment_id == _id(2)   # type: ignore[union-attr]
    # referenced ones first, then unreferenced, stably sorted by start offset: S2 before S1
    assert [m.segment_id for m in view.list_remote_log_segments(TP, 0)] == [_id(2), _id(1)]


def _sid(n: int) -> RemoteLogSegmentId:
    return RemoteLogSegmentId(TP, _id(n))


def test_referenced_replaced_by_and_lookup_breakpoints() -> None:
    # S1 0-100 replaced by S2 0-200 (epoch 0 to 150, epoch 1 after); S1's copy finishing again maps it
    # again (a valid self-transition); S2's deletion forgets what it replaced
    view = _replay(_seg(1, 0, 100, {0: 0}), _upd(1, S.COPY_SEGMENT_FINISHED),
                   _seg(2, 0, 200, {0: 0, 1: 151}), _upd(2, S.COPY_SEGMENT_FINISHED))
    cache = view.cache(TP)
    assert cache is not None
    assert not cache.is_referenced(_sid(1)) and cache.replaced_by(_sid(1)) == [_sid(2)]
    assert cache.is_referenced(_sid(2)) and cache.lookup_breakpoints() == {0, 151, 201}
    _replay(_upd(1, S.COPY_SEGMENT_FINISHED), view=view, first=4)
    assert view.anomalies == [] and cache.is_referenced(_sid(1)) and cache.replaced_by(_sid(1)) == []
    assert cache.replaced_by(_sid(2)) == [_sid(1)]            # epoch 0's entry at 0 overwritten by S1
    assert cache.is_referenced(_sid(2))                        # still epoch 1's
    _replay(_upd(2, S.DELETE_SEGMENT_STARTED), _upd(2, S.DELETE_SEGMENT_FINISHED), view=view, first=5)
    assert not cache.is_referenced(_sid(2)) and cache.replaced_by(_sid(2)) == []
    assert cache.lookup_breakpoints() == {0, 101}


def test_epoch_state_overlapping_uploads() -> None:
    """``RemoteLogLeaderEpochStateTest``: overlapping, multiply overlapping, duplicate, same start."""
    state = RemoteLogLeaderEpochState()
    state.copy_finished(10, _sid(1), 100)
    state.copy_finished(5, _sid(2), 150)
    assert state.referenced() == [(5, _sid(2))] and state.unreferenced() == [_sid(1)]
    assert state.floor_entry(11) == _sid(2) and state.highest_log_offset == 150
    state.copy_finished(148, _sid(3), 155)
    state.copy_finished(4, _sid(4), 200)
    assert state.referenced() == [(4, _sid(4))] and set(state.unreferenced()) == {_sid(1), _sid(2), _sid(3)}
    assert state.highest_log_offset == 200 and state.floor_entry(3) is None

    same = RemoteLogLeaderEpochState()
    same.copy_finished(10, _sid(1), 100)
    same.copy_finished(10, _sid(2), 150)
    assert same.floor_entry(111) == _sid(2) and same.unreferenced() == [_sid(1)] and same.highest_log_offset == 150

    # a later upload ending earlier than the epoch's highest offset replaces nothing
    kept = RemoteLogLeaderEpochState()
    kept.copy_finished(10, _sid(1), 100)
    kept.copy_finished(10, _sid(2), 90)
    assert kept.referenced() == [(10, _sid(2))] and kept.unreferenced() == [] and kept.highest_log_offset == 100

    deleting = RemoteLogLeaderEpochState()
    deleting.copy_finished(10, _sid(1), 100)
    deleting.copy_finished(101, _sid(2), 200)
    deleting.delete_started(10, _sid(1))
    deleting.delete_started(101, _sid(2))
    assert deleting.referenced() == [] and deleting.unreferenced() == [_sid(1), _sid(2)]
    deleting.delete_finished(_sid(1))
    assert deleting.unreferenced() == [_sid(2)]


# --- what Kafka does not apply -----------------------------------------------------------------------


def test_updates_for_unknown_segments_are_dropped_and_recorded() -> None:
    view = _replay(_upd(5, S.COPY_SEGMENT_FINISHED), _seg(1, 0, 9, {0: 0}), _upd(6, S.DELETE_SEGMENT_FINISHED))
    assert [(a.offset, a.kind, a.action) for a in view.anomalies] == [
        (0, "update-for-unknown-segment", "dropped"), (2, "update-for-unknown-segment", "dropped")]
    assert view.anomalies[0].message == (f"No remote log segment metadata found for :RemoteLogSegmentId"
                                         f"{{topicIdPartition={TP}, id={_id(5)}}}")
    assert view.anomalies[0].partition == TP and view.stopped_at is None
    assert [m.segment_id for m in view.list_remote_log_segments(TP)] == [_id(1)]


def test_invalid_transitions_are_dropped() -> None:
    """``testDropEventOnInvalidStateTransition``: each invalid update leaves the state as it was."""
    steps = [(S.DELETE_SEGMENT_FINISHED, S.COPY_SEGMENT_STARTED), (S.COPY_SEGMENT_FINISHED, S.COPY_SEGMENT_FINISHED),
             (S.DELETE_SEGMENT_FINISHED, S.COPY_SEGMENT_FINISHED), (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED),
             (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED), (S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED),
             (S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED)]
    view = _replay(_seg(1, 10, 100, {5: 10}))
    for i, (target, expected) in enumerate(steps, 1):
        view = _replay(_upd(1, target), view=view, first=i)
        assert [m.state for m in view.list_remote_log_segments(TP, 5)] == [expected], target
    view = _replay(_upd(1, S.DELETE_SEGMENT_FINISHED), view=view, first=len(steps) + 1)
    assert view.list_remote_log_segments(TP, 5) == []
    invalid = [a for a in view.anomalies if a.kind == "invalid-transition"]
    assert [a.offset for a in invalid] == [1, 3, 4, 6, 7] and all(a.action == "dropped" for a in invalid)
    assert invalid[0].message == ("Current state: COPY_SEGMENT_STARTED can not be transitioned to target state: "
                                  f"DELETE_SEGMENT_FINISHED, segmentId: {_sid(1)}. Dropping the event")
    assert view.stopped_at is None


def test_re_adding_a_segment() -> None:
    started = _seg(1, 0, 9, {0: 0})
    view = _replay(started, _seg(1, 0, 19, {0: 0}))        # a self-transition: the newer metadata wins
    assert view.segment(TP, _id(1)).end_offset == 19 and view.anomalies == []   # type: ignore[union-attr]
    view = _replay(_upd(1, S.COPY_SEGMENT_FINISHED), started, view=view, first=2)
    assert [(a.offset, a.kind) for a in view.anomalies] == [(3, "invalid-transition")]
    assert view.anomalies[0].message.startswith("Current state: COPY_SEGMENT_FINISHED can not be transitioned to "
                                                "target state: COPY_SEGMENT_STARTED")


def test_failures_that_stop_the_consumer_task() -> None:
    finished = _seg(2, 0, 9, {0: 0}, state=S.COPY_SEGMENT_FINISHED)
    records = [(0, 0, encode_remote_log_metadata(_seg(1, 0, 9, {0: 0}))),
               (0, 1, encode_remote_log_metadata(finished)),
               (0, 2, encode_remote_log_metadata(_seg(3, 0, 9, {0: 0})))]
    view = replay_remote_log_metadata(records)
    assert view.stopped_at is not None and view.records == 2 and view.segment(TP, _id(3)) is None
    assert (view.stopped_at.offset, view.stopped_at.kind, view.stopped_at.action) == (
        1, "segment-not-copy-started", "consumer-stopped")
    assert view.stopped_at.message == (f"Given remoteLogSegmentMetadata:{finished} should have state as "
                                       "COPY_SEGMENT_STARTED but it contains state as: COPY_SEGMENT_FINISHED")
    assert view.read_offsets == {0: 0}   # the failed record is not counted as read
    going_on = replay_remote_log_metadata(records, stop_at_failure=False)
    assert going_on.records == 3 and going_on.segment(TP, _id(3)) is not None
    assert going_on.stopped_at == view.stopped_at


def test_an_update_to_copy_started_stops_the_consumer() -> None:
    update = _upd(1, S.COPY_SEGMENT_STARTED)
    view = _replay(_seg(1, 0, 9, {0: 0}), update)
    assert view.stopped_at is not None and view.stopped_at.kind == "update-to-copy-started"
    assert view.stopped_at.message == f"metadataUpdate: {update} with state COPY_SEGMENT_STARTED can not be updated"


@pytest.mark.parametrize(("value", "message"), [
    (None, "a record without a value (NullPointerException)"),
    (b"\x01\x09\x00", "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 9"),
    (b"\x01\x00\x00\x05", "Failed to deserialize record with type 0"),
])
def test_undecodable_records_stop_the_consumer(value: bytes | None, message: str) -> None:
    ok = encode_remote_log_metadata(_seg(1, 0, 9, {0: 0}))
    view = replay_remote_log_metadata([(4, 10, ok), (4, 11, value), (4, 12, ok)])
    assert view.stopped_at is not None and view.stopped_at.offset == 11
    assert view.stopped_at.kind == "undecodable" and view.stopped_at.message.startswith(message)
    assert view.stopped_at.metadata_partition == 4 and view.stopped_at.partition is None
    assert view.records == 2


def test_a_snapshot_record_in_the_topic_stops_the_consumer() -> None:
    snap = RemoteLogSegmentMetadataSnapshot(_id(1), 0, 9, 0, 0, 0, {0: 0}, 1, None, S.COPY_SEGMENT_FINISHED)
    view = _replay(snap)
    assert view.stopped_at is not None and view.stopped_at.kind == "snapshot-record"
    assert view.stopped_at.message == "This metadata does not have topic partition with it."


def test_partition_delete_drops_the_cache() -> None:
    view = _replay(_seg(1, 0, 9, {0: 0}), _upd(1, S.COPY_SEGMENT_FINISHED),
                   RemotePartitionDeleteMetadata(TP, D.DELETE_PARTITION_MARKED, 1, 0),
                   RemotePartitionDeleteMetadata(TP, D.DELETE_PARTITION_STARTED, 2, 0),
                   _seg(1, 0, 9, {0: 0}, tp=OTHER))
    assert view.partition_delete_state(TP) == D.DELETE_PARTITION_STARTED
    assert view.copied_segments(TP) != []                                   # still there until finished
    view = _replay(RemotePartitionDeleteMetadata(TP, D.DELETE_PARTITION_FINISHED, 3, 0), view=view, first=5)
    assert view.cache(TP) is None and view.partition_deletes == {}
    assert view.partition_delete_state(TP) == D.DELETE_PARTITION_FINISHED
    assert view.partitions() == [OTHER] and view.highest_offset(TP) == (-1, -1)
    # a segment of the deleted partition afterwards: IllegalStateException, the consumer task stops
    view = _replay(_seg(2, 10, 19, {0: 10}), view=view, first=6)
    assert view.stopped_at is not None and view.stopped_at.kind == "no-partition-metadata"
    assert view.stopped_at.message == f"No partition metadata found for : {TP}"
    assert view.anomalies == [view.stopped_at]


def test_a_partition_delete_out_of_order_is_applied_and_recorded() -> None:
    view = _replay(RemotePartitionDeleteMetadata(TP, D.DELETE_PARTITION_STARTED, 1, 0),
                   RemotePartitionDeleteMetadata(TP, D.DELETE_PARTITION_MARKED, 2, 0))
    assert view.partition_delete_state(TP) == D.DELETE_PARTITION_MARKED
    assert [(a.kind, a.action, a.message) for a in view.anomalies] == [
        ("partition-delete-transition", "applied",
         "null -> DELETE_PARTITION_STARTED: not a valid RemotePartitionDeleteState transition (the store applies it)"),
        ("partition-delete-transition", "applied",
         "DELETE_PARTITION_STARTED -> DELETE_PARTITION_MARKED: not a valid RemotePartitionDeleteState transition "
         "(the store applies it)")]


def test_records_at_or_below_the_offset_read_for_their_partition_are_skipped() -> None:
    # ConsumerTask.shouldProcess compares offsets per user partition, whichever metadata partition
    # they come from
    view = replay_remote_log_metadata([(0, 10, encode_remote_log_metadata(_seg(1, 0, 9, {0: 0}))),
                                       (1, 10, encode_remote_log_metadata(_upd(1, S.COPY_SEGMENT_FINISHED))),
                                       (1, 11, encode_remote_log_metadata(_upd(1, S.COPY_SEGMENT_FINISHED)))])
    assert [(a.metadata_partition, a.offset, a.kind, a.action) for a in view.anomalies] == [
        (1, 10, "already-read", "dropped")]
    assert view.copied_segments(TP) != [] and view.read_offsets == {0: 10, 1: 11}


def test_metadata_partition_is_kafkas_partitioner() -> None:
    # RemoteLogMetadataTopicPartitioner(50).metadataPartition(...) of Kafka 4.4.0 (jshell)
    assert [metadata_partition(TopicIdPartition("Z6fTYnNWSnSE0_4EuHe7CA", "foo", p), 50) for p in (0, 3, 17)] == [33, 26, 41]
    assert [metadata_partition(TopicIdPartition("_____________________w", "x", p), 50) for p in (0, 3, 17)] == [6, 46, 1]
    view = _replay(_seg(1, 0, 9, {0: 0}), partition=26, num_metadata_partitions=50)
    assert view.anomalies == []
    view = _replay(_seg(1, 0, 9, {0: 0}), partition=0, num_metadata_partitions=50)
    assert [(a.kind, a.action) for a in view.anomalies] == [("wrong-metadata-partition", "applied")]
    assert view.copied_segments(TP) == [] and view.segment(TP, _id(1)) is not None
    assert list(iter_anomalies(view, "dropped")) == []


# --- latest-tiered ------------------------------------------------------------------------------------


def test_highest_offset_follows_find_highest_remote_offset() -> None:
    view = _replay(_seg(1, 0, 100, {0: 0, 1: 20, 2: 80}), _upd(1, S.COPY_SEGMENT_FINISHED),
                   _seg(2, 101, 150, {2: 101}))              # copy in progress: not counted
    # the remote metadata's own lineage: epoch 2 is the newest with a copied offset
    assert view.highest_offset(TP) == (100, 2)
    # local epochs 0, 1, 2, 3 (3 has nothing remote) and LEO 200: epoch 2 ends at 150 locally, beyond 100
    assert view.highest_offset(TP, [(0, 0), (1, 20), (2, 80), (3, 150)], 200) == (100, 2)
    # the local log's epoch 2 is its latest and ends at LEO 60: capped at 59
    assert view.highest_offset(TP, [(0, 0), (1, 20), (2, 50)], 60) == (59, 2)
    # an older epoch that ended locally before the remote highest offset: (next epoch's start - 1, epoch)
    assert view.highest_offset(TP, [(0, 0), (1, 20), (5, 30)], 400) == (29, 1)
    # local epochs the remote metadata does not know
    assert view.highest_offset(TP, [(7, 0), (8, 10)], 20) == (-1, -1)
    assert view.highest_offset(TP, [(0, 0), (1, 20), (2, 50)]) == (100, 2)   # no log end offset: not capped
    assert view.highest_offset(OTHER) == (-1, -1)
    assert _replay(_seg(1, 0, 9, {0: 0})).highest_offset(TP) == (-1, -1)


# --- reading log dirs ---------------------------------------------------------------------------------


def test_load_from_log_dirs_as_the_consumer_reads(tmp_path: Path) -> None:
    from kafka_format.read.remote_log_metadata import load_remote_log_metadata, read_remote_log_metadata
    from kafka_format.writer import (
        CONTROL_ABORT,
        CONTROL_COMMIT,
        LogDirWriter,
        Record,
        build_control_batch,
        build_v2_batch,
    )

    def batch(metadata: list[object], base: int, **kw: object) -> object:
        return build_v2_batch([Record(value=None if m is None else encode_remote_log_metadata(m),  # type: ignore[arg-type]
                                      timestamp=1000) for m in metadata], base_offset=base, **kw)  # type: ignore[arg-type]

    d = LogDirWriter(tmp_path / "broker-1", node_id=1, cluster_id="c")
    p0 = d.partition("__remote_log_metadata", 26)
    p0.append(batch([_seg(1, 0, 9, {0: 0}), _upd(1, S.COPY_SEGMENT_FINISHED)], 0))
    txn = {"producer_id": 9, "producer_epoch": 0, "transactional": True}
    p0.append(batch([_seg(2, 10, 19, {0: 10})], 2, **txn))                          # aborted
    p0.append(build_control_batch(CONTROL_ABORT, base_offset=3, timestamp=1, producer_id=9, producer_epoch=0,
                                  coordinator_epoch=0))
    p0.append(batch([_seg(3, 10, 29, {1: 10})], 4, **txn))                          # committed
    p0.append(build_control_batch(CONTROL_COMMIT, base_offset=5, timestamp=1, producer_id=9, producer_epoch=0,
                                  coordinator_epoch=0))
    p0.close()
    p1 = d.partition("__remote_log_metadata", 12)
    p1.append(batch([_seg(1, 0, 9, {0: 0}, tp=OTHER), None], 0))                      # then a record without a value
    p1.close()
    other = d.partition("orders", 0)
    other.append(batch([_seg(9, 0, 1, {0: 0})], 0))                                 # not the topic: not read
    other.close()
    d.close(written_at_ms=5000)

    uncommitted = list(read_remote_log_metadata(tmp_path))
    assert [(p, o) for p, o, _ in uncommitted] == [(12, 0), (12, 1), (26, 0), (26, 1), (26, 2), (26, 4)]
    assert uncommitted[1][2] is None
    committed = list(read_remote_log_metadata(tmp_path, isolation_level="read_committed"))
    assert [(p, o) for p, o, _ in committed] == [(12, 0), (12, 1), (26, 0), (26, 1), (26, 4)]

    view = load_remote_log_metadata(tmp_path, isolation_level="read_committed", stop_at_failure=False,
                                    num_metadata_partitions=50)
    assert [m.segment_id for m in view.list_remote_log_segments(TP)] == [_id(1), _id(3)]
    assert [(a.metadata_partition, a.offset, a.kind) for a in view.anomalies] == [(12, 1, "undecodable")]
    assert view.stopped_at is view.anomalies[0]
    assert view.list_remote_log_segments(OTHER)[0].segment_id == _id(1)
    stopped = load_remote_log_metadata(tmp_path)        # Kafka's view: the consumer stops at 12:1
    assert stopped.records == 2 and stopped.cache(TP) is None
    assert list(read_remote_log_metadata(tmp_path / "broker-1" / "orders-0")) == []
