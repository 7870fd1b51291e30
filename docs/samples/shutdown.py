"""Shutdown: what happens to a call still running when the session ends.

The host leaves its ``open_stdio_client`` block while a call is running (a
deadline on a scope around the whole session, here). The call is cancelled and the server is
told; then the client closes the server's stdin, and the server, seeing the end
of its input, cancels whatever still runs and exits. Every step is bounded.
"""

import sys
from pathlib import Path

import trio

from trio_mcp import open_stdio_client
from trio_mcp.transports import ProcessEvent

SERVER = str(Path(__file__).with_name("first_server.py"))


def on_event(event: ProcessEvent) -> None:
    if event.kind == "exited":
        print("server process: exited with status", event.returncode)
    elif event.kind != "spawned":
        print("server process:", event.kind)


async def main() -> None:
    with trio.CancelScope() as session_scope:
        async with open_stdio_client(sys.executable, [SERVER], on_event=on_event) as client:
            # Connected: give the whole session one more second.
            session_scope.deadline = trio.current_time() + 1.0
            print("calling count, which takes 10 s")
            await client.call_tool("count", {"to": 100})
    [call] = [r for r in client.session.requests() if r.method == "tools/call"]
    print("the call:", call.state.value, "by", call.cancel_origin.value)
    print("the session:", client.session.statistics().state.value)


trio.run(main)
