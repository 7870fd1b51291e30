"""The client side of tasks (issue #14): ``call_tool(as_task=True)`` and its
:class:`~trio_mcp.tasks.TaskHandle`, and the polling ``call_tool`` does for
a task it did not hand back.

Both wire forms against our own server in memory, on the autojump clock: the
2025-11-25 utility (``era="legacy"``) and the 2026-07-28 extension
(``era="modern"``); the extension again over real Streamable HTTP on
loopback; and a raw handshake-era server for what ours never does (a tool
that says ``required`` on a server without tasks, a status notification).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing
from helpers import RawPeer, open_pair, open_raw_client_transport

from trio_mcp import (
    Context,
    FormElicitation,
    RPCError,
    Server,
    ToolError,
    http_app,
    open_client,
    open_http_client,
    serve_http,
)
from trio_mcp import types as t
from trio_mcp._tasks._runner import TaskRunner
from trio_mcp.protocol import (
    Direction,
    LocalProtocolError,
    RequestState,
    TaskCause,
    TaskForm,
    TaskState,
)
from trio_mcp.tasks import TaskHandle

ERAS = pytest.mark.parametrize("era", ["legacy", "modern"])
FORMS = {"legacy": TaskForm.V2025_11_25, "modern": TaskForm.EXTENSION}
NAME_FORM = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
NOT_HUNG = 10.0


def build(**runner: Any) -> tuple[Server, dict[str, Any]]:
    """Our server with task tools; *runner* configures its TaskRunner."""
    seen: dict[str, Any] = {"stopped": [], "meta": []}
    server = Server("tasks", version="1", tasks=TaskRunner(**runner), task_list=True)

    @server.tool(task_support="optional")
    async def slow(seconds: float) -> str:
        """Sleeps, then says so; notes being cancelled."""
        try:
            await trio.sleep(seconds)
        except trio.Cancelled:
            seen["stopped"].append("slow")
            raise
        return f"slept {seconds}"

    @server.tool(task_support="required")
    async def required_job(seconds: float = 2.5) -> str:
        """Runs only as a task."""
        try:
            await trio.sleep(seconds)
        except trio.Cancelled:
            seen["stopped"].append("required_job")
            raise
        return "job done"

    @server.tool(task_support="optional")
    async def greet(ctx: Context) -> str:
        """Asks for a name (inside the task, in either form)."""
        answer = await ctx.elicit(
            {"mode": "form", "message": "Your name?", "requestedSchema": NAME_FORM}
        )
        assert answer.content is not None
        return f"Hello, {answer.content['name']}!"

    @server.tool(task_support="optional")
    async def refuse() -> str:
        """Fails with a JSON-RPC error of its own."""
        raise RPCError(-32050, "refused", {"why": "test"})

    @server.tool(task_support="optional")
    async def broken() -> str:
        """A tool error: an isError result."""
        raise ToolError("broken on purpose")

    @server.tool(task_support="optional", defer_task=True)
    async def quick(ctx: Context) -> str:
        """Could become a task (ctx.start_task) but never does: answers at once."""
        seen["meta"].append(ctx.request.client_capabilities)
        return "at once"

    @server.tool(task_support="required", defer_task=True)
    async def compose(ctx: Context) -> str:
        """An input-required round first, then the rest as a task (SEP-2663)."""
        answer = await ctx.elicit(
            {"mode": "form", "message": "Your name?", "requestedSchema": NAME_FORM}
        )
        await ctx.start_task()
        await trio.sleep(1)
        assert answer.content is not None
        return f"Hello, {answer.content['name']}! (in a task)"

    @server.tool()
    async def plain() -> str:
        """Never a task."""
        return "plain"

    @server.tool(task_support="optional")
    async def steps(ctx: Context, count: int = 3) -> str:
        """Reports progress a step a second, then says how many."""
        for done in range(count):
            await trio.sleep(1)
            await ctx.report_progress(done + 1, count, f"step {done + 1}")
        return f"{count} steps"

    return server, seen


def texts(result: t.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, t.TextContent)]


def methods(records: list[Any], method: str) -> list[Any]:
    return [r for r in records if r.method == method]


# --- as_task: the handle ------------------------------------------------------


@ERAS
@pytest.mark.spec("TK-10", "TK-14", "TK-19")
async def test_as_task_hands_back_a_handle_that_polls_at_the_task_s_interval(
    autojump_clock: trio.testing.MockClock, era: str
) -> None:
    server, _ = build(poll_interval_ms=500)
    async with open_pair(server, era=era) as (client, server_session):
        start = trio.current_time()
        handle = await client.call_tool("slow", {"seconds": 2.2}, as_task=True)
        assert isinstance(handle, TaskHandle)
        assert handle.form is FORMS[era]
        assert handle.task_id
        assert not handle.immediate
        assert handle.state is TaskState.WORKING
        # The task's record continues the call's, which completed with it.
        record = handle.record
        call = client.session.protocol.record(Direction.OUTBOUND, record.request_id)
        assert call is not None
        assert (call.method, call.state) == ("tools/call", RequestState.COMPLETED)
        assert (record.method, record.direction) == ("tools/call", Direction.OUTBOUND)
        assert (record.poll_interval_ms, record.ttl_ms) == (500, 3_600_000)
        assert (await handle.status()).state is TaskState.WORKING
        statuses: list[TaskState] = []
        final = await handle.wait(on_status=lambda r: statuses.append(r.state))
        # Polled every 500 ms: the first poll after the 2.2 s of work is at 2.5 s.
        assert trio.current_time() - start == 2.5
        assert len(methods(server_session.requests(), "tasks/get")) == 1 + 5
        assert final.state is TaskState.COMPLETED
        assert statuses == [TaskState.COMPLETED]
        assert final.moves[-1].cause is TaskCause.REPORTED
        assert texts(await handle.result()) == ["slept 2.2"]
        # A second result() asks nothing more.
        asked = len(client.session.requests())
        assert texts(await handle.result()) == ["slept 2.2"]
        assert len(client.session.requests()) == asked


@pytest.mark.spec("TK-02", "TK-19")
async def test_2026_declares_the_extension_only_on_calls_that_allow_a_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = build()
    async with open_pair(server, era="modern") as (client, server_session):
        assert texts(await client.call_tool("quick")) == ["at once"]
        assert texts(await (await client.call_tool("quick", as_task=True)).result()) == ["at once"]
        plain_caps, task_caps = seen["meta"]
        assert "extensions" not in plain_caps
        assert task_caps["extensions"] == {t.TASKS_EXTENSION: {}}
        # An optional tool called plainly is no task; nothing polls for it.
        assert texts(await client.call_tool("slow", {"seconds": 2})) == ["slept 2.0"]
        page, _ = await server.tasks.list(None, None)
        assert page == []
        assert not methods(server_session.requests(), "tasks/get")


@ERAS
@pytest.mark.spec("TK-12", "TK-14")
async def test_a_required_tool_through_plain_call_tool_is_polled_to_its_result(
    autojump_clock: trio.testing.MockClock, era: str
) -> None:
    server, _ = build()
    # 2025-11-25: the tool's definition says required; 2026-07-28 has no such
    # field, so the client declares the extension on every call (tasks=True).
    async with open_pair(server, era=era, tasks=era == "modern") as (client, _):
        if era == "legacy":
            execution = client.tools["required_job"].execution
            assert execution is not None
            assert execution.task_support == "required"
        start = trio.current_time()
        result = await client.call_tool("required_job")
        assert texts(result) == ["job done"]
        # Polled at the server's 1 s default: done by the poll at 3 s.
        assert trio.current_time() - start == 3.0
        assert methods(client.session.requests(), "tasks/get")
        # Any call may now be a task: an optional one is polled as well.
        assert texts(await client.call_tool("slow", {"seconds": 1.5})) == ["slept 1.5"]


@pytest.mark.spec("TK-19")
async def test_2026_a_required_tool_is_called_again_declaring_the_extension_and_polled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A 2026-07-28 tool definition cannot say it runs only as a task: the
    server's -32021 naming the tasks extension says so, and a plain call_tool
    calls once more declaring it, then polls the task to its result."""
    server, _ = build()
    async with open_pair(server, era="modern") as (client, _):
        result = await client.call_tool("required_job")
        assert texts(result) == ["job done"]
        calls = [r for r in client.session.requests() if r.method == "tools/call"]
        assert [r.state for r in calls] == [RequestState.FAILED, RequestState.COMPLETED]
        assert calls[0].error is not None
        assert calls[0].error.code == -32021
        assert calls[0].error.data == {
            "requiredCapabilities": {"extensions": {t.TASKS_EXTENSION: {}}}
        }
        handle = await client.call_tool("required_job", as_task=True)
        assert texts(await handle.result()) == ["job done"]


