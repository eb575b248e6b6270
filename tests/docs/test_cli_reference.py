"""docs/cli.md is the argparse definitions rendered (kafka_format/cli/reference.py): it cannot drift."""

from __future__ import annotations

import argparse
from pathlib import Path

from kafka_format.cli import JOBS
from kafka_format.cli.reference import command_parsers, render_cli_reference

REPO = Path(__file__).resolve().parents[2]
CLI_PAGE = REPO / "docs" / "cli.md"


def test_committed_cli_reference_equals_the_parsers() -> None:
    expected = render_cli_reference()
    actual = CLI_PAGE.read_text(encoding="utf-8")
    assert actual == expected, "docs/cli.md differs from the argparse definitions: run `make docs-cli`"


def test_reference_covers_every_command_and_flag() -> None:
    commands = command_parsers()
    assert {name for name, _, _ in commands} == {"dump", "schemas", "demo", *JOBS}
    text = render_cli_reference(commands)
    for name, _, parser in commands:
        assert f"\n## klogs {name}\n" in text
        section = text.split(f"\n## klogs {name}\n", 1)[1].split("\n## klogs ", 1)[0]
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for flag in action.option_strings:
                assert f"`{flag}`" in section, f"klogs {name}: {flag} missing from the reference"
                assert flag in section.split("```text", 1)[1].split("```", 1)[0], f"{flag} not in usage"
            if action.default not in (None, False, [], argparse.SUPPRESS) and action.option_strings:
                assert f"`{action.default}`" in section, f"klogs {name} {action.option_strings}: default"
            for choice in action.choices or ():
                assert f"`{choice}`" in section


def test_a_new_flag_changes_the_page() -> None:
    commands = command_parsers()
    _name, _summary, parser = commands[-1]
    before = render_cli_reference(commands)
    parser.add_argument("--brand-new-flag", metavar="X", default="7", help="added by the test")
    after = render_cli_reference(commands)
    assert after != before
    assert "| `--brand-new-flag` | `X` | `7` | added by the test |" in after


def test_every_flag_has_help_and_no_choice_list_reads_as_other_choices() -> None:
    """``klogs JOB --help`` explains every flag, and a choice holding a comma (``topic,partition``)
    never shows as argparse's ``{topic,partition,date}``, which reads as three choices."""
    for name, _, parser in command_parsers():
        for action in parser._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"klogs {name} {action.option_strings[0]}: no help text"
            if any("," in str(c) for c in action.choices or ()):
                assert action.metavar is not None, f"klogs {name} {action.option_strings[0]}"
                assert "{" + ",".join(map(str, action.choices)) + "}" not in parser.format_usage()
