"""The client side of stdio: spawn a server process and talk over its pipes.

Theory of operation
-------------------
:func:`open_stdio_process` spawns the server with no shell, arguments passed
verbatim, in a new session (so in its own process group: launchers such as
``sh -c`` or ``npx`` and everything they start can be signalled together), with
a small safe environment. Before anything is started, an optional
``before_spawn`` hook sees the exact :class:`SpawnRequest` (argv, working
directory, whole environment) and may veto it by raising (X-03: consent or
policy for a command that may come from configuration). A task pumps the
server's stderr line by line to a sink and keeps its last lines, so a server
that floods stderr costs bounded memory (P-14). The yielded
:class:`StdioProcess` is the transport (newline framing over the child's stdin
and stdout).

Closing the transport (what a session does at its end) only closes the child's
stdin, which is quick, so it fits the session's bounded close. Leaving
``open_stdio_process`` then runs the shutdown of SI-10/LC-16, each step bounded
and shielded, also when the caller is being cancelled::

    close stdin -> wait close_grace -> SIGTERM the group -> wait terminate_grace
                -> SIGKILL the group -> reap

while draining (and dropping) stdout, so a server blocked writing, or flooding
its stdout while we close, can still exit and costs no memory (P-09). After the
leader is reaped the group gets SIGKILL, so no grandchild survives it. Which
step ended the process is :attr:`StdioProcess.exit_step`, also reported to
``on_event``.

When the server's stdout ends, ``receive`` waits briefly for the process to
exit: a clean exit (status 0) is end of channel; anything else is
:class:`ServerExited` (a ``BrokenResourceError``) naming the exit status and
the last lines of stderr, so every pending call fails at once with that
reason. :attr:`StdioProcess.read_no_input` then tells a server that failed on
start (it never read what we wrote, so starting it again would fail the same
way) from one that read a request and exited on it.

Spec: SI-01, SI-04, SI-06, SI-10, LC-16 (reliability catalogue: X-01, X-03, P-09,
P-14).
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import inspect
import os
import signal
import subprocess
import sys
import termios
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from types import MappingProxyType
from typing import Any, TypeVar

import attrs
import trio

from .._util import unwrapping
from ..protocol._codec import DEFAULT_MAX_MESSAGE_SIZE
from ._framing import LineChannel

_T = TypeVar("_T")

#: Environment variables passed to the server by default (everything else only on request).
SAFE_ENVIRONMENT = (
    "HOME",
    "LOGNAME",
    "USER",
    "PATH",
    "SHELL",
    "TERM",
    "TMPDIR",
    "TZ",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "SYSTEMROOT",
)

#: Longest stderr line passed on whole (longer ones are split).
STDERR_LINE_LIMIT = 64 * 1024


def take_lines(buffer: bytearray, limit: int) -> Iterator[bytes]:
    """Remove each complete line from *buffer* and yield it, without its newline.

    A line longer than *limit* bytes comes out in pieces of *limit* bytes, the
    same pieces however the input was split into reads; what is left in
    *buffer* is a partial line of at most *limit* bytes. So a server's stderr
    costs at most a limit and a read of memory, whatever it writes (P-14).
    """
    while True:
        # Only a newline within the limit ends a line whole.
        end = buffer.find(b"\n", 0, limit + 1)
        if end >= 0:
            yield bytes(buffer[:end])
            del buffer[: end + 1]
        elif len(buffer) > limit:
            yield bytes(buffer[:limit])
            del buffer[:limit]
        else:
            return


def safe_environment() -> dict[str, str]:
    """The default environment of a spawned server: :data:`SAFE_ENVIRONMENT` from ours.

    Secrets in the parent's environment (tokens, keys) are not passed on unless
    the caller passes them.
    """
    return {name: os.environ[name] for name in SAFE_ENVIRONMENT if name in os.environ}


def _read_only(env: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(env))


@attrs.frozen
class SpawnRequest:
    """What :func:`open_stdio_process` is about to start, for its ``before_spawn`` hook.

    It is exactly what goes to the operating system, untruncated and unquoted
    (show it as is when asking for consent): the process is started from these
    very values, after the hook returns.
    """

    #: The program and its arguments, verbatim (no shell). ``argv[0]`` is the
    #: command as given: without a ``/`` it is looked up on ``env["PATH"]``;
    #: a relative path is taken relative to *cwd*. A policy that must know
    #: which file runs should require an absolute command.
    argv: tuple[str, ...]
    #: The whole environment of the child (read-only).
    env: Mapping[str, str] = attrs.field(converter=_read_only)
    #: The child's working directory (None: ours).
    cwd: str | None


#: A ``before_spawn`` hook: return to allow, raise to veto (sync or async).
BeforeSpawn = Callable[[SpawnRequest], Awaitable[None] | None]


class ExitStep(enum.Enum):
    """What ended the server process."""

    #: It had exited before shutdown began (crashed, or closed on its own).
    EXITED = "exited on its own"
    #: It exited after its stdin was closed (the graceful path).
    STDIN_CLOSED = "exited after stdin was closed"
    #: It exited after SIGTERM to its process group.
    SIGTERM = "exited after SIGTERM"
    #: It had to be killed with SIGKILL.
    SIGKILL = "killed with SIGKILL"


@attrs.frozen
class ProcessEvent:
    """One step of a server process's life, for ``on_event``.

    ``kind`` is one of ``spawned``, ``stdin_closed``, ``sigterm``, ``sigkill``,
    ``exited`` (then ``returncode`` and ``step`` are set).
    """

    #: ``spawned``, ``stdin_closed``, ``sigterm``, ``sigkill`` or ``exited``.
    kind: str
    #: The server process's id.
    pid: int
    #: When, on Trio's clock (``trio.current_time()``).
    at: float
    #: ``exited`` only: the exit status (negative: the signal that ended it).
    returncode: int | None = None
    #: ``exited`` only: what ended the process.
    step: ExitStep | None = None


def describe_returncode(returncode: int | None) -> str:
    """``"status 3"``, ``"signal SIGKILL"`` or ``"still running"``."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"status {returncode}"


