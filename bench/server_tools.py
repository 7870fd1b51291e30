"""tools/call with a 5-argument schema: trio_mcp's Server vs the official SDK's MCPServer.

The unit of work is one ``tools/call`` of a ``book`` tool with five arguments
of five kinds (str, int, Literal, bool, optional str), so argument validation
and structuring are on the hot path of both servers; the tool returns one text
block. Both stacks run the initialize handshake and JSON-RPC over in-memory
streams in this process (the SDK's ``mcp.Client(server, mode="legacy")``;
trio_mcp's ``open_memory_client``). Sequential and concurrent batches are
measured, as in ``bench/inmemory.py`` (whose measurement core this reuses).

Run: ``.venv/bin/python bench/server_tools.py [--calls N] [--concurrency C]``.
Numbers go in issue notes, never in tests (bench/README.md).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Literal

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from inmemory import (
    CONCURRENT,
    SEQUENTIAL,
    Measurement,
    Plan,
    SubjectResult,
    _attempt,
    _measure_anyio,
    _measure_trio,
    mcp_version,
    trio_mcp_version,
)

ARGUMENTS: Final[dict[str, Any]] = {
    "name": "Ada",
    "seats": 2,
    "seat_class": "business",
    "window": True,
    "note": "aisle if possible",
}
EXPECTED: Final = "2 business seat(s) for Ada, window=True, note=aisle if possible"


def _check(text: object) -> None:
    if text != EXPECTED:
        raise RuntimeError(f"book returned {text!r}")


def _book(
    name: str,
    seats: int,
    seat_class: Literal["economy", "business"] = "economy",
    window: bool = False,
    note: str | None = None,
) -> str:
    return f"{seats} {seat_class} seat(s) for {name}, window={window}, note={note}"


async def _bench_mcp(plan: Plan) -> list[Measurement]:
    import anyio
    import mcp
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench", version="1.0")

    @server.tool(structured_output=False)
    async def book(
        name: str,
        seats: int,
        seat_class: Literal["economy", "business"] = "economy",
        window: bool = False,
        note: str | None = None,
    ) -> str:
        return _book(name, seats, seat_class, window, note)

    with anyio.fail_after(plan.timeout):
        async with mcp.Client(server, mode="legacy") as client:

            async def call() -> None:
                result = await client.call_tool("book", ARGUMENTS)
                _check(getattr(result.content[0], "text", None))

            return await _measure_anyio(call, plan)


async def _bench_trio_mcp(plan: Plan) -> list[Measurement]:
    import trio_mcp
    from trio_mcp.testing import open_memory_client

    server = trio_mcp.Server("bench", version="1.0")

    @server.tool()
    async def book(
        name: str,
        seats: int,
        seat_class: Literal["economy", "business"] = "economy",
        window: bool = False,
        note: str | None = None,
    ) -> str:
        return _book(name, seats, seat_class, window, note)

    # era="legacy", as the SDK row's mode="legacy": the client's default
    # ("auto") would go 2026-07-28 with this server.
    with trio.fail_after(plan.timeout):
        async with open_memory_client(server, era="legacy") as client:

            async def call() -> None:
                result = await client.call_tool("book", ARGUMENTS)
                _check(getattr(result.content[0], "text", None))

            return await _measure_trio(call, plan)


def run(args: argparse.Namespace) -> list[SubjectResult]:
    import anyio

    plan = Plan(args.calls, args.concurrency, args.warmup, args.timeout)
    sdk = SubjectResult("mcp", "mcp MCPServer", f"mcp {mcp_version() or '?'} (asyncio)")
    _attempt(sdk, lambda: anyio.run(_bench_mcp, plan), args.verbose)
    ours = SubjectResult("trio_mcp", "trio_mcp Server", f"trio_mcp {trio_mcp_version() or '?'}")
    _attempt(ours, lambda: trio.run(_bench_trio_mcp, plan), args.verbose)
    return [sdk, ours]


def render(results: list[SubjectResult], args: argparse.Namespace) -> str:
    lines = [
        f"tools/call 'book' with 5 arguments, {args.calls} calls per row "
        f"after {args.warmup} warm-up calls",
        f"{'subject':<18} {'pattern':<15} {'calls/s':>10} {'p50 ms':>9} {'p99 ms':>9}",
    ]
    for r in results:
        if r.error is not None:
            lines.append(f"{r.label:<18} failed: {r.error}")
            continue
        for m in r.measurements:
            pattern = SEQUENTIAL if m.pattern == SEQUENTIAL else f"{CONCURRENT} x{m.concurrency}"
            lines.append(
                f"{r.label:<18} {pattern:<15} {m.calls_per_s:>10,.0f} "
                f"{m.p50_ms:>9.3f} {m.p99_ms:>9.3f}"
            )
    sdk, ours = results
    for pattern in (SEQUENTIAL, CONCURRENT):
        top, bottom = ours.rate(pattern), sdk.rate(pattern)
        if top and bottom:
            verdict = "met" if top / bottom >= args.target else "NOT met"
            lines.append(
                f"throughput src/trio_mcp/mcp {pattern}: {top / bottom:.2f}x "
                f"(target >= {args.target:g}x: {verdict})"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--target", type=float, default=2.0)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    results = run(args)
    print(render(results, args))
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
