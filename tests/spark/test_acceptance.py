"""Acceptance of the kafka-log source (issue #3): whole reads through Spark equal independent views.

* every file of data_samples/ and every realdata set: the source's rows equal the format core's
  own decode of each ``.log`` (chispa DataFrame equality; every column for data_samples, a
  per-row content hash for realdata), with provenance columns taken from the paths here;
* read_committed on ``transactions-0`` equals a consumer's view (spec §6.5-6.6) computed here
  from kafka-python's decoding and the ``.txnindex`` bytes, with the rules written out plainly;
* count, offset sum and content hash per partition are equal on local[2] and a standalone
  cluster started by the test (local-cluster too with ``-m cluster``).
"""

from __future__ import annotations

import os
import re
import struct
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from chispa import assert_df_equality
from clusters import StandaloneCluster, run_driver, summarize

from kafka_format.records.columns import FileContext
from kafka_format.records.file_records import decode_segment

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.memory_records import MemoryRecords

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
TXN_ENTRY = struct.Struct(">hqqqq")      # .txnindex: version, producerId, first, last, lastStableOffset
CONTROL_KEY = struct.Struct(">hh")        # control record key: version, type (0 ABORT, 1 COMMIT)
ABORT = 0


# --- plain readers of the small text files (independent of kafka_format.storage.checkpoints) ------
def properties(path: Path) -> dict[str, str]:
    out = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            if "=" in line and not line.lstrip().startswith("#"):
                k, v = line.split("=", 1)
                out[k.strip()] = v.strip()
    return out


def checkpoint(path: Path) -> dict[tuple[str, int], int]:
    if not path.is_file():
        return {}
    lines = path.read_text().splitlines()
    if len(lines) < 2:          # an empty file holds no entries (CheckpointReadBuffer.read)
        return {}
    return {(t, int(p)): int(o) for t, p, o in (line.split() for line in lines[2:2 + int(lines[1])])}


def partition_logs(roots: list[Path]) -> list[tuple[Path, str, int, Path]]:
    """(log dir, topic, partition, .log) for every .log in a plain ``<topic>-<n>`` dir."""
    out = []
    for root in roots:
        for log in sorted(root.rglob("*.log")):
            m = PARTITION_DIR.match(log.parent.name)
            if m and int(m.group(2)) < 2**31 and log.name[:20].isdigit():
                out.append((log.parent.parent, m.group(1), int(m.group(2)), log))
    return out


def core_table(roots: list[Path]) -> pa.Table:
    """What the format core decodes from every .log, records below the partition's
    log-start-offset-checkpoint left out (a consumer's ``earliest``), with ``tier = 'local'`` (every
    row of a broker log dir)."""
    batches = []
    for log_dir, topic, partition, log in partition_logs(roots):
        meta = properties(log_dir / "meta.properties")
        broker = meta.get("node.id", meta.get("broker.id"))
        start = checkpoint(log_dir / "log-start-offset-checkpoint").get((topic, partition), 0)
        ctx = FileContext(path=str(log), topic=topic, partition=partition, segment=int(log.name[:20]),
                          log_dir=os.path.abspath(log_dir), broker_id=None if broker is None else int(broker))
        for b in decode_segment(str(log), context=ctx):
            batches.append(b.filter(pc.greater_equal(b.column("offset"), start)))
    table = pa.Table.from_batches(batches).combine_chunks()
    return table.append_column("tier", pa.array(["local"] * table.num_rows, pa.string()))


def load_all(spark, paths: list[str]):  # type: ignore[no-untyped-def]
    return (spark.read.format("kafka-log").option("replicas", "all").option("includeControlRecords", "true")
            .load(paths))


def segment_digest(df):  # type: ignore[no-untyped-def]
    """Per segment: rows, offset range and the sum of a 64-bit hash of every other column of each
    row (small enough to compare with chispa for 22 MB of real logs)."""
    from pyspark.sql import functions as F

    segment = ["logDir", "topic", "partition", "segment"]
    content = F.xxhash64(*[c for c in df.columns if c not in segment]).cast("decimal(38,0)")
    return (df.groupBy(*segment).agg(F.count("*").alias("rows"), F.min("offset").alias("first"),
                                     F.max("offset").alias("last"), F.sum(content).alias("content"))
            .orderBy(*segment))


# --- equality with the core decode ------------------------------------------------------
def test_data_samples_equal_core_decode(spark) -> None:  # type: ignore[no-untyped-def]
    """A parent of two brokers' log dirs, every column, every record (both replicas)."""
    order = ["logDir", "topic", "partition", "offset", "position"]
    actual = load_all(spark, [str(SAMPLES)])
    expected = spark.createDataFrame(core_table([SAMPLES])).select(*actual.columns)
    assert expected.count() > 2800
    assert_df_equality(actual.orderBy(*order), expected.orderBy(*order), ignore_nullable=True)


def test_every_realdata_set_equals_core_decode(spark, realdata: Path) -> None:  # type: ignore[no-untyped-def]
    roots = sorted(p for p in realdata.iterdir() if p.is_dir())
    actual = load_all(spark, [str(r) for r in roots])
    expected = spark.createDataFrame(core_table(roots))
    assert expected.count() > 90_000
    assert_df_equality(segment_digest(actual), segment_digest(expected), ignore_nullable=True)


