"""Streamable HTTP benchmark: trio_mcp and the official Python SDK, side by side in one run.

Each server runs in its own subprocess on 127.0.0.1 (port 0; ``python
bench/streamable_http.py serve-...`` re-runs this file as the server), and each client in
another subprocess of its own (each stack needs its own event loop).

Session subjects (the handshake era, 2025-11-25: ``initialize``, then calls in
that session):

* ``trio_mcp``: ``serve_http`` (hypercorn, Trio worker) driven by
  ``open_http_client(url, era="legacy")`` (httpx on Trio); in its default
  SSE-response mode and, as ``trio_mcp json``, with ``json_response=True``;
* ``mcp``: the SDK's ``MCPServer.streamable_http_app()`` on uvicorn, its
  recommended setup (what ``MCPServer.run("streamable-http")`` does), driven
  by ``mcp.Client(url, mode="legacy")``; ``mcp json`` is the same with
  ``json_response=True``. (The SDK client's default, ``mode="auto"``, probes
  ``server/discover`` and would make these modern rows: they are pinned.)
* ``mcp/our client``: the same SDK server driven by trio_mcp's client, so the
  two servers are compared under one driver (the SDK's own client is the
  slowest part of its stack).

Modern subjects (2026-07-28: no session, every POST self-contained, with the
``_meta`` envelope and the ``MCP-Protocol-Version``, ``Mcp-Method`` and
``Mcp-Name`` headers), the same two servers (both serve both eras on one
endpoint):

* ``trio_mcp modern/raw`` and ``mcp modern/raw``: one raw driver for both,
  httpx on Trio with a pool of ``--concurrency`` keep-alive connections,
  POSTing modern ``tools/call`` bodies and reading the JSON or SSE answer, so
  the two servers are compared under one client (no client library at all).
* ``trio_mcp modern`` and ``mcp modern/our client``: trio_mcp's client pinned
  to 2026-07-28 (``open_http_client(url, era="modern")``) against each server;
* ``mcp modern``: the SDK's own client pinned to 2026-07-28
  (``mcp.Client(url, mode="2026-07-28")``).
* ``trio_mcp 2 workers/raw``: ``serve_http(build, workers=2)``, two worker
  processes accepting on one socket, under the raw driver. Its concurrent row
  is what scale-out buys; its sequential row rides one keep-alive connection,
  so one worker. Two driver processes (``--drivers``) keep the driver from
  being the bottleneck of every concurrent modern row, for every subject.

Rows, per subject: ``tools/call`` of an ``echo`` tool sequentially and with
``--concurrency`` (32) calls in flight (calls/s); then, for session subjects,
the memory of ``--sessions`` (1,000) idle sessions: the server's resident set
size before and after as many raw ``initialize`` + ``notifications/initialized``
exchanges (same raw httpx driver for every server, no GET stream), divided by
the count (modern subjects have no sessions: ``-``).

TCP_NODELAY. Every server socket here must send small writes at once: a
request/response exchange whose response is written in more than one piece
(HTTP head, then body) otherwise waits on Nagle's algorithm for the client's
delayed ACK, tens of milliseconds per call. Trio's listeners set TCP_NODELAY on
each accepted connection, and asyncio sets it on a transport whose socket was
created with ``IPPROTO_TCP`` (``base_events._set_nodelay`` checks the socket's
``proto``); uvicorn binding a host and port gets such sockets from
``getaddrinfo``. The SDK server below hands uvicorn a socket it bound itself (so
port 0 can be read back before serving), and a plain ``socket.socket()`` has
``proto`` 0: its accepted connections kept Nagle on, which crippled the SDK's
sequential figure. So it is created with ``IPPROTO_TCP``, like any asyncio
server's.

Run: ``.venv/bin/python bench/streamable_http.py [--calls N] [--only SUBJECT] [--json]``.
Numbers go in closing notes, never in tests (see bench/README.md).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# This file is named like the standard library's ``http`` package: keep its
# directory off the import path, or hypercorn's and httpx's ``import http`` find
# it (nothing above imports ``http``).
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

#: subject -> (server, client); "ours" is trio_mcp, "sdk" the official SDK,
#: "raw" the raw modern driver, "sdk modern" the SDK's client pinned to 2026-07-28.
SUBJECTS = {
    "trio_mcp": ("ours", "ours"),
    "trio_mcp json": ("ours json", "ours"),
    "mcp": ("sdk", "sdk"),
    "mcp json": ("sdk json", "sdk"),
    "mcp/our client": ("sdk", "ours"),
    "trio_mcp modern/raw": ("ours", "raw"),
    "mcp modern/raw": ("sdk", "raw"),
    "trio_mcp modern": ("ours", "ours modern"),
    "mcp modern/our client": ("sdk", "ours modern"),
    "mcp modern": ("sdk", "sdk modern"),
    "trio_mcp 2 workers/raw": ("ours workers", "raw"),
}
DEFAULT_SUBJECTS = (
    "trio_mcp",
    "trio_mcp json",
    "mcp",
    "mcp/our client",
    "trio_mcp modern/raw",
    "mcp modern/raw",
    "trio_mcp modern",
    "mcp modern/our client",
    "mcp modern",
    "trio_mcp 2 workers/raw",
)
LATEST = "2025-11-25"
MODERN = "2026-07-28"


# ------------------------------------------------------------------ servers


def build_ours() -> Any:
    """trio_mcp's bench server (module level: the workers of ``serve-ours workers``
    import it from this file, loaded as ``__mp_main__``)."""
    import trio_mcp

    server = trio_mcp.Server("bench")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    return server


def serve_ours(json_response: bool, workers: int = 1) -> None:
    import trio

    from trio_mcp import serve_http

    target = build_ours if workers > 1 else build_ours()

    async def main() -> None:
        # SIGTERM (from server_process) cancels the run, so workers are stopped
        # and reaped (a plain SIGTERM death would leave them to notice alone).
        with trio.open_signal_receiver(signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                url = await nursery.start(
                    lambda task_status: serve_http(
                        target,
                        "127.0.0.1",
                        0,
                        workers=workers,
                        json_response=json_response,
                        task_status=task_status,
                    )
                )
                print(f"{url}/mcp", flush=True)
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    break

    trio.run(main)


def serve_official(json_response: bool) -> None:
    import socket

    import uvicorn
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")

    @server.tool()
    def echo(text: str) -> str:
        return text

    app = server.streamable_http_app(json_response=json_response)
    # IPPROTO_TCP, not the default 0: asyncio sets TCP_NODELAY only on
    # connections of such a socket (see the module docstring).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    # The configuration MCPServer.run("streamable-http") uses (log level aside).
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


@contextmanager
def server_process(subject: str) -> Iterator[tuple[str, int]]:
    kind = SUBJECTS[subject][0]
    mode = "serve-official" if kind.startswith("sdk") else "serve-ours"
    args = [sys.executable, __file__, mode, *kind.split()[1:]]  # "json", "workers"
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url:
            raise SystemExit(f"{subject}: the server did not start")
        yield url, proc.pid
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


# ------------------------------------------------------------------ clients


def _check(result: Any) -> None:
    text = result.content[0].text
    if text != "hello":
        raise AssertionError(f"wrong echo: {text!r}")


def client_ours(
    url: str, calls: int, concurrency: int, warmup: int, era: str = "legacy"
) -> dict[str, float]:
    import trio

    from trio_mcp import open_http_client

    async def main() -> dict[str, float]:
        out: dict[str, float] = {}
        # Pinned: era="auto" (the default) would pick 2026-07-28 against either server.
        async with open_http_client(url, era=era) as client:
            for _ in range(warmup):
                _check(await client.call_tool("echo", {"text": "hello"}))
            t0 = time.perf_counter()
            for _ in range(calls):
                _check(await client.call_tool("echo", {"text": "hello"}))
            out["sequential_calls_s"] = calls / (time.perf_counter() - t0)
            per_task = calls // concurrency

            async def worker() -> None:
                for _ in range(per_task):
                    _check(await client.call_tool("echo", {"text": "hello"}))

            t0 = time.perf_counter()
            async with trio.open_nursery() as nursery:
                for _ in range(concurrency):
                    nursery.start_soon(worker)
            out["concurrent_calls_s"] = per_task * concurrency / (time.perf_counter() - t0)
        return out

    return trio.run(main)


def client_official(
    url: str, calls: int, concurrency: int, warmup: int, mode: str = "legacy"
) -> dict[str, float]:
    import anyio
    from mcp import Client

    async def main() -> dict[str, float]:
        out: dict[str, float] = {}
        async with Client(url, mode=mode) as client:
            for _ in range(warmup):
                _check(await client.call_tool("echo", {"text": "hello"}))
            t0 = time.perf_counter()
            for _ in range(calls):
                _check(await client.call_tool("echo", {"text": "hello"}))
            out["sequential_calls_s"] = calls / (time.perf_counter() - t0)
            per_task = calls // concurrency

            async def worker() -> None:
                for _ in range(per_task):
                    _check(await client.call_tool("echo", {"text": "hello"}))

            t0 = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for _ in range(concurrency):
                    tg.start_soon(worker)
            out["concurrent_calls_s"] = per_task * concurrency / (time.perf_counter() - t0)
        return out

    return anyio.run(main)


def modern_body(request_id: int) -> bytes:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    }
    params = {"name": "echo", "arguments": {"text": "hello"}, "_meta": meta}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return json.dumps(body).encode()


MODERN_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": MODERN,
    "mcp-method": "tools/call",
    "mcp-name": "echo",
}


def _check_modern(response: Any) -> None:
    """The echo came back: one JSON body, or the one message event of an SSE stream."""
    if response.status_code != 200:
        raise AssertionError(f"status {response.status_code}: {response.text[:200]}")
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        message = json.loads([d for d in data if d.strip()][-1])
    else:
        message = response.json()
    text = message["result"]["content"][0]["text"]
    if text != "hello":
        raise AssertionError(f"wrong echo: {text!r}")


def client_raw(
    url: str, calls: int, concurrency: int, warmup: int, phase: str = "both"
) -> dict[str, float]:
    """The raw 2026-07-28 driver: httpx on Trio, a pool of *concurrency* connections.

    *phase* ``sequential``, ``concurrent`` or ``both`` (the concurrent phase may
    run in several driver processes at once, see ``--drivers``).
    """
    import httpx
    import trio

    async def main() -> dict[str, float]:
        out: dict[str, float] = {}
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(limits=limits, timeout=30.0) as http:

            async def one(request_id: int) -> None:
                response = await http.post(
                    url, content=modern_body(request_id), headers=MODERN_HEADERS
                )
                _check_modern(response)

            for i in range(warmup):
                await one(i)
            if phase in ("sequential", "both"):
                t0 = time.perf_counter()
                for i in range(calls):
                    await one(i)
                out["sequential_calls_s"] = calls / (time.perf_counter() - t0)
            if phase in ("concurrent", "both"):
                per_task = calls // concurrency

                async def worker() -> None:
                    for i in range(per_task):
                        await one(i)

                t0 = time.perf_counter()
                async with trio.open_nursery() as nursery:
                    for _ in range(concurrency):
                        nursery.start_soon(worker)
                out["concurrent_calls_s"] = per_task * concurrency / (time.perf_counter() - t0)
        return out

    return trio.run(main)


def idle_sessions(url: str, pid: int, sessions: int) -> dict[str, float]:
    """Open *sessions* sessions with raw HTTP and leave them idle; measure the server."""
    import httpx

    init = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": LATEST,
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        }
    )
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    ids: list[str] = []
    with httpx.Client(timeout=30.0) as http:

        def open_one() -> None:
            response = http.post(url, content=init, headers=headers)
            response.raise_for_status()
            sid = response.headers["mcp-session-id"]
            extra = {"mcp-session-id": sid, "mcp-protocol-version": LATEST}
            answer = http.post(url, content=note, headers={**headers, **extra})
            answer.raise_for_status()
            ids.append(sid)

        for _ in range(20):  # warm-up: imports, caches, allocator arenas
            open_one()
        time.sleep(0.5)
        before = rss_kib(pid)
        for _ in range(sessions):
            open_one()
        time.sleep(0.5)
        after = rss_kib(pid)
    return {"idle_session_kib": (after - before) / sessions, "rss_mib": after / 1024}


def _client_args(subject: str, url: str, args: argparse.Namespace, *extra: str) -> list[str]:
    return [sys.executable, __file__, "client", subject, url, str(args.calls),
            str(args.concurrency), str(args.warmup), *extra]  # fmt: skip


def _result(subject: str, proc: subprocess.CompletedProcess[str]) -> dict[str, float]:
    if proc.returncode != 0:
        raise SystemExit(f"{subject} client failed:\n{proc.stderr}")
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _raw_rows(subject: str, url: str, args: argparse.Namespace) -> dict[str, float]:
    """The raw driver: its sequential row in one process, its concurrent row in
    ``--drivers`` processes at once, each with ``--concurrency`` / drivers calls in
    flight (so the total in flight is the same), their rates summed."""
    result = _result(
        subject,
        subprocess.run(_client_args(subject, url, args, "sequential"), capture_output=True,
                       text=True, timeout=args.timeout, check=False),
    )  # fmt: skip
    share = argparse.Namespace(**{**vars(args), "concurrency": args.concurrency // args.drivers,
                                  "calls": args.calls // args.drivers})  # fmt: skip
    procs = [
        subprocess.Popen(_client_args(subject, url, share, "concurrent"), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(args.drivers)
    ]  # fmt: skip
    total = 0.0
    for proc in procs:
        out, err = proc.communicate(timeout=args.timeout)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        total += _result(subject, done)["concurrent_calls_s"]
    result["concurrent_calls_s"] = total
    return result


def run_subject(subject: str, args: argparse.Namespace) -> dict[str, float]:
    client_kind = SUBJECTS[subject][1]
    with server_process(subject) as (url, pid):
        if client_kind == "raw":
            result = _raw_rows(subject, url, args)
        else:
            proc = subprocess.run(
                _client_args(subject, url, args), capture_output=True, text=True,
                timeout=args.timeout, check=False,
            )  # fmt: skip
            result = _result(subject, proc)
    if client_kind in ("ours", "sdk"):  # the session subjects
        with server_process(subject) as (url, pid):  # a fresh server for the memory row
            gc.collect()
            result.update(idle_sessions(url, pid, args.sessions))
    return result


ROWS = [
    ("sequential_calls_s", "tools/call sequential (calls/s)", "{:10.0f}"),
    ("concurrent_calls_s", "tools/call, {c} in flight (calls/s)", "{:10.0f}"),
    ("idle_session_kib", "memory per idle session (KiB)", "{:10.1f}"),
    ("rss_mib", "server RSS with {s} sessions (MiB)", "{:10.1f}"),
]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "serve-ours":
        serve_ours("json" in sys.argv[2:], workers=2 if "workers" in sys.argv[2:] else 1)
        return
    if len(sys.argv) > 1 and sys.argv[1] == "serve-official":
        serve_official("json" in sys.argv[2:])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "client":
        subject, url, calls, concurrency, warmup = sys.argv[2:7]
        numbers = (url, int(calls), int(concurrency), int(warmup))
        kind = SUBJECTS[subject][1]
        if kind == "raw":
            result = client_raw(*numbers, phase=sys.argv[7] if len(sys.argv) > 7 else "both")
        elif kind == "sdk modern":
            result = client_official(*numbers, mode=MODERN)
        elif kind == "sdk":
            result = client_official(*numbers)
        elif kind == "ours modern":
            result = client_ours(*numbers, era="modern")
        else:
            result = client_ours(*numbers)
        print(json.dumps(result))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument(
        "--drivers", type=int, default=2, help="raw driver processes for concurrent modern rows"
    )
    parser.add_argument("--only", action="append", choices=list(SUBJECTS), help="repeatable")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    subjects = args.only or list(DEFAULT_SUBJECTS)
    results = {subject: run_subject(subject, args) for subject in subjects}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    width = max(12, *(len(s) for s in subjects)) + 2
    print(f"{'':40}" + "".join(f"{s:>{width}}" for s in subjects))
    for key, label, fmt in ROWS:
        text = label.format(c=args.concurrency, s=args.sessions)
        cells = (fmt.format(results[s][key]) if key in results[s] else "-" for s in subjects)
        print(f"{text:40}" + "".join(f"{cell:>{width}}" for cell in cells))
    if "trio_mcp" in results and "mcp" in results:
        ours, theirs = results["trio_mcp"], results["mcp"]
        print(
            "src/trio_mcp/mcp: sequential {:.2f}x, concurrent {:.2f}x (target >= 1); "
            "idle session memory {:.2f} (target <= 0.5)".format(
                ours["sequential_calls_s"] / theirs["sequential_calls_s"],
                ours["concurrent_calls_s"] / theirs["concurrent_calls_s"],
                ours["idle_session_kib"] / theirs["idle_session_kib"],
            )
        )
    if "trio_mcp modern/raw" in results and "mcp modern/raw" in results:
        ours, theirs = results["trio_mcp modern/raw"], results["mcp modern/raw"]
        print(
            "modern, raw driver, src/trio_mcp/mcp: sequential {:.2f}x, concurrent {:.2f}x".format(
                ours["sequential_calls_s"] / theirs["sequential_calls_s"],
                ours["concurrent_calls_s"] / theirs["concurrent_calls_s"],
            )
        )
    if "trio_mcp 2 workers/raw" in results and "trio_mcp modern/raw" in results:
        two, one = results["trio_mcp 2 workers/raw"], results["trio_mcp modern/raw"]
        print(
            "trio_mcp 2 workers / 1: concurrent {:.2f}x".format(
                two["concurrent_calls_s"] / one["concurrent_calls_s"]
            )
        )


if __name__ == "__main__":
    main()
