"""One history per tiered partition (storage/tiered_history.py) and reading remote segments.

Expected pieces and findings are worked out by hand from Kafka's rules:
``RemoteLogLeaderEpochState.handleSegmentWithCopySegmentFinishedState`` (a later copy for an
epoch unreferences entries at or above its start while the epoch's highest offset is at most its
end), ``RemoteLogMetadataCache.remoteLogSegmentMetadata(epoch, offset)`` (floor entry, offset within
the epoch's range in the segment), ``LeaderEpochFileCache.epochForOffset``,
``RemoteLogManager.isRemoteSegmentWithinLeaderEpochs`` / ``findLogStartOffset`` and
``ReplicaManager``'s tier rule (remote below the local log start offset).  Remote filesets are
byte copies of the writer's segments, as ``RemoteLogManager.copyLogSegment`` makes them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from tiered_builders import (
    TOPIC_ID,
    Counting,
    LocalReplica,
    metadata,
    put_fileset,
    remote_dir,
    segment_uuid,
    upload,
    value_of,
    write_replica,
)

from kafka_format.common.errors import CorruptRecordError, LogDirError
from kafka_format.internal.remote_log_metadata import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    TopicIdPartition,
    encode_remote_log_metadata,
)
from kafka_format.internal.remote_log_metadata_cache import RemoteLogMetadataCache, replay_remote_log_metadata
from kafka_format.read.options import ReadOptions
from kafka_format.read.planning import Bounds, PlanOptions, plan_splits
from kafka_format.read.split_reader import read_split
from kafka_format.read.tiers import plan_tiered_splits
from kafka_format.records.columns import FileContext
from kafka_format.records.file_records import decode_segment
from kafka_format.storage import checkpoints as ckpt
from kafka_format.storage.remote_tier import (
    ROOT_STORAGE_DIR_NAME,
    RemoteFileType,
    open_remote_storage,
    remote_partition_log,
)
from kafka_format.storage.tiered_history import (
    FROM_CHECKPOINT,
    FROM_REMOTE_TIER,
    MissingRemoteFiles,
    NoLeaderEpochs,
    OffsetGap,
    PartlyServedSegment,
    RemotePiece,
    RemoteSizeMismatch,
    UnfinishedFileset,
    UnnamedFileset,
    UnusedRemoteSegment,
    epoch_for_offset,
    find_log_start_offset,
    tiered_history,
    within_leader_epochs,
)

S = [segment_uuid(i) for i in range(10)]
TP = TopicIdPartition(TOPIC_ID, "orders", 0)


def shape(history: Any) -> list[tuple[str, str | int, int, int]]:
    """(tier, segment id or local base offset, start, end) of every piece."""
    return [(p.tier, p.segment_id if isinstance(p, RemotePiece) else p.segment.base_offset, p.start_offset,
             p.end_offset) for p in history.pieces]


def read_offsets(history: Any, start: int | None = None, **plan: Any) -> list[tuple[int, bytes]]:
    """(offset, value) of every record the history's splits read (from offset ``start``)."""
    bounds = Bounds() if start is None else Bounds(start={(history.local.topic, history.local.partition): start})
    opts = ReadOptions(paths=(), plan=PlanOptions(**plan), bounds=bounds)
    rows: list[tuple[int, bytes]] = []
    for split in plan_tiered_splits(history, opts.plan, opts.bounds):
        for batch in read_split(split, opts):
            rows.extend(zip(batch.column("offset").to_pylist(), batch.column("value").to_pylist(), strict=True))
    return rows


# --- Kafka's lookups ------------------------------------------------------------------------

def test_epoch_for_offset_is_leader_epoch_file_cache_s() -> None:
    lineage = [(0, 0), (2, 50), (5, 60), (6, 60), (7, 90)]
    assert [epoch_for_offset(lineage, o) for o in (0, 49, 50, 59, 60, 61, 89, 90, 10**9)] == [
        0, 0, 2, 2, 5, 6, 6, 7, 7]                      # 60: the exact match is epoch 5, 61: epoch 6
    assert epoch_for_offset([(3, 10)], 9) is None
    assert epoch_for_offset([], 0) is None


