"""The server the worker-process tests run (each worker imports this module).

``build`` is the zero-argument factory ``serve_http(..., workers=N)`` is given;
``app`` is the importable ASGI application of the hypercorn command line.
"""

from __future__ import annotations

import os
import socket
from typing import Any

import trio

from trio_mcp import Context, Server, http_app
from trio_mcp.tasks import TaskRunner

#: The params the ``seal`` and ``unseal`` tools bind their states to.
STATE_PARAMS = {"name": "booking", "arguments": {}}


#: The environment variable naming the Redis the workers' task runners share
#: (unset: each worker keeps its tasks in memory).
REDIS_ENV = "TRIO_MCP_TEST_TASKS_REDIS"


def _tasks() -> TaskRunner | None:
    url = os.environ.get(REDIS_ENV)
    if not url:
        return None
    from trio_mcp.tasks import RedisTaskStore

    return TaskRunner(RedisTaskStore(url, prefix=os.environ.get(REDIS_ENV + "_PREFIX", "t:")))


def build() -> Server:
    server = Server("workers-test", version="1.0", tasks=_tasks())
    sealer = server.request_state

    @server.tool()
    async def pid() -> int:
        """The process that served the call."""
        return os.getpid()

    @server.tool()
    async def hold(gate: int) -> int:
        """Hold this worker's event loop until the test opens its gate; its pid.

        Deliberately blocking, like a CPU-bound handler: while held, this
        worker accepts no connection, so the next one must reach another
        worker. Connects to the test's *gate* port on loopback, says its pid,
        and returns when the test answers (an error after 60 s, or if the
        test hangs up without a word).
        """
        me = os.getpid()
        with socket.create_connection(("127.0.0.1", gate), timeout=60.0) as test:
            test.sendall(f"{me}\n".encode())
            if not test.recv(16):
                raise RuntimeError(f"the test hung up on held worker {me}")
        return me

    @server.tool(task_support="optional")
    async def gated_job(gate: int) -> int:
        """A task that waits for the test: connects to its *gate* port, says its
        pid, and returns its pid when the test sends a byte. Cancelled, the
        connection closes, which the test sees as the end of its stream."""
        async with await trio.open_tcp_stream("127.0.0.1", gate) as test:
            await test.send_all(f"{os.getpid()}\n".encode())
            await test.receive_some(16)
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
