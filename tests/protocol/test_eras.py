"""Each era's rules on their own: ``HandshakeEra`` and ``ModernEra`` as rows.

An era object is given this side (``Side``) and the connection's
``Lifecycle``, and returns what it decided: an ``Admission`` of an inbound
request or the ``ErrorObject`` to refuse it with, in the order its era's spec
states the checks. Rows are (request, lifecycle state) -> code or admission,
as h11's tests drive its readers. The last rows check the swap: the
connection keeps the handshake's era until the first message decides.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from trio_mcp import types as t
from trio_mcp.protocol import (
    ALL_VERSIONS,
    Direction,
    ErrorObject,
    InvalidMessage,
    Lifecycle,
    LifecycleEvent,
    Request,
    RequestReceived,
    ResponseReceived,
    Role,
    SessionState,
)
from trio_mcp.protocol._era import Admission, Side
from trio_mcp.protocol._handshake import HandshakeEra
from trio_mcp.protocol._modern import ModernEra
from trio_mcp.protocol._requests import RequestEntry
from trio_mcp.testing import ProtocolPair

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
V = t.PROTOCOL_VERSION_META_KEY
CAPS = t.CLIENT_CAPABILITIES_META_KEY
INFO = t.CLIENT_INFO_META_KEY
LEVEL = t.LOG_LEVEL_META_KEY
TASKS = t.TASKS_EXTENSION


def side(role: Role, versions: tuple[str, ...] = ALL_VERSIONS, **caps: Any) -> Side:
    return Side(role, caps, {"name": "me", "version": "1"}, None, versions, t.converter)


def request(method: str, params: dict[str, Any] | None = None) -> Request:
    return Request(1, method, params)


def code(decision: Admission | ErrorObject) -> int | str:
    """The refusal's code, or "ok" with the lifecycle event it opens."""
    if isinstance(decision, ErrorObject):
        return decision.code
    return f"ok {decision.opens.value}" if decision.opens is not None else "ok"


# ------------------------------------------------------------------ handshake

# (our role, versions we speak, lifecycle events so far, method, batched) -> outcome
HANDSHAKE_ROWS: list[Any] = [
    pytest.param(Role.SERVER, ALL_VERSIONS, [], "initialize", False, "ok receive initialize"),
    pytest.param(Role.SERVER, (MODERN,), [], "initialize", False, -32022, id="VR-13"),
    pytest.param(Role.SERVER, ALL_VERSIONS, [], "initialize", True, -32600, id="LC-12"),
    pytest.param(Role.SERVER, ALL_VERSIONS, [], "ping", False, "ok", id="ping-early"),
    pytest.param(Role.SERVER, ALL_VERSIONS, [], "tools/list", False, -32600, id="LC-06"),
    pytest.param(Role.SERVER, ALL_VERSIONS, [], "server/discover", False, -32601),
    pytest.param(Role.SERVER, ALL_VERSIONS, [], "no/such", False, -32601),
    pytest.param(Role.SERVER, ALL_VERSIONS, [], "roots/list", False, -32601, id="wrong-way"),
    pytest.param(
        Role.SERVER,
        ALL_VERSIONS,
        [LifecycleEvent.RECV_INITIALIZE],
        "initialize",
        False,
        -32600,
        id="second-initialize",
    ),
    pytest.param(
        Role.SERVER,
        ALL_VERSIONS,
        [LifecycleEvent.START_STATELESS],
        "tools/list",
        False,
        "ok",
        id="stateless",
    ),
    pytest.param(Role.CLIENT, ALL_VERSIONS, [], "ping", False, "ok"),
    pytest.param(Role.CLIENT, ALL_VERSIONS, [], "initialize", False, -32601, id="client-init"),
]


@pytest.mark.parametrize(
    ("role", "versions", "events", "method", "batched", "outcome"), HANDSHAKE_ROWS
)
def test_handshake_checks(
    role: Role,
    versions: tuple[str, ...],
    events: list[LifecycleEvent],
    method: str,
    batched: bool,
    outcome: int | str,
) -> None:
    lifecycle = Lifecycle(role)
    for event in events:
        lifecycle.process(event)
    era = HandshakeEra(side(role, versions), lifecycle)
    version = HANDSHAKE if LifecycleEvent.START_STATELESS in events else None
    assert code(era.check_request(request(method), batched, version)) == outcome


