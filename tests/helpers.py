"""Shared helpers of the session-level tests (tests/test_session*.py and friends).

* :class:`RawPeer` is a fake peer that talks raw JSON frames over one end of a
  :func:`~trio_mcp.testing.memory_transport_pair`. A collector task reads every
  frame the real session writes, so a test can wait for the next frame, or reach
  "every task is blocked" and assert that nothing (more) was written.
* :func:`open_raw_server` runs a real server session against a :class:`RawPeer`
  (after a manual handshake); :func:`open_raw_client` runs a real client against
  a :class:`RawPeer` playing the server; :func:`open_pair` joins a real client to
  a real server session and yields both.
* :class:`FnDispatcher` answers requests with plain async functions, so a test
  can reach the session's error boundary without the Server's tool wrapper
  (which turns tool exceptions into ``isError`` results).
* :class:`Recorder` is an observer that keeps every transition and frame.
* :func:`task_names`, :func:`initialize_frame` and :func:`blocking_handler`
  are the small pieces many tests build the same way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import orjson
import trio
import trio.testing

from trio_mcp import Client, Server, open_client, serve_session
from trio_mcp import types as mcp_types
from trio_mcp.lowlevel import (
    Direction,
    RequestContext,
    RequestObserver,
    RequestRecord,
    RequestState,
    Session,
    open_session,
)
from trio_mcp.protocol import (
    Connection,
    ConnectionFactory,
    FrameDirection,
    NotificationReceived,
    Role,
)
from trio_mcp.testing import MemoryTransport, memory_transport_pair

#: The revision a raw peer offers unless told otherwise.
LATEST = "2025-11-25"

Frame = dict[str, Any]


class RawPeer:
    """A fake peer speaking raw frames. Not a context manager: see the ``open_*`` helpers."""

    def __init__(self, transport: MemoryTransport) -> None:
        self.transport = transport
        #: Every frame received from the session, decoded, in order.
        self.frames: list[Frame] = []
        #: Every frame sent to the session, as bytes, in order.
        self.sent: list[bytes] = []
        #: True once the session closed its end (end of channel), and when.
        self.eof = False
        self.eof_at: float | None = None
        self._cursor = 0
        self._lot = trio.lowlevel.ParkingLot()
        self._next_id = 1000
        self._gate = trio.Event()
        self._gate.set()
        self._receiving = trio.CancelScope()

    async def collect(self) -> None:
        """Read frames until the session closes its end (run in a nursery)."""
        try:
            while True:
                if not self._gate.is_set():
                    await self._gate.wait()
                    continue  # re-check: pause() may have replaced the gate
                # No checkpoint between the check above and the receive below.
                with trio.CancelScope() as self._receiving:
                    data = await self.transport.receive()
                if self._receiving.cancelled_caught:
                    continue  # paused while waiting: nothing was taken
                self.frames.append(orjson.loads(data))
                self._lot.unpark_all()
        except (trio.EndOfChannel, trio.ClosedResourceError, trio.BrokenResourceError):
            self.eof = True
            self.eof_at = trio.current_time()
            self._lot.unpark_all()

    def pause(self) -> None:
        """Stop reading: with a zero-buffer transport the session's writer then
        blocks on its next frame, and later messages wait in its queue."""
        self._gate = trio.Event()
        self._receiving.cancel()

    def resume(self) -> None:
        self._gate.set()

    # ----------------------------------------------------------- sending

    async def send(self, obj: Any) -> None:
        await self.send_raw(orjson.dumps(obj))

    async def send_raw(self, data: bytes) -> None:
        await self.transport.send(data)
        self.sent.append(data)

    async def notify(self, method: str, params: Frame | None = None) -> None:
        frame: Frame = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            frame["params"] = params
        await self.send(frame)

    async def cancel(self, request_id: Any, reason: str | None = "test cancel") -> None:
        params: Frame = {"requestId": request_id}
        if reason is not None:
            params["reason"] = reason
        await self.notify("notifications/cancelled", params)

    async def send_request(
        self, method: str, params: Frame | None = None, request_id: Any = None
    ) -> Any:
        """Send a request; return its id (a fresh one unless given)."""
        if request_id is None:
            request_id = self._next_id
            self._next_id += 1
        frame: Frame = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            frame["params"] = params
        await self.send(frame)
        return request_id

    async def call_tool(
        self,
        name: str,
        arguments: Frame | None = None,
        *,
        request_id: Any = None,
        progress_token: str | int | None = None,
    ) -> Any:
        params: Frame = {"name": name, "arguments": arguments or {}}
        if progress_token is not None:
            params["_meta"] = {"progressToken": progress_token}
        return await self.send_request("tools/call", params, request_id)

    async def request(self, method: str, params: Frame | None = None) -> Frame:
        """Send a request and wait for the frame answering it (other frames stay unread)."""
        return await self.wait_response(await self.send_request(method, params))

    async def ping(self) -> Frame:
        """Ping the session; assert the empty result (PI-02)."""
        reply = await self.request("ping")
        assert reply.get("result") == {}, reply
        return reply

    # --------------------------------------------------------- receiving

    async def receive(self) -> Frame:
        """The next frame not yet returned by :meth:`receive` (waits for it)."""
        while self._cursor >= len(self.frames):
            if self.eof:
                raise trio.EndOfChannel
            await self._lot.park()
        frame = self.frames[self._cursor]
        self._cursor += 1
        return frame

    async def wait_for(self, match: Callable[[Frame], bool]) -> Frame:
        """The first frame ever received that matches (waits for it)."""
        seen = 0
        while True:
            for frame in self.frames[seen:]:
                if match(frame):
                    return frame
            seen = len(self.frames)
            if self.eof:
                raise trio.EndOfChannel
            await self._lot.park()

    async def wait_response(self, request_id: Any) -> Frame:
        """The first response (result or error) with *request_id* (waits for it)."""
        return await self.wait_for(lambda f: f.get("id") == request_id and "method" not in f)

    async def wait_method(self, method: str) -> Frame:
        """The first request or notification of *method* (waits for it)."""
        return await self.wait_for(lambda f: f.get("method") == method)

    async def wait_eof(self) -> None:
        while not self.eof:
            await self._lot.park()

    def unread(self) -> list[Frame]:
        """Frames not yet returned by :meth:`receive`; marks them read."""
        frames = self.frames[self._cursor :]
        self._cursor = len(self.frames)
        return frames

    def responses(self, request_id: Any) -> list[Frame]:
        """Every response (result or error) received for *request_id*."""
        return [f for f in self.frames if "method" not in f and f.get("id") == request_id]

    def about(self, request_id: Any) -> list[Frame]:
        """Every frame that concerns *request_id*: its responses, and progress for
        a token equal to it."""
        return self.responses(request_id) + [
            f
            for f in self.frames
            if f.get("method") == "notifications/progress"
            and f["params"].get("progressToken") == request_id
        ]

    # ------------------------------------------------------- handshakes

    async def handshake_as_client(
        self, version: str = LATEST, *, capabilities: Frame | None = None
    ) -> Frame:
        """initialize → result → notifications/initialized; returns the result."""
        reply = await self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": capabilities or {},
                "clientInfo": {"name": "raw-peer", "version": "0"},
            },
        )
        assert "result" in reply, reply
        await self.notify("notifications/initialized")
        self.unread()  # the handshake's frames are consumed
        return dict(reply["result"])

    async def handshake_as_server(self, version: str = LATEST) -> Frame:
        """Answer the client's initialize; wait for notifications/initialized."""
        init = await self.receive()
        assert init["method"] == "initialize", init
        await self.send(
            {
                "jsonrpc": "2.0",
                "id": init["id"],
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "raw-server", "version": "0"},
                },
            }
        )
        note = await self.receive()
        assert note["method"] == "notifications/initialized", note
        return init


