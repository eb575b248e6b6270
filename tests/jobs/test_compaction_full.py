"""The compacted table view (``klogs compaction --mode full``) against independent oracles.

Oracle: every ``.log`` of a partition decoded by kafka-python's ``MemoryRecords``; the
checkpoint files parsed plainly; the consumer's read_committed rules written out here (an
aborted transaction's data is known by the ABORT marker its producer writes after it; the LSO is
``min(HW, first offset of a transaction still open at HW)``); then "highest offset per key,
tombstones and null keys absent" by brute force.  A writer-made topic adds hand-derived facts.
"""

from __future__ import annotations

import struct
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_format.writer import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    LogDirWriter,
    Record,
    build_control_batch,
    build_v2_batch,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record import MemoryRecords

pytestmark = pytest.mark.spark

SAMPLES = Path(__file__).resolve().parents[2] / "data_samples" / "logdirs"
BROKER_1 = SAMPLES / "broker-1"
T0 = 1_700_000_000_000
CONTROL_KEY = struct.Struct(">hh")     # ControlRecordType key: version, type (0 ABORT, 1 COMMIT)


# --- the oracle ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rec:
    offset: int
    key: bytes | None
    value: bytes | None


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """An offset checkpoint file: version line, count line, then ``topic partition offset``."""
    if not path.is_file():
        return {}
    lines = path.read_text().split("\n")
    out = {}
    for line in lines[2:2 + int(lines[1])]:
        topic, partition, offset = line.rsplit(" ", 2)
        out[(topic, int(partition))] = int(offset)
    return out


def committed_records(pdir: Path) -> list[Rec]:
    """What a read_committed consumer reading from ``earliest`` gets from the partition dir
    (CompletedFetch + LSO), decoded by kafka-python."""
    topic, _, part = pdir.name.rpartition("-")
    tp = (topic, int(part))
    logs = sorted(pdir.glob("*.log"))
    batches = []
    for log in logs:
        mr = MemoryRecords(log.read_bytes())
        while (b := mr.next_batch()) is not None:
            recs = list(b)
            is_control = bool(getattr(b, "is_control_batch", False))
            ctrl_type = CONTROL_KEY.unpack(bytes(recs[0].key))[1] if is_control and recs else None
            batches.append((b, recs, is_control, bool(getattr(b, "is_transactional", False)),
                            getattr(b, "producer_id", -1), ctrl_type))
    leo = max((r.offset + 1 for _, recs, *_ in batches for r in recs), default=0)
    log_start = max(read_checkpoint(pdir.parent / "log-start-offset-checkpoint").get(tp, 0),
                    int(logs[0].name[:20]) if logs else 0)
    hw = min(read_checkpoint(pdir.parent / "replication-offset-checkpoint").get(tp, leo), leo)
    # LSO: transactions still open at HW (no marker below HW)
    open_txn: dict[int, int] = {}
    for b, recs, is_control, txn, pid, _ in batches:
        first = recs[0].offset if recs else b.base_offset
        if first >= hw or not txn:
            continue
        if is_control:
            open_txn.pop(pid, None)
        else:
            open_txn.setdefault(pid, first)
    lso = min([hw, *open_txn.values()])
    # outcome of each transactional data batch: the next marker of its producer
    aborted_batches: set[int] = set()
    pending: dict[int, list[int]] = {}
    for i, (_b, _recs, is_control, txn, pid, ctrl) in enumerate(batches):
        if not txn:
            continue
        if is_control:
            if ctrl == 0:
                aborted_batches.update(pending.get(pid, []))
            pending.pop(pid, None)
        else:
            pending.setdefault(pid, []).append(i)
    out = []
    for i, (_b, recs, is_control, _txn, _pid, _ctrl) in enumerate(batches):
        if is_control or i in aborted_batches:
            continue
        for r in recs:
            if log_start <= r.offset < lso:
                out.append(Rec(r.offset, None if r.key is None else bytes(r.key),
                               None if r.value is None else bytes(r.value)))
    return out


