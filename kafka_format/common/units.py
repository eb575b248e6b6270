"""Numbers as a person reads them: sizes, durations, ages and instants.

Reports show these texts and keep the exact number beside them (a tooltip in HTML, the plain
value in JSON), so nothing is lost to rounding.  Sizes use binary (IEC) units, as Kafka's own
configs do (``segment.bytes=1073741824`` is 1.0 GiB); a year is 365.25 days.
"""

from __future__ import annotations

from datetime import datetime, timezone

__all__ = ["human_bytes", "human_duration", "human_count", "utc_text", "utc_text_ms"]

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
_SECOND = 1000
_MINUTE = 60 * _SECOND
_HOUR = 60 * _MINUTE
_DAY = 24 * _HOUR
_YEAR = 365.25 * _DAY
_LAST_MS = 253_402_300_799_999        # 9999-12-31T23:59:59.999Z, the last instant datetime holds


def human_bytes(n: int | float) -> str:
    """``1288490188`` -> ``'1.2 GiB'``; below 1 KiB the exact count (``'512 B'``)."""
    value = float(n)
    sign = "-" if value < 0 else ""
    value = abs(value)
    if value < 1024:
        return f"{sign}{int(value)} B"
    unit = 0
    while value >= 1024 and unit < len(_BYTE_UNITS) - 1:
        value /= 1024
        unit += 1
    return f"{sign}{value:.1f} {_BYTE_UNITS[unit]}"


def human_duration(ms: int | float) -> str:
    """A span in the largest unit that keeps it above one: ``95583104024`` -> ``'3.0 years'``."""
    value = float(ms)
    sign = "-" if value < 0 else ""
    value = abs(value)
    if value < _SECOND:
        return f"{sign}{int(value)} ms"
    for size, unit in ((_YEAR, "years"), (_DAY, "days"), (_HOUR, "h"), (_MINUTE, "min")):
        if value >= size:
            return f"{sign}{value / size:.1f} {unit}"
    return f"{sign}{value / _SECOND:.1f} s"


def human_count(n: int) -> str:
    """``1234567`` -> ``'1,234,567'``."""
    return f"{int(n):,}"


def utc_text(ms: int | None, *, never: str = "never") -> str:
    """An instant in ms since the epoch as a UTC date to the second (``'2023-11-14 22:13:20 UTC'``);
    ``never`` for None; the plain number where no calendar date exists."""
    if ms is None:
        return never
    if not -62_135_596_800_000 <= ms <= _LAST_MS:
        return str(ms)
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def utc_text_ms(ms: int | None, *, never: str = "never") -> str:
    """:func:`utc_text` to the millisecond, ISO-8601 (``'2023-11-14T22:13:20.000Z'``)."""
    if ms is None:
        return never
    if not -62_135_596_800_000 <= ms <= _LAST_MS:
        return str(ms)
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
