"""Log-dir discovery (spec §1.1-1.4): layouts, name parsing, LogLoader's startup reconciliation,
missing files, replicas across brokers, and non-local filesystems.

Oracles: the real sets' file trees and MANIFEST facts (globbed here), Kafka's naming rules, and
synthetic dirs whose expected outcome follows from LogLoader's passes as stated in the spec.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
from pathlib import Path

import crc32c as crc32c_pkg
import pyarrow.fs as pafs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testhelpers import CountingLocalFS

from kafka_format.common.errors import CheckpointFormatError, KafkaFormatError, LogDirError
from kafka_format.storage import checkpoints as C
from kafka_format.storage.index import read_offset_index
from kafka_format.storage.logdir import (
    LogDirSet,
    Segment,
    filename_prefix_from_offset,
    open_log_dirs,
    parse_partition_dir_name,
)

UUID_HEX = "2308294e39dc4a44ab8183f587805af2"


def touch(path: Path, data: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def seg_name(offset: int, suffix: str) -> str:
    return f"{offset:020d}{suffix}"


# --- name parsing -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("my-topic-3", ("my-topic", 3, "live")),
        ("__consumer_offsets-49", ("__consumer_offsets", 49, "live")),
        ("a.b-c-0", ("a.b-c", 0, "live")),
        (f"my-topic-3.{UUID_HEX}-delete", ("my-topic", 3, "delete")),
        (f"t-0.{UUID_HEX}-future", ("t", 0, "future")),
        (f"t-1.{UUID_HEX}-stray", ("t", 1, "stray")),
        ("t-+5", ("t", 5, "live")),  # Integer.parseInt accepts a leading '+'
        ("nodash", None),
        ("topic-x", None),
        ("topic-", None),
        ("-5", None),
        ("kafka-14016868148800197224", None),  # > Int.MAX
        ("t-0-delete", None),  # suffix without the .uuid part: the broker rejects it
    ],
)
def test_parse_partition_dir_name(name: str, expected: tuple[str, int, str] | None) -> None:
    assert parse_partition_dir_name(name) == expected


def test_filename_prefix() -> None:
    assert filename_prefix_from_offset(1234) == "00000000000000001234"


# --- real broker files ---------------------------------------------------------------------------

def _sets(realdata: Path) -> list[Path]:
    return sorted(p for p in realdata.iterdir() if p.is_dir())


@pytest.mark.realdata
def test_every_real_log_file_is_a_segment_exactly_once(realdata: Path) -> None:
    sets = _sets(realdata)
    assert len(sets) == 15
    for s in sets:
        found = open_log_dirs(s, include_special=True)
        listed = [seg.log_path for p in found.all_partitions() for seg in p.segments]
        on_disk = sorted(str(p) for p in s.rglob("*.log"))
        assert sorted(listed) == on_disk, s.name
        assert found.problems == []
        metas = sorted(str(p.parent) for p in s.rglob("meta.properties"))
        assert set(metas) <= {d.path for d in found.log_dirs}


@pytest.mark.realdata
def test_real_segments_are_ordered_with_file_facts(realdata: Path) -> None:
    for s in _sets(realdata):
        for part in open_log_dirs(s).all_partitions():
            bases = [seg.base_offset for seg in part.segments]
            assert bases == sorted(set(bases))
            for seg in part.segments:
                log = Path(seg.log_path)  # type: ignore[arg-type]
                assert seg.base_offset == int(log.name.split(".")[0])
                assert seg.log_size == log.stat().st_size
                assert seg.log_mtime_ms == log.stat().st_mtime_ns // 1_000_000
                idx = log.with_suffix(".index")
                assert (seg.index_path is not None) == idx.exists()
                if idx.exists():
                    assert seg.index_size == idx.stat().st_size


@pytest.mark.realdata
def test_two_brokers_yield_replicas(realdata: Path) -> None:
    found = open_log_dirs(realdata / "vitormoschetti__kafka-services")
    assert sorted(d.broker_id for d in found.log_dirs) == [0, 2]
    assert all(d.meta_version == 0 for d in found.log_dirs)
    grouped = found.partitions()
    multi = {k: v for k, v in grouped.items() if len(v) == 2}
    assert multi, "some partitions are on both brokers"
    for (topic, partition), reps in multi.items():
        assert {r.broker_id for r in reps} == {0, 2}
        assert {Path(r.path).name for r in reps} == {f"{topic}-{partition}"}
        assert found.replicas(topic, partition) == reps
    # ground truth from the tree: a topic-partition dir present under both data/kafka and data/kafka2
    data = realdata / "vitormoschetti__kafka-services/data"
    both = ({p.name for p in (data / "kafka").iterdir() if p.is_dir()}
            & {p.name for p in (data / "kafka2").iterdir() if p.is_dir()})
    assert {f"{t}-{p}" for t, p in multi} == both
    assert "ECOMMERCE_NEW_ORDER" in found.topics()


@pytest.mark.realdata
def test_parent_and_single_partition_paths(realdata: Path) -> None:
    base = realdata / "vitormoschetti__kafka-services/data"
    from_parent = open_log_dirs(base)
    from_dirs = open_log_dirs([base / "kafka", base / "kafka2"])
    assert [d.path for d in from_parent.log_dirs] == [d.path for d in from_dirs.log_dirs]
    one = open_log_dirs(base / "kafka/ECOMMERCE_NEW_ORDER-1")
    (ld,) = one.log_dirs
    assert ld.path == str(base / "kafka") and ld.broker_id == 0
    (part,) = ld.partitions
    assert (part.topic, part.partition) == ("ECOMMERCE_NEW_ORDER", 1)
    assert part.high_watermark_checkpoint == C.read_offset_checkpoint(
        str(base / "kafka" / C.REPLICATION_OFFSET_CHECKPOINT)).offsets[("ECOMMERCE_NEW_ORDER", 1)]


@pytest.mark.realdata
def test_zk_and_kraft_log_dirs(realdata: Path) -> None:
    (zk,) = open_log_dirs(realdata / "xpxwo100__bullShit").log_dirs
    assert (zk.meta_version, zk.broker_id, zk.cluster_id) == (0, 0, None)
    assert zk.log_start_offsets == {}  # Kafka 0.10.1 predates log-start-offset-checkpoint
    (kraft,) = open_log_dirs(realdata / "ArthurArutunyan04__Backend_labs").log_dirs
    assert (kraft.meta_version, kraft.broker_id, kraft.directory_id) == (1, 1, "MQHhtGhc9j1ncLM2pvl16w")
    assert kraft.had_clean_shutdown and kraft.clean_shutdown.broker_epoch == 7118  # type: ignore[union-attr]
    meta = kraft.partition("__cluster_metadata", 0)
    assert meta is not None and meta.quorum_state is not None and meta.quorum_state.leader_id == 1


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("set_name", "partition_dir", "base"),
    [
        ("rjmfernandes__flink-on-prem", "data/customers-0", 0),
        ("rjmfernandes__flink-on-prem", "data/products-0", 0),
        ("ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions",
         "kafka-data/__cluster_metadata-0", 0),
        ("ArthurArutunyan04__Backend_labs", "kafka-data/__consumer_offsets-19", 258527),
    ],
)
def test_missing_log_beside_index_files(realdata: Path, set_name: str, partition_dir: str, base: int) -> None:
    missing = (realdata / set_name / "MISSING_IN_SNAPSHOT.txt").read_text()
    assert f"{partition_dir}/{base:020d}.log" in missing
    topic, partition = partition_dir.rsplit("/", 1)[1].rsplit("-", 1)
    part = open_log_dirs(realdata / set_name / partition_dir).replicas(topic, int(partition))[0]
    assert [s.base_offset for s in part.orphan_segments] == [base]
    orphan = part.orphan_segments[0]
    assert orphan.log_path is None and orphan.index_path is not None and not orphan.has_log
    assert base not in [s.base_offset for s in part.segments]
    assert any("no .log" in n for n in part.notes)
    summary = part.index_summary(orphan)
    assert summary.offset_index is not None  # the orphan's index still reads


@pytest.mark.realdata
def test_log_start_offset_rule(realdata: Path) -> None:
    """max(checkpoint or 0, first segment base); vitormoschetti has partitions whose only segment
    starts above 0."""
    found = open_log_dirs(realdata / "vitormoschetti__kafka-services")
    nonzero = [p for p in found.all_partitions() if p.segments and p.segments[0].base_offset > 0]
    assert nonzero
    for p in found.all_partitions():
        first = p.segments[0].base_offset if p.segments else 0
        assert p.log_start_offset == max(p.log_start_offset_checkpoint or 0, first)
        assert p.log_start_offset >= first


@pytest.mark.realdata
def test_special_dirs_in_real_data(realdata: Path) -> None:
    root = realdata / "apache__kafka/core/data/kafka-14696354110866436968"
    plain = open_log_dirs(root)
    assert plain.all_partitions() == [] and any("delete" in n for n in plain.log_dirs[0].notes)
    special = open_log_dirs(root, include_special=True)
    (part,) = special.all_partitions()
    assert (part.topic, part.partition, part.kind) == ("test-topic", 0, "delete")


# --- synthetic dirs -------------------------------------------------------------------------------

def _log_dir(root: Path, broker_id: int = 1) -> Path:
    touch(root / "meta.properties", f"#\nversion=0\nbroker.id={broker_id}\n".encode())
    touch(root / C.REPLICATION_OFFSET_CHECKPOINT, b"0\n1\nt 0 250\n")
    touch(root / C.LOG_START_OFFSET_CHECKPOINT, b"0\n1\nt 0 120\n")
    touch(root / C.CLEANER_OFFSET_CHECKPOINT, b"0\n1\nt 0 90\n")
    touch(root / C.RECOVERY_POINT_CHECKPOINT, b"0\n1\nt 0 200\n")
    return root


def test_swap_cleaned_deleted_reconciliation(tmp_path: Path) -> None:
    """LogLoader passes: .deleted/.cleaned ignored; .swap at >= min .cleaned offset discarded; the valid
    .log.swap [100, 180) replaces segments 100 and 150 and is renamed; 180 stays; orphan index noted."""
    root = _log_dir(tmp_path / "broker")
    p = root / "t-0"
    for off in (0, 100, 150, 180):
        touch(p / seg_name(off, ".log"), b"x" * (off + 1))
        touch(p / seg_name(off, ".index"))
    touch(p / seg_name(150, ".snapshot"))  # inside the swap range: replaced too (pass 2 spares no suffix)
    touch(p / seg_name(100, ".log.swap"), b"s" * 7)
    touch(p / seg_name(100, ".index.swap"))
    touch(p / seg_name(300, ".log.swap"))  # >= min .cleaned offset: incomplete split
    touch(p / seg_name(300, ".log.cleaned"))
    touch(p / seg_name(0, ".log.deleted"))
    touch(p / seg_name(400, ".index"))  # orphan
    touch(p / "leader-epoch-checkpoint", b"0\n1\n0 0\n")
    touch(p / "partition.metadata", b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")
    seen: list[int] = []

    def next_offset(seg: Segment, fs: object) -> int:
        seen.append(seg.base_offset)
        assert seg.log_path is not None and seg.log_path.endswith(".log.swap")
        return 180  # the swap segment holds offsets [100, 180)

    def hook(seg: Segment, fs: object) -> int:
        return next_offset(seg, fs) if str(seg.log_path).endswith(".swap") else 250

    part = open_log_dirs(root, next_offset=hook).replicas("t", 0)[0]
    assert [s.base_offset for s in part.segments] == [0, 100, 180]
    swapped = part.segments[1]
    assert swapped.from_swap and swapped.log_size == 7 and swapped.log_path.endswith(".log.swap")
    assert swapped.index_path is not None and swapped.index_path.endswith(".index.swap")
    assert part.segments[0].log_size == 1 and part.segments[2].log_size == 181
    assert [s.base_offset for s in part.orphan_segments] == [400]
    assert part.snapshots == ()
    assert seen == [100]
    assert part.topic_id == "AAAAAAAAAAAAAAAAAAAAAQ" and part.leader_epoch == 0
    # checkpoints, derived values
    assert (part.high_watermark_checkpoint, part.log_start_offset_checkpoint, part.recovery_point,
            part.cleaner_offset_checkpoint) == (250, 120, 200, 90)
    assert part.log_end_offset == 250 and part.high_watermark == 250
    assert part.log_start_offset == 120
    assert part.first_dirty_offset() == 120  # checkpoint 90 < logStartOffset: reset
    assert part.first_dirty_offset(log_end_offset=100) == 120
    notes = "\n".join(part.notes)
    for fragment in ("pending deletion", "unfinished cleaning", "incomplete split", "replaced by swap",
                     "interrupted swap", "no .log"):
        assert fragment in notes


def test_high_watermark_capped_at_leo(tmp_path: Path) -> None:
    root = _log_dir(tmp_path / "b")
    touch(root / "t-0" / seg_name(0, ".log"))
    part = open_log_dirs(root, next_offset=lambda s, fs: 200).replicas("t", 0)[0]
    assert part.high_watermark_checkpoint == 250 and part.high_watermark == 200
    part = open_log_dirs(root).replicas("t", 0)[0]
    assert part.log_end_offset is None and part.high_watermark == 250
    assert part.first_dirty_offset() == 120


def test_special_and_odd_dirs(tmp_path: Path) -> None:
    root = _log_dir(tmp_path / "b")
    for name in ("t-0", f"t-1.{UUID_HEX}-delete", f"t-2.{UUID_HEX}-future", f"t-3.{UUID_HEX}-stray",
                 "nodash", "topic-x", "t-9-delete"):
        touch(root / name / seg_name(0, ".log"))
    touch(root / "stray-file.txt")
    found = open_log_dirs(root)
    assert [(p.topic, p.partition, p.kind) for p in found.all_partitions()] == [("t", 0, "live")]
    notes = "\n".join(found.log_dirs[0].notes)
    for fragment in ("skipped delete", "skipped future", "skipped stray", "ignored directory nodash",
                     "ignored directory topic-x", "ignored directory t-9-delete",
                     "ignored file stray-file.txt"):
        assert fragment in notes
    everything = open_log_dirs(root, include_special=True)
    assert [(p.partition, p.kind) for p in everything.all_partitions()] == [
        (0, "live"), (1, "delete"), (2, "future"), (3, "stray")]
    assert [len(v) for v in everything.partitions().values()] == [1, 1, 1, 1]


def test_bad_state_files_are_problems_not_crashes(tmp_path: Path) -> None:
    root = _log_dir(tmp_path / "b")
    touch(root / C.REPLICATION_OFFSET_CHECKPOINT, b"0\n2\nt 0 5\n")  # count mismatch
    touch(root / "t-0" / seg_name(0, ".log"))
    touch(root / "t-0" / "leader-epoch-checkpoint", b"7\n0\n")
    touch(root / "t-0" / "partition.metadata", b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
    found = open_log_dirs(root)
    assert len(found.problems) == 3 and all(isinstance(e, CheckpointFormatError) for e in found.problems)
    part = found.replicas("t", 0)[0]
    assert part.leader_epochs is None and part.topic_id is None and part.high_watermark_checkpoint is None
    with pytest.raises(CheckpointFormatError):
        open_log_dirs(root, strict=True)


def test_depth_limit_and_missing_paths(tmp_path: Path) -> None:
    deep = _log_dir(tmp_path / "a" / "b" / "c" / "d")
    touch(deep / "t-0" / seg_name(0, ".log"))
    assert len(open_log_dirs(tmp_path / "a").log_dirs) == 1  # a/b/c/d is depth 3 from a
    assert open_log_dirs(tmp_path).log_dirs == ()  # depth 4: beyond the default
    assert len(open_log_dirs(tmp_path, max_depth=4).log_dirs) == 1
    with pytest.raises(LogDirError):
        open_log_dirs(tmp_path / "nope")
    with pytest.raises(LogDirError):
        open_log_dirs(deep / "t-0" / seg_name(0, ".log"))


def test_log_dir_without_meta_properties(tmp_path: Path) -> None:
    """Kafka's own test dirs: checkpoints and partitions, no meta.properties -> broker id unknown."""
    root = tmp_path / "kafka-123"
    touch(root / C.REPLICATION_OFFSET_CHECKPOINT, b"0\n0\n")
    touch(root / "x-0" / seg_name(5, ".log"))
    (ld,) = open_log_dirs(tmp_path).log_dirs
    assert ld.broker_id is None and ld.meta is None
    assert ld.partitions[0].segments[0].base_offset == 5


