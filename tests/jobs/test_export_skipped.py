"""``klogs export`` of damaged logs: PERMISSIVE and DROPMALFORMED report every skipped byte range
(the result's ``skipped_ranges``, totals on stderr), the same on both engines, for plain, typed,
``--checkpoint``, Parquet and Delta exports; FAILFAST names the damage and the modes that skip it.

Oracles: the log dirs are written with the product's writer from batches built here, then damaged
by byte edits at known places, so the expected ranges (file, position, length) are where the bytes
were edited: each batch's position is found by searching the segment files for the batch's own
bytes (or, for the registry corpus, by reading the 12-byte entry headers of the undamaged file),
and the expected records are aiokafka's decoding of the batches left intact.
"""

from __future__ import annotations

import importlib
import json
import struct
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from testhelpers import REPO, load_module

from kafka_format.writer import LogDirWriter, Record, build_v2_batch

with warnings.catch_warnings():   # aiokafka imports deprecated importlib.resources APIs
    warnings.simplefilter("ignore", DeprecationWarning)
    from aiokafka.record.memory_records import MemoryRecords

TOPIC = "orders"
FIRST_TS = 1_700_000_000_000
PER_BATCH = 5
CRC = "CRC mismatch"
TAIL = "incomplete batch at the end of the file (partial write or truncation)"
SKIP_FLAGS = "use --option mode=PERMISSIVE or --option mode=DROPMALFORMED to skip the range"
_SIZE = struct.Struct(">i")          # an entry's length field, after its 8-byte base offset
_SIZE_AT = 8
_ENTRY_HEADER = 12


@dataclass(frozen=True)
class Damaged:
    """A damaged log dir: where the damage is and what is left intact."""

    root: Path
    ranges: list[dict[str, Any]]                                  # {"file", "position", "length", "reason"}
    records: dict[tuple[int, int], tuple[bytes | None, bytes | None]]   # (partition, offset) -> key, value

    @property
    def skipped_bytes(self) -> int:
        return sum(r["length"] for r in self.ranges)


def _batch(partition: int, index: int) -> Any:
    base = index * PER_BATCH
    return build_v2_batch([Record(key=f"k{partition}-{o}".encode(), value=(f"value {partition}-{o} " * (1 + o % 4)).encode(),
                                  timestamp=FIRST_TS + 1000 * o) for o in range(base, base + PER_BATCH)],
                          base_offset=base, partition_leader_epoch=0)


def _aiokafka(data: bytes) -> list[tuple[int, bytes | None, bytes | None]]:
    out = []
    mr = MemoryRecords(data)
    while (batch := mr.next_batch()) is not None:
        for rec in batch:
            out.append((rec.offset, None if rec.key is None else bytes(rec.key),
                        None if rec.value is None else bytes(rec.value)))
    return out


