"""The handshake-era lifecycle, driven by passing bytes between two Protocols.

Rows are (state of each side, what arrives) -> (event, new states, bytes or
nothing), as in h11's tests. ``ProtocolPair`` moves the bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from protocol_pair import frame, wire

from trio_mcp import types as t
from trio_mcp.protocol import (
    LATEST_VERSION,
    SUPPORTED_VERSIONS,
    CancelOrigin,
    Connection,
    Direction,
    ErrorCode,
    ErrorObject,
    Event,
    Ignored,
    InvalidMessage,
    LocalProtocolError,
    NotificationReceived,
    RequestReceived,
    RequestState,
    ResponseReceived,
    Role,
    SessionState,
    UnsupportedProtocolVersion,
    negotiate_version,
)
from trio_mcp.testing import ProtocolPair

NEW, INITIALIZING, INITIALIZED, OPERATING, CLOSED = (
    SessionState.NEW,
    SessionState.INITIALIZING,
    SessionState.INITIALIZED,
    SessionState.OPERATING,
    SessionState.CLOSED,
)


def init_frame(request_id: int | str = 100, version: str = LATEST_VERSION) -> bytes:
    return frame(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        }
    )


def request_frame(request_id: int | str, method: str, params: Any = None) -> bytes:
    obj: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        obj["params"] = params
    return frame(obj)


def only(events: list[Event]) -> Event:
    assert len(events) == 1, events
    return events[0]


def refusal(events: list[Event], code: ErrorCode, reply_id: object) -> str:
    event = only(events)
    assert isinstance(event, InvalidMessage), event
    assert event.reply is not None
    assert event.reply.error.code == code
    assert event.reply.id == reply_id
    return event.reply.error.message


# --- the handshake, step by step -------------------------------------------------


@pytest.mark.spec("LC-01", "LC-02", "LC-03", "LC-04")
def test_handshake_step_by_step() -> None:
    pair = ProtocolPair()
    client, server = pair.client, pair.server
    assert (client.state, server.state) == (NEW, NEW)

    # Step 1: the client sends initialize (LC-02) offering its newest version (LC-07).
    init = client.initialize_request()
    assert client.state is INITIALIZING
    data = client.encode(init)
    assert wire(data) == {
        "jsonrpc": "2.0",
        "id": init.id,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST_VERSION,
            "capabilities": client.local_capabilities,
            "clientInfo": {"name": "test-client", "version": "1"},
        },
    }
    assert data is not None
    event = only(server.receive_data(data))
    assert isinstance(event, RequestReceived)
    assert isinstance(event.params, t.InitializeRequestParams)
    assert server.state is INITIALIZING

    # Step 2: the server answers (LC-03); the state moves when the result is written.
    assert server.start_inbound(init.id)
    result = server.accept_initialize(event.params)
    reply = server.respond(init.id, result)
    assert reply is not None
    assert server.state is INITIALIZING  # not yet written
    data = server.encode(reply)
    assert server.state is INITIALIZED
    assert wire(data) == {
        "jsonrpc": "2.0",
        "id": init.id,
        "result": {
            "protocolVersion": LATEST_VERSION,
            "capabilities": server.local_capabilities,
            "serverInfo": {"name": "test-server", "version": "1"},
            "instructions": "be nice",
        },
    }
    assert data is not None
    event = only(client.receive_data(data))
    assert isinstance(event, ResponseReceived)
    assert isinstance(event.result, t.InitializeResult)
    assert client.state is INITIALIZING  # until the client accepts the result

    # Step 3: the client accepts and sends notifications/initialized (LC-04).
    note = client.complete_handshake(event.result)
    assert client.state is OPERATING
    data = client.encode(note)
    assert wire(data) == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert data is not None
    event = only(server.receive_data(data))
    assert isinstance(event, NotificationReceived)
    assert event.method == "notifications/initialized"
    assert server.state is OPERATING

    # Both sides now know the same facts about each other.
    assert client.protocol_version == server.protocol_version == LATEST_VERSION
    assert client.peer_info == {"name": "test-server", "version": "1"}
    assert server.peer_info == {"name": "test-client", "version": "1"}
    assert client.peer_instructions == "be nice"
    assert client.peer_capabilities["tools"] == {"listChanged": True}
    assert server.peer_capabilities["roots"] == {"listChanged": True}
    # The initialize request is an ordinary record on both sides.
    for side, direction in ((client, Direction.OUTBOUND), (server, Direction.INBOUND)):
        record = side.record(direction, init.id)
        assert record is not None
        assert record.state is RequestState.COMPLETED
        assert record.method == "initialize"


@pytest.mark.spec("LC-03")
def test_instructions_left_out_when_none() -> None:
    server = Connection(Role.SERVER)
    event = only(server.receive_data(init_frame()))
    assert isinstance(event, RequestReceived)
    assert "instructions" not in server.accept_initialize(event.params)


@pytest.mark.spec("LC-07")
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_client_may_offer_an_older_version(version: str) -> None:
    pair = ProtocolPair()
    pair.handshake(version)
    assert pair.client.protocol_version == pair.server.protocol_version == version


# --- version negotiation (LC-08, LC-09) --------------------------------------------


@pytest.mark.spec("LC-08")
@pytest.mark.parametrize(
    ("requested", "supported", "answer"),
    [
        *[(v, SUPPORTED_VERSIONS, v) for v in SUPPORTED_VERSIONS],
        ("2024-10-07", SUPPORTED_VERSIONS, LATEST_VERSION),
        ("2026-07-28", SUPPORTED_VERSIONS, LATEST_VERSION),
        ("2099-01-01", SUPPORTED_VERSIONS, LATEST_VERSION),
        ("", SUPPORTED_VERSIONS, LATEST_VERSION),
        ("2025-11-25", ("2025-06-18", "2024-11-05"), "2025-06-18"),
        ("2024-11-05", ("2025-06-18", "2024-11-05"), "2024-11-05"),
    ],
)
def test_negotiate_version(requested: str, supported: tuple[str, ...], answer: str) -> None:
    assert negotiate_version(requested, supported) == answer


@pytest.mark.spec("LC-08")
@pytest.mark.parametrize(
    ("requested", "answer"),
    [("2025-03-26", "2025-03-26"), ("2099-01-01", LATEST_VERSION), ("2024-10-07", LATEST_VERSION)],
)
def test_server_echoes_a_known_version_and_counter_offers_its_newest(
    requested: str, answer: str
) -> None:
    server = Connection(Role.SERVER)
    event = only(server.receive_data(init_frame(version=requested)))
    assert isinstance(event, RequestReceived)
    server.start_inbound(event.request.id)
    reply = server.respond(event.request.id, server.accept_initialize(event.params))
    # A counter-offer is a successful result, never an error.
    assert wire(server.encode(reply))["result"]["protocolVersion"] == answer  # type: ignore[arg-type]
    assert server.protocol_version == answer


@pytest.mark.spec("LC-09")
def test_client_refuses_a_version_it_does_not_speak() -> None:
    pair = ProtocolPair(client_versions=("2025-06-18",), server_versions=("2025-11-25",))
    init = pair.client.initialize_request()
    assert init.params is not None
    assert init.params["protocolVersion"] == "2025-06-18"
    event = pair.one(pair.client_to_server(init))
    response = pair.one(pair.server_accepts_initialize(event))
    assert isinstance(response, ResponseReceived)
    assert response.result.protocol_version == "2025-11-25"
    with pytest.raises(UnsupportedProtocolVersion) as info:
        pair.client.complete_handshake(response.result)
    assert info.value.offered == "2025-11-25"
    assert info.value.supported == ("2025-06-18",)
    # The client disconnects: closed, with the reason, and nothing more is sent.
    assert pair.client.state is CLOSED
    assert pair.client.close_reason is not None
    assert "2025-11-25" in pair.client.close_reason
    assert pair.client.protocol_version is None
    with pytest.raises(LocalProtocolError):
        pair.client.send_request("ping")
    with pytest.raises(LocalProtocolError):
        pair.client.send_notification("notifications/initialized")


@pytest.mark.spec("LC-09")
def test_client_accepts_an_older_version_it_speaks() -> None:
    pair = ProtocolPair(server_versions=("2024-11-05",))
    pair.handshake()
    assert pair.client.protocol_version == pair.server.protocol_version == "2024-11-05"


# --- before OPERATING: what may be sent (LC-05, LC-06) ------------------------------


def client_in(state: SessionState) -> ProtocolPair:
    pair = ProtocolPair()
    if state is INITIALIZING:
        pair.client.initialize_request()
    return pair


@pytest.mark.spec("LC-05", "PI-01")
@pytest.mark.parametrize("state", [NEW, INITIALIZING], ids=lambda s: s.value)
def test_client_sends_only_ping_before_the_result(state: SessionState) -> None:
    pair = client_in(state)
    client = pair.client
    for method in ("tools/list", "resources/list", "prompts/list", "logging/setLevel"):
        with pytest.raises(LocalProtocolError, match="LC-05"):
            client.send_request(method, {"level": "info"} if method == "logging/setLevel" else None)
    with pytest.raises(LocalProtocolError):
        client.send_notification("notifications/roots/list_changed")
    ping = client.send_request("ping")
    assert wire(client.encode(ping))["method"] == "ping"
    assert client.state is state


@pytest.mark.spec("LC-04")
def test_client_sends_initialized_only_as_client() -> None:
    server = Connection(Role.SERVER)
    with pytest.raises(LocalProtocolError):
        server.send_notification("notifications/initialized")


def server_in(state: SessionState) -> ProtocolPair:
    """A pair whose server is in *state* (the client is behind it)."""
    pair = ProtocolPair()
    if state is NEW:
        return pair
    init = pair.client.initialize_request()
    event = pair.one(pair.client_to_server(init))
    if state is INITIALIZING:
        return pair
    pair.server_accepts_initialize(event)
    assert pair.server.state is INITIALIZED
    return pair


@pytest.mark.spec("LC-06", "PI-01")
@pytest.mark.parametrize("state", [NEW, INITIALIZING, INITIALIZED], ids=lambda s: s.value)
def test_server_sends_only_ping_and_logging_before_initialized(state: SessionState) -> None:
    pair = server_in(state)
    server = pair.server
    for method in ("roots/list", "sampling/createMessage", "elicitation/create"):
        with pytest.raises(LocalProtocolError):
            server.send_request(method)
    with pytest.raises(LocalProtocolError):
        server.send_notification("notifications/tools/list_changed")
    ping = server.send_request("ping")
    assert wire(server.encode(ping))["method"] == "ping"
    note = server.send_notification(
        "notifications/message",
        t.LoggingMessageNotificationParams(level=t.LoggingLevel.INFO, data="hi"),
    )
    assert wire(server.encode(note))["params"] == {"level": "info", "data": "hi"}
    assert server.state is state


# --- before OPERATING: what is accepted (A-04) --------------------------------------


@pytest.mark.spec("LC-05", "LC-06", "LC-11")
@pytest.mark.parametrize(
    ("state", "method", "accepted"),
    [
        (NEW, "ping", True),
        (NEW, "tools/list", False),
        (NEW, "resources/read", False),
        (INITIALIZING, "ping", True),
        (INITIALIZING, "tools/list", False),
        # after the result, before notifications/initialized: accepted.
        (INITIALIZED, "ping", True),
        (INITIALIZED, "tools/list", True),
        (INITIALIZED, "resources/read", True),
        (OPERATING, "tools/list", True),
    ],
)
def test_server_accepts_requests_by_state(state: SessionState, method: str, accepted: bool) -> None:
    pair = server_in(OPERATING if state is OPERATING else state)
    if state is OPERATING:
        pair = ProtocolPair()
        pair.handshake()
    params = {"uri": "file:///x"} if method == "resources/read" else None
    events = pair.server.receive_data(request_frame("r-1", method, params))
    if accepted:
        event = only(events)
        assert isinstance(event, RequestReceived)
        assert event.request.method == method
        record = pair.server.record(Direction.INBOUND, "r-1")
        assert record is not None
        assert record.state is RequestState.QUEUED
    else:
        message = refusal(events, ErrorCode.INVALID_REQUEST, "r-1")
        assert "before initialization" in message
        assert pair.server.record(Direction.INBOUND, "r-1") is None
    assert pair.server.state is state


@pytest.mark.spec("LC-06", "PI-01")
def test_client_refuses_server_requests_before_operating_except_ping() -> None:
    pair = client_in(INITIALIZING)
    message = refusal(
        pair.client.receive_data(request_frame(5, "roots/list")), ErrorCode.INVALID_REQUEST, 5
    )
    assert "before initialization" in message
    event = only(pair.client.receive_data(request_frame(6, "ping")))
    assert isinstance(event, RequestReceived)


@pytest.mark.spec("PI-01", "PI-02")
@pytest.mark.parametrize(
    "state", [NEW, INITIALIZING, INITIALIZED, OPERATING], ids=lambda s: s.value
)
def test_ping_answered_with_empty_result_in_every_state(state: SessionState) -> None:
    if state is OPERATING:
        pair = ProtocolPair()
        pair.handshake()
    else:
        pair = server_in(state)
    request, event = pair.ping()
    assert event.params is None
    assert pair.server.start_inbound(request.id)
    reply = pair.server.respond(request.id, {})
    assert reply is not None
    data = pair.server.encode(reply)
    assert wire(data) == {"jsonrpc": "2.0", "id": request.id, "result": {}}
    assert data is not None
    response = only(pair.client.receive_data(data))
    assert isinstance(response, ResponseReceived)
    assert response.result == t.EmptyResult()
    assert pair.server.state is state


# --- initialize only once, never batched --------------------------------------------


@pytest.mark.spec("LC-01")
@pytest.mark.parametrize("state", [INITIALIZING, INITIALIZED, OPERATING], ids=lambda s: s.value)
def test_second_initialize_refused(state: SessionState) -> None:
    if state is OPERATING:
        pair = ProtocolPair()
        pair.handshake()
    else:
        pair = server_in(state)
    message = refusal(
        pair.server.receive_data(init_frame("again")), ErrorCode.INVALID_REQUEST, "again"
    )
    assert "already initialized" in message
    assert pair.server.state is state
    with pytest.raises(LocalProtocolError):
        pair.client.send_request("initialize", {})


def test_initialize_is_sent_only_by_the_client() -> None:
    with pytest.raises(LocalProtocolError):
        Connection(Role.SERVER).initialize_request()
    # ... and a client receiving one answers -32601 (wrong direction).
    refusal(Connection(Role.CLIENT).receive_data(init_frame(3)), ErrorCode.METHOD_NOT_FOUND, 3)


@pytest.mark.spec("LC-12", "BP-18")
def test_initialize_inside_a_batch_refused_in_2025_03_26() -> None:
    pair = ProtocolPair()
    pair.handshake("2025-03-26")
    batch = b"[" + init_frame(50) + b"," + request_frame(51, "ping") + b"]"
    events = pair.server.receive_data(batch)
    assert len(events) == 2
    assert isinstance(events[0], InvalidMessage)
    assert events[0].reply is not None
    assert events[0].reply.id == 50
    assert events[0].reply.error.code == ErrorCode.INVALID_REQUEST
    assert "batch" in events[0].reply.error.message
    assert isinstance(events[1], RequestReceived)
    assert events[1].request.id == 51


@pytest.mark.spec("BP-18")
def test_batch_of_requests_and_notifications_accepted_in_2025_03_26() -> None:
    pair = ProtocolPair()
    pair.handshake("2025-03-26")
    batch = (
        b"["
        + request_frame(10, "ping")
        + b","
        + request_frame(11, "tools/list")
        + b","
        + frame({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        + b"]"
    )
    events = pair.server.receive_data(batch)
    assert [type(e) for e in events] == [RequestReceived, RequestReceived, NotificationReceived]
    assert pair.server.in_flight(Direction.INBOUND) == [10, 11]


@pytest.mark.spec("BP-19")
@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25"])
def test_batch_refused_in_other_revisions(version: str) -> None:
    pair = ProtocolPair()
    pair.handshake(version)
    batch = b"[" + request_frame(1, "ping") + b"]"
    message = refusal(pair.server.receive_data(batch), ErrorCode.INVALID_REQUEST, None)
    assert "batch" in message
    assert pair.server.in_flight(Direction.INBOUND) == []


@pytest.mark.spec("BP-19")
def test_batch_refused_before_negotiation() -> None:
    server = Connection(Role.SERVER)
    refusal(server.receive_data(b"[" + init_frame() + b"]"), ErrorCode.INVALID_REQUEST, None)
    assert server.state is NEW


def test_failed_initialize_returns_the_server_to_new() -> None:
    server = Connection(Role.SERVER)
    event = only(server.receive_data(init_frame(1)))
    assert isinstance(event, RequestReceived)
    assert server.state is INITIALIZING
    server.start_inbound(1)
    reply = server.respond_error(1, ErrorObject(-32602, "no"))
    assert reply is not None
    assert wire(server.encode(reply))["error"]["code"] == -32602
    assert server.state is NEW
    # A new attempt (with a new id) is then accepted.
    assert isinstance(only(server.receive_data(init_frame(2))), RequestReceived)
    assert server.state is INITIALIZING


# --- notifications/initialized out of place ----------------------------------------

INITIALIZED_NOTE = frame({"jsonrpc": "2.0", "method": "notifications/initialized"})


@pytest.mark.parametrize("state", [NEW, INITIALIZING], ids=lambda s: s.value)
def test_initialized_too_early_is_ignored(state: SessionState) -> None:
    pair = server_in(state)
    event = only(pair.server.receive_data(INITIALIZED_NOTE))
    assert isinstance(event, Ignored)
    assert event.reason == "unexpected"
    assert pair.server.state is state


def test_second_initialized_is_ignored() -> None:
    pair = ProtocolPair()
    pair.handshake()
    event = only(pair.server.receive_data(INITIALIZED_NOTE))
    assert isinstance(event, Ignored)
    assert event.reason == "unexpected"
    assert pair.server.state is OPERATING


def test_client_ignores_initialized_from_the_server() -> None:
    pair = ProtocolPair()
    pair.handshake()
    event = only(pair.client.receive_data(INITIALIZED_NOTE))
    assert isinstance(event, Ignored)
    assert event.reason == "unknown-method"


# --- initialize cannot be cancelled (CN-03, LC-13) ----------------------------------


@pytest.mark.spec("CN-03", "LC-13")
def test_client_cancelling_initialize_sends_nothing() -> None:
    pair = ProtocolPair()
    init = pair.client.initialize_request()
    pair.one(pair.client_to_server(init))
    # The caller gave up: record CANCELLED, but no notifications/cancelled may be
    # sent (the session tears the transport down instead).
    assert pair.client.cancel_outbound(init.id, CancelOrigin.DEADLINE, "timeout") is None
    record = pair.client.record(Direction.OUTBOUND, init.id)
    assert record is not None
    assert record.state is RequestState.CANCELLED
    assert record.cancel_origin is CancelOrigin.DEADLINE


@pytest.mark.spec("CN-03", "CN-06", "LC-13")
def test_server_ignores_a_cancel_naming_initialize() -> None:
    server = Connection(Role.SERVER)
    only(server.receive_data(init_frame(1)))
    cancel = frame(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    )
    event = only(server.receive_data(cancel))
    assert isinstance(event, Ignored)
    assert event.reason == "not-cancellable"
    entry = server.record(Direction.INBOUND, 1)
    assert entry is not None
    assert entry.cancel_origin is None
    assert entry.state is RequestState.QUEUED
    assert entry.late_events == ("peer cancel refused: initialize is not cancellable",)
    # ... and the initialize is answered as usual.
    server.start_inbound(1)
    assert server.respond(1, {"protocolVersion": LATEST_VERSION}) is not None


# --- close --------------------------------------------------------------------------

SENDS: list[tuple[str, Callable[[Connection], object]]] = [
    ("ping", lambda p: p.send_request("ping")),
    ("tools/list", lambda p: p.send_request("tools/list")),
    ("initialized", lambda p: p.send_notification("notifications/initialized")),
    ("roots-changed", lambda p: p.send_notification("notifications/roots/list_changed")),
]


@pytest.mark.parametrize(("name", "send"), SENDS, ids=[s[0] for s in SENDS])
def test_closed_refuses_every_send(name: str, send: Callable[[Connection], object]) -> None:
    pair = ProtocolPair()
    pair.handshake()
    pair.client.close("transport lost")
    pair.client.close("second reason is ignored")
    assert pair.client.state is CLOSED
    assert pair.client.close_reason == "transport lost"
    with pytest.raises(LocalProtocolError, match="transport lost"):
        send(pair.client)


def test_closed_refuses_inbound_requests_but_still_reads_responses() -> None:
    pair = ProtocolPair()
    pair.handshake()
    request = pair.client.send_request("tools/list")
    data = pair.client.encode(request)
    assert data is not None
    pair.server.receive_data(data)
    pair.server.close("shutting down")
    message = refusal(
        pair.server.receive_data(request_frame(99, "ping")), ErrorCode.INVALID_REQUEST, 99
    )
    assert "closed" in message
    # A request already in flight may still be answered while the writer drains.
    pair.server.start_inbound(request.id)
    reply = pair.server.respond(request.id, t.ListToolsResult(tools=[]))
    assert reply is not None
    event = only(pair.server_to_client(reply))
    assert isinstance(event, ResponseReceived)
    # A closed client does not offer a cancel for what it still has in flight.
    pending = pair.client.send_request("tools/list")
    pair.client_to_server(pending)
    pair.client.close("bye")
    assert pair.client.cancel_outbound(pending.id, CancelOrigin.SHUTDOWN, "bye") is None
