"""Cancelling a 2026-07-28 HTTP request before its first response event.

In 2026-07-28 closing the request's response stream is the cancel (HM-13).
Elsewhere a cancel issued before the POST's first event hangs, since there is
no stream to close yet. Here, at each of the three points (before the response
head, after the head and before the first event, mid-stream), our client's call
ends at once and the server's handler is cancelled at that instant, its record
ending CANCELLED with origin ``transport``.

In process: our ASGI application behind an httpx transport, on the autojump
clock, so "at once" is exact (no virtual time passes).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import trio
import trio.testing
from lifecycle_helpers import Bridge

from trio_mcp import Context, Server, http_app, open_http_client
from trio_mcp.lowlevel import CancelOrigin, RequestRecord, RequestState
from trio_mcp.testing import RecordingObserver

URL = "http://127.0.0.1:8000/mcp"


class Ended(RecordingObserver):
    """Keeps the terminal record of every tools/call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[RequestRecord] = []

    def on_transition(self, record: RequestRecord, old: RequestState | None) -> None:
        super().on_transition(record, old)
        if record.method == "tools/call" and record.state.is_terminal:
            self.calls.append(record)


def waiting_server(started: trio.Event, stopped: list[float]) -> Server:
    server = Server("waiting", version="1")

    @server.tool()
    async def wait(report: bool, ctx: Context) -> None:
        """Reports progress once if asked, then runs until cancelled."""
        try:
            if report:
                await ctx.report_progress(1, 2)
            started.set()
            await trio.sleep_forever()
        finally:
            stopped.append(trio.current_time())

    return server


POINTS = [
    # (point, head deferral, the tool reports first, heads the client has seen)
    pytest.param(30.0, False, 0, id="before-the-head"),
    pytest.param(0.0, False, 1, id="after-the-head"),
    pytest.param(30.0, True, 1, id="mid-stream"),
]


@pytest.mark.spec("HM-13", "CN-13", "CN-16")
@pytest.mark.parametrize(("deferral", "report", "heads"), POINTS)
async def test_cancel_before_first_event_over_modern_http(
    autojump_clock: trio.testing.MockClock, deferral: float, report: bool, heads: int
) -> None:
    started = trio.Event()
    stopped: list[float] = []
    observer = Ended()
    app = http_app(
        waiting_server(started, stopped),
        modern_head_deferral=deferral,
        session_options={"observer": observer},
    )
    progress: list[Any] = []
    async with app.run(), trio.open_nursery() as nursery:
        bridge = Bridge(app, nursery)
        http = httpx.AsyncClient(transport=bridge)
        async with http, open_http_client(URL, http_client=http, era="modern") as client:
            assert client.era == "modern"
            heads_before = bridge.heads
            returned: list[float] = []

            async def call() -> None:
                with trio.CancelScope() as scope:
                    call_scope.append(scope)
                    await client.call_tool("wait", {"report": report}, on_progress=progress.append)
                returned.append(trio.current_time())

            call_scope: list[trio.CancelScope] = []
            nursery.start_soon(call)
            await started.wait()
            await trio.testing.wait_all_tasks_blocked()
            # The point reached: the heads the call's POST has had, and its events.
            assert bridge.heads - heads_before == heads
            assert len(progress) == (1 if report else 0)
            cancelled_at = trio.current_time()
            call_scope[0].cancel()
            await trio.testing.wait_all_tasks_blocked()
            # The call ended at once, and the handler stopped in that instant.
            assert returned == [cancelled_at]
            assert stopped == [cancelled_at]
            (record,) = observer.calls
            assert record.state is RequestState.CANCELLED
            assert record.cancel_origin is CancelOrigin.TRANSPORT
        nursery.cancel_scope.cancel()
