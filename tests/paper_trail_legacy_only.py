"""Paper Trail speaking only the handshake era, for the CLI tests.

The bundled example's tools, ``protocol_versions`` restricted to the
handshake-era versions: ``initialize`` is answered, ``server/discover`` is an
unknown method (-32601), as from a server written before 2026-07-28. The test
runs this script (``trace``/``call -- python THIS``, ``demo --server THIS``).
"""

from __future__ import annotations

from trio_mcp.examples.paper_trail import build_server
from trio_mcp.protocol import HANDSHAKE_VERSIONS

if __name__ == "__main__":
    build_server(HANDSHAKE_VERSIONS).run_stdio()