def _build(tmp_path: Path) -> Path:
    root = _log_dir(tmp_path / "brokers" / "b1", 1)
    touch(root / "t-0" / seg_name(0, ".log"), b"abc")
    touch(root / "t-0" / seg_name(0, ".index"), b"\x00\x00\x00\x05\x00\x00\x00\x02")
    root2 = _log_dir(tmp_path / "brokers" / "b2", 2)
    touch(root2 / "t-0" / seg_name(0, ".log"), b"abcd")
    return tmp_path / "brokers"


def _shape(found: LogDirSet) -> list[tuple[int | None, str, int, list[int], list[int | None]]]:
    return [(d.broker_id, p.topic, p.partition, [s.base_offset for s in p.segments],
             [s.log_size for s in p.segments]) for d in found.log_dirs for p in d.partitions]


def test_file_uri_and_non_local_filesystems(tmp_path: Path) -> None:
    root = _build(tmp_path)
    local = open_log_dirs(root)
    expected = [(1, "t", 0, [0], [3]), (2, "t", 0, [0], [4])]
    assert _shape(local) == expected
    by_uri = open_log_dirs(root.as_uri())
    assert _shape(by_uri) == expected and by_uri.log_dirs[0].path == str(root / "b1")
    sub = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    on_sub = open_log_dirs("brokers", filesystem=sub)
    assert _shape(on_sub) == expected
    part = on_sub.replicas("t", 0)[0]
    assert part.offset_index(part.segments[0]).lookup(10) == (5, 2)  # type: ignore[union-attr]
    mock = pafs._MockFileSystem()
    for f in sorted(root.rglob("*")):
        rel = f.relative_to(tmp_path).as_posix()
        if f.is_dir():
            mock.create_dir("bucket/" + rel)
        else:
            with mock.open_output_stream("bucket/" + rel) as out:
                out.write(f.read_bytes())
    on_mock = open_log_dirs("bucket/brokers", filesystem=mock)
    assert _shape(on_mock) == expected
    first = on_mock.log_dirs[0].partitions[0].segments[0]
    assert first.log_path == "bucket/brokers/b1/t-0/" + seg_name(0, ".log")
    assert len(on_mock.replicas("t", 0)) == 2