def _rid(sid: str) -> RemoteLogSegmentId:
    return RemoteLogSegmentId(TP, sid)


def test_cache_unreferences_a_segment_copied_again_for_its_epochs() -> None:
    # RemoteLogLeaderEpochState's two cases (its comment): a duplicate and an overlapping upload
    s0, s1 = metadata(S[0], 0, 100, {0: 0}), metadata(S[1], 0, 200, {0: 0, 1: 101})
    cache = RemoteLogMetadataCache.from_finished_segments([s0, s1])
    assert not cache.is_referenced(_rid(S[0])) and cache.replaced_by(_rid(S[0])) == [_rid(S[1])]
    assert cache.is_referenced(_rid(S[1])) and cache.replaced_by(_rid(S[1])) == []
    assert cache.remote_log_segment_metadata(0, 50) == s1 and cache.remote_log_segment_metadata(1, 150) == s1
    assert cache.remote_log_segment_metadata(0, 101) is None             # epoch 0 ends at 100 in s1
    assert cache.lookup_breakpoints() == {0, 101, 201}
    a, b, c = metadata(S[2], 10, 90, {0: 10}), metadata(S[3], 5, 100, {0: 5}), metadata(S[4], 101, 200, {0: 101})
    cache = RemoteLogMetadataCache.from_finished_segments([a, b, c])
    assert (cache.remote_log_segment_metadata(0, 95) == b and cache.remote_log_segment_metadata(0, 20) == b
            and cache.remote_log_segment_metadata(0, 4) is None)
    assert not cache.is_referenced(_rid(S[2])) and cache.list_remote_log_segments(0) == [b, a, c]
    assert cache.lookup_breakpoints() == {5, 101, 201}
    with pytest.raises(ValueError, match="COPY_SEGMENT_STARTED"):
        RemoteLogMetadataCache.from_finished_segments(
            [metadata(S[5], 0, 1, {0: 0}, state=RemoteLogSegmentState.COPY_SEGMENT_STARTED)])
    with pytest.raises(ValueError, match="given twice"):
        RemoteLogMetadataCache.from_finished_segments([a, b, a])


def test_cache_a_later_shorter_copy_at_the_same_start_overwrites_without_unreferencing() -> None:
    """``offsetToId.put`` over an entry the loop kept (the epoch's highest offset is above the new
    copy's end): Kafka's epoch state forgets the old id -- not unreferenced, so
    ``listRemoteLogSegments(epoch)`` no longer lists it -- and the history reports it replaced."""
    long, short = metadata(S[0], 0, 100, {0: 0}), metadata(S[1], 0, 50, {0: 0})
    cache = RemoteLogMetadataCache.from_finished_segments([long, short])
    assert cache.list_remote_log_segments(0) == [short]
    assert cache.list_remote_log_segments() == [long, short]          # still in the cache
    assert not cache.is_referenced(_rid(S[0])) and cache.replaced_by(_rid(S[0])) == [_rid(S[1])]
    assert cache.remote_log_segment_metadata(0, 70) is None and cache.highest_offset_for_epoch(0) == 100


def test_cache_list_keeps_offset_map_order_without_unreferenced_segments() -> None:
    """``listRemoteLogSegments(epoch)`` sorts by start offset only when the epoch has unreferenced
    segments; otherwise it is ``offsetToId``'s order (the epoch's start offsets), which
    ``findLogStartOffset`` takes the first of."""
    early = metadata(S[0], 0, 80, {0: 0, 1: 50})                      # epoch 1 from 50
    later = metadata(S[1], 10, 40, {1: 10})                           # epoch 1 from 10 (a divergent copy)
    cache = RemoteLogMetadataCache.from_finished_segments([early, later])
    assert cache.list_remote_log_segments(1) == [later, early]
    assert find_log_start_offset([(1, 10)], cache) == 10


