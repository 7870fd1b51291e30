"""Client features: roots, sampling and elicitation answered by application handlers.

Requests come from a real server session (``FakeServer``) or, to send what a
well-behaved server never would, from a raw peer. Every refusal is checked on
the wire and followed by a request that still works (the session goes on).
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from client_fake_server import FakeServer, open_fake
from helpers import open_client_with_raw_server

from trio_mcp import RPCError, open_client
from trio_mcp import types as t
from trio_mcp._client._elicitation import FormElicitation, URLElicitation, check_form_schema
from trio_mcp.protocol import LocalProtocolError
from trio_mcp.testing import memory_transport_pair

ROOTS = [t.Root(uri="file:///home/me/project", name="project")]


def caps(init: dict[str, Any]) -> dict[str, Any]:
    return dict(init["params"]["capabilities"])


# ---------------------------------------------------------------- capabilities


@pytest.mark.spec("RT-01")
@pytest.mark.spec("SM-01")
@pytest.mark.spec("EL-01")
@pytest.mark.spec("EL-02")
@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, {}),
        ({"roots": ROOTS}, {"roots": {"listChanged": True}}),
        ({"sampling": "h"}, {"sampling": {}}),
        ({"sampling": "h", "sampling_tools": True}, {"sampling": {"tools": {}}}),
        ({"elicitation": "h"}, {"elicitation": {"form": {}}}),
        ({"url_elicitation": "h"}, {"elicitation": {"url": {}}}),
        ({"elicitation": "h", "url_elicitation": "h"}, {"elicitation": {"form": {}, "url": {}}}),
    ],
)
async def test_only_features_with_handlers_are_declared(
    options: dict[str, Any], expected: dict[str, Any]
) -> None:
    async def handler(request: Any) -> Any:
        raise AssertionError

    options = {k: handler if v == "h" else v for k, v in options.items()}
    async with open_client_with_raw_server(discover=False, **options) as (peer, client):
        init = peer.frames[0]
        assert init["method"] == "initialize"
        assert caps(init) == expected
        assert client.session.protocol.local_capabilities == expected


@pytest.mark.spec("RT-05")
@pytest.mark.spec("SM-01")
@pytest.mark.spec("EL-01")
@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("roots/list", None),
        (
            "sampling/createMessage",
            {
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                "maxTokens": 10,
            },
        ),
        ("elicitation/create", {"message": "name?", "requestedSchema": {"type": "object"}}),
    ],
)
async def test_requests_without_a_handler_get_method_not_found(
    method: str, params: dict[str, Any] | None
) -> None:
    async with open_client_with_raw_server(discover=False) as (peer, _client):
        reply = await peer.request(method, params)
        assert reply["error"]["code"] == -32601
        await peer.ping()


# ----------------------------------------------------------------------- roots


@pytest.mark.spec("RT-02")
@pytest.mark.spec("RT-03")
async def test_roots_list_and_list_changed() -> None:
    server = FakeServer(tools=[])
    async with open_fake(server, roots=ROOTS) as client:
        assert server.session is not None
        listed = await server.session.request("roots/list")
        assert listed.roots == ROOTS
        new = [*ROOTS, t.Root(uri="file:///tmp/scratch")]
        await client.set_roots(new)
        await server.notified.wait()
        assert server.notifications[-1].method == "notifications/roots/list_changed"
        assert (await server.session.request("roots/list")).roots == new


@pytest.mark.spec("RT-02")
async def test_roots_from_a_function() -> None:
    current = list(ROOTS)

    async def roots() -> list[t.Root]:
        await trio.lowlevel.checkpoint()
        return current

    server = FakeServer(tools=[])
    async with open_fake(server, roots=roots) as client:
        assert server.session is not None
        assert (await server.session.request("roots/list")).roots == ROOTS
        current.append(t.Root(uri="file:///b"))
        await client.notify_roots_changed()
        await server.notified.wait()
        assert len((await server.session.request("roots/list")).roots) == 2
        current.append(t.Root(uri="https://not-a-file"))
        with pytest.raises(RPCError) as info:
            await server.session.request("roots/list")
        assert info.value.code == -32603
        await client.ping()


@pytest.mark.spec("RT-04")
async def test_non_file_roots_are_refused_locally() -> None:
    transport, _ = memory_transport_pair()
    with pytest.raises(ValueError, match="file://"):
        async with open_client(transport, roots=[t.Root(uri="http://x")], era="legacy"):
            pytest.fail("must not open")
    server = FakeServer(tools=[])
    async with open_fake(server, roots=ROOTS) as client:
        with pytest.raises(ValueError, match="file://"):
            await client.set_roots([t.Root(uri="../etc")])
    async with open_fake(FakeServer(tools=[])) as client:
        with pytest.raises(RuntimeError, match="roots="):
            await client.set_roots(ROOTS)


# -------------------------------------------------------------------- sampling

HELLO = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}


async def echo_sampler(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
    text = params.messages[-1].content
    assert isinstance(text, t.TextContent)
    return t.CreateMessageResult(
        role="assistant", content=t.TextContent(text="echo " + text.text), model="echo-1"
    )


@pytest.mark.spec("SM-02")
async def test_sampling_round_trip() -> None:
    server = FakeServer(tools=[])
    async with open_fake(server, sampling=echo_sampler):
        assert server.session is not None
        result = await server.session.request("sampling/createMessage", HELLO)
        assert result.model == "echo-1"
        assert result.content.text == "echo hi"


@pytest.mark.spec("SM-03")
async def test_tools_in_sampling_need_the_tools_capability() -> None:
    tool = {"name": "lookup", "inputSchema": {"type": "object"}}
    async with open_client_with_raw_server(discover=False, sampling=echo_sampler) as (peer, _):
        reply = await peer.request("sampling/createMessage", {**HELLO, "tools": [tool]})
        assert reply["error"]["code"] == -32602
        assert "sampling.tools" in reply["error"]["message"]
        ok = await peer.request("sampling/createMessage", HELLO)
        assert ok["result"]["content"]["text"] == "echo hi"

    seen: list[t.CreateMessageRequestParams] = []

    async def with_tools(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        seen.append(params)
        return t.CreateMessageResult(
            role="assistant",
            content=[t.ToolUseContent(id="u1", name="lookup", input={"q": "x"})],
            model="m",
            stop_reason="toolUse",
        )

    async with open_client_with_raw_server(
        discover=False, sampling=with_tools, sampling_tools=True
    ) as (peer, _):
        reply = await peer.request(
            "sampling/createMessage", {**HELLO, "tools": [tool], "toolChoice": {"mode": "auto"}}
        )
        assert reply["result"]["stopReason"] == "toolUse"
        assert reply["result"]["content"][0]["type"] == "tool_use"
        assert seen[0].tools is not None
        assert seen[0].tools[0].name == "lookup"


@pytest.mark.spec("SM-05")
async def test_malformed_tool_conversation_is_refused() -> None:
    use = {"type": "tool_use", "id": "u1", "name": "f", "input": {}}
    result = {"type": "tool_result", "toolUseId": "u1", "content": []}
    bad = [
        # tool results mixed with text
        [{"role": "user", "content": [result, {"type": "text", "text": "x"}]}],
        # a tool use not answered by the next message
        [
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": {"type": "text", "text": "no result"}},
        ],
    ]
    async with open_client_with_raw_server(
        discover=False, sampling=echo_sampler, sampling_tools=True
    ) as (peer, _):
        for messages in bad:
            reply = await peer.request(
                "sampling/createMessage", {"messages": messages, "maxTokens": 5}
            )
            assert reply["error"]["code"] == -32602, messages
        good = [
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
            {"role": "user", "content": {"type": "text", "text": "hi"}},
        ]
        reply = await peer.request("sampling/createMessage", {"messages": good, "maxTokens": 5})
        assert "result" in reply


async def test_a_sampling_handler_that_returns_junk_is_an_internal_error() -> None:
    async def junk(params: t.CreateMessageRequestParams) -> Any:
        return {"not": "a result"}

    async with open_client_with_raw_server(discover=False, sampling=junk) as (peer, _client):
        reply = await peer.request("sampling/createMessage", HELLO)
        assert reply["error"] == {"code": -32603, "message": "Internal error"}
        await peer.ping()


async def test_the_server_cancelling_sampling_cancels_the_handler() -> None:
    started, cancelled = trio.Event(), trio.Event()

    async def slow(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError

    async with open_client_with_raw_server(discover=False, sampling=slow) as (peer, _client):
        request_id = await peer.send_request("sampling/createMessage", HELLO)
        await started.wait()
        await peer.cancel(request_id)
        await cancelled.wait()
        await peer.ping()
        await trio.testing.wait_all_tasks_blocked()
        assert peer.responses(request_id) == []


# ----------------------------------------------------------------- elicitation

FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 1},
        "age": {"type": "integer", "minimum": 0, "default": 30},
        "tea": {"type": "boolean", "default": True},
        "size": {"type": "string", "enum": ["s", "m", "l"]},
        "colour": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        "email": {"type": "string", "format": "email"},
    },
    "required": ["name"],
}


@pytest.mark.spec("EL-03")
@pytest.mark.spec("EL-07")
@pytest.mark.spec("EL-11")
@pytest.mark.spec("EL-17")
async def test_form_elicitation_round_trip() -> None:
    asked: list[FormElicitation] = []

    async def answer(request: FormElicitation) -> t.ElicitResult:
        asked.append(request)
        return t.ElicitResult(action="accept", content={"name": "Ada", "age": 36, "tags": ["a"]})

    server = FakeServer(tools=[])
    async with open_fake(server, elicitation=answer):
        assert server.session is not None
        result = await server.session.request(
            "elicitation/create", {"message": "Who are you?", "requestedSchema": FORM}
        )
    assert result.action == "accept"
    assert result.content == {"name": "Ada", "age": 36, "tags": ["a"]}
    assert asked[0].message == "Who are you?"
    assert asked[0].server_name == "fake"
    assert asked[0].defaults == {"age": 30, "tea": True}
    assert asked[0].required == ["name"]


@pytest.mark.spec("EL-05")
async def test_defaults_applied_when_asked() -> None:
    async def answer(request: FormElicitation) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"name": "Bo"})

    async with open_client_with_raw_server(
        discover=False, elicitation=answer, apply_elicitation_defaults=True
    ) as (peer, _):
        reply = await peer.request("elicitation/create", {"message": "m", "requestedSchema": FORM})
        assert reply["result"]["content"] == {"name": "Bo", "age": 30, "tea": True}


@pytest.mark.spec("EL-07")
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_carry_no_content(action: str) -> None:
    async def answer(request: FormElicitation) -> t.ElicitResult:
        return t.ElicitResult(action=action, content={"name": "leaked"})  # type: ignore[arg-type]

    async with open_client_with_raw_server(discover=False, elicitation=answer) as (peer, _):
        reply = await peer.request("elicitation/create", {"message": "m", "requestedSchema": FORM})
        assert reply["result"] == {"action": action}


@pytest.mark.spec("EL-17")
@pytest.mark.parametrize(
    "content",
    [{}, {"name": ""}, {"name": "x", "age": -1}, {"name": "x", "size": "xl"}, {"name": {"x": 1}}],
)
async def test_an_invalid_answer_is_never_sent(content: dict[str, Any]) -> None:
    async def answer(request: FormElicitation) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content=content)

    async with open_client_with_raw_server(discover=False, elicitation=answer) as (peer, _client):
        reply = await peer.request("elicitation/create", {"message": "m", "requestedSchema": FORM})
        assert reply["error"]["code"] == -32603
        assert "content" not in str(reply)
        await peer.ping()


BAD_SCHEMAS = [
    {"type": "array"},
    {"type": "object", "properties": {"nested": {"type": "object", "properties": {}}}},
    {"type": "object", "properties": {"r": {"$ref": "#/x"}}},
    {"type": "object", "properties": {"s": {"type": "string", "pattern": ".*"}}},
    {"type": "object", "properties": {"s": {"type": "string", "format": "ipv4"}}},
    {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object"}}}},
    {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["y"]},
    {"type": "object", "properties": {}, "$defs": {}},
    {"type": "object", "properties": {"e": {"type": "string", "enum": []}}},
]


@pytest.mark.spec("EL-04")
@pytest.mark.parametrize("schema", BAD_SCHEMAS)
async def test_a_malformed_requested_schema_is_refused(schema: dict[str, Any]) -> None:
    async def answer(request: FormElicitation) -> t.ElicitResult:
        raise AssertionError("the application must not see it")

    async with open_client_with_raw_server(discover=False, elicitation=answer) as (peer, _client):
        reply = await peer.request(
            "elicitation/create", {"message": "m", "requestedSchema": schema}
        )
        assert reply["error"]["code"] == -32602
        assert reply["error"]["data"]["errors"]
        await peer.ping()


@pytest.mark.spec("EL-04")
def test_the_flat_schema_check_accepts_every_allowed_kind() -> None:
    check_form_schema(FORM)
    check_form_schema({"type": "object", "properties": {}})
    check_form_schema(
        {
            "type": "object",
            "properties": {
                "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]},
                "multi": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"anyOf": [{"const": "a", "title": "A"}]},
                },
                "when": {"type": "string", "format": "date-time"},
                "n": {"type": "number", "maximum": 1.5},
            },
        }
    )


@pytest.mark.spec("EL-06")
@pytest.mark.spec("EL-09")
@pytest.mark.spec("EL-11")
@pytest.mark.spec("EL-12")
async def test_url_elicitation_hands_over_the_url_and_origin() -> None:
    asked: list[URLElicitation] = []

    async def consent(request: URLElicitation) -> t.ElicitResult:
        asked.append(request)
        return t.ElicitResult(action="accept", content={"ignored": "x"})

    url = "https://xn--bcher-kva.example:8443/connect?state=1"
    async with open_client_with_raw_server(discover=False, url_elicitation=consent) as (
        peer,
        client,
    ):
        params = {"mode": "url", "message": "Link", "elicitationId": "e1", "url": url}
        reply = await peer.request("elicitation/create", params)
        assert reply["result"] == {"action": "accept"}  # consent only, no content
        request = asked[0]
        assert request.url == url
        assert request.origin == "https://xn--bcher-kva.example:8443"
        assert request.host == "bücher.example"
        assert request.punycode
        # Completion notices: unknown ids are ignored, known ones wake waiters.
        await peer.notify("notifications/elicitation/complete", {"elicitationId": "nope"})
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.wait_elicitation_complete, "e1")
            await trio.testing.wait_all_tasks_blocked()
            await peer.notify("notifications/elicitation/complete", {"elicitationId": "e1"})
        with trio.testing.assert_checkpoints():
            await client.wait_elicitation_complete("e1")  # late waiters return at once
        with pytest.raises(KeyError):
            await client.wait_elicitation_complete("nope")


@pytest.mark.spec("EL-06")
@pytest.mark.spec("EL-12")
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("javascript:alert(1)", "absolute http or https"),
        ("vbscript:msgbox(1)", "absolute http or https"),
        ("file:///etc/passwd", "absolute http or https"),
        ("data:text/html,x", "absolute http or https"),
        ("https://", "absolute http or https"),
        ("https:evil.example", "absolute http or https"),
        ("/rel", "absolute http or https"),
        # X-04 (A19/A20): browsers read "\\" as "/" in http(s) URLs, so urlsplit
        # and the browser would disagree on the host.
        ("https://evil.example\\@trusted.example/", "backslash"),
        ("https:\\\\evil.example/", "backslash"),
        ("https://trusted.example\\.evil.example/", "backslash"),
        # Browsers drop tabs and newlines anywhere and strip leading/trailing
        # control characters and spaces: what is shown would not be what opens.
        ("https://trusted.example/\nhttps://evil.example/", "U+000A"),
        ("https://trusted.ex\tample.evil.example/", "U+0009"),
        ("\x00https://trusted.example/", "U+0000"),
        ("https://trusted.example/\x7f", "U+007F"),
        ("https://trusted.example/ x", "U+0020"),
        (" https://trusted.example/", "U+0020"),
        ("https://trusted.example/\u00a0", "U+00A0"),
        ("https://trusted.example\u3000.evil.example/", "U+3000"),
        # Credentials in the URL: the classic "trusted.example@evil.example" spoof.
        ("https://user:pass@trusted.example/", "credentials"),
        ("https://trusted.example@evil.example/", "credentials"),
        ("https://@evil.example/", "credentials"),
        # Plain http only to a loopback host.
        ("http://evil.example/", "loopback"),
        ("http://127.0.0.1.evil.example/", "loopback"),
        ("http://localhost.evil.example/", "loopback"),
        ("http://10.0.0.1/", "loopback"),
        ("http://[2001:db8::1]/", "loopback"),
        # Browsers decode a percent-encoded host before IDNA: hide nothing.
        ("https://%65vil.example/", "percent-encoded"),
        ("https://xn--zz.example/", "internationalized"),
        ("https://trusted.example:99999/", "invalid url"),
    ],
)
async def test_dangerous_urls_are_refused(url: str, reason: str) -> None:
    async def consent(request: URLElicitation) -> t.ElicitResult:
        raise AssertionError("never shown")

    async with open_client_with_raw_server(discover=False, url_elicitation=consent) as (peer, _):
        params = {"mode": "url", "message": "m", "elicitationId": "e", "url": url}
        reply = await peer.request("elicitation/create", params)
        assert reply["error"]["code"] == -32602
        assert reply["error"]["message"].startswith("Invalid URL elicitation: ")
        assert reason in reply["error"]["message"]
        await peer.ping()  # the session goes on


@pytest.mark.spec("EL-06")
@pytest.mark.spec("EL-11")
@pytest.mark.spec("EL-12")
@pytest.mark.parametrize(
    ("url", "origin", "host", "flagged"),
    [
        ("http://127.0.0.1:8000/x", "http://127.0.0.1:8000", "127.0.0.1", False),
        ("http://127.9.8.7/cb?code=1", "http://127.9.8.7", "127.9.8.7", False),
        ("http://localhost:3000/cb", "http://localhost:3000", "localhost", False),
        ("HTTP://LocalHost/", "http://localhost", "localhost", False),
        ("http://[::1]:9000/cb", "http://[::1]:9000", "::1", False),
        ("https://example.com/a%20b?q=1&r=%5C#frag", "https://example.com", "example.com", False),
        ("https://[2001:db8::1]:8443/", "https://[2001:db8::1]:8443", "2001:db8::1", False),
        # A raw Unicode host is an IDN as much as a punycode one: flagged, and
        # the origin is the ASCII form the browser will really open.
        ("https://\u0430pple.com/", "https://xn--pple-43d.com", "\u0430pple.com", True),
        ("https://\u00fcber.de/", "https://xn--ber-goa.de", "\u00fcber.de", True),
        # U+3002 is a dot to IDNA (and to browsers): the origin shows the real host.
        ("https://evil\u3002example/", "https://evil.example", "evil.example", True),
    ],
)
async def test_safe_urls_reach_the_application(
    url: str, origin: str, host: str, flagged: bool
) -> None:
    asked: list[URLElicitation] = []

    async def consent(request: URLElicitation) -> t.ElicitResult:
        asked.append(request)
        return t.ElicitResult(action="decline")

    async with open_client_with_raw_server(discover=False, url_elicitation=consent) as (peer, _):
        params = {"mode": "url", "message": "m", "elicitationId": "e", "url": url}
        reply = await peer.request("elicitation/create", params)
        assert reply["result"] == {"action": "decline"}
    [request] = asked
    assert request.url == url  # shown in full, unchanged
    assert (request.origin, request.host, request.punycode) == (origin, host, flagged)


@pytest.mark.spec("EL-02")
async def test_an_undeclared_mode_gets_invalid_params() -> None:
    async def answer(request: Any) -> t.ElicitResult:
        raise AssertionError

    async with open_client_with_raw_server(discover=False, elicitation=answer) as (peer, _):
        params = {"mode": "url", "message": "m", "elicitationId": "e", "url": "https://a.b"}
        reply = await peer.request("elicitation/create", params)
        assert reply["error"]["code"] == -32602
    async with open_client_with_raw_server(discover=False, url_elicitation=answer) as (peer, _):
        reply = await peer.request("elicitation/create", {"message": "m", "requestedSchema": FORM})
        assert reply["error"]["code"] == -32602


async def test_elicitation_does_not_exist_before_2025_06_18() -> None:
    async def answer(request: FormElicitation) -> t.ElicitResult:
        raise AssertionError

    async with open_client_with_raw_server("2025-03-26", discover=False, elicitation=answer) as (
        peer,
        _,
    ):
        reply = await peer.request("elicitation/create", {"message": "m", "requestedSchema": FORM})
        assert reply["error"]["code"] == -32601


async def test_server_cannot_sample_a_client_that_did_not_declare_it() -> None:
    server = FakeServer(tools=[])
    async with open_fake(server):
        assert server.session is not None
        with pytest.raises(LocalProtocolError, match="sampling"):
            await server.session.request("sampling/createMessage", HELLO)
