"""Read modes end to end on damaged files.

A file of intact batches (built by kafka-python's builders, or a real broker file) is damaged in
one place.  Then:

* FAILFAST yields exactly the records before the damage (kafka-python's decode of that prefix) and
  raises an error naming the file, the byte position of the damage, what was expected and found;
* PERMISSIVE and DROPMALFORMED yield exactly the records of every intact batch (kafka-python's
  decode of each intact batch, none lost, none invented), and the entries that produced rows plus
  the reported skipped ranges tile the file: good bytes + skipped bytes = file size.
"""

from __future__ import annotations

import random
import struct
import warnings
from pathlib import Path
from typing import Any

import atheris_targets as harness
import pyarrow as pa
import pytest

from kafka_format.common.errors import KafkaFormatError
from kafka_format.records.decoder import Decoder
from kafka_format.records.file_records import decode_segment

with warnings.catch_warnings():  # kafka-python's package import emits DeprecationWarnings
    warnings.simplefilter("ignore")
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords

try:
    from kafka_format.records.fast import FastDecoder

    DECODERS = [Decoder(), FastDecoder()]
except ImportError:  # pragma: no cover - compiled decoder not built
    DECODERS = [Decoder()]

BATCHES = 7
DAMAGED = 3  # index of the damaged batch
# Garbage runs hold no plausible header with a valid CRC.  The first one's size field is 5 (< 14:
# corrupt); the second's is 0x090a0b0c, running past the end of the file, which Kafka's reader
# takes for a partial trailing batch (end of data, no error).
GARBAGE_SMALL_SIZE = bytes(8) + struct.pack(">i", 5) + bytes(range(1, 200)) * 2
GARBAGE_HUGE_SIZE = bytes(range(1, 200)) * 2
_BASE_OFFSET = struct.Struct(">q")
_SIZE = struct.Struct(">i")
_SIZE_OFFSET = _BASE_OFFSET.size
_V2_RECORDS_OFFSET = 61
_V2_COUNT_OFFSET = _V2_RECORDS_OFFSET - 4
_MAGIC_OFFSET = 16
_V2_ATTRIBUTES_LOW_BYTE = 22  # attributes int16 at 21..22 (DefaultRecordBatch)
_LEGACY_ATTRIBUTES = 17  # attributes int8 after magic (LegacyRecord)
_CODEC_MASK = 0x07


def _v2_batch(i: int, codec: int) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, batch_size=1 << 30)
    for j in range(4 + i % 3):
        headers = [("h", f"{i}.{j}".encode())] if j % 2 else []
        builder.append(j, 1_700_000_000_000 + 10 * i + j, f"k{i}.{j}".encode(),
                       (f"value {i}.{j} " * (1 + j * 9)).encode(), headers)
    data = bytearray(builder.build())
    _BASE_OFFSET.pack_into(data, 0, 100 * i)  # base offset is not covered by the CRC
    return bytes(data)


def _v1_set(i: int) -> bytes:
    builder = LegacyRecordBatchBuilder(1, 0, batch_size=1 << 30)
    for j in range(3):
        builder.append(100 * i + j, 1_700_000_000_000 + j, f"k{i}.{j}".encode(), f"v{i}.{j}".encode())
    return bytes(builder.build())


def intact_file(kind: str) -> list[bytes]:
    """The entries of an intact file: v2 with mixed codecs, or v1 messages."""
    if kind == "v2":
        return [_v2_batch(i, codec=(0, 1, 3, 0, 4, 0, 2)[i]) for i in range(BATCHES)]
    entries: list[bytes] = []
    for i in range(BATCHES):
        entries += [e for _, e in _split(_v1_set(i))]
    return entries


def _split(data: bytes) -> list[tuple[int, bytes]]:
    return [(p, data[p:p + n]) for p, n in harness.entry_positions(data)]