def test_within_leader_epochs() -> None:
    # RemoteLogManager's example: cache {(5, 10), (7, 15), (9, 100)}, segment1 5-50 {(5, 10), (7, 15)},
    # segment2 14-150 {(5, 14), (7, 15), (9, 100)}; after segment1's deletion the cache is {(7, 51), (9, 100)}
    lineage = [(5, 10), (7, 15), (9, 100)]
    seg1 = metadata(S[0], 10, 50, {5: 10, 7: 15})
    seg2 = metadata(S[1], 14, 150, {5: 14, 7: 15, 9: 100})
    assert within_leader_epochs(seg1, 200, lineage) and within_leader_epochs(seg2, 200, lineage)
    assert within_leader_epochs(seg2, 200, [(7, 51), (9, 100)])
    assert not within_leader_epochs(seg2, 150, lineage)                    # end offset at the log end
    assert not within_leader_epochs(metadata(S[2], 10, 120, {5: 10, 7: 15}), 200, lineage)  # past epoch 9's start
    assert not within_leader_epochs(metadata(S[3], 10, 50, {5: 10, 6: 15}), 200, lineage)   # epoch 6 unknown
    assert not within_leader_epochs(metadata(S[4], 12, 50, {7: 12}), 200, lineage)  # epoch 7 starts at 15
    assert not within_leader_epochs(metadata(S[5], 100, 150, {11: 100}), 200, lineage)
    # an epoch without records (same start offset as its successor) is left out on both sides
    assert within_leader_epochs(metadata(S[6], 10, 50, {5: 10, 6: 15, 7: 15}), 200, [(5, 10), (6, 15), (7, 15)])


# --- histories over written replicas -----------------------------------------------------------

def _tiered(tmp_path: Path, **kwargs: Any) -> LocalReplica:
    return write_replica(tmp_path / "broker", **kwargs)


def test_remote_then_local_at_a_local_start_inside_a_remote_segment(tmp_path: Path) -> None:
    """The leader copied its segment 0..99; this replica rolled at 50 and 100 and keeps 50.. locally:
    offsets 0..49 come from the remote copy, 50.. from the local segments."""
    leader = write_replica(tmp_path / "leader", epochs=((0, 150),), rolls=(100,))
    s0 = upload(leader, 0, tmp_path / "remote", S[0])
    local = write_replica(tmp_path / "broker", epochs=((0, 150),), rolls=(50, 100))
    local.delete_below(50, log_start=0)
    history = tiered_history(local.open(), [s0], open_remote_storage(str(tmp_path / "remote")))
    assert (history.log_start_offset, history.log_start_source) == (0, FROM_CHECKPOINT)
    assert (history.local_log_start_offset, history.log_end_offset) == (50, 150)
    assert shape(history) == [("remote", S[0], 0, 50), ("local", 50, 50, 100), ("local", 100, 100, 150)]
    assert history.findings == () and history.local_copies == ()
    piece = history.remote_pieces[0]
    assert piece.readable and piece.size == s0.segment_size_in_bytes
    assert piece.location() == str(remote_dir(tmp_path / "remote") / f"00000000000000000000-{S[0]}.log")
    assert piece.max_timestamp_ms == s0.max_timestamp_ms and piece.epoch == 0
    logs = history.read_logs()
    assert [(u.tier, u.start_offset, u.end_offset) for u in logs] == [("remote", 0, 50), ("local", 50, 150)]
    assert logs[0].log.kind == "remote" and logs[0].log.log_dir == str(tmp_path / "remote" / ROOT_STORAGE_DIR_NAME)
    rows = read_offsets(history)
    assert rows == [(o, value_of(o)) for o in range(150)]      # each offset once, from its tier
    assert read_offsets(history, max_bytes_per_partition=200) == rows    # cut at index entries