def test_same_log_dir_reached_twice_is_merged(tmp_path: Path) -> None:
    root = _build(tmp_path) / "b1"
    touch(root / "u-3" / seg_name(0, ".log"))
    found = open_log_dirs([root / "t-0", root / "u-3"])
    assert len(found.log_dirs) == 1
    assert [(p.topic, p.partition) for p in found.log_dirs[0].partitions] == [("t", 0), ("u", 3)]


@pytest.mark.realdata
def test_copied_real_set_through_file_uri(realdata: Path, tmp_path: Path) -> None:
    """A real log dir read through a file:// URI gives the same answer as the plain path."""
    src = realdata / "hermag__kafkademo"
    dst = tmp_path / "copy"
    shutil.copytree(src, dst)
    a, b = open_log_dirs(dst), open_log_dirs(dst.as_uri())
    assert _shape(a) == _shape(b) and _shape(a)


def test_s3_uri_through_moto(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moto_s3) -> None:  # type: ignore[no-untyped-def]
    """An s3:// URI (moto's S3 server) lists, stats and reads like a local dir; locations keep the URI
    options so they re-open the same store on their own.  The credentials come from the environment
    (the server refuses any other)."""
    from s3store import KEY, SECRET

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    root = _build(tmp_path)
    moto_s3.bucket("logdir-tests", {"brokers": root})
    options = moto_s3.query
    found = open_log_dirs(f"s3://logdir-tests/brokers?{options}")
    assert _shape(found) == [(1, "t", 0, [0], [3]), (2, "t", 0, [0], [4])]
    seg = found.replicas("t", 0)[0].segments[0]
    assert seg.index_path == f"s3://logdir-tests/brokers/b1/t-0/{seg_name(0, '.index')}?{options}"
    assert read_offset_index(seg.index_path).lookup(9) == (5, 2)  # re-opened from the string alone


