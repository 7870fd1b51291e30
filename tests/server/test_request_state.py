"""The requestState sealer: integrity, binding, expiry and single use (PT-08, PT-09, PT-10)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

import pytest

from trio_mcp._errors import RPCError
from trio_mcp._server._request_state import (
    MemoryNonceStore,
    RequestStateError,
    RequestStateSealer,
    RoundState,
    StateRejection,
)
from trio_mcp.protocol import ErrorCode

KEY = b"k" * 32
PARAMS: dict[str, Any] = {"name": "book", "arguments": {"city": "Oslo", "nights": 2}}


class FakeClock:
    """Wall-clock time under the test's control: nothing here sleeps."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _seal(sealer: RequestStateSealer, **overrides: Any) -> str:
    args: dict[str, Any] = {
        "round": 1,
        "previous_request_id": 7,
        "answers": {"confirm": {"action": "accept", "content": {"ok": True}}},
        "saved": {"booking": "draft-1", "ünï": "cödé"},
        "params": PARAMS,
    }
    args.update(overrides)
    method = args.pop("method", "tools/call")
    return sealer.seal(method, **args)


def _open(sealer: RequestStateSealer, token: object, **overrides: Any) -> RoundState:
    args: dict[str, Any] = {"method": "tools/call", "params": PARAMS}
    args.update(overrides)
    return sealer.open(token, **args)


