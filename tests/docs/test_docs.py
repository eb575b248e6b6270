"""The documentation site builds in strict mode: a broken link, a missing anchor, a page left out of the
navigation or an unresolvable API reference fails `make test`, as it fails `make docs`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs", reason="mkdocs is not installed (the 'docs' extra; `make setup` installs it)")
pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed (the 'docs' extra)")

REPO = Path(__file__).resolve().parents[2]
JOB_PAGES = ("offsets", "retention", "compaction", "audit", "export", "groups", "dump")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built by `mkdocs build --strict` (what `make docs` runs) into a temp dir."""
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO / "mkdocs.yml"),
         "--site-dir", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{log}"
    assert "WARNING" not in log, log
    return out


def test_every_page_is_built(site: Path) -> None:
    pages = sorted(p.relative_to(REPO / "docs").with_suffix("") for p in (REPO / "docs").rglob("*.md")
                   if "_snippets" not in p.parts)
    assert len(pages) >= 12
    for page in pages:
        html = site / page / "index.html" if page.name != "index" else site / page.parent / "index.html"
        assert html.is_file(), f"docs/{page}.md was not built"


def test_no_page_points_outside_the_product(site: Path) -> None:
    for html in site.rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        for outside in ("DESIGN.md", "../shared", "kafka-storage-spec"):
            assert outside not in text, f"{html.relative_to(site)} mentions {outside}"


def test_job_pages_say_which_kafka_versions_they_were_checked_against(site: Path) -> None:
    for job in JOB_PAGES:
        text = (site / "jobs" / job / "index.html").read_text(encoding="utf-8")
        assert "Kafka versions checked against" in text, job
        assert "Apache Kafka 4.4.0 and 3.9.1" in text, job


def test_library_api_is_rendered_from_docstrings(site: Path) -> None:
    text = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name, docstring_words in (("decode_file", "provenance from its path"),
                                  ("iter_batches", "no decompression"),
                                  ("open_log_dirs", "Find every log dir under"),
                                  ("register", "Python data source"),
                                  ("KafkaFormatError", "Base of all errors")):
        assert name in text, name
        assert docstring_words in text, f"docstring of {name} not rendered"


def test_no_file_of_the_product_points_outside_the_repo() -> None:
    """What a user gets (sources, docs, samples, build files) never sends them to files beside the
    repo; only tests that read real broker files there name it, and they skip when it is absent."""
    product = [REPO / n for n in ("README.md", "BENCHMARKS.md", "CONFORMANCE.md", "mkdocs.yml", "Makefile",
                                  "setup.py", "pyproject.toml")]
    for top in ("docs", "kafka_format", "jobs", "spark_conf", "data_samples"):
        product += [p for p in (REPO / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert len(product) > 100
    for path in product:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue                                   # segments, indexes, compiled extensions
        for outside in ("../shared", "DESIGN.md", "kafka-storage-spec"):
            assert outside not in text, f"{path.relative_to(REPO)} mentions {outside}"
