"""Where the time of one in-process ``tools/call`` goes: counts and a profile.

Runs trio_mcp's in-memory echo (the ``(c) trio_mcp`` row of ``inmemory.py``)
sequentially, or with ``--concurrency N`` calls in flight (N tasks sharing
the calls), and prints, per call:

* microseconds, wall and CPU (this process's CPU time: on a shared machine
  far steadier than the wall time, which other processes' load inflates);
* task steps (a Trio task resumed: each hand-off between tasks costs one),
  tasks spawned, and cancel scopes entered;
* Python function calls (cProfile's count, exact like the others);
* with ``--profile``, the top functions of a cProfile run by own time.

The counts are exact and do not depend on the machine's load: they are what
to compare before and after a change to the session's hot path.

Run: ``.venv/bin/python bench/profile_inmemory.py [--era legacy|modern]
[--calls N] [--concurrency N] [--profile]``.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from typing import Any

import trio

ARGUMENTS = {"text": "hello"}


class _Counter(trio.abc.Instrument):
    def __init__(self) -> None:
        self.steps = 0
        self.spawned = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.steps += 1

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.spawned += 1


async def _run(
    era: str, calls: int, concurrency: int, counter: _Counter, profile: cProfile.Profile | None
) -> tuple[float, float]:
    import trio_mcp
    from trio_mcp.testing import open_memory_client

    server = trio_mcp.Server("bench", version="1.0")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    async with open_memory_client(server, era=era) as client:
        for _ in range(200):  # warm-up
            await client.call_tool("echo", ARGUMENTS)
        scopes = _count_scopes()
        trio.lowlevel.add_instrument(counter)
        if profile is not None:
            profile.enable()
        start = time.perf_counter()
        cpu_start = time.process_time()

        async def worker(share: int) -> None:
            for _ in range(share):
                result = await client.call_tool("echo", ARGUMENTS)
                assert getattr(result.content[0], "text", None) == "hello"

        if concurrency == 1:
            await worker(calls)
        else:
            async with trio.open_nursery() as nursery:
                for _ in range(concurrency):
                    nursery.start_soon(worker, calls // concurrency)
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        if profile is not None:
            profile.disable()
        trio.lowlevel.remove_instrument(counter)
        counter.scopes = scopes.stop()  # type: ignore[attr-defined]
    return elapsed, cpu


class _ScopeCount:
    """Counts ``trio.CancelScope.__enter__`` calls while installed."""

    def __init__(self) -> None:
        self.count = 0
        self._original: Any = trio.CancelScope.__enter__
        original = self._original

        def counting_enter(scope: trio.CancelScope) -> trio.CancelScope:
            self.count += 1
            result: trio.CancelScope = original(scope)
            return result

        trio.CancelScope.__enter__ = counting_enter  # type: ignore[method-assign]

    def stop(self) -> int:
        trio.CancelScope.__enter__ = self._original  # type: ignore[method-assign]
        return self.count


def _count_scopes() -> _ScopeCount:
    return _ScopeCount()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--era", choices=["legacy", "modern"], default="legacy")
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=1, help="calls in flight")
    parser.add_argument("--profile", action="store_true", help="print a cProfile by own time")
    parser.add_argument("--top", type=int, default=30, help="rows of the profile")
    args = parser.parse_args()
    concurrency = max(1, args.concurrency)
    calls = args.calls // concurrency * concurrency
    counter = _Counter()
    # The counts run first, unprofiled (the profiler would slow the timing).
    elapsed, cpu = trio.run(_run, args.era, calls, concurrency, counter, None)
    profile = cProfile.Profile()
    trio.run(_run, args.era, calls, concurrency, _Counter(), profile)
    stats = pstats.Stats(profile)
    pattern = "sequential" if concurrency == 1 else f"{concurrency} in flight"
    print(
        f"trio_mcp {args.era}, in-memory, {pattern}: {elapsed / calls * 1e6:.1f} us/call wall, "
        f"{cpu / calls * 1e6:.1f} us/call CPU, "
        f"{counter.steps / calls:.2f} task steps/call, "
        f"{counter.spawned / calls:.2f} tasks spawned/call, "
        f"{counter.scopes / calls:.2f} cancel scopes entered/call, "  # type: ignore[attr-defined]
        f"{stats.total_calls / calls:.0f} function calls/call"  # type: ignore[attr-defined]
    )
    if args.profile:
        stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
