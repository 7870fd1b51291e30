"""A real OAuth 2.1 authorization server and a protected MCP server, on loopback,
for the client tests (``test_oauth_*.py``).

:class:`OAuthServer` is a plain ASGI app on hypercorn's Trio worker (127.0.0.1,
port 0): RFC 8414 (or OIDC) metadata, dynamic registration, an authorization
endpoint that approves at once (PKCE S256 required, the redirect URI checked
against the registration) and a token endpoint for the authorization code and
refresh grants (refresh tokens rotated: a used one is dead) with
client_secret_basic, client_secret_post or none; access tokens are JWTs signed
with joserfc, their audience the ``resource`` of the request, served JWKS at
``/jwks``. It records every request so tests can check what the client sent.

:func:`protected_mcp` serves a trio_mcp ``Server`` behind
``ResourceServer(JWTVerifier(...))`` (our resource server) and records the
URL and headers of every request it gets.
"""

from __future__ import annotations

import base64
import secrets
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import attrs
import orjson
import trio
from hypercorn.trio import serve
from joserfc import jwt
from joserfc.jwk import RSAKey

from trio_mcp import Server, http_app
from trio_mcp.auth import AccessToken, InsufficientScope, JWTVerifier, ResourceServer
from trio_mcp.transports._http.server._app import StreamableHTTPApp, hypercorn_config

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

KEY = RSAKey.generate_key(2048, parameters={"kid": "as-1", "use": "sig"})


