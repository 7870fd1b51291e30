"""Every side-by-side row of issue #16 in one run: trio_mcp, the TypeScript SDK,
the official Python SDK and the bare limits, medians of interleaved rounds.

One command: ``.venv/bin/python bench/all.py`` (``--help`` for the knobs). It
first runs ``bench/setup_bench.py`` (the TypeScript SDK 2.4.0 with Node 22, and
a non-editable install of this checkout in its own virtualenv), then runs
``--rounds`` (3) rounds; each round runs every row once, in the same order, each
in its own process, so that a slow minute of the machine hits every subject
alike. Each cell is the median of the rounds. See bench/README.md, "all.py".

Groups and subjects (each in both eras where it has them):

* **in-process**: ``tools/call`` echo, sequential and 64 in flight.
  trio_mcp: ``open_memory_client(server, era=...)``; TypeScript: ``Client`` and
  ``McpServer`` over ``InMemoryTransport``; Python SDK: ``mcp.Client`` over its
  in-memory streams (``inmemory.py``'s ``(b)``); limit: a bare Trio
  memory-channel round trip (``limits.py memory``).
* **stdio**: real subprocess servers; sequential, 64 in flight, start-up (spawn
  to connected), shutdown on EOF, a 1 MiB result. trio_mcp from the
  non-editable install (``stdio.py --subject trio_mcp``); Python SDK
  ``stdio.py --subject mcp`` (its tool returns no structured output, like the
  others); TypeScript ``serveStdio`` + ``StdioClientTransport``; limit: a bare
  Trio NDJSON echo over a pipe with orjson (``limits.py stdio``).
* **http**: Streamable HTTP, sequential and 32 in flight, each server in its
  own process on 127.0.0.1 port 0. trio_mcp ``serve_http`` with its client;
  Python SDK ``MCPServer`` on uvicorn with ``mcp.Client``; TypeScript
  ``createMcpHandler`` behind the Node adapter with
  ``StreamableHTTPClientTransport``; limit: hypercorn + httpx on Trio with no
  MCP (``limits.py http``).

Under each group's table: src/trio_mcp/TypeScript, src/trio_mcp/limit and
src/trio_mcp/Python SDK for every cell (rates: above 1 is better for trio_mcp;
times: ``time ratio``, below 1 is better), and ``modern/legacy`` per subject.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ERAS = ("legacy", "modern")
#: Metrics per group: (key, label, higher is better).
METRICS: dict[str, list[tuple[str, str, bool]]] = {
    "inprocess": [
        ("sequential_calls_s", "sequential calls/s", True),
        ("concurrent_calls_s", "64 in flight calls/s", True),
    ],
    "stdio": [
        ("sequential_calls_s", "sequential calls/s", True),
        ("concurrent_calls_s", "64 in flight calls/s", True),
        ("startup_ms", "start-up ms", False),
        ("shutdown_ms", "shutdown on EOF ms", False),
        ("big_result_mib_s", "1 MiB result MiB/s", True),
    ],
    "http": [
        ("sequential_calls_s", "sequential calls/s", True),
        ("concurrent_calls_s", "32 in flight calls/s", True),
    ],
}
GROUP_TITLES = {
    "inprocess": "in-process",
    "stdio": "stdio",
    "http": "Streamable HTTP",
}
SUBJECTS = ("trio_mcp", "ts", "mcp", "limit")
SUBJECT_LABELS = {
    "trio_mcp": "trio_mcp",
    "ts": "TypeScript SDK",
    "mcp": "Python SDK",
    "limit": "limit (no MCP)",
}


@dataclass
class Env:
    """What the rows run with (from setup_bench and the command line)."""

    python: str  # this interpreter (the Python SDK is installed here)
    bench_python: str  # the non-editable trio_mcp
    node: str
    node_version: str
    ts_dir: Path
    calls: int
    http_calls: int
    rounds_startup: int
    timeout: float
    env: dict[str, str] = field(default_factory=dict)  # PYTHONPATH = this checkout


def _run_json(
    argv: list[str], env: Env, *, cwd: Path | None = None, clean: bool = False
) -> dict[str, float]:
    """Run one measuring process; return the JSON object its last stdout line holds."""
    environment = dict(os.environ)
    environment.pop("PYTHONPATH", None)
    if not clean:
        environment.update(env.env)
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=env.timeout,
        check=False,
        cwd=cwd,
        env=environment,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"{' '.join(argv[:4])}... exited {proc.returncode}:\n{tail}")
    result: dict[str, float] = json.loads(lines[-1])
    return result


@contextmanager
def _server(argv: list[str], env: Env, *, cwd: Path | None = None) -> Iterator[str]:
    """A server process that prints its URL on its first stdout line."""
    environment = dict(os.environ)
    environment.update(env.env)
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=cwd,
        env=environment,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url:
            raise RuntimeError(f"{' '.join(argv[:3])}: the server did not start")
        yield url
    finally:
        with suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


# ------------------------------------------------------------------- rows


def _inprocess(subject: str, era: str, env: Env) -> dict[str, float]:
    if subject == "ts":
        return _run_json(
            [env.node, "ts_bench.mjs", "inprocess", era, str(env.calls), "64"], env, cwd=env.ts_dir
        )
    if subject == "limit":
        return _run_json(
            [env.python, str(HERE / "limits.py"), "memory", "--calls", str(env.calls)], env
        )
    return _run_json(
        [
            env.python,
            str(Path(__file__)),
            "--one-inprocess",
            subject,
            era,
            "--calls",
            str(env.calls),
        ],
        env,
    )


def _one_inprocess(subject: str, era: str, calls: int) -> dict[str, float]:
    """In this process: one in-process subject, through inmemory.py's own functions."""
    sys.path.insert(0, str(HERE))
    import inmemory
    import trio

    plan = inmemory.Plan(calls=calls, concurrency=64, warmup=200, timeout=600)
    if subject == "trio_mcp":
        measurements, _ = trio.run(inmemory._bench_trio_mcp, plan, era)  # type: ignore[arg-type]
    else:
        measurements, _ = inmemory._run_mcp(plan, "asyncio", era, False)  # type: ignore[arg-type]
    rates = {m.pattern: m.calls_per_s for m in measurements}
    return {
        "sequential_calls_s": rates[inmemory.SEQUENTIAL],
        "concurrent_calls_s": rates[inmemory.CONCURRENT],
    }


