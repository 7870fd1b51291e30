"""Secrets never reach logs (issue #15): an authorized session, logged at DEBUG
by every logger (ours, httpx, httpcore, hypercorn, the root), leaves no token,
authorization code, client secret or private key material in any record.

The session is as real as it gets today: a client registers with the local
authorization server, is handed a code, redeems it with PKCE for a JWT access
token; our client sends it (``open_http_client(headers=...)``) to our
resource server, which verifies it against the JWKS; a second resource server
verifies an opaque token by introspection, authenticating with its own client
secret; refused tokens (expired, for another audience, unknown) and a step-up
403 are part of it. The scan is ``log_scan``'s, for the OAuth client's flows
to reuse.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import secrets
import urllib.parse
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
    user_agent_get,
)
from log_scan import LogCapture, capture_all_logs, log_capture_fixture  # noqa: F401 (fixture)

from trio_mcp import Context, MCPError, Server, http_app, open_http_client
from trio_mcp.auth import IntrospectionVerifier, JWTVerifier, ResourceServer, TokenVerifier


def make_server() -> Server:
    server = Server("logged")

    @server.tool()
    async def whoami(ctx: Context) -> str:
        assert ctx.auth is not None
        return ctx.auth.subject

    @server.tool(scopes=["files:write"])
    async def write() -> str:
        return "written"

    return server


@asynccontextmanager
async def protected(make_verifier: Any) -> AsyncIterator[str]:
    sock, base = bound_socket()
    resource = base + "/mcp"
    verifier: TokenVerifier = make_verifier(resource)
    auth = ResourceServer(verifier, resource=resource, authorization_servers=["http://as.invalid"])
    async with serve_on_bound_socket(http_app(make_server(), auth=auth), sock):
        yield resource


async def code_flow(issuer: AuthorizationServer, resource: str, capture: LogCapture) -> str:
    """DCR, authorize, token with PKCE, over HTTP: the access token. Every
    secret on the way is registered with *capture*."""
    redirect = "http://127.0.0.1:9/callback"
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    async with httpx.AsyncClient(base_url=issuer.issuer) as http:
        registered = (await http.post("/register", json={"redirect_uris": [redirect]})).json()
        client_id, client_secret = registered["client_id"], registered["client_secret"]
        capture.basic_credentials(client_id, client_secret)
        query = urllib.parse.urlencode(
            {
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": redirect,
                "code_challenge": challenge.rstrip(b"=").decode(),
                "code_challenge_method": "S256",
                "resource": resource,
                "scope": "mcp",
                "state": "st",
            }
        )
        # The user's browser, not the client, follows the authorization URL.
        status, headers = await user_agent_get(f"{issuer.issuer}/authorize?{query}")
        assert status == 302
        location = urllib.parse.urlsplit(headers["location"])
        code = urllib.parse.parse_qs(location.query)["code"][0]
        capture.secret("code", code)
        capture.secret("PKCE verifier", verifier)
        answer = await http.post(
            "/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect,
                "code_verifier": verifier,
                "resource": resource,
            },
            auth=(client_id, client_secret),
        )
    token: str = answer.json()["access_token"]
    capture.secret("token", token)
    return token


async def raw_call(url: str, token: str, tool: str = "whoami") -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "authorization": f"Bearer {token}",
    }
    async with httpx.AsyncClient() as http:
        return await http.post(url, content=orjson.dumps(body), headers=headers)


async def test_an_authorized_session_logs_no_secret(log_capture: LogCapture) -> None:
    capture = log_capture
    issuer = AuthorizationServer()
    rs_secret = secrets.token_urlsafe(24)
    issuer.client = ("rs-introspector", rs_secret)
    capture.basic_credentials(*issuer.client)
    capture.private_key(issuer.key.as_dict(private=True))
    capture.secret("private key", issuer.key.as_pem(private=True).decode())
    async with running_auth_server(issuer):

        def jwt(resource: str) -> JWTVerifier:
            return JWTVerifier(issuer.issuer + "/jwks", issuer=issuer.issuer, audience=resource)

        def introspection(resource: str) -> IntrospectionVerifier:
            return IntrospectionVerifier(
                issuer.issuer + "/introspect",
                client_id=issuer.client[0],
                client_secret=rs_secret,
                audience=resource,
            )

        async with protected(jwt) as url, protected(introspection) as url2:
            token = await code_flow(issuer, url, capture)
            async with open_http_client(url, headers={"authorization": f"Bearer {token}"}) as c:
                assert (await c.call_tool("whoami", {})).content[0].text == "user-1"  # type: ignore[union-attr]
                with pytest.raises(MCPError):
                    await c.call_tool("write", {})  # 403: the step-up challenge
            # Refused tokens take the logged refusal paths.
            expired = issuer.sign(aud=url, exp=1)
            elsewhere = issuer.sign(aud=url2)
            capture.secret("token", expired, elsewhere, "x" * 20 + token[-12:])
            for refused in (expired, elsewhere, "x" * 20 + token[-12:]):
                assert (await raw_call(url, refused)).status_code == 401
            # Opaque tokens through introspection (with the RS's client secret).
            opaque = secrets.token_urlsafe(32)
            capture.secret("token", opaque)
            issuer.tokens[opaque] = {"active": True, "sub": "user-2", "aud": url2}
            async with open_http_client(url2, headers={"authorization": f"Bearer {opaque}"}) as c:
                assert (await c.call_tool("whoami", {})).content[0].text == "user-2"  # type: ignore[union-attr]
            revoked = secrets.token_urlsafe(32)
            capture.secret("token", revoked)
            assert (await raw_call(url2, revoked)).status_code == 401
    # Everything the AS handed out is among what is scanned for.
    for value in issuer.issued:
        capture.secret("issued by the AS", value)
    heard = capture.names()
    assert {"httpx", "trio_mcp.auth"} <= heard, heard
    assert any(name.startswith("httpcore") for name in heard), heard
    assert capture.leaks() == []


def test_the_scan_finds_a_secret_in_any_part_of_a_record() -> None:
    """The scan can fail: a secret in the message, the args, an exception or
    URL-encoded is reported (by kind and logger, never the secret itself)."""
    secret = "s3cr3t/value+with=chars"
    log = logging.getLogger("trio_mcp.test_leak")
    cases: list[tuple[str, Any]] = [
        ("message", lambda: log.debug("token is " + secret)),
        ("args", lambda: log.debug("token is %s", secret)),
        ("quoted", lambda: log.info("url ?t=%s", urllib.parse.quote(secret, safe=""))),
        ("exception", lambda: _log_failure(log, secret)),
        ("extra", lambda: log.warning("x", extra={"authorization": secret})),
        ("httpx", lambda: logging.getLogger("httpx").debug("h %r", {"a": f"Bearer {secret}"})),
    ]
    for label, emit in cases:
        with capture_all_logs() as capture:
            capture.secret("token", secret)
            emit()
        leaks = capture.leaks()
        assert len(leaks) == 1, (label, leaks)
        assert leaks[0].startswith("token in ")
        assert secret not in leaks[0]
    with capture_all_logs() as capture:
        capture.basic_credentials("client", "client-secret-1")
        logging.getLogger("httpcore.http11").debug(
            "headers %r",
            [(b"authorization", b"Basic " + base64.b64encode(b"client:client-secret-1"))],
        )
    assert capture.leaks() == ["client secret in httpcore.http11 record: 'headers %r'"]


def _log_failure(log: logging.Logger, secret: str) -> None:
    try:
        raise ValueError(f"bad token {secret}")
    except ValueError:
        log.exception("verification failed")
