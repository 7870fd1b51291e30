"""Malformed frames from a raw fake client against a real server session, in
both eras.

Each row is one frame and the reply the session owes for it in each era: an
error with a given id and code (and, where the row names it, data), a result,
or nothing at all. Every row runs in both eras, against the same server (a
``trio_mcp.Server`` with one tool, ``echo``, and logging):

* handshake: the frame is sent after a normal 2025-11-25 handshake; then a ping
  must still be answered, and be the very next frame (nothing else was written).
* modern (2026-07-28): the session is opened with no handshake, and a first
  valid modern request (``tools/call`` of ``echo`` with its ``_meta``) puts the
  connection in the modern era (VR-09); then the frame; then, since 2026-07-28
  has no ping, a valid modern ``tools/call`` must be the very next frame answered.

Bad input from the peer never ends the session, in either era.

Where the owed reply differs by era the row says so. A modern request is read
from its own ``_meta`` first: without the version and capabilities it is -32602
(ME-07) whatever its method, so the rows of the handshake era's method checks
have twins carrying a modern ``_meta`` that reach the same check in both eras.
The handshake era never reads those keys: a call carrying a bad modern
``_meta`` is served there, as is a retry's ``requestState``.

Batches: with 2025-03-26 negotiated (the one revision that requires accepting
them, BP-18) every element is handled on its own and each response is written
as its own frame; we never write a batch. In every other revision, 2026-07-28
included, an array is refused with -32600 (BP-19, A-15).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

import orjson
import pytest
import trio
import trio.testing
from helpers import LATEST, FnDispatcher, RawPeer, open_raw_server, settle

from trio_mcp import Context, Server
from trio_mcp.lowlevel import RequestContext, Session
from trio_mcp.protocol import ALL_VERSIONS, Connection, Direction, Role, SessionState

MAX_SIZE = 16 * 1024

HANDSHAKE = "handshake"
MODERN = "modern"
ERAS = (HANDSHAKE, MODERN)

MODERN_VERSION = "2026-07-28"
V = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"
LEVEL = "io.modelcontextprotocol/logLevel"
#: The ``_meta`` of a valid modern request.
META: dict[str, Any] = {V: MODERN_VERSION, CAPS: {}}


def make_protocol(**settings: Any) -> Connection:
    return Connection(Role.SERVER, capabilities={"tools": {}}, **settings)


async def echo(ctx: RequestContext) -> Any:
    return {"content": [{"type": "text", "text": repr(ctx.request_id)}]}


def make_server() -> Server:
    """The table's server: tools (``echo``) and logging, no resources or prompts."""
    server = Server("rows", logging=True)

    @server.tool()
    async def echo(ctx: Context) -> str:
        return repr(ctx.request_id)

    return server


def frame(**fields: Any) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", **fields})


def modern(method: str, meta: Any = None, *, request_id: Any = 1, **params: Any) -> bytes:
    """A request whose ``_meta`` is *meta* (default: a valid modern one)."""
    return frame(
        id=request_id, method=method, params={**params, "_meta": META if meta is None else meta}
    )


def nested(depth: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":%s}}' % (
        b"[" * depth + b"]" * depth
    )


TOOLS_CALL = "tools/call"
#: The owed reply is a result (of the id the row names), not an error.
RESULT = "result"
#: The error data of a modern request that names neither version nor capabilities.
NO_META = {"missing": [V, CAPS]}


def unsupported(requested: str) -> dict[str, Any]:
    """The error data of -32022 (VR-02): what we speak, and what was asked."""
    return {"supported": list(ALL_VERSIONS), "requested": requested}


INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "x", "version": "1"},
}

#: A reply owed: ``(id, code)`` an error; ``(id, code, data)`` an error with
#: exactly this ``data``; ``(id, RESULT)`` a result; None nothing at all.
Owed = tuple[Any, ...] | None
_SAME: Any = object()