_NAME = st.text(alphabet="ab-._0123456789", min_size=1, max_size=30).filter(lambda s: s not in (".", ".."))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(_NAME, _NAME, st.binary(max_size=40)), max_size=12))
def test_arbitrary_trees_never_crash(tree: list[tuple[str, str, bytes]]) -> None:
    """Random partition-dir and file names and contents: discovery notes or records problems, nothing
    else escapes."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "b"
        touch(root / "meta.properties", b"version=0\nbroker.id=1\n")
        for dirname, filename, data in tree:
            if (root / dirname).is_file():
                continue
            target = root / dirname / filename
            if target.is_dir():
                continue
            touch(target, data)
        found = open_log_dirs(root, include_special=True)
        for part in found.all_partitions():
            assert parse_partition_dir_name(Path(part.path).name) is not None
            for seg in (*part.segments, *part.orphan_segments):
                try:
                    part.index_summary(seg)
                except KafkaFormatError:
                    pass


class _DenyListing(CountingLocalFS):
    """Local filesystem that refuses to list directories named ``denied``: an I/O failure on demand."""

    def get_type_name(self) -> str:
        return "deny-listing"

    def equals(self, other: object) -> bool:
        return isinstance(other, _DenyListing)

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        base = selector.base_dir.rstrip("/")
        if base.endswith("/denied-0") or (selector.recursive and Path(base, "denied-0").exists()):
            self.listings.append((selector.base_dir, selector.recursive))
            raise PermissionError(f"listing {selector.base_dir} denied")
        return super().get_file_info_selector(selector)


def test_unlistable_partition_dir_is_a_problem(tmp_path: Path) -> None:
    root = _build(tmp_path) / "b1"
    touch(root / "denied-0" / seg_name(0, ".log"))
    fs = pafs.PyFileSystem(_DenyListing())
    found = open_log_dirs(str(root), filesystem=fs)
    assert [(p.topic, p.partition) for p in found.all_partitions()] == [("t", 0)]
    assert len(found.problems) == 1 and isinstance(found.problems[0], LogDirError)
    assert found.problems[0].code == "IO_ERROR" and "denied-0" in str(found.problems[0].path)
    with pytest.raises(LogDirError):
        open_log_dirs(str(root), filesystem=fs, strict=True)


def test_object_store_log_dir_is_listed_in_one_request(tmp_path: Path) -> None:
    """A non-local filesystem: one recursive listing of the log dir, not one per partition (the
    partition dirs themselves are still listed while the log dir is recognised)."""
    root = _build(tmp_path) / "b1"
    for p in range(1, 30):
        touch(root / f"t-{p}" / seg_name(0, ".log"), b"ab")
        touch(root / f"t-{p}" / seg_name(0, ".index"))
    handler = _DenyListing()
    found = open_log_dirs(str(root), filesystem=pafs.PyFileSystem(handler))
    assert len(found.all_partitions()) == 30 and not found.problems
    assert [s.log_size for s in found.replicas("t", 7)[0].segments] == [2]
    recursive = [base for base, deep in handler.listings if deep]
    assert recursive == [str(root)]
    assert len(handler.listings) < 10        # the walk's own look at a few dirs, not 30 partitions
    assert _shape(open_log_dirs(str(root), filesystem=pafs.PyFileSystem(_DenyListing()))) == _shape(
        open_log_dirs(root))


def _empty_v2_batch(base_offset: int, last_offset_delta: int) -> bytes:
    """A 61-byte v2 batch with no records (a compaction leftover), CRC-32C over attributes..end."""
    tail = struct.pack(">hiqqqhii", 0, last_offset_delta, -1, 1_700_000_000_000, -1, -1, -1, 0)
    head = struct.pack(">qiib", base_offset, 49, 0, 2)
    return head + struct.pack(">I", crc32c_pkg.crc32c(tail)) + tail


def test_swap_range_from_batch_headers_by_default(tmp_path: Path) -> None:
    """Without a hook, the .log.swap's next offset comes from its last batch (lastOffset + 1 = 180)."""
    root = _log_dir(tmp_path / "b")
    p = root / "t-0"
    for off in (0, 100, 150, 180):
        touch(p / seg_name(off, ".log"))
    touch(p / seg_name(100, ".log.swap"), _empty_v2_batch(100, 40) + _empty_v2_batch(141, 38))
    part = open_log_dirs(root).replicas("t", 0)[0]
    assert [s.base_offset for s in part.segments] == [0, 100, 180]
    assert part.segments[1].from_swap and part.segments[1].log_size == 122


