"""The server the scale-out tests and ``scripts/cluster`` run, one per instance.

Each worker or instance builds it with :func:`build`. What it shares comes from
the environment: ``SCALEOUT_REDIS`` (a Redis URL: the bus and the task store
live there; unset, each instance is on its own) and ``SCALEOUT_LIFESPAN_LOG``
(a file each process appends ``enter <pid>`` and ``exit <pid>`` to as its
lifespan is entered and left). The ``requestState`` key ring is the
environment's too (``TRIO_MCP_REQUEST_STATE_KEY`` and
``TRIO_MCP_REQUEST_STATE_PREVIOUS_KEYS``); with Redis its states are single use
across instances.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from trio_mcp import Context, RequestStateSealer, Server
from trio_mcp.tasks import TaskRunner

REDIS_ENV = "SCALEOUT_REDIS"
LIFESPAN_LOG_ENV = "SCALEOUT_LIFESPAN_LOG"
#: The resource every instance serves and the load touches.
URI = "memo://board"
#: The schema of the survey's questions: one boolean.
FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def _log(line: str) -> None:
    path = os.environ.get(LIFESPAN_LOG_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"{line} {os.getpid()}\n")


@asynccontextmanager
async def lifespan(server: Server) -> AsyncIterator[dict[str, Any]]:
    """What lives once per process (here, a record of it in the log)."""
    _log("enter")
    try:
        yield {"pid": os.getpid(), "name": server.name}
    finally:
        _log("exit")


def build() -> Server:
    url = os.environ.get(REDIS_ENV)
    bus: Any = None
    tasks: TaskRunner | None = None
    # The key ring comes from the environment.
    sealer = RequestStateSealer(audience="scaleout")
    if url:
        from trio_mcp.bus import RedisBus, RedisNonceStore
        from trio_mcp.tasks import RedisTaskStore

        bus = RedisBus(url, prefix="scaleout:bus:")
        tasks = TaskRunner(RedisTaskStore(url, prefix="scaleout:tasks:"))
        sealer = RequestStateSealer(
            audience="scaleout",
            single_use=True,
            nonce_store=RedisNonceStore(url, prefix="scaleout:nonces:"),
        )
    server = Server(
        "scaleout",
        version="1.0",
        lifespan=lifespan,
        bus=bus,
        tasks=tasks,
        request_state=sealer,
    )

    @server.tool()
    async def whoami(ctx: Context) -> int:
        """The pid of the process that answered, read from its lifespan's value."""
        pid: int = ctx.lifespan["pid"]
        return pid

    @server.tool()
    async def touch() -> int:
        """Announce a change of the board (a resource update) on every instance."""
        server.resource_updated(URI)
        return os.getpid()

    @server.tool()
    async def work(seconds: float) -> int:
        """Work for *seconds*, then say which process did it."""
        await trio.sleep(seconds)
        return os.getpid()

    @server.tool()
    async def survey(questions: int, ctx: Context) -> list[int]:
        """Ask *questions* questions, one per 2026-07-28 round (each message
        names the process that asked); the pids of the processes that ran each
        round, carried in the sealed ``requestState``."""
        pids: list[int] = ctx.saved.setdefault("pids", [])
        pids.append(os.getpid())
        for question in range(questions):
            await ctx.elicit(
                {
                    "mode": "form",
                    "message": f"question {question} from {os.getpid()}",
                    "requestedSchema": FORM,
                }
            )
        return pids

    @server.tool(task_support="optional")
    async def job(seconds: float) -> int:
        """A task that works for *seconds*."""
        await trio.sleep(seconds)
        return os.getpid()

    @server.resource(URI)
    def board() -> str:
        return "the board"

    # The drain's step 3 calls complete_listens: noted here, so a request in
    # flight can wait for its process to begin draining.
    draining = trio.Event()
    complete_listens = server.complete_listens

    def noted() -> None:
        draining.set()
        complete_listens()

    server.complete_listens = noted  # type: ignore[method-assign]

    @server.tool()
    async def until_drained(gate: int) -> int:
        """Say this process's pid to the test's *gate* port (the call is in
        flight), then answer once the process has begun draining."""
        async with await trio.open_tcp_stream("127.0.0.1", gate) as test:
            await test.send_all(f"{os.getpid()}\n".encode())
        await draining.wait()
        return os.getpid()

    return server
