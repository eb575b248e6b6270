"""The HTML reports in a real browser: Debian's chromium driven through chromedriver.

Each report the jobs write on ``data_samples/`` (as ``make demo`` does) is opened headless: no
console errors, sorting by a column heading orders the rows by the exact values, the filter box
hides exactly the rows that do not match, and with scripts off the same tables are there as plain
tables.  A screenshot of each whole report goes to ``build/reports/`` (``NAME.png``, and
``NAME-no-script.png`` with scripts off) for a person to look at.
"""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data_samples" / "logdirs"
SHOTS = REPO / "build" / "reports"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
NOW = "2023-11-16T00:00:00Z"

if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    pytest.skip("Debian's chromium and chromium-driver are not installed "
                "(apt-get install chromium chromium-driver)", allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (test extra)")
from selenium.webdriver.common.by import By  # noqa: E402


def _driver(scripts: bool = True) -> Any:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1280,1600"):
        options.add_argument(flag)
    if not scripts:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER)
    return webdriver.Chrome(options=options, service=service)


@pytest.fixture(scope="module")
def reports(spark, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:  # type: ignore[no-untyped-def]
    """The report pages the jobs write on data_samples/, by name."""
    out = tmp_path_factory.mktemp("reports")
    retention = importlib.import_module("kafka_format.jobs.retention")
    audit = importlib.import_module("kafka_format.jobs.audit")
    compaction = importlib.import_module("kafka_format.jobs.compaction")
    common = [str(SAMPLES), "--now", NOW, "--config-file", str(SAMPLES / "topic-configs.json")]
    assert retention.main([*common, "--out", str(out / "retention")]) == 0
    assert audit.main([*common, "--out", str(out / "audit"), "--fail-on", "never"]) == 0
    assert compaction.main([*common, "--config", "compacted:min.cleanable.dirty.ratio=0.25",
                            "--out", str(out / "compaction")]) == 0
    return {"retention": out / "retention" / "disk-usage.html", "audit": out / "audit" / "report.html",
            "compaction": out / "compaction" / "report.html"}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = _driver()
    try:
        yield driver
    finally:
        driver.quit()


def _screenshot(driver: Any, path: Path) -> None:
    """The whole page, top to bottom, at 1280 px wide, into ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    height = int(driver.execute_script("return Math.ceil(document.body.getBoundingClientRect().bottom) + 24"))
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 1280, "height": min(height, 16000), "deviceScaleFactor": 1, "mobile": False})
    try:
        assert driver.save_screenshot(str(path))
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def _rows(driver: Any, table_id: str) -> list[Any]:
    return driver.find_elements(By.CSS_SELECTOR, f"#{table_id} tbody tr")


def _keys(driver: Any, table_id: str, col: int) -> list[float]:
    return [float(r.find_elements(By.TAG_NAME, "td")[col].get_attribute("data-sort"))
            for r in _rows(driver, table_id)]


# (report, table, numeric column with exact sort keys, heading text, a filter word)
CASES = [
    ("retention", "segments", 3, "size", "compacted"),
    ("retention", "partitions", 2, "on disk", "v2-codecs"),
    ("audit", "files", 2, "size", "broker-2"),
    ("compaction", "partitions", 6, "records before", "compacted"),
]


@pytest.mark.parametrize("name", ["retention", "audit", "compaction"])
def test_report_opens_without_console_errors(browser: Any, reports: dict[str, Path], name: str) -> None:
    browser.get(reports[name].as_uri())
    assert browser.find_element(By.TAG_NAME, "h1").text
    assert browser.find_elements(By.CSS_SELECTOR, ".cards .card")            # the summary comes first
    problems = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert problems == []
    assert browser.execute_script(              # at a laptop's width every table fits: no sideways scrolling
        "return document.documentElement.scrollWidth <= window.innerWidth && Array.from("
        "document.querySelectorAll('div.scroll')).every(function(d){return d.scrollWidth <= d.clientWidth;})")
    _screenshot(browser, SHOTS / f"{name}.png")


@pytest.mark.parametrize("name, table, col, heading, word", CASES)
def test_sorting_by_a_heading_orders_by_exact_values(browser: Any, reports: dict[str, Path], name: str,
                                                      table: str, col: int, heading: str, word: str) -> None:
    browser.get(reports[name].as_uri())
    before = _keys(browser, table, col)
    th = browser.find_elements(By.CSS_SELECTOR, f"#{table} thead th")[col]
    assert th.text.startswith(heading)
    th.click()
    assert _keys(browser, table, col) == sorted(before)
    th.click()
    assert _keys(browser, table, col) == sorted(before, reverse=True)


@pytest.mark.parametrize("name, table, col, heading, word", CASES)
def test_filter_box_hides_exactly_the_rows_without_the_text(browser: Any, reports: dict[str, Path], name: str,
                                                           table: str, col: int, heading: str, word: str) -> None:
    browser.get(reports[name].as_uri())
    rows = _rows(browser, table)
    texts = [r.get_attribute("textContent").lower() for r in rows]
    matching = sum(1 for t in texts if word in t)
    assert 0 < matching < len(rows)                  # the word splits the table: the filter has work to do
    box = browser.find_element(By.CSS_SELECTOR, f"#{table}").find_element(
        By.XPATH, "preceding-sibling::input[1]")
    box.send_keys(word)
    shown = [r for r in _rows(browser, table) if r.is_displayed()]
    assert len(shown) == matching
    assert all(word in r.get_attribute("textContent").lower() for r in shown)


@pytest.mark.parametrize("name", ["retention", "audit", "compaction"])
def test_with_scripts_off_the_tables_are_plain_tables(reports: dict[str, Path], name: str) -> None:
    driver = _driver(scripts=False)
    try:
        driver.get(reports[name].as_uri())
        assert driver.find_elements(By.CSS_SELECTOR, "input.filter") == []   # the script did not run
        source = reports[name].read_text()
        for table in driver.find_elements(By.CSS_SELECTOR, "table.data"):
            rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
            assert rows and all(r.is_displayed() for r in rows)
            assert source.count(f'id="{table.get_attribute("id")}"') == 1
        assert driver.find_elements(By.CSS_SELECTOR, "figure svg")        # the pictures need no script
        _screenshot(driver, SHOTS / f"{name}-no-script.png")
    finally:
        driver.quit()


def test_folded_facts_open_on_a_click(browser: Any, reports: dict[str, Path]) -> None:
    browser.get(reports["audit"].as_uri())
    row = next(r for r in _rows(browser, "info") if r.text.startswith("non-consecutive-offsets"))
    count = int(row.find_elements(By.TAG_NAME, "td")[1].text)
    items = row.find_elements(By.CSS_SELECTOR, "details li")
    assert count > 1 and len(items) == count and not any(i.is_displayed() for i in items)
    row.find_element(By.TAG_NAME, "summary").click()
    assert all(i.is_displayed() for i in items)