def oracle(data: bytes) -> list[dict[str, Any]]:
    """kafka-python's records of ``data``."""
    out = []
    records = MemoryRecords(bytes(data))
    while records.has_next():
        batch = records.next_batch()
        for r in batch:
            out.append({"offset": r.offset, "timestamp": r.timestamp, "key": r.key, "value": r.value,
                        "headers": [(k, v) for k, v in (getattr(r, "headers", None) or [])]})
    return out


def ours(batches: list[pa.RecordBatch]) -> list[dict[str, Any]]:
    out = []
    for b in batches:
        cols = b.to_pydict()
        micros = b.column("timestamp").cast(pa.int64()).to_pylist()
        for i in range(b.num_rows):
            out.append({"offset": cols["offset"][i], "timestamp": micros[i] // 1000, "key": cols["key"][i],
                        "value": cols["value"][i],
                        "headers": [(h["key"], h["value"]) for h in cols["headers"][i]]})
    return out


# ---------------------------------------------------------------------------------------------
# damage: each returns (damaged entries joined, index of the first damaged byte, indexes of the
# entries that are still intact, in the damaged file's order)


def _flip_payload(entries: list[bytes]) -> tuple[bytes, int, list[bytes]]:
    bad = bytearray(entries[DAMAGED])
    bad[len(bad) // 2 + 20] ^= 0x40
    return _join(entries, DAMAGED, bytes(bad))


def _bad_records_valid_crc(entries: list[bytes]) -> tuple[bytes, int, list[bytes]]:
    bad = bytearray(entries[DAMAGED])
    _SIZE.pack_into(bad, _V2_COUNT_OFFSET, 1000)  # lying count, CRC recomputed
    return _join(entries, DAMAGED, harness.fix_crcs(bytes(bad)))


def _short_size(entries: list[bytes]) -> tuple[bytes, int, list[bytes]]:
    bad = bytearray(entries[DAMAGED])
    (size,) = _SIZE.unpack_from(bad, _SIZE_OFFSET)
    _SIZE.pack_into(bad, _SIZE_OFFSET, size - 9)
    return _join(entries, DAMAGED, bytes(bad))


def _long_size(entries: list[bytes]) -> tuple[bytes, int, list[bytes]]:
    bad = bytearray(entries[DAMAGED])
    (size,) = _SIZE.unpack_from(bad, _SIZE_OFFSET)
    _SIZE.pack_into(bad, _SIZE_OFFSET, size + 33)
    return _join(entries, DAMAGED, bytes(bad))


def _tiny_size(entries: list[bytes]) -> tuple[bytes, int, list[bytes]]:
    bad = bytearray(entries[DAMAGED])
    _SIZE.pack_into(bad, _SIZE_OFFSET, 3)
    return _join(entries, DAMAGED, bytes(bad))


def _bad_magic(entries: list[bytes]) -> tuple[bytes, int, list[bytes]]:
    bad = bytearray(entries[DAMAGED])
    bad[_MAGIC_OFFSET] = 7
    return _join(entries, DAMAGED, bytes(bad))


def _garbage_between(entries: list[bytes]) -> tuple[bytes, int, list[bytes]]:
    data = b"".join(entries[:DAMAGED]) + GARBAGE_SMALL_SIZE + b"".join(entries[DAMAGED:])
    return data, len(b"".join(entries[:DAMAGED])), list(entries)


def _garbage_huge_size(entries: list[bytes]) -> tuple[bytes, int, list[bytes]]:
    data = b"".join(entries[:DAMAGED]) + GARBAGE_HUGE_SIZE + b"".join(entries[DAMAGED:])
    return data, len(b"".join(entries[:DAMAGED])), list(entries)


def _zeros_inside(entries: list[bytes]) -> tuple[bytes, int, list[bytes]]:
    bad = bytearray(entries[DAMAGED])
    bad[8:40] = bytes(32)
    return _join(entries, DAMAGED, bytes(bad))


def _cut_middle(entries: list[bytes]) -> tuple[bytes, int, list[bytes]]:
    bad = entries[DAMAGED][:len(entries[DAMAGED]) // 2]
    return _join(entries, DAMAGED, bad)


def _join(entries: list[bytes], i: int, bad: bytes) -> tuple[bytes, int, list[bytes]]:
    data = b"".join(entries[:i]) + bad + b"".join(entries[i + 1:])
    return data, len(b"".join(entries[:i])), entries[:i] + entries[i + 1:]


DAMAGE = {
    "crc-flip": _flip_payload,
    "records-valid-crc": _bad_records_valid_crc,
    "size-short": _short_size,
    "size-long": _long_size,
    "size-tiny": _tiny_size,
    "bad-magic": _bad_magic,
    "garbage-between": _garbage_between,
    "garbage-huge-size": _garbage_huge_size,
    "zeros-inside": _zeros_inside,
    "cut-middle": _cut_middle,
}


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "topic-0" / "00000000000000000000.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


#: Damage FAILFAST does not raise for, following Kafka: an entry size running past the end of the
#: file is a partial trailing batch, i.e. the end of the data (FileLogInputStream.nextBatch).
ENDS_DATA = {"garbage-huge-size"}


def _damage_params(names: list[str]) -> list[str]:
    return list(names)


def check_failfast(path: Path, dec: Decoder, first_bad: int, *, ends_data: bool = False,
                   read_size: int = 1024) -> None:
    """Rows before the damage, then an error with file, position, expected and found."""
    data = path.read_bytes()
    got: list[pa.RecordBatch] = []
    if ends_data:
        got = list(decode_segment(str(path), decoder=dec, mode="FAILFAST", read_size=read_size))
        assert ours(got) == oracle(data[:first_bad])
        return
    with pytest.raises(KafkaFormatError) as info:
        for b in decode_segment(str(path), decoder=dec, mode="FAILFAST", read_size=read_size):
            got.append(b)
    err = info.value
    assert err.path == str(path)
    assert err.position == first_bad, f"error at {err.position}, damage at {first_bad}: {err}"
    assert err.expected and err.found, err
    assert str(path) in str(err) and f"byte {first_bad}" in str(err)
    assert ours(got) == oracle(data[:first_bad])


def check_skipping(path: Path, dec: Decoder, mode: str, intact: list[bytes], *, read_size: int = 1024) -> None:
    """Every intact batch's records, nothing else; good + skipped bytes = file size."""
    data = path.read_bytes()
    skipped: list[tuple[int, int]] = []
    got = list(decode_segment(str(path), decoder=dec, mode=mode, read_size=read_size,
                              on_skip=lambda s: skipped.append((s.position, s.length))))
    expected = [r for entry in intact for r in oracle(entry)]
    assert ours(got) == expected
    good = harness.good_entry_ranges(data, got)
    assert sum(n for _, n in good) == sum(len(e) for e in intact)
    ranges = sorted(good + skipped)
    pos = 0
    for start, length in ranges:
        assert start == pos, f"gap or overlap at {pos}: {ranges}"
        pos = start + length
    assert pos == len(data), f"good + skipped = {pos} bytes, file has {len(data)}"
    assert skipped, "the damage was not reported"


@pytest.mark.parametrize("dec", DECODERS, ids=lambda d: d.name)
@pytest.mark.parametrize("damage", _damage_params(sorted(DAMAGE)))
@pytest.mark.parametrize("kind", ["v2", "v1"])
def test_modes_on_damage(kind: str, damage: str, dec: Decoder, tmp_path: Path) -> None:
    if kind == "v1" and damage == "records-valid-crc":
        pytest.skip("magic 1 entries have no record count")
    entries = intact_file(kind)
    data, first_bad, intact = DAMAGE[damage](entries)
    path = _write(tmp_path, data)
    check_failfast(path, dec, first_bad, ends_data=damage in ENDS_DATA)
    for mode in ("PERMISSIVE", "DROPMALFORMED"):
        check_skipping(path, dec, mode, intact)


@pytest.mark.parametrize("dec", DECODERS, ids=lambda d: d.name)
def test_intact_file_has_no_skips(dec: Decoder, tmp_path: Path) -> None:
    """Control: the undamaged file decodes fully in every mode with nothing skipped."""
    entries = intact_file("v2")
    path = _write(tmp_path, b"".join(entries))
    for mode in ("FAILFAST", "PERMISSIVE", "DROPMALFORMED"):
        skipped: list[object] = []
        got = list(decode_segment(str(path), decoder=dec, mode=mode, on_skip=skipped.append))
        assert ours(got) == oracle(b"".join(entries)) and not skipped


def _real_files(root: Path) -> list[Path]:
    """One small real segment per (magic, codec of its first entry), with at least BATCHES entries."""
    chosen: dict[tuple[int, int], Path] = {}
    for p in sorted(root.rglob("*.log")):
        if not 2048 < p.stat().st_size < 100_000:
            continue
        data = p.read_bytes()
        entries = harness.entry_positions(data)
        if len(entries) < BATCHES or sum(n for _, n in entries) != len(data):
            continue
        magic = data[_MAGIC_OFFSET]
        attributes = data[_V2_ATTRIBUTES_LOW_BYTE if magic == 2 else _LEGACY_ATTRIBUTES]
        chosen.setdefault((magic, attributes & _CODEC_MASK), p)
    return [chosen[k] for k in sorted(chosen)]


@pytest.mark.realdata
@pytest.mark.parametrize("damage", _damage_params(["crc-flip", "size-short", "size-long", "garbage-between",
                                                   "garbage-huge-size", "cut-middle"]))
def test_modes_on_damaged_realdata(realdata: Path, damage: str, tmp_path: Path) -> None:
    """The same checks on real broker segments (read at run time, never copied into the repo)."""
    files = _real_files(realdata)
    assert files
    for n, src in enumerate(files):
        data = src.read_bytes()
        entries = [e for _, e in _split(data)]
        damaged, first_bad, intact = DAMAGE[damage](entries)
        path = _write(tmp_path / str(n), damaged)
        for dec in DECODERS:
            check_failfast(path, dec, first_bad, ends_data=damage in ENDS_DATA)
            check_skipping(path, dec, "PERMISSIVE", intact)


def _big_v2_file() -> list[bytes]:
    """~3 MiB of v2 batches (mixed codecs), so chunked reads of a path use large windows."""
    entries = []
    rng = random.Random(48)
    for i in range(48):
        builder = DefaultRecordBatchBuilder(2, (0, 1, 3, 4)[i % 4], False, -1, -1, -1, batch_size=1 << 30)
        for j in range(8):
            builder.append(j, 1_700_000_000_000 + j, f"k{i}.{j}".encode(),
                           rng.randbytes(8000), [])
        data = bytearray(builder.build())
        _BASE_OFFSET.pack_into(data, 0, 100 * i)
        entries.append(bytes(data))
    return entries


@pytest.mark.parametrize("dec", DECODERS, ids=lambda d: d.name)
@pytest.mark.parametrize("damage", ["crc-flip", "records-valid-crc", "size-short", "garbage-between"])
def test_modes_on_damage_large_reads(damage: str, dec: Decoder, tmp_path: Path) -> None:
    """A multi-MiB damaged file read by path with the default chunk size (large read windows),
    with 64 KiB chunks, and from a Python file object: the same records, errors and skips."""
    entries = _big_v2_file()
    data, first_bad, intact = DAMAGE[damage](entries)
    path = _write(tmp_path, data)
    assert path.stat().st_size > 2 << 20
    check_failfast(path, dec, first_bad, read_size=8 << 20)
    check_skipping(path, dec, "PERMISSIVE", intact, read_size=8 << 20)
    outcomes = []
    for source, read_size in ((str(path), 8 << 20), (str(path), 64 << 10), (None, 8 << 20)):
        skipped: list[tuple[int, int]] = []
        with open(path, "rb") as f:
            got = list(decode_segment(source or f, decoder=dec, mode="PERMISSIVE", read_size=read_size,
                                      on_skip=lambda s: skipped.append((s.position, s.length))))  # noqa: B023
            outcomes.append((ours(got), skipped))
    assert outcomes[0] == outcomes[1] == outcomes[2]
