"""Server notices reach a Streamable HTTP session as they reach any other.

A registry change (a tool added, a resource updated) is delivered to every
session that negotiated it by the task :func:`trio_mcp.serve_session` runs
beside the session; a stateful HTTP session is served the same way, so the
notice travels over its standalone GET stream (HT-18).
"""

from __future__ import annotations

import trio
from http_helpers import make_server, running

from trio_mcp import open_http_client


async def test_a_tool_added_reaches_an_http_client_as_list_changed() -> None:
    server = make_server()
    async with running(server) as (url, _app), open_http_client(url + "/mcp") as client:
        assert sorted(client.tools) == ["add", "echo"]

        async def late(text: str) -> str:
            """Registered after the client connected."""
            return text

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.wait_list_changed, "tools")
                await trio.testing.wait_all_tasks_blocked()
                server.add_tool(late)
        assert sorted(client.tools) == ["add", "echo", "late"]


async def test_a_resource_update_reaches_a_subscribed_http_client() -> None:
    server = make_server()

    @server.resource("memo://note")
    def note() -> str:
        return "v1"

    async with (
        running(server) as (url, _app),
        open_http_client(url + "/mcp") as client,
        client.resource_updates("memo://note") as updates,
    ):
        with trio.fail_after(10):
            server.resource_updated("memo://note")
            assert await updates.receive() == "memo://note"