class Row(NamedTuple):
    name: str
    data: bytes
    handshake: Owed
    modern: Owed

    def owed(self, era: str) -> Owed:
        return self.handshake if era == HANDSHAKE else self.modern


def row(name: str, data: bytes, expected: Owed, modern: Owed = _SAME) -> Row:
    """A row owed *expected* in the handshake era and *modern* (default: the
    same) in the modern era."""
    return Row(name, data, expected, expected if modern is _SAME else modern)


ROWS: list[Row] = [  # (name, frame, the reply owed in the handshake era[, in the modern era])
    # JSON itself
    row("truncated-json", b'{"jsonrpc":"2.0","id":1,"method":"ping"', (None, -32700)),
    row("not-utf8", b"\xff\xfe{}", (None, -32700)),
    row("empty-frame", b"", (None, -32700)),
    row("two-values", b"{}{}", (None, -32700)),
    row(
        "nan-literal",
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}',
        (None, -32700),
    ),
    row("deep-nesting", nested(2000), (None, -32700)),
    # over the bound: answered with the id a scan of the head reads (issue 17 §1)
    row("oversize", frame(id=1, method="ping", params={"pad": "x" * MAX_SIZE}), (1, -32600)),
    row(
        "oversize-id-last",  # read from the frame's tail
        frame(method="ping", params={"pad": "x" * MAX_SIZE}, id=1),
        (1, -32600),
    ),
    row(
        "oversize-id-between-head-and-tail",
        frame(method="ping", params={"pad": "x" * MAX_SIZE}, id=1, z="y" * 5000),
        (None, -32600),
    ),
    row(
        "oversize-response",  # to nothing of ours: counted, never answered
        frame(id=77, result={"pad": "x" * MAX_SIZE}),
        None,
    ),
    # the envelope
    row("number", b"42", (None, -32600)),
    row("string", b'"ping"', (None, -32600)),
    row("null", b"null", (None, -32600)),
    row("wrong-jsonrpc", b'{"jsonrpc":"1.0","id":1,"method":"ping"}', (1, -32600)),
    row("missing-jsonrpc", b'{"id":1,"method":"ping"}', (1, -32600)),
    row("method-not-string", frame(id=1, method=5), (1, -32600)),
    row("bool-id", frame(id=True, method="ping"), (None, -32600)),
    row("float-id", frame(id=1.5, method="ping"), (None, -32600)),
    row("null-id", frame(id=None, method="ping"), (None, -32600)),
    row("object-id", frame(id={"a": 1}, method="ping"), (None, -32600)),
    row("beyond-64-bit-id", b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % 2**80, (None, -32600)),
    row("request-and-response", frame(id=1, method="ping", result={}), (1, -32600)),
    row("neither-request-nor-response", frame(id=1), (1, -32600)),
    # parsers disagree on duplicate keys (first or last wins): refused (J-12)
    row("duplicate-id", b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}', (None, -32600)),
    row(
        "duplicate-method",
        b'{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}',
        (None, -32600),
    ),
    row("misspelt-method", b'{"jsonrpc":"2.0","id":1,"Method":"ping"}', (1, -32600)),
    # responses are never answered, whatever is wrong with them
    row("result-and-error", frame(id=1, result={}, error={"code": 1, "message": "x"}), None),
    row("result-not-object", frame(id=1, result=[1]), None),
    row("response-to-unknown-id", frame(id=99, result={}), None),
    row("error-with-null-id", frame(id=None, error={"code": -32700, "message": "x"}), None),
    row("response-wrong-jsonrpc", b'{"jsonrpc":"1.0","id":1,"result":{}}', None),
    # batches are part of neither 2025-11-25 nor 2026-07-28
    row("batch", b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', (None, -32600)),
    row("batch-of-a-modern-request", b"[%s]" % modern(TOOLS_CALL, name="echo"), (None, -32600)),
    row("empty-batch", b"[]", (None, -32600)),
    # method and params (phase two of the decode); in the modern era a request
    # without _meta is refused for that first (ME-07)
    row("unknown-method", frame(id=1, method="no/such/method"), (1, -32601), (1, -32602, NO_META)),
    row(
        "wrong-direction",
        frame(id=1, method="sampling/createMessage", params={}),
        (1, -32601),
        (1, -32602, NO_META),
    ),
    row(
        "undeclared-capability",
        frame(id=1, method="resources/list"),
        (1, -32601),
        (1, -32602, NO_META),
    ),
    row(
        "notification-as-request",
        frame(id=1, method="notifications/initialized"),
        (1, -32601),
        (1, -32602, NO_META),
    ),
    row(
        "bad-params",
        frame(id=1, method=TOOLS_CALL, params={"name": 5}),
        (1, -32602),
        (1, -32602, NO_META),
    ),
    row("params-not-object", frame(id=1, method=TOOLS_CALL, params=[1]), (1, -32602)),
    row("params-missing", frame(id=1, method=TOOLS_CALL), (1, -32602), (1, -32602, NO_META)),
    row(
        "bad-progress-token",
        frame(id=1, method=TOOLS_CALL, params={"name": "echo", "_meta": {"progressToken": 1.5}}),
        (1, -32602),
        (1, -32602, NO_META),
    ),
    # the same checks reached with a valid modern _meta, in both eras
    row("unknown-method-with-meta", modern("no/such/method"), (1, -32601)),
    row("wrong-direction-with-meta", modern("sampling/createMessage"), (1, -32601)),
    row("undeclared-capability-with-meta", modern("resources/list"), (1, -32601)),
    row("notification-as-request-with-meta", modern("notifications/initialized"), (1, -32601)),
    row("bad-params-with-meta", modern(TOOLS_CALL, name=5), (1, -32602)),
    row(
        "bad-progress-token-with-meta",
        modern(TOOLS_CALL, {**META, "progressToken": 1.5}, name="echo"),
        (1, -32602),
    ),
    # a modern request's own _meta (ME-07, VR-02, LG-08): the handshake era
    # reads none of these keys and serves the call (its _meta must still be an object)
    row(
        "no-meta",
        frame(id=1, method=TOOLS_CALL, params={"name": "echo"}),
        (1, RESULT),
        (1, -32602, NO_META),
    ),
    row("meta-not-object", modern(TOOLS_CALL, [1], name="echo"), (1, -32602), (1, -32602, NO_META)),
    row(
        "version-missing",
        modern(TOOLS_CALL, {CAPS: {}}, name="echo"),
        (1, RESULT),
        (1, -32602, {"missing": [V]}),
    ),
    row(
        "version-not-string",
        modern(TOOLS_CALL, {V: 20260728, CAPS: {}}, name="echo"),
        (1, RESULT),
        (1, -32602, {"missing": [V]}),
    ),
    row(
        "capabilities-missing",
        modern(TOOLS_CALL, {V: MODERN_VERSION}, name="echo"),
        (1, RESULT),
        (1, -32602, {"missing": [CAPS]}),
    ),
    row(
        "capabilities-not-object",
        modern(TOOLS_CALL, {V: MODERN_VERSION, CAPS: []}, name="echo"),
        (1, RESULT),
        (1, -32602, {"missing": [CAPS]}),
    ),
    row(
        "unsupported-version",
        modern(TOOLS_CALL, {V: "2099-01-01", CAPS: {}}, name="echo"),
        (1, RESULT),
        (1, -32022, unsupported("2099-01-01")),
    ),
    row(  # a handshake-era version is negotiated by initialize, never named per request
        "handshake-version-named-per-request",
        modern(TOOLS_CALL, {V: "2025-11-25", CAPS: {}}, name="echo"),
        (1, RESULT),
        (1, -32022, unsupported("2025-11-25")),
    ),
    row(
        "unknown-log-level",
        modern(TOOLS_CALL, {**META, LEVEL: "loud"}, name="echo"),
        (1, RESULT),
        (1, -32602),
    ),
    row(
        "client-info-not-object",
        modern(TOOLS_CALL, {**META, INFO: 5}, name="echo"),
        (1, RESULT),
        (1, -32602),
    ),
    # methods 2026-07-28 does not have, named with its version: -32601; the
    # handshake era serves ping and logging/setLevel (resources/subscribe is
    # -32601 there too: no resources are declared; the modern era looks the
    # method up before any capability)
    row("ping-naming-modern", modern("ping"), (1, RESULT), (1, -32601)),
    row(
        "set-level-naming-modern",
        modern("logging/setLevel", level="info"),
        (1, RESULT),
        (1, -32601),
    ),
    row("subscribe-naming-modern", modern("resources/subscribe", uri="file:///a"), (1, -32601)),
    row("ping-without-meta", frame(id=1, method="ping"), (1, RESULT), (1, -32602, NO_META)),
    # the era is the opening's (VR-09): no initialize after it, in either era
    row("second-initialize", frame(id=1, method="initialize", params=INITIALIZE), (1, -32600)),
    row("initialize-naming-modern", modern("initialize", **INITIALIZE), (1, -32600)),
    row(
        "discover-without-meta",
        frame(id=1, method="server/discover"),
        (1, -32601),
        (1, -32602, NO_META),
    ),
    row("discover", modern("server/discover"), (1, -32601), (1, RESULT)),
    row(
        "listen-without-meta",
        frame(id=1, method="subscriptions/listen", params={"notifications": {}}),
        (1, -32601),
        (1, -32602, NO_META),
    ),
    # a retry's requestState is attacker-controlled (PT-08): verified where
    # 2026-07-28 has rounds, never read in the handshake era
    row(
        "request-state-garbage",
        modern(TOOLS_CALL, name="echo", requestState="garbage"),
        (1, RESULT),
        (1, -32602, {"reason": "malformed"}),
    ),
    row("request-state-not-string", modern(TOOLS_CALL, name="echo", requestState=5), (1, -32602)),
    row(
        "input-responses-not-object",
        modern(TOOLS_CALL, name="echo", inputResponses=[1]),
        (1, -32602),
    ),
    # notifications are never answered
    row("unknown-notification", frame(method="notifications/no-such"), None),
    row(
        "malformed-cancel",
        frame(method="notifications/cancelled", params={"requestId": None}),
        None,
    ),
    row(
        "malformed-progress",
        frame(method="notifications/progress", params={"progressToken": 1}),
        None,
    ),
    row("late-initialized", frame(method="notifications/initialized"), None),
    row(
        "notification-params-not-object",
        frame(method="notifications/roots/list_changed", params=[1]),
        None,
    ),
]