@pytest.mark.spec("TK-19")
async def test_2026_a_call_answered_at_once_gives_a_completed_handle(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with open_pair(server, era="modern") as (client, _):
        for tool in ("quick", "plain"):
            handle = await client.call_tool(tool, as_task=True)
            assert handle.immediate
            assert handle.task_id == ""
            asked = len(client.session.requests())
            assert handle.state is TaskState.COMPLETED
            assert (await handle.status()).state is TaskState.COMPLETED
            assert (await handle.wait()).state is TaskState.COMPLETED
            assert (await handle.cancel()).state is TaskState.COMPLETED
            assert texts(await handle.result()) == ["at once" if tool == "quick" else "plain"]
            assert len(client.session.requests()) == asked


# --- cancellation -------------------------------------------------------------


@ERAS
@pytest.mark.spec("TK-14", "TK-16")
async def test_a_cancelled_wait_leaves_the_task_running_and_cancel_ends_it(
    autojump_clock: trio.testing.MockClock, era: str
) -> None:
    server, seen = build()
    async with open_pair(server, era=era) as (client, _):
        handle = await client.call_tool("slow", {"seconds": 60}, as_task=True)
        with trio.move_on_after(3.5) as scope:
            await handle.wait()
        assert scope.cancelled_caught
        await trio.testing.wait_all_tasks_blocked()
        assert server.tasks.working == 1
        assert seen["stopped"] == []
        assert (await handle.status()).state is TaskState.WORKING
        record = await handle.cancel()
        assert record.cancel_requested
        assert record.cancel_cause is TaskCause.REQUESTOR
        if era == "legacy":
            # 2025-11-25: cancelled before the reply (TK-16).
            assert record.state is TaskState.CANCELLED
        else:
            # The extension's cancel is an ask; the task settles after.
            assert record.state is TaskState.WORKING
            assert (await handle.wait()).state is TaskState.CANCELLED
        await trio.testing.wait_all_tasks_blocked()
        assert seen["stopped"] == ["slow"]
        assert server.tasks.working == 0
        with pytest.raises(RPCError) as info:
            await handle.result()
        assert info.value.code == -32602
        # Cancelling again is harmless: the task has ended.
        assert (await handle.cancel()).state is TaskState.CANCELLED


@ERAS
@pytest.mark.spec("TK-14", "TK-16")
async def test_cancelling_a_call_tool_that_polls_a_task_cancels_the_task(
    autojump_clock: trio.testing.MockClock, era: str
) -> None:
    server, seen = build()
    async with open_pair(server, era=era, tasks=era == "modern") as (client, _):
        with trio.move_on_after(2.5):
            await client.call_tool("required_job", {"seconds": 60})
        await trio.testing.wait_all_tasks_blocked()
        assert seen["stopped"] == ["required_job"]
        assert server.tasks.working == 0
        (cancel,) = methods(client.session.requests(), "tasks/cancel")
        assert cancel.state is RequestState.COMPLETED
        assert (await server.tasks.list(None, None))[0][0].state is TaskState.CANCELLED


# --- input while the task runs --------------------------------------------------


@ERAS
@pytest.mark.spec("TK-09", "TK-13", "TK-19")
async def test_input_the_task_needs_is_answered_by_the_client_s_handlers(
    autojump_clock: trio.testing.MockClock, era: str
) -> None:
    asked: list[FormElicitation] = []

    async def answer(request: FormElicitation) -> t.ElicitResult:
        asked.append(request)
        await trio.sleep(5)  # a person typing: polls see input_required
        return t.ElicitResult(action="accept", content={"name": "Ada"})

    server, _ = build()
    async with open_pair(server, era=era, elicitation=answer) as (client, _):
        handle = await client.call_tool("greet", as_task=True)
        statuses: list[TaskState] = []
        final = await handle.wait(on_status=lambda r: statuses.append(r.state))
        assert TaskState.INPUT_REQUIRED in statuses
        assert final.state is TaskState.COMPLETED
        assert texts(await handle.result()) == ["Hello, Ada!"]
        (request,) = asked
        assert request.message == "Your name?"
        sent = client.session.requests()
        if era == "legacy":
            # A server request tagged with the task; tasks/result meanwhile (TK-09).
            assert request.params.meta == {t.RELATED_TASK_META_KEY: {"taskId": handle.task_id}}
            assert [r.state for r in methods(sent, "tasks/result")] == [RequestState.COMPLETED]
        else:
            (update,) = methods(sent, "tasks/update")
            assert update.state is RequestState.COMPLETED


@pytest.mark.spec("TK-14", "TK-19")
async def test_2026_plain_call_tool_answers_a_task_s_input_too(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def answer(request: FormElicitation) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"name": "Grace"})

    server, _ = build()
    async with open_pair(server, era="modern", tasks=True, elicitation=answer) as (client, _):
        assert texts(await client.call_tool("greet")) == ["Hello, Grace!"]


