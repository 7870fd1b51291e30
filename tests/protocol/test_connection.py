"""``Connection`` during operation: routing, refusals, every race as a row.

Two Protocols talk through ``ProtocolPair``; a step is "this side makes a
message, encodes it (or gets None: nothing written), the other side receives
the bytes". Each race test spells out both orders.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from protocol_pair import frame, wire

from trio_mcp import types as t
from trio_mcp.protocol import (
    CancelOrigin,
    CancelReceived,
    Connection,
    Direction,
    ErrorCode,
    ErrorObject,
    ErrorReceived,
    ErrorResponse,
    Event,
    Ignored,
    IgnoredReason,
    InvalidMessage,
    LocalProtocolError,
    NotificationReceived,
    Progress,
    ProgressReceived,
    ProtocolStatistics,
    Request,
    RequestReceived,
    RequestState,
    Response,
    ResponseReceived,
    Role,
    SessionState,
)
from trio_mcp.testing import FULL_SERVER_CAPABILITIES, ProtocolPair, RecordingObserver

Q, R, DONE, FAILED, CANCELLED = (
    RequestState.QUEUED,
    RequestState.RUNNING,
    RequestState.COMPLETED,
    RequestState.FAILED,
    RequestState.CANCELLED,
)
CALL = {"name": "slow", "arguments": {}}
TOOL_RESULT = t.CallToolResult(content=[t.TextContent(text="done")])


def operating(**kw: Any) -> ProtocolPair:
    pair = ProtocolPair(**kw)
    pair.handshake()
    return pair


def only(events: list[Event]) -> Event:
    assert len(events) == 1, events
    return events[0]


def ignored(events: list[Event], reason: str) -> Ignored:
    event = only(events)
    assert isinstance(event, Ignored), event
    assert event.reason == reason, event
    return event


def refused(events: list[Event], code: ErrorCode, reply_id: object) -> ErrorResponse:
    event = only(events)
    assert isinstance(event, InvalidMessage), event
    assert event.reply is not None
    assert event.reply.error.code == code
    assert event.reply.id == reply_id
    return event.reply


def request_frame(request_id: Any, method: str, params: Any = None) -> bytes:
    obj: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        obj["params"] = params
    return frame(obj)


def note_frame(method: str, params: Any = None) -> bytes:
    obj: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        obj["params"] = params
    return frame(obj)


def cancel_frame(request_id: Any, reason: Any = None) -> bytes:
    params: dict[str, Any] = {"requestId": request_id}
    if reason is not None:
        params["reason"] = reason
    return note_frame("notifications/cancelled", params)


def progress_frame(token: Any, progress: Any, **extra: Any) -> bytes:
    return note_frame(
        "notifications/progress", {"progressToken": token, "progress": progress, **extra}
    )


def response_frame(request_id: Any, result: Any = None) -> bytes:
    return frame({"jsonrpc": "2.0", "id": request_id, "result": {} if result is None else result})


def state_of(protocol: Connection, direction: Direction, request_id: Any) -> RequestState:
    record = protocol.record(direction, request_id)
    assert record is not None
    return record.state


def running_call(pair: ProtocolPair, *, want_progress: bool = False) -> Request:
    """The client's tools/call, written, received and started by the server."""
    request, event = pair.client_request("tools/call", CALL, want_progress=want_progress)
    assert isinstance(event.params, t.CallToolRequestParams)
    assert pair.server.start_inbound(request.id)
    assert state_of(pair.client, Direction.OUTBOUND, request.id) is R
    assert state_of(pair.server, Direction.INBOUND, request.id) is R
    return request


# --- routing of refusals: unknown method, wrong direction, capability, revision -----

# (receiver role, revision, method, params) -> -32601 with the request's id.
METHOD_NOT_FOUND_ROWS: list[tuple[str, Role, str, str, Any]] = [
    ("unknown", Role.SERVER, "2025-11-25", "tools/explode", None),
    ("unknown-on-client", Role.CLIENT, "2025-11-25", "nope", None),
    ("empty-name", Role.SERVER, "2025-11-25", "", None),
    ("notification-as-request", Role.SERVER, "2025-11-25", "notifications/initialized", None),
    ("cancel-as-request", Role.SERVER, "2025-11-25", "notifications/cancelled", {"requestId": 1}),
    # Wrong direction: a server never receives client-bound requests, and back.
    ("server-gets-sampling", Role.SERVER, "2025-11-25", "sampling/createMessage", {}),
    ("server-gets-roots", Role.SERVER, "2025-11-25", "roots/list", None),
    ("server-gets-elicitation", Role.SERVER, "2025-11-25", "elicitation/create", {}),
    ("client-gets-tools-call", Role.CLIENT, "2025-11-25", "tools/call", CALL),
    ("client-gets-tools-list", Role.CLIENT, "2025-11-25", "tools/list", None),
    ("client-gets-initialize", Role.CLIENT, "2025-11-25", "initialize", {}),
    # Methods that do not exist in the negotiated revision.
    ("elicitation-in-2025-03", Role.CLIENT, "2025-03-26", "elicitation/create", {"message": "m"}),
    ("tasks-in-2025-06", Role.SERVER, "2025-06-18", "tasks/get", {"taskId": "t"}),
    ("tasks-list-in-2024", Role.CLIENT, "2024-11-05", "tasks/list", None),
]


@pytest.mark.spec("LC-11")
@pytest.mark.parametrize(
    ("role", "revision", "method", "params"),
    [row[1:] for row in METHOD_NOT_FOUND_ROWS],
    ids=[row[0] for row in METHOD_NOT_FOUND_ROWS],
)
def test_method_not_found(role: Role, revision: str, method: str, params: Any) -> None:
    pair = ProtocolPair()
    pair.handshake(revision)
    receiver = pair.server if role is Role.SERVER else pair.client
    before = receiver.statistics()
    reply = refused(
        receiver.receive_data(request_frame("x", method, params)), ErrorCode.METHOD_NOT_FOUND, "x"
    )
    assert method in reply.error.message
    assert receiver.in_flight(Direction.INBOUND) == []
    assert receiver.statistics().invalid_messages == before.invalid_messages + 1


# Requests whose receiver did not declare the capability that gates them.
SERVER_GATED = [
    ("tools/list", None, {}),
    ("tools/call", CALL, {}),
    ("resources/list", None, {"tools": {}}),
    ("resources/read", {"uri": "file:///a"}, {}),
    ("resources/subscribe", {"uri": "file:///a"}, {"resources": {}}),
    ("resources/unsubscribe", {"uri": "file:///a"}, {"resources": {"subscribe": False}}),
    ("prompts/get", {"name": "p"}, {}),
    ("logging/setLevel", {"level": "info"}, {}),
    (
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "v"}},
        {},
    ),
]


@pytest.mark.spec("LC-11", "LC-14")
@pytest.mark.parametrize(("method", "params", "capabilities"), SERVER_GATED, ids=lambda v: str(v))
def test_server_refuses_requests_for_undeclared_capabilities(
    method: str, params: Any, capabilities: dict[str, Any]
) -> None:
    pair = operating(server_capabilities=capabilities)
    reply = refused(
        pair.server.receive_data(request_frame(7, method, params)), ErrorCode.METHOD_NOT_FOUND, 7
    )
    assert "was not declared" in reply.error.message
    # And the client, which knows what the server declared, refuses to send it.
    with pytest.raises(LocalProtocolError, match="did not declare"):
        pair.client.send_request(method, params)


