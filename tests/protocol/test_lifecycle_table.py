"""The lifecycle as data: LIFECYCLE, ALLOWED and the Lifecycle object that walks them.

Rows are (role, state, event) -> new state or a LocalProtocolError, as in h11's
``test_state.py``; the permission rows are (role, state, method) -> refused or not.
"""

from __future__ import annotations

from collections import deque

import pytest

from trio_mcp import types as t
from trio_mcp.protocol import (
    ALLOWED,
    LIFECYCLE,
    Connection,
    Lifecycle,
    LifecycleEvent,
    LocalProtocolError,
    RequestReceived,
    Role,
    SessionState,
)
from trio_mcp.testing import ProtocolPair

NEW, INITIALIZING, INITIALIZED, OPERATING, MODERN, CLOSED = SessionState
E = LifecycleEvent


def path_to(role: Role, target: SessionState) -> list[LifecycleEvent]:
    """The shortest list of events that takes a new *role* lifecycle to *target*."""
    seen = {NEW: list[LifecycleEvent]()}
    queue = deque([NEW])
    while queue:
        state = queue.popleft()
        for event, new in LIFECYCLE[role][state].items():
            if new not in seen:
                seen[new] = [*seen[state], event]
                queue.append(new)
    return seen[target]


def reachable(role: Role) -> set[SessionState]:
    return {state for state in SessionState if _reaches(role, state)}


def _reaches(role: Role, state: SessionState) -> bool:
    try:
        path_to(role, state)
    except KeyError:
        return False
    return True


def lifecycle_in(role: Role, state: SessionState) -> Lifecycle:
    lifecycle = Lifecycle(role)
    for event in path_to(role, state):
        lifecycle.process(event)
    assert lifecycle.state is state
    return lifecycle


ROWS = [
    (role, state, event)
    for role in Role
    for state in SessionState
    if _reaches(role, state)
    for event in LifecycleEvent
]


@pytest.mark.spec("LC-01")
@pytest.mark.parametrize(
    ("role", "state", "event"),
    ROWS,
    ids=[f"{r.value}-{s.value}-{e.name}" for r, s, e in ROWS],
)
def test_process_follows_the_table(role: Role, state: SessionState, event: LifecycleEvent) -> None:
    lifecycle = lifecycle_in(role, state)
    expected = LIFECYCLE[role][state].get(event)
    assert lifecycle.accepts(event) is (expected is not None)
    if expected is None:
        with pytest.raises(LocalProtocolError, match=event.value):
            lifecycle.process(event)
        assert lifecycle.state is state
        assert lifecycle.permissions is ALLOWED[(role, state)]
    else:
        assert lifecycle.process(event) is expected
        assert lifecycle.state is expected
        assert lifecycle.permissions is ALLOWED[(role, expected)]


def test_the_handshake_paths_of_the_diagram() -> None:
    assert path_to(Role.CLIENT, OPERATING) == [E.SEND_INITIALIZE, E.RECV_INIT_RESULT]
    assert path_to(Role.SERVER, OPERATING) == [E.START_STATELESS]
    assert path_to(Role.SERVER, INITIALIZED) == [E.RECV_INITIALIZE, E.SEND_INIT_RESULT]
    assert LIFECYCLE[Role.SERVER][INITIALIZED][E.RECV_INITIALIZED] is OPERATING
    assert LIFECYCLE[Role.SERVER][INITIALIZING][E.SEND_INIT_ERROR] is NEW


def test_a_client_never_reaches_initialized() -> None:
    assert reachable(Role.CLIENT) == {NEW, INITIALIZING, OPERATING, MODERN, CLOSED}
    assert reachable(Role.SERVER) == set(SessionState)


@pytest.mark.parametrize("role", list(Role), ids=lambda r: r.value)
def test_every_reachable_state_has_permissions_and_closes(role: Role) -> None:
    for state in reachable(role):
        assert (role, state) in ALLOWED
        if state is CLOSED:
            assert LIFECYCLE[role][state] == {}
        else:
            assert LIFECYCLE[role][state][E.CLOSE] is CLOSED


PERMISSION_ROWS = [
    # (role, state, method, refused with)
    (Role.SERVER, NEW, "ping", None),
    (Role.SERVER, NEW, "initialize", None),
    (Role.SERVER, NEW, "tools/list", "before initialization"),
    (Role.SERVER, INITIALIZING, "initialize", "already initialized"),
    (Role.SERVER, INITIALIZING, "tools/list", "before initialization"),
    (Role.SERVER, INITIALIZED, "tools/list", None),
    (Role.SERVER, INITIALIZED, "initialize", "already initialized"),
    (Role.SERVER, OPERATING, "tools/list", None),
    (Role.SERVER, OPERATING, "initialize", "already initialized"),
    (Role.SERVER, CLOSED, "ping", "closed"),
    (Role.CLIENT, NEW, "roots/list", "before initialization"),
    (Role.CLIENT, INITIALIZING, "ping", None),
    (Role.CLIENT, OPERATING, "roots/list", None),
    (Role.CLIENT, OPERATING, "initialize", "already initialized"),
]


@pytest.mark.spec("LC-05", "LC-06")
@pytest.mark.parametrize(("role", "state", "method", "refused"), PERMISSION_ROWS)
def test_request_refusal_rows(
    role: Role, state: SessionState, method: str, refused: str | None
) -> None:
    refusal = lifecycle_in(role, state).request_refusal(method, batched=False)
    if refused is None:
        assert refusal is None
    else:
        assert refusal is not None
        assert refused in refusal


@pytest.mark.spec("LC-12")
def test_initialize_in_a_batch_is_refused_even_when_new() -> None:
    refusal = Lifecycle(Role.SERVER).request_refusal("initialize", batched=True)
    assert refusal == "initialize must not be part of a JSON-RPC batch"


def test_the_client_sends_initialized_before_operating_but_the_server_never() -> None:
    for state in (NEW, INITIALIZING):
        lifecycle_in(Role.CLIENT, state).check_send_notification("notifications/initialized")
        with pytest.raises(LocalProtocolError):
            lifecycle_in(Role.SERVER, state).check_send_notification("notifications/initialized")


def test_connection_state_is_read_only() -> None:
    connection = Connection(Role.SERVER)
    assert connection.state is NEW
    with pytest.raises(AttributeError):
        connection.state = OPERATING  # type: ignore[misc]
    connection.start_stateless("2025-06-18")
    assert connection.state is OPERATING


def test_an_initialize_answer_written_after_close_keeps_the_session_closed() -> None:
    pair = ProtocolPair()
    event = pair.one(pair.client_to_server(pair.client.initialize_request()))
    assert isinstance(event, RequestReceived)
    server = pair.server
    assert server.start_inbound(event.request.id)
    reply = server.respond(event.request.id, server.accept_initialize(event.params))
    assert reply is not None
    server.close("shutting down")
    assert server.encode(reply) is not None
    assert server.state is CLOSED
    assert server.close_reason == "shutting down"


def test_the_client_completes_a_handshake_only_after_sending_initialize() -> None:
    pair = ProtocolPair()
    pair.handshake()
    with pytest.raises(LocalProtocolError, match="receive initialize result"):
        pair.client.complete_handshake(
            t.InitializeResult(
                protocol_version="2025-11-25",
                capabilities=t.ServerCapabilities(),
                server_info=t.Implementation(name="again", version="1"),
            )
        )
    assert pair.client.state is OPERATING
    assert pair.client.peer_info["name"] != "again"
