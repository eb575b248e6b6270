"""`.txnindex` entries and the aborted-transaction search (spec §1.7, §7.5).

Oracles: entries packed here with `struct` field by field, and fetch scenarios worked out by hand
from Kafka's documented rule (take lastOffset >= from && firstOffset < to; stop after an entry
with lastStableOffset >= to).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow.fs as pafs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_format.common.errors import IndexFormatError, KafkaFormatError
from kafka_format.storage.logdir import open_log_dirs
from kafka_format.storage.txnindex import (
    ABORTED_TXN_SIZE,
    AbortedTxn,
    TransactionIndex,
    collect_aborted_txns,
    encode_aborted_txn,
    parse_transaction_index,
    read_transaction_index,
)


def entry(pid: int, first: int, last: int, lso: int, version: bytes = b"\x00\x00") -> bytes:
    return (version + struct.pack(">q", pid) + struct.pack(">q", first) + struct.pack(">q", last)
            + struct.pack(">q", lso))


def test_entry_size_is_34() -> None:
    assert ABORTED_TXN_SIZE == 34 == len(entry(1, 2, 3, 4))


def test_parse_entries_and_positions() -> None:
    data = entry(7, 100, 105, 106) + entry(8, 103, 110, 111)
    idx = parse_transaction_index(data, 100)
    got = [(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset, t.position)
           for t in idx.entries]
    assert got == [(7, 100, 105, 106, 0), (8, 103, 110, 111, 34)]
    assert idx.anomalies == () and idx.sanity_check().ok
    assert encode_aborted_txn(idx.entries[1]) == entry(8, 103, 110, 111)
    assert idx.entries[0].dump_line() == (
        "version: 0 producerId: 7 firstOffset: 100 lastOffset: 105 lastStableOffset: 106")


@pytest.mark.parametrize("extra", [1, 17, 33])
def test_trailing_partial_entry_is_ignored(extra: int) -> None:
    idx = parse_transaction_index(entry(1, 0, 5, 6) + b"\x07" * extra, 0)
    assert len(idx.entries) == 1 and idx.trailing_bytes == extra
    assert [a.what for a in idx.anomalies] == ["partial_entry"]


def test_version_quirk_only_first_byte_is_read() -> None:
    """AbortedTxn.version() is buffer.get(0): 0x0001 reads as 0 (accepted), 0xFF.. as -1 (accepted)."""
    idx = parse_transaction_index(entry(1, 0, 5, 6, b"\x00\x01") + entry(2, 6, 9, 10, b"\xff\x00"), 0)
    assert [t.version for t in idx.entries] == [0, -1]


def test_version_above_current_is_an_error() -> None:
    data = entry(1, 0, 5, 6) + entry(2, 6, 9, 10, b"\x01\x00")
    with pytest.raises(IndexFormatError) as err:
        parse_transaction_index(data, 0, path="/p/00000000000000000000.txnindex")
    assert err.value.position == 34
    assert "Unexpected aborted transaction version 1" in err.value.reason


def test_sanity_check_message() -> None:
    idx = parse_transaction_index(entry(3, 10, 40, 41), 50, path="/p/00000000000000000050.txnindex")
    res = idx.sanity_check()
    assert not res.ok
    assert res.message == (
        "Last offset of aborted transaction AbortedTxn(version=0, producerId=3, firstOffset=10, "
        "lastOffset=40, lastStableOffset=41) in index /p/00000000000000000050.txnindex is less than "
        "start offset 50")


def test_non_increasing_last_offsets_flagged() -> None:
    idx = parse_transaction_index(entry(1, 0, 9, 10) + entry(2, 3, 9, 10), 0)
    assert [(a.what, a.position) for a in idx.anomalies] == [("last_offset_not_increasing", 34)]


def _segments() -> list[TransactionIndex]:
    # segment 0: txn A [0..20] aborted, LSO after it 21 (no other open txn)
    # segment 100: txn B [90..130] (data starts in segment 0), LSO after = 95 because txn C
    #              (first 95) was open; txn C [95..150] aborted, LSO after = 151
    # segment 200: none; segment 300: txn D [305..320], LSO 321
    return [
        parse_transaction_index(entry(1, 0, 20, 21), 0),
        parse_transaction_index(entry(2, 90, 130, 95) + entry(3, 95, 150, 151), 100),
        TransactionIndex(base_offset=200),
        parse_transaction_index(entry(4, 305, 320, 321), 300),
    ]


@pytest.mark.parametrize(
    ("start", "end", "pids", "complete"),
    [
        (0, 10, [1], True),           # A overlaps; A's LSO 21 >= 10 stops the search
        (21, 95, [2], True),          # segment 0: A ends before 21 (LSO 21 < 95); B taken, LSO 95 stops
        (25, 96, [2, 3], True),       # B taken, LSO 95 < 96 continues; C taken (first 95 < 96), LSO 151 stops
        (120, 140, [2, 3], True),     # starts in segment 100
        (151, 310, [4], True),        # segment 100: nothing >= 151; 200 empty; D overlaps, LSO 321 >= 310
        (330, 400, [], False),        # nothing left
    ],
)
def test_collect_aborted_txns(start: int, end: int, pids: list[int], complete: bool) -> None:
    res = collect_aborted_txns(_segments(), start, end)
    assert [t.producer_id for t in res.aborted] == pids
    assert res.complete is complete


def test_collect_aborted_txns_order_independent_and_empty() -> None:
    forward = collect_aborted_txns(_segments(), 120, 140)
    assert collect_aborted_txns(list(reversed(_segments())), 120, 140) == forward
    assert collect_aborted_txns([], 0, 10).aborted == ()


def test_read_from_file_uri_and_mock(tmp_path: Path) -> None:
    data = entry(9, 5, 8, 9)
    p = tmp_path / "00000000000000000005.txnindex"
    p.write_bytes(data)
    assert read_transaction_index(p.as_uri()).entries[0] == AbortedTxn(9, 5, 8, 9, 0, 0)
    mock = pafs._MockFileSystem()
    mock.create_dir("b")
    with mock.open_output_stream("b/00000000000000000005.txnindex") as out:
        out.write(data)
    got = read_transaction_index("b/00000000000000000005.txnindex", filesystem=mock)
    assert got.base_offset == 5 and got.entries[0].producer_id == 9


@pytest.mark.realdata
def test_real_segments_have_no_txnindex(realdata: Path) -> None:
    """The real sets hold no .txnindex (MANIFEST): every segment reads as an empty index."""
    assert not list(realdata.rglob("*.txnindex"))
    for name in ("Danielowo2000__BigDataTechnologies-Version-2",
                 "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions"):
        for part in open_log_dirs(realdata / name).all_partitions():
            for seg in part.segments:
                assert len(part.txn_index(seg)) == 0


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_only_kafka_errors(data: bytes) -> None:
    try:
        idx = parse_transaction_index(data, 0)
    except KafkaFormatError:
        return
    assert len(idx.entries) == len(data) // 34
    collect_aborted_txns([idx], 0, 100)
