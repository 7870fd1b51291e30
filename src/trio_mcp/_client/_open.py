"""Opening a client: :func:`open_client` and :func:`run_client`.

:func:`open_client` builds the client's handlers from the application's
functions, opens a session over the transport with the :class:`Client` as
its dispatcher, chooses the era (``trio_mcp._client._era``) and runs the
client for the duration of the block (:meth:`Client._running`: its nursery,
discovery, the list refresher). :func:`run_client` is the same for
``nursery.start``: it hands the client back and runs until the client is
closed.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import trio

from .._extensions._registry import (
    CustomMethods,
    Extension,
    Handler,
    NotificationHandler,
    RequestHandler,
)
from .._session import Middleware, open_session
from .._telemetry._switch import TelemetryMode, telemetry_middleware, watching
from .._transport import EraHints, HeaderMirroringTransport, Transport
from ..protocol import Connection, Kind, Role
from ._client import Client
from ._era import EraChoice, negotiate
from ._handlers import (
    ClientHandlers,
    FormElicitationHandler,
    RootsSource,
    SamplingHandler,
    URLElicitationHandler,
)
from ._notifications import LogHandler
from ._task_receiver import ReceiverTasks


@asynccontextmanager
async def open_client(
    transport: Transport,
    *,
    name: str = "trio_mcp-client",
    version: str = "0.1.0",
    protocol_version: str | None = None,
    era: EraChoice = "auto",
    probe_timeout: float = 2.0,
    probe: bool = True,
    roots: RootsSource | None = None,
    sampling: SamplingHandler | None = None,
    sampling_tools: bool = False,
    elicitation: FormElicitationHandler | None = None,
    url_elicitation: URLElicitationHandler | None = None,
    apply_elicitation_defaults: bool = False,
    log_handler: LogHandler | None = None,
    discover: bool = True,
    max_pages: int = 1000,
    max_input_rounds: int = 8,
    tasks: bool = False,
    accept_tasks: bool = False,
    middleware: Sequence[Middleware] = (),
    extensions: Sequence[Extension] = (),
    custom_requests: Mapping[str, RequestHandler] | None = None,
    custom_notifications: Mapping[str, NotificationHandler] | None = None,
    telemetry: TelemetryMode | None = None,
    telemetry_capture: bool | None = None,
    **session_options: Any,
) -> AsyncIterator[Client]:
    """Open a session over *transport*, choose the era, discover, yield the :class:`Client`.

    *era* (default ``"auto"``) chooses how the connection opens: ``"auto"`` probes with
    ``server/discover`` and falls back to the handshake on a handshake-era answer, or on
    none within *probe_timeout* seconds where an unknown request may go unanswered
    (stdio, WebSocket; over Streamable HTTP every request is answered, so the answer
    alone decides, bounded by the request timeout); ``"modern"`` speaks only 2026-07-28;
    ``"legacy"`` only the handshake (our newest handshake-era revision, or
    *protocol_version*, offered; any supported counter-offer accepted; one we cannot
    speak refused with :class:`~trio_mcp.protocol.UnsupportedProtocolVersion`).
    ``probe=False`` makes ``"auto"`` start with the handshake (a server known to be
    handshake-era). ``client.era`` and ``client.protocol_version`` say what was chosen.
    With *discover* the client then fetches every list the server declared (tools,
    prompts, resources, templates), following every page, and in 2026-07-28 keeps them
    fresh through a ``subscriptions/listen`` stream, opened first: the lists are fetched
    once the server has acknowledged it (waiting at most *probe_timeout* for that), so
    no change is missed.

    Args:
        transport: the channel of frames to the server (see :mod:`trio_mcp.transports`).
        name: the ``clientInfo`` name sent to the server.
        version: the ``clientInfo`` version sent to the server.
        protocol_version: the handshake-era revision to offer (default: our newest).
        era: ``"auto"`` (default), ``"modern"`` or ``"legacy"``, as above.
        probe_timeout: seconds to wait for the answer to the era probe, and for the
            listen stream's acknowledgment (default 2).
        probe: False starts ``"auto"`` with the handshake, as above.
        roots: roots to expose (list of :class:`~trio_mcp.types.Root`, or a
            function returning them); declares ``roots.listChanged``.
        sampling: answers ``sampling/createMessage``.
        sampling_tools: declare that the *sampling* handler handles
            ``tools``/``toolChoice``.
        elicitation: answers form-mode elicitations (with a checked schema; the answer
            is checked before it is sent).
        apply_elicitation_defaults: fill the fields an elicitation answer leaves out
            from the schema's defaults.
        url_elicitation: answers URL-mode elicitations; the URL is never opened
            by the library.
        log_handler: receives ``notifications/message`` (default: the
            ``trio_mcp.server_log`` Python logger).
        discover: fetch every list the server declared, as above (default True).
        max_pages: bound on pages of one list.
        max_input_rounds: 2026-07-28: bound on the input-required rounds of one call.
        tasks: 2026-07-28: declare the tasks extension on every tool call, so
            the server may run any of them as a task (``call_tool`` then polls
            it to the end); without it only ``as_task=True`` calls declare it.
        accept_tasks: 2025-11-25: declare ``tasks.requests`` for the sampling and
            elicitation handlers given, and run the server's task-augmented requests of
            those kinds as tasks (answered at once with a task id; the server polls
            them), for as long as the client lives.
        middleware: the chain every request and notification of the session
            passes through, both ways, in this order (the first is the
            outermost); see :class:`~trio_mcp.extensions.Middleware`.
        extensions: extensions the client installs (see
            :class:`~trio_mcp.extensions.Extension`): declared in its
            capabilities (``initialize``; every 2026-07-28 request's
            ``_meta``), their methods answered. Installed in order, each whole
            or not at all.
        custom_requests, custom_notifications: handlers of methods outside
            the core set the server may send, by name: ``fn(params, ctx)``
            for a request (handshake era only: 2026-07-28 has no server
            requests), ``fn(params, session)`` for a notification.
        telemetry: OpenTelemetry, as ``Server(telemetry=...)``: ``"native"``,
            ``"propagation"`` or ``"off"``; default ``TRIO_MCP_TELEMETRY``,
            else ``"native"`` when the OpenTelemetry API is installed. Its
            middleware is the outermost.
        telemetry_capture: put each ``tools/call``'s arguments and result on
            its span (``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``),
            as ``Server(telemetry_capture=...)``. Default
            ``TRIO_MCP_TELEMETRY_CAPTURE``, else off.
        session_options: passed to :func:`open_session`.

    Raises:
        ValueError: an extension or custom method that cannot be installed
            (a core method, a duplicate, a missing dependency).
        HandshakeRefused: the server speaks no revision we do (or, with
            ``era="modern"``, no 2026-07-28 one).
        ProbeClosedConnection: ``era="auto"`` and the server closed the
            connection on the probe (the stdio client then starts it again).

    Cancellation:
        ``initialize`` is never cancelled by message: if the handshake is
        cancelled or times out, the session and transport are torn down instead.
        Leaving the body shuts the session down (see :func:`open_session`): calls
        still in flight in other tasks fail with ``SessionClosed`` and the server
        is told about each.

    Spec: LC-02, LC-04, LC-05, LC-07, LC-09, CN-03, RT-01, SM-01, EL-01, PA-04, VR-11, VR-12, SI-14,
    SI-16, DS-04, ME-06, ME-08, SB-02.
    """
    receiver = ReceiverTasks() if accept_tasks else None
    observed = telemetry_middleware(
        telemetry, "client", transport=transport, capture=telemetry_capture
    )
    if observed is not None:
        middleware = (observed, *middleware)
    handlers = ClientHandlers(
        roots=roots,
        sampling=sampling,
        sampling_tools=sampling_tools,
        elicitation=elicitation,
        url_elicitation=url_elicitation,
        apply_elicitation_defaults=apply_elicitation_defaults,
        tasks=receiver,
    )
    custom = CustomMethods()
    if receiver is not None:
        # The tasks/* requests of the tasks it runs, through the same point
        # as any extension of the application's.
        custom.install(receiver.extension())
    for extension in extensions:
        custom.install(extension)
    for method, answer in (custom_requests or {}).items():
        custom.add(Handler(method, Kind.REQUEST, answer))
    for method, react in (custom_notifications or {}).items():
        custom.add(Handler(method, Kind.NOTIFICATION, react))
    capabilities = handlers.capabilities()
    # One declaration for the session: a client's capabilities are the same
    # in both eras (2026-07-28 repeats them in each request's _meta).
    declared = custom.declarations(modern=True)
    if declared:
        capabilities["extensions"] = {**capabilities.get("extensions", {}), **declared}
    make_protocol = partial(
        Connection,
        Role.CLIENT,
        capabilities=capabilities,
        info={"name": name, "version": version},
        custom_methods=custom.specs() if custom else None,
    )
    client = Client(
        handlers,
        log_handler=log_handler,
        max_pages=max_pages,
        max_input_rounds=max_input_rounds,
        tasks=tasks,
        middleware=middleware,
        custom=custom,
    )
    hints = transport if isinstance(transport, EraHints) else None
    if era == "auto" and hints is not None and hints.handshake_only:
        era = "legacy"
    # Where every request is answered (an HTTP POST always ends in a status),
    # the probe's answer decides the era: a slow modern server, or one that
    # first asks for authorization, is never taken for a handshake-era one.
    answered = hints is not None and hints.answers_every_request
    async with (
        # The tasks the client runs for its server outlive the requests that
        # started them, not the client.
        receiver.running() if receiver is not None else contextlib.nullcontext(),
        open_session(transport, make_protocol, client, **session_options) as session,
        watching(observed, session),
    ):
        negotiated = await negotiate(
            session,
            session.protocol,
            era,
            probe=probe,
            probe_timeout=None if answered else probe_timeout,
            protocol_version=protocol_version,
        )
        # x-mcp-header matters only where arguments become headers (HM-27),
        # and only in 2026-07-28 (the handshake era has no such headers).
        tool_headers = (
            transport.tool_headers
            if isinstance(transport, HeaderMirroringTransport) and negotiated.era == "modern"
            else None
        )
        async with client._running(
            session,
            negotiated,
            tool_headers=tool_headers,
            discover=discover,
            probe_timeout=probe_timeout,
        ):
            yield client


async def run_client(
    transport: Transport,
    *,
    task_status: trio.TaskStatus[Client] = trio.TASK_STATUS_IGNORED,
    **options: Any,
) -> None:
    """:func:`open_client` for ``nursery.start``: hands back the :class:`Client`
    and runs until it is closed (:meth:`Client.aclose`) or the server goes away.

    Example::

        client = await nursery.start(run_client, transport)
        ...
        await client.aclose()

    Cancellation:
        Cancelling the task closes the client as leaving :func:`open_client` does.
    """
    async with open_client(transport, **options) as client:
        task_status.started(client)
        await client.session.wait_closed()
