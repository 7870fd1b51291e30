"""One call of the client, from its request to its result: the input rounds of
2026-07-28 (:class:`InputRounds`) and a ``tools/call`` (:class:`ToolCall`).

Theory of operation
-------------------
A 2026-07-28 server may answer ``tools/call``, ``resources/read`` or
``prompts/get`` with an input-required result. :class:`InputRounds` answers
every input of the round with the client's handlers (elicitation, sampling,
roots; concurrently, all of one round before retrying: PT-12), then sends the
request again with a new id, the same params, ``inputResponses`` and
``requestState`` echoed untouched (PT-13, PT-14), until the result is final,
at most ``max_rounds`` rounds. A handshake-era request is one round.

A :class:`ToolCall` is one ``tools/call``, in the order :meth:`Client.call_tool`
drives it:

1. :meth:`ToolCall.send`: the params, augmented for a task when the caller
   allows one (:meth:`ClientTasks.augment`). A handshake-era call that may not
   become a task goes straight to the session; any other through the rounds,
   with **one retry**: a 2026-07-28 tool that answers -32021 naming the tasks
   extension is called once more declaring it (TK-19), and over HTTP a
   ``Mcp-Param-*`` header mismatch lists the tools again and sends the same
   params once more (HM-29).
2. A task the server made of the call is adopted: handed back as a
   :class:`TaskHandle` (:meth:`ToolCall.handle`, with ``as_task``), or polled
   to its end (:meth:`ToolCall.settle`).
3. :meth:`ToolCall.checked`: a tool error is returned, or raised as
   :class:`ToolCallError` when asked; a successful result of a tool whose
   cached definition has an ``outputSchema`` must carry matching
   ``structuredContent``.

:class:`ToolCalls` is what every call of one client shares (the session, the
rounds, the tasks, the cached lists, the header rules), made once per client;
it also fetches one page of ``tools/list`` under the header rules.

Spec: TL-07, TL-13, PT-12..PT-15, TK-19, HM-29.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

import attrs
import trio

from .. import types as mcp_types
from .._errors import InvalidPeerResult, MCPError, RPCError
from .._session import DEFAULT, Session, SessionDefault
from ..protocol import Progress, RequestId
from ..protocol._headers import ToolHeaderRules
from ._cache import ListCache
from ._handlers import ClientHandlers
from ._tasks import ClientTasks, TaskHandle, settle
from ._tool_headers import is_param_header_mismatch, usable_tools

logger = logging.getLogger("trio_mcp.client")


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


class InputRounds:
    """The input-required loop of one client (see the module docstring).

    Args:
        session: the client's session.
        handlers: answer the server's input requests.
        max_rounds: bound on the rounds of one call.
    """

    __slots__ = ("handlers", "max_rounds", "session")

    def __init__(self, session: Session, handlers: ClientHandlers, max_rounds: int) -> None:
        self.session = session
        self.handlers = handlers
        self.max_rounds = max_rounds

    async def result(self, method: str, params: dict[str, Any]) -> Any:
        """The final result of *method*, after any input rounds.

        Raises / Cancellation: as :meth:`call`.
        """
        return (await self.call(method, params))[1]

    async def call(
        self,
        method: str,
        params: dict[str, Any],
        *,
        on_progress: Callable[[Progress], None] | None = None,
        progress_idle_timeout: float | SessionDefault | None = DEFAULT,
        max_duration: float | SessionDefault | None = DEFAULT,
    ) -> tuple[RequestId, Any]:
        """*method* with the input-required loop of 2026-07-28 (PT-12..PT-15):
        the id of the last round and its result (a handshake-era call has one).

        Raises:
            InvalidPeerResult: the server asked for more than ``max_rounds``
                rounds, or for an input this client cannot answer (one it did
                not declare: PT-07).

        Cancellation: as :meth:`Session.request`, round by round; a cancel
        between rounds sends nothing (no request is in flight).
        """
        session = self.session
        follows = None
        current = params
        for _ in range(self.max_rounds + 1):
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
                current["inputResponses"] = await self.answer(result.input_requests)
            if result.request_state is not None:
                current["requestState"] = result.request_state
        raise InvalidPeerResult(
            f"{method}: the server still asked for input after {self.max_rounds} rounds",
            [f"max_input_rounds is {self.max_rounds}"],
        )

    async def answer(self, requests: mcp_types.InputRequests) -> dict[str, Any]:
        """Every input of one round, answered concurrently by the handlers (PT-12).

        Raises:
            InvalidPeerResult: an input this client has no handler for.

        Cancellation: the handlers are cancelled; nothing is sent.
        """
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


class ToolCalls:
    """What every :class:`ToolCall` of one client uses, made once per client.

    Args:
        session: the client's session.
        rounds: the client's input rounds.
        tasks: the client's tasks.
        cache: the client's cached lists (the tool definitions).
        header_rules: the ``x-mcp-header`` rules of a header-mirroring
            transport in 2026-07-28, else None.
    """

    __slots__ = ("cache", "header_rules", "input_rounds", "rounds", "session", "tasks")

    def __init__(
        self,
        session: Session,
        rounds: InputRounds,
        tasks: ClientTasks,
        cache: ListCache,
        header_rules: ToolHeaderRules | None,
    ) -> None:
        self.session = session
        self.rounds = rounds
        self.tasks = tasks
        self.cache = cache
        self.header_rules = header_rules
        revision = session.protocol.revision
        #: Whether calls may be answered with input-required results.
        self.input_rounds = revision is not None and revision.input_required

    async def tools_page(self, cursor: str | None) -> mcp_types.ListToolsResult:
        """One page of ``tools/list`` (see :meth:`Client.list_tools`).

        Cancellation: as :meth:`Session.request`.
        """
        params = {"cursor": cursor} if cursor is not None else None
        result: mcp_types.ListToolsResult = await self.session.request("tools/list", params)
        rules = self.header_rules
        if rules is not None:
            # Over HTTP a tool with invalid x-mcp-header annotations is not
            # offered at all (HM-27), in a page as in the cache.
            result = attrs.evolve(result, tools=usable_tools(rules, result.tools))
        return result


class ToolCall:
    """One ``tools/call`` (see the module docstring for the order of its steps).

    Made by :meth:`Client.call_tool` for each call; nothing is sent until
    :meth:`send` is awaited.
    """

    __slots__ = (
        "_calls",
        "_max_duration",
        "_on_progress",
        "_params",
        "_progress_idle_timeout",
        "name",
        "request_id",
    )

    def __init__(
        self,
        calls: ToolCalls,
        name: str,
        arguments: dict[str, Any] | None,
        on_progress: Callable[[Progress], None] | None,
        progress_idle_timeout: float | SessionDefault | None,
        max_duration: float | SessionDefault | None,
    ) -> None:
        self._calls = calls
        self.name = name
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        self._params = params
        self._on_progress = on_progress
        self._progress_idle_timeout = progress_idle_timeout
        self._max_duration = max_duration
        #: The id of the request that got the answer (None: the handshake-era
        #: plain call, which cannot become a task).
        self.request_id: RequestId | None = None

    def send(self, *, as_task: bool = False, ttl: int | None = None) -> Coroutine[Any, Any, Any]:
        """Send the call; await what this returns for the answer: a
        :class:`~trio_mcp.types.CallToolResult`, or the task the server made of
        the call.

        A plain method returning the call's coroutine, so a handshake-era call
        awaits the session's request itself: no frame of its own on the
        commonest call.

        Raises:
            LocalProtocolError: at once (before anything is awaited), for
                *as_task* to a server that offers no tasks.
            RPCError, InvalidPeerResult, RequestTimeout, SessionClosed: when
                awaited, as :meth:`InputRounds.call` (after the one retry).

        Cancellation: as :meth:`Session.request`, request by request; a cancel
        between rounds, or before the retry, sends nothing.
        """
        calls = self._calls
        augmented = calls.tasks.augment(
            self._params, as_task=as_task, ttl=ttl, tool=calls.cache.items["tools"].get(self.name)
        )
        if augmented is None and not calls.input_rounds:
            # The handshake era has no input rounds: straight to the session.
            return calls.session.request(
                "tools/call",
                self._params,
                on_progress=self._on_progress,
                progress_idle_timeout=self._progress_idle_timeout,
                max_duration=self._max_duration,
            )
        return self._send_with_retry(augmented)

    async def _send_with_retry(self, augmented: dict[str, Any] | None) -> Any:
        """Through the rounds, with the one retry (see the module docstring)."""
        calls = self._calls
        sent = self._params if augmented is None else augmented
        try:
            return await self._round_trip(sent)
        except RPCError as error:
            retry = calls.tasks.required_retry(self._params, error) if augmented is None else None
            if retry is not None:
                # 2026-07-28: the tool runs only as a task and said so
                # (-32021 naming the extension): call once more declaring it.
                again = retry
            elif calls.header_rules is not None and is_param_header_mismatch(error):
                # HM-29: the tool's x-mcp-header annotations may have changed
                # since it was listed: list again, then one more try.
                logger.info("tool %r: header mismatch (%s); listing tools again", self.name, error)
                await calls.cache.refresh("tools")
                again = sent
            else:
                raise
            # The one retry, with the same options.
            return await self._round_trip(again)

    async def _round_trip(self, params: dict[str, Any]) -> Any:
        self.request_id, answer = await self._calls.rounds.call(
            "tools/call",
            params,
            on_progress=self._on_progress,
            progress_idle_timeout=self._progress_idle_timeout,
            max_duration=self._max_duration,
        )
        return answer

    def handle(self, answer: Any) -> TaskHandle:
        """The caller allowed a task (``as_task``): a handle on the task the
        server made of the call, or on the result it gave at once (already
        ``completed``)."""
        if isinstance(answer, mcp_types.CallToolResult):
            assert self.request_id is not None  # a call that may be a task has an id
            return self._calls.tasks.immediate(self.request_id, answer, tool=self.name)
        return self._adopt(answer)

    async def settle(self, answer: Any) -> mcp_types.CallToolResult:
        """A task the server made of the call unasked, polled to its end: what
        a plain call would have returned.

        Raises: as :meth:`TaskHandle.result`.

        Cancellation: as :func:`~trio_mcp._client._tasks.settle`: the task is
        cancelled (``tasks/cancel``, shielded, bounded).
        """
        return await settle(self._adopt(answer))

    def _adopt(self, task: Any) -> TaskHandle:
        assert self.request_id is not None  # only a call through the rounds becomes a task
        handle = self._calls.tasks.adopt(self.request_id, task, tool=self.name)
        handle.on_progress = self._on_progress
        return handle

    def checked(
        self, result: mcp_types.CallToolResult, *, raise_on_error: bool, validate: bool
    ) -> mcp_types.CallToolResult:
        """*result*, once checked: a tool error is returned as it is, or
        raised as :class:`ToolCallError` with *raise_on_error*; with
        *validate*, the structured content of a success is checked against
        the tool's ``outputSchema``.

        Raises:
            ToolCallError: with *raise_on_error*, for a tool error.
            InvalidPeerResult: structured content missing or not matching, or
                the tool's ``outputSchema`` is not a valid schema.
        """
        if result.is_error:
            if raise_on_error:
                raise ToolCallError(self.name, result)
            return result
        if validate:
            self._check_structured(result)
        return result

    def _check_structured(self, result: mcp_types.CallToolResult) -> None:
        name = self.name
        try:
            validator = self._calls.cache.output_validator(name)
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
