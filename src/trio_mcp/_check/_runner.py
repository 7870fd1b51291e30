"""Run the checks against one server: find its eras, then each check in turn.

The runner first finds which eras the server speaks (``initialize`` on one
connection, ``server/discover`` on another); those connections become the
eras' shared connections, on which the checks that need no connection of
their own run one after the other (a shared connection that dies is opened
again for the next check). Every check runs under its own bound; whatever
it raises becomes its result, so one check can never stop the run.

Cancellation: cancelling :func:`run_checks` closes every connection (kills
every server process) and returns nothing.

Spec: VR-11, SI-14 (the era probe), and the rows of each check.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterable
from typing import Any

import attrs
import httpx
import trio

from ._checks import ALL_CHECKS
from ._definition import Check
from ._model import (
    LEGACY,
    MODERN,
    CheckFailed,
    CheckResult,
    CheckSkipped,
    FrameRecord,
    Outcome,
)
from ._probe import STARTUP_TIMEOUT, Options, Probe
from ._stdio import StdioWire
from ._target import Target
from ._wire import Wire

#: Bound on the era probes.
PROBE_TIMEOUT = 10.0
#: Frames kept per result (the last ones).
MAX_FRAMES = 40
#: Checks with connections of their own running at once.
FRESH_AT_ONCE = 3
ERA_NAMES = {LEGACY: "handshake era", MODERN: "2026-07-28"}


@attrs.frozen
class Report:
    """Everything one run found."""

    target: str
    transport: str
    eras: tuple[str, ...]
    results: tuple[CheckResult, ...]
    seconds: float
    #: The run was stopped (Ctrl+C) before every check finished: *results*
    #: holds those that did.
    interrupted: bool = False

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.outcome is Outcome.FAIL]

    def count(self, outcome: Outcome) -> int:
        return sum(1 for r in self.results if r.outcome is outcome)

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "transport": self.transport,
            "eras": list(self.eras),
            "seconds": round(self.seconds, 3),
            "interrupted": self.interrupted,
            "summary": {o.value.lower(): self.count(o) for o in Outcome},
            "results": [r.to_json() for r in self.results],
        }


def select(checks: Iterable[Check], only: Collection[str], skip: Collection[str]) -> list[Check]:
    """The checks chosen by ``--only`` and ``--skip`` (ids, or areas such as ``cancel``)."""

    def named(check: Check, names: Collection[str]) -> bool:
        return any(check.id == n or check.id.startswith(f"{n}.") for n in names)

    return [c for c in checks if (not only or named(c, only)) and not named(c, skip)]


class _Run:
    """One run: the eras' shared connections, the findings the checks share."""

    def __init__(self, target: Target, options: Options, eras: Collection[str]) -> None:
        self.target = target
        self.options = options
        self.eras = [era for era in (LEGACY, MODERN) if era in eras]
        self.findings: dict[str, Any] = {
            "stdio-wires": [],
            "pids": {era: set() for era in (LEGACY, MODERN)},
        }
        self.shared: dict[str, Wire] = {}
        self.stacks: dict[str, contextlib.AsyncExitStack] = {}
        self.probed = {era: trio.Event() for era in self.eras}
        self.results: dict[tuple[int, int], CheckResult] = {}
        #: Connections opened at once by checks that need their own (two cores
        #: spawning a dozen interpreters would slow every timed check down).
        self.limiter = trio.CapacityLimiter(FRESH_AT_ONCE)

    def _remember(self, wire: Wire, era: str) -> None:
        if isinstance(wire, StdioWire) and wire not in self.findings["stdio-wires"]:
            self.findings["stdio-wires"].append(wire)
            self.findings["pids"][era].add(wire.pid)

    async def connect(self, era: str, stack: contextlib.AsyncExitStack) -> Wire:
        wire = await stack.enter_async_context(self.target.connect(era))
        self._remember(wire, era)
        return wire

    async def probe_era(self, era: str, stack: contextlib.AsyncExitStack) -> Wire | None:
        """A connection in *era* if the server speaks it (kept as the shared one)."""
        inner = contextlib.AsyncExitStack()
        await inner.__aenter__()
        try:
            wire = await self.connect(era, inner)
            probe = Probe(self.target, era, self.options, self.findings, inner, wire)
            with trio.move_on_after(PROBE_TIMEOUT):
                if era == LEGACY:
                    opened = await probe.handshake(wire)
                    self.findings["initialize-version"] = opened.get("protocolVersion")
                    self.findings["initialize-capabilities"] = opened.get("capabilities")
                    stack.push_async_callback(inner.aclose)
                    return wire
                answer = await probe.request("server/discover", within=PROBE_TIMEOUT)
                result = answer.get("result")
                versions = result.get("supportedVersions") if isinstance(result, dict) else None
                if isinstance(versions, list) and "2026-07-28" in versions:
                    stack.push_async_callback(inner.aclose)
                    return wire
        except Exception as raised:  # not this era: whatever went wrong says so
            if not isinstance(
                unwrap(raised), CheckFailed | OSError | trio.BrokenResourceError | httpx.HTTPError
            ):
                raise
        await inner.aclose()
        return None

    async def shared_wire(self, era: str) -> Wire:
        """The era's shared connection, opened again if its server died in a
        check before. Called by the era's own task only, outside every check's
        scope: the new connection lives in the era's stack."""
        wire = self.shared[era]
        if not wire.ended:
            return wire
        stack = self.stacks[era]
        try:
            wire = await self.connect(era, stack)
        except (OSError, httpx.HTTPError):
            return self.shared[era]  # the check that needs it fails on the dead one
        self.shared[era] = wire
        if era == LEGACY:
            probe = Probe(self.target, era, self.options, self.findings, stack, wire)
            with (
                trio.move_on_after(PROBE_TIMEOUT),
                contextlib.suppress(
                    CheckFailed, trio.BrokenResourceError, trio.ClosedResourceError
                ),
            ):
                await probe.handshake(wire)
        return wire

    def _record(self, key: tuple[int, int], result: CheckResult) -> None:
        self.results[key] = result
        if self.on_result is not None:
            self.on_result(result)

    on_result: Callable[[CheckResult], None] | None = None
    on_eras: Callable[[tuple[str, ...]], None] | None = None

    async def run_era(self, era: str, checks: list[Check]) -> None:
        """Probe *era*, then run its checks: shared ones in turn, fresh ones beside them."""
        index = self.eras.index(era)
        async with contextlib.AsyncExitStack() as stack:
            wire = await self.probe_era(era, stack)
            if wire is not None:
                self.shared[era] = wire
            self.probed[era].set()
            for other in self.eras:
                await self.probed[other].wait()
            spoken = tuple(e for e in self.eras if e in self.shared)
            if "eras" not in self.findings:
                self.findings["eras"] = spoken
                if self.on_eras is not None:
                    self.on_eras(spoken)
            mine = [(n, c) for n, c in enumerate(checks) if era in c.eras]
            if wire is None:
                for n, check in mine:
                    if spoken:
                        self._record((index, n), _skipped(check, self.target, era))
                return
            # Listed once, before the checks that share the list (a failure
            # shows again in the first check that needs the tools).
            with contextlib.suppress(Exception), trio.move_on_after(PROBE_TIMEOUT):
                await Probe(self.target, era, self.options, self.findings, stack, wire).tools()

            async def fresh(n: int, check: Check) -> None:
                async with self.limiter:
                    self._record((index, n), await self.run_one(check, era, self.shared[era]))

            async with trio.open_nursery() as nursery:
                for n, check in mine:
                    if check.fresh and not check.last:
                        nursery.start_soon(fresh, n, check)
                # A shared connection opened again lives in a stack of this
                # block's own, so that it is entered and left inside it.
                async with contextlib.AsyncExitStack() as respawns:
                    self.stacks[era] = respawns
                    # The shared checks in turn, those that must come last after them.
                    for n, check in sorted(mine, key=lambda item: item[1].last):
                        if not check.fresh:
                            shared = await self.shared_wire(era)
                            self._record((index, n), await self.run_one(check, era, shared))
            # Then the fresh checks that read what every other check recorded.
            for n, check in mine:
                if check.fresh and check.last:
                    self._record((index, n), await self.run_one(check, era, self.shared[era]))

    async def run_one(self, check: Check, era: str, shared: Wire) -> CheckResult:
        """Run one check under its bound; whatever it raises becomes its result."""
        started = trio.current_time()
        outcome, detail = Outcome.FAIL, ""
        frames: list[FrameRecord] = []
        bound = self.options.timeout * 3 + 2 * self.options.exit_timeout + STARTUP_TIMEOUT
        try:
            # The bound is outside the stack: the connections a check opens are
            # nurseries, entered and left within it.
            with trio.fail_after(bound):
                async with contextlib.AsyncExitStack() as stack:
                    marks = {id(shared): len(shared.frames)}
                    probe = Probe(self.target, era, self.options, self.findings, stack, shared)
                    if check.fresh:
                        probe.wires.clear()
                    try:
                        detail = await check.run(probe)
                        outcome = Outcome.PASS
                    finally:
                        for wire in probe.wires:
                            self._remember(wire, era)
                            frames.extend(wire.frames[marks.get(id(wire), 0) :])
        except Exception as raised:  # one check's failure never ends the run
            exc = unwrap(raised)
            if isinstance(exc, CheckSkipped):
                outcome = Outcome.SKIP
            detail = describe(exc, bound)
        return CheckResult(
            check.id,
            check.title,
            check.rows,
            self.target.transport,
            era,
            outcome,
            detail,
            trio.current_time() - started,
            tuple(frames[-MAX_FRAMES:]),
        )


