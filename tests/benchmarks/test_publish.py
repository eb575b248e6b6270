"""`make bench` writes its report into BENCHMARKS.md without losing what else the file holds (the
runs of other benchmarks and their notes)."""

from __future__ import annotations

from pathlib import Path

from tests.benchmarks.run import BEGIN, END, publish


def test_a_run_replaces_its_own_block_and_keeps_the_rest(tmp_path: Path) -> None:
    out = tmp_path / "BENCHMARKS.md"
    out.write_text("# Decode benchmarks\n\nGenerated earlier.\n\n## Scale\n\nnotes\n", encoding="utf-8")
    publish(out, ["# Decode benchmarks", "", "run 1"])
    assert out.read_text(encoding="utf-8") == (
        f"{BEGIN}\n# Decode benchmarks\n\nrun 1\n{END}\n\n# Decode benchmarks\n\nGenerated earlier.\n\n## Scale\n\nnotes\n")
    publish(out, ["run 2"])
    assert out.read_text(encoding="utf-8") == (
        f"{BEGIN}\nrun 2\n{END}\n\n# Decode benchmarks\n\nGenerated earlier.\n\n## Scale\n\nnotes\n")


def test_a_first_run_writes_the_block_alone(tmp_path: Path) -> None:
    out = tmp_path / "BENCHMARKS.md"
    publish(out, ["run"])
    assert out.read_text(encoding="utf-8") == f"{BEGIN}\nrun\n{END}\n"
    publish(out, ["again"])
    assert out.read_text(encoding="utf-8") == f"{BEGIN}\nagain\n{END}\n"


def test_the_report_names_the_active_decoder(tmp_path: Path) -> None:
    """The report's header (what broke `make bench` at its very end when the decoder's module moved)."""
    from argparse import Namespace

    from kafka_format.records import implementation
    from tests.benchmarks.run import _write

    out = tmp_path / "BENCHMARKS.md"
    _write(out, [], ["## Notes", "", "text"], "crc-impl", Namespace(size_mib=8, compressed_mib=4, repeats=2))
    text = out.read_text(encoding="utf-8")
    assert f"- Active decoder: `{implementation.IMPLEMENTATION}`; CRC-32C: `crc-impl`" in text
    assert text.startswith(BEGIN) and "## Notes\n\ntext\n" + END in text
