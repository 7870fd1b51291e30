"""``.. trio-mcp-optional-module:: NAME``: autodoc of a namespace that may not exist yet.

When the module imports, this is ``automodule`` with the members of its
``__all__``; when it does not (an older checkout), one sentence says so
instead of a build warning.
"""

from __future__ import annotations

import importlib
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


class OptionalModule(SphinxDirective):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        try:
            importlib.import_module(name)
        except ImportError:
            text = f"{name} is not part of this version of trio_mcp."
            return [nodes.paragraph(text=text)]
        source = StringList(
            [
                f".. automodule:: {name}",
                "   :members:",
                "   :imported-members:",
                "   :show-inheritance:",
            ],
            source=self.get_source_info()[0],
        )
        container = nodes.container()
        self.state.nested_parse(source, self.content_offset, container)
        return list(container.children)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("trio-mcp-optional-module", OptionalModule)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
