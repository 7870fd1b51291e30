"""A server's tasks, both wire forms, against a raw client (issue #14).

The 2025-11-25 utility over a handshake session; the 2026-07-28 extension over
a modern one (every request carries its ``_meta``). Time is Trio's autojump
clock, and the runner and its store use a wall clock derived from it, so ttls
and poll intervals are exact. A tool that must be "working" when the test
looks waits on a :class:`trio.Event` the test sets.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing
from helpers import RawPeer, open_raw_server

from trio_mcp import Context, RPCError, Server, ToolError
from trio_mcp._tasks._store import TaskStoreError
from trio_mcp.protocol import TaskCause, TaskState
from trio_mcp.tasks import MemoryTaskStore, TaskRunner

UTILITY = "2025-11-25"
MODERN = "2026-07-28"
EXT = "io.modelcontextprotocol/tasks"
RELATED = "io.modelcontextprotocol/related-task"
EPOCH = 1_800_000_000.0
FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def wall() -> float:
    """Seconds since the epoch, on Trio's (autojump) clock."""
    return EPOCH + trio.current_time()


class Tools:
    """A server with task tools the tests steer, and what its handlers saw."""

    def __init__(self, **server_options: Any) -> None:
        self.store = MemoryTaskStore(clock=wall)
        runner_options = server_options.pop("runner", {})
        self.server = Server(
            "tasks",
            tasks=TaskRunner(self.store, clock=wall, **runner_options),
            **server_options,
        )
        self.release = trio.Event()
        self.seen: list[str] = []
        server = self.server

        @server.tool(task_support="optional")
        async def job(label: str = "job") -> str:
            """Works until released."""
            try:
                await self.release.wait()
            except trio.Cancelled:
                self.seen.append(f"{label} cancelled")
                raise
            return f"{label} done"

        @server.tool(task_support="required")
        async def must() -> str:
            """Runs only as a task."""
            return "must done"

        @server.tool()
        async def plain() -> str:
            """Never a task."""
            return "plain done"

        @server.tool(task_support="required")
        async def broken(kind: str) -> str:
            """Fails: a JSON-RPC error, a tool error, or a crash."""
            if kind == "rpc":
                raise RPCError(-32099, "the backend refused", {"why": "quota"})
            if kind == "tool":
                raise ToolError("the input was wrong")
            raise RuntimeError("secret internal detail")

        @server.tool(task_support="required")
        async def ask_twice(ctx: Context) -> str:
            """Asks the user twice, one question after the other."""
            first = await ctx.elicit({"mode": "form", "message": "first?", "requestedSchema": FORM})
            second = await ctx.elicit(
                {"mode": "form", "message": "second?", "requestedSchema": FORM}
            )
            return f"{first.action} {second.action}"

        @server.tool(task_support="required")
        async def chatty(ctx: Context) -> str:
            """Reports progress and logs, then waits to be released."""
            await ctx.report_progress(1, 2, "half")
            await ctx.report_progress(1, 2, "not above the last: dropped")
            await ctx.info("working on it")
            await self.release.wait()
            await ctx.report_progress(2, 2)
            return "chatty done"

        @server.tool(task_support="required", defer_task=True)
        async def deferred(ctx: Context) -> str:
            """One input round as a request, then the rest as a task."""
            name = await ctx.elicit({"mode": "form", "message": "name?", "requestedSchema": FORM})
            await ctx.start_task()
            self.seen.append(f"in task: {ctx.in_task}")
            return f"{name.action} in a task"


@asynccontextmanager
async def handshake(
    tools: Tools, version: str = UTILITY, *, capabilities: dict[str, Any] | None = None
) -> AsyncIterator[RawPeer]:
    """A 2025-11-25 session of *tools*' server (the raw client declaring
    *capabilities*), its task runner running."""
    async with (
        tools.server.tasks.running(),
        open_raw_server(tools.server, version=None) as (peer, _session),
    ):
        await peer.handshake_as_client(version, capabilities=capabilities)
        yield peer


