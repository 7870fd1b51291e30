"""Middleware: an ordered chain of async contexts around every message a session
handles.

Theory of operation
-------------------
A middleware is a callable that takes a :class:`Call` and returns an async
context manager (an ``@asynccontextmanager`` function is one). The session
enters the chain around each request and notification, in both directions:

* an **inbound request**, in the request's own task and inside its cancel
  scope, around the dispatcher's handler: what runs before the ``yield`` runs
  before the handler (and in the same context, so a context variable it sets
  is what the handler sees), what runs after sees the handler's result as JSON
  in :attr:`Call.result`, which it may edit, or the handler's exception;
* an **inbound notification**, in the notifier's task, around the
  dispatcher's handler;
* an **outbound request**, in the caller's task: the request and its record
  exist (QUEUED), its params may be edited before it is written, and the
  result the caller will get is in :attr:`Call.result` after;
* an **outbound notification**, in the sender's task, before it is made.

The session's own messages pass through it too: inbound ``ping``,
``initialize`` and ``server/discover`` (in the reader's task, around the
answer the session makes), the peer's progress and cancel notifications (in
the reader's task, around what the session does with them), and the
notifications the session sends itself (``notifications/initialized``, a
handler's progress, and a cancel, whose chain runs shielded and bounded by
``cancel_notify_grace``).

The order is the registration order: the first middleware registered is the
outermost, so its "before" runs first and its "after" runs last.

A middleware's own failure (an exception raised by its code, not one passing
through it) becomes :class:`~trio_mcp.MiddlewareError`, an
:class:`~trio_mcp.RPCError` with code -32603: the request it wrapped fails with
it (inbound: answered -32603, the record FAILED; outbound: the caller gets it
and the record ends FAILED if it had not ended), and nothing else does. An
:class:`~trio_mcp.RPCError` a middleware raises on purpose is an answer, not a
failure: an inbound request is answered with it. :class:`trio.Cancelled`
always passes through unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, Literal, Protocol, final

from .._errors import MiddlewareError, RPCError
from .._transport import FrameOrigin
from ..protocol import (
    Connection,
    Direction,
    ErrorObject,
    JSONObject,
    MethodSpec,
    RequestId,
    RequestRecord,
)


class Middleware(Protocol):
    """What a middleware is: called with each :class:`Call`, it returns the
    async context manager that wraps it.

    Example::

        @contextlib.asynccontextmanager
        async def stamp(call: trio_mcp.Call) -> AsyncIterator[None]:
            yield
            if call.kind == "request" and call.direction is Direction.INBOUND:
                call.result.setdefault("_meta", {})["com.example/seen-by"] = "stamp"

        server.add_middleware(stamp)
    """

    def __call__(self, call: Call, /) -> AbstractAsyncContextManager[object]: ...


@final
class Call:
    """One request or notification passing through the middleware chain. Not
    constructed directly.

    Attributes:
        direction: ``Direction.INBOUND`` (from the peer) or ``OUTBOUND`` (to it).
        kind: ``"request"`` or ``"notification"``.
        method: the method name.
        request_id: the request's id (None for a notification).
        context: for an inbound request a handler answers, the handler's
            :class:`~trio_mcp.lowlevel.RequestContext` (its session, caller,
            revision, capabilities); None otherwise (and for the requests the
            session answers itself: ``ping``, ``initialize``, ``server/discover``).
        session: the :class:`~trio_mcp.lowlevel.Session` the message passes
            through (its ``transport``, its ``protocol``).
        origin: inbound, where the frame that carried it came from (a
            :class:`~trio_mcp.lowlevel.FrameOrigin`), when the transport says
            (Streamable HTTP: the POST's client address and W3C trace
            headers); None otherwise, and for the notifications that reach a
            handler (read later than their frame).
        result: after the inner part ran: an inbound request's result as the
            JSON object to be sent (edits are sent); an outbound request's
            result as the caller gets it (typed for core methods, a JSON
            object for custom ones; assign to replace it). None before, and
            after a failure.
        state: free for the middleware (a dict made on first use), for what
            its "before" hands to its "after" or to a later middleware.
    """

    __slots__ = (
        "_params",
        "_params_replaced",
        "_protocol",
        "_spec",
        "_state",
        "context",
        "direction",
        "kind",
        "method",
        "origin",
        "request_id",
        "result",
        "session",
    )

    def __init__(
        self,
        protocol: Connection,
        direction: Direction,
        kind: Literal["request", "notification"],
        method: str,
        request_id: RequestId | None,
        params: JSONObject | None,
        context: Any = None,
        spec: MethodSpec | None = None,
        session: Any = None,
        origin: FrameOrigin | None = None,
    ) -> None:
        self._protocol = protocol
        # An inbound request's method, to read replaced params into its type.
        self._spec = spec
        self.direction = direction
        self.kind: Literal["request", "notification"] = kind
        self.method = method
        self.request_id = request_id
        self._params = params
        self._params_replaced = False
        self.context = context
        self.session: Any = session if session is not None or context is None else context.session
        self.origin = origin
        self.result: Any = None
        self._state: dict[str, Any] | None = None

    @property
    def params(self) -> JSONObject | None:
        """The params as JSON (None when the message has none).

        Outbound, edit them in place or assign new ones: what is here when the
        inner part starts is what is sent. Inbound, ``_meta`` may be edited in
        place (the handler's ``ctx.meta`` is the same object); to change what
        the handler receives otherwise, assign new params: they are read into
        the method's params type again (invalid ones answer -32602). An
        inbound notification's params are read-only.
        """
        return self._params

    @params.setter
    def params(self, value: JSONObject | None) -> None:
        self._params = value
        self._params_replaced = True

    @property
    def meta(self) -> JSONObject:
        """The params' ``_meta`` object, made (with the params) when absent, for
        reading and editing in place."""
        params = self._params
        if params is None:
            params = self._params = {}
        meta = params.get("_meta")
        if not isinstance(meta, dict):
            meta = params["_meta"] = {}
        return meta

    @property
    def record(self) -> RequestRecord | None:
        """A snapshot of the request's record now (None for a notification).

        Inside the chain the record is not terminal yet: an inbound request is
        answered, and an outbound one settled, once the chain has unwound (see
        the outcome table in the middleware reference)."""
        if self.request_id is None:
            return None
        return self._protocol.record(self.direction, self.request_id)

    @property
    def protocol_version(self) -> str | None:
        """The protocol version the session negotiated (None before the
        handshake, and in 2026-07-28, where each request names its own in
        ``_meta``)."""
        return self._protocol.protocol_version

    @property
    def state(self) -> dict[str, Any]:
        state = self._state
        if state is None:
            state = self._state = {}
        return state

    def __repr__(self) -> str:
        return (
            f"<Call {self.direction.value} {self.kind} {self.method!r}"
            + ("" if self.request_id is None else f" id={self.request_id!r}")
            + ">"
        )


def replaced_params(call: Call) -> tuple[bool, Any]:
    """Whether a middleware assigned an inbound request's params, and if so
    those params read into the method's type.

    Raises:
        RPCError: -32602, the new params do not fit the method.
    """
    if not call._params_replaced:
        return False, None
    spec = call._spec
    if spec is None or spec.params_type is None:
        return True, call._params
    structured = call._protocol.restructure_params(spec, call._params)
    if isinstance(structured, ErrorObject):
        raise RPCError(structured.code, structured.message, structured.data)
    return True, structured


def middleware_name(middleware: object) -> str:
    """How logs and errors name *middleware*: its qualified name."""
    name = getattr(middleware, "__qualname__", None)
    if isinstance(name, str):
        return name
    return type(middleware).__qualname__


@final
class _Guarded:
    """One middleware's context, with its own failures told apart from what
    passes through it: an exception its code raises (other than
    :class:`RPCError`, :class:`trio.Cancelled` and what is not an
    ``Exception``) becomes :class:`MiddlewareError` naming it."""

    __slots__ = ("_call", "_manager", "_middleware")

    def __init__(self, middleware: Middleware, call: Call) -> None:
        self._middleware = middleware
        self._call = call
        self._manager: AbstractAsyncContextManager[object] | None = None

    def _failure(self, exc: Exception, stage: str) -> MiddlewareError:
        error = MiddlewareError(middleware_name(self._middleware), self._call.method, stage)
        error.__cause__ = exc
        return error

    async def __aenter__(self) -> None:
        try:
            manager = self._middleware(self._call)
            await manager.__aenter__()
        except RPCError:
            raise
        except Exception as exc:
            raise self._failure(exc, "before") from exc
        self._manager = manager

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        manager = self._manager
        assert manager is not None
        try:
            return bool(await manager.__aexit__(exc_type, exc, tb))
        except RPCError:
            raise
        except Exception as raised:
            if raised is exc:
                raise
            raise self._failure(raised, "after") from raised


@final
class Chain:
    """Enters the middleware of a session, in order, around one :class:`Call`;
    leaves them in reverse order. Made per call, entered once.

    Cancellation: each middleware's ``__aexit__`` runs however the inner part
    ended, with :class:`trio.Cancelled` when it was cancelled; a middleware
    that awaits then must shield itself (see the outcome table).
    """

    __slots__ = ("_call", "_entered", "_middleware")

    def __init__(self, middleware: Sequence[Middleware], call: Call) -> None:
        self._middleware = middleware
        self._call = call
        self._entered: list[_Guarded] = []

    async def __aenter__(self) -> Call:
        call = self._call
        entered = self._entered
        try:
            for middleware in self._middleware:
                guarded = _Guarded(middleware, call)
                await guarded.__aenter__()
                entered.append(guarded)
        except BaseException as exc:
            # Those already entered are left, innermost first, with the
            # failure; the call fails with it even if one of them swallows it
            # (there is no inner part to skip to).
            await self._unwind(type(exc), exc, exc.__traceback__)
            raise
        return call

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        return await self._unwind(exc_type, exc, tb)

    async def _unwind(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        """Leave every entered middleware, innermost first, handing each what
        the inner ones left (an exception, or none once one suppressed it).
        Returns True when the original exception was suppressed."""
        entered = self._entered
        pending: BaseException | None = exc
        while entered:
            guarded = entered.pop()
            try:
                if pending is None:
                    await guarded.__aexit__(None, None, None)
                elif await guarded.__aexit__(type(pending), pending, pending.__traceback__):
                    pending = None
            except BaseException as raised:
                if pending is not None and raised is not pending and raised.__context__ is None:
                    raised.__context__ = pending
                pending = raised
        if pending is None:
            return exc is not None
        if pending is exc:
            return False
        raise pending


def suppressed(call: Call) -> MiddlewareError:
    """The error for a request whose chain swallowed its handler's exception
    without giving a result to answer with."""
    return MiddlewareError("a middleware", call.method, "after", swallowed=True)
