"""Sealed ``requestState`` for multi round-trip requests (2026-07-28).

Theory of operation. A server answering ``tools/call``, ``resources/read`` or
``prompts/get`` with an ``InputRequiredResult`` hands the client a
``requestState`` string; the client retries with a new id, the original params,
``inputResponses`` and that string, untouched. Whatever the server needs to go on
(the answers gathered so far, the handler's own ``saved`` JSON) travels in it, so
any worker can serve the retry and no worker keeps anything between rounds.

The client is not trusted with it (PT-08): :class:`RequestStateSealer` signs the
state with HMAC-SHA256 and, on the retry, refuses anything it did not issue, for
this request, recently. The wire form is
``v1.<base64url(payload JSON)>.<base64url(HMAC-SHA256(key, "v1." + payload part))>``
(no padding). The payload binds the state (PT-09) to:

* the method, and a SHA-256 digest of the salient params: the params without
  ``_meta``, ``inputResponses`` and ``requestState``, which the retry adds or
  changes, in canonical JSON (sorted keys, compact separators, UTF-8), so a state
  issued for one tool call, or for other arguments, is refused for another;
* the principal, when the server has one (only its digest is carried);
* an expiry, ``ttl`` seconds after sealing.

With ``single_use`` each state is accepted once: its random nonce is consumed in
a :class:`NonceStore` (PT-10; integrity and expiry alone do not prevent replay).

What it does not do: the state is signed, NOT encrypted. The client can read all
of it, so never put secrets in ``saved``.

Scale-out. A retry may reach any worker, so every worker must sign with the same
key. The key is configuration: pass ``key=`` explicitly, or leave it out and set
the environment variable ``TRIO_MCP_REQUEST_STATE_KEY`` (:data:`KEY_ENV`) to the
same secret for every worker (its UTF-8 bytes are the key, at least 16 of them;
e.g. 64 hex digits from ``secrets.token_hex(32)``). ``serve_http(..., workers=N)``
sets the variable to a fresh random key for its workers when it is not already
set, so the workers of one run agree; set it yourself for a key that survives a
restart, or that workers started by other means (the hypercorn command line, a
second machine) share. With neither, the key is random per process, and a retry
reaching another process (or a restarted one) is refused as tampered. While the
key rotates, ``TRIO_MCP_REQUEST_STATE_PREVIOUS_KEYS`` (:data:`PREVIOUS_KEYS_ENV`,
comma-separated, so no key holds a comma) names the keys still accepted (see
:class:`RequestStateSealer`). Expiry uses the wall clock, which workers share, so
their clocks must agree. Single use (below) needs a :class:`NonceStore` every
worker shares; the in-process default only sees its own worker's states.

Cancellation: everything here is synchronous and never checkpoints, so it cannot
be interrupted half way; a consumed nonce stays consumed.

Spec: PT-08, PT-09, PT-10.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import heapq
import hmac
import json
import math
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from .._errors import RPCError
from ..protocol import ErrorCode

#: The environment variable a sealer built without ``key`` takes its key from.
KEY_ENV = "TRIO_MCP_REQUEST_STATE_KEY"
#: The environment variable a sealer built without ``key`` nor ``previous_keys``
#: takes its previous keys from (comma-separated).
PREVIOUS_KEYS_ENV = "TRIO_MCP_REQUEST_STATE_PREVIOUS_KEYS"
_MIN_KEY = 16

_VERSION = "v1"
_MAC_CHARS = 43  # base64url of a 32-byte SHA-256 MAC, unpadded
#: Params keys the retry adds or changes, left out of the digest.
_UNBOUND_KEYS = frozenset({"_meta", "inputResponses", "requestState"})
#: v version, m method, d params digest, p principal digest, r round, i previous id,
#: a answers, s saved, n nonce, e expires_at.
_PAYLOAD_KEYS = frozenset({"v", "m", "d", "p", "r", "i", "a", "s", "n", "e"})


class StateRejection(enum.StrEnum):
    """Why a ``requestState`` was refused."""

    #: Not a token of ours: wrong size, shape, version or encoding.
    MALFORMED = "malformed"
    #: The MAC does not verify: changed, or sealed with another key.
    TAMPERED = "tampered"
    #: Issued more than ``ttl`` seconds ago.
    EXPIRED = "expired"
    #: Issued for another method, other arguments or another principal.
    FOREIGN = "foreign"
    #: Already used once, with ``single_use`` on.
    REPLAYED = "replayed"


_MESSAGES = {
    StateRejection.MALFORMED: "it is not a request state issued by this server",
    StateRejection.TAMPERED: "it failed integrity verification",
    StateRejection.EXPIRED: "it has expired; start the request again",
    StateRejection.FOREIGN: "it was issued for another request (method, arguments or principal)",
    StateRejection.REPLAYED: "it has already been used",
}


class RequestStateError(RPCError):
    """A ``requestState`` was refused: -32602, ``reason`` says why; on the wire
    ``data.reason`` carries it too.

    The message never echoes the token.

    Spec: PT-08.
    """

    def __init__(self, reason: StateRejection) -> None:
        super().__init__(
            int(ErrorCode.INVALID_PARAMS),
            f"Invalid requestState: {_MESSAGES[reason]}",
            {"reason": reason.value},
        )
        self.reason = reason


@attrs.frozen
class RoundState:
    """A verified, decoded request state: what the server carries between rounds."""

    #: The method it was issued for.
    method: str
    #: 1 for the state issued by the first round, then 2, ...
    round: int
    #: JSON-RPC id of the request whose answer issued this state.
    previous_request_id: str | int | None
    #: Input responses gathered in earlier rounds (raw JSON), by input key.
    answers: dict[str, Any]
    #: The handler's own JSON state (``ctx.saved``), so a retry does not redo side effects.
    saved: dict[str, Any]
    #: Random, unique per state; the single-use key.
    nonce: str
    #: Wall-clock time (seconds since the epoch) from which it is refused.
    expires_at: float


class NonceStore(Protocol):
    """Single-use enforcement backend (PT-10): shared by every worker that opens states.

    ``consume`` is called on the event loop thread; it returns the answer, or
    an awaitable of it for a store that asks another process
    (``RedisNonceStore``), which the server awaits
    (:meth:`RequestStateSealer.open_async`).
    """

    def consume(self, nonce: str, expires_at: float, now: float) -> bool | Awaitable[bool]:
        """True the first time *nonce* is consumed, False ever after (until it expires)."""
        ...


class MemoryNonceStore:
    """An in-process :class:`NonceStore` holding at most *max_entries* nonces.

    Expired nonces are dropped first (their states are refused as expired anyway).
    When it is full of unexpired nonces it evicts the soonest-expiring one, which
    could then be replayed until it expires: size *max_entries* above the number of
    single-use states issued per ``ttl``. Each call costs O(log n) (a heap by expiry).
    Only for a single-process server: workers do not see each other's nonces.
    """

    def __init__(self, max_entries: int = 10_000) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._expiry: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []

    def __len__(self) -> int:
        return len(self._expiry)

    def __contains__(self, nonce: object) -> bool:
        return nonce in self._expiry

    def consume(self, nonce: str, expires_at: float, now: float) -> bool:
        while self._heap and self._heap[0][0] <= now:
            del self._expiry[heapq.heappop(self._heap)[1]]
        if nonce in self._expiry:
            return False
        if len(self._expiry) >= self.max_entries:
            del self._expiry[heapq.heappop(self._heap)[1]]
        self._expiry[nonce] = expires_at
        heapq.heappush(self._heap, (expires_at, nonce))
        return True


def key_from_env(environ: Mapping[str, str] | None = None) -> bytes | None:
    """The key configured by ``TRIO_MCP_REQUEST_STATE_KEY`` in *environ* (default
    :data:`os.environ`): its value's UTF-8 bytes, or None when it is unset or empty.

    Raises:
        ValueError: the value is shorter than 16 bytes (the message names the
            variable, never its value).
    """
    value = (os.environ if environ is None else environ).get(KEY_ENV, "")
    if not value:
        return None
    key = value.encode("utf-8", "surrogateescape")
    if len(key) < _MIN_KEY:
        raise ValueError(f"{KEY_ENV} must hold at least {_MIN_KEY} bytes")
    return key


def previous_keys_from_env(environ: Mapping[str, str] | None = None) -> list[bytes]:
    """The previous keys configured by ``TRIO_MCP_REQUEST_STATE_PREVIOUS_KEYS``
    in *environ* (default :data:`os.environ`): its comma-separated values'
    UTF-8 bytes, in order (empty items are skipped; none when it is unset).

    Raises:
        ValueError: a key is shorter than 16 bytes (the message names the
            variable and the key's position, never a value).
    """
    value = (os.environ if environ is None else environ).get(PREVIOUS_KEYS_ENV, "")
    keys = [item.encode("utf-8", "surrogateescape") for item in value.split(",") if item]
    for position, key in enumerate(keys, 1):
        if len(key) < _MIN_KEY:
            raise ValueError(
                f"key {position} of {PREVIOUS_KEYS_ENV} must hold at least {_MIN_KEY} bytes"
            )
    return keys


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    """Strict unpadded base64url; ValueError for anything we would not have written."""
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    # Re-encoding refuses what decoding tolerates: "+", "/", "=", stray characters,
    # and non-zero trailing bits (another spelling of the same bytes).
    if _b64encode(data) != text:
        raise ValueError("not canonical base64url")
    return data


def params_digest(params: Mapping[str, Any] | None) -> str:
    """SHA-256 (hex) of the canonical JSON of *params* without the keys a retry adds (PT-09)."""
    salient = {k: v for k, v in (params or {}).items() if k not in _UNBOUND_KEYS}
    text = json.dumps(salient, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # surrogatepass: a lone surrogate still digests (deterministically) instead of raising.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _principal_digest(principal: str | None) -> str | None:
    # Only a digest is carried: the payload is readable by the client.
    if principal is None:
        return None
    return hashlib.sha256(principal.encode("utf-8", "surrogatepass")).hexdigest()


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _well_formed(p: object) -> bool:
    # "u", the audience, is there only when the sealer has one.
    if not isinstance(p, dict) or (p.keys() - {"u"}) != _PAYLOAD_KEYS:
        return False
    if not isinstance(p.get("u", ""), str):
        return False
    i, e = p["i"], p["e"]
    return (
        p["v"] == 1
        and all(isinstance(p[k], str) for k in "mdn")
        and (p["p"] is None or isinstance(p["p"], str))
        and _is_int(p["r"])
        and p["r"] >= 1
        and (i is None or isinstance(i, str) or _is_int(i))
        and isinstance(p["a"], dict)
        and isinstance(p["s"], dict)
        and (_is_int(e) or isinstance(e, float))
        and math.isfinite(e)
    )


def _as_key(key: bytes | str) -> bytes:
    """A key's bytes (a ``str`` as UTF-8); ValueError under 16 bytes."""
    if isinstance(key, str):
        key = key.encode("utf-8")
    if len(key) < _MIN_KEY:
        raise ValueError("the requestState key must be at least 16 bytes")
    return key


class RequestStateSealer:
    """Seals and opens ``requestState`` tokens.

    Key ring: *key* signs every new state; a state signed with it or with any
    of *previous_keys* is accepted, so keys rotate without refusing states in
    flight: give every instance the new key as a previous one first, then
    make it the current key everywhere (the old one now previous), and drop
    the old one after ``ttl``. :meth:`rotate` does the second step in a
    running process. *previous_keys* None (the default) takes them, when
    *key* is None too, from the environment variable
    ``TRIO_MCP_REQUEST_STATE_PREVIOUS_KEYS`` (comma-separated; see
    :func:`previous_keys_from_env`), so a deployment rotates by configuration
    alone: restart each instance with the new ring. *audience*, when given,
    is sealed into every state and required on opening: servers sharing a
    key but not their states (two products, one secret) refuse each other's
    as foreign.

    *key* signs every state (a ``str`` is taken as its UTF-8 bytes). None takes the
    key from the environment variable ``TRIO_MCP_REQUEST_STATE_KEY`` when it is set
    (see :func:`key_from_env`), else draws a random 32-byte key for this process
    only: every worker of a scaled-out server must sign with the same key, given
    either way (see the module's "Scale-out"). A key under 16 bytes is a
    ValueError. States expire *ttl* seconds after sealing, by
    *clock* (wall-clock seconds). With *single_use*, :meth:`open` accepts each state
    once, consuming its nonce in *nonce_store* (an in-process
    :class:`MemoryNonceStore` by default). Tokens over *max_size* characters are
    neither issued nor read.

    Spec: PT-08, PT-09, PT-10.
    """

    def __init__(
        self,
        key: bytes | str | None = None,
        *,
        ttl: float = 300.0,
        single_use: bool = False,
        nonce_store: NonceStore | None = None,
        clock: Callable[[], float] = time.time,
        max_size: int = 64 * 1024,
        previous_keys: Sequence[bytes | str] | None = None,
        audience: str | None = None,
    ) -> None:
        if previous_keys is None:
            # The ring is configured in one place: the environment's previous
            # keys go with the environment's key, never with a key given here.
            previous_keys = previous_keys_from_env() if key is None else ()
        if key is None:
            key = key_from_env()
        if key is None:
            key = secrets.token_bytes(32)
        key = _as_key(key)
        if not ttl > 0:
            raise ValueError("ttl must be positive")
        if nonce_store is not None and not single_use:
            raise ValueError("a nonce_store is only used with single_use=True")
        self._key = key
        self._previous = tuple(_as_key(k) for k in previous_keys)
        self.audience = audience
        self.ttl = ttl
        self.single_use = single_use
        if single_use and nonce_store is None:  # not `or`: an empty store is falsy
            nonce_store = MemoryNonceStore()
        self.nonce_store = nonce_store
        self._clock = clock
        self.max_size = max_size

    def _mac(self, payload_b64: str, key: bytes | None = None) -> bytes:
        message = f"{_VERSION}.{payload_b64}".encode("ascii")
        return hmac.new(self._key if key is None else key, message, "sha256").digest()

    def rotate(self, key: bytes | str, *, keep: int = 1) -> None:
        """Sign with *key* from now on; the current key becomes the first
        previous one, and at most *keep* previous keys are kept (the oldest go).
        States sealed before are still accepted while their key is kept."""
        new = _as_key(key)
        self._previous = (self._key, *self._previous)[:keep]
        self._key = new

    @property
    def key_count(self) -> int:
        """Keys a state may be signed with: the current one and the previous ones."""
        return 1 + len(self._previous)

    def seal(
        self,
        method: str,
        *,
        round: int,
        previous_request_id: str | int | None,
        answers: Mapping[str, Any],
        saved: Mapping[str, Any],
        params: Mapping[str, Any] | None,
        principal: str | None = None,
    ) -> str:
        """The ``requestState`` for the next round of *method* called with *params*.

        Raises:
            ValueError: *round* is under 1; *answers* or *saved* are not plain
                JSON (or hold a NaN or an infinity); or the token would exceed
                ``max_size`` (a handler saving too much; the server answers -32603).
        """
        if round < 1:
            raise ValueError("round counts from 1")
        payload = {
            "v": 1,
            "m": method,
            "d": params_digest(params),
            "p": _principal_digest(principal),
            "r": round,
            "i": previous_request_id,
            "a": dict(answers),
            "s": dict(saved),
            "n": secrets.token_urlsafe(16),
            "e": self._clock() + self.ttl,
        }
        if self.audience is not None:
            payload["u"] = self.audience
        try:
            # ensure_ascii: any string, even a lone surrogate, survives the round trip.
            text = json.dumps(payload, separators=(",", ":"), allow_nan=False)
        except TypeError as exc:
            raise ValueError(f"requestState content is not JSON: {exc}") from exc
        payload_b64 = _b64encode(text.encode("ascii"))
        token = f"{_VERSION}.{payload_b64}.{_b64encode(self._mac(payload_b64))}"
        if len(token) > self.max_size:
            raise ValueError(
                f"requestState would be {len(token)} characters, over the {self.max_size} bound"
            )
        return token

    def open(
        self,
        token: object,
        *,
        method: str,
        params: Mapping[str, Any] | None,
        principal: str | None = None,
        consume: bool = True,
    ) -> RoundState:
        """Verify *token* (whatever the client sent as ``requestState``) for this request.

        *consume* False skips the nonce (for :meth:`open_async`, which consumes
        it itself). An asynchronous nonce store needs :meth:`open_async`
        (TypeError here).

        Checks, in order: size and format, MAC, payload shape, binding to *method*,
        *params* and *principal*, expiry, then (with ``single_use``) the nonce, so a
        state is consumed only once it passed every other check.

        Raises:
            RequestStateError: -32602, with the :class:`StateRejection` as ``reason``.
        """
        if not isinstance(token, str) or len(token) > self.max_size:
            raise RequestStateError(StateRejection.MALFORMED)
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != _VERSION or len(parts[2]) != _MAC_CHARS:
            raise RequestStateError(StateRejection.MALFORMED)
        payload_b64, mac_b64 = parts[1], parts[2]
        try:
            raw = _b64decode(payload_b64)
            mac = _b64decode(mac_b64)
        except ValueError:  # binascii.Error is a ValueError
            raise RequestStateError(StateRejection.MALFORMED) from None
        if not any(
            hmac.compare_digest(self._mac(payload_b64, key), mac)
            for key in (self._key, *self._previous)
        ):
            raise RequestStateError(StateRejection.TAMPERED)
        try:
            p = json.loads(raw)
        except ValueError:
            p = None
        if not _well_formed(p):
            raise RequestStateError(StateRejection.MALFORMED)
        if (
            p["m"] != method
            or p["d"] != params_digest(params)
            or p["p"] != _principal_digest(principal)
            or p.get("u") != self.audience
        ):
            raise RequestStateError(StateRejection.FOREIGN)
        now = self._clock()
        if now >= p["e"]:
            raise RequestStateError(StateRejection.EXPIRED)
        state = RoundState(p["m"], p["r"], p["i"], p["a"], p["s"], p["n"], float(p["e"]))
        if consume and self.nonce_store is not None:
            fresh = self.nonce_store.consume(p["n"], p["e"], now)
            if not isinstance(fresh, bool):
                close = getattr(fresh, "close", None)
                if close is not None:
                    close()  # a coroutine never awaited: no warning
                raise TypeError("this nonce store is asynchronous: use open_async")
            if not fresh:
                raise RequestStateError(StateRejection.REPLAYED)
        return state

    async def open_async(
        self,
        token: object,
        *,
        method: str,
        params: Mapping[str, Any] | None,
        principal: str | None = None,
    ) -> RoundState:
        """:meth:`open`, awaiting the nonce store when it answers later
        (``RedisNonceStore``): what the server calls.

        Cancellation: a cancelled call may or may not have consumed the nonce
        (the state is then refused as replayed if retried).

        Raises:
            RequestStateError: as :meth:`open`.
        """
        state = self.open(token, method=method, params=params, principal=principal, consume=False)
        if self.nonce_store is not None:
            fresh = self.nonce_store.consume(state.nonce, state.expires_at, self._clock())
            if not isinstance(fresh, bool):
                fresh = await fresh
            if not fresh:
                raise RequestStateError(StateRejection.REPLAYED)
        return state
