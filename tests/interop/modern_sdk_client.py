"""A client written with the official Python SDK (mcp 2.x), for modern-era interop.

Usage: python modern_sdk_client.py [--mode=auto|pin] [--cancel=signal|timeout] COMMAND [ARG...]
       python modern_sdk_client.py [--mode=auto|pin] [--cancel=signal|timeout] --http URL

Over stdio it spawns COMMAND as a stdio server (with this process's
environment); with ``--http`` it uses the SDK's Streamable HTTP client on URL
(``Client(URL)``). It connects with ``Client(mode="auto")``: the SDK sends
``server/discover`` first (over stdio on the session's own pipe, over HTTP as
a POST carrying the 2026-07-28 ``_meta`` envelope and its
``MCP-Protocol-Version: 2026-07-28`` header) and adopts the 2026-07-28 era
when the answer lists it, or falls back to ``initialize`` (after -32601, any
other error, its 10 s probe timeout over stdio, or over HTTP an error status
whose body is not a -32022 naming only modern revisions). ``--mode=pin`` is
``Client(mode="2026-07-28")`` instead: no probe, no fallback (a modern-only
client).

The server's event lines (``slow started``, ``slow cancelled``) come from
COMMAND's stderr over stdio; over HTTP the server is not ours to spawn, so
they are read from this script's stdin (the test copies the server's stderr
lines there). Then it runs these steps, printing one JSON object per step on
stdout (``{"step": ..., ...}``):

``connect``  the mode, the negotiated era (``modern``/``legacy``) and protocol version.
``tools``    the sorted tool names.
``add``      the text of ``add(a=2, b=3)``.
``confirm``  the text of ``confirm(item="order-7")``; its elicitation handler
             answers accept ``{"ok": true}`` and the step lists the messages it
             was asked (the SDK runs the input-required rounds inside
             ``call_tool``).
``slow``     starts ``slow`` and cancels it. With ``--cancel=signal`` (the
             default) it waits for the server's ``slow started`` line and
             then cancels the call's scope, so the SDK sends
             ``notifications/cancelled`` (reason "caller cancelled"; over HTTP
             in 2026-07-28 the SDK instead closes the call's POST, HM-13); with
             ``--cancel=timeout`` it calls with the SDK's per-request
             ``read_timeout_seconds`` instead, which raises REQUEST_TIMEOUT and
             sends ``notifications/cancelled`` (reason "timed out after ...").
             ``stopped`` is whether the server then wrote ``slow cancelled``
             (waited for up to 10 s).
``listen``   opens ``subscriptions/listen`` for tools changes, calls ``grow``,
             waits for the ``ToolsListChanged`` event, lists the tools again and
             leaves the subscription (the SDK sends ``notifications/cancelled``
             for the listen request).
``after-listen`` the text of ``add(a=1, b=1)``, so the cancel is written first.
``closed``   the client is closed (over stdio: the server process is gone too).
             Over HTTP it lists ``exchanges``, one per HTTP request in the order
             they were sent (the SDK's ``httpx2`` client, with event hooks):
             ``[HTTP method, JSON-RPC method (a tools/call with the tool's name;
             null: no body; "(response)": a JSON-RPC response), status (null:
             no response head came), whether the response carried an
             Mcp-Session-Id]``.

A step that fails prints ``{"step": ..., "error": ...}`` and the script exits 1;
a step the negotiated era cannot run prints ``{"step": ..., "unsupported": ...}``.
Exit 0 when every step ran. The server's event lines other than the ones
awaited are copied to this script's stderr, prefixed with ``[server]``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TextIO

import anyio
import anyio.from_thread
import anyio.lowlevel
import httpx2
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types import (
    REQUEST_TIMEOUT,
    CallToolResult,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    Implementation,
    TextContent,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

#: Bound on any one step (a loaded machine; nothing here should take more than ms).
STEP_BOUND = 30.0
#: How long to wait for the server's "slow cancelled" line after cancelling.
CANCEL_REACHED_BOUND = 10.0
#: The per-request timeout used by --cancel=timeout.
SLOW_TIMEOUT = 0.5
#: The revision ``--mode=pin`` adopts without a probe.
MODERN = "2026-07-28"


class StepFailed(Exception):
    """A step did not see what it expected."""


class Abort(Exception):
    """A step failed and has printed its error line; the script exits 1."""


def emit(step: str, **fields: Any) -> None:
    """Print one step's JSON line, flushed (the test reads lines as they come)."""
    print(json.dumps({"step": step, **fields}), flush=True)


