"""In-memory round-trip benchmark: a bare baseline, the official MCP SDK, and trio_mcp.

One run measures, side by side, the same unit of work -- a ``tools/call`` of an
``echo`` tool with arguments ``{"text": "hello"}`` whose result is one text
content block -- over three stacks, all in this one process, and for the two
MCP stacks in both eras (``--era``): ``legacy``, the initialize handshake
(2025-11-25), and ``modern``, 2026-07-28 (``server/discover``, no handshake,
the ``_meta`` envelope on every request and result):

(a) ``baseline``: a Trio memory-channel pair carrying orjson-encoded JSON-RPC
    bytes, a server loop that decodes the request and echoes a response, and a
    client-side reader that routes responses to callers by id.  No MCP at all:
    the practical ceiling for a JSON-RPC round trip on Trio.
(b) ``mcp``: the official Python SDK (``mcp`` on PyPI), its high-level
    ``MCPServer`` with an ``echo`` tool, driven by ``mcp.Client`` over the
    SDK's in-memory streams (JSON-RPC dispatcher, ``ClientSession``), under its
    own anyio event loop (asyncio by default).  Legacy: ``mode="legacy"``;
    modern: ``mode="auto"`` on the same streams (``server/discover``, checked
    to have chosen 2026-07-28).
(c) ``trio_mcp``: ``trio_mcp.Server`` with the same tool, reached through
    ``trio_mcp.testing.open_memory_client(era="legacy" | "modern")``.

Each stack is measured twice: sequentially (one call after another) and with
``--concurrency`` tasks each issuing calls in a loop until ``--calls`` calls
have completed.  Every call is timed individually, which gives the p50/p99
latencies; throughput is completed calls over the wall time of the whole
batch.

Run it with ``.venv/bin/python bench/inmemory.py --help``.  Numbers go in issue
closing notes, never in tests: see bench/README.md.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import math
import platform
import sys
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal

import orjson
import trio

ECHO_TEXT: Final = "hello"
ARGUMENTS: Final[dict[str, Any]] = {"text": ECHO_TEXT}

SEQUENTIAL: Final = "sequential"
CONCURRENT: Final = "concurrent"

# Buffer of each direction of the baseline's channel pair.  Any size >= 1 lets
# a sender hand off without waiting for the receiver to be scheduled; the
# numbers barely move between 1 and the concurrency level.
BASELINE_CHANNEL_BUFFER: Final = 64

McpBackend = Literal["asyncio", "trio"]
Era = Literal["legacy", "modern"]
McpMode = Literal["legacy", "modern", "direct"]

ERAS: Final[tuple[Era, ...]] = ("legacy", "modern")
# What each era means on the wire, for the notes column.
ERA_NOTES: Final[dict[str, str]] = {
    "legacy": "initialize handshake",
    "modern": "server/discover + _meta on every message",
}

Call = Callable[[], Awaitable[None]]
"""One ``tools/call`` round trip, result already checked, nothing returned."""

Outcome = tuple[list["Measurement"], str | None]
"""A subject's measured rows and the protocol version it negotiated (None: no MCP)."""


# --------------------------------------------------------------------------
# Measurement core, shared by every subject and both event loops.
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    """The outcome of one batch of calls against one subject."""

    pattern: str  # SEQUENTIAL or CONCURRENT
    concurrency: int
    calls: int
    seconds: float
    calls_per_s: float
    p50_ms: float
    p99_ms: float


@dataclass
class SubjectResult:
    """Every measurement of one subject, or why there are none."""

    key: str
    label: str
    detail: str
    era: str | None = None  # "legacy" or "modern"; None for the baseline
    protocol_version: str | None = None  # what the connection negotiated
    measurements: list[Measurement] = field(default_factory=list)
    error: str | None = None

    def rate(self, pattern: str) -> float | None:
        for m in self.measurements:
            if m.pattern == pattern:
                return m.calls_per_s
        return None


