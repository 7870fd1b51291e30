"""``.. mcp-error-tree::``: every ``MCPError`` subclass, found by walking the class tree.

Each public exception (one that a public namespace exports) is listed under its
parent with its docstring, which says when it is raised; the list is made at
build time, so a new error cannot be left out.
"""

from __future__ import annotations

import importlib
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

#: Where a reader imports exceptions from, most preferred first.
NAMESPACES = (
    "trio_mcp",
    "trio_mcp.tasks",
    "trio_mcp.extensions",
    "trio_mcp.protocol",
    "trio_mcp.lowlevel",
    "trio_mcp.transports",
    "trio_mcp.auth",
    "trio_mcp.testing",
)


def public_names() -> dict[type, str]:
    """Each exported exception class and its public dotted name."""
    found: dict[type, str] = {}
    for namespace in NAMESPACES:
        try:
            module = importlib.import_module(namespace)
        except ImportError:
            continue
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, BaseException):
                found.setdefault(value, f"{namespace}.{name}")
    return found


def error_tree() -> list[tuple[int, type, str]]:
    """``(depth, class, public name)`` for MCPError and every public subclass, depth first."""
    from trio_mcp import MCPError

    names = public_names()
    out: list[tuple[int, type, str]] = []

    def walk(cls: type, depth: int) -> None:
        if cls in names:
            out.append((depth, cls, names[cls]))
            depth += 1
        for sub in sorted(cls.__subclasses__(), key=lambda c: c.__name__):
            walk(sub, depth)

    walk(MCPError, 0)
    return out


class MCPErrorTree(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        tree = error_tree()
        lines: list[str] = []
        for depth, _cls, name in tree:
            lines.append("  " * depth + f"- :py:exc:`{name}`")
            lines.append("")
        for _depth, cls, name in tree:
            parents = [b.__name__ for b in cls.__bases__]
            lines += [
                f".. autoexception:: {name}",
                "   :no-index:",
                "   :members:",
                "",
                f"   *Subclass of* ``{', '.join(parents)}``.",
                "",
            ]
        container = nodes.container()
        self.state.nested_parse(
            StringList(lines, source=self.get_source_info()[0]), self.content_offset, container
        )
        return list(container.children)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("mcp-error-tree", MCPErrorTree)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