def unwrap(exc: BaseException) -> BaseException:
    """The one exception inside nested single-exception groups (nurseries wrap)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def describe(exc: BaseException, bound: float) -> str:
    """What a check's exception says about the server, in one line."""
    if isinstance(exc, CheckFailed | CheckSkipped):
        return str(exc)
    if isinstance(exc, trio.TooSlowError):
        return f"the check did not finish within its bound ({bound:g}s)"
    if isinstance(exc, trio.BrokenResourceError | trio.ClosedResourceError | OSError):
        return f"the connection broke: {type(exc).__name__} {exc}".strip()
    if isinstance(exc, httpx.HTTPError):
        return f"HTTP failed: {type(exc).__name__} {exc}".strip()
    return f"the checker failed: {type(exc).__name__}: {exc}"


async def run_checks(
    target: Target,
    options: Options | None = None,
    *,
    only: Collection[str] = (),
    skip: Collection[str] = (),
    eras: Collection[str] = (LEGACY, MODERN),
    on_result: Callable[[CheckResult], None] | None = None,
    on_eras: Callable[[tuple[str, ...]], None] | None = None,
) -> Report:
    """Run every selected check against *target*, in each era it speaks among *eras*.

    *on_eras* sees the eras the server speaks once they are found (before any
    result); *on_result* sees each result as it is made, so that a caller can
    show it at once and keep what finished if the run is cancelled.
    Cancellation: see the module docstring.
    """
    options = options or Options()
    started = trio.current_time()
    checks = [c for c in select(ALL_CHECKS, only, skip) if target.transport in c.transports]
    run = _Run(target, options, eras)
    run.on_result = on_result
    run.on_eras = on_eras
    async with trio.open_nursery() as nursery:
        for era in run.eras:
            nursery.start_soon(run.run_era, era, checks)
    spoken = tuple(e for e in run.eras if e in run.shared)
    results = [run.results[key] for key in sorted(run.results)]
    if not spoken:
        no_era = CheckResult(
            "era",
            "the server speaks an era",
            ("LC-01", "VR-04"),
            target.transport,
            "-",
            Outcome.FAIL,
            "neither initialize nor server/discover was answered "
            f"within {PROBE_TIMEOUT:g}s: not an MCP server, or not one this checker reaches",
            trio.current_time() - started,
        )
        results.insert(0, no_era)
        if on_result is not None:
            on_result(no_era)
    return Report(
        target.describe(), target.transport, spoken, tuple(results), trio.current_time() - started
    )


def _skipped(check: Check, target: Target, era: str) -> CheckResult:
    return CheckResult(
        check.id,
        check.title,
        check.rows,
        target.transport,
        era,
        Outcome.SKIP,
        f"the server does not speak the {ERA_NAMES[era]}",
        0.0,
    )
