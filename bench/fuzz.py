"""Fuzzing campaign: hostile frames against every transport, server side and client side.

Frames come from two generators, mixed batch by batch:

* a mutational fuzzer seeded from ``bench/fuzz_seeds.json`` (frames written from
  the MCP specification's message shapes, every revision; its origin is noted in
  the file): structural mutations of the parsed JSON (values of the wrong type,
  keys dropped or repeated, ids of every kind, deep nesting, long strings over
  the bound, unicode, batches) and byte mutations of the serialized frame (bit
  flips, insertions, deletions, truncation, splices of two frames);
* hypothesis strategies drawing JSON-RPC-shaped frames (method names from the
  METHODS table, params from recursive JSON, ids of every JSON type).

Each transport is driven by a raw peer: in-memory, stdio (a real subprocess:
this script with ``--serve-stdio``), Streamable HTTP in the handshake era
(SSE and JSON response modes) and in 2026-07-28 (both modes), legacy HTTP+SSE
and WebSocket, against a ``trio_mcp.Server`` whose frame bound is lowered to
64 KiB so the oversize paths are exercised too. ``--side client`` turns it
around: a hostile server (raw frames) against a ``trio_mcp.Client`` over a
real transport (in-memory, stdio, WebSocket, Streamable HTTP in both eras and
both response modes).

After every batch the invariants are checked: the peer still answers (a ping,
or ``server/discover`` in 2026-07-28), at most one response per request id sent,
no response to an id never sent (a notification's), no response after a cancel,
memory (RSS) within a bound, no ERROR logged by trio_mcp (or a traceback on the
child's stderr), and, when a target closes, no task left behind. A failing batch
is minimized (ddmin over its frames) and saved under ``tests/fuzz_regressions/``;
``--replay FILE`` runs a saved case again (the regression tests do).

Run: ``scripts/fuzz [--frames N] [--seed S] [--transport NAME ...] [--side server|client|both]``.
The full campaign is ``--frames 100000`` (per transport and side); the test suite
runs a short deterministic slice (``tests/test_fuzz_slice.py``). Seeds are printed.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import logging
import os
import random
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]  # sibling bench scripts must not shadow modules

import httpx
import orjson
import trio

HERE = Path(__file__).resolve().parent
SCRIPT = str(HERE / "fuzz.py")
ROOT = HERE.parent
SEEDS: list[Any] = json.loads((HERE / "fuzz_seeds.json").read_text())["frames"]
REGRESSIONS = ROOT / "tests" / "fuzz_regressions"

#: The frame bound of the server under test (low, so oversize frames are common).
BOUND = 64 * 1024
#: RSS may grow this much over its first reading before it is a failure.
RSS_BOUND_MIB = 256
#: Seconds the peer has to answer a probe.
PROBE_TIMEOUT = 20.0
BATCH = 100
#: Seconds a client call may wait for a hostile server's answer (often none comes).
CALL_TIMEOUT = 0.5
#: Seconds after which a client call whose response has ended (HTTP) hangs.
HANG_TIMEOUT = 5.0
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
TRANSPORTS = [
    "memory",
    "stdio",
    "http-sse",
    "http-json",
    "http-modern-sse",
    "http-modern-json",
    "legacy-sse",
    "websocket",
]

# ------------------------------------------------------------------ generation

_WEIRD_IDS: list[Any] = [
    0,
    -1,
    1.5,
    True,
    None,
    "",
    "id",
    [1],
    {"a": 1},
    1 << 63,
    (1 << 64) + 1,
    "\ud800x",
    "é" * 3,
]
_WEIRD_VALUES: list[Any] = [
    None,
    True,
    0,
    -7,
    1e308,
    "",
    "x",
    [],
    {},
    [None],
    {"": {"": []}},
    "\u0000\u2028",
]
_METHODS: list[str] = [
    *sorted({f.get("method", "") for f in SEEDS if isinstance(f, dict)} - {""}),
    "nope/nothing",
    "",
    "tools/call ",
    "TOOLS/LIST",
    "rpc.discover",
    "initialize",
]


def _any_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.5:
        return rng.choice([*_WEIRD_VALUES, rng.randint(-1000, 1000), _text(rng)])
    if roll < 0.75:
        return [_any_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {_text(rng, 6): _any_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def _text(rng: random.Random, size: int = 12) -> str:
    alphabet = 'abc _-/:{}[]"\\\n\té日🙂\u0000'
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, size)))


def _mutate_obj(rng: random.Random, obj: Any, depth: int = 0) -> Any:
    """One structural mutation somewhere in *obj* (a fresh copy)."""
    if isinstance(obj, dict) and obj and depth < 4 and rng.random() < 0.6:
        key = rng.choice(list(obj))
        out = dict(obj)
        roll = rng.random()
        if roll < 0.15:
            del out[key]
        elif roll < 0.5:
            out[key] = _mutate_obj(rng, out[key], depth + 1)
        elif roll < 0.7:
            out[key] = rng.choice(_WEIRD_VALUES + _WEIRD_IDS)
        elif roll < 0.8:
            out[_text(rng, 8)] = _any_value(rng)
        elif roll < 0.9 and key == "method":
            out[key] = rng.choice(_METHODS)
        else:
            out["id"] = rng.choice([*_WEIRD_IDS, rng.randint(0, 50), f"r{rng.randint(0, 50)}"])
        return out
    if isinstance(obj, list) and obj and rng.random() < 0.6:
        out_list = list(obj)
        i = rng.randrange(len(out_list))
        out_list[i] = _mutate_obj(rng, out_list[i], depth + 1)
        if rng.random() < 0.3:
            out_list.append(_any_value(rng))
        return out_list
    roll = rng.random()
    if roll < 0.05:
        return "x" * rng.choice([BOUND - 200, BOUND + 1, 2 * BOUND])  # around the bound
    if roll < 0.1:
        nest: Any = 1
        for _ in range(rng.choice([10, 100, 200])):
            nest = [nest]
        return nest
    return _any_value(rng)


def _dumps(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj)
    except (TypeError, orjson.JSONEncodeError):
        try:
            return json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass")
        except (RecursionError, ValueError):
            return b'{"jsonrpc":"2.0","id":"x","method":"ping","params":"unencodable"}'


_BYTE_INSERTS = [b"{", b"}", b'"', b"\\", b",", b"\x00", b"\xff", b"\r", b"[", b":"]


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not buf:
            buf += b"{"
        i = rng.randrange(len(buf))
        roll = rng.random()
        if roll < 0.25:
            buf[i] ^= 1 << rng.randrange(8)
        elif roll < 0.45:
            buf[i:i] = rng.choice(
                [b"{", b"}", b'"', b"\\", b",", b"\x00", b"\xff", b"\r", b"[", b":"]
            )
        elif roll < 0.6:
            del buf[i : i + rng.randint(1, 8)]
        elif roll < 0.75:
            del buf[i:]
        else:
            other = _dumps(rng.choice(SEEDS))
            j = rng.randrange(len(other))
            buf[i:] = other[j:]
    return bytes(buf)


def mutational_frame(rng: random.Random) -> bytes:
    if rng.random() < 0.01:  # nesting around the decoder's 1024 levels
        depth = rng.choice([1000, 1023, 1025, 5000])
        inner = b"[" * depth + b"]" * depth
        return b'{"jsonrpc":"2.0","id":"deep","method":"ping","params":{"a":' + inner + b"}}"
    seed = rng.choice(SEEDS)
    obj = seed
    for _ in range(rng.randint(0, 3)):
        obj = _mutate_obj(rng, obj)
    if rng.random() < 0.1:
        obj = [obj, _mutate_obj(rng, rng.choice(SEEDS))]
    data = _dumps(obj)
    if rng.random() < 0.3:
        data = _mutate_bytes(rng, data)
    return data


def hypothesis_frames(seed: int, count: int) -> list[bytes]:
    """*count* frames drawn from hypothesis strategies (deterministic for *seed*)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    from trio_mcp.protocol import METHODS

    names = sorted(METHODS)
    scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    values = st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=15,
    )
    param_keys = st.sampled_from(["name", "arguments", "uri", "_meta", "cursor"]) | st.text(
        max_size=5
    )
    ids = st.integers(-(1 << 65), 1 << 65) | st.text(max_size=8) | scalars
    frames = st.fixed_dictionaries(
        {},
        optional={
            "jsonrpc": st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2]),
            "id": ids,
            "method": st.sampled_from(names) | st.text(max_size=12),
            "params": st.dictionaries(param_keys, values) | values,
            "result": values,
            "error": st.fixed_dictionaries({"code": st.integers(), "message": st.text()}) | values,
        },
    )
    out: list[bytes] = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=max(1, count),
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(frames)
    def collect(frame: dict[str, Any]) -> None:
        out.append(_dumps(frame))

    collect()
    while len(out) < count:  # hypothesis may stop early on a small space
        out.append(out[len(out) % max(1, len(out))] if out else b"{}")
    return out[:count]


