"""Aiven's ``RemoteStorageManager`` objects (storage/aiven_rsm.py, storage/aiven_tier.py) on stores its own
code wrote (``tests/format/aiven_rsm/``, see its README): every file of a segment the view gives is
compared with the file the writer made and the plugin uploaded (``tiered_builders``' LocalTieredStorage
copy of the same segments), never with a value the code under test produced.

Hand-known values come from the plugin's rules: ``chunk.size=256`` cuts the 1250-byte segment 0 into
5 chunks (4 of 256 bytes, the last of 226); encryption adds a 12-byte IV and a 16-byte tag to every
chunk and index; ``ChunkSizesBinaryCodec`` writes count, base, width, the values above the base and
the last value in full.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest
from aiven_fixture import CONFIGS, KEY_A, KEY_B, KEYS, TOPIC_DIR, AivenCluster, aiven_cluster
from tiered_builders import TOPIC_ID

from kafka_format.common.errors import LogDirError
from kafka_format.internal.remote_log_metadata import TopicIdPartition
from kafka_format.read.options import KafkaLogOptionError
from kafka_format.read.tiers import open_remote_tier
from kafka_format.storage import fsio
from kafka_format.storage.aiven_rsm import (
    KEYS_ENV,
    ChunkedSegmentFile,
    decode_chunk_sizes,
    forget_keys,
    parse_manifest,
    use_keys,
)
from kafka_format.storage.aiven_tier import open_aiven_storage
from kafka_format.storage.remote_tier import RemoteFileType
from kafka_format.storage.tiered_history import MissingRemoteFiles, RemoteSizeMismatch, tiered_history

PARTITION = TopicIdPartition(TOPIC_ID, "orders", 0)
SEG0 = "AAAF5gAAAAAAAAAAAAAAAA"


@pytest.fixture(autouse=True)
def _no_keys_left() -> None:
    forget_keys()


def _store(a: AivenCluster, fmt: str = "aiven") -> object:
    use_keys(a.keys)
    return open_remote_tier(str(a.root), fmt, [PARTITION])


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_every_file_of_every_segment_is_the_one_uploaded(tmp_path: Path, config: str) -> None:
    a = aiven_cluster(tmp_path, config)
    store = _store(a, "auto")                          # no kafka-tiered-storage dir: Aiven's layout
    (d,) = store.partitions                            # type: ignore[attr-defined]
    assert [f.start_offset for f in d.filesets] == [0, 40] and all(f.complete for f in d.filesets)
    seg0 = d.filesets[0]
    kinds = {f.kind for f in seg0.files}
    assert kinds == set(RemoteFileType)                # segment 0 has a transaction index
    assert {f.kind for f in d.filesets[1].files} == set(RemoteFileType) - {RemoteFileType.TRANSACTION_INDEX}
    for fileset in d.filesets:
        for f in fileset.files:
            want = a.source(f.name)
            assert f.size == len(want)
            assert fsio.read_bytes(f.location) == want, (config, f.name)
            with fsio.open_input_file(f.location) as nf:      # positioned reads across chunk borders
                assert nf.size() == len(want)
                assert nf.read_at(300, 200) == want[200:500]
    assert seg0.log_size == 1250 and seg0.location(RemoteFileType.SEGMENT).startswith("aiven-rsm:")


def test_the_manifests_say_what_the_configuration_wrote(tmp_path: Path) -> None:
    plain = parse_manifest(aiven_cluster(tmp_path / "p", "plain").object(0, ".rsm-manifest").read_bytes(), "p")
    assert not plain.transformed and plain.chunk_index.kind == "fixed"
    assert plain.chunk_index.chunk_count == 5 and plain.chunk_index.chunk(4).original_size == 226
    assert plain.index_size("transaction") == 34 and plain.index_size("offset") == 0
    enc = parse_manifest(aiven_cluster(tmp_path / "e", "encrypted").object(0, ".rsm-manifest").read_bytes(), "e")
    assert enc.encryption is not None and enc.encryption.key_id == "key-a" and not enc.compression
    assert enc.chunk_index.kind == "fixed" and enc.chunk_index.transformed_chunk_size == 256 + 12 + 16
    assert enc.indexes["timestamp"].size == 12 + 28 and enc.index_size("timestamp") == 12  # type: ignore[union-attr]
    both = parse_manifest(aiven_cluster(tmp_path / "b", "zstd-encrypted").object(0, ".rsm-manifest").read_bytes(), "b")
    assert both.compression and both.encryption.key_id == "key-b"  # type: ignore[union-attr]
    assert both.chunk_index.kind == "variable" and len(both.chunk_index.transformed) == 5


def test_chunk_sizes_decode_as_the_codec_writes_them() -> None:
    # count 5, base 177, width 1, then 0, 33, 6, 6 above the base, then the last (176) in full
    raw = bytes.fromhex("00000005" "000000b1" "01" "00210606" "000000b0")
    assert decode_chunk_sizes(raw) == (177, 210, 183, 183, 176)
    assert decode_chunk_sizes(struct.pack(">ii", 1, 99)) == (99,)
    assert decode_chunk_sizes(struct.pack(">i", 0)) == ()
    with pytest.raises(LogDirError, match="transformedChunks is malformed"):
        decode_chunk_sizes(raw[:-1])
    with pytest.raises(LogDirError, match="width of 1 to 4"):
        decode_chunk_sizes(bytes.fromhex("00000002" "00000000" "09" "00" "00000001"))


def test_a_read_fetches_only_the_chunks_it_overlaps(tmp_path: Path) -> None:
    a = aiven_cluster(tmp_path, "zstd")
    log = a.object(0, ".log")
    manifest = parse_manifest(a.object(0, ".rsm-manifest").read_bytes(), "m")
    data = log.read_bytes()
    requests: list[tuple[int, int]] = []

    def read_range(pos: int, n: int) -> bytes:
        requests.append((pos, n))
        return data[pos:pos + n]

    f = ChunkedSegmentFile(manifest, read_range, location=str(log), object_size=len(data), data_key=None)
    want = a.source(f"00000000000000000000-{SEG0}.log")
    assert f.read_at(10, 300) == want[300:310]          # chunk 1 only
    assert f.read_at(20, 305) == want[305:325]          # the same chunk again: kept
    assert f.read_at(100, 500) == want[500:600]         # chunks 1 and 2
    sizes = manifest.chunk_index.transformed
    assert requests == [(sizes[0], sizes[1]), (sizes[0] + sizes[1], sizes[2])]


# ------------------------------------------------------------------------------- failures


def test_an_encrypted_segment_without_its_key_names_the_key_id(tmp_path: Path) -> None:
    a = aiven_cluster(tmp_path, "zstd-encrypted")
    (d,) = open_remote_tier(str(a.root), "aiven", [PARTITION]).partitions     # listing needs no key
    location = d.filesets[0].location(RemoteFileType.SEGMENT)
    with pytest.raises(LogDirError, match=r"key-b.*remoteStorageKey") as e:
        fsio.read_bytes(location)
    assert e.value.code == "AIVEN_KEY_INVALID" and str(e.value.path).endswith(".rsm-manifest")
    use_keys([KEY_A])                                   # the other key pair only
    with pytest.raises(LogDirError, match="key ids given: key-a"):
        fsio.read_bytes(location)
    use_keys([f"key-b={KEYS / 'key-a-private.pem'}"])  # the id right, the key wrong
    with pytest.raises(LogDirError, match="does not decrypt with the key given"):
        fsio.read_bytes(location)
    use_keys([str(KEYS / "key-b-private.pem")])        # no id: tried for every id
    assert fsio.read_bytes(location) == a.source(f"00000000000000000000-{SEG0}.log")


def test_a_damaged_chunk_fails_its_gcm_tag_at_its_byte(tmp_path: Path) -> None:
    a = aiven_cluster(tmp_path, "encrypted")
    log = a.object(0, ".log")
    raw = bytearray(log.read_bytes())
    raw[2 * 284 + 100] ^= 1                             # inside chunk 2 (chunks of 256 + 28 bytes)
    log.write_bytes(bytes(raw))
    store = _store(a)
    location = store.partitions[0].filesets[0].location(RemoteFileType.SEGMENT)  # type: ignore[attr-defined]
    with fsio.open_input_file(location) as f:
        assert f.read_at(256, 0) == a.source(f"00000000000000000000-{SEG0}.log")[:256]   # chunk 0 is fine
        with pytest.raises(LogDirError, match="chunk 2 fails AES-GCM authentication") as e:
            f.read_at(10, 600)
    assert e.value.position == 2 * 284 and e.value.path == str(log) and e.value.code == "AIVEN_CHUNK_INVALID"


def test_a_truncated_object_is_a_partial_upload_and_a_finding(tmp_path: Path) -> None:
    a = aiven_cluster(tmp_path, "zstd")
    log = a.object(0, ".log")
    log.write_bytes(log.read_bytes()[:-50])
    store = _store(a)
    seg0 = store.partitions[0].filesets[0]              # type: ignore[attr-defined]
    assert not seg0.complete
    assert any("the .log object has" in p and "partial or damaged upload" in p for p in seg0.problems)
    history = tiered_history(a.cluster.replica.open(), a.cluster.uploaded, store)  # type: ignore[arg-type]
    (missing,) = history.findings_of(MissingRemoteFiles)
    assert missing.segment_id == SEG0 and missing.expected == str(log)
    with pytest.raises(LogDirError, match="chunk 4 is truncated") as e:          # read anyway: the last chunk
        ChunkedSegmentFile(parse_manifest(a.object(0, ".rsm-manifest").read_bytes(), "m"),
                           lambda p, n: log.read_bytes()[p:p + n], location=str(log),
                           object_size=log.stat().st_size, data_key=None).read_at(10, 1240)
    assert e.value.position is not None and e.value.position < log.stat().st_size


def test_missing_objects_and_a_manifest_of_another_segment(tmp_path: Path) -> None:
    a = aiven_cluster(tmp_path, "plain")
    a.object(40, ".rsm-manifest").unlink()               # the upload stopped before its manifest
    other = json.loads(a.object(0, ".rsm-manifest").read_text())
    other["remoteLogSegmentMetadata"]["startOffset"] = 7
    a.object(0, ".rsm-manifest").write_text(json.dumps(other))
    store = _store(a)
    seg0, seg40 = store.partitions[0].filesets          # type: ignore[attr-defined]
    assert seg40.files == () and "objects missing: .rsm-manifest" in seg40.problems[0]
    assert seg0.problems == ("the manifest's startOffset 7 is not the key's 0",)
    history = tiered_history(a.cluster.replica.open(), a.cluster.uploaded, store)  # type: ignore[arg-type]
    assert {f.segment_id for f in history.findings_of(MissingRemoteFiles)} == {SEG0, seg40.segment_id}
    assert not history.findings_of(RemoteSizeMismatch)


@pytest.mark.parametrize(("change", "message"), [
    (lambda m: "not json", "manifest is not JSON"),
    (lambda m: {**m, "version": "2"}, "manifest version is unknown"),
    (lambda m: {**m, "chunkIndex": {**m["chunkIndex"], "originalChunkSize": 0}}, "originalChunkSize is invalid"),
    (lambda m: {**m, "chunkIndex": {**m["chunkIndex"], "originalChunkSize": (1 << 31) - 1,
                                    "originalFileSize": (1 << 31) - 1}}, "too large to read"),
    (lambda m: {**m, "chunkIndex": {**m["chunkIndex"], "originalFileSize": 5000}}, "does not fit the file"),
    (lambda m: {**m, "chunkIndex": {**m["chunkIndex"], "transformedChunks": "KLUv"}}, "not a zstd frame"),
    (lambda m: {**m, "segmentIndexes": {**m["segmentIndexes"], "offset": {"position": -1, "size": 0}}},
     "segmentIndexes.offset.position is invalid"),
])
def test_a_malformed_manifest_is_refused_naming_the_field(tmp_path: Path, change: object, message: str) -> None:
    a = aiven_cluster(tmp_path, "zstd")
    path = a.object(0, ".rsm-manifest")
    changed = change(json.loads(path.read_text()))     # type: ignore[operator]
    data = changed.encode() if isinstance(changed, str) else json.dumps(changed).encode()
    with pytest.raises(LogDirError, match=message) as e:
        parse_manifest(data, str(path))
    assert e.value.path == str(path) and e.value.code == "AIVEN_MANIFEST_INVALID"
    path.write_bytes(data)
    seg0 = _store(a).partitions[0].filesets[0]           # type: ignore[attr-defined]
    assert not seg0.complete and message in seg0.problems[0]


def test_the_format_option_and_the_key_option(tmp_path: Path) -> None:
    from kafka_format.read.options import parse_options

    a = aiven_cluster(tmp_path, "plain")
    with pytest.raises(LogDirError, match="no kafka-tiered-storage directory"):
        open_remote_tier(str(a.root), "local-tiered", [PARTITION])
    (tmp_path / "empty").mkdir()
    with pytest.raises(LogDirError, match=r"kafka-tiered-storage.*or Aiven's RemoteStorageManager layout"):
        open_remote_tier(str(tmp_path / "empty"), "auto", [PARTITION])
    with pytest.raises(LogDirError, match="remote storage root not found"):
        open_aiven_storage(str(tmp_path / "nowhere"), [PARTITION])
    opts = parse_options({"paths": str(a.cluster.log_dir), "remoteStorageKey": f"{KEY_A}, {KEY_B}"})
    assert opts.remote_storage_keys == (KEY_A, KEY_B)
    with pytest.raises(KafkaLogOptionError, match="remoteStorageKey"):
        parse_options({"paths": str(a.cluster.log_dir), "remoteStorageKey": "=x.pem"})
    with pytest.raises(LogDirError, match="cannot read the private key"):
        use_keys([f"k={tmp_path / 'absent.pem'}"])


def test_keys_given_for_two_stores_stay_given_for_both(tmp_path: Path) -> None:
    """Two DataFrames in one process, each given only its own key pair: the second's key never
    takes the first's away (use_keys accumulates; a replaced ring failed the first read again)."""
    a = aiven_cluster(tmp_path / "a", "encrypted")          # key-a
    b = aiven_cluster(tmp_path / "b", "zstd-encrypted")     # key-b
    (da,) = open_remote_tier(str(a.root), "aiven", [PARTITION]).partitions
    (db,) = open_remote_tier(str(b.root), "aiven", [PARTITION]).partitions
    seg_a, seg_b = (d.filesets[0].location(RemoteFileType.SEGMENT) for d in (da, db))
    want = a.source(f"00000000000000000000-{SEG0}.log")
    use_keys([KEY_A])
    assert fsio.read_bytes(seg_a) == want
    use_keys([KEY_B])
    assert fsio.read_bytes(seg_b) == b.source(f"00000000000000000000-{SEG0}.log")
    assert fsio.read_bytes(seg_a) == want
    assert json.loads(os.environ[KEYS_ENV]) == [KEY_A, KEY_B]   # what worker processes get
    forget_keys()
    assert KEYS_ENV not in os.environ


