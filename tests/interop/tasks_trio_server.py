"""Our stdio server with task tools, for the TypeScript SDK v1 client of
test_ts_tasks_interop.py (``ts_tasks_client.mjs``).

Usage: python tasks_trio_server.py

A :class:`trio_mcp.Server` with a :class:`~trio_mcp.tasks.TaskRunner` that
suggests polling every 20 ms, and 2025-11-25's ``tasks/list`` offered (one
client per process over stdio: the only requestor there is, so listing
exposes nobody else's tasks, TK-18). Served with :func:`trio_mcp.run_stdio`
until stdin ends. Its tools:

* ``gated(label)`` (``task_support="optional"``) waits until ``open_gate`` is
  called, then returns ``<label> passed the gate``: the peer sees it
  ``working`` for as long as it keeps the gate shut.
* ``open_gate()`` (a plain tool) opens the gate for good.
* ``sift(n)`` (``task_support="required"``) returns ``sifted <n>``.
* ``sour()`` (``"optional"``) fails with a tool error (``curdled``): its task
  fails (TK-17).
* ``confirm(item)`` (``"optional"``) asks the client to confirm *item* (a form
  elicitation with one boolean, ``ok``): inside a task that request is tagged
  with the task and the task is ``input_required`` until it is answered
  (TK-09, TK-13); ``confirmed <item>`` when accepted with ``ok`` true,
  ``declined`` otherwise.
* ``stall()`` (``"optional"``) writes ``stall started`` to stderr and waits
  for ever; when its task is cancelled the handler gets
  :class:`trio.Cancelled` and writes ``stall cancelled`` before it propagates.

Its stderr carries only those lines, each written whole and flushed (the
peer waits on them).
"""

from __future__ import annotations

import sys

import trio

import trio_mcp
from trio_mcp.tasks import TaskRunner

server = trio_mcp.Server(
    "trio-tasks", version="1.0", tasks=TaskRunner(poll_interval_ms=20), task_list=True
)
gate = trio.Event()


def report(line: str) -> None:
    """Write one event line to stderr, flushed at once so a waiting peer sees it."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


@server.tool(task_support="optional")
async def gated(label: str) -> str:
    """Wait until the gate is opened."""
    await gate.wait()
    return f"{label} passed the gate"


@server.tool()
async def open_gate() -> str:
    """Open the gate for every gated call, now and later."""
    gate.set()
    return "open"


@server.tool(task_support="required")
async def sift(n: int) -> str:
    """Sift (only ever as a task)."""
    return f"sifted {n}"


@server.tool(task_support="optional")
async def sour() -> str:
    """Fail with a tool error."""
    raise trio_mcp.ToolError("curdled")


@server.tool(task_support="optional")
async def confirm(item: str, ctx: trio_mcp.Context) -> str:
    """Ask the client to confirm *item*."""
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


@server.tool(task_support="optional")
async def stall() -> str:
    """Wait until cancelled."""
    report("stall started")
    try:
        await trio.sleep_forever()
    except trio.Cancelled:
        report("stall cancelled")
        raise


if __name__ == "__main__":
    trio_mcp.run_stdio(server)