def make_batch(rng: random.Random, size: int, pool: list[bytes]) -> list[bytes]:
    """Frames of one batch: mutated seeds, and hypothesis frames (as drawn, or,
    once each was used, mutated in turn: drawing is slow, mutating is not)."""
    batch = []
    for _ in range(size):
        roll = rng.random()
        if pool and roll < 0.4:
            frame = pool[rng.randrange(len(pool))]
            batch.append(frame if roll < 0.1 else _mutate_bytes(rng, frame))
        else:
            batch.append(mutational_frame(rng))
    return batch


# ------------------------------------------------------------ the server side


def make_server() -> Any:
    import trio_mcp

    server = trio_mcp.Server("fuzz-target", version="1")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep (the cancel check cancels it)."""
        await trio.sleep(seconds)
        return "late"

    @server.resource("fuzz://note")
    async def note() -> str:
        """A note."""
        return "note"

    @server.prompt()
    async def greet(who: str) -> str:
        """Greet."""
        return f"hello {who}"

    return server


def _id_key(value: Any) -> tuple[str, Any]:
    return (type(value).__name__, value if not isinstance(value, (list, dict)) else repr(value))


class Failure(Exception):
    """An invariant did not hold."""


class Ledger:
    """What was sent and answered: the per-id invariants."""

    def __init__(self) -> None:
        self.sent: Counter[tuple[str, Any]] = Counter()
        self.answered: Counter[tuple[str, Any]] = Counter()
        self.cancelled: set[tuple[str, Any]] = set()
        self.problems: list[str] = []

    def note_sent(self, frame: bytes) -> None:
        from trio_mcp.protocol._head import scan_head

        try:
            obj = orjson.loads(frame)
        except orjson.JSONDecodeError:
            obj = None
        items = obj if isinstance(obj, list) else [obj]
        seen = False
        for item in items:
            # Anything with an id but a response's shape may be answered with
            # that id: a request, and an invalid message (no "method", "result"
            # nor "error"; both a method and a result), -32600.
            if (
                isinstance(item, dict)
                and "id" in item
                and ("method" in item or not ("result" in item or "error" in item))
            ):
                self.sent[_id_key(item["id"])] += 1
                seen = True
        if not seen:
            scan = scan_head(frame)  # an id the server may read from a frame's head
            if scan is not None:
                self.sent[_id_key(scan.id)] += 1

    def note_answer(self, message: Any) -> None:
        if not isinstance(message, dict) or "method" in message:
            return  # a request or notification of the server's
        if "id" not in message or message["id"] is None:
            return
        key = _id_key(message["id"])
        self.answered[key] += 1
        if key in self.cancelled:
            self.problems.append(f"a response after a cancel: {message!r:.300}")
        elif self.answered[key] > self.sent[key]:
            what = "never sent (a notification's?)" if not self.sent[key] else "answered twice"
            self.problems.append(f"response to an id {what}: {message!r:.300}")


class ErrorLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(f"{record.name}: {record.getMessage()}")


def rss_mib(pid: int | None = None) -> float:
    try:
        with open(f"/proc/{pid or 'self'}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Target:
    """A raw peer of one transport: send frames, collect answers, probe."""

    name = ""
    cancel_check = True

    def __init__(self) -> None:
        self.ledger = Ledger()
        self.inbox: list[Any] = []
        self.stderr: list[str] = []
        self.pid: int | None = None
        self._probes = 0
        self._arrived = trio.Event()

    def received(self, data: bytes | str) -> None:
        try:
            message = orjson.loads(data)
        except orjson.JSONDecodeError:
            self.ledger.problems.append(f"an answer that is not JSON: {data!r:.200}")
            return
        for item in message if isinstance(message, list) else [message]:
            self.inbox.append(item)
            self.ledger.note_answer(item)
        self._arrived.set()

    async def send(self, frame: bytes) -> None:
        raise NotImplementedError

    def wake(self) -> None:
        self._arrived.set()

    def prepare(self, frame: bytes) -> bytes:
        """The frame as this transport sends it (the 2026-07-28 envelope, say)."""
        return frame

    async def send_fuzz(self, frame: bytes) -> None:
        frame = self.prepare(frame)
        self.ledger.note_sent(frame)
        await self.send(frame)

    def probe_frame(self, request_id: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}

    async def probe(self) -> None:
        self._probes += 1
        request_id = f"probe-{self._probes}"
        frame = orjson.dumps(self.probe_frame(request_id))
        self.ledger.note_sent(frame)
        await self.send(frame)
        with trio.move_on_after(PROBE_TIMEOUT):
            while not any(
                isinstance(m, dict) and m.get("id") == request_id and "result" in m
                for m in self.inbox
            ):
                self._arrived = trio.Event()
                await self._arrived.wait()
            return
        raise Failure(f"{self.name}: the peer did not answer a probe within {PROBE_TIMEOUT} s")

    async def check_cancel(self) -> None:
        """A cancelled call gets no response (checked after the next probe)."""
        self._probes += 1
        request_id = f"slow-{self._probes}"
        call = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {"seconds": 120}},
        }
        frame = orjson.dumps(call)
        self.ledger.note_sent(frame)
        await self.send(frame)
        await self.started_slow()
        self.ledger.cancelled.add(_id_key(request_id))
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id},
        }
        await self.send(orjson.dumps(cancel))

    async def started_slow(self) -> None:
        await self.probe()  # in order after the call: the call has started


@asynccontextmanager
async def memory_target() -> AsyncIterator[Target]:
    from trio_mcp import serve_session
    from trio_mcp.testing import memory_transport_pair

    class Memory(Target):
        name = "memory"

        async def send(self, frame: bytes) -> None:
            await near.send(frame)

    near, far = memory_transport_pair(buffer=1024)
    target = Memory()
    async with trio.open_nursery() as nursery:

        async def read() -> None:
            try:
                async for data in near:
                    target.received(data)
            except trio.ClosedResourceError:
                pass  # we closed our end: the session ends

        served = trio.Event()

        async def serve() -> None:
            await serve_session(make_server(), far, max_message_size=BOUND, max_duration=None)
            served.set()

        nursery.start_soon(serve)
        nursery.start_soon(read)
        await _handshake(target)
        yield target
        await near.aclose()
        with trio.move_on_after(PROBE_TIMEOUT) as waited:
            await served.wait()  # EOF ends the session by itself
        if waited.cancelled_caught:
            raise Failure("memory: the session did not end at EOF")


async def _handshake(target: Target) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {
            "protocolVersion": HANDSHAKE,
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "1"},
        },
    }
    frame = orjson.dumps(init)
    target.ledger.note_sent(frame)
    await target.send(frame)
    await target.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    await target.probe()


@asynccontextmanager
async def stdio_target() -> AsyncIterator[Target]:
    from trio_mcp.transports import open_stdio_process

    class Stdio(Target):
        name = "stdio"

        async def send(self, frame: bytes) -> None:
            # Raw bytes: an embedded newline splits the frame, as a peer would.
            stream = process.send_stream
            assert stream is not None
            await stream.send_all(frame.replace(b"\n", b" ") + b"\n")

    target = Stdio()
    env = {"PYTHONPATH": str(ROOT / "src")}
    async with open_stdio_process(
        sys.executable,
        [SCRIPT, "--serve-stdio"],
        env=env,
        stderr=target.stderr.append,
        max_message_size=1 << 24,
    ) as process:
        target.pid = process.pid
        async with trio.open_nursery() as nursery:

            async def read() -> None:
                async for data in process:
                    target.received(data)

            nursery.start_soon(read)
            await _handshake(target)
            yield target
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def http_target(*, modern: bool, json_response: bool) -> AsyncIterator[Target]:
    from trio_mcp import http_app, serve_http
    from trio_mcp.transports._http._sse import SSEParser

    app = http_app(
        make_server(),
        max_body_size=BOUND,
        json_response=json_response,
        session_options={"max_duration": None},
    )
    mode = "json" if json_response else "sse"

    class Http(Target):
        name = f"http-modern-{mode}" if modern else f"http-{mode}"
        cancel_check = not modern and not json_response
        session_id: str | None = None
        posts: trio.Nursery
        #: Set when a POST's response head arrived (the slow call has started).
        heads = trio.Event()

        def probe_frame(self, request_id: str) -> dict[str, Any]:
            if modern:
                return {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "server/discover",
                    "params": {"_meta": MODERN_META},
                }
            return super().probe_frame(request_id)

        async def send(self, frame: bytes) -> None:
            headers = {
                "accept": "application/json, text/event-stream",
                "content-type": "application/json",
                "mcp-protocol-version": MODERN if modern else HANDSHAKE,
            }
            if self.session_id is not None:
                headers["mcp-session-id"] = self.session_id
            if modern:
                _modern_headers(frame, headers)
            started = trio.Event()
            self.posts.start_soon(self._post, frame, headers, started)
            await started.wait()

        async def _post(self, frame: bytes, headers: dict[str, str], started: trio.Event) -> None:
            try:
                async with http.stream("POST", "/mcp", content=frame, headers=headers) as r:
                    started.set()
                    sid = r.headers.get("mcp-session-id")
                    if sid and self.session_id is None and not modern:
                        self.session_id = sid
                    self.heads.set()
                    body_type = r.headers.get("content-type", "")
                    if body_type.startswith("text/event-stream"):
                        parser = SSEParser()
                        async for chunk in r.aiter_raw():
                            for event in parser.feed(chunk):
                                if event.data:
                                    self.received(event.data)
                    else:
                        body = await r.aread()
                        if body and body_type.startswith("application/json"):
                            self.received(body)
                        elif r.status_code >= 500:
                            self.ledger.problems.append(f"HTTP {r.status_code}: {body[:200]!r}")
            except httpx.HTTPError as exc:
                started.set()
                self.ledger.problems.append(f"POST failed: {exc!r}")

        def prepare(self, frame: bytes) -> bytes:
            return _modern_shape(frame) if modern else frame

        async def started_slow(self) -> None:
            # The slow call's SSE stream is open once its response head arrived.
            with trio.fail_after(PROBE_TIMEOUT):
                while not self.heads.is_set():
                    await self.heads.wait()

    target = Http()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: serve_http(app, task_status=task_status))
        timeout = httpx.Timeout(PROBE_TIMEOUT)
        async with (
            httpx.AsyncClient(base_url=url, timeout=timeout) as http,
            trio.open_nursery() as posts,
        ):
            target.posts = posts
            if not modern:
                await _handshake_http(target)
            else:
                await target.probe()
            yield target
            posts.cancel_scope.cancel()
        nursery.cancel_scope.cancel()


def _modern_shape(frame: bytes) -> bytes:
    """A 2026-07-28 request body: (mostly) with the _meta envelope."""
    try:
        obj = orjson.loads(frame)
    except orjson.JSONDecodeError:
        return frame
    if isinstance(obj, dict) and "method" in obj and len(frame) % 5:
        params = obj.get("params")
        if isinstance(params, dict) and "_meta" not in params:
            obj["params"] = {**params, "_meta": MODERN_META}
        elif params is None:
            obj["params"] = {"_meta": MODERN_META}
        try:
            return orjson.dumps(obj)
        except orjson.JSONEncodeError:
            return frame
    return frame


def _modern_headers(frame: bytes, headers: dict[str, str]) -> None:
    """The headers a conforming 2026-07-28 client sends with *frame* (HM-15, HM-19)."""
    try:
        obj = orjson.loads(frame)
    except orjson.JSONDecodeError:
        obj = None
    method = obj.get("method") if isinstance(obj, dict) else None
    safe = (
        isinstance(method, str)
        and method.isascii()
        and method.isprintable()
        and method == method.strip()  # a header value has no outer whitespace
    )
    headers["mcp-method"] = method if safe and isinstance(method, str) else "ping"
    params = obj.get("params") if isinstance(obj, dict) else None
    name = params.get("name") if isinstance(params, dict) else None
    if isinstance(name, str) and name.isascii() and name.isprintable() and name == name.strip():
        headers["mcp-name"] = name


async def _handshake_http(target: Any) -> None:
    await _handshake(target)  # the probe's answer came after the initialize's
    if target.session_id is None:
        raise Failure(f"{target.name}: no Mcp-Session-Id after initialize")


@asynccontextmanager
async def legacy_sse_target() -> AsyncIterator[Target]:
    from trio_mcp import http_app, serve_http
    from trio_mcp.transports._http._sse import SSEParser

    app = http_app(make_server(), max_body_size=BOUND, session_options={"max_duration": None})

    class Legacy(Target):
        name = "legacy-sse"
        endpoint: str | None = None

        async def send(self, frame: bytes) -> None:
            assert self.endpoint is not None
            r = await http.post(
                self.endpoint, content=frame, headers={"content-type": "application/json"}
            )
            if r.status_code >= 500:
                self.ledger.problems.append(f"HTTP {r.status_code}: {r.content[:200]!r}")
            elif r.status_code != 202 and r.headers.get("content-type", "").startswith(
                "application/json"
            ):
                self.received(r.content)  # a refusal's JSON-RPC error (413, 400)

    target = Legacy()
    found = trio.Event()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: serve_http(app, task_status=task_status))
        async with httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(PROBE_TIMEOUT)) as http:

            async def stream() -> None:
                parser = SSEParser()
                headers = {"accept": "text/event-stream"}
                async with http.stream("GET", "/sse", headers=headers) as r:
                    async for chunk in r.aiter_raw():
                        for event in parser.feed(chunk):
                            if event.event == "endpoint":
                                target.endpoint = event.data.strip()
                                found.set()
                            elif event.data:
                                target.received(event.data)

            async with trio.open_nursery() as reading:
                reading.start_soon(stream)
                with trio.fail_after(PROBE_TIMEOUT):
                    await found.wait()
                await _handshake(target)
                yield target
                reading.cancel_scope.cancel()
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def websocket_target() -> AsyncIterator[Target]:
    from trio_websocket import ConnectionClosed, open_websocket_url

    from trio_mcp import serve_websocket

    class WebSocket(Target):
        name = "websocket"

        def prepare(self, frame: bytes) -> bytes:
            return frame.decode("utf-8", "replace").encode()  # text frames only

        async def send(self, frame: bytes) -> None:
            await ws.send_message(frame.decode())

    target = WebSocket()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_websocket(
                make_server(), max_message_size=BOUND, max_duration=None, task_status=task_status
            )
        )
        async with open_websocket_url(url, subprotocols=["mcp"], max_message_size=1 << 24) as ws:

            async def read() -> None:
                try:
                    while True:
                        target.received(await ws.get_message())
                except ConnectionClosed as exc:
                    if exc.reason is None or exc.reason.code != 1000 or not closing:
                        target.ledger.problems.append(f"the server closed the WebSocket: {exc}")
                        target.wake()

            closing = False
            async with trio.open_nursery() as reading:
                reading.start_soon(read)
                await _handshake(target)
                yield target
                closing = True
                reading.cancel_scope.cancel()
        nursery.cancel_scope.cancel()


TARGETS: dict[str, Callable[[], Any]] = {
    "memory": memory_target,
    "stdio": stdio_target,
    "http-sse": lambda: http_target(modern=False, json_response=False),
    "http-json": lambda: http_target(modern=False, json_response=True),
    "http-modern-sse": lambda: http_target(modern=True, json_response=False),
    "http-modern-json": lambda: http_target(modern=True, json_response=True),
    "legacy-sse": legacy_sse_target,
    "websocket": websocket_target,
}


async def run_frames(
    transport: str, batches: list[list[bytes]], *, cancel: bool = True
) -> str | None:
    """Drive one target through *batches*; the first broken invariant, else None."""
    log = ErrorLog()
    logging.getLogger("trio_mcp").addHandler(log)
    baseline = trio.lowlevel.current_statistics().tasks_living
    problem: str | None = None
    try:
        async with TARGETS[transport]() as target:
            first_rss: float | None = None
            for batch in batches:
                for frame in batch:
                    await target.send_fuzz(frame)
                if cancel and target.cancel_check:
                    await target.check_cancel()
                await target.probe()
                rss = rss_mib(target.pid)
                first_rss = rss if first_rss is None else first_rss
                problems = list(target.ledger.problems) + log.records
                problems += [
                    line for line in target.stderr if "Traceback" in line or "ERROR" in line
                ]
                if rss - first_rss > RSS_BOUND_MIB:
                    problems.append(f"RSS grew {rss - first_rss:.0f} MiB")
                if problems:
                    problem = f"{transport}: {problems[0]}"
                    break
    except Failure as exc:
        problem = str(exc)
    finally:
        logging.getLogger("trio_mcp").removeHandler(log)
    if problem is None:
        for _ in range(50):
            await trio.sleep(0.01)
            if trio.lowlevel.current_statistics().tasks_living <= baseline:
                break
        left = trio.lowlevel.current_statistics().tasks_living - baseline
        if left > 0:
            problem = f"{transport}: {left} task(s) left behind after the session ended"
    return problem


# ------------------------------------------------------------ the client side


class ClientPipe:
    """The hostile server's end of one transport: frames to the client, frames from it.

    ``send`` carries a frame of the server's own (unsolicited: hostile frames,
    the probe); ``answer`` the frame answering one request of the client's,
    which on most transports is just another frame (HTTP: that request's
    response). ``prepare`` and ``prepare_answer`` give each as the transport
    carries it (what the ledger notes).
    """

    #: The client's era. In 2026-07-28 a server sends no requests of its own
    #: (the client ignores a ping), so the probe is a call of the client's.
    era = "legacy"
    #: Whether each request's answer ends its response (HTTP): the call must
    #: then end on its own (answered, or failed: HT-09, HM-14), so one still
    #: waiting after HANG_TIMEOUT hangs. Elsewhere a call may wait for ever for
    #: an answer that never comes, so calls are cut at CALL_TIMEOUT.
    answers_end_calls = False

    def __init__(self) -> None:
        self.incoming_send, self.incoming = trio.open_memory_channel[bytes](1024)
        self.stderr: list[str] = []
        #: Broken invariants only the transport can see.
        self.problems: list[str] = []

    def prepare(self, frame: bytes) -> bytes:
        """The frame as this transport carries it (what the ledger notes)."""
        return frame

    def prepare_answer(self, frame: bytes) -> bytes:
        """An answer to a request as this transport carries it."""
        return self.prepare(frame)

    async def send(self, frame: bytes) -> None:
        raise NotImplementedError

    async def answer(self, request: dict[str, Any], frame: bytes) -> None:
        """Send *frame* as the answer to the client's *request*."""
        await self.send(frame)


