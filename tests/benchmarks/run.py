"""Decode benchmarks: ``python tests/benchmarks/run.py --out BENCHMARKS.md``.

Measures, on one core, CRC verified, warm page cache, best of N runs (the readers compared
with each other run in turn in every round, so that a shared machine's load hits them alike):

* our compiled decoder (``FastDecoder``) through the public path
  (``decode_segment`` of the file, every record into Arrow columns);
* our reference decoder (on a slice: it is plain Python);
* kafka-python and aiokafka (C extension) iterating every record of the same bytes and
  touching offset, timestamp, key, value and headers, CRC checked per batch;
* bare decompression of the same payloads (``kafka_format.records.compression.decompress``: a
  Python call and a new bytes object per payload, as aiokafka decompresses);
* the floor of a compressed corpus: the codec's own C decompression into one reused buffer
  (:func:`c_decompression`) plus our decode of the same records uncompressed (the ``none``
  corpus of the same size, written from the same seed).
* the batch-header scan (``granularity="batch"``: headers + CRC, no record decoding).

Throughput is log bytes (and records) per second of CPU time of the measuring thread
(``time.thread_time``), which is what "per core" means and is robust to other processes
sharing the machine; wall-clock throughput is reported beside it.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen  # noqa: E402  (benchmark-local modules beside this file)
import shapes  # noqa: E402

from kafka_format.records import implementation as decoder_module  # noqa: E402
from kafka_format.records.columns import FileContext  # noqa: E402
from kafka_format.records.decoder import Decoder  # noqa: E402
from kafka_format.records.file_records import decode_segment  # noqa: E402

MIB = 1 << 20
# Rows of a compressed corpus's table besides the readers: the floor's two parts.
C_DECOMPRESSION = "codec C decompression (reused buffer)"
SAME_RECORDS_PLAIN = "kafka_format fast, the same records uncompressed"
V2_HEADER = 61                      # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
ATTRIBUTES_AT = 21
CODEC_MASK = 0x07


@dataclass
class Result:
    name: str
    corpus: str
    log_bytes: int
    records: int
    cpu_s: float
    wall_s: float
    per_batch: bool = False  # `records` counts batches (no record decoding)

    @property
    def mb_s(self) -> float:
        return self.log_bytes / self.cpu_s / 1e6

    @property
    def wall_mb_s(self) -> float:
        return self.log_bytes / self.wall_s / 1e6

    @property
    def rec_s(self) -> float:
        return self.records / self.cpu_s


def _best(fn: Callable[[], int], repeats: int) -> tuple[int, float, float]:
    """(records, best CPU seconds, best wall seconds) of ``repeats`` runs after a warm-up."""
    records = fn()  # warm-up: page cache, imports, allocator pools
    best_cpu = best_wall = float("inf")
    for _ in range(repeats):
        gc.collect()
        c0, w0 = time.thread_time(), time.perf_counter()
        n = fn()
        c1, w1 = time.thread_time(), time.perf_counter()
        if n != records:
            raise AssertionError(f"record count changed between runs: {records} vs {n}")
        best_cpu = min(best_cpu, c1 - c0)
        best_wall = min(best_wall, w1 - w0)
    return records, best_cpu, best_wall


def _best_interleaved(fns: dict[str, Callable[[], int]], repeats: int) -> dict[str, tuple[int, float, float]]:
    """:func:`_best` of each reader, the readers run in turn in every round: on a shared
    machine a load change then hits all of them, so their ratio is fairer."""
    records = {name: fn() for name, fn in fns.items()}  # warm-up
    best = {name: (float("inf"), float("inf")) for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            gc.collect()
            c0, w0 = time.thread_time(), time.perf_counter()
            n = fn()
            c1, w1 = time.thread_time(), time.perf_counter()
            if n != records[name]:
                raise AssertionError(f"{name}: record count changed between runs: {records[name]} vs {n}")
            best[name] = (min(best[name][0], c1 - c0), min(best[name][1], w1 - w0))
    return {name: (records[name], *best[name]) for name in fns}


def _slice_end(data: bytes, limit: int) -> int:
    """End of the last whole batch at or before ``limit``."""
    pos = 0
    while pos + 12 <= len(data):
        size = 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
        if pos + size > limit:
            break
        pos += size
    return pos


def ours(path: Path, decoder: Decoder, end: int | None = None) -> Callable[[], int]:
    def run() -> int:
        n = 0
        for batch in decode_segment(str(path), end=end, decoder=decoder, context=FileContext(path=str(path))):
            n += batch.num_rows
        return n
    return run


def ours_bytes(data: bytes, decoder: Decoder) -> Callable[[], int]:
    def run() -> int:
        n = 0
        for batch in decode_segment(data, decoder=decoder, context=FileContext()):
            n += batch.num_rows
        return n
    return run


def header_scan(path: Path, decoder: Decoder) -> Callable[[], int]:
    def run() -> int:
        n = 0
        for batch in decode_segment(str(path), decoder=decoder, granularity="batch"):
            n += batch.num_rows
        return n
    return run


def _oracle_reader(records_cls: Any, name: str, data: bytes) -> Callable[[], int]:
    """Every record of ``data`` through another library's MemoryRecords, CRC checked, fields touched."""
    def run() -> int:
        n = 0
        records = records_cls(data)
        while records.has_next():
            batch = records.next_batch()
            if not batch.validate_crc():
                raise AssertionError(f"{name}: CRC mismatch")
            for rec in batch:
                rec.offset, rec.timestamp, rec.key, rec.value, rec.headers  # noqa: B018
                n += 1
        return n
    return run


