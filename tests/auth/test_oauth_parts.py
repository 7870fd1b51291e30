"""The OAuth client's parts on their own: the ``WWW-Authenticate`` parser (hostile
input included), discovery URLs and the canonical resource, the 2025-03-26
fallbacks and the metadata ``issuer`` check, token responses, client
authentication, the file token store and the loopback redirect listener."""

from __future__ import annotations

import base64
import os
import stat
from contextlib import aclosing
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import orjson
import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st
from oauth_servers import Receive, Scope, Send, serving

from trio_mcp._errors import AuthorizationFailed
from trio_mcp._oauth._challenge import ChallengeError, bearer_challenge, parse_www_authenticate
from trio_mcp._oauth._client_auth import prepare_token_request
from trio_mcp._oauth._discovery import (
    as_metadata_urls,
    canonical_resource,
    fetch_auth_server,
    fetch_legacy_auth_server,
    fetch_protected_resource,
    prm_urls,
    resource_allowed,
)
from trio_mcp._oauth._redirect import LoopbackRedirect
from trio_mcp._oauth._storage import FileTokenStorage
from trio_mcp._oauth._types import ClientInfo, TokenResponse
from trio_mcp.protocol._errors import MCPError

# ---------------------------------------------------------------- challenges


@pytest.mark.spec("AU-05")
def test_bearer_challenge_params() -> None:
    (challenge,) = parse_www_authenticate(
        [
            'Bearer error="insufficient_scope", scope="a b", '
            'resource_metadata="https://x/.well-known/oauth-protected-resource/mcp"'
        ]
    )
    assert challenge.scheme == "bearer"
    assert challenge.get("scope") == "a b"
    assert challenge.get("error") == "insufficient_scope"
    assert challenge.get("resource_metadata") == (
        "https://x/.well-known/oauth-protected-resource/mcp"
    )


def test_several_challenges_token68_escapes_and_empty_elements() -> None:
    found = parse_www_authenticate(
        ['Basic realm="x", , Bearer scope=read, error="a\\"b"', "Negotiate abc==", "Bearer"]
    )
    assert [c.scheme for c in found] == ["basic", "bearer", "negotiate", "bearer"]
    assert found[1].params == {"scope": "read", "error": 'a"b'}
    assert found[2].token68 == "abc=="
    chosen = bearer_challenge(['Basic realm="x", Bearer scope=read'])
    assert chosen is not None
    assert chosen.params == {"scope": "read"}


@pytest.mark.parametrize(
    "header",
    [
        'Bearer a="unterminated',
        "Bearer =x",
        "Bearer a=b c",
        "Bearer a=1, a=2",
        '"Bearer"',
        'Bearer a="\\',
        "Bearer a=\x00",
        "B\x00",
        "Bearer " + "a=b, " * 3000,
    ],
)
def test_malformed_headers_are_a_clear_error(header: str) -> None:
    with pytest.raises(ChallengeError) as caught:
        parse_www_authenticate([header])
    assert isinstance(caught.value, MCPError)
    assert "WWW-Authenticate" in str(caught.value)
    # A bad header is no challenge: discovery goes on with the well-known URLs.
    assert bearer_challenge([header]) is None


@given(st.text(max_size=300))
def test_any_header_parses_or_is_a_challenge_error(header: str) -> None:
    try:
        challenges = parse_www_authenticate([header])
    except ChallengeError:
        return
    for challenge in challenges:
        assert challenge.scheme == challenge.scheme.lower()


@given(
    st.dictionaries(
        st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
        st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20),
        max_size=5,
    )
)
def test_quoted_params_round_trip(params: dict[str, str]) -> None:
    quoted = ", ".join(
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in params.items()
    )
    (challenge,) = parse_www_authenticate([f"Bearer {quoted}".rstrip()])
    assert challenge.params == params


# ----------------------------------------------------------------- discovery


@pytest.mark.spec("AU-04")
def test_prm_urls_in_order() -> None:
    assert prm_urls("https://mcp.example/a/mcp", "https://mcp.example/meta") == [
        "https://mcp.example/meta",
        "https://mcp.example/.well-known/oauth-protected-resource/a/mcp",
        "https://mcp.example/.well-known/oauth-protected-resource",
    ]
    assert prm_urls("https://mcp.example/", None) == [
        "https://mcp.example/.well-known/oauth-protected-resource"
    ]