def test_completion_not_gated_in_2024_11_05() -> None:
    pair = ProtocolPair(server_capabilities={})
    pair.handshake("2024-11-05")
    params = {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "v"}}
    _, event = pair.client_request("completion/complete", params)
    assert isinstance(event.params, t.CompleteRequestParams)


CLIENT_GATED = [
    ("sampling/createMessage", {"messages": [], "maxTokens": 1}),
    ("roots/list", None),
    (
        "elicitation/create",
        {"message": "m", "requestedSchema": {"type": "object", "properties": {}}},
    ),
]


@pytest.mark.spec("LC-11", "LC-14")
@pytest.mark.parametrize(("method", "params"), CLIENT_GATED, ids=lambda v: str(v))
def test_client_refuses_requests_for_undeclared_capabilities(method: str, params: Any) -> None:
    pair = operating(client_capabilities={})
    reply = refused(
        pair.client.receive_data(request_frame("s1", method, params)),
        ErrorCode.METHOD_NOT_FOUND,
        "s1",
    )
    assert "client capability" in reply.error.message
    with pytest.raises(LocalProtocolError, match="did not declare"):
        pair.server.send_request(method, params)


@pytest.mark.spec("LC-11", "LC-14")
@pytest.mark.parametrize(("method", "params"), CLIENT_GATED, ids=lambda v: str(v))
def test_client_accepts_requests_for_declared_capabilities(method: str, params: Any) -> None:
    pair = operating()
    request, event = pair.server_request(method, params)
    assert event.request == request


# Notifications gated by the sender's own capability (fixed: were not checked).
OWN_GATED = [
    (Role.SERVER, "notifications/tools/list_changed", None, {"tools": {}}),
    (Role.SERVER, "notifications/resources/list_changed", None, {"resources": {"subscribe": True}}),
    (Role.SERVER, "notifications/resources/updated", {"uri": "file:///a"}, {"resources": {}}),
    (Role.SERVER, "notifications/prompts/list_changed", None, {"prompts": {}}),
    (Role.SERVER, "notifications/message", {"level": "info", "data": 1}, {"tools": {}}),
    (Role.CLIENT, "notifications/roots/list_changed", None, {"roots": {}}),
]


@pytest.mark.spec("LC-11")
@pytest.mark.parametrize(
    ("role", "method", "params", "capabilities"), OWN_GATED, ids=lambda v: str(v)
)
def test_notification_needs_our_own_capability(
    role: Role, method: str, params: Any, capabilities: dict[str, Any]
) -> None:
    key = "server_capabilities" if role is Role.SERVER else "client_capabilities"
    pair = operating(**{key: capabilities})
    sender = pair.server if role is Role.SERVER else pair.client
    with pytest.raises(LocalProtocolError, match="we did not declare"):
        sender.send_notification(method, params)
    # With the full capability set it goes out and arrives.
    full = operating()
    sender = full.server if role is Role.SERVER else full.client
    receiver = full.client if role is Role.SERVER else full.server
    data = sender.encode(sender.send_notification(method, params))
    assert data is not None
    event = only(receiver.receive_data(data))
    assert isinstance(event, NotificationReceived)
    assert event.method == method


@pytest.mark.spec("LC-11")
@pytest.mark.parametrize(
    ("role", "method"),
    [
        (Role.CLIENT, "sampling/createMessage"),
        (Role.CLIENT, "roots/list"),
        (Role.SERVER, "tools/list"),
        (Role.SERVER, "initialize"),
        (Role.CLIENT, "no/such/method"),
        (Role.CLIENT, "notifications/initialized"),
    ],
)
def test_sending_the_wrong_way_or_unknown_is_a_local_error(role: Role, method: str) -> None:
    pair = operating()
    sender = pair.client if role is Role.CLIENT else pair.server
    with pytest.raises(LocalProtocolError):
        sender.send_request(method)
    assert sender.in_flight(Direction.OUTBOUND) == []


def test_sending_a_method_missing_from_the_revision_is_a_local_error() -> None:
    pair = ProtocolPair()
    pair.handshake("2025-03-26")
    with pytest.raises(LocalProtocolError, match="does not exist in revision"):
        pair.server.send_request("elicitation/create", {"message": "m", "requestedSchema": {}})
    with pytest.raises(LocalProtocolError, match="does not exist in revision"):
        pair.client.send_request("tasks/list")


def test_unknown_or_misdirected_notifications_are_ignored_without_reply() -> None:
    pair = operating()
    for receiver, method in [
        (pair.server, "notifications/unknown"),
        (pair.server, "notifications/tools/list_changed"),  # server-sent only
        (pair.client, "notifications/roots/list_changed"),  # client-sent only
        (pair.server, "ping"),  # a request method without an id
        (pair.client, "notifications/tasks/status"),  # missing its params
    ]:
        event = only(receiver.receive_data(note_frame(method)))
        assert isinstance(event, Ignored)
        assert event.reason in {"unknown-method", "malformed"}


def test_notification_with_bad_params_is_ignored_not_answered() -> None:
    pair = operating()
    event = ignored(
        pair.client.receive_data(note_frame("notifications/message", {"level": "loud", "data": 1})),
        "malformed",
    )
    assert "notifications/message" in event.detail


# --- params (-32602) ------------------------------------------------------------------

BAD_PARAMS = [
    ("wrong-type", "tools/call", {"name": 5}, "$.name"),
    ("missing-field", "tools/call", {"arguments": {}}, "name"),
    ("nested", "resources/read", {"uri": ["x"]}, "$.uri"),
    ("no-params", "tools/call", None, "params are required"),
    ("bad-level", "logging/setLevel", {"level": "loud"}, "$.level"),
    ("bad-cursor", "tools/list", {"cursor": 5}, "$.cursor"),
]


@pytest.mark.spec("BP-07")
@pytest.mark.parametrize(
    ("method", "params", "needle"), [r[1:] for r in BAD_PARAMS], ids=[r[0] for r in BAD_PARAMS]
)
def test_bad_params_refused_with_path_labelled_data(method: str, params: Any, needle: str) -> None:
    pair = operating()
    reply = refused(
        pair.server.receive_data(request_frame(11, method, params)), ErrorCode.INVALID_PARAMS, 11
    )
    assert method in reply.error.message
    text = reply.error.message + " " + " ".join((reply.error.data or {}).get("errors", []))
    assert needle in text
    # The reply is one frame; no record was created.
    assert wire(pair.server.encode(reply))["id"] == 11
    assert pair.server.record(Direction.INBOUND, 11) is None


@pytest.mark.spec("PG-01")
@pytest.mark.parametrize("token", [True, 1.5, None, [1], {"a": 1}])
def test_progress_token_must_be_string_or_integer(token: Any) -> None:
    pair = operating()
    reply = refused(
        pair.server.receive_data(request_frame(12, "ping", {"_meta": {"progressToken": token}})),
        ErrorCode.INVALID_PARAMS,
        12,
    )
    assert "progressToken" in reply.error.message


# --- outbound results -------------------------------------------------------------


