"""The 2026-07-28 ``_meta`` a connection adds is never shared mutably, and
every request's envelope is checked on its own.

The client merges its constant ``_meta`` (version, capabilities, clientInfo)
into each request, and the server its ``serverInfo`` and ``resultType`` into
each result, by building fresh dicts (issue #16). These rows prove that what
one request or result hands out (to the caller of ``send_request``, to whoever
holds a ``Response``) can be changed without changing the next one, that the
caller's and the handler's own dicts are never written to, and that a bad
envelope after good ones is refused exactly as on a fresh connection.
"""

from __future__ import annotations

from typing import Any

import pytest
from protocol_pair import frame, wire

from trio_mcp import types as t
from trio_mcp.protocol import (
    Connection,
    Direction,
    ErrorCode,
    InvalidMessage,
    RequestMeta,
    RequestReceived,
    Response,
    ResponseReceived,
    Role,
    SessionState,
)
from trio_mcp.testing import ProtocolPair

MODERN = "2026-07-28"
V = t.PROTOCOL_VERSION_META_KEY
CAPS = t.CLIENT_CAPABILITIES_META_KEY
INFO = t.CLIENT_INFO_META_KEY
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
CALL = {"name": "echo", "arguments": {"text": "hello"}}
RESULT = t.CallToolResult(content=[t.TextContent(type="text", text="hello")])


def modern_pair() -> ProtocolPair:
    """A client and a server connection in the modern era, as after a probe."""
    pair = ProtocolPair(client_capabilities={"roots": {}}, server_capabilities={"tools": {}})
    probe = pair.client.discover_request()
    (received,) = pair.client_to_server(probe)
    assert isinstance(received, RequestReceived)
    assert pair.server.start_inbound(probe.id)
    reply = pair.server.respond(probe.id, pair.server.discover_result())
    assert reply is not None
    (answer,) = pair.server_to_client(reply)
    assert isinstance(answer, ResponseReceived)
    pair.client.start_modern(MODERN, answer.result)
    return pair


def sent_meta(pair: ProtocolPair) -> Any:
    """The ``_meta`` of the last frame the client wrote, as the server reads it."""
    data = [data for role, data in pair.log if role is Role.CLIENT][-1]
    return wire(data)["params"]["_meta"]


def expected_meta() -> dict[str, Any]:
    return {
        V: MODERN,
        CAPS: {"roots": {}},
        INFO: {"name": "test-client", "version": "1"},
    }


def call_once(pair: ProtocolPair, params: Any = CALL) -> tuple[Any, Any]:
    """One tools/call both ways: the client's request and the server's response."""
    request = pair.client.send_request("tools/call", params)
    (received,) = pair.client_to_server(request)
    assert isinstance(received, RequestReceived), received
    assert pair.server.start_inbound(request.id)
    response = pair.server.respond(request.id, RESULT)
    assert isinstance(response, Response)
    pair.server_to_client(response)
    return request, response


def test_a_request_s_meta_changed_after_sending_does_not_reach_the_next_request() -> None:
    pair = modern_pair()
    first, _ = call_once(pair)
    assert sent_meta(pair) == expected_meta()
    # Whoever holds the first request (the caller of prepare_request, say)
    # changes its _meta in every way a dict allows.
    meta = first.params["_meta"]
    meta[V] = "1999-01-01"
    meta[INFO] = {"name": "changed"}
    meta["extra"] = True
    del meta[CAPS]
    call_once(pair)
    assert sent_meta(pair) == expected_meta()
    third, _ = call_once(pair)
    assert third.params["_meta"] is not first.params["_meta"]
    assert sent_meta(pair) == expected_meta()


def test_the_caller_s_params_and_own_meta_are_never_written_to() -> None:
    pair = modern_pair()
    own = {"custom": 1, INFO: {"name": "per-request", "version": "9"}}
    params = {**CALL, "_meta": own}
    request = pair.client.send_request("tools/call", params, want_progress=True)
    assert own == {"custom": 1, INFO: {"name": "per-request", "version": "9"}}
    assert params == {**CALL, "_meta": own}
    assert request.params is not None
    assert request.params is not params
    assert request.params["_meta"] is not own
    (received,) = pair.client_to_server(request)
    assert isinstance(received, RequestReceived)
    # The caller's keys win over the connection's; the token is the id (PG-02).
    assert sent_meta(pair) == {
        **expected_meta(),
        "custom": 1,
        INFO: {"name": "per-request", "version": "9"},
        "progressToken": request.id,
    }
    # The next request carries the connection's own _meta again, no token.
    call_once(pair)
    assert sent_meta(pair) == expected_meta()


def test_a_result_s_meta_is_fresh_for_each_response() -> None:
    pair = modern_pair()
    _, first = call_once(pair)
    assert first.result["resultType"] == "complete"
    assert first.result["_meta"] == {SERVER_INFO: {"name": "test-server", "version": "1"}}
    first.result["_meta"][SERVER_INFO] = {"name": "changed"}
    first.result["_meta"]["extra"] = 1
    first.result["resultType"] = "changed"
    _, second = call_once(pair)
    assert second.result["_meta"] is not first.result["_meta"]
    role, data = pair.log[-1]
    assert role is Role.SERVER
    assert wire(data)["result"]["_meta"] == {SERVER_INFO: {"name": "test-server", "version": "1"}}
    assert wire(data)["result"]["resultType"] == "complete"


