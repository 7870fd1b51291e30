"""The records and interfaces of the client's OAuth machinery, and the grant hook.

A *grant* is how the provider gets tokens from an authorization server once it
knows which server that is and who the client is there: the authorization
code grant (:class:`~trio_mcp._oauth._code.AuthorizationCodeGrant`, with PKCE
and a redirect), or an extension grant (client credentials, token exchange,
JWT bearer). It is any object with ``client_metadata`` (what a registration
must say for it) and ``async obtain(ctx) -> TokenResponse``; the
:class:`GrantContext` it is handed carries everything discovery and
registration found, the httpx client for the authorization server's traffic
and the optional DPoP signer, and makes token requests with the client's
authentication (:meth:`GrantContext.token_request`).

Spec: AU-06..AU-08, AU-14.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from .._errors import AuthorizationFailed

if TYPE_CHECKING:
    import httpx


@attrs.frozen
class TokenResponse:
    """Tokens from a token endpoint (RFC 6749 §5.1), as kept in storage.

    ``expires_at`` is a ``time.time()`` instant (None: the server gave no lifetime);
    ``issuer`` is the authorization server that issued them: tokens are used only with
    the server that issued them (SEP-2352).

    Spec: AU-07.
    """

    access_token: str = attrs.field(repr=False)
    token_type: str = "Bearer"
    expires_at: float | None = None
    refresh_token: str | None = attrs.field(default=None, repr=False)
    scope: str | None = None
    issuer: str | None = None

    @classmethod
    def from_json(
        cls, data: object, *, issuer: str | None = None, now: float | None = None
    ) -> TokenResponse:
        """Read a token endpoint's JSON answer; :class:`AuthorizationFailed` if it is not one."""
        if not isinstance(data, Mapping):
            raise AuthorizationFailed("the token endpoint answered something other than an object")
        token = data.get("access_token")
        if not isinstance(token, str) or not token:
            raise AuthorizationFailed("the token endpoint answered without an access_token")
        token_type = data.get("token_type", "Bearer")
        if not isinstance(token_type, str):
            raise AuthorizationFailed("the token endpoint answered a non-string token_type")
        expires_in = data.get("expires_in")
        expires_at = None
        if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool):
            expires_at = (time.time() if now is None else now) + float(expires_in)
        refresh = data.get("refresh_token")
        scope = data.get("scope")
        return cls(
            access_token=token,
            token_type=token_type,
            expires_at=expires_at,
            refresh_token=refresh if isinstance(refresh, str) and refresh else None,
            scope=scope if isinstance(scope, str) else None,
            issuer=issuer,
        )

    def to_json(self) -> dict[str, Any]:
        """The record as JSON (for a file store)."""
        return attrs.asdict(self)

    def expired(self, *, now: float | None = None, margin: float = 30.0) -> bool:
        """True once the token is within *margin* seconds of its expiry."""
        if self.expires_at is None:
            return False
        return (time.time() if now is None else now) >= self.expires_at - margin


@attrs.frozen
class ClientInfo:
    """Who the client is at one authorization server.

    ``client_id`` (an HTTPS URL for a client ID metadata document),
    ``client_secret`` for a confidential client, and the token endpoint
    authentication method (None: chosen from what the server supports).
    ``issuer`` is the server these credentials belong to; None only for
    pre-registered credentials given without one (used with whichever
    server the resource names).

    Spec: AU-07.
    """

    client_id: str
    client_secret: str | None = attrs.field(default=None, repr=False)
    token_endpoint_auth_method: str | None = None
    issuer: str | None = None

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class ProtectedResourceMetadata:
    """RFC 9728 protected resource metadata, as the client uses it.

    Spec: AU-03, AU-04.
    """

    resource: str | None
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None
    url: str
    raw: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class AuthServerMetadata:
    """RFC 8414 / OIDC discovery metadata of an authorization server.

    ``issuer`` is the issuer the client recorded (checked against the URL it was asked
    for, RFC 8414 §3.3); ``fallback`` is True for the 2025-03-26 default endpoints of a
    server without metadata.

    Spec: AU-06, AU-02.
    """

    issuer: str
    authorization_endpoint: str | None
    token_endpoint: str
    registration_endpoint: str | None = None
    scopes_supported: tuple[str, ...] | None = None
    code_challenge_methods_supported: tuple[str, ...] | None = None
    token_endpoint_auth_methods_supported: tuple[str, ...] | None = None
    grant_types_supported: tuple[str, ...] | None = None
    iss_parameter_supported: bool = False
    client_id_metadata_document_supported: bool = False
    fallback: bool = False
    raw: Mapping[str, Any] = attrs.field(factory=dict, repr=False)

    def get(self, name: str, default: Any = None) -> Any:
        """Any other metadata field (e.g. ``dpop_signing_alg_values_supported``)."""
        return self.raw.get(name, default)


