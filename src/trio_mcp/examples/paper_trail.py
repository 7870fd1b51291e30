"""Paper Trail: an order-lookup MCP server over stdio.

Tools:

* ``order_status(order_id)``: status, carrier and ETA of an order; ids look
  like ``PT-NNNN`` (anything else is refused with a tool error; unknown
  arguments are refused by the input schema);
* ``sleep(seconds)``: waits, then says so (a slow tool for lifecycle demos:
  cancel it, or let it time out);
* ``prepare_report(steps)``: a long tool that reports progress after each step
  when the client asked for progress;
* ``return_order(order_id)``: books a return after asking the user to confirm
  it (an elicitation: a server request in the handshake era, an input-required
  round in 2026-07-28, where the handler runs again on the client's retry).

The server speaks both eras (a dual-era server); :func:`build_server` makes
one restricted to some protocol versions (the tests use a 2026-07-28-only and
a handshake-only Paper Trail).

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
from trio_mcp import types as mcp_types
from trio_mcp.protocol import ALL_VERSIONS

ORDERS = {
    "PT-1042": ("shipped", "Parcelforce", "2 Dec 2026"),
    "PT-2001": ("processing", None, "5 Dec 2026"),
    "PT-3300": ("delivered", "DPD", "28 Nov 2026"),
}

_ORDER_ID = re.compile(r"PT-\d{4}")

#: What ``return_order`` asks the user to fill in.
RETURN_FORM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "description": "book the return"}},
    "required": ["confirm"],
}


def _check_order(order_id: str) -> None:
    if not _ORDER_ID.fullmatch(order_id):
        raise trio_mcp.ToolError(f"order ids look like PT-NNNN, not {order_id!r}")
    if order_id not in ORDERS:
        raise trio_mcp.ToolError(f"no order {order_id}")


async def order_status(order_id: str) -> str:
    """Status, carrier and ETA of an order.

    Args:
        order_id: the order id, ``PT-`` and four digits (e.g. PT-1042).
    """
    _check_order(order_id)
    status, carrier, eta = ORDERS[order_id]
    return f"{order_id}: {status}, carrier {carrier or 'not assigned'}, ETA {eta}"


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


async def prepare_report(ctx: trio_mcp.Context, steps: int = 3) -> str:
    """Prepare the daily order report, reporting progress after each step.

    Args:
        steps: how many steps the report takes (each about 50 ms).
    """
    done = 0
    try:
        for done in range(1, steps + 1):
            await trio.sleep(0.05)
            await ctx.report_progress(done, total=steps, message=f"step {done}/{steps}")
    except trio.Cancelled:
        print(f"prepare_report: handler cancelled at step {done}", file=sys.stderr, flush=True)
        raise
    return f"report ready ({steps} steps, {len(ORDERS)} orders)"


async def return_order(ctx: trio_mcp.Context, order_id: str) -> str:
    """Book the return of an order, once the user confirms it.

    Args:
        order_id: the order id, ``PT-`` and four digits (e.g. PT-1042).
    """
    _check_order(order_id)
    if "elicitation" not in ctx.client_capabilities:
        # Said as a tool error in both eras, rather than a failed request.
        raise trio_mcp.ToolError(
            "return_order asks the user to confirm: the client must "
            "declare the elicitation capability"
        )
    print(f"return_order: run {ctx.round} for {order_id}", file=sys.stderr, flush=True)
    # In 2026-07-28 the handler runs once per round: ``ctx.saved`` (carried
    # in the signed requestState) remembers which round first asked.
    ctx.saved.setdefault("asked_in_round", ctx.round)
    answer = await ctx.elicit(
        {
            "mode": "form",
            "message": f"Return order {order_id}?",
            "requestedSchema": RETURN_FORM,
        }
    )
    if answer.action != "accept":
        return f"{order_id}: return not booked (the user chose {answer.action})"
    if not (answer.content or {}).get("confirm"):
        return f"{order_id}: return not booked (not confirmed)"
    return (
        f"{order_id}: return booked (asked in round {ctx.saved['asked_in_round']}, "
        f"answered in round {ctx.round})"
    )


TOOLS = (order_status, sleep, prepare_report, return_order)

#: The tools that change nothing: ``trio-mcp check`` calls only tools marked so
#: (or named on its command line), and a host may call them without asking.
READ_ONLY = {order_status, sleep, prepare_report}


def build_server(protocol_versions: Sequence[str] = ALL_VERSIONS) -> trio_mcp.Server:
    """A Paper Trail server speaking *protocol_versions* (default: both eras)."""
    paper_trail = trio_mcp.Server(
        "paper-trail",
        version="1.0",
        instructions="Look up Paper Trail orders by id (PT-NNNN).",
        protocol_versions=protocol_versions,
    )
    for tool in TOOLS:
        read_only = mcp_types.ToolAnnotations(read_only_hint=tool in READ_ONLY)
        paper_trail.add_tool(tool, annotations=read_only)
    return paper_trail


#: The dual-era server that ``python -m trio_mcp.examples.paper_trail`` runs.
server = build_server()


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
