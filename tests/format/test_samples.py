"""The committed ``data_samples/logdirs`` is exactly what ``data_samples/generate.py`` makes, every
batch in it decodes with valid CRCs in kafka-python and aiokafka, and it holds the features the
README promises (checked on the decoded files, not on the generator's bookkeeping)."""

from __future__ import annotations

import importlib.util
import shutil
import struct
import subprocess
import sys
import types
import warnings
from pathlib import Path

import cramjam
import lz4.frame
import pytest
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords

with warnings.catch_warnings():  # kafka-python's package import uses deprecated importlib.resources calls
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.codec as kp_codec
    from kafka.record import MemoryRecords as KpMemoryRecords

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
LOG_ENTRY = struct.Struct(">qi")  # offset, size (spec §2.1)
TXN_ENTRY = struct.Struct(">hqqqq")
LEGACY_ATTRIBUTES = struct.calcsize(">qiIb")  # offset, size, crc, magic, then attributes
LZ4 = 3


class _CorrectLz4HeaderChecksum:
    """``xxhash.xxh32`` stand-in for kafka-python's old-Kafka lz4 path (correct HC of FLG 0x60 BD 0x40)."""

    def __init__(self, data: bytes) -> None:
        assert bytes(data) == b"\x60\x40"

    def digest(self) -> bytes:
        frame = lz4.frame.compress(b"", block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                   content_checksum=False, store_size=False)
        return bytes([0, 0, frame[6], 0])


@pytest.fixture(autouse=True)
def _kafka_python_codecs(monkeypatch: pytest.MonkeyPatch) -> None:
    raw_snappy = types.SimpleNamespace(decompress=lambda b: bytes(cramjam.snappy.decompress_raw(bytes(b))))
    monkeypatch.setattr(kp_codec, "snappy", raw_snappy)
    monkeypatch.setattr(kp_codec, "xxhash", types.SimpleNamespace(xxh32=_CorrectLz4HeaderChecksum))


def _sample_logs() -> list[Path]:
    return sorted(SAMPLES.rglob("*.log")) if SAMPLES.is_dir() else []


def _entries(path: Path) -> tuple[list[bytes], int]:
    """Complete log entries of a .log and the count of trailing bytes after them."""
    data = path.read_bytes()
    out, pos = [], 0
    while len(data) - pos > 17:
        _, size = LOG_ENTRY.unpack_from(data, pos)
        if pos + LOG_ENTRY.size + size > len(data):
            break
        out.append(data[pos: pos + LOG_ENTRY.size + size])
        pos += LOG_ENTRY.size + size
    return out, len(data) - pos


def _one(lib: str, entry: bytes):  # type: ignore[no-untyped-def]
    records = KpMemoryRecords(entry) if lib == "kafka-python" else AioMemoryRecords(entry)
    batch = records.next_batch()
    assert records.next_batch() is None
    return batch


def _load_generator():  # type: ignore[no-untyped-def]
    generator = REPO / "data_samples" / "generate.py"
    spec = importlib.util.spec_from_file_location("kla_generate_samples", generator)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_samples_equal_a_fresh_generation(tmp_path: Path) -> None:
    assert SAMPLES.is_dir(), "data_samples/logdirs missing: run `make samples`"
    _load_generator().generate(tmp_path / "logdirs")
    fresh = {p.relative_to(tmp_path / "logdirs"): p for p in (tmp_path / "logdirs").rglob("*") if p.is_file()}
    committed = {p.relative_to(SAMPLES): p for p in SAMPLES.rglob("*") if p.is_file()}
    assert sorted(map(str, fresh)) == sorted(map(str, committed))
    different = [str(k) for k in fresh if fresh[k].read_bytes() != committed[k].read_bytes()]
    assert different == []


