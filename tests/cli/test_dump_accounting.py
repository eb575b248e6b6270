"""``klogs dump --json`` accounts for every byte of a damaged ``.log`` (issue #4).

Oracles: kafka-python writes the batches and decodes the intact ones (its
``MemoryRecords``), independently of our reader; the damaged byte ranges, the
zero-filled tail and the file size come from how each test assembled the file.
Checked: the ``batch`` (and ``record``) objects equal kafka-python's decode of
the intact batches at the positions the test put them; the ``error`` objects'
(position, length) equal the damaged ranges, in position order among the
batches; the ``summary`` adds up (valid + skipped + zero tail + cut == size);
the exit code is 1 exactly when an error object was printed.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kafka")
import itertools

from kafka.record import MemoryRecords, MemoryRecordsBuilder  # noqa: E402
from test_dump import expected_batch_json  # noqa: E402  (tests/cli helper)

from kafka_format.cli import main  # noqa: E402

CODEC_IDS = {"none": 0, "gzip": 1}
T0 = 1_700_000_000_000
SIZE_FIELD = struct.Struct(">i")     # batch length, after the int64 base offset
SIZE_AT = struct.calcsize(">q")
LOG_OVERHEAD = struct.calcsize(">qi")
ERROR_KEYS = {"type", "file", "position", "message", "length"}
SUMMARY_KEYS = {"type", "file", "size", "validBytes", "skippedBytes", "zeroTailBytes", "cutBytes", "batches"}


def _batch(codec: str, offset: int, n: int) -> bytes:
    """One v2 batch of ``n`` records at ``offset``, written by kafka-python (broker-style baseOffset)."""
    builder = MemoryRecordsBuilder(2, CODEC_IDS[codec], 1 << 20, offset=0)
    for i in range(n):
        assert builder.append(T0 + offset + i, f"k{offset + i}".encode(), b"v" * (10 + i), []) is not None
    builder.close()
    raw = bytearray(builder.buffer())
    struct.pack_into(">q", raw, 0, offset)
    return bytes(raw)


def _batches(codec: str) -> list[bytes]:
    return [_batch(codec, 0, 3), _batch(codec, 3, 2), _batch(codec, 5, 4), _batch(codec, 9, 1)]


@dataclass
class Layout:
    """A file assembled by a test: bytes, intact batches (position, raw), damaged ranges, zero tail."""

    data: bytearray = field(default_factory=bytearray)
    intact: list[tuple[int, bytes]] = field(default_factory=list)
    damaged: list[tuple[int, int]] = field(default_factory=list)
    zero_tail: int = 0

    def good(self, raw: bytes) -> None:
        self.intact.append((len(self.data), raw))
        self.data += raw

    def bad(self, raw: bytes) -> None:
        self.damaged.append((len(self.data), len(raw)))
        self.data += raw


def _with_size(raw: bytes, size: int) -> bytes:
    out = bytearray(raw)
    SIZE_FIELD.pack_into(out, SIZE_AT, size)
    return bytes(out)


def _crc_flip(b: list[bytes]) -> Layout:
    lay = Layout()
    lay.good(b[0])
    flipped = bytearray(b[1])
    flipped[-1] ^= 0xFF                               # a payload byte: the CRC no longer matches
    lay.bad(bytes(flipped))
    lay.good(b[2])
    lay.good(b[3])
    return lay


def _lying_size(delta: int) -> Callable[[list[bytes]], Layout]:
    def build(b: list[bytes]) -> Layout:
        lay = Layout()
        lay.good(b[0])
        lay.bad(_with_size(b[1], len(b[1]) - LOG_OVERHEAD + delta))   # frames the wrong bytes
        lay.good(b[2])
        lay.good(b[3])
        return lay
    return build


def _garbage_between(b: list[bytes]) -> Layout:
    lay = Layout()
    lay.good(b[0])
    lay.good(b[1])
    lay.bad(bytes((0xA5 + 7 * i) & 0xFF for i in range(37)))
    lay.good(b[2])
    lay.good(b[3])
    return lay


def _truncated_tail(b: list[bytes]) -> Layout:
    lay = Layout()
    for raw in b[:3]:
        lay.good(raw)
    lay.bad(b[3][:40])
    return lay


def _zero_tail(b: list[bytes]) -> Layout:
    lay = Layout()
    for raw in b:
        lay.good(raw)
    lay.zero_tail = 4096                              # a preallocated segment's unused tail
    lay.data += bytes(lay.zero_tail)
    return lay


def _size_past_eof(b: list[bytes]) -> Layout:
    lay = Layout()
    lay.good(b[0])
    lay.bad(_with_size(b[1], 10_000_000))            # runs far past the end of the file
    lay.good(b[2])
    lay.good(b[3])
    return lay


SCENARIOS = {
    "crc-flip-middle": _crc_flip,
    "size-too-large-middle": _lying_size(9),
    "size-too-small-middle": _lying_size(-9),
    "garbage-between-batches": _garbage_between,
    "truncated-tail": _truncated_tail,
    "zero-filled-tail": _zero_tail,
    "size-past-eof-intact-after": _size_past_eof,
}


def _dump(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, Any]]]:
    code = main(["dump", *args])
    return code, [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _b64(v: bytes | None) -> str | None:
    return None if v is None else base64.b64encode(v).decode("ascii")


def _expected_objects(path: Path, position: int, raw: bytes, deep: bool) -> list[dict[str, Any]]:
    """kafka-python's decode of one intact batch, as the contracted batch (+ record) objects."""
    batch = MemoryRecords(raw).next_batch()
    assert batch is not None and batch.size_in_bytes == len(raw)
    out: list[dict[str, Any]] = [expected_batch_json(str(path), position, batch)]
    if deep:
        out += [{"type": "record", "offset": r.offset, "timestamp": r.timestamp,
                 "timestampType": r.timestamp_type, "key": _b64(r.key), "value": _b64(r.value),
                 "headers": [], "sequence": -1, "isControl": False} for r in batch]
    return out