@pytest.mark.spec("TK-19")
async def test_2026_a_task_asking_for_an_input_the_call_did_not_declare_fails(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # No elicitation handler: the call's capabilities declare none, and the
    # server fails the task with -32021 rather than ask (PT-07).
    server, _ = build()
    async with open_pair(server, era="modern") as (client, _):
        handle = await client.call_tool("greet", as_task=True)
        assert (await handle.wait()).state is TaskState.FAILED
        with pytest.raises(RPCError) as info:
            await handle.result()
        assert info.value.code == -32021


@pytest.mark.spec("TK-19")
async def test_2026_input_rounds_before_the_task_then_the_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def answer(request: FormElicitation) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"name": "Alice"})

    server, _ = build()
    async with open_pair(server, era="modern", elicitation=answer) as (client, _):
        handle = await client.call_tool("compose", as_task=True)
        first, second = methods(client.session.requests(), "tools/call")
        # The task continues the round that was answered with it.
        assert second.follows == first.id
        assert handle.record.request_id == second.id
        assert texts(await handle.result()) == ["Hello, Alice! (in a task)"]


# --- how a task ends ----------------------------------------------------------


@ERAS
@pytest.mark.spec("TK-12", "TK-17", "TK-19")
async def test_a_task_that_fails_with_an_rpc_error_raises_the_call_s_error(
    autojump_clock: trio.testing.MockClock, era: str
) -> None:
    server, _ = build()
    async with open_pair(server, era=era, tasks=era == "modern") as (client, _):
        handle = await client.call_tool("refuse", as_task=True)
        final = await handle.wait()
        assert final.state is TaskState.FAILED
        for _ in range(2):  # the same error each time
            with pytest.raises(RPCError) as info:
                await handle.result()
            assert (info.value.code, info.value.message, info.value.data) == (
                -32050,
                "refused",
                {"why": "test"},
            )
        # call_tool polling a task raises it too.
        with pytest.raises(RPCError) as polled:
            await client.call_tool("refuse")
        assert (polled.value.code, polled.value.data) == (-32050, {"why": "test"})


