"""Producer-state `.snapshot` files (spec §1.6, §7.5).

Oracles: the `crc32c` package over bytes 6..end, the v2 batch headers of the partition's `.log`
files read with `struct` here (the producer's last batch must be in the log), bytes packed field by
field here, and Kafka's messages / expiry rule.
"""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c as crc32c_pkg
import pyarrow.fs as pafs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_format.common.errors import KafkaFormatError, SnapshotFormatError
from kafka_format.storage.snapshot import (
    ProducerSnapshotEntry,
    encode_producer_snapshot,
    is_producer_expired,
    parse_producer_snapshot,
    read_producer_snapshot,
)


def v2_headers(log: Path) -> list[dict[str, int]]:
    """Header fields of every v2 batch of a .log (test-local reader)."""
    data = log.read_bytes()
    pos, out = 0, []
    while len(data) - pos > 17:
        base, size = struct.unpack_from(">qi", data, pos)
        if pos + 12 + size > len(data):
            break
        if data[pos + 16] >= 2:
            delta, _bts, max_ts, pid, epoch, seq = struct.unpack_from(">iqqqhi", data, pos + 23)
            out.append({"last": base + delta, "delta": delta, "max_ts": max_ts, "pid": pid, "epoch": epoch,
                        "last_seq": -1 if seq == -1 else (seq + delta) % (1 << 31)})
        pos += 12 + size
    return out


def raw_entry(pid: int, epoch: int, last_seq: int, last_off: int, delta: int, ts: int, coord: int,
              txn: int) -> bytes:
    return (struct.pack(">q", pid) + struct.pack(">h", epoch) + struct.pack(">i", last_seq)
            + struct.pack(">q", last_off) + struct.pack(">i", delta) + struct.pack(">q", ts)
            + struct.pack(">i", coord) + struct.pack(">q", txn))


def raw_snapshot(entries: list[bytes], *, version: int = 1, count: int | None = None, crc: int | None = None,
                 extra: bytes = b"") -> bytes:
    body = struct.pack(">i", len(entries) if count is None else count) + b"".join(entries) + extra
    stored = crc32c_pkg.crc32c(body) if crc is None else crc
    return struct.pack(">h", version) + struct.pack(">I", stored) + body


# --- real broker files ---------------------------------------------------------------------------

@pytest.mark.realdata
def test_every_real_snapshot_parses_and_matches_its_log(realdata: Path) -> None:
    snaps = sorted(realdata.rglob("*.snapshot"))
    assert len(snaps) >= 150
    checked = 0
    for path in snaps:
        data = path.read_bytes()
        snap = read_producer_snapshot(str(path))
        assert snap.version == 1 and snap.offset == int(path.name.split(".")[0])
        assert snap.crc == crc32c_pkg.crc32c(data[6:])
        assert 10 + 46 * len(snap.entries) == len(data)
        batches = [b for log in sorted(path.parent.glob("*.log")) for b in v2_headers(log)]
        by_last = {b["last"]: b for b in batches}
        for e in snap.entries:
            assert e.last_offset < snap.offset  # the snapshot covers offsets below its name
            b = by_last.get(e.last_offset)
            if b is None:
                continue  # batch no longer in the copied log (cleaned or deleted)
            assert (b["pid"], b["epoch"], b["last_seq"], b["delta"]) == (
                e.producer_id, e.epoch, e.last_sequence, e.offset_delta)
            # lastTimestamp: the batch's max timestamp, or later when a txn marker came after it
            assert e.timestamp >= b["max_ts"]
            checked += 1
    assert checked >= 20


@pytest.mark.realdata
def test_real_snapshot_dump_line(realdata: Path) -> None:
    path = realdata / "DonaldY__kafka-2.7.1/kafka-logs/myTopic-0/00000000000000000038.snapshot"
    snap = read_producer_snapshot(str(path))
    assert snap.entries[0].dump_line() == (
        "producerId: 4001 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 1670068129797 firstSequence: 9 lastSequence: 11 lastOffset: 11 offsetDelta: 2 "
        "timestamp: 1670068129797")


# --- synthetic files -----------------------------------------------------------------------------

def test_parse_synthetic_snapshot() -> None:
    data = raw_snapshot([raw_entry(5, 2, 10, 99, 3, 1_700_000_000_000, 4, 90),
                         raw_entry(6, 0, 0, -1, 0, 12, -1, -1)])
    snap = parse_producer_snapshot(data, offset=100)
    a, b = snap.entries
    assert (a.producer_id, a.epoch, a.last_sequence, a.last_offset, a.offset_delta, a.timestamp,
            a.coordinator_epoch, a.current_txn_first_offset) == (5, 2, 10, 99, 3, 1_700_000_000_000, 4, 90)
    assert a.has_open_txn and a.first_sequence == 7 and a.first_offset == 96
    assert not b.has_batch_metadata
    assert b.dump_line() == ("producerId: 6 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
                             "OptionalLong.empty lastTimestamp: 12 ")
    assert encode_producer_snapshot(list(snap.entries)) == data


