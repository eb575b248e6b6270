"""`.index` / `.timeindex` parsing, reading rule, sanity checks and lookups (spec §1.8-1.9, §7.3-7.4).

Oracles: the batches of the sibling `.log` walked by a tiny struct reader written here, Kafka's
documented lookup rules re-implemented as linear scans, and Kafka's exception texts.
"""

from __future__ import annotations

import bisect
import io
import struct
from pathlib import Path

import numpy as np
import pyarrow.fs as pafs
import pytest
from conftest import REALDATA  # the root the `realdata` fixture serves
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_format.common.errors import IndexFormatError, KafkaFormatError
from kafka_format.storage.index import (
    NO_TIMESTAMP,
    IndexFileReader,
    base_offset_from_name,
    parse_offset_index,
    parse_time_index,
    read_offset_index,
    read_time_index,
)


def _realdata_index_files() -> list[Path]:
    if not REALDATA.is_dir():
        return []
    return sorted(p for p in REALDATA.rglob("*.index") if p.stat().st_size > 0)


def walk_log(path: Path) -> list[tuple[int, int, int, int]]:
    """(position, baseOffset, lastOffset, maxTimestamp) of each complete batch: test-local reader."""
    data = path.read_bytes()
    pos, out = 0, []
    while len(data) - pos > 17:
        offset, size = struct.unpack_from(">qi", data, pos)
        if pos + 12 + size > len(data):
            break
        magic = data[pos + 16]
        if magic >= 2:
            (delta,) = struct.unpack_from(">i", data, pos + 23)
            (max_ts,) = struct.unpack_from(">q", data, pos + 35)
            out.append((pos, offset, offset + delta, max_ts))
        else:
            ts = struct.unpack_from(">q", data, pos + 22)[0] if magic == 1 else -1
            out.append((pos, offset, offset, ts))
        pos += 12 + size
    return out


def offset_bytes(entries: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">ii", r, p) for r, p in entries)


def time_bytes(entries: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">qi", t, r) for t, r in entries)


# --- real broker files ---------------------------------------------------------------------------

@pytest.mark.realdata
@pytest.mark.parametrize("index_path", _realdata_index_files(), ids=lambda p: str(p.relative_to(REALDATA)))
def test_real_index_entries_point_at_batches(realdata: Path, index_path: Path) -> None:
    """Every valid entry's position is a batch start and its offset that batch's last offset."""
    idx = read_offset_index(str(index_path))
    assert idx.base_offset == int(index_path.name.split(".")[0])
    assert idx.anomalies == ()
    assert idx.raw_entries == index_path.stat().st_size // 8
    assert idx.valid_entries > 0
    log = index_path.with_suffix(".log")
    if not log.exists():
        pytest.skip("sibling .log missing from the snapshot")
    batches = walk_log(log)
    by_pos = {pos: last for pos, _, last, _ in batches}
    for off, pos in zip(idx.offsets.tolist(), idx.positions.tolist(), strict=True):
        assert by_pos.get(pos) == off, (off, pos)
    assert idx.sanity_check().ok


@pytest.mark.realdata
@pytest.mark.parametrize("index_path", _realdata_index_files(), ids=lambda p: str(p.relative_to(REALDATA)))
def test_real_time_index_matches_log(realdata: Path, index_path: Path) -> None:
    """Last entry = segment max timestamp (closed segments); every entry's offset lies in a batch whose
    maxTimestamp is that timestamp (spec §1.9, §7.4: the batch's last offset since KAFKA-16310, the record's
    own offset in segments written by older leaders)."""
    tpath = index_path.with_suffix(".timeindex")
    log = index_path.with_suffix(".log")
    if not tpath.exists() or not log.exists():
        pytest.skip("sibling files missing from the snapshot")
    ti = read_time_index(str(tpath))
    assert ti.anomalies == () and ti.sanity_check().ok
    batches = walk_log(log)
    assert ti.last_entry().timestamp == max(b[3] for b in batches)
    bases = [b[1] for b in batches]
    for ts, off in zip(ti.timestamps.tolist(), ti.offsets.tolist(), strict=True):
        holding = batches[bisect.bisect_right(bases, off) - 1]
        assert holding[1] <= off <= holding[2] and holding[3] == ts, (ts, off)


@pytest.mark.realdata
def test_every_real_index_file_parses(realdata: Path) -> None:
    files = sorted(realdata.rglob("*.index")) + sorted(realdata.rglob("*.timeindex"))
    assert len(files) >= 900
    for f in files:
        parsed = read_offset_index(str(f)) if f.suffix == ".index" else read_time_index(str(f))
        assert parsed.anomalies == ()
        assert parsed.sanity_check().ok