def test_gaps_are_findings(tmp_path: Path) -> None:
    r = _tiered(tmp_path, epochs=((0, 250),), rolls=(50, 100, 150, 200))
    md = {b: upload(r, b, tmp_path / "remote", S[i]) for i, b in enumerate((0, 50, 100, 150))}
    r.delete_below(200, log_start=0)
    store = open_remote_storage(str(tmp_path / "remote"))
    history = tiered_history(r.open(), [md[0], md[100]], store)          # 50..99 and 150..199 never copied
    assert shape(history) == [("remote", S[0], 0, 50), ("remote", S[2], 100, 150), ("local", 200, 200, 250)]
    gaps = history.findings_of(OffsetGap)
    assert [(g.start_offset, g.end_offset, g.between, g.before, g.after) for g in gaps] == [
        (50, 100, "remote segments", S[0], S[2]),
        (150, 200, "remote tier and local log", S[2], r.open().segments[0].log_path)]
    assert gaps[0].message.startswith("offsets 50..99 are served by no segment")
    # the copies the metadata does not name are orphan filesets, not pieces
    assert [(f.segment_id, f.start_offset) for f in history.findings_of(UnnamedFileset)] == [(S[1], 50), (S[3], 150)]
    history = tiered_history(r.open(), [md[50], md[100], md[150]], store)
    gap = history.findings_of(OffsetGap)
    assert [(g.start_offset, g.end_offset, g.between, g.before) for g in gap] == [(0, 50, "log start and remote tier",
                                                                                   None)]
    assert [(u.tier, u.start_offset, u.end_offset) for u in history.read_logs()] == [("remote", 50, 200),
                                                                                       ("local", 200, 250)]
    with pytest.raises(LogDirError, match=r"offsets 0\.\.49 of .* are served by no segment") as e:
        read_offsets(history)                   # never papered over
    assert e.value.code == "TIERED_OFFSET_GAP" and "startingOffsets" in str(e.value)
    assert read_offsets(history, start=50) == [(o, value_of(o)) for o in range(50, 250)]


def test_reupload_by_a_new_leader_replaces_the_old_copy(tmp_path: Path) -> None:
    """Case 1 of RemoteLogLeaderEpochState: the old leader copied 0..99 (epoch 0); the new leader
    (epoch 1 from 100) copied 0..199.  Registered in that order, the second unreferences the first."""
    old = write_replica(tmp_path / "old", epochs=((0, 150),), rolls=(100,))
    new = _tiered(tmp_path, epochs=((0, 100), (1, 150)), rolls=(200,))
    s0 = upload(old, 0, tmp_path / "remote", S[0])
    s1 = upload(new, 0, tmp_path / "remote", S[1])
    assert s0.segment_leader_epochs == {0: 0} and s1.segment_leader_epochs == {0: 0, 1: 100}
    new.delete_below(200, log_start=0)
    store = open_remote_storage(str(tmp_path / "remote"))
    history = tiered_history(new.open(), [s0, s1], store)
    assert shape(history) == [("remote", S[1], 0, 200), ("local", 200, 200, 250)]
    [unused] = history.findings
    assert isinstance(unused, UnusedRemoteSegment)
    assert (unused.segment_id, unused.reason, unused.replaced_by, unused.served_by) == (S[0], "replaced", (S[1],),
                                                                                        (S[1],))
    assert read_offsets(history) == [(o, value_of(o)) for o in range(250)]
    # registered the other way round, the old copy takes epoch 0's offsets back (0..99 <= its end)
    history = tiered_history(new.open(), [s1, s0], store)
    assert shape(history) == [("remote", S[0], 0, 100), ("remote", S[1], 100, 200), ("local", 200, 200, 250)]
    [partly] = history.findings
    assert isinstance(partly, PartlyServedSegment)
    assert (partly.segment_id, partly.unserved, partly.served_by) == (S[1], ((0, 100),), (S[0],))
    assert [(u.start_offset, u.end_offset) for u in history.read_logs()] == [(0, 100), (100, 200), (200, 250)]
    assert read_offsets(history) == [(o, value_of(o)) for o in range(250)]


def _replayed(*finish_order: Any) -> RemoteLogMetadataCache:
    """The partition's cache as ``__remote_log_metadata`` replays: every copy started, then finished in
    ``finish_order``, then an extra segment copied and deleted (which the cache forgets)."""
    started = [replace(m, state=RemoteLogSegmentState.COPY_SEGMENT_STARTED) for m in finish_order]
    gone = metadata(S[9], 0, 9, {0: 0}, state=RemoteLogSegmentState.COPY_SEGMENT_STARTED)

    def update(m: Any, state: RemoteLogSegmentState) -> RemoteLogSegmentMetadataUpdate:
        return RemoteLogSegmentMetadataUpdate(m.partition, m.segment_id, m.custom_metadata, state,
                                              m.event_timestamp_ms, m.broker_id)

    events = [*started, gone, *(update(m, RemoteLogSegmentState.COPY_SEGMENT_FINISHED) for m in finish_order),
              update(gone, RemoteLogSegmentState.DELETE_SEGMENT_STARTED),
              update(gone, RemoteLogSegmentState.DELETE_SEGMENT_FINISHED)]
    view = replay_remote_log_metadata((0, i, encode_remote_log_metadata(e)) for i, e in enumerate(events))
    assert view.anomalies == []
    cache = view.cache(TP)
    assert cache is not None
    return cache


