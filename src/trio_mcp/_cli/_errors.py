"""How the ``trio-mcp`` command reports a user's error: one line, never a traceback.

A user error is anything the person at the terminal can fix or expected to
happen: a server command that does not exist or cannot run, a server that
exits at once or does not speak MCP, an unknown tool, bad arguments, a
timeout, Ctrl+C. Each one ends the command with ``trio-mcp: error: <what>`` on
stderr and a non-zero status. Anything else is a bug of trio_mcp and keeps its
traceback.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

import trio

from .._errors import MCPError, RPCError
from ..protocol import ProtocolError
from ..transports._stdio_client import ServerExited


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


#: A parenthesised list of spec ids, ``(HM-14)`` or ``(SI-14, VR-12)``: for
#: maintainers, kept on the exception and shown with ``--verbose`` only.
_SPEC_IDS = re.compile(r"\s*\((?:[A-Z]{2,3}-\d{2,3}(?:,\s*|\s+)?)+\)")


def is_local_error(data: Any) -> bool:
    """Whether an error's ``data`` marks it as made up by our own client (a
    refused connection, say): no JSON-RPC error was received."""
    return isinstance(data, dict) and data.get("local") is True


def _server_exit(exc: BaseException) -> ServerExited | None:
    """The server process's exit that *exc* is, or directly wraps (a session
    closed by it names it only as a repr), if any."""
    for found in (exc, exc.__cause__):
        if isinstance(found, ServerExited):
            return found
    return None


def describe(exc: BaseException, *, verbose: bool = False) -> str:
    """*exc* as one line a user can act on: no repr, no JSON-RPC code where no
    JSON-RPC error was received, no spec ids (unless *verbose*)."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        # What the spawn could not run, without the errno noise.
        return f"cannot run {exc.filename}: {exc.strerror}"
    exited = _server_exit(exc)
    if exited is not None:
        text = f"the server {exited.in_words()}"
    elif isinstance(exc, RPCError) and is_local_error(exc.data):
        text = exc.message
    else:
        text = str(exc)
    if not verbose:
        text = _SPEC_IDS.sub("", text)
    # Messages may carry the server's own newlines; the report stays one line.
    return " ".join(text.split()) or type(exc).__name__


def print_error(err: TextIO, message: str) -> None:
    """Write the one error line of a failed command to *err*."""
    print(f"trio-mcp: error: {message}", file=err, flush=True)
