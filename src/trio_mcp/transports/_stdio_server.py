"""The server side of stdio: this process's stdin and stdout as a transport.

No thread ever blocks on stdin. The protocol reads and writes *private
duplicates* of fds 0 and 1 in non-blocking mode (``trio.lowlevel.FdStream``), so
a deadline or Ctrl+C acts at once, even on an idle server. While serving, fd 1
points at stderr and fd 0 at ``/dev/null`` for everybody else: a stray
``print()`` in a tool, a C library or a child process cannot corrupt the wire
or steal protocol input. Both are restored on exit.
:func:`open_stdio_server_transport` does this and yields the
:class:`LineChannel`; ``trio_mcp.serve_stdio`` serves a server over it.

Spec: SI-01, SI-03, SI-05.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import trio

from ..protocol._codec import DEFAULT_MAX_MESSAGE_SIZE
from ._framing import LineChannel


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


@asynccontextmanager
async def open_stdio_server_transport(
    *,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
) -> AsyncIterator[LineChannel]:
    """Yield this process's stdin and stdout as a transport (newline framing).

    The channel reads and writes private, non-blocking duplicates of
    *stdin_fd* and *stdout_fd*; while the block runs, *stdout_fd* points at
    stderr and *stdin_fd* at ``/dev/null`` for the rest of the process, so
    stray output cannot corrupt the wire. Both are restored on exit.

    Args:
        stdin_fd, stdout_fd: the descriptors to serve (default 0 and 1).
        max_message_size: longest line accepted, in bytes (16 MiB by default;
            a line is buffered up to this size, so it is the memory one frame may
            take). A longer line is answered -32600 with the id its first 4 KiB
            show, and the session goes on.

    Cancellation:
        No thread ever blocks on stdin, so a cancelled ``receive`` returns at
        once. Leaving the block closes the channel and the private descriptors.

    Spec: SI-01, SI-03, SI-05.
    """
    with _private_stdio(stdin_fd, stdout_fd) as (proto_in, proto_out):
        transport = LineChannel(
            trio.lowlevel.FdStream(proto_out),
            trio.lowlevel.FdStream(proto_in),
            max_message_size=max_message_size,
        )
        async with transport:
            yield transport