class _Budget:
    """Calls still to be issued, shared by the workers of one batch."""

    __slots__ = ("remaining",)

    def __init__(self, calls: int) -> None:
        self.remaining = calls


async def _worker(call: Call, budget: _Budget, latencies: list[float]) -> None:
    # Both event loops run this same loop, so the timing overhead is identical.
    perf = time.perf_counter
    while budget.remaining > 0:
        budget.remaining -= 1
        started = perf()
        await call()
        latencies.append(perf() - started)


def _percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


def _summarise(
    pattern: str, concurrency: int, seconds: float, latencies: list[float]
) -> Measurement:
    latencies.sort()
    return Measurement(
        pattern=pattern,
        concurrency=concurrency,
        calls=len(latencies),
        seconds=seconds,
        calls_per_s=len(latencies) / seconds,
        p50_ms=_percentile(latencies, 0.50) * 1e3,
        p99_ms=_percentile(latencies, 0.99) * 1e3,
    )


@dataclass(frozen=True)
class Plan:
    """What to run, from the command line."""

    calls: int
    concurrency: int
    warmup: int
    timeout: float  # seconds for one subject, all rows included; a hang counts as a failure

    def batches(self) -> list[tuple[str, int]]:
        return [(SEQUENTIAL, 1), (CONCURRENT, self.concurrency)]


async def _measure_trio(call: Call, plan: Plan) -> list[Measurement]:
    """Check one call, warm up, then run every batch of ``plan`` on the running Trio loop."""
    await call()
    await _run_batch_trio(call, plan.warmup, plan.concurrency)
    results = []
    for pattern, concurrency in plan.batches():
        gc.collect()
        latencies: list[float] = []
        started = time.perf_counter()
        await _run_batch_trio(call, plan.calls, concurrency, latencies)
        elapsed = time.perf_counter() - started
        results.append(_summarise(pattern, concurrency, elapsed, latencies))
    return results


async def _run_batch_trio(
    call: Call, calls: int, concurrency: int, latencies: list[float] | None = None
) -> None:
    budget = _Budget(calls)
    sink: list[float] = [] if latencies is None else latencies
    if concurrency == 1:
        await _worker(call, budget, sink)
        return
    async with trio.open_nursery() as nursery:
        for _ in range(concurrency):
            nursery.start_soon(_worker, call, budget, sink)


async def _measure_anyio(call: Call, plan: Plan) -> list[Measurement]:
    """As `_measure_trio`, with anyio task groups (for the mcp SDK, on either backend)."""
    await call()
    await _run_batch_anyio(call, plan.warmup, plan.concurrency)
    results = []
    for pattern, concurrency in plan.batches():
        gc.collect()
        latencies: list[float] = []
        started = time.perf_counter()
        await _run_batch_anyio(call, plan.calls, concurrency, latencies)
        elapsed = time.perf_counter() - started
        results.append(_summarise(pattern, concurrency, elapsed, latencies))
    return results


async def _run_batch_anyio(
    call: Call, calls: int, concurrency: int, latencies: list[float] | None = None
) -> None:
    import anyio

    budget = _Budget(calls)
    sink: list[float] = [] if latencies is None else latencies
    if concurrency == 1:
        await _worker(call, budget, sink)
        return
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(_worker, call, budget, sink)


class CheckFailed(RuntimeError):
    """A subject answered, but not with the echoed text."""


def _check_text(text: object) -> None:
    if text != ECHO_TEXT:
        raise CheckFailed(f"echo returned {text!r}, expected {ECHO_TEXT!r}")


# --------------------------------------------------------------------------
# (a) Baseline: Trio memory channels + orjson, no MCP.
# --------------------------------------------------------------------------


class _Pending:
    """One caller waiting for its response."""

    __slots__ = ("event", "response")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.response: dict[str, Any] | None = None