class ServerLog:
    """The server's event lines, read in a worker thread.

    Over stdio they come from a pipe that is the server's stderr
    (:attr:`writer`, handed to the SDK's spawn), over HTTP from *source* (our
    stdin, where the test copies the server's stderr lines).

    ``wait_for`` returns once a line equal to *text* has been seen (earlier
    lines count). The reader thread ends at EOF, which over stdio comes when the
    server exits (this process's copy of the write end is closed after the
    spawn), over HTTP when the test closes our stdin.
    """

    #: The lines the steps wait on; every other line is copied to our stderr.
    EVENTS = ("slow started", "slow cancelled")

    def __init__(self, source: TextIO | None = None) -> None:
        self.writer: TextIO | None = None
        if source is None:
            read_fd, write_fd = os.pipe()
            self.writer = os.fdopen(write_fd, "w")
            source = os.fdopen(read_fd, "r")
        self._reader = source
        self._lines: list[str] = []
        self._changed = anyio.Event()

    async def run(self) -> None:
        """Read lines until EOF, in a daemon thread: cancelling this abandons the
        thread, which cannot then keep the process from exiting (our stdin, over
        HTTP, ends only after we exit)."""
        token = anyio.lowlevel.current_token()
        ended = anyio.Event()

        def read_lines() -> None:
            try:
                for line in self._reader:
                    anyio.from_thread.run_sync(self._add, line.rstrip("\n"), token=token)
                anyio.from_thread.run_sync(ended.set, token=token)
            except RuntimeError:
                return  # the event loop is gone: nobody is waiting any more

        threading.Thread(target=read_lines, name="server log", daemon=True).start()
        await ended.wait()

    def _add(self, text: str) -> None:
        self._lines.append(text)
        if text not in self.EVENTS:
            print(f"[server] {text}", file=sys.stderr, flush=True)
        self._changed.set()
        self._changed = anyio.Event()

    def seen(self, text: str) -> bool:
        """Whether the server has written the line *text*."""
        return text in self._lines

    async def wait_for(self, text: str) -> None:
        """Return once the server has written the line *text*."""
        while not self.seen(text):
            await self._changed.wait()


class Exchanges:
    """What the SDK's HTTP client sent and got: one entry per request, in the
    order they were sent, completed when the response head arrives."""

    def __init__(self) -> None:
        self.seen: list[list[Any]] = []
        self._pending: dict[int, list[Any]] = {}

    async def on_request(self, request: httpx2.Request) -> None:
        label: str | None = None
        if request.method == "POST":
            body = json.loads(request.content)
            if not isinstance(body, dict):
                label = "(batch)"
            elif "method" not in body:
                label = "(response)"
            else:
                label = body["method"]
                if label == "tools/call":
                    label += f" {body['params']['name']}"
        entry: list[Any] = [request.method, label, None, False]
        self.seen.append(entry)
        self._pending[id(request)] = entry

    async def on_response(self, response: httpx2.Response) -> None:
        entry = self._pending.pop(id(response.request))
        entry[2] = response.status_code
        entry[3] = "mcp-session-id" in response.headers


def text_of(result: CallToolResult) -> str:
    """The text of a tool result's first content block."""
    block = result.content[0] if result.content else None
    if not isinstance(block, TextContent):
        raise StepFailed(f"expected a text result, got {result.content!r}")
    return block.text


@asynccontextmanager
async def step(name: str) -> AsyncIterator[None]:
    """Bound one step by STEP_BOUND; turn its failure into an error line and Abort."""
    try:
        with anyio.fail_after(STEP_BOUND):
            yield
    except (StepFailed, MCPError, TimeoutError, RuntimeError) as error:
        emit(name, error=f"{type(error).__name__}: {error}")
        raise Abort from error


async def run_slow(client: Client, log: ServerLog, how: str) -> None:
    """Start ``slow`` and cancel it (see the module docstring for the two ways)."""
    if how == "signal":
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "slow", {})
                await log.wait_for("slow started")
                # Cancelling the caller's scope is the SDK's cancel: its dispatcher
                # writes notifications/cancelled for the in-flight request.
                scope.cancel()
        outcome = "cancelled" if scope.cancelled_caught else "completed"
    else:
        try:
            await client.call_tool("slow", {}, read_timeout_seconds=SLOW_TIMEOUT)
            outcome = "completed"
        except MCPError as error:
            if error.code != REQUEST_TIMEOUT:
                raise
            outcome = f"timed out ({error.code})"
    with anyio.move_on_after(CANCEL_REACHED_BOUND):
        await log.wait_for("slow cancelled")
    emit("slow", cancel=how, outcome=outcome, stopped=log.seen("slow cancelled"))
    if not log.seen("slow cancelled"):
        raise Abort