def test_a_history_over_the_replayed_metadata_cache(tmp_path: Path) -> None:
    """``tiered_history`` given the partition's ``RemoteLogMetadataCache`` from a replay of
    ``__remote_log_metadata`` equals the one given the finished segments in their finish order."""
    old = write_replica(tmp_path / "old", epochs=((0, 150),), rolls=(100,))
    new = _tiered(tmp_path, epochs=((0, 100), (1, 150)), rolls=(200,))
    s0 = upload(old, 0, tmp_path / "remote", S[0])
    s1 = upload(new, 0, tmp_path / "remote", S[1])
    new.delete_below(200, log_start=0)
    store = open_remote_storage(str(tmp_path / "remote"))
    for order in ((s0, s1), (s1, s0)):
        from_list = tiered_history(new.open(), list(order), store)
        from_cache = tiered_history(new.open(), _replayed(*order), store)
        assert shape(from_cache) == shape(from_list) and from_cache.findings == from_list.findings
        assert from_cache.remote_pieces == from_list.remote_pieces


def test_overlapping_uploads_of_one_epoch(tmp_path: Path) -> None:
    """Case 2 of RemoteLogLeaderEpochState: S0 10-90, then S1 5-100 and S2 101-199 (all epoch 0): a
    read at 95 gets S1, S0 serves nothing."""
    r = _tiered(tmp_path, epochs=((0, 250),), rolls=(200,))
    r.delete_below(200, log_start=5)
    for sid, start, size in ((S[0], 10, 81), (S[1], 5, 96), (S[2], 101, 99)):
        put_fileset(tmp_path / "remote", start, sid, size=size)
    given = [metadata(S[0], 10, 90, {0: 10}, size=81), metadata(S[1], 5, 100, {0: 5}, size=96),
             metadata(S[2], 101, 199, {0: 101}, size=99)]
    history = tiered_history(r.open(), given, open_remote_storage(str(tmp_path / "remote")))
    assert shape(history) == [("remote", S[1], 5, 101), ("remote", S[2], 101, 200), ("local", 200, 200, 250)]
    [unused] = history.findings
    assert isinstance(unused, UnusedRemoteSegment) and unused.reason == "replaced" and unused.replaced_by == (S[1],)


def test_unclean_election_divergent_copy(tmp_path: Path) -> None:
    """The old leader copied 0..99 in epoch 0, but the lineage says epoch 1 starts at 60 (an
    unclean election truncated 60..99 away): 0..59 come from the old copy, 60.. from the new
    leader's; a copy in an epoch the lineage never had serves nothing."""
    r = _tiered(tmp_path, epochs=((0, 60), (1, 140)), rolls=(60, 160))
    s1 = upload(r, 60, tmp_path / "remote", S[1])
    r.delete_below(160, log_start=0)
    assert r.lineage == [(0, 0), (1, 60)] and s1.segment_leader_epochs == {1: 60}
    put_fileset(tmp_path / "remote", 0, S[0], size=500)
    put_fileset(tmp_path / "remote", 100, S[2], size=80)
    s0 = metadata(S[0], 0, 99, {0: 0}, size=500)
    stray = metadata(S[2], 100, 150, {3: 100}, size=80)
    history = tiered_history(r.open(), [s0, s1, stray], open_remote_storage(str(tmp_path / "remote")))
    assert shape(history) == [("remote", S[0], 0, 60), ("remote", S[1], 60, 160), ("local", 160, 160, 200)]
    partly, unused = history.findings
    assert isinstance(partly, PartlyServedSegment)
    assert (partly.segment_id, partly.unserved, partly.served_by) == (S[0], ((60, 100),), (S[1],))
    assert "serves 0..59; offsets 60..99 are served by " + S[1] in partly.message
    assert isinstance(unused, UnusedRemoteSegment)
    assert (unused.segment_id, unused.reason, unused.served_by) == (S[2], "outside lineage", (S[1],))
    # S0 ends past epoch 1's start and is not in the lineage: only the run after it is one log
    assert [(u.start_offset, u.end_offset) for u in history.read_logs()] == [(0, 60), (60, 160), (160, 200)]


