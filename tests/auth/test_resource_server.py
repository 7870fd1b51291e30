"""Our Streamable HTTP app as an OAuth 2.1 resource server, against a real local
authorization server (``auth_servers.AuthorizationServer``: its JWKS, its
introspection endpoint, the JWT access tokens it signs), every case through the
real HTTP app on loopback, never the verifier alone.

Cases (issue #15, acceptance): a good token, wrong audience, wrong issuer,
expired (the verifiers' clock, moved by the test: no real time passes), an
unknown ``kid`` after a key rotation (the JWKS is refetched), a missing scope
(403 step-up naming the scope), a revoked token through introspection (the
cache is honoured, then the token is refused once its entry expired), and a
token presented to another resource (RFC 8707: issued for server A, refused by
server B although both trust the same authorization server).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
import pytest
from auth_servers import (
    AuthorizationServer,
    bound_socket,
    running_auth_server,
    serve_on_bound_socket,
)
from joserfc.jwk import RSAKey

from trio_mcp import Context, Server, http_app, open_http_client
from trio_mcp.auth import IntrospectionVerifier, JWTVerifier, ResourceServer, TokenVerifier

NOW = 1_900_000_000.0


class Clock:
    """Seconds since the epoch, moved by the test (the verifiers' and the AS's)."""

    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_server() -> Server:
    server = Server("rs-suite")

    @server.tool()
    async def whoami(ctx: Context) -> str:
        assert ctx.auth is not None
        return f"{ctx.auth.subject} {' '.join(sorted(ctx.auth.scopes))}"

    @server.tool(scopes=["files:write"])
    async def write(ctx: Context) -> str:
        return "written"

    return server


@asynccontextmanager
async def authorization_server(clock: Clock) -> AsyncIterator[AuthorizationServer]:
    issuer = AuthorizationServer(clock=clock)
    async with running_auth_server(issuer):
        yield issuer


@asynccontextmanager
async def protected(
    make_verifier: Any, *, required_scopes: tuple[str, ...] = ("mcp",)
) -> AsyncIterator[tuple[str, str]]:
    """Our app behind ``ResourceServer(make_verifier(resource))`` on a socket
    bound first (its canonical URI names the port): yield (MCP URL, resource)."""
    sock, base = bound_socket()
    resource = base + "/mcp"
    verifier: TokenVerifier = make_verifier(resource)
    auth = ResourceServer(
        verifier,
        resource=resource,
        authorization_servers=["http://as.invalid"],
        required_scopes=required_scopes,
    )
    async with serve_on_bound_socket(http_app(make_server(), auth=auth), sock):
        yield resource, resource


def jwt_verifier(issuer: AuthorizationServer, clock: Clock, **options: Any) -> Any:
    def make(resource: str) -> JWTVerifier:
        return JWTVerifier(
            issuer.issuer + "/jwks",
            issuer=issuer.issuer,
            audience=resource,
            clock=clock,
            leeway=30,
            **options,
        )

    return make


async def call(url: str, token: str, tool: str = "whoami") -> httpx.Response:
    """A 2026-07-28 ``tools/call`` over raw HTTP."""
    params = {
        "name": tool,
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": tool,
        "authorization": f"Bearer {token}",
    }
    async with httpx.AsyncClient(timeout=10) as http:
        return await http.post(url, content=orjson.dumps(body), headers=headers)


def text_of(response: httpx.Response) -> str:
    assert response.status_code == 200, (response.status_code, response.text)
    frame = response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        frame = next(line[6:] for line in frame.splitlines() if line.startswith("data: "))
    text: str = orjson.loads(frame)["result"]["content"][0]["text"]
    return text


def invalid_token(response: httpx.Response, resource: str) -> None:
    assert response.status_code == 401, response.text
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer error="invalid_token"')
    metadata = resource.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    assert f'resource_metadata="{metadata}"' in challenge


async def test_a_good_jwt_is_served_through_our_client_with_its_bearer_header() -> None:
    clock = Clock()
    async with (
        authorization_server(clock) as issuer,
        protected(jwt_verifier(issuer, clock)) as (
            url,
            resource,
        ),
    ):
        token = issuer.sign(aud=resource, scope="mcp files:read")
        async with open_http_client(url, headers={"authorization": f"Bearer {token}"}) as client:
            result = await client.call_tool("whoami", {})
        assert result.content[0].text == "user-1 files:read mcp"  # type: ignore[union-attr]
        assert issuer.seen["/jwks"] == 1  # fetched once, then cached


@pytest.mark.spec("AU-10")
async def test_wrong_audience_wrong_issuer_and_expired_jwts_get_401() -> None:
    clock = Clock()
    async with (
        authorization_server(clock) as issuer,
        protected(jwt_verifier(issuer, clock)) as (
            url,
            resource,
        ),
    ):
        good = issuer.sign(aud=resource, scope="mcp")
        assert text_of(await call(url, good)) == "user-1 mcp"
        invalid_token(await call(url, issuer.sign(aud="http://127.0.0.1:1/mcp", scope="mcp")), url)
        invalid_token(await call(url, issuer.sign(aud=resource, iss="http://evil.invalid")), url)
        # Signed by a key the AS does not publish, under the AS's kid.
        forged = AuthorizationServer(
            key=RSAKey.generate_key(2048, parameters={"kid": "as-1", "use": "sig"}),
            issuer=issuer.issuer,
            clock=clock,
        )
        invalid_token(await call(url, forged.sign(aud=resource, scope="mcp")), url)
        # Expiry: within the 30 s leeway still good, past it refused.
        clock.now += issuer.lifetime + 20
        assert text_of(await call(url, good)) == "user-1 mcp"
        clock.now += 20
        invalid_token(await call(url, good), url)


@pytest.mark.spec("AU-10")
async def test_an_unknown_kid_after_a_key_rotation_refetches_the_jwks() -> None:
    clock = Clock()
    async with (
        authorization_server(clock) as issuer,
        protected(jwt_verifier(issuer, clock)) as (
            url,
            resource,
        ),
    ):
        assert text_of(await call(url, issuer.sign(aud=resource, scope="mcp"))) == "user-1 mcp"
        assert issuer.seen["/jwks"] == 1
        # The AS rotates: a new key under a new kid, the JWKS publishes both.
        old = issuer.key
        issuer.key = RSAKey.generate_key(2048, parameters={"kid": "as-2", "use": "sig"})
        issuer.jwks = {"keys": [old.as_dict(private=False), issuer.key.as_dict(private=False)]}
        rotated = issuer.sign(aud=resource, scope="mcp")
        # Unknown kids refetch at most once per min_refetch_interval (30 s).
        invalid_token(await call(url, rotated), url)
        assert issuer.seen["/jwks"] == 1
        clock.now += 31
        assert text_of(await call(url, rotated)) == "user-1 mcp"
        assert issuer.seen["/jwks"] == 2  # one refetch for the unknown kid
        assert text_of(await call(url, rotated)) == "user-1 mcp"
        assert issuer.seen["/jwks"] == 2  # and cached again
        # A kid the AS never published: refused, and no refetch storm.
        stranger = AuthorizationServer(
            key=RSAKey.generate_key(2048, parameters={"kid": "as-9", "use": "sig"}),
            issuer=issuer.issuer,
            clock=clock,
        )
        for _ in range(3):
            invalid_token(await call(url, stranger.sign(aud=resource, scope="mcp")), url)
        assert issuer.seen["/jwks"] == 2  # within min_refetch_interval


@pytest.mark.spec("AU-12")
async def test_a_missing_scope_gets_403_with_the_scope_to_step_up_to() -> None:
    clock = Clock()
    async with (
        authorization_server(clock) as issuer,
        protected(jwt_verifier(issuer, clock)) as (
            url,
            resource,
        ),
    ):
        metadata = resource.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        # The resource's own required scope is missing.
        bare = await call(url, issuer.sign(aud=resource, scope="files:read"))
        assert bare.status_code == 403
        assert bare.headers["www-authenticate"] == (
            f'Bearer error="insufficient_scope", scope="mcp", resource_metadata="{metadata}"'
        )
        # The tool's scope is missing: the challenge names it, with what is held.
        token = issuer.sign(aud=resource, scope="mcp files:read")
        refused = await call(url, token, "write")
        assert refused.status_code == 403
        assert refused.headers["www-authenticate"] == (
            'Bearer error="insufficient_scope", scope="mcp files:read files:write", '
            f'resource_metadata="{metadata}"'
        )
        stepped_up = issuer.sign(aud=resource, scope="mcp files:read files:write")
        assert text_of(await call(url, stepped_up, "write")) == "written"


@pytest.mark.spec("AU-10")
async def test_a_revoked_token_is_served_from_the_cache_then_refused() -> None:
    clock = Clock()
    async with authorization_server(clock) as issuer:

        def make(resource: str) -> IntrospectionVerifier:
            return IntrospectionVerifier(
                issuer.issuer + "/introspect",
                client_id="rs",
                client_secret="rs-secret",
                audience=resource,
                issuer=issuer.issuer,
                cache_seconds=60,
                clock=clock,
            )

        async with protected(make) as (url, resource):
            opaque = "opaque-token-1"
            issuer.tokens[opaque] = {
                "active": True,
                "sub": "user-2",
                "scope": "mcp",
                "aud": [resource],
                "iss": issuer.issuer,
                "exp": int(NOW) + 3600,
            }
            assert text_of(await call(url, opaque)) == "user-2 mcp"
            assert issuer.seen["/introspect"] == 1
            issuer.tokens[opaque] = {"active": False}  # revoked at the AS
            clock.now += 59
            # Still inside its cache entry: the price of the cache, bounded.
            assert text_of(await call(url, opaque)) == "user-2 mcp"
            assert issuer.seen["/introspect"] == 1
            clock.now += 2
            invalid_token(await call(url, opaque), url)
            assert issuer.seen["/introspect"] == 2
            # Refusals are not cached: each asks again.
            invalid_token(await call(url, opaque), url)
            assert issuer.seen["/introspect"] == 3


@pytest.mark.spec("AU-08", "AU-10", "SEC-05")
async def test_a_token_issued_for_another_resource_is_refused() -> None:
    """RFC 8707: the AS scopes a token to the resource the client named; server
    B refuses what was issued for server A, although it trusts the same AS and
    the signature is good (no token passthrough between servers)."""
    clock = Clock()
    async with (
        authorization_server(clock) as issuer,
        protected(jwt_verifier(issuer, clock)) as (url_a, resource_a),
        protected(jwt_verifier(issuer, clock)) as (url_b, resource_b),
    ):
        assert resource_a != resource_b
        for_a = issuer.sign(aud=resource_a, scope="mcp")
        assert text_of(await call(url_a, for_a)) == "user-1 mcp"
        invalid_token(await call(url_b, for_a), url_b)
        # Through introspection too: the answer's aud names A only.
        issuer.tokens["opaque-a"] = {
            "active": True,
            "sub": "user-3",
            "scope": "mcp",
            "aud": resource_a,
            "exp": int(NOW) + 600,
        }

        def introspecting(resource: str) -> IntrospectionVerifier:
            return IntrospectionVerifier(
                issuer.issuer + "/introspect",
                client_id="rs",
                client_secret="rs-secret",
                audience=resource,
                clock=clock,
            )

        async with protected(introspecting) as (url_c, _):
            invalid_token(await call(url_c, "opaque-a"), url_c)
