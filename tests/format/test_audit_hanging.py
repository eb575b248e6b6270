"""Hanging transactions as Kafka's ``kafka-transactions find-hanging`` decides them
(``tools/src/main/java/org/apache/kafka/tools/TransactionsCommand.java``,
``FindHangingTransactionsCommand``): an open transaction whose producer last wrote more than
``transaction.max.timeout.ms`` ago is only a candidate; it hangs when the transaction coordinator
does not list the partition in that producer's transaction (no transactional id for the producer,
a completed transaction, or another partition set).

Regression of the conformance comparison against a real broker (tests/conformance/test_groups.py):
a transaction still Ongoing at the coordinator, whose records carry old CreateTime timestamps, was
reported hanging by the audit while Kafka's rule says it is not.  Files come from our writer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_format.internal.transaction_log import encode_transaction_log_key, encode_transaction_log_value
from kafka_format.log.audit.auditor import (
    TRANSACTION_MAX_TIMEOUT_MS,
    audit_partition,
    coordinator_transactions,
)
from kafka_format.storage.logdir import open_log_dirs
from kafka_format.writer.batches import Record, build_v2_batch
from kafka_format.writer.segments import PartitionWriter

T_OLD = 1_700_000_000_000
PID = 77
NOW = T_OLD + 5 + TRANSACTION_MAX_TIMEOUT_MS + 1     # the last write (T_OLD + 5) is past the threshold


def _write(root: Path, coordinator_state: int | None, partitions: dict[str, list[int]] | None) -> Path:
    """Log dir with ``txn-0`` (producer PID's transaction left open at offset 0, old timestamps)
    and, unless ``coordinator_state`` is None, ``__transaction_state-0`` holding the
    coordinator's last record for transactional id ``tx-a`` of producer PID."""
    logs = root / "logs"
    data = PartitionWriter(logs / "txn-0")
    data.append(build_v2_batch([Record(b"k", b"v", T_OLD), Record(None, b"w", T_OLD + 5)], base_offset=0,
                               producer_id=PID, producer_epoch=0, base_sequence=0, transactional=True))
    data.close()
    if coordinator_state is not None:
        state = PartitionWriter(logs / "__transaction_state-0")
        value = encode_transaction_log_value(producer_id=PID, producer_epoch=0, timeout_ms=60_000,
                                             status=coordinator_state, partitions=partitions,
                                             last_update_ms=T_OLD, start_ms=T_OLD)
        state.append(build_v2_batch([Record(encode_transaction_log_key("tx-a"), value, T_OLD)], base_offset=0))
        state.close()
    return logs


def _transaction_checks(logs: Path) -> list[tuple[str, str, int | None]]:
    parts = open_log_dirs([str(logs)]).all_partitions()
    coordinator = coordinator_transactions(parts)
    replica = next(p for p in parts if p.topic == "txn")
    return [(f.severity, f.check, f.offset) for f in audit_partition(replica, now_ms=NOW, coordinator=coordinator)
            if f.check in ("open-transaction", "hanging-transaction")]


@pytest.mark.parametrize("state, partitions, expected", [
    # Ongoing (1) and listing txn-0: the coordinator will write the marker -> not hanging
    (1, {"txn": [0]}, ("info", "open-transaction", 0)),
    # PrepareCommit (2) still listing it: markers pending -> not hanging
    (2, {"txn": [0]}, ("info", "open-transaction", 0)),
    # Ongoing but on other partitions only -> hanging
    (1, {"other": [0]}, ("warning", "hanging-transaction", 0)),
    # CompleteCommit (4): the coordinator cleared the partitions -> hanging
    (4, {}, ("warning", "hanging-transaction", 0)),
])
def test_candidate_hangs_only_where_the_coordinator_does_not_list_the_partition(
        tmp_path: Path, state: int, partitions: dict[str, list[int]], expected: tuple[str, str, int]) -> None:
    assert _transaction_checks(_write(tmp_path, state, partitions)) == [expected]


def test_without_transaction_state_every_candidate_is_hanging(tmp_path: Path) -> None:
    logs = _write(tmp_path, None, None)
    assert coordinator_transactions(open_log_dirs([str(logs)]).all_partitions()) is None
    assert _transaction_checks(logs) == [("warning", "hanging-transaction", 0)]


def test_a_producer_unknown_to_the_coordinator_hangs(tmp_path: Path) -> None:
    logs = _write(tmp_path, 1, {"txn": [0]})
    parts = open_log_dirs([str(logs)]).all_partitions()
    coordinator = coordinator_transactions(parts)
    assert coordinator == {PID: frozenset({("txn", 0)})}
    replica = next(p for p in parts if p.topic == "txn")
    found = audit_partition(replica, now_ms=NOW, coordinator={PID + 1: frozenset({("txn", 0)})})
    assert [(f.severity, f.check) for f in found if "transaction" in f.check] == [("warning", "hanging-transaction")]


def test_before_the_timeout_an_open_transaction_is_not_a_candidate(tmp_path: Path) -> None:
    logs = _write(tmp_path, 4, {})
    parts = open_log_dirs([str(logs)]).all_partitions()
    replica = next(p for p in parts if p.topic == "txn")
    found = audit_partition(replica, now_ms=T_OLD + 5 + TRANSACTION_MAX_TIMEOUT_MS,
                            coordinator=coordinator_transactions(parts))
    assert [(f.severity, f.check) for f in found if "transaction" in f.check] == [("info", "open-transaction")]