@pytest.mark.spec("AU-06")
def test_as_metadata_urls_in_order() -> None:
    assert as_metadata_urls("https://as.example/tenant/1") == [
        "https://as.example/.well-known/oauth-authorization-server/tenant/1",
        "https://as.example/.well-known/openid-configuration/tenant/1",
        "https://as.example/tenant/1/.well-known/openid-configuration",
    ]
    assert as_metadata_urls("https://as.example") == [
        "https://as.example/.well-known/oauth-authorization-server",
        "https://as.example/.well-known/openid-configuration",
    ]


@pytest.mark.spec("AU-08")
def test_canonical_resource_and_what_a_prm_may_claim() -> None:
    assert canonical_resource("HTTPS://MCP.Example:443/mcp/#frag") == "https://mcp.example/mcp"
    assert canonical_resource("http://127.0.0.1:8080/mcp?x=1") == "http://127.0.0.1:8080/mcp"
    assert resource_allowed("https://mcp.example/mcp", "https://mcp.example")
    assert resource_allowed("https://mcp.example/a/mcp", "https://mcp.example/a")
    assert not resource_allowed("https://mcp.example/mcp", "https://mcp.example/other")
    assert not resource_allowed("https://mcp.example/mcpx", "https://mcp.example/mcp")
    assert not resource_allowed("https://mcp.example/mcp", "https://evil.example/mcp")
    assert not resource_allowed("https://mcp.example/mcp", "http://mcp.example/mcp")


class Documents:
    """An ASGI app answering fixed JSON documents by path (404 otherwise)."""

    def __init__(self) -> None:
        self.docs: dict[str, Any] = {}
        self.paths: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        self.paths.append(scope["path"])
        doc = self.docs.get(scope["path"])
        body = doc if isinstance(doc, bytes) else orjson.dumps(doc)
        await send(
            {
                "type": "http.response.start",
                "status": 404 if doc is None else 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})


@pytest.mark.spec("AU-02")
async def test_2025_03_26_fallbacks() -> None:
    docs = Documents()
    async with serving(docs) as base, httpx.AsyncClient() as http:
        assert await fetch_protected_resource(http, base + "/mcp", None) is None
        fallback = await fetch_legacy_auth_server(http, base + "/mcp")
        assert fallback.fallback
        assert (fallback.authorization_endpoint, fallback.token_endpoint) == (
            base + "/authorize",
            base + "/token",
        )
        assert fallback.registration_endpoint == base + "/register"
        # Metadata at the origin (the path discarded), its issuer on the origin.
        docs.docs["/.well-known/oauth-authorization-server"] = {
            "issuer": base + "/oauth",
            "authorization_endpoint": base + "/oauth/authorize",
            "token_endpoint": base + "/oauth/token",
            "code_challenge_methods_supported": ["S256"],
        }
        legacy = await fetch_legacy_auth_server(http, base + "/deep/mcp")
        assert legacy.issuer == base + "/oauth"
        assert legacy.token_endpoint == base + "/oauth/token"
        assert not legacy.fallback
        docs.docs["/.well-known/oauth-authorization-server"]["issuer"] = "https://evil.example"
        with pytest.raises(AuthorizationFailed, match="not on"):
            await fetch_legacy_auth_server(http, base + "/mcp")


@pytest.mark.spec("AU-06")
async def test_metadata_naming_another_issuer_is_refused() -> None:
    docs = Documents()
    async with serving(docs) as base, httpx.AsyncClient() as http:
        docs.docs["/.well-known/oauth-authorization-server"] = {
            "issuer": "https://attacker.example",
            "token_endpoint": base + "/token",
        }
        with pytest.raises(AuthorizationFailed, match="RFC 8414"):
            await fetch_auth_server(http, base)
        docs.docs["/.well-known/oauth-authorization-server"] = b"[1, 2]"
        with pytest.raises(AuthorizationFailed, match="not a JSON object"):
            await fetch_auth_server(http, base)
        docs.docs["/.well-known/oauth-authorization-server"] = b"not json"
        with pytest.raises(AuthorizationFailed, match="not JSON"):
            await fetch_auth_server(http, base)
        del docs.docs["/.well-known/oauth-authorization-server"]
        with pytest.raises(AuthorizationFailed, match="no authorization server metadata"):
            await fetch_auth_server(http, base)
        # A PRM without authorization servers is refused, one for another resource too.
        docs.docs["/.well-known/oauth-protected-resource/mcp"] = {"resource": base + "/mcp"}
        with pytest.raises(AuthorizationFailed, match="no authorization_servers"):
            await fetch_protected_resource(http, base + "/mcp", None)
        docs.docs["/.well-known/oauth-protected-resource/mcp"] = {
            "resource": "https://evil.example/mcp",
            "authorization_servers": [base],
        }
        with pytest.raises(AuthorizationFailed, match="refusing to authorize"):
            await fetch_protected_resource(http, base + "/mcp", None)
        with pytest.raises(AuthorizationFailed, match="refused to fetch"):
            await fetch_protected_resource(http, base + "/mcp", "file:///etc/passwd")