class BaselineClient:
    """The least a JSON-RPC client over a message channel has to do.

    Encode the request, send it, let one reader task decode responses and wake
    the caller waiting on that id.  The server side decodes, echoes and
    encodes inline (no task per request).
    """

    def __init__(self, nursery: trio.Nursery) -> None:
        self._to_server, server_inbox = trio.open_memory_channel[bytes](BASELINE_CHANNEL_BUFFER)
        server_outbox, self._from_server = trio.open_memory_channel[bytes](BASELINE_CHANNEL_BUFFER)
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        nursery.start_soon(self._serve, server_inbox, server_outbox)
        nursery.start_soon(self._read_responses)

    @staticmethod
    async def _serve(
        inbox: trio.MemoryReceiveChannel[bytes], outbox: trio.MemorySendChannel[bytes]
    ) -> None:
        async with inbox, outbox:
            async for raw in inbox:
                request = orjson.loads(raw)
                text = request["params"]["arguments"]["text"]
                response = {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "result": {"content": [{"type": "text", "text": text}], "isError": False},
                }
                await outbox.send(orjson.dumps(response))

    async def _read_responses(self) -> None:
        async with self._from_server:
            async for raw in self._from_server:
                response = orjson.loads(raw)
                pending = self._pending.pop(response["id"])
                pending.response = response
                pending.event.set()

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self._ids)
        pending = self._pending[request_id] = _Pending()
        request = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        await self._to_server.send(orjson.dumps(request))
        await pending.event.wait()
        assert pending.response is not None
        result: dict[str, Any] = pending.response["result"]
        return result

    async def aclose(self) -> None:
        await self._to_server.aclose()


async def _bench_baseline(plan: Plan) -> Outcome:
    with trio.fail_after(plan.timeout):
        async with trio.open_nursery() as nursery:
            client = BaselineClient(nursery)

            async def call() -> None:
                result = await client.call_tool("echo", ARGUMENTS)
                _check_text(result["content"][0]["text"])

            try:
                return await _measure_trio(call, plan), None
            finally:
                await client.aclose()


# --------------------------------------------------------------------------
# (b) The official MCP SDK.
# --------------------------------------------------------------------------


def mcp_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp")
    except PackageNotFoundError:
        return None


async def _bench_mcp(plan: Plan, mode: McpMode, structured: bool) -> Outcome:
    import anyio
    import mcp
    from mcp.client._memory import InMemoryTransport
    from mcp.server.mcpserver import MCPServer
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    server = MCPServer("bench", version="1.0")

    # structured_output=False: the result is the text content block only, as
    # for the other two subjects.  Left to auto-detect, a ``-> str`` tool also
    # returns structuredContent={"result": ...}, and the client then validates
    # it against the tool's output schema on every call (see --mcp-structured).
    @server.tool(structured_output=structured)
    async def echo(text: str) -> str:
        return text

    # "legacy": initialize handshake, then JSON-RPC messages over the SDK's
    # in-memory streams (InMemoryTransport + JSONRPCDispatcher + ClientSession).
    # "modern": the very same streams, but mode="auto": server/discover, then
    # 2026-07-28 requests carrying the _meta envelope.  (A server handed to
    # mcp.Client directly in any mode but "legacy" skips the streams; wrapping
    # it in the InMemoryTransport the legacy path builds for itself keeps the
    # JSON-RPC dispatcher on both sides, as in the legacy row.)
    # "direct" (the SDK's default for an in-process server): 2026-07-28
    # through a DirectDispatcher pair -- no streams and no JSON-RPC framing.
    target: Any = InMemoryTransport(server) if mode == "modern" else server
    client_mode = "legacy" if mode == "legacy" else "auto"
    with anyio.fail_after(plan.timeout):
        async with mcp.Client(target, mode=client_mode) as client:
            version = client.protocol_version
            if (mode != "legacy") != (version in MODERN_PROTOCOL_VERSIONS):
                raise CheckFailed(f"mode {mode!r} negotiated {version!r}")

            async def call() -> None:
                result = await client.call_tool("echo", ARGUMENTS)
                content = result.content[0]
                _check_text(getattr(content, "text", None))

            return await _measure_anyio(call, plan), version


