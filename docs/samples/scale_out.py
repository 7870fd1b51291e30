"""One instance of a server deployed as several behind a load balancer.

Run it once per instance, each on its own port, with the same Redis and the
same requestState key, HAProxy in front (haproxy.cfg)::

    export REDIS_URL=redis://127.0.0.1:6379/0 TRIO_MCP_REQUEST_STATE_KEY=<64 hex digits>
    export PUBLIC_HOSTS=mcp.example.com,127.0.0.1:8000   # the Host clients send
    python scale_out.py 8001

SIGTERM drains it (readiness false, in-flight requests finish, listen streams
complete, sessions close) before it exits; it prints the drain's steps.
"""

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from trio_mcp import Context, RequestStateSealer, Server, serve_http
from trio_mcp.bus import RedisBus, RedisNonceStore
from trio_mcp.tasks import RedisTaskStore, TaskRunner
from trio_mcp.transports import Drain

REDIS = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


@asynccontextmanager
async def lifespan(server: Server) -> AsyncIterator[dict[str, Any]]:
    # Once per process, before serving: a database pool, a client...
    pool = {"pid": os.getpid(), "open": True}
    try:
        yield pool
    finally:  # after the drain, once every session and task has ended
        pool["open"] = False


def build() -> Server:
    server = Server(
        "notes",
        lifespan=lifespan,
        # Changes made on any instance reach the listeners of all.
        bus=RedisBus(REDIS),
        # Any instance answers tasks/get of a task another one runs.
        tasks=TaskRunner(RedisTaskStore(REDIS)),
        # The key comes from TRIO_MCP_REQUEST_STATE_KEY (and, while it rotates, the
        # previous ones from TRIO_MCP_REQUEST_STATE_PREVIOUS_KEYS); single use holds
        # everywhere.
        request_state=RequestStateSealer(
            audience="notes", single_use=True, nonce_store=RedisNonceStore(REDIS)
        ),
    )

    @server.tool()
    async def whoami(ctx: Context) -> int:
        """The process that answered."""
        pid: int = ctx.lifespan["pid"]
        return pid

    @server.tool()
    async def touch() -> None:
        """Tell every listener, on every instance, that the board changed."""
        server.resource_updated("notes://board")

    @server.resource("notes://board")
    def board() -> str:
        return "the board"

    return server


async def main(port: int) -> None:
    # delay: the load balancer's health check interval times its fall count.
    drain = Drain(grace=30, delay=float(os.environ.get("DRAIN_DELAY", "2")))
    hosts = os.environ.get("PUBLIC_HOSTS")
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_http(
                build(),
                "127.0.0.1",
                port,
                drain=drain,
                drain_on_signal=True,
                allowed_hosts=hosts.split(",") if hosts else None,
                task_status=task_status,
            )
        )
        print(f"serving {url}/mcp", file=sys.stderr, flush=True)
    print("drained:", ", ".join(drain.steps), file=sys.stderr, flush=True)


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 8001)
