"""Several servers at once: ``open_clients`` and server-qualified tool names."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from client_fake_server import FakeServer, text_result

from trio_mcp._client._multi import open_clients
from trio_mcp.lowlevel import RequestContext, Transport, open_session
from trio_mcp.testing import memory_transport_pair


def search_server(label: str) -> FakeServer:
    server = FakeServer(tools=[{"name": "search", "inputSchema": {"type": "object"}}])

    async def search(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
        return text_result(f"{label}: {args.get('q')}")

    server.tool_fns["search"] = search
    return server


@pytest.mark.spec("TL-12")
async def test_tools_of_many_servers_under_qualified_names() -> None:
    docs, web = search_server("docs"), search_server("web")
    docs_client, docs_end = memory_transport_pair()
    web_client, web_end = memory_transport_pair()
    opened: list[str] = []

    @asynccontextmanager
    async def web_transport() -> AsyncIterator[Transport]:
        opened.append("web")
        yield web_client

    async with (
        open_session(docs_end, docs.protocol, docs),
        open_session(web_end, web.protocol, web),
        open_clients({"docs": docs_client, "web": web_transport}, name="host") as group,
    ):
        assert sorted(group.tools) == ["docs__search", "web__search"]
        assert group.tools["web__search"].server == "web"
        result = await group.call_tool("web__search", {"q": "trio"})
        assert result.content[0].text == "web: trio"  # type: ignore[union-attr]
        assert group["docs"].server_info.name == "fake"
        with pytest.raises(KeyError):
            await group.call_tool("nowhere__search")
        clients = list(group.clients.values())
    assert opened == ["web"]
    assert all(client.session.closed for client in clients)


async def test_one_failing_server_closes_the_others() -> None:
    good = search_server("good")
    good_client, good_end = memory_transport_pair()

    failures = [OSError("cannot start server")]

    @asynccontextmanager
    async def broken() -> AsyncIterator[Transport]:
        if failures:
            raise failures[0]
        yield good_client

    with trio.fail_after(5):
        async with open_session(good_end, good.protocol, good):
            with pytest.raises(OSError, match="cannot start"):
                async with open_clients({"good": good_client, "bad": broken}):
                    pytest.fail("must not open")


async def test_server_names_must_not_contain_the_separator() -> None:
    with pytest.raises(ValueError, match="__"):
        async with open_clients({"a__b": memory_transport_pair()[0]}):
            pytest.fail("must not open")