def oracle_decisions(records: list[Rec]) -> dict[int, tuple[str, str, int | None]]:
    """offset -> (decision, reason, supersededBy) by brute force."""
    latest: dict[bytes, int] = {}
    for r in records:
        if r.key is not None and r.offset > latest.get(r.key, -1):
            latest[r.key] = r.offset
    out = {}
    for r in records:
        if r.key is None:
            out[r.offset] = ("remove", "null-key", None)
        elif r.offset < latest[r.key]:
            out[r.offset] = ("remove", "superseded", latest[r.key])
        elif r.value is None:
            out[r.offset] = ("remove", "tombstone", None)
        else:
            out[r.offset] = ("keep", "latest", None)
    return out


def oracle_table(records: list[Rec]) -> dict[bytes, tuple[int, bytes]]:
    """key -> (offset, value) of the table view."""
    best: dict[bytes, Rec] = {}
    for r in records:
        if r.key is not None and (r.key not in best or r.offset > best[r.key].offset):
            best[r.key] = r
    return {k: (r.offset, r.value) for k, r in best.items() if r.value is not None}


# --- a writer-made topic with hand-derived answers ---------------------------------------------------
def _rec(key: str | None, value: str | None, i: int) -> Record:
    return Record(None if key is None else key.encode(), None if value is None else value.encode(), T0 + i)


def write_table_topic(root: Path) -> Path:
    """Log dir with topic ``table``: partition 0 (several segments, log start offset 1, an aborted and
    a committed transaction, a tombstone then a revival, an open transaction at the end) and
    partition 1 (HW below the log end)."""
    ld = LogDirWriter(root / "broker-9", node_id=9, cluster_id="compaction-full-test", kraft=True)
    w = ld.partition("table", 0, topic_id=b"\x07" * 16, segment_bytes=260)
    off = 0

    def add(records: list[Record], **kw: object) -> None:
        nonlocal off
        w.append(build_v2_batch(records, base_offset=off, **kw))  # type: ignore[arg-type]
        off += len(records)

    def marker(kind: int, pid: int) -> None:
        nonlocal off
        w.append(build_control_batch(kind, base_offset=off, timestamp=T0 + off, producer_id=pid,
                                     producer_epoch=0, coordinator_epoch=3))
        off += 1

    add([_rec("k0", "v0", 0), _rec("k1", "v1a", 1), _rec("k2", "v2a", 2), _rec("k3", "v3a", 3),
         _rec(None, "n1", 4)])                                                    # 0-4
    add([_rec("k1", "v1b", 5), _rec("k4", "v4a", 6)])                             # 5-6
    add([_rec("k2", None, 7)])                                                    # 7: tombstone
    add([_rec("k1", "v1-aborted", 8), _rec("k5", "v5-aborted", 9)],               # 8-9 aborted
        producer_id=500, producer_epoch=0, base_sequence=0, transactional=True)
    marker(CONTROL_ABORT, 500)                                                    # 10
    add([_rec("k3", "v3c", 11), _rec("k6", "v6c", 12)],                           # 11-12 committed
        producer_id=501, producer_epoch=0, base_sequence=0, transactional=True)
    marker(CONTROL_COMMIT, 501)                                                   # 13
    add([_rec("k4", None, 14), _rec("k4", "v4b", 15)])                            # 14-15
    add([_rec("k7", "v7", 16), _rec(None, None, 17)])                             # 16-17
    add([_rec("k8", "v8-open", 18)], producer_id=502, producer_epoch=0, base_sequence=0,
        transactional=True)                                                       # 18: never decided
    add([_rec("k1", "v1-late", 19), _rec("k9", "v9", 20)])                        # 19-20: above the LSO
    w.close()
    ld.state("table", 0).log_start_offset = 1
    w1 = ld.partition("table", 1, topic_id=b"\x07" * 16)
    for i, (k, v) in enumerate([("a", "1"), ("b", "1"), ("a", "2"), ("a", "3"), ("c", "1"), ("b", None)]):
        w1.append(build_v2_batch([_rec(k, v, i)], base_offset=i))
    w1.close()
    ld.state("table", 1).high_watermark = 3
    ld.close(written_at_ms=T0 + 1000)
    return root / "broker-9"


