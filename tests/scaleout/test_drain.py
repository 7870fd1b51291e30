"""Graceful drain of one HTTP instance (``serve_http(..., drain=Drain(...))``):
readiness goes false first, the listen streams complete with their result,
requests in flight finish within the grace, handshake-era sessions are
closed, and what is left (a task) is cancelled with cause SHUTDOWN.

Real sockets on 127.0.0.1 and Trio's real clock: every step is waited for by
its event (``Drain.wait_step``), never by time.
"""

from __future__ import annotations

from typing import Any

import httpx
import trio

from trio_mcp import Server, http_app, open_http_client, serve_http
from trio_mcp.lowlevel import RequestRecord, RequestState
from trio_mcp.protocol import TaskCause, TaskState
from trio_mcp.testing import RecordingObserver
from trio_mcp.transports import Drain

URI = "memo://board"
NOT_HUNG = 20


class Ends(RecordingObserver):
    """The terminal record of every request, by method."""

    def __init__(self) -> None:
        super().__init__()
        self.ended: dict[str, list[RequestRecord]] = {}
        self.changed = trio.Event()

    def on_transition(self, record: RequestRecord, old: RequestState | None) -> None:
        super().on_transition(record, old)
        if record.state.is_terminal:
            self.ended.setdefault(record.method, []).append(record)
            self.changed.set()
            self.changed = trio.Event()

    async def wait_ended(self, method: str) -> RequestRecord:
        while not self.ended.get(method):
            await self.changed.wait()
        return self.ended[method][0]


def draining_server() -> tuple[Server, trio.Event, trio.Event]:
    server = Server("drain", version="1")
    entered, release = trio.Event(), trio.Event()

    @server.resource(URI)
    def board() -> str:
        return "the board"

    @server.tool()
    async def slow() -> str:
        """Wait for the test, then finish."""
        entered.set()
        await release.wait()
        return "finished"

    @server.tool(task_support="optional")
    async def forever() -> None:
        """A task that only ends when cancelled."""
        await trio.sleep_forever()

    return server, entered, release


async def test_readiness_goes_false_first_and_health_stays_true() -> None:
    server, _, _ = draining_server()
    drain = Drain(grace=60, delay=3600)  # the delay holds the drain at step 1
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_http(server, drain=drain, task_status=task_status)
        )
        async with httpx.AsyncClient(base_url=url, timeout=NOT_HUNG) as http:
            assert (await http.get("/readyz")).status_code == 200
            drain.start()
            with trio.fail_after(NOT_HUNG):
                await drain.wait_step("not ready")
            ready = await http.get("/readyz")
            assert (ready.status_code, ready.text) == (503, "draining\n")
            assert (await http.get("/healthz")).status_code == 200
        assert drain.steps == ["not ready"]
        nursery.cancel_scope.cancel()


async def test_the_drain_takes_its_steps_in_order() -> None:
    server, entered, release = draining_server()
    ends = Ends()
    app = http_app(server, session_options={"observer": ends})
    drain = Drain(grace=60)
    answers: dict[str, Any] = {}
    with trio.fail_after(NOT_HUNG):
        async with trio.open_nursery() as serving:
            url = await serving.start(
                lambda task_status: serve_http(app, drain=drain, task_status=task_status)
            )
            mcp = url + "/mcp"
            async with (
                open_http_client(mcp, era="modern", remember_era=False) as modern,
                open_http_client(mcp, era="legacy", remember_era=False) as legacy,
                modern.resource_updates(URI),
                trio.open_nursery() as calls,
            ):

                async def call_slow() -> None:
                    answers["slow"] = await modern.call_tool("slow", {})

                calls.start_soon(call_slow)
                handle = await legacy.call_tool("forever", {}, as_task=True)
                await entered.wait()
                drain.start()
                await drain.wait_step("listens completed")
                # The listen stream was answered with its result, not cut.
                listen = await ends.wait_ended("subscriptions/listen")
                assert listen.state is RequestState.COMPLETED
                assert "in-flight finished" not in drain.steps  # slow still runs
                release.set()
                await drain.wait_step("cancelled")
            await drain.wait_done()
        # serve_http returned by itself once drained.
    assert drain.steps == [
        "not ready",
        "not accepting",
        "listens completed",
        "in-flight finished",
        "sessions closed",
        "cancelled",
    ]
    assert [c.text for c in answers["slow"].content] == ["finished"]
    # The task was what was left: cancelled with cause SHUTDOWN.
    record = await server.tasks.store.get(handle.task_id, None)
    assert record is not None
    assert record.state is TaskState.CANCELLED
    assert record.moves[-1].cause is TaskCause.SHUTDOWN
