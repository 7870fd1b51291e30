"""Session security with authorization on (reliability K-07): a token that
expires in the middle of a session stops working at once, over real loopback
HTTP."""

from __future__ import annotations

import time

import orjson
import trio
from http_helpers import init_body, post_headers, raw_client, running, sse_messages

from trio_mcp import Context, Server
from trio_mcp.auth import AccessToken, ResourceServer

HANDSHAKE = "2025-11-25"


class ExpiringVerifier:
    """Answers for one token, with the expiry it is told: as a verifier whose
    cache still holds a token that has since expired would."""

    def __init__(self) -> None:
        self.expires_at = time.time() + 3600

    async def verify(self, token: str) -> AccessToken:
        await trio.lowlevel.checkpoint()
        return AccessToken(
            subject="alice",
            scopes=frozenset({"mcp:tools"}),
            expires_at=self.expires_at,
            issuer="https://auth.example",
        )


def make_server() -> Server:
    server = Server("expiry")

    @server.tool()
    async def whoami(ctx: Context) -> str:
        """Who the token speaks for."""
        assert ctx.auth is not None
        return ctx.auth.subject

    return server


async def test_a_token_that_expires_mid_session_gets_401_with_a_challenge() -> None:
    """K-07: the session works while the token is valid; once it has expired
    every request of the session is 401 with ``WWW-Authenticate``
    (``invalid_token``), and no handler runs."""
    verifier = ExpiringVerifier()
    auth = ResourceServer(
        verifier,
        resource="https://mcp.example/mcp",
        authorization_servers=["https://auth.example"],
        required_scopes=["mcp:tools"],
    )
    token = {"authorization": "Bearer t"}
    version = {"mcp-protocol-version": HANDSHAKE}
    call = orjson.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami"}}
    )
    async with running(make_server(), auth=auth) as (url, app), raw_client(url) as http:
        opened = await http.post(
            "/mcp", content=init_body(version=HANDSHAKE), headers=post_headers(**token)
        )
        assert opened.status_code == 200
        sid = opened.headers["mcp-session-id"]
        note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        headers = post_headers(sid, **version, **token)
        assert (await http.post("/mcp", content=note, headers=headers)).status_code == 202
        served = await http.post("/mcp", content=call, headers=headers)
        assert sse_messages(served.text)[0]["result"]["content"][0]["text"] == "alice"

        verifier.expires_at = time.time() - 1  # the token has expired since
        for method, body in (("POST", call), ("GET", None), ("DELETE", None)):
            refused = await http.request(
                method,
                "/mcp",
                content=body,
                headers={**headers, "accept": "application/json, text/event-stream"},
            )
            assert refused.status_code == 401, method
            challenge = refused.headers["www-authenticate"]
            assert challenge.startswith("Bearer ")
            assert 'error="invalid_token"' in challenge
        assert app.session_count == 1  # the session is not usable, not leaked either
