"""The writer (kafka_format.writer) against independent decoders and Kafka's documented rules.

Oracles: kafka-python and aiokafka decode every batch the writer makes; segment/index/txn/snapshot
rules are re-derived here from the decoded log (spec §1.6-1.9, ``LogSegment.append``,
``ProducerStateManager``), never from the writer's own bookkeeping.
"""

from __future__ import annotations

import os
import struct
import types
import warnings
from pathlib import Path

import cramjam
import lz4.frame
import pytest
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from crc32c import crc32c as crc32c_hw

with warnings.catch_warnings():  # kafka-python's package import uses deprecated importlib.resources calls
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.codec as kp_codec
    from kafka.record import MemoryRecords as KpMemoryRecords

import itertools

from kafka_format.writer.batches import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    LOG_APPEND_TIME,
    BuiltBatch,
    Record,
    build_control_batch,
    build_empty_batch,
    build_legacy_messages,
    build_legacy_wrapper,
    build_v2_batch,
)
from kafka_format.writer.logdir import LogDirWriter
from kafka_format.writer.segments import PartitionWriter

V2_CODECS = [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD]
LEGACY_CODECS = [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4]
CODEC_IDS = {CODEC_NONE: "none", CODEC_GZIP: "gzip", CODEC_SNAPPY: "snappy", CODEC_LZ4: "lz4",
             CODEC_ZSTD: "zstd"}
T0 = 1_700_000_000_000
LOG_ENTRY = struct.Struct(">qi")  # offset, size: every .log entry starts with it (spec §2.1)
OFFSET_INDEX_ENTRY = struct.Struct(">ii")
TIME_INDEX_ENTRY = struct.Struct(">qi")
TXN_ENTRY = struct.Struct(">hqqqq")
SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")


# --- oracle plumbing ------------------------------------------------------------------------
class _CorrectLz4HeaderChecksum:
    """Stands in for ``xxhash.xxh32`` in kafka-python's ``lz4_decode_old_kafka``: the correct
    header checksum of Kafka's frame descriptor, as lz4's own frame writer computes it."""

    def __init__(self, data: bytes) -> None:
        assert bytes(data) == b"\x60\x40", "Kafka writes FLG 0x60 BD 0x40"

    def digest(self) -> bytes:
        frame = lz4.frame.compress(b"", block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                   content_checksum=False, store_size=False)
        return bytes([0, 0, frame[6], 0])


@pytest.fixture(autouse=True)
def _kafka_python_codecs(monkeypatch: pytest.MonkeyPatch) -> None:
    """kafka-python needs python-snappy and xxhash, absent here: give it raw-snappy blocks from
    cramjam (its own xerial framing code stays in use) and the lz4 header checksum above."""
    raw_snappy = types.SimpleNamespace(decompress=lambda b: bytes(cramjam.snappy.decompress_raw(bytes(b))))
    monkeypatch.setattr(kp_codec, "snappy", raw_snappy)
    monkeypatch.setattr(kp_codec, "xxhash", types.SimpleNamespace(xxh32=_CorrectLz4HeaderChecksum))


def _batches(lib: str, data: bytes) -> list:
    records = KpMemoryRecords(data) if lib == "kafka-python" else AioMemoryRecords(data)
    out = []
    while (batch := records.next_batch()) is not None:
        out.append(batch)
    return out


def decode(lib: str, data: bytes) -> list[dict]:
    """Normalised view of every batch/shallow message in ``data`` according to ``lib``."""
    out = []
    for b in _batches(lib, data):
        crc_valid = b.validate_crc()  # kafka-python: before iterating
        recs = [(r.offset, r.timestamp, r.key, r.value, list(r.headers or [])) for r in b]
        view = {"crc_valid": crc_valid, "records": recs}
        if hasattr(b, "last_offset_delta"):  # v2 batch
            view.update(base_offset=b.base_offset, last_offset=b.base_offset + b.last_offset_delta,
                        producer_id=b.producer_id, producer_epoch=b.producer_epoch,
                        base_sequence=b.base_sequence, transactional=b.is_transactional,
                        control=b.is_control_batch, timestamp_type=b.timestamp_type,
                        max_timestamp=b.max_timestamp, attributes=b.attributes)
        out.append(view)
    return out


def expected_records(batch: BuiltBatch, *, log_append_time: int | None = None, magic: int = 2) -> list[tuple]:
    out = []
    for i, r in enumerate(batch.records):
        delta = r.offset_delta if r.offset_delta is not None else i
        ts = log_append_time if log_append_time is not None else r.timestamp
        if magic == 0:
            ts = None
        out.append((batch.base_offset + delta, ts, r.key, r.value, list(r.headers)))
    return out


def sample_records(n: int, *, headers: bool = False, nulls: bool = False, size: int = 40) -> list[Record]:
    recs = []
    for i in range(n):
        key = None if nulls and i % 3 == 0 else f"key-{i}".encode()
        value = None if nulls and i % 4 == 1 else (f"value-{i}-".encode() * size)[: size + i]
        hdrs: tuple[tuple[str, bytes | None], ...] = ()
        if headers:
            hdrs = (("h1", f"{i}".encode()), ("empty", b""), ("null", None), ("h1", b"dup"),
                    ("ünï", b"\x00\xff"))
        recs.append(Record(key, value, T0 + 7 * i - (50 if i == 2 else 0), hdrs))
    return recs


LIBS = ["kafka-python", "aiokafka"]


# --- v2 batches -----------------------------------------------------------------------------
V2_FEATURES = {
    "plain": dict(),
    "headers": dict(headers=True),
    "nulls": dict(nulls=True),
    "log_append_time": dict(timestamp_type=LOG_APPEND_TIME, log_append_time=T0 + 99_999),
    "idempotent": dict(producer_id=4242, producer_epoch=3, base_sequence=2_147_483_640),
    "transactional": dict(producer_id=77, producer_epoch=0, base_sequence=0, transactional=True),
    "leader_epoch": dict(partition_leader_epoch=12),
    "delete_horizon": dict(nulls=True, delete_horizon=T0 + 86_400_000),
    "large": dict(n=40, size=4000),
}


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("feature", sorted(V2_FEATURES))
@pytest.mark.parametrize("codec", V2_CODECS, ids=CODEC_IDS.get)
def test_v2_batch_decodes_identically(lib: str, feature: str, codec: int) -> None:
    opts = dict(V2_FEATURES[feature])
    recs = sample_records(opts.pop("n", 6), headers=opts.pop("headers", False),
                          nulls=opts.pop("nulls", False), size=opts.pop("size", 40))
    batch = build_v2_batch(recs, base_offset=1000, codec=codec, **opts)
    (got,) = decode(lib, batch.data)
    assert got["crc_valid"]
    assert got["base_offset"] == 1000 and got["last_offset"] == 1000 + len(recs) - 1
    assert got["attributes"] & 0x07 == codec
    assert got["producer_id"] == opts.get("producer_id", -1)
    assert got["producer_epoch"] == opts.get("producer_epoch", -1)
    assert got["base_sequence"] == opts.get("base_sequence", -1)
    assert got["transactional"] == opts.get("transactional", False)
    assert not got["control"]
    lat = opts.get("log_append_time")
    assert got["timestamp_type"] == (1 if lat is not None else 0)
    assert got["max_timestamp"] == (lat if lat is not None else max(r.timestamp for r in recs))
    assert bool(got["attributes"] & 0x40) == ("delete_horizon" in opts)
    assert got["records"] == expected_records(batch, log_append_time=lat)
    if "partition_leader_epoch" in opts:
        assert struct.unpack_from(">i", batch.data, 12)[0] == 12


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("codec", V2_CODECS, ids=CODEC_IDS.get)
def test_v2_compacted_batch_keeps_offset_gaps_and_last_offset(lib: str, codec: int) -> None:
    recs = [Record(b"a", b"1", T0 + 5, offset_delta=1), Record(b"b", None, T0 + 9, offset_delta=4)]
    batch = build_v2_batch(recs, base_offset=50, codec=codec, last_offset_delta=7,
                           delete_horizon=T0 + 1_000_000)
    (got,) = decode(lib, batch.data)
    assert got["crc_valid"] and got["last_offset"] == 57
    assert [r[0] for r in got["records"]] == [51, 54]
    assert [r[1] for r in got["records"]] == [T0 + 5, T0 + 9]
    assert struct.unpack_from(">q", batch.data, 27)[0] == T0 + 1_000_000  # baseTimestamp = horizon


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("kind", [CONTROL_COMMIT, CONTROL_ABORT], ids=["commit", "abort"])
def test_control_batch(lib: str, kind: int) -> None:
    batch = build_control_batch(kind, base_offset=99, timestamp=T0, producer_id=5, producer_epoch=2,
                                coordinator_epoch=31, partition_leader_epoch=4)
    (got,) = decode(lib, batch.data)
    assert got["crc_valid"] and got["control"] and got["transactional"]
    assert (got["producer_id"], got["producer_epoch"], got["base_sequence"]) == (5, 2, -1)
    ((offset, ts, key, value, headers),) = got["records"]
    assert (offset, ts, headers) == (99, T0, [])
    assert struct.unpack(">hh", key) == (0, kind)          # ControlRecordType key: version, type
    assert struct.unpack(">hi", value) == (0, 31)          # EndTransactionMarker value: version, epoch


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("control", [False, True])
def test_empty_batch_is_the_61_byte_compaction_leftover(lib: str, control: bool) -> None:
    batch = build_empty_batch(base_offset=10, last_offset_delta=4, max_timestamp=T0, producer_id=8,
                              producer_epoch=1, base_sequence=20, transactional=control, control=control)
    assert len(batch.data) == 61 and struct.unpack_from(">i", batch.data, 8)[0] == 49
    (got,) = decode(lib, batch.data)
    assert got["crc_valid"] and got["records"] == []
    assert got["last_offset"] == 14 and got["max_timestamp"] == T0 and got["control"] == control
    assert struct.unpack_from(">q", batch.data, 27)[0] == -1  # baseTimestamp


# --- legacy ---------------------------------------------------------------------------------
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("log_append", [False, True], ids=["create", "append"])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=CODEC_IDS.get)
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_decodes_identically(lib: str, magic: int, codec: int, log_append: bool) -> None:
    if log_append and magic == 0:
        pytest.skip("magic 0 has no timestamps")
    if lib == "aiokafka" and magic == 0 and codec == CODEC_LZ4:
        pytest.skip("aiokafka refuses lz4 with magic 0 (checked with kafka-python)")
    recs = [Record(r.key, r.value, r.timestamp) for r in sample_records(5, nulls=True)]
    lat = T0 + 123_456 if log_append else None
    kw = dict(timestamp_type=LOG_APPEND_TIME, log_append_time=lat) if log_append else {}
    if codec == CODEC_NONE:
        built = build_legacy_messages(recs, magic=magic, base_offset=300, **kw)
        data = b"".join(b.data for b in built)
        got = decode(lib, data)
        assert len(got) == 5
        expected = [row for b in built for row in expected_records(b, log_append_time=lat, magic=magic)]
    else:
        built_one = build_legacy_wrapper(recs, magic=magic, base_offset=300, codec=codec, **kw)
        data = built_one.data
        got = decode(lib, data)
        assert len(got) == 1
        assert LOG_ENTRY.unpack_from(data)[0] == 304  # wrapper offset = last inner absolute offset
        expected = expected_records(built_one, log_append_time=lat, magic=magic)
    assert all(g["crc_valid"] for g in got)
    rows = [r for g in got for r in g["records"]]
    assert [r[:4] for r in rows] == [e[:4] for e in expected]


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4], ids=CODEC_IDS.get)
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_inner_messages_offsets_and_crcs(magic: int, codec: int) -> None:
    """Inner offsets: relative for magic 1, absolute for magic 0; every inner CRC-32 valid."""
    recs = [Record(r.key, r.value, r.timestamp) for r in sample_records(4)]
    data = build_legacy_wrapper(recs, magic=magic, base_offset=40, codec=codec).data
    (batch,) = _batches("kafka-python", data)
    assert all(r.validate_crc() for r in batch)
    value = _wrapper_value(data)
    inner = kp_codec.lz4_decode_old_kafka(value) if (codec, magic) == (CODEC_LZ4, 0) else {
        CODEC_GZIP: kp_codec.gzip_decode, CODEC_SNAPPY: kp_codec.snappy_decode,
        CODEC_LZ4: kp_codec.lz4_decode,
    }[codec](value)
    offsets, pos = [], 0
    while pos < len(inner):
        off, size = LOG_ENTRY.unpack_from(inner, pos)
        offsets.append(off)
        pos += LOG_ENTRY.size + size
    assert offsets == ([0, 1, 2, 3] if magic == 1 else [40, 41, 42, 43])