# --- read_committed against a consumer's view --------------------------------------------
def consumer_view(part: Path, hw: int, log_start: int) -> tuple[list[tuple], int]:
    """Records a read_committed consumer fetching [logStart, LSO) returns, and the LSO.

    Batches decoded by kafka-python.  LSO (spec §6.5): replay batches below HW; a transactional
    data batch opens a txn for its producer if none is open, a control batch closes it;
    LSO = min(HW, first offset of every txn still open).  Filtering (spec §6.6, the consumer's
    CompletedFetch): aborted txns of every .txnindex with lastOffset >= fetch start and
    firstOffset < LSO, ordered by firstOffset; before each batch, those with firstOffset <= the
    batch's last offset join the aborted-producer set; an ABORT marker of a producer in the set
    removes it; transactional batches of producers in the set are skipped; control batches too.
    """
    batches = []
    for log in sorted(part.glob("*.log")):
        mr = MemoryRecords(log.read_bytes())
        while (b := mr.next_batch()) is not None:
            recs = [(r.offset, r.key, r.value) for r in b]
            batches.append((b.base_offset, b.last_offset, b.producer_id, b.is_transactional,
                            b.is_control_batch, recs))
    open_txn: dict[int, int] = {}
    for base, _, pid, txn, control, _ in batches:
        if base >= hw or not txn:
            continue
        if control:
            open_txn.pop(pid, None)
        else:
            open_txn.setdefault(pid, base)
    lso = min([hw, *open_txn.values()])
    aborted = []
    for idx in sorted(part.glob("*.txnindex")):
        data = idx.read_bytes()
        for i in range(len(data) // TXN_ENTRY.size):
            _, pid, first, last, _ = TXN_ENTRY.unpack_from(data, i * TXN_ENTRY.size)
            if last >= log_start and first < lso:
                aborted.append((first, pid))
    aborted.sort()
    aborting: set[int] = set()
    out = []
    for base, last, pid, txn, control, recs in batches:
        if base >= lso:
            break
        while aborted and aborted[0][0] <= last:
            aborting.add(aborted.pop(0)[1])
        if control:
            if txn and pid in aborting and CONTROL_KEY.unpack(bytes(recs[0][1]))[1] == ABORT:
                aborting.discard(pid)
            continue
        if txn and pid in aborting:
            continue
        out.extend((o, None if k is None else bytes(k), None if v is None else bytes(v))
                   for o, k, v in recs if log_start <= o < lso)
    return out, lso


def test_read_committed_equals_consumer_view(spark) -> None:  # type: ignore[no-untyped-def]
    part = SAMPLES / "broker-1" / "transactions-0"
    hw = checkpoint(SAMPLES / "broker-1" / "replication-offset-checkpoint")[("transactions", 0)]
    start = checkpoint(SAMPLES / "broker-1" / "log-start-offset-checkpoint").get(("transactions", 0), 0)
    want, lso = consumer_view(part, hw, start)
    df = (spark.read.format("kafka-log").option("isolationLevel", "read_committed")
          .load(str(part)).select("offset", "key", "value"))
    got = sorted((r["offset"], None if r["key"] is None else bytes(r["key"]),
                  None if r["value"] is None else bytes(r["value"])) for r in df.collect())
    assert got == sorted(want)
    # the sample exercises both rules: an open txn below the end, an aborted txn across segments
    every = {r["offset"] for r in spark.read.format("kafka-log").load(str(part)).select("offset").collect()}
    assert lso < max(every) + 1
    assert any(79 <= o <= 161 for o in every - {o for o, *_ in want})


# --- the same answers on local[2] and real clusters ----------------------------------------
def cross_mode_paths(realdata_root: Path | None) -> list[str]:
    paths = [str(SAMPLES)]
    if realdata_root is not None:
        paths += [str(p) for p in sorted(realdata_root.iterdir()) if p.is_dir()]
    return paths


def _realdata_or_none() -> Path | None:
    """The realdata root when present (as tests/conftest.py finds it), else data_samples only."""
    root = Path(os.environ.get("KLA_SHARED_DIR", REPO.parent / "shared")) / "realdata"
    return root if root.is_dir() else None


def test_standalone_cluster_equals_local_on_samples(spark, standalone: StandaloneCluster) -> None:  # type: ignore[no-untyped-def]
    """The cheap cross-mode check of the default run: data_samples/ on a standalone cluster."""
    paths = [str(SAMPLES)]
    got = run_driver(standalone.url or "", paths)
    assert got["executors"] >= 1
    assert got["per_partition"] == summarize(spark, paths)["per_partition"]
    assert sum(p[3] for p in got["per_partition"]) > 2800


@pytest.fixture(scope="module")
def local_summary(spark) -> dict:  # type: ignore[no-untyped-def]
    return summarize(spark, cross_mode_paths(_realdata_or_none()))


@pytest.mark.cluster
def test_standalone_cluster_equals_local(standalone: StandaloneCluster, local_summary: dict) -> None:
    got = run_driver(standalone.url or "", cross_mode_paths(_realdata_or_none()))
    assert got["executors"] >= 1
    assert got["per_partition"] == local_summary["per_partition"]


@pytest.mark.cluster
def test_local_cluster_equals_local(local_summary: dict) -> None:
    got = run_driver("local-cluster[2,1,1024]", cross_mode_paths(_realdata_or_none()))
    assert got["executors"] == 2
    assert got["per_partition"] == local_summary["per_partition"]
