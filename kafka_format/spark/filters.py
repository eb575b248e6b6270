"""Translate pushed-down Spark filters into planner bounds (no Spark session needed).

What is *handled* (not returned to Spark) — proven exactly by planning or by ``read()``:

* ``topic``: ``EqualTo`` / ``In`` with string values (partitions of other topics are not planned);
* ``partition``: ``EqualTo`` / ``In`` / ``>`` / ``>=`` / ``<`` / ``<=`` with integer values;
* ``offset`` (record granularity): ``EqualTo`` / ``>`` / ``>=`` / ``<`` / ``<=`` with integer
  values: segments and index ranges are skipped and rows filtered exactly.

What is *used for pruning but returned* (Spark re-checks it): ``offset IN (...)`` (its min/max
bound the read), ``timestamp >`` / ``>=`` (closed segments whose time index says every record
is older are skipped).  Everything else is returned untouched.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

__all__ = ["Pushed", "push_filters"]

_MS_PER_DAY = 86_400_000


@dataclass(frozen=True)
class Pushed:
    """Conjunction of what the accepted filters say (None = no constraint)."""

    topics: frozenset[str] | None = None
    partitions: frozenset[int] | None = None
    partition_min: int | None = None
    partition_max: int | None = None
    min_offset: int | None = None
    max_offset: int | None = None
    min_timestamp: int | None = None
    impossible: bool = False

    def selects(self, topic: str, partition: int) -> bool:
        """Whether a topic-partition can hold rows matching the pushed filters."""
        if self.impossible:
            return False
        if self.topics is not None and topic not in self.topics:
            return False
        if self.partitions is not None and partition not in self.partitions:
            return False
        if self.partition_min is not None and partition < self.partition_min:
            return False
        if self.partition_max is not None and partition > self.partition_max:
            return False
        return True


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _ms_lower_bound(v: Any) -> int | None:
    """A safe lower bound in ms for a timestamp filter value (naive values get a day of slack:
    their time zone is the Python worker's, which need not be the session's)."""
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            return math.floor(v.replace(tzinfo=dt.UTC).timestamp() * 1000) - _MS_PER_DAY
        return math.floor(v.timestamp() * 1000)
    return None


def push_filters(filters: list[Filter], *, record_granularity: bool = True) -> tuple[Pushed, list[Filter], list[Filter]]:
    """Split ``filters`` into (bounds, accepted, returned); ``returned`` keeps input identity."""
    topics: set[str] | None = None
    parts: set[int] | None = None
    pmin: int | None = None
    pmax: int | None = None
    omin: int | None = None
    omax: int | None = None
    tmin: int | None = None
    impossible = False
    accepted: list[Filter] = []
    returned: list[Filter] = []

    def meet_set(cur: set | None, new: set) -> set:
        return set(new) if cur is None else cur & set(new)

    for f in filters:
        col = getattr(f, "attribute", None)
        name = col[0] if isinstance(col, tuple) and len(col) == 1 else None
        value: Any = getattr(f, "value", None)  # EqualTo/In/comparisons: checked per filter below
        handled = False
        if name == "topic":
            if isinstance(f, EqualTo) and isinstance(value, str):
                topics, handled = meet_set(topics, {value}), True
            elif isinstance(f, In) and all(isinstance(v, str) for v in value):
                topics, handled = meet_set(topics, set(value)), True
        elif name == "partition":
            if isinstance(f, EqualTo) and _is_int(value):
                parts, handled = meet_set(parts, {value}), True
            elif isinstance(f, In) and all(_is_int(v) for v in value):
                parts, handled = meet_set(parts, set(value)), True
            elif isinstance(f, (GreaterThan, GreaterThanOrEqual)) and _is_int(value):
                lo = value + 1 if isinstance(f, GreaterThan) else value
                pmin, handled = lo if pmin is None else max(pmin, lo), True
            elif isinstance(f, (LessThan, LessThanOrEqual)) and _is_int(value):
                hi = value - 1 if isinstance(f, LessThan) else value
                pmax, handled = hi if pmax is None else min(pmax, hi), True
        elif name == "offset" and record_granularity:
            if isinstance(f, EqualTo) and _is_int(value):
                omin = value if omin is None else max(omin, value)
                omax = value if omax is None else min(omax, value)
                handled = True
            elif isinstance(f, (GreaterThan, GreaterThanOrEqual)) and _is_int(value):
                lo = value + 1 if isinstance(f, GreaterThan) else value
                omin, handled = lo if omin is None else max(omin, lo), True
            elif isinstance(f, (LessThan, LessThanOrEqual)) and _is_int(value):
                hi = value - 1 if isinstance(f, LessThan) else value
                omax, handled = hi if omax is None else min(omax, hi), True
            elif isinstance(f, In) and value and all(_is_int(v) for v in value):
                omin = min(value) if omin is None else max(omin, min(value))
                omax = max(value) if omax is None else min(omax, max(value))
        elif name == "timestamp" and record_granularity:
            if isinstance(f, (GreaterThan, GreaterThanOrEqual)):
                ms = _ms_lower_bound(value)
                if ms is not None:
                    tmin = ms if tmin is None else max(tmin, ms)
        (accepted if handled else returned).append(f)
    if omin is not None and omax is not None and omin > omax:
        impossible = True
    if pmin is not None and pmax is not None and pmin > pmax:
        impossible = True
    pushed = Pushed(
        topics=frozenset(topics) if topics is not None else None,
        partitions=frozenset(parts) if parts is not None else None,
        partition_min=pmin, partition_max=pmax,
        min_offset=omin, max_offset=omax, min_timestamp=tmin, impossible=impossible,
    )
    return pushed, accepted, returned