@pytest.mark.realdata
def test_lookup_against_linear_scan_on_real_index(realdata: Path) -> None:
    files = _realdata_index_files()
    assert files
    rng = np.random.default_rng(7)
    for f in files[:20]:
        idx = read_offset_index(str(f))
        entries = list(zip(idx.offsets.tolist(), idx.positions.tolist(), strict=True))
        hi = entries[-1][0] + 5
        for target in [idx.base_offset - 1, idx.base_offset, *rng.integers(idx.base_offset, hi, 30).tolist()]:
            expected = (idx.base_offset, 0)
            for off, pos in entries:  # Kafka's rule: greatest entry offset <= target, else (base, 0)
                if off <= target:
                    expected = (off, pos)
            assert tuple(idx.lookup(int(target))) == expected
            with open(f, "rb") as fh:
                assert tuple(IndexFileReader(fh, idx.base_offset).lookup(int(target))) == expected


# --- the reading rule on synthetic files --------------------------------------------------------

def test_preallocated_zero_tail() -> None:
    """A 10 MiB preallocated index with 3 entries: 3 valid, zero tail, broker sanity check passes."""
    size = 10 * 1024 * 1024
    data = bytearray(size)
    data[:24] = offset_bytes([(10, 4200), (25, 8400), (40, 12700)])
    idx = parse_offset_index(bytes(data), 1000)
    assert idx.raw_entries == size // 8
    assert idx.valid_entries == 3 and idx.zero_tail and idx.anomalies == ()
    assert idx.offsets.tolist() == [1010, 1025, 1040]
    assert idx.lookup(10**9) == (1040, 12700)
    assert idx.sanity_check().ok  # last raw slot is (0, 0): offset == base passes (spec §1.8)


def test_time_index_zero_tail_fails_broker_sanity_check() -> None:
    data = time_bytes([(1000, 5), (2000, 9)]) + bytes(12 * 100)
    ti = parse_time_index(data, 50, path="/x/00000000000000000050.timeindex")
    assert ti.valid_entries == 2 and ti.zero_tail and ti.anomalies == ()
    res = ti.sanity_check()
    assert not res.ok
    assert res.message == (
        "Corrupt time index found, time index file (/x/00000000000000000050.timeindex) has "
        "non-zero size but the last timestamp is 0 which is less than the first timestamp 1000")


def test_all_zero_index_is_empty() -> None:
    idx = parse_offset_index(bytes(8 * 16), 0)
    assert idx.valid_entries == 0 and idx.zero_tail
    assert idx.lookup(5) == (0, 0)
    assert idx.last_entry() == (0, 0)
    ti = parse_time_index(bytes(12 * 4), 7)
    assert ti.valid_entries == 0 and ti.lookup(10**12) == (NO_TIMESTAMP, 7)


@pytest.mark.parametrize(
    ("entries", "cut", "what"),
    [
        ([(5, 100), (9, 200), (7, 300), (12, 400)], 2, "offset_not_increasing"),
        ([(5, 100), (9, 200), (9, 300)], 2, "offset_not_increasing"),
        ([(5, 100), (9, 200), (12, 150)], 2, "position_not_increasing"),
        ([(5, 100), (9, 200), (12, 200)], 2, "position_not_increasing"),
        ([(0, 100), (9, 200)], 0, "bad_first_entry"),
        ([(5, 0), (9, 200)], 0, "bad_first_entry"),
        ([(-3, 100)], 0, "bad_first_entry"),
    ],
)
def test_non_monotonic_offset_index_is_cut_and_flagged(entries: list[tuple[int, int]], cut: int,
                                                       what: str) -> None:
    idx = parse_offset_index(offset_bytes(entries), 100)
    assert idx.valid_entries == cut and not idx.zero_tail
    assert [a.what for a in idx.anomalies] == [what]
    assert idx.anomalies[0].position == cut * 8 and idx.anomalies[0].entry == cut


def test_position_past_log_end_is_flagged() -> None:
    idx = parse_offset_index(offset_bytes([(5, 100), (9, 5000)]), 0, log_size=4096)
    assert idx.valid_entries == 1
    assert idx.anomalies[0].what == "position_past_log_end" and idx.anomalies[0].position == 8


def test_data_after_zero_entry_is_flagged() -> None:
    data = offset_bytes([(5, 100), (0, 0), (0, 0), (9, 300)])
    idx = parse_offset_index(data, 0)
    assert idx.valid_entries == 1 and idx.zero_tail
    assert [(a.what, a.entry, a.position) for a in idx.anomalies] == [("data_after_zero_tail", 3, 24)]


