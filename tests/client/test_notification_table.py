"""The client's notification table: every notification a server may send is
either in it or handled (or deliberately ignored) elsewhere, and each one in
it reaches its handler from the wire."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from helpers import LATEST, open_client_with_raw_server

from trio_mcp import types as t
from trio_mcp.protocol import METHODS, Kind, NotificationReceived, Role

#: Taken by the session before the client sees them: a cancel ends the call it
#: names, and a call's progress goes to its caller.
SESSION_HANDLED = {"notifications/cancelled"}
#: Only ever a notice of one 2026-07-28 listen stream: routed to its stream
#: before the table is looked at (``Subscriptions.claim``).
LISTEN_STREAMS = {"notifications/subscriptions/acknowledged"}
#: Received and dropped on purpose: the tasks extension's status notice (a
#: handle polls ``tasks/get`` to the end; notices are only ever a hint, TK-14).
IGNORED = {"notifications/tasks"}

#: A valid frame's params for each notification in the table.
PARAMS: dict[str, dict[str, Any] | None] = {
    "notifications/tools/list_changed": None,
    "notifications/prompts/list_changed": None,
    "notifications/resources/list_changed": None,
    "notifications/resources/updated": {"uri": "file:///notes/a.txt"},
    "notifications/message": {"level": "info", "data": "hello"},
    "notifications/tasks/status": {
        "taskId": "t-1",
        "status": "working",
        "createdAt": "2026-01-01T00:00:00Z",
        "lastUpdatedAt": "2026-01-01T00:00:00Z",
        "ttl": None,
    },
    # A 2025-11-25 task's progress: the token outlives its request.
    "notifications/progress": {
        "progressToken": "token-1",
        "progress": 1,
        "_meta": {t.RELATED_TASK_META_KEY: {"taskId": "t-1"}},
    },
    "notifications/elicitation/complete": {"elicitationId": "e-1"},
}


def _sent_by_servers() -> set[str]:
    return {
        name
        for name, spec in METHODS.items()
        if spec.kind is Kind.NOTIFICATION and spec.sender.allows(Role.SERVER)
    }


async def test_every_server_notification_is_in_the_table_or_handled_elsewhere() -> None:
    async with open_client_with_raw_server() as (_, client):
        notifications = client._parts.notifications
        assert notifications is not None  # the client runs
        table = set(notifications.table)
    elsewhere = SESSION_HANDLED | LISTEN_STREAMS | IGNORED
    assert table <= _sent_by_servers()  # no entry for something no server sends
    assert not table & elsewhere
    assert table | elsewhere == _sent_by_servers()
    assert set(PARAMS) == table


@pytest.mark.parametrize("method", sorted(PARAMS))
async def test_each_notification_in_the_table_reaches_its_handler(method: str) -> None:
    logged: list[t.LoggingMessageNotificationParams] = []
    async with open_client_with_raw_server(version=LATEST, log_handler=logged.append) as (
        peer,
        client,
    ):
        notifications = client._parts.notifications
        assert notifications is not None  # the client runs
        table = notifications.table
        handler = table[method]
        reached = trio.Event()
        seen: list[NotificationReceived] = []

        def spy(event: NotificationReceived) -> Any:
            seen.append(event)
            reached.set()
            return handler(event)

        table[method] = spy
        await peer.notify(method, PARAMS[method])
        with trio.fail_after(2):
            await reached.wait()
    assert [event.method for event in seen] == [method]
    if method == "notifications/message":
        assert [params.data for params in logged] == ["hello"]
