"""The shape of an idle handshake-era Streamable HTTP session, over real HTTP.

A server holds many idle sessions, so each is as small as the design allows
(issue #16): one task (the session's, which is also its reader), the
session's own nursery with nothing running in it, and no task for notices
until the first one is queued. Its memory is measured by
``bench/idle_memory.py``; this pins the structure that memory comes from, and
that the session still works: a notice queued later starts its delivery in the
session's nursery, and a call is served.
"""

from __future__ import annotations

import orjson
import trio
import trio.testing
from http_helpers import make_server, open_raw_session, post_headers, raw_client, running

from trio_mcp.transports._http.server._app import StreamableHTTPApp

SESSION_TASK = "trio_mcp HTTP session"


def session_tasks(app: StreamableHTTPApp) -> list[trio.lowlevel.Task]:
    """The application's session tasks (each named SESSION_TASK)."""
    found: list[trio.lowlevel.Task] = []

    def walk(task: trio.lowlevel.Task) -> None:
        if task.name == SESSION_TASK:
            found.append(task)
        for nursery in task.child_nurseries:
            for child in nursery.child_tasks:
                walk(child)

    root = trio.lowlevel.current_root_task()
    assert root is not None
    walk(root)
    return found


def children(task: trio.lowlevel.Task) -> list[list[str]]:
    """The names of *task*'s child tasks, nursery by nursery."""
    return [sorted(child.name for child in n.child_tasks) for n in task.child_nurseries]


async def test_an_idle_session_is_one_task_with_an_empty_session_nursery() -> None:
    server = make_server()
    async with running(server) as (url, app), raw_client(url) as http:
        session_id = await open_raw_session(http)
        await trio.testing.wait_all_tasks_blocked()
        (task,) = session_tasks(app)
        # No reader task and no nursery for notices: the session's own
        # nursery, empty while idle (nothing was ever written by a writer).
        assert children(task) == [[]]

        # A notice queued for the session starts its delivery task in the
        # session's nursery, and the session still serves calls.
        server.add_resource("extra://one", lambda: "one")
        await trio.testing.wait_all_tasks_blocked()
        assert children(task) == [["trio_mcp notices"]]
        call = orjson.dumps(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/list",
                "params": {},
            }
        )
        response = await http.post(
            "/mcp",
            content=call,
            headers=post_headers(session_id, **{"mcp-protocol-version": "2025-11-25"}),
        )
        assert response.status_code == 200
        assert b'"id":2,"result":{"tools":' in response.content
        await http.delete("/mcp", headers=post_headers(session_id))
        await trio.testing.wait_all_tasks_blocked()
        assert session_tasks(app) == []