#: Every row in both eras: (era, frame, the reply owed in it).
CASES = [pytest.param(era, r.data, r.owed(era), id=f"{era}-{r.name}") for era in ERAS for r in ROWS]


#: Rows refused by the codec's first phase (the envelope), before id reuse is
#: checked as a duplicate.
ENVELOPE_ERRORS = {
    "wrong-jsonrpc",
    "missing-jsonrpc",
    "method-not-string",
    "request-and-response",
    "params-not-object",
}

#: Rows refused by the Server (its requestState check, PT-08) rather than the
#: connection, in the era where they are refused: the connection's statistics
#: count them as neither invalid nor ignored.
SERVER_REFUSALS = {"request-state-garbage"}


async def call_echo(peer: RawPeer, era: str, request_id: Any = None) -> Any:
    """Call ``echo`` as a valid request of *era* (modern: with its ``_meta``); its id."""
    params: dict[str, Any] = {"name": "echo", "arguments": {}}
    if era == MODERN:
        params["_meta"] = META
    return await peer.send_request(TOOLS_CALL, params, request_id)


def check_echo(reply: dict[str, Any], era: str, request_id: Any) -> None:
    assert reply["id"] == request_id, reply
    result = reply["result"]
    assert result["content"] == [{"type": "text", "text": repr(request_id)}], reply
    # The era's own shape of a result: resultType only in 2026-07-28.
    assert result.get("resultType") == ("complete" if era == MODERN else None), reply