def exit_in_words(returncode: int | None, stderr_lines: Sequence[str], when: str = "") -> str:
    """``exited with status 1 (its last stderr line: SyntaxError: ...)``: how a
    server process ended, in words, for an error message; *when* (``" before
    answering"``) goes before the parenthesis."""
    if returncode is None:
        text = "closed its output"
    elif returncode < 0:
        text = f"was killed by {describe_returncode(returncode)}"
    else:
        text = f"exited with {describe_returncode(returncode)}"
    text += when
    last = next((line.strip() for line in reversed(stderr_lines) if line.strip()), None)
    if last is None:
        return f"{text} (it wrote nothing to stderr)"
    return f"{text} (its last stderr line: {last})"


class ServerExited(trio.BrokenResourceError):
    """The server process exited with a failure status (or was killed) and its
    output ended: what ``receive`` raises then. The message names the process,
    its status and its last stderr lines."""

    def __init__(
        self, message: str, *, pid: int, returncode: int | None, stderr_lines: Sequence[str]
    ) -> None:
        super().__init__(message)
        self.pid = pid
        self.returncode = returncode
        self.stderr_lines = tuple(stderr_lines)

    def in_words(self, when: str = "") -> str:
        """``exited with status 1 (its last stderr line: ...)`` (see :func:`exit_in_words`)."""
        return exit_in_words(self.returncode, self.stderr_lines, when)


def _unread_bytes(fd: int) -> int | None:
    """Bytes written to the pipe *fd* (a write end) that its reader has not read
    (None when the system cannot say)."""
    try:
        buffer = bytearray(4)
        fcntl.ioctl(fd, termios.FIONREAD, buffer)
    except (OSError, ValueError):
        return None
    return int.from_bytes(buffer, sys.byteorder)


def stderr_to_our_stderr(label: str) -> Callable[[str], None]:
    """A sink that writes each server stderr line to our stderr, prefixed ``[label]``."""

    def sink(line: str) -> None:
        print(f"[{label}] {line}", file=sys.stderr, flush=True)

    return sink