def test_a_handler_s_returned_dict_and_its_meta_are_never_written_to() -> None:
    pair = modern_pair()
    own_meta = {"custom": "x"}
    returned: dict[str, Any] = {"content": [], "_meta": own_meta}
    request = pair.client.send_request("tools/call", CALL)
    pair.client_to_server(request)
    assert pair.server.start_inbound(request.id)
    response = pair.server.respond(request.id, returned)
    assert isinstance(response, Response)
    assert returned == {"content": [], "_meta": {"custom": "x"}}
    assert own_meta == {"custom": "x"}
    assert response.result["_meta"] == {
        "custom": "x",
        SERVER_INFO: {"name": "test-server", "version": "1"},
    }
    assert response.result["resultType"] == "complete"


def raw_call(request_id: int, meta: Any) -> bytes:
    params: dict[str, Any] = {**CALL}
    if meta is not None:
        params["_meta"] = meta
    return frame({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


GOOD = {V: MODERN, CAPS: {}, INFO: {"name": "raw", "version": "1"}}
BAD_ENVELOPES = [
    pytest.param({CAPS: {}}, ErrorCode.INVALID_PARAMS, id="no version"),
    pytest.param({V: MODERN}, ErrorCode.INVALID_PARAMS, id="no capabilities"),
    pytest.param({V: MODERN, CAPS: []}, ErrorCode.INVALID_PARAMS, id="capabilities not an object"),
    pytest.param({**GOOD, V: 20260728}, ErrorCode.INVALID_PARAMS, id="version not a string"),
    pytest.param({**GOOD, V: "2099-01-01"}, ErrorCode.UNSUPPORTED_PROTOCOL_VERSION, id="version"),
    pytest.param({**GOOD, INFO: "raw"}, ErrorCode.INVALID_PARAMS, id="clientInfo"),
    pytest.param(
        {**GOOD, "io.modelcontextprotocol/logLevel": "loud"},
        ErrorCode.INVALID_PARAMS,
        id="logLevel",
    ),
    pytest.param(None, ErrorCode.INVALID_PARAMS, id="no _meta"),
]


def modern_server() -> Connection:
    return Connection(Role.SERVER, capabilities={"tools": {}}, info={"name": "s", "version": "1"})


def refusal(server: Connection, data: bytes) -> Any:
    (event,) = server.receive_data(data)
    assert isinstance(event, InvalidMessage), event
    reply = event.reply
    assert reply is not None
    written = server.encode(reply)
    return wire(written)


@pytest.mark.spec("ME-07", "VR-02", "LG-08", "ST-01")
@pytest.mark.parametrize(("bad", "code"), BAD_ENVELOPES)
def test_a_bad_envelope_after_good_ones_is_refused_as_on_a_fresh_connection(
    bad: Any, code: ErrorCode
) -> None:
    fresh = modern_server()
    fresh.receive_data(raw_call(1, GOOD))  # the era is decided, no envelope accepted after it
    expected = refusal(fresh, raw_call(2, bad))
    assert expected["error"]["code"] == int(code)

    server = modern_server()
    for request_id in (1, 2, 3):
        (event,) = server.receive_data(raw_call(request_id, GOOD))
        assert isinstance(event, RequestReceived)
    assert server.state is SessionState.MODERN
    # The same bad envelope, twice, after good ones, and once more after
    # another good one: the same refusal every time, with the request's id.
    for request_id in (4, 5):
        assert refusal(server, raw_call(request_id, bad)) == {**expected, "id": request_id}
    (event,) = server.receive_data(raw_call(6, GOOD))
    assert isinstance(event, RequestReceived)
    assert refusal(server, raw_call(7, bad)) == {**expected, "id": 7}
    # Refused before it was accepted: counted as invalid, never a request
    # (no record, nothing in flight), each time.
    for request_id in (4, 5, 7):
        assert server.record(Direction.INBOUND, request_id) is None
    statistics = server.statistics()
    assert statistics.invalid_messages == 3
    assert statistics.in_flight_inbound == 4


@pytest.mark.spec("ST-01", "ME-09")
def test_each_request_s_meta_is_its_own_and_one_record() -> None:
    server = modern_server()
    other = {V: MODERN, CAPS: {"roots": {}}, "io.modelcontextprotocol/logLevel": "debug"}
    for request_id, envelope in ((1, GOOD), (2, other), (3, GOOD)):
        (event,) = server.receive_data(raw_call(request_id, envelope))
        assert isinstance(event, RequestReceived)
    first, second, third = (server.request_meta(request_id) for request_id in (1, 2, 3))
    assert first == RequestMeta(MODERN, {}, {"name": "raw", "version": "1"}, None)
    assert second == RequestMeta(MODERN, {"roots": {}}, None, "debug")
    assert third == first
    # Read again: the same frozen record, not a new one each time.
    assert server.request_meta(1) is first
    assert server.request_meta(2) is second
    # Ended: no longer there to read.
    assert server.start_inbound(1)
    assert server.respond(1, RESULT) is not None
    assert server.request_meta(1) is None
