"""The official Python SDK 2.x client (``mcp``, in a subprocess: it is
asyncio-based) completes the OAuth flow against our resource server over HTTP.

The chain is the real one: a 401 from our app names the protected resource
metadata; the SDK reads it, then the authorization server's RFC 8414 metadata
(``auth_servers.AuthorizationServer``, path-aware issuer), registers itself
(RFC 7591), sends the user to the authorization endpoint (the script's
redirect handler follows the AS's 302 headlessly and hands back the code),
redeems the code with its PKCE verifier and the RFC 8707 ``resource``, and
calls tools with the bearer token, which our :class:`JWTVerifier` checks
against the AS's JWKS. A tool with ``scopes=["files:write"]`` answers 403
``insufficient_scope``: the SDK steps up (a second authorization) and the call
goes through.

The AS is checked to be real enough on its own too: PKCE S256 verified, a code
single-use (also after a failed redemption), bound to its redirect URI.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import sys
import textwrap
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import trio
from auth_servers import (
    AuthorizationServer,
    bound_socket,
    running_auth_server,
    serve_on_bound_socket,
)

from trio_mcp import Context, Server, http_app
from trio_mcp.auth import JWTVerifier, ResourceServer

SDK_OAUTH_CLIENT = textwrap.dedent(
    """
    import asyncio, json, sys, urllib.parse

    import httpx2
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider, TokenStorage
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    class Memory(TokenStorage):
        def __init__(self):
            self.tokens = None
            self.client_info = None
        async def get_tokens(self):
            return self.tokens
        async def set_tokens(self, tokens):
            self.tokens = tokens
        async def get_client_info(self):
            return self.client_info
        async def set_client_info(self, client_info):
            self.client_info = client_info

    async def main(url, mode):
        codes = asyncio.Queue()
        visits = []

        async def redirect_handler(authorization_url):
            # Headless "browser": the AS approves at once and redirects.
            async with httpx2.AsyncClient() as http:
                answer = await http.get(authorization_url)
            assert answer.status_code == 302, answer.status_code
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(answer.headers["location"]).query)
            visits.append(sorted(urllib.parse.parse_qs(urllib.parse.urlsplit(authorization_url).query)))
            await codes.put(AuthorizationCodeResult(
                code=query["code"][0], state=query["state"][0], iss=query["iss"][0]))

        async def callback_handler():
            return await codes.get()

        provider = OAuthClientProvider(
            server_url=url,
            client_metadata=OAuthClientMetadata(
                client_name="sdk-oauth-test",
                redirect_uris=["http://127.0.0.1:9/callback"],
                grant_types=["authorization_code"],
                response_types=["code"],
            ),
            storage=Memory(),
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
        )
        async with httpx2.AsyncClient(auth=provider) as http:
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport, mode=mode) as client:
                whoami = await client.call_tool("whoami", {})
                write = await client.call_tool("write", {})
        print(json.dumps({
            "whoami": whoami.content[0].text,
            "write": write.content[0].text,
            "authorizations": len(visits),
            "authorize_params": visits[0],
        }), flush=True)

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


def make_server() -> Server:
    server = Server("rs-for-the-sdk")

    @server.tool()
    async def whoami(ctx: Context) -> str:
        assert ctx.auth is not None
        scopes = " ".join(sorted(ctx.auth.scopes))
        return f"{ctx.auth.subject} {ctx.auth.client_id is not None} {scopes}"

    @server.tool(scopes=["files:write"])
    async def write(ctx: Context) -> str:
        assert ctx.auth is not None
        return "written with " + " ".join(sorted(ctx.auth.scopes))

    return server


@asynccontextmanager
async def oauth_deployment() -> AsyncIterator[tuple[str, AuthorizationServer]]:
    """The AS and our protected MCP server: yield (MCP URL, the AS)."""
    issuer = AuthorizationServer(issuer_path="/as")
    async with running_auth_server(issuer):
        sock, base = bound_socket()
        resource = base + "/mcp"
        verifier = JWTVerifier(issuer.issuer + "/jwks", issuer=issuer.issuer, audience=resource)
        auth = ResourceServer(
            verifier,
            resource=resource,
            authorization_servers=[issuer.issuer],
            scopes_supported=["mcp", "files:read", "files:write"],
            required_scopes=["mcp"],
        )
        async with serve_on_bound_socket(http_app(make_server(), auth=auth), sock):
            yield resource, issuer


