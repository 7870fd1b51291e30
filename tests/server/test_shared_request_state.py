"""``requestState`` across instances: a key ring rotated mid-run refuses no
state in flight, an audience keeps servers sharing a key apart, and
``single_use`` holds across instances through a real Redis (``RedisNonceStore``)."""

from __future__ import annotations

import uuid

import pytest

from trio_mcp import RequestStateError, RequestStateSealer
from trio_mcp.bus import NonceStoreUnavailable, RedisNonceStore

OLD = "o" * 32
NEW = "n" * 32
PARAMS = {"name": "book", "arguments": {"day": "monday"}}


def seal(sealer: RequestStateSealer) -> str:
    return sealer.seal(
        "tools/call", round=1, previous_request_id=1, answers={}, saved={}, params=PARAMS
    )


def opened(sealer: RequestStateSealer, token: str) -> str:
    return sealer.open(token, method="tools/call", params=PARAMS).method


def test_a_rotated_ring_accepts_states_in_flight_then_drops_the_old_key() -> None:
    here = RequestStateSealer(OLD)
    there = RequestStateSealer(OLD)
    in_flight = seal(here)
    # Step 1: every instance accepts the new key. Step 2: it signs with it.
    there = RequestStateSealer(OLD, previous_keys=[NEW])
    here.rotate(NEW)
    assert here.key_count == 2
    fresh = seal(here)
    assert opened(there, fresh) == "tools/call"  # signed with the new key
    assert opened(here, in_flight) == "tools/call"  # signed with the old one
    there = RequestStateSealer(NEW, previous_keys=[OLD])
    assert opened(there, in_flight) == "tools/call"
    # Step 3, after the ttl: the old key is dropped, its states are refused.
    here.rotate("x" * 32, keep=1)
    with pytest.raises(RequestStateError, match="integrity") as refused:
        opened(here, in_flight)
    assert refused.value.reason == "tampered"
    assert opened(here, fresh) == "tools/call"


def test_the_ring_comes_from_the_environment_with_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TRIO_MCP_REQUEST_STATE_KEY", NEW)
    monkeypatch.setenv("TRIO_MCP_REQUEST_STATE_PREVIOUS_KEYS", f"{OLD},,{'p' * 16}")
    in_flight = seal(RequestStateSealer(OLD))
    configured = RequestStateSealer()
    assert configured.key_count == 3  # the empty item is skipped
    assert opened(configured, in_flight) == "tools/call"
    # A key given in code brings its own previous keys, none by default.
    assert RequestStateSealer(NEW).key_count == 1
    assert RequestStateSealer(previous_keys=[]).key_count == 1
    monkeypatch.setenv("TRIO_MCP_REQUEST_STATE_PREVIOUS_KEYS", f"{OLD},short")
    with pytest.raises(ValueError, match="key 2 of TRIO_MCP_REQUEST_STATE_PREVIOUS_KEYS") as bad:
        RequestStateSealer()
    assert "short" not in str(bad.value)


def test_an_audience_keeps_servers_sharing_a_key_apart() -> None:
    billing = RequestStateSealer(OLD, audience="billing")
    search = RequestStateSealer(OLD, audience="search")
    token = seal(billing)
    assert opened(billing, token) == "tools/call"
    with pytest.raises(RequestStateError, match="another request") as refused:
        opened(search, token)
    assert refused.value.reason == "foreign"
    # A sealer without an audience refuses an audience's states, and the other way.
    with pytest.raises(RequestStateError):
        opened(RequestStateSealer(OLD), token)
    with pytest.raises(RequestStateError):
        opened(billing, seal(RequestStateSealer(OLD)))


async def test_a_nonce_replayed_on_the_other_instance_is_refused(redis_url: str) -> None:
    prefix = f"test:nonces:{uuid.uuid4().hex}:"
    async with (
        RedisNonceStore(redis_url, prefix=prefix) as store_a,
        RedisNonceStore(redis_url, prefix=prefix) as store_b,
    ):
        a = RequestStateSealer(OLD, single_use=True, nonce_store=store_a)
        b = RequestStateSealer(OLD, single_use=True, nonce_store=store_b)
        token = seal(a)
        state = await b.open_async(token, method="tools/call", params=PARAMS)
        assert state.round == 1
        with pytest.raises(RequestStateError, match="already been used") as refused:
            await a.open_async(token, method="tools/call", params=PARAMS)
        assert refused.value.reason == "replayed"
        # The synchronous open cannot wait for Redis: it says so.
        with pytest.raises(TypeError, match="open_async"):
            a.open(seal(a), method="tools/call", params=PARAMS)
    with pytest.raises(NonceStoreUnavailable, match="not open"):
        await store_a.consume("n", 2.0, 1.0)
