"""The server side of stdio: ``serve_stdio(server)``.

No thread ever blocks on stdin. The protocol reads and writes *private
duplicates* of fds 0 and 1 in non-blocking mode (``trio.lowlevel.FdStream``), so
a deadline or Ctrl+C acts at once, even on an idle server. While serving, fd 1
points at stderr and fd 0 at ``/dev/null`` for everybody else: a stray
``print()`` in a tool, a C library or a child process cannot corrupt the wire
or steal protocol input. Both are restored on exit.

Spec: SI-01, SI-03, SI-05, SI-11, SI-12, LC-17.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import trio

from ..protocol._codec import DEFAULT_MAX_MESSAGE_SIZE
from ._framing import LineChannel

if TYPE_CHECKING:
    from .._server._registry import Server
    from .._session._engine import Session


@contextmanager
def _private_stdio(stdin_fd: int, stdout_fd: int) -> Iterator[tuple[int, int]]:
    """Yield private duplicates of *stdin_fd*/*stdout_fd*; meanwhile point
    *stdout_fd* at stderr and *stdin_fd* at /dev/null. Restores both on exit."""
    for stream in (sys.stdout, sys.__stdout__):
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                stream.flush()  # nothing written before serving may end up on the wire late
    proto_in = os.dup(stdin_fd)
    proto_out = os.dup(stdout_fd)
    saved_in = os.dup(stdin_fd)
    saved_out = os.dup(stdout_fd)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(devnull, stdin_fd)
        os.dup2(2, stdout_fd)
        yield proto_in, proto_out
    finally:
        for stream in (sys.stdout, sys.__stdout__):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()  # stray output goes to stderr, not after the restore
        os.dup2(saved_in, stdin_fd)
        os.dup2(saved_out, stdout_fd)
        for fd in (saved_in, saved_out, devnull):
            os.close(fd)


async def serve_stdio(
    server: Server,
    *,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    handle_signals: bool | None = None,
    task_status: trio.TaskStatus[Session] = trio.TASK_STATUS_IGNORED,
    **session_options: Any,
) -> None:
    """Serve *server* over this process's stdin and stdout until the client goes away.

    Returns when stdin reaches end of input (the client's shutdown, SI-11), when
    the client closes the session, or on SIGTERM or SIGINT (Ctrl+C) when
    *handle_signals* is on (the default when called from the main thread). On a
    signal the session is cancelled at once: handlers stop, their records end
    ``CANCELLED``, and nothing more is written.

    Args:
        server: the :class:`~trio_mcp.Server` to run.
        stdin_fd, stdout_fd: the descriptors to serve (default 0 and 1).
        max_message_size: longest line accepted, in bytes.
        handle_signals: catch SIGTERM and SIGINT (needs the main thread).
        task_status: receives the :class:`~trio_mcp.Session` (``nursery.start``).
        session_options: passed to :func:`~trio_mcp.open_session`.

    Cancellation:
        Cancelling the call stops serving at once (no thread to wait for) and
        closes the private descriptors; fds 0 and 1 are restored.

    Spec: SI-01, SI-02, SI-05, SI-11, SI-12, LC-17.
    """
    from .._server._registry import serve_session

    if handle_signals is None:
        handle_signals = threading.current_thread() is threading.main_thread()
    with _private_stdio(stdin_fd, stdout_fd) as (proto_in, proto_out):
        transport = LineChannel(
            trio.lowlevel.FdStream(proto_out),
            trio.lowlevel.FdStream(proto_in),
            max_message_size=max_message_size,
        )
        async with transport, trio.open_nursery() as nursery:
            if handle_signals:
                await nursery.start(_stop_on_signal, nursery.cancel_scope)
            await serve_session(server, transport, task_status=task_status, **session_options)
            nursery.cancel_scope.cancel()


async def _stop_on_signal(
    scope: trio.CancelScope, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async for signum in signals:
            scope.cancel(reason=f"received {signal.Signals(signum).name}")
            return


def run_stdio(server: Server, *, fast_exit: bool = True, **options: Any) -> None:
    """Run *server* over stdio in a fresh Trio run (for ``if __name__ == "__main__"``).

    Args:
        server: the :class:`~trio_mcp.Server` to run.
        fast_exit: when serving ends, freeze the garbage collector's heap
            (:func:`gc.freeze`). ``run_stdio`` is meant to be the last thing a
            script does, and the interpreter's final collection would otherwise
            walk every object just before the process goes, which is most of
            the time between the client closing stdin and the process being
            gone (about 30 ms with the package loaded). ``atexit`` handlers,
            flushing of files and module teardown still run; only objects
            already in reference cycles are not finalized. Turn it off if the
            program goes on after serving.
        options: passed to :func:`serve_stdio`.

    Cancellation: see :func:`serve_stdio`; SIGTERM and one Ctrl+C stop it.
    """
    from functools import partial

    try:
        trio.run(partial(serve_stdio, server, **options))
    finally:
        if fast_exit:
            import gc

            gc.freeze()