class StdioProcess(LineChannel):
    """A spawned stdio server: the transport to it, and its process.

    Made by :func:`open_stdio_process`. ``receive``/``send`` frame messages over
    the child's stdout/stdin; ``aclose`` closes the child's stdin (the start of
    the shutdown, which :func:`open_stdio_process` completes).

    Cancellation:
        As :class:`~trio_mcp.transports.LineChannel`. ``aclose`` is shielded
        and leaves stdout open (the shutdown drains it so that the server can
        exit); a task blocked in ``receive`` is woken all the same, with
        :class:`trio.ClosedResourceError`, as the transport contract says.
    """

    def __init__(
        self,
        process: trio.Process,
        *,
        max_message_size: int,
        stderr_tail: int,
        exit_wait: float,
        on_event: Callable[[ProcessEvent], None] | None,
    ) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        super().__init__(process.stdin, process.stdout, max_message_size=max_message_size)
        self.process = process
        self.pid = process.pid
        #: The last lines the server wrote to stderr.
        self.stderr_lines: deque[str] = deque(maxlen=stderr_tail)
        #: What ended the process (None while it runs).
        self.exit_step: ExitStep | None = None
        self.exit_wait = exit_wait
        self._on_event = on_event
        self._stderr_done = trio.Event()
        self._stdin_closed = False
        self._exited_before_close = False
        #: What the server left unread of our writes (see read_no_input).
        self._input_unread: int | None = None
        #: The scope of a receive waiting anywhere but on the pipe (see
        #: :meth:`receive`), so that aclose can wake it.
        self._receiving: trio.CancelScope | None = None

    @property
    def returncode(self) -> int | None:
        """The exit status (negative: killed by that signal), None while it runs."""
        return self.process.returncode

    def _event(self, kind: str, **fields: Any) -> None:
        if self._on_event is not None:
            self._on_event(ProcessEvent(kind, self.pid, trio.current_time(), **fields))

    @property
    def read_no_input(self) -> bool:
        """Whether the server exited without reading anything we wrote: none of
        our writes went through (its stdin was closed), or everything we wrote
        was still in the pipe when its output ended or we closed its stdin. A
        server that fails on start (a syntax error, a missing module) does
        that; one that read a request and exited on it does not. False while
        it runs."""
        if self.returncode is None:
            return False
        written = self._bytes_out - (len(self._tail) if self._tail is not None else 0)
        if written <= 0:
            return True
        return self._input_unread is not None and self._input_unread >= written

    def in_words(self, when: str = "") -> str:
        """``exited with status 1 (its last stderr line: ...)`` (see :func:`exit_in_words`)."""
        return exit_in_words(self.returncode, self.stderr_lines, when)

    def _note_unread_input(self) -> None:
        """Note how much of what we wrote is still in the stdin pipe (while it is open)."""
        stream = self.send_stream
        if stream is not None and not self._stdin_closed and hasattr(stream, "fileno"):
            self._input_unread = _unread_bytes(stream.fileno())

    def describe_exit(self) -> str:
        """``server exited with status 1; last stderr lines: ...`` (for errors)."""
        text = f"server process {self.pid} {describe_returncode(self.returncode)}"
        if self.returncode is not None:
            text = f"server process {self.pid} exited with {describe_returncode(self.returncode)}"
        if self.stderr_lines:
            text += "; last stderr lines: " + " | ".join(self.stderr_lines)
        return text

    async def receive(self) -> bytes:
        # aclose must wake a blocked receive without closing stdout, which the
        # shutdown still drains. A receive parked on the pipe itself is woken
        # by notify_closing (aclose), so the commonest path enters no cancel
        # scope: one a frame was about 5 % of a stdio call's client CPU.
        # The rare waits elsewhere (a stream that is not a file
        # descriptor, the exit status after EOF) keep a scope aclose cancels.
        try:
            if not self._receive_fd:
                return await self._receive_in_scope(super().receive)
            return await super().receive()
        except trio.ClosedResourceError:
            if self._stdin_closed:
                raise trio.ClosedResourceError("the transport was closed while receiving") from None
            raise
        except trio.EndOfChannel:
            if self._stdin_closed:
                raise  # our own shutdown: the exit is reported by exit_step
            # The server closed its stdout: usually it is exiting. Wait a little
            # for its status and last stderr lines, to say why in the error.
            await self._receive_in_scope(self._wait_for_exit)
            self._note_unread_input()
            if self.returncode == 0 or self.returncode is None:
                raise  # a clean close (SI-12) or stdout closed while it runs
            raise ServerExited(
                self.describe_exit(),
                pid=self.pid,
                returncode=self.returncode,
                stderr_lines=self.stderr_lines,
            ) from None

    async def _receive_in_scope(self, wait: Callable[[], Awaitable[_T]]) -> _T:
        """``await wait()`` in a scope :meth:`aclose` cancels: then
        ``ClosedResourceError``. A pipe read cancelled midway loses nothing."""
        with trio.CancelScope() as self._receiving:
            try:
                return await wait()
            finally:
                self._receiving = None
        raise trio.ClosedResourceError("the transport was closed while receiving")

    async def _wait_for_exit(self) -> None:
        with trio.move_on_after(self.exit_wait):
            await self.process.wait()
            await self._stderr_done.wait()

    async def aclose(self) -> None:
        """Close the child's stdin (idempotent); the process is ended by the owner."""
        if self._stdin_closed:
            await trio.lowlevel.checkpoint()
            return
        # Whether it ended before we closed its stdin: that decides between
        # EXITED and STDIN_CLOSED, however late _terminate looks at it.
        self._exited_before_close = self.process.returncode is not None
        if self._exited_before_close:
            self._note_unread_input()
        self._stdin_closed = True
        self._closed = True
        if self._receiving is not None:
            self._receiving.cancel(reason="transport closed")
        if self._receive_fd:
            # Wakes a receive parked on the pipe (ClosedResourceError); the
            # descriptor stays open, and a later wait on it (the drain) works.
            trio.lowlevel.notify_closing(self.receive_stream)  # type: ignore[arg-type]
        assert self.send_stream is not None
        with trio.CancelScope(shield=True):
            await self.send_stream.aclose()
        self._event("stdin_closed")

    async def _pump_stderr(self, sink: Callable[[str], None] | None) -> None:
        stream = self.process.stderr
        assert stream is not None
        buffer = bytearray()
        try:
            while True:
                try:
                    chunk = await stream.receive_some(READ_STDERR)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    chunk = b""
                if not chunk:
                    if buffer:
                        self._stderr_line(bytes(buffer), sink)
                    return
                buffer += chunk
                for line in take_lines(buffer, STDERR_LINE_LIMIT):
                    self._stderr_line(line, sink)
        finally:
            self._stderr_done.set()

    def _stderr_line(self, raw: bytes, sink: Callable[[str], None] | None) -> None:
        line = raw.rstrip(b"\r").decode("utf-8", errors="replace")
        self.stderr_lines.append(line)
        if sink is not None:
            sink(line)

    async def _drain_stdout(self) -> None:
        # Keep reading (and dropping) what the server writes while it shuts
        # down, so a server blocked on a full pipe can still exit (P-09).
        stream = self.receive_stream
        try:
            while await stream.receive_some(READ_STDERR):
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def _terminate(self, close_grace: float, terminate_grace: float) -> None:
        """The bounded shutdown of SI-10; run shielded by the owner."""
        process = self.process
        await self.aclose()  # usually done already, by the session's close
        if self._exited_before_close:
            self.exit_step = ExitStep.EXITED
        if self.exit_step is None:
            with trio.move_on_after(close_grace):
                await process.wait()
            if process.returncode is not None:
                self.exit_step = ExitStep.STDIN_CLOSED
        if self.exit_step is None:
            self._signal_group(signal.SIGTERM)
            self._event("sigterm")
            with trio.move_on_after(terminate_grace):
                await process.wait()
            if process.returncode is not None:
                self.exit_step = ExitStep.SIGTERM
        if self.exit_step is None:
            self._signal_group(signal.SIGKILL)
            self._event("sigkill")
            self.exit_step = ExitStep.SIGKILL
        await process.wait()  # reaps; after SIGKILL this is immediate
        # Whatever the leader left behind in its group goes too (grandchildren).
        self._signal_group(signal.SIGKILL)
        self._event("exited", returncode=process.returncode, step=self.exit_step)

    def _signal_group(self, signum: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)  # fails when the group is already gone


