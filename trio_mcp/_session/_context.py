"""The per-request context a handler receives."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, final

import trio

from ..protocol import Direction, RequestRecord

if TYPE_CHECKING:
    from ..protocol import JSONObject, RequestId
    from ._engine import Session


@final
class RequestContext:
    """What a handler knows about the request it is serving. Not constructed directly.

    A handler's task runs inside the request's own cancel scope: a peer's
    ``notifications/cancelled``, the session's shutdown and the loss of the
    transport all arrive as :class:`trio.Cancelled` at the handler's next
    checkpoint. :attr:`cancel_requested` tells a handler that finished its work
    after the last checkpoint that its result will not be sent.
    """

    __slots__ = ("meta", "method", "params", "request_id", "session")

    def __init__(
        self,
        session: Session,
        request_id: RequestId,
        method: str,
        params: Any,
        meta: JSONObject | None,
    ) -> None:
        self.session = session
        self.request_id = request_id
        self.method = method
        #: The params, structured into the method's params type.
        self.params = params
        #: The request's raw ``_meta`` object, if it had one.
        self.meta = meta

    @property
    def record(self) -> RequestRecord:
        """A snapshot of this request's record."""
        record = self.session.protocol.record(Direction.INBOUND, self.request_id)
        assert record is not None  # the record outlives the handler
        return record

    @property
    def cancel_requested(self) -> bool:
        """True once anyone (the peer, a deadline, shutdown) asked to cancel this request."""
        entry = self.session.protocol.inbound_entry(self.request_id)
        return entry is None or entry.cancel_origin is not None

    @property
    def progress_token(self) -> str | int | None:
        """The token the requester supplied, or None (then progress is not sent)."""
        entry = self.session.protocol.inbound_entry(self.request_id)
        return None if entry is None else entry.progress_token

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` for this request.

        Sends nothing when the request carried no progress token (PG-07) or has
        already ended (PG-10), nor when the session's ``progress_interval``
        rate limit holds it back (PG-09). ``message`` is dropped for 2024-11-05
        peers.

        Raises:
            LocalProtocolError: *progress* is not greater than the last one (PG-04).

        Cancellation:
            A checkpoint (so a loop that only reports progress can still be
            cancelled). If already cancelled, nothing is recorded or sent; if
            cancelled while the outgoing queue is full, the notification is not
            queued.

        Spec: PG-03, PG-04, PG-07, PG-09, PG-10.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        note = self.session.protocol.progress_notification(
            self.request_id, progress, total, message
        )
        if note is not None:
            await self.session._queue(note)
        # A schedule point too (the queue's fast path does not yield).
        await trio.lowlevel.cancel_shielded_checkpoint()


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
        are cancelled with the request (the client is told, CN-01).
    """

    __slots__ = ("_server", "ran_in_thread", "request")

    def __init__(self, request: RequestContext, server: Any) -> None:
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

    def close_sse_stream(self) -> bool:
        """Ask the transport to end this request's response stream now, so the
        client reconnects and polls for the rest (Streamable HTTP, 2025-11-25
        resumable sessions: HT-11). The request keeps running and nothing it
        sends is lost. Returns False where the transport cannot do this (stdio,
        JSON responses, no event store): then nothing changes.
        """
        close = getattr(self.session.transport, "close_request_stream", None)
        return bool(close(self.request_id)) if close is not None else False

    @property
    def server(self) -> Any:
        """The :class:`~trio_mcp.Server` answering the request."""
        return self._server

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
        """The negotiated protocol revision of the session."""
        return self.request.session.protocol.protocol_version

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
        return self.request.progress_token

    # -- telling the client

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """As :meth:`RequestContext.report_progress`: sent only when the request
        carried a progress token (PG-07), never after the response (PG-10).

        Cancellation: a checkpoint.
        """
        await self.request.report_progress(progress, total, message)

    async def log(self, level: Any, data: Any, *, logger: str | None = None) -> None:
        """Send ``notifications/message`` to this session, if its level allows.

        *level* is a :class:`~trio_mcp.types.LoggingLevel` or its name; *data*
        any JSON value (structured data is kept as is). Nothing is sent when the
        server does not declare ``logging`` or the message is below the level
        the client set with ``logging/setLevel``. Never put secrets or internal
        details in *data* (LG-10).

        Cancellation: a checkpoint; if cancelled while the queue is full, nothing is sent.

        Spec: LG-01, LG-02, LG-03.
        """
        await self._server.send_log(self.request.session, level, data, logger=logger)

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

    # -- asking the client (the client side of these is the client's own feature)

    async def create_message(self, params: Any) -> Any:
        """``sampling/createMessage`` to the client; returns ``CreateMessageResult``.

        Raises:
            LocalProtocolError: the client did not declare ``sampling``.
            RPCError, RequestTimeout, SessionClosed: as :meth:`Session.request`.

        Cancellation: as :meth:`Session.request` (the client is told).
        """
        return await self.request.session.request("sampling/createMessage", params)

    async def elicit(self, params: Any) -> Any:
        """``elicitation/create`` to the client (2025-06-18+); returns ``ElicitResult``.

        Raises / Cancellation: as :meth:`create_message` (needs ``elicitation``).
        """
        return await self.request.session.request("elicitation/create", params)

    async def list_roots(self) -> Any:
        """``roots/list`` to the client; returns ``ListRootsResult``.

        Raises / Cancellation: as :meth:`create_message` (needs ``roots``).
        """
        return await self.request.session.request("roots/list")