def _run_mcp(plan: Plan, backend: McpBackend, mode: McpMode, structured: bool) -> Outcome:
    import anyio

    return anyio.run(_bench_mcp, plan, mode, structured, backend=backend)


# --------------------------------------------------------------------------
# (c) trio_mcp.
# --------------------------------------------------------------------------


async def _bench_trio_mcp(plan: Plan, era: Era) -> Outcome:
    import trio_mcp
    from trio_mcp.testing import open_memory_client

    server = trio_mcp.Server("bench", version="1.0")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    # The era is pinned: the client's default, "auto", would probe and settle
    # on 2026-07-28 with this server, so an unpinned row is a modern row.
    with trio.fail_after(plan.timeout):
        async with open_memory_client(server, era=era) as client:
            if client.era != era:
                raise CheckFailed(f"era {era!r} requested, {client.era!r} negotiated")

            async def call() -> None:
                result = await client.call_tool("echo", ARGUMENTS)
                content = result.content[0]
                _check_text(getattr(content, "text", None))

            return await _measure_trio(call, plan), client.protocol_version


def trio_mcp_version() -> str | None:
    try:
        import trio_mcp
    except ImportError:
        return None
    version: object = getattr(trio_mcp, "__version__", None)
    return version if isinstance(version, str) else "unknown version"


# --------------------------------------------------------------------------
# Driver and report.
# --------------------------------------------------------------------------


def _describe(exc: BaseException) -> str:
    """Name the leaf exceptions: a nursery's ExceptionGroup says nothing by itself."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


def _attempt(
    result: SubjectResult, run: Callable[[], Outcome | list[Measurement]], verbose: bool
) -> None:
    """Run one subject; a failure is recorded, reported and never fatal.

    *run* returns the measurements, with the negotiated protocol version when
    it knows one (the scripts that reuse this one return bare measurements).
    """
    print(f"  running {result.label} ...", file=sys.stderr, flush=True)
    try:
        outcome = run()
        if isinstance(outcome, tuple):
            result.measurements, result.protocol_version = outcome
        else:
            result.measurements = outcome
    except ImportError as exc:
        result.error = f"not importable ({exc}); did you `.venv/bin/pip install -e '.[bench]'`?"
    except (TimeoutError, trio.TooSlowError):
        result.error = "failed: timed out (see --timeout)"
    except Exception as exc:  # a broken subject must not hide the others' numbers
        result.error = f"failed: {_describe(exc)}"
        if verbose:
            traceback.print_exc()
        else:
            result.error += " (-v for the traceback)"
    if result.error is not None:
        print(f"  !! {result.label} {result.error}", file=sys.stderr, flush=True)


def subject_key(subject: str, era: str) -> str:
    """``trio_mcp@modern``: the key of one subject's row pair in one era."""
    return f"{subject}@{era}"


def run_all(args: argparse.Namespace) -> list[SubjectResult]:
    plan = Plan(
        calls=args.calls, concurrency=args.concurrency, warmup=args.warmup, timeout=args.timeout
    )
    mcp_backend: McpBackend = args.mcp_backend
    structured: bool = args.mcp_structured
    eras: list[Era] = args.eras
    version = mcp_version()
    mcp_detail = f"mcp {version or '(not installed)'}, {mcp_backend}"
    if structured:
        mcp_detail += ", structured output"
    ours_detail = f"trio_mcp {trio_mcp_version() or ''}".rstrip()

    def bind_mcp(mode: McpMode) -> Callable[[], Outcome]:
        return lambda: _run_mcp(plan, mcp_backend, mode, structured)

    def bind_ours(era: Era) -> Callable[[], Outcome]:
        return lambda: trio.run(_bench_trio_mcp, plan, era)

    results: list[SubjectResult] = []
    if "baseline" in args.subjects:
        baseline = SubjectResult("baseline", "(a) baseline", "trio channels + orjson")
        _attempt(baseline, lambda: trio.run(_bench_baseline, plan), args.verbose)
        results.append(baseline)
    if "mcp" in args.subjects:
        for era in eras:
            sdk = SubjectResult(
                subject_key("mcp", era),
                f"(b) mcp {era}",
                f"{mcp_detail}, in-memory streams, {ERA_NOTES[era]}",
                era=era,
            )
            _attempt(sdk, bind_mcp(era), args.verbose)
            results.append(sdk)
        if args.mcp_direct:
            direct = SubjectResult(
                "mcp_direct", "(b') mcp direct", f"{mcp_detail}, no JSON-RPC", era="modern"
            )
            _attempt(direct, bind_mcp("direct"), args.verbose)
            results.append(direct)
    if "trio_mcp" in args.subjects:
        for era in eras:
            ours = SubjectResult(
                subject_key("trio_mcp", era),
                f"(c) trio_mcp {era}",
                f"{ours_detail}, {ERA_NOTES[era]}",
                era=era,
            )
            _attempt(ours, bind_ours(era), args.verbose)
            results.append(ours)
    return results