@pytest.mark.spec("BP-06", "BP-27")
def test_error_response_is_remote_and_bad_result_is_local() -> None:
    pair = operating()
    request, _ = pair.client_request("tools/call", CALL)
    pair.server.start_inbound(request.id)
    reply = pair.server.respond_error(request.id, ErrorObject(-32602, "Unknown tool", {"x": 1}))
    assert reply is not None
    event = only(pair.server_to_client(reply))
    assert event == ErrorReceived(
        request.id, ErrorObject(-32602, "Unknown tool", {"x": 1}), remote=True
    )
    assert state_of(pair.client, Direction.OUTBOUND, request.id) is FAILED

    # A result that does not match the schema fails the call with a *local* error.
    request = pair.client.send_request("tools/list")
    pair.client.encode(request)
    event = only(pair.client.receive_data(response_frame(request.id, {"tools": "nope"})))
    assert isinstance(event, ErrorReceived)
    assert event.remote is False
    assert event.error.data is not None
    assert any("tools" in line for line in event.error.data["errors"])
    record = pair.client.record(Direction.OUTBOUND, request.id)
    assert record is not None
    assert record.state is FAILED
    assert record.error == event.error


def test_respond_unstructures_attrs_results_to_the_wire_names() -> None:
    pair = operating()
    request = running_call(pair)
    reply = pair.server.respond(request.id, t.CallToolResult(content=[], is_error=True))
    assert reply is not None
    assert wire(pair.server.encode(reply))["result"] == {"content": [], "isError": True}


@pytest.mark.parametrize("bad", [float("nan"), 2**64, object()], ids=["nan", "2**64", "object"])
def test_result_that_is_not_json_fails_the_request_with_internal_error(bad: Any) -> None:
    pair = operating()
    request = running_call(pair)
    reply = pair.server.respond(request.id, {"value": bad})
    assert isinstance(reply, ErrorResponse)
    assert reply.error.code == ErrorCode.INTERNAL_ERROR
    assert state_of(pair.server, Direction.INBOUND, request.id) is FAILED
    event = only(pair.server_to_client(reply))
    assert isinstance(event, ErrorReceived)
    assert event.error.code == ErrorCode.INTERNAL_ERROR


def test_respond_before_start_is_a_local_error() -> None:
    # Fixed: the record stayed QUEUED forever while a response went out.
    pair = operating()
    request, _ = pair.client_request("tools/call", CALL)
    with pytest.raises(LocalProtocolError, match="start_inbound"):
        pair.server.respond(request.id, TOOL_RESULT)
    assert state_of(pair.server, Direction.INBOUND, request.id) is Q
    # Failing a queued request is fine (e.g. the session is closing).
    reply = pair.server.respond_error(
        request.id, ErrorObject(int(ErrorCode.SESSION_CLOSED), "closing")
    )
    assert reply is not None
    assert state_of(pair.server, Direction.INBOUND, request.id) is FAILED


def test_respond_to_unknown_id_gives_nothing() -> None:
    pair = operating()
    assert pair.server.respond(404, {}) is None
    assert pair.server.respond_error(404, ErrorObject(-1, "x")) is None
    assert pair.server.cancel_inbound(404, CancelOrigin.DEADLINE, None) is None
    assert pair.server.start_inbound(404) is False


# --- races: cancellation ------------------------------------------------------------


@pytest.mark.spec("CN-01", "CN-05", "CN-07", "CN-09", "A-01")
def test_race_cancel_arrives_before_completion() -> None:
    pair = operating()
    request = running_call(pair)
    # Client: the caller gave up; record CANCELLED and tell the server (CN-01).
    note = pair.client.cancel_outbound(request.id, CancelOrigin.CALLER, "user hit stop")
    assert note is not None
    assert wire(pair.client.encode(note)) == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request.id, "reason": "user hit stop"},
    }
    assert state_of(pair.client, Direction.OUTBOUND, request.id) is CANCELLED
    # Server: the cancel arrives while the handler runs.
    event = only(pair.client_to_server(note))
    assert event == CancelReceived(request.id, "user hit stop")
    entry = pair.server.record(Direction.INBOUND, request.id)
    assert entry is not None
    assert entry.cancel_origin is CancelOrigin.PEER
    assert entry.state is R  # requested, not yet cancelled
    # The handler finishes anyway: COMPLETED, but no response, ever (CN-05).
    assert pair.server.respond(request.id, TOOL_RESULT) is None
    assert pair.server.encode(Response(request.id, {"content": []})) is None
    record = pair.server.record(Direction.INBOUND, request.id)
    assert record is not None
    assert record.state is DONE
    assert record.cancel_origin is CancelOrigin.PEER
    assert record.cancel_reason == "user hit stop"  # CN-09: the reason is kept
    # A legacy peer that answers anyway: the late response is ignored and recorded.
    event = ignored(pair.client.receive_data(response_frame(request.id, {"content": []})), "late")
    assert str(request.id) in event.detail
    record = pair.client.record(Direction.OUTBOUND, request.id)
    assert record is not None
    assert record.state is CANCELLED
    assert record.late_events == ("late response",)


@pytest.mark.spec("CN-08", "CN-06", "CN-07", "CN-10", "A-02")
def test_race_completion_crosses_the_cancel_on_the_wire() -> None:
    pair = operating()
    request = running_call(pair)
    # Server completes and writes the response ...
    reply = pair.server.respond(request.id, TOOL_RESULT)
    assert reply is not None
    response_bytes = pair.server.encode(reply)
    assert response_bytes is not None
    # ... while the client cancels before reading it.
    note = pair.client.cancel_outbound(request.id, CancelOrigin.DEADLINE, "timeout")
    assert note is not None
    cancel_bytes = pair.client.encode(note)
    assert cancel_bytes is not None
    # Each side now reads the other's message: both are ignored (and recorded),
    # nothing breaks.
    ignored(pair.server.receive_data(cancel_bytes), "late")
    ignored(pair.client.receive_data(response_bytes), "late")
    assert state_of(pair.server, Direction.INBOUND, request.id) is DONE
    assert state_of(pair.client, Direction.OUTBOUND, request.id) is CANCELLED
    assert pair.server.in_flight(Direction.INBOUND) == []
    assert pair.client.in_flight(Direction.OUTBOUND) == []


@pytest.mark.spec("CN-08")
@pytest.mark.spec("CN-05")
def test_race_cancel_arrives_after_response_built_but_before_written_suppresses_it() -> None:
    pair = operating()
    request = running_call(pair)
    reply = pair.server.respond(request.id, TOOL_RESULT)
    assert reply is not None
    # The peer's cancel arrives while the response waits for the writer: the
    # handler already finished, but nothing was written yet, so the response is
    # suppressed (after a peer cancel no response is ever sent). The record stays
    # COMPLETED (cancel requested is not cancelled) and notes the cancel.
    event = only(pair.server.receive_data(cancel_frame(request.id, "stop")))
    assert event == CancelReceived(request.id, "stop")
    assert pair.server.encode(reply) is None
    record = pair.server.record(Direction.INBOUND, request.id)
    assert record is not None
    assert (record.state, record.cancel_origin, record.cancel_reason) == (
        DONE,
        CancelOrigin.PEER,
        "stop",
    )
    assert record.cancel_requested
    assert record.late_events == ("cancel by peer in completed: the unwritten reply is suppressed",)
    # A second cancel is late and recorded.
    ignored(pair.server.receive_data(cancel_frame(request.id)), "late")
    record = pair.server.record(Direction.INBOUND, request.id)
    assert record is not None
    assert len(record.late_events) == 2