def _wrapper_value(entry: bytes) -> bytes:
    magic = entry[16]
    pos = LOG_ENTRY.size + 4 + 2 + (8 if magic == 1 else 0)
    (klen,) = struct.unpack_from(">i", entry, pos)
    pos += 4 + max(klen, 0)
    (vlen,) = struct.unpack_from(">i", entry, pos)
    return entry[pos + 4: pos + 4 + vlen]


def test_lz4_magic0_has_kafkas_broken_header_checksum() -> None:
    """Magic 0 lz4 = KafkaLZ4 frame whose HC covers the magic too: a standard decoder rejects it,
    the old-Kafka path (HC patched) reads it; magic 1 frames are standard."""
    recs = [Record(b"k", b"v" * 100, T0)]
    v0 = _wrapper_value(build_legacy_wrapper(recs, magic=0, base_offset=0, codec=CODEC_LZ4).data)
    v1 = _wrapper_value(build_legacy_wrapper(recs, magic=1, base_offset=0, codec=CODEC_LZ4).data)
    assert v0[:6] == v1[:6] and v0[6] != v1[6]
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(v0)
    lz4.frame.decompress(v1)
    assert lz4.frame.decompress(v0[:6] + v1[6:7] + v0[7:]) == kp_codec.lz4_decode_old_kafka(v0)


@pytest.mark.parametrize("codec", [CODEC_SNAPPY, CODEC_LZ4], ids=CODEC_IDS.get)
def test_kafka_framing_of_snappy_and_lz4(codec: int) -> None:
    """xerial header + 32 KiB snappy chunks; lz4 frame FLG 0x60 / BD 0x40, 64 KiB blocks, end mark."""
    recs = [Record(None, bytes(range(256)) * 400, T0)]
    data = build_v2_batch(recs, base_offset=0, codec=codec).data
    region = data[61:]
    if codec == CODEC_SNAPPY:
        assert region[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
        sizes, pos = [], 16
        while pos < len(region):
            (n,) = struct.unpack_from(">i", region, pos)
            sizes.append(len(cramjam.snappy.decompress_raw(region[pos + 4: pos + 4 + n])))
            pos += 4 + n
        assert sizes[:-1] == [32768] * (len(sizes) - 1) and len(sizes) > 1
    else:
        assert region[:6] == b"\x04\x22\x4d\x18\x60\x40" and region[-4:] == b"\0\0\0\0"
        assert len(lz4.frame.decompress(region)) > 65536


# --- segments and indexes -------------------------------------------------------------------
def _log_batches(path: Path) -> list[tuple[int, int, int, int, object]]:
    """(position, size, base offset, last offset, kafka-python batch) for each complete entry."""
    data = path.read_bytes()
    out, pos = [], 0
    while len(data) - pos > 17:
        _, size = LOG_ENTRY.unpack_from(data, pos)
        if pos + LOG_ENTRY.size + size > len(data):
            break
        chunk = data[pos: pos + LOG_ENTRY.size + size]
        (batch,) = _batches("kafka-python", chunk)
        assert batch.validate_crc()
        if chunk[16] >= 2:
            base, last = batch.base_offset, batch.base_offset + batch.last_offset_delta
        else:
            offsets = [r.offset for r in batch]
            base, last = offsets[0], offsets[-1]
        out.append((pos, LOG_ENTRY.size + size, base, last, batch))
        pos += LOG_ENTRY.size + size
    return out


def _max_ts(batch: object) -> int:
    mt = getattr(batch, "max_timestamp", None)
    if mt is not None:
        return mt
    ts = [r.timestamp for r in batch]  # type: ignore[attr-defined]
    return -1 if ts[0] is None else max(ts)


def _entries(path: Path, entry: struct.Struct) -> list[tuple]:
    data = path.read_bytes()
    return [entry.unpack_from(data, i) for i in range(0, len(data) - len(data) % entry.size, entry.size)]


def _mixed_batches(rng_seed: int, n: int, start: int = 0) -> list[BuiltBatch]:
    import random

    rng = random.Random(rng_seed)
    out, off = [], start
    for i in range(n):
        recs = [Record(b"k", b"x" * rng.randint(10, 1500), T0 + rng.randint(-5000, 5000) + 100 * i)
                for _ in range(rng.randint(1, 5))]
        b = build_v2_batch(recs, base_offset=off, codec=(CODEC_NONE, CODEC_GZIP)[i % 2])
        out.append(b)
        off = b.last_offset + 1
    return out


def _segments(directory: Path) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in directory.glob("*.log"))