@attrs.define
class Seen:
    """One request an app received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    form: dict[str, list[str]]
    json: Any


async def _read(scope: Scope, receive: Receive) -> Seen:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
    ctype = headers.get("content-type", "")
    form = urllib.parse.parse_qs(body.decode()) if "urlencoded" in ctype else {}
    parsed = orjson.loads(body) if body and "json" in ctype else None
    return Seen(
        method=scope["method"],
        path=scope["path"],
        query=urllib.parse.parse_qs(scope["query_string"].decode()),
        headers=headers,
        form=form,
        json=parsed,
    )


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        else:
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _answer(
    send: Send, status: int, body: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    data = orjson.dumps(body) if not isinstance(body, bytes) else body
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *(headers or [])],
        }
    )
    await send({"type": "http.response.body", "body": data})


def _one(values: dict[str, list[str]], name: str) -> str | None:
    found = values.get(name)
    return found[0] if found else None


@attrs.define
class Code:
    client_id: str
    redirect_uri: str
    challenge: str
    resource: str | None
    scope: str | None


@attrs.define
class OAuthServer:
    """An authorization server; tests change the fields before the client runs."""

    #: Path of the issuer ("" or e.g. "/tenant").
    issuer_path: str = ""
    #: Where the metadata is served: "oauth" (RFC 8414 path insertion),
    #: "oidc-insert" (OIDC with path insertion) or "oidc-append".
    metadata_at: str = "oauth"
    code_challenge_methods: list[str] | None = attrs.field(factory=lambda: ["S256"])
    iss_supported: bool = True
    #: What ``iss`` the redirect carries: "correct", "wrong" or "omit".
    iss_mode: str = "correct"
    registration: bool = True
    auth_methods: list[str] = attrs.field(factory=lambda: ["none", "client_secret_basic"])
    scopes_supported: list[str] | None = None
    cimd_supported: bool = False
    #: Scopes never granted (asked for or not): a step-up that cannot succeed.
    withheld: set[str] = attrs.field(factory=set)
    #: expires_in told to the client (the JWT itself lives an hour).
    expires_in: int = 3600
    issue_refresh_tokens: bool = True
    #: Pre-registered clients: client_id -> (secret or None, auth method, redirect URIs).
    clients: dict[str, tuple[str | None, str, list[str]]] = attrs.field(factory=dict)
    #: Prefix of the client ids this server registers.
    name: str = "client"
    base: str = ""
    seen: list[Seen] = attrs.field(factory=list)
    codes: dict[str, Code] = attrs.field(factory=dict)
    refresh_tokens: dict[str, tuple[str, str | None, str | None]] = attrs.field(factory=dict)
    issued: list[str] = attrs.field(factory=list)

    @property
    def issuer(self) -> str:
        return self.base + self.issuer_path

    def metadata_path(self) -> str:
        if self.metadata_at == "oauth":
            return "/.well-known/oauth-authorization-server" + self.issuer_path
        if self.metadata_at == "oidc-insert":
            return "/.well-known/openid-configuration" + self.issuer_path
        return self.issuer_path + "/.well-known/openid-configuration"

    def requests(self, path: str) -> list[Seen]:
        return [seen for seen in self.seen if seen.path == path]

    def metadata(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": self.base + "/authorize",
            "token_endpoint": self.base + "/token",
            "jwks_uri": self.base + "/jwks",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": self.auth_methods,
            "authorization_response_iss_parameter_supported": self.iss_supported,
        }
        if self.registration:
            doc["registration_endpoint"] = self.base + "/register"
        if self.code_challenge_methods is not None:
            doc["code_challenge_methods_supported"] = self.code_challenge_methods
        if self.scopes_supported is not None:
            doc["scopes_supported"] = self.scopes_supported
        if self.cimd_supported:
            doc["client_id_metadata_document_supported"] = True
        return doc

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        seen = await _read(scope, receive)
        self.seen.append(seen)
        if seen.method == "GET" and seen.path == self.metadata_path():
            await _answer(send, 200, self.metadata())
        elif seen.path == "/jwks":
            await _answer(send, 200, {"keys": [KEY.as_dict(private=False)]})
        elif seen.path == "/register" and self.registration and seen.method == "POST":
            await self._register(seen, send)
        elif seen.path == "/authorize" and seen.method == "GET":
            await self._authorize(seen, send)
        elif seen.path == "/token" and seen.method == "POST":
            await self._token(seen, send)
        else:
            await _answer(send, 404, {"error": "not_found"})

    async def _register(self, seen: Seen, send: Send) -> None:
        body = seen.json if isinstance(seen.json, dict) else {}
        method = body.get("token_endpoint_auth_method", "client_secret_basic")
        client_id = f"{self.name}-{len(self.clients) + 1}"
        secret = None if method == "none" else secrets.token_urlsafe(16)
        self.clients[client_id] = (secret, method, list(body.get("redirect_uris") or []))
        answer: dict[str, Any] = {**body, "client_id": client_id}
        if secret is not None:
            answer["client_secret"] = secret
        await _answer(send, 201, answer)

    async def _authorize(self, seen: Seen, send: Send) -> None:
        q = seen.query
        client_id = _one(q, "client_id") or ""
        redirect_uri = _one(q, "redirect_uri") or ""
        known = self.clients.get(client_id)
        cimd = self.cimd_supported and client_id.startswith("https://")
        if (known is None and not cimd) or (known is not None and redirect_uri not in known[2]):
            await _answer(send, 400, {"error": "invalid_request"})
            return
        if _one(q, "code_challenge_method") != "S256" or not _one(q, "code_challenge"):
            await _answer(send, 400, {"error": "invalid_request", "error_description": "PKCE"})
            return
        code = secrets.token_urlsafe(16)
        self.codes[code] = Code(
            client_id=client_id,
            redirect_uri=redirect_uri,
            challenge=_one(q, "code_challenge") or "",
            resource=_one(q, "resource"),
            scope=_one(q, "scope"),
        )
        params = {"code": code, "state": _one(q, "state") or ""}
        if self.iss_mode == "correct":
            params["iss"] = self.issuer
        elif self.iss_mode == "wrong":
            params["iss"] = "https://evil.example"
        location = redirect_uri + "?" + urllib.parse.urlencode(params)
        await _answer(send, 302, b"", [(b"location", location.encode())])

    def _client_of(self, seen: Seen) -> str | None:
        """The authenticated client id of a token request (None: refused)."""
        header = seen.headers.get("authorization", "")
        if header.startswith("Basic "):
            client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
            method = "client_secret_basic"
        elif _one(seen.form, "client_secret") is not None:
            client_id = _one(seen.form, "client_id") or ""
            secret = _one(seen.form, "client_secret") or ""
            method = "client_secret_post"
        else:
            client_id, secret, method = _one(seen.form, "client_id") or "", "", "none"
        known = self.clients.get(urllib.parse.unquote(client_id))
        if known is None:
            return client_id if self.cimd_supported and client_id.startswith("https://") else None
        if known[1] != method or (method != "none" and known[0] != secret):
            return None
        return urllib.parse.unquote(client_id)

    async def _token(self, seen: Seen, send: Send) -> None:
        from authlib.oauth2.rfc7636 import create_s256_code_challenge

        client = self._client_of(seen)
        if client is None:
            await _answer(send, 401, {"error": "invalid_client"})
            return
        grant = _one(seen.form, "grant_type")
        resource = _one(seen.form, "resource")
        if grant == "authorization_code":
            code = self.codes.pop(_one(seen.form, "code") or "", None)
            verifier = _one(seen.form, "code_verifier") or ""
            if (
                code is None
                or code.client_id != client
                or code.redirect_uri != _one(seen.form, "redirect_uri")
                or create_s256_code_challenge(verifier) != code.challenge
                or code.resource != resource
            ):
                await _answer(send, 400, {"error": "invalid_grant"})
                return
            scope = code.scope
        elif grant == "refresh_token":
            old = self.refresh_tokens.pop(_one(seen.form, "refresh_token") or "", None)
            if old is None or old[0] != client:
                await _answer(send, 400, {"error": "invalid_grant"})
                return
            scope = old[2]
        else:
            await _answer(send, 400, {"error": "unsupported_grant_type"})
            return
        granted = [s for s in (scope or "").split() if s not in self.withheld]
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": "user-1",
            "aud": resource,
            "exp": now + 3600,
            "iat": now,
            "scope": " ".join(granted),
            "client_id": client,
        }
        token = jwt.encode({"alg": "RS256", "kid": "as-1"}, claims, KEY, algorithms=["RS256"])
        self.issued.append(token)
        answer: dict[str, Any] = {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "scope": " ".join(granted),
        }
        if self.issue_refresh_tokens:
            refresh = secrets.token_urlsafe(16)
            self.refresh_tokens[refresh] = (client, resource, scope)
            answer["refresh_token"] = refresh
        await _answer(send, 200, answer)


@asynccontextmanager
async def serving(app: App) -> AsyncIterator[str]:
    """Serve an ASGI *app* on 127.0.0.1:0; yield its base URL."""
    config = hypercorn_config("127.0.0.1", 0)
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(
            lambda task_status: serve(cast(Any, app), config, task_status=task_status)
        )
        yield cast(list[str], binds)[0]
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def running_oauth_server(server: OAuthServer) -> AsyncIterator[OAuthServer]:
    async with serving(server) as base:
        server.base = base
        yield server


class StepUpVerifier:
    """A JWTVerifier that, once :attr:`extra` is set, also needs those scopes
    (a server that asks for more on some operation: 403 insufficient_scope)."""

    def __init__(self, inner: JWTVerifier) -> None:
        self.inner = inner
        self.extra: set[str] = set()

    async def verify(self, token: str) -> AccessToken:
        verified = await self.inner.verify(token)
        if not self.extra <= verified.scopes:
            raise InsufficientScope(self.extra)
        return verified


@attrs.define
class Protected:
    """The protected MCP server: its endpoint URL, resource server, verifier and requests."""

    url: str
    resource: ResourceServer
    verifier: StepUpVerifier
    seen: list[Seen]


@asynccontextmanager
async def protected_mcp(
    server: Server,
    issuer: OAuthServer,
    *,
    resource_path: str = "/mcp",
    scopes_supported: tuple[str, ...] = ("mcp:read",),
    required_scopes: tuple[str, ...] = (),
) -> AsyncIterator[Protected]:
    """Serve *server* at ``/mcp`` behind our resource server, trusting *issuer*."""
    seen: list[Seen] = []
    holder: list[StreamableHTTPApp] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        seen.append(
            Seen(
                method=scope["method"],
                path=scope["path"],
                query=urllib.parse.parse_qs(scope["query_string"].decode()),
                headers=headers,
                form={},
                json=None,
            )
        )
        await holder[0](scope, receive, cast(Any, send))

    async with serving(app) as base:
        verifier = StepUpVerifier(
            JWTVerifier(issuer.base + "/jwks", issuer=issuer.issuer, audience=base + resource_path)
        )
        rs = ResourceServer(
            verifier,
            resource=base + resource_path,
            authorization_servers=[issuer.issuer],
            scopes_supported=scopes_supported,
            required_scopes=required_scopes,
        )
        mcp_app = http_app(server, auth=rs)
        holder.append(mcp_app)
        async with mcp_app.run():
            yield Protected(url=base + "/mcp", resource=rs, verifier=verifier, seen=seen)
