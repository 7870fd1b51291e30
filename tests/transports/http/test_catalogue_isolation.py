"""Session isolation of the robustness catalogue (reliability K-09): many
clients against one server object over Streamable HTTP on loopback, each with
its own canary, and nothing of one reaches another."""

from __future__ import annotations

from typing import Any

import trio
import trio.lowlevel
from http_helpers import running

from trio_mcp import Context, Server, open_http_client
from trio_mcp import types as mcp_types

CLIENTS = 12
CALLS = 3


def make_server() -> Server:
    server = Server("isolation", logging=True)

    @server.tool()
    async def shout(ctx: Context, canary: str) -> str:
        """Progress, a log message and a result, each carrying the canary."""
        await ctx.report_progress(1, 2, message=canary)
        await ctx.info({"canary": canary})
        await trio.lowlevel.checkpoint()  # let the other clients' calls interleave with this one
        await ctx.report_progress(2, 2, message=canary)
        return canary

    return server


async def test_many_clients_of_one_server_see_only_their_own_canaries() -> None:
    """K-09 (reduced: 12 clients, 3 calls each, all at once; the 1,000 clients
    of the catalogue are the issue #17 §4 soak): every progress notification,
    log message and result a client gets carries its own canary."""
    seen: dict[str, list[str]] = {}

    async def one_client(url: str, name: str) -> None:
        got = seen.setdefault(name, [])

        def log(params: mcp_types.LoggingMessageNotificationParams) -> None:
            data: Any = params.data
            got.append(f"log {data['canary']}")

        async with open_http_client(url, era="legacy", log_handler=log) as client:
            await client.set_logging_level("info")

            async def call(n: int) -> None:
                canary = f"{name}/{n}"
                result = await client.call_tool(
                    "shout",
                    {"canary": canary},
                    on_progress=lambda p: got.append(f"progress {p.message}"),
                )
                got.append(f"result {result.content[0].text}")  # type: ignore[union-attr]

            async with trio.open_nursery() as nursery:
                for n in range(CALLS):
                    nursery.start_soon(call, n)

    with trio.fail_after(60):
        async with running(make_server()) as (url, _), trio.open_nursery() as nursery:
            for i in range(CLIENTS):
                nursery.start_soon(one_client, url + "/mcp", f"client-{i}")
    assert len(seen) == CLIENTS
    for name, got in seen.items():
        foreign = [entry for entry in got if not entry.split(" ", 1)[1].startswith(name + "/")]
        assert foreign == [], name
        for n in range(CALLS):
            canary = f"{name}/{n}"
            assert got.count(f"result {canary}") == 1
            assert got.count(f"log {canary}") == 1
            assert got.count(f"progress {canary}") == 2
