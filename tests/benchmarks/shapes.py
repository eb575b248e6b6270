"""Decode per corpus shape and codec: ns per record, where the time goes, vs aiokafka and the floor.

Three record shapes, written by aiokafka's compiled ``DefaultRecordBatchBuilder`` (an
implementation independent of ours) with the same records for every codec:

* small:  keys 8-16 B, values 20-100 B, 500 records a batch, no headers;
* medium: kafka-python's builder shape of the issue: 200 records a batch, keys 16-32 B,
          values 100-500 B, 0-2 headers;
* large:  keys 16-32 B, values 4-64 KiB, 16 records a batch.

Values are JSON-like text (compresses like typical event payloads).  Every run is one core,
CRC verified, warm page cache, the CPU time of the measuring thread; readers run in turn in
every round (a load change on the shared machine hits all of them) and the best round counts.

* ours: ``decode_segment`` of the file (the mapped-file path of ``decode_file``) into Arrow; the file
  is a copy written in one ``write`` just before the rounds (large page-cache folios); uncompressed
  shapes are also decoded from a copy written one batch per ``write`` (small folios, as a broker
  appends: mapping it costs page-table work per 4 KiB page) and from the bytes in memory;
* aiokafka: its C ``MemoryRecords`` over the same bytes, CRC validated, offset, timestamp, key,
  value and headers of every record touched;
* floor: the codec's own C decompression of every payload into one reused buffer
  (``decode_v2_chunk`` with ``OPT_DECOMPRESS_ONLY``: liblz4/libzstd/our snappy decoder/libdeflate, no Python
  call per batch) plus our uncompressed decode of the same records.

The headline (ours, aiokafka, the codec floor) is one pass of interleaved rounds; each breakdown
part is then timed on its own (a partial run leaves output blocks of other sizes in the
decoder's block cache, which would slow the next run of another kind: the real path reuses its
own).  Breakdown (C entry
points timed with phases switched off, on the file in memory): mapping = mapping, touching a
byte of every page and unmapping the file's 16 MiB windows as ``decode_segment`` does
(page-table work: its cost depends on the page cache's folio sizes); framing = ``scan`` without CRC; CRC = ``scan`` with CRC - framing;
decompression = the decompress-only pass; varints = the record loop without key/value copies -
decompression; copies = the full record loop - the loop without copies; Arrow + Python = the
whole ``decode_segment`` - (mapping + scan with CRC + full record loop): Arrow assembly, numpy
header columns, the per-chunk Python of the walker.

``--json FILE`` saves the rows; ``--before FILE`` (rows of an earlier run, e.g. of the previous
commit: ``PYTHONPATH=<old checkout> python shapes.py --json before.json``) adds before/after
columns.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

MIB = 1 << 20
CODECS = {"none": 0, "lz4": 3, "zstd": 4, "snappy": 2, "gzip": 1}


@dataclass(frozen=True)
class Shape:
    name: str
    key: tuple[int, int]
    value: tuple[int, int]
    per_batch: int
    max_headers: int
    mib: int  # uncompressed records per corpus


SHAPES = (
    Shape("small", (8, 16), (20, 100), 500, 0, 24),
    Shape("medium", (16, 32), (100, 500), 200, 2, 48),
    Shape("large", (16, 32), (4096, 65536), 16, 0, 96),
)

_WORDS = ("order", "user", "payment", "created", "updated", "status", "region", "amount",
          "currency", "EUR", "USD", "item", "quantity", "price", "session", "device", "mobile",
          "web", "click", "view", "checkout", "cart", "sku", "country", "city", "ok", "failed")


def _text_pool(rng: random.Random, size: int) -> bytes:
    parts, n = [], 0
    while n < size:
        word = f'"{rng.choice(_WORDS)}":{rng.randint(0, 10**rng.randint(1, 9))},'
        parts.append(word)
        n += len(word)
    return "".join(parts).encode()


def corpus(data_dir: Path, shape: Shape, codec: str, seed: int = 11) -> Path:
    """The ``.log`` of ``shape`` compressed with ``codec`` (built once, cached in ``data_dir``)."""
    path = data_dir / f"shape-{shape.name}-{codec}-{shape.mib}m.log"
    if path.exists():
        return path
    from aiokafka.record._crecords import DefaultRecordBatchBuilder

    rng = random.Random(seed)
    pool = _text_pool(rng, 4 * MIB)
    out = bytearray()
    raw = offset = 0
    ts = 1_700_000_000_000
    while raw < shape.mib * MIB:
        builder = DefaultRecordBatchBuilder(2, CODECS[codec], 0, -1, -1, -1, 1 << 30)
        for delta in range(shape.per_batch):
            key = f"user-{rng.randrange(10**15):015d}".encode()[: rng.randint(*shape.key)]
            size = rng.randint(*shape.value)
            at = rng.randrange(len(pool) - size)
            value = pool[at:at + size]
            headers = [("trace-id", rng.randbytes(8).hex().encode()), ("source", b"checkout")]
            builder.append(delta, ts + delta, key, value, headers[: rng.randint(0, shape.max_headers)])
            raw += len(key) + size
        batch = bytearray(builder.build())
        struct.pack_into(">q", batch, 0, offset)  # base offset: not covered by the CRC
        offset += shape.per_batch
        ts += shape.per_batch
        out += batch
    data_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(bytes(out))
    tmp.rename(path)
    return path


def fresh_copy(path: Path, *, per_batch: bool) -> Path:
    """A copy of ``path`` written now, beside it: in one ``write`` (the page cache holds it in
    large folios, which map with one page-table entry per folio) or, ``per_batch``, one
    ``write`` per batch as a broker appends them (small folios: a page-table entry per 4 KiB
    page).  Which of the two a file is in decides the cost of mapping it; that state lasts as
    long as the pages stay cached, whoever reads them later."""
    data = path.read_bytes()
    copy = path.with_name(f"{path.stem}-{'appended' if per_batch else 'written'}.tmp")
    with open(copy, "wb", buffering=0) as f:
        if not per_batch:
            f.write(data)
        else:
            pos = 0
            while pos + 12 <= len(data):
                end = pos + 12 + struct.unpack_from(">i", data, pos + 8)[0]
                f.write(data[pos:end])
                pos = end
    return copy


def _best(fns: dict[str, Callable[[], int]], repeats: int) -> dict[str, tuple[int, float]]:
    """Warm-up, then ``repeats`` rounds running every function in turn: (result, best CPU s)."""
    out: dict[str, tuple[int, float]] = {}
    for name, fn in fns.items():
        out[name] = (fn(), float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.thread_time()
            n = fn()
            dt = time.thread_time() - t0
            out[name] = (n, min(out[name][1], dt))
    return out


def _ours(path: Path, source: Path | bytes | None = None) -> Callable[[], int]:
    """``decode_segment`` of ``source`` (default: the file at ``path``; bytes: in memory)."""
    from kafka_format.records.columns import FileContext
    from kafka_format.records.fast import FastDecoder
    from kafka_format.records.file_records import decode_segment

    dec = FastDecoder()
    src = str(path) if source is None else source if isinstance(source, bytes) else str(source)

    def run() -> int:
        return sum(b.num_rows for b in decode_segment(src, decoder=dec, context=FileContext(path=str(path))))
    return run


def _aiokafka(data: bytes) -> Callable[[], int]:
    from aiokafka.record._crecords import MemoryRecords

    def run() -> int:
        n = 0
        records = MemoryRecords(data)
        while records.has_next():
            batch = records.next_batch()
            if not batch.validate_crc():
                raise AssertionError("aiokafka: CRC mismatch")
            for rec in batch:
                rec.offset, rec.timestamp, rec.key, rec.value, rec.headers  # noqa: B018
                n += 1
        return n
    return run


def _aiokafka_decompress(data: bytes, codec: str) -> Callable[[], int]:
    """aiokafka's own decompression (``aiokafka.codec``: cramjam's lz4, zstd and snappy, Python's
    zlib) of every payload, as its reader calls it: a new bytes object per batch."""
    from aiokafka import codec as ak

    from kafka_format.records import batch_v2, fast

    table = fast.FastDecoder().scan(data, verify_crc=False)
    payloads = [data[p + batch_v2.RECORDS_OFFSET:p + n] for p, n in zip(table.position.tolist(), table.size.tolist(),
                                                                          strict=True)]
    decode = {"lz4": ak.lz4_decode, "zstd": ak.zstd_decode, "snappy": ak.snappy_decode, "gzip": ak.gzip_decode}[codec]

    def run() -> int:
        return sum(len(decode(p)) for p in payloads)
    return run


def chunk_meta(data: bytes) -> np.ndarray:
    """decode_v2_chunk meta of every batch of ``data`` (no CRC check requested)."""
    from kafka_format.records import batch_v2, fast

    table = fast.FastDecoder().scan(data, verify_crc=False)
    rows = np.arange(len(table.position))
    meta = np.zeros((len(rows), fast._CHUNK_META_COLUMNS), dtype=np.int64)
    meta[:, :fast._META_COLUMNS] = fast._meta(table, rows)
    codec = (table.attributes & batch_v2.CODEC_MASK).astype(np.int64)
    meta[:, fast._META_FLAGS] |= codec << fast._fastdecode.FLAG_CODEC_SHIFT
    meta[:, fast._CHUNK_START] = table.position + batch_v2.RECORDS_OFFSET
    meta[:, fast._CHUNK_END] = table.position + table.size
    return meta


def chunk_pass(data: bytes, meta: np.ndarray, options: int) -> Callable[[], int]:
    """decode_v2_chunk over ``data`` in 16 MiB parts (the read size of decode_segment) holding at
    most REGION_HELD_BYTES decompressed a call, so that output blocks are recycled as in the real
    path."""
    from kafka_format.records import _fastdecode
    from kafka_format.records.fast import _CHUNK_START, REGION_HELD_BYTES

    cap = 256 * MIB
    part = (meta[:, _CHUNK_START] // (16 * MIB)).astype(np.int64)
    cuts = [0, *(np.flatnonzero(np.diff(part)) + 1).tolist(), len(meta)]
    groups = [np.ascontiguousarray(meta[a:b]) for a, b in itertools.pairwise(cuts) if b > a]

    def run() -> int:
        n = 0
        for group in groups:
            i = 0
            while i < len(group):
                cols, done, held = _fastdecode.decode_v2_chunk(data, group[i:], cap, options, REGION_HELD_BYTES)
                n += held if options & _fastdecode.OPT_DECOMPRESS_ONLY else len(cols[1]) // 8
                i += done
                del cols
        return n
    return run


def _scan(data: bytes, verify: int) -> Callable[[], int]:
    from kafka_format.records import _fastdecode

    def run() -> int:
        return _fastdecode.scan(data, 0, len(data), verify)[3]
    return run


def _mapping(path: Path) -> Callable[[], int]:
    """Map and unmap the file's windows as ``decode_segment`` does (its ``FileSource``), reading one
    byte of every 4 KiB page (a mapping made without MAP_POPULATE pays its page-table work at the
    first access: the decode's)."""
    from kafka_format.records.file_records import DEFAULT_READ_SIZE
    from kafka_format.records.file_source import FileSource

    def run() -> int:
        src = FileSource(str(path))
        pos = windows = 0
        try:
            while pos < src.size:
                window = src.read_chunk(pos, DEFAULT_READ_SIZE)
                pos += len(window)
                windows += int(np.frombuffer(window, dtype=np.uint8)[::4096].sum() >= 0)
                del window                      # unmapped here, as the next chunk's read does
        finally:
            src.close()
        return windows
    return run


@dataclass
class Row:
    shape: str
    codec: str
    log_bytes: int
    records: int
    value_bytes: int
    times: dict[str, float] = field(default_factory=dict)  # CPU s per measurement
    decompressed: int = 0

    def ns(self, name: str) -> float:
        return self.times[name] / self.records * 1e9


def measure(data_dir: Path, shape: Shape, codec: str, repeats: int) -> Row:
    from kafka_format.records import _fastdecode

    cached = corpus(data_dir, shape, codec)
    path = fresh_copy(cached, per_batch=False)            # "ours": a file in large folios
    copies = [path]
    data = path.read_bytes()
    meta = chunk_meta(data)
    headline: dict[str, Callable[[], int]] = {"ours": _ours(path), "aiokafka": _aiokafka(data)}
    if codec != "none":
        headline["decompress"] = chunk_pass(data, meta, _fastdecode.OPT_DECOMPRESS_ONLY)
        headline["aiokafka_decompress"] = _aiokafka_decompress(data, codec)
    parts: dict[str, Callable[[], int]] = {
        "mapping": _mapping(path),
        "scan": _scan(data, 0),
        "scan_crc": _scan(data, 1),
        "records": chunk_pass(data, meta, 0),
        "records_no_copy": chunk_pass(data, meta, _fastdecode.OPT_NO_COPY),
    }
    if codec == "none":                                   # the same decode by page-cache state
        copies.append(fresh_copy(cached, per_batch=True))
        headline["ours_appended"] = _ours(path, copies[-1])
        headline["ours_bytes"] = _ours(path, data)
        parts["mapping_appended"] = _mapping(copies[-1])
    try:
        best = _best(headline, repeats)
        for name, fn in parts.items():      # each alone: a partial run's blocks must not feed the next one
            best.update(_best({name: fn}, repeats))
    finally:
        for copy in copies:
            copy.unlink()
    records = best["ours"][0]
    assert best["aiokafka"][0] == records == best["records"][0], (best["aiokafka"][0], records)
    row = Row(shape.name, codec, len(data), records, 0, {k: v[1] for k, v in best.items()})
    if codec != "none":
        row.decompressed = best["decompress"][0]
    print(f"{shape.name:6} {codec:6} ours {row.ns('ours'):7.1f} ns/rec  aiokafka {row.ns('aiokafka'):7.1f}"
          f"  ({row.times['aiokafka'] / row.times['ours']:.2f}x)", flush=True)
    return row


def breakdown(row: Row) -> dict[str, float]:
    """ns per record of each phase (see the module doc)."""
    t = row.times
    decompress = t.get("decompress", 0.0)
    mapping = t.get("mapping", 0.0)
    parts = {
        "mapping": mapping,
        "framing": t["scan"],
        "CRC": max(t["scan_crc"] - t["scan"], 0.0),
        "decompression": decompress,
        "varints": max(t["records_no_copy"] - decompress, 0.0),
        "key/value copies": max(t["records"] - t["records_no_copy"], 0.0),
        "Arrow + Python": max(t["ours"] - mapping - t["scan_crc"] - t["records"], 0.0),
    }
    return {k: v / row.records * 1e9 for k, v in parts.items()}


def _fmt_rate(row: Row) -> str:
    s = row.times["ours"]
    return f"{row.records / s / 1e6:.2f} M rec/s, {row.log_bytes / s / 1e9:.2f} GB/s"


def markdown(rows: list[Row], before: list[Row] | None = None) -> list[str]:
    by = {(r.shape, r.codec): r for r in rows}
    lines = ["## Decode by corpus shape (tests/benchmarks/shapes.py)", "",
             "One core, CPU time of the measuring thread, CRC verified, warm page cache, every field of every "
             "record decoded (ours: `decode_segment` into Arrow of the file, a copy written in one `write` just "
             "before the rounds, so its page cache is in large folios; aiokafka: C reader over the bytes "
             "in memory, offset/timestamp/key/value/headers touched), best round of interleaved runs.  Shapes: "
             "small (keys 8-16 B, values 20-100 B, 500 records/batch), medium (keys 16-32 B, values 100-500 B, "
             "0-2 headers, 200 records/batch), large (values 4-64 KiB, 16 records/batch).  Floor = the "
             "codec's C decompression into a reused buffer + our uncompressed decode of the same records.", "",
             "| shape | codec | records | log MB | ours ns/rec | ours rate | aiokafka ns/rec | vs aiokafka "
             "| floor ns/rec | ours / floor | codec C GB/s (output) |",
             "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        plain = by.get((r.shape, "none"))
        floor = ""
        ratio = ""
        codec_rate = ""
        if r.codec != "none" and plain is not None:
            f = (r.times["decompress"] + plain.times["ours"]) / r.records * 1e9
            floor, ratio = f"{f:.1f}", f"{r.ns('ours') / f:.2f}x"
            codec_rate = f"{r.decompressed / r.times['decompress'] / 1e9:.2f}"
        lines.append(f"| {r.shape} | {r.codec} | {r.records:,} | {r.log_bytes / 1e6:.1f} | {r.ns('ours'):.1f} | "
                     f"{_fmt_rate(r)} | {r.ns('aiokafka'):.1f} | {r.times['aiokafka'] / r.times['ours']:.2f}x | "
                     f"{floor} | {ratio} | {codec_rate} |")
    lines += page_cache_states(rows)
    lines += decompression(rows)
    if before:
        lines += before_after(rows, before)
    lines += ["", "Where the time goes (ns per record; phases timed with parts of the C decoder switched off, "
              "so each is a difference of two runs and carries their noise):", "",
              "| shape | codec | mapping | framing | CRC | decompression | varints | key/value copies "
              "| Arrow + Python | total (ours) |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        b = breakdown(r)
        lines.append(f"| {r.shape} | {r.codec} | " + " | ".join(f"{v:.1f}" for v in b.values())
                     + f" | {r.ns('ours'):.1f} |")
    lines += ["", *targets(by), ""]
    return lines


def page_cache_states(rows: list[Row]) -> list[str]:
    """Uncompressed: the same decode of a file in large folios, of a file in small folios, of bytes."""
    plain = [r for r in rows if r.codec == "none" and "ours_appended" in r.times]
    if not plain:
        return []
    lines = ["", "Uncompressed, the same decode by where the bytes are (same rounds): a file whose page cache "
             "holds large folios (written in one go, or read back by `read`'s readahead), a file in small "
             "folios (written one batch per `write`, as a broker appends), the bytes in memory (as aiokafka "
             "is given them); mapping = mapping the small-folio file's windows, touching each page, unmapping:", "",
             "| shape | file, large folios | file, small folios | bytes in memory | mapping, small folios "
             "| vs aiokafka (large / small folios / memory) |", "|---|---:|---:|---:|---:|---|"]
    for r in plain:
        cells = []
        for name in ("ours", "ours_appended", "ours_bytes"):
            t = r.times[name]
            cells.append(f"{t / r.records * 1e9:.1f} ns/rec, {r.log_bytes / t / 1e9:.2f} GB/s")
        ratios = " / ".join(f"{r.times['aiokafka'] / r.times[n]:.2f}x" for n in ("ours", "ours_appended", "ours_bytes"))
        lines.append(f"| {r.shape} | " + " | ".join(cells) + f" | {r.ns('mapping_appended'):.1f} ns/rec | {ratios} |")
    return lines


TARGETS = {"lz4": 4.0, "zstd": 3.0, "snappy": 2.5, "gzip": 2.5}   # compressed: x aiokafka
DECOMPRESSORS = {"lz4": "liblz4", "zstd": "libzstd", "snappy": "our snappy decoder", "gzip": "libdeflate"}  # the C path's
PLAIN_TARGET = 4.0       # uncompressed: x aiokafka
FLOOR_MAX = 1.05         # compressed: our time / (C decompression + uncompressed decode of the records)


def _c_libraries() -> str:
    """The libraries the C path decompresses with, as loaded in this process."""
    from kafka_format.records import _fastdecode

    return ", ".join(f"{codec}: {lib}" for codec, lib in _fastdecode.CODEC_LIBRARIES.items()) or "none"


def decompression(rows: list[Row]) -> list[str]:
    """Compressed: our C decompression vs aiokafka's, and whether the codec leaves room for the target."""
    packed = [r for r in rows if r.codec != "none" and "aiokafka_decompress" in r.times]
    if not packed:
        return []
    lines = ["", "Compressed, decompression alone (same rounds; GB/s of decompressed output): ours = the C codec "
             f"into one reused buffer ({_c_libraries()}); aiokafka's "
             "= `aiokafka.codec` per payload (cramjam's lz4/zstd/snap, Python's zlib; a new bytes object per "
             "batch).  Budget = aiokafka's whole decode / the target ratio: ours must decode in less.  Where the "
             "decompression alone (our faster codec) exceeds the budget the target is out of reach for any "
             "decoder using that codec library:", "",
             "| shape | codec | ours GB/s | aiokafka's GB/s | decompression share of aiokafka's time "
             "| budget ns/rec | our decompression ns/rec | ours total ns/rec | reachable |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in packed:
        t = r.times
        budget = t["aiokafka"] / TARGETS[r.codec] / r.records * 1e9
        alone = t["decompress"] / r.records * 1e9
        lines.append(f"| {r.shape} | {r.codec} | {r.decompressed / t['decompress'] / 1e9:.2f} "
                     f"| {r.decompressed / t['aiokafka_decompress'] / 1e9:.2f} "
                     f"| {t['aiokafka_decompress'] / t['aiokafka']:.0%} | {budget:.1f} | {alone:.1f} "
                     f"| {r.ns('ours'):.1f} | {'no: decompression alone exceeds it' if alone > budget else 'yes'} |")
    return lines


def before_after(rows: list[Row], before: list[Row]) -> list[str]:
    """Ours and aiokafka, ns per record, in the earlier run and this one."""
    old = {(r.shape, r.codec): r for r in before}
    lines = ["", "Before and after (`--before`: the same script, corpora and machine, an earlier checkout's "
             "decoder; aiokafka measured in both runs shows how far the load moved between them):", "",
             "| shape | codec | ours before ns/rec | ours after ns/rec | speed-up | aiokafka before / after "
             "ns/rec | vs aiokafka before → after |", "|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        b = old.get((r.shape, r.codec))
        if b is None:
            continue
        lines.append(f"| {r.shape} | {r.codec} | {b.ns('ours'):.1f} | {r.ns('ours'):.1f} | "
                     f"{b.ns('ours') / r.ns('ours'):.2f}x | {b.ns('aiokafka'):.1f} / {r.ns('aiokafka'):.1f} | "
                     f"{b.times['aiokafka'] / b.times['ours']:.2f}x → {r.times['aiokafka'] / r.times['ours']:.2f}x |")
    return lines


def save_rows(path: Path, rows: list[Row]) -> None:
    path.write_text(json.dumps([r.__dict__ for r in rows], indent=1), encoding="utf-8")


def load_rows(path: Path) -> list[Row]:
    return [Row(**d) for d in json.loads(path.read_text(encoding="utf-8"))]


def targets(by: dict[tuple[str, str], Row]) -> list[str]:
    """The issue's targets, met or not."""
    lines = ["| target | measured | met |", "|---|---|---|"]

    def vs(r: Row) -> float:
        return r.times["aiokafka"] / r.times["ours"]

    def add(name: str, measured: str, ok: bool) -> None:
        lines.append(f"| {name} | {measured} | {'yes' if ok else 'no'} |")

    if (r := by.get(("small", "none"))) is not None:
        rate = r.records / r.times["ours"]
        add("uncompressed small >= 10 M records/s", f"{rate / 1e6:.2f} M records/s", rate >= 10e6)
    if (r := by.get(("medium", "none"))) is not None:
        gbs = r.log_bytes / r.times["ours"] / 1e9
        add("uncompressed medium >= 3.5 GB/s", f"{gbs:.2f} GB/s", gbs >= 3.5)
    if (r := by.get(("large", "none"))) is not None:
        gbs = r.log_bytes / r.times["ours"] / 1e9
        add("uncompressed large >= 5 GB/s", f"{gbs:.2f} GB/s", gbs >= 5)
    for shape in ("small", "medium", "large"):
        if (r := by.get((shape, "none"))) is not None:
            add(f"uncompressed {shape} >= {PLAIN_TARGET:g}x aiokafka", f"{vs(r):.2f}x", vs(r) >= PLAIN_TARGET)
    for shape, want in (("medium", 3.5), ("large", 5.0)):      # the same from a file in small folios
        if (r := by.get((shape, "none"))) is not None and "ours_appended" in r.times:
            gbs = r.log_bytes / r.times["ours_appended"] / 1e9
            add(f"uncompressed {shape} >= {want:g} GB/s, file in small folios", f"{gbs:.2f} GB/s", gbs >= want)
    for shape in ("small", "medium", "large"):
        if (r := by.get((shape, "none"))) is not None and "ours_appended" in r.times:
            x = r.times["aiokafka"] / r.times["ours_appended"]
            add(f"uncompressed {shape} >= {PLAIN_TARGET:g}x aiokafka, file in small folios", f"{x:.2f}x",
                x >= PLAIN_TARGET)
    for codec, want in TARGETS.items():
        for shape in ("small", "medium", "large"):
            if (r := by.get((shape, codec))) is not None:
                add(f"{codec} {shape} >= {want}x aiokafka", f"{vs(r):.2f}x", vs(r) >= want)
    for codec in ("lz4", "zstd", "snappy", "gzip"):
        for shape in ("small", "medium", "large"):
            r, plain = by.get((shape, codec)), by.get((shape, "none"))
            if r is not None and plain is not None:
                ratio = r.times["ours"] / (r.times["decompress"] + plain.times["ours"])
                add(f"{codec} {shape} within {FLOOR_MAX:g}x of the floor", f"{ratio:.2f}x", ratio <= FLOOR_MAX)
    return lines


def run(data_dir: Path, *, shapes: list[str] | None = None, codecs: list[str] | None = None,
        repeats: int = 3) -> list[Row]:
    rows = []
    for shape in SHAPES:
        if shapes and shape.name not in shapes:
            continue
        for codec in codecs or list(CODECS):
            rows.append(measure(data_dir, shape, codec, repeats))
    return rows


def update_section(path: Path, lines: list[str], before: str | None = "## Split planning") -> None:
    """Replace the section of ``path`` whose heading is ``lines[0]`` (up to the next ``## ``
    heading or ``<!-- `` mark) with ``lines``, the replaced one moved to the top of the history file
    (:func:`run.to_history`); or insert it before the ``before`` heading (else at the end)."""
    text = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    heading = lines[0]
    if heading in text:
        start = text.index(heading)
        end = next((i for i in range(start + 1, len(text)) if text[i].startswith(("## ", "<!-- "))), len(text))
        from run import to_history

        to_history(path, "\n".join(text[start:end]))
    elif before is not None and before in text:
        start = end = text.index(before)
    else:
        text += [""] if text and text[-1] else []       # a blank line before the heading
        start = end = len(text)
    text[start:end] = lines
    path.write_text("\n".join(text).rstrip("\n") + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("build/bench-data"))
    parser.add_argument("--shapes", default="small,medium,large")
    parser.add_argument("--codecs", default=",".join(CODECS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--update", type=Path, help="write the section into this BENCHMARKS.md")
    parser.add_argument("--json", type=Path, help="save the rows (for a later --before)")
    parser.add_argument("--before", type=Path, help="rows of an earlier run: before/after columns")
    args = parser.parse_args(argv)
    rows = run(args.data_dir, shapes=args.shapes.split(","), codecs=args.codecs.split(","),
               repeats=args.repeats)
    if args.json:
        save_rows(args.json, rows)
    lines = markdown(rows, load_rows(args.before) if args.before else None)
    print("\n".join(lines))
    if args.update:
        update_section(args.update, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
