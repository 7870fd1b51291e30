"""trio_mcp at two checkouts, compared by CPU instructions per call.

Timing on a shared 2-core machine moves by 25-30 % from one minute to the next
(``bench/results/*versus*``), which hides any change smaller than that. The
number of machine instructions a call executes does not depend on the load:
this script counts them with Valgrind's callgrind, so a 2 % change reads as
2 %, run after run.

One command::

    .venv/bin/python bench/instructions.py BEFORE_CHECKOUT AFTER_CHECKOUT

Each checkout is a work tree of the project (``src/`` layout or the older flat
one); both are imported with this virtualenv's dependencies. For each row
(in-process and stdio, each era, sequential and 8 concurrent calls) the
scenario runs twice, with a small and a large number of calls, and the
difference of the two totals divided by the difference of the call counts is
the cost of one call: start-up, imports and the session's opening cancel out.
Over stdio the server is a child process and is counted too
(``--trace-children``), so a row is the whole round trip, both sides.

Needs ``valgrind`` (Debian's package). Slow by nature (a run is 40-80 times
slower than native), so the call counts are small; the counts are exact.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROWS = [
    (transport, era, concurrency)
    for transport in ("inprocess", "stdio")
    for era in ("legacy", "modern")
    for concurrency in (1, 8)
]
SMALL, LARGE = 100, 600
_COLLECTED = re.compile(rb"^events: Ir\s*$.*?^totals: (\d+)", re.M | re.S)


# ---------------------------------------------------------------- the scenario


def serve() -> None:
    """The stdio server of the ``stdio`` rows."""
    import trio_mcp

    server = trio_mcp.Server("bench")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    server.run_stdio()


def scenario(transport: str, era: str, concurrency: int, calls: int) -> None:
    """Open a client, warm it up with 50 calls, then make *calls* calls."""
    import trio

    async def main() -> None:
        if transport == "inprocess":
            import trio_mcp
            from trio_mcp.testing import open_memory_client

            server = trio_mcp.Server("bench")

            @server.tool()
            async def echo(text: str) -> str:
                return text

            opened = open_memory_client(server, era=era)
        else:
            from trio_mcp import open_stdio_client

            opened = open_stdio_client(
                sys.executable, [__file__, "--serve"], inherit_env=True, era=era
            )
        async with opened as client:

            async def one() -> None:
                await client.call_tool("echo", {"text": "hello"})

            for _ in range(50):
                await one()

            async def share(n: int) -> None:
                for _ in range(n):
                    await one()

            async with trio.open_nursery() as nursery:
                for i in range(concurrency):
                    nursery.start_soon(share, calls // concurrency + (i < calls % concurrency))

    trio.run(main)


# ------------------------------------------------------------------- counting


def _import_path(checkout: Path) -> str:
    return str(checkout / "src") if (checkout / "src" / "trio_mcp").is_dir() else str(checkout)


def count(checkout: Path, row: tuple[str, str, int], calls: int) -> int:
    """Instructions of one run of *row* with *calls* calls (all processes)."""
    transport, era, concurrency = row
    with tempfile.TemporaryDirectory() as scratch:
        # A fixed hash seed: string hashing moves dict and set layouts, and
        # with them about 1 % of the count, from one run to the next.
        env = {**os.environ, "PYTHONPATH": _import_path(checkout), "PYTHONHASHSEED": "0"}
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--trace-children=yes",
                f"--callgrind-out-file={scratch}/cg.%p",
                sys.executable,
                __file__,
                "--scenario",
                transport,
                era,
                str(concurrency),
                str(calls),
            ],
            env=env,
            check=True,
            capture_output=True,
        )
        total = 0
        for out in Path(scratch).glob("cg.*"):
            found = _COLLECTED.search(out.read_bytes())
            if found is None:
                raise RuntimeError(f"callgrind wrote no totals in {out}")
            total += int(found.group(1))
        return total


def per_call(checkout: Path, row: tuple[str, str, int]) -> float:
    return (count(checkout, row, LARGE) - count(checkout, row, SMALL)) / (LARGE - SMALL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, nargs="?")
    parser.add_argument("after", type=Path, nargs="?")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--scenario", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--only", help="run only the rows whose name contains this")
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    if args.scenario:
        transport, era, concurrency, calls = args.scenario
        scenario(transport, era, int(concurrency), int(calls))
        return
    if args.before is None or args.after is None:
        parser.error("give two checkouts: BEFORE AFTER")
    print(f"# instructions per call, {args.before} (before) vs {args.after} (after)")
    print(f"{'row':<28}{'before':>14}{'after':>14}{'after/before':>14}")
    for row in ROWS:
        name = f"{row[0]}|{row[1]}|x{row[2]}"
        if args.only and args.only not in name:
            continue
        before = per_call(args.before, row)
        after = per_call(args.after, row)
        print(f"{name:<28}{before:>14,.0f}{after:>14,.0f}{after / before:>14.3f}", flush=True)


if __name__ == "__main__":
    main()
