"""The client as a task receiver (2025-11-25): the server's task-augmented
sampling and elicitation, both ways through trio_mcp (TK-01, TK-02, TK-11,
TK-12, TK-14, TK-16).

The server's tool asks with ``ctx.create_message(..., as_task=True)`` (or
``ctx.elicit``); a client opened with ``accept_tasks=True`` declares
``tasks.requests`` for its handlers, answers with a task id, runs its handler
as the task's work, and serves the server's ``tasks/get``, ``tasks/result`` and
``tasks/cancel``. Time is the autojump clock.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from helpers import open_pair

from trio_mcp import Context, Server
from trio_mcp import types as t
from trio_mcp.lowlevel import Direction, RequestState
from trio_mcp.protocol import TaskCause, TaskState

LEGACY = "legacy"
ASK = {"messages": [{"role": "user", "content": {"type": "text", "text": "Hi?"}}], "maxTokens": 5}
FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def build() -> Server:
    server = Server("asks")

    @server.tool()
    async def sample(ctx: Context) -> str:
        result = await ctx.create_message(ASK, as_task=True)
        assert isinstance(result.content, t.TextContent)
        return result.content.text

    @server.tool()
    async def confirm(ctx: Context) -> str:
        answer = await ctx.elicit(
            {"mode": "form", "message": "Sure?", "requestedSchema": FORM}, as_task=True
        )
        return answer.action

    return server


class Model:
    """A sampling handler that thinks for a second and a half (or until
    cancelled): never a whole number of the 1 s poll interval, so its end and
    a poll never fall on one instant (a tie Trio breaks in any order)."""

    def __init__(self) -> None:
        self.cancelled = False

    async def __call__(self, params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        try:
            await trio.sleep(1.5)
        except trio.Cancelled:
            self.cancelled = True
            raise
        return t.CreateMessageResult(
            role="assistant", content=t.TextContent(text="Hello."), model="m"
        )


def methods(session: Any) -> list[tuple[str, RequestState]]:
    """The server's requests to the client, in order."""
    return [(r.method, r.state) for r in session.requests() if r.direction is Direction.OUTBOUND]


@pytest.mark.spec("TK-01", "TK-11", "TK-12", "TK-14")
async def test_a_sampling_request_runs_as_a_client_task_and_the_server_polls_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = Model()
    async with open_pair(build(), era=LEGACY, sampling=model, accept_tasks=True) as (
        client,
        server_session,
    ):
        declared = server_session.protocol.peer_capabilities["tasks"]
        assert declared == {"cancel": {}, "requests": {"sampling": {"createMessage": {}}}}
        result = await client.call_tool("sample")
        assert result.content[0].text == "Hello."  # type: ignore[union-attr]
        asked = methods(server_session)
        assert asked[0] == ("sampling/createMessage", RequestState.COMPLETED)
        # Polled at the task's interval (1 s: working, 2 s: completed), then its result.
        assert [m for m, _ in asked].count("tasks/get") == 2
        assert asked[-1] == ("tasks/result", RequestState.COMPLETED)
        receiver = client.handlers.tasks
        assert receiver is not None
        [record] = (await receiver.runner.store.list(None, None, 10))[0]
        assert record.state is TaskState.COMPLETED
        assert record.method == "sampling/createMessage"


@pytest.mark.spec("TK-02")
async def test_without_the_declaration_the_request_goes_plain(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_pair(build(), era=LEGACY, sampling=Model()) as (client, server_session):
        assert "tasks" not in server_session.protocol.peer_capabilities
        result = await client.call_tool("sample")
        assert result.content[0].text == "Hello."  # type: ignore[union-attr]
        assert methods(server_session) == [("sampling/createMessage", RequestState.COMPLETED)]


@pytest.mark.spec("TK-16", "CN-04")
async def test_cancelling_the_server_side_cancels_the_client_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = Model()
    async with open_pair(build(), era=LEGACY, sampling=model, accept_tasks=True) as (
        client,
        server_session,
    ):
        with trio.move_on_after(1.25):  # the call (and the tool asking) is cancelled
            await client.call_tool("sample")
        await trio.testing.wait_all_tasks_blocked()
        assert model.cancelled
        receiver = client.handlers.tasks
        assert receiver is not None
        [record] = (await receiver.runner.store.list(None, None, 10))[0]
        assert record.state is TaskState.CANCELLED
        assert record.cancel_cause is TaskCause.REQUESTOR
        assert ("tasks/cancel", RequestState.COMPLETED) in methods(server_session)


@pytest.mark.spec("TK-01", "TK-12")
async def test_an_elicitation_runs_as_a_client_task_too(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def ask_user(request: Any) -> t.ElicitResult:
        await trio.sleep(1)
        return t.ElicitResult(action="accept", content={"ok": True})

    async with open_pair(build(), era=LEGACY, elicitation=ask_user, accept_tasks=True) as (
        client,
        server_session,
    ):
        declared = server_session.protocol.peer_capabilities["tasks"]
        assert declared["requests"] == {"elicitation": {"create": {}}}
        result = await client.call_tool("confirm")
        assert result.content[0].text == "accept"  # type: ignore[union-attr]
        assert ("tasks/result", RequestState.COMPLETED) in methods(server_session)
