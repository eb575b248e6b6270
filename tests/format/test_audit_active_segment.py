"""The audit on the newest segment's preallocated indexes: a running broker's log dir (or a copy of it)
against the same files where Kafka does not expect them, and against real damage.

A running broker preallocates the active segment's ``.index`` and ``.timeindex`` (``AbstractIndex``:
``segment.index.bytes`` rounded down to whole slots, zero past the entries) and trims them when the
segment rolls or the log closes.  ``TimeIndex.sanityCheck`` reads the last slot, a zero one, and calls
such a file corrupt (``kafka-dump-log --index-sanity-check``); the broker never runs it there: without
``.kafka_cleanshutdown`` it recovers the newest segment on start (``LogLoader.recoverLog``), and it
always recovers the KRaft metadata log (``KafkaMetadataLog``: ``lastShutdownClean=false``).

Oracles, independent of the code under test: the index bytes read here with ``struct`` (entries before
the first zero slot, the last slot as ``AbstractIndex`` sees it on open, the broker's sanity rule
written out below), and the positions of the bytes each damage test changes.  The log dirs are written
by :mod:`kafka_format.writer` with the broker's index rules, the active segment closed as a running
broker leaves it (no final time-index entry, indexes preallocated).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from kafka_format.log.audit.auditor import audit_log_dir, audit_partition_report
from kafka_format.storage.logdir import open_log_dirs
from kafka_format.writer import LogDirWriter, Record, build_v2_batch

T0 = 1_700_000_000_000
CLUSTER = "lPYFHgiMRCCP6htzZKQZVw"
INDEX_BYTES = 4096                    # segment.index.bytes of the harness's topics
TIME_SLOT = struct.Struct(">qi")      # TimeIndex: timestamp int64, relative offset int32
OFFSET_SLOT = struct.Struct(">ii")    # OffsetIndex: relative offset int32, position int32


def write_log_dir(root: Path, *, clean_shutdown: bool, topic: str = "orders", batches: int = 90,
                  segment_bytes: int = 6000) -> Path:
    """A log dir with one partition of several segments whose active segment is left as a running
    broker leaves it; ``clean_shutdown``: the log dir also has ``.kafka_cleanshutdown``.  Returns the
    partition dir."""
    ld = LogDirWriter(root / "broker-1", node_id=1, cluster_id=CLUSTER, broker_epoch=12)
    w = ld.partition(topic, 0, topic_id=bytes(range(1, 17)), segment_bytes=segment_bytes,
                     segment_index_bytes=INDEX_BYTES, index_interval_bytes=256)
    offset = 0
    for i in range(batches):
        b = build_v2_batch([Record(f"k{i % 7}".encode(), b"v" * (60 + i % 40), T0 + 10 * i)] * 2,
                           base_offset=offset)
        w.append(b)
        offset = b.last_offset + 1
    w.close(clean_shutdown=False, preallocate_index_bytes=INDEX_BYTES)
    ld.close(written_at_ms=T0 + 10 * batches, clean_shutdown=clean_shutdown)
    return root / "broker-1" / f"{topic}-0"


def newest(partition_dir: Path, suffix: str) -> Path:
    return sorted(partition_dir.glob(f"*{suffix}"))[-1]


def time_slots(path: Path) -> list[tuple[int, int]]:
    data = path.read_bytes()
    return [TIME_SLOT.unpack_from(data, i) for i in range(0, len(data) - len(data) % 12, 12)]


def entries_before_zero(slots: list[tuple[int, int]]) -> int:
    """Slots before the first all-zero one (what the broker wrote into a preallocated file)."""
    return next((i for i, s in enumerate(slots) if s == (0, 0)), len(slots))


def kafka_time_index_sane(path: Path) -> bool:
    """``TimeIndex.sanityCheck`` on a file opened as the broker opens an existing one: every full slot
    is an entry, the last one must not be below the first, nor its offset below the base."""
    slots = time_slots(path)
    if not slots:
        return path.stat().st_size % 12 == 0
    return slots[-1][0] >= slots[0][0] and slots[-1][1] >= 0 and path.stat().st_size % 12 == 0


def audit(root: Path) -> list[dict[str, Any]]:
    found = open_log_dirs([str(root)])
    rows: list[dict[str, Any]] = []
    for d in found.log_dirs:
        rows += [f.row() for f in audit_log_dir(d)]
        for p in d.partitions:
            rows += [f.row() for f in audit_partition_report(p, now_ms=T0 + 3_600_000).findings]
    return rows


def problems(rows: list[dict[str, Any]]) -> list[tuple[str, str, str, int | None]]:
    return sorted((r["severity"], r["check"], Path(r["file"] or "").name, r["position"]) for r in rows
                  if r["severity"] != "info")


def by_check(rows: list[dict[str, Any]], check: str) -> list[dict[str, Any]]:
    return [r for r in rows if r["check"] == check]


@pytest.fixture()
def live(tmp_path: Path) -> Path:
    return write_log_dir(tmp_path, clean_shutdown=False)


def test_the_written_active_segment_is_preallocated_as_a_running_brokers(live: Path) -> None:
    """The fixture is what the tests claim: several segments, closed ones trimmed, the newest one's
    indexes at segment.index.bytes with entries and then zeros, which Kafka's sanity rule rejects."""
    logs = sorted(live.glob("*.log"))
    assert len(logs) >= 3
    for log in logs[:-1]:
        assert log.with_suffix(".timeindex").stat().st_size % 12 == 0
        assert (0, 0) not in time_slots(log.with_suffix(".timeindex"))
    ti, oi = newest(live, ".timeindex"), newest(live, ".index")
    assert (ti.stat().st_size, oi.stat().st_size) == (INDEX_BYTES // 12 * 12, INDEX_BYTES)
    slots = time_slots(ti)
    n = entries_before_zero(slots)
    assert n >= 2 and set(slots[n:]) == {(0, 0)}
    assert not kafka_time_index_sane(ti)          # "last timestamp is 0 which is less than the first"


def test_a_live_copy_audits_without_warnings_and_says_what_it_assumed(live: Path) -> None:
    rows = audit(live.parent.parent)
    assert problems(rows) == []
    ti, oi = newest(live, ".timeindex"), newest(live, ".index")
    n_time = entries_before_zero(time_slots(ti))
    oi_data = oi.read_bytes()
    n_offset = next(i for i in range(1, len(oi_data) // 8) if OFFSET_SLOT.unpack_from(oi_data, 8 * i) == (0, 0))
    zero = {(r["check"], Path(r["file"]).name, r["position"], r["actual"]) for r in rows
            if r["check"] in ("index-zero-tail", "timeindex-zero-tail")}
    assert zero == {
        ("index-zero-tail", oi.name, 8 * n_offset, f"{INDEX_BYTES // 8 - n_offset} zero slots"),
        ("timeindex-zero-tail", ti.name, 12 * n_time, f"{INDEX_BYTES // 12 - n_time} zero slots")}
    for r in by_check(rows, "index-zero-tail") + by_check(rows, "timeindex-zero-tail"):
        assert r["severity"] == "info"
        assert "taken as the active segment of a running broker" in r["message"]
        assert "no .kafka_cleanshutdown" in r["message"] and "rebuilds" in r["message"]
    assert "TimeIndex.sanityCheck" in by_check(rows, "timeindex-zero-tail")[0]["message"]
    assert [r["severity"] for r in by_check(rows, "unclean-shutdown")] == ["info"]


def test_the_same_files_under_a_clean_shutdown_marker_are_warned_about(tmp_path: Path) -> None:
    """With .kafka_cleanshutdown the broker skips recovery and opens the untrimmed files as they
    are (every slot an entry): a cleanly stopped broker never leaves them so."""
    part = write_log_dir(tmp_path, clean_shutdown=True)
    assert (part.parent / ".kafka_cleanshutdown").read_text() == '{"version":0,"brokerEpoch":12}'
    rows = audit(part.parent.parent)
    ti, oi = newest(part, ".timeindex"), newest(part, ".index")
    n_time = entries_before_zero(time_slots(ti))
    got = problems(rows)
    assert ("warning", "timeindex-zero-tail", ti.name, 12 * n_time) in got
    assert ("warning", "index-sanity", ti.name, None) in got
    assert {c for _, c, name, _ in got if name == oi.name} == {"index-zero-tail"}
    assert {c for _, c, *_ in got} == {"timeindex-zero-tail", "index-zero-tail", "index-sanity"}
    assert by_check(rows, "unclean-shutdown") == []


def test_a_zeroed_entry_inside_the_active_time_index_is_damage(live: Path) -> None:
    ti = newest(live, ".timeindex")
    n = entries_before_zero(time_slots(ti))
    assert n >= 3
    data = bytearray(ti.read_bytes())
    data[12:24] = bytes(12)                            # entry 1 of n: zeros with entries after them
    ti.write_bytes(bytes(data))
    got = problems(audit(live.parent.parent))
    assert ("error", "timeindex-zero-tail", ti.name, 24) in got    # entry 2: data after the zero slot
    assert ("warning", "index-sanity", ti.name, None) in got
    assert all(name == ti.name for *_, name, _ in got)


def test_a_time_index_entry_going_back_in_the_active_segment_is_damage(live: Path) -> None:
    ti = newest(live, ".timeindex")
    slots = time_slots(ti)
    n = entries_before_zero(slots)
    assert n >= 3
    data = bytearray(ti.read_bytes())
    TIME_SLOT.pack_into(data, 12 * (n - 1), slots[0][0] - 1, slots[n - 1][1])   # last entry: an earlier time
    ti.write_bytes(bytes(data))
    got = problems(audit(live.parent.parent))
    assert ("error", "timeindex-out-of-order", ti.name, 12 * (n - 1)) in got
    assert ("warning", "index-sanity", ti.name, None) in got


def test_a_closed_segments_zero_tail_stays_an_error_in_a_live_copy(live: Path) -> None:
    closed = sorted(live.glob("*.timeindex"))[0]
    size = closed.stat().st_size
    with open(closed, "ab") as fh:
        fh.write(bytes(12 * 5))
    got = problems(audit(live.parent.parent))
    assert got == [("error", "index-sanity", closed.name, None), ("error", "timeindex-zero-tail", closed.name, size)]


def test_an_active_index_entry_off_the_log_stays_an_error(live: Path) -> None:
    oi = newest(live, ".index")
    data = bytearray(oi.read_bytes())
    rel, position = OFFSET_SLOT.unpack_from(data, 0)
    OFFSET_SLOT.pack_into(data, 0, rel, position + 1)             # inside a batch, not at its start
    oi.write_bytes(bytes(data))
    got = problems(audit(live.parent.parent))
    assert ("error", "index-offset-mismatch", oi.name, 0) in got


def test_the_metadata_log_is_always_recovered(tmp_path: Path) -> None:
    """KRaft's metadata log keeps its preallocated indexes even under .kafka_cleanshutdown (a 4.4
    broker stopped cleanly leaves them so): the broker recovers it whenever it loads it."""
    part = write_log_dir(tmp_path, clean_shutdown=True, topic="__cluster_metadata")
    rows = audit(part.parent.parent)
    assert problems(rows) == []
    infos = by_check(rows, "timeindex-zero-tail")
    assert len(infos) == 1 and "KRaft metadata log" in infos[0]["message"]