# ----------------------------------------------------- tokens and client auth


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"token_type": "Bearer"},
        {"access_token": ""},
        {"access_token": 5},
        {"access_token": "t", "token_type": 3},
    ],
)
def test_token_responses_that_are_not_are_refused(body: Any) -> None:
    with pytest.raises(AuthorizationFailed):
        TokenResponse.from_json(body)


def test_token_response_fields() -> None:
    tokens = TokenResponse.from_json(
        {"access_token": "acc-123", "expires_in": 60, "refresh_token": "ref-456", "scope": "a"},
        issuer="https://as",
        now=1000.0,
    )
    assert (tokens.expires_at, tokens.refresh_token, tokens.scope) == (1060.0, "ref-456", "a")
    assert not tokens.expired(now=1000.0)
    assert tokens.expired(now=1031.0)
    assert "acc-123" not in repr(tokens)
    assert "ref-456" not in repr(tokens)


@pytest.mark.spec("AU-14")
def test_client_authentication_methods() -> None:
    form = {"grant_type": "authorization_code", "code": "c"}
    headers, body = prepare_token_request("id", "sec", "client_secret_basic", form)
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"id:sec").decode()
    assert "client_secret" not in body
    headers, body = prepare_token_request("id", "sec", "client_secret_post", form)
    assert "Authorization" not in headers
    assert parse_qs(body)["client_secret"] == ["sec"]
    headers, body = prepare_token_request("id", None, "none", form)
    assert parse_qs(body) == {
        "grant_type": ["authorization_code"],
        "code": ["c"],
        "client_id": ["id"],
    }
    with pytest.raises(AuthorizationFailed, match="needs a client secret"):
        prepare_token_request("id", None, "client_secret_basic", form)
    with pytest.raises(AuthorizationFailed, match="not supported"):
        prepare_token_request("id", "sec", "tls_client_auth", form)


# ------------------------------------------------------------------- storage


