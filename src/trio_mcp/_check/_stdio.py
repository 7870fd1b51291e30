"""The server under test as a stdio subprocess, in a process group of its own.

Each server is spawned without a shell, in a new session (so a new process
group whose id is its pid), its stderr discarded. :func:`open_stdio` kills the
whole group (and anything still in its session) on every exit path, shielded
and bounded, and reaps the process; :func:`leftovers` says which processes of
the group or session still run, which the shutdown checks report.

Cancellation: cancelling :func:`open_stdio`'s body kills the server; every
wait on the process is bounded.

Spec: SI-01, SI-10, LC-16.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

import trio

from ._wire import Wire

#: Bound on reaping a killed server.
REAP_TIMEOUT = 5.0
#: Bytes asked of the server's stdout per read.
READ_SIZE = 1 << 16


def leftovers(leader: int) -> list[int]:
    """Processes (not zombies) of the process group or session *leader* began.

    Linux ``/proc``; elsewhere only the group is probed (``killpg(pgid, 0)``),
    and a live group is reported as ``[leader]``.
    """
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        try:
            os.killpg(leader, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [leader]
    found: list[int] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended meanwhile
        state, _ppid, pgrp, session = fields[0], fields[1], int(fields[2]), int(fields[3])
        if state != "Z" and leader in (pgrp, session):
            found.append(int(entry.name))
    return sorted(found)


def kill_all(leader: int) -> None:
    """SIGKILL the group *leader* began and every process left in its session."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, signal.SIGKILL)
    for pid in leftovers(leader):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


class StdioWire(Wire):
    """A raw exchange with one server process over its stdin and stdout."""

    transport = "stdio"

    def __init__(self, process: trio.Process) -> None:
        super().__init__()
        self.process = process
        self.pid = process.pid
        self.input_closed = False

    async def send_frames(self, frames: list[bytes]) -> None:
        assert self.process.stdin is not None
        async with self.send_lock:
            await self._send(frames)

    async def _send(self, frames: list[bytes]) -> None:
        assert self.process.stdin is not None
        for frame in frames:
            self.note("->", frame.decode("utf-8", "replace"))
        data = b"".join(frame if frame.endswith(b"\n") else frame + b"\n" for frame in frames)
        await self.process.stdin.send_all(data)

    async def close_input(self) -> None:
        """Close the server's stdin (end of input)."""
        assert self.process.stdin is not None
        self.input_closed = True
        self.note("--", "stdin closed")
        await self.process.stdin.aclose()

    def signal(self, signum: int) -> None:
        self.note("--", f"sent {signal.Signals(signum).name}")
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signum)

    async def wait_exit(self, within: float) -> int | None:
        """The exit status, or None if the process still runs after *within* s."""
        with trio.move_on_after(within):
            status = await self.process.wait()
            self.note("--", f"the server exited with status {status}")
            return status
        return None

    async def read_stdout(self) -> None:
        """Split the server's stdout into lines until it ends."""
        assert self.process.stdout is not None
        buffer = b""
        try:
            while chunk := await self.process.stdout.receive_some(READ_SIZE):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        self.arrived(line.rstrip(b"\r"))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        if buffer.strip():
            self.junk.append(f"a partial last line: {buffer[:80]!r}")
        self.end()


@contextlib.asynccontextmanager
async def open_stdio(
    command: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None
) -> AsyncIterator[StdioWire]:
    """Spawn *command* in a new session and yield a wire to it; kill it after."""
    process = await trio.lowlevel.open_process(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=dict(os.environ if env is None else env),
        cwd=cwd,
    )
    wire = StdioWire(process)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wire.read_stdout)
            try:
                yield wire
            finally:
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            kill_all(process.pid)
            with trio.move_on_after(REAP_TIMEOUT):
                await process.wait()
