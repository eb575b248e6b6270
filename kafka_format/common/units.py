"""Numbers as a person reads them: sizes, durations, ages and instants.

Reports show these texts and keep the exact number beside them (a tooltip in HTML, the plain
value in JSON), so nothing is lost to rounding.  Sizes use binary (IEC) units, as Kafka's own
configs do (``segment.bytes=1073741824`` is 1.0 GiB); a year is 365.25 days.
"""

from __future__ import annotations

__all__ = ["human_bytes", "human_count", "human_duration", "utc_text", "utc_text_ms"]

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
_SECOND = 1000
_MINUTE = 60 * _SECOND
_HOUR = 60 * _MINUTE
_DAY = 24 * _HOUR
_YEAR = 365.25 * _DAY


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
    """A span in the largest unit that keeps it above one: ``95583104024`` -> ``'3.0 years'``; from
    1000 years on whole years (``'292,271,023 years'`` for Java's largest long)."""
    value = float(ms)
    sign = "-" if value < 0 else ""
    value = abs(value)
    if value < _SECOND:
        return f"{sign}{int(value)} ms"
    if value >= 1000 * _YEAR:            # up to Java's long (292 million years): whole years, grouped
        return f"{sign}{value / _YEAR:,.0f} years"
    for size, unit in ((_YEAR, "years"), (_DAY, "days"), (_HOUR, "h"), (_MINUTE, "min")):
        if value >= size:
            return f"{sign}{value / size:.1f} {unit}"
    return f"{sign}{value / _SECOND:.1f} s"


def human_count(n: int) -> str:
    """``1234567`` -> ``'1,234,567'``."""
    return f"{int(n):,}"


def _civil(ms: int) -> tuple[str, int, int, int, int, int, int]:
    """(year text, month, day, hour, minute, second, millisecond) of an instant in ms since the epoch,
    UTC on the proleptic Gregorian calendar, for any integer (every Java long: Kafka's timestamps);
    the year as ``java.time.Instant`` writes it (4 digits, ``+`` and more digits after 9999, ``-``
    before year 0)."""
    days, in_day = divmod(int(ms), _DAY)
    # days -> civil date (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms", civil_from_days)
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    text = f"{year:04d}" if 0 <= year <= 9999 else f"+{year}" if year > 9999 else f"-{-year:04d}"
    seconds, milli = divmod(in_day, _SECOND)
    return text, month, day, seconds // 3600, seconds // 60 % 60, seconds % 60, milli


def utc_text(ms: int | None, *, never: str = "never") -> str:
    """An instant in ms since the epoch as a UTC date to the second (``'2023-11-14 22:13:20 UTC'``;
    ``'+292278994-08-17 07:12:55 UTC'`` for Java's largest long); ``never`` for None."""
    if ms is None:
        return never
    year, month, day, hour, minute, second, _ = _civil(ms)
    return f"{year}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d} UTC"


def utc_text_ms(ms: int | None, *, never: str = "never") -> str:
    """:func:`utc_text` to the millisecond, ISO-8601 as ``java.time.Instant`` writes it
    (``'2023-11-14T22:13:20.000Z'``, ``'+292278994-08-17T07:12:55.807Z'``)."""
    if ms is None:
        return never
    year, month, day, hour, minute, second, milli = _civil(ms)
    return f"{year}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}.{milli:03d}Z"
