"""A small, real authorization server for the auth tests, a plain ASGI app on
hypercorn's Trio worker (127.0.0.1, port 0).

:class:`AuthServer`: a JWKS and an RFC 7662 introspection endpoint (the
verifier tests). :class:`AuthorizationServer` adds what an OAuth client needs
to get a token for an MCP server: RFC 8414 metadata, RFC 7591 dynamic client
registration, the authorization endpoint (no user: it approves at once and
redirects with a code) and the token endpoint (authorization code with PKCE
S256, checked; a code is single-use, bound to its client, redirect URI and
RFC 8707 resource) issuing JWT access tokens signed with its own key, the key
its JWKS publishes. Both count the requests they saw, so tests can tell a
cache hit from a fetch; the authorization server also records every secret it
issued (tokens, codes, client secrets), for the log scans.

:func:`serve_on_bound_socket` serves an ASGI app on a socket bound before the
app is made, so an MCP server's canonical resource URI can name its port.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import socket
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

from trio_mcp.transports._http.server._app import StreamableHTTPApp, hypercorn_config

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@attrs.define
class AuthServer:
    """What the endpoints answer; tests change it between requests."""

    #: The JWKS document served at /jwks.
    jwks: dict[str, Any] = attrs.field(factory=lambda: {"keys": []})
    #: Status of /jwks (anything but 200 answers an error body).
    jwks_status: int = 200
    #: token -> introspection answer; unknown tokens are inactive.
    tokens: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    introspection_status: int = 200
    #: The Basic credentials /introspect accepts.
    client: tuple[str, str] = ("rs", "rs-secret")
    #: Request counts by path.
    seen: dict[str, int] = attrs.field(factory=dict)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        path = scope["path"]
        self.seen[path] = self.seen.get(path, 0) + 1
        status, answer, headers = self.route(scope, body)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json"), *headers],
            }
        )
        await send({"type": "http.response.body", "body": orjson.dumps(answer)})

    def route(
        self, scope: Scope, body: bytes
    ) -> tuple[int, dict[str, Any], list[tuple[bytes, bytes]]]:
        """(status, JSON answer, extra headers) of one request."""
        path = scope["path"]
        if path == "/jwks":
            return self.jwks_status, self.jwks, []
        if path == "/introspect":
            return (*self._introspect(scope, body), [])
        return 404, {"error": "not_found"}, []

    def _introspect(self, scope: Scope, body: bytes) -> tuple[int, dict[str, Any]]:
        if self.introspection_status != 200:
            return self.introspection_status, {"error": "server_error"}
        headers = dict(scope["headers"])
        expected = base64.b64encode(f"{self.client[0]}:{self.client[1]}".encode())
        if headers.get(b"authorization") != b"Basic " + expected:
            return 401, {"error": "invalid_client"}
        form = urllib.parse.parse_qs(body.decode())
        token = form.get("token", [""])[0]
        return 200, self.tokens.get(token, {"active": False})


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _form(body: bytes) -> dict[str, str]:
    """A form body, one value per field (a repeated field is refused as empty)."""
    parsed = urllib.parse.parse_qs(body.decode("utf-8"), keep_blank_values=True)
    return {name: values[0] for name, values in parsed.items() if len(values) == 1}


@attrs.define
class Grant:
    """An authorization code not redeemed yet, and what it was issued for."""

    client_id: str
    redirect_uri: str
    code_challenge: str
    scope: str
    resource: str | None
    used: bool = False


@attrs.define
class AuthorizationServer(AuthServer):
    """An OAuth 2.1 authorization server (see the module docstring).

    ``issuer`` is set by :func:`running_auth_server` (the base URL). The user
    it approves for is ``subject``; ``lifetime`` is the tokens' life in
    seconds, read from ``clock``.
    """

    key: RSAKey = attrs.field(
        factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "as-1", "use": "sig"})
    )
    issuer: str = ""
    #: The issuer's path under the base URL ("/as": ``http://127.0.0.1:P/as``);
    #: its endpoints and JWKS live under it, its metadata at the RFC 8414
    #: path-aware well-known URI. A path also keeps the issuer free of the
    #: trailing-slash question of a bare origin.
    issuer_path: str = ""
    subject: str = "user-1"
    lifetime: int = 3600
    clock: Callable[[], float] = time.time
    #: Scopes granted when a client asks for none.
    default_scope: str = "mcp"
    #: client_id -> its registration (as answered).
    clients: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    grants: dict[str, Grant] = attrs.field(factory=dict)
    #: Every secret this server handed out: tokens, codes, client secrets.
    issued: list[str] = attrs.field(factory=list)
    #: Why the token endpoint refused, newest last (error descriptions).
    refusals: list[str] = attrs.field(factory=list)

    def __attrs_post_init__(self) -> None:
        self.jwks = {"keys": [self.key.as_dict(private=False)]}

    def metadata(self) -> dict[str, Any]:
        """The RFC 8414 authorization server metadata."""
        return {
            "issuer": self.issuer,
            "authorization_endpoint": self.issuer + "/authorize",
            "token_endpoint": self.issuer + "/token",
            "registration_endpoint": self.issuer + "/register",
            "jwks_uri": self.issuer + "/jwks",
            "introspection_endpoint": self.issuer + "/introspect",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": [
                "client_secret_post",
                "client_secret_basic",
                "none",
            ],
            "scopes_supported": ["mcp", "files:read", "files:write"],
        }

    def sign(self, **claims: Any) -> str:
        """A JWT access token of this server: ``claims`` over the defaults."""
        now = int(self.clock())
        payload: dict[str, Any] = {
            "iss": self.issuer,
            "sub": self.subject,
            "iat": now,
            "exp": now + self.lifetime,
            "jti": secrets.token_hex(8),
        }
        payload.update(claims)
        payload = {name: value for name, value in payload.items() if value is not None}
        token = jwt.encode({"alg": "RS256", "kid": self.key.kid}, payload, self.key)
        self.issued.append(token)
        return token

    def route(
        self, scope: Scope, body: bytes
    ) -> tuple[int, dict[str, Any], list[tuple[bytes, bytes]]]:
        path = scope["path"]
        if path == "/.well-known/oauth-authorization-server" + self.issuer_path:
            return 200, self.metadata(), []
        if self.issuer_path:
            if not path.startswith(self.issuer_path + "/"):
                return 404, {"error": "not_found"}, []
            path = path[len(self.issuer_path) :]
            scope = {**scope, "path": path}
        if path == "/register" and scope["method"] == "POST":
            return (*self._register(body), [])
        if path == "/authorize":
            return self._authorize(scope)
        if path == "/token" and scope["method"] == "POST":
            status, answer = self._token(scope, body)
            return status, answer, [(b"cache-control", b"no-store")]
        return super().route(scope, body)

    def _register(self, body: bytes) -> tuple[int, dict[str, Any]]:
        """RFC 7591 dynamic client registration."""
        try:
            asked = orjson.loads(body)
        except orjson.JSONDecodeError:
            return 400, {"error": "invalid_client_metadata"}
        redirects = asked.get("redirect_uris") if isinstance(asked, dict) else None
        if not isinstance(redirects, list) or not redirects:
            return 400, {"error": "invalid_redirect_uri"}
        client_id = "client-" + secrets.token_hex(8)
        method = asked.get("token_endpoint_auth_method") or "client_secret_basic"
        registered: dict[str, Any] = {
            **asked,
            "client_id": client_id,
            "client_id_issued_at": int(self.clock()),
            "token_endpoint_auth_method": method,
        }
        if method != "none":
            registered["client_secret"] = secrets.token_urlsafe(24)
            registered["client_secret_expires_at"] = 0
            self.issued.append(registered["client_secret"])
        self.clients[client_id] = registered
        return 201, registered

    def _authorize(self, scope: Scope) -> tuple[int, dict[str, Any], list[tuple[bytes, bytes]]]:
        """Approve at once: 302 to the redirect URI with a code (or an error)."""
        query = _form(scope.get("query_string", b""))
        client = self.clients.get(query.get("client_id", ""))
        redirect = query.get("redirect_uri", "")
        if client is None or redirect not in client["redirect_uris"]:
            # Never redirect to an unregistered URI (RFC 6749 §4.1.2.1).
            return 400, {"error": "invalid_request"}, []
        answer: dict[str, str] = {}
        if query.get("response_type") != "code":
            answer["error"] = "unsupported_response_type"
        elif query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            answer["error"] = "invalid_request"  # PKCE S256 is required (OAuth 2.1)
        else:
            code = secrets.token_urlsafe(24)
            self.issued.append(code)
            self.grants[code] = Grant(
                client_id=client["client_id"],
                redirect_uri=redirect,
                code_challenge=query["code_challenge"],
                scope=query.get("scope") or self.default_scope,
                resource=query.get("resource"),
            )
            answer["code"] = code
        if "state" in query:
            answer["state"] = query["state"]
        answer["iss"] = self.issuer  # RFC 9207
        location = redirect + ("&" if "?" in redirect else "?") + urllib.parse.urlencode(answer)
        return 302, {}, [(b"location", location.encode())]

    def _client_of(self, scope: Scope, form: dict[str, str]) -> dict[str, Any] | None:
        """The client authenticating the token request, by its registered method."""
        headers = dict(scope["headers"])
        basic = headers.get(b"authorization", b"")
        if basic.startswith(b"Basic "):
            try:
                decoded = base64.b64decode(basic[6:]).decode()
            except (ValueError, UnicodeError):
                return None
            client_id, _, secret = decoded.partition(":")
            client_id = urllib.parse.unquote(client_id)
            secret = urllib.parse.unquote(secret)
        else:
            client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
        client = self.clients.get(client_id)
        if client is None:
            return None
        expected = client.get("client_secret")
        if expected is None:
            return client if not secret else None
        return client if hmac.compare_digest(expected, secret) else None

    def _refuse(self, error: str, why: str) -> tuple[int, dict[str, Any]]:
        self.refusals.append(why)
        return 400 if error != "invalid_client" else 401, {"error": error}

    def _token(self, scope: Scope, body: bytes) -> tuple[int, dict[str, Any]]:
        form = _form(body)
        if form.get("grant_type") != "authorization_code":
            return self._refuse("unsupported_grant_type", "grant type")
        client = self._client_of(scope, form)
        if client is None:
            return self._refuse("invalid_client", "client authentication")
        grant = self.grants.get(form.get("code", ""))
        if grant is None or grant.client_id != client["client_id"]:
            return self._refuse("invalid_grant", "unknown code")
        if grant.used:
            return self._refuse("invalid_grant", "code already used")
        grant.used = True  # single use, whatever happens next
        if form.get("redirect_uri") != grant.redirect_uri:
            return self._refuse("invalid_grant", "redirect_uri differs")
        verifier = form.get("code_verifier", "")
        challenge = _b64url(hashlib.sha256(verifier.encode("ascii", "replace")).digest())
        if not 43 <= len(verifier) <= 128 or not hmac.compare_digest(
            challenge, grant.code_challenge
        ):
            return self._refuse("invalid_grant", "PKCE verifier does not match")
        resource = form.get("resource", grant.resource)
        if resource != grant.resource or resource is None:
            return self._refuse("invalid_target", "resource differs or is missing")
        token = self.sign(aud=resource, scope=grant.scope, client_id=client["client_id"])
        return 200, {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": self.lifetime,
            "scope": grant.scope,
        }


@asynccontextmanager
async def running_auth_server(server: AuthServer) -> AsyncIterator[str]:
    """Serve *server*; yield its base URL (an :class:`AuthorizationServer`'s
    issuer is set to it)."""
    config = hypercorn_config("127.0.0.1", 0)
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(
            lambda task_status: serve(cast(Any, server), config, task_status=task_status)
        )
        url = cast(list[str], binds)[0]
        if isinstance(server, AuthorizationServer):
            server.issuer = url + server.issuer_path
        yield url
        nursery.cancel_scope.cancel()


def bound_socket() -> tuple[socket.socket, str]:
    """A listening socket on 127.0.0.1, port 0, and its base URL: bind before
    building an app whose canonical URI names the port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock, f"http://127.0.0.1:{sock.getsockname()[1]}"


