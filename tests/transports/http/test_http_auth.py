"""The Streamable HTTP endpoint as an OAuth 2.1 protected resource (issue #15).

``http_app(server, auth=ResourceServer(...))``: the RFC 9728 metadata at both
well-known URLs, the 401/403/503 challenges (AU-01, AU-02, AU-12), no token
from the query string (AU-09), and the token's principal binding sessions,
tasks and what a tool sees (``ctx.auth``), over real loopback HTTP.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
import trio
from http_helpers import ACCEPT_BOTH, init_body, post_headers, raw_client, running, sse_messages

from trio_mcp import Context, Server
from trio_mcp.auth import (
    AccessToken,
    InsufficientScope,
    ResourceServer,
    StaticTokenVerifier,
    VerifierUnavailable,
)
from trio_mcp.lowlevel import Identity
from trio_mcp.protocol._headers import request_headers
from trio_mcp.transports._http.server._app import StreamableHTTPApp
from trio_mcp.transports._http.server._transport import HttpServerTransport

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
EXT = "io.modelcontextprotocol/tasks"
ISSUER = "https://auth.example"
RESOURCE = "https://mcp.example/mcp"
METADATA_URL = "https://mcp.example/.well-known/oauth-protected-resource/mcp"

ALICE = AccessToken(
    subject="alice", client_id="app", scopes=frozenset({"mcp:tools", "extra"}), issuer=ISSUER
)
BOB = AccessToken(subject="bob", client_id="app", scopes=frozenset({"mcp:tools"}), issuer=ISSUER)
CAROL = AccessToken(subject="carol", scopes=frozenset({"other"}), issuer=ISSUER)
TOKENS = {"alice-token": ALICE, "bob-token": BOB, "carol-token": CAROL}


class DownVerifier:
    """A verifier whose backend is unreachable (the JWKS or introspection down)."""

    async def verify(self, token: str) -> AccessToken:
        await trio.lowlevel.checkpoint()
        raise VerifierUnavailable("introspection endpoint unreachable")


def resource_server(verifier: Any = None) -> ResourceServer:
    return ResourceServer(
        verifier if verifier is not None else StaticTokenVerifier(TOKENS),
        resource=RESOURCE,
        authorization_servers=[ISSUER],
        scopes_supported=["mcp:tools", "extra"],
        required_scopes=["mcp:tools"],
        resource_name="Test MCP",
    )


def make_server() -> Server:
    server = Server("auth-test")

    @server.tool()
    async def whoami(ctx: Context) -> str:
        auth = ctx.auth
        assert auth is not None
        return f"{auth.subject} {' '.join(sorted(auth.scopes))}"

    never = trio.Event()

    @server.tool()
    async def confirm(ctx: Context) -> str:
        answer = await ctx.elicit(
            {
                "mode": "form",
                "message": "Sure?",
                "requestedSchema": {"type": "object", "properties": {}},
            }
        )
        return answer.action

    @server.tool(task_support="optional")
    async def job() -> str:
        await never.wait()  # runs until cancelled
        return "never"

    return server


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def rpc(
    http: httpx.AsyncClient,
    method: str,
    params: dict[str, Any],
    headers: dict[str, str],
    *,
    url: str = "/mcp",
    capabilities: dict[str, Any] | None = None,
) -> httpx.Response:
    """One 2026-07-28 request declaring the tasks extension (and *capabilities*)."""
    params = {
        **params,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {
                "extensions": {EXT: {}},
                **(capabilities or {}),
            },
        },
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    all_headers = {
        "accept": ACCEPT_BOTH,
        "content-type": "application/json",
        **request_headers(method, params),
        **headers,
    }
    return await http.post(url, content=orjson.dumps(body), headers=all_headers)


def message_of(response: httpx.Response) -> dict[str, Any]:
    if response.headers["content-type"].startswith("text/event-stream"):
        [message] = sse_messages(response.text)
    else:
        message = response.json()
    frame: dict[str, Any] = message
    return frame


def call(name: str) -> tuple[str, dict[str, Any]]:
    return "tools/call", {"name": name, "arguments": {}}


async def test_metadata_is_served_at_both_well_known_urls_without_a_token() -> None:
    async with running(make_server(), auth=resource_server()) as (url, _), raw_client(url) as http:
        for path in (
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
        ):
            response = await http.get(path)
            assert response.status_code == 200
            assert response.headers["content-type"] == "application/json"
            assert response.json() == {
                "resource": RESOURCE,
                "authorization_servers": [ISSUER],
                "scopes_supported": ["mcp:tools", "extra"],
                "bearer_methods_supported": ["header"],
                "resource_name": "Test MCP",
            }


async def test_no_token_gets_401_with_the_challenge() -> None:
    async with running(make_server(), auth=resource_server()) as (url, _), raw_client(url) as http:
        response = await rpc(http, *call("whoami"), {})
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == (
            f'Bearer scope="mcp:tools", resource_metadata="{METADATA_URL}"'
        )
        # Another scheme is no bearer token either.
        basic = await rpc(http, *call("whoami"), {"authorization": "Basic YWxpY2U6cHc="})
        assert basic.status_code == 401
        assert "error=" not in basic.headers["www-authenticate"]


async def test_a_bad_token_gets_401_invalid_token() -> None:
    async with running(make_server(), auth=resource_server()) as (url, _), raw_client(url) as http:
        for token in ("nobody-token", "not a b64token!"):
            response = await rpc(http, *call("whoami"), bearer(token))
            assert response.status_code == 401
            assert response.headers["www-authenticate"] == (
                f'Bearer error="invalid_token", scope="mcp:tools", '
                f'resource_metadata="{METADATA_URL}"'
            )
            assert token not in response.text
        twice = await http.post(
            "/mcp",
            content=b"{}",
            headers=[
                ("content-type", "application/json"),
                ("authorization", "Bearer alice-token"),
                ("authorization", "Bearer bob-token"),
            ],
        )
        assert twice.status_code == 400
        assert 'error="invalid_request"' in twice.headers["www-authenticate"]


async def test_a_good_token_reaches_the_tool_as_ctx_auth() -> None:
    async with running(make_server(), auth=resource_server()) as (url, _), raw_client(url) as http:
        # The scheme is case-insensitive (RFC 7235 §2.1).
        response = await rpc(http, *call("whoami"), {"authorization": "bearer alice-token"})
        assert response.status_code == 200
        result = message_of(response)["result"]
        assert result["content"] == [{"type": "text", "text": "alice extra mcp:tools"}]


async def test_a_missing_scope_gets_403_insufficient_scope() -> None:
    async with running(make_server(), auth=resource_server()) as (url, _), raw_client(url) as http:
        response = await rpc(http, *call("whoami"), bearer("carol-token"))
        assert response.status_code == 403
        assert response.headers["www-authenticate"] == (
            f'Bearer error="insufficient_scope", scope="mcp:tools", '
            f'resource_metadata="{METADATA_URL}"'
        )


class ScopedVerifier:
    """A verifier with required scopes of its own (as JWTVerifier(required_scopes=...)):
    a valid token without them is InsufficientScope."""

    async def verify(self, token: str) -> AccessToken:
        await trio.lowlevel.checkpoint()
        raise InsufficientScope({"admin"})


async def test_a_verifier_s_insufficient_scope_is_403_naming_its_scopes() -> None:
    auth = resource_server(ScopedVerifier())
    async with running(make_server(), auth=auth) as (url, _), raw_client(url) as http:
        response = await rpc(http, *call("whoami"), bearer("alice-token"))
        assert response.status_code == 403
        assert response.headers["www-authenticate"] == (
            f'Bearer error="insufficient_scope", scope="admin", resource_metadata="{METADATA_URL}"'
        )


async def test_a_token_in_the_query_string_is_not_accepted() -> None:
    async with running(make_server(), auth=resource_server()) as (url, _), raw_client(url) as http:
        response = await rpc(http, *call("whoami"), {}, url="/mcp?access_token=alice-token")
        assert response.status_code == 401
        assert "error=" not in response.headers["www-authenticate"]


async def test_an_unavailable_verifier_gets_503() -> None:
    auth = resource_server(DownVerifier())
    async with running(make_server(), auth=auth) as (url, _), raw_client(url) as http:
        response = await rpc(http, *call("whoami"), bearer("alice-token"))
        assert response.status_code == 503
        assert "www-authenticate" not in response.headers


async def test_the_legacy_sse_endpoint_needs_a_token_too() -> None:
    async with running(make_server(), auth=resource_server()) as (url, _), raw_client(url) as http:
        response = await http.get("/sse", headers={"accept": "text/event-stream"})
        assert response.status_code == 401
        posted = await http.post(
            "/messages/?session_id=x", content=b"{}", headers={"content-type": "application/json"}
        )
        assert posted.status_code == 401


async def test_a_session_is_its_token_s_principal_s_alone() -> None:
    async with running(make_server(), auth=resource_server()) as (url, _), raw_client(url) as http:
        first = init_body(version=HANDSHAKE)
        alice = post_headers(**bearer("alice-token"))
        opened = await http.post("/mcp", content=first, headers=alice)
        assert opened.status_code == 200
        sid = opened.headers["mcp-session-id"]
        note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        version = {"mcp-protocol-version": HANDSHAKE}
        stolen = await http.post(
            "/mcp", content=note, headers=post_headers(sid, **version, **bearer("bob-token"))
        )
        assert stolen.status_code == 404
        mine = await http.post(
            "/mcp", content=note, headers=post_headers(sid, **version, **bearer("alice-token"))
        )
        assert mine.status_code == 202
        called = orjson.dumps(
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami"}}
        )
        response = await http.post(
            "/mcp", content=called, headers=post_headers(sid, **version, **bearer("alice-token"))
        )
        [answer] = sse_messages(response.text)
        assert answer["result"]["content"][0]["text"] == "alice extra mcp:tools"


@pytest.mark.spec("TK-18")
async def test_a_task_is_its_token_s_principal_s_alone() -> None:
    server = make_server()
    async with running(server, auth=resource_server()) as (url, _), raw_client(url) as http:
        created = message_of(await rpc(http, *call("job"), bearer("alice-token")))
        task_id = created["result"]["taskId"]
        refused = message_of(await rpc(http, "tasks/get", {"taskId": task_id}, bearer("bob-token")))
        assert refused["error"]["code"] == -32602
        mine = message_of(await rpc(http, "tasks/get", {"taskId": task_id}, bearer("alice-token")))
        assert mine["result"]["status"] == "working"
        assert await server.tasks.store.get(task_id, ALICE.principal) is not None
        cancelled = await rpc(http, "tasks/cancel", {"taskId": task_id}, bearer("alice-token"))
        assert "result" in message_of(cancelled)


@pytest.mark.spec("PT-09")
async def test_a_request_state_is_its_token_s_principal_s_alone() -> None:
    capabilities: dict[str, Any] = {"elicitation": {"form": {}}}
    async with running(make_server(), auth=resource_server()) as (url, _), raw_client(url) as http:
        first = await rpc(http, *call("confirm"), bearer("alice-token"), capabilities=capabilities)
        result = message_of(first)["result"]
        assert result["resultType"] == "input_required"
        (key,) = result["inputRequests"]
        retry = {
            "name": "confirm",
            "arguments": {},
            "inputResponses": {key: {"action": "accept", "content": {}}},
            "requestState": result["requestState"],
        }
        stolen = await rpc(
            http, "tools/call", retry, bearer("bob-token"), capabilities=capabilities
        )
        assert message_of(stolen)["error"]["code"] == -32602
        mine = await rpc(
            http, "tools/call", retry, bearer("alice-token"), capabilities=capabilities
        )
        assert message_of(mine)["result"]["content"] == [{"type": "text", "text": "accept"}]


def test_auth_and_principal_of_do_not_go_together() -> None:
    async def handler(transport: HttpServerTransport, *, identity: Identity) -> None:
        await trio.lowlevel.checkpoint()

    with pytest.raises(ValueError, match="principal_of"):
        StreamableHTTPApp(handler, auth=resource_server(), principal_of=lambda scope: None)


def test_well_known_paths_follow_the_resource_path() -> None:
    verifier = StaticTokenVerifier({})
    root = ResourceServer(verifier, resource="https://h.example", authorization_servers=[ISSUER])
    assert root.well_known_paths() == ("/.well-known/oauth-protected-resource",)
    assert root.metadata_url == "https://h.example/.well-known/oauth-protected-resource"
    deep = ResourceServer(verifier, resource="https://h.example/a/mcp/", authorization_servers=[""])
    assert deep.well_known_paths()[1] == "/.well-known/oauth-protected-resource/a/mcp"
    with pytest.raises(ValueError, match="absolute"):
        ResourceServer(verifier, resource="/mcp", authorization_servers=[ISSUER])
