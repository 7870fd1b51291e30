"""The authorization code grant with PKCE (OAuth 2.1 §4.1), and refresh.

:class:`AuthorizationCodeGrant` is the provider's default grant: it builds the
authorization URL (``response_type=code``, the client id, the redirect URI, a
random ``state``, a PKCE S256 challenge, the RFC 8707 ``resource`` and the
chosen scope), hands it to the :class:`~trio_mcp._oauth._types.RedirectHandler`
and checks the redirect before redeeming its code: the ``state`` must be the
one sent, an ``iss`` present must be the recorded issuer exactly (no
normalization), and an ``iss`` must be present when the server advertises
``authorization_response_iss_parameter_supported`` (RFC 9207). A server whose
metadata does not list S256 in ``code_challenge_methods_supported`` is
refused before any request (only the 2025-03-26 default endpoints, which have
no metadata, are used with S256 anyway). The code goes to the token endpoint
with the verifier, the same redirect URI and the same ``resource``.

PKCE challenges, random values and URL building are Authlib's.

Spec: AU-08, AU-13, AU-14, AU-15.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs

from .._errors import AuthorizationFailed
from ._types import AuthServerMetadata, GrantContext, RedirectHandler, TokenResponse

logger = logging.getLogger("trio_mcp.oauth")

_LOOPBACK = ("localhost", "127.0.0.1", "::1")


def check_endpoint(url: str) -> None:
    """An authorization endpoint must be HTTPS, or HTTP on a loopback host (SEC-10, AU-14)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "https" or (scheme == "http" and (parts.hostname or "") in _LOOPBACK):
        return
    raise AuthorizationFailed(f"refused the authorization endpoint {url!r}: not HTTPS")


class AuthorizationCodeGrant:
    """The authorization code grant with PKCE S256, through *redirect*.

    Cancellation: cancelling :meth:`obtain` abandons the flow (the redirect
    handler is cancelled with it); the code, verifier and state are forgotten.
    """

    def __init__(self, redirect: RedirectHandler) -> None:
        self.redirect = redirect

    def client_metadata(self, metadata: AuthServerMetadata) -> Mapping[str, Any] | None:
        return {
            "redirect_uris": [self.redirect.redirect_uri],
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
        }

    async def obtain(self, ctx: GrantContext) -> TokenResponse:
        from authlib.common.security import generate_token
        from authlib.common.urls import add_params_to_uri
        from authlib.oauth2.rfc7636 import create_s256_code_challenge

        metadata = ctx.metadata
        endpoint = metadata.authorization_endpoint
        if endpoint is None:
            raise AuthorizationFailed(f"{metadata.issuer} has no authorization_endpoint")
        check_endpoint(endpoint)
        if not metadata.fallback and "S256" not in (
            metadata.code_challenge_methods_supported or ()
        ):
            raise AuthorizationFailed(
                f"{metadata.issuer} does not advertise PKCE S256 in "
                "code_challenge_methods_supported: refusing to authorize (AU-13)"
            )
        if ctx.client is None:
            raise AuthorizationFailed("the authorization code grant needs a client id")
        verifier: str = generate_token(64)
        state: str = generate_token(32)
        redirect_uri = self.redirect.redirect_uri
        params = [
            ("response_type", "code"),
            ("client_id", ctx.client.client_id),
            ("redirect_uri", redirect_uri),
            ("state", state),
            ("code_challenge", create_s256_code_challenge(verifier)),
            ("code_challenge_method", "S256"),
            ("resource", ctx.resource),
        ]
        if ctx.scope:
            params.append(("scope", ctx.scope))
        url: str = add_params_to_uri(endpoint, params)
        logger.debug("authorizing with %s", metadata.issuer)
        answered = await self.redirect.authorize(url)
        code = check_redirect(answered, redirect_uri, state=state, metadata=metadata)
        return await ctx.token_request(
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "code_verifier": verifier,
                "resource": ctx.resource,
            }
        )


def check_redirect(
    answered: str, redirect_uri: str, *, state: str, metadata: AuthServerMetadata
) -> str:
    """The code of the redirect *answered*, after the checks (AU-14, AU-15)."""
    parts = urlsplit(answered)
    expected = urlsplit(redirect_uri)
    if (parts.scheme, parts.netloc, parts.path) != (
        expected.scheme,
        expected.netloc,
        expected.path,
    ):
        raise AuthorizationFailed(
            "the authorization server redirected somewhere other than the redirect URI"
        )
    query = parse_qs(parts.query, keep_blank_values=True)

    def one(name: str) -> str | None:
        values = query.get(name)
        if values is None:
            return None
        if len(values) != 1:
            raise AuthorizationFailed(f"the redirect carries {name!r} more than once")
        return values[0]

    if one("state") != state:
        raise AuthorizationFailed("the redirect's state is not the one sent (AU-14)")
    iss = one("iss")
    if iss is not None and iss != metadata.issuer:
        raise AuthorizationFailed(
            f"the redirect's iss {iss!r} is not the recorded issuer {metadata.issuer!r} (AU-15)"
        )
    if iss is None and metadata.iss_parameter_supported:
        raise AuthorizationFailed(
            f"{metadata.issuer} advertises the iss parameter but the redirect has none (AU-15)"
        )
    error = one("error")
    if error is not None:
        raise AuthorizationFailed(f"the authorization server answered error={error!r}")
    code = one("code")
    if not code:
        raise AuthorizationFailed("the redirect carries no code")
    return code


async def refresh(ctx: GrantContext, tokens: TokenResponse) -> TokenResponse:
    """Refresh *tokens* (OAuth 2.1 §4.3) with the same ``resource``; a new
    refresh token replaces the old one (rotation), and the old one is kept
    only when the server sends none (AU-14)."""
    if tokens.refresh_token is None:
        raise AuthorizationFailed("no refresh token")
    fresh = await ctx.token_request(
        {
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
            "resource": ctx.resource,
        }
    )
    if fresh.refresh_token is None:
        fresh = attrs.evolve(
            fresh, refresh_token=tokens.refresh_token, scope=fresh.scope or tokens.scope
        )
    return fresh