def _stdio(subject: str, era: str, env: Env) -> dict[str, float]:
    if subject == "ts":
        argv = [
            env.node,
            "ts_bench.mjs",
            "stdio",
            era,
            str(env.calls),
            "64",
            str(env.rounds_startup),
        ]
        return _run_json(argv, env, cwd=env.ts_dir)
    if subject == "limit":
        return _run_json(
            [env.python, str(HERE / "limits.py"), "stdio", "--calls", str(env.calls)], env
        )
    python = env.bench_python if subject == "trio_mcp" else env.python
    argv = [
        python, str(HERE / "stdio.py"), "--subject", subject, "--era", era,
        "--calls", str(env.calls), "--concurrency", "64", "--rounds", str(env.rounds_startup),
    ]  # fmt: skip
    # trio_mcp runs from its wheel: no PYTHONPATH pointing into the checkout.
    return _run_json(argv, env, clean=subject == "trio_mcp")


def _http(subject: str, era: str, env: Env) -> dict[str, float]:
    calls = str(env.http_calls)
    if subject == "ts":
        with _server([env.node, "ts_bench.mjs", "http-server"], env, cwd=env.ts_dir) as url:
            return _run_json(
                [env.node, "ts_bench.mjs", "http", era, url, calls, "32"], env, cwd=env.ts_dir
            )
    if subject == "limit":
        return _run_json([env.python, str(HERE / "limits.py"), "http", "--calls", calls], env)
    script = str(HERE / "streamable_http.py")
    mode = "serve-ours" if subject == "trio_mcp" else "serve-official"
    name = {
        ("trio_mcp", "legacy"): "trio_mcp",
        ("trio_mcp", "modern"): "trio_mcp modern",
        ("mcp", "legacy"): "mcp",
        ("mcp", "modern"): "mcp modern",
    }[subject, era]
    with _server([env.python, script, mode], env) as url:
        return _run_json([env.python, script, "client", name, url, calls, "32", "200"], env)


ROWS: dict[str, Callable[[str, str, Env], dict[str, float]]] = {
    "inprocess": _inprocess,
    "stdio": _stdio,
    "http": _http,
}


def _row_eras(subject: str) -> tuple[str, ...]:
    return ("-",) if subject == "limit" else ERAS


# ----------------------------------------------------------------- render

Cell = dict[str, float]
Results = dict[tuple[str, str, str], list[Cell]]  # (group, subject, era) -> one cell per round


def _median(cells: list[Cell], key: str) -> float | None:
    values = [c[key] for c in cells if key in c]
    return statistics.median(values) if values else None


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def _ratio(ours: float | None, theirs: float | None, higher_better: bool) -> str:
    if ours is None or theirs is None or theirs == 0:
        return "-"
    return f"{ours / theirs:.2f}"