@pytest.mark.spec("CN-05")
def test_race_cancel_before_a_local_error_reply_is_written_suppresses_it() -> None:
    # Same window for a failed request whose error reply waits in the queue; the
    # record keeps FAILED and its first asker, if any.
    pair = operating()
    request = running_call(pair)
    reply = pair.server.respond_error(request.id, ErrorObject(-32603, "boom"))
    assert reply is not None
    assert isinstance(only(pair.server.receive_data(cancel_frame(request.id))), CancelReceived)
    assert pair.server.encode(reply) is None
    record = pair.server.record(Direction.INBOUND, request.id)
    assert record is not None
    assert (record.state, record.cancel_origin) == (FAILED, CancelOrigin.PEER)


@pytest.mark.spec("CN-05")
def test_race_peer_cancel_while_response_is_queued_suppresses_it() -> None:
    pair = operating()
    request = running_call(pair)
    pair.server.receive_data(cancel_frame(request.id, "stop"))
    # The handler finished in the same instant and produced a reply: not written.
    assert pair.server.respond(request.id, TOOL_RESULT) is None
    # Same for an error path.
    request2 = running_call(pair)
    pair.server.receive_data(cancel_frame(request2.id))
    assert pair.server.respond_error(request2.id, ErrorObject(-32603, "boom")) is None
    assert pair.server.encode(ErrorResponse(request2.id, ErrorObject(-32603, "boom"))) is None
    assert state_of(pair.server, Direction.INBOUND, request2.id) is FAILED


@pytest.mark.spec("CN-05")
def test_peer_cancel_while_queued_never_runs_and_gets_no_response() -> None:
    pair = operating()
    request, _ = pair.client_request("tools/call", CALL)
    event = only(pair.server.receive_data(cancel_frame(request.id, "never mind")))
    assert event == CancelReceived(request.id, "never mind")
    assert pair.server.cancel_inbound(request.id, CancelOrigin.PEER, "never mind") is None
    record = pair.server.record(Direction.INBOUND, request.id)
    assert record is not None
    assert record.state is CANCELLED
    assert record.started_at is None
    assert pair.server.start_inbound(request.id) is False


@pytest.mark.spec("CN-05")
def test_peer_cancel_then_handler_cancelled() -> None:
    pair = operating()
    request = running_call(pair)
    pair.server.receive_data(cancel_frame(request.id))
    # The session cancels the handler's scope; it reports the origin it saw, but the
    # first asker (the peer) wins, so nothing is sent.
    assert pair.server.cancel_inbound(request.id, CancelOrigin.DEADLINE, "scope") is None
    record = pair.server.record(Direction.INBOUND, request.id)
    assert record is not None
    assert (record.state, record.cancel_origin) == (CANCELLED, CancelOrigin.PEER)


@pytest.mark.spec("CN-05", "BP-27")
@pytest.mark.parametrize(
    ("origin", "replies"),
    [
        (CancelOrigin.PEER, False),
        (CancelOrigin.TRANSPORT, False),
        (CancelOrigin.SHUTDOWN, True),
        (CancelOrigin.DEADLINE, True),
    ],
)
def test_cancel_inbound_replies_only_for_local_origins(origin: CancelOrigin, replies: bool) -> None:
    pair = operating()
    request = running_call(pair)
    reply = pair.server.cancel_inbound(request.id, origin, "why")
    record = pair.server.record(Direction.INBOUND, request.id)
    assert record is not None
    assert (record.state, record.cancel_origin, record.cancel_reason) == (CANCELLED, origin, "why")
    if not replies:
        assert reply is None
        return
    assert isinstance(reply, ErrorResponse)
    assert reply.id == request.id
    assert reply.error.code == ErrorCode.REQUEST_CANCELLED_LOCALLY
    assert origin.value in reply.error.message
    assert "why" in reply.error.message
    event = only(pair.server_to_client(reply))
    assert isinstance(event, ErrorReceived)
    assert event.error.code == ErrorCode.REQUEST_CANCELLED_LOCALLY


@pytest.mark.spec("TO-01", "TO-02", "CN-01", "CN-07")
def test_timeout_cancels_the_request_and_tells_the_peer() -> None:
    # The session's deadline fired (TO-01): the request is cancelled with origin
    # DEADLINE, the peer gets notifications/cancelled (TO-02, legacy era), the
    # peer's handler sees a peer cancel, and whatever it still sends is dropped.
    pair = operating()
    request = running_call(pair, want_progress=True)
    pair.clock.advance(60.0)
    note = pair.client.cancel_outbound(request.id, CancelOrigin.DEADLINE, "timed out after 60s")
    assert note is not None
    assert only(pair.client_to_server(note)) == CancelReceived(request.id, "timed out after 60s")
    record = pair.client.record(Direction.OUTBOUND, request.id)
    assert record is not None
    assert (record.state, record.cancel_origin, record.duration) == (
        CANCELLED,
        CancelOrigin.DEADLINE,
        60.0,
    )
    assert pair.server.progress_notification(request.id, 1) is None
    assert pair.server.cancel_inbound(request.id, CancelOrigin.PEER, "timed out after 60s") is None
    ignored(pair.client.receive_data(progress_frame(request.id, 1)), "unknown-id")


@pytest.mark.spec("CN-01")
def test_cancel_without_reason_has_no_reason_field() -> None:
    pair = operating()
    request = running_call(pair)
    note = pair.client.cancel_outbound(request.id, CancelOrigin.CALLER)
    assert note is not None
    assert wire(pair.client.encode(note))["params"] == {"requestId": request.id}
    assert only(pair.client_to_server(note)) == CancelReceived(request.id, None)


@pytest.mark.spec("CN-01", "CN-02")
def test_cancel_while_queued_writes_nothing() -> None:
    pair = operating()
    request = pair.client.send_request("tools/call", CALL)
    written = len(pair.log)
    assert state_of(pair.client, Direction.OUTBOUND, request.id) is Q
    # Cancelled before the writer got to it: no notification (the peer never saw
    # the request) and the request itself is never written.
    assert pair.client.cancel_outbound(request.id, CancelOrigin.CALLER, "changed my mind") is None
    assert pair.client.encode(request) is None
    assert pair.client_to_server(request) == []
    assert len(pair.log) == written
    record = pair.client.record(Direction.OUTBOUND, request.id)
    assert record is not None
    assert (record.state, record.started_at) == (CANCELLED, None)


@pytest.mark.spec("CN-08")
@pytest.mark.parametrize("terminal", ["completed", "failed", "cancelled"])
def test_cancel_outbound_after_it_ended_gives_nothing(terminal: str) -> None:
    pair = operating()
    request = running_call(pair)
    if terminal == "completed":
        reply = pair.server.respond(request.id, TOOL_RESULT)
        assert reply is not None
        pair.server_to_client(reply)
    elif terminal == "failed":
        pair.client.fail_outbound(request.id, ErrorObject(-32000, "transport lost"))
    else:
        pair.client.cancel_outbound(request.id, CancelOrigin.CALLER)
    state = state_of(pair.client, Direction.OUTBOUND, request.id)
    assert pair.client.cancel_outbound(request.id, CancelOrigin.SHUTDOWN, "late") is None
    assert state_of(pair.client, Direction.OUTBOUND, request.id) is state


