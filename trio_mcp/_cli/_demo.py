"""``trio-mcp demo``: a real client and server session, narrated from start to end.

The server is the bundled example :mod:`trio_mcp.examples.paper_trail`, spawned
as ``python -m trio_mcp.examples.paper_trail`` (a real subprocess, spoken to
over stdio), so the demo works from an installed wheel as from a checkout.
Every frame the client writes and reads is printed with its direction and time
since the start, the server's stderr lines are shown as they arrive, and each
lifecycle step says what happened: the handshake and version negotiation,
discovery, a tool call, a long call with progress, a call cancelled by the
client (the server's handler stops and no response is sent), a call that times
out, ping, and the shutdown of the process.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO

import trio

from .. import types as mcp_types
from .._client._connect import open_stdio_client
from .._errors import RequestTimeout
from ..protocol import Progress, RequestRecord
from ..transports import ProcessEvent, StdioProcess
from ..transports._stdio_client import describe_returncode
from ._errors import CommandError
from ._trace import FramePrinter, print_records

#: The module the demo runs as its server unless told otherwise.
DEMO_SERVER_MODULE = "trio_mcp.examples.paper_trail"

#: The directory that holds the running ``trio_mcp`` package (a checkout or
#: site-packages): put on the server's path so it imports this same trio_mcp.
_IMPORT_ROOT = Path(__file__).resolve().parents[2]


def server_command(server: Path | None = None) -> list[str]:
    """The demo server's argv: the bundled module, or the script *server*.

    Raises:
        CommandError: *server* is not a file.
    """
    if server is None:
        return [sys.executable, "-m", DEMO_SERVER_MODULE]
    if not server.is_file():
        raise CommandError(f"the demo server {server} does not exist (--server)")
    return [sys.executable, str(server)]


async def run_demo(
    out: TextIO | None = None, *, server: Path | None = None, width: int | None = 110
) -> None:
    """Run the narrated lifecycle demo against *server* (default: the bundled
    :mod:`trio_mcp.examples.paper_trail`).

    Raises:
        CommandError: *server* is not a file (nothing is spawned).

    Cancellation: the server process is shut down (bounded) whatever happens.

    Spec: SI-01, SI-03 (the server's stderr log is shown), CN-01, TO-02.
    """
    command = server_command(server)
    out = sys.stdout if out is None else out
    start = trio.current_time()
    printer = FramePrinter(out, start=start, label="client", width=width)
    cancelled_in_server = trio.Event()

    def say(text: str) -> None:
        print(f"\n== {text}", file=out)

    def on_stderr(line: str) -> None:
        print(f"  {trio.current_time() - start:8.3f}s server stderr: {line}", file=out)
        if "handler cancelled" in line:
            cancelled_in_server.set()

    def on_event(event: ProcessEvent) -> None:
        extra = f" ({describe_returncode(event.returncode)})" if event.kind == "exited" else ""
        print(f"  {event.at - start:8.3f}s process {event.pid}: {event.kind}{extra}", file=out)

    say(f"0. Spawn the server: {' '.join(command)} (own process group, no shell)")
    # The child gets the safe default environment plus where trio_mcp lives,
    # so the demo works from a checkout without an install too.
    paths = [str(_IMPORT_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {"PYTHONPATH": os.pathsep.join(paths)}
    async with open_stdio_client(
        command[0],
        command[1:],
        env=env,
        stderr=on_stderr,
        on_event=on_event,
        observer=printer,
        name="demo-host",
        version="1.0",
    ) as client:
        transport = client.session.transport
        assert isinstance(transport, StdioProcess)
        say("1. Handshake: initialize -> result -> notifications/initialized (above)")
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
            print(f"  tool {tool.name}: {(tool.description or '').splitlines()[0]}", file=out)

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

        result = await client.call_tool("prepare_report", {"steps": 3}, on_progress=show)
        print(f"  result: {_text(result)}", file=out)

        say("5. A call cancelled by the client while the server works on it")
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_press_stop, scope, 0.3)
                await client.call_tool("sleep", {"seconds": 30})
        with trio.move_on_after(5):
            await cancelled_in_server.wait()  # the server's own stderr says so
        sleep_record = _last(client.session.requests(), "tools/call")
        print(
            f"  client: cancelled={scope.cancelled_caught}; record {sleep_record.id}: "
            f"{sleep_record.state.value}, origin {sleep_record.cancel_origin}; "
            f"server handler stopped: {cancelled_in_server.is_set()}",
            file=out,
        )

        say("6. A call that times out (1 s without progress)")
        try:
            await client.call_tool("sleep", {"seconds": 30}, progress_idle_timeout=1.0)
        except RequestTimeout as exc:
            print(f"  RequestTimeout: {exc}", file=out)

        say("7. Ping (its answer comes after anything the server sent before it)")
        await client.ping()
        print("  pong", file=out)
        late = [r for r in client.session.requests() if r.late_events]
        print(
            f"  responses that arrived for cancelled requests: {len(late)} (the server sent none)",
            file=out,
        )

        say("8. Shutdown: close the server's stdin; it exits on end of input")
        records = client.session.requests()
    step = transport.exit_step.value if transport.exit_step else "unknown"
    print(f"  server process {transport.pid}: {step}", file=out)
    print_records(out, "client requests", records, start)
    print(f"\n  client statistics: {client.session.statistics()}", file=out)


async def _press_stop(scope: trio.CancelScope, after: float) -> None:
    await trio.sleep(after)
    scope.cancel(reason="the user pressed stop")


def _last(records: list[RequestRecord], method: str) -> RequestRecord:
    return [r for r in records if r.method == method][-1]


def _text(result: mcp_types.CallToolResult) -> str:
    return " ".join(
        block.text for block in result.content if isinstance(block, mcp_types.TextContent)
    )