@pytest.mark.parametrize(
    ("entries", "cut", "what"),
    [
        ([(100, 1), (200, 3), (150, 5)], 2, "timestamp_not_increasing"),
        ([(100, 1), (200, 3), (200, 5)], 2, "timestamp_not_increasing"),
        ([(100, 4), (200, 3)], 1, "offset_decreasing"),
        ([(-5, 1)], 0, "negative_entry"),
    ],
)
def test_non_monotonic_time_index_is_cut_and_flagged(entries: list[tuple[int, int]], cut: int,
                                                     what: str) -> None:
    ti = parse_time_index(time_bytes(entries), 0)
    assert ti.valid_entries == cut
    assert [a.what for a in ti.anomalies] == [what]
    assert ti.anomalies[0].position == cut * 12


def test_time_index_first_entry_may_have_relative_offset_zero() -> None:
    """(T, base) at i == 0 is legal: the segment's first batch carried the max timestamp."""
    ti = parse_time_index(time_bytes([(1700, 0), (1800, 4)]), 20)
    assert ti.valid_entries == 2
    assert ti.lookup(1750) == (1700, 20)
    assert ti.lookup(1699) == (NO_TIMESTAMP, 20)
    assert ti.lookup(10**13) == (1800, 24)


def test_truncated_entries() -> None:
    data = offset_bytes([(5, 100), (9, 200)]) + b"\x00\x00\x00"
    idx = parse_offset_index(data, 0, path="/d/00000000000000000000.index")
    assert idx.valid_entries == 2 and idx.trailing_bytes == 3
    assert [(a.what, a.position) for a in idx.anomalies] == [("partial_entry", 16)]
    res = idx.sanity_check()
    assert not res.ok
    assert res.message == ("Index file /d/00000000000000000000.index is corrupt, found 19 bytes which is "
                           "neither positive nor a multiple of 8")
    ti = parse_time_index(time_bytes([(5, 1)]) + b"\x01", 0, path="/d/00000000000000000000.timeindex")
    assert ti.sanity_check().message == (
        "Time index file /d/00000000000000000000.timeindex is corrupt, found 13 "
        "bytes which is neither positive nor a multiple of 12")


def test_offset_sanity_check_last_offset_below_base() -> None:
    idx = parse_offset_index(offset_bytes([(5, 100), (-2, 200)]), 50, path="/d/00000000000000000050.index")
    res = idx.sanity_check()
    assert res.message == (
        "Corrupt index found, index file /d/00000000000000000050.index has non-zero size but "
        "the last offset is 48 which is less than the base offset 50")
    ti = parse_time_index(time_bytes([(5, 1), (9, -1)]), 50, path="/d/t.timeindex")
    assert ti.sanity_check().message == (
        "Corrupt time index found, time index file (/d/t.timeindex) has non-zero size but the last "
        "offset is 49 which is less than the first offset 50")


def test_broker_lookup_over_zero_tail_and_dump_entries() -> None:
    """Kafka's search runs over every raw slot: with a zero tail, target 15 lands on the last zero slot
    (lo moves right past keys 10, 0, 0 < 15), answering (base, 0); the reading rule answers (10, 100).
    kafka-dump-log visits slots until offset == base at i > 0."""
    idx = parse_offset_index(offset_bytes([(10, 100), (20, 200), (0, 0), (0, 0)]), 0)
    assert idx.broker_lookup(15) == (0, 0)
    assert idx.lookup(15) == (10, 100)
    assert idx.broker_lookup(5) == (0, 0)  # keys[0] = 10 > 5: -1 -> (base, 0)
    assert idx.dump_entries() == [(10, 100), (20, 200)]
    ti = parse_time_index(time_bytes([(500, 3), (900, 8)]) + bytes(24), 40)
    assert ti.dump_entries() == [(500, 43), (900, 48)]
    assert ti.lookup(950) == (900, 48)
    assert ti.broker_lookup(950) == (0, 40)  # keys 500, 900, 0, 0: the search ends on the last zero slot
    assert parse_offset_index(offset_bytes([(0, 0), (0, 0)]), 9).dump_entries() == [(9, 0)]


@pytest.mark.realdata
def test_broker_lookup_equals_lookup_on_real_indexes(realdata: Path) -> None:
    rng = np.random.default_rng(11)
    for f in _realdata_index_files():
        idx = read_offset_index(str(f))
        assert idx.dump_entries() == [idx.entry(i) for i in range(len(idx))]
        for target in rng.integers(idx.base_offset - 2, int(idx.offsets[-1]) + 3, 10).tolist():
            assert idx.broker_lookup(int(target)) == idx.lookup(int(target))
        ti = read_time_index(str(f.with_suffix(".timeindex")))
        if len(ti):
            for target in rng.integers(int(ti.timestamps[0]) - 5, int(ti.timestamps[-1]) + 5, 10).tolist():
                assert ti.broker_lookup(int(target)) == ti.lookup(int(target))


