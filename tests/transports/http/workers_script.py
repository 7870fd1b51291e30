"""A script serving its own factory with two workers (the ``__main__`` target case).

``python workers_script.py`` prints the URL line of ``run_http`` on stderr; the
workers load this file as ``__mp_main__``, so the guarded block runs only once.
"""

from __future__ import annotations

import os

from trio_mcp import Server, run_http


def build() -> Server:
    server = Server("workers-script")

    @server.tool()
    async def pid() -> int:
        """The process that served the call."""
        return os.getpid()

    return server


if __name__ == "__main__":
    run_http(build, workers=2, stateless=True)
