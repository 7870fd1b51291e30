"""The CLI reference, generated from the argparse parsers of ``trio_mcp._cli``.

``.. trio-mcp-cli::`` renders, for the ``trio-mcp`` command and each of its
subcommands, a section with its usage and a table of its options (flags,
default, help) read from ``trio_mcp._cli._main.build_parser()``. A new option
shows up in the next build; nothing is copied by hand.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


def _parser() -> argparse.ArgumentParser:
    from trio_mcp._cli._main import build_parser

    return build_parser()


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                found.append((name, helps.get(name, ""), sub))
    return found


def _usage(parser: argparse.ArgumentParser) -> str:
    # A fixed width, so the page does not depend on the terminal of the build.
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        return parser.format_usage().removeprefix("usage: ").strip()
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def _default(action: argparse.Action) -> str:
    if action.default in (None, False, argparse.SUPPRESS) or action.default == []:
        return ""
    return repr(action.default) if isinstance(action.default, str) else str(action.default)


def _options_table(parser: argparse.ArgumentParser) -> nodes.table | None:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        flags = ", ".join(action.option_strings) or action.dest
        if action.choices and not isinstance(action.choices, dict):
            flags += " {" + ",".join(map(str, action.choices)) + "}"
        elif action.metavar and action.nargs != 0:
            flags += f" {action.metavar}"
        elif action.option_strings and action.nargs != 0:
            flags += f" {action.dest.upper()}"
        rows.append((flags, _default(action), action.help or ""))
    if not rows:
        return None
    table = nodes.table(classes=["cli-options"])
    group = nodes.tgroup(cols=3)
    table += group
    for width in (30, 12, 58):
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    head += _row(("option", "default", "what it does"), literal_first=False)
    body = nodes.tbody()
    group += body
    for row in rows:
        body += _row(row, literal_first=True)
    return table


def _row(cells: tuple[str, str, str], *, literal_first: bool) -> nodes.row:
    row = nodes.row()
    for index, text in enumerate(cells):
        entry = nodes.entry()
        paragraph = nodes.paragraph()
        if index < 2 and literal_first and text:
            paragraph += nodes.literal(text=text)
        else:
            paragraph += nodes.Text(text)
        entry += paragraph
        row += entry
    return row


def _section(
    title: str, ident: str, parser: argparse.ArgumentParser, summary: str
) -> nodes.section:
    section = nodes.section(ids=[ident])
    section += nodes.title(text=title)
    if summary:
        section += nodes.paragraph(text=summary[0].upper() + summary[1:] + ".")
    if parser.description and title != "trio-mcp":
        section += nodes.paragraph(text=parser.description)
    section += nodes.literal_block(text=_usage(parser), language="text")
    table = _options_table(parser)
    if table is not None:
        section += table
    if parser.epilog:
        section += nodes.paragraph(text=parser.epilog)
    return section


class TrioMcpCli(SphinxDirective):
    """``.. trio-mcp-cli::``: every subcommand of ``trio-mcp``, from its parser."""

    def run(self) -> list[nodes.Node]:
        parser = _parser()
        out: list[nodes.Node] = [nodes.literal_block(text=_usage(parser), language="text")]
        for name, summary, sub in _subcommands(parser):
            out.append(_section(f"trio-mcp {name}", f"cli-{name}", sub, summary))
        return out


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("trio-mcp-cli", TrioMcpCli)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
