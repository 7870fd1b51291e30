"""Paper Trail, the demo's order-lookup server: ``python examples/paper_trail.py``.

The server ships inside the package (``trio-mcp demo`` needs it in an installed
wheel), so its source is ``src/trio_mcp/examples/paper_trail.py``; this file runs
that module, with the same options (``--http HOST:PORT``), for the paths that
the README and the tests use.
"""

from __future__ import annotations

from trio_mcp.examples.paper_trail import main, server

__all__ = ["main", "server"]

if __name__ == "__main__":
    main()
