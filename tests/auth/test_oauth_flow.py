"""The OAuth client end to end: ``open_http_client(url, auth=OAuthProvider(...))``
against a real authorization server (``oauth_servers.OAuthServer``) and our
resource server (``ResourceServer(JWTVerifier(...))``), both on loopback.

What the client sent is read from what the servers recorded: discovery order,
registration, PKCE, ``state``, ``iss``, ``resource``, refresh with rotation,
step-up and its retry limit, the bearer token on every request and never in a
URL, and no secret in the logs.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import pytest
import trio
from oauth_servers import OAuthServer, Protected, protected_mcp, running_oauth_server

from trio_mcp import Context, RPCError, Server, open_http_client
from trio_mcp.auth import (
    AuthorizationFailed,
    ClientInfo,
    HeadlessRedirect,
    JWTVerifier,
    MemoryTokenStorage,
    OAuthProvider,
)

REDIRECT = "http://localhost:3000/callback"


def make_server() -> Server:
    server = Server("oauth-test")

    @server.tool()
    async def whoami(ctx: Context) -> str:
        assert ctx.auth is not None
        return f"{ctx.auth.subject} {' '.join(sorted(ctx.auth.scopes))}"

    return server


@asynccontextmanager
async def world(
    issuer: OAuthServer | None = None, **options: object
) -> AsyncIterator[tuple[OAuthServer, Protected]]:
    """An authorization server and the protected MCP server trusting it."""
    async with (
        running_oauth_server(issuer or OAuthServer()) as auth_server,
        protected_mcp(make_server(), auth_server, **options) as mcp,  # type: ignore[arg-type]
    ):
        yield auth_server, mcp


def provider(url: str, **options: object) -> OAuthProvider:
    options.setdefault("redirect", HeadlessRedirect(REDIRECT))
    return OAuthProvider(url, **options)  # type: ignore[arg-type]


async def whoami(url: str, auth: OAuthProvider, era: str = "auto") -> str:
    async with open_http_client(url, auth=auth, era=era) as client:
        result = await client.call_tool("whoami", {})
        return result.content[0].text  # type: ignore[union-attr]


@pytest.mark.spec("AU-08")
@pytest.mark.spec("AU-09")
@pytest.mark.spec("AU-13")
@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_the_flow_completes_with_pkce_resource_and_bearer_on_every_request(era: str) -> None:
    async with world(scopes_supported=("mcp:read", "mcp:write")) as (auth_server, mcp):
        assert await whoami(mcp.url, provider(mcp.url), era) == "user-1 mcp:read mcp:write"
        (register,) = auth_server.requests("/register")
        assert register.json["application_type"] == "native"
        assert register.json["redirect_uris"] == [REDIRECT]
        assert register.json["token_endpoint_auth_method"] == "none"
        (authorize,) = auth_server.requests("/authorize")
        (token,) = auth_server.requests("/token")
        # RFC 8707: the same resource, the PRM's, on both legs (AU-08).
        assert authorize.query["resource"] == token.form["resource"] == [mcp.url]
        assert authorize.query["code_challenge_method"] == ["S256"]
        assert token.form["code_verifier"]
        assert authorize.query["scope"] == ["mcp:read mcp:write"]
        # The first request had no token; every one after the flow carries it,
        # in the header, and no URL ever holds a token (AU-09).
        mcp_requests = [seen for seen in mcp.seen if seen.path == "/mcp"]
        assert "authorization" not in mcp_requests[0].headers
        after = mcp_requests[1:]
        assert after
        assert all(seen.headers.get("authorization", "").startswith("Bearer ") for seen in after)
        for seen in mcp.seen + auth_server.seen:
            assert not any(tok in str(seen.query) for tok in auth_server.issued)
        if era == "legacy":
            assert {seen.method for seen in after} >= {"POST", "DELETE"}


@pytest.mark.spec("AU-06")
@pytest.mark.parametrize(
    ("metadata_at", "tried"),
    [
        ("oauth", ["/.well-known/oauth-authorization-server/tenant"]),
        (
            "oidc-insert",
            [
                "/.well-known/oauth-authorization-server/tenant",
                "/.well-known/openid-configuration/tenant",
            ],
        ),
        (
            "oidc-append",
            [
                "/.well-known/oauth-authorization-server/tenant",
                "/.well-known/openid-configuration/tenant",
                "/tenant/.well-known/openid-configuration",
            ],
        ),
    ],
)
async def test_metadata_discovery_order_for_an_issuer_with_a_path(
    metadata_at: str, tried: list[str]
) -> None:
    issuer = OAuthServer(issuer_path="/tenant", metadata_at=metadata_at)
    async with world(issuer) as (auth_server, mcp):
        await whoami(mcp.url, provider(mcp.url))
        gets = [seen.path for seen in auth_server.seen if "well-known" in seen.path]
        assert gets == tried


@pytest.mark.spec("AU-04")
async def test_the_challenge_s_metadata_url_is_used_first() -> None:
    async with world() as (_, mcp):
        await whoami(mcp.url, provider(mcp.url))
        wells = [seen.path for seen in mcp.seen if "well-known" in seen.path]
        assert wells == ["/.well-known/oauth-protected-resource/mcp"]


@pytest.mark.spec("AU-07")
async def test_pre_registered_credentials_come_first() -> None:
    issuer = OAuthServer(auth_methods=["client_secret_post"])
    issuer.clients["mine"] = ("s3cret", "client_secret_post", [REDIRECT])
    async with world(issuer) as (auth_server, mcp):
        await whoami(mcp.url, provider(mcp.url, client=ClientInfo("mine", "s3cret")))
        assert auth_server.requests("/register") == []
        (token,) = auth_server.requests("/token")
        assert token.form["client_id"] == ["mine"]
        assert token.form["client_secret"] == ["s3cret"]
        assert "authorization" not in token.headers


@pytest.mark.spec("AU-07")
async def test_client_id_metadata_document_only_where_supported() -> None:
    url = "https://client.example/meta.json"
    async with world(OAuthServer(cimd_supported=True)) as (auth_server, mcp):
        await whoami(mcp.url, provider(mcp.url, client_metadata_url=url))
        assert auth_server.requests("/register") == []
        assert auth_server.requests("/authorize")[0].query["client_id"] == [url]
    async with world() as (auth_server, mcp):
        await whoami(mcp.url, provider(mcp.url, client_metadata_url=url))
        assert len(auth_server.requests("/register")) == 1


@pytest.mark.spec("AU-07")
async def test_registration_is_kept_by_issuer_and_asks_for_refresh_with_offline_access() -> None:
    issuer = OAuthServer(scopes_supported=["mcp:read", "offline_access"])
    storage = MemoryTokenStorage()
    async with world(issuer) as (auth_server, mcp):
        await whoami(mcp.url, provider(mcp.url, storage=storage))
        (register,) = auth_server.requests("/register")
        assert register.json["grant_types"] == ["authorization_code", "refresh_token"]
        assert "offline_access" in auth_server.requests("/authorize")[0].query["scope"][0].split()
        stored = await storage.get_client(auth_server.issuer)
        assert stored is not None
        assert stored.issuer == auth_server.issuer
        # A new provider with no tokens but this registration: registers no more.
        fresh = provider(mcp.url, storage=MemoryTokenStorage())
        await fresh.storage.set_client(auth_server.issuer, stored)
        await whoami(mcp.url, fresh)
        assert len(auth_server.requests("/register")) == 1


@pytest.mark.spec("AU-07")
async def test_a_new_authorization_server_means_a_new_registration() -> None:
    """SEP-2352: when the resource names another authorization server, the
    client registers there and never presents the first server's credentials."""
    async with (
        running_oauth_server(OAuthServer(name="first")) as first,
        running_oauth_server(OAuthServer(name="second")) as second,
        protected_mcp(make_server(), first) as mcp,
    ):
        auth = provider(mcp.url)
        async with open_http_client(mcp.url, auth=auth, era="modern") as client:
            await client.call_tool("whoami", {})
            mcp.resource.authorization_servers = (second.issuer,)
            mcp.verifier.inner = JWTVerifier(
                second.base + "/jwks", issuer=second.issuer, audience=mcp.url
            )
            await client.call_tool("whoami", {})
        assert len(first.requests("/register")) == 1
        assert len(second.requests("/register")) == 1
        for seen in second.requests("/authorize") + second.requests("/token"):
            assert not any("first-" in value for values in seen.query.values() for value in values)
            assert not any("first-" in value for values in seen.form.values() for value in values)
            assert (
                "authorization" not in seen.headers or "first" not in seen.headers["authorization"]
            )
        assert second.requests("/authorize")[0].query["client_id"] == ["second-1"]


