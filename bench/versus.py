"""trio_mcp at two commits, side by side in one sitting: ``all.py``'s trio_mcp rows.

One command::

    .venv/bin/python bench/versus.py BEFORE_CHECKOUT AFTER_CHECKOUT --rounds 3

Each checkout is a work tree with its own ``.venv`` (``scripts/test --co -q``
makes one). Every round runs ``bench/all.py --subject trio_mcp --rounds 1`` in
the first checkout, then in the second (the order swaps each round), each with
a bench virtualenv of its own (``TRIO_MCP_BENCH_VENV``), so that a slow minute
of the machine hits both alike. Each cell is the median of the rounds; the last
column is after / before (for a time, before / after: above 1 is better for
the second checkout either way).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CACHE = Path.home() / ".cache" / "trio_mcp"
#: Cells measured as times (lower is better); the rest are rates.
TIMES = ("startup_ms", "shutdown_ms")


def one_round(checkout: Path, label: str, args: argparse.Namespace) -> dict[str, float]:
    """The trio_mcp cells of one ``all.py`` round in *checkout*."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "cells.json"
        env = {**os.environ, "TRIO_MCP_BENCH_VENV": str(CACHE / f"bench-venv-{label}")}
        command = [
            str(checkout / ".venv" / "bin" / "python"),
            str(checkout / "bench" / "all.py"),
            "--subject",
            "trio_mcp",
            "--rounds",
            "1",
            "--calls",
            str(args.calls),
            "--http-calls",
            str(args.http_calls),
            "--json",
            str(out),
        ]
        for group in args.group or []:
            command += ["--group", group]
        proc = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
        if proc.returncode != 0 or not out.exists():
            raise SystemExit(f"all.py failed in {checkout}:\n{proc.stderr[-2000:]}")
        # all.py keys a row "group|subject|era", with a list of rounds of
        # {metric: value}; one round here.
        rows: dict[str, list[dict[str, float]]] = json.loads(out.read_text())["cells"]
        return {
            f"{row} {metric}": value
            for row, rounds in rows.items()
            for metric, value in rounds[0].items()
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--http-calls", type=int, default=2000)
    parser.add_argument(
        "--group", action="append", help="repeatable: inprocess, stdio, http (default all)"
    )
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    sides = [("before", args.before.resolve()), ("after", args.after.resolve())]
    for number in range(args.rounds):
        for label, checkout in sides if number % 2 == 0 else sides[::-1]:
            print(f"round {number + 1}: {label} ({checkout})", file=sys.stderr, flush=True)
            runs[label].append(one_round(checkout, label, args))
    keys = sorted(set(runs["before"][0]) & set(runs["after"][0]))
    print(f"{'cell':<46}{'before':>10}{'after':>10}{'better x':>10}   rounds before | after")
    for key in keys:
        befores = [run[key] for run in runs["before"] if key in run]
        afters = [run[key] for run in runs["after"] if key in run]
        before, after = statistics.median(befores), statistics.median(afters)
        timed = key.endswith(TIMES)
        better = (before / after if timed else after / before) if before and after else 0.0
        spread = (
            " ".join(f"{v:,.0f}" for v in befores) + " | " + " ".join(f"{v:,.0f}" for v in afters)
        )
        print(f"{key:<46}{before:>10,.1f}{after:>10,.1f}{better:>10.3f}   {spread}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