@pytest.mark.parametrize("interval", [4096, 1000])
def test_offset_and_time_index_follow_the_broker_rule(tmp_path: Path, interval: int) -> None:
    w = PartitionWriter(tmp_path, segment_bytes=30_000, index_interval_bytes=interval)
    for b in _mixed_batches(1, 120):
        w.append(b)
    w.close()
    bases = _segments(tmp_path)
    assert len(bases) > 3
    for base in bases:
        name = f"{base:020d}"
        batches = _log_batches(tmp_path / f"{name}.log")
        assert batches[0][2] == base
        # Kafka's rule, recomputed: entry before counting the batch when > interval since the last
        expected_offsets, since, max_ts, max_off, expected_times = [], 0, -1, base, []
        for pos, size, _, last, batch in batches:
            if _max_ts(batch) > max_ts:
                max_ts, max_off = _max_ts(batch), last
            if since > interval:
                expected_offsets.append((last - base, pos))
                if not expected_times or max_ts > expected_times[-1][0]:
                    expected_times.append((max_ts, max_off - base))
                since = 0
            since += size
        if not expected_times or max_ts > expected_times[-1][0]:
            expected_times.append((max_ts, max_off - base))  # final entry at roll / close
        index = _entries(tmp_path / f"{name}.index", OFFSET_INDEX_ENTRY)
        tindex = _entries(tmp_path / f"{name}.timeindex", TIME_INDEX_ENTRY)
        assert index == expected_offsets
        assert tindex == expected_times
        starts = {pos: last for pos, _, _, last, _ in batches}
        for rel, pos in index:
            assert pos != 0 and starts[pos] == base + rel       # batch start, carrying its last offset
        positions = [0] + [p for _, p in index]
        assert all(b - a > interval for a, b in itertools.pairwise(positions))
        assert all(b[0] > a[0] and b[1] >= a[1] for a, b in itertools.pairwise(tindex))
        assert tindex[-1][0] == max(_max_ts(b[4]) for b in batches)


def test_per_append_index_variant(tmp_path: Path) -> None:
    """Pre-KAFKA-806: one entry per append, at the append's first batch, carrying its last offset."""
    w = PartitionWriter(tmp_path, index_rule="per-append", index_interval_bytes=2000)
    batches = _mixed_batches(2, 60)
    groups = [batches[i:i + 3] for i in range(0, len(batches), 3)]
    for g in groups:
        w.append(g)
    w.close()
    index = _entries(tmp_path / f"{0:020d}.index", OFFSET_INDEX_ENTRY)
    first_pos, pos, since, expected = {}, 0, 0, []
    for g in groups:
        size = sum(b.size for b in g)
        if since > 2000:
            expected.append((g[-1].last_offset, pos))
            since = 0
        first_pos[pos] = g
        pos += size
        since += size
    assert index == expected and len(index) > 3


def test_roll_by_segment_bytes(tmp_path: Path) -> None:
    w = PartitionWriter(tmp_path, segment_bytes=20_000)
    batches = _mixed_batches(3, 100)
    for b in batches:
        w.append(b)
    w.close()
    bases = _segments(tmp_path)
    sizes = [(tmp_path / f"{b:020d}.log").stat().st_size for b in bases]
    by_base = {b.base_offset: b for b in batches}
    for _base, size, nxt in zip(bases, sizes, bases[1:]):
        assert size <= 20_000
        assert size + by_base[nxt].size > 20_000        # the next batch did not fit
    all_offsets = [r.offset for b in bases for *_, batch in _log_batches(tmp_path / f"{b:020d}.log")
                   for r in batch]
    assert all_offsets == list(range(batches[-1].last_offset + 1))