@pytest.mark.spec("AU-13")
@pytest.mark.parametrize("methods", [None, ["plain"]])
async def test_no_pkce_s256_no_authorization(methods: list[str] | None) -> None:
    async with world(OAuthServer(code_challenge_methods=methods)) as (auth_server, mcp):
        with pytest.raises(AuthorizationFailed, match="S256"):
            await whoami(mcp.url, provider(mcp.url))
        assert auth_server.requests("/authorize") == []


class TamperedRedirect(HeadlessRedirect):
    """A redirect whose query a test rewrites (an attacker's, or a mix-up)."""

    def __init__(self, **changes: str) -> None:
        super().__init__(REDIRECT)
        self.changes = changes

    async def authorize(self, url: str) -> str:
        answered = urlsplit(await super().authorize(url))
        query = {k: v[0] for k, v in parse_qs(answered.query).items()}
        query.update(self.changes)
        return urlunsplit(answered._replace(query=urlencode(query)))


@pytest.mark.spec("AU-14")
async def test_a_state_mismatch_is_refused_before_the_code_is_redeemed() -> None:
    async with world() as (auth_server, mcp):
        with pytest.raises(AuthorizationFailed, match="state"):
            await whoami(mcp.url, provider(mcp.url, redirect=TamperedRedirect(state="forged")))
        assert len(auth_server.requests("/authorize")) == 1
        assert auth_server.requests("/token") == []