def _rejected(sealer: RequestStateSealer, token: object, **overrides: Any) -> StateRejection:
    with pytest.raises(RequestStateError) as caught:
        _open(sealer, token, **overrides)
    error = caught.value
    assert isinstance(error, RPCError)
    assert error.code == ErrorCode.INVALID_PARAMS
    assert error.code == -32602
    assert error.message.startswith("Invalid requestState: ")
    if isinstance(token, str) and len(token) > 20:
        assert token not in str(error)
        assert token.split(".")[-1] not in str(error)
    return error.reason


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _payload(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return decoded


def _resign(payload: dict[str, Any] | bytes, key: bytes = KEY) -> str:
    """A token with *payload*, correctly signed with *key* (as only the server could)."""
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    body = _b64(raw)
    return f"v1.{body}.{_b64(hmac.new(key, b'v1.' + body.encode(), hashlib.sha256).digest())}"


@pytest.mark.spec("PT-08")
@pytest.mark.spec("PT-09")
def test_round_trip() -> None:
    clock = FakeClock()
    sealer = RequestStateSealer(KEY, ttl=60, clock=clock)
    token = _seal(sealer, principal="alice")
    version, body, mac = token.split(".")
    assert version == "v1"
    assert "=" not in token
    assert len(mac) == 43
    # Only a digest of the principal travels: the payload is readable, not secret.
    assert "alice" not in base64.urlsafe_b64decode(body + "==").decode()
    clock.now += 59
    state = _open(sealer, token, principal="alice")
    assert state.method == "tools/call"
    assert state.round == 1
    assert state.previous_request_id == 7
    assert state.answers == {"confirm": {"action": "accept", "content": {"ok": True}}}
    assert state.saved == {"booking": "draft-1", "ünï": "cödé"}
    assert state.expires_at == 1_000_060.0
    assert len(state.nonce) >= 16
    # Each seal draws a fresh nonce, so two seals of the same state differ.
    assert _payload(_seal(sealer))["n"] != _payload(_seal(sealer))["n"]


@pytest.mark.parametrize("previous", ["req-1", None, 0])
def test_previous_id_kinds_round_trip(previous: str | int | None) -> None:
    sealer = RequestStateSealer(KEY)
    token = _seal(sealer, previous_request_id=previous, round=3, saved={}, answers={})
    state = _open(sealer, token)
    assert (state.previous_request_id, state.round) == (previous, 3)


@pytest.mark.spec("PT-08")
def test_tampered_payload_byte() -> None:
    sealer = RequestStateSealer(KEY)
    token = _seal(sealer)
    version, body, mac = token.split(".")
    raw = bytearray(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    raw[raw.index(b"draft-1")] ^= 0x01  # "draft-1" -> "eraft-1": still valid JSON
    assert _rejected(sealer, f"{version}.{_b64(bytes(raw))}.{mac}") is StateRejection.TAMPERED
    # One base64 character changed, anywhere in the payload.
    for i in (0, len(body) // 2, len(body) - 2):
        flipped = body[:i] + ("A" if body[i] != "A" else "B") + body[i + 1 :]
        assert _rejected(sealer, f"{version}.{flipped}.{mac}") is StateRejection.TAMPERED


@pytest.mark.spec("PT-08")
def test_tampered_mac() -> None:
    sealer = RequestStateSealer(KEY)
    version, body, mac = _seal(sealer).split(".")
    raw = bytearray(base64.urlsafe_b64decode(mac + "="))
    raw[5] ^= 0x80
    assert _rejected(sealer, f"{version}.{body}.{_b64(bytes(raw))}") is StateRejection.TAMPERED


@pytest.mark.spec("PT-08")
@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda t: t[:-1], id="truncated-by-one"),
        pytest.param(lambda t: t.rsplit(".", 1)[0], id="mac-cut-off"),
        pytest.param(lambda t: t[: len(t) // 2], id="truncated-half"),
        pytest.param(lambda t: "", id="empty"),
        pytest.param(lambda t: t + "A", id="mac-one-longer"),
        pytest.param(lambda t: t + ".x", id="four-parts"),
        pytest.param(lambda t: t.replace(".", "..", 1), id="empty-part"),
        pytest.param(lambda t: "v2" + t[2:], id="wrong-version"),
        pytest.param(lambda t: "V1" + t[2:], id="version-case"),
        pytest.param(lambda t: t[3:], id="no-version"),
        pytest.param(lambda t: t[:5] + "!" + t[6:], id="payload-not-base64"),
        pytest.param(lambda t: t[:5] + "+" + t[6:], id="payload-standard-base64"),
        pytest.param(lambda t: t[:-1] + "=", id="mac-padded"),
        pytest.param(lambda t: t[:-1] + "é", id="mac-not-ascii"),
    ],
)
def test_malformed_tokens(mangle: Any) -> None:
    sealer = RequestStateSealer(KEY)
    token = _seal(sealer)
    assert mangle(token) != token
    assert _rejected(sealer, mangle(token)) is StateRejection.MALFORMED


@pytest.mark.spec("PT-08")
def test_mac_with_non_canonical_trailing_bits_is_malformed() -> None:
    # 43 base64 characters carry 258 bits for a 256-bit MAC: the last character has
    # two spare bits. Another spelling of the same MAC is not a token we wrote.
    sealer = RequestStateSealer(KEY)
    version, body, mac = _seal(sealer).split(".")
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    respelt = mac[:-1] + alphabet[alphabet.index(mac[-1]) ^ 1]
    assert base64.urlsafe_b64decode(respelt + "=") == base64.urlsafe_b64decode(mac + "=")
    assert _rejected(sealer, f"{version}.{body}.{respelt}") is StateRejection.MALFORMED


@pytest.mark.spec("PT-08")
@pytest.mark.parametrize("token", [None, 42, b"v1.a.b", ["v1"], {"v": 1}])
def test_a_non_string_state_is_malformed(token: object) -> None:
    assert _rejected(RequestStateSealer(KEY), token) is StateRejection.MALFORMED


@pytest.mark.spec("PT-08")
def test_oversize_token_is_malformed_before_any_work() -> None:
    sealer = RequestStateSealer(KEY, max_size=200)
    assert _rejected(sealer, "v1." + "A" * 300 + "." + "A" * 43) is StateRejection.MALFORMED


@pytest.mark.spec("PT-08")
@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda p: p.update(v=2), id="version"),
        pytest.param(lambda p: p.pop("n"), id="missing-key"),
        pytest.param(lambda p: p.update(x=1), id="extra-key"),
        pytest.param(lambda p: p.update(r=0), id="round-zero"),
        pytest.param(lambda p: p.update(r=True), id="round-bool"),
        pytest.param(lambda p: p.update(i=1.5), id="id-float"),
        pytest.param(lambda p: p.update(a=[]), id="answers-list"),
        pytest.param(lambda p: p.update(s="x"), id="saved-string"),
        pytest.param(lambda p: p.update(e="soon"), id="expiry-string"),
        pytest.param(lambda p: p.update(p=5), id="principal-number"),
    ],
)
def test_a_verified_payload_of_the_wrong_shape_is_malformed(change: Any) -> None:
    sealer = RequestStateSealer(KEY)
    payload = _payload(_seal(sealer))
    _open(sealer, _resign(payload))  # the re-signed original is accepted
    change(payload)
    assert _rejected(sealer, _resign(payload)) is StateRejection.MALFORMED


