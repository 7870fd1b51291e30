"""SEC-06: the OAuth client's authorization traffic never reaches an address its
:class:`~trio_mcp.auth.EgressPolicy` refuses: checked on every address a host
resolves to before the request, and on the socket's real peer when the answer
arrives (DNS rebinding between the two is caught there)."""

from __future__ import annotations

import ipaddress

import httpx
import pytest
import trio
from oauth_servers import (
    OAuthServer,
    Receive,
    Scope,
    Send,
    _lifespan,
    protected_mcp,
    running_oauth_server,
    serving,
)
from test_oauth_flow import make_server, provider, whoami

from trio_mcp.auth import AuthorizationFailed, EgressPolicy


@pytest.mark.spec("SEC-06")
@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("169.254.169.254", "link-local"),
        ("::ffff:169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("fd00::1", "private"),
        ("100.64.0.1", "private"),
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("240.0.0.1", "reserved"),
    ],
)
def test_the_default_policy_refuses_what_is_not_public(address: str, why: str) -> None:
    policy = EgressPolicy.for_server("https://mcp.example.com/mcp")
    refusal = policy.refusal(ipaddress.ip_address(address))
    assert refusal is not None
    assert why in refusal
    with pytest.raises(AuthorizationFailed, match=why):
        policy.check("https://as.example/token", ipaddress.ip_address(address))


@pytest.mark.spec("SEC-06")
def test_public_addresses_pass_and_each_range_can_be_allowed() -> None:
    strict = EgressPolicy()
    for public in ("93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "8.8.8.8"):
        assert strict.refusal(ipaddress.ip_address(public)) is None
    loose = EgressPolicy(allow_loopback=True, allow_private=True, allow_link_local=True)
    for address in ("127.0.0.1", "10.1.2.3", "169.254.169.254", "fd12::9"):
        assert loose.refusal(ipaddress.ip_address(address)) is None
    # Multicast and reserved ranges are never a server's address.
    assert loose.refusal(ipaddress.ip_address("224.0.0.1")) is not None


@pytest.mark.spec("SEC-06")
def test_loopback_is_allowed_only_for_a_server_on_loopback() -> None:
    for local in ("http://localhost:3000/mcp", "http://127.0.0.1:9/mcp", "http://[::1]:9/mcp"):
        assert EgressPolicy.for_server(local).allow_loopback
    for remote in ("https://mcp.example.com/mcp", "https://10.0.0.5/mcp"):
        assert not EgressPolicy.for_server(remote).allow_loopback
    assert not EgressPolicy.for_server("https://mcp.example.com/mcp").allow_private


@pytest.mark.spec("SEC-06")
async def test_a_name_is_checked_on_every_address_it_resolves_to() -> None:
    policy = EgressPolicy.for_server("https://mcp.example.com/mcp")
    with pytest.raises(AuthorizationFailed, match="loopback"):
        await policy.resolve_and_check(httpx.URL("http://localhost:1/.well-known/x"))


@pytest.mark.spec("SEC-06")
async def test_metadata_naming_the_instance_metadata_address_is_refused_unsent() -> None:
    # The protected resource metadata (served on loopback, as the server is)
    # names an authorization server at the cloud metadata address.
    metadata_service = OAuthServer(base="http://169.254.169.254")
    async with protected_mcp(make_server(), metadata_service) as mcp:
        with trio.fail_after(10), pytest.raises(AuthorizationFailed, match="link-local"):
            await whoami(mcp.url, provider(mcp.url))
        # The PRM was fetched (allowed), nothing else was authorized.
        prm = [s.path for s in mcp.seen if s.path.startswith("/.well-known/")]
        assert prm


@pytest.mark.spec("SEC-06")
async def test_a_policy_without_loopback_stops_discovery_of_a_loopback_server() -> None:
    async with (
        running_oauth_server(OAuthServer()) as auth_server,
        protected_mcp(make_server(), auth_server) as mcp,
    ):
        strict = provider(mcp.url, egress=EgressPolicy())
        with pytest.raises(AuthorizationFailed, match="loopback"):
            await whoami(mcp.url, strict)
        assert [s.path for s in mcp.seen if s.path.startswith("/.well-known/")] == []
        assert auth_server.seen == []


@pytest.mark.spec("SEC-06")
async def test_the_socket_s_real_peer_is_checked_when_the_answer_arrives() -> None:
    # The pre-connect check can be fooled by a name that resolves differently a
    # moment later; the answer's hook reads the connected socket's peer.
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    after = EgressPolicy().hooks()["response"][0]
    async with serving(app) as base, httpx.AsyncClient() as http:
        response = await http.get(base + "/metadata")
        assert response.status_code == 200
        async with http.stream("GET", base + "/metadata") as streamed:
            with pytest.raises(AuthorizationFailed, match=r"127\.0\.0\.1"):
                await after(streamed)
            assert streamed.is_closed