@pytest.mark.spec("AU-15")
@pytest.mark.parametrize(
    ("iss_supported", "iss_mode", "passes"),
    [
        (True, "correct", True),
        (False, "omit", True),
        (True, "omit", False),
        (True, "wrong", False),
        (False, "wrong", False),
    ],
)
async def test_iss_is_compared_before_the_code_is_redeemed(
    iss_supported: bool, iss_mode: str, passes: bool
) -> None:
    issuer = OAuthServer(iss_supported=iss_supported, iss_mode=iss_mode)
    async with world(issuer) as (auth_server, mcp):
        if passes:
            await whoami(mcp.url, provider(mcp.url))
            assert len(auth_server.requests("/token")) == 1
        else:
            with pytest.raises(AuthorizationFailed, match="iss"):
                await whoami(mcp.url, provider(mcp.url))
            assert auth_server.requests("/token") == []


@pytest.mark.parametrize("era", ["auto", "modern", "legacy"])
async def test_a_failed_authorization_is_raised_as_itself_in_every_era(era: str) -> None:
    async with world(OAuthServer(iss_mode="wrong")) as (_, mcp):
        with pytest.raises(AuthorizationFailed) as caught:
            await whoami(mcp.url, provider(mcp.url), era)
        assert "AU-15" in caught.value.reason


@pytest.mark.spec("AU-15")
async def test_a_normalized_iss_is_not_the_issuer() -> None:
    async with world() as (auth_server, mcp):
        redirect = TamperedRedirect(iss=auth_server.issuer + "/")
        with pytest.raises(AuthorizationFailed, match="iss"):
            await whoami(mcp.url, provider(mcp.url, redirect=redirect))
        assert auth_server.requests("/token") == []


@pytest.mark.spec("AU-04")
async def test_metadata_for_another_resource_is_refused() -> None:
    async with (
        running_oauth_server(OAuthServer()) as auth_server,
        protected_mcp(make_server(), auth_server, resource_path="/other") as mcp,
    ):
        with pytest.raises(AuthorizationFailed, match="refusing to authorize"):
            await whoami(mcp.url, provider(mcp.url))
        assert auth_server.requests("/authorize") == []


