"""``trio-mcp demo``: real client and server sessions, narrated from start to end, in each era.

The server is the bundled example :mod:`trio_mcp.examples.paper_trail`, spawned
as ``python -m trio_mcp.examples.paper_trail`` (a real subprocess, spoken to
over stdio), so the demo works from an installed wheel as from a checkout.
Every frame the client writes and reads is printed with its direction and time
since the start, the server's stderr lines are shown as they arrive, and each
step says what happened.

The same dual-era server is run twice (``--era auto``, the default; ``--era
legacy`` or ``--era modern`` runs one part only):

1. The handshake era (``era="legacy"``): the handshake and version
   negotiation, discovery, a tool call, a long call with progress, a call that
   asks the user (the server sends ``elicitation/create`` while the call
   runs), a call cancelled by the client (the server's handler stops and no
   response is sent), a call that times out, ping, and the shutdown.
2. 2026-07-28 (``era="modern"``): no handshake (``server/discover``),
   discovery, the same tool call, the same asking call as an input-required
   round trip (round 1 ends asking, the client retries with the answer and the
   echoed ``requestState``, the handler runs again), a call cancelled by the
   client (its record says cancelled by the caller, the handler stopped,
   nothing was sent for it afterwards), and the shutdown.

The demo's own elicitation handler answers every question "yes", so the
output is the same on every run (but for times and process ids).
"""

from __future__ import annotations

import enum
import json
import os
import sys
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import attrs
import trio

from .. import types as mcp_types
from .._client._elicitation import FormElicitation
from .._errors import RequestTimeout
from .._records import FrameLog, call_rounds, timeline_page, timeline_section
from ..protocol import (
    Direction,
    FrameDirection,
    MultiObserver,
    Progress,
    RequestId,
    RequestObserver,
    RequestRecord,
)
from ..transports import ProcessEvent, StdioProcess
from ..transports._stdio_client import describe_returncode
from ._era import EraMismatch, EraOption, era_line, era_summary, open_cli_client
from ._errors import CommandError
from ._trace import FramePrinter, print_records

if TYPE_CHECKING:
    from .._client._client import Client

#: The module the demo runs as its server unless told otherwise.
DEMO_SERVER_MODULE = "trio_mcp.examples.paper_trail"

#: The directory that holds the running ``trio_mcp`` package (a checkout or
#: site-packages): put on the server's path so it imports this same trio_mcp.
_IMPORT_ROOT = Path(__file__).resolve().parents[2]

#: The order every part looks up, and the one whose return it books.
_ORDER = {"order_id": "PT-1042"}


def server_command(server: Path | None = None) -> list[str]:
    """The demo server's argv: the bundled module, or the script *server*.

    Raises:
        CommandError: *server* is not a file.
    """
    if server is None:
        return [sys.executable, "-m", DEMO_SERVER_MODULE]
    if not server.is_file():
        raise CommandError(f"the demo server {server} does not exist (--server)")
    return [sys.executable, str(server)]


class _Wire(RequestObserver):
    """Keeps every frame of the current part, parsed, to narrate from the wire."""

    def __init__(self) -> None:
        self.frames: list[tuple[FrameDirection, float, Any]] = []

    def on_frame(self, direction: FrameDirection, data: bytes, at: float) -> None:
        try:
            message = json.loads(data)
        except ValueError:
            message = None
        self.frames.append((direction, at, message))

    def find(self, direction: FrameDirection, request_id: RequestId, key: str) -> dict[str, Any]:
        """The *key* (``params`` of a request, ``result`` of a response) of
        the first frame going *direction* with *request_id* and that key."""
        for seen, _, message in self.frames:
            if (
                seen is direction
                and isinstance(message, dict)
                and message.get("id") == request_id
                and isinstance(message.get(key), dict)
            ):
                found: dict[str, Any] = message[key]
                return found
        return {}

    def about(self, request_id: RequestId, since: float) -> int:
        """Frames the server sent for request *request_id* from time *since* on:
        its response, or progress for its token (the client's own token is the id)."""
        count = 0
        for seen, at, message in self.frames:
            if seen is not FrameDirection.IN or at < since or not isinstance(message, dict):
                continue
            params = message.get("params")
            token = params.get("progressToken") if isinstance(params, dict) else None
            response = message.get("id") == request_id and "method" not in message
            progress = message.get("method") == "notifications/progress" and token == request_id
            count += response or progress
        return count


