"""What the session engine's shape costs before any MCP work: the floor under bench/inmemory.py.

ARCHITECTURE.md fixes the shape of a session: a reader task, ONE writer task fed
by a memory channel, a child task with its own cancel scope per inbound request,
and a caller parked on its request under a cancel scope with a deadline (the
request timeout). A sequential ``tools/call`` round trip therefore passes six
task hand-offs, and each one costs a Trio scheduler batch:

    caller -> client writer -> server reader -> request task
           -> server writer -> client reader -> caller

This script measures, in one run and on the same work as ``bench/inmemory.py``
(``tools/call`` of ``echo`` with ``{"text": "hello"}``, orjson on the wire):

(f) ``floor``: that shape with no MCP at all: plain dicts, no records, no
    lifecycle, no types. What trio_mcp could reach if all of its protocol work
    cost nothing.
(g) ``floor, no writer tasks``: the same, except that callers and request tasks
    hand their frame straight to the transport (four hand-offs). What dropping
    the one-writer rule would buy; ARCHITECTURE.md does not allow it.
(b) ``mcp``: the official SDK, exactly as in ``bench/inmemory.py`` (legacy row).
(c) ``trio_mcp``: exactly as in ``bench/inmemory.py`` (legacy row).

It then prints the budget: the time per call that the ``--target`` ratio over
the SDK allows, what the floor takes of it, and what is left for MCP work,
next to what trio_mcp's MCP work costs now (trio_mcp minus the floor).

Run: ``.venv/bin/python bench/floor.py [--calls N]``. Numbers go in issue
notes, never in tests (bench/README.md).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import orjson
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from inmemory import (
    ARGUMENTS,
    SEQUENTIAL,
    Measurement,
    Plan,
    SubjectResult,
    _attempt,
    _bench_trio_mcp,
    _check_text,
    _measure_trio,
    _run_mcp,
    mcp_version,
    trio_mcp_version,
)

#: Frames in flight per direction of the transport, as trio_mcp's memory pair.
TRANSPORT_BUFFER: Final = 64
#: Size of each writer's queue, as trio_mcp's default ``outgoing_buffer``.
WRITER_QUEUE: Final = 256
#: The caller's request timeout, as trio_mcp's default idle timeout.
REQUEST_TIMEOUT: Final = 60.0


class _Waiter:
    """One caller parked on its response (rescheduled directly, as trio_mcp does)."""

    __slots__ = ("response", "task")

    def __init__(self) -> None:
        self.response: dict[str, Any] | None = None
        self.task: trio.lowlevel.Task | None = None


class _Transport:
    """One end of a frame channel: what trio_mcp's in-memory transport does per frame."""

    def __init__(
        self, send: trio.MemorySendChannel[bytes], receive: trio.MemoryReceiveChannel[bytes]
    ) -> None:
        self._send = send
        self._receive = receive

    def send_now(self, frame: bytes) -> None:
        self._send.send_nowait(frame)

    async def send(self, frame: bytes) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            self._send.send_nowait(frame)
        except trio.WouldBlock:
            await self._send.send(frame)

    async def receive(self) -> bytes:
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            return self._receive.receive_nowait()
        except trio.WouldBlock:
            return await self._receive.receive()


def _transport_pair() -> tuple[_Transport, _Transport]:
    a_send, b_receive = trio.open_memory_channel[bytes](TRANSPORT_BUFFER)
    b_send, a_receive = trio.open_memory_channel[bytes](TRANSPORT_BUFFER)
    return _Transport(a_send, a_receive), _Transport(b_send, b_receive)


class _Side:
    """Where one side's outgoing messages go: its writer's queue, or the transport."""

    def __init__(self, nursery: trio.Nursery, transport: _Transport, writer_task: bool) -> None:
        self.transport = transport
        self._queue: trio.MemorySendChannel[dict[str, Any]] | None = None
        if writer_task:
            self._queue, queue_out = trio.open_memory_channel[dict[str, Any]](WRITER_QUEUE)
            nursery.start_soon(self._writer, queue_out)

    def put(self, message: dict[str, Any]) -> None:
        if self._queue is None:
            self.transport.send_now(orjson.dumps(message))
        else:
            self._queue.send_nowait(message)

    async def _writer(self, queue: trio.MemoryReceiveChannel[dict[str, Any]]) -> None:
        async for message in queue:
            await self.transport.send(orjson.dumps(message))


