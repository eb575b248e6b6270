"""Comparison ``recover``: ``klogs recover``'s prediction against a real broker restarted on the same files.

A dedicated broker takes writes to one topic (small segments); it is SIGKILLed while a producer is
still sending.  Each case copies the log dir, damages the copy (or not), predicts with the recover
job's tasks, then starts a broker on a second copy of the same files and compares, Kafka the oracle:
* ``log end``: ListOffsets LATEST once the broker leads again (its high watermark reaches the log end);
* ``log start``: ListOffsets EARLIEST;
* ``segments``: the ``.log`` files after the broker stops cleanly (``.deleted`` ones excluded: the
  broker deletes them after ``file.delete.delay.ms``);
* ``bytes``: each kept segment's ``.log``, ``.index`` and ``.timeindex`` against ``--write-segments``'
  bytes (the broker's clean stop trims the active segment's indexes as the prediction writes them);
* ``epochs``: the leader-epoch checkpoint minus the one epoch the restarted leader adds at the log end.

The high watermark is not compared: the restarted leader advances it to the log end at once.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import workloads
from broker import KafkaBroker, wait_until

pytestmark = pytest.mark.conformance

COMPARISON = "recover"
TOPIC = "rc"
QUIET = {"metadata.max.idle.interval.ms": "3600000"}


def _killed_mid_write(broker: KafkaBroker, dest: Path) -> Path:
    broker.create_topic(TOPIC, 1, {"segment.bytes": "16384"})
    stop = threading.Event()

    def send() -> None:
        p = workloads.producer(broker, acks=1, retries=0)
        try:
            i = 0
            while not stop.is_set():
                workloads.produce(p, TOPIC, f"s{i}", 50, flush=False)
                i += 1
                time.sleep(0.01)
        except Exception:                  # the broker is gone: the sends after the kill fail
            pass
        finally:
            workloads.abandon_producer(p)

    t = threading.Thread(target=send, daemon=True)
    t.start()
    pdir = broker.log_dir / f"{TOPIC}-0"
    wait_until(lambda: len(list(pdir.glob("*.log"))) >= 4 or None, 120, "four segments written")
    broker.kill()                          # SIGKILL while the producer still sends
    stop.set()
    t.join(timeout=30)
    return broker.copy_log_dirs(dest)


def _damage_truncated_tail(pdir: Path) -> str:
    log = sorted(pdir.glob("*.log"))[-1]
    with open(log, "r+b") as f:
        f.truncate(max(log.stat().st_size - 77, 0))
    return f"{log.name} cut by 77 bytes"


def _damage_deleted_index(pdir: Path) -> str:
    idx = sorted(pdir.glob("*.index"))[0]
    idx.unlink()
    return f"{idx.name} deleted"


def _damage_flipped_byte(pdir: Path) -> str:
    log = sorted(pdir.glob("*.log"))[-1]         # the active segment: recovered after any crash
    data = bytearray(log.read_bytes())
    data[len(data) - 10] ^= 0x10                  # in the last batch's records (CRC-covered)
    log.write_bytes(bytes(data))
    return f"a byte flipped 10 bytes before the end of {log.name}"


CASES: dict[str, Callable[[Path], str] | None] = {
    "sigkill": None,
    "truncated-tail": _damage_truncated_tail,
    "deleted-index": _damage_deleted_index,
    "flipped-byte": _damage_flipped_byte,
}


def _epochs(path: Path) -> list[list[int]]:
    lines = path.read_text().splitlines()
    return [[int(x) for x in ln.split()] for ln in lines[2:2 + int(lines[1])]]


@pytest.mark.parametrize("case", list(CASES))
def test_recover_predicts_the_restarted_broker(broker_factory: Callable[..., KafkaBroker], kafka_version: str,
                                               conformance: Any, tmp_path_factory: pytest.TempPathFactory,
                                               case: str, killed: dict[str, Path]) -> None:
    from kafka import TopicPartition
    from kafka.admin import OffsetSpec

    from kafka_format.engine.recover import recover_plans, recover_tasks
    from kafka_format.engine.runtime import LocalExecutor
    from kafka_format.log.recovery import recovered_segment_files
    from kafka_format.log.topicconfig import load_topic_configs
    from kafka_format.storage.logdir import open_log_dirs

    if "copy" not in killed:
        killed["copy"] = _killed_mid_write(broker_factory("recover"), tmp_path_factory.mktemp("killed"))
    work = tmp_path_factory.mktemp(f"recover-{case}")
    predicted_dir = work / "predicted" / killed["copy"].name
    shutil.copytree(killed["copy"], predicted_dir)
    damage = CASES[case]
    what = damage(predicted_dir / f"{TOPIC}-0") if damage else "as the kill left it"
    conformance.note(COMPARISON, f"{case}: {what}")
    restarted_dir = work / "restarted" / killed["copy"].name
    shutil.copytree(predicted_dir, restarted_dir)

    dirs = open_log_dirs([str(predicted_dir)], include_special=True)
    tasks = recover_tasks(dirs, load_topic_configs(dirs), topics=[TOPIC])
    (plan,) = recover_plans(LocalExecutor(), tasks)
    files = dict(recovered_segment_files(tasks[0].part, plan))
    if case in ("truncated-tail", "flipped-byte"):
        assert plan.bytes_dropped > 0, plan          # the damage is one the load must see
    if case == "deleted-index":
        assert 0 in plan.rebuilt_indexes, plan

    broker = KafkaBroker.on_log_dir(kafka_version, work / "broker", restarted_dir, QUIET)
    broker.start()
    try:
        tp = TopicPartition(TOPIC, 0)
        latest = wait_until(lambda: broker.admin().list_partition_offsets({tp: OffsetSpec.LATEST})[tp].offset
                            if broker.admin().list_partition_offsets({tp: OffsetSpec.LATEST})[tp].offset
                            >= plan.log_end_offset else None, 30, "high watermark at the log end")
        earliest = broker.admin().list_partition_offsets({tp: OffsetSpec.EARLIEST})[tp].offset
    finally:
        broker.stop()
    pdir = restarted_dir / f"{TOPIC}-0"
    tag = f"{case} {TOPIC}-0"
    conformance.compare(COMPARISON, kafka_version, f"{tag} log end", plan.log_end_offset, latest)
    conformance.compare(COMPARISON, kafka_version, f"{tag} log start", plan.log_start_offset, earliest)
    kept = sorted(p.name for p in pdir.glob("*.log"))
    conformance.compare(COMPARISON, kafka_version, f"{tag} segments", sorted(n for n in files if n.endswith(".log")),
                        kept)
    for name in sorted(files):
        if name.endswith((".log", ".index", ".timeindex")) and (pdir / name).exists():
            conformance.compare(COMPARISON, kafka_version, f"{tag} bytes {name}", files[name],
                                (pdir / name).read_bytes())
    broker_epochs = _epochs(pdir / "leader-epoch-checkpoint")
    conformance.compare(COMPARISON, kafka_version, f"{tag} epochs",
                        [list(e) for e in plan.leader_epochs], broker_epochs[:-1]
                        if broker_epochs and broker_epochs[-1][1] == latest and len(broker_epochs) >
                        len(plan.leader_epochs) else broker_epochs)
    conformance.assert_equal(COMPARISON, kafka_version, at_least=4)


@pytest.fixture(scope="module")
def killed() -> dict[str, Path]:
    """The killed broker's log dir copy, made by the first case and shared by the others."""
    return {}
