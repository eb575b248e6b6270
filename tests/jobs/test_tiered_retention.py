"""``klogs retention`` on a tiered topic: the local segments under ``local.retention.*`` deleted only once
copied (else ``awaiting-upload``), and the remote segments under the leader's expiration pass with
``retention.ms``/``retention.bytes`` of the whole log, each expectation written from Kafka's rules for the
log of ``tiered_builders.write_tiered_cluster``: remote segments 0 (offsets 0..39) and 40 (40..49), the
highest copied offset 49; local segments 50 (50..69) and 70 (70..99, the active one)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "format"))
from tiered_builders import TieredCluster, timestamp_of, write_tiered_cluster  # noqa: E402

from kafka_format.engine.retention import retention_local  # noqa: E402
from kafka_format.log.topicconfig import load_topic_configs  # noqa: E402

HOUR = 3_600_000


def _rows(c: TieredCluster, now: int, *overrides: str) -> dict[tuple[str, int], dict[str, Any]]:
    configs = load_topic_configs(overrides=["orders:remote.storage.enable=true", *overrides])
    rows = retention_local(str(c.log_dir), configs, now, topics=["orders"])
    return {(r["tier"], r["baseOffset"]): r for r in rows}


def test_time_retention_over_both_tiers(tmp_path: Path) -> None:
    c = write_tiered_cluster(tmp_path)
    now = timestamp_of(40) + HOUR            # retention.ms = 1 h: the cut is at timestamp_of(40)
    rows = _rows(c, now, f"orders:retention.ms={HOUR}", "orders:local.retention.ms=1000")
    assert sorted(rows) == [("local", 50), ("local", 70), ("remote", 0), ("remote", 40)]
    # remote: segment 0's max timestamp (offset 39) is at or before now - 1 h; 40's (offset 49) is not
    assert (rows[("remote", 0)]["deletable"], rows[("remote", 0)]["reason"]) == (True, "retention.ms")
    assert (rows[("remote", 40)]["deletable"], rows[("remote", 40)]["deletableAtMs"]) == (False, timestamp_of(49) + HOUR)
    assert rows[("remote", 0)]["sizeBytes"] == c.uploaded[0].segment_size_in_bytes
    # local: segment 50 breaches local.retention.ms but its offsets (to 69) are not copied (49): it waits
    assert (rows[("local", 50)]["deletable"], rows[("local", 50)]["reason"]) == (False, "awaiting-upload")
    assert (rows[("local", 70)]["deletable"], rows[("local", 70)]["reason"]) == (False, None)


def test_size_retention_counts_the_local_tail_and_the_copies(tmp_path: Path) -> None:
    c = write_tiered_cluster(tmp_path)
    local = sum(f.stat().st_size for f in (c.log_dir / "orders-0").glob("*.log"))
    remote = [m.segment_size_in_bytes for m in c.uploaded]
    total = local + sum(remote)
    now = timestamp_of(100)
    exactly_first = _rows(c, now, f"orders:retention.bytes={total - remote[0]}", "orders:retention.ms=-1")
    assert [k for k, r in sorted(exactly_first.items()) if r["deletable"]] == [("remote", 0)]
    assert exactly_first[("remote", 0)]["reason"] == "retention.bytes"
    # one byte more to free: segment 40 does not fit in what is left (1 byte), whole segments only
    one_byte_less = _rows(c, now, f"orders:retention.bytes={total - remote[0] - 1}", "orders:retention.ms=-1")
    assert [k for k, r in sorted(one_byte_less.items()) if r["deletable"]] == [("remote", 0)]
    both = _rows(c, now, f"orders:retention.bytes={total - sum(remote)}", "orders:retention.ms=-1")
    assert [k for k, r in sorted(both.items()) if r["deletable"]] == [("remote", 0), ("remote", 40)]
    assert _rows(c, now, f"orders:retention.bytes={total}", "orders:retention.ms=-1")[("remote", 0)]["deletable"] is False


def test_without_remote_log_metadata_breaching_local_segments_count_as_copied(tmp_path: Path) -> None:
    c = write_tiered_cluster(tmp_path)
    shutil.rmtree(c.log_dir / "__remote_log_metadata-0")
    rows = _rows(c, timestamp_of(40) + HOUR, f"orders:retention.ms={HOUR}", "orders:local.retention.ms=1000")
    assert sorted(rows) == [("local", 50), ("local", 70)]
    assert (rows[("local", 50)]["deletable"], rows[("local", 50)]["reason"]) == (True, "retention.ms")
