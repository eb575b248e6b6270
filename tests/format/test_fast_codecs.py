"""The compiled decoder's C codecs (``_fastcodecs.c``) equal the Python decompression path.

The fused path (:meth:`FastDecoder.decode_v2_region`) decompresses Kafka's payloads in C and
declines everything it does not decode (corrupt, unusual framing, over the cap) to the Python
path.  These tests protect that split: valid payloads of every codec are decoded in C (the
Python codecs are switched off to prove it) into the reference decoder's table; corrupt,
truncated, oversized and unusually framed payloads give the reference decoder's outcome
(same table, or the same error type, message and file position).
"""

from __future__ import annotations

import functools
import itertools
import os
import random
import struct
import zlib
from typing import Any

import pyarrow as pa
import pytest
from builders import CODECS, build_v2, raw_v2, sample_records
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kafka_format.common.errors import CompressionError, DecompressionLimitError, KafkaFormatError
from kafka_format.records import compression
from kafka_format.records.columns import FileContext
from kafka_format.records.decoder import Decoder
from kafka_format.records.file_records import decode_segment
from kafka_format.records.schema import RECORD_SCHEMA

pytest.importorskip("kafka_format.records._fastdecode", reason="compiled decoder not built")
from kafka_format.records.fast import C_CODECS, FastDecoder  # noqa: E402  (after the importorskip)

