"""``serve_http(workers=N, auth=...)``: the resource server reaches every worker
process (pickled with the app options) as its configuration, verifiers
included, and each worker verifies tokens itself: it fetches the JWKS and
introspects with the resource server's own credentials, from an empty cache
(nothing verified in the parent is trusted in a worker), through an httpx
client of its own when the parent's verifier had one.

Real worker processes on 127.0.0.1, port 0, against the local authorization
server of ``auth_servers``.
"""

from __future__ import annotations

import pickle
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
import pytest
import trio
from auth_servers import AuthorizationServer, running_auth_server
from process_check import child_pids

from trio_mcp import serve_http
from trio_mcp.auth import (
    AccessToken,
    IntrospectionVerifier,
    JWTVerifier,
    ResourceServer,
    StaticTokenVerifier,
)

RESOURCE = "http://mcp.test/mcp"
TARGET = "auth_workers_app:build"


async def call(url: str, token: str, tool: str = "whoami") -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool}}
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2025-11-25",
        "authorization": f"Bearer {token}",
    }
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(url + "/mcp", content=orjson.dumps(body), headers=headers)


def text_of(response: httpx.Response) -> str:
    assert response.status_code == 200, (response.status_code, response.text)
    text: str = response.json()["result"]["content"][0]["text"]
    return text


@asynccontextmanager
async def workers(auth: ResourceServer, count: int = 2) -> AsyncIterator[tuple[str, set[int]]]:
    before = child_pids()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_http(
                TARGET,
                workers=count,
                auth=auth,
                stateless=True,
                json_response=True,
                task_status=task_status,
            )
        )
        yield url, child_pids() - before
        nursery.cancel_scope.cancel()


def protected(verifier: Any) -> ResourceServer:
    return ResourceServer(
        verifier,
        resource=RESOURCE,
        authorization_servers=["http://as.test"],
        required_scopes=["mcp"],
    )


async def test_a_jwt_verifier_reaches_the_workers_and_fetches_its_own_keys() -> None:
    issuer = AuthorizationServer()
    async with running_auth_server(issuer), httpx.AsyncClient() as own_http:
        verifier = JWTVerifier(
            issuer.issuer + "/jwks", issuer=issuer.issuer, audience=RESOURCE, http=own_http
        )
        good = issuer.sign(aud=RESOURCE, scope="mcp")
        # Used in the parent first: a cache, a lock and a live client to leave behind.
        assert (await verifier.verify(good)).subject == "user-1"
        assert issuer.seen["/jwks"] == 1
        async with workers(protected(verifier)) as (url, pids):
            served = {text_of(await call(url, good)) for _ in range(6)}
            assert {answer.split()[0] for answer in served} == {"user-1"}
            assert {int(answer.split()[1]) for answer in served} <= pids
            # Each worker that answered fetched the JWKS itself.
            assert issuer.seen["/jwks"] == 1 + len(served)
            elsewhere = issuer.sign(aud="http://other.test/mcp", scope="mcp")
            assert (await call(url, elsewhere)).status_code == 401
            step_up = await call(url, good, "write")
            assert step_up.status_code == 403
            assert 'scope="mcp files:write"' in step_up.headers["www-authenticate"]


async def test_an_introspection_verifier_reaches_the_workers_with_its_credentials() -> None:
    issuer = AuthorizationServer()
    issuer.client = ("rs-workers", "rs-workers-secret")
    async with running_auth_server(issuer), httpx.AsyncClient() as own_http:
        issuer.tokens["opaque-1"] = {
            "active": True,
            "sub": "user-4",
            "scope": "mcp",
            "aud": RESOURCE,
        }
        verifier = IntrospectionVerifier(
            issuer.issuer + "/introspect",
            client_id="rs-workers",
            client_secret="rs-workers-secret",
            audience=RESOURCE,
            http=own_http,
        )
        assert (await verifier.verify("opaque-1")).subject == "user-4"
        issuer.tokens["opaque-1"] = {"active": False}  # revoked after the parent cached it
        issuer.tokens["opaque-2"] = {
            "active": True,
            "sub": "user-5",
            "scope": "mcp",
            "aud": RESOURCE,
        }
        async with workers(protected(verifier)) as (url, _):
            # The parent's cache did not travel: the revocation holds in the workers.
            assert (await call(url, "opaque-1")).status_code == 401
            assert text_of(await call(url, "opaque-2")).startswith("user-5 ")
        assert issuer.seen["/introspect"] >= 3  # the workers asked, with the right credentials


async def test_a_static_verifier_reaches_the_workers() -> None:
    verifier = StaticTokenVerifier(
        {"dev-token-123": AccessToken(subject="dev", scopes=frozenset({"mcp"}))}
    )
    async with workers(protected(verifier), count=2) as (url, _):
        assert text_of(await call(url, "dev-token-123")).startswith("dev ")
        assert (await call(url, "nope-token")).status_code == 401


@pytest.mark.parametrize("kind", ["jwt", "introspection"])
def test_a_pickled_verifier_keeps_its_configuration_but_no_runtime_state(kind: str) -> None:
    verifier: Any
    if kind == "jwt":
        verifier = JWTVerifier(
            "http://as.test/jwks",
            issuer="http://as.test",
            audience=RESOURCE,
            leeway=12,
            required_scopes=["mcp"],
            http=httpx.AsyncClient(),
        )
        verifier._generation = 3
        copy = pickle.loads(pickle.dumps(verifier))
        assert (copy.jwks_url, copy.issuer, copy.audience, copy.leeway) == (
            verifier.jwks_url,
            verifier.issuer,
            verifier.audience,
            12,
        )
        assert copy.required_scopes == {"mcp"}
        assert copy._http is None
        assert copy._keys is None
        assert copy._generation == 0
        assert isinstance(copy._lock, trio.Lock)
        assert copy._lock is not verifier._lock
        assert verifier._http is not None  # the original is untouched
    else:
        verifier = IntrospectionVerifier(
            "http://as.test/introspect",
            client_id="a",
            client_secret="b",
            audience=RESOURCE,
            http=httpx.AsyncClient(),
        )
        verifier._cache[b"x"] = (AccessToken(subject="s"), 1e12)
        copy = pickle.loads(pickle.dumps(verifier))
        assert copy.endpoint == verifier.endpoint
        assert copy._auth._auth_header == verifier._auth._auth_header
        assert copy._http is None
        assert len(copy._cache) == 0
        assert len(verifier._cache) == 1
