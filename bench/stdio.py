"""stdio benchmark: trio_mcp and the official Python SDK, side by side in one run.

Each subject spawns its own server as a real subprocess and talks to it over
stdio (``python bench/stdio.py`` re-runs itself as the server):

* ``trio_mcp``: ``open_stdio_client(era=...)`` against a ``trio_mcp.Server`` over ``serve_stdio``;
* ``mcp``: the SDK's ``stdio_client`` + ``ClientSession`` against an ``MCPServer``,
  run in a child Python process of this script (it needs its own event loop).

Each subject runs in each era asked for with ``--era`` (default both):
``legacy`` opens with the initialize handshake, ``modern`` with
``server/discover`` and then speaks 2026-07-28 (the ``_meta`` envelope on every
request and result). Both servers serve both eras; the client's first request
decides.

Rows: ``tools/call`` of an ``echo`` tool sequentially and with 64 in flight
(calls/s); start-up (spawn -> connected, median of several); shutdown (leave
the client block -> process gone, median); a 1 MiB tool result (MiB/s).

Run: ``.venv/bin/python bench/stdio.py [--calls N] [--era legacy|modern] [--json]``.
Numbers go in closing notes, never in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Final, Literal

# Python puts this script's directory first on sys.path, where sibling bench
# scripts could shadow standard modules for the SDK (a bench/http.py once did).
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

BIG = 1 << 20

Era = Literal["legacy", "modern"]
ERAS: Final[tuple[Era, ...]] = ("legacy", "modern")
SUBJECTS: Final = ("trio_mcp", "mcp")


def subject_key(subject: str, era: str) -> str:
    """``trio_mcp@modern``: one subject in one era (the keys of the --json output)."""
    return f"{subject}@{era}"


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

    # structured_output=False: the result is the text block only, as trio_mcp's
    # (left to auto-detect, a ``-> str`` tool also returns structuredContent and
    # the client validates it against the output schema on every call).
    @server.tool(structured_output=False)
    def echo(text: str) -> str:
        return text

    @server.tool(structured_output=False)
    def big() -> str:
        return "x" * BIG

    server.run("stdio")


async def _measure(
    open_client: Any, call: Any, calls: int, concurrency: int, rounds: int, group: Any
) -> dict[str, float]:
    # open_client checks that the connection is in the era asked for.
    result: dict[str, float] = {}
    starts, stops = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        async with open_client():
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


def run_ours(calls: int, concurrency: int, rounds: int, era: Era) -> dict[str, float]:
    from contextlib import asynccontextmanager

    import trio

    from trio_mcp import open_stdio_client

    # The era is pinned: the client's default ("auto") would probe and go
    # modern with this server, so an unpinned run is a modern run.
    @asynccontextmanager
    async def open_client() -> Any:
        async with open_stdio_client(
            sys.executable, [__file__, "serve-ours"], inherit_env=True, era=era
        ) as client:
            if client.era != era:
                raise RuntimeError(f"era {era!r} requested, {client.era!r} negotiated")
            yield client

    async def call(client: Any, name: str, args: dict[str, Any]) -> Any:
        return await client.call_tool(name, args)

    async def group(fn: Any, n: int) -> None:
        async with trio.open_nursery() as nursery:
            for _ in range(n):
                nursery.start_soon(fn)

    async def main() -> dict[str, float]:
        return await _measure(open_client, call, calls, concurrency, rounds, group)

    return trio.run(main)


def run_official(calls: int, concurrency: int, rounds: int, era: Era) -> dict[str, float]:
    from contextlib import asynccontextmanager

    import anyio
    import mcp_types
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp_types.version import LATEST_MODERN_VERSION, MODERN_PROTOCOL_VERSIONS

    params = StdioServerParameters(
        command=sys.executable, args=[__file__, "serve-official"], env=dict(os.environ)
    )

    @asynccontextmanager
    async def open_client() -> Any:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
            if era == "legacy":
                await session.initialize()
            else:
                # What the SDK's own mode="auto" does when the probe succeeds
                # (mcp/client/_probe.py): one server/discover, then adopt() its
                # result, which stamps the _meta envelope on every request.
                raw = await session.send_discover(LATEST_MODERN_VERSION)
                session.adopt(mcp_types.DiscoverResult.model_validate(raw))
            modern = session.protocol_version in MODERN_PROTOCOL_VERSIONS
            if modern != (era == "modern"):
                raise RuntimeError(f"era {era!r} requested, {session.protocol_version} negotiated")
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


def _rows(concurrency: int) -> list[tuple[str, str, bool]]:
    """(key, label, higher is better) of every printed row."""
    return [
        ("sequential_calls_s", "tools/call sequential (calls/s)", True),
        ("concurrent_calls_s", f"tools/call, {concurrency} in flight (calls/s)", True),
        ("startup_ms", "start-up: spawn -> connected (ms)", False),
        ("shutdown_ms", "shutdown: close -> process gone (ms)", False),
        ("big_result_mib_s", "1 MiB tool result (MiB/s)", True),
    ]


def _better(ours: float, theirs: float, higher_better: bool) -> float:
    """How many times better *ours* is than *theirs*."""
    return ours / theirs if higher_better else theirs / ours


def render(results: dict[str, dict[str, float]], eras: list[Era], concurrency: int) -> str:
    head = f"{'':40}"
    for era in eras:
        head += f" {'trio_mcp ' + era:>15} {'mcp ' + era:>12} {'ratio':>6}"
    both = len(eras) == len(ERAS)
    if both:
        head += f" {'trio_mcp m/l':>12} {'mcp m/l':>8}"
    lines = [head]
    for key, label, higher_better in _rows(concurrency):
        line = f"{label:40}"
        for era in eras:
            ours = results[subject_key("trio_mcp", era)][key]
            theirs = results[subject_key("mcp", era)][key]
            ratio = _better(ours, theirs, higher_better)
            line += f" {ours:15.1f} {theirs:12.1f} {ratio:5.1f}x"
        if both:
            for subject, width in (("trio_mcp", 12), ("mcp", 8)):
                modern = results[subject_key(subject, "modern")][key]
                legacy = results[subject_key(subject, "legacy")][key]
                line += f" {_better(modern, legacy, higher_better):{width - 1}.2f}x"
        lines.append(line)
    lines.append("(ratio: how many times better trio_mcp is than mcp in that era;")
    if both:
        lines.append(" m/l: how many times better modern is than legacy for that subject)")
    else:
        lines[-1] = lines[-1].rstrip(";") + ")"
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("serve-ours", "serve-official"):
        serve_ours() if sys.argv[1] == "serve-ours" else serve_official()
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=3200)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=7, help="start-up/shutdown samples")
    parser.add_argument(
        "--era",
        dest="eras",
        action="append",
        choices=list(ERAS),
        help="legacy (initialize handshake) or modern (2026-07-28); repeatable (default both)",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--subject", choices=list(SUBJECTS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    eras: list[Era] = list(ERAS) if args.eras is None else [e for e in ERAS if e in args.eras]
    if args.subject:  # one subject in one era, in its own process, as JSON
        if len(eras) != 1:
            raise SystemExit("--subject needs exactly one --era")
        run = run_ours if args.subject == "trio_mcp" else run_official
        print(json.dumps(run(args.calls, args.concurrency, args.rounds, eras[0])))
        return
    results: dict[str, dict[str, float]] = {}
    for era in eras:
        for subject in SUBJECTS:
            proc = subprocess.run(
                [sys.executable, __file__, "--subject", subject, "--era", era,
                 "--calls", str(args.calls), "--concurrency", str(args.concurrency),
                 "--rounds", str(args.rounds)],
                capture_output=True, text=True, timeout=600, check=False,
            )  # fmt: skip
            if proc.returncode != 0:
                raise SystemExit(f"{subject} ({era}) failed:\n{proc.stderr}")
            results[subject_key(subject, era)] = json.loads(proc.stdout.strip().splitlines()[-1])
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(render(results, eras, args.concurrency))


if __name__ == "__main__":
    main()
