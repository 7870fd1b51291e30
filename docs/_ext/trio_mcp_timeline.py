"""``.. request-timeline:: NAME.py``: run a sample of ``docs/samples/`` that
writes a request timeline (``trio_mcp.lowlevel.request_timeline``) and show its
drawing, so the picture on the page is what the code draws today.

The sample is given the path of the page to write; the drawing (the page's
inline SVG, which carries its own style) is kept under ``_generated/timelines/``
and shown as an image. A sample that fails, or writes no drawing, fails the
build.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


class RequestTimeline(SphinxDirective):
    """``.. request-timeline:: NAME.py`` with an optional ``:alt:``."""

    required_arguments = 1
    option_spec = {"alt": directives.unchanged}  # noqa: RUF012

    def run(self) -> list[nodes.Node]:
        sample = Path(self.env.srcdir) / "samples" / self.arguments[0]
        if not sample.is_file():
            raise self.error(f"no sample docs/samples/{self.arguments[0]}")
        self.env.note_dependency(str(sample))
        with tempfile.TemporaryDirectory() as scratch:
            page = Path(scratch) / "timeline.html"
            done = subprocess.run(
                [sys.executable, str(sample), str(page)],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=scratch,
                check=False,
            )
            if done.returncode != 0:
                raise self.error(f"{sample.name} failed: {done.stderr.strip()[-500:]}")
            drawing = re.search(r"<svg .*?</svg>", page.read_text() if page.exists() else "", re.S)
        if drawing is None:
            raise self.error(f"{sample.name} wrote no timeline")
        svg = drawing.group(0)
        digest = hashlib.sha256(svg.encode()).hexdigest()[:12]
        folder = Path(self.env.srcdir) / "_generated" / "timelines"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{sample.stem}-{digest}.svg"
        if not path.exists():
            path.write_text(svg)
        uri = "/" + path.relative_to(self.env.srcdir).as_posix()
        alt = self.options.get("alt", f"the request timeline that {sample.name} draws")
        container = nodes.container(classes=["diagram", "timeline"])
        container += nodes.image(uri=uri, alt=alt)
        return [container]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("request-timeline", RequestTimeline)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
