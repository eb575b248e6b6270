"""The jobs on a tiered partition (tiered storage, KIP-405), the expected outcomes written from Kafka's
rules for the log laid out here: ``klogs offsets`` answers -2, -4, -5 and -6 from the log dir's
``__remote_log_metadata`` (``UnifiedLog.fetchOffsetByTimestamp`` with ``remoteLogEnabled()``) and refuses
a timestamp only the remote tier answers; ``klogs compaction`` refuses a compacted tiered topic as
Kafka's config validation does.

The log: 120 records of ``orders-0``, leader epoch 0 for offsets 0-59 and epoch 2 from 60, segments at
0, 40 and 80; the segments at 0 and 40 were copied to the remote tier and deleted locally, the
``log-start-offset-checkpoint`` keeps 0 (always written for a remote log).  ``plain-0`` beside it has no
remote metadata: a local log's answers.  The broker's own answers for a real tiered topic are compared
in ``tests/conformance/test_tiered.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kafka_format.common.errors import LogDirError
from kafka_format.engine.compaction import cleaner_tasks
from kafka_format.engine.offsets import list_offsets_local
from kafka_format.internal.remote_log_metadata import (
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    TopicIdPartition,
)
from kafka_format.log.topicconfig import ConfigError, load_topic_configs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "format"))
from tiered_builders import (  # noqa: E402
    FIRST_TS,
    TOPIC_ID,
    segment_uuid,
    timestamp_of,
    write_metadata_log,
    write_replica,
    write_tiered_cluster,
)

SPECS = [-1, -2, -4, -5, -6]
TP = TopicIdPartition(TOPIC_ID, "orders", 0)


def _segment(n: int, start: int, end: int, epochs: dict[int, int]) -> RemoteLogSegmentMetadata:
    return RemoteLogSegmentMetadata(TP, segment_uuid(n), start, end, 1, timestamp_of(end), FIRST_TS, epochs, 100, None,
                                    RemoteLogSegmentState.COPY_SEGMENT_STARTED)


def _finished(n: int) -> RemoteLogSegmentMetadataUpdate:
    return RemoteLogSegmentMetadataUpdate(TP, segment_uuid(n), None, RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
                                          FIRST_TS, 1)


def _tiered_log(tmp_path: Path, records: list[object]) -> Path:
    replica = write_replica(tmp_path / "logs", epochs=((0, 60), (2, 60)), rolls=(40, 80))
    replica.delete_below(80, log_start=0)
    write_replica(tmp_path / "plain-logs", topic="plain", epochs=((3, 20),))
    (tmp_path / "plain-logs" / "plain-0").rename(replica.log_dir / "plain-0")
    write_metadata_log(replica.log_dir, records)
    return replica.log_dir


def _answers(log_dir: Path, topic: str) -> dict[int, tuple[int | None, int | None]]:
    rows = list_offsets_local(str(log_dir), SPECS, topics=[topic])
    return {r["timestamp"]: (r["offset"], r["leaderEpoch"]) for r in rows}


def test_tiered_specs_come_from_the_remote_log_metadata(tmp_path: Path) -> None:
    log_dir = _tiered_log(tmp_path, [_segment(0, 0, 39, {0: 0}), _finished(0),
                                     _segment(1, 40, 79, {0: 40, 2: 60}), _finished(1)])
    assert _answers(log_dir, "orders") == {
        -1: (120, 2),
        -2: (0, 0),        # the checkpointed log start, below the first local segment; the earliest epoch
        -4: (80, 2),       # the local log start
        -5: (79, 2),       # the highest copied offset, in epoch 2
        -6: (80, 2),       # the first offset not copied
    }


def test_nothing_copied_yet(tmp_path: Path) -> None:
    """A copy started, none finished: -5 has nothing (offset -1); -6 neither, the local log no longer
    starting at the log start."""
    log_dir = _tiered_log(tmp_path, [_segment(0, 0, 39, {0: 0})])
    got = _answers(log_dir, "orders")
    assert got[-5] == (None, None) and got[-6] == (None, None)
    assert got[-2] == (0, 0) and got[-4] == (80, 2)


def test_a_partition_without_remote_metadata_answers_as_a_local_log(tmp_path: Path) -> None:
    log_dir = _tiered_log(tmp_path, [_segment(0, 0, 39, {0: 0}), _finished(0)])
    assert _answers(log_dir, "plain") == {-1: (20, 3), -2: (0, 3), -4: (0, 3), -5: (None, None), -6: (None, None)}


def test_a_timestamp_only_the_remote_tier_answers_is_refused(tmp_path: Path) -> None:
    """Kafka searches the copied segments first (``RemoteLogManager.findOffsetByTimestamp``): a
    timestamp the deleted segment 0..39 reaches is the remote tier's answer, which the log dir cannot
    give; a later one is the local log's."""
    log_dir = _tiered_log(tmp_path, [_segment(0, 0, 39, {0: 0}), _finished(0),
                                     _segment(1, 40, 79, {0: 40, 2: 60}), _finished(1)])
    with pytest.raises(LogDirError, match=r"timestamp 1700000005000 of orders-0 is answered by the remote tier: "
                                          r"its copied segment \S+ of offsets 0\.\.39"):
        list_offsets_local(str(log_dir), [FIRST_TS + 5_000], topics=["orders"])
    (row,) = list_offsets_local(str(log_dir), [FIRST_TS + 100_000 + 1], topics=["orders"])  # past both copies
    assert (row["offset"], row["recordTimestamp"]) == (101, FIRST_TS + 101_000)


