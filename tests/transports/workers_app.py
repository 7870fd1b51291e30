"""The server the worker-process tests run (each worker imports this module).

``build`` is the zero-argument factory ``serve_http(..., workers=N)`` is given;
``app`` is the importable ASGI application of the hypercorn command line.
"""

from __future__ import annotations

import os
import time
from typing import Any

from trio_mcp import Context, Server, http_app

#: The params the ``seal`` and ``unseal`` tools bind their states to.
STATE_PARAMS = {"name": "booking", "arguments": {}}


def build() -> Server:
    server = Server("workers-test", version="1.0")
    sealer = server.request_state

    @server.tool()
    async def pid() -> int:
        """The process that served the call."""
        return os.getpid()

    @server.tool()
    async def busy_pid() -> int:
        """The process that served the call, after holding its event loop 20 ms.

        Deliberately blocking: a CPU-bound handler, during which this worker
        accepts nothing, so concurrent connections must reach the other worker.
        """
        time.sleep(0.02)  # noqa: ASYNC251
        return os.getpid()

    @server.tool()
    async def seal() -> dict[str, Any]:
        """A requestState sealed by this worker's sealer, with this worker's pid."""
        token = sealer.seal(
            "tools/call",
            round=1,
            previous_request_id=1,
            answers={},
            saved={"pid": os.getpid()},
            params=STATE_PARAMS,
        )
        return {"pid": os.getpid(), "token": token}

    @server.tool()
    async def unseal(token: str) -> dict[str, Any]:
        """Whether this worker accepts *token*, and the pid that sealed it."""
        state = sealer.open(token, method="tools/call", params=STATE_PARAMS)
        return {"pid": os.getpid(), "sealed_by": state.saved["pid"]}

    @server.tool()
    async def ask(ctx: Context) -> str:
        """A 2026-07-28 multi round-trip call: which worker asked, which finished."""
        if "asked_by" not in ctx.saved:
            ctx.saved["asked_by"] = os.getpid()
        form = {"type": "object", "properties": {}}
        answer = await ctx.elicit({"mode": "form", "message": "Go on?", "requestedSchema": form})
        return f"{ctx.saved['asked_by']} {os.getpid()} {answer.action}"

    return server


def broken() -> Server:
    """A factory that fails in the worker: the worker exits before it listens."""
    raise RuntimeError("this factory is broken on purpose")


def not_a_server() -> object:
    return 42


#: For ``hypercorn --worker-class trio --workers N workers_app:app``.
app = http_app(build(), stateless=True)