def test_listing_cache_reads_each_dir_once_per_run(tmp_path: Path) -> None:
    """Inside one run (``listing_cache``) a log dir, and a partition dir re-opened alone, are read
    once: a segment added meanwhile is not seen, and the re-opened partition is the same value;
    outside the block every open reads the files again."""
    from kafka_format.storage.fsio import listing_cache

    root = _log_dir(tmp_path / "b")
    touch(root / "t-0" / seg_name(0, ".log"))
    touch(root / "t-1" / seg_name(0, ".log"))
    with listing_cache():
        first = open_log_dirs(root).replicas("t", 0)[0]
        touch(root / "t-0" / seg_name(100, ".log"))
        assert open_log_dirs(root).replicas("t", 0)[0] is first
        alone = open_log_dirs(root / "t-0").replicas("t", 0)[0]
        assert alone is first and [s.base_offset for s in alone.segments] == [0]
        with listing_cache():                      # nested: the same memory
            assert open_log_dirs(root / "t-0").replicas("t", 0)[0] is first
        assert [p.partition for p in open_log_dirs(root / "t-1").all_partitions()] == [1]
    again = open_log_dirs(root).replicas("t", 0)[0]
    assert [s.base_offset for s in again.segments] == [0, 100]
    assert open_log_dirs(root / "t-0").replicas("t", 0)[0] == again