def test_missing_partial_orphan_and_unfinished_filesets(tmp_path: Path) -> None:
    r = _tiered(tmp_path, epochs=((0, 200),), rolls=(50, 100, 150))
    remote = tmp_path / "remote"
    md = [upload(r, b, remote, S[i]) for i, b in enumerate((0, 50, 100))]
    r.delete_below(150, log_start=0)
    pdir = remote_dir(remote)
    for f in pdir.glob(f"*{S[1]}*"):                                   # the store lost 50..99
        f.unlink()
    (pdir / f"00000000000000000100-{S[2]}.timeindex").unlink()        # and 100..149's time index
    put_fileset(remote, 150, S[7])                                     # a copy no metadata names
    put_fileset(remote, 150, S[8])                                     # a copy still (or failed) in progress
    started = metadata(S[8], 150, 199, {0: 150}, state=RemoteLogSegmentState.COPY_SEGMENT_STARTED)
    wrong_size = md[0].__class__(**{**md[0].__dict__, "segment_size_in_bytes": md[0].segment_size_in_bytes + 1})
    history = tiered_history(r.open(), [wrong_size, md[1], md[2], started], open_remote_storage(str(remote)))
    assert shape(history) == [("remote", S[0], 0, 50), ("remote", S[1], 50, 100), ("remote", S[2], 100, 150),
                              ("local", 150, 150, 200)]
    assert [p.readable for p in history.remote_pieces] == [True, False, False]
    missing = history.findings_of(MissingRemoteFiles)
    assert [(m.segment_id, m.missing) for m in missing] == [
        (S[1], ("SEGMENT", "OFFSET_INDEX", "TIME_INDEX", "LEADER_EPOCH_CHECKPOINT", "PRODUCER_SNAPSHOT")),
        (S[2], ("TIME_INDEX",))]
    assert missing[0].expected == str(pdir / f"00000000000000000050-{S[1]}.log")
    assert missing[0].message.endswith(f"but the store has no file of it: expected {missing[0].expected}")
    [size] = history.findings_of(RemoteSizeMismatch)
    assert (size.segment_id, size.expected, size.found) == (S[0], md[0].segment_size_in_bytes + 1,
                                                           md[0].segment_size_in_bytes)
    assert [f.segment_id for f in history.findings_of(UnnamedFileset)] == [S[7]]
    [unfinished] = history.findings_of(UnfinishedFileset)
    assert (unfinished.segment_id, unfinished.state) == (S[8], "COPY_SEGMENT_STARTED")
    with pytest.raises(LogDirError) as e:
        history.read_logs()
    assert e.value.path == missing[0].expected and e.value.code == "REMOTE_FILESET_INVALID"
    logs = history.read_logs(skip_unreadable=True)
    assert [(u.tier, u.start_offset, u.end_offset) for u in logs] == [("remote", 0, 50), ("local", 150, 200)]


def test_no_leader_epochs_means_no_remote_reads(tmp_path: Path) -> None:
    r = _tiered(tmp_path, epochs=((0, 100),), rolls=(50,))
    s0 = upload(r, 0, tmp_path / "remote", S[0])
    r.delete_below(50, log_start=0)
    (r.directory / ckpt.LEADER_EPOCH_CHECKPOINT).write_bytes(ckpt.format_leader_epoch_checkpoint([]))
    history = tiered_history(r.open(), [s0], open_remote_storage(str(tmp_path / "remote")))
    assert shape(history) == [("local", 50, 50, 100)]
    assert [type(f) for f in history.findings] == [NoLeaderEpochs, OffsetGap, UnusedRemoteSegment]
    assert history.findings_of(OffsetGap)[0].end_offset == 50
    # the lineage given instead (e.g. a remote fileset's leader-epoch checkpoint)
    history = tiered_history(r.open(), [s0], open_remote_storage(str(tmp_path / "remote")), leader_epochs=[(0, 0)])
    assert shape(history) == [("remote", S[0], 0, 50), ("local", 50, 50, 100)] and history.findings == ()


