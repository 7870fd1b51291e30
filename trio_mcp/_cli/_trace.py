"""``trio-mcp trace -- CMD ARGS...``: watch any stdio MCP server's lifecycle.

Spawns the server (ours or anyone's), runs the handshake and discovers what
the server declared (tools, resources, templates, prompts), pings it, and shuts
it down; prints every frame with its direction and time since the start, then
the request table (each request's states and durations), then the shutdown
step that ended the server. Colour only on a terminal; ``--json`` writes JSON
lines instead. A failure (the server cannot start, exits, is not an MCP server,
the trace outlasts ``--timeout``) is narrated on stdout with what was seen so
far, and reported as one ``trio-mcp: error: ...`` line on stderr (status 1).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import trio

from .. import types as mcp_types
from .._client._connect import open_stdio_client
from .._errors import MCPError
from ..protocol import (
    Direction,
    FrameDirection,
    RequestObserver,
    RequestRecord,
    RequestState,
)
from ..transports import StdioProcess
from ..transports._stdio_client import describe_returncode
from ._errors import USER_ERRORS, describe, print_error

if TYPE_CHECKING:
    from .._client._client import Client

#: What discovery asks for, by the capability that allows it.
DISCOVERY = (
    ("tools", "tools/list"),
    ("resources", "resources/list"),
    ("resources", "resources/templates/list"),
    ("prompts", "prompts/list"),
)

_COLOURS = {"out": "\x1b[36m", "in": "\x1b[32m", "dim": "\x1b[2m", "bold": "\x1b[1m"}
_RESET = "\x1b[0m"


class FramePrinter(RequestObserver):
    """Prints every frame of a session (direction, time since *start*, the JSON).

    ``width`` cuts long frames (None: print whole); ``colour`` adds ANSI colour;
    ``as_json`` writes one JSON object per frame instead.
    """

    def __init__(
        self,
        out: TextIO,
        *,
        start: float,
        label: str = "",
        width: int | None = None,
        colour: bool = False,
        as_json: bool = False,
    ) -> None:
        self.out = out
        self.start = start
        self.label = label
        self.width = width
        self.colour = colour
        self.as_json = as_json
        #: Set each time an inbound request starts running.
        self.handler_started = trio.Event()

    def paint(self, text: str, what: str) -> str:
        return f"{_COLOURS[what]}{text}{_RESET}" if self.colour else text

    def on_transition(self, record: RequestRecord, old: RequestState | None) -> None:
        if record.direction is Direction.INBOUND and record.state is RequestState.RUNNING:
            self.handler_started.set()

    def on_frame(self, direction: FrameDirection, data: bytes, at: float) -> None:
        elapsed = at - self.start
        if self.as_json:
            try:
                message: Any = json.loads(data)
            except ValueError:
                message = data.decode(errors="replace")
            line = {"type": "frame", "direction": direction.value, "t": round(elapsed, 6)}
            print(json.dumps({**line, "message": message}), file=self.out)
            return
        arrow = "->" if direction is FrameDirection.OUT else "<-"
        text = data.decode(errors="replace")
        if self.width is not None and len(text) > self.width:
            text = text[: self.width - 3] + "..."
        prefix = f"{self.label} " if self.label else ""
        stamp = self.paint(f"{elapsed:8.3f}s", "dim")
        print(f"  {stamp} {prefix}{self.paint(arrow, direction.value)} {text}", file=self.out)


def record_row(record: RequestRecord, start: float) -> dict[str, Any]:
    """One request as a JSON-ready dict (times relative to *start*)."""

    def rel(t: float | None) -> float | None:
        return None if t is None else round(t - start, 6)

    return {
        "type": "request",
        "id": record.id,
        "method": record.method,
        "direction": record.direction.value,
        "state": record.state.value,
        "queued": rel(record.queued_at),
        "started": rel(record.started_at),
        "finished": rel(record.finished_at),
        "ms": None if record.duration is None else round(record.duration * 1000, 3),
        "cancel_origin": record.cancel_origin.value if record.cancel_origin else None,
        "cancel_reason": record.cancel_reason,
        "error": None if record.error is None else record.error.message,
    }


def print_records(out: TextIO, title: str, records: Sequence[RequestRecord], start: float) -> None:
    """The request table: id, method, direction, final state, when each state began."""
    print(f"\n  {title}", file=out)
    print(
        f"  {'id':>4} {'method':<26} {'dir':<8} {'state':<10} "
        f"{'queued':>8} {'running':>8} {'ended':>8} {'ms':>8}  note",
        file=out,
    )

    def rel(t: float | None) -> str:
        return "-" if t is None else f"{t - start:.3f}"

    for r in records:
        ms = f"{r.duration * 1000:.1f}" if r.duration is not None else "-"
        note = f"{r.cancel_origin.value}: {r.cancel_reason}" if r.cancel_origin else ""
        if r.error is not None and not note:
            note = f"error {r.error.code}: {r.error.message}"
        print(
            f"  {r.id!s:>4} {r.method:<26} {r.direction.value:<8} {r.state.value:<10} "
            f"{rel(r.queued_at):>8} {rel(r.started_at):>8} {rel(r.finished_at):>8} {ms:>8}  "
            f"{note}",
            file=out,
        )


async def run_trace(
    command: Sequence[str],
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    as_json: bool = False,
    colour: bool | None = None,
    time_limit: float = 30.0,
    inherit_env: bool = False,
) -> int:
    """Trace one stdio server's lifecycle; return the exit status for the command
    (0, or 1 after a failure, which is also one line on *err*).

    Cancellation: the server is shut down (bounded) whatever happens; the
    whole trace is bounded by *time_limit* seconds.

    Spec: SI-01 (any stdio server, spawned), LC-01 (the lifecycle it narrates).
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    if colour is None:
        colour = not as_json and out.isatty()
    start = trio.current_time()
    printer = FramePrinter(out, start=start, colour=colour, as_json=as_json)

    def say(text: str) -> None:
        if not as_json:
            print(printer.paint(f"== {text}", "bold"), file=out)

    say(f"spawning {' '.join(command)}")
    records: list[RequestRecord] = []
    transport: StdioProcess | None = None
    status = 0
    try:
        with trio.fail_after(time_limit):
            async with open_stdio_client(
                command[0],
                command[1:],
                inherit_env=inherit_env,
                observer=printer,
                name="trio-mcp-trace",
                discover=False,  # the trace discovers itself, narrating each page
            ) as client:
                assert isinstance(client.session.transport, StdioProcess)
                transport = client.session.transport
                caps = mcp_types.unstructure(client.server_capabilities)
                say(
                    f"initialized: {client.server_info.name} {client.server_info.version}, "
                    f"protocol {client.protocol_version}, capabilities {json.dumps(caps)}"
                )
                for capability, method in DISCOVERY:
                    if capability in caps:
                        await _discover(client, method, say)
                say("ping")
                await client.ping()
                say("shutdown: closing the server's stdin")
                records = client.session.requests()
    except USER_ERRORS as exc:
        say(f"failed: {exc!r}")
        if as_json:
            print(json.dumps({"type": "error", "error": repr(exc)}), file=out)
        if isinstance(exc, trio.TooSlowError):
            print_error(err, f"the trace did not finish within {time_limit:g}s (--timeout)")
        else:
            print_error(err, describe(exc))
        status = 1
    if transport is not None:
        if as_json:
            for record in records:
                print(json.dumps(record_row(record, start)), file=out)
            step = transport.exit_step.name if transport.exit_step else None
            exit_line = {"type": "exit", "step": step, "returncode": transport.returncode}
            print(json.dumps(exit_line), file=out)
        else:
            print_records(out, "requests", records, start)
            step_text = transport.exit_step.value if transport.exit_step else "unknown"
            print(
                f"\n  server process {transport.pid}: {step_text} "
                f"({describe_returncode(transport.returncode)})",
                file=out,
            )
    return status


async def _discover(client: Client, method: str, say: Callable[[str], None]) -> None:
    """Fetch every page of one list method, narrating each page."""
    cursor: str | None = None
    for page in range(1, 101):  # a server that pages forever is cut off
        say(method if page == 1 else f"{method} (page {page})")
        try:
            result = await client.session.request(
                method, {"cursor": cursor} if cursor is not None else None
            )
        except MCPError as exc:
            say(f"{method} failed: {exc}")
            return
        cursor = result.next_cursor
        if cursor is None:
            return
    say(f"{method}: stopped after 100 pages")
