"""State diagrams drawn at build time from the code's own transition tables.

``.. state-diagram:: NAME`` (``{state-diagram} NAME`` in MyST) embeds an SVG
rendered by Graphviz's ``dot`` from one of the tables below, so a diagram can
never drift from the code: change a row of ``LIFECYCLE``, ``TRANSITIONS`` or
``TASK_TRANSITIONS`` and the next build draws the change.

The Graphviz source is made by pure functions of the table (``dot_source``), and
``render_svg`` runs ``dot``; ``tests/test_docs.py`` shows that changing a row
changes the SVG. ``scripts/docs`` installs Debian's ``graphviz`` when ``dot`` is
missing.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Callable, Mapping
from enum import Enum
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

Table = Mapping[Enum, Mapping[Enum, Enum]]

#: Colours of terminal states, so the eye finds how a machine ends.
_TERMINAL_FILL = {"completed": "#d9f2d9", "failed": "#f9d6d5", "cancelled": "#fde9c8"}


def _label(member: Enum) -> str:
    return str(member.value).upper().replace(" ", "_")


def _event(member: Enum) -> str:
    return str(member.value).replace("_", " ")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _machine_lines(table: Table, prefix: str, start: Enum) -> list[str]:
    lines: list[str] = []
    for state, moves in table.items():
        terminal = not moves
        fill = _TERMINAL_FILL.get(str(state.value), "#eeeeee" if terminal else "#ffffff")
        style = "rounded,filled,bold" if state is start else "rounded,filled"
        lines.append(
            f"  {_quote(prefix + _label(state))} [label={_quote(_label(state))}, "
            f"shape=box, style={_quote(style)}, "
            f"fillcolor={_quote(fill)}, peripheries={2 if terminal else 1}];"
        )
    for state, moves in table.items():
        for event, target in moves.items():
            close = str(event.value) == "close"
            attrs = f"label={_quote(_event(event))}"
            if close:
                attrs += ', style="dashed", color="#888888", fontcolor="#888888"'
            tail, head = _quote(prefix + _label(state)), _quote(prefix + _label(target))
            lines.append(f"  {tail} -> {head} [{attrs}];")
    return lines


def _graph(name: str, body: list[str], rankdir: str = "LR") -> str:
    head = [
        f"digraph {_quote(name)} {{",
        f"  rankdir={rankdir};",
        '  node [fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    return "\n".join([*head, *body, "}"]) + "\n"


def request_dot(transitions: Table) -> str:
    """The request state machine (``protocol._requests.TRANSITIONS``) as Graphviz source."""
    start = next(iter(transitions))
    return _graph("requests", _machine_lines(transitions, "", start))


def task_dot(transitions: Table) -> str:
    """The task state machine (``protocol._tasks.TASK_TRANSITIONS``) as Graphviz source."""
    start = next(iter(transitions))
    return _graph("tasks", _machine_lines(transitions, "", start))


def lifecycle_dot(lifecycle: Mapping[Enum, Table]) -> str:
    """The session lifecycle (``protocol._lifecycle.LIFECYCLE``), one cluster per role."""
    body: list[str] = []
    for role, table in lifecycle.items():
        start = next(iter(table))
        body.append(f"  subgraph {_quote('cluster_' + str(role.value))} {{")
        body.append(f'    label={_quote(str(role.value))}; fontname=Helvetica; color="#999999";')
        body.extend("  " + line for line in _machine_lines(table, f"{role.value}:", start))
        body.append("  }")
    return _graph("lifecycle", body, rankdir="TB")


def _tables() -> dict[str, Callable[[], str]]:
    # Imported when drawn, so the build reads the tables of the checkout it documents.
    from trio_mcp.protocol import _lifecycle, _requests, _tasks

    return {
        "lifecycle": lambda: lifecycle_dot(_lifecycle.LIFECYCLE),  # type: ignore[arg-type]
        "requests": lambda: request_dot(_requests.TRANSITIONS),  # type: ignore[arg-type]
        "tasks": lambda: task_dot(_tasks.TASK_TRANSITIONS),  # type: ignore[arg-type]
    }


DIAGRAMS = ("lifecycle", "requests", "tasks")


def dot_source(name: str) -> str:
    """The Graphviz source of diagram *name*, from the code's table as it is now."""
    return _tables()[name]()


def render_svg(source: str) -> str:
    """Run Graphviz's ``dot`` on *source*; the SVG text."""
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError(
            "Graphviz's dot is missing: install Debian's graphviz package "
            "(scripts/docs does so when it runs as root)."
        )
    done = subprocess.run(
        [dot, "-Tsvg"], input=source, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


class StateDiagram(SphinxDirective):
    """``.. state-diagram:: NAME`` with an optional ``:alt:``."""

    required_arguments = 1
    option_spec = {"alt": directives.unchanged}  # noqa: RUF012

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        if name not in DIAGRAMS:
            raise self.error(f"unknown diagram {name!r}; one of {', '.join(DIAGRAMS)}")
        svg = render_svg(dot_source(name))
        digest = hashlib.sha256(svg.encode()).hexdigest()[:12]
        folder = Path(self.env.srcdir) / "_generated" / "diagrams"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}-{digest}.svg"
        if not path.exists():
            path.write_text(svg)
        # The image path relative to the document, as an image directive would take it.
        uri = "/" + path.relative_to(self.env.srcdir).as_posix()
        alt = self.options.get("alt", f"the {name} state machine, drawn from the code")
        image = nodes.image(uri=uri, alt=alt)
        self.env.note_dependency(str(path))
        container = nodes.container(classes=["diagram"])
        container += image
        return [container]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("state-diagram", StateDiagram)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
