"""What a verified access token says, and what verifies one (AU-08..AU-11).

The resource server never hands the raw token to handlers (no token
passthrough, AU-11): a :class:`TokenVerifier` turns the bearer token of a
request into an :class:`AccessToken` (who, which scopes, until when, for which
resource), or refuses it with :class:`InvalidToken`; the HTTP app answers a
refusal with 401 and the challenge, a missing scope with 403
``insufficient_scope`` (AU-12).

Implementations: the JWT verifier (a JWKS, RFC 7519/8725 checks) and the RFC
7662 introspection verifier, in modules of their own that import the ``auth``
extra when used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import attrs

from .._errors import MCPError


class InvalidToken(MCPError):
    """The bearer token is not acceptable: malformed, not signed by a trusted
    key, expired, for another audience or issuer, revoked or inactive.

    ``reason`` is for logs (never the token itself); the HTTP answer says only
    ``error="invalid_token"`` (RFC 6750 §3.1).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class VerifierUnavailable(MCPError):
    """The verifier could not decide (the JWKS or the introspection endpoint
    was unreachable): the request is answered 503, not 401, so a client does
    not throw away a good token."""


@attrs.frozen(kw_only=True)
class AccessToken:
    """A verified access token, as handlers see it (``ctx.auth``).

    Never holds the raw token.

    Spec: AU-11.
    """

    #: Who the token speaks for (the ``sub`` claim, or the introspection's).
    subject: str
    #: The OAuth client it was issued to (``client_id`` / ``azp``), if known.
    client_id: str | None = None
    #: The scopes it grants.
    scopes: frozenset[str] = frozenset()
    #: Seconds since the epoch when it expires, if it says.
    expires_at: float | None = None
    #: The issuer (``iss``) it was checked against, if any.
    issuer: str | None = None
    #: The audiences (``aud``) it names (this server's resource among them).
    audience: tuple[str, ...] = ()
    #: Other claims a handler may read (never secrets; the verifier chooses).
    claims: Mapping[str, Any] = attrs.field(factory=dict)

    @property
    def principal(self) -> tuple[str | None, str]:
        """The authorization context requests, tasks and sessions are bound
        to: (issuer, subject)."""
        return (self.issuer, self.subject)

    def has_scopes(self, needed: frozenset[str] | set[str]) -> bool:
        return set(needed) <= self.scopes


class TokenVerifier(Protocol):
    """Turns a request's bearer token into an :class:`AccessToken`."""

    async def verify(self, token: str) -> AccessToken:
        """The verified token.

        Raises:
            InvalidToken: the token is not acceptable (401).
            VerifierUnavailable: the verifier cannot decide now (503).

        Cancellation: cancellable; nothing is cached from a cancelled check.
        """
        ...


class InsufficientScope(InvalidToken):
    """The token is valid but lacks scopes the verifier requires: answered 403
    ``insufficient_scope`` rather than 401 (RFC 6750 §3.1).

    ``scopes`` are the missing ones (scope names are not secrets).

    Spec: AU-12.
    """

    def __init__(self, scopes: frozenset[str] | set[str]) -> None:
        super().__init__(f"missing scopes: {' '.join(sorted(scopes))}")
        self.scopes = frozenset(scopes)
