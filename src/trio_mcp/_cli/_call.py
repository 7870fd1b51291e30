"""``trio-mcp call -- CMD ARGS... TOOL JSON``: call one tool of a stdio server.

Prints the result (text blocks as text, structured content as JSON), with a
live progress bar on a terminal while the server reports progress.
``--timeout`` bounds connecting (the era probe and the opening: a server
that never answers is said to be silent within it), then it is the call's
progress-extended idle timeout (each progress notification restarts it).
Ctrl+C cancels the call properly: the server is sent
``notifications/cancelled``, then shut down, and the command exits with 130.
``--era auto|modern|legacy`` chooses how the connection opens; the era got
and its version (``era: modern (2026-07-28), ...``) are said on stderr on a
terminal or with ``--verbose``, so that stdout holds only the result.
A failure (the server cannot start, exits, is not an MCP server, does not speak
the era asked for, does not know the tool, times out) is one
``trio-mcp: error: ...`` line on stderr and status 1.
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import trio

from .. import types as mcp_types
from .._util import unwrapping
from ..protocol import Progress
from ._era import EraOption, era_line, era_summary, open_cli_client
from ._errors import INTERRUPTED, USER_ERRORS, describe, print_error


class ProgressBar:
    """Draws progress on one terminal line (or one line per update elsewhere)."""

    def __init__(self, out: TextIO, *, live: bool) -> None:
        self.out = out
        self.live = live
        self.drawn = False

    def __call__(self, progress: Progress) -> None:
        total = progress.total
        message = progress.message or ""
        if total:
            fraction = min(max(progress.progress / total, 0.0), 1.0)
            filled = int(fraction * 30)
            bar = f"[{'#' * filled}{'.' * (30 - filled)}] {progress.progress:g}/{total:g}"
        else:
            bar = f"[{progress.progress:g}]"
        if self.live:
            print(f"\r\x1b[2K{bar} {message}", end="", file=self.out, flush=True)
            self.drawn = True
        else:
            print(f"progress {bar} {message}", file=self.out, flush=True)

    def finish(self) -> None:
        if self.drawn:
            print(file=self.out, flush=True)
            self.drawn = False


def render_result(result: mcp_types.CallToolResult) -> str:
    """A tool result as text: text blocks as they are, others as JSON."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        else:
            parts.append(json.dumps(mcp_types.unstructure(block)))
    if result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, indent=2))
    return "\n".join(parts)


async def run_call(
    command: Sequence[str],
    tool: str,
    arguments: dict[str, Any],
    *,
    progress_idle_timeout: float | None = 60.0,
    out: TextIO | None = None,
    err: TextIO | None = None,
    inherit_env: bool = False,
    env: dict[str, str] | None = None,
    handle_signals: bool = True,
    era: EraOption = "auto",
    verbose: bool = False,
    url: str | None = None,
    auth: bool = False,
) -> int:
    """Call *tool* once in *era* (on the stdio server *command*, or the server
    at *url*, authorized with OAuth when *auth*); return the command's exit status (0, 1 for a
    tool or protocol error or an era the server does not speak, 130 when
    interrupted). A failure is one line on *err*; the era line goes to *err*
    when it is a terminal or with *verbose*.

    *progress_idle_timeout* also bounds connecting (see the module
    docstring); *env* adds variables to the stdio server's environment.

    Cancellation: on Ctrl+C (or cancellation of the caller) the call is
    cancelled with ``notifications/cancelled``, then the server is shut down.

    Spec: CN-01 (the cancel on Ctrl+C), TO-03 (``progress_idle_timeout``).
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    bar = ProgressBar(err, live=err.isatty())
    stdio_options: dict[str, Any] = {"env": env} if env else {}
    interrupted = False
    try:
        async with unwrapping(), trio.open_nursery() as nursery:
            call_scope = trio.CancelScope()
            if handle_signals:

                async def on_sigint(task_status: trio.TaskStatus[None]) -> None:
                    nonlocal interrupted
                    with trio.open_signal_receiver(signal.SIGINT) as signals:
                        task_status.started()
                        async for _ in signals:
                            interrupted = True
                            call_scope.cancel(reason="interrupted by the user (Ctrl+C)")
                            return

                await nursery.start(on_sigint)
            with call_scope:
                async with open_cli_client(
                    command,
                    era=era,
                    inherit_env=inherit_env,
                    name="trio-mcp-call",
                    url=url,
                    auth=auth,
                    # With --auth, connecting waits for the user's browser.
                    connect_timeout=None if auth else progress_idle_timeout,
                    **stdio_options,
                ) as client:
                    if verbose or err.isatty():
                        print(era_line(era_summary(client, era)), file=err, flush=True)
                    result = await client.call_tool(
                        tool,
                        arguments,
                        on_progress=bar,
                        progress_idle_timeout=progress_idle_timeout,
                    )
                    bar.finish()
                    print(render_result(result), file=out)
            nursery.cancel_scope.cancel()
    except USER_ERRORS as exc:
        bar.finish()
        print_error(err, describe(exc, verbose=verbose))
        return 1
    bar.finish()
    if interrupted:
        print_error(err, "interrupted (Ctrl+C): the call was cancelled (the server was told)")
        return INTERRUPTED
    return 1 if result.is_error else 0
