"""``Client``: one connected server, its cached offer, typed calls, and handlers.

Theory of operation
-------------------
:func:`open_client` opens a session, chooses its era (``era="auto"`` by
default: a ``server/discover`` probe, then the handshake if the server is not
a 2026-07-28 one; see ``trio_mcp._client._era``), then discovers every list the
server declared, page by page. The same calls work in both eras: in
2026-07-28 every request carries our version, capabilities and ``clientInfo``
(the connection adds them), ``call_tool``/``read_resource``/``get_prompt`` run
the input-required loop themselves (answering each round with the registered
handlers and retrying with a new id until the result is complete), and change
notices arrive on ``subscriptions/listen`` streams the client opens while it
has listeners. A small nursery owned
by the ``async with`` holds one task, the list refresher (see
``_client_cache``); nothing outlives the block. :func:`run_client` is the same
for ``nursery.start``: it hands the client back and runs until the client is
closed.

The server's requests (``roots/list``, ``sampling/createMessage``,
``elicitation/create``) go to :class:`~trio_mcp._client._handlers.ClientHandlers`;
the client declares only what has a handler, so everything else is refused
with -32601 by the protocol layer.

A call the server runs as a task is followed by ``trio_mcp._client._tasks``
(``call_tool(..., as_task=True)`` hands back its ``TaskHandle``; a call that
becomes a task unasked is polled to its end there).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal, final, overload

import attrs
import trio

from .. import types as mcp_types
from .._errors import InvalidPeerResult, MCPError, RPCError, SessionClosed
from .._session._engine import DEFAULT, RequestContext, Session, open_session
from .._transport import Transport
from .._util import covers
from ..protocol import Capability, Connection, NotificationReceived, Progress, Revision, Role
from ._cache import LISTS, ClientEvent, ListCache
from ._era import EraChoice, Negotiated, negotiate
from ._handlers import (
    ClientHandlers,
    FormElicitationHandler,
    RootsSource,
    SamplingHandler,
    URLElicitationHandler,
    check_roots,
)
from ._hidden_text import HiddenCharacter
from ._task_receiver import ReceiverTasks
from ._tasks import ClientTasks, TaskHandle, settle
from ._tool_headers import ToolHeaderRules, is_param_header_mismatch

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


_LOG_LEVEL_KEY = mcp_types.LOG_LEVEL_META_KEY
_SUBSCRIPTION_ID_KEY = mcp_types.SUBSCRIPTION_ID_META_KEY


def _declares(capabilities: dict[str, Any], feature: str) -> bool:
    """Whether a server capability object declares ``<feature>.listChanged``."""
    return Capability(Role.SERVER, (feature, "listChanged")).declared_in(capabilities)


class _Subscription:
    """One 2026-07-28 listen stream of this client, keyed by its request id."""

    __slots__ = ("_ended", "accepted", "acknowledged", "ended", "id", "updates", "wanted")

    def __init__(
        self,
        request_id: Any,
        wanted: mcp_types.SubscriptionFilter,
        updates: trio.MemorySendChannel[str] | None,
    ) -> None:
        self.id = request_id
        self.wanted = wanted
        #: What the server acknowledged it honours (SB-03, SB-04).
        self.accepted: mcp_types.SubscriptionFilter | None = None
        self.acknowledged = trio.Event()
        self.updates = updates
        self.ended = False
        self._ended = trio.Event()

    def end(self) -> None:
        """The stream is over (also wakes whoever waits for the acknowledgment)."""
        self.ended = True
        self._ended.set()
        self.acknowledged.set()

    async def wait_ended(self) -> None:
        """Block until the stream ends (the server ended it, or the session closed)."""
        await self._ended.wait()


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
        negotiated: Negotiated,
        handlers: ClientHandlers,
        *,
        log_handler: LogHandler | None = None,
        max_pages: int = 1000,
        max_input_rounds: int = 8,
        tool_headers: ToolHeaderRules | None = None,
        tasks: bool = False,
    ) -> None:
        self.session = session
        #: The ``x-mcp-header`` rules of a header-mirroring transport (HTTP), else None.
        self._tool_headers = tool_headers
        self._negotiated = negotiated
        #: The server's answer to ``initialize`` (None in 2026-07-28).
        self.initialize_result = negotiated.initialize_result
        #: The server's answer to ``server/discover`` (None in the handshake era).
        self.discover_result = negotiated.discover_result
        self.handlers = handlers
        handlers.server_name = self.server_info.name
        self.log_handler = log_handler or _default_log_handler
        #: Bound on the input-required rounds of one call (2026-07-28).
        self.max_input_rounds = max_input_rounds
        revision = session.protocol.revision
        # Whether calls may be answered with input-required results.
        self._input_rounds = revision is not None and revision.input_required
        revision = session.protocol.revision
        self._cache = ListCache(
            self._request,
            session.protocol.peer_capabilities,
            max_pages=max_pages,
            cache_hints=revision is not None and revision.cache_hints,
            tool_filter=tool_headers.usable if tool_headers is not None else None,
        )
        self._updates: list[tuple[str | None, trio.MemorySendChannel[str]]] = []
        #: URL elicitations completed (ids), for waiters that come late.
        self._completed_elicitations: set[str] = set()
        # 2026-07-28: the open listen streams, by the listen request's id.
        self._subscriptions: dict[Any, _Subscription] = {}
        self._nursery: trio.Nursery | None = None
        # The tasks the server runs for our calls (issue #14).
        self._tasks = ClientTasks(session, self._answer_inputs, declare=tasks, max_pages=max_pages)

    async def _request(self, method: str, params: Any) -> Any:
        return await self.session.request(method, params)

    # ----------------------------------------------------------- handshake

    @property
    def era(self) -> str:
        """``"modern"`` (2026-07-28, no handshake) or ``"legacy"`` (a handshake-era session)."""
        return self._negotiated.era

    @property
    def protocol_version(self) -> str:
        """The negotiated revision (2026-07-28: the one every request names)."""
        version = self.session.protocol.protocol_version
        assert version is not None  # negotiated before the Client exists
        return version

    @property
    def server_info(self) -> mcp_types.Implementation:
        """The server's ``serverInfo`` (2026-07-28: from the discover result's
        ``_meta``; self-reported, never a security input: ME-12)."""
        if self.initialize_result is not None:
            return self.initialize_result.server_info
        info = self.session.protocol.peer_info
        try:
            server_info: mcp_types.Implementation = mcp_types.converter.structure(
                info, mcp_types.Implementation
            )
        except Exception:
            server_info = mcp_types.Implementation(name="", version="")
        return server_info

    @property
    def server_capabilities(self) -> mcp_types.ServerCapabilities:
        if self.initialize_result is not None:
            return self.initialize_result.capabilities
        assert self.discover_result is not None
        return self.discover_result.capabilities

    @property
    def instructions(self) -> str | None:
        if self.initialize_result is not None:
            return self.initialize_result.instructions
        assert self.discover_result is not None
        return self.discover_result.instructions

    @property
    def _revision(self) -> Revision:
        """The negotiated revision (what differs between eras is read from it)."""
        revision = self.session.protocol.revision
        assert revision is not None  # negotiated before the Client exists
        return revision

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

    def is_fresh(self, kind: str) -> bool:
        """Whether cached list *kind* is still fresh: in 2026-07-28 for the
        ``ttlMs`` the server gave (0 or none: stale at once, CA-03), and until
        the next ``list_changed`` in either era (CA-06)."""
        if kind not in LISTS:
            raise ValueError(f"unknown list {kind!r}; one of {sorted(LISTS)}")
        return self._cache.is_fresh(kind)

    async def ensure_fresh(self, kind: str) -> None:
        """Refetch list *kind* if it is not fresh (see :meth:`is_fresh`); a
        checkpoint either way. Nothing refetches on its own when a TTL runs
        out (no polling, CA-04): call this before relying on the list.

        Cancellation: as :meth:`refresh`.

        Spec: CA-03, CA-04, CA-06.
        """
        if self.is_fresh(kind):
            await trio.lowlevel.checkpoint()
            return
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
        """Check that the server answers: ``ping`` in the handshake era (PI-01).
        2026-07-28 has no ping; there it sends ``server/discover``, the one
        request every modern server must answer (DS-01), and drops the result.

        Cancellation: as :meth:`Session.request`.
        """
        if not self._revision.ping:
            await self.session.request("server/discover")
            return
        await self.session.request("ping")

    async def list_tools(self, cursor: str | None = None) -> mcp_types.ListToolsResult:
        """One page of ``tools/list`` (the cache is not touched; see :attr:`tools`).

        Cancellation: as :meth:`Session.request`.
        """
        params = {"cursor": cursor} if cursor is not None else None
        result: mcp_types.ListToolsResult = await self.session.request("tools/list", params)
        if self._tool_headers is not None:
            # Over HTTP a tool with invalid x-mcp-header annotations is not
            # offered at all (HM-27), in a page as in the cache.
            result = attrs.evolve(result, tools=self._tool_headers.usable(result.tools))
        return result

    @overload
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
        progress_idle_timeout: float | None = DEFAULT,
        max_duration: float | None = DEFAULT,
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
        progress_idle_timeout: float | None = DEFAULT,
        max_duration: float | None = DEFAULT,
        as_task: bool = False,
        ttl: int | None = None,
    ) -> mcp_types.CallToolResult | TaskHandle:
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
            LocalProtocolError: *as_task* to a server that offers no tasks.

        In 2026-07-28 a server may answer with an input-required result: the
        client answers its inputs with the registered handlers (elicitation,
        sampling, roots; all of one round before retrying, PT-12), retries with
        a new id, the same params, ``inputResponses`` and ``requestState``
        echoed untouched (PT-13, PT-14), and returns the final result; at most
        ``max_input_rounds`` rounds. The timeouts apply to each round.

        Tasks (see :class:`~trio_mcp.lowlevel.TaskHandle`): with *as_task* the
        call may run as a task and a handle on it is returned (*ttl*: the
        milliseconds to keep it, 2025-11-25 only). 2025-11-25 augments only a
        call to a server that declared ``tasks.requests.tools.call`` (TK-02,
        TK-03); 2026-07-28 declares the tasks extension in this request only,
        and the server decides (an answer at once gives a handle already
        completed). Without *as_task*, a call that becomes a task anyway (a
        2025-11-25 tool whose definition says ``taskSupport: "required"``, any
        call with the client's ``tasks=True`` in 2026-07-28, or a 2026-07-28
        tool that answers -32021 naming the tasks extension, called once more
        declaring it) is polled to its end here, honouring its poll interval
        (TK-14), and returns what a plain call would have. The timeouts apply
        to each request.

        Cancellation:
            As :meth:`Session.request`: the server is told with
            ``notifications/cancelled`` and a late result is ignored; a cancel
            between rounds sends nothing (no request is in flight). Cancelled
            while polling a task it did not hand back, the task is cancelled
            (``tasks/cancel``, shielded, bounded). A handle handed back
            (*as_task*) is the caller's: nothing cancels its task but
            :meth:`TaskHandle.cancel`.

        Spec: TL-07, TL-13, TO-01..TO-05, CN-01, PG-02, PT-12..PT-15, TK-02,
        TK-03, TK-12, TK-14, TK-19.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        result: mcp_types.CallToolResult
        augmented = self._tasks.augment(
            params, as_task=as_task, ttl=ttl, tool=self._cache.items["tools"].get(name)
        )
        if self._input_rounds or augmented is not None:
            sent = params if augmented is None else augmented
            try:
                request_id, answer = await self._call_rounds(
                    "tools/call",
                    sent,
                    on_progress=on_progress,
                    progress_idle_timeout=progress_idle_timeout,
                    max_duration=max_duration,
                )
            except RPCError as error:
                retry = self._tasks.required_retry(params, error) if augmented is None else None
                if retry is not None:
                    # 2026-07-28: the tool runs only as a task and said so
                    # (-32021 naming the extension): call once more declaring
                    # it, and poll the task to its end below.
                    again = retry
                elif self._tool_headers is not None and is_param_header_mismatch(error):
                    # HM-29: the tool's x-mcp-header annotations may have changed
                    # since it was listed: list again, then one more try.
                    logger.info("tool %r: header mismatch (%s); listing tools again", name, error)
                    await self._cache.refresh("tools")
                    again = sent
                else:
                    raise
                # The one retry, with the same options.
                request_id, answer = await self._call_rounds(
                    "tools/call",
                    again,
                    on_progress=on_progress,
                    progress_idle_timeout=progress_idle_timeout,
                    max_duration=max_duration,
                )
            if isinstance(answer, mcp_types.CallToolResult):
                if as_task:
                    return self._tasks.immediate(request_id, answer, tool=name)
                result = answer
            else:  # the server made it a task
                handle = self._tasks.adopt(request_id, answer, tool=name)
                handle.on_progress = on_progress
                if as_task:
                    return handle
                result = await settle(handle)
        else:
            # The handshake era has no input rounds: straight to the session
            # (one coroutine frame less on the commonest call).
            result = await self.session.request(
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

    async def _call_with_inputs(self, method: str, params: dict[str, Any]) -> Any:
        """:meth:`_call_rounds`' result."""
        return (await self._call_rounds(method, params))[1]

    async def _call_rounds(
        self,
        method: str,
        params: dict[str, Any],
        *,
        on_progress: Callable[[Progress], None] | None = None,
        progress_idle_timeout: float | None = DEFAULT,
        max_duration: float | None = DEFAULT,
    ) -> tuple[Any, Any]:
        """*method* with the input-required loop of 2026-07-28 (PT-12..PT-15):
        the id of the last round and its result (a handshake-era call has one).

        Raises:
            InvalidPeerResult: the server asked for more than
                ``max_input_rounds`` rounds, or for an input this client
                cannot answer (one it did not declare: PT-07).

        Cancellation: as :meth:`Session.request`, round by round.
        """
        session = self.session
        follows = None
        current = params
        for _ in range(self.max_input_rounds + 1):
            message = session.prepare_request(
                method, current, want_progress=on_progress is not None, follows=follows
            )
            result = await session.call_prepared(
                message,
                on_progress=on_progress,
                progress_idle_timeout=progress_idle_timeout,
                max_duration=max_duration,
            )
            if not isinstance(result, mcp_types.InputRequiredResult):
                return message.id, result
            follows = message.id
            current = dict(params)
            if result.input_requests:
                current["inputResponses"] = await self._answer_inputs(result.input_requests)
            if result.request_state is not None:
                current["requestState"] = result.request_state
        raise InvalidPeerResult(
            f"{method}: the server still asked for input after {self.max_input_rounds} rounds",
            [f"max_input_rounds is {self.max_input_rounds}"],
        )

    async def _answer_inputs(self, requests: mcp_types.InputRequests) -> dict[str, Any]:
        """Every input of one round, answered concurrently by the handlers (PT-12)."""
        answers: dict[str, Any] = {}

        async def answer(key: str, request: mcp_types.InputRequest) -> None:
            try:
                result = await self.handlers.answer(request.method, request.params, input_key=key)
            except RPCError as exc:
                raise InvalidPeerResult(
                    f"the server asked for {request.method} ({key!r}), which this client "
                    "cannot answer",
                    [exc.message],
                ) from None
            answers[key] = mcp_types.converter.unstructure(result)

        async with trio.open_nursery() as nursery:
            for key, request in requests.items():
                nursery.start_soon(answer, key, request)
        return answers

    async def read_resource(self, uri: str) -> mcp_types.ReadResourceResult:
        """``resources/read`` (with the input-required loop in 2026-07-28, as
        :meth:`call_tool`). Cancellation: as :meth:`Session.request`. Spec: RS-02."""
        result: mcp_types.ReadResourceResult = await self._call_with_inputs(
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
        result: mcp_types.GetPromptResult = await self._call_with_inputs("prompts/get", params)
        return result

    async def list_tasks(self) -> list[mcp_types.Task]:
        """Every task the server lists for us: 2025-11-25 ``tasks/list``, every
        page (TK-15); only where the server declared ``tasks.list``.

        Raises:
            LocalProtocolError: the server offers no ``tasks/list`` (2026-07-28
                never does).

        Cancellation: as :meth:`Session.request`; a partial list is discarded.
        """
        return await self._tasks.list()

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
        """Ask for log messages at *level* and above; they go to the ``log_handler``.

        Handshake era: ``logging/setLevel`` (LG-03). 2026-07-28 has no such
        request: from now on every request carries
        ``io.modelcontextprotocol/logLevel`` (ME-15), and the server sends
        messages only about those requests, while they run (LG-07).

        Cancellation:
            As :meth:`Session.request`: ``notifications/cancelled`` follows if
            the request was written, and ``Cancelled`` propagates. In
            2026-07-28 a checkpoint only.
        """
        level = mcp_types.LoggingLevel(level)
        if self._revision.request_scoped_logging:
            self.session.protocol.set_request_meta(_LOG_LEVEL_KEY, level.value)
            await trio.lowlevel.checkpoint()
            return
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

        In 2026-07-28 (a *uri* is required there) the block is one
        ``subscriptions/listen`` stream: entering waits for the server's
        acknowledgment (SB-02), the updates are those tagged with the stream's
        id (SB-06), and leaving cancels the stream (SB-08).

        Cancellation:
            Leaving the block unsubscribes (bounded by the session's
            ``cancel_notify_grace``, shielded); if the session is closed by
            then, nothing is sent.
        """
        send, receive = trio.open_memory_channel[str](buffer)
        if self._revision.listen_subscriptions:
            if uri is None:
                raise ValueError("2026-07-28 subscribes by URI: pass the uri to resource_updates")
            async with self._listening(
                mcp_types.SubscriptionFilter(resource_subscriptions=[uri]), send
            ):
                yield receive
            return
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

    # ------------------------------------------ subscriptions (2026-07-28)

    @asynccontextmanager
    async def _listening(
        self,
        wanted: mcp_types.SubscriptionFilter,
        updates: trio.MemorySendChannel[str] | None = None,
    ) -> AsyncIterator[_Subscription]:
        """One ``subscriptions/listen`` stream for the duration of the block:
        opened (and acknowledged) on entry, cancelled on exit.

        Cancellation: leaving the block cancels the stream (the server is told:
        ``notifications/cancelled``, SB-08); a cancel while waiting for the
        acknowledgment does the same.
        """
        assert self._nursery is not None
        session = self.session
        message = session.prepare_request(
            "subscriptions/listen",
            {"notifications": mcp_types.converter.unstructure(wanted)},
        )
        subscription = _Subscription(message.id, wanted, updates)
        self._subscriptions[message.id] = subscription

        async def run(task_status: trio.TaskStatus[trio.CancelScope]) -> None:
            with trio.CancelScope() as scope:
                task_status.started(scope)
                try:
                    await session.call_prepared(message)
                except MCPError as exc:
                    logger.debug("subscription %r ended: %s", message.id, exc)
                finally:
                    subscription.end()

        scope = await self._nursery.start(run)
        try:
            await subscription.acknowledged.wait()
            yield subscription
        finally:
            scope.cancel()
            self._subscriptions.pop(message.id, None)
            if updates is not None:
                updates.close()

    async def _listen_for_list_changes(self, listening: trio.Event) -> None:
        """Keep the cached lists fresh in 2026-07-28: one listen stream for
        every list the server says can change (SB-01); ended with the client.

        Sets *listening* once the stream is acknowledged (or there is none to
        open, or it could not open): from then on no change is missed, so the
        lists fetched after it are kept fresh.

        Cancellation: runs until the client closes.
        """
        caps = self.session.protocol.peer_capabilities
        wanted = mcp_types.SubscriptionFilter(
            tools_list_changed=_declares(caps, "tools") or None,
            prompts_list_changed=_declares(caps, "prompts") or None,
            resources_list_changed=_declares(caps, "resources") or None,
        )
        try:
            if not (
                wanted.tools_list_changed
                or wanted.prompts_list_changed
                or wanted.resources_list_changed
            ):
                return
            async with self._listening(wanted) as subscription:
                listening.set()
                await subscription.wait_ended()
        except SessionClosed:
            return  # the client closed before (or while) the stream opened
        finally:
            listening.set()

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
        if not self._revision.server_requests:
            # 2026-07-28 has no such notification: the server asks for the
            # roots in each request that needs them.
            await trio.lowlevel.checkpoint()
            return
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
        meta = getattr(params, "meta", None)
        if meta and _SUBSCRIPTION_ID_KEY in meta:
            # 2026-07-28: a notice of one listen stream (SB-06).
            subscription = self._subscriptions.get(meta[_SUBSCRIPTION_ID_KEY])
            if subscription is None:
                logger.debug("notice for unknown subscription: %s", method)
                return
            if method == "notifications/subscriptions/acknowledged":
                subscription.accepted = params.notifications
                subscription.acknowledged.set()
                return
            if not subscription.acknowledged.is_set():
                logger.debug("notice before the acknowledgment ignored (SB-02): %s", method)
                return
            if method == "notifications/resources/updated" and subscription.updates is not None:
                try:
                    subscription.updates.send_nowait(params.uri)
                except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
                    logger.debug("dropped an update of %s", params.uri)
                return
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
        elif method == "notifications/tasks/status":
            self._tasks.notified(params)
        elif method == "notifications/progress":
            # Only a task's progress reaches here (a call's goes to its caller).
            self._tasks.progressed(params)
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
    **session_options: Any,
) -> AsyncIterator[Client]:
    """Open a session over *transport*, choose the era, discover, yield the :class:`Client`.

    *era* (default ``"auto"``) chooses how the connection opens (see
    ``trio_mcp._client._era``): ``"auto"`` probes with ``server/discover``,
    bounded by *probe_timeout* seconds, and falls back to the handshake on a
    handshake-era answer or none; ``"modern"`` speaks only 2026-07-28;
    ``"legacy"`` only the handshake (our newest handshake-era revision, or
    *protocol_version*, offered; any supported counter-offer accepted; one we
    cannot speak refused with
    :class:`~trio_mcp.protocol.UnsupportedProtocolVersion`). *probe* = False
    makes ``"auto"`` start with the handshake (a server known to be
    handshake-era). ``client.era`` and ``client.protocol_version`` say what
    was chosen. With *discover* the client then fetches every list the server
    declared (tools, prompts, resources, templates), following every page, and
    in 2026-07-28 keeps them fresh through a ``subscriptions/listen`` stream,
    opened first: the lists are fetched once the server has acknowledged it
    (waiting at most *probe_timeout* for that), so no change is missed (SB-02).

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
        max_input_rounds: 2026-07-28: bound on the input-required rounds of one call.
        tasks: 2026-07-28: declare the tasks extension on every tool call, so
            the server may run any of them as a task (``call_tool`` then polls
            it to the end); without it only ``as_task=True`` calls declare it.
        accept_tasks: 2025-11-25: declare ``tasks.requests`` for the sampling
            and elicitation handlers given, and run the server's
            task-augmented requests of those kinds as tasks (answered at once
            with a task id; the server polls them), for as long as the client
            lives (see :mod:`trio_mcp._client._task_receiver`).
        session_options: passed to :func:`open_session`.

    Raises:
        HandshakeRefused: the server speaks no revision we do (or, with
            ``era="modern"``, no 2026-07-28 one).
        ProbeClosedConnection: ``era="auto"`` and the server closed the
            connection on the probe (the stdio client then starts it again).

    Cancellation:
        ``initialize`` is never cancelled by message (CN-03): if the handshake is
        cancelled or times out, the session and transport are torn down instead.
        Leaving the body shuts the session down (see :func:`open_session`): calls
        still in flight in other tasks fail with ``SessionClosed`` and the server
        is told about each.

    Spec: LC-02, LC-04, LC-05, LC-07, LC-09, CN-03, RT-01, SM-01, EL-01, PA-04,
    VR-11, VR-12, SI-14, SI-16, DS-04, ME-06, ME-08.
    """
    receiver = ReceiverTasks() if accept_tasks else None
    handlers = ClientHandlers(
        roots=roots,
        sampling=sampling,
        sampling_tools=sampling_tools,
        elicitation=elicitation,
        url_elicitation=url_elicitation,
        apply_elicitation_defaults=apply_elicitation_defaults,
        tasks=receiver,
    )
    protocol = Connection(
        Role.CLIENT,
        capabilities=handlers.capabilities(),
        info={"name": name, "version": version},
    )
    dispatcher = _ClientDispatcher(handlers)
    if era == "auto" and getattr(transport, "handshake_only", False):
        era = "legacy"
    async with (
        # The tasks the client runs for its server outlive the requests that
        # started them, not the client.
        receiver.running() if receiver is not None else contextlib.nullcontext(),
        open_session(transport, protocol, dispatcher, **session_options) as session,
    ):
        negotiated = await negotiate(
            session,
            protocol,
            era,
            probe=probe,
            probe_timeout=probe_timeout,
            protocol_version=protocol_version,
        )
        # x-mcp-header matters only where arguments become headers (HM-27),
        # and only in 2026-07-28 (the handshake era has no such headers).
        tool_headers = (
            ToolHeaderRules()
            if hasattr(transport, "tool_headers") and negotiated.era == "modern"
            else None
        )
        client = Client(
            session,
            negotiated,
            handlers,
            log_handler=log_handler,
            max_pages=max_pages,
            max_input_rounds=max_input_rounds,
            tool_headers=tool_headers,
            tasks=tasks,
        )
        dispatcher.client = client
        if tool_headers is not None:
            # The transport asks the client for a tool's annotations (HM-25).
            setattr(transport, "tool_headers", tool_headers.annotations)  # noqa: B010
        async with trio.open_nursery() as nursery:
            client._nursery = nursery
            if discover:
                if client._revision.listen_subscriptions:
                    # Listen before listing: a change reaches only streams the
                    # server has acknowledged, so one made between a list and
                    # the acknowledgment would leave that list stale for good.
                    # A server slow to acknowledge delays discovery by at most
                    # probe_timeout (then the race is back, for that server).
                    listening = trio.Event()
                    nursery.start_soon(
                        client._listen_for_list_changes,
                        listening,
                        name="trio_mcp list subscription",
                    )
                    with trio.move_on_after(probe_timeout):
                        await listening.wait()
                await client._cache.discover()
            nursery.start_soon(client._cache.run_refresher, name="trio_mcp list refresher")
            try:
                yield client
            finally:
                nursery.cancel_scope.cancel(reason="client closed")


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