def test_running_broker_leftovers(tmp_path: Path) -> None:
    """Unclean close: preallocated zero-filled indexes, no final time entry, partial tail batch."""
    w = PartitionWriter(tmp_path, index_interval_bytes=1000)
    batches = _mixed_batches(4, 30)
    for b in batches[:-1]:
        w.append(b)
    tail = batches[-1].data[:40]
    w.close(clean_shutdown=False, preallocate_index_bytes=1000, partial_tail=tail)
    index = (tmp_path / f"{0:020d}.index").read_bytes()
    tindex = (tmp_path / f"{0:020d}.timeindex").read_bytes()
    assert len(index) == 1000 and len(tindex) == 996
    entries = [e for e in _entries(tmp_path / f"{0:020d}.index", OFFSET_INDEX_ENTRY)]
    n = next(i for i, e in enumerate(entries) if i > 0 and e == (0, 0))
    assert n > 1 and set(index[8 * n:]) == {0}
    log = tmp_path / f"{0:020d}.log"
    decoded = _log_batches(log)
    assert len(decoded) == 29
    assert log.stat().st_size == sum(s for _, s, *_ in decoded) + 40
    assert not list(tmp_path.glob("*.snapshot"))


def _txn_log(tmp_path: Path) -> tuple[PartitionWriter, list[BuiltBatch]]:
    w = PartitionWriter(tmp_path, segment_bytes=3000)
    log: list[BuiltBatch] = []
    off, ts = 0, T0

    def data(pid: int, n: int, txn: bool = True) -> None:
        nonlocal off, ts
        ts += 10
        b = build_v2_batch([Record(b"k", b"v" * 200, ts)] * n, base_offset=off, producer_id=pid,
                           producer_epoch=0, base_sequence=off, transactional=txn)
        w.append(b)
        log.append(b)
        off = b.last_offset + 1

    def marker(pid: int, kind: int) -> None:
        nonlocal off, ts
        ts += 10
        b = build_control_batch(kind, base_offset=off, timestamp=ts, producer_id=pid, producer_epoch=0,
                                coordinator_epoch=3)
        w.append(b)
        log.append(b)
        off += 1

    for r in range(4):
        data(1, 2)
        data(2, 3)
        marker(1, CONTROL_ABORT)
        data(3, 1, txn=False)
        data(1, 1)
        marker(2, CONTROL_ABORT if r % 2 else CONTROL_COMMIT)
        marker(1, CONTROL_COMMIT)
    marker(9, CONTROL_ABORT)                  # empty transaction
    data(2, 2)
    for _ in range(8):
        data(3, 2, txn=False)                 # pushes the ABORT into a later segment
    marker(2, CONTROL_ABORT)
    data(4, 2)                                # still open at the end
    w.close()
    return w, log


def test_txnindex_entries_match_abort_markers(tmp_path: Path) -> None:
    _txn_log(tmp_path)
    bases = _segments(tmp_path)
    # replay the decoded log: open txns per producer, ABORT markers that close a non-empty txn
    open_txn: dict[int, int] = {}
    expected: dict[int, list[tuple]] = {b: [] for b in bases}
    for base in bases:
        for _, _, first, last, batch in _log_batches(tmp_path / f"{base:020d}.log"):
            pid = batch.producer_id
            if batch.is_control_batch:
                (rec,) = list(batch)
                _, kind = struct.unpack(">hh", rec.key)
                if pid in open_txn:
                    started = open_txn.pop(pid)
                    if kind == CONTROL_ABORT:
                        others = list(open_txn.values())
                        expected[base].append((0, pid, started, last, min(others) if others else last + 1))
            elif batch.is_transactional and pid not in open_txn:
                open_txn[pid] = first
    spanning = 0
    for base in bases:
        path = tmp_path / f"{base:020d}.txnindex"
        got = _entries(path, TXN_ENTRY) if path.exists() else []
        assert got == expected[base]
        assert path.exists() == bool(expected[base])   # created only when needed
        spanning += sum(1 for e in got if e[2] < base)
    assert spanning >= 1
    assert any(e[4] != e[3] + 1 for es in expected.values() for e in es)  # an LSO held by another txn


