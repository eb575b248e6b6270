"""__transaction_state decoding against a real broker log (ksqlDB, Confluent 7.x).

Independent facts: the transactional id's partition (Kafka's ``abs(hash) % 50``)
is the partition dir (44); the producer id/epoch and partitions recorded by the
coordinator match the transactional batches and the COMMIT marker that the same
broker wrote into the data partition; consecutive states follow Kafka's
``TransactionState.validPreviousStates``.  Bytes come from kafka-python.
"""

from __future__ import annotations

import os
import re
import struct
import warnings
from pathlib import Path

import pytest

with warnings.catch_warnings():  # kafka-python's package import emits DeprecationWarnings
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record import MemoryRecords

import itertools

from kafka_format.common.errors import InternalTopicFormatError
from kafka_format.internal import transaction_log as tl
from kafka_format.internal.protocol import INT16

REALDATA = Path(os.environ.get("KLA_SHARED_DIR", Path(__file__).resolve().parents[3] / "shared")) / "realdata"
LOG_DIR = REALDATA / "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions" / "kafka-data"
TXN_LOG = LOG_DIR / "__transaction_state-44" / "00000000000000000000.log"

# TransactionMetadata.scala, validPreviousStates of each state
VALID_PREVIOUS = {
    "Empty": {"Empty", "CompleteCommit", "CompleteAbort"},
    "Ongoing": {"Ongoing", "Empty", "CompleteCommit", "CompleteAbort"},
    "PrepareCommit": {"Ongoing"},
    "PrepareAbort": {"Ongoing", "PrepareEpochFence"},
    "CompleteCommit": {"PrepareCommit"},
    "CompleteAbort": {"PrepareAbort"},
    "Dead": {"Empty", "CompleteAbort", "CompleteCommit"},
    "PrepareEpochFence": {"Ongoing"},
}
CONTROL_COMMIT = 1  # ControlRecordType.COMMIT
VALUE_TEXT = re.compile(
    r"producerId:(-?\d+),producerEpoch:(-?\d+),state=(\w+),partitions=\[(.*)\],"
    r"txnLastUpdateTimestamp=(-?\d+),txnTimeoutMs=(\d+)")


def kp_records(path: Path):
    mr = MemoryRecords(path.read_bytes())
    while (batch := mr.next_batch()) is not None:
        for rec in batch:
            yield batch, rec


@pytest.fixture(scope="module")
def txn_records(realdata: Path) -> list:
    if not TXN_LOG.is_file():
        pytest.skip("ItumelengMogase __transaction_state-44 not present")
    return [rec for _, rec in kp_records(TXN_LOG)]


def test_every_record_decodes_into_its_partition(txn_records: list) -> None:
    assert len(txn_records) == 4
    for rec in txn_records:
        key = tl.decode_transaction_log_key(rec.key)
        value = tl.decode_transaction_log_value(rec.value)
        assert key["version"] == 0 and value is not None
        assert value["version"] == INT16.unpack(rec.value[:2])[0]
        assert tl.transactional_id_partition(key["data"]["transactionalId"]) == 44
        d = value["data"]
        assert d["transactionLastUpdateTimestampMs"] <= rec.timestamp  # stored after the update
        assert d["transactionTimeoutMs"] > 0


def test_states_follow_kafka_transitions_and_match_data_partition(txn_records: list) -> None:
    values = [tl.decode_transaction_log_value(r.value)["data"] for r in txn_records]  # type: ignore[index]
    states = [tl.TRANSACTION_STATES[v["transactionStatus"]] for v in values]
    for prev, cur in itertools.pairwise(states):
        assert prev in VALID_PREVIOUS[cur], (prev, cur)
    # The data partitions the coordinator tracked hold this producer's transactional
    # batches and, because the transaction completed with a commit, a COMMIT marker.
    tracked = {(t["topic"], p) for v in values for t in (v["transactionPartitions"] or [])
               for p in t["partitionIds"]}
    assert tracked
    pid_epochs = {(v["producerId"], v["producerEpoch"]) for v in values}
    for topic, part in tracked:
        seen_data = seen_commit = False
        for log in sorted((LOG_DIR / f"{topic}-{part}").glob("*.log")):
            for batch, rec in kp_records(log):
                if (batch.producer_id, batch.producer_epoch) not in pid_epochs:
                    continue
                assert batch.is_transactional
                if batch.is_control_batch:
                    seen_commit |= struct.unpack(">hh", rec.key[:4])[1] == CONTROL_COMMIT
                else:
                    seen_data = True
        assert seen_data and (seen_commit or states[-1] != "CompleteCommit")
    # Empty carries no partitions (TransactionLog.valueToBytes writes null)
    for v, s in zip(values, states):
        if s == "Empty":
            assert v["transactionPartitions"] is None


