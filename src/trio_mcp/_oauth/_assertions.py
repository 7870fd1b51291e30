"""JWT client assertions: ``private_key_jwt`` client authentication (RFC 7523 §2.2).

Instead of a shared secret the client proves who it is with a short-lived JWT
signed by its private key (the authorization server holds the public key,
registered beforehand). The token request carries

* ``client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer``
* ``client_assertion=<JWT>`` whose claims are ``iss`` = ``sub`` = the client
  id, ``aud`` = the authorization server's issuer identifier (RFC 7523bis:
  the issuer, not the token endpoint URL), a unique ``jti`` (servers refuse a
  replay), ``iat`` and an ``exp`` a minute later (§3: a short lifetime).

joserfc (the ``auth`` extra) imports the key and signs; nothing is
hand-written crypto.

Cancellation: nothing here waits.

Spec: the OAuth client credentials extension (SEP-1046, ``private_key_jwt``).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, RSAKey

from .._errors import AuthorizationFailed
from ._dpop import ALGORITHMS

#: ``client_assertion_type`` of a JWT client assertion (RFC 7523 §2.2).
JWT_BEARER_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

_Key = ECKey | RSAKey


class AssertionKeyError(AuthorizationFailed):
    """A client assertion key that cannot sign (not a private key for the algorithm)."""


class PrivateKeyJWT:
    """Signs ``private_key_jwt`` client assertions for *client_id* (RFC 7523 §2.2, §3).

    *private_key* is a PEM (PKCS#8 or the key type's own) or a private JWK;
    *algorithm* an asymmetric JWS algorithm that fits it (ES256 by default).
    *lifetime* is how long an assertion is valid, in seconds. The key is
    never part of the object's repr or of an error message.
    """

    def __init__(
        self,
        client_id: str,
        private_key: str | bytes | Mapping[str, Any],
        algorithm: str = "ES256",
        *,
        lifetime: int = 60,
        key_id: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        expected = ALGORITHMS.get(algorithm)
        if expected is None:
            raise AssertionKeyError(f"{algorithm!r} is not an asymmetric JWS algorithm")
        key_class: type[_Key] = {"EC": ECKey, "RSA": RSAKey}[expected[0]]  # type: ignore[assignment]
        material = dict(private_key) if isinstance(private_key, Mapping) else private_key
        try:
            key = key_class.import_key(material)
        except (JoseError, ValueError, TypeError) as exc:
            raise AssertionKeyError(
                f"the client assertion key is not a {expected[0]} key ({type(exc).__name__})"
            ) from None
        if not key.is_private:
            raise AssertionKeyError("the client assertion key has no private half")
        curve = expected[1]
        if curve is not None and key.as_dict().get("crv") != curve:
            raise AssertionKeyError(f"the client assertion key does not fit {algorithm}")
        if lifetime <= 0:
            raise ValueError("lifetime must be positive")
        self.client_id = client_id
        self.algorithm = algorithm
        self.lifetime = lifetime
        self.key_id = key_id
        self._key = key
        self._clock = clock

    def __repr__(self) -> str:
        return f"PrivateKeyJWT({self.client_id!r}, {self.algorithm})"

    def assertion(self, audience: str) -> str:
        """A new signed assertion for the authorization server *audience* (its issuer)."""
        now = int(self._clock())
        claims = {
            "iss": self.client_id,
            "sub": self.client_id,
            "aud": audience,
            "jti": secrets.token_urlsafe(16),
            "iat": now,
            "exp": now + self.lifetime,
        }
        header: dict[str, Any] = {"alg": self.algorithm, "typ": "JWT"}
        if self.key_id is not None:
            header["kid"] = self.key_id
        return jwt.encode(header, claims, self._key, algorithms=[self.algorithm])

    def form(self, audience: str) -> dict[str, str]:
        """The token request parameters that authenticate the client (RFC 7523 §2.2)."""
        return {
            "client_assertion_type": JWT_BEARER_ASSERTION,
            "client_assertion": self.assertion(audience),
        }


__all__ = ["JWT_BEARER_ASSERTION", "AssertionKeyError", "PrivateKeyJWT"]
