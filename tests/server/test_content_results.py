"""Tools may return resource links and embedded resources (TL-16)."""

from __future__ import annotations

import pytest

from trio_mcp import Server, types
from trio_mcp.testing import open_memory_client


@pytest.mark.spec("TL-16")
async def test_resource_links_and_embedded_resources_reach_the_client() -> None:
    server = Server("links", "1.0")

    @server.tool()
    async def find() -> list[types.TextContent | types.ResourceLink | types.EmbeddedResource]:
        """Point at a file and embed another."""
        return [
            types.TextContent(text="found two"),
            types.ResourceLink(uri="file:///a.txt", name="a.txt", mime_type="text/plain"),
            types.EmbeddedResource(
                resource=types.TextResourceContents(uri="file:///b.txt", text="bee")
            ),
        ]

    async with open_memory_client(server) as client:
        result = await client.call_tool("find")
    assert not result.is_error
    text, link, embedded = result.content
    assert isinstance(text, types.TextContent)
    assert text.text == "found two"
    assert isinstance(link, types.ResourceLink)
    assert (link.uri, link.name, link.mime_type) == ("file:///a.txt", "a.txt", "text/plain")
    assert isinstance(embedded, types.EmbeddedResource)
    assert isinstance(embedded.resource, types.TextResourceContents)
    assert embedded.resource.text == "bee"
