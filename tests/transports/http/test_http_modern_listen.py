"""``subscriptions/listen`` over 2026-07-28 Streamable HTTP, our client against our server.

Each listen is a long-lived POST whose SSE response carries the change notices;
the client ends one by closing that response (SB-08), which the server reads as
the cancel (HM-13).
"""

from __future__ import annotations

import pytest
import trio
from http_helpers import running

from trio_mcp import Server, http_app, open_http_client
from trio_mcp.lowlevel import CancelOrigin, RequestRecord, RequestState
from trio_mcp.testing import RecordingObserver

#: Bound on anything here (real sockets; nothing should take more than ms).
NOT_HUNG = 20


class _ListenObserver(RecordingObserver):
    """Says when a ``subscriptions/listen`` request ends, and keeps its record."""

    def __init__(self) -> None:
        super().__init__()
        self.ended: list[RequestRecord] = []
        self.one_ended = trio.Event()

    def on_transition(self, record: RequestRecord, old: RequestState | None) -> None:
        super().on_transition(record, old)
        if record.method == "subscriptions/listen" and record.state.is_terminal:
            self.ended.append(record)
            self.one_ended.set()


def watched_server() -> Server:
    server = Server("listen-http", version="1")

    @server.resource("file:///watched.txt")
    async def watched() -> str:
        return "v1"

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text."""
        return text

    return server


@pytest.mark.spec("SB-08", "SB-01", "HM-13")
async def test_updates_and_list_changes_ride_listen_posts_and_leaving_closes_one() -> None:
    server = watched_server()
    observer = _ListenObserver()
    app = http_app(server, session_options={"observer": observer})
    async with running(app) as (base, _):
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(base + "/mcp", era="modern", remember_era=False) as client:
                assert client.era == "modern"
                async with client.resource_updates("file:///watched.txt") as updates:
                    server.resource_updated("file:///watched.txt")
                    assert await updates.receive() == "file:///watched.txt"
                    server.add_tool(lambda: "new", name="fresh")
                    await client.wait_list_changed("tools")
                    assert "fresh" in client.tools
                # Leaving the block closed that listen's response: the server's
                # handler was cancelled by the disconnect, nothing answered it.
                await observer.one_ended.wait()
                (ended,) = observer.ended
                assert ended.state is RequestState.CANCELLED
                assert ended.cancel_origin is CancelOrigin.TRANSPORT
                answer = await client.call_tool("echo", {"text": "on"})
                assert [getattr(c, "text", None) for c in answer.content] == ["on"]
