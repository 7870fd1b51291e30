"""Verifying JWT access tokens against an authorization server's JWKS
(AU-08..AU-11; RFC 7519, RFC 8725, RFC 8707).

Theory. A JWT access token is a signed statement by the authorization server
(AS): "*sub* may use *aud* with *scope* until *exp*". The resource server
trusts it when, and only when:

* it is signed (JWS compact) with an algorithm this verifier allows, by a key
  the AS publishes in its JWKS. The allowed list is fixed at construction and
  holds only asymmetric algorithms: ``none`` and the HMAC family are refused
  outright, so a token whose header says ``HS256`` cannot turn the AS's public
  key into a shared secret (algorithm confusion, RFC 8725 §2.1, §3.1). The
  header's ``alg`` must also fit the key's type (joserfc checks it);
* ``iss`` is the configured issuer (RFC 8725 §3.8);
* ``aud`` names this server's canonical resource URI (RFC 8707; a token for
  another resource is not ours to accept, which is what stops token
  passthrough between servers, AU-11);
* ``exp`` is present and not past, ``nbf`` and ``iat`` not in the future, each
  with a bounded leeway for clock skew (at most :data:`MAX_LEEWAY` seconds);
* ``sub`` is present (the principal requests, tasks and sessions bind to).

Keys are fetched from the JWKS URL and cached for ``jwks_cache_seconds``. A
token whose ``kid`` is not in the cached set triggers one refetch (the AS may
have rotated keys), but at most one per ``min_refetch_interval`` seconds: a
flood of tokens with made-up kids is refused from the cache without hammering
the AS. Concurrent verifications share one fetch (a lock; the cache is
re-read after it). A failed fetch is not retried for ``min_refetch_interval``
either: meanwhile verifications needing a fetch are :class:`VerifierUnavailable`
at once, so a burst of requests does not queue one fetch each on a down AS.

Errors: a token that is not acceptable is :class:`InvalidToken` (401) whose
reason never contains the token; a JWKS that cannot be fetched is
:class:`VerifierUnavailable` (503).

joserfc (the ``auth`` extra) does every piece of parsing and cryptography;
this is the only module that imports it.

Cancellation: :meth:`JWTVerifier.verify` is cancellable; a cancelled JWKS
fetch caches nothing (the previous key set, if any, stays, and the next
verification fetches again), and a cancelled refetch for an unknown ``kid``
still counts against ``min_refetch_interval``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import httpx
import orjson
import trio
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import Key, KeySet
from joserfc.jwt import JWTClaimsRegistry

from ._fetch import fetch_json
from ._token import AccessToken, InsufficientScope, InvalidToken, VerifierUnavailable

#: The default allowed signature algorithms: asymmetric only.
DEFAULT_ALGORITHMS = ("RS256", "ES256", "EdDSA")
#: Algorithms never allowed: no signature, or a shared secret (RFC 8725 §3.1, §2.1).
FORBIDDEN_ALGORITHMS = frozenset({"none", "HS256", "HS384", "HS512"})
#: The largest clock-skew leeway accepted (RFC 7519: "usually no more than a few minutes").
MAX_LEEWAY = 300.0
#: Tokens longer than this are refused before parsing (an access token is a few KiB).
MAX_TOKEN_LENGTH = 16 * 1024


class JWTVerifier:
    """A :class:`~trio_mcp.auth.TokenVerifier` for JWT access tokens signed by keys of a
    JWKS (see the module docstring for what is checked).

    Args:
        jwks_url: where the AS publishes its keys (``jwks_uri`` of its metadata).
        issuer: the ``iss`` every token must carry.
        audience: this server's canonical resource URI, which ``aud`` must name.
        algorithms: the allowed ``alg`` values; ``none`` and HMAC are refused.
        leeway: seconds of clock skew allowed on ``exp``/``nbf``/``iat``
            (0 to :data:`MAX_LEEWAY`).
        required_scopes: scopes every token must grant
            (:class:`InsufficientScope` otherwise).
        http: an httpx client to fetch with (one per fetch when None).
        clock: seconds since the epoch (``time.time``; tests inject one).
        jwks_cache_seconds: how long a fetched key set is used.
        min_refetch_interval: the least time between refetches caused by an
            unknown ``kid``.

    Spec: AU-08, AU-09, AU-10, AU-11.
    """

    def __init__(
        self,
        jwks_url: str,
        *,
        issuer: str,
        audience: str,
        algorithms: Iterable[str] = DEFAULT_ALGORITHMS,
        leeway: float = 60.0,
        required_scopes: Iterable[str] = (),
        http: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
        jwks_cache_seconds: float = 300.0,
        min_refetch_interval: float = 30.0,
    ) -> None:
        allowed = tuple(algorithms)
        if not allowed:
            raise ValueError("algorithms must name at least one algorithm")
        refused = FORBIDDEN_ALGORITHMS.intersection(allowed)
        if refused:
            raise ValueError(f"algorithms {sorted(refused)} are not allowed with a JWKS")
        if not 0 <= leeway <= MAX_LEEWAY:
            raise ValueError(f"leeway must be between 0 and {MAX_LEEWAY} seconds")
        if not issuer or not audience:
            raise ValueError("issuer and audience are required")
        self.jwks_url = jwks_url
        self.issuer = issuer
        self.audience = audience
        self.algorithms = allowed
        self.leeway = leeway
        self.required_scopes = frozenset(required_scopes)
        self._http = http
        self._clock = clock
        self._cache_seconds = jwks_cache_seconds
        self._min_refetch = min_refetch_interval
        self._keys: KeySet | None = None
        # Clock readings: the last successful fetch, the last fetch attempt,
        # the last failed one.
        self._fetched_at = float("-inf")
        self._attempted_at = float("-inf")
        self._failed_at = float("-inf")
        # Bumped on every successful fetch, so a waiter sees someone else's.
        self._generation = 0
        self._lock = trio.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (e.g. to ``serve_http(workers=N)``'s worker processes) as its
        configuration only: no key cache, no lock, no httpx client (a live
        connection pool cannot cross processes; each process fetches with its
        own). So every worker starts with an empty cache and fetches the JWKS
        itself, never trusting keys handed over in a pickle."""
        state = dict(vars(self))
        state.update(
            _http=None,
            _keys=None,
            _fetched_at=float("-inf"),
            _attempted_at=float("-inf"),
            _failed_at=float("-inf"),
            _generation=0,
        )
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)
        self._lock = trio.Lock()

    async def verify(self, token: str) -> AccessToken:
        """The verified token (see :class:`TokenVerifier`).

        Raises:
            InvalidToken: not acceptable (the reason never holds the token).
            InsufficientScope: valid, but a required scope is missing.
            VerifierUnavailable: the JWKS could not be fetched.

        Cancellation: cancellable; see the module docstring.
        """
        if len(token) > MAX_TOKEN_LENGTH:
            raise InvalidToken("token too long")
        try:
            signed = jws.extract_compact(token.encode("ascii"))
            header = signed.headers()
        except (JoseError, ValueError, UnicodeError):
            raise InvalidToken("malformed JWT") from None
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise InvalidToken(f"signature algorithm {_short(alg)} not allowed")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("kid is not a string")

        key = await self._key_for(kid)
        try:
            good = jws.validate_compact(signed, key, algorithms=self.algorithms)
        except (JoseError, ValueError):
            # The key does not fit the algorithm (an EC key for RS256...).
            good = False
        if not good:
            raise InvalidToken("bad signature")
        try:
            claims = orjson.loads(signed.payload)
        except orjson.JSONDecodeError:
            raise InvalidToken("claims are not JSON") from None
        if not isinstance(claims, dict):
            raise InvalidToken("claims are not a JSON object")
        return self._check_claims(claims)

    def _check_claims(self, claims: dict[str, Any]) -> AccessToken:
        now = self._clock()
        registry = JWTClaimsRegistry(
            # joserfc compares whole seconds; the leeway absorbs the rounding.
            now=int(now),
            leeway=int(self.leeway),
            iss={"essential": True, "value": self.issuer},
            aud={"essential": True, "value": self.audience},
            sub={"essential": True},
            exp={"essential": True},
        )
        try:
            registry.validate(claims)
        except JoseError as exc:
            # joserfc's error names the claim and the check, not its value.
            raise InvalidToken(f"claims refused: {exc.error}: {exc.description}") from None
        scopes = _scopes(claims)
        missing = self.required_scopes - scopes
        if missing:
            raise InsufficientScope(missing)
        client_id = claims.get("client_id", claims.get("azp"))
        aud = claims["aud"]
        return AccessToken(
            subject=claims["sub"],
            client_id=client_id if isinstance(client_id, str) else None,
            scopes=scopes,
            expires_at=float(claims["exp"]),
            issuer=self.issuer,
            audience=(aud,) if isinstance(aud, str) else tuple(aud),
            claims=_public_claims(claims),
        )

    async def _key_for(self, kid: str | None) -> Key:
        """The JWKS key for *kid*: from the cache, after a fetch when the cache
        is stale, or after one rate-limited refetch when *kid* is unknown."""
        keys = await self._current_keys()
        found = _find(keys, kid)
        if found is not None:
            return found
        seen = self._generation
        async with self._lock:
            if self._generation == seen:
                if self._clock() - self._attempted_at < self._min_refetch:
                    raise InvalidToken("no key for the token's kid")
                await self._fetch()
        assert self._keys is not None
        found = _find(self._keys, kid)
        if found is None:
            raise InvalidToken("no key for the token's kid")
        return found

    async def _current_keys(self) -> KeySet:
        if self._keys is None or self._clock() - self._fetched_at >= self._cache_seconds:
            seen = self._generation
            async with self._lock:
                if self._generation == seen:
                    if self._clock() - self._failed_at < self._min_refetch:
                        # The AS was just found down: do not ask it again for
                        # every request of a burst (they queue on the lock).
                        raise VerifierUnavailable(f"{self.jwks_url} failed moments ago")
                    await self._fetch()
        assert self._keys is not None
        return self._keys

    async def _fetch(self) -> None:
        """Fetch the JWKS (with the lock held)."""
        self._attempted_at = self._clock()
        try:
            document = await self._fetch_document()
        except VerifierUnavailable:
            self._failed_at = self._clock()
            raise
        self._keys = document
        self._fetched_at = self._clock()
        self._generation += 1

    async def _fetch_document(self) -> KeySet:
        document = await fetch_json(self._http, "GET", self.jwks_url)
        try:
            keys = KeySet.import_key_set(document)  # type: ignore[arg-type]
        except (JoseError, ValueError, KeyError, TypeError):
            raise VerifierUnavailable(f"{self.jwks_url} is not a usable JWKS") from None
        if any(key.is_private for key in keys):
            # A JWKS with private keys is a misconfigured AS; never sign with it.
            raise VerifierUnavailable(f"{self.jwks_url} publishes private keys")
        return keys


def _find(keys: KeySet, kid: str | None) -> Key | None:
    """The signing key named *kid* (a JWKS of one key serves a token without kid)."""
    if kid is None:
        signing = [key for key in keys if key.get("use") in (None, "sig")]
        return signing[0] if len(signing) == 1 else None
    for key in keys:
        if key.kid == kid and key.get("use") in (None, "sig"):
            return key
    return None


def _scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """``scope`` (space-separated, RFC 8693/9068) or ``scp`` (a list, or a string)."""
    value = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(item for item in value if isinstance(item, str))
    return frozenset()


#: Claims handed on to handlers in AccessToken.claims: identity and timing,
#: nothing the AS may have put there for itself.
_PUBLIC_CLAIMS = ("iss", "sub", "aud", "exp", "nbf", "iat", "jti", "client_id", "azp", "scope")


def _public_claims(claims: Mapping[str, Any]) -> dict[str, Any]:
    return {name: claims[name] for name in _PUBLIC_CLAIMS if name in claims}


def _short(value: object) -> str:
    """A header or error value for a reason: repr, cut short (it is attacker-chosen)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
