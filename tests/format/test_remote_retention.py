"""Remote retention (``kafka_format.log.remote_retention``) against ``RemoteLogManager``'s expiration
pass, each expectation written from its rules for the segments laid out here: segments A 0..99, B
100..199, C 200..299 of 100 bytes, max timestamps 1000, 2000, 3000, leader epoch 0 from offset 0, log end
400 (the local log holds 300..399)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tiered_builders import TOPIC_ID, copy_records, metadata, segment_uuid

from kafka_format.internal.remote_log_metadata import (
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    TopicIdPartition,
    encode_remote_log_metadata,
)
from kafka_format.internal.remote_log_metadata_cache import RemoteLogMetadataCache, replay_remote_log_metadata
from kafka_format.log.remote_retention import remote_retention

A, B, C = segment_uuid(1), segment_uuid(2), segment_uuid(3)
TP = TopicIdPartition(TOPIC_ID, "orders", 0)


def _segments(epochs: dict[int, int] | None = None) -> list[Any]:
    e = epochs or {0: 0}
    return [replace(metadata(sid, lo, lo + 99, {k: max(v, lo) for k, v in e.items() if v <= lo + 99} or {0: lo}),
                    max_timestamp_ms=ts)
            for sid, lo, ts in ((A, 0, 1000), (B, 100, 2000), (C, 200, 3000))]


def _pass(cache: RemoteLogMetadataCache, *, lineage: list[tuple[int, int]] | None = None, log_start: int = 0,
          local: int = 100, ms: int = -1, size: int = -1, now: int = 2500) -> tuple[dict[str, str], int | None]:
    r = remote_retention(cache, lineage=lineage or [(0, 0)], log_start_offset=log_start, log_end_offset=400,
                         only_local_size=local, retention_ms=ms, retention_bytes=size, now_ms=now)
    return {d.metadata.segment_id: d.reason for d in r.deletions}, r.log_start_offset


def test_retention_ms_deletes_from_the_oldest_while_max_timestamps_are_at_or_before_now_minus_it() -> None:
    cache = RemoteLogMetadataCache.from_finished_segments(_segments())
    assert _pass(cache, ms=1000) == ({A: "retention.ms"}, 100)              # 1000 <= 1500 < 2000
    assert _pass(cache, ms=500) == ({A: "retention.ms", B: "retention.ms"}, 200)   # 2000 <= 2000: at, not after
    assert _pass(cache, ms=-1) == ({}, None)


def test_retention_bytes_counts_both_tiers_and_deletes_whole_segments_that_fit_the_breach() -> None:
    cache = RemoteLogMetadataCache.from_finished_segments(_segments())
    # total 300 remote + 150 local = 450 > 260: 190 to free; A (100) fits, then 90 < B's 100
    assert _pass(cache, local=150, size=260) == ({A: "retention.bytes"}, 100)
    assert _pass(cache, local=150, size=250) == ({A: "retention.bytes", B: "retention.bytes"}, 200)
    assert _pass(cache, local=150, size=450) == ({}, None)                  # not above the limit


def test_log_start_offset_breach_and_the_walk_stops_at_the_first_kept_segment() -> None:
    cache = RemoteLogMetadataCache.from_finished_segments(_segments())
    # A ends below the log start: deleted without moving it; B is kept, so C (also expired) waits
    assert _pass(cache, log_start=150) == ({A: "log-start-offset"}, None)
    expired_c = [*_segments()[:2], replace(_segments()[2], max_timestamp_ms=500)]
    assert _pass(RemoteLogMetadataCache.from_finished_segments(expired_c), ms=1000) == ({A: "retention.ms"}, 100)


def test_segments_of_epochs_below_the_earliest_are_deleted_as_leader_epoch_truncation() -> None:
    """An unclean election left the lineage starting at epoch 2 from offset 100: A (epoch 0 only) is
    listed by no epoch of the lineage, and goes in the truncation step."""
    segs = [replace(metadata(A, 0, 99, {0: 0}), max_timestamp_ms=1000),
            replace(metadata(B, 100, 199, {2: 100}), max_timestamp_ms=2000)]
    cache = RemoteLogMetadataCache.from_finished_segments(segs)
    assert _pass(cache, lineage=[(2, 100)], log_start=100) == ({A: "leader-epoch-truncation"}, None)


def test_a_dangling_deletion_is_deleted_again_when_the_walk_reaches_it() -> None:
    """A segment left in DELETE_SEGMENT_STARTED by a failed deletion is deleted again whatever the
    limits, once the walk gets to it: not past a segment it keeps (A, unexpired), as in Kafka's loop."""
    records: list[object] = copy_records(_segments())
    records.append(RemoteLogSegmentMetadataUpdate(TP, B, None, RemoteLogSegmentState.DELETE_SEGMENT_STARTED, 5, 1))
    view = replay_remote_log_metadata((0, i, encode_remote_log_metadata(r)) for i, r in enumerate(records))  # type: ignore[arg-type]
    cache = view.cache(TP)
    assert cache is not None
    assert _pass(cache) == ({}, None)
    assert _pass(cache, ms=1000) == ({A: "retention.ms", B: "dangling-deletion"}, 100)