def _ratio(
    numerator: SubjectResult | None, denominator: SubjectResult | None, pattern: str
) -> float | None:
    if numerator is None or denominator is None:
        return None
    top, bottom = numerator.rate(pattern), denominator.rate(pattern)
    if top is None or bottom is None or bottom == 0:
        return None
    return top / bottom


HEADLINE: Final = "src/trio_mcp/mcp"
"""Ratios whose name starts with this are checked against ``--target``."""


def _ratio_pairs(results: list[SubjectResult]) -> dict[str, tuple[str, str]]:
    """Every ratio worth printing for the subjects and eras that were requested."""
    present = {r.key for r in results}
    pairs: dict[str, tuple[str, str]] = {}
    for era in ERAS:
        pairs[f"{HEADLINE} {era}"] = (subject_key("trio_mcp", era), subject_key("mcp", era))
    for subject in ("trio_mcp", "mcp"):
        pairs[f"{subject} modern/legacy"] = (
            subject_key(subject, "modern"),
            subject_key(subject, "legacy"),
        )
    for era in ERAS:
        for subject in ("trio_mcp", "mcp"):
            pairs[f"{subject}/baseline {era}"] = (subject_key(subject, era), "baseline")
    return {
        name: (top, bottom)
        for name, (top, bottom) in pairs.items()
        if top in present and bottom in present
    }


def _ratios(results: list[SubjectResult]) -> dict[str, dict[str, float | None]]:
    by_key = {r.key: r for r in results}
    return {
        name: {
            pattern: _ratio(by_key.get(top), by_key.get(bottom), pattern)
            for pattern in (SEQUENTIAL, CONCURRENT)
        }
        for name, (top, bottom) in _ratio_pairs(results).items()
    }


def render_table(results: list[SubjectResult], args: argparse.Namespace, target: float) -> str:
    lines = [
        f"In-memory tools/call round trips: echo {ARGUMENTS}, "
        f"{args.calls} calls per row after {args.warmup} warm-up calls",
        f"Python {platform.python_version()}, trio {trio.__version__}, "
        f"{platform.system()} {platform.machine()}",
        "",
    ]
    header = f"{'subject':<21} {'pattern':<15} {'calls/s':>10} {'p50 ms':>9} {'p99 ms':>9}  notes"
    lines += [header, "-" * len(header)]
    for r in results:
        if r.error is not None:
            lines.append(f"{r.label:<21} {'-':<15} {'-':>10} {'-':>9} {'-':>9}  {r.error}")
            continue
        for i, m in enumerate(r.measurements):
            pattern = SEQUENTIAL if m.pattern == SEQUENTIAL else f"{CONCURRENT} x{m.concurrency}"
            if i == 0:
                note = r.detail
            elif i == 1 and r.protocol_version is not None:
                note = f"protocol {r.protocol_version}"
            else:
                note = ""
            lines.append(
                f"{r.label if i == 0 else '':<21} {pattern:<15} {m.calls_per_s:>10,.0f} "
                f"{m.p50_ms:>9.3f} {m.p99_ms:>9.3f}  {note}"
            )
    lines.append("")
    for name, by_pattern in _ratios(results).items():
        cells = [
            f"{pattern} {'n/a' if value is None else f'{value:.2f}x'}"
            for pattern, value in by_pattern.items()
        ]
        line = f"throughput {name:<25} " + ", ".join(cells)
        if name.startswith(HEADLINE):
            values = [v for v in by_pattern.values() if v is not None]
            if values:
                verdict = "met" if min(values) >= target else "NOT met"
                line += f"   (target >= {target:g}x: {verdict})"
            else:
                line += "   (needs both mcp and trio_mcp numbers)"
        lines.append(line)
    return "\n".join(line.rstrip() for line in lines)


