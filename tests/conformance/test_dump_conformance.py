"""Comparison 1 of the conformance suite: ``klogs dump`` against Kafka's own ``DumpLogSegments``.

For each Kafka release of ``kafka_dist.versions()`` (4.4.0: the Java tool; 3.9.1: the Scala tool),
the same flag sets run over the same files in both, and the text must be equal line for line
(stdout per file; stderr's reports as blocks, see ``kafka_dump``).  ``klogs dump`` gets
``--kafka-version <release>``.  Files:

* every segment file of ``data_samples/logdirs`` (our writer: all codecs, v0/v1, compacted,
  transactions, consumer offsets);
* segment files of ``../shared/realdata`` (real brokers; read in place) when present: to fit the
  time budget, the first, first non-empty and last segment of each partition (logs up to 300 kB),
  two empty partitions per set, every KRaft checkpoint, and at most 80 index files for the
  index-only flag sets (``KLA_CONFORMANCE_FULL=1``: every file);
* damaged files this test writes (cut tail, flipped bytes, bad size field, zero-filled tail,
  non-monotonic and out-of-range indexes, missing sibling files), each in a run of its own,
  because Kafka's tool stops at the first file it throws on.

* every segment file of the conformance broker's log dir (a copy taken after the standard
  workload: all codecs, transactions committed and aborted, consumer groups, the KRaft metadata
  log, compacted and retention topics, restarts and a kill -9).

Kafka runs once per release: one JVM runs every (flag set, files) job (tests/conformance/DumpDriver.java).
Each file under each flag set, and each run's stderr, is one case of the ``dump`` comparison in
CONFORMANCE.md.
"""

from __future__ import annotations

import os
import shutil
import struct
from collections import defaultdict
from typing import Any
from collections.abc import Iterator
from pathlib import Path

import kafka_dist
import kafka_dump
import pytest
from broker import KafkaBroker

from kafka_format.writer import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_ZSTD,
    Record,
    SegmentWriter,
    build_legacy_messages,
    build_legacy_wrapper,
    build_v2_batch,
)

pytestmark = pytest.mark.conformance

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
REALDATA = Path(os.environ.get("KLA_SHARED_DIR", REPO.parent / "shared")) / "realdata"   # as tests/conftest.py
SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint")
CHUNK = 250            # files per run: a run stops at its first exception, so not too many
MAX_LOG_BYTES = 300_000
EMPTY_PARTITIONS_PER_SET = 2
MAX_INDEX_FILES = 80
FULL = os.environ.get("KLA_CONFORMANCE_FULL") == "1"
T0 = 1_700_000_000_000


def _segment_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in SUFFIXES)


def _realdata_selection(root: Path) -> list[Path]:
    """A bounded, varied subset of the real broker files (see the module docstring)."""
    files = _segment_files(root)
    if FULL:
        return files
    by_dir: dict[Path, list[Path]] = defaultdict(list)
    for path in files:
        by_dir[path.parent].append(path)
    empty_seen: dict[str, int] = defaultdict(int)
    chosen: list[Path] = []
    for directory in sorted(by_dir):
        group = by_dir[directory]
        stems = sorted({p.name.split(".")[0] for p in group})
        logs = {s: directory / f"{s}.log" for s in stems}
        nonempty = [s for s in stems if logs[s].exists() and logs[s].stat().st_size > 0]
        if not nonempty and stems:
            owner = directory.relative_to(root).parts[0]
            empty_seen[owner] += 1
            if empty_seen[owner] > EMPTY_PARTITIONS_PER_SET:
                continue
        keep = set(stems[:1] + nonempty[:1] + stems[-1:])
        for path in group:
            if path.suffix == ".checkpoint" or path.name.split(".")[0] in keep:
                if path.suffix == ".log" and path.stat().st_size > MAX_LOG_BYTES:
                    continue
                chosen.append(path)
    return chosen


def _spread(paths: list[Path], limit: int) -> list[Path]:
    """At most ``limit`` of ``paths``, evenly spread."""
    if FULL or len(paths) <= limit:
        return paths
    step = len(paths) / limit
    return [paths[int(i * step)] for i in range(limit)]


def _stem_sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name.split(".")[0] + suffix)


def _runs_alone(path: Path) -> bool:
    """Files Kafka's tool throws on before printing anything useful for the rest of a run: an index
    whose .log (or a time index whose .index) is missing."""
    if path.suffix in (".index", ".timeindex") and not _stem_sibling(path, ".log").exists():
        return True
    return path.suffix == ".timeindex" and not _stem_sibling(path, ".index").exists()


# --- damaged files --------------------------------------------------------------------------------

def _segment(directory: Path, base: int, codec: int = CODEC_NONE, batches: int = 4) -> SegmentWriter:
    seg = SegmentWriter(directory, base, index_interval_bytes=64)
    for i in range(batches):
        first = base + 3 * i
        recs = [Record(f"k{first + j}".encode(), f"value {first + j} ".encode() * 4, T0 + first + j)
                for j in range(3)]
        seg.append([build_v2_batch(recs, base_offset=first, codec=codec)])
    seg.close()
    return seg