@asynccontextmanager
async def open_rows_server(era: str, buffer: int = 64) -> AsyncIterator[tuple[RawPeer, Session]]:
    """The table's server with a raw client, in *era*: handshaken, or moved to
    MODERN by a first valid modern call (VR-09). *buffer*: the transport's."""
    server = make_server()
    version = LATEST if era == HANDSHAKE else None
    async with open_raw_server(
        server, version=version, buffer=buffer, max_message_size=MAX_SIZE
    ) as (
        peer,
        session,
    ):
        if era == MODERN:
            opening = await call_echo(peer, era, "opening")
            check_echo(await peer.receive(), era, opening)
            assert session.state is SessionState.MODERN
        yield peer, session


async def send_and_check(peer: RawPeer, era: str, data: bytes, expected: Owed) -> None:
    """Send one frame; check the reply (or its absence); then a request of *era*
    must work, and be the very next frame answered: a ping in the handshake era,
    a ``tools/call`` in 2026-07-28 (which has no ping)."""
    await peer.send_raw(data)
    if expected is not None:
        reply = await peer.receive()
        if expected[1] == RESULT:
            assert reply["id"] == expected[0], reply
            assert isinstance(reply["result"], dict), reply
        else:
            assert "result" not in reply, reply
            assert (reply["id"], reply["error"]["code"]) == expected[:2], reply
            assert isinstance(reply["error"]["message"], str)
            if len(expected) == 3:
                assert reply["error"].get("data") == expected[2], reply
    if era == HANDSHAKE:
        ping = await peer.send_request("ping")
        reply = await peer.receive()
        assert reply == {"jsonrpc": "2.0", "id": ping, "result": {}}, reply
    else:
        request_id = await call_echo(peer, era)
        check_echo(await peer.receive(), era, request_id)


@pytest.mark.spec("BP-01")
@pytest.mark.spec("BP-02")
@pytest.mark.spec("BP-03")
@pytest.mark.spec("BP-07")
@pytest.mark.spec("BP-08")
@pytest.mark.spec("BP-10")
@pytest.mark.spec("BP-11")
@pytest.mark.spec("BP-19")
@pytest.mark.spec("CN-10")
@pytest.mark.spec("LC-11")
@pytest.mark.spec("A-04")
@pytest.mark.spec("A-13")
@pytest.mark.spec("ME-07", "VR-02", "VR-09", "LG-08", "PT-08")
@pytest.mark.parametrize(("era", "data", "expected"), CASES)
async def test_malformed_frame(
    era: str,
    data: bytes,
    expected: Owed,
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_rows_server(era) as (peer, session):
        await send_and_check(peer, era, data, expected)
        # The session is still fully usable, and still in its era.
        after = await call_echo(peer, era, "after")
        check_echo(await peer.receive(), era, after)
        assert not session.closed
        assert session.state is (
            SessionState.OPERATING if era == HANDSHAKE else SessionState.MODERN
        )


@pytest.mark.spec("BP-04")
@pytest.mark.parametrize(
    "first",
    [
        frame(id="x", method="no/such/method"),
        frame(id="x", method=TOOLS_CALL, params={"name": 5}),
        b'{"jsonrpc":"1.0","id":"x","method":"ping"}',
    ],
    ids=["unknown-method", "bad-params", "bad-envelope"],
)
async def test_an_id_used_by_a_refused_request_is_served_once_the_refusal_was_read(
    first: bytes, autojump_clock: trio.testing.MockClock
) -> None:
    # The peer has its answer for "x" (the refusal), so a later request reusing
    # it (a peer bug, BP-04, that deployed clients commit) cannot be confused
    # with the first: it is served (reliability C-02), and "x" gets exactly one
    # answer per request.
    async with open_raw_server(
        FnDispatcher(echo=echo), protocol=make_protocol, max_message_size=MAX_SIZE
    ) as (
        peer,
        session,
    ):
        await peer.send_raw(first)
        refusal = await peer.receive()
        assert refusal["id"] == "x"
        assert "error" in refusal
        await peer.call_tool("echo", request_id="x")
        served = await peer.receive()
        assert served["id"] == "x"
        assert "result" in served
        assert [f for f in peer.frames if f.get("id") == "x"] == [refusal, served]
        assert not session.closed


@pytest.mark.spec("BP-04")
@pytest.mark.parametrize(
    ("era", "first", "code"),
    [
        (HANDSHAKE, frame(id="x", method="no/such/method"), -32601),
        (MODERN, frame(id="x", method=TOOLS_CALL, params={"name": "echo"}), -32602),  # ME-07
        (
            MODERN,
            modern(TOOLS_CALL, {V: "2099-01-01", CAPS: {}}, request_id="x", name="echo"),
            -32022,
        ),
    ],
    ids=["handshake-unknown-method", "modern-no-meta", "modern-unsupported-version"],
)
async def test_an_id_reused_while_its_refusal_waits_in_the_writer_queue_is_a_duplicate(
    era: str, first: bytes, code: int, autojump_clock: trio.testing.MockClock
) -> None:
    # The refusal of "x" is owed but not written (a zero-buffer transport and a
    # paused peer hold the writer on an earlier frame) when a request reusing
    # "x" arrives: the peer cannot have read its answer, so "x" is still in use
    # and the reuse is a duplicate, refused with a null id (BP-04), exactly as
    # for an accepted request whose response waits. (It was once accepted, and
    # the refusal, when written, taken for its reply: its own response was then
    # suppressed, and the call never answered while its record said COMPLETED.)
    async with open_rows_server(era, buffer=0) as (peer, session):
        peer.pause()
        blocker = await call_echo(peer, era, "blocker")
        await settle()  # the writer now blocks writing the blocker's response
        await peer.send_raw(first)
        await call_echo(peer, era, "x")
        await settle()
        peer.resume()
        check_echo(await peer.receive(), era, blocker)
        refusal = await peer.receive()
        assert (refusal["id"], refusal["error"]["code"]) == ("x", code), refusal
        duplicate = await peer.receive()
        assert duplicate["id"] is None, duplicate
        assert duplicate["error"]["data"] == {"duplicateId": "x"}, duplicate
        # "x" is free again: now that its refusal was written, a reuse is served.
        await call_echo(peer, era, "x")
        check_echo(await peer.receive(), era, "x")
        assert len(peer.responses("x")) == 2
        assert session.protocol.in_flight(Direction.INBOUND) == []


@pytest.mark.spec("BP-07")
async def test_bad_params_error_data_is_path_labelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_server(
        FnDispatcher(echo=echo), protocol=make_protocol, max_message_size=MAX_SIZE
    ) as (peer, _):
        await peer.send_raw(frame(id=1, method=TOOLS_CALL, params={"name": 5, "arguments": [1]}))
        error = (await peer.receive())["error"]
        assert error["message"] == "Invalid params for tools/call"
        errors = error["data"]["errors"]
        assert any(line.endswith("@ $.name") for line in errors), errors
        assert any(line.endswith("@ $.arguments") for line in errors), errors


@pytest.mark.spec("BP-01")
@pytest.mark.parametrize("era", ERAS)
async def test_every_malformed_frame_in_one_session(
    era: str, autojump_clock: trio.testing.MockClock
) -> None:
    owed = [(r.name, r.data, r.owed(era)) for r in ROWS]
    errors = [name for name, _, expected in owed if expected is not None and expected[1] != RESULT]
    results = [name for name, _, expected in owed if expected is not None and expected[1] == RESULT]
    by_server = [name for name in errors if name in SERVER_REFUSALS]
    async with open_rows_server(era) as (peer, session):
        before = session.statistics()
        for _, data, expected in owed:
            # Rows share ids: each one's answer is read before the next is sent,
            # so an id used (and answered) before is no duplicate (C-02).
            await send_and_check(peer, era, data, expected)
        stats = session.statistics()
        # Each bad frame the connection saw was counted once: refused (replied
        # to or not) or ignored; served rows and the Server's refusals by neither.
        counted = (stats.invalid_messages + stats.ignored_events) - (
            before.invalid_messages + before.ignored_events
        )
        assert counted == len(owed) - len(results) - len(by_server)
        assert stats.invalid_messages - before.invalid_messages >= len(errors) - len(by_server)
        assert stats.state is (SessionState.OPERATING if era == HANDSHAKE else SessionState.MODERN)


@pytest.mark.spec("BP-18")
@pytest.mark.spec("A-15")
@pytest.mark.spec("LC-12")
async def test_a_batch_is_accepted_in_2025_03_26_and_answered_message_by_message(
    autojump_clock: trio.testing.MockClock,
) -> None:
    dispatcher = FnDispatcher(echo=echo)
    async with open_raw_server(
        dispatcher, protocol=make_protocol, max_message_size=MAX_SIZE, version="2025-03-26"
    ) as (
        peer,
        session,
    ):
        batch = [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "id": 2, "method": TOOLS_CALL, "params": {"name": "echo"}},
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77}},
            {"jsonrpc": "2.0", "id": 3, "method": "no/such/method"},
            42,
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-03-26",
                    "capabilities": {},
                    "clientInfo": {"name": "x", "version": "1"},
                },
            },
        ]
        await peer.send(batch)
        replies = [await peer.receive() for _ in range(5)]
        # Each response is its own frame (never an array); order may differ
        # between the built-in ping and the tool's task.
        by_id = {reply["id"]: reply for reply in replies}
        assert by_id[1]["result"] == {}
        assert by_id[2]["result"]["content"][0]["text"] == "2"
        assert by_id[3]["error"]["code"] == -32601
        assert by_id[None]["error"]["code"] == -32600  # the element that was 42
        assert by_id[4]["error"] == {
            "code": -32600,
            "message": "initialize must not be part of a JSON-RPC batch",
        }
        await peer.send([])
        assert (await peer.receive())["error"]["code"] == -32600  # an empty batch
        await peer.ping()
        assert not session.closed


@pytest.mark.spec("BP-19")
@pytest.mark.spec("A-15")
@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25"])
async def test_a_batch_is_refused_in_other_revisions(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_raw_server(
        FnDispatcher(), protocol=make_protocol, max_message_size=MAX_SIZE, version=version
    ) as (
        peer,
        _,
    ):
        await send_and_check(
            peer, HANDSHAKE, b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', (None, -32600)
        )


@pytest.mark.spec("LC-05")
@pytest.mark.spec("A-04")
@pytest.mark.spec("PI-01")
async def test_requests_before_initialize_are_refused_but_ping_is_answered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_server(
        FnDispatcher(echo=echo), protocol=make_protocol, max_message_size=MAX_SIZE, version=None
    ) as (
        peer,
        _,
    ):
        await send_and_check(
            peer, HANDSHAKE, frame(id=1, method=TOOLS_CALL, params={"name": "echo"}), (1, -32600)
        )
        await peer.handshake_as_client()
        await peer.call_tool("echo", request_id=2)
        assert (await peer.receive())["result"]["content"][0]["text"] == "2"
