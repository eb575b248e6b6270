"""Human units in reports: each text is checked against the arithmetic it stands for."""

from __future__ import annotations

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
    assert utc_text(2 ** 62) == str(2 ** 62)            # no calendar date: the number itself
    assert human_count(1234567) == "1,234,567"