@pytest.mark.spec("PT-08")
@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b"\xff\xfe{", b'{"e": NaN}'])
def test_a_verified_payload_that_is_not_an_object_is_malformed(raw: bytes) -> None:
    assert _rejected(RequestStateSealer(KEY), _resign(raw)) is StateRejection.MALFORMED


@pytest.mark.spec("PT-08")
def test_different_key_rejects() -> None:
    token = _seal(RequestStateSealer(KEY))
    assert _rejected(RequestStateSealer(b"x" * 32), token) is StateRejection.TAMPERED
    # The default key is random per sealer (per process): workers must share an explicit one.
    assert _rejected(RequestStateSealer(), _seal(RequestStateSealer())) is StateRejection.TAMPERED
    assert _open(RequestStateSealer(KEY), token).round == 1


@pytest.mark.spec("PT-09")
@pytest.mark.parametrize("method", ["resources/read", "prompts/get", "tools/cal"])
def test_foreign_method(method: str) -> None:
    sealer = RequestStateSealer(KEY)
    assert _rejected(sealer, _seal(sealer), method=method) is StateRejection.FOREIGN


@pytest.mark.spec("PT-09")
@pytest.mark.parametrize(
    "params",
    [
        {"name": "book", "arguments": {"city": "Bergen", "nights": 2}},
        {"name": "book", "arguments": {"city": "Oslo", "nights": 2, "extra": 1}},
        {"name": "book", "arguments": {"city": "Oslo", "nights": 2.5}},
        {"name": "cancel", "arguments": {"city": "Oslo", "nights": 2}},
        {"name": "book"},
        {},
        None,
    ],
)
def test_foreign_params(params: dict[str, Any] | None) -> None:
    sealer = RequestStateSealer(KEY)
    assert _rejected(sealer, _seal(sealer), params=params) is StateRejection.FOREIGN


@pytest.mark.spec("PT-09")
def test_retry_params_with_only_meta_input_responses_and_state_added_still_match() -> None:
    sealer = RequestStateSealer(KEY)
    token = _seal(sealer, params={**PARAMS, "_meta": {"progressToken": 1}})
    retry = {
        # Another key order, another _meta, plus what the retry carries.
        "arguments": {"nights": 2, "city": "Oslo"},
        "name": "book",
        "_meta": {"progressToken": 2, "io.example/trace": "t"},
        "inputResponses": {"confirm": {"action": "accept"}},
        "requestState": token,
    }
    assert _open(sealer, token, params=retry).saved["booking"] == "draft-1"
    # Only those keys, and only at the top level.
    nested = {**PARAMS, "arguments": {**PARAMS["arguments"], "_meta": {}}}
    assert _rejected(sealer, token, params=nested) is StateRejection.FOREIGN
    # No params at all and empty params are the same request.
    empty = _seal(sealer, params=None)
    assert _open(sealer, empty, params={"_meta": {}}).round == 1


@pytest.mark.spec("PT-09")
def test_principal_mismatch() -> None:
    sealer = RequestStateSealer(KEY)
    alice = _seal(sealer, principal="alice")
    assert _rejected(sealer, alice, principal="mallory") is StateRejection.FOREIGN
    assert _rejected(sealer, alice) is StateRejection.FOREIGN
    assert _rejected(sealer, _seal(sealer), principal="alice") is StateRejection.FOREIGN
    assert _open(sealer, alice, principal="alice").round == 1


@pytest.mark.spec("PT-09")
def test_expired_by_the_injected_clock() -> None:
    clock = FakeClock()
    sealer = RequestStateSealer(KEY, ttl=30, clock=clock)
    token = _seal(sealer)
    clock.now += 29.999
    assert _open(sealer, token).round == 1
    clock.now = 1_000_030.0  # exactly ttl later: refused from then on
    assert _rejected(sealer, token) is StateRejection.EXPIRED
    clock.now += 3600
    assert _rejected(sealer, token) is StateRejection.EXPIRED


@pytest.mark.spec("PT-09")
def test_binding_is_checked_before_expiry_and_integrity_before_both() -> None:
    clock = FakeClock()
    sealer = RequestStateSealer(KEY, ttl=1, clock=clock)
    token = _seal(sealer)
    clock.now += 10
    assert _rejected(sealer, token, method="prompts/get") is StateRejection.FOREIGN
    assert _rejected(RequestStateSealer(b"y" * 16, clock=clock), token) is StateRejection.TAMPERED


@pytest.mark.spec("PT-10")
def test_replay_with_single_use() -> None:
    store = MemoryNonceStore()
    sealer = RequestStateSealer(KEY, single_use=True, nonce_store=store)
    token = _seal(sealer)
    state = _open(sealer, token)
    assert state.nonce in store
    assert _rejected(sealer, token) is StateRejection.REPLAYED
    # Another state of the same request has its own nonce.
    assert _open(sealer, _seal(sealer)).round == 1


@pytest.mark.spec("PT-10")
def test_a_refused_state_is_not_consumed() -> None:
    # The nonce is consumed last: a foreign or expired attempt does not burn it.
    clock, store = FakeClock(), MemoryNonceStore()
    sealer = RequestStateSealer(KEY, single_use=True, nonce_store=store, clock=clock, ttl=10)
    token = _seal(sealer)
    assert _rejected(sealer, token, method="prompts/get") is StateRejection.FOREIGN
    assert _open(sealer, token).round == 1
    late = _seal(sealer)
    clock.now += 10
    assert _rejected(sealer, late) is StateRejection.EXPIRED
    assert _payload(late)["n"] not in store
    assert len(store) == 1


@pytest.mark.spec("PT-10")
def test_replay_allowed_without_single_use() -> None:
    sealer = RequestStateSealer(KEY)
    token = _seal(sealer)
    assert sealer.nonce_store is None
    assert _open(sealer, token) == _open(sealer, token)


def test_short_key_and_bad_settings_are_value_errors() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        RequestStateSealer(b"x" * 15)
    with pytest.raises(ValueError, match="16 bytes"):
        RequestStateSealer(b"")
    assert _open(RequestStateSealer(b"x" * 16), _seal(RequestStateSealer(b"x" * 16))).round == 1
    with pytest.raises(ValueError, match="ttl"):
        RequestStateSealer(KEY, ttl=0)
    with pytest.raises(ValueError, match="single_use"):
        RequestStateSealer(KEY, nonce_store=MemoryNonceStore())
    with pytest.raises(ValueError, match="max_entries"):
        MemoryNonceStore(0)
    with pytest.raises(ValueError, match="round"):
        _seal(RequestStateSealer(KEY), round=0)


