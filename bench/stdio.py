"""stdio benchmark: trio_mcp and the official Python SDK, side by side in one run.

Each subject spawns its own server as a real subprocess and talks to it over
stdio (``python bench/stdio.py`` re-runs itself as the server):

* ``trio_mcp``: ``open_stdio_client`` against a ``trio_mcp.Server`` over ``serve_stdio``;
* ``mcp``: the SDK's ``stdio_client`` + ``ClientSession`` against an ``MCPServer``,
  run in a child Python process of this script (it needs its own event loop).

Rows: ``tools/call`` of an ``echo`` tool sequentially and with 64 in flight
(calls/s); start-up (spawn -> initialized, median of several); shutdown (leave
the client block -> process gone, median); a 1 MiB tool result (MiB/s).

Run: ``.venv/bin/python bench/stdio.py [--calls N] [--json]``. Numbers go in
closing notes, never in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

# Python puts this script's directory first on sys.path, where sibling bench
# scripts could shadow standard modules for the SDK (a bench/http.py once did).
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

BIG = 1 << 20


def serve_ours() -> None:
    import trio_mcp

    server = trio_mcp.Server("bench")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    @server.tool()
    async def big() -> str:
        return "x" * BIG

    server.run_stdio()


def serve_official() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    def big() -> str:
        return "x" * BIG

    server.run("stdio")


async def _measure(
    open_client: Any, call: Any, calls: int, concurrency: int, rounds: int, group: Any
) -> dict[str, float]:
    result: dict[str, float] = {}
    starts, stops = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        async with open_client() as client:
            starts.append(time.perf_counter() - t0)
            t1 = time.perf_counter()
        stops.append(time.perf_counter() - t1)
    result["startup_ms"] = statistics.median(starts) * 1000
    result["shutdown_ms"] = statistics.median(stops) * 1000
    async with open_client() as client:
        for _ in range(200):  # warm-up
            await call(client, "echo", {"text": "hello"})
        t0 = time.perf_counter()
        for _ in range(calls):
            await call(client, "echo", {"text": "hello"})
        result["sequential_calls_s"] = calls / (time.perf_counter() - t0)

        per_task = calls // concurrency

        async def worker() -> None:
            for _ in range(per_task):
                await call(client, "echo", {"text": "hello"})

        t0 = time.perf_counter()
        await group(worker, concurrency)
        result["concurrent_calls_s"] = per_task * concurrency / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        n = 20
        for _ in range(n):
            await call(client, "big", {})
        result["big_result_mib_s"] = n * BIG / (1 << 20) / (time.perf_counter() - t0)
    return result


def run_ours(calls: int, concurrency: int, rounds: int) -> dict[str, float]:
    import trio

    from trio_mcp import open_stdio_client

    def open_client() -> Any:
        return open_stdio_client(sys.executable, [__file__, "serve-ours"], inherit_env=True)

    async def call(client: Any, name: str, args: dict[str, Any]) -> Any:
        return await client.call_tool(name, args)

    async def group(fn: Any, n: int) -> None:
        async with trio.open_nursery() as nursery:
            for _ in range(n):
                nursery.start_soon(fn)

    async def main() -> dict[str, float]:
        return await _measure(open_client, call, calls, concurrency, rounds, group)

    return trio.run(main)


def run_official(calls: int, concurrency: int, rounds: int) -> dict[str, float]:
    from contextlib import asynccontextmanager

    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=[__file__, "serve-official"], env=dict(os.environ)
    )

    @asynccontextmanager
    async def open_client() -> Any:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            yield session

    async def call(client: Any, name: str, args: dict[str, Any]) -> Any:
        return await client.call_tool(name, args)

    async def group(fn: Any, n: int) -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(n):
                tg.start_soon(fn)

    async def main() -> dict[str, float]:
        return await _measure(open_client, call, calls, concurrency, rounds, group)

    return anyio.run(main)


ROWS = [
    ("sequential_calls_s", "tools/call sequential (calls/s)", True),
    ("concurrent_calls_s", "tools/call, 64 in flight (calls/s)", True),
    ("startup_ms", "start-up: spawn -> initialized (ms)", False),
    ("shutdown_ms", "shutdown: close -> process gone (ms)", False),
    ("big_result_mib_s", "1 MiB tool result (MiB/s)", True),
]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("serve-ours", "serve-official"):
        serve_ours() if sys.argv[1] == "serve-ours" else serve_official()
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=3200)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=7, help="start-up/shutdown samples")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--subject", choices=["trio_mcp", "mcp"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.subject:  # one subject, in its own process, as JSON
        run = run_ours if args.subject == "trio_mcp" else run_official
        print(json.dumps(run(args.calls, args.concurrency, args.rounds)))
        return
    results: dict[str, dict[str, float]] = {}
    for subject in ("trio_mcp", "mcp"):
        proc = subprocess.run(
            [sys.executable, __file__, "--subject", subject, "--calls", str(args.calls),
             "--concurrency", str(args.concurrency), "--rounds", str(args.rounds)],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            raise SystemExit(f"{subject} failed:\n{proc.stderr}")
        results[subject] = json.loads(proc.stdout.strip().splitlines()[-1])
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{'':40} {'trio_mcp':>10} {'mcp':>10} {'ratio':>7}")
    for key, label, higher_better in ROWS:
        ours, theirs = results["trio_mcp"][key], results["mcp"][key]
        ratio = ours / theirs if higher_better else theirs / ours
        print(f"{label:40} {ours:10.1f} {theirs:10.1f} {ratio:6.1f}x")
    print("(ratio: how many times better trio_mcp is)")


if __name__ == "__main__":
    main()
