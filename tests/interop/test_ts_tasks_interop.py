"""Tasks (2025-11-25, ``basic/utilities/tasks``) against the official TypeScript
SDK v1's experimental tasks, both ways, over stdio.

The SDK (``@modelcontextprotocol/sdk``, tested with 1.32.2) is the one the
other interop tests use, installed into the same cache directory
(``test_stdio_interop.ts_sdk_dir``; if npm cannot install it the tests fail).

* Our client against a TS server (``ts_tasks_server.mjs``: tools registered
  with ``server.experimental.tasks.registerToolTask`` over the SDK's
  ``InMemoryTaskStore`` and ``InMemoryTaskMessageQueue``): a task that
  completes (status, wait, result with its related-task ``_meta``), the ttl
  asked for, a task that fails with a tool error, a ``taskSupport:
  "required"`` tool called plainly (polled to its result), an optional one
  called plainly (the SDK polls on its side), a task cancelled while working
  (its work sees the cancel), a task that needs input (the SDK queues its
  elicitation until we wait in ``tasks/result``), ``tasks/list``.
* A TS client (``ts_tasks_client.mjs``: ``client.experimental.tasks``)
  against our server (``tasks_trio_server.py``): a task it creates with a
  task-augmented ``tools/call``, polls with ``tasks/get`` while our handler
  is held, then reads with ``tasks/result``; the SDK's ``callToolStream`` on
  an optional, a required and a failing tool; a task that asks it for input;
  a task it cancels; ``tasks/list``. It prints one JSON summary, asserted
  here.

Both interoperate on every point the spec fixes. What the SDK does where it
differs from us, asserted as its behaviour (the spec allows each, or the
difference is the SDK's bug):

* ``tasks/result`` of a cancelled task: the SDK answers -32603 (its store has
  "no result stored"), we answer -32602; the spec names no code for it.
* It sends ``notifications/tasks/status`` (a MAY) when a task's work stores
  its outcome, none for ``tasks/cancel``; we send none (TK-14).
* Its ``callToolStream`` ends a failed task with an error of its own making
  (-32603 "Task <id> failed") without calling ``tasks/result``, which would
  have given the call's ``isError`` result (TK-12).
* Its ``CreateTaskResult`` may already say ``input_required``: its store
  hands out the task object its work then updates.
* A bug of the SDK's: the timeout of a request queued for a task is never
  cleared once the answer arrives, so it fires later and the SDK sends
  ``notifications/cancelled`` for a request we answered; we ignore it and
  record it (CN-06).

Events are ordered by what the peers report (a tool that waits on a gate the
peer opens, a line a peer writes once its work started or saw the cancel, a
frame we wait for), never by sleeping; every process runs under
``trio.fail_after`` and is ended and reaped on the way out.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from npm_cache import installed_version, npm_install
from test_modern_interop import FrameLog
from test_stdio_interop import ts_sdk_dir
from test_ts_v2_interop import Lines, text

from trio_mcp import FormElicitation, RPCError, open_stdio_client
from trio_mcp import types as t
from trio_mcp.protocol import Direction, FrameDirection, RequestState, TaskForm, TaskState
from trio_mcp.transports import ExitStep, StdioProcess

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
#: Bound on anything that must merely not hang (a cold node on a loaded machine).
NOT_HUNG = 30.0
RELATED = "io.modelcontextprotocol/related-task"
SCRIPTS = [HERE / "ts_tasks_server.mjs", HERE / "ts_tasks_client.mjs"]


class Frames(FrameLog):
    """Every frame our session read or wrote, with a look at what it read and
    a way to wait for a frame."""

    def __init__(self) -> None:
        super().__init__()
        self._changed = trio.Event()

    def on_frame(self, direction: FrameDirection, data: bytes, at: float) -> None:
        super().on_frame(direction, data, at)
        self._changed.set()
        self._changed = trio.Event()

    async def wait_received(self, method: str, **params: Any) -> dict[str, Any]:
        """The first frame read with *method* and these *params*, once there is one.

        Cancellation: safe; nothing is consumed.
        """
        while True:
            for frame in self.received(method):
                if all(frame.get("params", {}).get(k) == v for k, v in params.items()):
                    return frame
            await self._changed.wait()

    def received(self, method: str) -> list[dict[str, Any]]:
        """The frames we read with *method*."""
        return [
            frame
            for direction, frame in self.frames
            if direction is FrameDirection.IN and frame.get("method") == method
        ]


async def sugar(request: FormElicitation) -> t.ElicitResult:
    """Our elicitation handler: yes to the TS server's question."""
    assert request.message == "Sugar?"
    return t.ElicitResult(action="accept", content={"ok": True})


