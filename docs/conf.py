"""Sphinx configuration for the trio_mcp documentation.

Built by ``scripts/docs`` with warnings as errors and no network: no
intersphinx, no remote images, nothing fetched at build time.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(ROOT / "src"))

import trio_mcp  # noqa: E402

project = "trio_mcp"
author = "the trio_mcp authors"
copyright = "the trio_mcp authors"
release = trio_mcp.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    # The project's own extensions (docs/_ext/): diagrams drawn from the code's
    # tables, the CLI reference from the argparse parsers, the spec map.
    "trio_mcp_diagrams",
    "trio_mcp_cli",
    "trio_mcp_specmap",
    "trio_mcp_api",
    "trio_mcp_errors",
    "trio_mcp_samples",
    "trio_mcp_timeline",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "samples", "README.md"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
# Attribute names such as `list` (ClientTasksCapability.list) make the builtin
# `list` of type hints ambiguous; the hint still renders, unlinked.
suppress_warnings = ["ref.python"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_default_options: dict[str, object] = {}
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "alabaster"
html_title = f"trio_mcp {release}"
html_static_path = ["_static"]
html_css_files = ["trio_mcp.css"]
html_theme_options = {
    "description": "The Model Context Protocol on Trio",
    "fixed_sidebar": True,
    "page_width": "1100px",
    "sidebar_width": "240px",
}
html_sidebars = {"**": ["about.html", "navigation.html", "searchbox.html"]}
html_show_sourcelink = False