@ERAS
@pytest.mark.spec("TK-12", "TK-17", "TK-19")
async def test_a_tool_error_is_the_task_s_result_failed_in_2025_completed_in_2026(
    autojump_clock: trio.testing.MockClock, era: str
) -> None:
    server, _ = build()
    async with open_pair(server, era=era) as (client, _):
        handle = await client.call_tool("broken", as_task=True)
        final = await handle.wait()
        expected = TaskState.FAILED if era == "legacy" else TaskState.COMPLETED
        assert final.state is expected
        result = await handle.result()
        assert result.is_error is True
        assert texts(result) == ["broken on purpose"]


# --- servers without tasks, and listing ---------------------------------------


@ERAS
@pytest.mark.spec("TK-02", "TK-03")
async def test_as_task_to_a_server_without_tasks_is_a_clear_local_error(
    autojump_clock: trio.testing.MockClock, era: str
) -> None:
    server = Server("no-tasks", version="1")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    async with open_pair(server, era=era) as (client, server_session):
        with pytest.raises(LocalProtocolError, match="offers no tool-call tasks"):
            await client.call_tool("echo", {"text": "hi"}, as_task=True)
        assert not methods(server_session.requests(), "tools/call")
        assert texts(await client.call_tool("echo", {"text": "hi"})) == ["hi"]