def test_a_key_prefix_not_ending_in_a_slash(tmp_path: Path) -> None:
    """``key.prefix=cluster-a-`` makes the keys ``cluster-a-orders-<id>/0/...`` (ObjectKeyFactory: the
    prefix, then the main path): the root given is the bucket's path followed by the prefix, no
    directory; the segments read are still the ones uploaded."""
    a = aiven_cluster(tmp_path, "plain")
    bucket = tmp_path / "bucket"
    bucket.mkdir()
    (a.root / TOPIC_DIR.split("/")[0]).rename(bucket / ("cluster-a-" + TOPIC_DIR.split("/")[0]))
    for fmt in ("aiven", "auto"):
        (d,) = open_remote_tier(str(bucket / "cluster-a-"), fmt, [PARTITION]).partitions  # type: ignore[attr-defined]
        assert [f.start_offset for f in d.filesets] == [0, 40] and all(f.complete for f in d.filesets)
        seg0 = d.filesets[0]
        assert fsio.read_bytes(seg0.location(RemoteFileType.SEGMENT)) == a.source(f"00000000000000000000-{SEG0}.log")
    with pytest.raises(LogDirError, match="key prefix 'cluster-b-'") as e:
        open_remote_tier(str(bucket / "cluster-b-"), "aiven", [PARTITION])
    assert e.value.code == "REMOTE_STORAGE_NOT_FOUND"
    with pytest.raises(LogDirError, match="remote storage root not found"):
        open_remote_tier(str(tmp_path / "absent" / "cluster-a-"), "aiven", [PARTITION])