def test_dump_text_matches_decoded_fields(txn_records: list) -> None:
    for rec in txn_records:
        key_text, value_text = tl.format_transaction_log_record(rec.key, rec.value)
        d = tl.decode_transaction_log_value(rec.value)["data"]  # type: ignore[index]
        tid = tl.decode_transaction_log_key(rec.key)["data"]["transactionalId"]
        assert key_text == f"transaction_metadata::transactionalId={tid}"
        m = VALUE_TEXT.fullmatch(value_text or "")
        assert m is not None, value_text
        assert int(m[1]) == d["producerId"] and int(m[2]) == d["producerEpoch"]
        assert m[3] == tl.TRANSACTION_STATES[d["transactionStatus"]]
        assert int(m[5]) == d["transactionLastUpdateTimestampMs"] and int(m[6]) == d["transactionTimeoutMs"]
        listed = set(m[4].split(",")) - {""}
        expected = set() if d["transactionStatus"] == 0 else {
            f"{t['topic']}-{p}" for t in d["transactionPartitions"] for p in t["partitionIds"]}
        assert listed == expected


def test_encoders_reproduce_broker_bytes(txn_records: list) -> None:
    for rec in txn_records:
        tid = tl.decode_transaction_log_key(rec.key)["data"]["transactionalId"]
        assert tl.encode_transaction_log_key(tid) == rec.key
        d = tl.decode_transaction_log_value(rec.value)["data"]  # type: ignore[index]
        tps = d["transactionPartitions"]
        raw = tl.encode_transaction_log_value(
            producer_id=d["producerId"], producer_epoch=d["producerEpoch"],
            timeout_ms=d["transactionTimeoutMs"], status=d["transactionStatus"],
            partitions=None if tps is None else {t["topic"]: t["partitionIds"] for t in tps},
            last_update_ms=d["transactionLastUpdateTimestampMs"], start_ms=d["transactionStartTimestampMs"])
        assert raw == rec.value


def test_flexible_v1_tagged_fields_and_unknown_versions() -> None:
    raw = tl.encode_transaction_log_value(
        producer_id=7, producer_epoch=1, timeout_ms=100, status=1, partitions={"t": [2, 0]},
        last_update_ms=5, start_ms=4, version=1, previous_producer_id=6, client_transaction_version=2)
    d = tl.decode_transaction_log_value(raw)["data"]  # type: ignore[index]
    # tags of TransactionLogValue.json v1: 0 previousProducerId, 1 nextProducerId (default, so absent),
    # 2 clientTransactionVersion
    assert d["previousProducerId"] == 6 and d["clientTransactionVersion"] == 2
    assert "nextProducerId" not in d
    assert raw.endswith(bytes([2, 0, 8]) + struct.pack(">q", 6) + bytes([2, 2]) + struct.pack(">h", 2))
    assert tl.format_transaction_log_record(INT16.pack(5) + b"\x00\x01x", raw) == ("unknown::version=5", None)
    assert tl.decode_transaction_log_value(INT16.pack(9))["data"] == "unknown"  # type: ignore[index]
    key = tl.encode_transaction_log_key("x")
    assert tl.format_transaction_log_record(key, None) == ("transaction_metadata::transactionalId=x",
                                                           "<DELETE>")
    with pytest.raises(InternalTopicFormatError):
        tl.format_transaction_log_record(key, INT16.pack(9))


def test_partitions_print_in_scala_hashset_order() -> None:
    # Scala 2.13 mutable.HashSet iterates by bucket (improved hash & (size-1)), then hash.
    # TopicPartition("t", p).hashCode = 31 * (31 + p) + "t".hashCode() with "t".hashCode() = 116.
    raw = tl.encode_transaction_log_value(
        producer_id=1, producer_epoch=0, timeout_ms=1, status=1, partitions={"t": [0, 1, 2, 3]},
        last_update_ms=0, start_ms=0)
    text = tl.format_transaction_log_record(tl.encode_transaction_log_key("a"), raw)[1]
    hashes = {p: 31 * (31 + p) + 116 for p in range(4)}
    order = sorted(range(4), key=lambda p: ((hashes[p] ^ (hashes[p] >> 16)) & 15, hashes[p]))
    assert f"partitions=[{','.join(f't-{p}' for p in order)}]" in (text or "")