def aiokafka_reader(data: bytes) -> Callable[[], int]:
    from aiokafka.record._crecords import MemoryRecords

    return _oracle_reader(MemoryRecords, "aiokafka", data)


def kafka_python_reader(data: bytes) -> Callable[[], int]:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from kafka.record.memory_records import MemoryRecords

    return _oracle_reader(MemoryRecords, "kafka-python", data)


def bare_decompression(data: bytes) -> Callable[[], int]:
    from kafka_format.records import compression

    payloads = []
    pos = 0
    while pos + V2_HEADER <= len(data):
        size = 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
        codec = data[pos + ATTRIBUTES_AT + 1] & CODEC_MASK
        payloads.append((codec, data[pos + V2_HEADER:pos + size]))
        pos += size

    def run() -> int:
        for codec, payload in payloads:
            if codec:
                compression.decompress(codec, payload, magic=2, max_output=1 << 31)
        return len(payloads)
    return run


def c_decompression(data: bytes) -> Callable[[], int]:
    """The codec's own C decompression of every payload of ``data`` into one reused buffer (the
    compiled decoder's decompress-only pass, no Python call per batch): the first part of the floor.
    Counts batches."""
    from kafka_format.records import _fastdecode

    meta = shapes.chunk_meta(data)
    decompress = shapes.chunk_pass(data, meta, _fastdecode.OPT_DECOMPRESS_ONLY)

    def run() -> int:
        decompress()
        return len(meta)
    return run


