"""What one ``tools/call`` puts on the wire in each era, for trio_mcp and the official SDK.

The unit of work is that of ``inmemory.py`` and ``stdio.py``: a ``tools/call``
of ``echo`` with ``{"text": "hello"}``.  Each subject connects in each era over
an in-memory transport that records every frame the client sends and receives,
makes ``--calls`` sequential calls after the connection has settled, and
reports per call: frames each way, and bytes per request and per response.
The bytes are the JSON text of one frame as the stdio transport writes it,
without its newline:

* trio_mcp: the frames its memory transport carries are the very bytes its
  stdio transport writes;
* mcp: its memory streams carry message objects, so each is serialised the
  way the SDK's stdio transports do (``model_dump_json(by_alias=True,
  exclude_unset=True)``).

The difference between the eras is the ``_meta`` envelope (protocol version,
client info and capabilities on every request; server info on every result)
and ``resultType`` on every result.  Everything runs on Trio (the SDK through
anyio's trio backend), so "settled" is :func:`trio.testing.wait_all_tasks_blocked`,
not a sleep.

Run: ``.venv/bin/python bench/wire.py [--calls N] [--show] [--json]``.  These
numbers are exact and do not depend on the machine, but they do depend on the
client and server names and versions, which are fixed here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

import trio
import trio.testing

# As in stdio.py: keep this script's directory off sys.path, where a sibling
# bench script could shadow a standard module for the SDK.
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

Era = Literal["legacy", "modern"]
ERAS: Final[tuple[Era, ...]] = ("legacy", "modern")
SUBJECTS: Final = ("trio_mcp", "mcp")
ARGUMENTS: Final[dict[str, Any]] = {"text": "hello"}


@dataclass
class Tally:
    """Frames and bytes seen in each direction by the client."""

    sent_frames: int = 0
    sent_bytes: int = 0
    received_frames: int = 0
    received_bytes: int = 0
    last_sent: bytes = b""
    last_received: bytes = b""

    def sent(self, frame: bytes) -> None:
        self.sent_frames += 1
        self.sent_bytes += len(frame)
        self.last_sent = frame

    def received(self, frame: bytes) -> None:
        self.received_frames += 1
        self.received_bytes += len(frame)
        self.last_received = frame

    def snapshot(self) -> tuple[int, int, int, int]:
        return self.sent_frames, self.sent_bytes, self.received_frames, self.received_bytes


@dataclass(frozen=True)
class PerCall:
    """One subject in one era: the wire cost of one call, averaged over the measured calls."""

    subject: str
    era: str
    protocol_version: str
    request_frames: float
    request_bytes: float
    response_frames: float
    response_bytes: float
    request: str  # the last request frame, verbatim
    response: str  # the last response frame, verbatim


Counts = tuple[float, float, float, float, str, str]
"""Per call: frames sent, bytes sent, frames received, bytes received; last request, response."""


async def _count_calls(tally: Tally, call: Callable[[], Any], calls: int) -> Counts:
    """Per-call frames and bytes each way over *calls* calls, and the last frame each way.

    Connection-time traffic (handshake or discover, tools/list, a listen
    stream) is over before the first snapshot: every task is blocked then.
    """
    await call()  # one unmeasured call, so that any lazy first-call work is done
    await trio.testing.wait_all_tasks_blocked()
    before = tally.snapshot()
    for _ in range(calls):
        await call()
    await trio.testing.wait_all_tasks_blocked()
    after = tally.snapshot()
    sf, sb, rf, rb = (b - a for a, b in zip(before, after, strict=True))
    last = tally.last_sent.decode(), tally.last_received.decode()
    return sf / calls, sb / calls, rf / calls, rb / calls, *last


# --------------------------------------------------------------------------
# trio_mcp: a recording wrapper around the client's end of the memory pair.
# --------------------------------------------------------------------------


class RecordingTransport(trio.abc.Channel[bytes]):
    """A transport that tallies every frame through it.

    Cancellation: as the wrapped transport's (each method awaits it once).
    """

    def __init__(self, inner: trio.abc.Channel[bytes], tally: Tally) -> None:
        self._inner = inner
        self._tally = tally

    async def send(self, value: bytes) -> None:
        await self._inner.send(value)
        self._tally.sent(value)

    async def receive(self) -> bytes:
        frame = await self._inner.receive()
        self._tally.received(frame)
        return frame

    async def aclose(self) -> None:
        await self._inner.aclose()


async def measure_trio_mcp(era: Era, calls: int) -> PerCall:
    import trio_mcp
    from trio_mcp.testing import memory_transport_pair

    server = trio_mcp.Server("bench", version="1.0")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    tally = Tally()
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(trio_mcp.serve_session, server, server_end)
        recording = RecordingTransport(client_end, tally)
        async with trio_mcp.open_client(recording, era=era) as client:
            if client.era != era:
                raise RuntimeError(f"era {era!r} requested, {client.era!r} negotiated")

            async def call() -> None:
                result = await client.call_tool("echo", ARGUMENTS)
                assert getattr(result.content[0], "text", None) == "hello"

            counts = await _count_calls(tally, call, calls)
            version = client.protocol_version
        nursery.cancel_scope.cancel()
    return PerCall("trio_mcp", era, version, *counts)


# --------------------------------------------------------------------------
# mcp: relay the SDK's in-memory streams, serialising each message as its
# stdio transport would.
# --------------------------------------------------------------------------


def _frame(message: Any) -> bytes:
    # The serialisation of mcp/client/stdio.py and mcp/server/stdio.py.
    text: str = message.model_dump_json(by_alias=True, exclude_unset=True)
    return text.encode()


@asynccontextmanager
async def _recording_sdk_transport(inner: Any, tally: Tally) -> AsyncIterator[tuple[Any, Any]]:
    """The client's streams of *inner* (an SDK transport), relayed through a tally."""
    import anyio
    from mcp.shared.message import SessionMessage

    async with inner as (inner_read, inner_write):
        to_client_send, to_client_read = anyio.create_memory_object_stream[
            SessionMessage | Exception
        ](1)
        from_client_write, from_client_receive = anyio.create_memory_object_stream[SessionMessage](
            1
        )

        async def inbound() -> None:
            async with to_client_send:
                async for item in inner_read:
                    if isinstance(item, SessionMessage):
                        tally.received(_frame(item.message))
                    await to_client_send.send(item)

        async def outbound() -> None:
            async with from_client_receive:
                async for item in from_client_receive:
                    tally.sent(_frame(item.message))
                    await inner_write.send(item)
            await inner_write.aclose()

        async with anyio.create_task_group() as tg:
            tg.start_soon(inbound)
            tg.start_soon(outbound)
            async with to_client_read, from_client_write:
                yield to_client_read, from_client_write
            tg.cancel_scope.cancel()


