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
  log, compacted and retention topics, restarts and a kill -9);
* files that are not Kafka's (no suffix, an unknown suffix, text named like a segment), each in a
  run of its own;
* many files per run whose end-of-run reports Kafka lists in its hash map's order: logs with
  non-consecutive offsets (``--deep-iteration``, 2 to 70 files, so that the map grows: Java's at
  the call after 12 keys, Scala's at the put before), and index / time index files with mismatches,
  out-of-order and missing offsets; stderr is compared in order (``kafka_dump.compare_run``), and
  Kafka's order is checked to differ from the argument order;
* the ``__cluster_metadata-0`` logs of a newer release's brokers (4.4.0's: the shared broker's after
  the standard workload, and one made to write records only newer releases have) read by an older
  release's tool (3.9.1's, ``--cluster-metadata-decoder`` and ``--deep-iteration``): the older tool
  decodes with its own schemas.

Beside the comparisons: the hash-map models of ``kafka_format/cli/jvm_maps.py`` against the JVM's
maps (``MapOrderDriver.java``) on many key sets, and the metadata schemas of each release
(``kafka_format/internal/schemas/releases.py``) against the JSON in that release's
``kafka-metadata`` jar.

Kafka runs once per release: one JVM runs every (flag set, files) job (tests/conformance/DumpDriver.java).
Each file under each flag set, and each run's stderr, is one case of the ``dump`` comparison in
CONFORMANCE.md.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import struct
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kafka_dist
import kafka_dump
import pytest
from broker import KafkaBroker

from kafka_format.cli import dump_source as source
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


def _odd(root: Path) -> list[Path]:
    """Files that are not Kafka's: DumpLogSegments ignores them (4.4), dies on a name without a '.'
    (3.9: ``substring(lastIndexOf("."))``), or reads text as batches."""
    d = root / "not-kafka"
    d.mkdir()
    text = "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
    made = [d / "passwd", d / "notes.txt", d / "hosts.log", d / f"{0:020d}.log", d / f"{5:020d}.index"]
    for path in made:
        path.write_text(text)
    return made


REPORT_RUN_SIZES = (2, 5, 11, 12, 13, 14, 26, 49, 70)


def _gapped(root: Path, count: int = max(REPORT_RUN_SIZES)) -> list[Path]:
    """``count`` segments over several partition dirs, each with non-consecutive offsets between its
    batches (as compaction leaves them): 1 to 3 gaps a file, so the reports' maps see a varying
    number of calls per file."""
    made: list[Path] = []
    for i in range(count):
        d = root / f"gaps-{i % 9}"
        d.mkdir(parents=True, exist_ok=True)
        base = 1000 * i + i % 2          # a first offset other than 0 as well
        seg = SegmentWriter(d, base)
        offset = base
        for b in range(2 + i % 3):
            recs = [Record(f"k{offset + j}".encode(), f"v{offset + j}".encode(), T0 + offset + j) for j in range(2)]
            seg.append([build_v2_batch(recs, base_offset=offset)])
            offset += len(recs) + 1 + (i + b) % 4
        seg.close()
        made.append(seg.log_path)
    return made


def _mismatched(root: Path, count: int) -> list[Path]:
    """``count`` segments whose ``.index`` has an entry that is not its batch's last offset and whose
    ``.timeindex`` has a wrong timestamp, an out-of-order one and an offset no batch ends at (each
    segment: 4 batches of 3 records, offsets base + 3i .. base + 3i + 2)."""
    made: list[Path] = []
    for i in range(count):
        d = root / f"mismatched-{i % 5}"
        d.mkdir(parents=True, exist_ok=True)
        base = 100 * (i + 1)
        seg = _segment(d, base)
        pos = [p for p, _ in seg.batches]
        seg.path(".index").write_bytes(b"".join(struct.pack(">ii", r, p) for r, p in (
            (2, pos[0]), (6, pos[1]), (8, pos[2]))))
        seg.path(".timeindex").write_bytes(b"".join(struct.pack(">qi", t, r) for t, r in (
            (T0 + base + 2, 2), (T0 + base + 999, 5), (T0 + base + 1, 8), (T0 + base + 2000, 7))))
        made += [seg.path(".index"), seg.path(".timeindex")]
    return made


