"""What telemetry costs per call: off, the OpenTelemetry API with no SDK (the
default when the ``otel`` extra is installed: a no-op), and native with the
SDK recording every span into its in-memory exporter and every metric into an
in-memory reader; and, to tell the chain's own cost apart, a middleware that
does nothing on each side (``chain``) -- in process (the in-memory pair) and over stdio (a real
subprocess, the server's telemetry in the same mode as the client's).

Each row: sequential ``tools/call`` of an ``echo`` tool, ``--calls`` calls,
best of ``--rounds`` rounds; per call the median and the mean, in
microseconds. The SDK can only be installed once per process, so the native
rows run last.

Usage: .venv/bin/python bench/telemetry.py [--calls 2000] [--rounds 3] [--era legacy|modern]
       (--serve MODE: the stdio server this script spawns)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import trio

import trio_mcp
from trio_mcp.testing import open_memory_client

MODES = ("off", "chain", "noop", "native")


class _Nothing:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc_info: object) -> None:
        return None


def nothing(call: object) -> _Nothing:
    """A middleware that does nothing: what the chain alone costs."""
    return _Nothing()


def install_sdk() -> Callable[[], int]:
    """Install the SDK globally with in-memory exporters; returns how many
    spans it holds (they are dropped as they are counted)."""
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))

    def drain() -> int:
        count = len(exporter.get_finished_spans())
        exporter.clear()
        return count

    return drain


def build_server(mode: str) -> trio_mcp.Server:
    server = trio_mcp.Server("bench", telemetry="off" if mode in ("off", "chain") else "native")
    if mode == "chain":
        server.add_middleware(nothing)

    @server.tool()
    async def echo(text: str) -> str:
        return text

    return server


def serve(mode: str) -> None:
    if mode == "native":
        install_sdk()
    build_server(mode).run_stdio()


async def measure(
    opened: Callable[[], AbstractAsyncContextManager[trio_mcp.Client]], calls: int, rounds: int
) -> tuple[float, float]:
    best: tuple[float, float] | None = None
    async with opened() as client:
        for _ in range(50):  # warm up
            await client.call_tool("echo", {"text": "hello"})
        for _ in range(rounds):
            times = []
            for _ in range(calls):
                started = time.perf_counter()
                await client.call_tool("echo", {"text": "hello"})
                times.append(time.perf_counter() - started)
            row = (statistics.median(times) * 1e6, statistics.fmean(times) * 1e6)
            best = row if best is None or row[0] < best[0] else best
    assert best is not None
    return best


async def main(calls: int, rounds: int, era: str) -> None:
    print(f"python {sys.version.split()[0]}, trio_mcp {trio_mcp.__version__}, era {era}")
    print(f"{'transport':<10} {'telemetry':<10} {'median us':>10} {'mean us':>10}  spans/call")
    drain: Callable[[], int] | None = None
    for mode in MODES:
        if mode == "native":
            drain = install_sdk()
        telemetry = "off" if mode in ("off", "chain") else "native"
        chain = [nothing] if mode == "chain" else []

        def in_memory(mode: str = mode, telemetry: str = telemetry, chain: Any = chain) -> Any:
            return open_memory_client(
                build_server(mode), era=era, telemetry=telemetry, middleware=chain
            )

        @asynccontextmanager
        async def over_stdio(
            mode: str = mode, telemetry: str = telemetry, chain: Any = chain
        ) -> AsyncIterator[trio_mcp.Client]:
            async with trio_mcp.open_stdio_client(
                sys.executable,
                [__file__, "--serve", mode],
                env={"PYTHONPATH": os.pathsep.join(sys.path)},
                era=era,
                telemetry=telemetry,
                middleware=chain,
            ) as client:
                yield client

        for transport, opened in (("memory", in_memory), ("stdio", over_stdio)):
            if drain is not None:
                drain()
            median, mean = await measure(opened, calls, rounds)
            spans = "-" if drain is None else f"{drain() / ((calls * rounds) + 50):.1f}"
            print(f"{transport:<10} {mode:<10} {median:>10.1f} {mean:>10.1f}  {spans}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--era", choices=("legacy", "modern"), default="legacy")
    parser.add_argument("--serve", choices=MODES)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
    else:
        trio.run(main, args.calls, args.rounds, args.era)