def render(results: Results, errors: dict[tuple[str, str, str], str], groups: list[str]) -> str:
    out: list[str] = []
    for group in groups:
        metrics = METRICS[group]
        out.append(f"== {GROUP_TITLES[group]} ==")
        header = f"{'subject':<28}" + "".join(f"{label:>24}" for _, label, _ in metrics)
        out.append(header)
        medians: dict[tuple[str, str], dict[str, float | None]] = {}
        for subject in SUBJECTS:
            for era in _row_eras(subject):
                key = (group, subject, era)
                if key not in results and key not in errors:
                    continue
                cells = results.get(key, [])
                row = {m: _median(cells, m) for m, _, _ in metrics}
                medians[subject, era] = row
                name = SUBJECT_LABELS[subject] + ("" if era == "-" else f" {era}")
                line = f"{name:<28}" + "".join(f"{_fmt(row[m]):>24}" for m, _, _ in metrics)
                if key in errors:
                    line += f"   FAILED: {errors[key].splitlines()[0]}"
                out.append(line)
        limit = medians.get(("limit", "-"), {})
        for era in ERAS:
            ours = medians.get(("trio_mcp", era))
            if ours is None:
                continue
            for other, label in (("ts", "TypeScript"), ("limit", "limit"), ("mcp", "Python SDK")):
                theirs = limit if other == "limit" else medians.get((other, era), {})
                texts: list[str] = []
                for m, _, higher in metrics:
                    ratio = _ratio(ours.get(m), theirs.get(m), higher)
                    texts.append(f"{ratio + ('' if higher or ratio == '-' else ' (time)'):>24}")
                out.append(f"{'trio_mcp/' + label + ' ' + era:<28}" + "".join(texts))
        for subject in ("trio_mcp", "ts", "mcp"):
            legacy, modern = medians.get((subject, "legacy")), medians.get((subject, "modern"))
            if legacy is None or modern is None:
                continue
            texts = [
                _ratio(modern.get(m), legacy.get(m), higher) + ("" if higher else " (time)")
                for m, _, higher in metrics
            ]
            texts = [f"{text:>24}" for text in texts]
            out.append(f"{SUBJECT_LABELS[subject] + ' modern/legacy':<28}" + "".join(texts))
        out.append("")
    out.append(
        "Ratios: rates (calls/s, MiB/s) as trio_mcp / other, above 1 is better for trio_mcp; "
        "'(time)' cells are time / time, below 1 is better. Cells are medians of the rounds."
    )
    return "\n".join(out)


# ------------------------------------------------------------------- main


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--rounds", type=int, default=3, help="interleaved rounds (cells are medians)"
    )
    parser.add_argument(
        "--calls", type=int, default=5000, help="calls per in-process and stdio row"
    )
    parser.add_argument("--http-calls", type=int, default=2000, help="calls per HTTP row")
    parser.add_argument(
        "--startup-rounds", type=int, default=5, help="start-up/shutdown samples per round"
    )
    parser.add_argument(
        "--group", action="append", choices=list(METRICS), help="repeatable (default all)"
    )
    parser.add_argument(
        "--subject", action="append", choices=list(SUBJECTS), help="repeatable (default all)"
    )
    parser.add_argument(
        "--timeout", type=float, default=600, help="seconds per row before it counts as failed"
    )
    parser.add_argument("--json", metavar="FILE", help="also write every round's cells as JSON")
    parser.add_argument(
        "--one-inprocess", nargs=2, metavar=("SUBJECT", "ERA"), help=argparse.SUPPRESS
    )
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if args.one_inprocess:
        subject, era = args.one_inprocess
        print(json.dumps(_one_inprocess(subject, era, args.calls)))
        return 0
    sys.path.insert(0, str(HERE))
    import setup_bench

    print("setting up (bench/setup_bench.py) ...", file=sys.stderr, flush=True)
    ts_dir = setup_bench.ts_cache()
    node, node_version = setup_bench.node()
    bench_python = setup_bench.bench_python()
    env = Env(
        python=sys.executable,
        bench_python=bench_python,
        node=node,
        node_version=node_version,
        ts_dir=ts_dir,
        calls=args.calls,
        http_calls=args.http_calls,
        rounds_startup=args.startup_rounds,
        timeout=args.timeout,
        env={"PYTHONPATH": str(ROOT / "src")},
    )
    groups = args.group or list(METRICS)
    subjects = args.subject or list(SUBJECTS)
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    results: Results = {}
    errors: dict[tuple[str, str, str], str] = {}
    started = time.monotonic()
    for round_ in range(1, args.rounds + 1):
        for group in groups:
            for subject in subjects:
                for era in _row_eras(subject):
                    key = (group, subject, era)
                    if key in errors:
                        continue
                    print(
                        f"round {round_}/{args.rounds}: {group} {subject} {era}",
                        file=sys.stderr,
                        flush=True,
                    )
                    try:
                        cell = ROWS[group](subject, "legacy" if era == "-" else era, env)
                    except (RuntimeError, subprocess.TimeoutExpired) as exc:
                        errors[key] = str(exc)
                        print(f"  failed: {exc}", file=sys.stderr, flush=True)
                        continue
                    results.setdefault(key, []).append(cell)
    print(
        f"trio_mcp {commit}{' (uncommitted changes)' if dirty else ''}; "
        f"TypeScript SDK 2.4.0 on node {env.node_version}; "
        f"{args.rounds} interleaved rounds, medians; "
        f"{args.calls} calls (HTTP {args.http_calls}); {time.monotonic() - started:.0f} s\n"
    )
    print(render(results, errors, groups))
    if args.json:
        payload = {"|".join(k): v for k, v in results.items()}
        Path(args.json).write_text(
            json.dumps(
                {
                    "commit": commit,
                    "cells": payload,
                    "errors": {"|".join(k): v for k, v in errors.items()},
                },
                indent=2,
            )
        )
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