def _report_jobs(gapped: list[Path], mismatched: list[Path]) -> list[list[str]]:
    """Multi-file runs whose stderr reports list many files (see the module doc)."""
    jobs = [_job(["--deep-iteration"], gapped[:n]) for n in REPORT_RUN_SIZES]
    jobs += [_job(["--deep-iteration"], list(reversed(gapped[:n]))) for n in (13, 49)]
    for flags in ([], ["--verify-index-only"]):
        jobs += [_job(flags, mismatched[:n]) for n in (6, 26, len(mismatched))]
    return jobs


def _headings(lines: list[str], prefix: str) -> list[str]:
    return [line[len(prefix):] for line in lines if line.startswith(prefix)]


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
    for sibling in [path, *path.parent.glob(f"{stem}.*")]:
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
    odd = _odd(tmp_path_factory.mktemp("odd"))
    together = [p.resolve() for p in samples + real if not _runs_alone(p)]
    alone = [p.resolve() for p in real if _runs_alone(p)] + damaged + odd
    return together, alone


@pytest.fixture(scope="module")
def report_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], list[Path]]:
    """(logs with gaps, index and time index files with mismatches) for the multi-file runs."""
    root = tmp_path_factory.mktemp("reports")
    return _gapped(root / "logs"), _mismatched(root / "indexes", 40)


# The __cluster_metadata-0 copies of each version's broker this session (written by the dump test),
# for older releases' tools to read.
_METADATA_LOGS: dict[str, Path] = {}


def _need_javac() -> None:
    if shutil.which("javac") is None and not Path(str(kafka_dist.java())).with_name("javac").exists():
        pytest.skip("javac not found (the drivers are compiled on first use)")


def _compare(conformance: Any, kafka_version: str, jobs: list[list[str]], workdir: Path,
             prefix: str = "") -> list[kafka_dump.Run]:
    """Run ``jobs`` in klogs dump, then in Kafka; record every case; returns Kafka's runs."""
    # klogs first: Kafka's tool may create files (see _isolated) that klogs must not see
    our_runs = [kafka_dump.run_ours(kafka_version, job) for job in jobs]
    kafka_runs = kafka_dump.run_kafka(kafka_version, jobs, workdir)
    for kafka, ours in zip(kafka_runs, our_runs, strict=True):
        for case in kafka_dump.compare_run(kafka, ours):
            conformance.record("dump", kafka_version, prefix + case.name, case.equal, case.detail)
    return kafka_runs


def test_dump_equals_kafka(kafka_version: str, kafka_broker: KafkaBroker, standard_workload: object,
                           conformance: Any, static_files: tuple[list[Path], list[Path]],
                           report_files: tuple[list[Path], list[Path]], tmp_path: Path) -> None:
    """Every flag set over every file: klogs dump's text equals Kafka's DumpLogSegments'."""
    _need_javac()
    together, alone = static_files
    broker_copy = kafka_broker.copy_log_dirs(tmp_path / "broker")   # the live broker's files, frozen
    _METADATA_LOGS[kafka_version] = broker_copy / "__cluster_metadata-0"
    from_broker = [p for p in _segment_files(broker_copy) if not _runs_alone(p)]
    assert len(from_broker) > 20, f"the broker left only {from_broker}"
    scratch = tmp_path / "alone"
    scratch.mkdir()
    gapped, mismatched = report_files
    report_jobs = _report_jobs(gapped, mismatched)
    jobs = _jobs(together + from_broker, alone, scratch) + report_jobs
    kafka_runs = _compare(conformance, kafka_version, jobs, tmp_path)
    # the multi-file runs must be able to tell hash order from argument order: in Kafka's own output
    reordered = 0
    for run in kafka_runs[-len(report_jobs):]:
        files = [str(source.absolute(f)) for f in run.args[run.args.index("--files") + 1].split(",")]
        listed = _headings(run.stderr, "Non-consecutive offsets in ") or _headings(run.stderr, "Mismatches in :")
        assert listed, f"no report in Kafka's stderr of {run.args[:3]}"
        reordered += listed != [f for f in files if f in listed]
    assert reordered >= len(report_jobs) // 2, f"Kafka listed only {reordered} runs' files out of order"
    conformance.assert_equal("dump", kafka_version, at_least=len(together) + len(from_broker))