@runtime_checkable
class DPoPSigner(Protocol):
    """Makes RFC 9449 DPoP proofs for the provider's requests (the DPoP extension).

    ``headers_for`` returns the headers to add to a request to *url* with
    *method* (``{"DPoP": proof}``; with *access_token* the proof carries its
    hash, ``ath``). ``update_nonce`` reads a response's ``DPoP-Nonce`` and
    returns True when the request should be retried with it (a
    ``use_dpop_nonce`` error).
    """

    def headers_for(
        self, method: str, url: str, access_token: str | None = None
    ) -> dict[str, str]: ...

    def update_nonce(self, url: str, response: httpx.Response) -> bool: ...


@attrs.define
class GrantContext:
    """What a grant is handed: everything discovery and registration found.

    ``http`` is the provider's own client for authorization server traffic (never the
    MCP transport's); ``resource`` is the RFC 8707 resource indicator to send; ``scope``
    the scope chosen for this attempt (None: omit it); ``client`` the credentials at
    this server (None for a grant that needs none).

    Spec: AU-08.
    """

    http: httpx.AsyncClient
    resource: str
    server_url: str
    metadata: AuthServerMetadata
    prm: ProtectedResourceMetadata | None
    scope: str | None
    client: ClientInfo | None
    dpop: DPoPSigner | None = None

    @property
    def issuer(self) -> str:
        return self.metadata.issuer

    def auth_method(self) -> str:
        """The token endpoint authentication method for :attr:`client`.

        The registered one when known; else ``client_secret_basic`` or
        ``client_secret_post`` for a client with a secret (whichever the
        server lists, basic first, basic when it lists none: RFC 8414's
        default), ``none`` for a public client.
        """
        client = self.client
        if client is None:
            return "none"
        if client.token_endpoint_auth_method:
            return client.token_endpoint_auth_method
        if not client.client_secret:
            return "none"
        supported = self.metadata.token_endpoint_auth_methods_supported
        if supported is None or "client_secret_basic" in supported:
            return "client_secret_basic"
        if "client_secret_post" in supported:
            return "client_secret_post"
        return "none" if "none" in supported else "client_secret_basic"

    async def token_request(self, form: Mapping[str, str]) -> TokenResponse:
        """POST *form* to the token endpoint with the client's authentication
        (client_secret_basic, client_secret_post or none, by Authlib), the DPoP
        proof when there is a signer (retried once with a new nonce), and read
        the tokens; :class:`AuthorizationFailed` on an error answer.

        Cancellation: a cancel abandons the request; nothing is kept.
        """
        from ._client_auth import prepare_token_request

        url = self.metadata.token_endpoint
        for _ in range(2):
            client = self.client
            headers, body = prepare_token_request(
                client.client_id if client else None,
                client.client_secret if client else None,
                self.auth_method(),
                form,
            )
            if self.dpop is not None:
                headers.update(self.dpop.headers_for("POST", url))
            response = await self.http.post(url, content=body, headers=headers)
            if (
                response.status_code == 400
                and self.dpop is not None
                and self.dpop.update_nonce(url, response)
            ):
                continue
            break
        return read_token_response(response, issuer=self.issuer)


def read_token_response(response: httpx.Response, *, issuer: str | None) -> TokenResponse:
    """A token endpoint's answer: the tokens, or :class:`AuthorizationFailed` naming its error."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if response.status_code != 200:
        error = data.get("error") if isinstance(data, Mapping) else None
        described = f" ({error})" if isinstance(error, str) else ""
        raise AuthorizationFailed(
            f"the token endpoint answered HTTP {response.status_code}{described}"
        )
    return TokenResponse.from_json(data, issuer=issuer)


class Grant(Protocol):
    """How tokens are obtained once the server and the client are known.

    ``client_metadata`` is what a registration (DCR, or the client ID
    metadata document) must say for this grant (``grant_types``,
    ``redirect_uris``, ``response_types``), given the server's metadata;
    ``obtain`` gets the tokens. A grant that needs no registered client
    returns None from ``client_metadata``.

    Cancellation: ``obtain`` may be cancelled at any point; nothing is stored
    until it returns.
    """

    def client_metadata(self, metadata: AuthServerMetadata) -> Mapping[str, Any] | None: ...

    async def obtain(self, ctx: GrantContext) -> TokenResponse: ...


class RedirectHandler(Protocol):
    """The "open this URL, give me where the browser was sent" step.

    ``redirect_uri`` is registered and sent with the authorization request;
    ``authorize`` sends the user (or a headless client) to *url* and returns
    the redirect URL the authorization server answered with (its query has
    ``code``, ``state`` and maybe ``iss``).
    """

    @property
    def redirect_uri(self) -> str: ...

    async def authorize(self, url: str) -> str: ...


def split_scope(scope: str | None) -> list[str]:
    """The scopes of a space-separated scope string, in order, without repeats."""
    seen: list[str] = []
    for item in (scope or "").split():
        if item not in seen:
            seen.append(item)
    return seen


def join_scope(scopes: Sequence[str]) -> str | None:
    """A scope string (None for no scopes: the parameter is omitted)."""
    return " ".join(scopes) if scopes else None
