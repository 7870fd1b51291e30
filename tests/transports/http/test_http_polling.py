"""The server may close a request's SSE stream to make the client poll (HT-11)."""

from __future__ import annotations

import httpx
import pytest
import trio
from helpers import first_text
from http_helpers import make_server, running

from trio_mcp import Context, open_http_client
from trio_mcp.lowlevel import Progress
from trio_mcp.transports._http.server._event_store import MemoryEventStore


@pytest.mark.spec("HT-11")
async def test_server_closes_the_stream_and_the_client_polls_for_the_rest() -> None:
    server = make_server()
    closed: list[bool] = []
    more = trio.Event()

    @server.tool()
    async def long_job(ctx: Context) -> str:
        """Report, drop the stream, report again, finish."""
        await ctx.report_progress(1, 3)
        closed.append(ctx.close_sse_stream())
        await more.wait()  # the client now sees its stream end without an answer
        await ctx.report_progress(2, 3)
        await ctx.report_progress(3, 3)
        return "done after polling"

    seen: list[float] = []

    def on_progress(progress: Progress) -> None:
        seen.append(progress.progress)
        if progress.progress == 1:
            more.set()

    resumes: list[str] = []

    async def record(request: httpx.Request) -> None:
        if request.method == "GET" and "last-event-id" in request.headers:
            resumes.append(request.headers["last-event-id"])

    store = MemoryEventStore()
    with trio.fail_after(20):
        async with (
            running(server, event_store=store, retry_interval=50) as (url, _),
            httpx.AsyncClient(event_hooks={"request": [record]}) as http,
            open_http_client(url + "/mcp", http_client=http, era="legacy") as client,
        ):
            result = await client.call_tool("long_job", on_progress=on_progress)
            await client.ping()  # the session goes on
    assert closed == [True]
    assert resumes, "the client never reconnected with Last-Event-ID"
    assert first_text(result) == "done after polling"
    assert seen == [1, 2, 3]  # every event exactly once, across the reconnect


async def test_close_sse_stream_is_a_no_op_where_the_transport_cannot() -> None:
    server = make_server()
    answers: list[bool] = []

    @server.tool()
    async def try_close(ctx: Context) -> str:
        answers.append(ctx.close_sse_stream())
        return "ok"

    # No event store: not resumable, so the stream cannot be closed early.
    async with running(server) as (url, _), open_http_client(url + "/mcp", era="legacy") as client:
        assert first_text(await client.call_tool("try_close")) == "ok"
    assert answers == [False]