def _cpu_line() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}, " \
           f"Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("BENCHMARKS.md"))
    parser.add_argument("--data-dir", type=Path, default=Path("build/bench-data"))
    parser.add_argument("--size-mib", type=int, default=256, help="uncompressed corpus size")
    parser.add_argument("--compressed-mib", type=int, default=64,
                        help="records (uncompressed MiB) of each compressed corpus")
    parser.add_argument("--slow-mib", type=int, default=4, help="slice for the plain-Python readers")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--codecs", default="none,lz4,snappy,zstd,gzip")
    parser.add_argument("--spark", action=argparse.BooleanOptionalAction, default=True,
                        help="also scan through Spark (kafka-log vs Parquet, several sizes)")
    parser.add_argument("--spark-sizes-mib", default="64,256,1024")
    parser.add_argument("--engines", action=argparse.BooleanOptionalAction, default=True,
                        help="the jobs on the local engine (data_samples/, fresh processes) and local vs "
                             "Spark per core on one large partition (with --spark)")
    parser.add_argument("--shapes", action=argparse.BooleanOptionalAction, default=True,
                        help="also the corpus shapes (ns/record, breakdown, floor) and cluster-scale planning")
    parser.add_argument("--typed", action=argparse.BooleanOptionalAction, default=True,
                        help="also the typed export against the binary export (typed_export_bench.py: two record "
                             "shapes, three formats; on Spark too with --spark)")
    parser.add_argument("--typed-records", type=int, default=1_000_000, help="records per typed-export topic")
    parser.add_argument("--runtime", action=argparse.BooleanOptionalAction, default=True,
                        help="with --spark: every job as `klogs JOB --engine spark` against `--engine local`, by the "
                             "CPU of the whole process tree (runtime_bench.py: three corpus shapes, the fixed cost)")
    args = parser.parse_args(argv)

    from kafka_format.records.fast import CRC32C_IMPLEMENTATION, FastDecoder

    fast, reference = FastDecoder(), Decoder()
    results: list[Result] = []
    notes: list[str] = []

    def measure(name: str, corpus: str, log_bytes: int, fn: Callable[[], int], *,
                per_batch: bool = False, timed: tuple[int, float, float] | None = None) -> Result:
        records, cpu_s, wall_s = timed if timed is not None else _best(fn, args.repeats)
        r = Result(name, corpus, log_bytes, records, cpu_s, wall_s, per_batch)
        results.append(r)
        unit = "Mbatch/s" if per_batch else "Mrec/s"
        print(f"{corpus:7} {name:34} {r.mb_s:9.1f} MB/s (wall {r.wall_mb_s:8.1f}) {r.rec_s / 1e6:7.3f} {unit}",
              flush=True)
        return r

    for codec in args.codecs.split(","):
        size = args.size_mib if codec == "none" else args.compressed_mib
        corpus_file = gen.corpus_path(args.data_dir, codec, size * MIB)
        data = corpus_file.read_bytes()
        slow_end = _slice_end(data, args.slow_mib * MIB)
        corpus = codec
        # The files read are copies written now, so that every run maps pages in the same state
        # (large folios; shapes.fresh_copy): the corpus file's state is whatever its history left.
        path = shapes.fresh_copy(corpus_file, per_batch=False)
        copies = [path]
        fns = {"kafka_format fast (file)": ours(path, fast),
               "kafka_format fast (bytes)": ours_bytes(data, fast),
               "aiokafka (C)": aiokafka_reader(data)}
        log_bytes = dict.fromkeys(fns, len(data))
        if codec != "none":
            copies.append(shapes.fresh_copy(gen.corpus_path(args.data_dir, "none", size * MIB), per_batch=False))
            fns |= {"bare decompression": bare_decompression(data), C_DECOMPRESSION: c_decompression(data),
                    SAME_RECORDS_PLAIN: ours(copies[-1], fast)}   # the same records
            log_bytes |= {"bare decompression": len(data), C_DECOMPRESSION: len(data),
                          SAME_RECORDS_PLAIN: copies[-1].stat().st_size}
        try:
            timed = _best_interleaved(fns, args.repeats)  # the compared readers, in turn
            for name, fn in fns.items():
                measure(name, corpus, log_bytes[name], fn, timed=timed[name],
                        per_batch=name in ("bare decompression", C_DECOMPRESSION))
            measure(f"kafka_format reference ({args.slow_mib} MiB)", corpus, slow_end,
                    ours(path, reference, end=slow_end))
            measure(f"kafka-python ({args.slow_mib} MiB)", corpus, slow_end,
                    kafka_python_reader(data[:slow_end]))
            if codec == "none":
                measure("batch-header scan (fast)", corpus, len(data), header_scan(path, fast), per_batch=True)
                measure("batch-header scan (reference)", corpus, len(data), header_scan(path, reference),
                        per_batch=True)
        finally:
            for copy in copies:
                copy.unlink()

    if args.shapes:
        import planning_scale  # noqa: PLC0415  (benchmark-local module)

        notes += shapes.markdown(shapes.run(args.data_dir, repeats=args.repeats))
        notes += planning_scale.markdown(planning_scale.run(args.data_dir, list(planning_scale.SCALES)))
    notes += planning_notes()
    notes += tiered_notes(args.data_dir, repeats=args.repeats)
    if args.engines:
        import engine_bench  # noqa: PLC0415  (benchmark-local module)

        samples = engine_bench.sample_times(args.repeats)
        rows = engine_bench.throughput(args.data_dir, args.size_mib) if args.spark else []
        notes += engine_bench.markdown(samples, rows, size_mib=args.size_mib)
    if args.spark:
        import spark_scan  # noqa: PLC0415  (benchmark-local module; starts Spark)

        sizes = tuple(int(s) for s in args.spark_sizes_mib.split(","))
        notes += spark_scan.markdown([spark_scan.spark_scans(args.data_dir, sizes_mib=sizes,
                                                             repeats=args.repeats)])
        notes += export_notes(args.data_dir, (256,))
        if args.runtime:
            notes += runtime_notes(args.data_dir, rounds=args.repeats)
    if args.typed:
        notes += typed_notes(args.data_dir, records=args.typed_records, rounds=args.repeats, spark=args.spark)
    _write(args.out, results, notes, CRC32C_IMPLEMENTATION, args)
    print(f"wrote {args.out}")
    return 0