def test_first_sequence_wraps() -> None:
    e = ProducerSnapshotEntry(1, 0, 2, 10, 5, 0, -1, -1)
    assert e.first_sequence == (1 << 31) - 3  # DefaultRecordBatch.decrementSequence


def test_bad_crc() -> None:
    good = raw_snapshot([raw_entry(1, 0, 0, 0, 0, 5, -1, -1)])
    bad = bytearray(good)
    bad[-1] ^= 1
    with pytest.raises(SnapshotFormatError) as err:
        parse_producer_snapshot(bytes(bad), path="/p/00000000000000000001.snapshot")
    stored = struct.unpack_from(">I", good, 2)[0]
    computed = crc32c_pkg.crc32c(bytes(bad[6:]))
    assert err.value.reason == (f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. "
                                f"Computed crc: {computed}")
    assert err.value.position == 2
    assert parse_producer_snapshot(bytes(bad), verify_crc=False).entries[0].current_txn_first_offset == -2


@pytest.mark.parametrize("version", [0, 2, -1])
def test_bad_version(version: int) -> None:
    with pytest.raises(SnapshotFormatError) as err:
        parse_producer_snapshot(raw_snapshot([], version=version))
    assert f"unknown file version {version}" in err.value.reason and err.value.position == 0


@pytest.mark.parametrize(
    ("data", "position"),
    [
        (b"", 0),
        (b"\x00", 0),
        (b"\x00\x01\x00\x00", 2),
        (raw_snapshot([raw_entry(1, 0, 0, 0, 0, 0, 0, 0)], count=-1), 6),
        (raw_snapshot([raw_entry(1, 0, 0, 0, 0, 0, 0, 0)], count=47), 6),  # > remaining bytes (46)
        (raw_snapshot([raw_entry(1, 0, 0, 0, 0, 0, 0, 0)], count=2), 56),  # 2 entries need 92 bytes
        (raw_snapshot([raw_entry(1, 0, 0, 0, 0, 0, 0, 0)[:30]], count=1), 10),
    ],
)
def test_structure_errors(data: bytes, position: int) -> None:
    with pytest.raises(SnapshotFormatError) as err:
        parse_producer_snapshot(data)
    assert err.value.position == position


def test_trailing_bytes_covered_by_crc_are_accepted() -> None:
    """Kafka's generated reader does not check for bytes after the array; the CRC covers them."""
    snap = parse_producer_snapshot(raw_snapshot([raw_entry(1, 0, 0, 0, 0, 0, 0, -1)], extra=b"xyz"))
    assert len(snap.entries) == 1 and snap.trailing_bytes == 3


def test_expiry_rule() -> None:
    day = 86_400_000
    idle = ProducerSnapshotEntry(1, 0, 0, 5, 0, 1_000, -1, -1)
    in_txn = ProducerSnapshotEntry(2, 0, 0, 5, 0, 1_000, -1, 3)
    assert not is_producer_expired(idle, 1_000 + day - 1)
    assert is_producer_expired(idle, 1_000 + day)  # >= expiration
    assert not is_producer_expired(in_txn, 1_000 + 10 * day)  # open txn never expires
    assert is_producer_expired(idle, 1_000 + 60_000, producer_id_expiration_ms=60_000)
    snap = parse_producer_snapshot(encode_producer_snapshot([idle, in_txn]))
    assert snap.live_entries(1_000 + day) == (in_txn,)


def test_read_from_uri_and_mock(tmp_path: Path) -> None:
    data = raw_snapshot([raw_entry(3, 1, 4, 20, 0, 9, -1, -1)])
    p = tmp_path / "00000000000000000021.snapshot"
    p.write_bytes(data)
    assert read_producer_snapshot(p.as_uri()).offset == 21
    mock = pafs._MockFileSystem()
    mock.create_dir("b")
    with mock.open_output_stream("b/00000000000000000021.snapshot") as out:
        out.write(data)
    on_mock = read_producer_snapshot("b/00000000000000000021.snapshot", filesystem=mock)
    assert on_mock.entries[0].producer_id == 3


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_only_snapshot_errors(data: bytes) -> None:
    for blob in (data, b"\x00\x01" + data):
        try:
            parse_producer_snapshot(blob, verify_crc=False)
        except KafkaFormatError as err:
            assert isinstance(err, SnapshotFormatError)