@pytest.mark.spec("AU-14")
async def test_file_storage_is_private_atomic_and_keyed(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "tokens.json"
    store = FileTokenStorage(path)
    assert await store.get_tokens("https://mcp/mcp") is None
    tokens = TokenResponse("acc", refresh_token="ref", issuer="https://as")
    await store.set_tokens("https://mcp/mcp", tokens)
    await store.set_client(
        "https://as", ClientInfo("cid", "sec", "client_secret_basic", "https://as")
    )
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sorted(os.listdir(path.parent)) == ["tokens.json"]  # no temporary left behind
    again = FileTokenStorage(path)
    assert await again.get_tokens("https://mcp/mcp") == tokens
    assert await again.get_client("https://as") == ClientInfo(
        "cid", "sec", "client_secret_basic", "https://as"
    )
    assert await again.get_client("https://other-as") is None
    await again.set_tokens("https://mcp/mcp", None)
    assert await store.get_tokens("https://mcp/mcp") is None
    path.write_text("{not json")
    assert await store.get_tokens("https://mcp/mcp") is None
    path.write_text('{"tokens": {"https://mcp/mcp": {"bogus": 1}}, "clients": []}')
    assert await store.get_tokens("https://mcp/mcp") is None
    assert await store.get_client("https://as") is None


# ------------------------------------------------------------------ loopback


async def test_loopback_redirect_returns_the_callback() -> None:
    shown: list[str] = []
    async with LoopbackRedirect(show=shown.append) as redirect:
        uri = redirect.redirect_uri
        assert uri.startswith("http://127.0.0.1:")
        assert uri.endswith("/callback")
        async with trio.open_nursery() as nursery:

            async def browser() -> None:
                await trio.testing.wait_all_tasks_blocked()
                async with httpx.AsyncClient() as http:
                    stray = await http.get(uri.replace("/callback", "/favicon.ico"))
                    assert stray.status_code == 404
                    page = await http.get(uri + "?code=abc&state=xyz")
                    assert page.status_code == 200

            nursery.start_soon(browser)
            answered = await redirect.authorize("https://as.example/authorize?x=1")
        assert shown == ["https://as.example/authorize?x=1"]
        assert answered == uri + "?code=abc&state=xyz"


async def test_loopback_redirect_times_out(autojump_clock: trio.abc.Clock) -> None:
    async with LoopbackRedirect(timeout=5, show=lambda url: None) as redirect:
        with pytest.raises(AuthorizationFailed, match="within 5s"):
            await redirect.authorize("https://as.example/authorize")
        with pytest.raises(AuthorizationFailed, match="non-HTTP"):
            await redirect.authorize("javascript:alert(1)")


@pytest.mark.spec("SEC-10")
@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://as.example/authorize", True),
        ("http://localhost:3000/authorize", True),
        ("http://127.0.0.1/authorize", True),
        ("http://as.example/authorize", False),
        ("javascript:alert(1)", False),
        ("file:///etc/passwd", False),
        ("data:text/html,hi", False),
    ],
)
def test_only_https_or_loopback_authorization_endpoints(url: str, allowed: bool) -> None:
    from trio_mcp._oauth._code import check_endpoint

    if allowed:
        check_endpoint(url)
    else:
        with pytest.raises(AuthorizationFailed, match="not HTTPS"):
            check_endpoint(url)


class RecordingSigner:
    """A DPoPSigner that records what it is asked to sign (the DPoP
    extension's signer plugs in here; this one checks the hook's calls)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str | None]] = []
        self.nonce: str | None = None

    def headers_for(self, method: str, url: str, access_token: str | None = None) -> dict[str, str]:
        self.calls.append((method, url, access_token))
        return {"DPoP": f"proof-{len(self.calls)}-{self.nonce}"}

    def update_nonce(self, url: str, response: httpx.Response) -> bool:
        nonce = response.headers.get("dpop-nonce")
        changed = nonce is not None and nonce != self.nonce
        self.nonce = nonce
        return changed


async def test_the_dpop_hook_signs_requests_and_retries_with_the_server_s_nonce() -> None:
    from trio_mcp.auth import HeadlessRedirect, MemoryTokenStorage, OAuthProvider

    storage = MemoryTokenStorage()
    url = "https://mcp.example/mcp"
    await storage.set_tokens(url, TokenResponse("tok", token_type="DPoP", issuer="https://as"))
    signer = RecordingSigner()
    auth = OAuthProvider(url, redirect=HeadlessRedirect(), storage=storage, dpop=signer)
    request = httpx.Request("POST", url + "?x=1")
    flow = auth.async_auth_flow(request)
    sent = await flow.__anext__()
    assert sent.headers["Authorization"] == "DPoP tok"
    assert sent.headers["DPoP"] == "proof-1-None"
    challenge = httpx.Response(
        401,
        headers={"www-authenticate": 'DPoP error="use_dpop_nonce"', "dpop-nonce": "n-1"},
        request=request,
    )
    again = await flow.asend(challenge)
    assert again.headers["DPoP"] == "proof-2-n-1"
    assert signer.calls == [("POST", url, "tok"), ("POST", url, "tok")]
    with pytest.raises(StopAsyncIteration):
        await flow.asend(httpx.Response(200, request=request))
    # A Bearer token is sent as Bearer, unsigned.
    await storage.set_tokens(url, TokenResponse("plain", issuer="https://as"))
    bearer = OAuthProvider(url, redirect=HeadlessRedirect(), storage=storage, dpop=signer)
    async with aclosing(bearer.async_auth_flow(httpx.Request("GET", url))) as second:
        plain = await second.__anext__()
    assert plain.headers["Authorization"] == "Bearer plain"
    assert "DPoP" not in plain.headers
