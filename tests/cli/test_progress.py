"""The console progress line klogs draws for long Spark work (the JVM's own bar goes to the log file)."""

from __future__ import annotations

import io
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from kafka_format.spark.progress import ConsoleProgress, render_line


def test_line_shows_done_active_and_total_like_sparks_bar() -> None:
    line = render_line([(3, 40, 12, 2)], width=80)
    assert line.startswith("[Stage 3:") and line.endswith("(12 + 2) / 40]") and len(line) == 80
    bar = line[len("[Stage 3:"):-len("(12 + 2) / 40]")]
    assert bar.count("=") == len(bar) * 12 // 40 and ">" in bar
    assert render_line([(1, 4, 4, 0)], width=40).endswith("====(4 + 0) / 4]")
    two = render_line([(1, 10, 5, 1), (2, 10, 0, 2)], width=80)
    assert two.count("[Stage") == 2 and len(two) == 80
    assert render_line([]) == "" and render_line([(1, 0, 0, 0)]) == ""


class _Tracker:
    def __init__(self) -> None:
        self.stages: dict[int, tuple[int, int, int]] = {}

    def getActiveStageIds(self) -> list[int]:  # noqa: N802 - Spark's name
        return list(self.stages)

    def getStageInfo(self, stage_id: int) -> Any:  # noqa: N802 - Spark's name
        total, done, active = self.stages[stage_id]
        return SimpleNamespace(numTasks=total, numCompletedTasks=done, numActiveTasks=active)


class _Tty(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def _progress(tty: bool) -> tuple[ConsoleProgress, _Tracker, _Tty]:
    tracker = _Tracker()
    spark = SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: tracker))
    stream = _Tty(tty)
    return ConsoleProgress(spark, stream=stream, interval_s=3600), tracker, stream   # draws only when told


def test_nothing_is_drawn_when_stderr_is_not_a_terminal() -> None:
    progress, tracker, stream = _progress(tty=False)
    tracker.stages[0] = (10, 3, 1)
    assert not progress.enabled
    progress.start()
    progress.stop()
    assert stream.getvalue() == "" and progress._thread is None


def test_output_on_stdout_erases_the_line_first(monkeypatch: pytest.MonkeyPatch) -> None:
    progress, tracker, stream = _progress(tty=True)
    tracker.stages[5] = (8, 2, 2)
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    progress._draw(render_line(progress.snapshot()))
    drawn = stream.getvalue()
    assert drawn.startswith("\r[Stage 5:") and drawn.endswith("(2 + 2) / 8]")
    progress.start()                                  # wraps stdout
    print("answer")
    assert out.getvalue() == "answer\n"
    assert stream.getvalue().endswith("\r" + " " * len(drawn[1:]) + "\r")   # erased before the answer
    progress.stop()
    assert sys.stdout is out