def test_log_start_from_checkpoint_or_remote_tier(tmp_path: Path) -> None:
    r = _tiered(tmp_path, epochs=((0, 200),), rolls=(50, 100, 150))
    md = [upload(r, b, tmp_path / "remote", S[i]) for i, b in enumerate((0, 50, 100, 150))]
    store = open_remote_storage(str(tmp_path / "remote"))
    r.delete_below(100, log_start=50)              # retention moved the log start past 0..49
    history = tiered_history(r.open(), md, store)
    assert shape(history) == [("remote", S[1], 50, 100), ("local", 100, 100, 150), ("local", 150, 150, 200)]
    below = history.findings_of(UnusedRemoteSegment)
    assert [(u.segment_id, u.reason) for u in below] == [(S[0], "below log start")]
    assert [m.segment_id for m in history.local_copies] == [S[2], S[3]]   # copies of what is local
    (r.log_dir / ckpt.LOG_START_OFFSET_CHECKPOINT).write_bytes(ckpt.format_offset_checkpoint({}))
    history = tiered_history(r.open(), md, store)
    assert (history.log_start_offset, history.log_start_source) == (0, FROM_REMOTE_TIER)
    assert shape(history)[:2] == [("remote", S[0], 0, 50), ("remote", S[1], 50, 100)]


def test_partition_identity_is_checked(tmp_path: Path) -> None:
    r = _tiered(tmp_path, epochs=((0, 50),))
    other = metadata(S[0], 0, 9, {0: 0}, partition=1)
    with pytest.raises(ValueError, match="belongs to"):
        tiered_history(r.open(), [other], None)
    history = tiered_history(r.open(), [metadata(S[0], 0, 9, {0: 0})], None)
    [missing] = history.findings_of(MissingRemoteFiles)        # no store at all: named but absent
    assert f"no partition dir orders-0-{TOPIC_ID}" in missing.message


# --- reading remote segments ----------------------------------------------------------------

def _without(table: pa.Table, *names: str) -> pa.Table:
    return table.drop_columns(list(names))


def test_remote_segment_reads_as_the_local_one(tmp_path: Path) -> None:
    r = _tiered(tmp_path, epochs=((0, 120), (3, 80)), rolls=(100,))
    s0 = upload(r, 0, tmp_path / "remote", S[0])
    s1 = upload(r, 100, tmp_path / "remote", S[1])
    store = open_remote_storage(str(tmp_path / "remote"))
    [pdir] = store.partitions
    fs0 = pdir.fileset(S[0])
    assert fs0 is not None and fs0.complete
    local = r.open()
    seg = local.segments[0]
    ctx = fs0.file_context(TP, broker_id=local.broker_id)
    remote_rows = pa.Table.from_batches(list(decode_segment(fs0.location(RemoteFileType.SEGMENT), context=ctx)))
    local_ctx = FileContext(path=seg.log_path, topic="orders", partition=0, segment=0, log_dir=local.log_dir,
                            broker_id=local.broker_id)
    local_rows = pa.Table.from_batches(list(decode_segment(seg.log_path, context=local_ctx)))
    assert remote_rows.num_rows == 100
    assert _without(remote_rows, "logDir").equals(_without(local_rows, "logDir"))
    assert set(remote_rows.column("logDir").to_pylist()) == {pdir.location}

    # the planner and the split reader over remote filesets as a partition log
    rlog = remote_partition_log(store, pdir, [pdir.fileset(S[0]), pdir.fileset(S[1])],  # type: ignore[list-item]
                                end_offsets=[s0.end_offset, s1.end_offset], log_start_offset=0, log_end_offset=200)
    assert [s.base_offset for s in rlog.segments] == [0, 100]
    assert rlog.offset_index(rlog.segments[1]) is not None and rlog.offset_index(rlog.segments[1]).base_offset == 100
    assert [rlog.read_snapshot(s).offset for s in rlog.snapshots] == [100, 200]
    opts = ReadOptions(paths=(), plan=PlanOptions(replicas="all"), bounds=Bounds())
    for bounds in (Bounds(), Bounds(start={("orders", 0): 37}, end={("orders", 0): 163})):
        remote_read = [b for sp in plan_splits([rlog], opts.plan, bounds) for b in read_split(sp, opts)]
        local_read = [b for sp in plan_splits([local], opts.plan, bounds) for b in read_split(sp, opts)]
        got, want = pa.Table.from_batches(remote_read), pa.Table.from_batches(local_read)
        assert got.column("offset").to_pylist() == list(range(*((37, 163) if bounds.start else (0, 200))))
        assert _without(got, "logDir", "brokerId").equals(_without(want, "logDir", "brokerId"))
        assert set(got.column("logDir").to_pylist()) == {store.root}