def typed_notes(data_dir: Path, *, records: int, rounds: int, spark: bool) -> list[str]:
    """The typed-export section, measured in a child process: by now this one has imported pyspark
    (the Spark parts above), and a process that has must start the local engine's pool workers by
    spawning fresh interpreters, not by forking (see ``kafka_format.engine.run_tasks``), which would
    add their start-up to every local export of a topic large enough for a pool; ``klogs --engine
    local`` never has pyspark loaded."""
    with tempfile.TemporaryDirectory() as tmp:
        section = Path(tmp) / "typed.md"
        cmd = [sys.executable, str(HERE / "typed_export_bench.py"), "--data-dir", str(data_dir), "--records",
               str(records), "--rounds", str(rounds), "--out", str(section), *([] if spark else ["--no-spark"])]
        subprocess.run(cmd, check=True)
        return section.read_text(encoding="utf-8").splitlines()


def runtime_notes(data_dir: Path, *, rounds: int, master: str = "local[2]") -> list[str]:
    """The job runtime's targets (runtime_bench.py): the export on three corpus shapes, offsets,
    retention and audit on the first, each against the local engine and a plain session."""
    import runtime_bench  # noqa: PLC0415  (benchmark-local module; runs klogs in child processes)

    rows = runtime_bench.run(data_dir, rounds=rounds, master=master, jobs=("export",))
    rows += [r for r in runtime_bench.run(data_dir, rounds=rounds, master=master,
                                          jobs=("offsets", "retention", "audit"), shapes=runtime_bench.SHAPES[:1])
             if r["job"] != "plain session"]
    return [runtime_bench.markdown(rows, master)]


def export_notes(data_dir: Path, sizes_mib: tuple[int, ...], master: str = "local[2]") -> list[str]:
    """``klogs export`` vs Spark's Parquet -> Parquet copy of the same rows (the target: within 2x)."""
    import export_bench  # noqa: PLC0415  (benchmark-local module; starts Spark)

    from kafka_format.spark.session import build_session

    spark = build_session(master=master, profile="local", app_name="klogs-export-bench",
                          extra_conf={"spark.ui.enabled": "false"})
    try:
        results = [export_bench.run_export_benchmark(spark, size, data_dir=data_dir) for size in sizes_mib]
    finally:
        spark.stop()
    return export_bench.markdown(results, master)


def tiered_notes(data_dir: Path, *, repeats: int) -> list[str]:
    """A tiered topic's export against the same records in local segments, and planning's store
    requests (tiered_bench.py)."""
    import tiered_bench  # noqa: PLC0415  (benchmark-local module)

    r = tiered_bench.run_tiered_benchmark(size_mib=512, segment_mib=16, partitions=4, data_dir=data_dir,
                                          repeats=repeats)
    print(f"tiered export: {r['tiered_mb_per_cpu_s']:.0f} MiB/CPU s, local {r['local_mb_per_cpu_s']:.0f}", flush=True)
    return tiered_bench.markdown(r).splitlines()


