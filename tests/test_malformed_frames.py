"""Malformed frames from a raw fake client against a real server session.

Each row is one frame sent after a normal handshake; the reply the session owes
(an error with a given id and code) or nothing at all; then a ping must still
be answered, and be the very next frame (nothing else was written). Bad input
from the peer never ends the session.

Batches: with 2025-03-26 negotiated (the one revision that requires accepting
them, BP-18) every element is handled on its own and each response is written
as its own frame; we never write a batch. In every other revision an array is
refused with -32600 (BP-19, A-15).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
import trio.testing
from helpers import FnDispatcher, RawPeer, open_raw_server

from trio_mcp.lowlevel import RequestContext
from trio_mcp.protocol import Connection, Role

MAX_SIZE = 16 * 1024


def make_protocol() -> Connection:
    return Connection(Role.SERVER, capabilities={"tools": {}}, max_message_size=MAX_SIZE)


async def echo(ctx: RequestContext) -> Any:
    return {"content": [{"type": "text", "text": repr(ctx.request_id)}]}


def frame(**fields: Any) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", **fields})


def nested(depth: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":%s}}' % (
        b"[" * depth + b"]" * depth
    )


TOOLS_CALL = "tools/call"


def row(name: str, data: bytes, expected: tuple[Any, int] | None) -> Any:
    return pytest.param(data, expected, id=name)


ROWS: list[Any] = [  # (name, frame, the reply owed as (id, code), or None)
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
        "oversize-id-beyond-the-head",
        frame(method="ping", params={"pad": "x" * MAX_SIZE}, id=1),
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
    # batches are not part of 2025-11-25
    row("batch", b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', (None, -32600)),
    # method and params (phase two of the decode)
    row("unknown-method", frame(id=1, method="no/such/method"), (1, -32601)),
    row("wrong-direction", frame(id=1, method="sampling/createMessage", params={}), (1, -32601)),
    row("undeclared-capability", frame(id=1, method="resources/list"), (1, -32601)),
    row("notification-as-request", frame(id=1, method="notifications/initialized"), (1, -32601)),
    row("bad-params", frame(id=1, method=TOOLS_CALL, params={"name": 5}), (1, -32602)),
    row("params-not-object", frame(id=1, method=TOOLS_CALL, params=[1]), (1, -32602)),
    row("params-missing", frame(id=1, method=TOOLS_CALL), (1, -32602)),
    row(
        "bad-progress-token",
        frame(id=1, method=TOOLS_CALL, params={"name": "echo", "_meta": {"progressToken": 1.5}}),
        (1, -32602),
    ),
    row(
        "second-initialize",
        frame(
            id=1,
            method="initialize",
            params={
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "x", "version": "1"},
            },
        ),
        (1, -32600),
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


#: Rows refused by the codec's first phase (the envelope), before id reuse is
#: checked as a duplicate.
ENVELOPE_ERRORS = {
    "wrong-jsonrpc",
    "missing-jsonrpc",
    "method-not-string",
    "request-and-response",
    "params-not-object",
}


async def send_and_check(peer: RawPeer, data: bytes, expected: tuple[Any, int] | None) -> None:
    """Send one frame; check the reply (or its absence); then a ping must work."""
    await peer.send_raw(data)
    if expected is not None:
        reply = await peer.receive()
        assert "result" not in reply, reply
        assert (reply["id"], reply["error"]["code"]) == expected, reply
        assert isinstance(reply["error"]["message"], str)
    ping = await peer.send_request("ping")
    reply = await peer.receive()
    assert reply == {"jsonrpc": "2.0", "id": ping, "result": {}}, reply


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
@pytest.mark.parametrize(("data", "expected"), ROWS)
async def test_malformed_frame(
    data: bytes,
    expected: tuple[Any, int] | None,
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_server(FnDispatcher(echo=echo), protocol=make_protocol()) as (
        peer,
        session,
    ):
        await send_and_check(peer, data, expected)
        # The session is still fully usable.
        await peer.call_tool("echo", request_id="after")
        assert (await peer.receive())["id"] == "after"
        assert not session.closed


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
    async with open_raw_server(FnDispatcher(echo=echo), protocol=make_protocol()) as (
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


@pytest.mark.spec("BP-07")
async def test_bad_params_error_data_is_path_labelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_server(FnDispatcher(echo=echo), protocol=make_protocol()) as (peer, _):
        await peer.send_raw(frame(id=1, method=TOOLS_CALL, params={"name": 5, "arguments": [1]}))
        error = (await peer.receive())["error"]
        assert error["message"] == "Invalid params for tools/call"
        errors = error["data"]["errors"]
        assert any(line.endswith("@ $.name") for line in errors), errors
        assert any(line.endswith("@ $.arguments") for line in errors), errors


@pytest.mark.spec("BP-01")
async def test_every_malformed_frame_in_one_session(
    autojump_clock: trio.testing.MockClock,
) -> None:
    rows = [(param.id, *param.values) for param in ROWS]
    async with open_raw_server(FnDispatcher(echo=echo), protocol=make_protocol()) as (
        peer,
        session,
    ):
        for _, data, expected in rows:
            # Rows share ids: each one's answer is read before the next is sent,
            # so an id used (and answered) before is no duplicate (C-02).
            await send_and_check(peer, data, expected)
        stats = session.statistics()
        # Each bad frame was counted once: refused (replied to or not) or ignored.
        assert stats.invalid_messages + stats.ignored_events == len(rows)
        assert stats.invalid_messages >= sum(1 for _, _, expected in rows if expected is not None)
        assert stats.state.value == "operating"


@pytest.mark.spec("BP-18")
@pytest.mark.spec("A-15")
@pytest.mark.spec("LC-12")
async def test_a_batch_is_accepted_in_2025_03_26_and_answered_message_by_message(
    autojump_clock: trio.testing.MockClock,
) -> None:
    dispatcher = FnDispatcher(echo=echo)
    async with open_raw_server(dispatcher, protocol=make_protocol(), version="2025-03-26") as (
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
    async with open_raw_server(FnDispatcher(), protocol=make_protocol(), version=version) as (
        peer,
        _,
    ):
        await send_and_check(peer, b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', (None, -32600))


@pytest.mark.spec("LC-05")
@pytest.mark.spec("A-04")
@pytest.mark.spec("PI-01")
async def test_requests_before_initialize_are_refused_but_ping_is_answered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_server(FnDispatcher(echo=echo), protocol=make_protocol(), version=None) as (
        peer,
        _,
    ):
        await send_and_check(
            peer, frame(id=1, method=TOOLS_CALL, params={"name": "echo"}), (1, -32600)
        )
        await peer.handshake_as_client()
        await peer.call_tool("echo", request_id=2)
        assert (await peer.receive())["result"]["content"][0]["text"] == "2"
