"""A Ctrl-C in the driver's process while a Spark job runs (in-process; ``tests/cli/test_interrupt.py``
runs whole ``klogs`` processes).

The SIGINT interrupts the Py4J call that waits for the job.  Py4J's own clean-up of an interrupted
call asks the JVM to shut that connection down, a request the JVM reads only when the call
returns, and then closes the connection the thread opened meanwhile for its next call: a
``klogs export`` Ctrl-C'd now and then ended with "lost Spark's JVM: Answer from Java side is
empty" instead of its one line (a race between the clean-up's first call and the JVM).  The run's
handler closes the interrupted connection itself once Spark's work is stopped, so Py4J sends no
such request; the calls after the interrupt get their own answers.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from pyspark import cloudpickle

from kafka_format.jobs.interrupts import interrupts_handled
from kafka_format.spark.executor import SparkExecutor

pytestmark = pytest.mark.spark


def _block_forever(started: str) -> None:
    """A task that says it started and then waits until Spark kills it."""
    with open(started, "w"):
        pass
    select.select([], [], [])


def _interrupt_when(marker: Path, done: threading.Event) -> None:
    while not marker.exists() and not done.is_set():
        time.sleep(0.02)            # polling for a state, not waiting for one to come
    if not done.is_set():
        os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.parametrize("attempt", [1, 2])
def test_calls_after_a_ctrl_c_during_a_job_get_their_own_answers(spark, tmp_path: Path, attempt: int,  # type: ignore[no-untyped-def]
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    cloudpickle.register_pickle_by_value(sys.modules[__name__])      # the workers cannot import tests/
    caplog.set_level(logging.INFO, logger="py4j")
    sc = spark.sparkContext
    app = sc._jsc.sc().applicationId()
    started = tmp_path / "started"
    done = threading.Event()
    signaller = threading.Thread(target=_interrupt_when, args=(started, done), daemon=True)
    signaller.start()
    caught = None
    try:
        with interrupts_handled():
            try:
                list(SparkExecutor(spark, "a job Ctrl-C stops").map(_block_forever, [str(started)]))
            except KeyboardInterrupt as exc:
                caught = exc
                # the traceback is alive here, as in a run's clean-up: these calls are answered right
                assert sc._jsc.sc().applicationId() == app
                assert sc.getLocalProperty("spark.job.description") is None
                assert spark.range(5).count() == 5
    finally:
        done.set()
        signaller.join()
    assert isinstance(caught, KeyboardInterrupt)
    assert sc.statusTracker().getActiveJobsIds() == []
    assert spark.range(7).count() == 7                  # and after it, too
    shutdowns = [r.getMessage() for r in caplog.records if "shutdown request" in r.getMessage()]
    assert shutdowns == []                              # the race above was not run