async def measure_mcp(era: Era, calls: int) -> PerCall:
    import mcp
    from mcp.client._memory import InMemoryTransport
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench", version="1.0")

    @server.tool(structured_output=False)  # as in inmemory.py: the text block only
    async def echo(text: str) -> str:
        return text

    tally = Tally()
    # "auto" on a stream transport: server/discover, then 2026-07-28 (as inmemory.py's modern row).
    transport = _recording_sdk_transport(InMemoryTransport(server), tally)
    async with mcp.Client(transport, mode="legacy" if era == "legacy" else "auto") as client:
        version = client.protocol_version
        if (era == "modern") != (client.session.discover_result is not None):
            raise RuntimeError(f"era {era!r} requested, {version!r} negotiated")

        async def call() -> None:
            result = await client.call_tool("echo", ARGUMENTS)
            assert getattr(result.content[0], "text", None) == "hello"

        counts = await _count_calls(tally, call, calls)
    return PerCall("mcp", era, version, *counts)


# --------------------------------------------------------------------------
# Driver and report.
# --------------------------------------------------------------------------


async def run_all(calls: int, eras: list[Era], subjects: list[str]) -> list[PerCall]:
    rows = []
    for subject in subjects:
        for era in eras:
            measure = measure_trio_mcp if subject == "trio_mcp" else measure_mcp
            rows.append(await measure(era, calls))
    return rows


def render(rows: list[PerCall], show: bool) -> str:
    header = (
        f"{'subject':<9} {'era':<7} {'protocol':<11} {'req frames':>10} {'req bytes':>10} "
        f"{'resp frames':>11} {'resp bytes':>10} {'extra req':>9} {'extra resp':>10}"
    )
    lines = [header, "-" * len(header)]
    legacy = {r.subject: r for r in rows if r.era == "legacy"}
    for r in rows:
        base = legacy.get(r.subject)
        extra_req = "" if base is None else f"{r.request_bytes - base.request_bytes:+.0f}"
        extra_resp = "" if base is None else f"{r.response_bytes - base.response_bytes:+.0f}"
        lines.append(
            f"{r.subject:<9} {r.era:<7} {r.protocol_version:<11} {r.request_frames:>10.2f} "
            f"{r.request_bytes:>10.1f} {r.response_frames:>11.2f} {r.response_bytes:>10.1f} "
            f"{extra_req:>9} {extra_resp:>10}"
        )
    lines.append(
        "(per call; bytes are JSON text per frame, without the stdio newline; "
        "extra: bytes more than the same subject's legacy frame)"
    )
    if show:
        for r in rows:
            lines += ["", f"{r.subject} {r.era} request:  {r.request}"]
            lines.append(f"{r.subject} {r.era} response: {r.response}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=100, help="measured calls (default 100)")
    parser.add_argument(
        "--era", dest="eras", action="append", choices=list(ERAS), help="repeatable (default both)"
    )
    parser.add_argument(
        "--only", dest="subjects", action="append", choices=list(SUBJECTS), help="repeatable"
    )
    parser.add_argument("--show", action="store_true", help="print one request and response each")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.calls < 1:
        parser.error("--calls must be >= 1")
    eras: list[Era] = list(ERAS) if args.eras is None else [e for e in ERAS if e in args.eras]
    subjects = list(SUBJECTS) if args.subjects is None else args.subjects
    rows = trio.run(run_all, args.calls, eras, subjects)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
    else:
        print(render(rows, args.show))


if __name__ == "__main__":
    main()
