"""DPoP: proof of possession for OAuth tokens (RFC 9449), the client's side.

Theory. A DPoP-bound access token is usable only together with a fresh proof,
signed by the private key the token was bound to, for the exact request it
accompanies. The client keeps one key pair (:class:`DPoPKey`) and signs a
small JWT (:meth:`DPoPKey.proof`) for every request:

* the header has ``typ: dpop+jwt``, an asymmetric ``alg`` and the *public*
  key as ``jwk`` (RFC 9449 §4.2), so the server can check the signature and
  bind the token to the key's RFC 7638 thumbprint (``cnf.jkt``);
* the claims are ``htm`` (the HTTP method), ``htu`` (the target URI without
  its query and fragment), ``iat``, a unique ``jti`` (servers refuse a replay),
  ``ath`` = base64url(SHA-256(access token)) when a token is presented to a
  resource server (§4.2, §7.1), and ``nonce`` once a server asked for one.

A server may demand a nonce of its choosing (§8 for the authorization server,
§9 for the resource server): it refuses the request, the AS with 400
``{"error": "use_dpop_nonce"}``, the RS with 401 and ``WWW-Authenticate: DPoP
error="use_dpop_nonce"``, and sends the nonce in ``DPoP-Nonce``; the client
retries once with a new proof carrying it. A server may also hand out a fresh
nonce on any answer. :class:`DPoP` remembers the last nonce of each
server (by origin: the AS and the RS are different servers with different
nonces) and puts it in every later proof to that server.

The token is then sent as ``Authorization: DPoP <token>`` (§7.1) instead of
``Bearer`` (:func:`authorization_header`).

joserfc (the ``auth`` extra) makes the keys, the thumbprints and the
signatures; this module only says what goes into the proof.

Cancellation: nothing here waits; signing is synchronous and quick.

Spec: the DPoP extension (SEP-1932; ``auth/dpop``, ``auth/dpop-nonce``).
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, RSAKey

from .._errors import AuthorizationFailed
from ._challenge import ChallengeError, parse_www_authenticate

#: Asymmetric JWS algorithms a proof may use (RFC 9449 §4.2: never ``none``
#: or a MAC), with the key type and curve each needs. (EdDSA is left out:
#: RFC 9864 deprecates the polymorphic name and joserfc refuses it.)
ALGORITHMS: Mapping[str, tuple[str, str | None]] = {
    "ES256": ("EC", "P-256"),
    "ES384": ("EC", "P-384"),
    "ES512": ("EC", "P-521"),
    "RS256": ("RSA", None),
    "RS384": ("RSA", None),
    "RS512": ("RSA", None),
    "PS256": ("RSA", None),
    "PS384": ("RSA", None),
    "PS512": ("RSA", None),
}

#: A nonce is 1*NQCHAR (RFC 9449 §8.1: %x21 / %x23-5B / %x5D-7E); a longer or
#: other value from a server is ignored rather than echoed into proofs.
_NONCE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]{1,512}")

_Key = ECKey | RSAKey


class DPoPError(AuthorizationFailed):
    """A DPoP key that cannot be used (unknown algorithm, a key that does not
    fit it, a PEM that is no private key)."""


class DPoPKey:
    """The client's DPoP key pair and the proofs it signs (RFC 9449 §4).

    Make one with :meth:`generate` (a fresh key, EC P-256 by default) or
    :meth:`from_pem` / :meth:`from_jwk` (a key the application keeps, so a
    token bound to it survives a restart). The private half never leaves the
    object: :attr:`public_jwk` is what proofs carry.
    """

    def __init__(self, key: _Key, algorithm: str = "ES256") -> None:
        expected = ALGORITHMS.get(algorithm)
        if expected is None:
            raise DPoPError(f"DPoP algorithm {algorithm!r} is not an asymmetric JWS algorithm")
        kty, curve = expected
        if key.key_type != kty or (curve is not None and key.as_dict().get("crv") != curve):
            raise DPoPError(f"the DPoP key does not fit the algorithm {algorithm}")
        if not key.is_private:
            raise DPoPError("a DPoP key needs its private half to sign proofs")
        self._key = key
        self.algorithm = algorithm
        public = key.as_dict(private=False)
        # Only the key's own members: no "kid", "use" or private parameters.
        self.public_jwk: dict[str, Any] = {
            k: v for k, v in public.items() if k in ("kty", "crv", "x", "y", "n", "e")
        }
        self.thumbprint: str = key.thumbprint()

    def __repr__(self) -> str:
        # Never the private key; the thumbprint identifies the key pair.
        return f"DPoPKey({self.algorithm}, jkt={self.thumbprint})"

    @classmethod
    def generate(cls, algorithm: str = "ES256") -> DPoPKey:
        """A new key pair for *algorithm* (ES256: EC P-256, the common choice)."""
        expected = ALGORITHMS.get(algorithm)
        if expected is None:
            raise DPoPError(f"DPoP algorithm {algorithm!r} is not an asymmetric JWS algorithm")
        kty, curve = expected
        key: _Key
        if kty == "EC":
            assert curve is not None
            key = ECKey.generate_key(curve)
        else:
            key = RSAKey.generate_key(2048)
        return cls(key, algorithm)

    @classmethod
    def from_pem(cls, pem: str | bytes, algorithm: str = "ES256") -> DPoPKey:
        """The private key in *pem* (PKCS#8 or the key type's own PEM)."""
        return cls(_import_private_key(pem, algorithm), algorithm)

    @classmethod
    def from_jwk(cls, jwk: Mapping[str, Any], algorithm: str = "ES256") -> DPoPKey:
        """The private key given as a JWK (RFC 7517)."""
        return cls(_import_private_key(dict(jwk), algorithm), algorithm)

    def proof(
        self,
        method: str,
        url: str,
        *,
        access_token: str | None = None,
        nonce: str | None = None,
        now: float | None = None,
    ) -> str:
        """A DPoP proof JWT for one request of *method* to *url* (RFC 9449 §4.2).

        With *access_token* the proof carries its hash (``ath``, for a
        resource request, §7.1); with *nonce* the server's nonce (§8, §9).
        Every proof has a new ``jti``.
        """
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method.upper(),
            "htu": htu(url),
            "iat": int(time.time() if now is None else now),
        }
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        if nonce is not None:
            claims["nonce"] = nonce
        header = {"typ": "dpop+jwt", "alg": self.algorithm, "jwk": self.public_jwk}
        return jwt.encode(header, claims, self._key, algorithms=[self.algorithm])