class FloorClient:
    """The session engine's shape with the MCP taken out (see the module docstring)."""

    def __init__(self, nursery: trio.Nursery, writer_tasks: bool) -> None:
        client_end, server_end = _transport_pair()
        self._client = _Side(nursery, client_end, writer_tasks)
        self._server = _Side(nursery, server_end, writer_tasks)
        self._ids = itertools.count(1)
        self._waiting: dict[int, _Waiter] = {}
        nursery.start_soon(self._server_reader, nursery)
        nursery.start_soon(self._client_reader)

    async def _server_reader(self, nursery: trio.Nursery) -> None:
        while True:
            request = orjson.loads(await self._server.transport.receive())
            # The request's scope is made on arrival, its task started at once.
            nursery.start_soon(self._handle, request, trio.CancelScope())

    async def _handle(self, request: dict[str, Any], scope: trio.CancelScope) -> None:
        with scope:
            await trio.lowlevel.checkpoint_if_cancelled()
            text = request["params"]["arguments"]["text"]
            result = {"content": [{"type": "text", "text": text}]}
            self._server.put({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async def _client_reader(self) -> None:
        while True:
            response = orjson.loads(await self._client.transport.receive())
            waiter = self._waiting.get(response["id"])
            if waiter is not None and waiter.task is not None:
                waiter.response = response
                task, waiter.task = waiter.task, None
                trio.lowlevel.reschedule(task)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self._ids)
        waiter = self._waiting[request_id] = _Waiter()
        deadline = trio.current_time() + REQUEST_TIMEOUT
        try:
            with trio.CancelScope(deadline=deadline):
                self._client.put(
                    {
                        "jsonrpc": "2.0",
                        "id": request_id,
                        "method": "tools/call",
                        "params": {"name": name, "arguments": arguments},
                    }
                )
                waiter.task = trio.lowlevel.current_task()

                def abort(_: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
                    waiter.task = None
                    return trio.lowlevel.Abort.SUCCEEDED

                await trio.lowlevel.wait_task_rescheduled(abort)
        finally:
            del self._waiting[request_id]
        if waiter.response is None:
            raise trio.TooSlowError
        result: dict[str, Any] = waiter.response["result"]
        return result


async def _bench_floor(plan: Plan, writer_tasks: bool) -> list[Measurement]:
    with trio.fail_after(plan.timeout):
        async with trio.open_nursery() as nursery:
            client = FloorClient(nursery, writer_tasks)

            async def call() -> None:
                result = await client.call_tool("echo", ARGUMENTS)
                _check_text(result["content"][0]["text"])

            measurements = await _measure_trio(call, plan)
            nursery.cancel_scope.cancel()
            return measurements


def _micros(result: SubjectResult) -> float | None:
    rate = result.rate(SEQUENTIAL)
    return None if not rate else 1e6 / rate


def render(results: dict[str, SubjectResult], plan: Plan, target: float) -> str:
    lines = [
        f"Sequential tools/call round trips, {plan.calls} calls per row, "
        f"{plan.warmup} warm-up calls",
        "",
        f"{'subject':<34} {'calls/s':>10} {'us/call':>9}  notes",
        "-" * 70,
    ]
    for result in results.values():
        micros = _micros(result)
        if result.error is not None or micros is None:
            lines.append(f"{result.label:<34} {'-':>10} {'-':>9}  {result.error}")
            continue
        rate = 1e6 / micros
        lines.append(f"{result.label:<34} {rate:>10,.0f} {micros:>9.1f}  {result.detail}")
    floor, direct = _micros(results["floor"]), _micros(results["floor_direct"])
    sdk, ours = _micros(results["mcp"]), _micros(results["trio_mcp"])
    lines.append("")
    if sdk is None or floor is None or ours is None or direct is None:
        lines.append("budget: needs every subject's numbers")
        return "\n".join(lines)
    budget = sdk / target
    lines += [
        f"budget at {target:g}x the SDK: {budget:.1f} us per call",
        f"  the floor (six hand-offs) takes {floor:.1f} us: {budget - floor:.1f} us left "
        f"for MCP work; trio_mcp's MCP work now: {ours - floor:.1f} us",
        f"  without writer tasks the floor is {direct:.1f} us: {budget - direct:.1f} us "
        f"would be left",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=10_000, help="measured calls per row")
    parser.add_argument("--warmup", type=int, default=1_000, help="unmeasured calls first")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per subject")
    parser.add_argument("--target", type=float, default=3.0, help="src/trio_mcp/mcp target ratio")
    parser.add_argument("-v", "--verbose", action="store_true", help="tracebacks of failures")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # Only the sequential row is used; the concurrent batch gets one caller.
    plan = Plan(calls=args.calls, concurrency=1, warmup=args.warmup, timeout=args.timeout)
    subjects = {
        "floor": SubjectResult("floor", "(f) floor", "6 hand-offs, trio channels, orjson"),
        "floor_direct": SubjectResult("floor_direct", "(g) floor, no writer tasks", "4 hand-offs"),
        "mcp": SubjectResult("mcp", "(b) mcp", f"mcp {mcp_version() or '(not installed)'}"),
        "trio_mcp": SubjectResult(
            "trio_mcp", "(c) trio_mcp", f"trio_mcp {trio_mcp_version() or ''}".rstrip()
        ),
    }
    _attempt(subjects["floor"], lambda: trio.run(_bench_floor, plan, True), args.verbose)
    _attempt(subjects["floor_direct"], lambda: trio.run(_bench_floor, plan, False), args.verbose)
    _attempt(subjects["mcp"], lambda: _run_mcp(plan, "asyncio", "legacy", False), args.verbose)
    # Both MCP rows in the handshake era, the floor's shape (no _meta envelope).
    _attempt(subjects["trio_mcp"], lambda: trio.run(_bench_trio_mcp, plan, "legacy"), args.verbose)
    print(render(subjects, plan, args.target))
    return 1 if any(r.error is not None for r in subjects.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