@pytest.mark.spec("TK-04")
async def test_2025_as_task_on_a_forbidden_tool_is_refused_before_anything_is_sent(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """TK-04: a client must not use a task for a tool whose taskSupport is
    forbidden or absent: refused locally once the tool is listed; a tool not
    listed yet is left to the server, which answers -32601."""
    server, _ = build()
    async with open_pair(server, era="legacy", discover=False) as (client, _):
        with pytest.raises(RPCError) as info:
            await client.call_tool("plain", as_task=True)  # not listed: the server says
        assert info.value.code == -32601
    async with open_pair(server, era="legacy") as (client, _):  # discovery lists the tools
        sent = len(client.session.requests())
        with pytest.raises(LocalProtocolError, match="taskSupport is absent"):
            await client.call_tool("plain", as_task=True)
        assert len(client.session.requests()) == sent


@pytest.mark.spec("TK-15")
async def test_2025_list_tasks_follows_every_page(autojump_clock: trio.testing.MockClock) -> None:
    server, _ = build(list_page=1)
    async with open_pair(server, era="legacy") as (client, server_session):
        first = await client.call_tool("slow", {"seconds": 1}, as_task=True, ttl=60_000)
        second = await client.call_tool("slow", {"seconds": 60}, as_task=True)
        assert first.record.ttl_ms == 60_000
        listed = await client.list_tasks()
        assert [task.task_id for task in listed] == [first.task_id, second.task_id]
        assert len(methods(server_session.requests(), "tasks/list")) == 2
        await second.cancel()


@ERAS
async def test_list_tasks_where_the_server_offers_none_is_a_local_error(
    autojump_clock: trio.testing.MockClock, era: str
) -> None:
    server, _ = build()
    server.task_list = False
    async with open_pair(server, era=era) as (client, _):
        with pytest.raises(LocalProtocolError, match="tasks/list"):
            await client.list_tasks()


# --- a raw handshake-era server -----------------------------------------------


@asynccontextmanager
async def raw_server(
    capabilities: dict[str, Any],
) -> AsyncIterator[tuple[RawPeer, Any]]:
    """A real 2025-11-25 client and a raw server declaring *capabilities*."""
    async with open_raw_client_transport() as (peer, transport), trio.open_nursery() as nursery:

        async def handshake() -> None:
            init = await peer.wait_method("initialize")
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": init["id"],
                    "result": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": capabilities,
                        "serverInfo": {"name": "raw", "version": "0"},
                    },
                }
            )

        nursery.start_soon(handshake)
        async with open_client(transport, era="legacy", discover=False) as client:
            yield peer, client


TASK = {
    "taskId": "t-1",
    "status": "working",
    "createdAt": "2025-11-25T10:30:00Z",
    "lastUpdatedAt": "2025-11-25T10:30:00Z",
    "ttl": None,
    "pollInterval": 60_000,
}