@asynccontextmanager
async def http_transport(url: str, exchanges: Exchanges) -> AsyncIterator[Any]:
    """The SDK's Streamable HTTP client on *url*, on an httpx2 client like its
    default one (30 s, 300 s to read a stream) that records every response."""
    async with (
        httpx2.AsyncClient(
            timeout=httpx2.Timeout(30.0, read=300.0),
            event_hooks={"request": [exchanges.on_request], "response": [exchanges.on_response]},
        ) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


async def run_steps(
    target: StdioServerParameters | str,
    log: ServerLog,
    mode: str,
    how: str,
    exchanges: Exchanges | None,
) -> None:
    """Connect to *target* (stdio parameters or an HTTP URL) in *mode* and run the
    steps (printing their lines); raise Abort on a failure. Over HTTP the
    responses are recorded in *exchanges*."""
    asked: list[str] = []

    async def on_elicit(
        context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"ok": True})

    connected = False
    if isinstance(target, str):
        assert exchanges is not None
        server: Any = http_transport(target, exchanges)
    else:
        assert log.writer is not None
        server = stdio_client(target, errlog=log.writer)
    try:
        # The SDK's own read timeout bounds every request (the connect-time
        # fallback initialize included; the discover probe has its own 10 s).
        async with Client(
            server,
            mode="auto" if mode == "auto" else MODERN,
            elicitation_callback=on_elicit,
            client_info=Implementation(name="modern-sdk-client", version="2.3.0"),
            read_timeout_seconds=STEP_BOUND,
        ) as client:
            connected = True
            if log.writer is not None:
                # The server holds its own copy of the write end; ours would keep EOF away.
                log.writer.close()
            await run_connected(client, log, mode, how, asked)
    except (MCPError, TimeoutError, RuntimeError, OSError, httpx2.HTTPError) as error:
        if connected:
            raise
        emit("connect", error=f"{type(error).__name__}: {error}")
        raise Abort from error


async def run_connected(
    client: Client, log: ServerLog, mode: str, how: str, asked: list[str]
) -> None:
    """The steps after the connect (each bounded by STEP_BOUND)."""
    modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
    emit(
        "connect",
        mode=mode,
        era="modern" if modern else "legacy",
        protocolVersion=client.protocol_version,
        server=client.server_info.name if client.server_info else None,
    )
    async with step("tools"):
        tools = await client.list_tools()
        emit("tools", names=sorted(tool.name for tool in tools.tools))
    async with step("add"):
        emit("add", text=text_of(await client.call_tool("add", {"a": 2, "b": 3})))
    async with step("confirm"):
        result = await client.call_tool("confirm", {"item": "order-7"})
        emit("confirm", text=text_of(result), asked=asked)
    async with step("slow"):
        await run_slow(client, log, how)
    if not modern:
        emit("listen", unsupported="subscriptions/listen needs the 2026-07-28 era")
        return
    async with step("listen"), client.listen(tools_list_changed=True) as sub:
        honored = sub.honored.model_dump(by_alias=True, exclude_none=True)
        grown = text_of(await client.call_tool("grow", {}))
        event = await sub.__anext__()
        if not isinstance(event, ToolsListChanged):
            raise StepFailed(f"expected ToolsListChanged, got {event!r}")
        tools = await client.list_tools(cache_mode="refresh")
        emit(
            "listen",
            honored=honored,
            grew=grown,
            event=type(event).__name__,
            tools=sorted(tool.name for tool in tools.tools),
        )
    async with step("after-listen"):
        # A round trip after leaving the subscription: the SDK writes the listen
        # request's notifications/cancelled from its driver task, which only runs
        # once this task yields; without it the close could overtake that write.
        emit("after-listen", text=text_of(await client.call_tool("add", {"a": 1, "b": 1})))


async def main(argv: list[str]) -> int:
    how, mode = "signal", "auto"
    while argv and argv[0].startswith(("--cancel=", "--mode=")):
        option = argv.pop(0)
        if option.startswith("--cancel="):
            how = option.removeprefix("--cancel=")
        else:
            mode = option.removeprefix("--mode=")
    http = bool(argv) and argv[0] == "--http"
    if (
        how not in ("signal", "timeout")
        or mode not in ("auto", "pin")
        or not argv
        or (http and len(argv) != 2)
    ):
        print(__doc__, file=sys.stderr)
        return 2
    target: StdioServerParameters | str
    exchanges: Exchanges | None = None
    if http:
        log = ServerLog(sys.stdin)
        target = argv[1]
        exchanges = Exchanges()
    else:
        log = ServerLog()
        target = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    failed = False
    async with anyio.create_task_group() as tg:
        tg.start_soon(log.run)
        try:
            await run_steps(target, log, mode, how, exchanges)
        except Abort:
            failed = True
        tg.cancel_scope.cancel()
    if failed:
        return 1
    if exchanges is None:
        emit("closed")
    else:
        emit("closed", exchanges=exchanges.seen)
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv[1:]))