def render_json(results: list[SubjectResult], args: argparse.Namespace) -> str:
    document = {
        "benchmark": "inmemory",
        "work": {"method": "tools/call", "tool": "echo", "arguments": ARGUMENTS},
        "config": {
            "calls": args.calls,
            "concurrency": args.concurrency,
            "warmup": args.warmup,
            "subjects": args.subjects,
            "eras": args.eras,
            "mcp_backend": args.mcp_backend,
            "mcp_structured": args.mcp_structured,
            "mcp_direct": args.mcp_direct,
        },
        "environment": {
            "python": platform.python_version(),
            "trio": trio.__version__,
            "mcp": mcp_version(),
            "trio_mcp": trio_mcp_version(),
            "platform": platform.platform(),
        },
        "subjects": [asdict(r) for r in results],
        "ratios": _ratios(results),
    }
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode()


def _int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="In-memory tools/call round trips: baseline vs mcp SDK vs trio_mcp."
    )
    parser.add_argument(
        "--calls",
        type=_int_at_least(1),
        default=10_000,
        help="calls per measured row (default 10000)",
    )
    parser.add_argument(
        "--concurrency",
        type=_int_at_least(1),
        default=64,
        help="callers in the concurrent rows (default 64)",
    )
    parser.add_argument(
        "--warmup",
        type=_int_at_least(0),
        default=1000,
        help="unmeasured calls per subject before its rows (default 1000)",
    )
    parser.add_argument(
        "--only",
        dest="subjects",
        action="append",
        choices=["baseline", "mcp", "trio_mcp"],
        help="run only this subject (repeatable; default all three)",
    )
    parser.add_argument(
        "--era",
        dest="eras",
        action="append",
        choices=list(ERAS),
        help="protocol era of the mcp and trio_mcp rows: legacy (initialize handshake) or "
        "modern (2026-07-28); repeatable (default both)",
    )
    parser.add_argument(
        "--mcp-backend",
        choices=["asyncio", "trio"],
        default="asyncio",
        help="anyio backend the mcp SDK runs on (default asyncio)",
    )
    parser.add_argument(
        "--mcp-structured",
        action="store_true",
        help="let the mcp tool also return structuredContent (its default for '-> str'), "
        "which the client validates against the output schema on every call",
    )
    parser.add_argument(
        "--mcp-direct",
        action="store_true",
        help="also measure mcp's default in-process mode (DirectDispatcher, no JSON-RPC)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds one subject may take before it is abandoned as failed (default 120)",
    )
    parser.add_argument(
        "--target", type=float, default=3.0, help="src/trio_mcp/mcp throughput target (default 3)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="print tracebacks of failing subjects"
    )
    args = parser.parse_args(argv)
    if args.subjects is None:
        args.subjects = ["baseline", "mcp", "trio_mcp"]
    if args.eras is None:
        args.eras = list(ERAS)
    else:
        args.eras = [era for era in ERAS if era in args.eras]  # fixed order, no repeats
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    results = run_all(args)
    if args.json:
        print(render_json(results, args))
    else:
        print(render_table(results, args, args.target))
    # Every requested subject must have run for the exit status to be 0.
    return 1 if any(r.error is not None for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
