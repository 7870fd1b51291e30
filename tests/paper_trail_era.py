"""Paper Trail restricted to one era, for the CLI tests: ``python tests/paper_trail_era.py ERA``.

ERA is ``modern`` (2026-07-28 only: ``initialize`` is refused with -32022,
VR-13), ``legacy`` (the handshake-era versions only: ``server/discover`` is an
unknown method) or ``dual`` (both, as ``python -m trio_mcp.examples.paper_trail``).
The tools are the bundled example's; only ``protocol_versions`` differs.
"""

from __future__ import annotations

import sys

from trio_mcp.examples.paper_trail import build_server
from trio_mcp.protocol import ALL_VERSIONS, HANDSHAKE_VERSIONS, MODERN_VERSIONS

VERSIONS = {"modern": MODERN_VERSIONS, "legacy": HANDSHAKE_VERSIONS, "dual": ALL_VERSIONS}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in VERSIONS:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(VERSIONS)}")
    build_server(VERSIONS[sys.argv[1]]).run_stdio()