@asynccontextmanager
async def open_raw_server(
    dispatcher: Any,
    *,
    protocol: ConnectionFactory | None = None,
    version: str | None = LATEST,
    buffer: int = 64,
    **session_options: Any,
) -> AsyncIterator[tuple[RawPeer, Session]]:
    """A real server session (of a ``Server`` or any dispatcher) with a raw client.

    Handshakes at *version* unless it is None. *buffer* is the transport's
    buffer per direction (0: every frame is a rendezvous). *protocol* makes the
    session's connection (by default the server's, or one declaring tools).
    Leaving the body shuts the server session down (the documented order),
    then waits for the peer to see EOF.
    """
    if protocol is None:
        if isinstance(dispatcher, Server):
            protocol = dispatcher.make_protocol
        else:
            protocol = partial(Connection, Role.SERVER, capabilities={"tools": {}})
    peer_end, server_end = memory_transport_pair(buffer)
    peer = RawPeer(peer_end)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.collect, name="raw peer collector")
        async with open_session(server_end, protocol, dispatcher, **session_options) as session:
            if version is not None:
                await peer.handshake_as_client(version)
            yield peer, session
        await peer.wait_eof()


@asynccontextmanager
async def open_raw_client_transport(
    buffer: int = 64,
) -> AsyncIterator[tuple[RawPeer, MemoryTransport]]:
    """A raw peer playing the server, and the transport a real client should use."""
    peer_end, client_end = memory_transport_pair(buffer)
    peer = RawPeer(peer_end)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.collect, name="raw peer collector")
        yield peer, client_end
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def open_client_with_raw_server(
    version: str = LATEST, *, buffer: int = 64, **client_options: Any
) -> AsyncIterator[tuple[RawPeer, Client]]:
    """A real client (``open_client``) whose server is a raw peer that answered
    the handshake; the handshake frames are consumed."""
    # A raw server answers nothing after the handshake: no discovery; and it
    # speaks the handshake era.
    client_options.setdefault("discover", False)
    client_options.setdefault("era", "legacy")
    async with open_raw_client_transport(buffer) as (peer, transport):
        done = trio.Event()

        async def handshake() -> None:
            await peer.handshake_as_server(version)
            done.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(handshake)
            async with open_client(transport, **client_options) as client:
                await done.wait()
                yield peer, client


