"""A tiered-storage broker (KIP-405, Kafka's ``LocalTieredStorage``, Kafka 4.3.1) in the harness.

The ``tiered_capture`` fixture (conftest.py) runs :func:`tiered.run` once: a three-partition topic
with remote storage on, every codec, committed and aborted transactions, a clean restart
mid-way; then it waits until uploads and local deletion settle, captures Kafka's ListOffsets
answers (every spec, -1 to -6, and timestamps; both isolation levels) and a consumer's read of
every partition from offset 0, stops the broker cleanly and copies its log dir and its remote
storage.  ``capture.json`` (its format: the :mod:`tiered` module doc) is what later comparisons
load with :func:`tiered.load`.

The first tests check the harness from the broker's side (remote filesets as ``LocalTieredStorage``
names them, the local log start above the uploaded segments, the consumer served from the remote
tier, the tiered ListOffsets specs as Kafka defines them in ``UnifiedLog.fetchOffsetByTimestamp``).

Then the product against the capture, on the copy of the local log dir alone:

* ``tiered-offsets`` / ``tiered-local-reading`` (recorded in CONFORMANCE.md): what ``klogs offsets``
  answers from the local log dir alone -- -1, -3 (Kafka looks at local segments only), timestamps
  whose answer is in a local segment, every spec on ``__remote_log_metadata`` (not tiered), and
  the tiered partitions' -2 (for a tiered log Kafka keeps the checkpointed log start, 0, below the
  first local segment), -4 (earliest local), -5 (latest tiered) and -6 (earliest pending upload)
  from the copy's ``__remote_log_metadata``; and the rows at and above the first local segment --
  must equal the broker's.
* ``tiered-history-reading``: the library's tiered history (remote filesets below the local log
  start, then the local log) read from offset 0 equals the consumer's rows.
* ``tiered-source-reading``: the ``kafka-log`` source over the copied log dir with ``remoteStorage``
  (both tiers, ``tier=all``) equals the consumer's read from offset 0, in both isolation levels
  (read_committed joins the aborted transactions of both tiers' transaction indexes).
* Timestamps whose answer only the remote tier's files hold (the segment was deleted locally) are
  refused by ``klogs offsets``, never answered from the local log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tiered
import workloads

pytestmark = pytest.mark.conformance

NOTE = ("a Kafka 4.3.1 broker with tiered storage (LocalTieredStorage from kafka-storage's test jar; "
        "tests/conformance/tiered.py): ListOffsets answers and a consumer's rows against the product "
        "over a copy of the local log dir alone (-2/-4/-5/-6 of the tiered partitions from its "
        "__remote_log_metadata); timestamps only the remote tier's files answer are refused; the rows "
        "at and above the first local segment")

Answer = tuple[int | None, int | None, int | None]


def _kafka(a: dict[str, Any]) -> Answer:
    """A captured answer as (offset, timestamp, leader epoch), None where Kafka sends -1."""
    assert a["error"] is None, a
    return (None if a["offset"] < 0 else a["offset"], None if a["timestamp"] < 0 else a["timestamp"],
            a["leader_epoch"])


def _first_local(cap: tiered.Capture, topic: str, partition: int) -> int:
    return int(cap.data["state"][f"{topic}-{partition}"]["local_segments"][0])


# ------------------------------------------------------------------------------------ the harness


def test_remote_storage_holds_uploaded_filesets(tiered_capture: tiered.Capture) -> None:
    """``<topic>-<partition>-<topic id>/<20-digit base>-<22-char id>.{log,index,timeindex,snapshot,
    leader_epoch_checkpoint}`` (``.txnindex`` with aborted transactions), several per partition."""
    cap = tiered_capture
    root = cap.remote_storage_dir
    dirs = sorted(d.name for d in root.iterdir())
    assert dirs == [f"{cap.topic}-{p}-{cap.data['topic_id']}" for p in range(cap.data["partitions"])], dirs
    txn_indexes = 0
    for d in root.iterdir():
        names = sorted(f.name for f in d.iterdir())
        assert names and all(tiered.REMOTE_FILE.match(n) for n in names), [n for n in names
                                                                           if not tiered.REMOTE_FILE.match(n)]
        part = int(d.name[len(cap.topic) + 1:-23])     # the topic id may hold '-'
        sets = tiered.remote_filesets(root)[(cap.topic, part)]
        assert len(sets) >= tiered.MIN_REMOTE_SEGMENTS, sets
        for s in sets:
            assert tiered.REQUIRED_REMOTE_FILES <= set(s["files"]) <= tiered.REQUIRED_REMOTE_FILES | {".txnindex"}, s
            assert (d / f"{s['base_offset']:020d}-{s['segment_id']}.log").stat().st_size > 0
        txn_indexes += sum(".txnindex" in s["files"] for s in sets)
        bases = [s["base_offset"] for s in sets]
        assert bases[0] == 0 and bases == sorted(bases), bases   # a base twice: see tiered.run
    assert txn_indexes > 0, "no uploaded segment carries its aborted transactions' .txnindex"


def test_local_log_start_moved_past_uploaded_segments(tiered_capture: tiered.Capture) -> None:
    """Local retention deleted uploaded segments: the first local segment is above several remote
    ones, every rolled local segment is in remote storage too, the gap is none (the first local
    segment starts where some remote one does).  ``log-start-offset-checkpoint`` keeps the log
    start offset, which remote storage still holds: 0 (Kafka's ``localLogStartOffset`` is not
    checkpointed; it is the first local segment's base on load)."""
    cap = tiered_capture
    assert cap.data["state_unchanged_during_capture"]
    for topic, part in cap.partitions():
        st = cap.data["state"][f"{topic}-{part}"]
        local, remote = st["local_segments"], [s["base_offset"] for s in st["remote_segments"]]
        assert local[0] > remote[2] > 0, (local, remote)
        assert local[0] in remote, (local, remote)
        assert set(local[:-1]) <= set(remote), (local, remote)     # only the active one not uploaded
        assert st["log_start_offset_checkpoint"] in (None, 0), st
        assert [s for s in (cap.log_dir / f"{topic}-{part}").glob("*.log")], "no local segment"
        # the epochs from the log start on, not truncated to the local start; the restart's last
        epochs = st["leader_epochs"]
        assert epochs[0] == [0, 0] and len(epochs) >= 2 and epochs[-1][0] >= 1, epochs


def test_consumer_read_from_zero_served_by_the_remote_tier(tiered_capture: tiered.Capture) -> None:
    """The consumer's read from 0 holds every record produced, in order, offsets from 0: the
    records below the first local segment came from remote storage.  Offsets missing from the
    read_uncommitted read are the transaction markers (one per transaction and partition);
    read_committed also drops the aborted transactions' records."""
    cap = tiered_capture
    txns = cap.data["workload"]["transactions"]
    for topic, part in cap.partitions():
        for iso in tiered.ISOLATIONS:
            recs = cap.records(topic, part, iso)
            offsets = [r["offset"] for r in recs]
            assert offsets[0] == 0 and offsets == sorted(set(offsets)), offsets[:10]
            assert offsets[-1] < cap.end_offset(topic, part, iso)
            assert min(offsets) < _first_local(cap, topic, part)
            got = [(r["key"], r["value"], r["headers"]) for r in recs]
            assert got == tiered.expected_rows(cap.data["workload"], part, iso), f"{topic}-{part} {iso}"
            gaps = cap.end_offset(topic, part, iso) - len(offsets)
            aborted = sum(o == "abort" for o in txns.values()) * tiered.TXN_RECORDS
            assert gaps == len(txns) + (aborted if iso == "read_committed" else 0), (iso, gaps)
        epochs = {r["leader_epoch"] for r in cap.records(topic, part)}
        assert len(epochs) >= 2, epochs


def test_list_offsets_tiered_specs(tiered_capture: tiered.Capture) -> None:
    """-2 earliest is 0 (remote storage holds it); -4 earliest local is the first local segment,
    above -2; -5 latest tiered is the last uploaded offset (>= -4 - 1; here every rolled segment is
    uploaded and local retention keeps some, so inside the local log); -6 earliest pending upload
    is -5 + 1, the active segment's base; -1 is the end offset; -3 the newest record (or marker).  On
    ``__remote_log_metadata`` (not tiered): -4 = -2, -5 and -6 give -1 with no epoch."""
    cap = tiered_capture
    for topic, part in cap.partitions():
        st = cap.data["state"][f"{topic}-{part}"]
        for iso in tiered.ISOLATIONS:
            a = {s: cap.answer(topic, part, s, iso) for s in tiered.SPECIALS}
            assert all(x["error"] is None for x in a.values()), a
            assert a[-2]["offset"] == 0
            assert a[-4]["offset"] == st["local_segments"][0] > a[-2]["offset"]
            assert a[-5]["offset"] >= a[-4]["offset"] - 1
            assert a[-6]["offset"] == a[-5]["offset"] + 1 == st["local_segments"][-1]
            assert a[-1]["offset"] == cap.end_offset(topic, part, iso)
            recs = cap.records(topic, part)
            newest = max(recs, key=lambda r: (r["timestamp"], -r["offset"]))
            # the first record of the newest timestamp, or a transaction marker (not in the read)
            # stamped as late or later: the coordinator writes markers after EndTxn returns, so
            # records sent next can carry an earlier CreateTime than the marker before them
            if a[-3]["offset"] == newest["offset"]:
                assert a[-3]["timestamp"] == newest["timestamp"], (a[-3], newest)
            else:
                assert a[-3]["timestamp"] >= newest["timestamp"], (a[-3], newest)
                assert all(r["offset"] != a[-3]["offset"] for r in recs), (a[-3], newest)
            for t in [x for x in cap.data["list_offsets"] if x["topic"] == topic and x["partition"] == part
                      and x["isolation"] == iso and x["spec"] >= 0]:
                # Kafka's rule: the first offset whose record timestamp >= the target (a marker may
                # be that record: its offset is not in the read)
                before = [r for r in recs if r["offset"] < t["offset"]] if t["offset"] >= 0 else recs
                assert all(r["timestamp"] < t["spec"] for r in before), t
                at = [r for r in recs if r["offset"] == t["offset"]]
                assert all(r["timestamp"] >= t["spec"] for r in at), t
    ends = 0
    for part in (0, 1):     # the records go by the tiered partition's hash: one may stay empty
        a = {s: cap.answer(tiered.METADATA_TOPIC, part, s) for s in tiered.SPECIALS}
        assert a[-4]["offset"] == a[-2]["offset"] == 0, a
        ends += a[-1]["offset"]
        # Kafka sends epoch -1 with them, which the admin client gives as no epoch
        assert (a[-5]["offset"], a[-5]["leader_epoch"]) == (-1, None), a
        assert (a[-6]["offset"], a[-6]["leader_epoch"]) == (-1, None), a
    assert ends > 0


def test_remote_log_metadata_on_disk(tiered_capture: tiered.Capture) -> None:
    """``__remote_log_metadata`` (two partitions) holds at least a started and a finished record
    per uploaded segment, on disk in the copy."""
    cap = tiered_capture
    uploaded = sum(len(cap.data["state"][f"{t}-{p}"]["remote_segments"]) for t, p in cap.partitions())
    ends = sum(cap.answer(tiered.METADATA_TOPIC, p, -1)["offset"] for p in (0, 1))
    assert ends >= 2 * uploaded, (ends, uploaded)
    sizes = [f.stat().st_size for p in (0, 1) for f in (cap.log_dir / f"{tiered.METADATA_TOPIC}-{p}").glob("*.log")]
    assert sum(sizes) > 0, sizes


def test_capture_loads_back(tiered_capture: tiered.Capture) -> None:
    """``tiered.load`` reads the JSON the fixture wrote, paths relative to it."""
    again = tiered.load(tiered_capture.path.parent)
    assert again.data == json.loads(tiered_capture.path.read_text())
    assert again.log_dir.is_dir() and again.remote_storage_dir.is_dir()
    assert (again.log_dir / "meta.properties").exists()


# ------------------------------------------------------------------------------------ the product


def _our_answers(cap: tiered.Capture, keys: list[tuple[str, int, int, str]], *,
                 remote: bool = False) -> dict[tuple[str, int, int, str], Any]:
    """What ``klogs offsets`` answers over the local copy (and the copied remote storage with
    ``remote``, its ``--remote-storage``): its task's lookup with the tiered side its driver finds in
    the copy's ``__remote_log_metadata`` (:func:`tiered_offsets`); a lookup the job refuses (a timestamp
    only the remote tier's files answer) as ``("refused", message)``."""
    from kafka_format.common.errors import LogDirError
    from kafka_format.engine.offsets import tiered_offsets
    from kafka_format.log.list_offsets import PartitionLookup
    from kafka_format.read.planning import open_partitions

    found = open_partitions([str(cap.log_dir)])
    tiered_side = tiered_offsets(found, found, str(cap.remote_storage_dir) if remote else None)
    out: dict[tuple[str, int, int, str], Any] = {}
    for replica in found:
        mine = [k for k in keys if k[:2] == (replica.topic, replica.partition)]
        with PartitionLookup(replica, tiered=tiered_side.get(id(replica))) as lookup:
            for k in mine:
                try:
                    a = lookup.list_offsets(k[2], k[3])
                except LogDirError as exc:
                    out[k] = ("refused", str(exc))
                else:
                    out[k] = (a.offset, a.record_timestamp, a.leader_epoch)
    return out


def _needs_remote(cap: tiered.Capture, a: dict[str, Any]) -> bool:
    """Whether Kafka's answer needs the remote tier's files: a timestamp answered by a segment that
    local retention deleted (-2/-4/-5/-6 come from ``__remote_log_metadata``, in the log dir)."""
    if a["topic"] != cap.topic:
        return False
    return a["spec"] >= 0 and 0 <= a["offset"] < _first_local(cap, a["topic"], a["partition"])


def _offset_cases(cap: tiered.Capture, remote: bool) -> list[dict[str, Any]]:
    return [a for a in cap.data["list_offsets"] if _needs_remote(cap, a) == remote]


def test_offsets_from_the_local_log_dir_equal_the_broker(tiered_capture: tiered.Capture, conformance: Any) -> None:
    cap = tiered_capture
    version = cap.data["kafka_version"]
    cases = _offset_cases(cap, remote=False)
    ours = _our_answers(cap, [(a["topic"], a["partition"], a["spec"], a["isolation"]) for a in cases])
    for a in cases:
        key = (a["topic"], a["partition"], a["spec"], a["isolation"])
        conformance.compare("tiered-offsets", version, f"{a['isolation']} {a['topic']}-{a['partition']} "
                            f"spec={a['spec']}", ours.get(key, "missing"), _kafka(a))
    conformance.note("tiered-offsets", NOTE)
    conformance.assert_equal("tiered-offsets", version, at_least=40)


def test_timestamps_only_the_remote_tier_answers_are_refused(tiered_capture: tiered.Capture) -> None:
    """Where Kafka's answer comes from a segment local retention deleted, the job refuses (naming the
    segment) instead of answering from the local log: never a different offset."""
    cap = tiered_capture
    cases = _offset_cases(cap, remote=True)
    assert cases
    ours = _our_answers(cap, [(a["topic"], a["partition"], a["spec"], a["isolation"]) for a in cases])
    answered = [(a, ours[(a["topic"], a["partition"], a["spec"], a["isolation"])]) for a in cases
                if ours[(a["topic"], a["partition"], a["spec"], a["isolation"])][0] != "refused"]
    assert not answered, f"{len(answered)} of {len(cases)} answered from the local log, first: {answered[0]}"
    assert all("answered by the remote tier" in ours[(a["topic"], a["partition"], a["spec"], a["isolation"])][1]
               for a in cases)


def test_timestamps_the_remote_tier_answers_equal_the_broker(tiered_capture: tiered.Capture,
                                                             conformance: Any) -> None:
    """With the remote storage (``--remote-storage``), the timestamps Kafka answers from a segment
    local retention deleted are answered from its remote files, equal to the broker's answers."""
    cap = tiered_capture
    version = cap.data["kafka_version"]
    cases = _offset_cases(cap, remote=True)
    ours = _our_answers(cap, [(a["topic"], a["partition"], a["spec"], a["isolation"]) for a in cases], remote=True)
    for a in cases:
        key = (a["topic"], a["partition"], a["spec"], a["isolation"])
        conformance.compare("tiered-remote-offsets", version, f"{a['isolation']} {a['topic']}-{a['partition']} "
                            f"spec={a['spec']}", ours.get(key, "missing"), _kafka(a))
    conformance.note("tiered-remote-offsets", "klogs offsets --remote-storage over the copied log dir and the copied "
                     "LocalTieredStorage: the timestamps whose answer lies in a segment local retention deleted "
                     "(RemoteLogManager.findOffsetByTimestamp, searched in the remote segment's own index files "
                     "and batches) against the broker's ListOffsets answers")
    conformance.assert_equal("tiered-remote-offsets", version, at_least=len(cases))


def _our_rows(cap: tiered.Capture, isolation: str, *, remote: bool = True) -> dict[tuple[str, int], list[tuple[Any, ...]]]:
    """``kafka-log`` source rows over the local copy (the local engine's read, as ``klogs export``),
    with the copied remote storage (``remote``)."""
    from kafka_format.engine.read import read_table

    table = read_table({"paths": json.dumps([str(cap.log_dir)]), "topics": cap.topic,
                        "isolationLevel": isolation, "upTo": "highWatermark",
                        **({"remoteStorage": str(cap.remote_storage_dir)} if remote else {})})
    out: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
    import pyarrow as pa

    micros = table.column("timestamp").cast(pa.int64()).to_pylist()
    for r, us in sorted(zip(table.to_pylist(), micros, strict=True), key=lambda x: (x[0]["partition"], x[0]["offset"])):
        ms = us // 1000
        headers = tuple((h["key"], None if h["value"] is None else bytes(h["value"])) for h in r["headers"] or ())
        out.setdefault((r["topic"], r["partition"]), []).append(
            (r["offset"], ms, r["timestampType"], r["key"], r["value"], headers))
    return out


def _their_rows(cap: tiered.Capture, topic: str, part: int, isolation: str, start: int) -> list[tuple[Any, ...]]:
    return [(r["offset"], r["timestamp"], r["timestamp_type"], r["key"], r["value"], tuple(r["headers"]))
            for r in cap.records(topic, part, isolation) if r["offset"] >= start]


def test_local_tier_rows_equal_the_consumer(tiered_capture: tiered.Capture, conformance: Any) -> None:
    """The source's rows at and above the first local segment equal the consumer's."""
    cap = tiered_capture
    version = cap.data["kafka_version"]
    for iso in tiered.ISOLATIONS:
        ours = _our_rows(cap, iso)
        for topic, part in cap.partitions():
            start = _first_local(cap, topic, part)
            mine = [r for r in ours.get((topic, part), []) if r[0] >= start]
            theirs = _their_rows(cap, topic, part, iso, start)
            conformance.compare("tiered-local-reading", version, f"{iso} {topic}-{part} rows from {start} "
                                f"({len(theirs)})", mine, theirs)
    conformance.note("tiered-local-reading", NOTE)
    conformance.assert_equal("tiered-local-reading", version, at_least=6)


def test_rows_from_zero_equal_the_consumer(tiered_capture: tiered.Capture, conformance: Any) -> None:
    """The source's rows of the whole partition (remote tier included) equal the consumer's, and
    without ``remoteStorage`` the read is refused rather than cut to the local tail."""
    from kafka_format.read.options import KafkaLogOptionError

    cap = tiered_capture
    version = cap.data["kafka_version"]
    for iso in tiered.ISOLATIONS:
        ours = _our_rows(cap, iso)
        for topic, part in cap.partitions():
            theirs = _their_rows(cap, topic, part, iso, 0)
            conformance.compare("tiered-source-reading", version, f"{iso} {topic}-{part} rows from 0 ({len(theirs)})",
                                ours.get((topic, part), []), theirs)
    conformance.note("tiered-source-reading", "the kafka-log source (local engine) over the copied log dir with "
                     "remoteStorage=<the copied LocalTieredStorage>: both tiers, as the broker serves them, against a "
                     "consumer's read from offset 0 in both isolation levels")
    conformance.assert_equal("tiered-source-reading", version, at_least=6)
    with pytest.raises(KafkaLogOptionError, match="remoteStorage"):
        _our_rows(cap, "read_uncommitted", remote=False)


def test_expected_rows_follow_the_phases() -> None:
    """``tiered.expected_rows`` rebuilds the records from ``workloads.records`` (no broker)."""
    wl = {"phases": [{"name": "x", "codecs": ["none"], "records_per_codec": 3,
                      "transactions": [["zstd", "abort"]]}]}
    seeds = [("x-none-p1", 3), ("tiered-x-0-abort-p1", tiered.TXN_RECORDS),
             ("tiered-x-0-plain-p1", tiered.PLAIN_AFTER_TXN)]
    want = [(k, b"" if k is None and v is None else v, list(h))
            for seed, n in seeds for k, v, h in workloads.records(seed, n)]
    assert tiered.expected_rows(wl, 1, "read_uncommitted") == want
    assert tiered.expected_rows(wl, 1, "read_committed") == want[:3] + want[3 + tiered.TXN_RECORDS:]


def test_paths_are_relative(tiered_capture: tiered.Capture) -> None:
    assert not Path(tiered_capture.data["log_dir"]).is_absolute()
    assert not Path(tiered_capture.data["remote_storage_dir"]).is_absolute()


# ------------------------------------------- the library's remote tier against the broker's files


def _histories(cap: tiered.Capture) -> dict[tuple[str, int], Any]:
    """Each partition's tiered history from the copy alone: ``__remote_log_metadata`` replayed from
    the local log dir, the remote storage listed, the local replica."""
    from kafka_format.internal.remote_log_metadata import TopicIdPartition
    from kafka_format.read.remote_log_metadata import load_remote_log_metadata
    from kafka_format.storage.logdir import open_log_dirs
    from kafka_format.storage.remote_tier import open_remote_storage
    from kafka_format.storage.tiered_history import tiered_history

    view = load_remote_log_metadata(str(cap.log_dir))
    store = open_remote_storage(str(cap.remote_storage_dir))
    found = open_log_dirs(str(cap.log_dir))
    out = {}
    for topic, part in cap.partitions():
        cache = view.cache(TopicIdPartition(cap.data["topic_id"], topic, part))
        assert cache is not None, f"no remote log metadata for {topic}-{part}"
        (replica,) = found.replicas(topic, part)
        out[(topic, part)] = tiered_history(replica, cache, store)
    return out


def test_replayed_metadata_names_the_uploaded_filesets(tiered_capture: tiered.Capture) -> None:
    """The segments the broker's ``__remote_log_metadata`` (replayed offline) has in
    COPY_SEGMENT_FINISHED are complete filesets of the remote storage, at their start offsets."""
    from kafka_format.internal.remote_log_metadata import RemoteLogSegmentState, TopicIdPartition
    from kafka_format.read.remote_log_metadata import load_remote_log_metadata

    cap = tiered_capture
    view = load_remote_log_metadata(str(cap.log_dir))
    assert view.stopped_at is None
    on_disk = tiered.remote_filesets(cap.remote_storage_dir)
    for topic, part in cap.partitions():
        tip = TopicIdPartition(cap.data["topic_id"], topic, part)
        finished = view.segments_by_state(tip).get(RemoteLogSegmentState.COPY_SEGMENT_FINISHED, [])
        complete = {(s["base_offset"], s["segment_id"]) for s in on_disk[(topic, part)] if tiered.complete(s)}
        assert len(finished) >= tiered.MIN_REMOTE_SEGMENTS
        assert {(m.start_offset, m.segment_id) for m in finished} <= complete, f"{topic}-{part}"


def test_tiered_history_rows_equal_the_consumer_from_zero(tiered_capture: tiered.Capture, conformance: Any) -> None:
    """The whole history (remote segments below the local log start, then the local log), planned
    and read by the library, equals the consumer's read_uncommitted read from offset 0."""
    import pyarrow as pa

    from kafka_format.read.options import ReadOptions
    from kafka_format.read.planning import Bounds, PlanOptions
    from kafka_format.read.split_reader import read_split
    from kafka_format.read.tiers import plan_tiered_splits

    cap = tiered_capture
    version = cap.data["kafka_version"]
    iso = "read_uncommitted"
    opts = ReadOptions(paths=(), plan=PlanOptions(), bounds=Bounds())
    for (topic, part), history in _histories(cap).items():
        assert not [f for f in history.findings if type(f).__name__ in ("OffsetGap", "MissingRemoteFiles")], \
            history.findings
        end = cap.end_offset(topic, part, iso)
        rows = []
        for split in plan_tiered_splits(history, opts.plan):
            for batch in read_split(split, opts):
                micros = batch.column("timestamp").cast(pa.int64()).to_pylist()
                for r, us in zip(batch.to_pylist(), micros, strict=True):
                    if r["offset"] < end:
                        headers = tuple((h["key"], None if h["value"] is None else bytes(h["value"]))
                                        for h in r["headers"] or ())
                        rows.append((r["offset"], us // 1000, r["timestampType"], r["key"], r["value"], headers))
        conformance.compare("tiered-history-reading", version, f"{iso} {topic}-{part} rows from 0",
                            rows, _their_rows(cap, topic, part, iso, 0))
    conformance.note("tiered-history-reading", "the library's tiered history (storage/tiered_history.py: "
                     "__remote_log_metadata replayed from the copied log dir, LocalTieredStorage listed, "
                     "remote then local segments planned and read) against a consumer's read from offset 0")
    conformance.assert_equal("tiered-history-reading", version, at_least=3)


def test_audit_of_the_tiered_broker_finds_its_tiers_consistent(tiered_capture: tiered.Capture) -> None:
    """``klogs audit --remote-storage`` over a cleanly stopped tiered broker's copy: no ``remote-*``
    error or warning, and every byte of every remote ``.log`` the broker serves is valid."""
    from kafka_format.engine.audit import audit_local

    cap = tiered_capture
    findings, files = audit_local([str(cap.log_dir)], topics=[cap.topic],
                                  remote_storage=(str(cap.remote_storage_dir), "auto"))
    bad = [f for f in findings.to_pylist() if f["check"].startswith("remote-") and f["severity"] != "info"]
    assert bad == []
    remote = [f for f in files.to_pylist() if str(cap.remote_storage_dir) in f["file"]]
    assert len(remote) >= tiered.MIN_REMOTE_SEGMENTS
    assert all(f["validBytes"] == f["sizeBytes"] for f in remote), remote


def test_remote_retention_predictions_equal_what_the_broker_deletes(tiered_capture: tiered.Capture,
                                                                     conformance: Any) -> None:
    """``klogs retention`` over the copy with the ``retention.bytes`` the harness then gave the broker
    (step 6 of :mod:`tiered`): the remote segments it reports deletable are those the broker's
    expiration pass deleted, per partition."""
    from kafka_format.engine.retention import retention_local
    from kafka_format.log.topicconfig import load_topic_configs

    cap = tiered_capture
    version = cap.data["kafka_version"]
    rr = cap.data["remote_retention"]
    configs = load_topic_configs([str(cap.log_dir)], overrides=[f"{cap.topic}:retention.bytes={rr['retention_bytes']}"])
    newest = max(r["timestamp"] for t, p in cap.partitions() for r in cap.records(t, p, "read_uncommitted"))
    rows = retention_local(str(cap.log_dir), configs, newest + 60_000, topics=[cap.topic])
    for topic, part in cap.partitions():
        key = f"{topic}-{part}"
        before = {s["segment_id"]: s["base_offset"] for s in cap.data["state"][key]["remote_segments"]
                  if tiered.complete(s)}
        theirs = sorted(before[sid] for sid in set(before) - set(rr["remaining_segments"][key]))
        ours = sorted(r["baseOffset"] for r in rows if r["partition"] == part and r["tier"] == "remote"
                      and r["deletable"])
        conformance.compare("tiered-remote-retention", version, f"{key} retention.bytes={rr['retention_bytes']}: "
                            f"{len(theirs)} remote segments deleted", ours, theirs)
    conformance.note("tiered-remote-retention", "klogs retention over the copied log dir with retention.bytes set to "
                     "half the smallest partition's bytes: the remote segments it reports deletable against those the "
                     "broker's RemoteLogManager expiration pass deleted after the same setting")
    conformance.assert_equal("tiered-remote-retention", version, at_least=3)