class _Demo:
    """The narration of one demo run: where it prints, the clock, and the
    server's stderr and process events as they arrive."""

    def __init__(self, out: TextIO, command: list[str], width: int | None) -> None:
        self.out = out
        self.command = command
        self.start = trio.current_time()
        self.printer = FramePrinter(out, start=self.start, label="client", width=width)
        self.wire = _Wire()
        self.frames = FrameLog(limit=None)
        #: Set when the server's stderr says a handler was cancelled (this part).
        self.handler_stopped = trio.Event()
        #: The order_status answer of each era, to compare them.
        self.answers: dict[str, str] = {}
        #: The timeline of each part that ran (HTML sections).
        self.timelines: list[str] = []

    def say(self, text: str) -> None:
        print(f"\n== {text}", file=self.out)

    def line(self, text: str) -> None:
        print(f"  {text}", file=self.out)

    def on_stderr(self, line: str) -> None:
        print(f"  {trio.current_time() - self.start:8.3f}s server stderr: {line}", file=self.out)
        if "handler cancelled" in line:
            self.handler_stopped.set()

    def on_event(self, event: ProcessEvent) -> None:
        extra = f" ({describe_returncode(event.returncode)})" if event.kind == "exited" else ""
        print(
            f"  {event.at - self.start:8.3f}s process {event.pid}: {event.kind}{extra}",
            file=self.out,
        )

    async def answer(self, request: FormElicitation) -> mcp_types.ElicitResult:
        """The demo's user: says yes to every question, the same on every run."""
        self.line(f"the demo's user is asked by {request.server_name!r}: {request.message}")
        self.line("the demo's user answers: accept, confirm=true")
        return mcp_types.ElicitResult(action="accept", content={"confirm": True})

    def open(self, era: EraOption) -> AbstractAsyncContextManager[Client]:
        """Spawn the server and open a client in *era* (see :func:`open_cli_client`)."""
        self.wire = _Wire()
        self.frames = FrameLog(limit=None)
        self.handler_stopped = trio.Event()
        # The child gets the safe default environment plus where trio_mcp
        # lives, so the demo works from a checkout without an install too.
        paths = [
            str(_IMPORT_ROOT),
            *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)),
        ]
        return open_cli_client(
            self.command,
            era=era,
            env={"PYTHONPATH": os.pathsep.join(paths)},
            stderr=self.on_stderr,
            on_event=self.on_event,
            observer=MultiObserver(self.printer, self.wire, self.frames),
            name="demo-host",
            version="1.0",
            elicitation=self.answer,
        )

    def spawn_line(self, what: str) -> None:
        self.say(f"0. {what}: {' '.join(self.command)} (own process group, no shell)")

    async def order_status(self, client: Client, era: str) -> None:
        result = await client.call_tool("order_status", _ORDER)
        self.answers[era] = _text(result)
        self.line(f"result: {self.answers[era]}")

    async def cancelled_call(self, client: Client) -> RequestRecord:
        """``sleep`` cancelled by the client 0.3 s in; wait (bounded) for the
        server's stderr to say its handler stopped. The call's record."""
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_press_stop, scope, 0.3)
                await client.call_tool("sleep", {"seconds": 30})
        with trio.move_on_after(5):
            await self.handler_stopped.wait()  # the server's own stderr says so
        record = _last(client.session.requests(), "tools/call")
        self.line(
            f"client: cancelled={scope.cancelled_caught}; record {record.id}: "
            f"{record.state.value}, origin "
            f"{record.cancel_origin.value if record.cancel_origin else 'none'}; "
            f"server handler stopped: {self.handler_stopped.is_set()}"
        )
        return record

    def shutdown(self, client: Client, transport: StdioProcess, title: str) -> None:
        step = transport.exit_step.value if transport.exit_step else "unknown"
        self.line(f"server process {transport.pid}: {step}")
        records = client.session.requests()
        print_records(self.out, title, records, self.start)
        self.timelines.append(timeline_section(records, frames=self.frames.frames, heading=title))
        print("\n  client statistics", file=self.out)
        for row in statistics_table(client.session.statistics()):
            print(f"    {row}", file=self.out)

    def discovery_note(self, client: Client) -> None:
        """Say why tools/list shows twice: the client listed the tools itself
        as it connected (what ``client.tools`` holds), before the demo asks."""
        own = [
            r
            for r in client.session.requests()
            if r.method == "tools/list" and r.direction is Direction.OUTBOUND
        ]
        if own:
            self.line(
                f"(the tools/list above, id {own[0].id}, was the client's own, sent as it "
                "connected to fill client.tools; this one is the demo asking)"
            )


