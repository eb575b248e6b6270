"""A console progress line for long Spark work, drawn by ``klogs`` itself.

``klogs`` sends the JVM's own output to a log file (:func:`kafka_format.jobs.jobargs.jvm_log_path`),
which takes Spark's console progress bar with it.  This draws the same kind of line from the
driver's status tracker: ``[Stage 3:=======>        (12 + 2) / 40]``, rewritten in place on a
terminal and cleared when the work ends.  When stderr is not a terminal it draws nothing, so logs
of scheduled runs hold klogs' own lines only.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from typing import Any, TextIO

__all__ = ["ConsoleProgress", "render_line"]

WIDTH = 80


def render_line(stages: Sequence[tuple[int, int, int, int]], width: int = WIDTH) -> str:
    """``(stageId, numTasks, completed, active)`` of the running stages -> one progress line
    (as Spark's ConsoleProgressBar: several stages share the width), or "" when none runs."""
    stages = [s for s in stages if s[1] > 0]
    if not stages:
        return ""
    each = max(width // len(stages), 20)
    out = []
    for stage_id, total, done, active in stages:
        head = f"[Stage {stage_id}:"
        tail = f"({done} + {active}) / {total}]"
        room = max(each - len(head) - len(tail), 0)
        filled = min(room * done // total, room)
        bar = "=" * filled + (">" if filled < room else "") + " " * max(room - filled - 1, 0)
        out.append(head + bar[:room] + tail)
    return "".join(out)


class ConsoleProgress:
    """Polls ``spark.sparkContext.statusTracker()`` on a daemon thread and redraws one line on
    ``stream`` (stderr) while stages run.  A no-op unless ``stream`` is a terminal."""

    def __init__(self, spark: Any, stream: TextIO | None = None, interval_s: float = 0.5) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._stream = stream if stream is not None else sys.stderr
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._shown = 0
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """True when the stream is a terminal."""
        isatty = getattr(self._stream, "isatty", None)
        return bool(isatty and isatty())

    def snapshot(self) -> list[tuple[int, int, int, int]]:
        """The running stages as ``(stageId, numTasks, completed, active)``."""
        out = []
        for stage_id in sorted(self._tracker.getActiveStageIds()):
            info = self._tracker.getStageInfo(stage_id)
            if info is not None:
                out.append((stage_id, info.numTasks, info.numCompletedTasks, info.numActiveTasks))
        return out

    def _draw(self, line: str) -> None:
        with self._lock:
            pad = " " * max(self._shown - len(line), 0)
            self._stream.write("\r" + line + pad + ("\r" if not line else ""))
            self._stream.flush()
            self._shown = len(line)

    def clear(self) -> None:
        """Erase the line now (before anything else is printed to the same terminal)."""
        if self._shown:
            self._draw("")

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                line = render_line(self.snapshot())
            except Exception:            # the JVM went away: the job's own error says why
                return
            if line or self._shown:
                self._draw(line)

    def start(self) -> ConsoleProgress:
        """Start drawing (only on a terminal); output written to ``sys.stdout`` first erases the line."""
        if self.enabled and self._thread is None:
            sys.stdout = _ClearingStream(sys.stdout, self)
            self._thread = threading.Thread(target=self._run, name="klogs-progress", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop drawing and clear the line."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
            self.clear()
        if isinstance(sys.stdout, _ClearingStream) and sys.stdout.progress is self:
            sys.stdout = sys.stdout.inner


class _ClearingStream:
    """``sys.stdout`` while a progress line is drawn: each write erases the line first, so a job's
    answer never lands behind a half-drawn bar."""

    def __init__(self, inner: TextIO, progress: ConsoleProgress) -> None:
        self.inner = inner
        self.progress = progress

    def write(self, text: str) -> int:
        self.progress.clear()
        return self.inner.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
