"""A requestor's connection reading task results, in both wire forms (TK-11, TK-19).

2025-11-25: a ``tools/call`` that carried ``task`` may be answered with a
``CreateTaskResult`` (or, by a receiver without task support, as usual: TK-05).
2026-07-28: ``resultType: "task"`` only for a request that declared the tasks
extension in its own ``_meta`` (SEP-2663); ``tasks/get`` answers a
``DetailedTask`` and ``tasks/cancel`` an empty acknowledgement, not the
2025-11-25 shapes that need ``ttl``.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from trio_mcp import types as t
from trio_mcp.protocol import (
    Connection,
    Direction,
    ErrorReceived,
    Request,
    ResponseReceived,
    Role,
)
from trio_mcp.testing import ProtocolPair

MODERN = "2026-07-28"
TASK_2026: dict[str, Any] = {
    "taskId": "t-1",
    "status": "working",
    "createdAt": "2026-07-28T10:30:00Z",
    "lastUpdatedAt": "2026-07-28T10:30:00Z",
    "ttlMs": 60_000,
    "pollIntervalMs": 500,
}
DECLARED: dict[str, Any] = {
    t.CLIENT_CAPABILITIES_META_KEY: {"extensions": {t.TASKS_EXTENSION: {}}},
}


def modern_client() -> Connection:
    client = Connection(Role.CLIENT)
    discover = t.DiscoverResult(
        supported_versions=[MODERN],
        capabilities=t.ServerCapabilities(
            tools=t.ToolsCapability(), extensions={t.TASKS_EXTENSION: {}}
        ),
        ttl_ms=0,
        cache_scope="private",
    )
    client.start_modern(MODERN, discover)
    return client


def answer(client: Connection, request: Request, result: dict[str, Any]) -> Any:
    assert client.encode(request) is not None
    frame = orjson.dumps({"jsonrpc": "2.0", "id": request.id, "result": result})
    (event,) = client.receive_data(frame)
    return event


@pytest.mark.spec("TK-19")
def test_2026_a_task_answers_only_a_call_that_declared_the_extension() -> None:
    client = modern_client()
    undeclared = client.send_request("tools/call", {"name": "x"})
    refused = answer(client, undeclared, {"resultType": "task", **TASK_2026})
    assert isinstance(refused, ErrorReceived)
    assert not refused.remote
    assert refused.error.data == {"errors": ["resultType 'task' is not allowed here"]}
    declared = client.send_request("tools/call", {"name": "x", "_meta": DECLARED})
    # Our defaults stay in _meta beside the request's own capabilities.
    assert declared.params is not None
    assert declared.params["_meta"][t.PROTOCOL_VERSION_META_KEY] == MODERN
    created = answer(client, declared, {"resultType": "task", **TASK_2026})
    assert isinstance(created, ResponseReceived)
    assert created.result == t.DetailedTask(
        result_type="task",
        task_id="t-1",
        status="working",
        created_at="2026-07-28T10:30:00Z",
        last_updated_at="2026-07-28T10:30:00Z",
        ttl_ms=60_000,
        poll_interval_ms=500,
    )
    record = client.record(Direction.OUTBOUND, declared.id)
    assert record is not None
    assert record.state.value == "completed"


@pytest.mark.spec("TK-19")
def test_2026_tasks_get_is_a_detailed_task_and_cancel_an_empty_ack() -> None:
    client = modern_client()
    get = client.send_request("tasks/get", {"taskId": "t-1", "_meta": DECLARED})
    done = {
        **TASK_2026,
        "status": "completed",
        "ttlMs": None,
        "result": {"content": [{"type": "text", "text": "hi"}]},
    }
    event = answer(client, get, {"resultType": "complete", **done})
    assert isinstance(event, ResponseReceived)
    assert isinstance(event.result, t.DetailedTask)
    assert event.result.status == "completed"
    assert event.result.ttl_ms is None
    assert event.result.result == {"content": [{"type": "text", "text": "hi"}]}
    waiting = {
        **TASK_2026,
        "status": "input_required",
        "inputRequests": {
            "name": {
                "method": "elicitation/create",
                "params": {"message": "Name?", "requestedSchema": {"type": "object"}},
            }
        },
    }
    get = client.send_request("tasks/get", {"taskId": "t-1", "_meta": DECLARED})
    event = answer(client, get, {"resultType": "complete", **waiting})
    assert isinstance(event.result, t.DetailedTask)
    assert event.result.input_requests is not None
    assert isinstance(event.result.input_requests["name"], t.ElicitInputRequest)
    cancel = client.send_request("tasks/cancel", {"taskId": "t-1", "_meta": DECLARED})
    event = answer(client, cancel, {"resultType": "complete"})
    assert isinstance(event, ResponseReceived)
    assert event.result == t.EmptyResult(result_type="complete")


@pytest.mark.spec("TK-05", "TK-11")
def test_2025_a_call_with_task_reads_a_create_task_result_or_a_plain_one() -> None:
    pair = ProtocolPair(
        server_capabilities={"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}
    )
    pair.handshake("2025-11-25")
    client = pair.client
    task = {
        "taskId": "t-1",
        "status": "working",
        "createdAt": "2025-11-25T10:30:00Z",
        "lastUpdatedAt": "2025-11-25T10:30:00Z",
        "ttl": None,
    }
    asked = client.send_request("tools/call", {"name": "x", "task": {"ttl": 1000}})
    event = answer(client, asked, {"task": task})
    assert isinstance(event, ResponseReceived)
    assert isinstance(event.result, t.CreateTaskResult)
    assert event.result.task.task_id == "t-1"
    # A receiver that ignores task (TK-05) answers as usual.
    asked = client.send_request("tools/call", {"name": "x", "task": {}})
    event = answer(client, asked, {"content": []})
    assert isinstance(event.result, t.CallToolResult)
    # A call that did not ask is never read as a task.
    plain = client.send_request("tools/call", {"name": "x"})
    event = answer(client, plain, {"task": task})
    assert isinstance(event, ErrorReceived)