TABLE_EXPECTED = {
    ("table", 0): {b"k1": b"v1b", b"k3": b"v3c", b"k4": b"v4b", b"k6": b"v6c", b"k7": b"v7"},
    ("table", 1): {b"a": b"2", b"b": b"1"},
}


# --- the two engines' runs (one read per log dir and engine, shared by the parametrised checks) -----
ENGINES = ["spark", "local"]
# local: a sort buffer this small makes every partition of more than a few rows sort in several
# runs that are spilled and merged (the bounded-memory path); the batches read are small too
TINY_SORT_BUFFER = 4096


def _collect_spark(spark, root: Path):  # type: ignore[no-untyped-def]
    from kafka_format.spark.frames import (
        compaction_full,
        compaction_full_decisions,
        compaction_full_summary,
        read_full_input,
    )

    df = read_full_input(spark, str(root))
    decisions = compaction_full_decisions(df).cache()
    table = compaction_full(df)
    out = {
        "decisions": [r.asDict() for r in decisions.select("topic", "partition", "offset", "key", "value", "decision",
                                                           "reason", "supersededBy").collect()],
        "table": [r.asDict() for r in table.select("topic", "partition", "offset", "key", "value").collect()],
        "summary": {(r["topic"], r["partition"]): r for r in compaction_full_summary(decisions)},
        "columns": (df.columns, table.columns, decisions.columns),
    }
    decisions.unpersist()
    return out


def _collect_local(root: Path, tmp: Path):  # type: ignore[no-untyped-def]
    import pyarrow.parquet as pq

    from kafka_format.engine.table_view import full_local, full_read_options, full_tasks

    summary = full_local(str(root), str(tmp), sort_buffer=TINY_SORT_BUFFER)
    decided = pq.read_table(tmp)
    rows = decided.to_pylist()
    source = full_tasks(full_read_options(str(root)), str(tmp / "unused"))[2].names
    return {
        "decisions": rows,
        "table": [{c: r[c] for c in source} for r in rows if r["decision"] == "keep"],
        "summary": {(r["topic"], r["partition"]): r for r in summary},
        "columns": (source, source, decided.column_names),
    }


def _collect(request: pytest.FixtureRequest, root: Path, tmp: Path):  # type: ignore[no-untyped-def]
    if request.param == "spark":
        return _collect_spark(request.getfixturevalue("spark"), root)
    return _collect_local(root, tmp)


@pytest.fixture(scope="module", params=ENGINES)
def samples_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return _collect(request, BROKER_1, tmp_path_factory.mktemp("samples-local"))


@pytest.fixture(scope="module")
def table_topic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_table_topic(tmp_path_factory.mktemp("full"))


@pytest.fixture(scope="module", params=ENGINES)
def table_run(request: pytest.FixtureRequest, table_topic: Path,  # type: ignore[no-untyped-def]
              tmp_path_factory: pytest.TempPathFactory):
    return _collect(request, table_topic, tmp_path_factory.mktemp("table-local"))


def _by_partition(rows, topic: str, partition: int) -> list:  # type: ignore[no-untyped-def]
    return [r for r in rows if r["topic"] == topic and r["partition"] == partition]


SAMPLE_PARTITIONS = sorted(p.name for p in BROKER_1.iterdir() if p.is_dir())


# --- what the table view protects --------------------------------------------------------------------
@pytest.mark.parametrize("pdir", SAMPLE_PARTITIONS)
def test_table_view_matches_oracle_on_samples(samples_run, pdir: str) -> None:  # type: ignore[no-untyped-def]
    topic, _, part = pdir.rpartition("-")
    expected = oracle_table(committed_records(BROKER_1 / pdir))
    got = {r["key"]: (r["offset"], r["value"]) for r in _by_partition(samples_run["table"], topic, int(part))}
    assert len(got) == len(_by_partition(samples_run["table"], topic, int(part)))   # one row per key
    assert got == expected