def test_producer_snapshots(tmp_path: Path) -> None:
    w, log = _txn_log(tmp_path)
    snaps = sorted(tmp_path.glob("*.snapshot"))
    bases = _segments(tmp_path)
    assert [int(p.name.split(".")[0]) for p in snaps] == [*bases[1:], w.log_end_offset]
    for snap in snaps:
        data = snap.read_bytes()
        version, crc, count = struct.unpack_from(">hIi", data)
        assert version == 1 and crc == crc32c_hw(data[6:]) and len(data) == 10 + 46 * count
        end = int(snap.name.split(".")[0])
        state: dict[int, tuple] = {}
        txn: dict[int, int] = {}
        for b in log:
            if b.last_offset >= end or b.producer_id < 0:
                continue
            prev = state.get(b.producer_id, (b.producer_id, 0, -1, -1, 0, -1, -1, -1))
            if b.control_type is not None:
                txn.pop(b.producer_id, None)
                state[b.producer_id] = (*prev[:5], b.max_timestamp, b.coordinator_epoch, -1)
            else:
                if b.transactional:
                    txn.setdefault(b.producer_id, b.base_offset)
                last_seq = b.base_sequence + b.last_offset - b.base_offset
                state[b.producer_id] = (b.producer_id, 0, last_seq, b.last_offset,
                                        b.last_offset - b.base_offset, b.max_timestamp, prev[6],
                                        txn.get(b.producer_id, -1))
        got = {e[0]: e for e in (SNAPSHOT_ENTRY.unpack_from(data, 10 + 46 * i) for i in range(count))}
        assert got == state


def test_mtimes_are_set_when_asked(tmp_path: Path) -> None:
    w = PartitionWriter(tmp_path, segment_bytes=10_000)
    for b in _mixed_batches(5, 30):
        w.append(b)
    w.close(mtimes={0: T0})
    bases = _segments(tmp_path)
    w.set_mtimes({b: T0 + i * 1000 for i, b in enumerate(bases)})
    for i, b in enumerate(bases):
        assert os.stat(tmp_path / f"{b:020d}.log").st_mtime_ns == (T0 + i * 1000) * 1_000_000


def test_log_dir_text_files(tmp_path: Path) -> None:
    ld = LogDirWriter(tmp_path, node_id=3, cluster_id="S2xhU2FtcGxlc0NsdXN0ZQ", directory_id=b"\x07" * 16)
    w = ld.partition("orders.v1-x", 2, topic_id=bytes(range(16)), segment_bytes=5000)
    for b in _mixed_batches(6, 20):
        w.append(b)
    w.close()
    st = ld.state("orders.v1-x", 2)
    st.high_watermark = w.log_end_offset - 2
    st.log_start_offset = w.segments[1].base_offset + 1
    ld.close(written_at_ms=T0)
    leo = w.log_end_offset
    assert (tmp_path / "replication-offset-checkpoint").read_text() == f"0\n1\norders.v1-x 2 {leo - 2}\n"
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == f"0\n1\norders.v1-x 2 {leo}\n"
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == \
        f"0\n1\norders.v1-x 2 {w.segments[1].base_offset + 1}\n"
    assert (tmp_path / "cleaner-offset-checkpoint").read_text() == "0\n0\n"
    assert (tmp_path / "orders.v1-x-2" / "partition.metadata").read_text() == \
        "version: 0\ntopic_id: AAECAwQFBgcICQoLDA0ODw"
    props = (tmp_path / "meta.properties").read_text().splitlines()
    assert props[0] == "#" and props[1].startswith("#Tue Nov 14 22:13:20 UTC 2023")
    assert dict(line.split("=", 1) for line in props[2:]) == {
        "node.id": "3", "version": "1", "cluster.id": "S2xhU2FtcGxlc0NsdXN0ZQ",
        "directory.id": "BwcHBwcHBwcHBwcHBwcHBw"}