@pytest.mark.spec("AU-14")
async def test_refresh_rotates_the_refresh_token() -> None:
    # expires_in=0: every token is stale at once, so each request refreshes first.
    async with world(OAuthServer(expires_in=0)) as (auth_server, mcp):
        storage = MemoryTokenStorage()
        auth = provider(mcp.url, storage=storage)
        async with open_http_client(mcp.url, auth=auth, era="modern") as client:
            for _ in range(3):
                await client.call_tool("whoami", {})
        stored = await storage.get_tokens(mcp.url)
        assert stored is not None
        assert stored.refresh_token
        used = [
            seen.form["refresh_token"][0]
            for seen in auth_server.requests("/token")
            if seen.form["grant_type"] == ["refresh_token"]
        ]
        assert len(used) >= 3
        # Rotation: each refresh used the newest token (a reused one would be
        # refused, invalid_grant, and the client would authorize again), and
        # the stored one is the only one the server still honours.
        assert len(set(used)) == len(used)
        assert stored.refresh_token not in used
        assert list(auth_server.refresh_tokens) == [stored.refresh_token]
        assert len(auth_server.requests("/authorize")) == 1
        assert all(seen.form["resource"] == [mcp.url] for seen in auth_server.requests("/token"))


@pytest.mark.spec("AU-12")
@pytest.mark.spec("AU-05")
async def test_step_up_asks_for_the_union_of_scopes() -> None:
    async with world() as (auth_server, mcp):
        auth = provider(mcp.url)
        async with open_http_client(mcp.url, auth=auth, era="modern") as client:
            await client.call_tool("whoami", {})
            mcp.verifier.extra = {"mcp:admin"}
            result = await client.call_tool("whoami", {})
            assert result.content[0].text == "user-1 mcp:admin mcp:read"  # type: ignore[union-attr]
        scopes = [seen.query["scope"][0] for seen in auth_server.requests("/authorize")]
        assert scopes == ["mcp:read", "mcp:read mcp:admin"]


@pytest.mark.spec("AU-12")
async def test_step_up_has_a_retry_limit_and_the_session_goes_on() -> None:
    async with world(OAuthServer(withheld={"mcp:admin"})) as (auth_server, mcp):
        auth = provider(mcp.url)
        async with open_http_client(mcp.url, auth=auth, era="modern") as client:
            await client.call_tool("whoami", {})
            mcp.verifier.extra = {"mcp:admin"}
            for _ in range(3):
                with pytest.raises(RPCError, match="scope"):
                    await client.call_tool("whoami", {})
            mcp.verifier.extra = set()
            await client.call_tool("whoami", {})
        # One authorization, then the step-up once more: never a loop.
        assert len(auth_server.requests("/authorize")) == 1 + auth.max_repeats


async def test_secrets_never_reach_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    """Tokens, refresh tokens, codes, verifiers and client secrets appear in no
    log record at DEBUG, httpx's and httpcore's included."""
    caplog.set_level(logging.DEBUG)
    issuer = OAuthServer(auth_methods=["client_secret_basic"])
    async with world(issuer) as (auth_server, mcp):
        await whoami(mcp.url, provider(mcp.url))
        await trio.lowlevel.checkpoint()
    text = "\n".join(
        f"{record.name} {record.getMessage()} {record.args!r}" for record in caplog.records
    )
    assert "oauth" in text or "httpx" in text  # the flow did log
    secrets_seen = [*auth_server.issued]
    secrets_seen += [refresh for refresh in auth_server.refresh_tokens]
    secrets_seen += [secret for secret, _, _ in auth_server.clients.values() if secret]
    secrets_seen += [seen.form["code"][0] for seen in auth_server.requests("/token")]
    secrets_seen += [seen.form["code_verifier"][0] for seen in auth_server.requests("/token")]
    assert secrets_seen
    for secret in secrets_seen:
        assert secret not in text
