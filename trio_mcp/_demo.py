"""``trio-mcp demo``: a real client and server session, narrated from start to end.

Both ends run in this process over an in-memory transport (the stdio transport
will run the same demo across a process boundary). Every frame is printed with
its direction and relative time, then each lifecycle step says what happened
to the requests on both sides.
"""

from __future__ import annotations

import sys
from functools import partial
from typing import TextIO

import trio

from . import types as mcp_types
from ._client import open_client
from ._context import RequestContext
from ._errors import RequestTimeout
from ._server import Server, ToolError, serve_session
from ._session import Session
from .protocol import (
    Direction,
    FrameDirection,
    Progress,
    RequestObserver,
    RequestRecord,
    RequestState,
)
from .testing import memory_transport_pair

ORDERS = {
    "PT-1042": ("shipped", "Parcelforce", "2026-12-02"),
    "PT-2001": ("processing", None, "2026-12-05"),
}


def build_demo_server() -> Server:
    """The demo's server: an order lookup, a slow tool and a tool that reports progress."""
    server = Server("paper-trail-demo", "1.0", instructions="Look up Paper Trail orders.")

    @server.tool()
    async def order_status(order_id: str) -> str:
        """Status, carrier and ETA of an order (ids look like PT-NNNN)."""
        if order_id not in ORDERS:
            raise ToolError(f"no order {order_id!r}")
        status, carrier, eta = ORDERS[order_id]
        return f"{order_id}: {status}, carrier {carrier or 'not assigned'}, ETA {eta}"

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Wait for *seconds*, then say so."""
        await trio.sleep(seconds)
        return f"slept {seconds}s"

    @server.tool()
    async def scan(ctx: RequestContext, files: int) -> str:
        """Pretend to scan *files* files, reporting progress after each."""
        for done in range(1, files + 1):
            await trio.sleep(0.05)
            await ctx.report_progress(done, total=files, message=f"file {done}/{files}")
        return f"scanned {files} files"

    return server


class Narrator(RequestObserver):
    """Prints every frame of one side, with its relative time."""

    def __init__(self, out: TextIO, side: str) -> None:
        self.out = out
        self.side = side
        self.start = trio.current_time()
        #: Set each time an inbound handler starts running.
        self.handler_started = trio.Event()

    def on_transition(self, record: RequestRecord, old: RequestState | None) -> None:
        if record.direction is Direction.INBOUND and record.state is RequestState.RUNNING:
            self.handler_started.set()

    def on_frame(self, direction: FrameDirection, data: bytes, at: float) -> None:
        arrow = "->" if direction is FrameDirection.OUT else "<-"
        text = data.decode(errors="replace")
        if len(text) > 110:
            text = text[:107] + "..."
        print(f"  {at - self.start:7.3f}s {self.side} {arrow} {text}", file=self.out)


def _records(out: TextIO, title: str, records: list[RequestRecord]) -> None:
    print(f"\n  {title}", file=out)
    print(f"  {'id':>3} {'method':<12} {'direction':<9} {'state':<10} {'ms':>7}  cancel", file=out)
    for r in records:
        ms = f"{r.duration * 1000:.1f}" if r.duration is not None else "-"
        cancel = f"{r.cancel_origin.value}: {r.cancel_reason}" if r.cancel_origin else ""
        print(
            f"  {r.id!s:>3} {r.method:<12} {r.direction.value:<9} {r.state.value:<10} "
            f"{ms:>7}  {cancel}",
            file=out,
        )


async def run_demo(out: TextIO = sys.stdout) -> None:
    """Run the narrated lifecycle demo, writing to *out*."""

    def say(text: str) -> None:
        print(f"\n== {text}", file=out)

    server = build_demo_server()
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        narrator = Narrator(out, "server")
        server_session: Session = await nursery.start(
            partial(serve_session, server, server_end, observer=narrator)
        )

        say("1. Handshake: initialize -> result -> notifications/initialized")
        async with open_client(client_end, name="demo-host", version="1.0") as client:
            print(f"  negotiated protocol version: {client.protocol_version}", file=out)
            caps = mcp_types.unstructure(client.server_capabilities)
            print(
                f"  server: {client.server_info.name} {client.server_info.version}; "
                f"capabilities {caps}",
                file=out,
            )

            say("2. Discovery: tools/list")
            tools = await client.list_tools()
            for tool in tools.tools:
                print(f"  tool {tool.name}: {tool.description}", file=out)

            say("3. A tool call")
            result = await client.call_tool("order_status", {"order_id": "PT-1042"})
            print(f"  result: {_text(result)}", file=out)
            result = await client.call_tool("order_status", {"order_id": "PT-9"})
            print(f"  tool error (a result, not an exception): {_text(result)}", file=out)

            say("4. A long call with progress")

            def show(progress: Progress) -> None:
                print(
                    f"  progress {progress.progress:g}/{progress.total:g}: {progress.message}",
                    file=out,
                )

            result = await client.call_tool("scan", {"files": 3}, on_progress=show)
            print(f"  result: {_text(result)}", file=out)

            say("5. A call cancelled by the client while the server works on it")
            narrator.handler_started = trio.Event()
            with trio.CancelScope() as scope:
                nursery.start_soon(_cancel_when_running, narrator, scope)
                await client.call_tool("sleep", {"seconds": 30})
            await server_session.wait_inbound_settled()
            sleep_record = _last(server_session, "tools/call")
            print(
                f"  client: cancelled={scope.cancelled_caught}; server record: "
                f"{sleep_record.state.value}, origin {sleep_record.cancel_origin}, "
                "no response sent",
                file=out,
            )

            say("6. A call that times out (1 s without progress)")
            try:
                await client.call_tool("sleep", {"seconds": 30}, progress_idle_timeout=1.0)
            except RequestTimeout as exc:
                print(f"  RequestTimeout: {exc}", file=out)

            say("7. Ping")
            await client.ping()
            print("  pong", file=out)

            say("8. Shutdown: the client closes its end; the server sees end-of-input")
            client_records = client.session.requests()
        await server_session.wait_closed()
        print(f"  server session closed: {server_session.close_reason}", file=out)
        _records(out, "client requests", client_records)
        _records(out, "server requests", server_session.requests())
        print(f"\n  server statistics: {server_session.statistics()}", file=out)


async def _cancel_when_running(narrator: Narrator, scope: trio.CancelScope) -> None:
    # Cancel once the server's handler really runs, so the demo shows a
    # cancellation reaching a live handler (not one still queued).
    await narrator.handler_started.wait()
    scope.cancel(reason="the user pressed stop")


def _last(session: Session, method: str) -> RequestRecord:
    return [r for r in session.requests() if r.method == method][-1]


def _text(result: mcp_types.CallToolResult) -> str:
    return " ".join(
        block.text for block in result.content if isinstance(block, mcp_types.TextContent)
    )
