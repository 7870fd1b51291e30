"""``Context``: what a server's tool, resource, prompt or completion function
gets when it declares a parameter annotated ``Context``.

It is the server layer's view of one request, built on the session layer's
:class:`~trio_mcp.lowlevel.RequestContext`.

Spec: LG-01..LG-03, PG-03..PG-10, HT-11.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import trio

from .. import types as mcp_types
from .._errors import RPCError
from ..protocol import ErrorCode
from ._client_tasks import ask_as_task
from ._input import MAY_ASK, InputRound

if TYPE_CHECKING:
    from .._auth._token import AccessToken
    from .._session import RequestContext, Session
    from ..protocol import JSONObject, RequestId, RequestRecord
    from ._request_state import RequestStateSealer
    from ._task_input import TaskInputRound


class ContextServer(Protocol):
    """What a :class:`Context` uses of the server answering its request.

    :class:`~trio_mcp.Server` is the one implementation. A protocol rather than
    the class because the registry imports the modules that build contexts.
    """

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def request_state(self) -> RequestStateSealer: ...

    @property
    def lifespan_state(self) -> Any: ...

    def session_state(self, session: Session) -> Any: ...

    async def start_task(self, request: RequestContext) -> None: ...

    async def send_log(
        self,
        session: Session,
        level: mcp_types.LoggingLevel | str,
        data: Any,
        *,
        logger: str | None = None,
        request: RequestContext | None = None,
        meta: JSONObject | None = None,
    ) -> None: ...


class Context:
    """The server-side per-request context: what a tool, resource, prompt or
    completion function gets when it declares a parameter annotated ``Context``.

    It wraps the session's :class:`RequestContext` (``ctx.request``) and adds
    the server's conveniences: logging to the client, progress, the negotiated
    revision, and requests back to the client (sampling, elicitation, roots).

    Cancellation:
        The function runs in its request's own cancel scope: a peer's
        ``notifications/cancelled``, shutdown or transport loss arrive as
        :class:`trio.Cancelled` at its next checkpoint. Every ``async`` method
        here is a checkpoint. Requests to the client made through the context
        are cancelled with the request (the client is told).

    Spec: CN-01.
    """

    __slots__ = ("_server", "ran_in_thread", "request")

    def __init__(self, request: RequestContext, server: ContextServer) -> None:
        #: The session-level context of this request.
        self.request = request
        self._server = server
        #: True while (and after) a sync function of this request ran in a worker thread.
        self.ran_in_thread = False

    # -- what the request is

    @property
    def session(self) -> Session:
        """The session this request arrived on."""
        return self.request.session

    @property
    def auth(self) -> AccessToken | None:
        """The verified access token of the request, when the HTTP endpoint is an OAuth
        protected resource (``http_app(server, auth=ResourceServer(...))``): who
        (``subject``, ``issuer``, ``client_id``), which ``scopes``, until when. Never
        the raw bearer token (no token passthrough). On a session, the token of the
        request this context serves, as it arrived (a token refreshed by a later request
        is that request's). None without authorization (stdio, WebSocket, an endpoint
        without ``auth``).

        Spec: AU-11.
        """
        return self.request.caller.access_token

    def close_sse_stream(self) -> bool:
        """Ask the transport to end this request's response stream now, so the client
        reconnects and polls for the rest (Streamable HTTP, 2025-11-25 resumable
        sessions). The request keeps running and nothing it sends is lost. Returns False
        where the transport cannot do this (stdio, JSON responses, no event store): then
        nothing changes.

        Spec: HT-11.
        """
        close = getattr(self.session.transport, "close_request_stream", None)
        return bool(close(self.request_id)) if close is not None else False

    @property
    def server(self) -> ContextServer:
        """The :class:`~trio_mcp.Server` answering the request."""
        return self._server

    @property
    def lifespan(self) -> Any:
        """What the server's ``lifespan`` gave for this process (a database
        pool, a client...); None without one."""
        return self._server.lifespan_state

    @property
    def session_state(self) -> Any:
        """What the server's ``session_lifespan`` gave for this request's
        session; None without one, and for 2026-07-28 HTTP requests (no session)."""
        return self._server.session_state(self.request.session)

    @property
    def request_id(self) -> RequestId:
        return self.request.request_id

    @property
    def method(self) -> str:
        return self.request.method

    @property
    def meta(self) -> JSONObject | None:
        """The request's raw ``_meta`` object, if it had one."""
        return self.request.meta

    @property
    def revision(self) -> str | None:
        """The protocol revision of this request: its own ``_meta`` version in
        2026-07-28, the session's negotiated one in the handshake era."""
        revision = self.request.revision
        return None if revision is None else revision.version

    @property
    def client_capabilities(self) -> JSONObject:
        """The client capabilities declared for this request (2026-07-28: in its own
        ``_meta``, never an earlier request's; the handshake era: at ``initialize``).

        Spec: ME-09.
        """
        return self.request.client_capabilities

    def client_declares(self, extension: str) -> bool:
        """Whether the client declared the extension named *extension*: for
        this request in 2026-07-28, for the session in the handshake era."""
        return self.request.peer_declares(extension)

    @property
    def saved(self) -> dict[str, Any]:
        """The handler's own JSON state, carried from one round of a 2026-07-28 multi
        round-trip call to the next in the signed ``requestState``: put what must not be
        done twice here. Signed, not encrypted: never a secret. In the handshake era
        (one run per call) it is a plain dict for this run."""
        return self._round().saved

    @property
    def round(self) -> int:
        """Which run of the handler this is for one logical call (1, then 2...
        as a 2026-07-28 client retries with the inputs asked for)."""
        return self._round().round

    @property
    def record(self) -> RequestRecord:
        """A snapshot of this request's record."""
        return self.request.record

    @property
    def cancel_requested(self) -> bool:
        """True once anyone asked to cancel this request (see :class:`RequestContext`)."""
        return self.request.cancel_requested

    @property
    def progress_token(self) -> str | int | None:
        """The request's progress token (inside a task: kept for the task's life)."""
        task = self._task_round()
        return task.progress_token if task is not None else self.request.progress_token

    # -- telling the client

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """As :meth:`RequestContext.report_progress`: sent only when the request carried
        a progress token, never after the response. Inside a 2025-11-25 task the token
        stays valid for the task's life and each notification carries the related-task
        ``_meta``; an extension task sends none.

        Cancellation: a checkpoint.

        Spec: PG-07, PG-10.
        """
        task = self._task_round()
        if task is not None:
            await task.report_progress(progress, total, message)
            return
        await self.request.report_progress(progress, total, message)

    async def log(
        self, level: mcp_types.LoggingLevel | str, data: Any, *, logger: str | None = None
    ) -> None:
        """Send ``notifications/message`` to this session, if its level allows.

        *level* is a :class:`~trio_mcp.types.LoggingLevel` or its name; *data* any JSON
        value (structured data is kept as is). Nothing is sent when the server does not
        declare ``logging`` or the message is below the level the client set with
        ``logging/setLevel``. Never put secrets or internal details in *data*.

        Cancellation: a checkpoint; if cancelled while the queue is full, nothing is sent.

        Spec: LG-01, LG-02, LG-03, LG-10.
        """
        task = self._task_round()
        if task is not None:
            related = task.related
            if related is None:
                # An extension task's messages have nowhere to go (SEP-2663).
                await trio.lowlevel.checkpoint()
                return
            # A 2025-11-25 task logs on its session at the session's level,
            # tagged with the task (TK-13).
            await self._server.send_log(
                self.request.session, level, data, logger=logger, meta=related
            )
            return
        await self._server.send_log(
            self.request.session, level, data, logger=logger, request=self.request
        )

    async def debug(self, data: Any, *, logger: str | None = None) -> None:
        """``log("debug", ...)``. Cancellation: as :meth:`log`."""
        await self.log("debug", data, logger=logger)

    async def info(self, data: Any, *, logger: str | None = None) -> None:
        """``log("info", ...)``. Cancellation: as :meth:`log`."""
        await self.log("info", data, logger=logger)

    async def warning(self, data: Any, *, logger: str | None = None) -> None:
        """``log("warning", ...)``. Cancellation: as :meth:`log`."""
        await self.log("warning", data, logger=logger)

    async def error(self, data: Any, *, logger: str | None = None) -> None:
        """``log("error", ...)``. Cancellation: as :meth:`log`."""
        await self.log("error", data, logger=logger)

    # -- tasks

    @property
    def in_task(self) -> bool:
        """Whether this handler runs as a task (its request has ended with a
        ``CreateTaskResult``; what it returns becomes the task's result)."""
        return self._task_round() is not None

    def _task_round(self) -> TaskInputRound | None:
        from ._task_input import TaskInputRound

        round_ = self.request.user_data
        return round_ if isinstance(round_, TaskInputRound) else None

    async def start_task(self) -> None:
        """Hand the rest of this ``tools/call`` to a task, if it can be one.

        For a tool registered with ``defer_task=True``: the call runs as a
        request until here, so input-required rounds before this point are
        ordinary 2026-07-28 rounds (SEP-2663 wants them done before the task
        exists). Here, if this request declared the tasks extension, the
        request ends with its ``CreateTaskResult`` and the handler runs again
        from the start *as the task*, finding the answers of the rounds before
        (as on any retry: see :attr:`saved`); in that run this call returns at
        once. Without the extension (or inside a task already) it returns at
        once and the call goes on as a plain request.

        Raises:
            RPCError: -32603 when no more tasks can be started.

        Cancellation: a checkpoint; when the task starts, the request's handler
        is unwound (``Cancelled``) and the task's run takes over.

        Spec: TK-18.
        """
        await self._server.start_task(self.request)

    # -- asking the client (the client side of these is the client's own feature)

    def _round(self) -> InputRound:
        round_ = self.request.user_data
        # (Inside a task the round is a TaskInputRound, an InputRound.)
        if not isinstance(round_, InputRound):
            revision = self.request.revision
            if revision is not None and not revision.server_requests:
                if not revision.input_required or self.method not in MAY_ASK:
                    raise RPCError(
                        int(ErrorCode.INTERNAL_ERROR),
                        f"Internal error: {self.method} cannot ask the client for input (PT-04)",
                    )
                # The first round of a request that asks (a retry's round was
                # opened, and its state verified, before the handler ran).
                round_ = InputRound(self.request, self._server.request_state)
            else:
                # The handshake era: inputs are requests; nothing to seal.
                round_ = InputRound(self.request, _NO_SEALER)
            self.request.user_data = round_
        return round_

    async def request_inputs(self, inputs: Mapping[str, tuple[str, Any]]) -> dict[str, Any]:
        """Ask the client for several inputs at once; return their results by key.

        *inputs* maps a key of your choosing to ``(method, params)``, method one of
        ``elicitation/create``, ``sampling/createMessage`` and ``roots/list``. In the
        handshake era they are sent as concurrent requests; in 2026-07-28 they go out
        together in one input-required round and the handler runs again with the answers
        (see :attr:`saved` for keeping side effects safe).

        Raises:
            RPCError: -32021 for an input whose capability the client did not declare
                for this request; -32602 for an answer that does not fit; as
                :meth:`Session.request` in the handshake era.

        Cancellation: as :meth:`create_message`.

        Spec: PT-05, PT-07, PT-16.
        """
        return await self._round().ask(inputs)

    async def _ask_one(self, method: str, params: Any) -> Any:
        round_ = self._round()
        key = round_.next_key(method)
        return (await round_.ask({key: (method, params)}))[key]

    async def create_message(
        self, params: mcp_types.CreateMessageRequestParams | JSONObject, *, as_task: bool = False
    ) -> mcp_types.CreateMessageResult:
        """Ask the client's model (``sampling/createMessage``); returns ``CreateMessageResult``.

        The handshake era sends the request; 2026-07-28 asks through an input-required
        round.

        Raises:
            LocalProtocolError: the client did not declare ``sampling`` (handshake era).
            RPCError: -32021 when this request did not declare ``sampling``
                (2026-07-28), or as :meth:`Session.request`.
            RequestTimeout, SessionClosed: as :meth:`Session.request`.

        Cancellation: as :meth:`Session.request` (the client is told); in
        2026-07-28 an unanswered input ends the request (``Cancelled``
        unwinds the handler; it runs again on the client's retry).

        *as_task* (2025-11-25): send it as a task where the client declared
        ``tasks.requests.sampling.createMessage`` (a plain request otherwise): the
        client answers with a task id, this polls it and returns its result; cancelled
        meanwhile, the client's task is cancelled too.

        Spec: PT-03, TK-02.
        """
        if as_task and self._may_ask_as_task():
            task_result: mcp_types.CreateMessageResult = await ask_as_task(
                self.session, "sampling/createMessage", params, mcp_types.CreateMessageResult
            )
            return task_result
        result: mcp_types.CreateMessageResult = await self._ask_one(
            "sampling/createMessage", params
        )
        return result

    async def elicit(
        self, params: mcp_types.ElicitRequestParams | JSONObject, *, as_task: bool = False
    ) -> mcp_types.ElicitResult:
        """Ask the user through the client (``elicitation/create``, 2025-06-18+);
        returns ``ElicitResult``.

        Raises / Cancellation: as :meth:`create_message` (needs ``elicitation``,
        in the mode asked for); *as_task* as there.
        """
        if as_task and self._may_ask_as_task():
            task_result: mcp_types.ElicitResult = await ask_as_task(
                self.session, "elicitation/create", params, mcp_types.ElicitResult
            )
            return task_result
        result: mcp_types.ElicitResult = await self._ask_one("elicitation/create", params)
        return result

    def _may_ask_as_task(self) -> bool:
        """Whether a request to the client may go as a task: the handshake era
        (the client receives requests), not from inside a task of ours (its
        inputs go through the task)."""
        revision = self.request.revision
        return revision is not None and revision.server_requests and self._task_round() is None

    async def list_roots(self) -> mcp_types.ListRootsResult:
        """The client's roots (``roots/list``); returns ``ListRootsResult``.

        Raises / Cancellation: as :meth:`create_message` (needs ``roots``).
        """
        result: mcp_types.ListRootsResult = await self._ask_one("roots/list", None)
        return result


class _NoSealer:
    """The sealer of a handshake-era round: it never has a state to seal."""

    def seal(self, *args: Any, **kwargs: Any) -> str:
        raise AssertionError("a handshake-era round never seals")  # pragma: no cover


_NO_SEALER: Any = _NoSealer()
