"""The remote tier's files as Kafka's ``LocalTieredStorage`` lays them out (storage/remote_tier.py).

Expected values are Kafka's rules, by hand: ``LocalTieredStorage.configure`` (the root is
``<dir>/kafka-tiered-storage``), ``RemoteTopicPartitionDirectory.FILENAME_FORMAT`` (``Topic.LEGAL_CHARS+``
``-(\\d+)-`` 22 Uuid characters, matched whole: greedy, so the partition is the last run of digits
before the uuid), ``RemoteLogSegmentFileset.FILENAME_FORMAT`` / ``RemoteLogSegmentFileType`` and
``openExistingFileset`` (every type but ``.txnindex`` required).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs as pafs
import pytest
from tiered_builders import TOPIC_ID, Counting, put_fileset, remote_dir, segment_uuid

from kafka_format.common.errors import LogDirError
from kafka_format.internal.remote_log_metadata import TopicIdPartition
from kafka_format.storage.remote_tier import (
    ROOT_STORAGE_DIR_NAME,
    RemoteFileType,
    fileset_file_name,
    open_remote_storage,
    parse_fileset_file_name,
    parse_remote_partition_dir,
    remote_partition_dir_name,
    resolve_remote_root,
)

REQUIRED = tuple(t for t in RemoteFileType if not t.optional)


# --- root resolution ------------------------------------------------------------------------

def test_root_is_the_named_dir_or_its_child(tmp_path: Path) -> None:
    root = tmp_path / "store" / ROOT_STORAGE_DIR_NAME
    root.mkdir(parents=True)
    by_parent = resolve_remote_root(str(tmp_path / "store"))[1]
    by_itself = resolve_remote_root(str(root))[1]
    by_uri = resolve_remote_root(f"file://{tmp_path}/store/")[1]
    assert by_parent == by_itself == by_uri == str(root)


def test_root_missing_is_an_error_naming_the_path(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    with pytest.raises(LogDirError) as e:
        resolve_remote_root(str(tmp_path / "store"))
    assert e.value.path == str(tmp_path / "store")
    assert e.value.expected == f"a directory named {ROOT_STORAGE_DIR_NAME} or one holding it"
    assert e.value.found == f"no {ROOT_STORAGE_DIR_NAME} directory in it"
    assert str(tmp_path / "store") in str(e.value)
    with pytest.raises(LogDirError) as e:
        resolve_remote_root(str(tmp_path / "nowhere"))
    assert e.value.found == "nothing there" and e.value.path == str(tmp_path / "nowhere")
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / ROOT_STORAGE_DIR_NAME).write_bytes(b"")
    with pytest.raises(LogDirError) as e:
        resolve_remote_root(str(tmp_path / "f"))
    assert e.value.found == f"{ROOT_STORAGE_DIR_NAME} is a file"
    with pytest.raises(LogDirError) as e:
        resolve_remote_root(str(tmp_path / "f" / ROOT_STORAGE_DIR_NAME))
    assert e.value.found == "a file" and e.value.path == str(tmp_path / "f" / ROOT_STORAGE_DIR_NAME)


# --- partition dir names --------------------------------------------------------------------

@pytest.mark.parametrize(("name", "expected"), [
    (f"orders-0-{TOPIC_ID}", ("orders", 0)),
    (f"my-topic.v2-3-{TOPIC_ID}", ("my-topic.v2", 3)),        # '-' and '.' are legal topic chars
    (f"a-1-2-{TOPIC_ID}", ("a-1", 2)),                        # greedy topic: the last digits before the uuid
    (f"t-0-10-{TOPIC_ID}", ("t-0", 10)),
    (f"_x.y_-0-{TOPIC_ID}", ("_x.y_", 0)),
    (f"t-2147483647-{TOPIC_ID}", ("t", 2147483647)),
])
def test_partition_dir_names_kafka_reads(name: str, expected: tuple[str, int]) -> None:
    assert parse_remote_partition_dir(name) == TopicIdPartition(TOPIC_ID, *expected)


@pytest.mark.parametrize("name", [
    f"orders-x-{TOPIC_ID}",                                   # no partition digits
    "orders-0-AAAA",                                          # uuid not 22 chars
    f"ord ers-0-{TOPIC_ID}",                                  # ' ' is no topic char
    f"orders-0-{TOPIC_ID}-x",                                 # the whole name must match
    f"orders-0{TOPIC_ID}",
    f"t-2147483648-{TOPIC_ID}",                               # Integer.parseInt overflows
    f"orders-{TOPIC_ID}",
    "orders-0",                                               # a log dir's name, not a remote one
])
def test_partition_dir_names_kafka_rejects(name: str) -> None:
    assert parse_remote_partition_dir(name) is None


def test_partition_dir_name_round_trip() -> None:
    p = TopicIdPartition(TOPIC_ID, "a.b-c", 7)
    assert remote_partition_dir_name(p) == f"a.b-c-7-{TOPIC_ID}"
    assert parse_remote_partition_dir(remote_partition_dir_name(p)) == p


# --- fileset file names ---------------------------------------------------------------------

def test_fileset_file_names() -> None:
    sid = segment_uuid(1)
    assert fileset_file_name(11, sid, RemoteFileType.SEGMENT) == f"00000000000000000011-{sid}.log"
    for kind, suffix in [(RemoteFileType.SEGMENT, ".log"), (RemoteFileType.OFFSET_INDEX, ".index"),
                         (RemoteFileType.TIME_INDEX, ".timeindex"), (RemoteFileType.TRANSACTION_INDEX, ".txnindex"),
                         (RemoteFileType.LEADER_EPOCH_CHECKPOINT, ".leader_epoch_checkpoint"),
                         (RemoteFileType.PRODUCER_SNAPSHOT, ".snapshot")]:
        assert parse_fileset_file_name(f"00000000000000000011-{sid}{suffix}") == (11, sid, kind)
    assert [t.optional for t in RemoteFileType] == [False, False, False, True, False, False]
    assert parse_fileset_file_name(f"00000000000000000011-{sid}.log.deleted") is None  # '.' is not [a-z_]
    assert parse_fileset_file_name(f"00000000000000000011-{sid}.foo") is None         # no such file type
    assert parse_fileset_file_name("00000000000000000011.log") is None                # a local name
    assert parse_fileset_file_name(f"-{sid}.log") is None


# --- discovery ------------------------------------------------------------------------------

def test_discovery_filesets_orphans_partials_and_rejects(tmp_path: Path) -> None:
    a, b, c, d = (segment_uuid(i) for i in range(4))
    put_fileset(tmp_path, 0, a, size=300, kinds=RemoteFileType)                       # all six
    put_fileset(tmp_path, 60, b, size=200)                                             # no .txnindex: complete
    put_fileset(tmp_path, 120, c, kinds=(RemoteFileType.SEGMENT, RemoteFileType.OFFSET_INDEX))   # partial
    put_fileset(tmp_path, 180, d, kinds=(RemoteFileType.OFFSET_INDEX,))                # an orphan index
    pdir = remote_dir(tmp_path)
    (pdir / f"00000000000000000060-{b}.log.tmp").write_bytes(b"")                      # names b, no type
    (pdir / "notes.txt").write_bytes(b"x")
    (pdir / "sub").mkdir()
    put_fileset(tmp_path, 0, segment_uuid(9), topic="my-topic.v2", partition=12)
    root = tmp_path / ROOT_STORAGE_DIR_NAME
    (root / "README").write_bytes(b"")
    (root / "orders-0").mkdir()
    (root / f"orders-x-{TOPIC_ID}").mkdir()

    store = open_remote_storage(str(tmp_path))
    assert store.root == str(root)
    assert [(p.partition.topic, p.partition.partition) for p in store.partitions] == [("my-topic.v2", 12),
                                                                                       ("orders", 0)]
    assert sorted((r.name, r.is_dir) for r in store.rejected) == [
        ("README", False), ("orders-0", True), (f"orders-x-{TOPIC_ID}", True)]
    assert {r.name: r.reason for r in store.rejected}["README"].startswith("a file, not a topic-partition directory")

    orders = store.partition_dir(TopicIdPartition(TOPIC_ID, "orders", 0))
    assert orders is not None and orders.location == str(pdir)
    assert [(f.segment_id, f.start_offset) for f in orders.filesets] == [(a, 0), (b, 60), (c, 120), (d, 180)]
    fa, fb, fc, fd = orders.filesets
    assert [f.kind for f in fa.files] == list(RemoteFileType) and fa.complete and fa.log_size == 300
    assert fa.location(RemoteFileType.SEGMENT) == str(pdir / f"00000000000000000000-{a}.log")
    assert fb.missing == () and fb.file(RemoteFileType.TRANSACTION_INDEX) is None
    assert not fb.complete       # the stray .log.tmp names it: openExistingFileset would fail on it
    assert fb.problems == (f"00000000000000000060-{b}.log.tmp names the segment but no file type "
                           "(openExistingFileset fails on it)",)
    assert fc.missing == (RemoteFileType.TIME_INDEX, RemoteFileType.LEADER_EPOCH_CHECKPOINT,
                          RemoteFileType.PRODUCER_SNAPSHOT)
    assert fc.problems == ("Invalid fileset, missing files: ['TIME_INDEX', 'LEADER_EPOCH_CHECKPOINT', "
                           "'PRODUCER_SNAPSHOT'] (openExistingFileset)",)
    assert fd.missing == (RemoteFileType.SEGMENT, RemoteFileType.TIME_INDEX, RemoteFileType.LEADER_EPOCH_CHECKPOINT,
                          RemoteFileType.PRODUCER_SNAPSHOT) and fd.log_size is None
    rejected = {r.name: r.reason for r in orders.rejected}
    assert rejected == {
        f"00000000000000000060-{b}.log.tmp": "not <offset>-<segment uuid>.<type> (RemoteLogSegmentFileset's pattern)",
        "notes.txt": "not <offset>-<segment uuid>.<type> (RemoteLogSegmentFileset's pattern)",
        "sub": "a directory inside a remote partition dir"}


def test_fileset_naming_problems(tmp_path: Path) -> None:
    a, b = segment_uuid(1), segment_uuid(2)
    pdir = put_fileset(tmp_path, 50, a)
    (pdir / f"50-{a}.index").write_bytes(b"")                   # a second .index, unpadded offset
    for kind in REQUIRED:                                       # b: its files name two start offsets
        (pdir / fileset_file_name(70 if kind is RemoteFileType.SEGMENT else 71, b, kind)).write_bytes(b"")
    (pdir / f"00000000000000000070-{b}.foo").write_bytes(b"")
    orders = open_remote_storage(str(tmp_path / ROOT_STORAGE_DIR_NAME)).partitions[0]
    fa, fb = orders.fileset(a), orders.fileset(b)
    assert fa is not None and fb is not None
    assert fa.start_offset == 50 and not fa.complete
    assert fa.problems == (
        f"two OFFSET_INDEX files (50-{a}.index and another): openExistingFileset's map takes one per type",
        f"50-{a}.index: the start offset is not in 20 digits (filenamePrefixFromOffset), the broker's fetch "
        "names the file otherwise")
    assert fb.start_offset == 70                                # the .log's
    assert "files name different start offsets [70, 71]" in fb.problems
    assert {r.name: r.reason for r in orders.rejected} == {
        f"00000000000000000070-{b}.foo": ".foo is no RemoteLogSegmentFileType"}


def test_non_canonical_uuid_text_is_rejected(tmp_path: Path) -> None:
    # 22 base64url chars carry 132 bits, a Uuid 128: 'AAAAAAAAAAAAAAAAAAAAAB' decodes to the zero
    # Uuid, whose Uuid.toString is 'AAAAAAAAAAAAAAAAAAAAAA': the broker's names never read so.
    odd = "AAAAAAAAAAAAAAAAAAAAAB"
    assert parse_remote_partition_dir(f"orders-0-{odd}") is None
    assert parse_fileset_file_name(f"00000000000000000000-{odd}.log") is None
    (tmp_path / ROOT_STORAGE_DIR_NAME / f"orders-0-{odd}").mkdir(parents=True)
    store = open_remote_storage(str(tmp_path))
    assert store.partitions == () and "Uuid.toString" in store.rejected[0].reason


def test_discovery_is_one_listing_per_partition_dir(tmp_path: Path) -> None:
    """3 partitions of 40 segments each (6 files a segment): one stat of the root, one listing of
    it and one per partition dir; no per-segment or per-file request, no file opened."""
    for p in range(3):
        for s in range(40):
            put_fileset(tmp_path, s * 100, segment_uuid(p * 100 + s), partition=p, kinds=RemoteFileType)
    handler = Counting()
    store = open_remote_storage(str(tmp_path), filesystem=pafs.PyFileSystem(handler))
    root = str(tmp_path / ROOT_STORAGE_DIR_NAME)
    assert [len(p.filesets) for p in store.partitions] == [40, 40, 40]
    assert all(f.complete for p in store.partitions for f in p.filesets)
    assert handler.stats == 1 and handler.opened == []
    assert handler.listed == [root, *(f"{root}/orders-{p}-{TOPIC_ID}" for p in range(3))]
    # the same through the dir itself, and listing only the selected partition
    handler = Counting()
    store = open_remote_storage(root, filesystem=pafs.PyFileSystem(handler), select=lambda tp: tp.partition == 1)
    assert [p.partition.partition for p in store.partitions] == [1]
    assert handler.stats == 1 and handler.listed == [root, f"{root}/orders-1-{TOPIC_ID}"]
    assert store.partitions[0].filesets[0].location(RemoteFileType.SEGMENT) == (
        f"{root}/orders-1-{TOPIC_ID}/00000000000000000000-{segment_uuid(100)}.log")
