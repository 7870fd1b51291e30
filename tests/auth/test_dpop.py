"""DPoP proofs (RFC 9449): their shape and signature, checked with joserfc,
and the nonce dance against a real local AS and resource (``grant_servers.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from grant_servers import GrantServer, ec_key_pair, running_grant_server
from joserfc import jws, jwt
from joserfc.jwk import ECKey, KeySet, RSAKey
from joserfc.jws import JWSRegistry

from trio_mcp._errors import MCPError
from trio_mcp._oauth._dpop import (
    DPoP,
    DPoPError,
    DPoPKey,
    access_token_hash,
    authorization_header,
    htu,
    is_nonce_refusal,
)
from trio_mcp._oauth._grants import ClientCredentialsGrant
from trio_mcp._oauth._provider import OAuthProvider
from trio_mcp._oauth._types import AuthServerMetadata, ClientInfo, GrantContext

NOW = 1_900_000_000.0

#: A proof carrying an RSA key has a header longer than joserfc's default limit.
REGISTRY = JWSRegistry(algorithms=["ES256", "ES384", "ES512", "RS256", "PS256"])
REGISTRY.max_header_length = 2048


def decoded(proof: str) -> tuple[dict[str, object], dict[str, object]]:
    """(header, claims) of *proof*, its signature checked with the key it carries."""
    header = jws.extract_compact(proof.encode(), registry=REGISTRY).headers()
    key = KeySet.import_key_set({"keys": [header["jwk"]]}).keys[0]
    token = jwt.decode(
        proof, key, algorithms=["ES256", "ES384", "RS256", "PS256"], registry=REGISTRY
    )
    return dict(token.header), dict(token.claims)


@pytest.mark.spec("AUX-04")
def test_proof_shape_for_a_token_request() -> None:
    key = DPoPKey.generate()
    header, claims = decoded(key.proof("post", "https://as.example/token?x=1#frag", now=NOW))
    assert header["typ"] == "dpop+jwt"
    assert header["alg"] == "ES256"
    jwk = header["jwk"]
    assert isinstance(jwk, dict)
    assert set(jwk) == {"kty", "crv", "x", "y"}
    assert claims["htm"] == "POST"
    assert claims["htu"] == "https://as.example/token"
    assert claims["iat"] == int(NOW)
    assert isinstance(claims["jti"], str)
    assert len(claims["jti"]) >= 16
    assert "ath" not in claims
    assert "nonce" not in claims
    assert ECKey.import_key(jwk).thumbprint() == key.thumbprint


def test_proof_for_a_resource_request_binds_the_token_and_nonce() -> None:
    key = DPoPKey.generate()
    token = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"
    _, claims = decoded(key.proof("GET", "https://rs.example/mcp", access_token=token, nonce="n-1"))
    # The example of RFC 9449 §7.1.
    assert claims["ath"] == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
    assert claims["ath"] == access_token_hash(token)
    assert claims["nonce"] == "n-1"
    assert claims["htm"] == "GET"


def test_every_proof_has_a_new_jti() -> None:
    key = DPoPKey.generate()
    jtis = {decoded(key.proof("POST", "https://as.example/token"))[1]["jti"] for _ in range(20)}
    assert len(jtis) == 20


@pytest.mark.parametrize("algorithm", ["ES256", "ES384", "ES512", "RS256", "PS256"])
def test_generated_keys_for_each_algorithm_verify(algorithm: str) -> None:
    key = DPoPKey.generate(algorithm)
    header, _ = decoded(key.proof("POST", "https://as.example/token"))
    assert header["alg"] == algorithm
    jwk = header["jwk"]
    assert isinstance(jwk, dict)
    assert "d" not in jwk
    assert "p" not in jwk


def test_key_from_pem_and_jwk() -> None:
    pem, public = ec_key_pair()
    from_pem = DPoPKey.from_pem(pem)
    assert from_pem.thumbprint == public.thumbprint()
    private_jwk = ECKey.import_key(pem).as_dict(private=True)
    assert DPoPKey.from_jwk(private_jwk).thumbprint == public.thumbprint()
    assert "PRIVATE" not in repr(from_pem)
    assert str(private_jwk["d"]) not in repr(from_pem)


def test_unusable_keys_are_dpop_errors() -> None:
    pem, public = ec_key_pair()
    with pytest.raises(DPoPError, match="not an asymmetric"):
        DPoPKey.generate("HS256")
    with pytest.raises(DPoPError, match="not an asymmetric"):
        DPoPKey.generate("none")
    with pytest.raises(DPoPError, match="not an asymmetric"):
        DPoPKey.generate("EdDSA")
    with pytest.raises(DPoPError, match="does not fit"):
        DPoPKey.from_pem(pem, "ES384")
    with pytest.raises(DPoPError, match="not a RSA private key"):
        DPoPKey.from_pem(pem, "RS256")
    with pytest.raises(DPoPError, match="private half"):
        DPoPKey(public)
    with pytest.raises(DPoPError, match="does not fit"):
        DPoPKey(RSAKey.generate_key(2048), "ES256")
    with pytest.raises(DPoPError) as caught:
        DPoPKey.from_pem("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----")
    assert "bm90" not in str(caught.value)
    assert issubclass(DPoPError, MCPError)


def test_htu_and_authorization_header() -> None:
    assert htu("https://rs.example:8443/mcp?session=1#x") == "https://rs.example:8443/mcp"
    assert htu("https://rs.example") == "https://rs.example/"
    assert authorization_header("DPoP", "t") == "DPoP t"
    assert authorization_header("dpop", "t") == "DPoP t"
    assert authorization_header("Bearer", "t") == "Bearer t"


def response(
    status: int, headers: dict[str, str] | None = None, json: object = None
) -> httpx.Response:
    request = httpx.Request("POST", "https://as.example/token")
    if json is None:
        return httpx.Response(status, headers=headers, request=request)
    return httpx.Response(status, headers=headers, json=json, request=request)


def test_nonce_refusals_and_nonces_per_server() -> None:
    signer = DPoP(clock=lambda: NOW)
    as_url, rs_url = "https://as.example/token", "https://rs.example/mcp"
    refusal = response(400, {"DPoP-Nonce": "as-1"}, {"error": "use_dpop_nonce"})
    assert is_nonce_refusal(refusal)
    assert signer.update_nonce(as_url, refusal) is True
    assert signer.nonce_for(as_url) == "as-1"
    assert signer.nonce_for("https://AS.example/other") == "as-1"  # same server
    assert signer.nonce_for(rs_url) is None  # another server: its own nonce
    _, claims = decoded(signer.headers_for("POST", as_url)["DPoP"])
    assert claims["nonce"] == "as-1"
    assert claims["iat"] == int(NOW)
    _, claims = decoded(signer.headers_for("POST", rs_url, access_token="tok")["DPoP"])
    assert "nonce" not in claims
    assert claims["ath"] == access_token_hash("tok")
    # The same nonce refused again: not worth a retry (the proof had it).
    assert signer.update_nonce(as_url, refusal) is False
    # A fresh nonce on a success is kept, and is no refusal.
    assert signer.update_nonce(as_url, response(200, {"DPoP-Nonce": "as-2"}, {})) is False
    assert signer.nonce_for(as_url) == "as-2"
    rs = response(401, {"WWW-Authenticate": 'DPoP error="use_dpop_nonce"', "DPoP-Nonce": "rs-1"})
    assert signer.update_nonce(rs_url, rs) is True
    assert signer.nonce_for(rs_url) == "rs-1"
    assert signer.nonce_for(as_url) == "as-2"


@pytest.mark.parametrize(
    "answer",
    [
        response(400, {"DPoP-Nonce": "n"}, {"error": "invalid_dpop_proof"}),
        response(400, {"DPoP-Nonce": "n"}),
        response(401, {"WWW-Authenticate": 'Bearer error="use_dpop_nonce"', "DPoP-Nonce": "n"}),
        response(401, {"WWW-Authenticate": 'DPoP error="invalid_token"', "DPoP-Nonce": "n"}),
        response(401, {"WWW-Authenticate": 'DPoP error="use_dpop_nonce', "DPoP-Nonce": "n"}),
        response(400, {}, {"error": "use_dpop_nonce"}),
        response(400, {"DPoP-Nonce": 'bad"nonce'}, {"error": "use_dpop_nonce"}),
        response(400, {"DPoP-Nonce": "x" * 600}, {"error": "use_dpop_nonce"}),
        response(403, {"DPoP-Nonce": "n"}, {"error": "use_dpop_nonce"}),
    ],
)
def test_answers_that_are_not_worth_a_nonce_retry(answer: httpx.Response) -> None:
    signer = DPoP()
    assert signer.update_nonce("https://as.example/token", answer) is False


# ----------------------------------------------- against the local AS and RS


@pytest.fixture
async def served() -> AsyncIterator[tuple[GrantServer, httpx.AsyncClient]]:
    server = GrantServer()
    async with running_grant_server(server), httpx.AsyncClient() as http:
        yield server, http


async def resource_request(
    http: httpx.AsyncClient, signer: DPoP, url: str, token: str
) -> httpx.Response:
    """One resource request as the provider makes it: proof, then one retry on a nonce."""
    for _ in range(2):
        headers = {"Authorization": authorization_header("DPoP", token)}
        headers.update(signer.headers_for("POST", url, access_token=token))
        answer = await http.post(url, headers=headers, content=b"{}")
        if not signer.update_nonce(url, answer):
            return answer
    return answer


@pytest.mark.spec("AUX-04")
async def test_dpop_token_and_resource_with_nonces_at_both_servers(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, http = served
    server.secrets["svc"] = "pw"
    server.as_nonce, server.rs_nonce = "as-nonce", "rs-nonce"
    signer = DPoP()
    ctx = GrantContext(
        http=http,
        resource=f"{server.base}/mcp",
        server_url=f"{server.base}/mcp",
        metadata=AuthServerMetadata(
            issuer=server.base, authorization_endpoint=None, token_endpoint=f"{server.base}/token"
        ),
        prm=None,
        scope=None,
        client=ClientInfo("svc", "pw"),
        dpop=signer,
    )
    tokens = await ClientCredentialsGrant().obtain(ctx)
    assert tokens.token_type == "DPoP"
    assert [s.outcome for s in server.requests("/token")] == ["nonce required", "ok"]
    url = f"{server.base}/mcp"
    answer = await resource_request(http, signer, url, tokens.access_token)
    assert answer.status_code == 200
    assert [s.outcome for s in server.requests("/mcp")] == ["nonce required", "ok"]
    # The nonce is remembered: the next request needs no challenge.
    assert (await resource_request(http, signer, url, tokens.access_token)).status_code == 200
    assert [s.outcome for s in server.requests("/mcp")][2:] == ["ok"]
    # The two servers share the origin here, so the latest nonce is the RS's;
    # a new token request is challenged once more and goes through.
    await ClientCredentialsGrant().obtain(ctx)
    assert [s.outcome for s in server.requests("/token")][2:] == ["nonce required", "ok"]


async def test_resource_refuses_a_proof_by_another_key(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, http = served
    server.secrets["svc"] = "pw"
    signer = DPoP()
    ctx = GrantContext(
        http=http,
        resource=f"{server.base}/mcp",
        server_url=f"{server.base}/mcp",
        metadata=AuthServerMetadata(
            issuer=server.base, authorization_endpoint=None, token_endpoint=f"{server.base}/token"
        ),
        prm=None,
        scope=None,
        client=ClientInfo("svc", "pw"),
        dpop=signer,
    )
    tokens = await ClientCredentialsGrant().obtain(ctx)
    thief = DPoP()
    answer = await resource_request(http, thief, f"{server.base}/mcp", tokens.access_token)
    assert answer.status_code == 401
    assert server.requests("/mcp")[-1].outcome == "proof key is not the token's"


# --------------------------------------------- through OAuthProvider (httpx.Auth)


@pytest.mark.spec("AUX-04")
async def test_provider_with_dpop_meets_both_nonces(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, _ = served
    server.secrets["svc"] = "pw"
    server.as_nonce, server.rs_nonce = "as-nonce", "rs-nonce"
    url = f"{server.base}/mcp"
    dpop = DPoP()
    provider = OAuthProvider(
        url, grant=ClientCredentialsGrant(), client=ClientInfo("svc", "pw"), dpop=dpop
    )
    async with httpx.AsyncClient(auth=provider) as http:
        assert (await http.post(url, content=b"{}")).status_code == 200
        assert (await http.post(url, content=b"{}")).status_code == 200
    assert [s.outcome for s in server.requests("/token")] == ["nonce required", "ok"]
    # No token; challenged for the nonce (same token, new proof); then it is remembered.
    assert [s.outcome for s in server.requests("/mcp")] == [
        "no token",
        "nonce required",
        "ok",
        "ok",
    ]
    one, two = server.requests("/mcp")[1:3]
    assert one.headers["authorization"] == two.headers["authorization"]
    assert one.headers["authorization"].startswith("DPoP ")
    assert one.headers["dpop"] != two.headers["dpop"]


async def test_a_refusal_without_a_nonce_means_a_new_token(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, _ = served
    server.secrets["svc"] = "pw"
    url = f"{server.base}/mcp"
    dpop = DPoP()
    provider = OAuthProvider(
        url, grant=ClientCredentialsGrant(), client=ClientInfo("svc", "pw"), dpop=dpop
    )
    async with httpx.AsyncClient(auth=provider) as http:
        assert (await http.post(url, content=b"{}")).status_code == 200
        server.bound.clear()  # the RS forgets the token: a plain 401, no nonce
        assert (await http.post(url, content=b"{}")).status_code == 200
    # The provider authorized again (a second token), nothing was retried blindly.
    assert [s.outcome for s in server.requests("/token")] == ["ok", "ok"]
    assert [s.outcome for s in server.requests("/mcp")] == [
        "no token",
        "ok",
        "no DPoP-bound token",
        "ok",
    ]
