"""``trio-mcp trace -- CMD ARGS...``: watch any stdio MCP server's lifecycle.

Spawns the server (ours or anyone's), runs the handshake and discovers what
the server declared (tools, resources, templates, prompts), names each
extension it declared, pings it, and shuts it down; prints every frame with its
direction and time since the start, the era chosen
(``--era auto|modern|legacy``) and its version, then the request table (each
request's states and durations; the rounds of a 2026-07-28 input-required
call read as one story: "round 2 of call 5"), then the shutdown
step that ended the server. Colour only on a terminal; ``--json`` writes JSON
lines instead (one ``{"type": "era", ...}`` line says the era). A failure
(the server cannot start, exits, is not an MCP server, does not speak the era
asked for, the trace outlasts ``--timeout``) is narrated on stdout with what
was seen so far, and reported as one ``trio-mcp: error: ...`` line on stderr
(status 1).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import trio

from .. import types as mcp_types
from .._errors import MCPError
from .._records import FrameLog, Round, call_rounds, request_table, request_timeline
from ..protocol import (
    Direction,
    FrameDirection,
    MultiObserver,
    RequestObserver,
    RequestRecord,
    RequestState,
)
from ..transports import StdioProcess
from ..transports._stdio_client import describe_returncode
from ._era import EraOption, era_line, era_summary, open_cli_client
from ._errors import USER_ERRORS, describe, is_local_error, print_error

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
            if direction is FrameDirection.IN and _made_up_error(data) is not None:
                line = {"type": "local", "t": round(elapsed, 6)}
            print(json.dumps({**line, "message": message}), file=self.out)
            return
        local = _made_up_error(data) if direction is FrameDirection.IN else None
        if local is not None:
            # Made up by our client (a refused connection, say): nothing was
            # received, so it is not shown as a frame from the server.
            stamp = self.paint(f"{elapsed:8.3f}s", "dim")
            prefix = f"{self.label} " if self.label else ""
            print(f"  {stamp} {prefix}!! local: {local}", file=self.out)
            return
        arrow = "->" if direction is FrameDirection.OUT else "<-"
        text = data.decode(errors="replace")
        if self.width is not None and len(text) > self.width:
            text = text[: self.width - 3] + "..."
        prefix = f"{self.label} " if self.label else ""
        stamp = self.paint(f"{elapsed:8.3f}s", "dim")
        print(f"  {stamp} {prefix}{self.paint(arrow, direction.value)} {text}", file=self.out)


def _made_up_error(data: bytes) -> str | None:
    """The message of an error response our own client made up (see
    :func:`~._errors.is_local_error`), or None for a frame really received."""
    if b'"local"' not in data:
        return None
    try:
        message = json.loads(data)
    except ValueError:
        return None
    error = message.get("error") if isinstance(message, dict) else None
    if isinstance(error, dict) and is_local_error(error.get("data")):
        return str(error.get("message", ""))
    return None


def record_row(record: RequestRecord, start: float, round_: Round | None = None) -> dict[str, Any]:
    """One request as a JSON-ready dict (times relative to *start*); *round_*
    places it in its multi round-trip call."""

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
        "input_required": record.input_required,
        "follows": record.follows,
        "round": None if round_ is None else round_.number,
        "first_round": None if round_ is None else round_.first,
    }


def print_records(out: TextIO, title: str, records: Sequence[RequestRecord], start: float) -> None:
    """The request table (:func:`~trio_mcp.lowlevel.request_table`) under *title*."""
    print(f"\n  {title}", file=out)
    for line in request_table(records, start=start).splitlines():
        print(f"  {line}", file=out)


async def run_trace(
    command: Sequence[str],
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    as_json: bool = False,
    colour: bool | None = None,
    time_limit: float = 30.0,
    inherit_env: bool = False,
    env: dict[str, str] | None = None,
    era: EraOption = "auto",
    url: str | None = None,
    auth: bool = False,
    html: Path | None = None,
) -> int:
    """Trace one stdio server's lifecycle in *era* (or the server at *url*,
    authorized with OAuth when *auth*); return the exit status for
    the command (0, or 1 after a failure, which is also one line on *err*:
    among them an *era* the server does not speak).

    Cancellation: the server is shut down (bounded) whatever happens; the
    whole trace is bounded by *time_limit* seconds (a server that does not
    answer the opening within it is said to be silent). *env* adds variables
    to the stdio server's environment. *html* names a file to write the
    request timeline to (:func:`~trio_mcp.lowlevel.request_timeline`), after
    a failure too.

    Spec: SI-01 (any stdio server, spawned), LC-01 (the lifecycle it
    narrates), SI-14 (the era probe of ``auto``, shown frame by frame).
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    if colour is None:
        colour = not as_json and out.isatty()
    start = trio.current_time()
    printer = FramePrinter(out, start=start, colour=colour, as_json=as_json)
    frames = FrameLog(limit=None)

    def say(text: str) -> None:
        if not as_json:
            print(printer.paint(f"== {text}", "bold"), file=out)

    say(f"connecting to {url}" if url is not None else f"spawning {' '.join(command)}")
    stdio_options: dict[str, Any] = {"env": env} if env else {}
    records: list[RequestRecord] = []
    transport: StdioProcess | None = None
    status = 0
    try:
        # One deadline for the trace and for connecting. Until the client is
        # connected only the connecting bound holds it (a server that has not
        # answered the opening by then is said to be silent); then the trace's.
        with trio.fail_at(math.inf) as whole:
            async with open_cli_client(
                command,
                era=era,
                inherit_env=inherit_env,
                observer=MultiObserver(printer, frames),
                name="trio-mcp-trace",
                discover=False,  # the trace discovers itself, narrating each page
                url=url,
                auth=auth,
                connect_timeout=time_limit,
                connect_from=start,
                **stdio_options,
            ) as client:
                whole.deadline = start + time_limit
                if isinstance(client.session.transport, StdioProcess):
                    transport = client.session.transport
                summary = era_summary(client, era)
                if as_json:
                    print(json.dumps({"type": "era", **summary}), file=out)
                say(era_line(summary))
                caps = mcp_types.unstructure(client.server_capabilities)
                opened = "initialized" if client.era == "legacy" else "discovered"
                say(
                    f"{opened}: {client.server_info.name} {client.server_info.version}, "
                    f"protocol {client.protocol_version}, capabilities {json.dumps(caps)}"
                )
                for name, settings in client.server_extensions.items():
                    # By name: an extension this trace knows nothing else of.
                    say(f"extension {name}: {json.dumps(settings)}")
                for capability, method in DISCOVERY:
                    if capability in caps:
                        await _discover(client, method, say)
                # 2026-07-28 has no ping: the client sends server/discover instead.
                say("ping" if client.era == "legacy" else "ping (2026-07-28: server/discover)")
                await client.ping()
                say("shutdown: closing the server's stdin" if url is None else "closing")
                records = client.session.requests()
    except USER_ERRORS as exc:
        if isinstance(exc, trio.TooSlowError):
            message = f"the trace did not finish within {time_limit:g}s (--timeout)"
        else:
            message = describe(exc)
        say(f"failed: {message}")
        if as_json:
            print(json.dumps({"type": "error", "error": message}), file=out)
        print_error(err, message)
        status = 1
    if html is not None:
        what = url if url is not None else " ".join(command)
        status = await _write_timeline(html, records, frames, start, what, err) or status
    if url is not None and records:
        if as_json:
            rounds = call_rounds(records)
            for record in sorted(records, key=lambda r: r.queued_at):
                row = record_row(record, start, rounds.get((record.direction, record.id)))
                print(json.dumps(row), file=out)
        else:
            print_records(out, "requests", records, start)
    if transport is not None:
        if as_json:
            rounds = call_rounds(records)
            for record in sorted(records, key=lambda r: r.queued_at):
                row = record_row(record, start, rounds.get((record.direction, record.id)))
                print(json.dumps(row), file=out)
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


async def _write_timeline(
    path: Path,
    records: Sequence[RequestRecord],
    frames: FrameLog,
    start: float,
    what: str | None,
    err: TextIO,
) -> int:
    """Write the timeline page to *path*; 0, or 1 after saying on *err* why not."""
    page = request_timeline(records, frames=frames.frames, start=start, title=f"trace of {what}")
    try:
        await trio.Path(path).write_text(page, encoding="utf-8")
    except OSError as exc:
        print_error(err, f"could not write the timeline to {path}: {exc.strerror}")
        return 1
    return 0


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