def test_fetch_upper_bound_offset() -> None:
    idx = parse_offset_index(offset_bytes([(5, 100), (9, 200), (12, 300)]), 0)
    assert idx.fetch_upper_bound_offset(150) == (9, 200)
    assert idx.fetch_upper_bound_offset(200) == (9, 200)
    assert idx.fetch_upper_bound_offset(301) is None


# --- big files: O(log n) reads ------------------------------------------------------------------

def test_index_file_reader_reads_log_n_entries(tmp_path: Path) -> None:
    n = 100_000
    rel = np.arange(1, n + 1, dtype=">i4") * 3
    pos = np.arange(1, n + 1, dtype=">i4") * 4100
    arr = np.empty(n, dtype=[("r", ">i4"), ("p", ">i4")])
    arr["r"], arr["p"] = rel, pos
    path = tmp_path / "00000000000000000500.index"
    path.write_bytes(arr.tobytes() + bytes(8 * 30_000))  # preallocated tail
    with pafs.LocalFileSystem().open_input_file(str(path)) as f:
        reader = IndexFileReader(f, 500)
        assert reader.find_end() == n
        bound = int(np.ceil(np.log2(n + 30_000))) + 2
        assert reader.reads <= bound
        before = reader.reads
        assert reader.lookup(500 + 3 * 777 + 1) == (500 + 3 * 777, 777 * 4100)
        assert reader.reads - before <= bound
        assert reader.lookup(10) == (500, 0)
        assert reader.lookup(500 + 3 * n + 50) == (500 + 3 * n, n * 4100)
    ti_arr = np.empty(n, dtype=[("t", ">i8"), ("r", ">i4")])
    ti_arr["t"] = np.arange(n, dtype=np.int64) * 10 + 1_000
    ti_arr["r"] = np.arange(n, dtype=np.int64)
    with io.BytesIO(ti_arr.tobytes()) as fh:
        reader = IndexFileReader(fh, 0, kind="time")
        assert reader.lookup(1_000 + 10 * 500 + 5) == (6_000, 500)
        assert reader.lookup(999) == (NO_TIMESTAMP, 0)


# --- sources: paths, file:// URIs, non-local filesystems, Python files ---------------------------

def test_read_from_uri_and_mock_filesystem(tmp_path: Path) -> None:
    data = offset_bytes([(5, 100), (9, 200)])
    path = tmp_path / "00000000000000000042.index"
    path.write_bytes(data)
    by_uri = read_offset_index(path.as_uri())
    assert by_uri.base_offset == 42 and by_uri.offsets.tolist() == [47, 51]
    mock = pafs._MockFileSystem()
    mock.create_dir("bucket/t-0")
    with mock.open_output_stream("bucket/t-0/00000000000000000042.index") as out:
        out.write(data)
    on_mock = read_offset_index("bucket/t-0/00000000000000000042.index", filesystem=mock)
    assert on_mock.offsets.tolist() == [47, 51]
    sub = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    assert read_offset_index("00000000000000000042.index", filesystem=sub).lookup(50) == (47, 100)
    with open(path, "rb") as fh:
        assert read_offset_index(fh).base_offset == 42
    assert read_offset_index(io.BytesIO(data), 7).offsets.tolist() == [12, 16]


def test_unnamed_source_needs_base_offset() -> None:
    with pytest.raises(IndexFormatError):
        read_offset_index(io.BytesIO(b""))


def test_missing_file_is_a_kafka_format_error(tmp_path: Path) -> None:
    with pytest.raises(KafkaFormatError) as err:
        read_time_index(str(tmp_path / "00000000000000000000.timeindex"))
    assert err.value.path is not None and "00000000000000000000.timeindex" in err.value.path


def test_base_offset_from_name() -> None:
    assert base_offset_from_name("/a/b/00000000000000001234.index") == 1234
    assert base_offset_from_name("00000000000000000007.log.swap") == 7
    with pytest.raises(IndexFormatError):
        base_offset_from_name("leader-epoch-checkpoint")
    with pytest.raises(IndexFormatError):
        base_offset_from_name("99999999999999999999.index")  # > Long.MAX: parseLong throws


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.integers(min_value=0, max_value=2**40))
def test_any_bytes_parse_without_foreign_exceptions(data: bytes, base: int) -> None:
    idx = parse_offset_index(data, base)
    ti = parse_time_index(data, base)
    for parsed, size in ((idx, 8), (ti, 12)):
        assert parsed.valid_entries <= len(data) // size
        parsed.sanity_check()
    if idx.valid_entries:
        assert np.all(np.diff(idx.offsets) > 0) and np.all(np.diff(idx.positions) > 0)
    if ti.valid_entries:
        assert np.all(np.diff(ti.timestamps) > 0)
    idx.lookup(base + 10)
    ti.lookup(1000)
