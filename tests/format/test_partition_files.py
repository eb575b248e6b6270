"""A partition dir read through its fast paths equals LogLoader's general path.

Discovery lists a partition dir in one pass into a columnar :class:`SegmentTable` (in C when the
extension is built, else in Python) and keeps the general path (``LogLoader``'s reconciliation of
swap, cleaned and deleted files) for dirs that need it.  These tests protect that split: for
directories of every kind of entry (Kafka's 20-digit names, unpadded and too-large offsets,
orphan indexes, missing indexes, snapshots and checkpoints, subdirectories, a directory named
like a segment file, symlinks and broken symlinks, other files), the compiled scan, the Python
scan and the general path give the same partition: segments, orphans, notes, snapshots.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_format.storage import log_loader, partition_files
from kafka_format.storage.logdir import PartitionLog, Segment, open_log_dirs
from kafka_format.storage.partition_files import SegmentTable, scan_local_partition

C_SCAN = partition_files._scan_dir


def _write(root: Path, entries: list[tuple[str, str]]) -> Path:
    """A log dir with one partition dir ``t-0`` holding ``entries`` (name, kind)."""
    (root / "meta.properties").parent.mkdir(parents=True, exist_ok=True)
    (root / "meta.properties").write_text("version=1\nbroker.id=1\ncluster.id=x\n")
    part = root / "t-0"
    part.mkdir(exist_ok=True)
    for name, kind in entries:
        target = part / name
        if kind == "dir":
            target.mkdir(exist_ok=True)
        elif kind == "link":
            os.symlink(part / "00000000000000000000.log", target)
        elif kind == "broken":
            os.symlink(part / "missing-target", target)
        else:
            target.write_bytes(b"x" * (len(name) % 7 + (3 if kind == "big" else 0)))
    return root


def _read(root: Path) -> PartitionLog:
    (part,) = open_log_dirs(root).replicas("t", 0)
    return part


def _compare(root: Path, monkeypatch: pytest.MonkeyPatch) -> PartitionLog:
    """The partition read by the compiled scan, the Python scan and the general path."""
    results = []
    with monkeypatch.context() as m:
        results.append(_read(root))
        m.setattr(partition_files, "_scan_dir", None)
        results.append(_read(root))
        m.setattr(log_loader, "scan_local_partition", lambda *a, **k: None)
        m.setattr(log_loader, "table_from_listing", lambda *a, **k: None)
        results.append(_read(root))
    fast_c, fast_py, general = results
    for got in (fast_c, fast_py):
        assert tuple(got.segments) == tuple(general.segments)
        assert got.orphan_segments == general.orphan_segments
        assert got.notes == general.notes
        assert got.snapshots == general.snapshots
        assert [str(p) for p in got.problems] == [str(p) for p in general.problems]
        assert replace(got, problems=()) == replace(general, problems=())
    return general


SPECIAL = [
    ("00000000000000000000.log", "file"), ("00000000000000000000.index", "file"),
    ("00000000000000000000.timeindex", "file"), ("00000000000000000010.log", "big"),
    ("00000000000000000010.timeindex", "file"),                       # no .index: a note
    ("00000000000000000020.index", "file"),                           # orphan: no .log
    ("00000000000000000030.log", "dir"),                              # a directory, not a segment
    ("00000000000000000040.log", "link"), ("00000000000000000040.index", "broken"),
    ("00000000000000000050.snapshot", "file"), ("leader-epoch-checkpoint", "file"),
    ("99999999999999999999.log", "file"),                             # above Long.MAX_VALUE: ignored
    ("09223372036854775807.log", "file"),                             # Long.MAX_VALUE: a segment
    ("00000000000000000060.txnindex", "file"), ("00000000000000000060.log", "file"),
    ("notes.txt", "file"), ("00000000000000000070.log.tmp", "file"), ("sub", "dir"),
    ("0000000000000000007x.log", "file"), ("ⅷ.log", "file"),
]


def test_every_kind_of_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "b").mkdir()
    _write(tmp_path / "b", [(n, k) for n, k in SPECIAL if k not in ("link", "broken")])
    part = tmp_path / "b" / "t-0"
    os.symlink(part / "00000000000000000000.log", part / "00000000000000000040.log")
    os.symlink(part / "missing-target", part / "00000000000000000040.index")
    got = _compare(tmp_path / "b", monkeypatch)
    assert [s.base_offset for s in got.segments] == [0, 10, 40, 60, 2**63 - 1]
    assert [s.base_offset for s in got.orphan_segments] == [20]
    assert any("00000000000000000010 has no .index" in n for n in got.notes)
    assert any("ignored subdirectory sub" in n for n in got.notes)


@pytest.mark.parametrize("names", [["5.log", "5.index"], ["00000000000000000005.log", "5.log"],
                                   ["000000000000000000005.log"]])
def test_unpadded_names_take_the_python_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              names: list[str]) -> None:
    _write(tmp_path, [(n, "file") for n in names])
    if C_SCAN is not None:
        assert C_SCAN(str(tmp_path / "t-0")) is None             # the compiled scan declines them
    got = _compare(tmp_path, monkeypatch)
    assert [s.base_offset for s in got.segments] == [5]
    assert got.segments[0].log_path.endswith(sorted(names)[-1])  # the later name (name order) wins


def test_reconciled_dirs_take_the_general_path(tmp_path: Path) -> None:
    _write(tmp_path, [("00000000000000000000.log", "file"), ("00000000000000000000.log.deleted", "file")])
    listing, dirs = scan_local_partition(str(tmp_path / "t-0"), str(tmp_path / "t-0") + "/")
    assert listing is None and dirs == []
    assert [s.base_offset for s in _read(tmp_path).segments] == [0]


_NAMES = st.sampled_from(["log", "index", "timeindex", "txnindex", "snapshot", "log.tmp", "txt"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.tuples(st.integers(0, 60), _NAMES, st.booleans()), max_size=40))
def test_random_partition_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
                               files: list[tuple[int, str, bool]]) -> None:
    root = tmp_path_factory.mktemp("random")
    entries = [(f"{off:020d}.{suffix}", "big" if big else "file") for off, suffix, big in files]
    _write(root, entries)
    _compare(root, monkeypatch)


def test_table_is_a_sequence_of_segments() -> None:
    segs = [Segment(base_offset=b, log_path=f"/d/{b:020d}.log", log_size=b + 1, log_mtime_ms=7,
                    index_path=f"/d/{b:020d}.index", index_size=0) for b in (0, 5, 9)]
    table = SegmentTable.from_segments(segs)
    assert table == tuple(segs) and len(table) == 3 and table[-1] == segs[-1] and table[1:] == tuple(segs[1:])
    assert list(table.base_offsets) == [0, 5, 9] and list(table.log_sizes) == [1, 6, 10]
    assert table.log_locations() == [s.log_path for s in segs]
    assert hash(table) == hash(tuple(segs))
    assert pickle.loads(pickle.dumps(table)) == table
    with pytest.raises(IndexError):
        table[3]
    assert [table[i] for i in (2, 0, 1)] == [segs[2], segs[0], segs[1]]


def test_table_memory_per_segment(tmp_path: Path) -> None:
    """Discovery keeps ~50 bytes of columns per segment, no Segment object."""
    _write(tmp_path, [(f"{b:020d}.{s}", "file") for b in range(0, 1000, 10) for s in ("log", "index", "timeindex")])
    table = _read(tmp_path).segments
    assert isinstance(table, SegmentTable)
    assert table.nbytes == 100 * 48
    assert np.array_equal(table.base_offsets, np.arange(0, 1000, 10))
