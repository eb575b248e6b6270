"""Untrusted lengths never drive allocation: length bombs and decompression bombs.

Each bomb is decoded in a fresh subprocess that reports its peak resident set (``VmHWM`` from
/proc/self/status, falling back to ``ru_maxrss``) before and after decoding.  The growth must stay
below ``2 x cap + 3 x file size + slack`` although the bombs claim 2 GiB lengths, 2^31 records or
expand to 1 GiB.  Bombs are built here with the codec libraries directly (zlib, cramjam, lz4,
zstandard) and framed by hand following Kafka's readers; the batches carry valid CRCs so the
decoders get past the checksum to the lengths and payloads.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import crc32c
import pytest

CAP = 4 << 20  # max_decompressed passed to the decoder
BOMB_BYTES = 1 << 30  # decompressed size of every decompression bomb
SLACK = 48 << 20  # allocator / import noise
#: Under ``make sanitize`` (tests/sanitize.py) peak RSS counts AddressSanitizer's shadow memory and
#: its quarantine of freed blocks: the outcomes are checked, the RSS bounds only in the normal build.
RSS_COMPARABLE = not os.environ.get("KLA_SANITIZED")
SNAPPY_BOMB_BYTES = 1 << 28
ZERO_CHUNK = bytes(1 << 20)

# v2 batch header (DefaultRecordBatch.java): baseOffset q, length i, partitionLeaderEpoch i, magic b,
# crc I, attributes h, lastOffsetDelta i, baseTimestamp q, maxTimestamp q, producerId q,
# producerEpoch h, baseSequence i, recordsCount i  (61 bytes)
V2_HEADER = struct.Struct(">qiibIhiqqqhii")
V2_CRC_COVERS_FROM = struct.calcsize(">qiibI")  # attributes onwards
V2_LENGTH_BEFORE = struct.calcsize(">qi")  # length counts the bytes after it
# Legacy v1 message (LegacyRecord.java): offset q, size i, crc I, magic b, attributes b, timestamp q
V1_HEADER = struct.Struct(">qiIbbq")
V1_CRC_COVERS_FROM = struct.calcsize(">qiI")
LENGTH = struct.Struct(">i")
# gzip member (RFC 1952): magic, CM 8, FLG, MTIME, XFL, OS | deflate | CRC32, ISIZE (little-endian)
GZIP_HEADER = struct.Struct("<2sBBIBB")
GZIP_TRAILER = struct.Struct("<II")
GZIP_MAGIC = b"\x1f\x8b"
GZIP_DEFLATE = 8
GZIP_OS_UNKNOWN = 255
XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)  # SnappyCodec header, version 1, compat 1
XERIAL_CHUNK = 32 << 10
LZ4_BLOCK = 64 << 10
CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def v2_batch(payload: bytes, *, codec: int = 0, count: int = 1, last_delta: int = 0) -> bytes:
    """A v2 batch around ``payload`` (the records region) with a valid CRC-32C."""
    length = V2_HEADER.size - V2_LENGTH_BEFORE + len(payload)
    head = bytearray(V2_HEADER.pack(0, length, 0, 2, 0, codec, last_delta, 1_700_000_000_000,
                                    1_700_000_000_000, -1, -1, -1, count))
    body = bytes(head[V2_CRC_COVERS_FROM:]) + payload
    struct.pack_into(">I", head, V2_CRC_COVERS_FROM - 4, crc32c.crc32c(body))
    return bytes(head) + payload


def v1_message(value: bytes, *, codec: int = 0, value_length: int | None = None) -> bytes:
    """A magic-1 message (null key) with a valid CRC-32; ``value_length`` may lie."""
    rest = LENGTH.pack(-1) + LENGTH.pack(len(value) if value_length is None else value_length) + value
    size = V1_HEADER.size - V2_LENGTH_BEFORE + len(rest)
    head = bytearray(V1_HEADER.pack(0, size, 0, 1, codec, 1_700_000_000_000))
    covered = bytes(head[V1_CRC_COVERS_FROM:]) + rest
    struct.pack_into(">I", head, V1_CRC_COVERS_FROM - 4, zlib.crc32(covered))
    return bytes(head) + rest


def varint(n: int) -> bytes:
    """Zig-zag varint (ByteUtils.writeVarint)."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def record(key_length: int, value: bytes = b"v") -> bytes:
    """One v2 record whose key length field says ``key_length`` (the key bytes are absent)."""
    body = b"\x00" + varint(0) + varint(0) + varint(key_length) + varint(len(value)) + value + varint(0)
    return varint(len(body)) + body


# ---------------------------------------------------------------------------------------------
# decompression bombs: BOMB_BYTES of zeros, framed the way Kafka reads each codec