def _damaged(root: Path) -> list[Path]:
    """Damaged or odd segment files made from writer output; returns the files to dump."""
    made: list[Path] = []

    def fresh(name: str, base: int = 0, codec: int = CODEC_NONE) -> SegmentWriter:
        d = root / name
        d.mkdir()
        return _segment(d, base, codec)

    seg = fresh("cut-tail")                      # last batch cut short
    data = seg.log_path.read_bytes()
    seg.log_path.write_bytes(data[:-17])
    made += [seg.log_path, seg.path(".index"), seg.path(".timeindex")]

    seg = fresh("flipped-value", 10)               # a value byte flipped: CRC no longer valid
    data = bytearray(seg.log_path.read_bytes())
    at = seg.batches[1][0] + seg.batches[1][1].size - 3
    data[at] ^= 0xFF
    seg.log_path.write_bytes(bytes(data))
    made.append(seg.log_path)

    seg = fresh("flipped-record-length", 20)       # first record's length varint broken
    data = bytearray(seg.log_path.read_bytes())
    data[seg.batches[2][0] + 61] = 0x7F
    seg.log_path.write_bytes(bytes(data))
    made.append(seg.log_path)

    seg = fresh("flipped-gzip", 30, CODEC_GZIP)    # compressed payload damaged
    data = bytearray(seg.log_path.read_bytes())
    data[seg.batches[1][0] + 70] ^= 0x55
    seg.log_path.write_bytes(bytes(data))
    made.append(seg.log_path)

    seg = fresh("flipped-lz4", 40, CODEC_LZ4)
    data = bytearray(seg.log_path.read_bytes())
    data[seg.batches[0][0] + 75] ^= 0x55
    seg.log_path.write_bytes(bytes(data))
    made.append(seg.log_path)

    seg = fresh("bad-size", 50)                    # size field below the minimum record overhead
    data = bytearray(seg.log_path.read_bytes())
    struct.pack_into(">i", data, seg.batches[2][0] + 8, 5)
    seg.log_path.write_bytes(bytes(data))
    made.append(seg.log_path)

    seg = fresh("zero-tail", 60)                   # preallocated-looking zero tail
    with open(seg.log_path, "ab") as fh:
        fh.write(b"\0" * 100)
    made.append(seg.log_path)

    seg = fresh("short-garbage-tail", 70)          # fewer bytes than a header after the last batch
    with open(seg.log_path, "ab") as fh:
        fh.write(b"\1\2\3\4\5")
    made.append(seg.log_path)

    seg = fresh("non-monotonic-index", 100)
    pos = [p for p, _ in seg.batches]
    seg.path(".index").write_bytes(b"".join(struct.pack(">ii", r, p) for r, p in ((5, pos[1]), (11, pos[3]),
                                                                                    (5, pos[3]), (2, pos[0]))))
    seg.path(".timeindex").write_bytes(b"".join(struct.pack(">qi", t, r) for t, r in (
        (T0 + 105, 5), (T0 + 104, 8), (T0 + 111, 11), (T0 + 999, 3))))
    made += [seg.path(".index"), seg.path(".timeindex")]

    seg = fresh("index-past-end", 200)
    seg.path(".index").write_bytes(struct.pack(">ii", 2, seg.size + 100))
    made.append(seg.path(".index"))

    seg = fresh("index-zero-tail", 300)            # sparse index of a crashed broker
    seg.path(".index").write_bytes(seg.path(".index").read_bytes() + b"\0" * 24)
    seg.path(".timeindex").write_bytes(seg.path(".timeindex").read_bytes() + b"\0" * 24)
    made += [seg.path(".index"), seg.path(".timeindex")]

    seg = fresh("index-not-multiple", 400)         # an index whose length is not a multiple of 8
    seg.path(".index").write_bytes(seg.path(".index").read_bytes() + b"\0\0\0")
    made.append(seg.path(".index"))

    d = root / "legacy-damaged"
    d.mkdir()
    seg = SegmentWriter(d, 0)
    seg.append(build_legacy_messages([Record(b"a", b"1", T0), Record(b"b", b"2", T0 + 1)], magic=1, base_offset=0))
    seg.append([build_legacy_wrapper([Record(b"c", b"3", T0 + 2), Record(None, b"4", T0 + 3)], magic=1,
                                     base_offset=2, codec=CODEC_GZIP)])
    seg.close()
    data = bytearray(seg.log_path.read_bytes())
    data[seg.batches[0][0] + 20] ^= 0x01           # first message's key: CRC-32 no longer valid
    seg.log_path.write_bytes(bytes(data))
    made.append(seg.log_path)

    seg = fresh("zstd-ok", 500, CODEC_ZSTD)
    made.append(seg.log_path)

    lonely = root / "no-log"                        # index files without their .log / .index
    lonely.mkdir()
    (lonely / f"{7:020d}.index").write_bytes(struct.pack(">ii", 1, 0))
    (lonely / f"{8:020d}.log").write_bytes(b"")
    (lonely / f"{8:020d}.timeindex").write_bytes(struct.pack(">qi", T0, 1))
    made += [lonely / f"{7:020d}.index", lonely / f"{8:020d}.timeindex"]
    return made