def planning_notes(segments: int = 10_000) -> list[str]:
    """Driver-side planning of a synthetic log dir of ``segments`` segments (target: < 5 s)."""
    import tempfile

    from planning_scale import benchmark_planning  # noqa: PLC0415  (benchmark-local module)

    with tempfile.TemporaryDirectory() as root:
        r = benchmark_planning(root, segments=segments)
    total = r["discover_s"] + r["plan_s"]
    print(f"planning {int(r['segments'])} segments: {total:.2f} s", flush=True)
    return ["## Split planning", "",
            f"{int(r['segments']):,} segments in 10 partitions → {int(r['splits']):,} splits: discovery "
            f"{r['discover_s']:.2f} s + planning {r['plan_s']:.2f} s = {total:.2f} s "
            f"(bar: under 5 s) {'met' if total < 5 else 'NOT met'}.", ""]


def _write(out: Path, results: list[Result], notes: list[str], crc_impl: str, args: argparse.Namespace) -> None:
    by_corpus: dict[str, list[Result]] = {}
    for r in results:
        by_corpus.setdefault(r.corpus, []).append(r)
    lines = [
        "# Decode benchmarks",
        "",
        f"Generated by `tests/benchmarks/run.py` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
        f"- Machine: {_cpu_line()}",
        f"- Active decoder: `{decoder_module.IMPLEMENTATION}`; CRC-32C: `{crc_impl}`",
        f"- Corpora (tests/benchmarks/gen.py, written by aiokafka's builder): uncompressed "
        f"{args.size_mib} MiB; each codec the same records ({args.compressed_mib} MiB uncompressed); "
        "batches 16 KiB-1 MiB, records 100-1000 bytes, keys on 90 %, headers on 30 %.",
        "- One core, CRC verified, warm page cache (the file read is a copy of the corpus written just "
        "before in one `write`, so its pages are in large folios in every run; the small-folio state is "
        "in the corpus-shape section), every record decoded (ours: into Arrow "
        "columns; aiokafka/kafka-python: offset, timestamp, key, value, headers touched), "
        f"best of {args.repeats} after a warm-up; ours, aiokafka and the decompressions run in turn "
        "in every round (a load change on a shared machine hits all of them).",
        "- Bare decompression: a Python call and a new bytes object per payload (as aiokafka "
        "decompresses); codec C decompression: the codec's C API into one reused buffer, no Python "
        "call per batch, the first part of the floor (the second: the same records uncompressed, "
        "decoded by us).",
        "- MB/s = log (file) bytes per CPU second of the measuring thread; wall-clock MB/s "
        "beside it (differs when other processes share the cores).",
        "",
    ]
    for corpus, rows in by_corpus.items():
        aio = next((r for r in rows if r.name.startswith("aiokafka")), None)
        bare = next((r for r in rows if r.name == "bare decompression"), None)
        lines += [f"## {corpus}", "",
                  "| reader | MB/s (CPU) | MB/s (wall) | records/s (batches/s) | vs aiokafka "
                  "| time vs bare decompression |",
                  "|---|---:|---:|---:|---:|---:|"]
        for r in rows:     # MB/s of the same corpus (SAME_RECORDS_PLAIN reads another file: no ratio)
            ratio = f"{r.mb_s / aio.mb_s:.2f}x" if aio and r.name != SAME_RECORDS_PLAIN else ""
            vs_bare = ""
            if bare and r is not bare and r.log_bytes == bare.log_bytes:
                vs_bare = f"{(1 / r.mb_s) / (1 / bare.mb_s):.2f}x"
            rate = f"({r.rec_s:,.0f})" if r.per_batch else f"{r.rec_s:,.0f}"
            lines.append(f"| {r.name} | {r.mb_s:,.0f} | {r.wall_mb_s:,.0f} | {rate} | {ratio} | {vs_bare} |")
        lines.append("")
    lines += _bars(by_corpus)
    lines += notes
    publish(out, lines)


BEGIN = "<!-- make bench: from here to its end mark, written by tests/benchmarks/run.py on every run -->"
END = "<!-- make bench: end (what follows is kept; a replaced report goes to BENCHMARKS-history.md) -->"
HISTORY_HEADING = "# Benchmark history: earlier runs and notes that BENCHMARKS.md held, newest first"


def history_path(out: Path) -> Path:
    """Where what ``out`` no longer holds goes: ``BENCHMARKS-history.md`` beside ``BENCHMARKS.md``."""
    return out.with_name(f"{out.stem}-history{out.suffix}")