def test_remote_storage_on_and_nothing_copied_is_tiered_by_its_config(tmp_path: Path) -> None:
    """No ``__remote_log_metadata`` record names the partition yet, but its topic config has
    ``remote.storage.enable=true`` (``UnifiedLog.remoteLogEnabled()``): -5 has no offset and -6 is the
    log start, the local log still starting there.  Without the config it is a local log (-6: none);
    a compacted topic cannot be tiered (``isRemoteLogEnabled``)."""
    write_replica(tmp_path / "logs", epochs=((4, 30),), rolls=(20,))
    log_dir = str(tmp_path / "logs")

    def answers(*overrides: str) -> dict[int, tuple[int | None, int | None]]:
        rows = list_offsets_local(log_dir, SPECS, topics=["orders"], configs=load_topic_configs(overrides=overrides))
        return {r["timestamp"]: (r["offset"], r["leaderEpoch"]) for r in rows}

    tiered = {-1: (30, 4), -2: (0, 4), -4: (0, 4), -5: (None, None), -6: (0, 4)}
    assert answers("orders:remote.storage.enable=true") == tiered
    assert answers() == {**tiered, -6: (None, None)}
    assert answers("orders:remote.storage.enable=true", "orders:cleanup.policy=compact") == answers()


def test_timestamps_the_remote_tier_answers_come_from_its_files(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """With the remote storage (``--remote-storage``), ``findOffsetByTimestamp``'s segment is searched in
    its remote files: the copied segments in leader epoch order (epoch 0: segments 0..39 and 40..49),
    the first whose max timestamp reaches the target, its time index, offset index and batches; a
    target no copied segment reaches is the local log's (epoch 2 has no copy).  Log:
    ``tiered_builders.write_tiered_cluster`` (local log start 50)."""
    import json

    from kafka_format.jobs.offsets import main as offsets_main

    c = write_tiered_cluster(tmp_path)
    targets = [timestamp_of(o) for o in (0, 30, 39, 45, 52, 99)]
    rows = list_offsets_local(str(c.log_dir), targets, topics=["orders"], remote_storage=str(c.remote_root))
    assert [(r["offset"], r["recordTimestamp"], r["leaderEpoch"]) for r in rows] == [
        (0, timestamp_of(0), 0), (30, timestamp_of(30), 0), (39, timestamp_of(39), 0),
        (45, timestamp_of(45), 0), (52, timestamp_of(52), 2), (99, timestamp_of(99), 2)]
    with pytest.raises(LogDirError, match="answered by the remote tier"):     # without the files: refused
        list_offsets_local(str(c.log_dir), targets[:1], topics=["orders"])
    assert offsets_main([str(c.log_dir), "--topic", "orders", "--timestamp", str(timestamp_of(45)),
                         "--remote-storage", str(c.remote_root), "--format", "jsonl"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert (json.loads(line)["offset"], json.loads(line)["leaderEpoch"]) == (45, 0)


def test_compaction_refuses_a_compacted_tiered_topic(tmp_path: Path) -> None:
    """``LogConfig.validateNoRemoteStorageForCompactedTopic``: a topic with remote storage and
    ``cleanup.policy`` holding ``compact`` is refused, whether its config or the log dir's remote log
    metadata says it is tiered; a tiered topic with ``delete`` and a compacted local one are not."""
    log_dir = _tiered_log(tmp_path, [_segment(0, 0, 39, {0: 0}), _finished(0)])
    now = FIRST_TS + 10**9
    refused = "Remote log storage is unsupported for the compacted topics"
    with pytest.raises(ConfigError, match=rf"topic 'orders': {refused} \(cleanup.policy=compact with its "
                                          r"partitions in the log dirs' __remote_log_metadata"):
        cleaner_tasks(str(log_dir), load_topic_configs(overrides=["orders:cleanup.policy=compact"]), now)
    with pytest.raises(ConfigError, match=rf"topic 'plain': {refused} \(cleanup.policy=compact,delete with "
                                          r"remote.storage.enable=true"):
        cleaner_tasks(str(log_dir), load_topic_configs(overrides=["plain:cleanup.policy=compact,delete",
                                                                   "plain:remote.storage.enable=true"]), now,
                      topics=["plain"])
    tasks = cleaner_tasks(str(log_dir), load_topic_configs(overrides=["plain:cleanup.policy=compact"]), now)
    assert sorted((t.topic, t.partition) for t in tasks) == [("__remote_log_metadata", 0), ("orders", 0),
                                                              ("plain", 0)]


def test_the_table_view_of_a_tiered_topic_spans_both_tiers(tmp_path: Path) -> None:
    """``klogs compaction --mode full --remote-storage``: the latest committed record of each key over
    the whole history (keys ``k0``..``k6`` = offset % 7), remote and local rows deciding together (one
    replica: its ``logDir``), ``tier`` telling where each was read; without the remote storage the run
    fails (exit 2) rather than decide on the local tail; the cleaner mode takes no remote storage."""
    import json

    import pyarrow.dataset as ds

    from kafka_format.jobs.compaction import main as compaction_main

    c = write_tiered_cluster(tmp_path / "c")
    out = tmp_path / "out"
    assert compaction_main([str(c.log_dir), "--topic", "orders", "--mode", "full", "--out", str(out),
                            "--remote-storage", str(c.remote_root)]) == 0
    rows = ds.dataset(str(out / "records"), format="parquet").to_table().to_pylist()
    latest: dict[int, int] = {}
    for o, _ in c.rows:
        if o not in c.aborted:
            latest[o % 7] = o
    kept = sorted(r["offset"] for r in rows if r["decision"] == "keep")
    assert kept == sorted(latest.values())
    assert {r["tier"] for r in rows} == {"remote", "local"} and len({r["logDir"] for r in rows}) == 1
    (part,) = json.loads((out / "summary.json").read_text())["partitions"]
    assert part["partition"] == 0
    assert compaction_main([str(c.log_dir), "--topic", "orders", "--mode", "full", "--out", str(tmp_path / "o2")]) == 2
    assert compaction_main([str(c.log_dir), "--topic", "orders", "--out", str(tmp_path / "o3"),
                            "--remote-storage", str(c.remote_root)]) == 2