def _run_generator(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``python data_samples/generate.py ARGS`` as data_samples/README.md tells a user to run it."""
    return subprocess.run([sys.executable, str(REPO / "data_samples" / "generate.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("found", ["a user's file", "a file", "a Kafka log dir"])
def test_the_generator_refuses_a_path_it_did_not_write_and_leaves_it_untouched(found: str, tmp_path: Path) -> None:
    """klogs' output rule: a directory holding something else, a file, a broker's log dir (here a
    copy of the samples without their marker) -- exit 2, one line naming the path, nothing touched."""
    target = tmp_path / "out"
    if found == "a user's file":
        target.mkdir()
        (target / "thesis.tex").write_text("years of work\n")
    elif found == "a file":
        target.write_text("not a directory\n")
    else:
        shutil.copytree(SAMPLES, target)
        (target / ".klogs-output").unlink()
    before = _tree(target) if target.is_dir() else {"": target.read_bytes()}
    done = _run_generator(target)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and str(target) in done.stderr and "refusing" in done.stderr
    assert (_tree(target) if target.is_dir() else {"": target.read_bytes()}) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]          # no temporaries, no lock left


def test_the_generator_writes_an_absent_or_empty_dir_and_replaces_its_own_output(tmp_path: Path) -> None:
    absent, empty = tmp_path / "new" / "samples", tmp_path / "empty"
    empty.mkdir()
    for target in (absent, empty, absent):            # the third run replaces the first's output
        done = _run_generator(target)
        assert done.returncode == 0, done.stderr
        assert _tree(target) == _tree(SAMPLES)        # the committed samples, marker included
    (absent / "broker-1" / "stray").write_text("x")  # inside its own output: replaced with the rest
    assert _run_generator(absent).returncode == 0 and _tree(absent) == _tree(SAMPLES)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "new"]
    assert _run_generator(absent, "extra").returncode == 2


@pytest.mark.parametrize("log", _sample_logs(), ids=lambda p: str(p.relative_to(SAMPLES)))
@pytest.mark.parametrize("lib", ["kafka-python", "aiokafka"])
def test_every_sample_batch_decodes_with_valid_crc(lib: str, log: Path) -> None:
    entries, trailing = _entries(log)
    assert entries
    if trailing:
        assert "broker-2" in log.parts  # only the crashed replica ends in a partial batch
    previous_last = -1
    for entry in entries:
        magic = entry[16]
        if lib == "aiokafka" and magic == 0 and entry[LEGACY_ATTRIBUTES] & 0x07 == LZ4:
            continue  # aiokafka refuses lz4 with magic 0; kafka-python covers it
        batch = _one(lib, entry)
        assert batch.validate_crc()
        records = list(batch)
        if magic < 2:
            assert records
            if lib == "kafka-python":
                assert all(r.validate_crc() for r in records)  # inner messages' CRC-32
            offsets = [r.offset for r in records]
            assert offsets[-1] == LOG_ENTRY.unpack_from(entry)[0]
        else:
            offsets = [r.offset for r in records]
            last = batch.base_offset + batch.last_offset_delta
            assert all(batch.base_offset <= o <= last for o in offsets)
            offsets = [*offsets, last]
        assert offsets == sorted(offsets) and offsets[0] > previous_last
        previous_last = offsets[-1]


def _v2_headers(entry: bytes) -> tuple[int, int, int]:
    """(attributes, records count, producer id) straight from the 61-byte header."""
    attributes = struct.unpack_from(">h", entry, 21)[0]
    producer_id = struct.unpack_from(">q", entry, 43)[0]
    count = struct.unpack_from(">i", entry, 57)[0]
    return attributes, count, producer_id


def _checkpoint(path: Path) -> dict[tuple[str, int], int]:
    lines = path.read_text().splitlines()
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2
    return {(t, int(p)): int(o) for t, p, o in (line.split() for line in lines[2:])}


def _partition_leo(pdir: Path) -> int:
    last = -1
    for log in sorted(pdir.glob("*.log")):
        for entry in _entries(log)[0]:
            if entry[16] >= 2:
                last = struct.unpack_from(">q", entry)[0] + struct.unpack_from(">i", entry, 23)[0]
            else:
                last = LOG_ENTRY.unpack_from(entry)[0]
    return last + 1


def test_samples_hold_the_promised_features() -> None:
    b1 = SAMPLES / "broker-1"
    v2_codecs, legacy, horizon, empty, control, txn, headers = set(), set(), 0, 0, 0, 0, 0
    for log in _sample_logs():
        if "broker-1" not in log.parts:
            continue
        for entry in _entries(log)[0]:
            magic = entry[16]
            if magic == 2:
                attributes, count, _ = _v2_headers(entry)
                v2_codecs.add(attributes & 0x07)
                horizon += bool(attributes & 0x40)
                empty += count == 0
                control += bool(attributes & 0x20)
                txn += bool(attributes & 0x10)
                batch = _one("kafka-python", entry)
                headers += sum(1 for r in batch if r.headers)
            else:
                legacy.add((magic, entry[LEGACY_ATTRIBUTES] & 0x07))
    assert v2_codecs == {0, 1, 2, 3, 4}
    assert legacy == {(m, c) for m in (0, 1) for c in (0, 1, 2, 3)}
    assert horizon and empty and control and txn and headers
    # an aborted transaction whose data starts in an earlier segment than its ABORT marker
    spanning = [e for p in (b1 / "transactions-0").glob("*.txnindex")
                for e in (TXN_ENTRY.unpack_from(p.read_bytes(), i) for i in range(0, p.stat().st_size, 34))
                if e[2] < int(p.name.split(".")[0])]
    assert spanning
    # checkpoints: HW < LEO somewhere, log start beyond the first segment base somewhere
    hw = _checkpoint(b1 / "replication-offset-checkpoint")
    assert any(off < _partition_leo(b1 / f"{t}-{p}") for (t, p), off in hw.items())
    lso = _checkpoint(b1 / "log-start-offset-checkpoint")
    assert lso and all(off > min(int(x.name.split(".")[0]) for x in (b1 / f"{t}-{p}").glob("*.log"))
                       for (t, p), off in lso.items())
    assert _checkpoint(b1 / "cleaner-offset-checkpoint")
    props = dict(line.split("=", 1) for line in (b1 / "meta.properties").read_text().splitlines()
                 if not line.startswith("#"))
    assert props["version"] == "1" and "node.id" in props and "cluster.id" in props
    # broker 2: a shorter replica of a broker-1 partition
    replica = SAMPLES / "broker-2" / "v2-codecs-0"
    assert _partition_leo(replica) < _partition_leo(b1 / "v2-codecs-0")
    assert not (SAMPLES / "broker-2" / ".kafka_cleanshutdown").exists()
    # several segments per data partition
    for pdir in b1.iterdir():
        if pdir.is_dir() and not pdir.name.startswith("__"):
            assert len(list(pdir.glob("*.log"))) >= 2, pdir.name


def test_consumer_offsets_records_are_offset_commits() -> None:
    """Keys: version 1 (OffsetCommitKey) group/topic/partition; values: version 1 or 3."""
    seen_values = set()
    for pdir in (SAMPLES / "broker-1").glob("__consumer_offsets-*"):
        for log in pdir.glob("*.log"):
            for entry in _entries(log)[0]:
                for r in _one("kafka-python", entry):
                    (key_version,) = struct.unpack_from(">h", r.key)
                    assert key_version == 1
                    (glen,) = struct.unpack_from(">h", r.key, 2)
                    assert r.key[4:4 + glen].decode() in ("analytics-app", "billing-service")
                    if r.value is not None:
                        seen_values.add(struct.unpack_from(">h", r.value)[0])
    assert seen_values == {1, 3}
