"""The harness itself: the standard workload leaves the files the comparisons need."""

from __future__ import annotations

import pytest
from broker import KafkaBroker

pytestmark = pytest.mark.conformance


def test_standard_workload_leaves_segments_epochs_and_internal_topics(
        kafka_broker: KafkaBroker, standard_workload) -> None:
    """Several segments with index entries, new leader epochs from the restarts (a clean restart
    and a kill -9 happened mid-workload: 4.4 bumps the epoch at both, 3.9 at least at one), and the
    internal topics and metadata log on disk."""
    d = kafka_broker.partition_dir("w-codecs", 0)
    logs = sorted(d.glob("*.log"))
    assert len(logs) >= 3, logs
    assert any(p.stat().st_size > 0 for p in d.glob("*.index"))
    epochs = [line.split() for line in (d / "leader-epoch-checkpoint").read_text().splitlines()[2:]]
    assert len(epochs) >= 2, epochs
    names = {p.name for p in kafka_broker.log_dir.iterdir()}
    for needed in ("__cluster_metadata-0", "__consumer_offsets-0", "__transaction_state-0",
                   "w-txn-0", "w-logappend-0", "w-compact-0", "w-retention-0"):
        assert needed in names, sorted(names)
    assert kafka_broker.pid is not None