@asynccontextmanager
async def open_pair(
    server: Server,
    *,
    server_options: dict[str, Any] | None = None,
    **client_options: Any,
) -> AsyncIterator[tuple[Client, Session]]:
    """A real client and the real server session it talks to."""
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        server_session: Session = await nursery.start(
            lambda task_status: serve_session(
                server, server_end, task_status=task_status, **(server_options or {})
            )
        )
        async with open_client(client_end, **client_options) as client:
            yield client, server_session


class SpyTransport(trio.abc.Channel[bytes]):
    """Wraps a transport and notes whether (and when) it was closed."""

    def __init__(self, inner: trio.abc.Channel[bytes]) -> None:
        self.inner = inner
        self.closed_at: float | None = None

    async def send(self, value: bytes) -> None:
        await self.inner.send(value)

    async def receive(self) -> bytes:
        return await self.inner.receive()

    async def aclose(self) -> None:
        if self.closed_at is None:
            self.closed_at = trio.current_time()
        await self.inner.aclose()


Handler = Callable[[RequestContext], Awaitable[Any]]


class FnDispatcher:
    """A dispatcher whose ``tools/call`` runs ``handlers[tool name](ctx)`` directly."""

    def __init__(self, **handlers: Handler) -> None:
        self.handlers = handlers
        self.notifications: list[NotificationReceived] = []

    async def handle_request(self, ctx: RequestContext) -> Any:
        assert ctx.method == "tools/call"
        return await self.handlers[ctx.params.name](ctx)

    async def handle_notification(self, session: Session, event: NotificationReceived) -> None:
        self.notifications.append(event)


class Recorder(RequestObserver):
    """Keeps every transition, frame and close it sees; ``log`` has the first
    two interleaved in the order they happened."""

    def __init__(self) -> None:
        self.transitions: list[tuple[RequestRecord, RequestState | None]] = []
        self.frames: list[tuple[FrameDirection, bytes, float]] = []
        self.closes: list[tuple[str, float]] = []
        self.log: list[RequestRecord | tuple[FrameDirection, bytes]] = []

    def on_transition(self, record: RequestRecord, old: RequestState | None) -> None:
        self.transitions.append((record, old))
        self.log.append(record)

    def on_frame(self, direction: FrameDirection, data: bytes, at: float) -> None:
        self.frames.append((direction, data, at))
        self.log.append((direction, data))

    def on_close(self, reason: str, at: float) -> None:
        self.closes.append((reason, at))


def inbound(session: Session, request_id: Any) -> RequestRecord:
    """The inbound record of *request_id* (asserts that it exists)."""
    record = session.protocol.record(Direction.INBOUND, request_id)
    assert record is not None, f"no inbound record for {request_id!r}"
    return record


def outbound(session: Session, method: str) -> RequestRecord:
    """The latest outbound record of *method* (asserts that one exists)."""
    records = [
        r for r in session.requests() if r.direction is Direction.OUTBOUND and r.method == method
    ]
    assert records, f"no outbound {method} record"
    return records[-1]


async def settle() -> None:
    """Let every task run until all are blocked (never sleeps)."""
    await trio.testing.wait_all_tasks_blocked()


def first_text(result: mcp_types.CallToolResult) -> str:
    """The text of a result's first content block (which must be text)."""
    block = result.content[0]
    assert isinstance(block, mcp_types.TextContent), block
    return block.text


def task_names() -> list[str]:
    """The names of every task of the run, the root's descendants included."""
    root = trio.lowlevel.current_root_task()
    assert root is not None
    names: list[str] = []

    def walk(task: trio.lowlevel.Task) -> None:
        names.append(task.name)
        for nursery in task.child_nurseries:
            for child in nursery.child_tasks:
                walk(child)

    walk(root)
    return names


def server_connection(*, stateless: str | None = None, **options: Any) -> ConnectionFactory:
    """A factory of server connections (for ``open_session``) with *options*;
    with *stateless*, each starts a stateless exchange of that version."""

    def make(**settings: Any) -> Connection:
        connection = Connection(Role.SERVER, **options, **settings)
        if stateless is not None:
            connection.start_stateless(stateless)
        return connection

    return make


def initialize_frame(request_id: Any = 1, version: str = LATEST, client: str = "t") -> bytes:
    """A client's ``initialize`` request as one raw frame (*client*: its name)."""
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": client, "version": "0"},
            },
        }
    )


def blocking_handler() -> tuple[trio.Event, Callable[[RequestContext], Awaitable[Any]]]:
    """A request handler that sets the returned event once it runs, then
    blocks until cancelled; for tests of who cancels a running request."""
    started = trio.Event()

    async def handler(ctx: RequestContext) -> Any:
        started.set()
        await trio.sleep_forever()

    return started, handler