def state_of(lifecycle: Lifecycle) -> SessionState:
    """Where *lifecycle* is now (a call, so that each read is a fresh one)."""
    return lifecycle.state


def test_the_handshake_in_order_moves_only_the_lifecycle_it_was_given() -> None:
    client_lifecycle, server_lifecycle = Lifecycle(Role.CLIENT), Lifecycle(Role.SERVER)
    client = HandshakeEra(side(Role.CLIENT), client_lifecycle)
    server = HandshakeEra(side(Role.SERVER, tools={}), server_lifecycle)
    params = client.initialize_params()
    assert params["protocolVersion"] == client.versions[0]
    client.send_initialize()
    assert state_of(client_lifecycle) is SessionState.INITIALIZING
    server_lifecycle.process(LifecycleEvent.RECV_INITIALIZE)
    version, peer, result = server.accept_initialize(
        t.converter.structure(params, t.InitializeRequestParams)
    )
    assert (version, peer.info, result["capabilities"]) == (
        HANDSHAKE,
        {"name": "me", "version": "1"},
        {"tools": {}},
    )
    server.initialize_answered(True)
    assert state_of(server_lifecycle) is SessionState.INITIALIZED
    answered = client.complete(t.converter.structure(result, t.InitializeResult))
    assert answered.capabilities == {"tools": {}}
    assert state_of(client_lifecycle) is SessionState.OPERATING
    assert server.receive_initialized() is None
    assert state_of(server_lifecycle) is SessionState.OPERATING
    assert server.receive_initialized() is not None  # a second one is unexpected


# --------------------------------------------------------------------- modern


def meta(**extra: Any) -> dict[str, Any]:
    return {V: MODERN, CAPS: {}, **extra}


# (method, params, lifecycle state) -> outcome, in the order the checks run
MODERN_ROWS: list[Any] = [
    pytest.param("tools/list", {"_meta": meta()}, "new", "ok receive modern request", id="opens"),
    pytest.param("tools/list", {"_meta": meta()}, "modern", "ok", id="in-era"),
    pytest.param("server/discover", {"_meta": meta()}, "new", "ok", id="probe-decides-nothing"),
    pytest.param("initialize", {"_meta": meta()}, "modern", -32600, id="VR-09"),
    pytest.param("tools/list", None, "modern", -32602, id="ME-07-no-meta"),
    pytest.param("tools/list", {"_meta": {V: MODERN}}, "modern", -32602, id="ME-07-no-caps"),
    pytest.param("tools/list", {"_meta": {V: 7, CAPS: {}}}, "modern", -32602, id="ME-01"),
    pytest.param("tools/list", {"_meta": meta(**{V: "2099-01-01"})}, "new", -32022, id="VR-02"),
    pytest.param("tools/list", {"_meta": meta(**{V: HANDSHAKE})}, "new", -32022, id="VR-02-old"),
    pytest.param("ping/nothing", {"_meta": meta()}, "modern", -32601, id="unknown"),
    pytest.param("tools/list", {"_meta": meta(**{INFO: "me"})}, "modern", -32602, id="info"),
    pytest.param("tools/list", {"_meta": meta(**{LEVEL: "loud"})}, "modern", -32602, id="LG-08"),
    pytest.param("tools/list", {"_meta": meta(**{LEVEL: "debug"})}, "modern", "ok", id="level"),
    pytest.param("tasks/get", {"_meta": meta(), "taskId": "x"}, "modern", -32021, id="TK-19"),
    pytest.param(
        "tasks/get",
        {"_meta": meta(**{CAPS: {"extensions": {TASKS: {}}}}), "taskId": "x"},
        "modern",
        "ok",
        id="TK-19-declared",
    ),
]


