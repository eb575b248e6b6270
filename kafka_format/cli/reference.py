"""The command-line reference (``docs/cli.md``) rendered from the argparse definitions.

``render_cli_reference()`` walks the parsers the commands really use: ``klogs`` itself (its
``dump`` and ``demo`` subcommands, :func:`kafka_format.cli.build_parser`) and each job's
``build_parser()`` in :mod:`kafka_format.jobs` (loaded as ``klogs`` loads it,
:func:`kafka_format.jobs.job_module`).  ``make docs-cli`` writes the result to
``docs/cli.md``; a test fails when the committed page differs, so the page cannot drift from
the flags.  The output depends only on the parsers (no terminal width, no Python-version
specific help layout).
"""

from __future__ import annotations

import argparse
import html
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

__all__ = ["command_parsers", "main", "render_cli_reference"]

USAGE_WIDTH = 96
_NBSP = "\u00a0"   # keeps "--flag VALUE" together while wrapping the usage line

HEADER = """\
# Command-line reference

<!-- Generated from the argparse definitions by `make docs-cli` (kafka_format/cli/reference.py).
     Do not edit by hand: tests/docs/test_cli_reference.py fails when this page and the flags differ. -->

Every command takes `-h` / `--help`; `klogs --version` prints the version. What each job computes, its output files and its exit codes
are on the job's own page ([Jobs](jobs/index.md)); the flags every job shares are described in
[Common job flags](jobs/index.md#common-job-flags).
"""


def command_parsers() -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(command, one-line summary, parser) for ``dump``, every job of ``klogs`` and ``demo``, in
    the order ``klogs --help`` lists them."""
    from kafka_format.cli import build_parser
    from kafka_format.jobs import JOBS, job_module

    top = build_parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {a.dest: a.help or "" for a in sub._choices_actions}
    out: list[tuple[str, str, argparse.ArgumentParser]] = []
    for name, parser in sub.choices.items():
        if name in JOBS:
            parser = job_module(name).build_parser()
        out.append((name, summaries.get(name, ""), parser))
    return out


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    text = html.escape(" ".join(str(text).split()), quote=False)
    return text.replace("|", "\\|").replace("*", "\\*").replace("_", "\\_")


def _code(text: str) -> str:
    return "`" + str(text).replace("|", "\\|") + "`"


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def _value_name(action: argparse.Action) -> str:
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None:
        return "|".join(str(c) for c in action.choices)
    return action.dest.upper()


def _is_repeatable(action: argparse.Action) -> bool:
    return isinstance(action, (argparse._AppendAction, argparse._AppendConstAction))


def _usage_item(action: argparse.Action) -> str:
    if not action.option_strings:
        name = _value_name(action)
        return f"{name}..." if action.nargs in ("+", "*") else name
    flag = max(action.option_strings, key=len)
    item = f"{flag}{_NBSP}{_value_name(action)}" if _takes_value(action) else flag
    if _is_repeatable(action):
        return f"{item}..." if action.required else f"[{item}]..."
    return item if action.required else f"[{item}]"


def _documented(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS]


def _usage(prog: str, parser: argparse.ArgumentParser) -> str:
    groups = {id(a): g for g in parser._mutually_exclusive_groups for a in g._group_actions}
    items: list[str] = []
    done: set[int] = set()
    actions = _documented(parser)
    positionals = [a for a in actions if not a.option_strings]
    for action in [*positionals, *(a for a in actions if a.option_strings)]:
        group = groups.get(id(action))
        if group is None:
            items.append(_usage_item(action))
        elif id(group) not in done:
            done.add(id(group))
            inner = f"{_NBSP}|{_NBSP}".join(max(a.option_strings, key=len) for a in group._group_actions)
            items.append(f"({inner})" if group.required else f"[{inner}]")
    line = " ".join([prog, *items])
    wrapped = textwrap.fill(line, width=USAGE_WIDTH, subsequent_indent=" " * (len(prog) + 1),
                            break_long_words=False, break_on_hyphens=False)
    return wrapped.replace(_NBSP, " ")


def _help(action: argparse.Action, prog: str) -> str:
    if not action.help:
        return ""
    params = dict(vars(action), prog=prog)
    if params.get("choices") is not None:
        params["choices"] = ", ".join(str(c) for c in params["choices"])
    return str(action.help) % params


def _default(action: argparse.Action) -> str:
    d = action.default
    if not _takes_value(action) or d is None or d is argparse.SUPPRESS or d == [] or isinstance(d, bool):
        return ""
    return _code(d)


def _value(action: argparse.Action) -> str:
    if not action.option_strings:
        return ""
    if not _takes_value(action):
        return "(flag)"
    if action.choices is not None:
        return " \\| ".join(_code(c) for c in action.choices)
    return _code(_value_name(action))


def _argument_rows(parser: argparse.ArgumentParser, prog: str) -> list[str]:
    groups = {id(a): g for g in parser._mutually_exclusive_groups for a in g._group_actions}
    rows = ["| argument | value | default | description |", "|---|---|---|---|"]
    for action in _documented(parser):
        if action.option_strings:
            name = " / ".join(_code(s) for s in sorted(action.option_strings, key=len))
        else:
            name = _code(_value_name(action))
        notes = []
        if not action.option_strings:
            notes.append("positional" + (", one or more" if action.nargs == "+" else ""))
        elif action.required:
            notes.append("required")
        if _is_repeatable(action):
            notes.append("repeatable")
        group = groups.get(id(action))
        if group is not None:
            others = [max(a.option_strings, key=len) for a in group._group_actions if a is not action]
            notes.append("not with " + ", ".join(others))
        text = _cell(_help(action, prog))
        if notes:
            text = f"*{'; '.join(notes)}.* {text}".rstrip()
        rows.append(f"| {name} | {_value(action)} | {_default(action)} | {text} |")
    return rows


def render_cli_reference(commands: Sequence[tuple[str, str, argparse.ArgumentParser]] | None = None) -> str:
    """The whole ``docs/cli.md`` page (Markdown) for ``commands`` (default :func:`command_parsers`)."""
    commands = command_parsers() if commands is None else commands
    lines = [HEADER, "| command | what it does |", "|---|---|"]
    for name, summary, _ in commands:
        lines.append(f"| [`klogs {name}`](#klogs-{name}) | {_cell(summary)} |")
    for name, summary, parser in commands:
        prog = f"klogs {name}"
        lines += ["", f"## klogs {name}", ""]
        description = parser.description or summary
        if description:
            lines += [" ".join(description.split()), ""]
        lines += ["```text", _usage(prog, parser), "```", ""]
        lines += _argument_rows(parser, prog)
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m kafka_format.cli.reference [--out docs/cli.md]`` (stdout without ``--out``)."""
    parser = argparse.ArgumentParser(prog="python -m kafka_format.cli.reference",
                                     description="Render the klogs command-line reference (docs/cli.md).")
    parser.add_argument("--out", type=Path, help="file to write (default: stdout)")
    args = parser.parse_args(argv)
    text = render_cli_reference()
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