class TestJsonAccountsForEveryByte:
    """Batches, skipped ranges and the summary of a damaged segment (issue #4)."""

    @pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
    @pytest.mark.parametrize("codec", ["none", "gzip"])
    @pytest.mark.parametrize("scenario", list(SCENARIOS))
    def test_every_byte_is_accounted_for(self, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         scenario: str, codec: str, deep: bool) -> None:
        lay = SCENARIOS[scenario](_batches(codec))
        log = tmp_path / "t-0" / f"{0:020d}.log"
        log.parent.mkdir()
        log.write_bytes(bytes(lay.data))
        code, objects = _dump(capsys, "--json", *(["--deep-iteration"] if deep else []), str(log))

        # everything in position order: intact batches (kafka-python's decode) and damaged ranges
        events: list[tuple[int, str, Any]] = [(p, "batch", raw) for p, raw in lay.intact]
        events += [(p, "error", n) for p, n in lay.damaged]
        expected: list[Any] = []
        for position, kind, what in sorted(events, key=lambda e: e[0]):
            if kind == "batch":
                expected += _expected_objects(log, position, what, deep)
            else:
                expected.append(("error", position, what))
        end = [o["type"] for o in objects].index("summary")
        stream, summary, reports = objects[:end], objects[end], objects[end + 1:]
        got = [("error", o["position"], o["length"]) if o["type"] == "error" else o for o in stream]
        assert got == expected
        for o in stream:
            if o["type"] == "error":
                assert set(o) == ERROR_KEYS and o["file"] == str(log) and o["message"]
        # deep iteration: the end-of-run report names the offset gaps the skipped batches leave
        offsets = [o["offset"] for o in expected if isinstance(o, dict) and o["type"] == "record"]
        gaps = [(a, b) for a, b in itertools.pairwise(offsets) if b != a + 1]
        assert [(o["type"], o["offset"], o["nextOffset"]) for o in reports] == [
            ("nonConsecutiveOffsets", a, b) for a, b in reversed(gaps)]

        assert set(summary) == SUMMARY_KEYS
        valid = sum(len(raw) for _, raw in lay.intact)
        skipped = sum(n for _, n in lay.damaged)
        assert summary == {"type": "summary", "file": str(log), "size": len(lay.data), "validBytes": valid,
                           "skippedBytes": skipped, "zeroTailBytes": lay.zero_tail, "cutBytes": 0,
                           "batches": len(lay.intact)}
        assert valid + skipped + lay.zero_tail == len(lay.data)
        assert code == (1 if lay.damaged else 0)

    def test_truncated_tail_keeps_kafkas_message(self, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
        lay = _truncated_tail(_batches("none"))
        log = tmp_path / f"{0:020d}.log"
        log.write_bytes(bytes(lay.data))
        _, objects = _dump(capsys, "--json", str(log))
        (position, length), = lay.damaged
        assert objects[-2] == {"type": "error", "file": str(log), "position": position,
                               "message": f"Found {length} invalid bytes at the end of {log.name}",
                               "length": length}

    def test_max_bytes_bounds_the_accounting(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        lay = _garbage_between(_batches("none"))
        log = tmp_path / f"{0:020d}.log"
        log.write_bytes(bytes(lay.data))
        (third, raw), = [(p, r) for p, r in lay.intact if p > lay.damaged[0][0]][:1]
        limit = third + len(raw) // 2                 # the garbage, then half of the batch after it
        code, objects = _dump(capsys, "--json", "--max-bytes", str(limit), str(log))
        before = [(p, r) for p, r in lay.intact if p + len(r) <= limit]
        assert [o["position"] for o in objects if o["type"] == "batch"] == [p for p, _ in before]
        assert [(o["position"], o["length"]) for o in objects if o["type"] == "error"] == lay.damaged
        assert objects[-1] == {"type": "summary", "file": str(log), "size": limit,
                               "validBytes": sum(len(r) for _, r in before), "skippedBytes": 37,
                               "zeroTailBytes": 0, "cutBytes": limit - third, "batches": len(before)}
        assert code == 1

    def test_next_file_is_dumped_with_its_own_summary(self, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
        bad = _crc_flip(_batches("none"))
        good = Layout()
        for raw in _batches("none"):
            good.good(raw)
        first, second = tmp_path / "a" / f"{0:020d}.log", tmp_path / "b" / f"{0:020d}.log"
        for path, lay in ((first, bad), (second, good)):
            path.parent.mkdir()
            path.write_bytes(bytes(lay.data))
        code, objects = _dump(capsys, "--json", str(first), str(second))
        summaries = [o for o in objects if o["type"] == "summary"]
        assert [(s["file"], s["size"], s["skippedBytes"]) for s in summaries] == [
            (str(first), len(bad.data), bad.damaged[0][1]), (str(second), len(good.data), 0)]
        assert code == 1