def _newer_metadata_logs(kafka_version: str, tmp_path: Path) -> tuple[str, list[Path]]:
    """(the newest release compared, ``__cluster_metadata-0`` dirs its brokers wrote): one broker of it
    started here for what only a newer release writes (a topic whose ``min.insync.replicas``
    changes: ``ClearElrRecord``; a restart: new registrations), and this session's copy of its
    shared broker after the standard workload when that ran first."""
    newer = [v for v in kafka_dist.KAFKA_VERSIONS if _release(v) > _release(kafka_version)]
    if not newer:
        pytest.skip(f"no release newer than {kafka_version} is compared")
    version = newer[0]
    if kafka_dist.classpath(version) is None:
        pytest.skip(f"Kafka {version} unavailable: {kafka_dist.unavailable_reason(version)}")
    with KafkaBroker(version, tmp_path / f"kafka-{version}") as broker:
        broker.create_topic("written-by-newer", partitions=2)
        broker.alter_topic_config("written-by-newer", {"min.insync.replicas": "1"})
        broker.restart()
        copy = broker.copy_log_dirs(tmp_path / f"copy-{version}")
    dirs = [copy / "__cluster_metadata-0"]
    if version in _METADATA_LOGS:
        dirs.append(_METADATA_LOGS[version])
    return version, dirs