@pytest.mark.spec("CN-02", "CN-06", "CN-10")
@pytest.mark.parametrize(
    ("name", "cancel", "reason"),
    [
        ("unknown-id", cancel_frame(999), "unknown-id"),
        ("unknown-str-id", cancel_frame("999"), "unknown-id"),
        ("no-params", note_frame("notifications/cancelled"), "malformed"),
        ("no-request-id", note_frame("notifications/cancelled", {"reason": "x"}), "malformed"),
        ("null-id", cancel_frame(None), "malformed"),
        ("bool-id", cancel_frame(True), "malformed"),
        ("float-id", cancel_frame(1.5), "malformed"),
        ("reason-not-str", cancel_frame(1, reason=5), "malformed"),
    ],
)
def test_invalid_cancellations_are_ignored_silently(name: str, cancel: bytes, reason: str) -> None:
    pair = operating()
    request = running_call(pair)
    before = pair.server.statistics()
    ignored(pair.server.receive_data(cancel), reason)
    assert pair.server.statistics().ignored_events == before.ignored_events + 1
    entry = pair.server.record(Direction.INBOUND, request.id)
    assert entry is not None
    assert (entry.state, entry.cancel_origin) == (R, None)


@pytest.mark.spec("CN-02", "CN-06", "A-14")
def test_cancel_naming_our_own_outbound_id_is_foreign_and_ignored() -> None:
    # The server cancels "request 5", but 5 is an id the *client* issued: ids are
    # per-sender namespaces, so a cancel only names requests its sender issued.
    pair = operating()
    request = running_call(pair)
    ignored(pair.client.receive_data(cancel_frame(request.id)), "unknown-id")
    assert state_of(pair.client, Direction.OUTBOUND, request.id) is R


@pytest.mark.spec("CN-06", "CN-08")
def test_cancel_for_finished_inbound_is_ignored() -> None:
    pair = operating()
    request = running_call(pair)
    reply = pair.server.respond(request.id, TOOL_RESULT)
    assert reply is not None
    pair.server_to_client(reply)
    # The response was written: the cancel crossed it on the wire. Ignored as
    # late, and recorded on the record (which never saw a cancel request).
    ignored(pair.server.receive_data(cancel_frame(request.id)), "late")
    record = pair.server.record(Direction.INBOUND, request.id)
    assert record is not None
    assert (record.state, record.cancel_origin) == (DONE, None)
    assert record.late_events == ("cancel by peer in completed: ignored",)


@pytest.mark.spec("CN-06")
def test_second_peer_cancel_is_noted_but_first_reason_kept() -> None:
    pair = operating()
    request = running_call(pair)
    assert only(pair.server.receive_data(cancel_frame(request.id, "one"))) == CancelReceived(
        request.id, "one"
    )
    assert only(pair.server.receive_data(cancel_frame(request.id, "two"))) == CancelReceived(
        request.id, "two"
    )
    entry = pair.server.record(Direction.INBOUND, request.id)
    assert entry is not None
    assert entry.cancel_reason == "one"


# --- races: responses ----------------------------------------------------------------


@pytest.mark.spec("CN-07", "A-02")
@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("unknown-int", response_frame(999)),
        ("unknown-str", response_frame("1")),
        (
            "unknown-error",
            frame({"jsonrpc": "2.0", "id": 999, "error": {"code": 1, "message": "m"}}),
        ),
        (
            "null-id-error",
            frame({"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": "m"}}),
        ),
    ],
)
def test_response_to_unknown_id_is_ignored(name: str, data: bytes) -> None:
    pair = operating()
    request = running_call(pair)
    ignored(pair.client.receive_data(data), "unknown-id")
    assert state_of(pair.client, Direction.OUTBOUND, request.id) is R


@pytest.mark.spec("CN-07")
def test_response_for_a_request_not_yet_written_is_ignored_and_recorded() -> None:
    pair = operating()
    request = pair.client.send_request("tools/list")
    ignored(pair.client.receive_data(response_frame(request.id, {"tools": []})), "unknown-id")
    entry = pair.client.record(Direction.OUTBOUND, request.id)
    assert entry is not None
    assert entry.state is Q
    assert entry.late_events == ("response in queued",)


@pytest.mark.spec("CN-07", "CN-08")
@pytest.mark.parametrize("first", ["result", "error"])
def test_duplicate_response_is_late(first: str) -> None:
    pair = operating()
    request = running_call(pair)
    if first == "result":
        reply: Response | ErrorResponse | None = pair.server.respond(request.id, TOOL_RESULT)
    else:
        reply = pair.server.respond_error(request.id, ErrorObject(-1, "no"))
    assert reply is not None
    data = pair.server.encode(reply)
    assert data is not None
    assert not isinstance(only(pair.client.receive_data(data)), Ignored)
    ignored(pair.client.receive_data(data), "late")
    record = pair.client.record(Direction.OUTBOUND, request.id)
    assert record is not None
    assert record.late_events == ("late response",)


@pytest.mark.spec("CN-07")
def test_response_after_local_failure_is_late() -> None:
    pair = operating()
    request = running_call(pair)
    pair.client.fail_outbound(request.id, ErrorObject(int(ErrorCode.SESSION_CLOSED), "gone"))
    record = pair.client.record(Direction.OUTBOUND, request.id)
    assert record is not None
    assert record.state is FAILED
    assert record.error == ErrorObject(-32000, "gone")
    reply = pair.server.respond(request.id, TOOL_RESULT)
    assert reply is not None
    ignored(pair.server_to_client(reply), "late")


# --- ids (BP-04, A-14) -----------------------------------------------------------------


@pytest.mark.spec("BP-04")
def test_duplicate_in_flight_id_refused_with_null_id_and_original_untouched() -> None:
    pair = operating()
    request = running_call(pair)
    for method, params in [
        ("tools/call", CALL),
        ("ping", None),
        ("no/such", None),
        ("tools/call", None),
    ]:
        reply = refused(
            pair.server.receive_data(request_frame(request.id, method, params)),
            ErrorCode.INVALID_REQUEST,
            None,
        )
        assert reply.error.data == {"duplicateId": request.id}
    # A malformed frame reusing the id is answered with a null id too.
    bad = frame({"jsonrpc": "2.0", "id": request.id, "method": "ping", "params": [1]})
    reply = refused(pair.server.receive_data(bad), ErrorCode.INVALID_PARAMS, None)
    # The original is untouched and its one response still goes out.
    assert state_of(pair.server, Direction.INBOUND, request.id) is R
    response = pair.server.respond(request.id, TOOL_RESULT)
    assert response is not None
    event = only(pair.server_to_client(response))
    assert isinstance(event, ResponseReceived)


@pytest.mark.spec("BP-04")
def test_reuse_of_an_answered_id_is_accepted_and_counted() -> None:
    # The peer breaks BP-04, but deployed clients do (reliability C-02): once
    # the first use was answered, a reply with the id cannot be mistaken for
    # its answer, so the new request is served like any other.
    pair = operating()
    request, _ = pair.ping()
    pair.server.start_inbound(request.id)
    reply = pair.server.respond(request.id, {})
    assert reply is not None
    pair.server_to_client(reply)
    assert pair.server.statistics().reused_ids == 0
    again = only(pair.server.receive_data(request_frame(request.id, "ping")))
    assert isinstance(again, RequestReceived)
    assert again.reused_id
    assert pair.server.statistics().reused_ids == 1
    assert state_of(pair.server, Direction.INBOUND, request.id) is Q
    assert pair.server.start_inbound(request.id)
    second = pair.server.respond(request.id, {})
    assert second is not None
    assert wire(pair.server.encode(second)) == {"jsonrpc": "2.0", "id": request.id, "result": {}}
    # Both uses keep their records, in order.
    records = [r for r in pair.server.requests() if r.id == request.id]
    assert [r.state for r in records] == [DONE, DONE]


