"""Helpers for the tests of ``trio-mcp check``: servers to point it at, and
what a report says. Plain functions, not fixtures."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import trio

from trio_mcp._check import Options, Outcome, Report
from trio_mcp._check._checks import ALL_CHECKS

#: The interop tests' helpers (npm installs of the TypeScript SDKs) are reused
#: here; pytest puts only each test's own directory on the path.
INTEROP = Path(__file__).resolve().parent.parent / "interop"
if str(INTEROP) not in sys.path:
    sys.path.append(str(INTEROP))

#: Bounds for the tests: shorter than the command's defaults (10 s, 5 s), so a
#: failing check fails fast, and still far above what a correct server needs
#: (a server's start-up has a bound of its own, ``STARTUP_TIMEOUT``).
#: The servers these tests check are the tests' own (the bundled examples, the
#: official SDKs' fixtures), whose tools are harmless: the checker may call
#: the unannotated ones.
OPTIONS = Options(timeout=3.0, exit_timeout=4.0, call_unannotated_tools=True)
#: Bound on a server printing its URL, and on it exiting after SIGTERM.
NOT_HUNG = 30.0
URL_LINE = "MCP over Streamable HTTP at "


def outcomes(report: Report) -> dict[tuple[str, str], Outcome]:
    return {(r.era, r.check_id): r.outcome for r in report.results}


def not_passed(report: Report) -> list[str]:
    """Every result that is not a PASS, as one readable line each."""
    return [
        f"{r.outcome.value} {r.era} {r.check_id}: {r.detail}"
        for r in report.results
        if r.outcome is not Outcome.PASS
    ]


def applicable(transport: str, eras: Sequence[str] = ("legacy", "modern")) -> set[tuple[str, str]]:
    """Every (era, check id) that runs on *transport* in *eras*."""
    return {
        (era, c.id)
        for era in eras
        for c in ALL_CHECKS
        if era in c.eras and transport in c.transports
    }


async def _drain(stream: trio.abc.ReceiveStream) -> None:
    with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
        while await stream.receive_some(1 << 16):
            pass


@contextlib.asynccontextmanager
async def http_server(argv: Sequence[str], *, from_stdout: bool = False) -> AsyncIterator[str]:
    """Run an HTTP server (*argv*, loopback, port 0) and yield the URL it prints
    (on stderr after :data:`URL_LINE`, or as the first stdout line with
    *from_stdout*); SIGTERM and reap it after (killed if it does not exit)."""
    process = await trio.lowlevel.open_process(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    assert process.stdin is not None
    stream = process.stdout if from_stdout else process.stderr
    try:
        async with trio.open_nursery() as nursery:
            buffer = b""
            with trio.fail_after(NOT_HUNG):
                while b"\n" not in buffer or (not from_stdout and URL_LINE.encode() not in buffer):
                    chunk = await stream.receive_some(1 << 16)
                    assert chunk, f"{argv} ended before printing its URL: {buffer!r}"
                    buffer += chunk
            text = buffer.decode()
            if from_stdout:
                url = text.splitlines()[0].strip()
            else:
                url = text.split(URL_LINE, 1)[1].split()[0]
            nursery.start_soon(_drain, process.stdout)
            nursery.start_soon(_drain, process.stderr)
            try:
                yield url
            finally:
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await process.stdin.aclose()
            process.send_signal(signal.SIGTERM)
            with trio.move_on_after(NOT_HUNG):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
            for pipe in (process.stdout, process.stderr):
                await pipe.aclose()


def example(name: str) -> list[str]:
    """The command that serves a bundled example over stdio."""
    return [sys.executable, "-m", f"trio_mcp.examples.{name}"]