@pytest.mark.parametrize("pdir", SAMPLE_PARTITIONS)
def test_decisions_match_oracle_on_samples(samples_run, pdir: str) -> None:  # type: ignore[no-untyped-def]
    topic, _, part = pdir.rpartition("-")
    records = committed_records(BROKER_1 / pdir)
    rows = _by_partition(samples_run["decisions"], topic, int(part))
    assert sorted(r["offset"] for r in rows) == sorted(r.offset for r in records)   # every input row once
    got = {r["offset"]: (r["decision"], r["reason"], r["supersededBy"]) for r in rows}
    assert got == oracle_decisions(records)


def test_samples_exercise_every_reason(samples_run) -> None:  # type: ignore[no-untyped-def]
    """The fixtures really contain what the oracle comparisons are meant to protect."""
    reasons = {r["reason"] for r in samples_run["decisions"]}
    assert reasons == {"latest", "superseded", "tombstone", "null-key"}
    # aborted data exists in transactions-0 and is absent from the input
    all_offsets = {r["offset"] for r in _by_partition(samples_run["decisions"], "transactions", 0)}
    assert all_offsets < set(range(max(all_offsets) + 1))


def test_summary_counts_match_oracle(samples_run) -> None:  # type: ignore[no-untyped-def]
    for (topic, partition), s in samples_run["summary"].items():
        records = committed_records(BROKER_1 / f"{topic}-{partition}")
        dec = oracle_decisions(records)
        assert s["recordsBefore"] == len(records)
        assert s["recordsAfter"] == len(oracle_table(records))
        assert s["keys"] == len({r.key for r in records if r.key is not None})
        assert s["keysDeleted"] == sum(1 for d in dec.values() if d[1] == "tombstone")
        assert s["recordsSuperseded"] == sum(1 for d in dec.values() if d[1] == "superseded")
        assert s["nullKeyRecords"] == sum(1 for r in records if r.key is None)


def test_output_columns_are_the_data_source_columns(samples_run) -> None:  # type: ignore[no-untyped-def]
    source, table, decisions = samples_run["columns"]
    assert table == source
    assert decisions == [*source, "decision", "reason", "supersededBy"]


@pytest.mark.parametrize("tp", sorted(TABLE_EXPECTED))
def test_table_view_hand_derived(table_run, tp: tuple[str, int]) -> None:  # type: ignore[no-untyped-def]
    """Log start offset, aborted and committed transactions, tombstone then revival, the LSO
    before an open transaction, HW below LEO: the answers worked out by hand."""
    got = {r["key"]: r["value"] for r in _by_partition(table_run["table"], *tp)}
    assert got == TABLE_EXPECTED[tp]


@pytest.mark.parametrize("partition", [0, 1])
def test_table_topic_matches_oracle(table_run, table_topic: Path, partition: int) -> None:  # type: ignore[no-untyped-def]
    records = committed_records(table_topic / f"table-{partition}")
    assert {k: v for k, (_, v) in oracle_table(records).items()} == TABLE_EXPECTED[("table", partition)]
    rows = _by_partition(table_run["decisions"], "table", partition)
    assert {r["offset"]: (r["decision"], r["reason"], r["supersededBy"]) for r in rows} == oracle_decisions(records)


def test_table_topic_superseded_points_at_winner(table_run) -> None:  # type: ignore[no-untyped-def]
    rows = {r["offset"]: r for r in _by_partition(table_run["decisions"], "table", 0)}
    assert (rows[5]["decision"], rows[5]["reason"]) == ("keep", "latest")      # aborted 8, late 19 ignored
    assert (rows[1]["reason"], rows[1]["supersededBy"]) == ("superseded", 5)    # k1 v1a -> v1b
    assert (rows[7]["decision"], rows[7]["reason"]) == ("remove", "tombstone")  # k2's latest is a tombstone
    assert (rows[14]["reason"], rows[14]["supersededBy"]) == ("superseded", 15)  # tombstone then revival
    assert 0 not in rows and 8 not in rows and 9 not in rows and 18 not in rows and 19 not in rows
    assert rows[4]["reason"] == "null-key" and rows[17]["reason"] == "null-key"