def _import_private_key(value: str | bytes | dict[str, Any], algorithm: str) -> _Key:
    expected = ALGORITHMS.get(algorithm)
    if expected is None:
        raise DPoPError(f"algorithm {algorithm!r} is not an asymmetric JWS algorithm")
    key_class: type[_Key] = {"EC": ECKey, "RSA": RSAKey}[expected[0]]  # type: ignore[assignment]
    try:
        return key_class.import_key(value)
    except (JoseError, ValueError, TypeError) as exc:
        # The key material itself is never part of the message.
        raise DPoPError(
            f"the key is not a {expected[0]} private key for {algorithm} ({type(exc).__name__})"
        ) from None


def htu(url: str) -> str:
    """The ``htu`` of a request to *url*: the URI without query and fragment (RFC 9449 §4.2)."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path or "/", "", ""))


def access_token_hash(access_token: str) -> str:
    """``ath``: base64url (no padding) of SHA-256 of the token's ASCII bytes (RFC 9449 §4.2)."""
    digest = hashlib.sha256(access_token.encode("ascii", "strict")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def origin(url: str) -> str:
    """The server a nonce belongs to: scheme and authority of *url*, lower case."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def authorization_header(token_type: str, access_token: str) -> str:
    """The ``Authorization`` value for a token: ``DPoP`` for a DPoP-bound
    token (``token_type`` DPoP, RFC 9449 §7.1), else ``Bearer``."""
    scheme = "DPoP" if token_type.lower() == "dpop" else "Bearer"
    return f"{scheme} {access_token}"


class DPoP:
    """Proofs for every request to the authorization and resource servers,
    with each server's nonce remembered (RFC 9449 §4, §8, §9).

    :meth:`headers_for` gives the ``DPoP`` header of a request; :meth:`update_nonce`
    reads each answer: it keeps a ``DPoP-Nonce`` the server sent and says whether the
    answer was a ``use_dpop_nonce`` refusal to retry with the new nonce. The provider
    retries such a request once. It is the provider's
    :class:`~trio_mcp.auth.DPoPSigner`: ``OAuthProvider(url, ..., dpop=DPoP())`` asks
    for DPoP-bound tokens, presents them with proofs and retries once with either
    server's nonce. *key* defaults to a new EC P-256 key (:meth:`DPoPKey.generate`);
    *clock* gives ``iat``.

    Cancellation: nothing here waits.
    """

    def __init__(
        self, key: DPoPKey | None = None, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.key = key if key is not None else DPoPKey.generate()
        self._clock = clock
        self._nonces: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"DPoP({self.key!r})"

    @property
    def algorithm(self) -> str:
        return self.key.algorithm

    def nonce_for(self, url: str) -> str | None:
        """The nonce last received from the server of *url* (None: none yet)."""
        return self._nonces.get(origin(url))

    def headers_for(self, method: str, url: str, access_token: str | None = None) -> dict[str, str]:
        """``{"DPoP": proof}`` for a request of *method* to *url*; with
        *access_token* (a resource request) the proof binds it (``ath``)."""
        proof = self.key.proof(
            method,
            url,
            access_token=access_token,
            nonce=self.nonce_for(url),
            now=self._clock(),
        )
        return {"DPoP": proof}

    def update_nonce(self, url: str, response: httpx.Response) -> bool:
        """Keep the ``DPoP-Nonce`` of *response* (to *url*) for later proofs;
        True when the answer refused the request for want of that nonce
        (``use_dpop_nonce``: 400 from an AS, 401 from an RS) and a new nonce
        came with it, so the request is worth retrying once.

        A malformed or missing nonce is ignored (peer input): then a refusal
        is not retried, since the same proof would be refused again.
        """
        raw = response.headers.get("dpop-nonce")
        nonce = raw.strip() if raw is not None else ""
        if _NONCE.fullmatch(nonce) is None:
            return False
        previous = self._nonces.get(origin(url))
        self._nonces[origin(url)] = nonce
        # The same nonce again means the proof carried it and was refused
        # anyway: retrying would loop.
        return is_nonce_refusal(response) and nonce != previous


def is_nonce_refusal(response: httpx.Response) -> bool:
    """Whether *response* refuses a request for want of a DPoP nonce:
    400 ``{"error": "use_dpop_nonce"}`` (AS, §8) or 401 with a DPoP
    challenge whose ``error`` is ``use_dpop_nonce`` (RS, §9)."""
    if response.status_code == 400:
        try:
            body = response.json()
        except (ValueError, httpx.ResponseNotRead):
            return False
        return isinstance(body, dict) and body.get("error") == "use_dpop_nonce"
    if response.status_code == 401:
        try:
            challenges = parse_www_authenticate(response.headers.get_list("www-authenticate"))
        except ChallengeError:
            return False
        return any(c.scheme == "dpop" and c.get("error") == "use_dpop_nonce" for c in challenges)
    return False


__all__ = [
    "ALGORITHMS",
    "DPoPError",
    "DPoPKey",
    "DPoP",
    "access_token_hash",
    "authorization_header",
    "htu",
    "is_nonce_refusal",
    "origin",
]
