"""Paper Trail: an order-lookup MCP server over stdio.

Tools:

* ``order_status(order_id)``: status, carrier and ETA of an order; ids look
  like ``PT-NNNN`` (anything else is refused with a tool error; unknown
  arguments are refused by the input schema);
* ``sleep(seconds)``: waits, then says so (a slow tool for lifecycle demos:
  cancel it, or let it time out);
* ``prepare_report(steps)``: a long tool that reports progress after each step
  when the client asked for progress.

It ships inside the package because ``trio-mcp demo`` spawns it. Run it:
``python -m trio_mcp.examples.paper_trail`` (it speaks MCP on stdin/stdout; try
``trio-mcp trace -- python -m trio_mcp.examples.paper_trail``), or with
``--http HOST:PORT`` to serve Streamable HTTP at ``/mcp``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

import trio

import trio_mcp
from trio_mcp import parse_http_option

ORDERS = {
    "PT-1042": ("shipped", "Parcelforce", "2 Dec 2026"),
    "PT-2001": ("processing", None, "5 Dec 2026"),
    "PT-3300": ("delivered", "DPD", "28 Nov 2026"),
}

_ORDER_ID = re.compile(r"PT-\d{4}")

server = trio_mcp.Server(
    "paper-trail", version="1.0", instructions="Look up Paper Trail orders by id (PT-NNNN)."
)


@server.tool()
async def order_status(order_id: str) -> str:
    """Status, carrier and ETA of an order.

    Args:
        order_id: the order id, ``PT-`` and four digits (e.g. PT-1042).
    """
    if not _ORDER_ID.fullmatch(order_id):
        raise trio_mcp.ToolError(f"order ids look like PT-NNNN, not {order_id!r}")
    if order_id not in ORDERS:
        raise trio_mcp.ToolError(f"no order {order_id}")
    status, carrier, eta = ORDERS[order_id]
    return f"{order_id}: {status}, carrier {carrier or 'not assigned'}, ETA {eta}"


@server.tool()
async def sleep(seconds: float) -> str:
    """Wait for *seconds*, then say so.

    Args:
        seconds: how long to wait.
    """
    started = trio.current_time()
    try:
        await trio.sleep(seconds)
    except trio.Cancelled:
        # stderr is the server's log (SI-03); the demo shows this line.
        elapsed = trio.current_time() - started
        print(f"sleep: handler cancelled after {elapsed:.3f}s", file=sys.stderr, flush=True)
        raise
    return f"slept {seconds:g}s"


@server.tool()
async def prepare_report(ctx: trio_mcp.Context, steps: int = 3) -> str:
    """Prepare the daily order report, reporting progress after each step.

    Args:
        steps: how many steps the report takes (each about 50 ms).
    """
    for done in range(1, steps + 1):
        await trio.sleep(0.05)
        await ctx.report_progress(done, total=steps, message=f"step {done}/{steps}")
    return f"report ready ({steps} steps, {len(ORDERS)} orders)"


def main(argv: Sequence[str] | None = None) -> None:
    """Serve Paper Trail over stdio, or over Streamable HTTP at ``/mcp`` with
    ``--http HOST:PORT`` (*argv* defaults to the command line).

    Returns on stdin EOF, SIGTERM or Ctrl+C (stdio), on Ctrl+C (HTTP).
    """
    _, http = parse_http_option(sys.argv[1:] if argv is None else argv)
    if http:
        server.run_http(*http)
    else:
        server.run_stdio()


if __name__ == "__main__":
    main()