def test_a_cut_remote_segment_is_corrupt_not_a_crash_tail(tmp_path: Path) -> None:
    """A local active segment's partial last batch is a crash tail (recovery truncates it); a
    remote segment is a closed copy: the same bytes there are an error in FAILFAST."""
    r = _tiered(tmp_path, epochs=((0, 100),), rolls=(50,))
    s0 = upload(r, 0, tmp_path / "remote", S[0])
    r.delete_below(50, log_start=0)
    log = remote_dir(tmp_path / "remote") / f"00000000000000000000-{S[0]}.log"
    log.write_bytes(log.read_bytes()[:-7])
    history = tiered_history(r.open(), [s0], open_remote_storage(str(tmp_path / "remote")))
    assert [type(f) for f in history.findings] == [RemoteSizeMismatch]
    opts = ReadOptions(paths=(), plan=PlanOptions(), bounds=Bounds())
    with pytest.raises(CorruptRecordError) as e:
        for split in plan_tiered_splits(history):
            list(read_split(split, opts))
    assert e.value.path == str(log) and "closed segment" in str(e.value)


def test_planning_a_history_reads_no_file_per_segment(tmp_path: Path) -> None:
    """40 remote segments on a store that counts requests: discovery lists the root and the
    partition dir; planning the remote run opens only the index of the segment its end bound cuts
    (the local log start inside the last remote segment), nothing per segment."""
    r = _tiered(tmp_path, epochs=((0, 410),), rolls=range(10, 400, 10), segment_bytes=1 << 30)
    given = [upload(r, b, tmp_path / "remote", segment_uuid(b)) for b in range(0, 400, 10)]
    follower = write_replica(tmp_path / "follower", epochs=((0, 410),), rolls=(*range(10, 390, 10), 395))
    follower.delete_below(395, log_start=0)
    handler = Counting()
    store = open_remote_storage(str(tmp_path / "remote"), filesystem=pafs.PyFileSystem(handler))
    assert handler.stats == 1 and len(handler.listed) == 2 and handler.opened == []
    history = tiered_history(follower.open(), given, store)
    assert history.findings == () and len(history.remote_pieces) == 40
    assert (history.remote_pieces[-1].start_offset, history.remote_pieces[-1].end_offset) == (390, 395)
    splits = plan_tiered_splits(history)
    assert handler.opened == [f"{remote_dir(tmp_path / 'remote')}/00000000000000000390-{segment_uuid(390)}.index"]
    assert len(handler.listed) == 2 and handler.stats == 1
    opts = ReadOptions(paths=(), plan=PlanOptions(), bounds=Bounds())
    offsets = [o for sp in splits for b in read_split(sp, opts) for o in b.column("offset").to_pylist()]
    assert offsets == list(range(410))


@pytest.mark.realdata
def test_real_tiered_storage_if_any(realdata: Path) -> None:
    roots = sorted(p for p in realdata.rglob(ROOT_STORAGE_DIR_NAME) if p.is_dir())
    if not roots:
        pytest.skip(f"no {ROOT_STORAGE_DIR_NAME} directory in {realdata} (no real tiered-storage data)")
    for root in roots:
        store = open_remote_storage(str(root))
        for pdir in store.partitions:
            for fileset in pdir.filesets:
                if fileset.complete:
                    rows = sum(b.num_rows for b in decode_segment(fileset.location(RemoteFileType.SEGMENT)))
                    assert rows >= 0
