"""The extension grants (client credentials with a secret or a private-key JWT,
enterprise-managed authorization, workload JWT bearer) against a real local
authorization server and identity provider (``grant_servers.py``) that checks
client authentication and assertion signatures with joserfc."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import httpx
import orjson
import pytest
from grant_servers import GrantServer, ec_key_pair, running_grant_server
from joserfc import jwt

from trio_mcp._errors import AuthorizationFailed, MCPError
from trio_mcp._oauth._assertions import JWT_BEARER_ASSERTION, AssertionKeyError, PrivateKeyJWT
from trio_mcp._oauth._dpop import DPoP, DPoPKey
from trio_mcp._oauth._grants import (
    ClientCredentialsGrant,
    EnterpriseManagedGrant,
    JwtBearerGrant,
    TokenExchangeFailed,
    UnusableToken,
)
from trio_mcp._oauth._provider import OAuthProvider
from trio_mcp._oauth._types import AuthServerMetadata, ClientInfo, GrantContext

RESOURCE = "https://mcp.example/mcp"


@pytest.fixture
async def served() -> AsyncIterator[tuple[GrantServer, httpx.AsyncClient]]:
    server = GrantServer()
    async with running_grant_server(server), httpx.AsyncClient() as http:
        yield server, http


def context(
    server: GrantServer,
    http: httpx.AsyncClient,
    client: ClientInfo | None,
    *,
    scope: str | None = "mcp:read",
    methods: tuple[str, ...] | None = None,
    dpop: DPoP | None = None,
) -> GrantContext:
    metadata = AuthServerMetadata(
        issuer=server.base,
        authorization_endpoint=None,
        token_endpoint=f"{server.base}/token",
        token_endpoint_auth_methods_supported=methods,
    )
    return GrantContext(
        http=http,
        resource=RESOURCE,
        server_url=RESOURCE,
        metadata=metadata,
        prm=None,
        scope=scope,
        client=client,
        dpop=dpop,
    )


# ------------------------------------------------------------ client credentials


@pytest.mark.spec("AUX-01")
async def test_client_credentials_basic(served: tuple[GrantServer, httpx.AsyncClient]) -> None:
    server, http = served
    server.secrets["svc"] = "s3cret:with/odd chars"
    ctx = context(server, http, ClientInfo("svc", "s3cret:with/odd chars"))
    tokens = await ClientCredentialsGrant().obtain(ctx)
    assert tokens.access_token == "token-1"
    assert tokens.token_type == "Bearer"
    assert tokens.issuer == server.base
    (seen,) = server.requests("/token")
    assert seen.outcome == "ok"
    assert seen.headers["authorization"].startswith("Basic ")
    assert seen.form == {
        "grant_type": "client_credentials",
        "scope": "mcp:read",
        "resource": RESOURCE,
    }


async def test_client_credentials_post_when_only_post_is_listed(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, http = served
    server.secrets["svc"] = "pw"
    ctx = context(server, http, ClientInfo("svc", "pw"), methods=("client_secret_post",))
    await ClientCredentialsGrant(scope="admin").obtain(ctx)
    (seen,) = server.requests("/token")
    assert "authorization" not in seen.headers
    assert seen.form["client_id"] == "svc"
    assert seen.form["client_secret"] == "pw"
    assert seen.form["scope"] == "admin"  # the grant's scope wins over the provider's


async def test_client_credentials_wrong_secret_is_authorization_failed(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, http = served
    server.secrets["svc"] = "right"
    ctx = context(server, http, ClientInfo("svc", "wrong-secret-value"))
    with pytest.raises(AuthorizationFailed) as caught:
        await ClientCredentialsGrant().obtain(ctx)
    assert "invalid_client" in str(caught.value)
    assert "wrong-secret-value" not in str(caught.value)
    assert server.requests("/token")[0].outcome == "bad basic credentials"


async def test_client_credentials_without_secret_or_assertion_sends_nothing(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, http = served
    for client in (None, ClientInfo("public-client")):
        with pytest.raises(AuthorizationFailed, match="client secret or a private_key_jwt"):
            await ClientCredentialsGrant().obtain(context(server, http, client))
    assert server.seen == []


@pytest.mark.spec("AUX-01")
async def test_client_credentials_private_key_jwt(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, http = served
    pem, public = ec_key_pair()
    server.assertion_keys["workload"] = public
    grant = ClientCredentialsGrant(PrivateKeyJWT("workload", pem, "ES256"))
    first = await grant.obtain(context(server, http, None))
    second = await grant.obtain(context(server, http, None))
    assert (first.access_token, second.access_token) == ("token-1", "token-2")
    one, two = server.requests("/token")
    assert one.outcome == two.outcome == "ok"  # signature, iss, sub, aud, exp; jti not replayed
    assert "authorization" not in one.headers
    assert one.form["client_assertion_type"] == JWT_BEARER_ASSERTION
    assert one.form["client_id"] == "workload"
    assert one.form["grant_type"] == "client_credentials"
    claims = jwt.decode(one.form["client_assertion"], public).claims
    assert claims["iss"] == claims["sub"] == "workload"
    assert claims["aud"] == server.base
    assert 0 < claims["exp"] - claims["iat"] <= 60
    assert claims["jti"] != jwt.decode(two.form["client_assertion"], public).claims["jti"]


async def test_private_key_jwt_signed_with_another_key_is_refused(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, http = served
    _, public = ec_key_pair()
    other_pem, _ = ec_key_pair()
    server.assertion_keys["workload"] = public
    grant = ClientCredentialsGrant(PrivateKeyJWT("workload", other_pem))
    with pytest.raises(AuthorizationFailed, match="HTTP 401"):
        await grant.obtain(context(server, http, None))
    assert server.requests("/token")[0].outcome.startswith("assertion refused: BadSignatureError")


def test_private_key_jwt_refuses_unusable_keys() -> None:
    pem, public = ec_key_pair()
    with pytest.raises(AssertionKeyError) as caught:
        PrivateKeyJWT("c", "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----")
    assert "not a key" not in str(caught.value)
    with pytest.raises(AssertionKeyError, match="no private half"):
        PrivateKeyJWT("c", public.as_dict())
    with pytest.raises(AssertionKeyError, match="not an asymmetric"):
        PrivateKeyJWT("c", pem, "HS256")
    with pytest.raises(AssertionKeyError, match="not a RSA key"):
        PrivateKeyJWT("c", pem, "RS256")
    with pytest.raises(AssertionKeyError, match="does not fit ES384"):
        PrivateKeyJWT("c", pem, "ES384")
    assert "PRIVATE" not in repr(PrivateKeyJWT("c", pem))
    assert issubclass(AssertionKeyError, MCPError)


# -------------------------------------------------------------- hostile answers


@pytest.mark.spec("AUX-05")
@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        # The wording of the first five is the token record's (trio_mcp._oauth._types).
        (200, b"<html>not json</html>", "object"),
        (200, b"[1, 2]", "object"),
        (200, orjson.dumps({"token_type": "Bearer"}), "access_token"),
        (200, orjson.dumps({"access_token": "", "token_type": "Bearer"}), "access_token"),
        (200, orjson.dumps({"access_token": "t", "token_type": 7}), "token_type"),
        (200, orjson.dumps({"access_token": "t", "token_type": "mac"}), "unknown type 'mac'"),
        (200, orjson.dumps({"access_token": "t", "token_type": "DPoP"}), "without a DPoP key"),
        (400, orjson.dumps({"error": "invalid_scope"}), r"HTTP 400 \(invalid_scope\)"),
        (503, b"down", "HTTP 503"),
    ],
)
async def test_hostile_token_endpoint_answers_are_clear_errors(
    served: tuple[GrantServer, httpx.AsyncClient], status: int, body: bytes, message: str
) -> None:
    server, http = served
    server.secrets["svc"] = "pw"
    server.answer = (status, {"content-type": "application/json"}, body)
    with pytest.raises(AuthorizationFailed, match=message):
        await ClientCredentialsGrant().obtain(context(server, http, ClientInfo("svc", "pw")))


async def test_unknown_token_type_is_unusable_token(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, http = served
    server.answer = (200, {}, orjson.dumps({"access_token": "abc", "token_type": "N_A"}))
    with pytest.raises(UnusableToken) as caught:
        await JwtBearerGrant("jwt").obtain(context(server, http, ClientInfo("w")))
    assert "abc" not in str(caught.value)


# ------------------------------------------------------------- workload JWT bearer


async def test_jwt_bearer_grant_sends_a_fresh_assertion_each_time(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, http = served
    server.public_clients.add("workload")
    server.accepted_assertions |= {"jwt-1", "jwt-2"}
    issued = iter(["jwt-1", "jwt-2"])

    async def fresh() -> str:
        return next(issued)

    grant = JwtBearerGrant(fresh)
    ctx = context(server, http, ClientInfo("workload"), scope=None)
    assert (await grant.obtain(ctx)).access_token == "token-1"
    assert (await grant.obtain(ctx)).access_token == "token-2"
    first, second = server.requests("/token")
    assert first.form == {
        "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
        "resource": RESOURCE,
        "assertion": "jwt-1",
        "client_id": "workload",
    }
    assert second.form["assertion"] == "jwt-2"
    assert "fresh" not in repr(grant)
    assert "jwt-" not in repr(JwtBearerGrant("jwt-x"))


@pytest.mark.spec("AUX-03")
async def test_jwt_bearer_refusal_is_raised_without_retry_or_fallback(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, http = served
    server.public_clients.add("workload")
    with pytest.raises(AuthorizationFailed, match="invalid_grant"):
        await JwtBearerGrant("expired-jwt").obtain(context(server, http, ClientInfo("workload")))
    (seen,) = server.seen  # one request: no retry, no other grant type
    assert seen.outcome == "assertion refused"


async def test_jwt_bearer_empty_assertion_is_refused_locally(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, http = served

    async def nothing() -> str:
        return ""

    with pytest.raises(AuthorizationFailed, match="gave no token"):
        await JwtBearerGrant(nothing).obtain(context(server, http, ClientInfo("workload")))
    assert server.seen == []


# ------------------------------------------------ enterprise-managed authorization


def enterprise(server: GrantServer) -> EnterpriseManagedGrant:
    return EnterpriseManagedGrant(
        id_token=server.idp_id_token,
        idp_token_endpoint=f"{server.base}/idp/token",
        idp_client_id=server.idp_client_id,
    )


@pytest.mark.spec("AUX-02")
async def test_enterprise_managed_exchange_then_jwt_bearer(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, http = served
    server.secrets["mcp-client"] = "mcp-secret"
    ctx = context(server, http, ClientInfo("mcp-client", "mcp-secret"))
    tokens = await enterprise(server).obtain(ctx)
    assert tokens.access_token == "token-2"
    exchange, bearer = server.seen
    assert exchange.path == "/idp/token"
    assert exchange.outcome == "ok"
    assert exchange.form == {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "scope": "mcp:read",
        "resource": RESOURCE,
        "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
        "audience": server.base,
        "subject_token": server.idp_id_token,
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "client_id": server.idp_client_id,
    }
    assert "authorization" not in exchange.headers  # a public client at the IdP
    assert bearer.path == "/token"
    assert bearer.outcome == "ok"
    assert bearer.form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert bearer.form["assertion"] == "id-jag-1"
    expected = base64.b64encode(b"mcp-client:mcp-secret").decode()
    assert bearer.headers["authorization"] == f"Basic {expected}"


async def test_enterprise_managed_idp_with_a_secret_uses_basic(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, http = served
    server.idp_answer = (400, {"content-type": "application/json"}, b'{"error":"invalid_client"}')
    grant = EnterpriseManagedGrant("tok", f"{server.base}/idp/token", "idp-client", "idp-secret")
    with pytest.raises(TokenExchangeFailed, match=r"HTTP 400 \(invalid_client\)"):
        await grant.obtain(context(server, http, ClientInfo("mcp-client", "s")))
    (seen,) = server.seen
    assert (
        seen.headers["authorization"]
        == "Basic " + base64.b64encode(b"idp-client:idp-secret").decode()
    )
    assert "idp-secret" not in repr(grant)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "not a JSON object"),
        (
            orjson.dumps({"issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"}),
            "without an access_token",
        ),
        (
            orjson.dumps(
                {
                    "access_token": "x",
                    "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                }
            ),
            "not an ID-JAG",
        ),
        (orjson.dumps({"access_token": "x"}), "issued None, not an ID-JAG"),
    ],
)
async def test_enterprise_managed_hostile_idp(
    served: tuple[GrantServer, httpx.AsyncClient], body: bytes, message: str
) -> None:
    server, http = served
    server.idp_answer = (200, {"content-type": "application/json"}, body)
    with pytest.raises(TokenExchangeFailed, match=message):
        await enterprise(server).obtain(context(server, http, ClientInfo("mcp-client", "s")))
    assert [s.path for s in server.seen] == ["/idp/token"]  # the AS is never asked


async def test_enterprise_managed_id_jag_for_another_client_is_refused_by_the_as(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, http = served
    server.secrets["mcp-client"] = "mcp-secret"
    server.secrets["other"] = "other-secret"
    with pytest.raises(AuthorizationFailed, match="invalid_grant"):
        await enterprise(server).obtain(context(server, http, ClientInfo("other", "other-secret")))
    assert server.requests("/token")[0].outcome == "id-jag for another audience or client"


# ------------------------------------------------------------- with DPoP


async def test_client_credentials_with_dpop_and_an_as_nonce(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, http = served
    server.secrets["svc"] = "pw"
    server.as_nonce = "as-nonce-1"
    signer = DPoP(DPoPKey.generate())
    ctx = context(server, http, ClientInfo("svc", "pw"), dpop=signer)
    tokens = await ClientCredentialsGrant().obtain(ctx)
    assert tokens.token_type == "DPoP"
    first, retry = server.requests("/token")
    assert first.outcome == "nonce required"
    assert retry.outcome == "ok"
    assert server.bound[tokens.access_token] == signer.key.thumbprint


# ------------------------------------------------- through OAuthProvider


async def test_provider_with_private_key_jwt_client_credentials(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, _ = served
    server.resource_takes_bearer = True
    pem, public = ec_key_pair()
    server.assertion_keys["workload"] = public
    url = f"{server.base}/mcp"
    provider = OAuthProvider(url, grant=ClientCredentialsGrant(PrivateKeyJWT("workload", pem)))
    async with httpx.AsyncClient(auth=provider) as http:
        assert (await http.post(url, content=b"{}")).status_code == 200
    (seen,) = server.requests("/token")
    assert seen.outcome == "ok"
    assert seen.form["resource"] == url  # the PRM's resource (AU-08)
    assert [s.outcome for s in server.requests("/mcp")] == ["no token", "ok"]


async def test_provider_surfaces_a_refused_workload_jwt_once(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, _ = served
    server.public_clients.add("workload")
    url = f"{server.base}/mcp"
    provider = OAuthProvider(
        url,
        grant=JwtBearerGrant("expired-workload-jwt"),
        client=ClientInfo("workload", token_endpoint_auth_method="none"),
    )
    async with httpx.AsyncClient(auth=provider) as http:
        with pytest.raises(AuthorizationFailed, match="invalid_grant"):
            await http.post(url, content=b"{}")
    assert [s.outcome for s in server.requests("/token")] == ["assertion refused"]


async def test_provider_with_enterprise_managed_authorization(
    served: tuple[GrantServer, httpx.AsyncClient],
) -> None:
    server, _ = served
    server.resource_takes_bearer = True
    server.secrets["mcp-client"] = "mcp-secret"
    url = f"{server.base}/mcp"
    provider = OAuthProvider(
        url, grant=enterprise(server), client=ClientInfo("mcp-client", "mcp-secret")
    )
    async with httpx.AsyncClient(auth=provider) as http:
        assert (await http.post(url, content=b"{}")).status_code == 200
    (exchange,) = server.requests("/idp/token")
    assert exchange.form["resource"] == url
    assert exchange.form["audience"] == server.base
    assert [s.outcome for s in server.requests("/token")] == ["ok"]