@asynccontextmanager
async def serve_on_bound_socket(app: StreamableHTTPApp, sock: socket.socket) -> AsyncIterator[None]:
    """Serve *app* (with the nursery its sessions live in) on *sock*, from
    :func:`bound_socket`; hypercorn owns (and closes) the socket."""
    config = hypercorn_config("127.0.0.1", 0)
    config.bind = [f"fd://{sock.detach()}"]
    async with app.run(), trio.open_nursery() as nursery:
        await nursery.start(
            lambda task_status: serve(cast(Any, app), config, task_status=task_status, mode="asgi")
        )
        yield
        nursery.cancel_scope.cancel()


async def closed_port_url() -> str:
    """A loopback URL nothing listens on (a port bound, then closed)."""
    sock = trio.socket.socket()
    await sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"


async def user_agent_get(url: str) -> tuple[int, dict[str, str]]:
    """GET *url* as the user's browser would (a plain socket, HTTP/1.1, no
    logging): (status, response headers, lower-cased). The authorization step
    of a flow is the browser's, a program of its own whose traffic is in no
    log of ours; httpx would put the redirect's ``Location`` (the code) in
    httpcore's DEBUG records."""
    parts = urllib.parse.urlsplit(url)
    assert parts.scheme == "http"
    assert parts.hostname is not None
    assert parts.port is not None
    target = parts.path + ("?" + parts.query if parts.query else "")
    stream = await trio.open_tcp_stream(parts.hostname, parts.port)
    async with stream:
        await stream.send_all(
            f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n\r\n".encode()
        )
        seen = b""
        with trio.fail_after(10):
            while b"\r\n\r\n" not in seen:
                chunk = await stream.receive_some()
                if not chunk:
                    break
                seen += chunk
    head = seen.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    status = int(head[0].split(" ")[1])
    headers = {}
    for line in head[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers
