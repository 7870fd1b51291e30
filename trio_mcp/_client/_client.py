"""``Client``: one connected server, its cached offer, typed calls, and handlers.

Theory of operation
-------------------
:func:`open_client` opens a session, runs the handshake (our newest revision
offered, any supported counter-offer accepted, anything else refused), then
discovers every list the server declared, page by page. A small nursery owned
by the ``async with`` holds one task, the list refresher (see
``_client_cache``); nothing outlives the block. :func:`run_client` is the same
for ``nursery.start``: it hands the client back and runs until the client is
closed.

The server's requests (``roots/list``, ``sampling/createMessage``,
``elicitation/create``) go to :class:`~trio_mcp._client._handlers.ClientHandlers`;
the client declares only what has a handler, so everything else is refused
with -32601 by the protocol layer.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, final

import trio

from .. import types as mcp_types
from .._errors import HandshakeRefused, InvalidPeerResult, MCPError, RPCError
from .._session._engine import DEFAULT, RequestContext, Session, open_session
from .._transport import Transport
from .._util import covers
from ..protocol import Connection, ErrorCode, NotificationReceived, Progress, Role
from ._cache import LISTS, ClientEvent, ListCache
from ._handlers import (
    ClientHandlers,
    FormElicitationHandler,
    RootsSource,
    SamplingHandler,
    URLElicitationHandler,
    check_roots,
)
from ._hidden_text import HiddenCharacter

logger = logging.getLogger("trio_mcp.client")
server_log = logging.getLogger("trio_mcp.server_log")

#: Receives each ``notifications/message`` (sync or async).
LogHandler = Callable[[mcp_types.LoggingMessageNotificationParams], Any]

_PY_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class ToolCallError(MCPError):
    """A tool returned ``isError: true`` and the caller asked for an exception.

    ``result`` is the full :class:`~trio_mcp.types.CallToolResult`.
    """

    def __init__(self, name: str, result: mcp_types.CallToolResult) -> None:
        text = " ".join(
            block.text for block in result.content if isinstance(block, mcp_types.TextContent)
        )
        super().__init__(f"tool {name!r} failed: {text or '(no text)'}")
        self.name = name
        self.result = result


def _default_log_handler(params: mcp_types.LoggingMessageNotificationParams) -> None:
    level = _PY_LEVELS.get(params.level.value, logging.INFO)
    server_log.log(level, "%s: %s", params.logger or "server", params.data)


@final
class Client:
    """A connected, initialized client. Not constructed directly: use
    :func:`open_client` or :func:`run_client`.

    ``session`` is the underlying :class:`Session` (records, statistics);
    ``handlers`` answers the server's requests.
    """

    def __init__(
        self,
        session: Session,
        initialize_result: mcp_types.InitializeResult,
        handlers: ClientHandlers,
        *,
        log_handler: LogHandler | None = None,
        max_pages: int = 1000,
    ) -> None:
        self.session = session
        #: The server's answer to ``initialize``.
        self.initialize_result = initialize_result
        self.handlers = handlers
        handlers.server_name = initialize_result.server_info.name
        self.log_handler = log_handler or _default_log_handler
        self._cache = ListCache(
            self._request, session.protocol.peer_capabilities, max_pages=max_pages
        )
        self._updates: list[tuple[str | None, trio.MemorySendChannel[str]]] = []
        #: URL elicitations completed (ids), for waiters that come late.
        self._completed_elicitations: set[str] = set()

    async def _request(self, method: str, params: Any) -> Any:
        return await self.session.request(method, params)

    # ----------------------------------------------------------- handshake

    @property
    def protocol_version(self) -> str:
        """The negotiated revision."""
        return self.initialize_result.protocol_version

    @property
    def server_info(self) -> mcp_types.Implementation:
        return self.initialize_result.server_info

    @property
    def server_capabilities(self) -> mcp_types.ServerCapabilities:
        return self.initialize_result.capabilities

    @property
    def instructions(self) -> str | None:
        return self.initialize_result.instructions

    # ------------------------------------------------------- cached lists

    @property
    def tools(self) -> dict[str, mcp_types.Tool]:
        """The server's tools by name, as last fetched (every page)."""
        return dict(self._cache.items["tools"])

    @property
    def hidden_text(self) -> dict[str, tuple[HiddenCharacter, ...]]:
        """Characters a reader cannot see in each cached tool's definition, by
        tool name (only tools that have any; reliability X-06). The tools in
        :attr:`tools` are verbatim; see :mod:`trio_mcp._client._hidden_text` for what
        is flagged."""
        return dict(self._cache.hidden_text)

    @property
    def prompts(self) -> dict[str, mcp_types.Prompt]:
        return dict(self._cache.items["prompts"])

    @property
    def resources(self) -> dict[str, mcp_types.Resource]:
        """Resources by URI."""
        return dict(self._cache.items["resources"])

    @property
    def resource_templates(self) -> dict[str, mcp_types.ResourceTemplate]:
        """Resource templates by URI template."""
        return dict(self._cache.items["resource_templates"])

    def generation(self, kind: str) -> int:
        """How many times list *kind* was fetched (``"tools"``, ``"prompts"``,
        ``"resources"``, ``"resource_templates"``)."""
        return self._cache.generation[kind]

    async def refresh(self, kind: str) -> None:
        """Re-fetch list *kind* now, every page.

        Cancellation: the cached list is unchanged if cancelled midway.

        Spec: PA-01, PA-04.
        """
        if kind not in LISTS:
            raise ValueError(f"unknown list {kind!r}; one of {sorted(LISTS)}")
        await self._cache.refresh(kind)

    async def wait_list_changed(self, kind: str) -> None:
        """Block until the next refresh of list *kind* finishes (e.g. after a
        ``list_changed`` notification).

        Cancellation: a plain wait.
        """
        if kind not in LISTS:
            raise ValueError(f"unknown list {kind!r}; one of {sorted(LISTS)}")
        await self._cache.wait_changed(kind)

    @asynccontextmanager
    async def events(
        self, buffer: int = 64
    ) -> AsyncIterator[trio.MemoryReceiveChannel[ClientEvent]]:
        """A channel of :class:`ListChanged`, :class:`ToolDefinitionChanged` and
        :class:`HiddenTextFound` events, for the duration of the block.

        Events beyond *buffer* unread ones are dropped (counted in
        ``dropped_events``) rather than stalling the session.

        Cancellation:
            Entering and leaving the block never wait; leaving it, also by
            cancellation, stops the events and closes the channel.
        """
        channel = self._cache.subscribe(buffer)
        try:
            yield channel
        finally:
            self._cache.unsubscribe(channel)
            channel.close()

    @property
    def dropped_events(self) -> int:
        return self._cache.dropped_events

    # ------------------------------------------------------------ requests

    async def ping(self) -> None:
        """Ping the server (PI-01).

        Cancellation: as :meth:`Session.request`.
        """
        await self.session.request("ping")

    async def list_tools(self, cursor: str | None = None) -> mcp_types.ListToolsResult:
        """One page of ``tools/list`` (the cache is not touched; see :attr:`tools`).

        Cancellation: as :meth:`Session.request`.
        """
        params = {"cursor": cursor} if cursor is not None else None
        result: mcp_types.ListToolsResult = await self.session.request("tools/list", params)
        return result

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        raise_on_error: bool = False,
        validate: bool = True,
        progress_idle_timeout: float | None = DEFAULT,
        max_duration: float | None = DEFAULT,
    ) -> mcp_types.CallToolResult:
        """Call a tool.

        A tool error is a result with ``is_error`` set, not an exception, unless
        *raise_on_error* (then :class:`ToolCallError`). A successful result of a
        tool whose cached definition has an ``outputSchema`` must carry
        ``structuredContent`` matching it (validators are compiled once per
        definition); *validate* = False skips this.

        Raises:
            RPCError: a protocol error (e.g. unknown tool: -32602).
            InvalidPeerResult: structured content missing or not matching.
            ToolCallError: with *raise_on_error*.
            RequestTimeout, SessionClosed: as :meth:`Session.request`.

        Cancellation:
            As :meth:`Session.request`: the server is told with
            ``notifications/cancelled`` and a late result is ignored.

        Spec: TL-07, TL-13, TO-01..TO-05, CN-01, PG-02.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        result: mcp_types.CallToolResult = await self.session.request(
            "tools/call",
            params,
            on_progress=on_progress,
            progress_idle_timeout=progress_idle_timeout,
            max_duration=max_duration,
        )
        if result.is_error:
            if raise_on_error:
                raise ToolCallError(name, result)
            return result
        if validate:
            self._check_structured(name, result)
        return result

    def _check_structured(self, name: str, result: mcp_types.CallToolResult) -> None:
        try:
            validator = self._cache.output_validator(name)
        except Exception as exc:  # jsonschema.SchemaError: the server's schema is broken
            raise InvalidPeerResult(
                f"tool {name!r} has an invalid outputSchema", [str(exc).splitlines()[0]]
            ) from None
        if validator is None:
            return
        if result.structured_content is None:
            raise InvalidPeerResult(
                f"tool {name!r} declares an outputSchema", ["structuredContent is missing"]
            )
        errors = [
            f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
            for e in validator.iter_errors(result.structured_content)
        ]
        if errors:
            raise InvalidPeerResult(
                f"structuredContent of tool {name!r} does not match its outputSchema", errors
            )

    async def read_resource(self, uri: str) -> mcp_types.ReadResourceResult:
        """``resources/read``. Cancellation: as :meth:`Session.request`. Spec: RS-02."""
        result: mcp_types.ReadResourceResult = await self.session.request(
            "resources/read", {"uri": uri}
        )
        return result

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None
    ) -> mcp_types.GetPromptResult:
        """``prompts/get``. Cancellation: as :meth:`Session.request`."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        result: mcp_types.GetPromptResult = await self.session.request("prompts/get", params)
        return result

    async def complete(
        self,
        ref: mcp_types.PromptReference | mcp_types.ResourceTemplateReference,
        argument: str,
        value: str,
        *,
        context_arguments: dict[str, str] | None = None,
    ) -> mcp_types.CompleteResult:
        """``completion/complete`` for *argument* = *value* of *ref*.

        *context_arguments* (2025-06-18+) are arguments already resolved (CP-03);
        dropped for older revisions.

        Cancellation: as :meth:`Session.request`. Spec: CP-02, CP-03.
        """
        revision = self.session.protocol.revision
        params = mcp_types.CompleteRequestParams(
            ref=ref,
            argument=mcp_types.CompletionArgument(name=argument, value=value),
            context=(
                mcp_types.CompletionContext(arguments=context_arguments)
                if context_arguments is not None
                and revision is not None
                and revision.completion_context
                else None
            ),
        )
        result: mcp_types.CompleteResult = await self.session.request("completion/complete", params)
        return result

    async def set_logging_level(self, level: mcp_types.LoggingLevel | str) -> None:
        """``logging/setLevel``. Messages go to the ``log_handler``. Spec: LG-03.

        Cancellation:
            As :meth:`Session.request`: ``notifications/cancelled`` follows if
            the request was written, and ``Cancelled`` propagates.
        """
        level = mcp_types.LoggingLevel(level)
        await self.session.request("logging/setLevel", {"level": level.value})

    # ------------------------------------------------------- subscriptions

    async def subscribe(self, uri: str) -> None:
        """``resources/subscribe``; updates arrive on :meth:`resource_updates`. Spec: RS-06.

        Cancellation:
            As :meth:`Session.request`: ``notifications/cancelled`` follows if
            the request was written, and ``Cancelled`` propagates.
        """
        await self.session.request("resources/subscribe", {"uri": uri})

    async def unsubscribe(self, uri: str) -> None:
        """``resources/unsubscribe``. Spec: RS-06.

        Cancellation:
            As :meth:`Session.request`: ``notifications/cancelled`` follows if
            the request was written, and ``Cancelled`` propagates.
        """
        await self.session.request("resources/unsubscribe", {"uri": uri})

    @asynccontextmanager
    async def resource_updates(
        self, uri: str | None = None, *, buffer: int = 64
    ) -> AsyncIterator[trio.MemoryReceiveChannel[str]]:
        """A channel of updated resource URIs for the duration of the block.

        With *uri*, subscribes first and unsubscribes on exit, and yields only
        updates for *uri* or a sub-resource of it (RS-06). Without, yields every
        update of every subscription. Updates beyond *buffer* unread ones are
        dropped rather than stalling the session.

        Cancellation:
            Leaving the block unsubscribes (bounded by the session's
            ``cancel_notify_grace``, shielded); if the session is closed by
            then, nothing is sent.
        """
        send, receive = trio.open_memory_channel[str](buffer)
        entry = (uri, send)
        self._updates.append(entry)
        try:
            if uri is not None:
                await self.subscribe(uri)
            yield receive
        finally:
            self._updates.remove(entry)
            send.close()
            if uri is not None and not self.session.closed:
                with trio.CancelScope(shield=True):
                    with trio.move_on_after(self.session.cancel_notify_grace):
                        try:
                            await self.unsubscribe(uri)
                        except MCPError as exc:
                            logger.debug("unsubscribe %s failed: %s", uri, exc)

    # ----------------------------------------------------------- roots

    async def set_roots(self, roots: Sequence[mcp_types.Root]) -> None:
        """Replace the roots and send ``notifications/roots/list_changed`` (RT-03).

        Only when the client was opened with ``roots=`` (the capability is fixed
        at the handshake).

        Raises:
            ValueError: a root is not a ``file://`` URI (RT-04).
            RuntimeError: the client did not declare roots.

        Cancellation:
            The roots are replaced before anything waits; the notification is
            then sent as by :meth:`notify_roots_changed`.
        """
        if self.handlers.roots is None:
            raise RuntimeError("open the client with roots= to expose roots")
        self.handlers.roots = check_roots(roots)
        await self.notify_roots_changed()

    async def notify_roots_changed(self) -> None:
        """Tell the server the roots changed (when a roots *function* now returns
        something else). Spec: RT-03.

        Cancellation:
            As :meth:`Session.notify`: a checkpoint; cancelled before the
            notification is queued, nothing is sent.
        """
        if self.handlers.roots is None:
            raise RuntimeError("open the client with roots= to expose roots")
        await self.session.notify("notifications/roots/list_changed")

    # ------------------------------------------------------ elicitation

    async def wait_elicitation_complete(self, elicitation_id: str) -> None:
        """Block until the server reports URL elicitation *elicitation_id*
        complete (EL-08). Only ids the application accepted are tracked.

        Raises:
            KeyError: the id is neither pending nor completed.

        Cancellation:
            A checkpoint, also when the id already completed; a cancelled wait
            leaves the elicitation tracked, so it can be waited for again.
        """
        if elicitation_id in self._completed_elicitations:
            await trio.lowlevel.checkpoint()
            return
        event = self.handlers.pending_url.get(elicitation_id)
        if event is None:
            raise KeyError(elicitation_id)
        await event.wait()

    # --------------------------------------------------------- closing

    async def aclose(self) -> None:
        """Close the client: calls in flight fail with :class:`SessionClosed`, the
        server is told about each (``notifications/cancelled``), and the transport
        is closed.

        Cancellation: bounded and shielded, as :meth:`Session.aclose`.
        """
        await self.session.aclose("client closed")

    # ------------------------------------------------------ dispatching

    async def handle_request(self, ctx: RequestContext) -> Any:
        return await self.handlers.handle_request(ctx)

    async def handle_notification(self, session: Session, event: NotificationReceived) -> None:
        method = event.method
        params = event.params
        if method.endswith("/list_changed"):
            self._cache.mark_dirty(method)
        elif method == "notifications/resources/updated":
            for wanted, send in list(self._updates):
                uri = params.uri
                if wanted is None or covers(wanted, uri):
                    try:
                        send.send_nowait(uri)
                    except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
                        logger.debug("dropped an update of %s", uri)
        elif method == "notifications/message":
            value = self.log_handler(params)
            if inspect.isawaitable(value):
                await value
        elif method == "notifications/elicitation/complete":
            if self.handlers.elicitation_completed(params.elicitation_id):
                self._completed_elicitations.add(params.elicitation_id)
            else:
                logger.debug("ignored completion of unknown elicitation %s", params)


