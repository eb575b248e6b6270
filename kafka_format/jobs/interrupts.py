"""Ctrl-C during a klogs run: one line on stderr, exit code 130, the run's clean-up done.

:func:`interrupts_handled` wraps a run (``run_job``, ``klogs`` itself): the first SIGINT stops
Spark's work in this process and raises ``KeyboardInterrupt``, which unwinds through the run's
clean-up (staged outputs removed, locks released, the local engine's pool ended); later SIGINTs
are ignored so that clean-up completes.  :func:`interrupted` is the one line and the exit code.
Light on imports: ``klogs dump`` starts with it.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["EXIT_INTERRUPTED", "interrupted", "interrupts_handled", "take_interrupts"]

EXIT_INTERRUPTED = 130      # 128 + SIGINT, what a shell reports for a program Ctrl-C stopped


def interrupted(prog: str) -> int:
    """Ctrl-C (SIGINT) stopped ``klogs PROG``: one line on stderr, exit code 130.  By then the run's
    outputs are as its clean-up leaves them (staged outputs removed, the previous ones kept)."""
    try:
        print(f"klogs {prog}: interrupted" if prog else "klogs: interrupted", file=sys.stderr, flush=True)
    except (OSError, ValueError):    # stderr gone with the terminal
        pass
    return EXIT_INTERRUPTED


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGINT during a run: later ones are ignored (the clean-up the ``KeyboardInterrupt`` unwinds
    through is not cut short), Spark's work in this process is stopped and awaited, then
    ``KeyboardInterrupt``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    session = sys.modules.get("kafka_format.spark.session")      # imported by every Spark run
    if session is not None:
        session.stop_spark_work()
    raise KeyboardInterrupt


def take_interrupts() -> None:
    """Handle SIGINT as :func:`interrupts_handled` does again, inside such a block (a SparkContext
    that starts installs PySpark's own handler)."""
    if threading.current_thread() is threading.main_thread() and _interrupts_held:
        signal.signal(signal.SIGINT, _on_interrupt)


_interrupts_held = 0          # interrupts_handled() blocks entered (and not left) in this process


@contextmanager
def interrupts_handled() -> Iterator[None]:
    """Ctrl-C (SIGINT) during the block: Spark's work in this process stops first
    (:func:`kafka_format.spark.session.stop_spark_work`: its tasks no longer write when the
    run's clean-up removes a staged output), then ``KeyboardInterrupt`` unwinds through that
    clean-up, not interrupted again by further SIGINTs; the caller turns it into one line and
    exit code 130 (:func:`interrupted`).  The previous handler is back after the block.  Outside
    the main thread (where Python runs no signal handler) it changes nothing."""
    global _interrupts_held
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    _interrupts_held += 1
    signal.signal(signal.SIGINT, _on_interrupt)
    try:
        yield
    finally:
        _interrupts_held -= 1
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)