def statistics_table(statistics: Any, columns: int = 3) -> list[str]:
    """A statistics record (such as ``SessionStatistics``) as a short table
    for people: each field's name in words and its value, *columns* to a row,
    enums by their value and None as ``-``."""
    cells = []
    for field in attrs.fields(type(statistics)):
        value = getattr(statistics, field.name)
        if isinstance(value, enum.Enum):
            value = value.value
        cells.append((field.name.replace("_", " "), "-" if value is None else str(value)))
    rows = -(-len(cells) // columns)
    table = [cells[n * rows : (n + 1) * rows] for n in range(columns)]
    widths = [
        (max((len(k) for k, _ in col), default=0), max((len(v) for _, v in col), default=0))
        for col in table
    ]
    lines = []
    for r in range(rows):
        parts = [
            f"{col[r][0]:<{name}}  {col[r][1]:>{value}}"
            for col, (name, value) in zip(table, widths, strict=True)
            if r < len(col)
        ]
        lines.append("    ".join(parts).rstrip())
    return lines


async def run_demo(
    out: TextIO | None = None,
    *,
    server: Path | None = None,
    width: int | None = 110,
    era: EraOption = "auto",
    html: Path | None = None,
) -> None:
    """Run the narrated demo against *server* (default: the bundled
    :mod:`trio_mcp.examples.paper_trail`): the handshake era, then 2026-07-28
    (*era* ``"auto"``), or only the one *era* names.

    With ``"auto"`` a part whose era the server does not speak is skipped (it
    says so); with an explicit *era* that is an error. *html* names a file to
    write the request timeline of every part to (one page, see
    :func:`~trio_mcp.lowlevel.request_timeline`).

    Raises:
        CommandError: *server* is not a file (nothing is spawned), or *html*
            cannot be written.
        EraMismatch: *era* is explicit and the server does not speak it.

    Cancellation: each server process is shut down (bounded) whatever happens.

    Spec: SI-01, SI-03 (the server's stderr log is shown), SI-14, LC-01, CN-01,
    TO-02, PT-12..PT-15 (the input-required round trip).
    """
    demo = _Demo(sys.stdout if out is None else out, server_command(server), width)
    parts: list[tuple[str, str, Callable[[_Demo], Awaitable[None]]]] = [
        ("legacy", "Part 1: the handshake era (--era legacy)", _handshake_era),
        ("modern", "Part 2: 2026-07-28, no handshake (--era modern)", _modern_era),
    ]
    for part_era, title, run in parts:
        if era not in ("auto", part_era):
            continue
        print(f"\n######## {title}", file=demo.out)
        try:
            await run(demo)
        except EraMismatch as exc:
            if era != "auto":
                raise
            demo.line(f"skipped: {exc}")
    if len(demo.answers) == 2:
        same = len(set(demo.answers.values())) == 1
        print(
            f"\n######## Both eras: the same order_status call, the same answer: {same}",
            file=demo.out,
        )
    if html is not None:
        page = timeline_page("trio-mcp demo: the client's requests", demo.timelines)
        try:
            await trio.Path(html).write_text(page, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"could not write the timeline to {html}: {exc.strerror}") from None
        print(f"\n######## The request timeline: {html}", file=demo.out)


async def _handshake_era(demo: _Demo) -> None:
    say, line = demo.say, demo.line
    demo.spawn_line("Spawn the server")
    async with demo.open("legacy") as client:
        transport = client.session.transport
        assert isinstance(transport, StdioProcess)
        say("1. Handshake: initialize -> result -> notifications/initialized (above)")
        line(era_line(era_summary(client, "legacy")))
        line(f"negotiated protocol version: {client.protocol_version}")
        caps = mcp_types.unstructure(client.server_capabilities)
        line(f"server: {client.server_info.name} {client.server_info.version}; capabilities {caps}")

        say("2. Discovery: tools/list")
        demo.discovery_note(client)
        tools = await client.list_tools()
        for tool in tools.tools:
            line(f"tool {tool.name}: {(tool.description or '').splitlines()[0]}")

        say("3. A tool call")
        await demo.order_status(client, "legacy")
        result = await client.call_tool("order_status", {"order_id": "PT-9"})
        line(f"tool error (a result, not an exception): {_text(result)}")

        say("4. A long call with progress")

        def show(progress: Progress) -> None:
            line(f"progress {progress.progress:g}/{progress.total:g}: {progress.message}")

        result = await client.call_tool("prepare_report", {"steps": 3}, on_progress=show)
        line(f"result: {_text(result)}")

        say("5. A call that asks the user: the server sends elicitation/create while it runs")
        result = await client.call_tool("return_order", _ORDER)
        line(f"result: {_text(result)}")
        line("one tools/call, one handler run; the question was a request inside it")

        say("6. A call cancelled by the client while the server works on it")
        await demo.cancelled_call(client)

        say("7. A call that times out (1 s without progress)")
        try:
            await client.call_tool("sleep", {"seconds": 30}, progress_idle_timeout=1.0)
        except RequestTimeout as exc:
            line(f"RequestTimeout: {exc}")

        say("8. Ping (its answer comes after anything the server sent before it)")
        await client.ping()
        line("pong")
        late = [r for r in client.session.requests() if r.late_events]
        line(f"responses that arrived for cancelled requests: {len(late)} (the server sent none)")

        say("9. Shutdown: close the server's stdin; it exits on end of input")
    demo.shutdown(client, transport, "client requests (the handshake era)")


async def _modern_era(demo: _Demo) -> None:
    say, line = demo.say, demo.line
    demo.spawn_line("Spawn the same server again")
    async with demo.open("modern") as client:
        transport = client.session.transport
        assert isinstance(transport, StdioProcess)
        say("1. No handshake: server/discover says what the server speaks and declares (above)")
        line(era_line(era_summary(client, "modern")))
        assert client.discover_result is not None  # the modern era opens with it
        line(f"supported versions: {', '.join(client.discover_result.supported_versions)}")
        caps = mcp_types.unstructure(client.server_capabilities)
        line(f"server: {client.server_info.name} {client.server_info.version}; capabilities {caps}")
        line("no initialized notification, no session: every request names its version in _meta")

        say("2. Discovery: tools/list (the client keeps it fresh on a subscriptions/listen stream)")
        demo.discovery_note(client)
        tools = await client.list_tools()
        line(f"tools: {', '.join(tool.name for tool in tools.tools)}")

        say("3. The same tool call")
        await demo.order_status(client, "modern")
        if "legacy" in demo.answers:
            line(f"as in the handshake era: {demo.answers['legacy'] == demo.answers['modern']}")

        say("4. A call that asks the user: an input-required round trip")
        result = await client.call_tool("return_order", _ORDER)
        line(f"result: {_text(result)}")
        _narrate_rounds(demo, client)

        say("5. A call cancelled by the client while the server works on it")
        record = await demo.cancelled_call(client)
        # A round trip after the cancel: on stdio, anything the server sent
        # for the cancelled call would arrive before this answer.
        await client.ping()
        assert record.finished_at is not None
        sent = demo.wire.about(record.id, record.finished_at)
        line(
            f"frames the server sent for request {record.id} after the cancel: {sent}; "
            f"late events on its record: {len(record.late_events)}"
        )

        say("6. Shutdown: close the server's stdin; it exits on end of input")
    demo.shutdown(client, transport, "client requests (2026-07-28)")


def _narrate_rounds(demo: _Demo, client: Client) -> None:
    """The rounds of the last ``return_order`` call, as one story, from its
    records and the frames on the wire."""
    records = client.session.requests()
    rounds = call_rounds(records)
    last = _last(records, "tools/call")
    story = sorted(
        (r for r in records if (r.direction, r.id) in rounds),
        key=lambda r: r.queued_at,
    )
    first = rounds[(last.direction, last.id)].first
    for record in story:
        round_ = rounds[(record.direction, record.id)]
        if round_.first != first:
            continue
        sent = demo.wire.find(FrameDirection.OUT, record.id, "params")
        got = demo.wire.find(FrameDirection.IN, record.id, "result")
        what = [f"request {record.id}: {round_.describe()}"]
        if "inputResponses" in sent:
            what.append(f"sent inputResponses {sorted(sent['inputResponses'])}")
        if "requestState" in sent:
            echoed = sent["requestState"] == _state_to_echo(demo, record)
            what.append(f"requestState echoed untouched: {echoed}")
        if round_.input_required:
            what.append(f"the server asked for {sorted(got.get('inputRequests') or {})}")
        demo.line("; ".join(what))
    demo.line("the handler ran once per round (server stderr, above); ctx.saved carried over")


def _state_to_echo(demo: _Demo, record: RequestRecord) -> Any:
    """The ``requestState`` of the round *record* follows (what it must echo)."""
    if record.follows is None:
        return None
    return demo.wire.find(FrameDirection.IN, record.follows, "result").get("requestState")


async def _press_stop(scope: trio.CancelScope, after: float) -> None:
    await trio.sleep(after)
    scope.cancel(reason="the user pressed stop")


def _last(records: list[RequestRecord], method: str) -> RequestRecord:
    return max((r for r in records if r.method == method), key=lambda r: r.queued_at)


def _text(result: mcp_types.CallToolResult) -> str:
    return " ".join(
        block.text for block in result.content if isinstance(block, mcp_types.TextContent)
    )
