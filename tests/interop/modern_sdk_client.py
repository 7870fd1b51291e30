"""A stdio client written with the official Python SDK (mcp 2.x), for modern-era interop.

Usage: python modern_sdk_client.py [--cancel=signal|timeout] COMMAND [ARG...]

Spawns COMMAND as a stdio server (with this process's environment) and connects
with ``Client(mode="auto")``: the SDK sends ``server/discover`` on the session's
own pipe first and adopts the 2026-07-28 era when the answer lists it, or falls
back to ``initialize`` on the same pipe (after -32601, any other error, or its
10 s probe timeout). Then it runs these steps, printing one JSON object per step
on stdout (``{"step": ..., ...}``):

``connect``  the negotiated era (``modern``/``legacy``) and protocol version.
``tools``    the sorted tool names.
``add``      the text of ``add(a=2, b=3)``.
``confirm``  the text of ``confirm(item="order-7")``; its elicitation handler
             answers accept ``{"ok": true}`` and the step lists the messages it
             was asked (the SDK runs the input-required rounds inside
             ``call_tool``).
``slow``     starts ``slow`` and cancels it. With ``--cancel=signal`` (the
             default) it waits for the server's ``slow started`` stderr line and
             then cancels the call's scope, so the SDK sends
             ``notifications/cancelled`` (reason "caller cancelled"); with
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
``closed``   the session and the server process are gone.

A step that fails prints ``{"step": ..., "error": ...}`` and the script exits 1;
a step the negotiated era cannot run prints ``{"step": ..., "unsupported": ...}``.
Exit 0 when every step ran. The server's stderr is read through a pipe; its
lines other than the ones awaited are copied to this script's stderr.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters, stdio_client
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


class StepFailed(Exception):
    """A step did not see what it expected."""


class Abort(Exception):
    """A step failed and has printed its error line; the script exits 1."""


def emit(step: str, **fields: Any) -> None:
    """Print one step's JSON line, flushed (the test reads lines as they come)."""
    print(json.dumps({"step": step, **fields}), flush=True)


class ServerLog:
    """The server's stderr lines, read in a worker thread from a pipe.

    ``wait_for`` returns once a line equal to *text* has been seen (earlier
    lines count). The reader thread ends at EOF, which comes when the server
    exits (this process's copy of the write end is closed after the spawn).
    """

    #: The lines the steps wait on; every other line is copied to our stderr.
    EVENTS = ("slow started", "slow cancelled")

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = os.fdopen(write_fd, "w")
        self._reader = os.fdopen(read_fd, "r")
        self._lines: list[str] = []
        self._changed = anyio.Event()

    async def run(self) -> None:
        """Read lines until EOF (cancelling this abandons the blocked thread)."""
        while True:
            line = await anyio.to_thread.run_sync(self._reader.readline, abandon_on_cancel=True)
            if not line:
                return
            text = line.rstrip("\n")
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


async def run_steps(params: StdioServerParameters, log: ServerLog, how: str) -> None:
    """Connect and run the steps (printing their lines); raise Abort on a failure."""
    asked: list[str] = []

    async def on_elicit(
        context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"ok": True})

    connected = False
    try:
        # The SDK's own read timeout bounds every request (the connect-time
        # fallback initialize included; the discover probe has its own 10 s).
        async with Client(
            stdio_client(params, errlog=log.writer),
            mode="auto",
            elicitation_callback=on_elicit,
            client_info=Implementation(name="modern-sdk-client", version="2.3.0"),
            read_timeout_seconds=STEP_BOUND,
        ) as client:
            connected = True
            # The server holds its own copy of the write end; ours would keep EOF away.
            log.writer.close()
            await run_connected(client, log, how, asked)
    except (MCPError, TimeoutError, RuntimeError, OSError) as error:
        if connected:
            raise
        emit("connect", error=f"{type(error).__name__}: {error}")
        raise Abort from error


async def run_connected(client: Client, log: ServerLog, how: str, asked: list[str]) -> None:
    """The steps after the connect (each bounded by STEP_BOUND)."""
    modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
    emit(
        "connect",
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
    how = "signal"
    if argv and argv[0].startswith("--cancel="):
        how = argv.pop(0).removeprefix("--cancel=")
    if how not in ("signal", "timeout") or not argv:
        print(__doc__, file=sys.stderr)
        return 2
    log = ServerLog()
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    failed = False
    async with anyio.create_task_group() as tg:
        tg.start_soon(log.run)
        try:
            await run_steps(params, log, how)
        except Abort:
            failed = True
        tg.cancel_scope.cancel()
    if failed:
        return 1
    emit("closed")
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv[1:]))