PROFILE = settings(max_examples=int(os.environ.get("KAFKA_FORMAT_CODEC_EXAMPLES", "60")), deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
REFERENCE = Decoder()
FAST = FastDecoder()
COMPRESSED = sorted(name for name in CODECS if name != "none")
# lz4-frame: python-lz4's frames (block checksums, content size); gzip-members: 1-3 gzip members
VARIANTS = [*COMPRESSED, "lz4-frame", "gzip-members"]


def _compress(variant: str, plain: bytes, flags: int = 0) -> bytes:
    """``plain`` compressed as Kafka's producer writes it, or for "lz4-frame" as python-lz4 writes
    a frame with independent blocks (aiokafka's and kafka-python's lz4 framing): block checksums,
    and by ``flags`` content size / content checksum / 256 KiB blocks; for "gzip-members" as
    1 + ``flags`` % 3 gzip members back to back (GZIPInputStream reads them all)."""
    if variant == "gzip-members":
        cuts = [len(plain) * k // (1 + flags % 3) for k in range(1 + flags % 3)] + [len(plain)]
        return b"".join(_gzip_member(plain[a:b]) for a, b in itertools.pairwise(cuts))
    if variant != "lz4-frame":
        return compression.compress(CODECS[variant], plain)
    import lz4.frame

    return lz4.frame.compress(plain, block_linked=False, block_checksum=True,
                              content_checksum=bool(flags & 1), store_size=bool(flags & 2),
                              block_size=lz4.frame.BLOCKSIZE_MAX256KB if flags & 4 else lz4.frame.BLOCKSIZE_MAX64KB)
RECORDS_AT = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
# A zstd batch whose payload (flipped bits) libzstd 1.5.4 decodes and 1.5.7 reports as corrupt.
ZSTD_DISAGREEMENT = (
    "00000000000000000000010effffffff025270e51500040000000700000000000000000000000000000000ffffffffff"
    "ffffffffffffffffff0000000828b52ffd00588c060042c81d279045e979d5ddae0be1de245ece73d76802db9823e7fe"
    "b8488c94299e9bb3adbdb0ed6e72a79402ce4bcf639bdad41e250d5ce9bbd4d173a44ee2791678c6ce902e89f3d0f388"
    "88880d0612641b80aeb5567b2098a28d0a284eaa86a572ce3fcf333f083572fef03c4ea67c424d696f2838160cd7d609"
    "2c219083d2163a2221923a4459a1a2a70002cf1d852410e934c66b27087a34ae2c810715353572c857a5c11c9b4203e6"
    "2e1a9b90394f602b8de882d9e0273067879dc05c3b7c0273a8689835190093c1f6459272490e31010000"
)


def _plain_records(n: int, seed: int = 0) -> tuple[bytes, int]:
    """The uncompressed records region of a batch of ``n`` sample records, and its count."""
    records = sample_records(n)
    for i, r in enumerate(records):
        if r["value"] is not None:
            r["value"] = r["value"] * (1 + (i + seed) % 5)
    return build_v2(records)[RECORDS_AT:], n


def _batch(codec: str, payload: bytes, count: int, base_offset: int = 0) -> bytes:
    return raw_v2(payload, count, base_offset=base_offset, attributes=CODECS[codec])


def _outcome(data: bytes, decoder: Decoder, **kw: Any) -> tuple[str, Any]:
    try:
        batches = list(decode_segment(data, decoder=decoder, context=FileContext(path="t.log"), **kw))
    except KafkaFormatError as exc:
        return "error", (type(exc), str(exc), exc.position)
    return "ok", pa.Table.from_batches(batches, schema=RECORD_SCHEMA)


def _assert_same(data: bytes, **kw: Any) -> tuple[str, Any]:
    ref = _outcome(data, REFERENCE, **kw)
    fast = _outcome(data, FAST, **kw)
    assert ref[0] == fast[0], (ref, fast)
    if ref[0] == "ok":
        assert ref[1].equals(fast[1]), "Arrow output differs"
    else:
        assert ref[1] == fast[1]
    return fast


def _codec_of(variant: str) -> str:
    return {"lz4-frame": "lz4", "gzip-members": "gzip"}.get(variant, variant)


def _need_c(codec: str) -> None:
    if CODECS[codec] not in C_CODECS:
        pytest.skip(f"{codec} not decoded in C (zlib missing at build time, or liblz4/libzstd not found at import)")


def _gzip_library() -> str:
    """The library gzip is decoded with in C ("" when it is not decoded in C)."""
    from kafka_format.records import _fastdecode

    return _fastdecode.CODEC_LIBRARIES.get("gzip", "")


def _need_libdeflate() -> None:
    if not _gzip_library().startswith("libdeflate"):
        pytest.skip("gzip is not decoded by libdeflate here (libdeflate0 not installed, or "
                    f"KAFKA_FORMAT_C_CODECS chose zlib: {_gzip_library() or 'not in C'})")


def _no_python_codec(*args: Any, **kw: Any) -> bytes:
    raise AssertionError("the Python codec path was taken")


def _decoded_in_c_alone(data: bytes, monkeypatch: pytest.MonkeyPatch) -> pa.Table:
    """The fast decoder's table of ``data`` with the Python codecs unreachable: asserted equal to
    the reference decoder's (which decodes ``data`` without error)."""
    expected = _outcome(data, REFERENCE)
    assert expected[0] == "ok", expected
    monkeypatch.setattr(compression, "decompress", _no_python_codec)
    got = _outcome(data, FAST)
    assert got[0] == "ok" and got[1].equals(expected[1])
    return got[1]


@pytest.mark.parametrize("variant", VARIANTS)
def test_valid_payloads_are_decoded_in_c(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    codec = _codec_of(variant)
    _need_c(codec)
    if variant == "gzip-members":
        _need_libdeflate()      # zlib's C path decodes one member; it leaves more to the Python path
    data = b"".join(_batch(codec, _compress(variant, plain, i % 8), n, base_offset=10 * i)
                    for i, (plain, n) in enumerate(_plain_records(1 + i % 9, seed=i) for i in range(30)))
    assert _decoded_in_c_alone(data, monkeypatch).num_rows == sum(1 + i % 9 for i in range(30))


# ----------------------------------------------------------------------------- libraries


@pytest.mark.parametrize(("codec", "library"), [("lz4", "lz4"), ("zstd", "zstd")])
def test_codec_libraries_found_at_import_without_development_files(codec: str, library: str) -> None:
    """liblz4 and libzstd are loaded by soname when the module is imported: wherever the run-time
    library is installed, its codec is decoded in C (no -dev package was needed to build)."""
    import ctypes.util

    from kafka_format.records import _fastdecode

    if ctypes.util.find_library(library) is None:
        pytest.skip(f"lib{library} is not installed on this machine")
    assert CODECS[codec] in C_CODECS
    name, version = _fastdecode.CODEC_LIBRARIES[codec].split(" ")
    assert name.startswith(f"lib{library}.") and [int(p) for p in version.split(".")] >= [1, 4, 0]
    assert set(_fastdecode.CODEC_LIBRARIES) == {n for n, i in CODECS.items() if i in C_CODECS and i != 0}


def test_codecs_left_out_at_import_are_decoded_by_the_python_path(tmp_path: Any) -> None:
    """``KAFKA_FORMAT_C_CODECS`` names the codecs decoded in C, also when the module is imported:
    ``none`` leaves every payload to the Python path, with the same table."""
    import subprocess
    import sys

    data = b"".join(_batch(codec, _compress(codec, plain), n, base_offset=100 * i)
                    for i, codec in enumerate(COMPRESSED) for plain, n in [_plain_records(7, seed=i)])
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(data)
    expected = _outcome(data, REFERENCE)
    assert expected[0] == "ok"
    script = (
        "import sys, pyarrow as pa\n"
        "from kafka_format.records import _fastdecode\n"
        "from kafka_format.records.columns import FileContext\n"
        "from kafka_format.records.fast import FastDecoder\n"
        "from kafka_format.records.file_records import decode_segment\n"
        "print(_fastdecode.C_CODECS, sorted(_fastdecode.CODEC_LIBRARIES))\n"
        "batches = decode_segment(sys.argv[1], decoder=FastDecoder(), context=FileContext(path='t.log'))\n"
        "table = pa.Table.from_batches(list(batches))\n"
        "with pa.OSFile(sys.argv[2], 'wb') as f, pa.ipc.new_file(f, table.schema) as w:\n"
        "    w.write_table(table)\n"
    )
    for spec, wanted in (("none", ()), ("zstd, GZIP", ("gzip", "zstd"))):
        out = tmp_path / "table.arrow"
        env = {**os.environ, "KAFKA_FORMAT_C_CODECS": spec}
        run = subprocess.run([sys.executable, "-c", script, str(log), str(out)], env=env, capture_output=True,
                             text=True, check=True)
        names = [name for name in wanted if CODECS[name] in C_CODECS]
        assert run.stdout.splitlines()[0] == f"{1 | sum(1 << CODECS[n] for n in names)} {names}", spec
        assert pa.ipc.open_file(str(out)).read_all().equals(expected[1])


@st.composite
def damaged(draw: st.DrawFn) -> tuple[str, bytes, bytes]:
    """A log of 1-3 batches of one codec, one compressed payload damaged (CRC recomputed, so the
    damage reaches the decompressor): (codec, the log, the damaged payload)."""
    variant = draw(st.sampled_from(VARIANTS))
    codec = _codec_of(variant)
    flags = draw(st.integers(0, 7))
    batches = []
    for i in range(draw(st.integers(1, 3))):
        plain, n = _plain_records(draw(st.integers(1, 8)), seed=i)
        batches.append((_compress(variant, plain, flags), n))
    k = draw(st.integers(0, len(batches) - 1))
    payload = bytearray(batches[k][0])
    kind = draw(st.sampled_from(["flip", "byte", "truncate", "append", "count"]))
    count = batches[k][1]
    if kind == "flip":
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, len(payload) - 1))
            payload[i] ^= 1 << draw(st.integers(0, 7))
    elif kind == "byte":
        i = draw(st.integers(0, len(payload) - 1))
        payload[i] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF]))
    elif kind == "truncate":
        del payload[draw(st.integers(0, len(payload) - 1)):]
    elif kind == "append":
        payload += draw(st.binary(min_size=1, max_size=24))
    else:
        count = draw(st.sampled_from([0, count - 1, count + 1, 2**31 - 1, -1]))
    batches[k] = (bytes(payload), count)
    log = b"".join(_batch(codec, p, n, base_offset=100 * i) for i, (p, n) in enumerate(batches))
    return codec, log, bytes(payload)


