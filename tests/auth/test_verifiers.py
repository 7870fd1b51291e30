"""The JWT (JWKS) and RFC 7662 introspection verifiers, against a real JWKS and
a real introspection endpoint on loopback (``auth_servers.py``).

Time is the verifiers' injected clock (a :class:`Clock` the test moves), so
expiry, leeway and cache lifetimes take no real time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import orjson
import pytest
import trio
from auth_servers import AuthServer, closed_port_url, running_auth_server
from joserfc import jwt
from joserfc.jwk import ECKey, Key, RSAKey

from trio_mcp._auth._introspection import IntrospectionVerifier
from trio_mcp._auth._jwt import JWTVerifier
from trio_mcp._auth._token import (
    AccessToken,
    InsufficientScope,
    InvalidToken,
    VerifierUnavailable,
)
from trio_mcp.protocol._errors import MCPError

ISSUER = "https://as.example"
RESOURCE = "https://mcp.example/mcp"
NOW = 1_900_000_000.0


class Clock:
    """Seconds since the epoch, moved by the test."""

    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


RSA = RSAKey.generate_key(2048, parameters={"kid": "rsa-1", "use": "sig"})
EC = ECKey.generate_key("P-256", parameters={"kid": "ec-1", "use": "sig"})
ROTATED = RSAKey.generate_key(2048, parameters={"kid": "rsa-2", "use": "sig"})
STRANGER = RSAKey.generate_key(2048, parameters={"kid": "rsa-1", "use": "sig"})


def jwks(*keys: Key) -> dict[str, Any]:
    return {"keys": [key.as_dict(private=False) for key in keys]}


def claims(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "iss": ISSUER,
        "sub": "user-7",
        "aud": RESOURCE,
        "exp": int(NOW) + 600,
        "iat": int(NOW),
        "scope": "tools:read tools:call",
        "client_id": "client-3",
    }
    base.update(changes)
    return {name: value for name, value in base.items() if value is not None}


def sign(key: Key, alg: str, kid: str | None = None, **changes: Any) -> str:
    header: dict[str, Any] = {"alg": alg}
    kid = kid if kid is not None else key.kid
    if kid:
        header["kid"] = kid
    return jwt.encode(header, claims(**changes), key, algorithms=[alg])


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


async def refused(call: Awaitable[AccessToken], token: str) -> InvalidToken:
    """The InvalidToken *call* raises; its message never holds *token*."""
    with pytest.raises(InvalidToken) as caught:
        await call
    assert token not in str(caught.value)
    assert token not in caught.value.reason
    return caught.value


@pytest.fixture
async def auth_server() -> AsyncIterator[tuple[str, AuthServer]]:
    server = AuthServer(jwks=jwks(RSA, EC))
    async with running_auth_server(server) as url:
        yield url, server


def verifier(url: str, clock: Clock, **options: Any) -> JWTVerifier:
    return JWTVerifier(url + "/jwks", issuer=ISSUER, audience=RESOURCE, clock=clock, **options)


# -- JWT ---------------------------------------------------------------------


async def test_valid_tokens_rsa_and_ec(auth_server: tuple[str, AuthServer]) -> None:
    url, server = auth_server
    check = verifier(url, Clock())
    verified = await check.verify(sign(RSA, "RS256"))
    assert verified.subject == "user-7"
    assert verified.client_id == "client-3"
    assert verified.scopes == {"tools:read", "tools:call"}
    assert verified.expires_at == NOW + 600
    assert verified.issuer == ISSUER
    assert verified.audience == (RESOURCE,)
    assert verified.principal == (ISSUER, "user-7")
    # scp as a list, azp as the client, aud as a list naming us among others.
    other = sign(
        EC,
        "ES256",
        scope=None,
        scp=["a", "b"],
        client_id=None,
        azp="client-9",
        aud=["https://other.example", RESOURCE],
    )
    verified = await check.verify(other)
    assert verified.scopes == {"a", "b"}
    assert verified.client_id == "client-9"
    assert verified.audience == ("https://other.example", RESOURCE)
    # The key set was fetched once, then served from the cache.
    assert server.seen["/jwks"] == 1


async def test_audience_issuer_subject(auth_server: tuple[str, AuthServer]) -> None:
    url, _ = auth_server
    check = verifier(url, Clock())
    for changes in (
        {"aud": "https://other.example/mcp"},
        {"aud": None},
        {"iss": "https://evil.example"},
        {"iss": None},
        {"sub": None},
        {"sub": ""},
        {"exp": None},
    ):
        token = sign(RSA, "RS256", **changes)
        await refused(check.verify(token), token)


async def test_expiry_and_not_before_with_leeway(auth_server: tuple[str, AuthServer]) -> None:
    url, _ = auth_server
    clock = Clock()
    check = verifier(url, clock, leeway=60)
    token = sign(RSA, "RS256")
    clock.now = NOW + 600 + 30  # expired, but within the leeway
    assert (await check.verify(token)).subject == "user-7"
    clock.now = NOW + 600 + 61
    reason = (await refused(check.verify(token), token)).reason
    assert "exp" in reason
    clock.now = NOW
    early = sign(RSA, "RS256", nbf=int(NOW) + 120)
    await refused(check.verify(early), early)
    clock.now = NOW + 70  # nbf within the leeway
    assert (await check.verify(early)).subject == "user-7"
    with pytest.raises(ValueError, match="leeway"):
        verifier(url, clock, leeway=3600)


async def test_required_scopes(auth_server: tuple[str, AuthServer]) -> None:
    url, _ = auth_server
    check = verifier(url, Clock(), required_scopes=["tools:call", "admin"])
    token = sign(RSA, "RS256")
    error = await refused(check.verify(token), token)
    assert isinstance(error, InsufficientScope)
    assert error.scopes == {"admin"}


async def test_alg_none_and_hmac_confusion_refused(auth_server: tuple[str, AuthServer]) -> None:
    url, _ = auth_server
    check = verifier(url, Clock())
    body = b64(orjson.dumps(claims()))
    unsigned = b64(orjson.dumps({"alg": "none", "kid": "rsa-1"})) + "." + body + "."
    assert "not allowed" in (await refused(check.verify(unsigned), unsigned)).reason
    # HS256 with the AS's public key as the shared secret (RFC 8725 §2.1).
    public_pem = RSA.as_pem(private=False)
    head = b64(orjson.dumps({"alg": "HS256", "kid": "rsa-1", "typ": "JWT"}))
    mac = hmac.new(public_pem, f"{head}.{body}".encode(), hashlib.sha256).digest()
    confused = f"{head}.{body}.{b64(mac)}"
    assert "not allowed" in (await refused(check.verify(confused), confused)).reason
    # An allowed algorithm that does not fit the key's type.
    mismatched = sign(EC, "ES256", kid="rsa-1")
    await refused(check.verify(mismatched), mismatched)
    # Nor may a verifier be configured to accept them.
    for alg in ("none", "HS256"):
        with pytest.raises(ValueError, match="not allowed"):
            verifier(url, Clock(), algorithms=["RS256", alg])


async def test_malformed_and_foreign_signatures(auth_server: tuple[str, AuthServer]) -> None:
    url, _ = auth_server
    check = verifier(url, Clock())
    # Same kid as a published key, signed by another key.
    forged = sign(STRANGER, "RS256")
    assert "signature" in (await refused(check.verify(forged), forged)).reason
    genuine = sign(RSA, "RS256")
    head, payload, signature = genuine.split(".")
    tampered = ".".join([head, b64(orjson.dumps(claims(sub="admin"))), signature])
    await refused(check.verify(tampered), tampered)
    for garbage in ("not-a-jwt", "a.b.c", head + "." + payload, "x" * 20_000):
        await refused(check.verify(garbage), garbage)


async def test_unknown_kid_refetches_rotated_keys_rate_limited(
    auth_server: tuple[str, AuthServer],
) -> None:
    url, server = auth_server
    clock = Clock()
    check = verifier(url, clock, min_refetch_interval=30)
    assert (await check.verify(sign(RSA, "RS256"))).subject == "user-7"
    assert server.seen["/jwks"] == 1
    clock.now += 31
    # The AS rotates: rsa-2 appears. A token signed with it makes one refetch.
    server.jwks = jwks(ROTATED, EC)
    assert (await check.verify(sign(ROTATED, "RS256"))).subject == "user-7"
    assert server.seen["/jwks"] == 2
    # Made-up kids within min_refetch_interval: refused from the cache.
    for n in range(5):
        bogus = sign(STRANGER, "RS256", kid=f"bogus-{n}")
        assert "kid" in (await refused(check.verify(bogus), bogus)).reason
    assert server.seen["/jwks"] == 2
    # After the interval, an unknown kid may refetch again (once).
    clock.now += 31
    bogus = sign(STRANGER, "RS256", kid="bogus-late")
    await refused(check.verify(bogus), bogus)
    assert server.seen["/jwks"] == 3


async def test_jwks_cache_expires(auth_server: tuple[str, AuthServer]) -> None:
    url, server = auth_server
    clock = Clock()
    check = verifier(url, clock, jwks_cache_seconds=300)
    await check.verify(sign(RSA, "RS256"))
    clock.now += 299
    await check.verify(sign(RSA, "RS256", exp=int(clock.now) + 600))
    assert server.seen["/jwks"] == 1
    clock.now += 2
    # The key was withdrawn: the refreshed set no longer trusts it.
    server.jwks = jwks(EC)
    token = sign(RSA, "RS256", exp=int(clock.now) + 600)
    await refused(check.verify(token), token)
    assert server.seen["/jwks"] == 2


async def test_jwks_down_is_unavailable(auth_server: tuple[str, AuthServer]) -> None:
    url, server = auth_server
    token = sign(RSA, "RS256")
    server.jwks_status = 500
    with pytest.raises(VerifierUnavailable) as caught:
        await verifier(url, Clock()).verify(token)
    assert token not in str(caught.value)
    server.jwks_status = 200
    server.jwks = {"keys": "nope"}
    with pytest.raises(VerifierUnavailable):
        await verifier(url, Clock()).verify(token)
    down = await closed_port_url()
    with pytest.raises(VerifierUnavailable) as caught:
        await verifier(down, Clock()).verify(token)
    assert token not in str(caught.value)
    assert isinstance(caught.value, MCPError)


# -- introspection -------------------------------------------------------------

OPAQUE = "opaque-token-4f1c9e2a7b"


def introspector(url: str, clock: Clock, **options: Any) -> IntrospectionVerifier:
    options.setdefault("audience", RESOURCE)
    return IntrospectionVerifier(
        url + "/introspect", client_id="rs", client_secret="rs-secret", clock=clock, **options
    )


def active(**changes: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "active": True,
        "sub": "user-7",
        "client_id": "client-3",
        "scope": "tools:read",
        "aud": [RESOURCE],
        "iss": ISSUER,
        "exp": int(NOW) + 3600,
    }
    answer.update(changes)
    return {name: value for name, value in answer.items() if value is not None}


async def test_introspection_active_and_cached(auth_server: tuple[str, AuthServer]) -> None:
    url, server = auth_server
    server.tokens[OPAQUE] = active()
    clock = Clock()
    check = introspector(url, clock, issuer=ISSUER, cache_seconds=60)
    verified = await check.verify(OPAQUE)
    assert verified.subject == "user-7"
    assert verified.client_id == "client-3"
    assert verified.scopes == {"tools:read"}
    assert verified.expires_at == NOW + 3600
    assert verified.principal == (ISSUER, "user-7")
    assert server.seen["/introspect"] == 1
    # Revoked at the AS: the cached answer stands until cache_seconds pass.
    server.tokens[OPAQUE] = {"active": False}
    clock.now += 59
    assert (await check.verify(OPAQUE)).subject == "user-7"
    assert server.seen["/introspect"] == 1
    clock.now += 2
    await refused(check.verify(OPAQUE), OPAQUE)
    assert server.seen["/introspect"] == 2
    # The cache holds a digest, never the token.
    assert all(OPAQUE.encode() not in key for key in check._cache)


async def test_introspection_cache_never_outlives_exp(
    auth_server: tuple[str, AuthServer],
) -> None:
    url, server = auth_server
    server.tokens[OPAQUE] = active(exp=int(NOW) + 10)
    clock = Clock()
    check = introspector(url, clock, cache_seconds=60)
    await check.verify(OPAQUE)
    clock.now += 11
    # Still "active" at the AS, but past exp: the verifier asks, then refuses.
    assert "expired" in (await refused(check.verify(OPAQUE), OPAQUE)).reason
    assert server.seen["/introspect"] == 2


async def test_introspection_refusals(auth_server: tuple[str, AuthServer]) -> None:
    url, server = auth_server
    clock = Clock()
    check = introspector(url, clock, issuer=ISSUER)
    await refused(check.verify("never-issued"), "never-issued")
    for n, answer in enumerate(
        [
            active(aud="https://other.example"),
            active(aud=None),
            active(iss="https://evil.example"),
            active(exp=int(NOW) - 1),
            active(nbf=int(NOW) + 60),
            active(sub=None),
            {"active": "true", "sub": "user-7", "aud": RESOURCE},
        ]
    ):
        token = f"opaque-{n}-abcdef"
        server.tokens[token] = answer
        await refused(check.verify(token), token)
    # Nothing refused was cached: each one asked the AS.
    assert server.seen["/introspect"] == 8
    # Without a configured audience, aud is not checked.
    server.tokens[OPAQUE] = active(aud=None)
    assert (await introspector(url, clock, audience=None).verify(OPAQUE)).audience == ()
    token = "opaque-scoped-abcdef"
    server.tokens[token] = active()
    error = await refused(introspector(url, clock, required_scopes=["admin"]).verify(token), token)
    assert isinstance(error, InsufficientScope)


async def test_introspection_unavailable(auth_server: tuple[str, AuthServer]) -> None:
    url, server = auth_server
    server.tokens[OPAQUE] = active()
    server.introspection_status = 500
    with pytest.raises(VerifierUnavailable) as caught:
        await introspector(url, Clock()).verify(OPAQUE)
    assert OPAQUE not in str(caught.value)
    server.introspection_status = 200
    # Wrong client credentials: the AS answers 401, which is not the token's fault.
    wrong = IntrospectionVerifier(
        url + "/introspect", client_id="rs", client_secret="wrong", clock=Clock()
    )
    with pytest.raises(VerifierUnavailable):
        await wrong.verify(OPAQUE)
    down = await closed_port_url()
    with pytest.raises(VerifierUnavailable) as caught:
        await introspector(down, Clock()).verify(OPAQUE)
    assert OPAQUE not in str(caught.value)


async def test_introspection_cache_is_bounded(auth_server: tuple[str, AuthServer]) -> None:
    url, server = auth_server
    check = introspector(url, Clock(), max_entries=3)
    for n in range(5):
        server.tokens[f"opaque-{n}-bounded"] = active()
        await check.verify(f"opaque-{n}-bounded")
    assert len(check._cache) == 3
    # The oldest went first: token 0 is asked again, token 4 is not.
    await check.verify("opaque-4-bounded")
    assert server.seen["/introspect"] == 5
    await check.verify("opaque-0-bounded")
    assert server.seen["/introspect"] == 6


def test_only_the_jwt_module_imports_joserfc() -> None:
    """joserfc is the ``auth`` extra: importing trio_mcp (or the introspection
    verifier) must work without it."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "src" / "trio_mcp"
    importers = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(name == "joserfc" or name.startswith("joserfc.") for name in names):
                importers.add(path.relative_to(root).as_posix())
    # The OAuth client's signers (DPoP proofs, private_key_jwt assertions) are
    # imported only by applications that use them.
    assert importers == {"_auth/_jwt.py", "_oauth/_dpop.py", "_oauth/_assertions.py"}


async def test_failed_jwks_fetch_is_not_retried_at_once(
    auth_server: tuple[str, AuthServer],
) -> None:
    url, server = auth_server
    clock = Clock()
    check = verifier(url, clock, min_refetch_interval=30)
    server.jwks_status = 503
    for _ in range(3):
        with pytest.raises(VerifierUnavailable):
            await check.verify(sign(RSA, "RS256"))
    assert server.seen["/jwks"] == 1
    server.jwks_status = 200
    clock.now += 31
    assert (await check.verify(sign(RSA, "RS256"))).subject == "user-7"
    assert server.seen["/jwks"] == 2


async def test_concurrent_verifications_share_one_fetch(
    auth_server: tuple[str, AuthServer],
) -> None:
    url, server = auth_server
    check = verifier(url, Clock())
    subjects: list[str] = []

    async def one(n: int) -> None:
        token = sign(EC if n % 2 else RSA, "ES256" if n % 2 else "RS256", sub=f"user-{n}")
        subjects.append((await check.verify(token)).subject)

    async with trio.open_nursery() as nursery:
        for n in range(8):
            nursery.start_soon(one, n)
    assert sorted(subjects) == sorted(f"user-{n}" for n in range(8))
    assert server.seen["/jwks"] == 1