def test_oversize_seal_is_a_value_error() -> None:
    sealer = RequestStateSealer(KEY, max_size=1024)
    with pytest.raises(ValueError, match="over the 1024 bound"):
        _seal(sealer, saved={"blob": "x" * 1024})
    assert len(_seal(sealer, saved={"blob": "x" * 100})) <= 1024


@pytest.mark.parametrize(
    "saved", [{"when": object()}, {"ratio": float("nan")}, {"big": float("inf")}]
)
def test_saved_that_is_not_json_is_a_value_error(saved: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="JSON"):
        _seal(RequestStateSealer(KEY), saved=saved)


def test_any_string_survives_the_round_trip() -> None:
    sealer = RequestStateSealer(KEY)
    saved = {"lone": "\ud800", "emoji": "\U0001f600", "nul": "\x00", "dot": "a.b"}
    assert _open(sealer, _seal(sealer, saved=saved)).saved == saved
    odd = {"name": "x\udfff", "arguments": {"é": "\u2028"}}
    assert _open(sealer, _seal(sealer, params=odd), params=odd).round == 1


@pytest.mark.spec("PT-10")
def test_memory_nonce_store_consumes_once() -> None:
    store = MemoryNonceStore()
    assert store.consume("a", expires_at=110.0, now=100.0)
    assert not store.consume("a", expires_at=110.0, now=105.0)
    assert store.consume("b", expires_at=110.0, now=105.0)
    assert len(store) == 2


@pytest.mark.spec("PT-10")
def test_memory_nonce_store_drops_expired_entries_first() -> None:
    store = MemoryNonceStore(max_entries=3)
    assert store.consume("old", expires_at=50.0, now=10.0)
    assert store.consume("mid", expires_at=200.0, now=10.0)
    assert store.consume("new", expires_at=300.0, now=10.0)
    # At t=60 "old" has expired: it goes, nothing unexpired is evicted.
    assert store.consume("next", expires_at=400.0, now=60.0)
    assert "old" not in store
    assert all(n in store for n in ("mid", "new", "next"))
    assert len(store) == 3
    # Every entry expired: all dropped at once.
    assert store.consume("late", expires_at=1000.0, now=500.0)
    assert len(store) == 1


@pytest.mark.spec("PT-10")
def test_memory_nonce_store_is_bounded_evicting_the_soonest_expiring() -> None:
    store = MemoryNonceStore(max_entries=3)
    for nonce, expires in (("a", 30.0), ("b", 10.0), ("c", 20.0)):
        assert store.consume(nonce, expires_at=expires, now=0.0)
    # Full of unexpired nonces: the soonest-expiring goes, the new one is kept
    # (not keeping it would let it be replayed at once).
    assert store.consume("d", expires_at=5.0, now=0.0)
    assert [n in store for n in "abcd"] == [True, False, True, True]
    assert store.consume("e", expires_at=40.0, now=0.0)
    assert [n in store for n in "abcde"] == [True, False, True, False, True]
    # The documented cost of a full store: an evicted nonce is accepted again.
    assert store.consume("b", expires_at=10.0, now=0.0)
    assert "c" not in store


def test_memory_nonce_store_never_grows_past_its_bound() -> None:
    store = MemoryNonceStore(max_entries=100)
    for n in range(1000):
        # Expiries out of insertion order (7919 is prime to 1000), none expired at t=0.
        assert store.consume(f"n{n}", expires_at=1000.0 + (n * 7919) % 1000, now=0.0)
        assert len(store) == min(n + 1, 100)
        assert f"n{n}" in store
    assert not store.consume("n999", expires_at=1999.0, now=0.0)


def test_rejection_reasons_are_the_five_documented_strings() -> None:
    assert {str(r) for r in StateRejection} == {
        "malformed",
        "tampered",
        "expired",
        "foreign",
        "replayed",
    }
    assert RequestStateError(StateRejection.EXPIRED).code == -32602
