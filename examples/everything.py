"""The server that exercises every server feature: ``python examples/everything.py``.

It ships inside the package, so its source is ``src/trio_mcp/examples/everything.py``;
this file runs that module, with the same options (``--http HOST:PORT``), for the
paths that the README and the tests use.
"""

from __future__ import annotations

from trio_mcp.examples.everything import build_server, main

__all__ = ["build_server", "main"]

if __name__ == "__main__":
    main()