def gzip_bomb() -> bytes:
    """One gzip member (RFC 1952) whose deflate stream repeats a full-flushed 1 MiB-of-zeros block.

    After ``Z_FULL_FLUSH`` the compressor keeps no history, so every further 1 MiB of zeros
    compresses to the same bytes; the trailer's CRC is never reached (the cap stops first), so it
    is written as 0 with the true ISIZE.
    """
    c = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    first = c.compress(ZERO_CHUNK) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(ZERO_CHUNK) + c.flush(zlib.Z_FULL_FLUSH)
    stream = first + block * (BOMB_BYTES // len(ZERO_CHUNK) - 1) + c.flush()
    header = GZIP_HEADER.pack(GZIP_MAGIC, GZIP_DEFLATE, 0, 0, 0, GZIP_OS_UNKNOWN)
    return header + stream + GZIP_TRAILER.pack(0, BOMB_BYTES & 0xFFFFFFFF)


def snappy_bomb() -> bytes:
    """xerial framing of raw snappy chunks; snappy's ratio is only ~21:1, so 256 MiB of zeros."""
    import cramjam

    block = bytes(cramjam.snappy.compress_raw(bytes(XERIAL_CHUNK)))
    chunk = LENGTH.pack(len(block)) + block
    return XERIAL_HEADER + chunk * (SNAPPY_BOMB_BYTES // XERIAL_CHUNK)


def lz4_bomb() -> bytes:
    import lz4.frame

    c = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                     content_checksum=False, auto_flush=True)
    parts = [c.begin()] + [c.compress(ZERO_CHUNK) for _ in range(BOMB_BYTES // len(ZERO_CHUNK))]
    return b"".join(parts) + c.flush()


def zstd_bomb() -> bytes:
    import zstandard

    c = zstandard.ZstdCompressor(level=3).compressobj()
    parts = [c.compress(ZERO_CHUNK) for _ in range(BOMB_BYTES // len(ZERO_CHUNK))]
    return b"".join(parts) + c.flush()


BOMBS = {"gzip": gzip_bomb, "snappy": snappy_bomb, "lz4": lz4_bomb, "zstd": zstd_bomb}

# ---------------------------------------------------------------------------------------------
# the measuring subprocess

_CHILD = r"""
import json, resource, sys

def peak():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

from kafka_format.records.file_records import decode_segment
from kafka_format.records.decoder import Decoder
from kafka_format.common.errors import KafkaFormatError
from kafka_format.records import compression
from kafka_format.storage import snapshot
decoders = [Decoder()]
try:
    from kafka_format.records.fast import FastDecoder
    decoders.append(FastDecoder())
except ImportError:
    pass
job = json.loads(sys.argv[1])
cap = job["cap"]
base = peak()
results = []
for path in job["files"]:
    for dec in decoders:
        for mode in ("FAILFAST", "PERMISSIVE"):
            rows, error, skipped = 0, None, []
            try:
                for b in decode_segment(path, decoder=dec, mode=mode, max_decompressed=cap,
                                        on_skip=lambda s: skipped.append([s.position, s.length])):
                    rows += b.num_rows
            except KafkaFormatError as exc:
                error = type(exc).__name__
            results.append({"file": path, "decoder": dec.name, "mode": mode, "rows": rows, "error": error,
                            "skipped": skipped})
for path in job.get("payloads", []):
    data = open(path, "rb").read()
    try:
        out = compression.decompress(job["codec"], data, magic=2, max_output=cap)
        results.append({"file": path, "decompressed": len(out), "error": None})
    except KafkaFormatError as exc:
        results.append({"file": path, "error": type(exc).__name__})
for path in job.get("snapshots", []):
    try:
        snapshot.parse_producer_snapshot(open(path, "rb").read())
        results.append({"file": path, "error": None})
    except KafkaFormatError as exc:
        results.append({"file": path, "error": type(exc).__name__})
print(json.dumps({"base": base, "peak": peak(), "results": results}))
"""


def measure(job: dict) -> dict:  # type: ignore[type-arg]
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(job)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def bomb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bombs")


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_decompression_bomb(codec: str, bomb_dir: Path) -> None:
    """1 GiB of zeros compressed into one batch: DecompressionLimitError, RSS bounded by the cap."""
    payload = BOMBS[codec]()
    assert len(payload) < SNAPPY_BOMB_BYTES // 16  # a bomb: a small file expanding to 256 MiB - 1 GiB
    raw = bomb_dir / f"{codec}.payload"
    raw.write_bytes(payload)
    log = bomb_dir / f"{codec}.log"
    log.write_bytes(v2_batch(payload, codec=CODECS[codec]))
    files = [str(log)]
    if codec != "zstd":  # legacy wrapper messages cannot use zstd
        legacy = bomb_dir / f"{codec}-v1.log"
        legacy.write_bytes(v1_message(payload, codec=CODECS[codec]))
        files.append(str(legacy))
    report = measure({"cap": CAP, "files": files, "payloads": [str(raw)], "codec": CODECS[codec]})
    for r in report["results"]:
        if r.get("mode") == "PERMISSIVE":  # the batch is skipped whole and reported
            assert r["error"] is None and r["rows"] == 0 and r["skipped"] == [[0, os.path.getsize(r["file"])]], r
        else:
            assert r["error"] == "DecompressionLimitError" and r.get("rows", 0) == 0, r
    growth = report["peak"] - report["base"]
    assert not RSS_COMPARABLE or growth < 2 * CAP + 3 * len(payload) + SLACK, (
        f"{codec} bomb: peak RSS grew {growth >> 20} MiB (cap {CAP >> 20} MiB, payload {len(payload) >> 20} MiB)")


def test_length_bombs(tmp_path: Path) -> None:
    """Headers claiming 2 GiB lengths / 2^31 records in small files: rejected, RSS stays flat."""
    huge = (1 << 31) - 1
    small = record(1) * 3
    cases = {
        # entry size 2 GiB in a 100-byte file: a partial trailing entry, end of data, no rows
        "size": (struct.pack(">qi", 0, huge) + bytes(88), None),
        # 2^31 records declared, 3 present (valid CRC)
        "count": (v2_batch(small, count=huge, last_delta=huge), "CorruptRecordError"),
        "count-gzip": (v2_batch(_gzip(small), codec=1, count=huge, last_delta=huge), "CorruptRecordError"),
        # a record claiming a 2 GiB key, and one claiming a 2 GiB record length
        "key-length": (v2_batch(record(huge)), "CorruptRecordError"),
        "record-length": (v2_batch(varint(huge) + b"\x00" * 16), "CorruptRecordError"),
        # a legacy message claiming a 2 GiB value
        "v1-value": (v1_message(b"abc", value_length=huge), "CorruptRecordError"),
    }
    files = []
    for name, (data, _) in cases.items():
        path = tmp_path / f"{name}.log"
        path.write_bytes(data)
        files.append(str(path))
    snap = tmp_path / "bomb.snapshot"
    # ProducerSnapshot header: version int16 (1), crc uint32, entry count int32 = 2^31 - 1
    snap.write_bytes(struct.pack(">hIi", 1, 0, huge) + bytes(64))
    report = measure({"cap": CAP, "files": files, "snapshots": [str(snap)]})
    by_file = {}
    for r in report["results"]:
        by_file.setdefault(Path(r["file"]).stem, []).append(r)
    for name, (_, expected) in cases.items():
        for r in by_file[name]:
            if r.get("mode") == "PERMISSIVE":  # skipped whole, reported (a size past EOF too)
                size = os.path.getsize(r["file"])
                assert r["error"] is None and r["rows"] == 0 and r["skipped"] == [[0, size]], r
            else:
                assert r["error"] == expected and r["rows"] == 0, r
    snap_results = [r for r in report["results"] if r["file"].endswith(".snapshot")]
    assert snap_results == [{"file": str(snap), "error": "SnapshotFormatError"}]
    growth = report["peak"] - report["base"]
    assert not RSS_COMPARABLE or growth < SLACK, f"length bombs grew peak RSS by {growth >> 20} MiB"


def _gzip(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


MANY = 24  # batches of one read chunk, each just under the cap when decompressed
FEW = 6  # enough batches for the decoder's steady state (reference run)


def _capped_records_file(path: Path, batches: int) -> Path:
    import zstandard

    payload = zstandard.ZstdCompressor(level=3).compress(record(-1, bytes(CAP - 1024)))
    path.write_bytes(b"".join(v2_batch(payload, codec=CODECS["zstd"]) for _ in range(batches)))
    return path


def test_many_capped_payloads_in_one_chunk(tmp_path: Path) -> None:
    """24 valid zstd batches of one ~4 MiB record each, all within one read chunk (a ~20 KB file).

    Each payload respects the cap, so nothing is an error, but the decoder must stream: its peak
    RSS is the same as for 6 such batches (plus 2 caps), instead of growing with the number of
    batches in the chunk (24 x 4 MiB decompressed, then decoded, at once).
    """
    many = _capped_records_file(tmp_path / "many.log", MANY)
    few = _capped_records_file(tmp_path / "few.log", FEW)
    assert many.stat().st_size < 1 << 20  # far inside one default read chunk
    growth = {}
    for path, n in ((many, MANY), (few, FEW)):
        report = measure({"cap": CAP, "files": [str(path)]})
        for r in report["results"]:
            assert r["error"] is None and r["rows"] == n and r["skipped"] == [], r
        growth[n] = report["peak"] - report["base"]
    assert not RSS_COMPARABLE or growth[MANY] < growth[FEW] + 2 * CAP + (16 << 20), (
        f"peak RSS grows with the batches of a chunk: {FEW} batches {growth[FEW] >> 20} MiB, "
        f"{MANY} batches {growth[MANY] >> 20} MiB")
