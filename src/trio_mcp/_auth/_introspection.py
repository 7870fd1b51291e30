"""Verifying opaque access tokens by asking the authorization server
(RFC 7662 token introspection; AU-08..AU-11).

Theory. An opaque token means nothing to the resource server: it POSTs it
(form-encoded ``token``) to the AS's introspection endpoint, authenticating as
a client with HTTP Basic, and the AS answers whether it is ``active`` and, if
so, for whom (``sub``), which ``scope``, until when (``exp``), for which
audience (``aud``) and by which issuer (``iss``). This verifier accepts only
an active token with a subject, not past its ``exp``, naming this server's
resource in ``aud`` when an audience is configured (RFC 8707; AU-11) and from
the configured issuer when one is.

Positive answers are cached so that every request does not cost a round trip,
keyed by the SHA-256 of the token (the token itself is never stored, AU-11),
for ``min(cache_seconds, exp - now)``: a revoked token is accepted at most
``cache_seconds`` after its revocation, the price of the cache. Refusals are
not cached (an attacker's garbage must not fill the cache). The cache holds at
most ``max_entries``; the oldest entry goes first.

Errors: :class:`InvalidToken` (401) with a reason that never holds the token;
an endpoint that is unreachable or answers other than 200 with a JSON object
is :class:`VerifierUnavailable` (503).

Cancellation: :meth:`IntrospectionVerifier.verify` is cancellable; nothing is
cached from a cancelled introspection.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import httpx

from ._fetch import fetch_json
from ._token import AccessToken, InsufficientScope, InvalidToken

#: Tokens longer than this are refused without asking the AS.
MAX_TOKEN_LENGTH = 16 * 1024


class IntrospectionVerifier:
    """A :class:`~trio_mcp.auth.TokenVerifier` asking an RFC 7662 introspection endpoint
    (see the module docstring).

    Args:
        endpoint: the AS's ``introspection_endpoint``.
        client_id, client_secret: this resource server's client credentials
            (HTTP Basic, RFC 7662 §2.1).
        audience: this server's canonical resource URI, which ``aud`` must
            name; None: ``aud`` is not checked.
        issuer: the ``iss`` the answer must carry; None: not checked.
        required_scopes: scopes every token must grant.
        cache_seconds: the longest a positive answer is reused.
        max_entries: the cache's bound.
        http: an httpx client to post with (one per request when None).
        clock: seconds since the epoch (``time.time``; tests inject one).

    Spec: AU-08, AU-09, AU-10, AU-11.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        client_id: str,
        client_secret: str,
        audience: str | None = None,
        issuer: str | None = None,
        required_scopes: Iterable[str] = (),
        cache_seconds: float = 60.0,
        max_entries: int = 10_000,
        http: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if cache_seconds < 0:
            raise ValueError("cache_seconds must not be negative")
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.endpoint = endpoint
        self.audience = audience
        self.issuer = issuer
        self.required_scopes = frozenset(required_scopes)
        self._auth = httpx.BasicAuth(client_id, client_secret)
        self._cache_seconds = cache_seconds
        self._max_entries = max_entries
        self._http = http
        self._clock = clock
        # SHA-256 of the token -> (the verified token, reused until this time).
        self._cache: OrderedDict[bytes, tuple[AccessToken, float]] = OrderedDict()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (e.g. to ``serve_http(workers=N)``'s worker processes) as its
        configuration and credentials only: no cache (a revocation must not
        outlive its cache entry in a worker that was handed one), no httpx
        client (a live connection pool cannot cross processes; each process
        posts with its own)."""
        state = dict(vars(self))
        state.update(_http=None, _cache=OrderedDict())
        return state

    async def verify(self, token: str) -> AccessToken:
        """The verified token (see :class:`TokenVerifier`).

        Raises:
            InvalidToken: inactive, expired, for another audience or issuer.
            InsufficientScope: active, but a required scope is missing.
            VerifierUnavailable: the endpoint could not be asked.

        Cancellation: cancellable; nothing is cached from a cancelled call.
        """
        if not token or len(token) > MAX_TOKEN_LENGTH:
            raise InvalidToken("token empty or too long")
        digest = hashlib.sha256(token.encode()).digest()
        cached = self._cache.get(digest)
        if cached is not None:
            verified, until = cached
            if self._clock() < until:
                return verified
            del self._cache[digest]
        answer = await fetch_json(
            self._http,
            "POST",
            self.endpoint,
            data={"token": token, "token_type_hint": "access_token"},
            auth=self._auth,
            headers={"accept": "application/json"},
        )
        verified = self._check(answer)
        now = self._clock()
        lifetime = self._cache_seconds
        if verified.expires_at is not None:
            lifetime = min(lifetime, verified.expires_at - now)
        if lifetime > 0:
            self._cache[digest] = (verified, now + lifetime)
            self._cache.move_to_end(digest)
            while len(self._cache) > self._max_entries:
                self._cache.popitem(last=False)
        return verified

    def _check(self, answer: dict[str, Any]) -> AccessToken:
        if answer.get("active") is not True:
            raise InvalidToken("token is not active")
        now = self._clock()
        exp = answer.get("exp")
        if exp is not None:
            if not _is_number(exp):
                raise InvalidToken("exp is not a number")
            if exp <= now:
                raise InvalidToken("token expired")
        nbf = answer.get("nbf")
        if nbf is not None and (not _is_number(nbf) or nbf > now):
            raise InvalidToken("token not yet valid")
        aud = answer.get("aud")
        audiences: tuple[str, ...]
        if isinstance(aud, str):
            audiences = (aud,)
        elif isinstance(aud, list) and all(isinstance(item, str) for item in aud):
            audiences = tuple(aud)
        elif aud is None:
            audiences = ()
        else:
            raise InvalidToken("aud is not a string or a list of strings")
        if self.audience is not None and self.audience not in audiences:
            raise InvalidToken("token is for another audience")
        iss = answer.get("iss")
        if self.issuer is not None and iss != self.issuer:
            raise InvalidToken("token is from another issuer")
        subject = answer.get("sub")
        if not isinstance(subject, str) or not subject:
            raise InvalidToken("introspection names no subject")
        scope = answer.get("scope")
        scopes = frozenset(scope.split()) if isinstance(scope, str) else frozenset()
        missing = self.required_scopes - scopes
        if missing:
            raise InsufficientScope(missing)
        client_id = answer.get("client_id")
        return AccessToken(
            subject=subject,
            client_id=client_id if isinstance(client_id, str) else None,
            scopes=scopes,
            expires_at=float(exp) if exp is not None else None,
            issuer=iss if isinstance(iss, str) else None,
            audience=audiences,
            claims={
                name: answer[name]
                for name in ("iss", "sub", "aud", "exp", "iat", "nbf", "client_id", "scope")
                if name in answer
            },
        )


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value
