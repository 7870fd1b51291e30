"""A stdio server written with the official Python SDK (mcp 2.x), for modern-era interop.

Usage: python modern_sdk_server.py

``MCPServer.run("stdio")`` serves both protocol eras on one stdio connection and
the client's first request decides which: a request carrying the 2026-07-28
``_meta`` envelope (``server/discover``, or any other enveloped request) pins the
connection to the modern era, where ``initialize`` is then refused with -32022.
The SDK has no switch to refuse the 2025 handshake on stdio; a legacy client is
served as before, but ``confirm`` and the subscription need the modern era.

Tools:

* ``add(a, b)`` returns ``a + b``.
* ``slow()`` writes ``slow started`` to stderr, then sleeps for an hour; when the
  client cancels the call (``notifications/cancelled``) the SDK cancels the
  handler and it writes ``slow cancelled`` before the cancellation propagates.
* ``confirm(item)`` asks the client for a form elicitation ``{"ok": boolean}``
  through the input-required round: the first call returns an
  ``InputRequiredResult`` with one input request under the key ``ok``; the retry
  carries ``inputResponses.ok`` and gets ``confirmed <item>`` when the answer was
  accept with ``ok`` true, ``declined`` otherwise.
* ``grow()`` registers a new tool (``grown1``, ``grown2``, ...) and publishes a
  tools list-changed event, which every open ``subscriptions/listen`` stream that
  asked for tools changes receives as ``notifications/tools/list_changed``.

Every line this script writes to stderr is a plain event line (the peers and
tests wait on them); nothing else of its own goes to stderr.
"""

from __future__ import annotations

import itertools
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
)

server = MCPServer("modern-sdk-server", version="2.3.0")

#: How long ``slow`` sleeps when nobody cancels it.
SLOW_SECONDS = 3600.0
#: The key of confirm's one input request (echoed back in ``inputResponses``).
CONFIRM_KEY = "ok"
_grown = itertools.count(1)


def report(line: str) -> None:
    """Write one event line to stderr, flushed at once so a waiting peer sees it."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def slow() -> str:
    """Sleep for an hour; report the start and a cancellation on stderr."""
    report("slow started")
    try:
        await anyio.sleep(SLOW_SECONDS)
    except anyio.get_cancelled_exc_class():
        report("slow cancelled")
        raise
    return "slept"


@server.tool()
async def confirm(item: str, ctx: Context) -> str | InputRequiredResult:
    """Ask the client to confirm *item* (a form elicitation with one boolean, ``ok``).

    The first round returns the input request; the retry reads the answer from
    ``ctx.input_responses``. Nothing is kept between the rounds: the item comes
    back in the retried call's arguments, so no ``requestState`` is needed.
    """
    answer = (ctx.input_responses or {}).get(CONFIRM_KEY)
    if answer is None:
        return InputRequiredResult(
            input_requests={
                CONFIRM_KEY: ElicitRequest(
                    params=ElicitRequestFormParams(
                        message=f"Confirm {item}?",
                        requested_schema={
                            "type": "object",
                            "properties": {"ok": {"type": "boolean"}},
                            "required": ["ok"],
                        },
                    )
                )
            }
        )
    accepted = (
        isinstance(answer, ElicitResult)
        and answer.action == "accept"
        and (answer.content or {}).get("ok") is True
    )
    return f"confirmed {item}" if accepted else "declined"


@server.tool()
async def grow(ctx: Context) -> str:
    """Register one more tool and tell the listen streams that the tool list changed."""
    name = f"grown{next(_grown)}"

    def grown() -> str:
        return f"{name} here"

    server.add_tool(grown, name=name, description="A tool added by grow().")
    await ctx.notify_tools_changed()
    return name


if __name__ == "__main__":
    server.run("stdio")