@pytest.mark.spec("BP-04")
def test_a_refused_request_reusing_an_answered_id_gets_its_refusal_written() -> None:
    # Found by test_receive_data_never_raises: the refusal carries the reused
    # id, and encode() must not take it for the first request's (written) reply.
    pair = operating()
    request, _ = pair.ping()
    pair.server.start_inbound(request.id)
    reply = pair.server.respond(request.id, {})
    assert reply is not None
    pair.server_to_client(reply)
    bad = frame({"jsonrpc": "2.0", "id": request.id, "method": "ping", "result": {}})
    refusal = refused(pair.server.receive_data(bad), ErrorCode.INVALID_REQUEST, request.id)
    assert wire(pair.server.encode(refusal))["id"] == request.id


@pytest.mark.spec("BP-04")
def test_reuse_before_the_first_answer_is_written_is_a_duplicate() -> None:
    # Finished but its reply still waits for the writer: the peer cannot have
    # read it, so for the peer the id is in flight; refused with a null id.
    pair = operating()
    request, _ = pair.ping()
    pair.server.start_inbound(request.id)
    reply = pair.server.respond(request.id, {})
    assert reply is not None
    again = refused(
        pair.server.receive_data(request_frame(request.id, "ping")), ErrorCode.INVALID_REQUEST, None
    )
    assert again.error.data == {"duplicateId": request.id}
    # Once written, the id may be reused.
    assert pair.server.encode(reply) is not None
    assert isinstance(
        only(pair.server.receive_data(request_frame(request.id, "ping"))), RequestReceived
    )


@pytest.mark.spec("BP-04")
def test_reuse_before_a_refusal_is_written_is_a_duplicate() -> None:
    # Found by the modern era of tests/session/test_session_properties.py: a refused
    # request has no entry, so a reuse of its id while the refusal waited for
    # the writer was accepted, and encode() then took the refusal for the new
    # request's reply (writing the new request's result in its place, or
    # suppressing that result once it came): one answer lost. The refusal is
    # owed, so the id is in use until it is written, as for an accepted request.
    pair = operating()
    refusal = refused(
        pair.server.receive_data(request_frame("x", "no/such")), ErrorCode.METHOD_NOT_FOUND, "x"
    )
    again = refused(
        pair.server.receive_data(request_frame("x", "tools/call", CALL)),
        ErrorCode.INVALID_REQUEST,
        None,
    )
    assert again.error.data == {"duplicateId": "x"}
    assert wire(pair.server.encode(refusal))["error"]["code"] == ErrorCode.METHOD_NOT_FOUND
    assert wire(pair.server.encode(again))["id"] is None
    # Once written, the id may be reused, and its request's reply is its own.
    event = only(pair.server.receive_data(request_frame("x", "tools/call", CALL)))
    assert isinstance(event, RequestReceived)
    assert pair.server.start_inbound("x")
    reply = pair.server.respond("x", TOOL_RESULT)
    assert reply is not None
    assert "result" in wire(pair.server.encode(reply))


@pytest.mark.spec("BP-04", "BP-18")
def test_in_a_batch_an_element_reusing_a_refused_elements_id_is_a_duplicate() -> None:
    pair = ProtocolPair()
    pair.handshake("2025-03-26")  # the one revision with batches
    batch = b"[%s,%s]" % (request_frame("x", "no/such"), request_frame("x", "tools/call", CALL))
    first, second = pair.server.receive_data(batch)
    assert isinstance(first, InvalidMessage)
    assert first.reply is not None
    assert (first.reply.id, first.reply.error.code) == ("x", ErrorCode.METHOD_NOT_FOUND)
    assert isinstance(second, InvalidMessage)
    assert second.reply is not None
    assert second.reply.id is None
    assert second.reply.error.data == {"duplicateId": "x"}


@pytest.mark.spec("BP-04")
def test_reuse_after_a_peer_cancel_is_accepted_once_the_handler_ended() -> None:
    pair = operating()
    request = running_call(pair)
    only(pair.server.receive_data(cancel_frame(request.id)))
    # The handler still runs: a duplicate.
    refused(
        pair.server.receive_data(request_frame(request.id, "ping")), ErrorCode.INVALID_REQUEST, None
    )
    assert pair.server.cancel_inbound(request.id, CancelOrigin.PEER, None) is None
    # Ended, and no reply will ever be written (CN-05): the id is free.
    assert isinstance(
        only(pair.server.receive_data(request_frame(request.id, "ping"))), RequestReceived
    )


@pytest.mark.spec("BP-04", "A-14")
def test_our_ids_are_never_reused() -> None:
    pair = operating()
    seen = [1]  # initialize
    for i in range(30):
        request = pair.client.send_request("tools/call", CALL, want_progress=i % 2 == 0)
        seen.append(request.id)  # type: ignore[arg-type]
        if i % 3 == 0:
            pair.client.cancel_outbound(request.id, CancelOrigin.CALLER)
        elif i % 3 == 1:
            pair.client_to_server(request)
            pair.client.cancel_outbound(request.id, CancelOrigin.DEADLINE)
        else:
            pair.client.fail_outbound(request.id, ErrorObject(-1, "x"))
    assert seen == sorted(seen)
    assert len(set(seen)) == len(seen)
    assert all(type(i) is int for i in seen)


@pytest.mark.spec("A-14")
def test_ids_are_independent_per_direction() -> None:
    pair = operating()
    client_request = running_call(pair)  # id 2, client -> server
    server_request, _ = pair.server_request("roots/list")  # id 1, server -> client
    assert server_request.id == 1
    # The client now has outbound 2 and inbound 1; responses match by direction.
    assert pair.client.in_flight(Direction.OUTBOUND) == [client_request.id]
    assert pair.client.in_flight(Direction.INBOUND) == [server_request.id]
    pair.client.start_inbound(server_request.id)
    reply = pair.client.respond(server_request.id, t.ListRootsResult(roots=[]))
    assert reply is not None
    event = only(pair.client_to_server(reply))
    assert isinstance(event, ResponseReceived)
    assert event.result == t.ListRootsResult(roots=[])
    assert state_of(pair.client, Direction.OUTBOUND, client_request.id) is R
    # The server may even use an id the client is using: no conflict.
    same, event2 = pair.server_request("ping")
    assert same.id == 2 == client_request.id
    assert event2.request.id == 2


# --- progress (PG-*) ---------------------------------------------------------------------


@pytest.mark.spec("PG-01", "PG-02", "PG-03", "PG-05", "PG-06", "ME-05")
def test_progress_flows_with_the_request_id_as_token() -> None:
    pair = operating()
    request = running_call(pair, want_progress=True)
    assert request.params is not None
    assert request.params["_meta"] == {"progressToken": request.id}
    entry = pair.server.record(Direction.INBOUND, request.id)
    assert entry is not None
    assert entry.progress_token == request.id
    steps = [(0.5, None, None), (1, 10.0, "one"), (2.25, 10.0, "more"), (3, None, None)]
    for progress, total, message in steps:
        note = pair.server.progress_notification(request.id, progress, total, message)
        assert note is not None
        data = pair.server.encode(note)
        params = wire(data)["params"]
        assert params["progressToken"] == request.id
        assert params["progress"] == progress
        assert params.get("total") == total
        assert params.get("message") == message
        event = only(pair.client.receive_data(data))  # type: ignore[arg-type]
        assert event == ProgressReceived(request.id, Progress(progress, total, message))
    record = pair.client.record(Direction.OUTBOUND, request.id)
    assert record is not None
    assert record.progress == Progress(3, None, None)
    assert record.progress_token == request.id