@asynccontextmanager
async def memory_client_pipe() -> AsyncIterator[tuple[ClientPipe, Any]]:
    from trio_mcp import open_client
    from trio_mcp.testing import memory_transport_pair

    near, far = memory_transport_pair(buffer=1024)

    class Memory(ClientPipe):
        async def send(self, frame: bytes) -> None:
            await far.send(frame)

    pipe = Memory()
    async with trio.open_nursery() as nursery:

        async def read() -> None:
            async with pipe.incoming_send:
                async for data in far:
                    await pipe.incoming_send.send(data)

        nursery.start_soon(read)
        yield pipe, open_client(near, era="legacy", discover=False)
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def stdio_client_pipe() -> AsyncIterator[tuple[ClientPipe, Any]]:
    """The client spawns this script with ``--relay PORT``: a real subprocess
    bridging its stdin/stdout to a loopback TCP connection back to us."""
    from trio_mcp import open_stdio_client

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    connected = trio.Event()
    stream: trio.SocketStream | None = None

    class Stdio(ClientPipe):
        def prepare(self, frame: bytes) -> bytes:
            # Raw bytes: an embedded newline would split the frame in two.
            return frame.replace(b"\n", b" ")

        async def send(self, frame: bytes) -> None:
            await connected.wait()
            assert stream is not None
            await stream.send_all(frame + b"\n")

    pipe = Stdio()
    async with trio.open_nursery() as nursery:

        async def read() -> None:
            nonlocal stream
            stream = await listeners[0].accept()
            connected.set()
            buf = b""
            async with pipe.incoming_send, stream:
                async for chunk in stream:
                    buf += chunk
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        if line.strip():
                            await pipe.incoming_send.send(line)
            # EOF: the client closed stdin; closing our end lets the relay exit.

        nursery.start_soon(read)
        client = open_stdio_client(
            sys.executable,
            [SCRIPT, "--relay", str(port)],
            env={"PYTHONPATH": str(ROOT / "src")},
            stderr=pipe.stderr.append,
            era="legacy",
            discover=False,
        )
        try:
            yield pipe, client
        finally:
            nursery.cancel_scope.cancel()
            for listener in listeners:
                await listener.aclose()


