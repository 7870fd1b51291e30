"""Asking the user, in both eras, with a handler that may run twice.

In 2026-07-28 the server cannot send requests. When ``order`` asks the user,
the call ends at once with an *input-required* result; the client asks its
``elicitation`` handler, then retries the call with the answer, and the
handler runs again from the start. ``ctx.saved`` (carried, signed, in
``requestState``) keeps the order from being placed twice.
"""

import itertools

import trio

from trio_mcp import Context, FormElicitation, Server, types
from trio_mcp.testing import open_memory_client

server = Server("shop")
order_ids = itertools.count(1)


def place_order(item: str) -> int:
    number = next(order_ids)
    print(f"  server: placed order {number} for {item}")
    return number


@server.tool()
async def order(item: str, ctx: Context) -> str:
    """Order an item, once the user confirms."""
    print("  server: the handler runs")
    if "order_id" not in ctx.saved:  # placed once, however many rounds
        ctx.saved["order_id"] = place_order(item)
    answer = await ctx.elicit(
        {
            "mode": "form",
            "message": f"Buy {item}?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
        }
    )
    return "bought" if answer.action == "accept" else "cancelled"


async def confirm(request: FormElicitation) -> types.ElicitResult:
    print("  client: asked:", request.message)
    return types.ElicitResult(action="accept", content={"ok": True})


async def main() -> None:
    for era in ("legacy", "modern"):
        print(f"era={era}")
        async with open_memory_client(server, era=era, elicitation=confirm) as client:
            result = await client.call_tool("order", {"item": "a lamp"})
            print("  client: result:", result.content[0].text)


trio.run(main)
