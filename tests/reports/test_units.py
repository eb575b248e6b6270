"""Human units in reports: each text is checked against the arithmetic it stands for."""

from __future__ import annotations

import numpy as np
import pytest

from kafka_format.report.units import human_bytes, human_count, human_duration, utc_text, utc_text_ms

YEAR_MS = 365.25 * 24 * 3600 * 1000


@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
    (1 << 30, "1.0 GiB"), (int(1.2 * (1 << 30)), "1.2 GiB"), (5 * (1 << 40), "5.0 TiB"), (-2048, "-2.0 KiB"),
])
def test_bytes_in_binary_units(n: int, text: str) -> None:
    assert human_bytes(n) == text


@pytest.mark.parametrize("ms, text", [
    (0, "0 ms"), (999, "999 ms"), (1500, "1.5 s"), (90_000, "1.5 min"), (2 * 3_600_000, "2.0 h"),
    (36 * 3_600_000, "1.5 days"), (604_800_000, "7.0 days"),
    (95_583_104_024, "3.0 years"),        # the audit's "open for 95583104024 ms"
])
def test_durations_in_the_largest_unit_above_one(ms: int, text: str) -> None:
    assert human_duration(ms) == text


def test_three_years_is_three_years() -> None:
    assert human_duration(int(3 * YEAR_MS)) == "3.0 years"
    assert human_duration(int(YEAR_MS) - 1) == "365.2 days"


def test_instants_are_utc_dates() -> None:
    assert utc_text(1_700_000_000_000) == "2023-11-14 22:13:20 UTC"
    assert utc_text_ms(1_700_000_000_123) == "2023-11-14T22:13:20.123Z"
    assert utc_text(None) == "never" and utc_text(None, never="none") == "none"
    assert human_count(1234567) == "1,234,567"


LONG_MAX, LONG_MIN = (1 << 63) - 1, -(1 << 63)


def test_the_extremes_of_javas_long_are_dates_as_java_writes_them() -> None:
    # java.time.Instant.ofEpochMilli(Long.MAX_VALUE) / (Long.MIN_VALUE), .toString()
    assert utc_text_ms(LONG_MAX) == "+292278994-08-17T07:12:55.807Z"
    assert utc_text_ms(LONG_MIN) == "-292275055-05-16T16:47:04.192Z"
    assert utc_text(LONG_MAX) == "+292278994-08-17 07:12:55 UTC"
    assert utc_text_ms(253_402_300_800_000) == "+10000-01-01T00:00:00.000Z"      # the first instant after 9999
    assert utc_text_ms(-62_135_596_800_001) == "0000-12-31T23:59:59.999Z"        # year 0 (ISO: 1 BC)
    assert human_duration(LONG_MAX) == "292,271,023 years"                        # 2**63 ms / 365.25 days
    assert human_duration(1000 * YEAR_MS) == "1,000 years" and human_duration(999 * YEAR_MS) == "999.0 years"


def _year_and_rest(text: str) -> tuple[int, str]:
    """('+292278994-08-17T07:12:55.807Z' | numpy's '292278994-08-17T07:12:55.807') -> (year, the rest)."""
    sign = -1 if text.startswith("-") else 1
    year, rest = text.lstrip("+-").split("-", 1)
    return sign * int(year), rest.removesuffix("Z")


@pytest.mark.parametrize("seed", range(4))
def test_dates_agree_with_numpy_over_all_of_javas_long(seed: int) -> None:
    """numpy's proleptic Gregorian ``datetime64[ms]`` is the oracle (its NaT is Long.MIN_VALUE, above)."""
    rng = np.random.default_rng(seed)
    values = [int(v) for v in rng.integers(LONG_MIN + 1, LONG_MAX, size=2000, dtype=np.int64, endpoint=True)]
    values += [int(v) for v in rng.integers(-80_000_000_000_000, 260_000_000_000_000, size=2000)]
    values += [LONG_MIN + 1, LONG_MAX, -1, 0, 1, 951_782_400_000, 4_107_542_400_000]   # leap days 2000, 2100
    for ms in values:
        assert _year_and_rest(utc_text_ms(ms)) == _year_and_rest(str(np.datetime64(ms, "ms"))), ms
