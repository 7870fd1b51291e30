"""Paper Trail speaking only 2026-07-28, for the CLI tests.

The bundled example's tools, ``protocol_versions`` restricted to the modern
versions: ``server/discover`` is answered, ``initialize`` is refused with
-32022 naming what it speaks (VR-13). No option of the CLI or the example is
needed to get one: the test runs this script (``trace``/``call -- python
THIS``, ``demo --server THIS``).
"""

from __future__ import annotations

from trio_mcp.examples.paper_trail import build_server
from trio_mcp.protocol import MODERN_VERSIONS

if __name__ == "__main__":
    build_server(MODERN_VERSIONS).run_stdio()