@asynccontextmanager
async def modern(tools: Tools) -> AsyncIterator[RawPeer]:
    """A 2026-07-28 connection (no handshake) to *tools*' server."""
    async with (
        tools.server.tasks.running(),
        open_raw_server(tools.server, version=None) as (peer, _session),
    ):
        yield peer


def meta(extension: bool = True, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    caps: dict[str, Any] = dict(capabilities or {})
    if extension:
        caps["extensions"] = {EXT: {}}
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
    }


async def ask(peer: RawPeer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request and its whole response frame."""
    frame: dict[str, Any] = await peer.request(method, params)
    return frame


async def result_of(peer: RawPeer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    frame = await ask(peer, method, params)
    assert "result" in frame, frame
    result: dict[str, Any] = frame["result"]
    return result


async def error_of(peer: RawPeer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    frame = await ask(peer, method, params)
    assert "error" in frame, frame
    error: dict[str, Any] = frame["error"]
    return error


async def start_2025(peer: RawPeer, name: str, **params: Any) -> dict[str, Any]:
    created = await result_of(
        peer, "tools/call", {"name": name, "arguments": {}, "task": {}, **params}
    )
    task: dict[str, Any] = created["task"]
    return task


async def start_modern(peer: RawPeer, name: str, **arguments: Any) -> dict[str, Any]:
    return await result_of(
        peer, "tools/call", {"name": name, "arguments": arguments, "_meta": meta()}
    )


async def status_until(
    peer: RawPeer, task_id: str, done: Callable[[dict[str, Any]], bool], **params: Any
) -> dict[str, Any]:
    """Poll tasks/get (every second of the autojump clock) until *done*."""
    with trio.fail_after(600):
        while True:
            got = await result_of(peer, "tasks/get", {"taskId": task_id, **params})
            if done(got):
                return got
            await trio.sleep(1)


def asking(question: str) -> Callable[[dict[str, Any]], bool]:
    """Matches the elicitation request that asks *question*."""
    return lambda f: (
        f.get("method") == "elicitation/create" and (f["params"]["message"] == question)
    )


def awaiting(key: str) -> Callable[[dict[str, Any]], bool]:
    """Matches a task that waits for input *key*."""
    return lambda task: key in task.get("inputRequests", {})


def terminal(task: dict[str, Any]) -> bool:
    return task["status"] in ("completed", "failed", "cancelled")


# ------------------------------------------------------ 2025-11-25 utility


@pytest.mark.spec("TK-01", "TK-18", "TL-18")
async def test_2025_capabilities_and_tool_definitions_declare_task_support() -> None:
    tools = Tools()
    async with handshake(tools) as peer:
        listed = await result_of(peer, "tools/list", {})
    support = {
        tool["name"]: tool.get("execution", {}).get("taskSupport") for tool in listed["tools"]
    }
    assert support["job"] == "optional"
    assert support["must"] == "required"
    assert support["plain"] is None
    caps = tools.server.capabilities()
    # No tasks/list without an authorization context unless asked for (TK-18).
    assert caps["tasks"] == {"cancel": {}, "requests": {"tools": {"call": {}}}}
    assert Server("x", task_list=True).capabilities().get("tasks") is None  # no task tools
    listed_too = Tools(task_list=True).server.capabilities()["tasks"]
    assert listed_too["list"] == {}
    # Older revisions see no execution field.
    async with handshake(Tools(), version="2025-06-18") as peer:
        old = await result_of(peer, "tools/list", {})
    assert all("execution" not in tool for tool in old["tools"])


@pytest.mark.spec("TK-07", "TK-10", "TK-11", "TK-12", "TK-13")
async def test_2025_task_lifecycle_result_waits_then_is_exactly_the_call_result(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    async with handshake(tools) as peer:
        task = await start_2025(peer, "job", task={"ttl": 60_000})
        assert task["status"] == "working"
        assert task["ttl"] == 60_000
        assert task["pollInterval"] == 1_000
        assert task["createdAt"].endswith("Z")
        assert len(task["taskId"]) == 32
        got = await result_of(peer, "tasks/get", {"taskId": task["taskId"]})
        assert got["status"] == "working"
        assert RELATED not in got.get("_meta", {})  # TK-13: not on tasks/get
        # tasks/result blocks until terminal ...
        rid = await peer.send_request("tasks/result", {"taskId": task["taskId"]})
        await trio.testing.wait_all_tasks_blocked()
        assert peer.responses(rid) == []
        tools.release.set()
        frame = await peer.wait_response(rid)
        # ... then is what the call would have returned, tagged with the task.
        assert frame["result"]["content"] == [{"type": "text", "text": "job done"}]
        assert frame["result"]["_meta"][RELATED] == {"taskId": task["taskId"]}
        done = await result_of(peer, "tasks/get", {"taskId": task["taskId"]})
        assert done["status"] == "completed"
        assert done["lastUpdatedAt"] >= done["createdAt"]


@pytest.mark.spec("TK-16", "CN-04")
async def test_2025_cancel_while_working_is_cancelled_before_the_reply_and_final(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    async with handshake(tools) as peer:
        task = await start_2025(peer, "job")
        task_id = task["taskId"]
        await trio.testing.wait_all_tasks_blocked()
        cancelled = await result_of(peer, "tasks/cancel", {"taskId": task_id})
        assert cancelled["status"] == "cancelled"
        assert cancelled["statusMessage"] == "The task was cancelled by request."
        await trio.testing.wait_all_tasks_blocked()
        assert tools.seen == ["job cancelled"]  # the work was stopped
        # Cancelling a terminal task is -32602 (TK-16), and it stays cancelled.
        again = await error_of(peer, "tasks/cancel", {"taskId": task_id})
        assert again["code"] == -32602
        assert (await result_of(peer, "tasks/get", {"taskId": task_id}))["status"] == "cancelled"
        # A cancelled task has no result to give.
        no_result = await error_of(peer, "tasks/result", {"taskId": task_id})
        assert no_result["code"] == -32602
        assert no_result["data"] == {"taskId": task_id, "status": "cancelled"}
    record = await tools.store.get(task_id, None)
    assert record is not None
    assert record.cancel_cause is TaskCause.REQUESTOR
    assert [move.new for move in record.moves] == [TaskState.CANCELLED]


@pytest.mark.spec("CN-04", "TK-11")
async def test_2025_cancelling_the_request_after_the_hand_off_never_reaches_the_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    async with handshake(tools) as peer:
        rid = await peer.send_request("tools/call", {"name": "job", "arguments": {}, "task": {}})
        task = (await peer.wait_response(rid))["result"]["task"]
        await peer.cancel(rid)  # a late cancel of a request that has ended
        await trio.testing.wait_all_tasks_blocked()
        assert tools.seen == []
        got = await result_of(peer, "tasks/get", {"taskId": task["taskId"]})
        assert got["status"] == "working"
        tools.release.set()
        done = await result_of(peer, "tasks/result", {"taskId": task["taskId"]})
        assert done["content"][0]["text"] == "job done"


@pytest.mark.spec("TK-12", "TK-17")
@pytest.mark.parametrize(
    ("kind", "status", "outcome"),
    [
        (
            "rpc",
            "failed",
            {"error": {"code": -32099, "message": "the backend refused", "data": {"why": "quota"}}},
        ),
        # A crash is what a plain call gives too: an isError result, no details.
        ("crash", "failed", {"text": "Tool broken failed"}),
        ("tool", "failed", {"text": "the input was wrong"}),
    ],
)
async def test_2025_a_failing_tool_fails_its_task_with_what_the_call_would_have_given(
    autojump_clock: trio.testing.MockClock, kind: str, status: str, outcome: dict[str, Any]
) -> None:
    tools = Tools()
    async with handshake(tools) as peer:
        task = await start_2025(peer, "broken", arguments={"kind": kind})
        frame = await ask(peer, "tasks/result", {"taskId": task["taskId"]})
        got = await result_of(peer, "tasks/get", {"taskId": task["taskId"]})
    assert got["status"] == status
    if "error" in outcome:
        assert frame["error"] == outcome["error"]
        assert got["statusMessage"] == outcome["error"]["message"]
    else:
        # A tool error fails a 2025-11-25 task, and its result is the isError result.
        assert frame["result"]["isError"] is True
        assert frame["result"]["content"][0]["text"] == outcome["text"]


@pytest.mark.spec("TK-04", "TK-05")
async def test_2025_task_support_is_enforced_both_ways() -> None:
    tools = Tools()
    async with handshake(tools) as peer:
        required = await error_of(peer, "tools/call", {"name": "must", "arguments": {}})
        assert required["code"] == -32601
        forbidden = await error_of(
            peer, "tools/call", {"name": "plain", "arguments": {}, "task": {}}
        )
        assert forbidden["code"] == -32601
        # An optional tool without task is a plain call.
        tools.release.set()
        plain = await result_of(peer, "tools/call", {"name": "job", "arguments": {}})
        assert plain["content"][0]["text"] == "job done"
    # A server without task tools ignores task metadata (TK-05).
    bare = Server("bare")

    @bare.tool()
    async def hello() -> str:
        return "hello"

    async with bare.tasks.running(), open_raw_server(bare, version=UTILITY) as (peer, _):
        served = await result_of(
            peer, "tools/call", {"name": "hello", "arguments": {}, "task": {"ttl": 5}}
        )
        assert served["content"][0]["text"] == "hello"
        unknown = await error_of(peer, "tasks/get", {"taskId": "x"})
        assert unknown["code"] == -32601  # tasks not declared: not a method here


@pytest.mark.spec("TK-09", "TK-13")
async def test_2025_a_task_asking_for_input_twice_tags_its_requests_and_moves_each_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    async with handshake(tools, capabilities={"elicitation": {"form": {}}}) as peer:
        task = await start_2025(peer, "ask_twice")
        task_id = task["taskId"]
        for question in ("first?", "second?"):
            asked = await peer.wait_for(asking(question))
            assert asked["params"]["_meta"][RELATED] == {"taskId": task_id}
            waiting = await result_of(peer, "tasks/get", {"taskId": task_id})
            assert waiting["status"] == "input_required"
            await peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}})
        final = await result_of(peer, "tasks/result", {"taskId": task_id})
        assert final["content"][0]["text"] == "accept accept"
    record = await tools.store.get(task_id, None)
    assert record is not None
    assert [move.new.value for move in record.moves] == [
        "input_required",
        "working",
        "input_required",
        "working",
        "completed",
    ]


@pytest.mark.spec("TK-16", "TK-09")
async def test_2025_cancel_while_input_required_withdraws_the_input_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    async with handshake(tools, capabilities={"elicitation": {"form": {}}}) as peer:
        task = await start_2025(peer, "ask_twice")
        asked = await peer.wait_for(asking("first?"))
        waiting = await result_of(peer, "tasks/get", {"taskId": task["taskId"]})
        assert waiting["status"] == "input_required"
        cancelled = await result_of(peer, "tasks/cancel", {"taskId": task["taskId"]})
        assert cancelled["status"] == "cancelled"
        # The work stopped: its outstanding elicitation is cancelled at the client (CN-01).
        withdrawn = await peer.wait_method("notifications/cancelled")
        assert withdrawn["params"]["requestId"] == asked["id"]
        # An answer that comes late changes nothing.
        await peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}})
        await trio.testing.wait_all_tasks_blocked()
        final = await result_of(peer, "tasks/get", {"taskId": task["taskId"]})
        assert final["status"] == "cancelled"


@pytest.mark.spec("TK-13")
async def test_2025_a_task_keeps_its_progress_token_and_tags_progress_and_logs(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    async with handshake(tools) as peer:
        await result_of(peer, "logging/setLevel", {"level": "info"})
        task = await start_2025(peer, "chatty", _meta={"progressToken": "p1"})
        related = {RELATED: {"taskId": task["taskId"]}}
        with trio.fail_after(60):
            first = await peer.wait_method("notifications/progress")
        assert first["params"] == {
            "progressToken": "p1",
            "progress": 1,
            "total": 2,
            "message": "half",
            "_meta": related,
        }
        logged = await peer.wait_method("notifications/message")
        assert logged["params"]["data"] == "working on it"
        assert logged["params"]["_meta"] == related
        tools.release.set()
        await result_of(peer, "tasks/result", {"taskId": task["taskId"]})
        progress = [
            f["params"]["progress"]
            for f in peer.unread()
            if f.get("method") == "notifications/progress"
        ]
    # After the CreateTaskResult the token stayed valid; the repeat was dropped.
    assert progress == [1, 2]


async def test_an_extension_task_sends_no_progress_or_log(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    async with modern(tools) as peer:
        params = {"name": "chatty", "arguments": {}}
        task_meta = {**meta(), "progressToken": "p1", "io.modelcontextprotocol/logLevel": "debug"}
        created = await result_of(peer, "tools/call", {**params, "_meta": task_meta})
        tools.release.set()
        done = await status_until(peer, created["taskId"], terminal, _meta=meta())
        assert done["result"]["content"][0]["text"] == "chatty done"
        sent = [f.get("method") for f in peer.unread()]
    assert "notifications/progress" not in sent
    assert "notifications/message" not in sent


@pytest.mark.spec("TK-18", "TK-15")
async def test_tasks_are_bound_to_their_owner_everywhere(
    autojump_clock: trio.testing.MockClock,
) -> None:
    owner = ["alice"]
    tools = Tools(task_owner=lambda request: owner[0], task_list=True)
    async with handshake(tools) as peer:
        task = await start_2025(peer, "job")
        task_id = task["taskId"]
        listed = await result_of(peer, "tasks/list", {})
        assert [t["taskId"] for t in listed["tasks"]] == [task_id]
        owner[0] = "bob"
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            refused = await error_of(peer, method, {"taskId": task_id})
            assert refused["code"] == -32602
            assert "not found" in refused["message"]
        assert (await result_of(peer, "tasks/list", {}))["tasks"] == []
        owner[0] = "alice"
        assert (await result_of(peer, "tasks/get", {"taskId": task_id}))["status"] == "working"
        bad = await error_of(peer, "tasks/list", {"cursor": "not-a-cursor"})
        assert bad["code"] == -32602
        tools.release.set()


@pytest.mark.spec("TK-10", "TK-18")
async def test_ttl_is_capped_and_expiry_stops_the_work_then_says_expired(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools(runner={"max_ttl_ms": 10_000})
    async with handshake(tools) as peer:
        task = await start_2025(peer, "job", task={"ttl": 10**12})
        assert task["ttl"] == 10_000
        await trio.sleep(11)
        await trio.testing.wait_all_tasks_blocked()
        assert tools.seen == ["job cancelled"]
        gone = await error_of(peer, "tasks/get", {"taskId": task["taskId"]})
        assert gone["code"] == -32602
        assert "expired" in gone["message"]


@pytest.mark.spec("TK-18")
async def test_the_running_bound_refuses_one_more_with_a_clear_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools(runner={"max_running": 1})
    async with handshake(tools) as peer:
        await start_2025(peer, "job")
        refused = await error_of(peer, "tools/call", {"name": "job", "arguments": {}, "task": {}})
        assert refused["code"] == -32603
        assert refused["data"] == {"limit": "max_running"}
        tools.release.set()


@pytest.mark.spec("TK-18")
async def test_the_creation_rate_is_bounded_and_the_refusal_says_when_to_retry(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools(runner={"creation_rate": 2.0, "creation_burst": 3})
    tools.release.set()  # every job ends at once: only the rate bounds them
    async with handshake(tools) as peer:
        for _ in range(3):  # the burst
            await start_2025(peer, "job")
        refused = await error_of(peer, "tools/call", {"name": "job", "arguments": {}, "task": {}})
        assert refused["code"] == -32603
        assert refused["data"] == {"limit": "creation_rate", "retryAfter": 0.5}
        await trio.sleep(0.5)  # one token back, at two a second
        await start_2025(peer, "job")
        again = await error_of(peer, "tools/call", {"name": "job", "arguments": {}, "task": {}})
        assert again["data"]["limit"] == "creation_rate"
        # Plain calls are never bounded by it.
        plain = await result_of(peer, "tools/call", {"name": "job", "arguments": {}})
        assert plain["content"][0]["text"] == "job done"
    with pytest.raises(ValueError, match="creation_rate"):
        TaskRunner(creation_rate=0)


async def test_shutdown_cancels_working_tasks_with_cause_shutdown(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    async with handshake(tools) as peer:
        task = await start_2025(peer, "job")
        await trio.testing.wait_all_tasks_blocked()
    # The runner closed with the session's block: the work was stopped and
    # the record says why; the store outlives the runner.
    assert tools.seen == ["job cancelled"]
    record = await tools.store.get(task["taskId"], None)
    assert record is not None
    assert record.state is TaskState.CANCELLED
    assert record.moves[-1].cause is TaskCause.SHUTDOWN
    assert record.status_message == "The server shut down before the task finished."
    assert not tools.server.tasks.is_running


async def test_without_a_running_runner_a_task_is_refused_not_lost() -> None:
    tools = Tools()
    async with open_raw_server(tools.server, version=UTILITY) as (peer, _session):
        refused = await error_of(peer, "tools/call", {"name": "job", "arguments": {}, "task": {}})
    assert refused["code"] == -32603
    assert "task runner" in refused["message"]
    assert len(tools.store) == 0


# ------------------------------------------------- 2026-07-28 extension


@pytest.mark.spec("TK-19", "ME-09")
async def test_extension_only_for_a_request_that_declared_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    async with modern(tools) as peer:
        discovered = await result_of(peer, "server/discover", {"_meta": meta()})
        assert discovered["capabilities"]["extensions"] == {EXT: {}}
        assert "tasks" not in discovered["capabilities"]
        tools.release.set()
        plain = await result_of(
            peer, "tools/call", {"name": "job", "arguments": {}, "_meta": meta(extension=False)}
        )
        assert plain["resultType"] == "complete"
        required = await error_of(
            peer, "tools/call", {"name": "must", "arguments": {}, "_meta": meta(extension=False)}
        )
        assert required["code"] == -32021
        assert required["data"] == {"requiredCapabilities": {"extensions": {EXT: {}}}}
        for method in ("tasks/get", "tasks/cancel", "tasks/update"):
            gated = await error_of(
                peer,
                method,
                {"taskId": "nope", "inputResponses": {}, "_meta": meta(extension=False)},
            )
            assert gated["code"] == -32021
        # The legacy task param alone asks for nothing.
        legacy = await result_of(
            peer,
            "tools/call",
            {"name": "plain", "arguments": {}, "task": {"ttl": 5}, "_meta": meta(extension=False)},
        )
        assert legacy["content"][0]["text"] == "plain done"
        for method in ("tasks/result", "tasks/list"):
            removed = await error_of(peer, method, {"taskId": "x", "_meta": meta()})
            assert removed["code"] == -32601
        unknown = await error_of(peer, "tasks/get", {"taskId": "nope", "_meta": meta()})
        assert unknown["code"] == -32602


@pytest.mark.spec("TK-19")
async def test_extension_task_result_inline_and_cooperative_cancel_acknowledged(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    async with modern(tools) as peer:
        created = await start_modern(peer, "job")
        assert created["resultType"] == "task"
        assert created["ttlMs"] == 3_600_000
        assert created["pollIntervalMs"] == 1_000
        assert not {"task", "ttl", "result", "error", "requestState"} & set(created)
        task_id = created["taskId"]
        got = await result_of(peer, "tasks/get", {"taskId": task_id, "_meta": meta()})
        assert (got["resultType"], got["status"]) == ("complete", "working")
        tools.release.set()
        done = await status_until(peer, task_id, terminal, _meta=meta())
        assert done["status"] == "completed"
        assert done["result"]["content"] == [{"type": "text", "text": "job done"}]
        assert RELATED not in done["result"].get("_meta", {})
        # Cancelling a terminal task is acknowledged, not an error.
        ack = await result_of(peer, "tasks/cancel", {"taskId": task_id, "_meta": meta()})
        assert set(ack) - {"_meta"} == {"resultType"}
        # A tool error completes an extension task; a JSON-RPC error fails it.
        for kind, status, key in (("tool", "completed", "result"), ("rpc", "failed", "error")):
            task = await start_modern(peer, "broken", kind=kind)
            end = await status_until(peer, task["taskId"], terminal, _meta=meta())
            assert end["status"] == status
            assert key in end
        assert end["error"]["code"] == -32099


@pytest.mark.spec("TK-19", "TK-16")
async def test_extension_cancel_while_working_and_while_input_required(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    ask_meta = meta(capabilities={"elicitation": {"form": {}}})
    async with modern(tools) as peer:
        working = await start_modern(peer, "job", label="w")
        asking = await result_of(
            peer,
            "tools/call",
            {"name": "ask_twice", "arguments": {}, "_meta": ask_meta},
        )
        waiting = await status_until(
            peer, asking["taskId"], lambda t: t["status"] == "input_required", _meta=meta()
        )
        assert list(waiting["inputRequests"]) == ["elicitation-1"]
        for task_id in (working["taskId"], asking["taskId"]):
            ack = await result_of(peer, "tasks/cancel", {"taskId": task_id, "_meta": meta()})
            assert ack["resultType"] == "complete"
            end = await status_until(peer, task_id, terminal, _meta=meta())
            assert end["status"] == "cancelled"
            assert "inputRequests" not in end
    assert tools.seen == ["w cancelled"]


@pytest.mark.spec("TK-19", "TK-09")
async def test_extension_input_answered_by_tasks_update_one_key_at_a_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    ask_meta = meta(capabilities={"elicitation": {"form": {}}})
    async with modern(tools) as peer:
        created = await result_of(
            peer,
            "tools/call",
            {"name": "ask_twice", "arguments": {}, "_meta": ask_meta},
        )
        task_id = created["taskId"]
        for key in ("elicitation-1", "elicitation-2"):
            waiting = await status_until(
                peer,
                task_id,
                awaiting(key),
                _meta=meta(),
            )
            assert waiting["status"] == "input_required"
            # An answer for a key not outstanding is ignored.
            await result_of(
                peer,
                "tasks/update",
                {"taskId": task_id, "inputResponses": {"other": {"x": 1}}, "_meta": meta()},
            )
            ack = await result_of(
                peer,
                "tasks/update",
                {
                    "taskId": task_id,
                    "inputResponses": {key: {"action": "decline"}},
                    "_meta": meta(),
                },
            )
            assert set(ack) - {"_meta"} == {"resultType"}
            after = await result_of(peer, "tasks/get", {"taskId": task_id, "_meta": meta()})
            assert key not in after.get("inputRequests", {})  # gone on the very next get
        done = await status_until(peer, task_id, terminal, _meta=meta())
        assert done["result"]["content"][0]["text"] == "decline decline"


@pytest.mark.spec("TK-19", "PT-03")
async def test_a_deferred_task_finishes_its_input_round_before_it_exists(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    ask_meta = meta(capabilities={"elicitation": {"form": {}}})
    async with modern(tools) as peer:
        first = await result_of(
            peer,
            "tools/call",
            {"name": "deferred", "arguments": {}, "_meta": ask_meta},
        )
        assert first["resultType"] == "input_required"
        assert "taskId" not in first
        [key] = first["inputRequests"]
        second = await result_of(
            peer,
            "tools/call",
            {
                "name": "deferred",
                "arguments": {},
                "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
                "requestState": first["requestState"],
                "_meta": ask_meta,
            },
        )
        assert second["resultType"] == "task"
        assert not {"requestState", "inputRequests"} & set(second)
        done = await status_until(peer, second["taskId"], terminal, _meta=meta())
        assert done["result"]["content"][0]["text"] == "accept in a task"
    assert tools.seen == ["in task: True"]


@pytest.mark.spec("TK-19", "SB-05")
async def test_extension_status_pushed_on_a_listen_stream_that_asked_for_the_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    owner = ["alice"]
    tools = Tools(task_owner=lambda request: owner[0])
    async with modern(tools) as peer:
        created = await start_modern(peer, "job")
        task_id = created["taskId"]
        owner[0] = "bob"
        theirs = await start_modern(peer, "job", label="bob's")
        owner[0] = "alice"
        # Without the extension declared on the listen request: -32021.
        refused = await error_of(
            peer,
            "subscriptions/listen",
            {"notifications": {"taskIds": [task_id]}, "_meta": meta(extension=False)},
        )
        assert refused["code"] == -32021
        listen_id = await peer.send_request(
            "subscriptions/listen",
            {"notifications": {"taskIds": [task_id, theirs["taskId"], "nope"]}, "_meta": meta()},
        )
        ack = await peer.wait_method("notifications/subscriptions/acknowledged")
        # Only the requestor's own task is covered.
        assert ack["params"]["notifications"] == {"taskIds": [task_id]}
        tools.release.set()
        with trio.fail_after(60):
            notice = await peer.wait_method("notifications/tasks")
        params = notice["params"]
        assert params["_meta"]["io.modelcontextprotocol/subscriptionId"] == listen_id
        assert (params["taskId"], params["status"]) == (task_id, "completed")
        assert params["result"]["content"][0]["text"] == "job done"
        assert "resultType" not in params
        await peer.cancel(listen_id)
    pushed = [f for f in peer.unread() if f.get("method") == "notifications/tasks"]
    assert all(f["params"]["taskId"] == task_id for f in pushed)


class FailingStore(MemoryTaskStore):
    """A memory store whose waits and writes fail once ``down`` is set: a
    shared store gone out of reach, as the runner sees it."""

    down = False

    async def wait_changed(self, task_id: str, seen: Any) -> Any:
        record = await super().wait_changed(task_id, seen)
        if self.down:
            raise TaskStoreError("the store is out of reach")
        return record

    async def update(self, task_id: str, expected: Any, new_record: Any) -> Any:
        if self.down:
            raise TaskStoreError("the store is out of reach")
        return await super().update(task_id, expected, new_record)


async def test_a_failing_store_never_takes_the_server_down(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    tools = Tools()
    store = FailingStore(clock=wall)
    tools.store = store
    tools.server.tasks.store = store
    async with handshake(tools) as peer:
        task = await start_2025(peer, "job")
        await trio.testing.wait_all_tasks_blocked()
        store.down = True
        tools.release.set()  # the work ends; its watcher and its end both fail
        await trio.testing.wait_all_tasks_blocked()
        # The session and the runner go on.
        tools.release = trio.Event()
        plain = await result_of(peer, "tools/call", {"name": "plain", "arguments": {}})
        assert plain["content"][0]["text"] == "plain done"
        assert tools.server.tasks.is_running
        store.down = False
        second = await start_2025(peer, "job")
        assert second["status"] == "working"
        tools.release.set()
        done = await result_of(peer, "tasks/result", {"taskId": second["taskId"]})
        assert done["content"][0]["text"] == "job done"
    messages = [r.getMessage() for r in caplog.records]
    assert any(f"task {task['taskId']}: its end could not be recorded" in m for m in messages)