#: Bytes per read of stderr, and of stdout while draining.
READ_STDERR = 1 << 16


@asynccontextmanager
async def open_stdio_process(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    stderr: Callable[[str], None] | str | None = "forward",
    stderr_tail: int = 20,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    close_grace: float = 2.0,
    terminate_grace: float = 2.0,
    exit_wait: float = 0.5,
    on_event: Callable[[ProcessEvent], None] | None = None,
    before_spawn: BeforeSpawn | None = None,
) -> AsyncIterator[StdioProcess]:
    """Spawn ``command args...`` and yield the transport to it (a :class:`StdioProcess`).

    Args:
        command: the program (looked up on the child's ``PATH``); never run by a shell.
        args: its arguments, passed verbatim.
        env: extra environment variables for the child.
        inherit_env: start from our whole environment instead of
            :func:`safe_environment` (only when you trust the server with it).
        cwd: the child's working directory.
        stderr: where the server's stderr lines go: ``"forward"`` (our stderr, labelled
            with the command and pid), a callable taking each line, or None (dropped).
        stderr_tail: how many of the last stderr lines are kept either way (default 20),
            for the error that reports an early exit.
        max_message_size: longest line accepted from the server, in bytes (16 MiB by
            default; a line is buffered up to this size, so it is the memory one frame
            may take). A longer response fails the call whose id its first 4 KiB show
            with :class:`~trio_mcp.ResponseTooLarge`, and the session goes on (the
            framing resumes at the next line); with no readable id the session ends.
        close_grace: seconds to wait for an exit after closing stdin.
        terminate_grace: seconds to wait after SIGTERM before SIGKILL.
        exit_wait: seconds ``receive`` waits, after stdout ends, for the exit status.
        on_event: called with each :class:`ProcessEvent`.
        before_spawn: called (sync, or async and awaited) with the
            :class:`SpawnRequest` before the process is created; it approves
            by returning and vetoes by raising. Nothing is spawned until it
            returns, and nothing at all if it raises.

    Raises:
        OSError: the command could not be started (e.g. ``FileNotFoundError``).
        ValueError: *stderr* is a string other than ``"forward"`` (nothing is spawned).
        Exception: whatever *before_spawn* raised, unchanged (nothing is spawned).

    Cancellation:
        Cancelled while *before_spawn* runs (an async hook waiting for a user,
        say), nothing is spawned. Leaving the block, also by cancellation, runs
        the bounded shutdown (at most *close_grace* + *terminate_grace* seconds
        plus the reap) shielded, then re-raises. No zombie, descriptor or
        process-group member is left.

    Spec: SI-01, SI-04, SI-10, LC-16, R-03, X-01, X-03, P-09, P-14.
    """
    if isinstance(stderr, str) and stderr != "forward":
        raise ValueError(f"stderr must be 'forward', a callable or None, not {stderr!r}")
    child_env = dict(os.environ) if inherit_env else safe_environment()
    if env:
        child_env.update(env)
    request = SpawnRequest((command, *args), child_env, None if cwd is None else os.fspath(cwd))
    if before_spawn is not None:
        outcome = before_spawn(request)
        if inspect.isawaitable(outcome):
            await outcome
    # Spawn from the request itself, so what the hook saw is what runs.
    process = await trio.lowlevel.open_process(
        list(request.argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(request.env),
        cwd=request.cwd,
        start_new_session=True,
    )
    transport = StdioProcess(
        process,
        max_message_size=max_message_size,
        stderr_tail=stderr_tail,
        exit_wait=exit_wait,
        on_event=on_event,
    )
    sink: Callable[[str], None] | None
    if isinstance(stderr, str):  # "forward", checked above
        sink = stderr_to_our_stderr(f"{os.path.basename(command)} {process.pid}")
    else:
        sink = stderr
    transport._event("spawned")
    try:
        async with unwrapping(), trio.open_nursery() as nursery:
            nursery.start_soon(transport._pump_stderr, sink, name="trio_mcp stderr pump")
            try:
                yield transport
            finally:
                with trio.CancelScope(shield=True):
                    nursery.start_soon(transport._drain_stdout, name="trio_mcp stdout drain")
                    await transport._terminate(close_grace, terminate_grace)
                    # A grandchild that kept stderr open is gone now, so this ends.
                    with trio.move_on_after(exit_wait):
                        await transport._stderr_done.wait()
                    nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:  # spawned, then failed before the body
                transport._signal_group(signal.SIGKILL)
                await process.wait()
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    await stream.aclose()