@pytest.mark.parametrize(("method", "params", "state", "outcome"), MODERN_ROWS)
def test_modern_checks(
    method: str, params: dict[str, Any] | None, state: str, outcome: int | str
) -> None:
    lifecycle = Lifecycle(Role.SERVER)
    if state == "modern":
        lifecycle.process(LifecycleEvent.RECV_MODERN)
    era = ModernEra(
        side(Role.SERVER, tools={}),
        lifecycle,
        discover_capabilities={"tools": {}, "extensions": {TASKS: {}}},
    )
    decision = era.check_request(request(method, params), False, None)
    assert code(decision) == outcome
    if isinstance(decision, Admission):
        # What the request declared, for the handler (ST-01).
        assert decision.envelope is not None
        assert decision.envelope[:2] == (MODERN, params["_meta"][CAPS])  # type: ignore[index]
    assert lifecycle.state is (SessionState.MODERN if state == "modern" else SessionState.NEW)


def test_an_extension_we_do_not_offer_is_unknown() -> None:
    era = ModernEra(side(Role.SERVER, tools={}), Lifecycle(Role.SERVER))
    params = {"_meta": meta(**{CAPS: {"extensions": {TASKS: {}}}}), "taskId": "x"}
    assert code(era.check_request(request("tasks/get", params), False, None)) == -32601


@pytest.mark.parametrize(
    ("method", "params", "opens"),
    [
        ("tools/list", {"_meta": {V: MODERN}}, True),
        ("server/discover", None, True),  # a method only 2026-07-28 has
        ("tools/list", None, False),
        ("initialize", {"_meta": meta()}, False),
    ],
)
def test_what_opens_the_modern_era_on_a_server(
    method: str, params: dict[str, Any] | None, opens: bool
) -> None:
    era = ModernEra(side(Role.SERVER), Lifecycle(Role.SERVER))
    assert era.opens(request(method, params)) is opens
    handshake_only = ModernEra(side(Role.SERVER, (HANDSHAKE,)), Lifecycle(Role.SERVER))
    assert handshake_only.opens(request(method, params)) is False


def test_a_modern_result_carries_its_type_server_info_and_hints() -> None:
    era = ModernEra(
        side(Role.SERVER, tools={}),
        Lifecycle(Role.SERVER),
        cache_hints={"tools/list": (60_000, "public")},
    )
    entry = RequestEntry(1, "tools/list", Direction.INBOUND, 0.0, None)
    assert era.result(entry, {"tools": []}) == {
        "tools": [],
        "resultType": "complete",
        "ttlMs": 60_000,
        "cacheScope": "public",
        "_meta": {t.SERVER_INFO_META_KEY: {"name": "me", "version": "1"}},
    }


# ----------------------------------------------------------------------- swap


def test_the_client_swaps_to_the_modern_era_when_its_probe_is_answered() -> None:
    pair = ProtocolPair()
    assert pair.client.send_request("ping").params is None  # handshake era: no _meta
    probe = pair.client.discover_request()
    [event] = pair.client_to_server(probe)
    assert isinstance(event, RequestReceived)
    assert pair.server.start_inbound(event.request.id)
    reply = pair.server.respond(event.request.id, pair.server.discover_result())
    assert reply is not None
    [answer] = pair.server_to_client(reply)
    assert isinstance(answer, ResponseReceived)
    assert pair.server.state is SessionState.NEW  # a probe decides nothing
    pair.client.start_modern(MODERN, answer.result)
    assert pair.client.state is SessionState.MODERN
    params = pair.client.send_request("tools/list").params
    assert params is not None
    assert params["_meta"][V] == MODERN  # the modern era's outbound _meta (ME-06)


def test_the_server_swaps_on_its_first_modern_request_and_then_refuses_initialize() -> None:
    server = ProtocolPair().server
    first = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}}
    [event] = server.receive_data(orjson.dumps(first))
    assert isinstance(event, RequestReceived)
    assert server.state is SessionState.MODERN
    assert server.protocol_version == MODERN
    [refused] = server.receive_data(
        orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {}})
    )
    assert isinstance(refused, InvalidMessage)
    assert refused.reply is not None
    assert refused.reply.error.code == -32600