@pytest.mark.spec("PG-06")
def test_progress_message_dropped_in_2024_11_05() -> None:
    pair = ProtocolPair()
    pair.handshake("2024-11-05")
    request = running_call(pair, want_progress=True)
    note = pair.server.progress_notification(request.id, 1, 2, "not in this revision")
    assert note is not None
    assert note.params == {"progressToken": request.id, "progress": 1, "total": 2}


@pytest.mark.spec("PG-04", "A-10")
@pytest.mark.parametrize("value", [1, 0.5, 1.0, -1])
def test_non_increasing_progress_from_the_peer_is_ignored(value: float) -> None:
    pair = operating()
    request = running_call(pair, want_progress=True)
    only(pair.client.receive_data(progress_frame(request.id, 1)))
    ignored(pair.client.receive_data(progress_frame(request.id, value)), "non-monotonic")
    entry = pair.client.record(Direction.OUTBOUND, request.id)
    assert entry is not None
    assert entry.progress == Progress(1)
    assert entry.late_events == (f"non-increasing progress {value!r}",)
    # Increasing again is accepted.
    assert isinstance(
        only(pair.client.receive_data(progress_frame(request.id, 1.5))), ProgressReceived
    )


@pytest.mark.spec("PG-04")
def test_progress_notification_raises_when_not_increasing() -> None:
    pair = operating()
    request = running_call(pair, want_progress=True)
    assert pair.server.progress_notification(request.id, 5) is not None
    for value in (5, 4.9):
        with pytest.raises(LocalProtocolError, match="PG-04"):
            pair.server.progress_notification(request.id, value)
    assert pair.server.progress_notification(request.id, 5.1) is not None


@pytest.mark.spec("PG-07", "PG-10")
def test_progress_notification_is_none_without_token_or_after_the_response() -> None:
    pair = operating()
    request = running_call(pair)  # no token
    assert pair.server.progress_notification(request.id, 1) is None
    request = running_call(pair, want_progress=True)
    assert pair.server.progress_notification(request.id, 1) is not None
    reply = pair.server.respond(request.id, TOOL_RESULT)
    assert reply is not None
    assert pair.server.progress_notification(request.id, 2) is None  # PG-10
    assert pair.server.progress_notification(12345, 1) is None  # unknown


@pytest.mark.spec("PG-10", "CN-05")
def test_progress_after_a_peer_cancel_is_not_sent() -> None:
    pair = operating()
    request = running_call(pair, want_progress=True)
    queued = pair.server.progress_notification(request.id, 1)
    assert queued is not None
    pair.server.receive_data(cancel_frame(request.id))
    # Already queued progress is dropped by the writer; new progress is not made.
    assert pair.server.encode(queued) is None
    assert pair.server.progress_notification(request.id, 2) is None


@pytest.mark.spec("PG-07", "PG-09", "A-09")
def test_progress_for_unknown_or_finished_tokens_is_ignored() -> None:
    pair = operating()
    plain = running_call(pair)  # asked for no progress
    ignored(pair.client.receive_data(progress_frame(plain.id, 1)), "unknown-id")
    ignored(pair.client.receive_data(progress_frame(424242, 1)), "unknown-id")
    ignored(pair.client.receive_data(progress_frame("x", 1)), "unknown-id")
    tracked = running_call(pair, want_progress=True)
    reply = pair.server.respond(tracked.id, TOOL_RESULT)
    assert reply is not None
    pair.server_to_client(reply)
    ignored(pair.client.receive_data(progress_frame(tracked.id, 9)), "unknown-id")
    # Progress for a request not yet written is late, and recorded.
    queued = pair.client.send_request("tools/call", CALL, want_progress=True)
    ignored(pair.client.receive_data(progress_frame(queued.id, 1)), "late")
    entry = pair.client.record(Direction.OUTBOUND, queued.id)
    assert entry is not None
    assert entry.late_events == ("progress in queued",)


@pytest.mark.spec("PG-01", "CN-10")
@pytest.mark.parametrize(
    "params",
    [
        None,
        {"progress": 1},
        {"progressToken": True, "progress": 1},
        {"progressToken": 2, "progress": "1"},
        {"progressToken": 2, "progress": True},
        {"progressToken": 2, "progress": 1, "total": "10"},
        {"progressToken": 2, "progress": 1, "message": 5},
    ],
)
def test_malformed_progress_is_ignored(params: Any) -> None:
    pair = operating()
    running_call(pair, want_progress=True)
    ignored(pair.client.receive_data(note_frame("notifications/progress", params)), "malformed")


# --- statistics, snapshots and the observer -----------------------------------------


def test_statistics_count_every_outcome() -> None:
    pair = operating()
    assert pair.server.statistics() == ProtocolStatistics(
        in_flight_inbound=0,
        in_flight_outbound=0,
        peak_in_flight_inbound=1,  # initialize
        completed=1,
        failed=0,
        cancelled=0,
        ignored_events=0,
        invalid_messages=0,
    )
    a = running_call(pair)
    b = running_call(pair)
    c = running_call(pair)
    assert pair.server.statistics().in_flight_inbound == 3
    pair.server.respond(a.id, TOOL_RESULT)
    pair.server.respond_error(b.id, ErrorObject(-1, "x"))
    pair.server.cancel_inbound(c.id, CancelOrigin.SHUTDOWN, None)
    pair.server.receive_data(cancel_frame(999))  # ignored
    pair.server.receive_data(b"not json")  # invalid
    pair.server.receive_data(request_frame(50, "no/such"))  # invalid
    assert pair.server.statistics() == ProtocolStatistics(
        in_flight_inbound=0,
        in_flight_outbound=0,
        peak_in_flight_inbound=3,
        completed=2,
        failed=1,
        cancelled=1,
        ignored_events=1,
        invalid_messages=2,
    )
    stats = pair.client.statistics()
    assert (stats.completed, stats.in_flight_outbound) == (1, 3)


def test_requests_returns_frozen_snapshots_history_first() -> None:
    pair = operating()
    done = running_call(pair)
    live = running_call(pair)
    pair.server.respond(done.id, TOOL_RESULT)
    records = pair.server.requests()
    assert [(r.id, r.state) for r in records] == [(1, DONE), (done.id, DONE), (live.id, R)]
    assert all(r.direction is Direction.INBOUND for r in records)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        records[-1].state = DONE  # type: ignore[misc]
    pair.server.respond(live.id, TOOL_RESULT)
    assert records[-1].state is R  # a snapshot, not a view
    assert pair.server.requests()[-1].state is DONE


def test_history_is_bounded() -> None:
    pair = ProtocolPair()
    pair.server = Connection(Role.SERVER, capabilities=FULL_SERVER_CAPABILITIES, history=2)
    pair.handshake()
    for _ in range(5):
        request, _ = pair.ping()
        pair.server.start_inbound(request.id)
        pair.server.respond(request.id, {})
    assert [r.id for r in pair.server.requests()] == [5, 6]
    assert pair.server.record(Direction.INBOUND, 2) is None
    record = pair.server.record(Direction.INBOUND, 6)
    assert record is not None
    assert record.state is DONE