@pytest.mark.spec("AU-03", "AU-04", "AU-10", "AU-12")
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_python_sdk_client_completes_the_oauth_flow(tmp_path: Path, mode: str) -> None:
    script = tmp_path / "sdk_oauth_client.py"
    script.write_text(SDK_OAUTH_CLIENT)
    async with oauth_deployment() as (url, issuer):
        with trio.fail_after(90):
            done = await trio.run_process(
                [sys.executable, str(script), url, mode],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    out = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert out["whoami"] == "user-1 True mcp"
    # The step-up kept what was granted and added the tool's scope.
    assert out["write"] == "written with files:write mcp"
    assert out["authorizations"] == 2
    assert {"code_challenge", "code_challenge_method", "resource", "state"} <= set(
        out["authorize_params"]
    )
    # What the AS saw: one registration, two codes, each redeemed once, nothing refused.
    assert len(issuer.clients) == 1
    assert len(issuer.grants) == 2
    assert all(grant.used for grant in issuer.grants.values())
    assert {grant.resource for grant in issuer.grants.values()} == {url}
    assert issuer.refusals == []


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge.rstrip(b"=").decode()


async def test_the_authorization_server_checks_pkce_and_spends_codes_once() -> None:
    issuer = AuthorizationServer()
    async with running_auth_server(issuer), httpx.AsyncClient(base_url=issuer.issuer) as http:
        redirect = "http://127.0.0.1:9/cb"
        registered = (await http.post("/register", json={"redirect_uris": [redirect]})).json()
        client = (registered["client_id"], registered["client_secret"])

        async def code_for(challenge: str, method: str = "S256") -> httpx.Response:
            query = {
                "response_type": "code",
                "client_id": client[0],
                "redirect_uri": redirect,
                "code_challenge": challenge,
                "code_challenge_method": method,
                "resource": "http://127.0.0.1:1/mcp",
                "state": "s",
            }
            return await http.get("/authorize", params=query)

        def code_of(response: httpx.Response) -> str:
            assert response.status_code == 302
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(response.headers["location"]).query)
            assert query["state"] == ["s"]
            return query["code"][0]

        async def redeem(code: str, verifier: str, uri: str = redirect) -> httpx.Response:
            form = {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": uri,
                "code_verifier": verifier,
                "resource": "http://127.0.0.1:1/mcp",
            }
            return await http.post("/token", data=form, auth=client)

        verifier, challenge = pkce()
        plain = await code_for(verifier, method="plain")
        assert "error=invalid_request" in plain.headers["location"]
        code = code_of(await code_for(challenge))
        assert (await redeem(code, pkce()[0])).json() == {"error": "invalid_grant"}
        # Spent by the failed attempt: the right verifier comes too late.
        assert (await redeem(code, verifier)).json() == {"error": "invalid_grant"}
        code = code_of(await code_for(challenge))
        assert (await redeem(code, verifier, "http://127.0.0.1:9/other")).status_code == 400
        code = code_of(await code_for(challenge))
        token = await redeem(code, verifier)
        assert token.status_code == 200
        assert token.json()["token_type"] == "Bearer"
        assert (await redeem(code, verifier)).json() == {"error": "invalid_grant"}
        assert issuer.refusals == [
            "PKCE verifier does not match",
            "code already used",
            "redirect_uri differs",
            "code already used",
        ]
        # The token is a JWT our verifier accepts for the resource it names.
        check = JWTVerifier(
            issuer.issuer + "/jwks", issuer=issuer.issuer, audience="http://127.0.0.1:1/mcp"
        )
        verified = await check.verify(token.json()["access_token"])
        assert verified.client_id == client[0]
