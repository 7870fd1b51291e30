"""How the ``trio-mcp`` command reports a user's error: one line, never a traceback.

A user error is anything the person at the terminal can fix or expected to
happen: a server command that does not exist or cannot run, a server that
exits at once or does not speak MCP, an unknown tool, bad arguments, a
timeout, Ctrl+C. Each one ends the command with ``trio-mcp: error: <what>`` on
stderr and a non-zero status. Anything else is a bug of trio_mcp and keeps its
traceback.
"""

from __future__ import annotations

from typing import TextIO

import trio

from .._errors import MCPError
from ..protocol import ProtocolError


class CommandError(MCPError):
    """A user error the command found itself; *status* is the exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


#: The failures of a session with a user's server that are that server's (or
#: the user's) doing, not trio_mcp's: reported in one line, never a traceback.
USER_ERRORS: tuple[type[Exception], ...] = (MCPError, ProtocolError, OSError, trio.TooSlowError)

#: Exit status after Ctrl+C (128 + SIGINT), as shells report it.
INTERRUPTED = 130


def describe(exc: BaseException) -> str:
    """*exc* as one line a user can act on."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        # What the spawn could not run, without the errno noise.
        return f"cannot run {exc.filename}: {exc.strerror}"
    # Messages such as "exited with status 1; last stderr lines: ..." may
    # carry the server's own newlines; the report stays one line.
    return " ".join(str(exc).split()) or type(exc).__name__


def print_error(err: TextIO, message: str) -> None:
    """Write the one error line of a failed command to *err*."""
    print(f"trio-mcp: error: {message}", file=err, flush=True)
