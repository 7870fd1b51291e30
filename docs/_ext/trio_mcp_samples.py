"""``.. sample-output:: NAME.py``: run a sample of ``docs/samples/`` at build time
and show what it printed, so a page's output can never drift from the code.

The sample runs with this interpreter, no network (it is one of the samples
the test suite runs too), bounded by a timeout; a sample that fails fails the
build.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


class SampleOutput(SphinxDirective):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        sample = Path(self.env.srcdir) / "samples" / self.arguments[0]
        if not sample.is_file():
            raise self.error(f"no sample docs/samples/{self.arguments[0]}")
        self.env.note_dependency(str(sample))
        done = subprocess.run(
            [sys.executable, str(sample)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=sample.parent,
            check=False,
        )
        if done.returncode != 0:
            raise self.error(f"{sample.name} failed: {done.stderr.strip()[-500:]}")
        return [nodes.literal_block(text=done.stdout.rstrip(), language="text")]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("sample-output", SampleOutput)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