def _release(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def test_dump_reads_newer_metadata_logs(kafka_version: str, conformance: Any, tmp_path: Path) -> None:
    """A newer broker's ``__cluster_metadata-0`` (its records, versions and fields the older release
    does not know) read by this release's tool: klogs dump --kafka-version prints what it prints."""
    _need_javac()
    newer, directories = _newer_metadata_logs(kafka_version, tmp_path)
    files = sorted(p for d in directories for p in d.iterdir() if p.suffix in (".log", ".checkpoint"))
    assert any(p.suffix == ".log" and p.stat().st_size for p in files), f"no metadata log in {directories}"
    jobs = [_job(flags, files) for flags in (["--cluster-metadata-decoder"], ["--deep-iteration"])]
    before = len(conformance.cases)
    kafka_runs = _compare(conformance, kafka_version, jobs, tmp_path, prefix=f"{newer}-written ")
    assert len(conformance.cases) - before >= 2 * len(files)
    # the comparison covers what the older tool cannot read (by its own output)
    unreadable = {line.split(", skipping. ", 1)[1] for line in kafka_runs[0].stdout if ", skipping. " in line}
    assert unreadable, f"Kafka {kafka_version} read every record of the {newer} log"
    conformance.assert_equal("dump", kafka_version, at_least=2 * len(files))


def test_report_maps_follow_the_jvm(kafka_version: str) -> None:
    """The hash-map models behind the reports' file order against this release's JVM and scala-library:
    random paths called once to thrice, keys of one hash code, and keys of one bucket (trees)."""
    from kafka_format.cli.jvm_maps import JavaHashMap, ScalaHashMap, spread_hash

    _need_javac()
    rnd = random.Random(33)
    lists: list[list[str]] = []
    for n in [*range(1, 80), 100, 200, 700]:
        keys = [f"/var/lib/kafka-{rnd.randint(0, 3)}/t{rnd.randint(0, 40)}-{rnd.randint(0, 9)}/"
                f"{rnd.randint(0, 10**7):020d}.log" for _ in range(n)]
        lists.append([k for k in keys for _ in range(rnd.choice((1, 1, 2, 3)))])
    equal = ["/x/" + "".join(p) for p in itertools.product(("Aa", "BB"), repeat=6)]   # one hash code
    for n in (7, 8, 9, 13, 33, 64):
        lists.append(rnd.sample(equal, n))
    bucket: list[str] = []
    i = 0
    while len(bucket) < 40:             # keys of one bucket of 128, different hashes: a tree bin
        key = f"/k/{i}"
        i += 1
        if spread_hash(key) & 127 == 5:
            bucket.append(key)
    for filler in (0, 40, 70, 130):
        for n in (8, 9, 14, 40):
            keys = [f"/f/{j}" for j in range(filler)] + bucket[:n]
            lists += [keys, bucket[:n] + keys[:filler], rnd.sample(keys, len(keys)) * 2]
    scala_tool = kafka_dump.tool_class(kafka_version).startswith("kafka.")
    differ = []
    for keys, (java, scala) in zip(lists, kafka_dump.jvm_map_orders(kafka_version, lists), strict=True):
        jm, sm = JavaHashMap(), ScalaHashMap()
        for key in keys:
            jm.compute_if_absent(key)
            sm.put(key)
        if jm.keys() != java or (scala_tool and sm.keys() != scala):
            differ.append(len(set(keys)))
    assert not differ, f"{len(differ)} of {len(lists)} key lists ordered otherwise (distinct keys: {differ[:10]})"


def test_group_coordinator_schemas_are_kafka_4_4s(kafka_version: str) -> None:
    """The ``__consumer_offsets`` record schemas equal the definitions in Kafka 4.4.0's own
    ``kafka-group-coordinator`` jar: every record type it knows, no other, field for field.  Keys
    differ only in this package's convention (a key is read at its record type as version; 4.4's
    definitions carry the type as ``apiKey`` and version 0)."""
    from kafka_format.internal.consumer_offsets import RECORD_TYPES
    from kafka_format.internal.schemas.releases import area_schemas

    if kafka_version != "4.4.0":
        pytest.skip("the group coordinator's records are decoded as the newest release (4.4.0) defines them")
    theirs = kafka_dist.jar_definitions(kafka_version, "kafka-group-coordinator", "common/message/")
    assert len(theirs) > 40
    expected: dict[str, Any] = {}
    for name, doc in theirs.items():
        doc = dict(doc)
        api_key, kind = doc.pop("apiKey"), doc.pop("type")
        if kind == "coordinator-key":
            doc["validVersions"] = str(api_key)
            doc["fields"] = [dict(f, versions=str(api_key)) for f in doc["fields"]]
        expected[name] = dict(doc, type="data")
    # LegacyOffsetCommit (type 0) is the old OffsetCommit v0 layout under its own name in 4.4; this
    # package reads type 0 and 1 with the one OffsetCommit schema of every version
    ours = area_schemas("group_coordinator")
    legacy = {n for n in expected if n.startswith("LegacyOffsetCommit")}
    assert sorted(ours) == sorted(set(expected) - legacy)
    assert [n for n in ours if n != "OffsetCommitKey" and kafka_dist.tags_as_text(ours[n]) != kafka_dist.tags_as_text(expected[n])] == []
    assert sorted(RECORD_TYPES) == sorted({int(d["apiKey"]) for d in theirs.values()})


def test_release_metadata_schemas_are_the_releases(kafka_version: str) -> None:
    """``metadata_schemas(release)`` equals the metadata record definitions in the release's own
    ``kafka-metadata`` jar (trimmed as ``_generate.py`` trims)."""
    from kafka_format.internal.schemas.releases import metadata_schemas

    theirs = kafka_dist.jar_definitions(kafka_version, "kafka-metadata", "common/metadata/")
    assert len(theirs) > 20
    ours = {name: doc for name, doc in metadata_schemas(_release(kafka_version)).items() if "@" not in name}
    assert sorted(ours) == sorted(theirs)
    assert [n for n in ours if kafka_dist.tags_as_text(ours[n]) != kafka_dist.tags_as_text(theirs[n])] == []
