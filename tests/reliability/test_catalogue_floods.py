"""Notification floods of the robustness catalogue (reliability D-07): a peer
that floods notifications is read at the pace the session handles them (the
transport's bound holds the flood back, nothing piles up), no task is made
per notification, and a ping behind the flood is answered."""

from __future__ import annotations

import trio
import trio.testing
from helpers import open_raw_server

from trio_mcp import Server

FLOOD = 10_000


async def test_a_notification_flood_costs_no_task_and_a_ping_behind_it_is_answered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("flood")
    async with open_raw_server(server, buffer=16) as (peer, session):
        await peer.ping()
        baseline = len(_root().child_nurseries)
        tasks_before = _task_count()
        peak = 0

        async def flood() -> None:
            nonlocal peak
            for n in range(FLOOD):
                # Progress for tokens that name no request: ignored (C-14).
                await peer.notify(
                    "notifications/progress", {"progressToken": f"t{n}", "progress": n}
                )
                if n % 500 == 0:
                    peak = max(peak, _task_count())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(flood)
        reply = await peer.request("ping")
        assert reply["result"] == {}
        assert [f for f in peer.frames if "method" in f] == []  # nothing was answered
        stats = session.statistics()
        assert stats.ignored_events >= FLOOD
        assert peak <= tasks_before + 2  # the flood task itself, and nothing per frame
        assert len(_root().child_nurseries) == baseline


def _root() -> trio.lowlevel.Task:
    root = trio.lowlevel.current_root_task()
    assert root is not None
    return root


def _task_count() -> int:
    """Every task of this run."""
    count = 0
    stack = [_root()]
    while stack:
        task = stack.pop()
        count += 1
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return count