def _checkpoint(entries: dict[int, int]) -> bytes:
    return b"0\n%d\n" % len(entries) + b"".join(b"t %d %d\n" % (p, o) for p, o in entries.items())


def test_state_files_are_parsed_once_per_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every task re-opens its partition through the log dir (PartitionRef.open), and each offset
    checkpoint lists every partition of the log dir: opening the 30 partitions one by one parses each
    state file once, not 30 times (2,000 partitions: P x P lines were 70 % of an offsets run).  New
    content is parsed again: a checkpoint Kafka replaces (a new file renamed over it, here with the old
    size and mtime), a file rewritten in place with the same size and mtime, one of another size."""
    root = _log_dir(tmp_path / "b")
    for p in range(30):
        touch(root / f"t-{p}" / seg_name(0, ".log"))
    hw = root / C.REPLICATION_OFFSET_CHECKPOINT
    touch(hw, _checkpoint({p: 1000 + p for p in range(30)}))
    parsed: list[str] = []
    real = C.parse_offset_checkpoint

    def counting(data, **kwargs):  # type: ignore[no-untyped-def]
        parsed.append(Path(str(kwargs["path"])).name)
        return real(data, **kwargs)

    monkeypatch.setattr(C, "parse_offset_checkpoint", counting)
    from kafka_format.storage.partition_state import PartitionRef

    refs = [PartitionRef("t", p, str(root / f"t-{p}"), str(root)) for p in range(30)]
    assert [r.open().high_watermark_checkpoint for r in refs] == [1000 + p for p in range(30)]
    assert sorted(parsed) == sorted(C.OFFSET_CHECKPOINT_FILES)      # each once, for all 30 opens

    old = hw.stat()
    new = root / "replication-offset-checkpoint.tmp"                # Kafka's write: temp file, rename
    touch(new, _checkpoint({p: 2000 + p for p in range(30)}))
    assert new.stat().st_size == old.st_size
    os.utime(new, ns=(old.st_atime_ns, old.st_mtime_ns))
    new.replace(hw)
    assert refs[7].open().high_watermark_checkpoint == 2007
    before = hw.stat()
    touch(hw, _checkpoint({p: 3000 + p for p in range(30)}))       # in place: same size, same mtime
    os.utime(hw, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert hw.stat().st_size == before.st_size
    assert refs[8].open().high_watermark_checkpoint == 3008
    touch(hw, _checkpoint({p: 30_000 + p for p in range(30)}))     # in place, another size
    assert refs[9].open().high_watermark_checkpoint == 30_009
    assert [r.open().high_watermark_checkpoint for r in refs[:3]] == [30_000, 30_001, 30_002]
    assert parsed.count(C.REPLICATION_OFFSET_CHECKPOINT) == 4


def test_a_bad_state_file_is_reported_on_every_open(tmp_path: Path) -> None:
    """A failed parse is not kept: every open of the log dir reports the problem again."""
    root = _log_dir(tmp_path / "b")
    touch(root / C.RECOVERY_POINT_CHECKPOINT, b"0\n2\nt 0 5\n")      # count mismatch
    touch(root / "t-0" / seg_name(0, ".log"))
    for _ in range(3):
        found = open_log_dirs(root / "t-0")
        assert [type(e) for e in found.problems] == [CheckpointFormatError]
        assert found.replicas("t", 0)[0].recovery_point is None


def test_a_partition_reopened_alone_stats_the_log_dirs_state_files_without_listing_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A task's re-open of one partition (a partition dir path) reads the log dir's state files by
    name: the log dir itself, with a stat per partition dir, is not listed (over P partitions that
    was P x P stats).  The partition and its log dir's state come out as when the whole log dir is
    opened; a state file that is a directory still counts as absent."""
    from kafka_format.storage import fsio
    from kafka_format.storage.partition_state import PartitionRef

    root = _log_dir(tmp_path / "b")
    touch(root / C.CLEAN_SHUTDOWN, b'{"version":0,"brokerEpoch":42}')
    for p in range(40):
        touch(root / f"t-{p}" / seg_name(0, ".log"))
    (root / C.CLEANER_OFFSET_CHECKPOINT).unlink()
    (root / C.CLEANER_OFFSET_CHECKPOINT).mkdir()
    whole = open_log_dirs(root)
    listed: list[str] = []
    real = fsio._scan_local

    def recording(fs_path: str):  # type: ignore[no-untyped-def]
        listed.append(fs_path.rstrip("/"))
        return real(fs_path)

    monkeypatch.setattr(fsio, "_scan_local", recording)
    alone = PartitionRef("t", 0, str(root / "t-0") + "/", str(root)).open()
    assert str(root) not in listed and str(root / "t-0") in listed
    assert alone == whole.replicas("t", 0)[0]
    (log_dir,) = open_log_dirs(root / "t-0").log_dirs
    assert (log_dir.broker_id, log_dir.clean_shutdown, log_dir.cleaner_offsets, log_dir.high_watermarks) == (
        whole.log_dirs[0].broker_id, whole.log_dirs[0].clean_shutdown, {}, whole.log_dirs[0].high_watermarks)
    assert log_dir.clean_shutdown is not None and log_dir.clean_shutdown.broker_epoch == 42
    assert alone.cleaner_offset_checkpoint is None and alone.high_watermark_checkpoint == 250
