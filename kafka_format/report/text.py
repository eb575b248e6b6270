"""Aligned text tables (``--format table`` of the jobs, the demo's summary)."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["table"]

# A cell a person reads as a number: a count (with thousands commas), a size in binary units, a
# percentage or a plain decimal; ``-`` (no value) does not decide a column either way.
_NUMBER = re.compile(r"-?\d[\d,]*(\.\d+)?( ?(B|KiB|MiB|GiB|TiB|PiB|EiB)|%)?")


def _numeric(column: list[str]) -> bool:
    values = [c for c in column if c not in ("", "-")]
    return bool(values) and all(_NUMBER.fullmatch(c) for c in values)


def table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    """Format ``rows`` as aligned text columns under their headers and a rule; columns of numbers
    (counts, sizes, percentages) align right, the rest left.  Returns the lines."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    right = [_numeric([r[i] for r in cells[1:]]) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.rjust(w) if r else c.ljust(w)
                               for c, w, r in zip(row, widths, right, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines
