"""Per-tool, per-resource, per-template and per-prompt scopes (issue #15, AU-12, ST-06).

A registration's ``scopes=`` is checked by the Streamable HTTP endpoint before
the body reaches a session, in both eras and on the legacy HTTP+SSE endpoint:
a token without the scope is answered 403 ``insufficient_scope`` naming the
scopes to ask for. On a transport without HTTP whose peer is authenticated the
server answers -32003. Lists show everything unless
``filter_lists_by_scope=True``. Real loopback HTTP throughout.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
import trio
from http_helpers import (
    ACCEPT_BOTH,
    init_body,
    legacy_sse_stream,
    post_headers,
    raw_client,
    running,
    sse_messages,
)

from trio_mcp import Context, RPCError, Server, serve_session
from trio_mcp.auth import AccessToken, ResourceServer, StaticTokenVerifier
from trio_mcp.lowlevel import Caller, Identity
from trio_mcp.protocol._headers import request_headers
from trio_mcp.testing import memory_transport_pair

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
ISSUER = "https://auth.example"
RESOURCE = "https://mcp.example/mcp"
METADATA_URL = "https://mcp.example/.well-known/oauth-protected-resource/mcp"

READER = AccessToken(subject="reader", scopes=frozenset({"mcp", "files:read"}), issuer=ISSUER)
WRITER = AccessToken(
    subject="writer", scopes=frozenset({"mcp", "files:read", "files:write"}), issuer=ISSUER
)
#: The reader's principal again, with fewer scopes (an older or narrower token).
READER_LITE = AccessToken(subject="reader", scopes=frozenset({"mcp"}), issuer=ISSUER)
TOKENS = {"reader-token": READER, "writer-token": WRITER, "reader-lite-token": READER_LITE}


def resource_server() -> ResourceServer:
    return ResourceServer(
        StaticTokenVerifier(TOKENS),
        resource=RESOURCE,
        authorization_servers=[ISSUER],
        required_scopes=["mcp"],
    )


def make_server(**options: Any) -> Server:
    server = Server("scopes", **options)

    @server.tool()
    async def read_file(path: str) -> str:
        return f"read {path}"

    @server.tool(scopes=["files:write"])
    async def write_file(ctx: Context, path: str) -> str:
        who = ctx.auth.subject if ctx.auth is not None else "anonymous"
        return f"{who} wrote {path}"

    @server.resource("file:///public", scopes=())
    async def public() -> str:
        return "public"

    @server.resource("file:///secret", scopes=["files:write"])
    async def secret() -> str:
        return "secret"

    @server.resource_template("file:///drafts/{name}", scopes=["files:write"])
    async def draft(name: str) -> str:
        return f"draft {name}"

    @server.prompt(scopes=["files:write"])
    async def commit(message: str) -> str:
        return f"commit {message}"

    @server.prompt()
    async def hello() -> str:
        return "hello"

    return server


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def modern(
    http: httpx.AsyncClient, method: str, params: dict[str, Any], token: str
) -> httpx.Response:
    """One 2026-07-28 request, with its Mcp-Method / Mcp-Name headers."""
    params = {
        **params,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {
        "accept": ACCEPT_BOTH,
        "content-type": "application/json",
        **request_headers(method, params),
        **bearer(token),
    }
    return await http.post("/mcp", content=orjson.dumps(body), headers=headers)


def answer(response: httpx.Response) -> dict[str, Any]:
    if response.headers["content-type"].startswith("text/event-stream"):
        [message] = sse_messages(response.text)
        return message
    result: dict[str, Any] = response.json()
    return result


def step_up(scopes: str) -> str:
    return (
        f'Bearer error="insufficient_scope", scope="{scopes}", resource_metadata="{METADATA_URL}"'
    )


@pytest.mark.spec("AU-12")
async def test_modern_requests_without_the_item_s_scope_get_403_step_up() -> None:
    server = make_server()
    async with running(server, auth=resource_server()) as (url, _), raw_client(url) as http:
        cases: list[tuple[str, dict[str, Any]]] = [
            ("tools/call", {"name": "write_file", "arguments": {"path": "a"}}),
            ("resources/read", {"uri": "file:///secret"}),
            ("resources/read", {"uri": "file:///drafts/x"}),
            ("prompts/get", {"name": "commit", "arguments": {"message": "m"}}),
            (
                "subscriptions/listen",
                {"notifications": {"resourceSubscriptions": ["file:///secret"]}},
            ),
            (
                "completion/complete",
                {
                    "ref": {"type": "ref/prompt", "name": "commit"},
                    "argument": {"name": "message", "value": ""},
                },
            ),
        ]
        for method, params in cases:
            refused = await modern(http, method, params, "reader-token")
            assert refused.status_code == 403, (method, params)
            # The resource's scope, what the token has, and what this request needs.
            assert refused.headers["www-authenticate"] == step_up("mcp files:read files:write")
        for method, params in cases[:4]:
            allowed = await modern(http, method, params, "writer-token")
            assert allowed.status_code == 200
            assert "result" in answer(allowed), answer(allowed)
        unscoped = await modern(
            http, "tools/call", {"name": "read_file", "arguments": {"path": "a"}}, "reader-token"
        )
        assert answer(unscoped)["result"]["content"][0]["text"] == "read a"
        public = await modern(http, "resources/read", {"uri": "file:///public"}, "reader-token")
        assert answer(public)["result"]["contents"][0]["text"] == "public"
        called = await modern(
            http, "tools/call", {"name": "write_file", "arguments": {"path": "b"}}, "writer-token"
        )
        assert answer(called)["result"]["content"][0]["text"] == "writer wrote b"


@pytest.mark.spec("AU-12")
async def test_a_handshake_session_s_request_without_the_scope_gets_403_before_its_stream() -> None:
    async with (
        running(make_server(), auth=resource_server()) as (url, app),
        raw_client(url) as http,
    ):
        opened = await http.post(
            "/mcp",
            content=init_body(version=HANDSHAKE),
            headers=post_headers(**bearer("reader-token")),
        )
        sid = opened.headers["mcp-session-id"]
        version = {"mcp-protocol-version": HANDSHAKE}
        note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await http.post(
            "/mcp", content=note, headers=post_headers(sid, **version, **bearer("reader-token"))
        )
        call = orjson.dumps(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "write_file", "arguments": {"path": "p"}},
            }
        )
        refused = await http.post(
            "/mcp", content=call, headers=post_headers(sid, **version, **bearer("reader-token"))
        )
        assert refused.status_code == 403
        assert refused.headers["www-authenticate"] == step_up("mcp files:read files:write")
        # A batch with one such request is refused whole (nothing of it delivered).
        batch = orjson.dumps(
            [
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {"name": "read_file", "arguments": {"path": "q"}},
                },
                orjson.loads(call),
            ]
        )
        refused_batch = await http.post(
            "/mcp", content=batch, headers=post_headers(sid, **version, **bearer("reader-token"))
        )
        assert refused_batch.status_code == 403
        [entry] = app._sessions.values()
        narrower = await http.post(
            "/mcp",
            content=call,
            headers=post_headers(sid, **version, **bearer("reader-lite-token")),
        )
        assert narrower.status_code == 403
        assert entry.identity.caller.access_token == READER  # a refused token is not the session's
        # The same session, the same principal with a stepped-up token: served.
        upgraded = AccessToken(
            subject="reader", scopes=frozenset({"mcp", "files:read", "files:write"}), issuer=ISSUER
        )
        assert app.auth is not None
        verifier = app.auth.verifier
        assert isinstance(verifier, StaticTokenVerifier)
        verifier._tokens["reader-stepped-up"] = upgraded
        served = await http.post(
            "/mcp",
            content=call,
            headers=post_headers(sid, **version, **bearer("reader-stepped-up")),
        )
        [message] = sse_messages(served.text)
        assert message["result"]["content"][0]["text"] == "reader wrote p"


def tool_call(request_id: int, name: str) -> bytes:
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": {}},
        }
    )


@pytest.mark.spec("AU-12")
async def test_a_refreshed_token_reaches_the_next_request_and_a_running_one_keeps_its_own() -> None:
    server = make_server()
    holding = trio.Event()
    release = trio.Event()

    @server.tool()
    async def scopes_later(ctx: Context) -> str:
        holding.set()
        await release.wait()
        assert ctx.auth is not None
        return " ".join(sorted(ctx.auth.scopes))

    @server.tool()
    async def scopes_now(ctx: Context) -> str:
        assert ctx.auth is not None
        return " ".join(sorted(ctx.auth.scopes))

    async with (
        running(server, auth=resource_server()) as (url, app),
        raw_client(url) as http,
    ):
        opened = await http.post(
            "/mcp",
            content=init_body(version=HANDSHAKE),
            headers=post_headers(**bearer("reader-token")),
        )
        sid = opened.headers["mcp-session-id"]
        version = {"mcp-protocol-version": HANDSHAKE}
        note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await http.post(
            "/mcp", content=note, headers=post_headers(sid, **version, **bearer("reader-token"))
        )
        held: list[httpx.Response] = []

        async def call_and_hold() -> None:
            held.append(
                await http.post(
                    "/mcp",
                    content=tool_call(2, "scopes_later"),
                    headers=post_headers(sid, **version, **bearer("reader-token")),
                )
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call_and_hold)
            await holding.wait()
            # The same principal with a narrower token: the next request sees it...
            refreshed = await http.post(
                "/mcp",
                content=tool_call(3, "scopes_now"),
                headers=post_headers(sid, **version, **bearer("reader-lite-token")),
            )
            [message] = sse_messages(refreshed.text)
            assert message["result"]["content"][0]["text"] == "mcp"
            [entry] = app._sessions.values()
            assert entry.identity.caller.access_token == READER_LITE
            release.set()
        # ...while the request already running keeps the token it arrived with.
        [message] = sse_messages(held[0].text)
        assert message["result"]["content"][0]["text"] == "files:read mcp"


@pytest.mark.spec("AU-12")
async def test_the_legacy_sse_endpoint_refuses_the_post_with_403() -> None:
    async with (
        running(make_server(), auth=resource_server()) as (url, app),
        raw_client(url) as http,
        legacy_sse_stream(url, bearer("reader-token")) as (_stream, endpoint, _seen),
    ):
        call = orjson.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "resources/read",
                "params": {"uri": "file:///secret"},
            }
        )
        refused = await http.post(
            endpoint,
            content=call,
            headers={"content-type": "application/json", **bearer("reader-token")},
        )
        assert refused.status_code == 403
        assert refused.headers["www-authenticate"] == step_up("mcp files:read files:write")
        [entry] = app._sessions.values()
        # A refused request's token never becomes the session's (its running
        # requests go on seeing the one they were admitted with)...
        narrower = await http.post(
            endpoint,
            content=call,
            headers={"content-type": "application/json", **bearer("reader-lite-token")},
        )
        assert narrower.status_code == 403
        assert entry.identity.caller.access_token == READER
        # ...an admitted one's does.
        ping = orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        admitted = await http.post(
            endpoint,
            content=ping,
            headers={"content-type": "application/json", **bearer("reader-lite-token")},
        )
        assert admitted.status_code == 202
        assert entry.identity.caller.access_token == READER_LITE


def names(result: dict[str, Any], key: str, field: str = "name") -> list[str]:
    return sorted(item[field] for item in result[key])


@pytest.mark.spec("ST-06")
@pytest.mark.parametrize("filtered", [False, True])
async def test_lists_are_filtered_by_scope_only_when_asked(filtered: bool) -> None:
    server = make_server(filter_lists_by_scope=filtered)
    async with running(server, auth=resource_server()) as (url, _), raw_client(url) as http:
        seen: dict[str, dict[str, list[str]]] = {}
        for token in ("reader-token", "writer-token"):
            tools = answer(await modern(http, "tools/list", {}, token))["result"]
            resources = answer(await modern(http, "resources/list", {}, token))["result"]
            templates = answer(await modern(http, "resources/templates/list", {}, token))["result"]
            prompts = answer(await modern(http, "prompts/list", {}, token))["result"]
            seen[token] = {
                "tools": names(tools, "tools"),
                "resources": names(resources, "resources", "uri"),
                "templates": names(templates, "resourceTemplates", "uriTemplate"),
                "prompts": names(prompts, "prompts"),
            }
    everything = {
        "tools": ["read_file", "write_file"],
        "resources": ["file:///public", "file:///secret"],
        "templates": ["file:///drafts/{name}"],
        "prompts": ["commit", "hello"],
    }
    assert seen["writer-token"] == everything
    if filtered:
        assert seen["reader-token"] == {
            "tools": ["read_file"],
            "resources": ["file:///public"],
            "templates": [],
            "prompts": ["hello"],
        }
    else:
        assert seen["reader-token"] == everything


@pytest.mark.spec("AU-12")
async def test_without_http_an_authenticated_caller_lacking_the_scope_gets_32003() -> None:
    from trio_mcp import open_client

    # A transport whose owner authenticated the peer itself (as a WebSocket
    # behind an auth middleware would) names the caller as HTTP's does.
    client_end, served = memory_transport_pair()
    identity = Identity(Caller(READER.principal, READER))
    server = make_server(filter_lists_by_scope=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(
            lambda task_status: serve_session(
                server, served, identity=identity, task_status=task_status
            )
        )
        async with open_client(client_end) as client:
            with pytest.raises(RPCError) as refused:
                await client.call_tool("write_file", {"path": "x"})
            assert refused.value.code == -32003
            assert refused.value.data == {
                "requiredScopes": ["files:write"],
                "missingScopes": ["files:write"],
            }
            with pytest.raises(RPCError) as unread:
                await client.read_resource("file:///drafts/y")
            assert unread.value.code == -32003
            tools = await client.list_tools()
            assert [t.name for t in tools.tools] == ["read_file"]
            # The session is bound to its principal: only its token changes.
            with pytest.raises(ValueError, match="same principal"):
                identity.refresh(Caller(WRITER.principal, WRITER))
            stepped_up = AccessToken(subject="reader", scopes=WRITER.scopes, issuer=ISSUER)
            identity.refresh(Caller(stepped_up.principal, stepped_up))
            result = await client.call_tool("write_file", {"path": "x"})
            assert result.content[0].text == "reader wrote x"  # type: ignore[union-attr]
        nursery.cancel_scope.cancel()


async def test_without_authentication_scopes_are_not_checked() -> None:
    from trio_mcp.testing import open_memory_client

    async with open_memory_client(make_server(filter_lists_by_scope=True)) as client:
        # No token on the transport (stdio, an HTTP endpoint without auth): no
        # authorization is in effect, so nothing is refused or hidden.
        result = await client.call_tool("write_file", {"path": "x"})
        assert result.content[0].text == "anonymous wrote x"  # type: ignore[union-attr]
        tools = await client.list_tools()
        assert sorted(t.name for t in tools.tools) == ["read_file", "write_file"]
        prompt = await client.get_prompt("commit", {"message": "m"})
        assert prompt.messages


def test_scopes_are_checked_at_registration() -> None:
    server = Server("bad")
    with pytest.raises(TypeError, match="not a string"):
        server.add_tool(lambda: None, name="t", scopes="files:write")
    with pytest.raises(ValueError, match="not an OAuth scope"):
        server.add_tool(lambda: None, name="t", scopes=["has space"])
    with pytest.raises(ValueError, match="not an OAuth scope"):
        server.add_resource("file:///x", lambda: "x", scopes=['quo"te'])
    assert server.required_scopes("tools/call", {"name": "t"}) == frozenset()
    server.add_tool(lambda: None, name="t", scopes=["a", "b", "a"])
    assert server.required_scopes("tools/call", {"name": "t"}) == {"a", "b"}
    assert server.required_scopes("tools/call", {"name": 3}) == frozenset()
    assert server.required_scopes("tools/list", None) == frozenset()
    server.add_resource("file:///a", lambda: "a", scopes=["ra"])
    server.add_resource_template("file:///t/{x}", lambda x: x, scopes=["rt"])
    listen = {"notifications": {"resourceSubscriptions": ["file:///a", "file:///t/1", "file:///z"]}}
    assert server.required_scopes("subscriptions/listen", listen) == {"ra", "rt"}
    assert server.required_scopes("subscriptions/listen", {"notifications": {}}) == frozenset()
    assert server.required_scopes("subscriptions/listen", {"notifications": 3}) == frozenset()