def test_timestamps_come_from_the_clock() -> None:
    pair = operating()
    pair.clock.now = 10.0
    request, _ = pair.client_request("tools/call", CALL)
    pair.clock.now = 11.0
    pair.server.start_inbound(request.id)
    pair.clock.now = 13.5
    reply = pair.server.respond(request.id, TOOL_RESULT)
    assert reply is not None
    pair.clock.now = 14.0
    pair.server_to_client(reply)
    server = pair.server.record(Direction.INBOUND, request.id)
    client = pair.client.record(Direction.OUTBOUND, request.id)
    assert server is not None
    assert client is not None
    assert (server.queued_at, server.started_at, server.finished_at) == (10.0, 11.0, 13.5)
    assert (client.queued_at, client.started_at, client.finished_at) == (10.0, 10.0, 14.0)
    assert server.duration == 3.5


def test_observer_sees_every_transition() -> None:
    pair = operating()
    obs = pair.server_observer
    done = running_call(pair)
    reply = pair.server.respond(done.id, TOOL_RESULT)
    assert reply is not None
    pair.server_to_client(reply)
    cancelled, _ = pair.client_request("tools/call", CALL)
    pair.server.receive_data(cancel_frame(cancelled.id))
    pair.server.cancel_inbound(cancelled.id, CancelOrigin.PEER, None)
    failed = running_call(pair)
    pair.server.respond_error(failed.id, ErrorObject(-1, "x"))
    assert obs.path(1) == [Q, R, DONE]  # initialize
    assert obs.path(done.id) == [Q, R, DONE]
    assert obs.path(cancelled.id) == [Q, CANCELLED]
    assert obs.path(failed.id) == [Q, R, FAILED]
    # Creation is reported with old=None; each later step names the old state.
    for rid in (done.id, cancelled.id, failed.id):
        steps = [(old, new) for i, old, new in obs.transitions if i == rid]
        assert steps[0][0] is None
        for (_, prev_new), (old, _) in itertools.pairwise(steps):
            assert old is prev_new
    # The snapshots it got are the records as they were at that step.
    last = [s for s in obs.snapshots if s.id == failed.id][-1]
    assert last.error == ErrorObject(-1, "x")
    # The client observer saw its side too: created, written, finished.
    assert pair.client_observer.path(done.id) == [Q, R, DONE]
    assert pair.client_observer.path(cancelled.id) == [Q, R]  # never answered


def test_late_events_are_not_transitions() -> None:
    pair = operating()
    request = running_call(pair)
    pair.client.cancel_outbound(request.id, CancelOrigin.CALLER)
    count = len(pair.client_observer.transitions)
    pair.client.receive_data(response_frame(request.id, {"content": []}))
    pair.client.cancel_outbound(request.id, CancelOrigin.CALLER)
    assert len(pair.client_observer.transitions) == count


def test_no_observer_means_no_snapshots() -> None:
    pair = ProtocolPair(observe=False)
    pair.handshake()
    running_call(pair)
    assert pair.client.observing is False
    assert pair.server_observer.transitions == []
    assert pair.server.requests()[-1].state is R


def test_multi_observer_fans_out() -> None:
    from trio_mcp.protocol import FrameDirection, MultiObserver

    a, b = RecordingObserver(), RecordingObserver()
    multi = MultiObserver(a, b)
    server = Connection(Role.SERVER, observer=multi)
    only(server.receive_data(request_frame(1, "ping")))
    multi.on_frame(FrameDirection.IN, b"x", 1.0)
    multi.on_close("bye", 2.0)
    for obs in (a, b):
        assert obs.path(1) == [Q]
        assert obs.frames == [(FrameDirection.IN, b"x", 1.0)]
        assert obs.closes == [("bye", 2.0)]


# --- robustness: no input from the peer raises ---------------------------------------

json_leaf = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10)
)
json_any = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
method_names = st.sampled_from(
    [
        "ping",
        "initialize",
        "tools/call",
        "tools/list",
        "roots/list",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/initialized",
        "notifications/message",
        "sampling/createMessage",
        "x",
    ]
)
messages = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0")},
    optional={
        "id": st.integers(0, 5) | st.text(max_size=2) | json_leaf,
        "method": method_names,
        "params": st.dictionaries(
            st.sampled_from(
                [
                    "requestId",
                    "progressToken",
                    "progress",
                    "name",
                    "_meta",
                    "level",
                    "protocolVersion",
                ]
            ),
            json_any | st.integers(0, 5),
            max_size=4,
        )
        | json_any,
        "result": json_any,
        "error": st.fixed_dictionaries(
            {"code": st.integers(-40000, 0), "message": st.text(max_size=5)}
        )
        | json_any,
    },
)


@settings(max_examples=150, deadline=None)
@given(st.lists(messages, min_size=1, max_size=6), st.sampled_from(["new", "operating", "03-26"]))
def test_receive_data_never_raises(frames: list[Any], where: str) -> None:
    pair = ProtocolPair(observe=True)
    if where != "new":
        pair.handshake("2025-03-26" if where == "03-26" else None)
        running_call(pair, want_progress=True)
        pair.server_request("ping")
    for side in (pair.server, pair.client):
        for obj in frames:
            # The stdlib writes integers of any size; orjson would refuse some.
            for event in side.receive_data(json.dumps(obj)):
                if isinstance(event, InvalidMessage) and event.reply is not None:
                    assert side.encode(event.reply) is not None
        if where == "03-26":
            side.receive_data(json.dumps(frames))
    assert pair.server.state in set(SessionState)


def test_ignored_reason_is_an_enum_member_equal_to_its_word() -> None:
    pair = operating()
    event = ignored(
        pair.server.receive_data(frame({"jsonrpc": "2.0", "id": 77, "result": {}})), "unknown-id"
    )
    assert event.reason is IgnoredReason.UNKNOWN_ID
    assert {reason.value for reason in IgnoredReason} == {
        "unknown-id",
        "late",
        "not-cancellable",
        "malformed",
        "non-monotonic",
        "unknown-method",
        "unexpected",
    }


def test_a_remembered_request_keeps_no_handle_no_list_and_a_shared_method_name() -> None:
    # A server session remembers up to remember_ids (4096) finished requests
    # (BP-04): each keeps only its record. Its cancel handle (the session's
    # scope), a late-events list and a method string of its own cost ~250
    # bytes a request, ~1 MiB for a session at the bound.
    pair = operating()
    entries = []
    for _ in range(2):
        request = running_call(pair)
        pair.server.attach(request.id, object())  # type: ignore[arg-type]
        assert pair.server.handle(request.id) is not None
        response = pair.server.respond(request.id, TOOL_RESULT)
        assert response is not None
        pair.server_to_client(response)
        entry = pair.server._book.known_inbound(request.id)
        assert entry is not None
        assert entry.state is DONE
        entries.append(entry)
    first, second = entries
    assert first.user_data is None
    assert second.user_data is None
    shared_empty: tuple[str, ...] = ()  # the one empty tuple, not a new object each
    assert first.late_events is shared_empty
    assert second.late_events is shared_empty
    assert first.method == "tools/call"
    assert first.method is second.method
    # A late event still lands on the record.
    pair.server.receive_data(cancel_frame(second.id, "too late"))
    assert second.late_events == ("cancel by peer in completed: ignored",)
