"""Streamable HTTP benchmark: trio_mcp and the official Python SDK, side by side in one run.

Each server runs in its own subprocess on 127.0.0.1 (port 0; ``python
bench/streamable_http.py serve-...`` re-runs this file as the server), and each client in
another subprocess of its own (each stack needs its own event loop):

* ``trio_mcp``: ``serve_http`` (hypercorn, Trio worker) driven by
  ``open_http_client`` (httpx on Trio); in its default SSE-response mode and,
  as ``trio_mcp json``, with ``json_response=True``;
* ``mcp``: the SDK's ``MCPServer.streamable_http_app()`` on uvicorn, its
  recommended setup (what ``MCPServer.run("streamable-http")`` does), driven
  by ``mcp.Client(url)``; ``mcp json`` is the same with ``json_response=True``;
* ``mcp/our client``: the same SDK server driven by trio_mcp's client, so the
  two servers are compared under one driver (the SDK's own client is the
  slowest part of its stack).

Rows, per subject: ``tools/call`` of an ``echo`` tool sequentially and with
``--concurrency`` (32) calls in flight (calls/s); then the memory of
``--sessions`` (1,000) idle sessions: the server's resident set size before and
after as many raw ``initialize`` + ``notifications/initialized`` exchanges
(same raw httpx driver for every server, no GET stream), divided by the count.

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

#: subject -> (server, client); "ours" is trio_mcp, "sdk" the official SDK.
SUBJECTS = {
    "trio_mcp": ("ours", "ours"),
    "trio_mcp json": ("ours json", "ours"),
    "mcp": ("sdk", "sdk"),
    "mcp json": ("sdk json", "sdk"),
    "mcp/our client": ("sdk", "ours"),
}
DEFAULT_SUBJECTS = ("trio_mcp", "trio_mcp json", "mcp", "mcp/our client")
LATEST = "2025-11-25"


# ------------------------------------------------------------------ servers


def serve_ours(json_response: bool) -> None:
    import trio

    import trio_mcp
    from trio_mcp import serve_http

    server = trio_mcp.Server("bench")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            url = await nursery.start(
                lambda task_status: serve_http(
                    server, "127.0.0.1", 0, json_response=json_response, task_status=task_status
                )
            )
            print(f"{url}/mcp", flush=True)

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
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    # The configuration MCPServer.run("streamable-http") uses (log level aside).
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


@contextmanager
def server_process(subject: str) -> Iterator[tuple[str, int]]:
    kind = SUBJECTS[subject][0]
    mode = "serve-official" if kind.startswith("sdk") else "serve-ours"
    args = [sys.executable, __file__, mode] + (["json"] if kind.endswith("json") else [])
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


def client_ours(url: str, calls: int, concurrency: int, warmup: int) -> dict[str, float]:
    import trio

    from trio_mcp import open_http_client

    async def main() -> dict[str, float]:
        out: dict[str, float] = {}
        async with open_http_client(url) as client:
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


def client_official(url: str, calls: int, concurrency: int, warmup: int) -> dict[str, float]:
    import anyio
    from mcp import Client

    async def main() -> dict[str, float]:
        out: dict[str, float] = {}
        async with Client(url) as client:
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


def run_subject(subject: str, args: argparse.Namespace) -> dict[str, float]:
    with server_process(subject) as (url, pid):
        proc = subprocess.run(
            [sys.executable, __file__, "client", subject, url, str(args.calls),
             str(args.concurrency), str(args.warmup)],
            capture_output=True, text=True, timeout=args.timeout, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            raise SystemExit(f"{subject} client failed:\n{proc.stderr}")
        result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
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
    if len(sys.argv) > 1 and sys.argv[1] in ("serve-ours", "serve-official"):
        json_response = sys.argv[2:] == ["json"]
        (serve_ours if sys.argv[1] == "serve-ours" else serve_official)(json_response)
        return
    if len(sys.argv) > 1 and sys.argv[1] == "client":
        subject, url, calls, concurrency, warmup = sys.argv[2:7]
        run = client_official if SUBJECTS[subject][1] == "sdk" else client_ours
        print(json.dumps(run(url, int(calls), int(concurrency), int(warmup))))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--only", action="append", choices=list(SUBJECTS), help="repeatable")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    subjects = args.only or list(DEFAULT_SUBJECTS)
    results = {subject: run_subject(subject, args) for subject in subjects}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{'':40}" + "".join(f"{s:>15}" for s in subjects))
    for key, label, fmt in ROWS:
        text = label.format(c=args.concurrency, s=args.sessions)
        print(f"{text:40}" + "".join(f"{fmt.format(results[s][key]):>15}" for s in subjects))
    if "trio_mcp" in results and "mcp" in results:
        ours, theirs = results["trio_mcp"], results["mcp"]
        print(
            "trio_mcp/mcp: sequential {:.2f}x, concurrent {:.2f}x (target >= 1); "
            "idle session memory {:.2f} (target <= 0.5)".format(
                ours["sequential_calls_s"] / theirs["sequential_calls_s"],
                ours["concurrent_calls_s"] / theirs["concurrent_calls_s"],
                ours["idle_session_kib"] / theirs["idle_session_kib"],
            )
        )


if __name__ == "__main__":
    main()
