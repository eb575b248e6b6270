"""Aligned text tables (``--format table`` of the jobs, the demo's summary)."""

from __future__ import annotations

from typing import Any

__all__ = ["table"]


def table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    """Format ``rows`` as aligned text columns (first line = headers); returns the lines."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines
