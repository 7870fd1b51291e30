"""``ProtocolPair``: two sans-I/O connections wired back to back, for table-driven tests.

Nothing here does I/O: a "transport" is a method call that hands the bytes one
side's ``encode`` produced to the other side's ``receive_data``, in the spirit of
h11's ``ConnectionPair``. The clock is a :class:`FakeClock` the test advances by
hand, so every timestamp in a record is exact, and each side records what it
observed in a :class:`RecordingObserver`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..protocol import (
    Connection,
    Event,
    FrameDirection,
    Message,
    Request,
    RequestId,
    RequestObserver,
    RequestReceived,
    RequestRecord,
    RequestState,
    ResponseReceived,
    Role,
    SessionState,
)

#: What each side declares unless a test says otherwise: every capability, so that
#: only the tests about capabilities have to think about them.
FULL_SERVER_CAPABILITIES: dict[str, Any] = {
    "tools": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "prompts": {"listChanged": True},
    "logging": {},
    "completions": {},
}
FULL_CLIENT_CAPABILITIES: dict[str, Any] = {
    "roots": {"listChanged": True},
    "sampling": {},
    "elicitation": {"form": {}, "url": {}},
}


class FakeClock:
    """A clock that moves only when told to: pass it as a connection's ``clock``."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class RecordingObserver(RequestObserver):
    """Keeps every transition as ``(id, old, new)`` and every snapshot it was given."""

    def __init__(self) -> None:
        self.transitions: list[tuple[RequestId, RequestState | None, RequestState]] = []
        self.snapshots: list[RequestRecord] = []
        self.frames: list[tuple[FrameDirection, bytes, float]] = []
        self.closes: list[tuple[str, float]] = []

    def on_transition(self, record: RequestRecord, old: RequestState | None) -> None:
        self.transitions.append((record.id, old, record.state))
        self.snapshots.append(record)

    def on_frame(self, direction: FrameDirection, data: bytes, at: float) -> None:
        self.frames.append((direction, data, at))

    def on_close(self, reason: str, at: float) -> None:
        self.closes.append((reason, at))

    def path(self, request_id: RequestId) -> list[RequestState]:
        """The states *request_id* went through, creation first."""
        return [new for rid, _, new in self.transitions if rid == request_id]


class ProtocolPair:
    """A client and a server ``Connection`` connected by direct calls.

    ``client_to_server(msg)`` encodes on the client (the single-writer step) and
    feeds the bytes to the server, returning the server's events; the reverse for
    ``server_to_client``. ``None`` from ``encode`` means "nothing written", and
    then no events are produced.

    A connection is configured at construction only: *client_options* and
    *server_options* are further :class:`Connection` arguments for one side
    (its observer, progress interval, frame bound...), which win over the
    pair's own.
    """

    def __init__(
        self,
        *,
        client_capabilities: dict[str, Any] | None = None,
        server_capabilities: dict[str, Any] | None = None,
        client_versions: tuple[str, ...] | None = None,
        server_versions: tuple[str, ...] | None = None,
        observe: bool = True,
        client_options: Mapping[str, Any] | None = None,
        server_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.clock = FakeClock()
        self.client_observer = RecordingObserver()
        self.server_observer = RecordingObserver()
        extra_client: dict[str, Any] = {}
        extra_server: dict[str, Any] = {}
        if client_versions is not None:
            extra_client["supported_versions"] = client_versions
        if server_versions is not None:
            extra_server["supported_versions"] = server_versions
        self.client = Connection(
            Role.CLIENT,
            capabilities=(
                FULL_CLIENT_CAPABILITIES if client_capabilities is None else client_capabilities
            ),
            info={"name": "test-client", "version": "1"},
            clock=self.clock,
            **{
                "observer": self.client_observer if observe else None,
                **extra_client,
                **(client_options or {}),
            },
        )
        self.server = Connection(
            Role.SERVER,
            capabilities=(
                FULL_SERVER_CAPABILITIES if server_capabilities is None else server_capabilities
            ),
            info={"name": "test-server", "version": "1"},
            instructions="be nice",
            clock=self.clock,
            **{
                "observer": self.server_observer if observe else None,
                **extra_server,
                **(server_options or {}),
            },
        )
        #: Every frame actually written, in order, as (sender role, bytes).
        self.log: list[tuple[Role, bytes]] = []

    # -- moving bytes ----------------------------------------------------------

    def _send(self, sender: Connection, receiver: Connection, message: Message) -> list[Event]:
        data = sender.encode(message)
        if data is None:
            return []
        self.log.append((sender.role, data))
        return receiver.receive_data(data)

    def client_to_server(self, message: Message) -> list[Event]:
        """Encode *message* on the client and feed it to the server: its events."""
        return self._send(self.client, self.server, message)

    def server_to_client(self, message: Message) -> list[Event]:
        """Encode *message* on the server and feed it to the client: its events."""
        return self._send(self.server, self.client, message)

    def one(self, events: list[Event]) -> Event:
        """The only event in *events* (asserting there is exactly one)."""
        assert len(events) == 1, events
        return events[0]

    # -- the handshake -----------------------------------------------------------

    def server_accepts_initialize(self, event: Event) -> list[Event]:
        """What a session does with an inbound initialize: run it, answer it, send it."""
        assert isinstance(event, RequestReceived)
        assert event.request.method == "initialize"
        assert self.server.start_inbound(event.request.id)
        result = self.server.accept_initialize(event.params)
        reply = self.server.respond(event.request.id, result)
        assert reply is not None
        return self.server_to_client(reply)

    def handshake(self, version: str | None = None) -> None:
        """Run the whole handshake; both sides end up OPERATING."""
        init = self.client.initialize_request(version)
        event = self.one(self.client_to_server(init))
        response = self.one(self.server_accepts_initialize(event))
        assert isinstance(response, ResponseReceived)
        note = self.client.complete_handshake(response.result)
        self.one(self.client_to_server(note))
        assert self.client.state is SessionState.OPERATING
        assert self.server.state is SessionState.OPERATING

    # -- requests in flight ------------------------------------------------------

    def client_request(
        self, method: str, params: Any = None, *, want_progress: bool = False
    ) -> tuple[Request, RequestReceived]:
        """Client sends *method*; returns its request and the server's event."""
        return self._request(self.client, self.server, method, params, want_progress)

    def server_request(
        self, method: str, params: Any = None, *, want_progress: bool = False
    ) -> tuple[Request, RequestReceived]:
        """Server sends *method*; returns its request and the client's event."""
        return self._request(self.server, self.client, method, params, want_progress)

    def _request(
        self,
        sender: Connection,
        receiver: Connection,
        method: str,
        params: Any,
        want_progress: bool,
    ) -> tuple[Request, RequestReceived]:
        request = sender.send_request(method, params, want_progress=want_progress)
        event = self.one(self._send(sender, receiver, request))
        assert isinstance(event, RequestReceived), event
        return request, event

    def ping(self) -> tuple[Request, RequestReceived]:
        """The client sends ``ping``: its request and the server's event."""
        return self.client_request("ping")