def ts_tasks_dir() -> Path:
    """The v1 SDK's cache dir (installed as the other v1 interop tests do) with
    this module's node scripts copied in: node resolves the SDK from there."""
    cache = ts_sdk_dir()
    assert installed_version(cache, "@modelcontextprotocol/sdk") is not None
    return npm_install(cache, {"@modelcontextprotocol/sdk": None, "zod": None}, SCRIPTS)


@pytest.mark.spec("TK-01")
@pytest.mark.spec("TK-02")
@pytest.mark.spec("TK-09")
@pytest.mark.spec("TK-11")
@pytest.mark.spec("TK-12")
@pytest.mark.spec("TK-13")
@pytest.mark.spec("TK-14")
@pytest.mark.spec("TK-16")
@pytest.mark.spec("CN-06")
async def test_our_client_against_a_typescript_v1_task_server() -> None:
    cache = await trio.to_thread.run_sync(ts_tasks_dir)
    server_log, frames = Lines(), Frames()
    with trio.fail_after(NOT_HUNG * 2):
        async with open_stdio_client(
            "node",
            [str(cache / "ts_tasks_server.mjs")],
            cwd=str(cache),
            inherit_env=True,
            stderr=server_log.append,
            era="legacy",
            observer=frames,
            elicitation=sugar,
        ) as client:
            assert client.protocol_version == "2025-11-25"
            tasks_caps = client.session.protocol.peer_capabilities["tasks"]
            assert tasks_caps == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
            support = {
                name: tool.execution.task_support if tool.execution else None
                for name, tool in client.tools.items()
            }
            assert support == {
                "brew": "optional",
                "steep": "required",
                "spoil": "optional",
                "simmer": "optional",
                "sweeten": "optional",
            }

            # A task that completes: answered at once with the task (TK-11).
            brew = await client.call_tool("brew", {"ms": 100}, as_task=True)
            assert brew.form is TaskForm.V2025_11_25
            assert brew.record.state is TaskState.WORKING
            assert brew.record.ttl_ms is None  # none asked: the SDK's store keeps it for good
            assert brew.record.poll_interval_ms == 20
            now = await brew.status()
            assert now.state in (TaskState.WORKING, TaskState.COMPLETED)
            seen: list[TaskState] = []
            final = await brew.wait(on_status=lambda record: seen.append(record.state))
            assert final.state is TaskState.COMPLETED
            assert seen[-1] is TaskState.COMPLETED
            assert set(seen) <= {TaskState.WORKING, TaskState.COMPLETED}
            brewed = await brew.result()
            assert text(brewed) == "brewed after 100 ms"
            assert brewed.is_error is False
            # tasks/result carries the related-task _meta (TK-13).
            assert brewed.meta is not None
            assert dict(brewed.meta)[RELATED] == {"taskId": brew.task_id}

            # The ttl asked for is the ttl granted (the SDK's store takes it as is).
            kept = await client.call_tool("brew", {"ms": 0}, as_task=True, ttl=60_000)
            assert kept.record.ttl_ms == 60_000
            assert text(await kept.result()) == "brewed after 0 ms"
            assert (await kept.status()).state is TaskState.COMPLETED

            # A tool error fails the task, and tasks/result gives the isError
            # result the call would have given (TK-12, TK-17).
            spoil = await client.call_tool("spoil", as_task=True)
            assert (await spoil.wait()).state is TaskState.FAILED
            spoiled = await spoil.result()
            assert spoiled.is_error is True
            assert text(spoiled) == "the milk was off"

            # A required tool called plainly: augmented, polled, its result.
            steeped = await client.call_tool("steep")
            assert text(steeped) == "steeped"
            calls = [r for r in client.session.requests() if r.method == "tools/call"]
            assert calls[-1].state is RequestState.COMPLETED
            methods = [r.method for r in client.session.requests()]
            assert methods[-1] == "tasks/result"

            # An optional tool called plainly: the SDK runs it as a task on its
            # side and answers the call with the result (its automatic polling).
            assert text(await client.call_tool("brew", {"ms": 10})) == "brewed after 10 ms"

            # A task cancelled while working: cancelled in the reply (TK-16),
            # and the work (which waits on the store's cancel) stops.
            simmer = await client.call_tool("simmer", as_task=True)
            assert (await simmer.status()).state is TaskState.WORKING
            cancelled = await simmer.cancel()
            assert cancelled.state is TaskState.CANCELLED
            assert cancelled.status_message == "Client cancelled task execution."
            with trio.fail_after(NOT_HUNG):
                await server_log.wait_for(f"simmer cancelled {simmer.task_id}")
            assert (await simmer.status()).state is TaskState.CANCELLED
            # A cancelled task has no result. The spec names no code for that;
            # the SDK's store throws a plain Error, which it answers -32603
            # (we answer -32602, as for a task id with nothing to give).
            with pytest.raises(RPCError) as no_result:
                await simmer.result()
            assert no_result.value.code == -32603
            assert "has no result stored" in no_result.value.message
            # Cancelling a terminal task is -32602 (TK-16). The handle knows the
            # task is terminal and sends nothing: ask on the session itself.
            for done in (simmer, brew):
                with pytest.raises(RPCError) as refused:
                    await client.session.request("tasks/cancel", {"taskId": done.task_id})
                assert refused.value.code == -32602

            # Input inside a task (TK-09): the SDK moves the task to
            # input_required and queues its elicitation until we wait in
            # tasks/result, which is what our wait() does on seeing that status;
            # our handler answers, the work goes on, tasks/result returns.
            # The SDK's CreateTaskResult may already say input_required (its
            # work asks at once, and updates the very object the answer is
            # made of); the task began working (TK-08), and our mirror records
            # the move from there either way.
            sweeten = await client.call_tool("sweeten", as_task=True)
            assert sweeten.state in (TaskState.WORKING, TaskState.INPUT_REQUIRED)
            final = await sweeten.wait()
            assert final.state is TaskState.COMPLETED
            assert final.moves[0].old is TaskState.WORKING
            assert final.moves[0].new is TaskState.INPUT_REQUIRED
            assert text(await sweeten.result()) == "sugar: accept true"
            # The SDK keeps the timeout of that queued request running after
            # our answer reached it (a leak in the SDK: its path for answers to
            # queued requests never clears it), so when it fires the SDK sends
            # notifications/cancelled for a request we answered long ago. The
            # cancel of a finished request is ignored and recorded (CN-06);
            # the session goes on.
            (elicit,) = frames.received("elicitation/create")
            with trio.fail_after(NOT_HUNG):
                stray = await frames.wait_received(
                    "notifications/cancelled", requestId=elicit["id"]
                )
            assert "timed out" in stray["params"]["reason"]
            answered = client.session.protocol.record(Direction.INBOUND, elicit["id"])
            assert answered is not None
            assert answered.state is RequestState.COMPLETED
            assert answered.late_events == ("cancel by peer in completed: ignored",)
            await client.ping()

            # tasks/list: every task of ours, the plain calls' too.
            listed = {task.task_id: task.status for task in await client.list_tasks()}
            assert listed[brew.task_id] == "completed"
            assert listed[spoil.task_id] == "failed"
            assert listed[simmer.task_id] == "cancelled"
            assert listed[sweeten.task_id] == "completed"
            assert len(listed) == 7  # brew, kept, spoil, steep, plain brew, simmer, sweeten
            transport = client.session.transport
    # On the wire: `task` only where a task was asked for or required (TK-02),
    # with the ttl when one was given.
    asked = [(f["params"]["name"], f["params"].get("task")) for f in frames.sent("tools/call")]
    assert asked == [
        ("brew", {}),
        ("brew", {"ttl": 60_000}),
        ("spoil", {}),
        ("steep", {}),
        ("brew", None),
        ("simmer", {}),
        ("sweeten", {}),
    ]
    # The elicitation came while our tasks/result for that task was open, and
    # names the task (TK-13).
    assert elicit["params"]["_meta"][RELATED] == {"taskId": sweeten.task_id}
    results = [f for f in frames.sent("tasks/result") if f["params"]["taskId"] == sweeten.task_id]
    at = [f for _, f in frames.frames]
    assert at.index(results[0]) < at.index(elicit)
    # The SDK sends notifications/tasks/status when a task's work stores its
    # outcome (a MAY, TK-14; our client polls all the same), not for a cancel.
    notified = {
        (f["params"]["taskId"], f["params"]["status"])
        for f in frames.received("notifications/tasks/status")
    }
    assert (brew.task_id, "completed") in notified
    assert (spoil.task_id, "failed") in notified
    assert not any(task_id == simmer.task_id for task_id, _ in notified)
    # tasks/get answers carry no related-task _meta (TK-13's SHOULD NOT).
    gets = {f["id"] for f in frames.sent("tasks/get")}
    answers = [f for d, f in frames.frames if d is FrameDirection.IN and f.get("id") in gets]
    assert answers
    assert all(RELATED not in f["result"].get("_meta", {}) for f in answers)
    assert isinstance(transport, StdioProcess)
    assert transport.exit_step is ExitStep.STDIN_CLOSED


