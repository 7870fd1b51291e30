"""Our server for the modern-era interop tests (test_modern_interop.py over stdio,
test_http_modern_interop.py over Streamable HTTP).

Usage: python modern_trio_server.py [--http] [--versions=V[,V...]]

A :class:`trio_mcp.Server` served with :func:`trio_mcp.run_stdio`, or with
``--http`` with :func:`trio_mcp.serve_http` on 127.0.0.1, port 0: it then
prints its endpoint's URL (``http://127.0.0.1:PORT/mcp``) as the one line of
its stdout and serves until its stdin ends (or it is killed). It is dual-era
by default: over stdio the client's opening decides, so ``server/discover``
(or any request carrying the 2026-07-28 ``_meta`` envelope) makes the
connection 2026-07-28, and ``initialize`` the 2025 one (VR-08, VR-09); over
HTTP one endpoint serves handshake sessions and stateless 2026-07-28 POSTs.
``--versions`` sets ``protocol_versions`` (``2025-11-25``: a legacy-only
server; ``2026-07-28``: a modern-only one, which refuses ``initialize`` with
-32022 and answers GET and DELETE with 405, HM-31). It offers what the peer
clients (modern_sdk_client.py, ts_v2_modern_client.mjs) expect:

* ``add(a, b)`` returns ``a + b``.
* ``slow()`` writes ``slow started`` to stderr, then sleeps for an hour; when
  the client cancels the call (``notifications/cancelled``, CN-01; over HTTP in
  2026-07-28, by closing the call's response stream, HM-13) the handler gets
  :class:`trio.Cancelled` and writes ``slow cancelled`` before it propagates.
* ``confirm(item)`` asks for a form elicitation ``{"ok": boolean}`` with
  ``ctx.elicit``. In 2026-07-28 that ends the first round with an
  ``InputRequiredResult`` (PT-03) and the handler runs again on the client's
  retry, where ``ctx.elicit`` returns the answer; in 2025 it is an
  ``elicitation/create`` request. ``confirmed <item>`` when the answer was
  accept with ``ok`` true, ``declined`` otherwise.
* ``grow()`` registers a new tool (``grown1``, ``grown2``, ...) and returns its
  name; the registry then tells every listener that the tool list changed
  (``notifications/tools/list_changed`` on each 2026-07-28
  ``subscriptions/listen`` stream that asked for it, SB-01; on the session in
  2025).

Its stderr carries only those event lines, each written whole and flushed (the
peers wait on them), so the session's own logging is left at its default
(warnings and up, which a passing run does not produce).
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Sequence

import trio

import trio_mcp
from trio_mcp.protocol import ALL_VERSIONS


def protocol_versions(argv: Sequence[str]) -> tuple[str, ...]:
    """The ``--versions=`` of *argv* (comma-separated), or every revision."""
    for arg in argv:
        if arg.startswith("--versions="):
            return tuple(arg.removeprefix("--versions=").split(","))
    return ALL_VERSIONS


server = trio_mcp.Server(
    "modern-trio-server", version="1.0", protocol_versions=protocol_versions(sys.argv[1:])
)

#: How long ``slow`` sleeps when nobody cancels it.
SLOW_SECONDS = 3600.0
_grown = itertools.count(1)


def report(line: str) -> None:
    """Write one event line to stderr, flushed at once so a waiting peer sees it."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


@server.tool()
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def slow() -> str:
    """Sleep for an hour; report the start and a cancellation on stderr.

    Cancellation: the client's ``notifications/cancelled`` cancels this
    request's scope; the handler reports it and re-raises.
    """
    report("slow started")
    try:
        await trio.sleep(SLOW_SECONDS)
    except trio.Cancelled:
        report("slow cancelled")
        raise
    return "slept"


@server.tool()
async def confirm(item: str, ctx: trio_mcp.Context) -> str:
    """Ask the client to confirm *item* (a form elicitation with one boolean, ``ok``).

    Nothing is done before the question, so a second run (the 2026-07-28
    retry) repeats nothing.

    Cancellation: in 2026-07-28 the unanswered first round ends the request
    with the input-required result (``ctx.elicit`` never returns there).
    """
    answer = await ctx.elicit(
        {
            "message": f"Confirm {item}?",
            "requestedSchema": {
                "type": "object",
                "properties": {"ok": {"type": "boolean"}},
                "required": ["ok"],
            },
        }
    )
    accepted = answer.action == "accept" and (answer.content or {}).get("ok") is True
    return f"confirmed {item}" if accepted else "declined"


@server.tool()
async def grow() -> str:
    """Register one more tool; the registry announces the changed list."""
    name = f"grown{next(_grown)}"

    async def grown() -> str:
        return f"{name} here"

    server.add_tool(grown, name=name, description="A tool added by grow().")
    return name


async def serve_http_until_stdin_ends() -> None:
    """Serve over HTTP, print the URL, and stop once stdin reaches its end.

    Cancellation: stopping ``serve_http`` closes the listener and ends every
    session (bounded), so the process exits soon after its stdin closes.
    """
    async with trio.open_nursery() as nursery:
        base: str = await nursery.start(trio_mcp.serve_http, server)
        print(f"{base}/mcp", flush=True)
        stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
        async with stdin:
            while await stdin.receive_some():
                pass
        nursery.cancel_scope.cancel()


if __name__ == "__main__":
    if "--http" in sys.argv[1:]:
        trio.run(serve_http_until_stdin_ends)
    else:
        trio_mcp.run_stdio(server)
