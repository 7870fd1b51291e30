"""Load and fault soaks (issue #17 §4): bounded in count and time, loopback only.

Every subcommand prints its seed, a figures table, and exits 1 on any failure:

* ``http-sessions --sessions N --calls M``: N concurrent Streamable HTTP
  sessions (handshake era) against one server process (``serve_http``,
  hypercorn on 127.0.0.1:0), each making M ``echo`` calls; every call must come
  back with its own text; the server's RSS is sampled from /proc and must be
  flat across the second half of the run (slope in KiB/s, growth bound).
* ``modern-clients --clients N --calls M``: the same with N 2026-07-28 clients.
* ``stdio-calls --calls N``: one stdio session (a real subprocess) carrying N
  calls, server and client RSS flat across the second half.
* ``kill-clients --count N``: N client processes SIGKILLed at random points
  mid-call (seeded). ``--transport http``: one HTTP server for all of them;
  afterwards its session count, task count and open fds are back to baseline.
  ``--transport stdio``: each victim spawns its own stdio server; afterwards no
  server process is left.
* ``kill-server``: a server SIGKILLed under a client with calls in flight
  (stdio, HTTP handshake era, HTTP 2026-07-28): every pending call fails with
  an ``MCPError`` carrying a reason, within ``--bound`` seconds (max latency
  printed).
* ``stalls``: a stdio peer that stops reading, one that sends half a frame and
  stalls, one that closes its output (half-closed): pending calls fail
  (timeout, timeout, at once), the process is gone after the block, and the
  client has no task left.

The server side runs as ``python bench/soak.py serve-http|serve-stdio`` (this
file again); its ``soak_stats`` tool reports sessions, Trio tasks and fds.
Run: ``scripts/soak SUBCOMMAND [options]``; numbers go in closing notes.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

# This directory holds a module named like the standard library's ``http``
# package's neighbours: keep it off the import path (as bench/streamable_http.py).
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

LATEST = "2025-11-25"
#: The checkout this file is in: stdio servers spawned here import trio_mcp from it.
ROOT = os.path.dirname(_here)
CHILD_ENV = {"PYTHONPATH": os.path.join(ROOT, "src")}


# ------------------------------------------------------------------ helpers


def rss_kib(pid: int) -> int:
    """Resident set size of *pid* in KiB, from /proc (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except FileNotFoundError:
        return 0
    return 0


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def alive(pid: int) -> bool:
    """True while *pid* exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def task_count() -> int:
    """Every Trio task alive in this run (the root's tree)."""
    import trio

    root = trio.lowlevel.current_root_task()
    assert root is not None
    todo = [root]
    n = 0
    while todo:
        task = todo.pop()
        n += 1
        for nursery in task.child_nurseries:
            todo.extend(nursery.child_tasks)
    return n


def text_of(result: Any) -> str:
    """The text of a tool result's first block (the echo, the stats)."""
    from trio_mcp.types import TextContent

    block = result.content[0]
    if not isinstance(block, TextContent):
        raise AssertionError(f"not a text block: {block!r}")
    return block.text


def slope(samples: list[tuple[float, int]]) -> tuple[float, int]:
    """Least-squares slope (KiB/s) and max-min growth (KiB) over the second half."""
    half = samples[len(samples) // 2 :]
    if len(half) < 2:
        return 0.0, 0
    ts = [t for t, _ in half]
    vs = [v for _, v in half]
    mt, mv = sum(ts) / len(ts), sum(vs) / len(vs)
    den = sum((t - mt) ** 2 for t in ts) or 1.0
    k = sum((t - mt) * (v - mv) for t, v in half) / den
    return k, max(vs) - vs[0]


class Report:
    """The figures table and the failures of one subcommand."""

    def __init__(self, name: str, seed: int) -> None:
        self.name = name
        self.seed = seed
        self.rows: list[tuple[str, str]] = []
        self.failures: list[str] = []

    def row(self, key: str, value: object) -> None:
        self.rows.append((key, str(value)))

    def check(self, ok: bool, what: str) -> None:
        if not ok:
            self.failures.append(what)

    def finish(self, as_json: bool) -> int:
        width = max((len(k) for k, _ in self.rows), default=0)
        print(f"{self.name}:")
        for k, v in self.rows:
            print(f"  {k.ljust(width)}  {v}")
        for f in self.failures:
            print(f"  FAILED: {f}")
        print("result:", "FAILED" if self.failures else "ok")
        if as_json:
            out = {"name": self.name, "seed": self.seed, "figures": dict(self.rows)}
            out["failures"] = self.failures
            print(json.dumps(out))
        return 1 if self.failures else 0


def build_server(stats: Callable[[], dict[str, int]], remembered: int | None = None) -> Any:
    import trio

    import trio_mcp

    # remembered: the finished requests a session keeps (Server's
    # request_history and remembered_requests; None: the defaults, 1000/4096).
    if remembered is None:
        server = trio_mcp.Server("soak")
    else:
        server = trio_mcp.Server(
            "soak", request_history=min(remembered, 1000), remembered_requests=remembered
        )
    running = {"slow": 0}

    @server.tool()
    async def echo(text: str) -> str:
        return text

    @server.tool()
    async def slow() -> str:
        # Held open until the peer dies or cancels: the call "in flight".
        running["slow"] += 1
        try:
            await trio.sleep_forever()
        finally:
            running["slow"] -= 1

    @server.tool()
    async def soak_stats() -> str:
        out = stats()
        out["slow"] = running["slow"]
        out["tasks"] = task_count()
        out["fds"] = fd_count(os.getpid())
        return json.dumps(out)

    return server


def serve_http_main(idle_timeout: float, header_timeout: float, remembered: int | None) -> None:
    import trio

    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )

    from trio_mcp import http_app, serve_http

    holder: dict[str, Any] = {}
    server = build_server(lambda: {"sessions": holder["app"].session_count}, remembered)
    app = http_app(server, session_idle_timeout=idle_timeout, max_sessions=100_000)
    holder["app"] = app

    async def main() -> None:
        with trio.open_signal_receiver(signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                url = await nursery.start(
                    lambda task_status: serve_http(
                        app, header_timeout=header_timeout, task_status=task_status
                    )
                )
                print(f"{url}/mcp", flush=True)
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    break

    trio.run(main)


def serve_stdio_main() -> None:
    build_server(dict).run_stdio()


def raw_peer_main(mode: str) -> None:
    """A hostile stdio server: answers the handshake, then misbehaves by *mode*."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        line = stdin.readline()
        if not line:
            return
        msg = json.loads(line)
        if msg.get("method") == "initialize":
            result = {
                "protocolVersion": LATEST,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "0"},
            }
            stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode())
            stdout.write(b"\n")
            stdout.flush()
        elif msg.get("method") == "notifications/initialized":
            break
    if mode == "no-read":
        time.sleep(3600)  # never reads again: the client's writes fill the pipe
    elif mode == "half-frame":
        line = stdin.readline()
        msg = json.loads(line)
        stdout.write(b'{"jsonrpc": "2.0", "id": ' + json.dumps(msg["id"]).encode())
        stdout.flush()
        while stdin.readline():  # keeps reading, never finishes the frame
            pass
        time.sleep(3600)
    elif mode == "half-close":
        stdin.readline()  # the call arrives...
        stdout.close()  # ...and our output ends, the process lives on
        os.close(1)
        time.sleep(3600)


def start_http_server(
    idle_timeout: float, header_timeout: float = 10.0, remembered: int | None = None
) -> tuple[subprocess.Popen[str], str]:
    args = ["--idle-timeout", str(idle_timeout), "--header-timeout", str(header_timeout)]
    if remembered is not None:
        args += ["--remembered", str(remembered)]
    # The server logs WARNING and above to a file of its own: a load run
    # checks it has no ERROR, and shows the kinds of warning it has.
    with tempfile.NamedTemporaryFile(prefix="soak-server-", suffix=".log", delete=False) as log:
        proc = subprocess.Popen(
            [sys.executable, __file__, "serve-http", *args],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env={**os.environ, **CHILD_ENV},
        )
    SERVER_LOGS[proc.pid] = log.name
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url:
        raise SystemExit("the server did not start")
    return proc, url


#: The log file of each server start_http_server started, by pid.
SERVER_LOGS: dict[int, str] = {}


def server_log_rows(report: Report, proc: subprocess.Popen[Any]) -> None:
    """Count the stopped server's log lines by level; any ERROR fails the run."""
    path = SERVER_LOGS.pop(proc.pid)
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    os.unlink(path)
    records = [line for line in lines if line.split(" ", 1)[0] in ("WARNING", "ERROR", "CRITICAL")]
    kinds = Counter(" ".join(line.split()[:6]) for line in records)
    report.row("server log records", len(records))
    for kind, times in kinds.most_common(5):
        report.row("  most logged", f"{times} x {kind[:100]}")
    errors = [line for line in records if not line.startswith("WARNING")]
    report.check(not errors, f"{len(errors)} ERROR records in the server's log: {errors[:1]}")
    tracebacks = sum(line.startswith("Traceback") for line in lines)
    report.check(not tracebacks, f"{tracebacks} tracebacks in the server's log")


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def sample_rss(
    pids: dict[str, int], out: dict[str, list[tuple[float, int]]], every: float
) -> None:
    import trio

    t0 = trio.current_time()
    while True:
        for name, pid in pids.items():
            out.setdefault(name, []).append((trio.current_time() - t0, rss_kib(pid)))
        await trio.sleep(every)


def rss_rows(report: Report, samples: dict[str, list[tuple[float, int]]], bound_kib: int) -> None:
    for name, series in samples.items():
        k, growth = slope(series)
        report.row(f"{name} RSS start/end KiB", f"{series[0][1]} / {series[-1][1]}")
        report.row(
            f"{name} RSS 2nd-half slope",
            f"{k:.1f} KiB/s, growth {growth} KiB ({len(series)} samples)",
        )
        report.check(
            growth <= bound_kib,
            f"{name} RSS grew {growth} KiB in the second half (bound {bound_kib})",
        )


async def stats_of(url: str) -> dict[str, int]:
    from trio_mcp import open_http_client

    # discover=False: no listen stream, one POST; the probe must not itself
    # hold anything on the server it measures.
    async with open_http_client(url, era="modern", discover=False, remember_era=False) as client:
        result = await client.call_tool("soak_stats", {})
    return dict(json.loads(text_of(result)))


# ------------------------------------------------------------------ load


def http_load(args: argparse.Namespace, era: str, count: int, name: str) -> int:
    import trio

    from trio_mcp import MCPError, open_http_client

    report = Report(name, args.seed)
    proc, url = start_http_server(1800.0, remembered=args.remembered or None)
    answered = 0
    sent = 0
    wrong: list[str] = []
    failed: Counter[str] = Counter()
    # --calls: exactly that many each. Else (the default) every session calls
    # until --duration from the start: the bounded time. Its second
    # half is then steady state (every session open, each keeping at most
    # --remembered finished requests, ~0.4 KiB each), so what the RSS check
    # sees growing there is a leak, not a bounded cache filling up.
    until = time.monotonic() + args.duration if args.calls is None else None

    opening = trio.CapacityLimiter(args.open_burst)
    phases: dict[str, float] = {}
    opened = [0]
    all_open = trio.Event()

    async def one(i: int) -> None:
        nonlocal answered, sent
        # Opened --open-burst at a time (a busy server accepts one connection
        # per pass of its event loop: 1,000 handshakes at one instant wait
        # seconds in its accept queue), then every call made with all the
        # sessions open at once.
        async with opening:
            # Each client its own pool, as separate hosts would have: one
            # httpx pool shared by 1,000 clients is itself the bottleneck
            # (httpcore scans every connection for every request: 80 % of
            # the soak process's CPU at 600 clients).
            cm = open_http_client(url, era=era, remember_era=False)
            client = await cm.__aenter__()
        try:
            opened[0] += 1
            if opened[0] == count:
                phases["all open"] = time.perf_counter()
                all_open.set()
            await all_open.wait()
            j = 0
            while (j < args.calls) if until is None else (time.monotonic() < until):
                text = f"{i}.{j}"
                sent += 1
                try:
                    result = await client.call_tool("echo", {"text": text})
                except MCPError as exc:
                    # Counted and reported, not raised: one failed call must not
                    # end the other sessions' run (the check below fails it).
                    failed[f"{type(exc).__name__}: {exc}"] += 1
                else:
                    if text_of(result) != text:
                        wrong.append(text)
                    answered += 1
                j += 1
        finally:
            phases.setdefault("first close", time.perf_counter())
            await cm.__aexit__(None, None, None)

    async def main() -> dict[str, Any]:
        samples: dict[str, list[tuple[float, int]]] = {}
        t0 = phases["start"] = time.perf_counter()
        with trio.fail_after(args.time_bound):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(sample_rss, {"server": proc.pid}, samples, 0.1)
                async with trio.open_nursery() as inner:
                    for i in range(count):
                        inner.start_soon(one, i)
                nursery.cancel_scope.cancel()
        after = await stats_of(url)
        return {"samples": samples, "seconds": time.perf_counter() - t0, "after": after}

    try:
        out = trio.run(main)
    finally:
        stop(proc)
    server_log_rows(report, proc)
    report.row("era", era)
    report.row(
        "requests a session keeps",
        "Server defaults (1000 / 4096)" if not args.remembered else args.remembered,
    )
    report.row("concurrent sessions" if era == "legacy" else "concurrent clients", count)
    report.row("calls answered", f"{answered} / {sent}")
    report.row("seconds", f"{out['seconds']:.2f}")
    report.row(
        "all open / first close at s",
        " / ".join(
            f"{phases[k] - phases['start']:.2f}" if k in phases else "-"
            for k in ("all open", "first close")
        ),
    )
    report.row("calls/s", f"{answered / out['seconds']:.0f}")
    report.row("server sessions left", out["after"]["sessions"])
    expected = sent if until is not None else count * args.calls
    report.check(answered == sent == expected, "not every call answered")
    report.check(not wrong, f"{len(wrong)} wrong answers")
    for reason, times in failed.most_common():
        report.check(False, f"{times} calls failed: {reason}")
    report.check(out["after"]["sessions"] == 0, "sessions left after every client closed")
    rss_rows(report, out["samples"], args.rss_bound)
    return report.finish(args.json)


def stdio_calls(args: argparse.Namespace) -> int:
    import trio

    from trio_mcp import open_stdio_client

    report = Report("stdio-calls", args.seed)

    async def main() -> dict[str, Any]:
        samples: dict[str, list[tuple[float, int]]] = {}
        answered = 0
        t0 = time.perf_counter()
        async with open_stdio_client(
            sys.executable, [__file__, "serve-stdio"], era="legacy", env=CHILD_ENV
        ) as client:
            pid = client.session.transport.pid  # type: ignore[attr-defined]
            per = args.calls // args.concurrency

            async def worker(w: int) -> None:
                nonlocal answered
                for j in range(per):
                    text = f"{w}.{j}"
                    result = await client.call_tool("echo", {"text": text})
                    if text_of(result) != text:
                        raise AssertionError(f"wrong echo for {text}")
                    answered += 1

            with trio.fail_after(args.time_bound):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(
                        sample_rss, {"server": pid, "client": os.getpid()}, samples, 0.25
                    )
                    async with trio.open_nursery() as inner:
                        for w in range(args.concurrency):
                            inner.start_soon(worker, w)
                    nursery.cancel_scope.cancel()
        return {
            "samples": samples,
            "answered": answered,
            "seconds": time.perf_counter() - t0,
            "pid": pid,
        }

    out = trio.run(main)
    expected = args.calls // args.concurrency * args.concurrency
    report.row("calls answered", f"{out['answered']} / {expected} ({args.concurrency} in flight)")
    report.row("seconds", f"{out['seconds']:.2f}")
    report.row("calls/s", f"{out['answered'] / out['seconds']:.0f}")
    report.check(out["answered"] == expected, "not every call answered")
    report.check(not alive(out["pid"]), "the server process outlived the session")
    rss_rows(report, out["samples"], args.rss_bound)
    return report.finish(args.json)


# ------------------------------------------------------------------ faults


def victim_main(target: str, era: str) -> None:
    """A client process that keeps calls in flight until it is SIGKILLed."""
    import trio

    from trio_mcp import open_http_client, open_stdio_client

    async def work(client: Any) -> None:
        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(client.call_tool, "slow", {})
            n = 0
            while True:
                await client.call_tool("echo", {"text": "x"})
                n += 1
                if n == 1:
                    pid = getattr(client.session.transport, "pid", 0)
                    print(f"ready {pid}", flush=True)

    async def main() -> None:
        if target == "stdio":
            async with open_stdio_client(
                sys.executable, [__file__, "serve-stdio"], era="legacy", env=CHILD_ENV
            ) as c:
                await work(c)
        else:
            async with open_http_client(target, era=era, remember_era=False) as c:
                await work(c)

    trio.run(main)


def kill_clients(args: argparse.Namespace) -> int:
    import trio

    report = Report(f"kill-clients ({args.transport}, {args.era})", args.seed)
    rng = random.Random(args.seed)
    proc: subprocess.Popen[str] | None = None
    target = "stdio"
    if args.transport == "http":
        proc, target = start_http_server(args.idle_timeout, args.header_timeout)
    server_pids: list[int] = []
    delays: list[float] = []

    async def one_victim() -> None:
        victim = await trio.lowlevel.open_process(
            [sys.executable, __file__, "victim", target, args.era],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **CHILD_ENV},
        )
        try:
            assert victim.stdout is not None
            buf = b""
            with trio.fail_after(30):
                while b"\n" not in buf:
                    chunk = await victim.stdout.receive_some()
                    if not chunk:
                        raise RuntimeError("victim exited before it was ready")
                    buf += chunk
            server_pids.append(int(buf.split()[1]))
            # A random point mid-call: the slow calls are in flight, echo
            # calls are being made and answered.
            delay = rng.uniform(0, args.max_delay)
            delays.append(delay)
            await trio.sleep(delay)
        finally:
            victim.kill()
            await victim.wait()

    async def main() -> dict[str, Any]:
        base = await stats_of(target) if proc else {}
        t0 = time.perf_counter()
        limit = trio.CapacityLimiter(args.parallel)

        async def gated() -> None:
            async with limit:
                await one_victim()

        with trio.fail_after(args.time_bound):
            async with trio.open_nursery() as nursery:
                for _ in range(args.count):
                    nursery.start_soon(gated)
        killed_s = time.perf_counter() - t0
        after: dict[str, int] = {}
        # Dead peers are noticed by EOF (stdio) or by the session idle timer
        # (HTTP handshake era: a killed client sends no DELETE), and hypercorn
        # closes a connection whose peer is gone (CLOSE_WAIT) only when its
        # keep-alive timer, the header timeout, runs out: wait for those.
        # Each probe is a connection of its own that lingers as long, so the
        # probes are spaced by more than the header timeout.
        deadline = trio.current_time() + args.settle
        while True:
            if proc:
                await trio.sleep(args.header_timeout + 0.5)
            if proc:
                after = await stats_of(target)
                settled = (
                    after["sessions"] <= base["sessions"]
                    and after["slow"] == 0
                    and after["fds"] <= base["fds"]
                    and after["tasks"] <= base["tasks"]
                )
            else:
                settled = not any(alive(p) for p in server_pids)
            if settled or trio.current_time() > deadline:
                break
            if not proc:
                await trio.sleep(0.2)
        return {
            "base": base,
            "after": after,
            "killed_s": killed_s,
            "settle_s": time.perf_counter() - t0 - killed_s,
        }

    try:
        out = trio.run(main)
    finally:
        if proc:
            stop(proc)
    if proc:
        server_log_rows(report, proc)
    report.row("seed", args.seed)
    report.row("clients SIGKILLed mid-call", f"{len(delays)} / {args.count}")
    report.row("kill delay after first answer", f"0..{args.max_delay} s")
    report.row("seconds (kills / settle)", f"{out['killed_s']:.1f} / {out['settle_s']:.1f}")
    report.check(len(delays) == args.count, "not every victim was killed mid-call")
    if proc:
        b, a = out["base"], out["after"]
        for key in ("sessions", "slow", "tasks", "fds"):
            report.row(f"server {key} baseline/after", f"{b[key]} / {a[key]}")
            report.check(
                a[key] <= b[key], f"server {key} not back to baseline: {b[key]} -> {a[key]}"
            )
    else:
        left = [p for p in server_pids if alive(p)]
        report.row("stdio servers left", f"{len(left)} / {len(server_pids)}")
        report.check(not left, f"{len(left)} stdio server processes outlived their client")
    return report.finish(args.json)


def kill_server(args: argparse.Namespace) -> int:
    import trio

    from trio_mcp import MCPError, open_http_client, open_stdio_client

    report = Report("kill-server", args.seed)
    worst = 0.0

    async def run(kind: str) -> None:
        nonlocal worst
        proc: subprocess.Popen[str] | None = None
        latencies: list[float] = []
        reasons: set[str] = set()
        bad: list[str] = []
        killed_at = [0.0]
        if kind == "stdio":
            cm = open_stdio_client(
                sys.executable, [__file__, "serve-stdio"], era="legacy", env=CHILD_ENV
            )
        else:
            proc, url = start_http_server(1800.0)
            cm = open_http_client(url, era=kind.split()[1], remember_era=False)
        try:
            async with cm as client:
                pid = proc.pid if proc else client.session.transport.pid  # type: ignore[attr-defined]

                async def call() -> None:
                    try:
                        await client.call_tool("slow", {})
                        bad.append("answered")
                    except MCPError as exc:
                        latencies.append(time.perf_counter() - killed_at[0])
                        reasons.add(f"{type(exc).__name__}: {str(exc)[:70]}")
                        if not str(exc):
                            bad.append(f"{type(exc).__name__} without a reason")

                with trio.fail_after(args.bound + 30):
                    async with trio.open_nursery() as nursery:
                        for _ in range(args.calls):
                            nursery.start_soon(call)
                        # In flight: the server runs every handler.
                        while True:
                            async with (
                                open_http_client(url, era="modern") if proc else _same(client) as c2
                            ):
                                seen = json.loads(text_of(await c2.call_tool("soak_stats", {})))
                            if seen["slow"] == args.calls:
                                break
                            await trio.sleep(0.05)
                        killed_at[0] = time.perf_counter()
                        os.kill(pid, signal.SIGKILL)
        except MCPError as exc:
            # Leaving the block after the death may itself report it.
            reasons.add(f"on close {type(exc).__name__}")
        finally:
            if proc:
                proc.wait()
                os.unlink(SERVER_LOGS.pop(proc.pid))  # SIGKILLed: its log ends mid-run
        top = max(latencies, default=float("inf"))
        worst = max(worst, top)
        report.row(
            f"{kind}: calls failed",
            f"{len(latencies)} / {args.calls}, max latency {top * 1000:.1f} ms",
        )
        for r in sorted(reasons):
            report.row(f"{kind}: reason", r)
        report.check(
            len(latencies) == args.calls and not bad, f"{kind}: {bad or 'calls not failed'}"
        )
        report.check(top <= args.bound, f"{kind}: max latency {top:.2f} s over {args.bound} s")

    for kind in ("stdio", "http legacy", "http modern"):
        trio.run(run, kind)
    report.row("max latency", f"{worst * 1000:.1f} ms")
    return report.finish(args.json)


class _same:
    """``async with`` yielding an existing client (stats over the same session)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def __aenter__(self) -> Any:
        return self.client

    async def __aexit__(self, *exc: object) -> None:
        return None


def stalls(args: argparse.Namespace) -> int:
    import trio

    from trio_mcp import MCPError, open_stdio_client

    report = Report("stalls", args.seed)

    async def run(mode: str) -> None:
        before = task_count()
        fds_before = fd_count(os.getpid())
        latency = -1.0
        reason = ""
        pid = 0
        t0 = time.perf_counter()
        try:
            with trio.fail_after(args.timeout + 20):
                async with open_stdio_client(
                    sys.executable,
                    [__file__, "raw-peer", mode],
                    era="legacy",
                    env=CHILD_ENV,
                    discover=False,
                    close_grace=0.5,
                    terminate_grace=0.5,
                ) as client:
                    pid = client.session.transport.pid  # type: ignore[attr-defined]
                    # 256 KiB: more than a pipe holds, so a peer that stops
                    # reading blocks our write, not only our wait.
                    payload = "x" * (256 * 1024 if mode == "no-read" else 10)
                    t0 = time.perf_counter()
                    try:
                        await client.call_tool("echo", {"text": payload}, max_duration=args.timeout)
                        reason = "answered"
                    except MCPError as exc:
                        latency = time.perf_counter() - t0
                        reason = f"{type(exc).__name__}: {str(exc)[:60]}"
        except MCPError as exc:
            reason = reason or f"on close {type(exc).__name__}"
        gone_s = time.perf_counter() - t0
        left = alive(pid) if pid else True
        after = task_count()
        fds_after = fd_count(os.getpid())
        expect = args.timeout + 1.0 if mode != "half-close" else 1.0
        report.row(f"{mode}: call", f"failed in {latency * 1000:.0f} ms ({reason})")
        report.row(
            f"{mode}: process gone / tasks",
            f"{not left} after {gone_s:.2f} s / {before} -> {after}",
        )
        report.check(
            0 <= latency <= expect, f"{mode}: call did not fail within {expect} s ({reason})"
        )
        report.check(not left, f"{mode}: the peer process was left")
        report.row(f"{mode}: client fds", f"{fds_before} -> {fds_after}")
        report.check(after <= before, f"{mode}: tasks left {before} -> {after}")
        report.check(
            fds_after <= fds_before, f"{mode}: pipes left open {fds_before} -> {fds_after}"
        )

    for mode in ("no-read", "half-frame", "half-close"):
        trio.run(run, mode)
    return report.finish(args.json)


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--seed", type=int, default=None)
        p.add_argument("--json", action="store_true")
        p.add_argument(
            "--time-bound", type=float, default=600.0, help="seconds before the run fails"
        )
        p.add_argument(
            "--rss-bound", type=int, default=16384, help="KiB of RSS growth allowed in the 2nd half"
        )

    def load(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--calls", type=int, default=None, help="exactly this many calls each (else --duration)"
        )
        p.add_argument(
            "--duration",
            type=float,
            default=60.0,
            help="seconds from the start that every session calls for, without --calls (60)",
        )
        p.add_argument("--open-burst", type=int, default=50, help="sessions opening at one time")
        p.add_argument(
            "--remembered",
            type=int,
            default=8,
            help="finished requests a server session keeps (8; 0: Server's defaults, 1000/4096)",
        )
        common(p)

    p = sub.add_parser("http-sessions")
    p.add_argument("--sessions", type=int, default=1000)
    load(p)
    p = sub.add_parser("modern-clients")
    p.add_argument("--clients", type=int, default=1000)
    load(p)
    p = sub.add_parser("stdio-calls")
    p.add_argument("--calls", type=int, default=1_000_000)
    p.add_argument("--concurrency", type=int, default=16)
    common(p)
    p = sub.add_parser("kill-clients")
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--transport", choices=("http", "stdio"), default="http")
    p.add_argument("--era", choices=("legacy", "modern"), default="legacy")
    p.add_argument("--parallel", type=int, default=8)
    p.add_argument("--max-delay", type=float, default=0.2)
    p.add_argument(
        "--idle-timeout", type=float, default=3.0, help="the server's session idle timeout"
    )
    p.add_argument(
        "--header-timeout", type=float, default=2.0, help="the server's keep-alive bound"
    )
    p.add_argument(
        "--settle", type=float, default=20.0, help="seconds allowed to get back to baseline"
    )
    common(p)
    p = sub.add_parser("kill-server")
    p.add_argument("--calls", type=int, default=32)
    p.add_argument("--bound", type=float, default=2.0)
    common(p)
    p = sub.add_parser("stalls")
    p.add_argument("--timeout", type=float, default=1.0)
    common(p)
    p = sub.add_parser("serve-http")
    p.add_argument("--idle-timeout", type=float, default=1800.0)
    p.add_argument("--header-timeout", type=float, default=10.0)
    p.add_argument("--remembered", type=int, default=None)
    p = sub.add_parser("serve-stdio")
    p = sub.add_parser("raw-peer")
    p.add_argument("mode")
    p = sub.add_parser("victim")
    p.add_argument("target")
    p.add_argument("era")
    args = parser.parse_args(argv)

    if args.cmd == "serve-http":
        serve_http_main(args.idle_timeout, args.header_timeout, args.remembered)
        return 0
    if args.cmd == "serve-stdio":
        serve_stdio_main()
        return 0
    if args.cmd == "raw-peer":
        raw_peer_main(args.mode)
        return 0
    if args.cmd == "victim":
        victim_main(args.target, args.era)
        return 0
    if args.seed is None:
        args.seed = random.randrange(1 << 32)
    print(f"seed {args.seed}", flush=True)
    if args.cmd == "http-sessions":
        return http_load(args, "legacy", args.sessions, "http-sessions")
    if args.cmd == "modern-clients":
        return http_load(args, "modern", args.clients, "modern-clients")
    if args.cmd == "stdio-calls":
        return stdio_calls(args)
    if args.cmd == "kill-clients":
        return kill_clients(args)
    if args.cmd == "kill-server":
        return kill_server(args)
    return stalls(args)


if __name__ == "__main__":
    sys.exit(main())
