"""``.. api-namespace:: NAME``: the API reference of one public namespace.

Each public namespace lists its names in ``__all__``. Some names are exported by
two namespaces (``MCPError`` by ``trio_mcp`` and ``trio_mcp.protocol``,
``RequestRecord`` by ``trio_mcp.lowlevel`` and ``trio_mcp.protocol``): each is
documented once, on the page of the first namespace in :data:`NAMESPACES`
that exports it, and the other pages link to it. Every object is documented
under its public name (``trio_mcp.lowlevel.RequestRecord``), never the private
module that defines it.

A namespace that does not import (``trio_mcp.tasks`` in an older checkout)
gets one sentence instead of a build error.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from functools import cache
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

#: The public namespaces, in the order that decides where a shared name is documented.
NAMESPACES = (
    "trio_mcp",
    "trio_mcp.tasks",
    "trio_mcp.bus",
    "trio_mcp.extensions",
    "trio_mcp.lowlevel",
    "trio_mcp.protocol",
    "trio_mcp.types",
    "trio_mcp.transports",
    "trio_mcp.testing",
    "trio_mcp.auth",
)


@cache
def home_of() -> dict[int, str]:
    """``id(object) -> "namespace.name"`` of where each public object is documented."""
    homes: dict[int, str] = {}
    for namespace in NAMESPACES:
        try:
            module = importlib.import_module(namespace)
        except ImportError:
            continue
        for name in getattr(module, "__all__", ()):
            homes.setdefault(id(getattr(module, name)), f"{namespace}.{name}")
    return homes


def _kind(obj: Any) -> str:
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isbuiltin(obj):
        return "function"
    if callable(obj) and hasattr(obj, "__wrapped__"):
        return "function"
    return "data"


def data_doc(name: str, obj: Any) -> list[str]:
    """The ``#:`` comment above the assignment of a public constant, from the
    private module that defines it (a re-export has no comment of its own)."""
    from sphinx.pycode import ModuleAnalyzer

    for modname, module in sorted(sys.modules.items()):
        if not modname.startswith("trio_mcp") or getattr(module, name, None) is not obj:
            continue
        try:
            docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
        except Exception:
            continue
        if ("", name) in docs:
            return [line for line in docs["", name]]
    return []


class ApiNamespace(SphinxDirective):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        namespace = self.arguments[0]
        try:
            module = importlib.import_module(namespace)
        except ImportError:
            return [nodes.paragraph(text=f"{namespace} is not part of this version of trio_mcp.")]
        homes = home_of()
        lines = [f".. automodule:: {namespace}", "   :no-members:", ""]
        elsewhere = []
        for name in module.__all__:
            obj = getattr(module, name)
            home = homes.get(id(obj), f"{namespace}.{name}")
            if home != f"{namespace}.{name}":
                elsewhere.append((name, home, _kind(obj)))
                continue
            kind = _kind(obj)
            if kind == "data":
                # Documented by hand: autodata would show the docstring of the
                # value's type (dict's) where the constant's own comment belongs.
                lines += [f".. py:data:: {name}", f"   :module: {namespace}", ""]
                lines += ["   " + line for line in data_doc(name, obj)]
                lines.append("")
                continue
            lines.append(f".. auto{kind}:: {namespace}.{name}")
            if kind in ("class", "exception"):
                lines += ["   :members:", "   :show-inheritance:"]
            lines.append("")
        if elsewhere:
            lines += [".. rubric:: Also exported here, documented with their first namespace", ""]
            role = {"class": "class", "exception": "exc", "function": "func", "data": "data"}
            for name, home, kind in elsewhere:
                lines.append(f"- ``{name}``: :py:{role[kind]}:`{home}`")
            lines.append("")
        container = nodes.container()
        self.state.nested_parse(
            StringList(lines, source=self.get_source_info()[0]), self.content_offset, container
        )
        return list(container.children)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("api-namespace", ApiNamespace)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
