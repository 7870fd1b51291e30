"""Tasks over Streamable HTTP: bound to the request's principal (TK-18).

``StreamableHTTPApp(principal_of=...)`` names who sends each request; the
transport of the one-request session of a 2026-07-28 POST (and of a
handshake-era session) carries it, and the server binds the tasks a request
creates to it: another principal's ``tasks/get`` and ``tasks/cancel`` find
nothing, as for an unknown id.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
import trio
from http_helpers import ACCEPT_BOTH, raw_client, running, sse_messages

from trio_mcp import Server
from trio_mcp.protocol import TaskRecord
from trio_mcp.protocol._headers import request_headers

MODERN = "2026-07-28"
EXT = "io.modelcontextprotocol/tasks"


def principal_of(scope: dict[str, Any]) -> str | None:
    """The principal a test names in its ``x-user`` header (a stand-in for a
    verified token's subject)."""
    for key, value in scope["headers"]:
        if key == b"x-user":
            user: str = value.decode()
            return user
    return None


async def rpc(
    http: httpx.AsyncClient, user: str, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    """One 2026-07-28 request declaring the tasks extension, as *user*."""
    params = {
        **params,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}},
        },
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {
        "accept": ACCEPT_BOTH,
        "content-type": "application/json",
        **request_headers(method, params),
        "x-user": user,
    }
    response = await http.post("/mcp", content=orjson.dumps(body), headers=headers)
    if response.headers["content-type"].startswith("text/event-stream"):
        [message] = sse_messages(response.text)
    else:
        message = response.json()
    frame: dict[str, Any] = message
    return frame


@pytest.mark.spec("TK-18")
async def test_a_task_is_its_principal_s_alone_over_http() -> None:
    server = Server("owned")
    release = trio.Event()

    @server.tool(task_support="optional")
    async def job() -> str:
        await release.wait()
        return "done"

    async with (
        running(server, principal_of=principal_of) as (url, _app),
        raw_client(url) as http,
    ):
        created = await rpc(http, "alice", "tools/call", {"name": "job", "arguments": {}})
        task_id = created["result"]["taskId"]
        for method in ("tasks/get", "tasks/cancel"):
            refused = await rpc(http, "bob", method, {"taskId": task_id})
            assert refused["error"]["code"] == -32602
        mine = await rpc(http, "alice", "tasks/get", {"taskId": task_id})
        assert mine["result"]["status"] == "working"
        record = await server.tasks.store.get(task_id, "alice")
        assert record is not None
        assert await server.tasks.store.get(task_id, "bob") is None
        release.set()
        with trio.fail_after(30):  # the store says when it ends
            seen: TaskRecord | None = record
            while seen is not None and not seen.is_terminal:
                seen = await server.tasks.store.wait_changed(task_id, seen)
        done = await rpc(http, "alice", "tasks/get", {"taskId": task_id})
        assert done["result"]["status"] == "completed"
        assert done["result"]["result"]["content"] == [{"type": "text", "text": "done"}]