def stream_of(messages: list[list[Any]], final: list[Any]) -> None:
    """*messages* is what the SDK's ``callToolStream`` yields for a task that
    ends in *final*: created ``working``, polled ``working`` any number of times
    (how often is the race between its first ``tasks/get`` and our handler),
    then the terminal status and *final*."""
    assert messages[0] == ["taskCreated", "working"]
    assert messages[-1] == final
    *polled, last = messages[1:-1]
    assert all(m == ["taskStatus", "working"] for m in polled), messages
    assert last[0] == "taskStatus"


@pytest.mark.spec("TK-01")
@pytest.mark.spec("TK-04")
@pytest.mark.spec("TK-09")
@pytest.mark.spec("TK-12")
@pytest.mark.spec("TK-13")
@pytest.mark.spec("TK-15")
@pytest.mark.spec("TK-16")
@pytest.mark.spec("TK-17")
async def test_a_typescript_v1_client_against_our_task_server() -> None:
    cache = await trio.to_thread.run_sync(ts_tasks_dir)
    server = [sys.executable, str(HERE / "tasks_trio_server.py")]
    with trio.fail_after(NOT_HUNG * 2):
        done = await trio.run_process(
            ["node", str(cache / "ts_tasks_client.mjs"), *server],
            cwd=cache,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    seen = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert seen["server"] == "trio-tasks"
    assert seen["tasksCapability"] == {
        "list": {},
        "cancel": {},
        "requests": {"tools": {"call": {}}},
    }
    assert seen["taskSupport"] == {
        "gated": "optional",
        "open_gate": None,
        "sift": "required",
        "sour": "optional",
        "confirm": "optional",
        "stall": "optional",
    }

    # 1. Created working with the ttl it asked for (TK-10, TK-11), working
    # while the gate was shut, completed once it was opened; tasks/result is
    # the call's result with the related-task _meta (TK-12, TK-13).
    assert seen["created"] == {"status": "working", "ttl": 60000}
    assert seen["opened"] == "open"
    assert seen["statuses"] == ["working", "completed"]
    assert seen["result"]["text"] == "first passed the gate"
    assert seen["result"]["related"] is not None

    # 2. callToolStream: task-augmented by the SDK from our tools/list.
    stream_of(seen["streamOptional"], ["result", "second passed the gate"])
    stream_of(seen["streamRequired"], ["result", "sifted 3"])
    # The SDK's plain callTool refuses a required tool on its own side.
    assert seen["plainRequired"]["code"] == -32600
    assert "requires task-based execution" in seen["plainRequired"]["message"]
    # A tool error fails the task (TK-17). The SDK's stream then ends with an
    # error of its own making (-32603 "Task <id> failed") and does not call
    # tasks/result, which gives what the call would have given (TK-12): the
    # tool's isError result.
    failed = seen["streamFailed"]
    stream_of(failed, failed[-1])
    assert failed[-2] == ["taskStatus", "failed"]
    assert failed[-1][:2] == ["error", -32603]
    assert failed[-1][2].endswith("failed")
    assert seen["failedResult"]["isError"] is True
    assert seen["failedResult"]["content"] == [{"type": "text", "text": "curdled"}]

    # 3. Input inside a task (TK-09): our elicitation carried the task's id
    # (TK-13) and the task was input_required until the SDK's handler
    # answered, then completed with the answer; tasks/result gave it.
    assert seen["question"] == {
        "message": "Confirm tea?",
        "related": {"taskId": seen["confirmingId"]},
    }
    assert seen["whileAsked"] == "input_required"
    assert seen["confirmed"] == {
        "text": "confirmed tea",
        "related": {"taskId": seen["confirmingId"]},
    }
    assert seen["afterAnswer"] == "completed"
    # callToolStream with input: what its polls see is a race with our handler
    # and the SDK's answer (it goes to tasks/result on input_required, and
    # yields no terminal status then); it ends with the result either way.
    streamed = seen["streamInput"]
    assert streamed[0] == ["taskCreated", "working"]
    assert streamed[-1] == ["result", "confirmed milk"]
    statuses = [m[1] for m in streamed[1:-1]]
    assert all(m[0] == "taskStatus" for m in streamed[1:-1])
    assert set(statuses) <= {"working", "input_required", "completed"}

    # 4. Cancelled while our handler ran: cancelled in the reply (TK-16), the
    # handler cancelled, and a cancelled task has neither a result nor a
    # second cancel (-32602 both); an unknown id is -32602 (TK-17).
    assert seen["beforeCancel"] == "working"
    assert seen["cancelled"]["status"] == "cancelled"
    assert seen["afterCancel"] == "cancelled"
    assert seen["cancelledResult"]["code"] == -32602
    assert seen["cancelAgain"]["code"] == -32602
    assert seen["unknown"]["code"] == -32602
    assert seen["serverLines"] == ["stall started", "stall cancelled"]

    # 5. tasks/list has every task of this client (TK-15).
    assert seen["listHas"] is True
    assert seen["list"] == {
        "count": 7,
        "statuses": ["cancelled", *["completed"] * 5, "failed"],
    }
    # Our server exited when the SDK's close() ended its stdin.
    assert seen["serverGone"] is True