@functools.cache
def _native_zstd() -> Any:
    """The libzstd the compiled decoder loads: the first of its names that opens (``ZSTD_NAMES`` in
    ``_codeclibs.c``), with ``ZSTD_decompress`` declared."""
    import ctypes

    for name in ("libzstd.so.1", "libzstd.so", "libzstd.1.dylib", "libzstd.dylib"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.ZSTD_decompress.restype = ctypes.c_size_t
        lib.ZSTD_decompress.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
        lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
        return lib
    raise AssertionError("zstd is decoded in C, yet no libzstd opens here")


def _zstd_releases_disagree(codec: str, payload: bytes) -> bool:
    """Whether the libzstd the compiled decoder loads and the one python-zstandard bundles (the
    reference decoder's) judge ``payload`` differently.  They are often different releases (here
    1.5.4 and 1.5.7), and releases differ in which damage they detect: a flipped bit one decodes
    to the original records, another reports as corrupt.  Such a payload says nothing about the
    two decoders' parity, only about the two libraries."""
    if codec != "zstd" or CODECS[codec] not in C_CODECS:
        return False
    import ctypes

    lib = _native_zstd()
    out = ctypes.create_string_buffer(1 << 20)
    n = lib.ZSTD_decompress(out, len(out), payload, len(payload))
    native = None if lib.ZSTD_isError(n) else out.raw[:n]
    try:
        bundled: bytes | None = compression.decompress(CODECS[codec], payload, magic=2, max_output=1 << 20)
    except KafkaFormatError:
        bundled = None
    return native != bundled


@PROFILE
@given(damaged())
def test_damaged_payloads_fail_identically(case: tuple[str, bytes, bytes]) -> None:
    codec, data, payload = case
    assume(not _zstd_releases_disagree(codec, payload))
    _assert_same(data)


@PROFILE
@given(damaged())
def test_damaged_payloads_permissive_identically(case: tuple[str, bytes, bytes]) -> None:
    codec, data, payload = case
    assume(not _zstd_releases_disagree(codec, payload))
    _assert_same(data, mode="PERMISSIVE")


def test_a_zstd_payload_the_two_releases_judge_differently_is_recognised() -> None:
    """The payload CI's hypothesis run found (2026-11-28): system libzstd 1.5.4 decodes it to the
    batch's 8 records, python-zstandard's 1.5.7 reports "Data corruption detected".  The filter
    above must see it (where both libraries are those releases), and each decoder's outcome is its
    library's: the fast one the records, the reference one a corrupt frame."""
    data = bytes.fromhex(ZSTD_DISAGREEMENT)
    payload = data[RECORDS_AT:]
    if CODECS["zstd"] not in C_CODECS:
        pytest.skip("zstd not decoded in C")
    if not _zstd_releases_disagree("zstd", payload):
        pytest.skip("the libzstd releases here agree on this payload")
    fast = _outcome(data, FAST, mode="PERMISSIVE")
    ref = _outcome(data, REFERENCE, mode="PERMISSIVE")
    assert fast[0] == ref[0] == "ok"
    assert fast[1]["offset"].to_pylist() == list(range(8)) and ref[1].num_rows == 0


@pytest.mark.parametrize("level", range(3))
def test_xxh32_of_buffers_side_by_side_equals_xxhash(level: int) -> None:
    """The lz4 block checksums are computed several blocks at a time (vector lanes side by side
    at levels 1-2, each buffer going on alone past the group's shortest): xxHash32 of every
    buffer, as the xxhash package computes it, for groups of 0-32 buffers of mixed lengths."""
    xxhash = pytest.importorskip("xxhash", reason="the xxhash package is the oracle")
    import kafka_format.records._fastdecode as native

    rng = random.Random(level)
    lengths = [0, 1, 3, 4, 5, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000, 31_000, 65_536]
    for k in [0, 1, 3, 4, 5, 8, 13, 32]:
        buffers = [rng.randbytes(rng.choice(lengths) + rng.randrange(3)) for _ in range(k)]
        assert native.xxh32_many(buffers, level) == [xxhash.xxh32_intdigest(b) for b in buffers]
    with pytest.raises(ValueError):
        native.xxh32_many([b""] * 33, level)


def _lz4_frames(plain: bytes) -> bytes:
    import lz4.frame

    return lz4.frame.compress(plain, block_linked=False, block_checksum=True, store_size=False,
                              block_size=lz4.frame.BLOCKSIZE_MAX64KB)


def _big_records(seed: int) -> tuple[bytes, int]:
    """The records region of a batch whose lz4 frame has four or five 64 KiB blocks (eight of them
    more than the 32 blocks verified together)."""
    rng = random.Random(seed)
    records = [{"timestamp": 1_700_000_000_000 + i, "key": b"k%d" % i,
                "value": b"%d," % rng.randrange(10**9) * rng.randint(100, 400), "headers": []}
               for i in range(110 + seed % 7)]
    return build_v2(records)[RECORDS_AT:], len(records)


@pytest.mark.parametrize("damage", [None, 0, 3, 7, 8, 9, 15])
def test_lz4_block_checksums_verified_in_groups_decode_identically(damage: int | None,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The fused path verifies the block checksums of up to 8 consecutive lz4 batches together
    (a group ends at a batch of another codec; blocks past 32 a group are verified one by one).
    Undamaged: everything decoded in C.  One block checksum broken (in the first, a middle or
    the last batch of a group, in its first or last block): the reference decoder's error, and
    PERMISSIVE skips that batch alone."""
    _need_c("lz4")
    layout = ["lz4"] * 12 + ["none"] + ["lz4"] * 10          # groups: 0-7, 8-11, (13-20, 21-22)
    batches = []
    for i, codec in enumerate(layout):
        plain, n = _big_records(i)
        payload = _lz4_frames(plain) if codec == "lz4" else plain
        if i == damage:
            payload = bytearray(payload)
            block_end = 7 + 4 + (struct.unpack_from("<I", payload, 7)[0] & 0x7FFFFFFF)
            at = block_end if i % 2 else len(payload) - 9     # a first block's checksum, or the last block
            payload[at] ^= 0x10
            payload = bytes(payload)
        batches.append(_batch(codec, payload, n, base_offset=100 * i))
    data = b"".join(batches)
    if damage is None:
        _decoded_in_c_alone(data, monkeypatch)
        return
    kind, _outcome = _assert_same(data)
    assert kind == "error"
    kind, table = _assert_same(data, mode="PERMISSIVE")
    assert kind == "ok" and table.num_rows == sum(110 + i % 7 for i in range(len(layout)) if i != damage)


def _room_first() -> bytes:
    """An uncompressed batch whose payload (about 1.2 MB of header values, no record value) sizes
    the call's value column far beyond its values: the compressed batches after it are
    decompressed straight into that column (their codecs ask for up to 256 KiB of room)."""
    record = {"timestamp": 1_700_000_000_000, "key": b"k", "value": None,
              "headers": [(f"h{i}", bytes([i % 251]) * 4000) for i in range(300)]}
    return build_v2([record], base_offset=0)


@pytest.mark.parametrize("codec", COMPRESSED)
@pytest.mark.parametrize("damage", ["none", "value past record", "record length", "trailing", "header key"])
def test_records_decompressed_into_the_value_column_decode_identically(codec: str, damage: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A decompressed batch's records lie in the value column (its values moved down in place over
    the bytes already read): valid batches of every codec give the reference decoder's table
    without the Python codecs, and a broken record in one of them (a value running past its
    record, a wrong record length, bytes after the last record, a null header key) the
    reference decoder's error, or with PERMISSIVE that batch skipped alone."""
    from builders import varint

    _need_c(codec)
    batches = [_room_first()]
    for i in range(1, 7):
        plain, n = _plain_records(5 + i, seed=i)
        if i == 4 and damage != "none":
            good = varint(11) + b"\x00" + varint(0) + varint(0) + varint(2) + b"ab" + varint(3) + b"xyz" + varint(0)
            broken = {"value past record": varint(11) + b"\x00" + varint(0) + varint(0) + varint(2) + b"ab"
                                           + varint(9) + b"xyz" + varint(0),
                      "record length": varint(12) + good[1:] + b"\x00",
                      "trailing": good + b"\x00\x00",
                      "header key": varint(13) + good[1:-1] + varint(1) + varint(-1) + varint(-1)}[damage]
            plain, n = good * 3 + broken + good, 5
        batches.append(_batch(codec, compression.compress(CODECS[codec], plain), n, base_offset=100 * i))
    data = b"".join(batches)
    if damage == "none":
        assert _decoded_in_c_alone(data, monkeypatch).num_rows == 1 + sum(5 + i for i in range(1, 7))
        return
    kind, _ = _assert_same(data)
    assert kind == "error"
    kind, table = _assert_same(data, mode="PERMISSIVE")
    assert kind == "ok" and table.num_rows == 1 + sum(5 + i for i in range(1, 7) if i != 4)


@pytest.mark.parametrize("codec", COMPRESSED)
def test_decompressed_size_is_capped(codec: str) -> None:
    """A payload expanding past max_decompressed: the same DecompressionLimitError (the C path
    stops at the cap and hands the batch to the Python path, which raises)."""
    _need_c(codec)
    plain, n = _plain_records(40)
    data = _batch(codec, compression.compress(CODECS[codec], plain), n)
    kind, (cls, message, position) = _assert_same(data, max_decompressed=len(plain) - 1)
    assert kind == "error" and cls is DecompressionLimitError and position is not None, message
    assert "t.log" in message
    _assert_same(data, max_decompressed=len(plain))  # exactly at the cap: decoded


@pytest.mark.parametrize("codec", COMPRESSED)
def test_held_bytes_split_calls_as_the_python_path(codec: str) -> None:
    """Batches are taken until max_decompressed bytes are held: same rows either way."""
    _need_c(codec)
    parts = [_plain_records(6, seed=i) for i in range(12)]
    data = b"".join(_batch(codec, compression.compress(CODECS[codec], p), n, base_offset=10 * i)
                    for i, (p, n) in enumerate(parts))
    cap = max(len(p) for p, _ in parts) + 1
    kind, table = _assert_same(data, max_decompressed=cap)
    assert kind == "ok" and table.num_rows == 72


def _gzip_member(plain: bytes, flags: int = 0, extra: bytes = b"") -> bytes:
    deflater = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = deflater.compress(plain) + deflater.flush()
    header = b"\x1f\x8b\x08" + bytes([flags]) + b"\x00\x00\x00\x00\x00\xff" + extra
    return header + body + struct.pack("<II", zlib.crc32(plain), len(plain))


def _unusual_payloads(plain: bytes) -> list[tuple[str, bytes]]:
    """Legal framings the C path declines (the Python path decodes them), or (two gzip members,
    with libdeflate) decodes as the Python path does."""
    lz4_frame = compression.compress(compression.LZ4, plain)
    zstd_frame = compression.compress(compression.ZSTD, plain)
    xerial = compression.compress(compression.SNAPPY, plain)
    import cramjam

    half = len(plain) // 2
    return [
        ("gzip", _gzip_member(plain, flags=0x08, extra=b"name\x00")),           # FNAME
        ("gzip", _gzip_member(plain[:half]) + _gzip_member(plain[half:])),     # two members
        ("gzip", _gzip_member(plain) + b"\x00garbage"),                        # ignored trailer
        ("snappy", bytes(cramjam.snappy.compress_raw(plain))),                 # one raw block
        ("snappy", xerial + xerial),            # concatenated stream: the records twice (an error)
        ("snappy", xerial + b"\x00\x01"),                                      # 1-3 bytes ignored
        ("lz4", lz4_frame + b"trailing bytes are ignored"),
        ("zstd", zstd_frame + compression.compress(compression.ZSTD, b"")),    # two frames
        ("zstd", struct.pack("<II", 0x184D2A50, 3) + b"abc" + zstd_frame),     # skippable frame
    ]


@pytest.mark.parametrize("index", range(9))
def test_unusual_framings_decode_identically(index: int) -> None:
    plain, n = _plain_records(12)
    codec, payload = _unusual_payloads(plain)[index]
    kind, table = _assert_same(_batch(codec, payload, n))
    if index == 4:
        assert kind == "error" and "records still remaining" in table[1], table
    else:
        assert kind == "ok" and table.num_rows == n, table


# --- gzip: whole members by libdeflate, or zlib's stream ----------------------------------------


def test_gzip_codec_library_is_the_fastest_installed() -> None:
    """gzip is decoded by libdeflate wherever its run-time library is installed (Debian's
    libdeflate0), unless ``KAFKA_FORMAT_C_CODECS`` chooses zlib (``gzip:zlib``); else by zlib."""
    import ctypes.util

    _need_c("gzip")
    spec = os.environ.get("KAFKA_FORMAT_C_CODECS", "").lower()
    if "gzip:zlib" in spec:
        assert _gzip_library().startswith("zlib "), _gzip_library()
    elif ctypes.util.find_library("deflate") is not None and "gzip" in (spec or "gzip"):
        assert _gzip_library() == "libdeflate.so.0", _gzip_library()
    else:
        pytest.skip("libdeflate is not installed on this machine: gzip is decoded by zlib")


def _members(plain: bytes, cuts: tuple[float, ...]) -> bytes:
    at = [0, *(int(len(plain) * c) for c in cuts), len(plain)]
    return b"".join(_gzip_member(plain[a:b]) for a, b in itertools.pairwise(at))


@pytest.mark.parametrize("cuts", [(), (0.5,), (0.2, 0.7), (0.0,), (1.0,), (0.3, 0.3, 0.9), (0.1, 0.2, 0.3, 0.4, 0.5)])
def test_gzip_members_back_to_back_decode_identically(cuts: tuple[float, ...],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """GZIPInputStream reads concatenated members (empty ones too) as one stream: the same
    records; libdeflate decodes them all in C (zlib's C path hands a second member to the
    Python path)."""
    _need_c("gzip")
    plain, n = _plain_records(12)
    data = _batch("gzip", _members(plain, cuts), n)
    kind, table = _assert_same(data)
    assert kind == "ok" and table.num_rows == n
    if _gzip_library().startswith("libdeflate"):
        _decoded_in_c_alone(data, monkeypatch)


def _after_member(plain: bytes) -> list[tuple[str, bytes, str]]:
    """(what follows a first member, the bytes, the reference's outcome kind)."""
    half = len(plain) // 2
    member = _gzip_member(plain[half:])
    broken = bytearray(member)
    broken[12] ^= 0x55
    return [
        ("garbage, ignored", b"\x00garbage", "ok"),
        ("zero bytes, ignored", bytes(9), "ok"),
        ("a header cut short, ignored", b"\x1f\x8b\x08\x00\x00", "ok"),
        ("a member with FNAME", _gzip_member(plain[half:], flags=0x08, extra=b"n\x00"), "ok"),
        ("a member, then garbage", member + b"tail", "ok"),
        ("a header without deflate data", b"\x1f\x8b\x08\x00" + bytes(6), "error"),
        ("a member with corrupt deflate data", bytes(broken), "error"),
        ("a member whose CRC32 is wrong", member[:-8] + struct.pack("<I", zlib.crc32(plain[half:]) ^ 1)
         + member[-4:], "error"),
        ("a member cut short", member[:-3], "error"),
    ]


@pytest.mark.parametrize("index", range(9))
def test_gzip_bytes_after_a_member_as_the_java_reader(index: int) -> None:
    """After a member, GZIPInputStream reads a further member when a header can be read there
    (its errors then count) and ignores the rest otherwise: the reference's outcome, message and
    position, whichever library decodes gzip in C."""
    _need_c("gzip")
    plain, n = _plain_records(12)
    half = len(plain) // 2
    what, tail, expected = _after_member(plain)[index]
    first = plain if index < 3 else plain[:half]        # the ignored tails follow every record
    kind, outcome = _assert_same(_batch("gzip", _gzip_member(first) + tail, n))
    assert kind == expected, (what, outcome)


@pytest.mark.parametrize(("member", "crc_xor", "isize"), [
    (0, 1, None), (0, 0, +1), (0, 0, -1), (0, 0, 0), (0, 0, 0xFFFFFFFF), (0, 0, 1 << 31),
    (1, 0, +1), (1, 1 << 31, None), (1, 0, 0),
])
def test_gzip_trailer_mismatches_fail_identically(member: int, crc_xor: int, isize: int | None) -> None:
    """A trailer's CRC32 or ISIZE (of the first or the second member) not that of its data: the
    Python path's error, naming the file, the batch's position and the expected and found values."""
    _need_c("gzip")
    plain, n = _plain_records(12)
    half = len(plain) // 2
    parts = [plain[:half], plain[half:]]
    members = [bytearray(_gzip_member(p)) for p in parts]
    crc, size = struct.unpack_from("<II", members[member], len(members[member]) - 8)
    if isize is not None:
        size = isize if isize in (0, 0xFFFFFFFF, 1 << 31) else size + isize
    struct.pack_into("<II", members[member], len(members[member]) - 8, crc ^ crc_xor, size)
    kind, (cls, message, position) = _assert_same(_batch("gzip", b"".join(members), n))
    assert kind == "error" and cls is CompressionError
    assert "corrupt gzip trailer" in message and "t.log" in message
    assert f"ISIZE {len(parts[member])}" in message
    assert position == 0                        # the batch's (the chained cause: the trailer's)


@pytest.mark.parametrize("isize", [200 << 20, 0xFFFFFFF0])
def test_gzip_lying_isize_never_sizes_an_allocation(isize: int) -> None:
    """A trailer claiming 200 MiB (under the 256 MiB cap) or 4 GiB for a few KiB of deflate data:
    the Python path's trailer error, and the C path's buffers stay within what the payload can
    expand to (deflate's 1032:1), never the claimed size."""
    import tracemalloc

    _need_c("gzip")
    plain, n = _plain_records(12)
    payload = bytearray(_gzip_member(plain))
    struct.pack_into("<I", payload, len(payload) - 4, isize)
    data = _batch("gzip", bytes(payload), n)
    assert 1032 * len(payload) < 16 << 20
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fast = _outcome(data, FAST)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert fast == _outcome(data, REFERENCE) and fast[0] == "error" and "corrupt gzip trailer" in fast[1][1]
    assert peak < 32 << 20, peak


def test_gzip_members_over_the_cap_fail_identically() -> None:
    """Members whose sum passes max_decompressed (each alone under it): the limit error."""
    _need_c("gzip")
    plain, n = _plain_records(40)
    data = _batch("gzip", _members(plain, (0.5,)), n)
    kind, (cls, message, _position) = _assert_same(data, max_decompressed=len(plain) - 1)
    assert kind == "error" and cls is DecompressionLimitError, message
    assert _assert_same(data, max_decompressed=len(plain))[0] == "ok"


@pytest.mark.parametrize("members", [1, 3])
def test_gzip_bomb_stops_at_the_cap(members: int) -> None:
    """64 MiB of zeros in ~64 KiB of gzip (its ISIZE true), max_decompressed 1 MiB: the limit
    error of the Python path, and no buffer of the C path beyond the cap."""
    import tracemalloc

    _need_c("gzip")
    zeros = bytes(64 << 20)
    data = _batch("gzip", _members(zeros, tuple(k / members for k in range(1, members))), 1)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fast = _outcome(data, FAST, max_decompressed=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert fast == _outcome(data, REFERENCE, max_decompressed=1 << 20)
    assert fast[0] == "error" and fast[1][0] is DecompressionLimitError
    assert peak < 8 << 20, peak


class _Bits:
    """A deflate bit stream: fields least significant bit first, Huffman codes most significant first."""

    def __init__(self) -> None:
        self.acc = 0
        self.n = 0

    def field(self, value: int, bits: int) -> None:
        self.acc |= value << self.n
        self.n += bits

    def code(self, code: int, bits: int) -> None:
        self.field(int(f"{code:0{bits}b}"[::-1], 2), bits)

    def bytes(self) -> bytes:
        return self.acc.to_bytes((self.n + 7) // 8, "little")


def _static_block(plain: bytes, run_at: int, symbol: int) -> bytes:
    """``plain`` as one fixed-Huffman deflate block of literals, except for the 258 bytes after
    ``run_at`` (copies of plain[run_at]), written as litlen ``symbol`` (285: length 258; 286: a
    symbol the format reserves) and distance symbol 0 (distance 1)."""
    bits = _Bits()
    bits.field(1, 1)                     # BFINAL
    bits.field(1, 2)                     # BTYPE 01: fixed Huffman codes
    i = 0
    while i < len(plain):
        if i == run_at + 1:
            bits.code(0xC0 + symbol - 280, 8)
            bits.code(0, 5)
            i += 258
            continue
        v = plain[i]
        if v < 144:
            bits.code(0x30 + v, 8)
        else:
            bits.code(0x190 + v - 144, 9)
        i += 1
    bits.code(0, 7)                      # end of block (256)
    return bits.bytes()


def test_gzip_a_reserved_deflate_symbol_is_judged_as_documented() -> None:
    """libdeflate decodes litlen symbol 286 as a 258-byte match where zlib (Java's Inflater, the
    Python path) reports corrupt deflate data; no compressor writes it and a broker never stores
    it (_fastcodecs.c lists the streams libdeflate is lenient with).  The same stream with symbol
    285 (the real length 258) decodes identically everywhere."""
    _need_c("gzip")
    records = sample_records(3)
    records[1]["value"] = b"a" * 300
    plain = build_v2(records)[RECORDS_AT:]
    run_at = plain.index(b"a" * 259)
    trailer = struct.pack("<II", zlib.crc32(plain), len(plain))
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    valid = _batch("gzip", header + _static_block(plain, run_at, 285) + trailer, 3)
    kind, table = _assert_same(valid)
    assert kind == "ok" and table.num_rows == 3
    reserved = _batch("gzip", header + _static_block(plain, run_at, 286) + trailer, 3)
    ref = _outcome(reserved, REFERENCE)
    assert ref[0] == "error" and "corrupt deflate data" in ref[1][1], ref
    fast = _outcome(reserved, FAST)
    if _gzip_library().startswith("libdeflate"):
        assert fast[0] == "ok" and fast[1].equals(table)
    else:
        assert fast == ref


@pytest.mark.skipif("gzip:zlib" in os.environ.get("KAFKA_FORMAT_C_CODECS", ""), reason="already the zlib run")
def test_gzip_tests_pass_with_zlib_chosen() -> None:
    """The zlib C path (a machine without libdeflate): this file's gzip and damaged-payload tests
    in a child run with ``KAFKA_FORMAT_C_CODECS=gzip:zlib,...``, which must pass."""
    import subprocess
    import sys

    env = {**os.environ, "KAFKA_FORMAT_C_CODECS": "gzip:zlib,lz4,zstd,snappy"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          __file__, "-k", "gzip or damaged or capped or unusual"],
                         env=env, capture_output=True, text=True, cwd=os.path.dirname(__file__))
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and " failed" not in run.stdout


def test_codec_missing_from_the_build_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without C codecs (a build without the libraries) the Python path decodes the same."""
    import kafka_format.records._fastdecode as native

    plain, n = _plain_records(9)
    data = b"".join(_batch(c, compression.compress(CODECS[c], plain), n, base_offset=20 * i)
                    for i, c in enumerate(COMPRESSED))
    expected = _outcome(data, REFERENCE)
    real = native.decode_v2_chunk

    def no_codecs(buf: Any, meta: Any, cap: int, options: int, *held: int) -> Any:
        codecs = (memoryview(meta).cast("B").cast("q").tolist()[6::native.CHUNK_META_COLUMNS])
        if any(flags >> native.FLAG_CODEC_SHIFT & 7 for flags in codecs):
            raise native.FormatViolation(0, "decompress", 0)
        return real(buf, meta, cap, options, *held)

    monkeypatch.setattr(native, "decode_v2_chunk", no_codecs)
    got = _outcome(data, FAST)
    assert got[0] == expected[0] == "ok" and got[1].equals(expected[1])


def test_arrow_assembly_compiled_fills_equal_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """``to_arrow``'s compiled fills (per-record batch fields, constant columns) give the same
    table as its numpy expressions, for mixed codecs, nulls and every context field."""
    from kafka_format.records import assembly as columns_module

    plain, n = _plain_records(7)
    data = b"".join(_batch(c, compression.compress(CODECS[c], plain), n, base_offset=10 * i)
                    for i, c in enumerate(["none", *COMPRESSED, "none"]))
    context = FileContext(path="/x/t-3/00000000000000000000.log", topic="tøpic", partition=3, segment=0,
                          log_dir="/x", broker_id=7)
    native = pa.Table.from_batches(list(decode_segment(data, decoder=FAST, context=context)))
    monkeypatch.setattr(columns_module, "_native", None)
    plain_numpy = pa.Table.from_batches(list(decode_segment(data, decoder=FAST, context=context)))
    assert native.num_rows == 6 * n and native.equals(plain_numpy)
    empty = FileContext()
    assert pa.Table.from_batches(list(decode_segment(data, decoder=FAST, context=empty))).num_rows == 6 * n


def test_crc32c_every_path_equals_the_portable_one() -> None:
    """The compiled CRC-32C (carry-less multiplication folding from 256 bytes, crc32 instructions
    below, tables without either) equals the portable table loop for every length around the
    thresholds, misaligned starts and chained initial values."""
    import random

    from kafka_format.records import _fastdecode as native

    rng = random.Random(5)
    data = rng.randbytes((1 << 16) + 300)
    for n in [*range(0, 600), 4095, 4096, 24 * 1024 + 5, 1 << 16]:
        off = n % 9
        value = rng.getrandbits(32)
        chunk = data[off:off + n]
        assert native.crc32c(chunk, value) == native.crc32c_portable(chunk, value), n


# --- snappy: our own decoder of the raw format (_fastcodecs.c snappy_elements) -----------------

_OFFSETS = (1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 64, 255, 256, 2047, 2048, 4000)


def _literal(chunk: bytes, extra: int) -> bytes:
    """A literal element; ``extra`` > 0 writes its length in that many bytes even when shorter fits."""
    n = len(chunk) - 1
    if extra == 0 and n < 60:
        return bytes([n << 2]) + chunk
    extra = max(extra, (n.bit_length() + 7) // 8, 1)
    return bytes([(59 + extra) << 2]) + n.to_bytes(extra, "little") + chunk


def _copy(offset: int, length: int, kind: int) -> bytes:
    if kind == 1:
        return bytes([1 | ((length - 4) << 2) | ((offset >> 8) << 5), offset & 0xFF])
    if kind == 2:
        return bytes([2 | ((length - 1) << 2)]) + offset.to_bytes(2, "little")
    return bytes([3 | ((length - 1) << 2)]) + offset.to_bytes(4, "little")


def _snappy_block(plain: bytes, choices: st.DataObject) -> bytes:
    """``plain`` as one raw snappy block using every element kind: literals with 0-4 length
    bytes (not always the fewest), copies with 1-, 2- and 4-byte offsets, overlapping ones."""
    out = bytearray()
    n = len(plain)
    while True:                              # the length varint
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            break
    i = 0
    while i < len(plain):
        matches = [(off, length) for off in _OFFSETS if off <= i
                   for length in (64, 11, 4, 1) if i + length <= len(plain)
                   and plain[i - off:i - off + length] == plain[i:i + length]]
        if matches and choices.draw(st.booleans()):
            off, length = choices.draw(st.sampled_from(matches))
            kinds = [k for k in (1, 2, 4) if (k != 1 or (4 <= length <= 11 and off < 2048))]
            out += _copy(off, length, choices.draw(st.sampled_from(kinds)))
            i += length
        else:
            size = choices.draw(st.integers(1, min(len(plain) - i, 300)))
            extra = choices.draw(st.sampled_from([0, 0, 1, 2, 3, 4]))
            if i + size == len(plain) and 0 < extra and extra + size < 4:
                extra = 0       # the Python path's snap rejects it: see test_snappy_short_long_literal_at_the_end
            out += _literal(plain[i:i + size], extra)
            i += size
    return bytes(out)


def _xerial(*blocks: bytes) -> bytes:
    return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + b"".join(struct.pack(">i", len(b)) + b for b in blocks)


def _repetitive_records(n: int, seed: int) -> tuple[bytes, int]:
    """Records whose values repeat short patterns (copies of small offsets, overlapping)."""
    records = sample_records(n)
    for i, r in enumerate(records):
        r["value"] = (b"ab" * (i + seed) + b"xyz" * 7 + bytes(range(i % 30)) * 3 + b"-" * (40 + seed))
    return build_v2(records)[RECORDS_AT:], n


@PROFILE
@given(st.integers(1, 12), st.integers(0, 20), st.data())
def test_snappy_every_element_kind_is_decoded_in_c(n: int, seed: int, choices: st.DataObject) -> None:
    """Hand-made streams using every element kind decode in C into the reference's table."""
    _need_c("snappy")
    plain, count = _repetitive_records(n, seed)
    cut = choices.draw(st.integers(0, len(plain)))
    payload = _xerial(_snappy_block(plain[:cut], choices), _snappy_block(plain[cut:], choices))
    data = _batch("snappy", payload, count)
    expected = _outcome(data, REFERENCE)
    assert expected[0] == "ok", expected
    real = compression.decompress
    compression.decompress = _no_python_codec
    try:
        got = _outcome(data, FAST)
    finally:
        compression.decompress = real
    assert got[0] == "ok" and got[1].equals(expected[1])


def _broken_snappy(plain: bytes) -> list[bytes]:
    """Raw blocks a conforming decoder rejects (declared length first)."""
    head = bytes([len(plain)]) if len(plain) < 128 else bytes([len(plain) & 0x7F | 0x80, len(plain) >> 7])
    lit = _literal(plain, 0)
    return [
        head + _literal(plain[:8], 0) + _copy(0, 4, 2) + _literal(plain[12:], 0),       # offset 0
        head + _literal(plain[:8], 0) + _copy(9, 4, 2) + _literal(plain[12:], 0),       # before the start
        head + _literal(plain[:8], 0) + _copy(8, 64, 4) + _literal(plain[8:], 0),       # past the declared end
        head + lit[:-1],                                                                # literal past the input
        head + lit + _literal(b"x", 0),                                                 # more than declared
        head + _literal(plain[:-1], 0),                                                 # less than declared
        head + _literal(plain[:8], 0) + bytes([2 | (3 << 2), 8]),                       # a tag cut short
        head + _literal(plain[:8], 0) + bytes([(62 << 2)]) + b"\x01",                   # literal length cut short
        b"\xff\xff\xff\xff\x7f" + lit,                                                  # declared > 32 bits
    ]


@pytest.mark.parametrize("index", range(9))
def test_snappy_broken_elements_fail_identically(index: int) -> None:
    """Each way a raw block breaks the format: the reference's outcome (the C path declines)."""
    _need_c("snappy")
    plain, n = _plain_records(3)
    assert len(plain) > 80
    block = _broken_snappy(plain)[index]
    for payload in (_xerial(block), block):
        kind, _ = _assert_same(_batch("snappy", payload, n))
        assert kind == "error"


def test_snappy_short_long_literal_at_the_end() -> None:
    """A block ending in a literal whose length is written in extra bytes with fewer than 4 bytes
    after its tag (no compressor writes one: shorter lengths fit the tag): the Python path's
    decoder (cramjam's snap) rejects it, so the C path declines it and both report the error."""
    _need_c("snappy")
    plain, n = _plain_records(2)
    for extra, tail in ((1, 1), (1, 2), (2, 1)):
        block = bytes([len(plain) & 0x7F | 0x80, len(plain) >> 7]) + _literal(plain[:-tail], 0) \
            + _literal(plain[-tail:], extra)
        kind, _ = _assert_same(_batch("snappy", _xerial(block), n))
        assert kind == "error"