class _ClientDispatcher:
    """Routes the server's messages; requests go to the handlers from the start
    (the protocol refuses all but ping before the handshake completes)."""

    def __init__(self, handlers: ClientHandlers) -> None:
        self.handlers = handlers
        self.client: Client | None = None

    async def handle_request(self, ctx: RequestContext) -> Any:
        return await self.handlers.handle_request(ctx)

    async def handle_notification(self, session: Session, event: NotificationReceived) -> None:
        if self.client is not None:
            await self.client.handle_notification(session, event)


@asynccontextmanager
async def open_client(
    transport: Transport,
    *,
    name: str = "trio_mcp-client",
    version: str = "0.1.0",
    protocol_version: str | None = None,
    roots: RootsSource | None = None,
    sampling: SamplingHandler | None = None,
    sampling_tools: bool = False,
    elicitation: FormElicitationHandler | None = None,
    url_elicitation: URLElicitationHandler | None = None,
    apply_elicitation_defaults: bool = False,
    log_handler: LogHandler | None = None,
    discover: bool = True,
    max_pages: int = 1000,
    **session_options: Any,
) -> AsyncIterator[Client]:
    """Open a session over *transport*, run the handshake, discover, yield the :class:`Client`.

    The client offers its newest revision (or *protocol_version*), accepts any
    supported counter-offer, refuses one it cannot speak
    (:class:`~trio_mcp.protocol.UnsupportedProtocolVersion`, and the session
    closes), and sends ``notifications/initialized``. With *discover* it then
    fetches every list the server declared (tools, prompts, resources,
    templates), following every page.

    Args:
        roots: roots to expose (list of :class:`~trio_mcp.types.Root`, or a
            function returning them); declares ``roots.listChanged``.
        sampling: answers ``sampling/createMessage``; *sampling_tools* declares
            that it handles ``tools``/``toolChoice``.
        elicitation: answers form-mode elicitations (with a checked schema; the
            answer is checked before it is sent; *apply_elicitation_defaults*
            fills missing fields from the schema's defaults).
        url_elicitation: answers URL-mode elicitations; the URL is never opened
            by the library.
        log_handler: receives ``notifications/message`` (default: the
            ``trio_mcp.server_log`` Python logger).
        max_pages: bound on pages of one list.
        session_options: passed to :func:`open_session`.

    Cancellation:
        ``initialize`` is never cancelled by message (CN-03): if the handshake is
        cancelled or times out, the session and transport are torn down instead.
        Leaving the body shuts the session down (see :func:`open_session`): calls
        still in flight in other tasks fail with ``SessionClosed`` and the server
        is told about each.

    Spec: LC-02, LC-04, LC-05, LC-07, LC-09, CN-03, RT-01, SM-01, EL-01, PA-04.
    """
    handlers = ClientHandlers(
        roots=roots,
        sampling=sampling,
        sampling_tools=sampling_tools,
        elicitation=elicitation,
        url_elicitation=url_elicitation,
        apply_elicitation_defaults=apply_elicitation_defaults,
    )
    protocol = Connection(
        Role.CLIENT,
        capabilities=handlers.capabilities(),
        info={"name": name, "version": version},
    )
    dispatcher = _ClientDispatcher(handlers)
    async with open_session(transport, protocol, dispatcher, **session_options) as session:
        message = protocol.initialize_request(protocol_version)
        try:
            result: mcp_types.InitializeResult = await session._call(
                message, None, DEFAULT, DEFAULT
            )
        except RPCError as error:
            raise _refusal(error) from error
        note = protocol.complete_handshake(result)
        client = Client(session, result, handlers, log_handler=log_handler, max_pages=max_pages)
        dispatcher.client = client
        await session._queue(note)
        async with trio.open_nursery() as nursery:
            if discover:
                await client._cache.discover()
            nursery.start_soon(client._cache.run_refresher, name="trio_mcp list refresher")
            try:
                yield client
            finally:
                nursery.cancel_scope.cancel(reason="client closed")


def _refusal(error: RPCError) -> MCPError:
    """What an error answer to ``initialize`` means to the caller: a server that
    refuses the offered version and names its own (-32022 with ``supported``,
    as a 2026-07-28-only server does) refused the handshake; any other error is
    the server's :class:`RPCError` as it came."""
    data = error.data
    supported = data.get("supported") if isinstance(data, dict) else None
    if (
        error.code != ErrorCode.UNSUPPORTED_PROTOCOL_VERSION
        or not isinstance(supported, list)
        or not all(isinstance(version, str) for version in supported)
    ):
        return error
    return HandshakeRefused(
        f"the server refused the MCP handshake: initialize answered JSON-RPC error "
        f"{error.code}: {error.message}: this server speaks only {', '.join(supported)}",
        supported=supported,
    )


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