@asynccontextmanager
async def websocket_client_pipe() -> AsyncIterator[tuple[ClientPipe, Any]]:
    """A raw trio-websocket server on 127.0.0.1 port 0 (the ``mcp`` subprotocol)."""
    from trio_websocket import ConnectionClosed, WebSocketConnection, serve_websocket

    from trio_mcp import open_websocket_client

    connected = trio.Event()
    ws: WebSocketConnection | None = None

    class WebSocket(ClientPipe):
        def prepare(self, frame: bytes) -> bytes:
            return frame.decode("utf-8", "replace").encode()  # text frames only

        async def send(self, frame: bytes) -> None:
            await connected.wait()
            assert ws is not None
            # The client may have closed the socket (a refused frame): the probe tells.
            with contextlib.suppress(ConnectionClosed):
                await ws.send_message(frame.decode())

    pipe = WebSocket()

    async def handler(request: Any) -> None:
        nonlocal ws
        ws = await request.accept(subprotocol="mcp")
        connected.set()
        async with pipe.incoming_send:
            try:
                while True:
                    message = await ws.get_message()
                    await pipe.incoming_send.send(
                        message.encode() if isinstance(message, str) else message
                    )
            except ConnectionClosed:
                pass

    async with trio.open_nursery() as nursery:
        server = await nursery.start(
            lambda task_status: serve_websocket(
                handler, "127.0.0.1", 0, None, max_message_size=1 << 24, task_status=task_status
            )
        )
        url = f"ws://127.0.0.1:{server.port}/"
        yield pipe, open_websocket_client(url, era="legacy", discover=False)
        nursery.cancel_scope.cancel()