def write_damaged(root: Path, damage: tuple[str, ...] = ("crc", "length", "tail")) -> Damaged:
    """``orders-0`` (12 batches of 5 records, segments of ~5 batches, an index entry per batch) and
    ``orders-1`` (5 batches, one segment without index entries), then: ``crc`` a byte flipped inside the middle batch of
    orders-0's first segment, ``length`` the length field of the middle batch of its second segment
    made 33 bytes longer, ``tail`` orders-1's last batch cut in half (the crash tail of the
    partition's active segment), ``indexed-tail`` orders-0's last batch cut in half (its last
    offset-index entry points at the cut batch)."""
    d = LogDirWriter(root, node_id=1, cluster_id="skippedRangesCluster0", kraft=True)
    built: dict[int, list[Any]] = {}
    for p, count in ((0, 12), (1, 5)):
        sizes = {"segment_bytes": 1200, "index_interval_bytes": 1} if p == 0 else {"segment_bytes": 1 << 20}
        w = d.partition(TOPIC, p, topic_id=bytes([p + 1]) * 16, **sizes)
        built[p] = [_batch(p, i) for i in range(count)]
        for b in built[p]:
            w.append(b)
        w.close()
    d.close(written_at_ms=FIRST_TS + 100_000)
    # where each batch is: its own bytes found in its partition's segment files (once)
    placed: dict[int, list[tuple[Path, int]]] = {0: [], 1: []}
    for p, batches in built.items():
        logs = sorted((root / f"{TOPIC}-{p}").glob("*.log"))
        for b in batches:
            hits = [(log, log.read_bytes().find(b.data)) for log in logs]
            hits = [(log, at) for log, at in hits if at >= 0]
            assert len(hits) == 1
            placed[p].append(hits[0])
    segments = sorted({log for log, _ in placed[0]})
    assert len(segments) >= 3 and len({log for log, _ in placed[1]}) == 1

    def middle(log: Path) -> int:
        here = [i for i, (f, _) in enumerate(placed[0]) if f == log]
        assert len(here) >= 3
        return here[len(here) // 2]

    ranges: list[dict[str, Any]] = []
    damaged: set[tuple[int, int]] = set()
    edits: dict[Path, bytearray] = {}
    if "crc" in damage:
        i = middle(segments[0])
        log, at = placed[0][i]
        data = edits.setdefault(log, bytearray(log.read_bytes()))
        data[at + len(built[0][i].data) - 7] ^= 0x10               # inside the last record
        ranges.append({"file": str(log), "position": at, "length": len(built[0][i].data), "reason": CRC})
        damaged.add((0, i))
    if "length" in damage:
        i = middle(segments[1])
        log, at = placed[0][i]
        data = edits.setdefault(log, bytearray(log.read_bytes()))
        (size,) = _SIZE.unpack_from(data, at + _SIZE_AT)
        _SIZE.pack_into(data, at + _SIZE_AT, size + 33)              # a length that lies
        ranges.append({"file": str(log), "position": at, "length": len(built[0][i].data), "reason": CRC})
        damaged.add((0, i))
    if "tail" in damage:
        log, at = placed[1][-1]
        data = edits.setdefault(log, bytearray(log.read_bytes()))
        cut = at + len(built[1][-1].data) // 2
        assert cut < len(data) and at + len(built[1][-1].data) == len(data)
        del data[cut:]
        ranges.append({"file": str(log), "position": at, "length": cut - at, "reason": TAIL})
        damaged.add((1, len(built[1]) - 1))
    if "indexed-tail" in damage:
        log, at = placed[0][-1]
        data = edits.setdefault(log, bytearray(log.read_bytes()))
        cut = at + len(built[0][-1].data) // 2
        assert at > 0 and at + len(built[0][-1].data) == len(data)
        del data[cut:]
        ranges.append({"file": str(log), "position": at, "length": cut - at, "reason": TAIL})
        damaged.add((0, len(built[0]) - 1))
    for log, data in edits.items():
        log.write_bytes(bytes(data))
    records = {(p, o): (k, v) for p, batches in built.items() for i, b in enumerate(batches)
               if (p, i) not in damaged for o, k, v in _aiokafka(b.data)}
    assert len(records) == (12 + 5 - len(damaged)) * PER_BATCH
    return Damaged(root, sorted(ranges, key=lambda r: (r["file"], r["position"])), records)


# --- running the job --------------------------------------------------------------------------
def run_export(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, dict[str, Any] | None, str]:
    """(exit code, the result on stdout or None, stderr)."""
    job = importlib.import_module("kafka_format.jobs.export")
    code = int(job.main([str(a) for a in args]))
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    return code, json.loads(lines[-1]) if lines else None, captured.err


def data_rows(rows: list[dict[str, Any]]) -> dict[tuple[int, int], tuple[bytes | None, bytes | None]]:
    out = {}
    for r in rows:
        if r.get("_corrupt") is None:
            key = (int(r["partition"]), int(r["offset"]))
            assert key not in out, f"duplicate row {key}"
            out[key] = (r["key"], r["value"])
    return out


def corrupt_ranges(rows: list[dict[str, Any]]) -> set[tuple[str, int, int, str]]:
    return {(c["file"], c["position"], c["length"], c["reason"]) for r in rows if (c := r.get("_corrupt"))}


def as_set(ranges: list[dict[str, Any]]) -> set[tuple[str, int, int, str]]:
    return {(r["file"], r["position"], r["length"], r["reason"]) for r in ranges}


def read_parquet(out: Path) -> list[dict[str, Any]]:
    import pyarrow.dataset as ds

    return ds.dataset(str(out), format="parquet", partitioning="hive").to_table().to_pylist()


def read_delta(out: Path) -> list[dict[str, Any]]:
    from deltalake import DeltaTable

    return DeltaTable(str(out)).to_pyarrow_table().to_pylist()


def check_reported(result: dict[str, Any], err: str, logs: Damaged, mode: str) -> None:
    """Every damaged range in the result, exactly; the totals on stderr."""
    assert result["skipped_ranges"] == logs.ranges
    assert result["skipped_bytes"] == logs.skipped_bytes
    assert "skipped" not in result and result["replayed_batches"] == []
    files = len({r["file"] for r in logs.ranges})
    assert (f"klogs export: {mode} skipped {len(logs.ranges)} damaged byte ranges ({logs.skipped_bytes} B) "
            f"in {files} files") in err, err


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Damaged:
    return write_damaged(tmp_path_factory.mktemp("damaged") / "logs")


# --- FAILFAST -----------------------------------------------------------------------------------
@pytest.mark.spark
@pytest.mark.parametrize("engine", ["local", "spark"])
def test_failfast_names_the_damage_and_the_modes_that_skip_it(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    logs = write_damaged(tmp_path / "logs", damage=("crc",))
    (bad,) = logs.ranges
    code, result, err = run_export(capsys, logs.root, "--out", tmp_path / "out", "--engine", engine)
    assert code == 2 and result is None and not (tmp_path / "out").exists()
    assert f"{bad['file']} at byte {bad['position']}: record batch CRC mismatch; expected crc " in err, err
    assert SKIP_FLAGS in err, err


def test_a_failfast_read_error_carries_the_modes_that_skip_it(tmp_path: Path) -> None:
    """The data source's own error (what a spark.read of kafka-log raises), also across a pickle
    (a task's error reaching the driver)."""
    import pickle

    from kafka_format.common.errors import ChecksumError
    from kafka_format.engine.read import read_splits
    from kafka_format.read.split_reader import SKIP_HINT, read_split

    logs = write_damaged(tmp_path / "logs", damage=("length",))
    (bad,) = logs.ranges
    for mode in ("FAILFAST", "PERMISSIVE"):
        opts, splits = read_splits({"paths": json.dumps([str(logs.root)]), "mode": mode})
        if mode == "PERMISSIVE":
            skipped = [c for s in splits for b in read_split(s, opts) for c in b.column("_corrupt").to_pylist() if c]
            assert skipped == logs.ranges
            continue
        with pytest.raises(ChecksumError) as info:
            for s in splits:
                list(read_split(s, opts))
        err = info.value
        assert (err.path, err.position, err.hint) == (bad["file"], bad["position"], SKIP_HINT)
        assert str(err).startswith(f"{bad['file']} at byte {bad['position']}: record batch CRC mismatch")
        assert str(err).endswith(f"; {SKIP_HINT}") and err.expected
        again = pickle.loads(pickle.dumps(err))
        assert (type(again), str(again), again.hint) == (ChecksumError, str(err), SKIP_HINT)


# --- PERMISSIVE and DROPMALFORMED ---------------------------------------------------------------
@pytest.mark.spark
@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
@pytest.mark.parametrize("engine", ["local", "spark"])
def test_skipping_modes_report_every_range(
    spark: Any, damaged: Damaged, tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str, mode: str
) -> None:
    """A CRC-bad batch, a lying length and a truncated tail: every intact record exported, each
    range reported with its file, position and length; reads cut into several splits per segment
    (an index entry per batch) on both engines."""
    out = tmp_path / "out"
    code, result, err = run_export(capsys, damaged.root, "--out", out, "--engine", engine, "--option", f"mode={mode}",
                                   "--option", "maxBytesPerPartition=700", "--key-as", "string")
    assert code == 0 and result is not None
    check_reported(result, err, damaged, mode)
    rows = read_parquet(out)
    expected = {k: (key.decode(), value) for k, (key, value) in damaged.records.items()}   # --key-as string
    assert data_rows(rows) == expected
    if mode == "PERMISSIVE":
        assert corrupt_ranges(rows) == as_set(damaged.ranges)
        assert result["rows"] == len(rows) == len(expected) + sum(r["_corrupt"] is not None for r in rows)
    else:
        assert "_corrupt" not in rows[0] and result["rows"] == len(rows) == len(expected)


@pytest.mark.spark
def test_delta_batch_and_incremental_exports_report_every_range(
    spark: Any, damaged: Damaged, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Delta (one commit), and --checkpoint runs to Parquet and Delta in micro-batches of 45 offsets
    (orders-1's segment has no index entry, so each micro-batch reads all of it): micro-batches
    that read a range again report it once.  A micro-batch replayed after its commit-log entry was
    lost (a crash after publishing) is found published and not read again: no range reported."""
    code, result, err = run_export(capsys, damaged.root, "--out", tmp_path / "delta", "--format", "delta",
                                   "--option", "mode=DROPMALFORMED")
    assert code == 0 and result is not None
    check_reported(result, err, damaged, "DROPMALFORMED")
    assert data_rows(read_delta(tmp_path / "delta")) == damaged.records and result["rows"] == len(damaged.records)
    for fmt, mode in (("parquet", "DROPMALFORMED"), ("delta", "PERMISSIVE")):
        out, ckpt = tmp_path / f"inc-{fmt}", tmp_path / f"ckpt-{fmt}"
        argv = [damaged.root, "--out", out, "--checkpoint", ckpt, "--format", fmt, "--option", f"mode={mode}",
                "--option", "maxOffsetsPerTrigger=45"]
        code, result, err = run_export(capsys, *argv)
        assert code == 0 and result is not None and len(result["batches"]) >= 2
        check_reported(result, err, damaged, mode)
        rows = read_parquet(out) if fmt == "parquet" else read_delta(out)
        assert data_rows(rows) == damaged.records
        if mode == "PERMISSIVE":        # one _corrupt row per micro-batch that read the range
            assert corrupt_ranges(rows) == as_set(damaged.ranges)
            assert sum(r["_corrupt"] is not None for r in rows) > len(damaged.ranges)
            continue
        last = result["batches"][-1]
        for name in (f"{last}", f".{last}.crc"):
            (ckpt / "commits" / name).unlink(missing_ok=True)
        code, again, err = run_export(capsys, *argv)
        assert code == 0 and again is not None
        assert (again["batches"], again["replayed_batches"]) == ([], [last])
        assert (again["skipped_ranges"], again["skipped_bytes"], again["rows"]) == ([], 0, 0)
        assert "damaged byte range" not in err


@pytest.mark.spark
def test_an_incremental_export_keeps_the_batches_before_a_cut_off_indexed_batch(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The active segment's last index entry points at a batch cut in half: Kafka's
    ``readNextOffset`` would end the log at the segment's base offset; the stream's end is the last
    complete batch (as recovery's rebuilt index has it), so every intact record is exported, as
    the batch export exports them."""
    logs = write_damaged(tmp_path / "logs", damage=("indexed-tail",))
    out, ckpt = tmp_path / "inc", tmp_path / "ckpt"
    code, result, _ = run_export(capsys, logs.root, "--out", out, "--checkpoint", ckpt)
    assert code == 0 and result is not None
    assert data_rows(read_parquet(out)) == logs.records and result["rows"] == len(logs.records)
    code, result, err = run_export(capsys, logs.root, "--out", tmp_path / "batch", "--engine", "local",
                                   "--option", "mode=DROPMALFORMED")
    assert code == 0 and result is not None
    assert result["skipped_ranges"] == logs.ranges and len(logs.ranges) == 1
    assert f"DROPMALFORMED skipped 1 damaged byte range ({logs.skipped_bytes} B) in 1 file" in err
    assert data_rows(read_parquet(tmp_path / "batch")) == logs.records


# --- typed ----------------------------------------------------------------------------------------
corpus_mod = load_module("registry_corpus", REPO / "tests" / "registry" / "registry_corpus.py")


def damaged_corpus(root: Path) -> tuple[Any, dict[str, Any], list[int]]:
    """The registry corpus (``orders``: 12 Avro values in 3 batches of 4) with a byte flipped in
    its middle batch: (the corpus, the expected range, the offsets left)."""
    c = corpus_mod.make_corpus(root, "avro", n1=6, n2=6)
    log = root / f"{TOPIC}-0" / f"{0:020d}.log"
    data = bytearray(log.read_bytes())
    entries, at = [], 0
    while at < len(data):                       # the undamaged file's entries, from their headers
        (size,) = _SIZE.unpack_from(data, at + _SIZE_AT)
        entries.append((at, _ENTRY_HEADER + size))
        at += _ENTRY_HEADER + size
    assert at == len(data) and len(entries) == 3
    at, length = entries[1]
    data[at + length - 3] ^= 0x01
    log.write_bytes(bytes(data))
    return c, {"file": str(log), "position": at, "length": length, "reason": CRC}, [0, 1, 2, 3, 8, 9, 10, 11]


@pytest.mark.spark
def test_typed_exports_report_the_same_ranges_on_both_engines(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c, bad, offsets = damaged_corpus(tmp_path / "logs")
    for mode in ("PERMISSIVE", "DROPMALFORMED"):
        for engine in ("local", "spark"):
            out = tmp_path / f"{engine}-{mode}"
            code, result, err = run_export(capsys, c.root, "--out", out, "--topic", TOPIC, "--value-as", "avro",
                                           "--engine", engine, "--option", f"mode={mode}")
            assert code == 0 and result is not None
            assert (result["skipped_ranges"], result["skipped_bytes"]) == ([bad], bad["length"])
            assert result["typed"]["decodeErrors"] == {"value": 0}
            assert f"klogs export: {mode} skipped 1 damaged byte range ({bad['length']} B) in 1 file" in err
            rows = sorted(read_parquet(out), key=lambda r: (r["offset"] is None, r["offset"] or 0))
            good = [r for r in rows if r.get("_corrupt") is None]
            assert [r["offset"] for r in good] == offsets
            assert [{**r["value"], "note": r["value"].get("note")} for r in good] == \
                [{**c.values[o], "note": c.values[o].get("note")} for o in offsets]
            assert corrupt_ranges(rows) == (as_set([bad]) if mode == "PERMISSIVE" else set())