# --- jobs -----------------------------------------------------------------------------------------

def _chunks(paths: list[Path]) -> Iterator[list[Path]]:
    for i in range(0, len(paths), CHUNK):
        yield paths[i:i + CHUNK]


def _job(flags: list[str], paths: list[Path]) -> list[str]:
    return ["--files", ",".join(str(p) for p in paths), *flags]


def _isolated(path: Path, scratch: Path) -> Path:
    """A copy of ``path`` and its same-segment siblings in a directory of its own.

    Kafka's tool is not read-only: opening a time index whose ``.index`` is missing creates an
    empty ``.index`` (``AbstractIndex``'s constructor) before it throws.  Each run of such a file
    gets its own copy, so no run sees another's side effect, and ../shared is never written.
    """
    directory = scratch / f"run-{sum(1 for _ in scratch.iterdir())}" / path.parent.name
    directory.mkdir(parents=True)
    stem = path.name.split(".")[0]
    for sibling in path.parent.glob(f"{stem}.*"):
        shutil.copy2(sibling, directory / sibling.name)
    return directory / path.name


def _jobs(files: list[Path], alone: list[Path], scratch: Path) -> list[list[str]]:
    """Every (flag set, files) run: shared files in chunks, ``alone`` files one per run (each on a
    copy of its own, see :func:`_isolated`)."""
    logs = [p for p in files if p.suffix in (".log", ".checkpoint")]
    indexes = _spread([p for p in files if p.suffix in (".index", ".timeindex")], MAX_INDEX_FILES)
    offsets = [p for p in logs if p.parent.name.startswith("__consumer_offsets-")]
    txn = [p for p in logs if p.parent.name.startswith("__transaction_state-")]
    metadata = [p for p in logs if p.parent.name.startswith("__cluster_metadata-") or p.name == "bootstrap.checkpoint"]
    plain_data = [p for p in logs if p not in offsets and p not in txn and p not in metadata]
    jobs: list[list[str]] = []
    for flags, group in (
        ([], files),
        (["--deep-iteration"], logs),
        (["--deep-iteration", "--print-data-log"], plain_data),
        (["--offsets-decoder"], offsets),
        (["--transaction-log-decoder"], txn),
        (["--cluster-metadata-decoder"], metadata),
        (["--verify-index-only"], indexes),
        (["--index-sanity-check"], indexes),
        (["--deep-iteration", "--max-bytes", "3000"], logs),
    ):
        jobs += [_job(flags, chunk) for chunk in _chunks(group)]
    for path in alone:
        flag_sets = ([[], ["--verify-index-only"], ["--index-sanity-check"]] if path.suffix in (".index", ".timeindex")
                     else [[], ["--deep-iteration", "--print-data-log"], ["--deep-iteration", "--max-bytes", "500"]])
        jobs += [_job(flags, [_isolated(path, scratch)]) for flags in flag_sets]
    return jobs


@pytest.fixture(scope="module")
def static_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], list[Path]]:
    """(files dumped together, files dumped one per run) that need no broker."""
    samples = _segment_files(SAMPLES)
    real = _realdata_selection(REALDATA) if REALDATA.is_dir() else []
    damaged = _damaged(tmp_path_factory.mktemp("damaged"))
    together = [p.resolve() for p in samples + real if not _runs_alone(p)]
    alone = [p.resolve() for p in real if _runs_alone(p)] + damaged
    return together, alone


def test_dump_equals_kafka(kafka_version: str, kafka_broker: KafkaBroker, standard_workload: object,
                           conformance: Any, static_files: tuple[list[Path], list[Path]],
                           tmp_path: Path) -> None:
    """Every flag set over every file: klogs dump's text equals Kafka's DumpLogSegments'."""
    if shutil.which("javac") is None and not Path(str(kafka_dist.java())).with_name("javac").exists():
        pytest.skip("javac not found (the dump driver is compiled on first use)")
    together, alone = static_files
    broker_copy = kafka_broker.copy_log_dirs(tmp_path / "broker")   # the live broker's files, frozen
    from_broker = [p for p in _segment_files(broker_copy) if not _runs_alone(p)]
    assert len(from_broker) > 20, f"the broker left only {from_broker}"
    scratch = tmp_path / "alone"
    scratch.mkdir()
    jobs = _jobs(together + from_broker, alone, scratch)
    # klogs first: Kafka's tool may create files (see _isolated) that klogs must not see
    our_runs = [kafka_dump.run_ours(kafka_version, job) for job in jobs]
    kafka_runs = kafka_dump.run_kafka(kafka_version, jobs, tmp_path)
    for kafka, ours in zip(kafka_runs, our_runs, strict=True):
        for case in kafka_dump.compare_run(kafka, ours):
            conformance.record("dump", kafka_version, case.name, case.equal, case.detail)
    conformance.assert_equal("dump", kafka_version, at_least=len(together) + len(from_broker))