def _sse_text(frame: bytes) -> bytes:
    """A frame as an SSE ``data`` field delivers it: UTF-8 (invalid bytes
    replaced, as the client's parser decodes them) with every CR and CRLF
    turned into LF (each line its own ``data:`` line, joined with LF again)."""
    text = frame.decode("utf-8", "replace")
    return text.replace("\r\n", "\n").replace("\r", "\n").encode()


def _parses(frame: bytes) -> bool:
    try:
        orjson.loads(frame)
    except orjson.JSONDecodeError:
        return False
    return True


@asynccontextmanager
async def http_client_pipe(*, modern: bool, sse: bool) -> AsyncIterator[tuple[ClientPipe, Any]]:
    """A raw ASGI app on hypercorn (127.0.0.1, port 0) as a hostile Streamable HTTP server.

    Every POSTed message goes to ``incoming``; a POSTed request is answered
    with the frame ``answer`` gets for it: in JSON mode as the raw
    ``application/json`` body (invalid JSON included), in SSE mode as one
    ``data`` event of a ``text/event-stream`` response that then ends.
    Notifications and responses get 202. Handshake era: ``Mcp-Session-Id`` on
    every answer, DELETE answered 200, and the frames of ``send`` go on the
    GET stream the client opens after the handshake (queued until it is
    open; a frame sent while the client reconnects may be lost).

    2026-07-28 has no GET stream: a server's own messages travel only inside
    the answer to a request (HM-04). So the frames of ``send`` are queued and
    go out in front of the next request's answer: in SSE mode as events before
    it; in JSON mode as one JSON array of the queued frames and the answer
    (only when the answer parses: a body is one JSON value; queued frames
    that do not parse are dropped, they can reach the client only as
    answers). The probe is a ping of the client's (see run_client_frames).
    The approximation: frames reach the client later, and grouped, than a
    server with its own stream would send them.
    """
    from hypercorn.trio import serve

    from trio_mcp import open_http_client
    from trio_mcp.transports._http._sse import format_event
    from trio_mcp.transports._http.server._app import hypercorn_config

    queued_send, queued = trio.open_memory_channel[bytes](float("inf"))
    #: The answer channel of each request waiting for ``answer``, by its id.
    waiting: dict[bytes, trio.MemorySendChannel[bytes]] = {}
    session = [(b"mcp-session-id", b"fuzz-session")] if not modern else []

    class Http(ClientPipe):
        era = "modern" if modern else "legacy"
        answers_end_calls = True

        def prepare(self, frame: bytes) -> bytes:
            # SSE events (the GET stream, or SSE answers); modern JSON: array items.
            return frame if modern and not sse else _sse_text(frame)

        def prepare_answer(self, frame: bytes) -> bytes:
            return _sse_text(frame) if sse else frame

        async def send(self, frame: bytes) -> None:
            if modern and not sse and not _parses(frame):
                return  # no JSON body can carry it next to an answer
            await queued_send.send(frame)

        async def answer(self, request: dict[str, Any], frame: bytes) -> None:
            channel = waiting.pop(orjson.dumps(request["id"]), None)
            if channel is None:
                await self.send(frame)
            else:
                channel.send_nowait(frame)

    pipe = Http()

    async def respond(send: Any, status: int, body: bytes, ctype: bytes | None) -> None:
        headers = [*session, (b"content-length", str(len(body)).encode())]
        if ctype is not None:
            headers.append((b"content-type", ctype))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def drain() -> list[bytes]:
        frames: list[bytes] = []
        while True:
            try:
                frames.append(queued.receive_nowait())
            except trio.WouldBlock:
                return frames

    async def get_stream(receive: Any, send: Any) -> None:
        """The handshake era's GET stream: the frames of ``send``, until the client leaves."""
        headers = [*session, (b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        async with trio.open_nursery() as nursery:

            async def leaving() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                nursery.cancel_scope.cancel()

            nursery.start_soon(leaving)
            async for frame in queued:
                event = format_event(frame)
                await send({"type": "http.response.body", "body": event, "more_body": True})

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        method = scope["method"]
        if method == "GET" and not modern:
            await get_stream(receive, send)
            return
        if method == "DELETE" and not modern:
            await respond(send, 200, b"", None)
            return
        if method != "POST":
            await respond(send, 405, b"", None)
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            message = None
        if (
            modern
            and isinstance(message, dict)
            and message.get("method") == "notifications/cancelled"
        ):
            # 2026-07-28 cancels by closing the stream (CN-13): one POSTed means
            # the transport let go of a call the session still waited for.
            pipe.problems.append(f"notifications/cancelled POSTed in 2026-07-28: {body[:200]!r}")
        if not (isinstance(message, dict) and "method" in message and "id" in message):
            await pipe.incoming_send.send(body)
            await respond(send, 202, b"", None)
            return
        answer_send, answer = trio.open_memory_channel[bytes](1)
        waiting[orjson.dumps(message["id"])] = answer_send
        await pipe.incoming_send.send(body)
        frame = await answer.receive()
        ahead = drain() if modern else []
        if sse:
            payload = b"".join(format_event(f) for f in [*ahead, frame])
            await respond(send, 200, payload, b"text/event-stream")
        else:
            if ahead and _parses(frame):
                frame = b"[" + b",".join([*ahead, frame]) + b"]"
            elif ahead:
                for f in ahead:  # kept for the next answer that parses
                    queued_send.send_nowait(f)
            await respond(send, 200, frame, b"application/json")

    async with trio.open_nursery() as nursery:
        config = hypercorn_config("127.0.0.1", 0)

        async def run(*, task_status: trio.TaskStatus[list[str]]) -> None:
            await serve(app, config, task_status=task_status, mode="asgi")  # type: ignore[arg-type]

        binds = await nursery.start(run)
        client = open_http_client(binds[0] + "/mcp", era=pipe.era, discover=False)
        yield pipe, client
        nursery.cancel_scope.cancel()


CLIENT_PIPES: dict[str, Callable[[], Any]] = {
    "memory": memory_client_pipe,
    "stdio": stdio_client_pipe,
    "websocket": websocket_client_pipe,
    "http-json": lambda: http_client_pipe(modern=False, sse=False),
    "http-sse": lambda: http_client_pipe(modern=False, sse=True),
    "http-modern-json": lambda: http_client_pipe(modern=True, sse=False),
    "http-modern-sse": lambda: http_client_pipe(modern=True, sse=True),
}
#: Transports ``--side client`` covers.
CLIENT_TRANSPORTS = list(CLIENT_PIPES)


async def run_client_frames(
    batches: list[list[bytes]], rng_seed: int, transport: str = "memory"
) -> str | None:
    """A hostile server (raw frames) against a trio_mcp.Client over *transport*.

    The hostile logic is the same for every transport; CLIENT_PIPES gives it
    the server's end of a real one (stdio: a subprocess relay; WebSocket: a
    raw trio-websocket server; Streamable HTTP: a raw ASGI app on hypercorn,
    see :func:`http_client_pipe`). Invariants: every call ends (bounded by
    CALL_TIMEOUT, only MCPError raised), the client answers a probe ping after
    every batch, at most one answer per id, no ERROR logged (nor a traceback
    on the relay's stderr), RSS within the bound, no task left behind.
    """
    import trio_mcp

    rng = random.Random(rng_seed)
    log = ErrorLog()
    logging.getLogger("trio_mcp").addHandler(log)
    ledger = Ledger()
    answers: list[Any] = []
    arrived = trio.Event()
    problems: list[str] = []
    baseline = trio.lowlevel.current_statistics().tasks_living
    replies: list[bytes] = []
    name = f"client-{transport}"

    async def server(pipe: ClientPipe) -> None:
        nonlocal arrived
        async for data in pipe.incoming:
            message = orjson.loads(data)
            if not isinstance(message, dict):
                continue
            if message.get("method") == "initialize":
                result = {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                    "serverInfo": {"name": "hostile", "version": "1"},
                }
                await pipe.answer(
                    message, orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
                )
            elif message.get("method") == "server/discover":
                # The 2026-07-28 opening (era="modern"), answered as a server would.
                found = {
                    "supportedVersions": [MODERN],
                    "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                    "ttlMs": 0,
                    "cacheScope": "private",
                }
                await pipe.answer(
                    message, orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": found})
                )
            elif "method" in message and "id" in message:
                # A request of the client's: answered by a hostile frame (often with its id).
                frame = replies.pop() if replies else b'{"jsonrpc":"2.0","result":{}}'
                if plain:
                    frame = orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}})
                elif rng.random() < 0.7:
                    try:
                        obj = orjson.loads(frame)
                        if isinstance(obj, dict):
                            obj["id"] = message["id"]
                            obj.pop("method", None)
                            frame = _dumps(obj)
                    except orjson.JSONDecodeError:
                        pass
                frame = pipe.prepare_answer(frame)
                ledger.note_sent(frame)
                await pipe.answer(message, frame)
            elif "method" not in message:
                answers.append(message)
                ledger.note_answer(message)
                arrived.set()

    async def calls(client: trio_mcp.Client, pipe: ClientPipe) -> None:
        async def one(work: Callable[[], Any]) -> None:
            try:
                with trio.move_on_after(
                    HANG_TIMEOUT if pipe.answers_end_calls else CALL_TIMEOUT
                ) as bound:
                    await work()
                if bound.cancelled_caught and pipe.answers_end_calls:
                    problems.append(f"a call hung: not ended {HANG_TIMEOUT} s after its answer")
            except trio_mcp.MCPError:
                pass
            except Exception as exc:
                problems.append(f"a call raised {type(exc).__name__}: {exc!r:.300}")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, client.ping)
            nursery.start_soon(one, client.list_tools)
            nursery.start_soon(one, lambda: client.read_resource("fuzz://note"))
            nursery.start_soon(one, lambda: client.get_prompt("greet", {"who": "x"}))
            nursery.start_soon(one, lambda: client.call_tool("echo", {"text": "x"}))

    plain = False  # requests answered plainly (the 2026-07-28 probe)

    async def modern_probe(client: trio_mcp.Client) -> bool:
        """A ping of the client's succeeds on a plain answer (within PROBE_TIMEOUT).

        Tried again until it does: frames still queued go out ahead of the
        first answer and may fail it (one may be a response with its id).
        """
        nonlocal plain
        plain = True
        try:
            with trio.move_on_after(PROBE_TIMEOUT):
                while True:
                    with contextlib.suppress(trio_mcp.MCPError):
                        with trio.move_on_after(CALL_TIMEOUT):
                            await client.ping()
                            return True
            return False
        finally:
            plain = False

    probe_count = 0
    first_rss: float | None = None
    try:
        async with CLIENT_PIPES[transport]() as (pipe, opening), trio.open_nursery() as nursery:
            nursery.start_soon(server, pipe)
            async with opening as client:
                for batch in batches:
                    replies[:] = list(reversed(batch[: len(batch) // 2]))
                    for frame in batch[len(batch) // 2 :]:
                        frame = pipe.prepare(frame)
                        ledger.note_sent(frame)
                        await pipe.send(frame)
                    await calls(client, pipe)
                    probe_count += 1
                    probe = f"probe-{probe_count}"
                    if pipe.era != "modern":
                        ledger.note_sent(orjson.dumps({"id": probe, "method": "ping"}))
                        ping = {"jsonrpc": "2.0", "id": probe, "method": "ping"}
                        await pipe.send(orjson.dumps(ping))
                    if pipe.era == "modern":
                        if not await modern_probe(client):
                            closed = client.session.closed
                            problems.append(
                                f"a ping of the client's failed on a plain answer "
                                f"(session closed: {closed})"
                            )
                    else:
                        with trio.move_on_after(PROBE_TIMEOUT) as waited:
                            while not any(a.get("id") == probe for a in answers):
                                arrived = trio.Event()
                                await arrived.wait()
                        if waited.cancelled_caught:
                            closed = client.session.closed
                            problems.append(
                                f"client did not answer a probe (session closed: {closed})"
                            )
                    rss = rss_mib()
                    first_rss = rss if first_rss is None else first_rss
                    if rss - first_rss > RSS_BOUND_MIB:
                        problems.append(f"RSS grew {rss - first_rss:.0f} MiB")
                    problems += ledger.problems + log.records + pipe.problems
                    problems += [
                        line for line in pipe.stderr if "Traceback" in line or "ERROR" in line
                    ]
                    if problems:
                        break
            nursery.cancel_scope.cancel()
    except trio_mcp.MCPError as exc:
        problems.append(f"the client ended with {type(exc).__name__}: {exc!r:.300}")
    except Exception as exc:
        # Out of the client itself (its transport, its close): only MCPError may.
        problems.append(f"the client raised {type(exc).__name__}: {exc!r:.300}")
    finally:
        logging.getLogger("trio_mcp").removeHandler(log)
    if problems:
        return f"{name}: {problems[0]}"
    for _ in range(50):
        await trio.sleep(0.01)
        if trio.lowlevel.current_statistics().tasks_living <= baseline:
            return None
    return f"{name}: task(s) left behind after the session ended"


def relay_main(port: int) -> None:
    """``--relay PORT``: bridge stdin/stdout to a loopback TCP connection (the
    stdio client target's subprocess; plain threads, no MCP code of its own)."""
    import socket
    import threading

    sock = socket.create_connection(("127.0.0.1", port))

    def upstream() -> None:
        while data := os.read(0, 65536):
            sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)  # the client closed stdin

    threading.Thread(target=upstream, daemon=True).start()
    out = sys.stdout.buffer
    while data := sock.recv(65536):
        out.write(data)
        out.flush()


# ------------------------------------------------------------ the campaign


def _batches(seed: int, frames: int) -> list[list[bytes]]:
    rng = random.Random(seed)
    count = max(1, frames // BATCH)
    pool = hypothesis_frames(seed, max(5, min(frames // 20, 500)))
    return [make_batch(rng, min(BATCH, frames - i * BATCH) or BATCH, pool) for i in range(count)]


async def _run(transport: str, side: str, batches: list[list[bytes]], seed: int) -> str | None:
    if side == "client":
        return await run_client_frames(batches, seed, transport)
    return await run_frames(transport, batches)


async def minimize(transport: str, side: str, batch: list[bytes], seed: int) -> list[bytes]:
    """ddmin over the frames of a failing batch (each try on a fresh target)."""
    current = batch
    chunks = 2
    tries = 0
    while len(current) > 1 and tries < 40:
        size = max(1, len(current) // chunks)
        reduced = False
        for start in range(0, len(current), size):
            candidate = current[:start] + current[start + size :]
            tries += 1
            if candidate and await _run(transport, side, [candidate], seed) is not None:
                current = candidate
                chunks = max(chunks - 1, 2)
                reduced = True
                break
        if not reduced:
            if size == 1:
                break
            chunks = min(len(current), chunks * 2)
    return current


def save_regression(
    transport: str, side: str, seed: int, frames: list[bytes], problem: str
) -> Path:
    """Save a minimized failing case (``TRIO_MCP_FUZZ_SAVE`` overrides where)."""
    where = Path(os.environ.get("TRIO_MCP_FUZZ_SAVE") or REGRESSIONS)
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{side}-{transport}-{seed}.json"
    case = {
        "transport": transport,
        "side": side,
        "seed": seed,
        "problem": problem,
        "frames": [base64.b64encode(f).decode() for f in frames],
        "preview": [f[:200].decode("utf-8", "replace") for f in frames],
    }
    path.write_text(json.dumps(case, indent=1, ensure_ascii=False) + "\n")
    return path


async def campaign(args: argparse.Namespace) -> int:
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    print(f"seed {seed}", flush=True)
    runs = []
    if args.side in ("server", "both"):
        runs += [("server", t) for t in (args.transport or TRANSPORTS)]
    if args.side in ("client", "both"):
        wanted = args.transport or CLIENT_TRANSPORTS
        runs += [("client", t) for t in wanted if t in CLIENT_PIPES]
    results: dict[str, Any] = {}
    failures = 0
    for index, (side, transport) in enumerate(runs):
        run_seed = seed + index
        batches = _batches(run_seed, args.frames)
        start = time.monotonic()
        problem = None
        sent = 0
        # Batches in groups on one target (a fresh target per group finds the
        # group's failure again for minimizing).
        group = 20
        for g in range(0, len(batches), group):
            part = batches[g : g + group]
            problem = await _run(transport, side, part, run_seed)
            if problem is not None:
                culprit = part[-1]
                for b in part:  # find the batch that fails on its own
                    if await _run(transport, side, [b], run_seed) is not None:
                        culprit = b
                        break
                frames = await minimize(transport, side, culprit, run_seed)
                path = save_regression(transport, side, run_seed, frames, problem)
                print(f"FAIL {side} {transport}: {problem}", flush=True)
                print(f"  minimized to {len(frames)} frame(s): {path}", flush=True)
                failures += 1
                break
            sent += sum(len(b) for b in part)
        seconds = time.monotonic() - start
        results[f"{side} {transport}"] = {
            "frames": sent,
            "seconds": round(seconds, 1),
            "problem": problem,
        }
        verdict = "FAIL" if problem else "ok"
        print(f"{side:6} {transport:18} frames {sent:7}  {seconds:7.1f} s  {verdict}", flush=True)
    if args.json:
        print(json.dumps({"seed": seed, "results": results}))
    return 1 if failures else 0


async def replay(path: Path) -> int:
    case = json.loads(await trio.Path(path).read_text())
    frames = [base64.b64decode(f) for f in case["frames"]]
    problem = await _run(case["transport"], case["side"], [frames], case["seed"])
    print(f"{path.name}: {problem or 'ok'}")
    return 1 if problem else 0


def serve_stdio_main() -> None:
    from trio_mcp import serve_stdio

    trio.run(lambda: serve_stdio(make_server(), max_message_size=BOUND, max_duration=None))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=2000, help="frames per transport and side")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--transport", action="append", choices=TRANSPORTS)
    parser.add_argument("--side", choices=["server", "client", "both"], default="both")
    parser.add_argument("--replay", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve-stdio", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--relay", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_stdio:
        serve_stdio_main()
        return 0
    if args.relay is not None:
        relay_main(args.relay)
        return 0
    if args.replay is not None:
        return trio.run(replay, args.replay)
    return trio.run(campaign, args)


if __name__ == "__main__":
    sys.exit(main())
