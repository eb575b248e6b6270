"""Output seam of the CLI: text lines, JSON lines and a stderr progress bar.

Commands never call ``print``; they hand lines/objects to a writer, so the same
command code serves kafka-dump-log text, ``--json`` lines and tests (which pass
``io.StringIO`` streams).  The progress bar is drawn only when stderr is a
terminal, so pipes and captured output never contain it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from kafka_format.report.text import table

__all__ = ["JsonOutput", "Progress", "TextOutput", "table"]


class TextOutput:
    """Plain text lines to ``out``; diagnostics to ``err`` (kafka-dump-log's split)."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr

    def write(self, text: str) -> None:
        """Write ``text`` to stdout without a newline (Scala ``print``)."""
        self.out.write(text)

    def line(self, text: str = "") -> None:
        """Write one line to stdout (Scala ``println``)."""
        self.out.write(text + "\n")

    def error_line(self, text: str) -> None:
        """Write one line to stderr (Scala ``System.err.println``)."""
        self.err.write(text + "\n")

    def flush(self) -> None:
        """Flush both streams."""
        self.out.flush()
        self.err.flush()


class JsonOutput:
    """One compact JSON object per line to ``out``."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr

    def obj(self, value: Mapping[str, Any]) -> None:
        """Write ``value`` as one JSON line."""
        self.out.write(json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n")

    def error_line(self, text: str) -> None:
        """Write a human note to stderr (never mixed into the JSON stream)."""
        self.err.write(text + "\n")

    def flush(self) -> None:
        """Flush both streams."""
        self.out.flush()
        self.err.flush()


class Progress:
    """A one-line byte progress bar on ``stream`` (stderr), drawn only on a TTY."""

    WIDTH = 30

    def __init__(self, total: int, label: str = "", stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty()) and total > 0
        self.total = total
        self.label = label
        self.done = 0
        self._last_drawn = -1

    def advance(self, amount: int) -> None:
        """Count ``amount`` more units done; redraw when the bar moved."""
        if not self.enabled:
            return
        self.done = min(self.total, self.done + amount)
        filled = self.done * self.WIDTH // self.total
        if filled != self._last_drawn:
            self._last_drawn = filled
            bar = "#" * filled + "." * (self.WIDTH - filled)
            self.stream.write(f"\r{self.label} [{bar}] {self.done * 100 // self.total:3d}%")
            self.stream.flush()

    def close(self) -> None:
        """Erase the bar."""
        if self.enabled and self._last_drawn >= 0:
            self.stream.write("\r" + " " * (len(self.label) + self.WIDTH + 8) + "\r")
            self.stream.flush()