def to_history(out: Path, text: str) -> None:
    """Put ``text`` (a report or section replaced in ``out``) at the top of ``out``'s history file,
    under its first line, the file's heading: newest first.  Written before ``out`` is: a crash in
    between leaves the old figures in both files, never in neither."""
    text = text.strip("\n")
    if not text:
        return
    path = history_path(out)
    old = path.read_text(encoding="utf-8") if path.exists() else HISTORY_HEADING + "\n"
    heading, _, rest = old.partition("\n")
    rest = rest.lstrip("\n")
    path.write_text(f"{heading}\n\n{text}\n" + (f"\n{rest}" if rest else ""), encoding="utf-8")


def publish(out: Path, report: list[str]) -> None:
    """Write ``report`` into ``out`` between :data:`BEGIN` and :data:`END`.  The report a run put
    there before moves to the top of the history file (:func:`to_history`); the rest of ``out`` is
    kept (before the marks: the pointer to the history; after them: other benchmarks' current
    sections).  A file without the marks keeps all of its text after the new report."""
    block = "\n".join([BEGIN, *report, END]) + "\n"
    old = out.read_text(encoding="utf-8") if out.exists() else ""
    start, end = old.find(BEGIN), old.find(END)
    if 0 <= start < end:
        to_history(out, old[start + len(BEGIN):end])
        head, rest = old[:start], old[end + len(END):].lstrip("\n")
    else:
        head, rest = "", old
    out.write_text(head + block + ("\n" + rest if rest else ""), encoding="utf-8")


def _bars(by_corpus: dict[str, list[Result]]) -> list[str]:
    """The decode targets (the same as per corpus shape: ``shapes.TARGETS``, ``PLAIN_TARGET``,
    ``FLOOR_MAX``) against this corpus's numbers.  Ratios are of CPU time over the same records."""
    def find(corpus: str, prefix: str) -> Result | None:
        return next((r for r in by_corpus.get(corpus, []) if r.name.startswith(prefix)), None)

    def yes(ok: bool) -> str:
        return "yes" if ok else "no"

    lines = ["## Bars (the product's performance targets)", "", "| bar | target | measured (CPU time) | met |", "|---|---|---|---|"]
    fast, aio = find("none", "kafka_format fast (file)"), find("none", "aiokafka")
    if fast and aio:
        ratio = aio.cpu_s / fast.cpu_s
        lines.append(f"| uncompressed v2 vs aiokafka | >= {shapes.PLAIN_TARGET:g}x | {ratio:.2f}x ({fast.mb_s:,.0f} vs "
                     f"{aio.mb_s:,.0f} MB/s) | {yes(ratio >= shapes.PLAIN_TARGET)} |")
    scan = find("none", "batch-header scan (fast)")
    if scan:
        lines.append(f"| batch-header scan | >= 1 GB/s | {scan.mb_s / 1000:.2f} GB/s | {yes(scan.mb_s >= 1000)} |")
    for corpus in by_corpus:
        want = shapes.TARGETS.get(corpus)
        fast, aio = find(corpus, "kafka_format fast (file)"), find(corpus, "aiokafka")
        alone, plain = find(corpus, C_DECOMPRESSION), find(corpus, SAME_RECORDS_PLAIN)
        if want is None:
            continue
        if fast and aio:
            ratio = aio.cpu_s / fast.cpu_s
            met = yes(ratio >= want)
            if ratio < want and alone and aio.cpu_s / alone.cpu_s < want:   # the codec alone takes the budget
                met += (f" (out of reach with {shapes.DECOMPRESSORS[corpus]}: its decompression alone is "
                        f"{aio.cpu_s / alone.cpu_s:.2f}x aiokafka's whole decode)")
            lines.append(f"| {corpus}: vs aiokafka | >= {want:g}x | {ratio:.2f}x | {met} |")
        if fast and alone and plain:
            floor = fast.cpu_s / (alone.cpu_s + plain.cpu_s)
            lines.append(f"| {corpus}: time vs its C decompression + the uncompressed decode of the records "
                         f"| <= {shapes.FLOOR_MAX:g}x | {floor:.2f}x | {yes(floor <= shapes.FLOOR_MAX)} |")
    return [*lines, ""]


if __name__ == "__main__":
    raise SystemExit(main())
