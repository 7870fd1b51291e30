"""``Client``: one connected server, its cached offer, typed calls, and handlers.

Theory of operation
-------------------
:func:`~trio_mcp.open_client` (``_open``) opens a session with the client as
its dispatcher and chooses the era (``_era``); then the client runs
(:meth:`Client._running`) over the collaborators it delegates to, made
together (``_parts``): its own nursery holds the list refresher (``_cache``)
and the 2026-07-28 listen streams (``_subscriptions``), and nothing outlives
it. The same calls work in both eras: a call runs the 2026-07-28 input rounds
itself, a tool call that becomes a task is followed to its end (``_calls``,
``_tasks``), and what differs between the eras for a one-round-trip request
is read once (``_requests``). The server's requests go to
:class:`~trio_mcp._client._handlers.ClientHandlers` (the client declares only
what has a handler; the protocol layer refuses the rest with -32601), its
notifications through one table (``_notifications``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal, final, overload

import trio

from .. import types as mcp_types
from .._extensions._registry import CustomMethods, Extension
from .._session import DEFAULT, Middleware, RequestContext, Session, SessionDefault
from ..protocol import NotificationReceived, Progress
from ..protocol._headers import ToolHeaderRules
from ._cache import ClientEvent
from ._calls import ToolCall
from ._era import Negotiated
from ._handlers import ClientHandlers
from ._hidden_text import HiddenCharacter
from ._notifications import LogHandler, default_log_handler
from ._parts import ClientParts
from ._tasks import TaskHandle


@final
class Client:
    """A connected, initialized client. Not constructed directly: use
    :func:`open_client` or :func:`run_client`.

    ``handlers`` answers the server's requests. What the session and its era
    decide is set once the client runs (:meth:`_running`), before any use.
    """

    #: The underlying session (records, statistics).
    session: Session
    #: The server's answer to ``initialize`` (None in 2026-07-28).
    initialize_result: mcp_types.InitializeResult | None
    #: The server's answer to ``server/discover`` (None in the handshake era).
    discover_result: mcp_types.DiscoverResult | None

    def __init__(
        self,
        handlers: ClientHandlers,
        *,
        log_handler: LogHandler | None = None,
        max_pages: int = 1000,
        max_input_rounds: int = 8,
        tasks: bool = False,
        middleware: Sequence[Middleware] = (),
        custom: CustomMethods | None = None,
    ) -> None:
        self.handlers = handlers
        # Methods outside the core set the client answers, and its extensions.
        self._custom = custom if custom is not None else CustomMethods()
        #: The middleware chain of the client's session, in order (read once,
        #: as the session starts).
        self.middleware: tuple[Middleware, ...] = tuple(middleware)
        #: Receives each ``notifications/message`` (sync or async).
        self.log_handler = log_handler or default_log_handler
        self._max_pages = max_pages
        self._max_input_rounds = max_input_rounds
        self._declare_tasks = tasks
        # Notifications come from the session's start; handled once it runs.
        self._running_now = False

    @asynccontextmanager
    async def _running(
        self,
        session: Session,
        negotiated: Negotiated,
        *,
        tool_headers: ToolHeaderRules | None,
        discover: bool,
        probe_timeout: float,
    ) -> AsyncIterator[None]:
        """Run the client over *session* (era: *negotiated*; *tool_headers*: the rules
        of a header-mirroring transport) for the block, in its :class:`ClientParts`.

        Cancellation: as :meth:`ClientParts.running`.
        """
        self.session = session
        self._negotiated = negotiated
        self.initialize_result = negotiated.initialize_result
        self.discover_result = negotiated.discover_result
        self.handlers.server_name = self.server_info.name
        self._parts = parts = ClientParts(
            session,
            negotiated,
            self.handlers,
            self._log,
            tool_headers,
            max_pages=self._max_pages,
            max_input_rounds=self._max_input_rounds,
            declare_tasks=self._declare_tasks,
        )
        self._running_now = True
        running = parts.running(session, discover=discover, probe_timeout=probe_timeout)
        async with running as self._subscriptions:
            yield

    # ----------------------------------------------------------- handshake

    @property
    def era(self) -> str:
        """``"modern"`` (2026-07-28, no handshake) or ``"legacy"`` (a handshake-era session)."""
        return self._negotiated.era

    @property
    def protocol_version(self) -> str:
        """The negotiated revision (2026-07-28: the one every request names)."""
        version = self.session.protocol.protocol_version
        assert version is not None  # negotiated before the client runs
        return version

    @property
    def server_info(self) -> mcp_types.Implementation:
        """The server's ``serverInfo`` (2026-07-28: from the discover result's
        ``_meta``; self-reported, never a security input).

        Spec: ME-12.
        """
        return self._negotiated.server_info

    @property
    def server_capabilities(self) -> mcp_types.ServerCapabilities:
        return self._negotiated.server_capabilities

    @property
    def instructions(self) -> str | None:
        return self._negotiated.instructions

    @property
    def server_extensions(self) -> dict[str, Any]:
        """The extensions the server declared (``capabilities.extensions``),
        by identifier, with their settings; empty when it declared none."""
        return dict(self._negotiated.server_capabilities.extensions or {})

    @property
    def extensions(self) -> Mapping[str, Extension]:
        """The extensions this client installed, by identifier (read-only)."""
        return self._custom.extensions

    # ------------------------------------------------------- cached lists

    @property
    def tools(self) -> dict[str, mcp_types.Tool]:
        """The server's tools by name, as last fetched (every page)."""
        return dict(self._parts.cache.items["tools"])

    @property
    def hidden_text(self) -> dict[str, tuple[HiddenCharacter, ...]]:
        """Characters a reader cannot see in each cached tool's definition, by tool name
        (only tools that have any; :attr:`tools` keeps them verbatim): zero-width,
        bidirectional, tag and control characters (see :class:`~trio_mcp.HiddenCharacter`).

        Spec: X-06.
        """
        return dict(self._parts.cache.hidden_text)

    @property
    def prompts(self) -> dict[str, mcp_types.Prompt]:
        return dict(self._parts.cache.items["prompts"])

    @property
    def resources(self) -> dict[str, mcp_types.Resource]:
        """Resources by URI."""
        return dict(self._parts.cache.items["resources"])

    @property
    def resource_templates(self) -> dict[str, mcp_types.ResourceTemplate]:
        """Resource templates by URI template."""
        return dict(self._parts.cache.items["resource_templates"])

    def generation(self, kind: str) -> int:
        """How many times list *kind* was fetched (``"tools"``, ``"prompts"``,
        ``"resources"``, ``"resource_templates"``)."""
        return self._parts.cache.generation[kind]

    async def refresh(self, kind: str) -> None:
        """Re-fetch list *kind* now, every page.

        Cancellation: the cached list is unchanged if cancelled midway.

        Spec: PA-01, PA-04.
        """
        await self._parts.cache.refresh(kind)

    def is_fresh(self, kind: str) -> bool:
        """Whether cached list *kind* is still fresh: in 2026-07-28 for the ``ttlMs``
        the server gave (0 or none: stale at once), and until the next ``list_changed``
        in either era.

        Spec: CA-06, CA-03.
        """
        return self._parts.cache.is_fresh(kind)

    async def ensure_fresh(self, kind: str) -> None:
        """Refetch list *kind* if it is not fresh (see :meth:`is_fresh`); a checkpoint
        either way. Nothing refetches on its own when a TTL runs out (no polling): call
        this before relying on the list.

        Cancellation: as :meth:`refresh`.

        Spec: CA-03, CA-04, CA-06.
        """
        await self._parts.cache.ensure_fresh(kind)

    async def wait_list_changed(self, kind: str) -> None:
        """Block until the next refresh of list *kind* finishes (e.g. after a
        ``list_changed`` notification).

        Cancellation: a plain wait.
        """
        await self._parts.cache.wait_changed(kind)

    @asynccontextmanager
    async def events(
        self, buffer: int = 64
    ) -> AsyncIterator[trio.MemoryReceiveChannel[ClientEvent]]:
        """A channel of :class:`ListChanged`, :class:`ToolDefinitionChanged` and
        :class:`HiddenTextFound` events, for the duration of the block.

        Events beyond *buffer* unread ones are dropped (counted in
        ``dropped_events``) rather than stalling the session.

        Cancellation: entering and leaving never wait; leaving (also by
        cancellation) stops the events and closes the channel.
        """
        async with self._parts.cache.events(buffer) as channel:
            yield channel

    @property
    def dropped_events(self) -> int:
        return self._parts.cache.dropped_events

    # ------------------------------------------------------------ requests

    async def ping(self) -> None:
        """Check that the server answers: ``ping``; in 2026-07-28, which has none,
        ``server/discover`` (every modern server answers it), its result dropped.

        Cancellation: as :meth:`Session.request`.

        Spec: PI-01, DS-01.
        """
        await self._parts.requests.ping()

    async def call(
        self,
        method: str,
        params: Any = None,
        *,
        result_type: Any = None,
        on_progress: Callable[[Progress], None] | None = None,
        progress_idle_timeout: float | SessionDefault | None = DEFAULT,
        max_duration: float | SessionDefault | None = DEFAULT,
    ) -> Any:
        """Send a request for any *method*, a custom one (an extension's, the
        server's own) included, and return its result: a JSON object, or an
        instance of *result_type* read with the session's converter (a core
        method's result is typed as usual). *params*: a JSON object or an
        attrs instance.

        Time limits, progress, the record and the middleware are those of
        every request (see :meth:`Session.request`).

        Raises:
            RPCError: the server answered with an error (-32601: it has no
                such method; -32021: it needs an extension this client did
                not declare).
            RequestTimeout, SessionClosed: as :meth:`Session.request`.
            InvalidPeerResult: the result does not fit *result_type*.

        Cancellation: as :meth:`Session.request`.
        """
        return await self._parts.requests.call(
            method, params, result_type, on_progress, progress_idle_timeout, max_duration
        )

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification for any *method*, a custom one included.

        In 2026-07-28 over Streamable HTTP no session on the server receives a
        client's notification, so this raises there instead: send a request.

        Raises:
            LocalProtocolError: 2026-07-28 over Streamable HTTP.

        Cancellation: as :meth:`Session.notify`.
        """
        await self._parts.requests.notify(method, params)

    async def list_tools(self, cursor: str | None = None) -> mcp_types.ListToolsResult:
        """One page of ``tools/list`` (the cache is not touched; see :attr:`tools`).

        Cancellation: as :meth:`Session.request`.
        """
        return await self._parts.tool_calls.tools_page(cursor)

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        raise_on_error: bool = False,
        validate: bool = True,
        progress_idle_timeout: float | SessionDefault | None = DEFAULT,
        max_duration: float | SessionDefault | None = DEFAULT,
        as_task: Literal[False] = False,
        ttl: int | None = None,
    ) -> mcp_types.CallToolResult: ...
    @overload
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        raise_on_error: bool = False,
        validate: bool = True,
        progress_idle_timeout: float | SessionDefault | None = DEFAULT,
        max_duration: float | SessionDefault | None = DEFAULT,
        as_task: Literal[True],
        ttl: int | None = None,
    ) -> TaskHandle: ...
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        raise_on_error: bool = False,
        validate: bool = True,
        progress_idle_timeout: float | SessionDefault | None = DEFAULT,
        max_duration: float | SessionDefault | None = DEFAULT,
        as_task: bool = False,
        ttl: int | None = None,
    ) -> mcp_types.CallToolResult | TaskHandle:
        """Call a tool.

        A tool error is a result with ``is_error`` set, not an exception, unless
        *raise_on_error* (then :class:`ToolCallError`). A successful result of a
        tool whose cached definition has an ``outputSchema`` must carry
        ``structuredContent`` matching it (validators are compiled once per
        definition); ``validate=False`` skips this.

        Args:
            name: the tool's name, as :attr:`tools` lists it.
            arguments: the tool's arguments, a JSON object (default: none).
            on_progress: called with each :class:`~trio_mcp.lowlevel.Progress`
                the server reports (synchronously, in the session's reader
                task: keep it quick); giving it asks the server for progress.
            raise_on_error: raise :class:`ToolCallError` for a tool error
                instead of returning the result (default False).
            validate: check ``structuredContent`` against the tool's
                ``outputSchema`` (default True).
            progress_idle_timeout: seconds without an answer or a progress
                report before the call times out (None: never); default: the
                session's (60 s unless changed).
            max_duration: hard cap in seconds on the call, whatever progress
                says (None: no cap); default: the session's (600 s unless changed).
            as_task: ask for the call to run as a task and return a
                :class:`~trio_mcp.tasks.TaskHandle` (default False).
            ttl: with *as_task*, the milliseconds the server should keep the
                task (2025-11-25 only; default: the server's choice).

        Raises:
            RPCError: a protocol error (e.g. unknown tool: -32602).
            InvalidPeerResult: structured content missing or not matching.
            ToolCallError: with *raise_on_error*.
            RequestTimeout, SessionClosed: as :meth:`Session.request`.
            LocalProtocolError: *as_task* to a server that offers no tasks.

        In 2026-07-28 the client answers an input-required result with its handlers
        and retries, at most ``max_input_rounds`` rounds (see :doc:`/explanation/eras`).
        A call the server makes a task without *as_task* is polled to its end here and
        returns what a plain call would have (see :doc:`/howto/tasks`). The timeouts
        apply to each request.

        Cancellation:
            As :meth:`Session.request`, request by request (nothing is sent
            between rounds). A task polled here is cancelled with the call; a
            handle handed back is the caller's (see :meth:`TaskHandle.cancel`).

        Spec: TL-07, TL-13, TO-01..TO-05, CN-01, PG-02, PT-12..PT-15, TK-02, TK-03, TK-12, TK-14,
        TK-19.
        """
        call = ToolCall(
            self._parts.tool_calls,
            name,
            arguments,
            on_progress,
            progress_idle_timeout,
            max_duration,
        )
        answer = await call.send(as_task=as_task, ttl=ttl)
        if as_task:
            return call.handle(answer)
        if not isinstance(answer, mcp_types.CallToolResult):
            answer = await call.settle(answer)  # the server made it a task
        return call.checked(answer, raise_on_error=raise_on_error, validate=validate)

    async def read_resource(self, uri: str) -> mcp_types.ReadResourceResult:
        """``resources/read`` (with the input-required loop in 2026-07-28, as
        :meth:`call_tool`). Cancellation: as :meth:`Session.request`.

        Spec: RS-02.
        """
        result: mcp_types.ReadResourceResult = await self._parts.rounds.result(
            "resources/read", {"uri": uri}
        )
        return result

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None
    ) -> mcp_types.GetPromptResult:
        """``prompts/get`` (with the input-required loop in 2026-07-28, as
        :meth:`call_tool`). Cancellation: as :meth:`Session.request`."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        result: mcp_types.GetPromptResult = await self._parts.rounds.result("prompts/get", params)
        return result

    async def list_tasks(self) -> list[mcp_types.Task]:
        """Every task the server lists for us: 2025-11-25 ``tasks/list``, every page;
        only where the server declared ``tasks.list``.

        Raises:
            LocalProtocolError: the server offers no ``tasks/list`` (2026-07-28 never does).

        Cancellation: as :meth:`Session.request`; a partial list is discarded.

        Spec: TK-15.
        """
        return await self._parts.tasks.list()

    async def complete(
        self,
        ref: mcp_types.PromptReference | mcp_types.ResourceTemplateReference,
        argument: str,
        value: str,
        *,
        context_arguments: dict[str, str] | None = None,
    ) -> mcp_types.CompleteResult:
        """``completion/complete`` for *argument* = *value* of *ref*.

        *context_arguments* (2025-06-18+) are arguments already resolved; dropped for
        older revisions.

        Cancellation: as :meth:`Session.request`.

        Spec: CP-02, CP-03.
        """
        return await self._parts.requests.complete(ref, argument, value, context_arguments)

    async def set_logging_level(self, level: mcp_types.LoggingLevel | str) -> None:
        """Ask for log messages at *level* and above; they go to the ``log_handler``.

        Handshake era: ``logging/setLevel``. 2026-07-28: every later request carries
        ``io.modelcontextprotocol/logLevel`` (see :doc:`/explanation/eras`).

        Cancellation: as :meth:`Session.request`; in 2026-07-28 a checkpoint only.

        Spec: LG-03, ME-15, LG-07.
        """
        await self._parts.requests.set_logging_level(level)

    # ------------------------------------------------------- subscriptions

    async def subscribe(self, uri: str) -> None:
        """``resources/subscribe``; updates arrive on :meth:`resource_updates`.

        Cancellation: as :meth:`Session.request`.

        Spec: RS-06.
        """
        await self.session.request("resources/subscribe", {"uri": uri})

    async def unsubscribe(self, uri: str) -> None:
        """``resources/unsubscribe``.

        Cancellation: as :meth:`Session.request`.

        Spec: RS-06.
        """
        await self.session.request("resources/unsubscribe", {"uri": uri})

    @asynccontextmanager
    async def resource_updates(
        self, uri: str | None = None, *, buffer: int = 64
    ) -> AsyncIterator[trio.MemoryReceiveChannel[str]]:
        """A channel of updated resource URIs for the duration of the block.

        With *uri*, subscribes first and unsubscribes on exit, and yields only updates
        for *uri* or a sub-resource of it. Without, yields every update of every
        subscription. Updates beyond *buffer* unread ones are dropped rather than
        stalling the session.

        In 2026-07-28 (a *uri* is required there) the block is one
        ``subscriptions/listen`` stream (see :doc:`/explanation/eras`); when the
        server ends it, the channel ends: listen again to go on.

        Raises:
            LocalProtocolError: in 2026-07-28, the server does not declare
                ``resources.subscribe``; nothing is sent.
            ValueError: in 2026-07-28, no *uri*.

        Cancellation: leaving the block unsubscribes (shielded, bounded by the
        session's ``cancel_notify_grace``; nothing once the session is closed).

        Spec: RS-06, SB-02, SB-06, SB-08, SB-17.
        """
        async with self._subscriptions.resource_updates(uri, buffer=buffer) as updates:
            yield updates

    @property
    def max_input_rounds(self) -> int:
        """Bound on the input-required rounds of one call (2026-07-28)."""
        return self._parts.rounds.max_rounds

    @max_input_rounds.setter
    def max_input_rounds(self, value: int) -> None:
        self._parts.rounds.max_rounds = value

    # ----------------------------------------------------------- roots

    async def set_roots(self, roots: Sequence[mcp_types.Root]) -> None:
        """Replace the roots and send ``notifications/roots/list_changed``.

        Only when the client was opened with ``roots=`` (the capability is fixed
        at the handshake).

        Raises:
            ValueError: a root is not a ``file://`` URI.
            RuntimeError: the client did not declare roots.

        Cancellation: the roots are replaced before anything waits; then as
        :meth:`notify_roots_changed`.

        Spec: RT-03, RT-04.
        """
        self.handlers.replace_roots(roots)
        await self.notify_roots_changed()

    async def notify_roots_changed(self) -> None:
        """Tell the server the roots changed (when a roots *function* now returns
        something else).

        Cancellation: as :meth:`Session.notify` (cancelled before it is
        queued, nothing is sent).

        Spec: RT-03.
        """
        self.handlers.require_roots()
        await self._parts.requests.roots_changed()

    # ------------------------------------------------------ elicitation

    async def wait_elicitation_complete(self, elicitation_id: str) -> None:
        """Block until the server reports URL elicitation *elicitation_id* complete.
        Only ids the application accepted are tracked.

        Raises:
            KeyError: the id is neither pending nor completed.

        Cancellation: a checkpoint, also when the id already completed; a
        cancelled wait leaves the elicitation tracked (wait again).

        Spec: EL-08.
        """
        await self.handlers.wait_url_completed(elicitation_id)

    # --------------------------------------------------------- closing

    async def aclose(self) -> None:
        """Close the client: calls in flight fail with :class:`SessionClosed`, the
        server is told about each (``notifications/cancelled``), and the transport
        is closed.

        Cancellation: bounded and shielded, as :meth:`Session.aclose`.
        """
        await self.session.aclose("client closed")

    # ------------------------------------------------------ dispatching

    def _log(self, params: mcp_types.LoggingMessageNotificationParams) -> Any:
        return self.log_handler(params)  # read at each message: it may be replaced

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Answer one request of the server with the handlers.

        Cancellation: the handler runs in the request's cancel scope.
        """
        if ctx.method in self._custom:
            return await self._custom.handle_request(ctx)
        return await self.handlers.handle_request(ctx)

    async def handle_notification(self, session: Session, event: NotificationReceived) -> None:
        """React to one notification of the server, through the table of notification
        handlers (ignored until the client runs).

        Cancellation: only an async ``log_handler`` waits.
        """
        if self._running_now:
            if event.method in self._custom:
                await self._custom.handle_notification(session, event)
                return
            await self._parts.notified(event)
