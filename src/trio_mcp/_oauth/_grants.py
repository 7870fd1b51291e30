"""The extension grants: tokens without a user at a browser.

Each is a :class:`~trio_mcp._oauth._types.Grant` the provider runs once
discovery has found the authorization server (AS) and the client's
credentials there; each sends the RFC 8707 ``resource`` (AU-08) and the
chosen ``scope``, and each token request goes through
:meth:`GrantContext.token_request` (the client's authentication by Authlib,
a DPoP proof when the provider has a signer, one retry on a DPoP nonce).

* :class:`ClientCredentialsGrant`: the client acts on its own behalf (RFC 6749
  §4.4; the MCP client credentials extension, SEP-1046). It authenticates
  with its secret (``client_secret_basic`` or ``client_secret_post``) or with a
  signed JWT (``private_key_jwt``, RFC 7523 §2.2:
  :class:`~trio_mcp._oauth._assertions.PrivateKeyJWT`).
* :class:`EnterpriseManagedGrant`: enterprise-managed authorization (SEP-990,
  "cross-app access"). The user signed in to the enterprise identity provider
  (IdP) once; the client trades that ID token at the IdP for an *identity
  assertion JWT authorization grant* (ID-JAG) aimed at this AS and resource
  (RFC 8693 token exchange), then trades the ID-JAG at the AS for an access
  token (RFC 7523 JWT bearer grant).
* :class:`JwtBearerGrant`: workload identity federation (SEP-1933). A
  workload's platform-issued JWT is the grant itself (RFC 7523 §2.1). A
  refused assertion is reported, never retried and never followed by another
  grant type: the same assertion would be refused again.

Answers that are not a usable token (no JSON, no ``access_token``, a
``token_type`` the client cannot use) are :class:`AuthorizationFailed`
subclasses naming what was wrong, never the token.

Cancellation: ``obtain`` may be cancelled at any point (it is a few HTTP
requests on the provider's client); nothing is stored until it returns.

Spec: AU-08 (resource), AU-14 (client authentication); the extensions
SEP-1046 (client credentials), SEP-990 (enterprise-managed authorization),
SEP-1933 (workload identity federation).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .._errors import AuthorizationFailed
from ._types import AuthServerMetadata, ClientInfo, GrantContext, TokenResponse

if TYPE_CHECKING:
    # Only a type here: joserfc (the auth extra) is imported by whoever makes
    # the assertion signer, not by importing the grants.
    from ._assertions import PrivateKeyJWT

CLIENT_CREDENTIALS = "client_credentials"
#: RFC 7523 §2.1: a JWT as an authorization grant.
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
#: RFC 8693 §2.1.
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
#: The identity assertion JWT authorization grant (SEP-990).
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"

#: A token given as a string, or got fresh for each grant (an ID token or a
#: workload JWT expires; the callable is awaited each time tokens are needed).
TokenSource = str | Callable[[], Awaitable[str]]


class UnusableToken(AuthorizationFailed):
    """The authorization server issued a token this client cannot present
    (an unknown ``token_type``, or DPoP without a DPoP key)."""


class TokenExchangeFailed(AuthorizationFailed):
    """The identity provider refused the token exchange, or answered with
    something that is not an ID-JAG (SEP-990)."""


async def _resolve(source: TokenSource) -> str:
    value = source if isinstance(source, str) else await source()
    if not isinstance(value, str) or not value:
        raise AuthorizationFailed("the assertion source gave no token")
    return value


def _base_form(grant_type: str, ctx: GrantContext, scope: str | None) -> dict[str, str]:
    form = {"grant_type": grant_type}
    chosen = scope if scope is not None else ctx.scope
    if chosen:
        form["scope"] = chosen
    form["resource"] = ctx.resource
    return form


def checked_token(tokens: TokenResponse, ctx: GrantContext) -> TokenResponse:
    """*tokens* if the client can present them: ``Bearer``, or ``DPoP`` when
    it holds a DPoP key (RFC 9449 §5); else :class:`UnusableToken`."""
    kind = tokens.token_type.lower()
    if kind == "bearer":
        return tokens
    if kind == "dpop":
        if ctx.dpop is None:
            raise UnusableToken(
                "the token endpoint issued a DPoP token to a client without a DPoP key"
            )
        return tokens
    raise UnusableToken(
        f"the token endpoint issued a token of unknown type {tokens.token_type[:40]!r}"
    )


@attrs.frozen
class ClientCredentialsGrant:
    """The client credentials grant (RFC 6749 §4.4; SEP-1046).

    Without *assertion* the client authenticates with the secret of its
    credentials at the AS (``client_secret_basic``, or ``client_secret_post``
    when that is its registered method or the only one the AS lists). With
    *assertion* it sends a ``private_key_jwt`` client assertion (RFC 7523
    §2.2) whose audience is the AS's issuer, and its ``client_id``. *scope*,
    when given, overrides the scope the provider chose.
    """

    assertion: PrivateKeyJWT | None = None
    scope: str | None = None

    def client_metadata(self, metadata: AuthServerMetadata) -> Mapping[str, Any] | None:
        """What a registration must say: no redirect, the client credentials
        grant. None with an assertion: the assertion names the client, whose
        key the server knows beforehand, so there is nothing to register."""
        if self.assertion is not None:
            return None
        return {
            "grant_types": [CLIENT_CREDENTIALS],
            "response_types": [],
            "redirect_uris": [],
            "token_endpoint_auth_method": "client_secret_basic",
        }

    async def obtain(self, ctx: GrantContext) -> TokenResponse:
        form = _base_form(CLIENT_CREDENTIALS, ctx, self.scope)
        if self.assertion is not None:
            # The assertion is the authentication: no secret, the client_id in
            # the form (Authlib's "none" method adds it), RFC 7523 §3.
            form.update(self.assertion.form(ctx.issuer))
            client = ClientInfo(
                self.assertion.client_id, token_endpoint_auth_method="none", issuer=ctx.issuer
            )
            ctx = attrs.evolve(ctx, client=client)
        elif ctx.client is None or not ctx.client.client_secret:
            raise AuthorizationFailed(
                "the client credentials grant needs a client secret or a private_key_jwt assertion"
            )
        return checked_token(await ctx.token_request(form), ctx)


@attrs.frozen
class JwtBearerGrant:
    """The JWT bearer grant with a workload's JWT (RFC 7523 §2.1; SEP-1933).

    *assertion* is the JWT (or an async callable giving a fresh one each
    time). The client authenticates as its credentials say (usually a
    public client: ``none``, its ``client_id`` in the form). A refusal
    (``invalid_grant``, ``invalid_scope``, ``unauthorized_client``) is raised as
    it is: not retried, and no other grant type is tried.
    """

    assertion: TokenSource = attrs.field(repr=False)
    scope: str | None = None

    def client_metadata(self, metadata: AuthServerMetadata) -> Mapping[str, Any] | None:
        return {"grant_types": [JWT_BEARER], "response_types": [], "redirect_uris": []}

    async def obtain(self, ctx: GrantContext) -> TokenResponse:
        form = _base_form(JWT_BEARER, ctx, self.scope)
        form["assertion"] = await _resolve(self.assertion)
        return checked_token(await ctx.token_request(form), ctx)


@attrs.frozen
class EnterpriseManagedGrant:
    """Enterprise-managed authorization (SEP-990): ID token → ID-JAG → access token.

    1. RFC 8693 token exchange at the IdP's token endpoint
       *idp_token_endpoint*: ``subject_token`` = the user's ID token
       (*id_token*, type ``id_token``), ``requested_token_type`` = ID-JAG,
       ``audience`` = the AS's issuer, ``resource`` = the MCP server's
       resource, the scope; the client authenticates at the IdP as
       *idp_client_id* (with *idp_client_secret*, ``client_secret_basic``;
       without, ``none``).
    2. RFC 7523 JWT bearer grant at the AS with the ID-JAG as ``assertion``,
       authenticated with the client's credentials at the AS (SEP-990:
       ``client_secret_basic``).

    The IdP's answer must name ``issued_token_type`` ID-JAG (RFC 8693
    §2.2.1); anything else is :class:`TokenExchangeFailed`.
    """

    id_token: TokenSource = attrs.field(repr=False)
    idp_token_endpoint: str
    idp_client_id: str
    idp_client_secret: str | None = attrs.field(default=None, repr=False)
    scope: str | None = None

    def client_metadata(self, metadata: AuthServerMetadata) -> Mapping[str, Any] | None:
        return {"grant_types": [JWT_BEARER], "response_types": [], "redirect_uris": []}

    async def obtain(self, ctx: GrantContext) -> TokenResponse:
        id_jag = await self.exchange(ctx)
        form = _base_form(JWT_BEARER, ctx, self.scope)
        form["assertion"] = id_jag
        return checked_token(await ctx.token_request(form), ctx)

    async def exchange(self, ctx: GrantContext) -> str:
        """Step 1: the ID-JAG for this AS and resource, from the IdP (RFC 8693)."""
        from ._client_auth import prepare_token_request

        form = _base_form(TOKEN_EXCHANGE, ctx, self.scope)
        form.update(
            {
                "requested_token_type": ID_JAG_TYPE,
                "audience": ctx.issuer,
                "subject_token": await _resolve(self.id_token),
                "subject_token_type": ID_TOKEN_TYPE,
            }
        )
        method = "client_secret_basic" if self.idp_client_secret else "none"
        headers, body = prepare_token_request(
            self.idp_client_id, self.idp_client_secret, method, form
        )
        response = await ctx.http.post(self.idp_token_endpoint, content=body, headers=headers)
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code != 200:
            error = data.get("error") if isinstance(data, dict) else None
            described = f" ({error[:80]})" if isinstance(error, str) else ""
            raise TokenExchangeFailed(
                "the identity provider refused the token exchange: "
                f"HTTP {response.status_code}{described}"
            )
        if not isinstance(data, dict):
            raise TokenExchangeFailed(
                "the identity provider's token exchange answer is not a JSON object"
            )
        token = data.get("access_token")
        if not isinstance(token, str) or not token:
            raise TokenExchangeFailed("the identity provider answered without an access_token")
        issued = data.get("issued_token_type")
        if issued != ID_JAG_TYPE:
            shown = issued[:80] if isinstance(issued, str) else issued
            raise TokenExchangeFailed(
                f"the identity provider issued {shown!r}, not an ID-JAG ({ID_JAG_TYPE})"
            )
        return token


__all__ = [
    "CLIENT_CREDENTIALS",
    "ID_JAG_TYPE",
    "ID_TOKEN_TYPE",
    "JWT_BEARER",
    "TOKEN_EXCHANGE",
    "ClientCredentialsGrant",
    "EnterpriseManagedGrant",
    "JwtBearerGrant",
    "TokenExchangeFailed",
    "TokenSource",
    "UnusableToken",
    "checked_token",
]
