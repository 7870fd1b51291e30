"""Envelope and id cases of the robustness catalogue (reliability §3.2, §3.3,
§3.4, §3.5) not covered by the malformed-frame table: a raw client against a
real ``Server`` session after a 2025-11-25 handshake.

Every frame gets exactly the reply the catalogue owes it (or none), and a ping
on the same session is answered right after: bad input never ends a session.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
import trio.testing
from helpers import RawPeer, open_raw_server

from trio_mcp import Context, Server
from trio_mcp.protocol import Direction

MAX_SIZE = 64 * 1024


def make_server() -> Server:
    server = Server("catalogue")

    @server.tool()
    async def echo(ctx: Context, value: Any = None) -> str:
        """The id it was called with and the value it was given, as JSON."""
        return orjson.dumps({"id": ctx.request_id, "value": value}).decode()

    return server


async def ping_is_next(peer: RawPeer) -> None:
    """The session is alive and wrote nothing more: the ping's answer is next."""
    ping = await peer.send_request("ping")
    assert await peer.receive() == {"jsonrpc": "2.0", "id": ping, "result": {}}


def raw_call(request_id: bytes, value: bytes) -> bytes:
    """A tools/call of ``echo`` written by hand, so numbers stay as typed."""
    return (
        b'{"jsonrpc":"2.0","id":%s,"method":"tools/call",'
        b'"params":{"name":"echo","arguments":{"value":%s}}}' % (request_id, value)
    )


def echoed(reply: dict[str, Any]) -> Any:
    return orjson.loads(reply["result"]["content"][0]["text"])


# J-06: MCP params are objects; a scalar or an array is refused, never a crash.
PARAMS = [b"5", b'"x"', b"true", b"[]", b'[{"name":"echo"}]']


@pytest.mark.parametrize("method", ["tools/call", "tools/list", "ping"])
@pytest.mark.parametrize("params", PARAMS)
async def test_params_that_are_not_an_object_are_invalid_params(
    method: str, params: bytes, autojump_clock: trio.testing.MockClock
) -> None:
    server = make_server()
    async with open_raw_server(server, max_message_size=MAX_SIZE) as (peer, _):
        await peer.send_raw(
            b'{"jsonrpc":"2.0","id":7,"method":"%s","params":%s}' % (method.encode(), params)
        )
        reply = await peer.receive()
        assert reply["id"] == 7
        assert reply["error"]["code"] in (-32602, -32600), reply
        await ping_is_next(peer)


async def test_null_params_are_read_as_absent(autojump_clock: trio.testing.MockClock) -> None:
    """Our decision for J-06: ``"params": null`` is read as no params (writers
    that serialise an absent field as null exist); a method that needs params
    then refuses the request as it would without them."""
    server = make_server()
    async with open_raw_server(server, max_message_size=MAX_SIZE) as (peer, _):
        await peer.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":null}')
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 1, "result": {}}
        await peer.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":null}')
        reply = await peer.receive()
        assert (reply["id"], reply["error"]["code"]) == (2, -32602), reply
        await ping_is_next(peer)


# J-09: unknown top-level keys are ignored; the request is served normally.
async def test_unknown_top_level_keys_are_ignored(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_server(make_server()) as (peer, _):
        await peer.send_raw(
            b'{"jsonrpc":"2.0","id":3,"method":"tools/call","extra":1,"x-trace":{"a":[1]},'
            b'"params":{"name":"echo","arguments":{"value":"v"}},"Result":{}}'
        )
        reply = await peer.receive()
        assert echoed(reply) == {"id": 3, "value": "v"}
        await ping_is_next(peer)


# J-13: keys that only look like ``method`` / ``id`` are not aliased to them.
LOOKALIKE_KEYS = ["method\u0000", "method\u200b", "\u200bmethod", "method ", "METHOD"]


@pytest.mark.parametrize("key", LOOKALIKE_KEYS)
async def test_a_lookalike_method_key_is_not_aliased(
    key: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_raw_server(make_server()) as (peer, _):
        await peer.send({"jsonrpc": "2.0", "id": 4, key: "ping"})
        reply = await peer.receive()
        assert (reply["id"], reply["error"]["code"]) == (4, -32600), reply
        await ping_is_next(peer)


@pytest.mark.parametrize("key", ["id\u0000", "id\u200b", "ID"])
async def test_a_lookalike_id_key_is_not_aliased(
    key: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_raw_server(make_server()) as (peer, session):
        # Without a real "id" this is a notification of an unknown method:
        # ignored, never answered (J-14), and no request 4 exists.
        await peer.send({"jsonrpc": "2.0", key: 4, "method": "tools/list"})
        await ping_is_next(peer)
        assert peer.responses(4) == []
        assert session.protocol.record(Direction.INBOUND, 4) is None


# J-20: NaN and the infinities are not JSON; 1e400 is no finite number. Each is a
# parse error with a null id, and nothing we write back is anything but JSON.
@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e400"])
async def test_non_standard_numbers_are_parse_errors(
    literal: bytes, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_raw_server(make_server()) as (peer, _):
        await peer.send_raw(raw_call(b"5", literal))
        reply = await peer.receive()  # RawPeer decodes it with a strict parser
        assert (reply["id"], reply["error"]["code"]) == (None, -32700), reply
        await ping_is_next(peer)


# J-23: odd but valid numbers reach the handler unharmed.
@pytest.mark.parametrize(
    ("literal", "value"),
    [
        (b"-0", 0),
        (b"1e-400", 0.0),
        (b"12345678901234567890", 12345678901234567890),
        (b"-9223372036854775808", -(2**63)),
        (b"0.1", 0.1),
    ],
)
async def test_odd_numbers_in_params_are_parsed_without_harm(
    literal: bytes, value: Any, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_raw_server(make_server()) as (peer, _):
        await peer.send_raw(raw_call(b"6", literal))
        reply = await peer.receive()
        assert echoed(reply) == {"id": 6, "value": value}
        await ping_is_next(peer)


# a 5,000-digit integer is refused at parse time (contained), not a crash.
async def test_a_five_thousand_digit_integer_is_a_parse_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_server(make_server()) as (peer, _):
        await peer.send_raw(raw_call(b"8", b"9" * 5000))
        reply = await peer.receive()
        assert (reply["id"], reply["error"]["code"]) == (None, -32700), reply
        await ping_is_next(peer)


# C-05, C-06: MCP ids are integers or strings; nothing is coerced into one.
@pytest.mark.parametrize("literal", [b"1.0", b"1e3", b"1.5", b"-0.0", b"[1]", b"[]", b'{"id":1}'])
async def test_ids_that_are_neither_integer_nor_string_are_refused_with_a_null_id(
    literal: bytes, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_raw_server(make_server()) as (peer, session):
        await peer.send_raw(b'{"jsonrpc":"2.0","id":%s,"method":"ping"}' % literal)
        reply = await peer.receive()
        assert (reply["id"], reply["error"]["code"]) == (None, -32600), reply
        # Never taken for the integer it resembles.
        assert session.protocol.record(Direction.INBOUND, 1) is None
        await ping_is_next(peer)


# C-07: big integer ids and long string ids are echoed exactly.
@pytest.mark.parametrize(
    "request_id",
    [2**53 + 1, 2**63 - 1, -(2**63), "x" * 10_000, "1", "", '\u00e9\u2028\n\t"', "\U0001f600"],
)
async def test_ids_are_echoed_byte_exact(
    request_id: Any, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_raw_server(make_server()) as (peer, _):
        await peer.send({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
        reply = await peer.receive()
        assert reply == {"jsonrpc": "2.0", "id": request_id, "result": {}}
        assert type(reply["id"]) is type(request_id)
        await ping_is_next(peer)


async def test_an_id_written_with_escapes_is_echoed_as_the_same_string(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_raw_server(make_server()) as (peer, _):
        await peer.send_raw(b'{"jsonrpc":"2.0","id":"\\u0041\\u00e9","method":"ping"}')
        reply = await peer.receive()
        assert reply["id"] == "A\u00e9"
        await ping_is_next(peer)


# a frame just under the bound is served.
async def test_a_frame_just_under_the_bound_is_served(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = make_server()
    async with open_raw_server(server, max_message_size=MAX_SIZE) as (peer, _):
        shell = raw_call(b"9", b'""')
        value = "v" * (MAX_SIZE - len(shell))
        data = raw_call(b"9", orjson.dumps(value))
        assert len(data) == MAX_SIZE
        await peer.send_raw(data)
        reply = await peer.receive()
        assert echoed(reply) == {"id": 9, "value": value}
        await ping_is_next(peer)


# an object with very many keys (10^5 here, under the default bound) is
# parsed and served; a ping right after it is answered.
async def test_an_object_with_a_hundred_thousand_keys_is_served(
    autojump_clock: trio.testing.MockClock,
) -> None:
    value = {f"k{i}": i for i in range(100_000)}
    async with open_raw_server(make_server()) as (peer, _):
        await peer.send_raw(raw_call(b"10", orjson.dumps(value)))
        reply = await peer.receive()
        assert echoed(reply) == {"id": 10, "value": value}
        await ping_is_next(peer)