@pytest.mark.spec("TK-03")
async def test_2025_no_task_param_to_a_server_without_tasks_whatever_the_tool_says(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with raw_server({"tools": {}}) as (peer, client), trio.open_nursery() as nursery:
        tool = {
            "name": "job",
            "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "required"},
        }
        nursery.start_soon(client.refresh, "tools")
        listing = await peer.wait_method("tools/list")
        await peer.send({"jsonrpc": "2.0", "id": listing["id"], "result": {"tools": [tool]}})
        await trio.testing.wait_all_tasks_blocked()
        assert client.tools["job"].execution == t.ToolExecution(task_support="required")
        with pytest.raises(LocalProtocolError):
            await client.call_tool("job", as_task=True)
        done: list[t.CallToolResult] = []

        async def call() -> None:
            done.append(await client.call_tool("job"))

        nursery.start_soon(call)
        frame = await peer.wait_method("tools/call")
        assert "task" not in frame["params"]
        content = [{"type": "text", "text": "plain"}]
        await peer.send({"jsonrpc": "2.0", "id": frame["id"], "result": {"content": content}})
        await trio.testing.wait_all_tasks_blocked()
        assert texts(done[0]) == ["plain"]


@pytest.mark.spec("TK-14")
async def test_2025_a_status_notification_ends_the_pause_but_polling_decides(
    autojump_clock: trio.testing.MockClock,
) -> None:
    capabilities: dict[str, Any] = {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}
    async with raw_server(capabilities) as (peer, client), trio.open_nursery() as nursery:
        handles: list[TaskHandle] = []

        async def call() -> None:
            handles.append(await client.call_tool("job", as_task=True, ttl=5_000))

        nursery.start_soon(call)
        frame = await peer.wait_method("tools/call")
        assert frame["params"]["task"] == {"ttl": 5_000}
        await peer.send({"jsonrpc": "2.0", "id": frame["id"], "result": {"task": TASK}})
        await trio.testing.wait_all_tasks_blocked()
        (handle,) = handles
        finals: list[Any] = []

        async def wait() -> None:
            finals.append(await handle.wait())

        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
        # The server says it completed; the client asks before trusting it.
        done = {**TASK, "status": "completed"}
        await peer.notify("notifications/tasks/status", done)
        get = await peer.wait_method("tasks/get")
        assert get["params"] == {"taskId": "t-1"}
        assert trio.current_time() == start  # not after the 60 s interval
        await peer.send({"jsonrpc": "2.0", "id": get["id"], "result": done})
        await trio.testing.wait_all_tasks_blocked()
        assert finals[0].state is TaskState.COMPLETED
        # The notification was mirrored too, then the poll repeated it.
        assert [move.new for move in finals[0].moves] == [TaskState.COMPLETED]


# --- the extension over Streamable HTTP ---------------------------------------


@pytest.mark.spec("TK-19")
async def test_2026_tasks_over_streamable_http() -> None:
    async def answer(request: FormElicitation) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"name": "Lin"})

    server, seen = build(poll_interval_ms=20)
    async with trio.open_nursery() as nursery:
        base = await nursery.start(
            lambda task_status: serve_http(http_app(server), task_status=task_status)
        )
        with trio.fail_after(NOT_HUNG):
            async with open_http_client(
                base + "/mcp", era="modern", remember_era=False, elicitation=answer
            ) as client:
                handle = await client.call_tool("slow", {"seconds": 0.05}, as_task=True)
                # tasks/get carries Mcp-Name: <taskId>; the server checks it.
                assert (await handle.wait()).state is TaskState.COMPLETED
                assert texts(await handle.result()) == ["slept 0.05"]
                greeting = await client.call_tool("greet", as_task=True)
                assert texts(await greeting.result()) == ["Hello, Lin!"]
                long = await client.call_tool("slow", {"seconds": 60}, as_task=True)
                await long.cancel()
                assert (await long.wait()).state is TaskState.CANCELLED
                assert seen["stopped"] == ["slow"]
        nursery.cancel_scope.cancel()


@ERAS
@pytest.mark.spec("TK-13", "PG-11")
async def test_a_task_s_progress_reaches_the_handle_s_callback_in_2025_only(
    era: str, autojump_clock: trio.testing.MockClock
) -> None:
    """2025-11-25: the call's progress token outlives the call and the task's
    progress (tagged with it) reaches ``on_progress``; the extension's tasks
    report none (SEP-2663)."""
    server, _ = build()
    seen: list[tuple[float, float | None, str | None]] = []
    async with open_pair(server, era=era) as (client, _):
        handle = await client.call_tool(
            "steps",
            {"count": 3},
            as_task=True,
            on_progress=lambda p: seen.append((p.progress, p.total, p.message)),
        )
        final = await handle.wait()
        assert final.state is TaskState.COMPLETED
        assert texts(await handle.result()) == ["3 steps"]
    if era == "legacy":
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    else:
        assert seen == []
