"""OpenTelemetry for a session's requests, as a middleware: spans and metrics
by the MCP semantic conventions (``_semconv.py``), and W3C trace context
carried in ``_meta``.

Imported only when telemetry is on, and only the OpenTelemetry *API* is used:
with no SDK configured every span is the API's no-op and nothing is injected,
and a provider configured later is picked up (the API's proxies). Two modes:

* ``native``: a CLIENT span for every request and notification this side
  sends, with the trace context injected into its ``_meta``; a SERVER span for
  every one it receives, parented on the context extracted from its
  ``_meta`` (the context that was current when it arrived, an HTTP request's
  say, is linked); the handler runs in its span's context, so a call it makes
  continues the trace. The operation-duration histograms and trio_mcp's own
  metrics are recorded.
* ``propagation``: no span and no metric; the context current when a message
  is sent is injected, and the one a message carries is made current while it
  is handled, so traces made by others pass through.
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Hashable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Literal

import orjson
import trio
from opentelemetry import baggage, metrics, propagate, trace
from opentelemetry import context as otel_context
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode

from .._errors import RequestTimeout, RPCError, SessionClosed
from .._session._middleware import Call
from .._transport import offers_network
from .._version import __version__
from ..protocol import CancelOrigin, Direction, RequestRecord
from . import _semconv as sc

Mode = Literal["native", "propagation"]


def transport_attributes(transport: object, role: sc.Role) -> dict[str, Any]:
    """The ``network.*`` (and, for a client, the server's address) attributes
    of a session's transport, from its :class:`~trio_mcp.lowlevel.Network`:
    ``pipe`` for stdio, ``tcp`` for HTTP and WebSocket, none in memory."""
    if not offers_network(transport):
        return {}
    network = transport.network
    peer = network.peer if role == "client" else None
    return sc.network_attributes(network.transport, protocol=network.protocol, peer=peer, role=role)


def session_id_of(transport: object) -> str | None:
    """The handshake-era HTTP session id the transport carries, if any."""
    return transport.network.session_id if offers_network(transport) else None


def _trace_headers(call: Call) -> Mapping[str, str] | None:
    """The W3C trace headers of the HTTP request that carried *call*, if any."""
    origin = call.origin
    return None if origin is None else origin.trace_context


def _json_text(value: object) -> str:
    """*value* as compact JSON text (what cannot be JSON, as its string)."""
    return orjson.dumps(value, default=str).decode()


def _carries_context(meta: object) -> bool:
    return isinstance(meta, dict) and any(key in meta for key in sc.TRACE_CONTEXT_KEYS)


#: The API's providers before an SDK is configured: they record nothing.
_NO_SDK = frozenset(
    {"ProxyTracerProvider", "NoOpTracerProvider", "_ProxyMeterProvider", "NoOpMeterProvider"}
)


class _Nothing:
    """The middleware's context when it has nothing to do around a message."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc_info: object) -> None:
        return None


_NOTHING = _Nothing()


class _Adopted:
    """The trace context a received message carries, current while it is handled."""

    __slots__ = ("_meta", "_token")

    def __init__(self, meta: Any) -> None:
        self._meta = meta
        self._token: object = None

    async def __aenter__(self) -> None:
        self._token = otel_context.attach(propagate.extract(self._meta))

    async def __aexit__(self, *exc_info: object) -> None:
        otel_context.detach(self._token)  # type: ignore[arg-type]


#: The methods whose answer may be a task (which later requests name).
_TASK_MAKERS = frozenset({"tools/call", "sampling/createMessage", "elicitation/create"})


class _Recent:
    """The span contexts of the last *size* calls or tasks, by key: what a
    later round of a call, or a request about a task, links to."""

    __slots__ = ("_items", "_size")

    def __init__(self, size: int = 1024) -> None:
        self._items: OrderedDict[Hashable, SpanContext] = OrderedDict()
        self._size = size

    def put(self, key: Hashable, context: SpanContext) -> None:
        self._items[key] = context
        self._items.move_to_end(key)
        if len(self._items) > self._size:
            self._items.popitem(last=False)

    def get(self, key: Hashable) -> SpanContext | None:
        return self._items.get(key)


def _task_id(result: object) -> str | None:
    """The id of the task an answer made, in either era's shape (JSON or typed)."""
    if isinstance(result, Mapping):
        nested = result.get("task")
        holder = nested if isinstance(nested, Mapping) else result
        task_id = holder.get("taskId") if "status" in holder else None
    else:
        task = getattr(result, "task", None)
        task_id = getattr(task if task is not None else result, "task_id", None)
    return task_id if isinstance(task_id, str) else None


class _Outcome:
    """How one request or notification ended, for its span and metrics."""

    __slots__ = ("code", "error_type", "message", "origin", "reason", "state")

    def __init__(self) -> None:
        self.state = "completed"
        self.error_type: str | None = None
        self.code: int | None = None
        self.message = ""
        self.origin: CancelOrigin | None = None
        self.reason: str | None = None


def _leaf(exc: BaseException) -> BaseException:
    """What a group of exceptions stands for: its one leaf, or a cancel when
    every leaf is one (a handler's nursery cancelled as a whole)."""
    while isinstance(exc, BaseExceptionGroup):
        if len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
            continue
        cancelled, rest = exc.split(trio.Cancelled)
        if rest is None and cancelled is not None:
            return _leaf(cancelled.exceptions[0])
        return exc
    return exc


def _outcome(exc: BaseException | None, call: Call) -> _Outcome:
    outcome = _Outcome()
    if exc is not None:
        exc = _leaf(exc)
    record: RequestRecord | None = call.record
    if exc is None:
        if _is_tool_error(call.result):
            outcome.error_type = sc.TOOL_ERROR
            outcome.message = "the tool answered with isError"
        return outcome
    if isinstance(exc, RequestTimeout):
        outcome.state, outcome.origin, outcome.reason = "cancelled", CancelOrigin.DEADLINE, str(exc)
    elif isinstance(exc, trio.Cancelled):
        outcome.state = "cancelled"
        if record is not None and record.cancel_origin is not None:
            outcome.origin, outcome.reason = record.cancel_origin, record.cancel_reason
        else:
            outbound = call.direction is Direction.OUTBOUND
            outcome.origin = CancelOrigin.CALLER if outbound else CancelOrigin.SHUTDOWN
            outcome.reason = str(exc)
    elif isinstance(exc, SessionClosed):
        outcome.state, outcome.origin, outcome.reason = "cancelled", exc.origin, str(exc)
    elif isinstance(exc, RPCError):
        outcome.state, outcome.code, outcome.message = "failed", exc.code, exc.message
    else:
        # A handler's own failure is answered -32603 (Internal error).
        outcome.state, outcome.code, outcome.message = "failed", -32603, type(exc).__name__
    if outcome.state == "cancelled":
        deadline = outcome.origin is CancelOrigin.DEADLINE
        outcome.error_type = sc.TIMEOUT if deadline else sc.CANCELLED
        origin = outcome.origin.value if outcome.origin is not None else "unknown"
        outcome.message = f"cancelled by {origin}: {outcome.reason}"
    elif outcome.code is not None:
        outcome.error_type = str(outcome.code)
    return outcome


def _is_tool_error(result: object) -> bool:
    if isinstance(result, Mapping):
        return result.get("isError") is True
    return getattr(result, "is_error", None) is True


class Telemetry:
    """The telemetry middleware of one role (``"client"`` or ``"server"``).

    Made by the ``telemetry=`` switch of :class:`~trio_mcp.Server` and the
    clients (*capture*: their ``telemetry_capture=``, see
    :meth:`_captured`); *transport* (a client's) gives the ``network.*`` and
    ``server.*`` attributes, which a server reads from each session's own.
    Spans and metrics go to the global providers unless *tracer_provider* or
    *meter_provider* are given.

    Cancellation: the span ends and the metrics are recorded however the
    message ended (a cancel by anyone, a deadline, shutdown); nothing here
    awaits, so it never blocks a cancelled request.
    """

    def __init__(
        self,
        role: sc.Role,
        mode: Mode,
        *,
        transport: object = None,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        capture: bool = False,
    ) -> None:
        self.role: sc.Role = role
        self.mode: Mode = mode
        #: Whether ``tools/call`` spans carry the arguments and the result
        #: (opt-in: they may hold what must not leave the process).
        self.capture = capture
        self._native = mode == "native"
        self._network = transport_attributes(transport, role) if transport is not None else None
        self._by_session: weakref.WeakKeyDictionary[Any, dict[str, Any]] = (
            weakref.WeakKeyDictionary()
        )
        # The calls each session made or answered (for the rounds of one
        # call), and the tasks (whose ids are unique across sessions).
        self._calls: weakref.WeakKeyDictionary[Any, _Recent] = weakref.WeakKeyDictionary()
        self._own_calls = _Recent()
        self._tasks = _Recent()
        self._own_providers = tracer_provider is not None or meter_provider is not None
        self._tracer = trace.get_tracer(sc.SCOPE, __version__, tracer_provider)
        meter = metrics.get_meter(sc.SCOPE, __version__, meter_provider)
        duration = (
            sc.CLIENT_OPERATION_DURATION if role == "client" else sc.SERVER_OPERATION_DURATION
        )
        self._duration = meter.create_histogram(
            duration, unit="s", description=sc.METRICS[duration][2]
        )
        self._queued = meter.create_histogram(
            sc.QUEUED_DURATION, unit="s", description=sc.METRICS[sc.QUEUED_DURATION][2]
        )
        self._cancellations = meter.create_counter(
            sc.CANCELLATIONS, unit="{request}", description=sc.METRICS[sc.CANCELLATIONS][2]
        )
        self._outcomes = meter.create_counter(
            sc.OUTCOMES, unit="{request}", description=sc.METRICS[sc.OUTCOMES][2]
        )
        self._in_flight = meter.create_up_down_counter(
            sc.IN_FLIGHT, unit="{request}", description=sc.METRICS[sc.IN_FLIGHT][2]
        )
        lifetime = sc.CLIENT_SESSION_DURATION if role == "client" else sc.SERVER_SESSION_DURATION
        self._session_duration = meter.create_histogram(
            lifetime, unit="s", description=sc.METRICS[lifetime][2]
        )

    @asynccontextmanager
    async def watching(self, session: Any) -> AsyncIterator[None]:
        """Around a session's life: records ``mcp.{role}.session.duration``
        when it ends, for a handshake-era session only (2026-07-28 has no
        session), with ``error.type`` when it ended with an exception.

        Cancellation: records however the session ended; never awaits."""
        started = time.perf_counter()
        failure: BaseException | None = None
        try:
            yield
        except BaseException as exc:
            failure = exc
            raise
        finally:
            version = session.protocol.protocol_version
            if (
                self._native
                and self._recording()
                and isinstance(version, str)
                and version < sc.FIRST_SESSIONLESS
            ):
                attributes: dict[str, Any] = {sc.MCP_PROTOCOL_VERSION: version}
                network = self._network
                if network is None:
                    network = transport_attributes(session.transport, self.role)
                attributes.update(sc.metric_attributes(network, self.role))
                if failure is not None and not isinstance(_leaf(failure), trio.Cancelled):
                    attributes[sc.ERROR_TYPE] = type(_leaf(failure)).__name__
                self._session_duration.record(time.perf_counter() - started, attributes)

    def __call__(self, call: Call) -> AbstractAsyncContextManager[None]:
        if not self._native or not self._recording():
            # Propagation only (asked for, or native with no SDK to record
            # anything): what costs nothing when there is nothing to carry.
            if call.direction is Direction.OUTBOUND:
                self._inject(call, None)
                return _NOTHING
            params = call.params
            meta = params.get("_meta") if params is not None else None
            if _carries_context(meta):
                return _Adopted(meta)
            headers = _trace_headers(call)
            return _NOTHING if headers is None else _Adopted(headers)
        if call.direction is Direction.OUTBOUND:
            return self._send(call)
        return self._receive(call)

    def _recording(self) -> bool:
        """Whether an SDK is there to record spans or metrics: given to this
        middleware, or configured globally (until then the API's providers
        are proxies that record nothing)."""
        if self._own_providers:
            return True
        tracing = type(trace.get_tracer_provider()).__name__
        metering = type(metrics.get_meter_provider()).__name__
        return tracing not in _NO_SDK or metering not in _NO_SDK

    # -------------------------------------------------------- propagation

    @staticmethod
    def _inject(call: Call, context: otel_context.Context | None) -> None:
        if (
            context is None
            and not trace.get_current_span().get_span_context().is_valid
            and not baggage.get_all()
        ):
            return  # nothing current to carry (the propagators would write nothing)
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=context)
        if carrier:
            # Only when there is something to carry: a message is never given
            # an empty _meta (nor params) for nothing.
            call.meta.update(carrier)

    # ------------------------------------------------------------- native

    def _attributes(self, call: Call) -> dict[str, Any]:
        params = call.params
        network = self._network
        session_id = None
        session = call.session
        if session is not None and self._network is None:
            known = self._by_session.get(session)
            if known is None:
                transport = session.transport
                known = {
                    "network": transport_attributes(transport, self.role),
                    "session_id": session_id_of(transport),
                }
                self._by_session[session] = known
            network, session_id = known["network"], known["session_id"]
        attributes = sc.request_attributes(
            call.method,
            params,
            request_id=call.request_id,
            protocol_version=sc.protocol_version_of(params, call.protocol_version),
            session_id=session_id if isinstance(session_id, str) else None,
            network=network,
        )
        origin = call.origin
        if origin is not None and origin.peer is not None and self.role == "server":
            attributes[sc.CLIENT_ADDRESS], attributes[sc.CLIENT_PORT] = origin.peer
        return attributes

    @asynccontextmanager
    async def _send(self, call: Call) -> AsyncIterator[None]:
        attributes = self._attributes(call)
        span = self._tracer.start_span(
            sc.span_name(call.method, call.params), kind=SpanKind.CLIENT, attributes=attributes
        )
        if self.capture:
            self._captured(call, span, None)
        self._inject(call, trace.set_span_in_context(span))
        async with self._measured(call, span, attributes):
            yield

    @asynccontextmanager
    async def _receive(self, call: Call) -> AsyncIterator[None]:
        attributes = self._attributes(call)
        params = call.params
        meta = params.get("_meta") if params is not None else None
        parent: otel_context.Context | None = None
        links: list[Link] = []
        # The context current as it arrived (an instrumented HTTP request's),
        # or else the one its HTTP request's trace headers carry.
        ambient = trace.get_current_span().get_span_context()
        headers = _trace_headers(call)
        if not ambient.is_valid and headers is not None:
            ambient = trace.get_current_span(propagate.extract(headers)).get_span_context()
            if not _carries_context(meta) and ambient.is_valid:
                # Nothing in _meta: the HTTP request's context is the parent.
                parent = propagate.extract(headers)
        if _carries_context(meta):
            parent = propagate.extract(meta)
            # The ambient context is another trace's (one HTTP request may
            # carry several messages): linked, not the parent.
            if ambient.is_valid:
                links.append(Link(ambient))
        span = self._tracer.start_span(
            sc.span_name(call.method, params),
            context=parent,
            kind=SpanKind.SERVER,
            attributes=attributes,
            links=links,
        )
        if self.capture:
            self._captured(call, span, None)
        token = otel_context.attach(trace.set_span_in_context(span, parent))
        try:
            async with self._measured(call, span, attributes):
                yield
        finally:
            otel_context.detach(token)

    @asynccontextmanager
    async def _measured(
        self, call: Call, span: Span, attributes: dict[str, Any]
    ) -> AsyncIterator[None]:
        """Ends *span* with the outcome and records the metrics, however the
        inner part ended."""
        request = call.kind == "request"
        kind = {sc.MCP_METHOD_NAME: call.method, sc.REQUEST_DIRECTION: call.direction.value}
        if request:
            self._in_flight.add(1, kind)
        started = time.perf_counter()
        failure: BaseException | None = None
        try:
            yield
        except BaseException as exc:
            failure = exc
            raise
        finally:
            elapsed = time.perf_counter() - started
            outcome = _outcome(failure, call)
            if request:
                self._link(call, span)
                if self.capture and failure is None:
                    self._captured(call, span, call.result)
            self._finish(span, outcome)
            measured = sc.metric_attributes(attributes, self.role)
            if outcome.error_type is not None:
                measured[sc.ERROR_TYPE] = outcome.error_type
                if outcome.code is not None:
                    measured[sc.RPC_RESPONSE_STATUS_CODE] = str(outcome.code)
            self._duration.record(elapsed, measured)
            if request:
                self._in_flight.add(-1, kind)
                self._outcomes.add(1, {**kind, sc.REQUEST_STATE: outcome.state})
                if outcome.origin is not None:
                    self._cancellations.add(1, {**kind, sc.CANCEL_ORIGIN: outcome.origin.value})
                record = call.record
                if record is not None and record.started_at is not None:
                    self._queued.record(record.started_at - record.queued_at, kind)

    @staticmethod
    def _captured(call: Call, span: Span, result: object) -> None:
        """Puts a ``tools/call``'s arguments (*result* None: as it starts) or
        its *result* (as it ends) on *span*, as JSON text: only with
        ``telemetry_capture``, and never on a metric."""
        if call.method != "tools/call":
            return
        if result is None:
            params = call.params
            arguments = params.get("arguments") if params is not None else None
            if arguments is not None:
                span.set_attribute(sc.GEN_AI_TOOL_CALL_ARGUMENTS, _json_text(arguments))
            return
        if not isinstance(result, Mapping) and call.session is not None:
            result = call.session.protocol.to_json(result)  # a client's typed result
        span.set_attribute(sc.GEN_AI_TOOL_CALL_RESULT, _json_text(result))

    def _link(self, call: Call, span: Span) -> None:
        """Links *span* to the round of the same call it follows (2026-07-28
        input-required rounds) and, for a request about a task, to the
        request that made the task; remembers it for the ones to come."""
        calls = self._own_calls
        if call.context is not None:
            session = call.session
            calls = self._calls.get(session) or self._calls.setdefault(session, _Recent())
        record = call.record
        if record is not None and record.follows is not None:
            previous = calls.get(record.follows)
            if previous is not None:
                span.add_link(previous, {sc.LINK_KIND: "previous round"})
        if call.method in _TASK_MAKERS:
            calls.put(call.request_id, span.get_span_context())
            task_id = _task_id(call.result)
            if task_id is not None:
                self._tasks.put(task_id, span.get_span_context())
        elif call.method.startswith("tasks/"):
            params = call.params
            task_id = params.get("taskId") if params is not None else None
            made = self._tasks.get(task_id) if isinstance(task_id, str) else None
            if made is not None:
                span.add_link(made, {sc.LINK_KIND: "task creation"})

    @staticmethod
    def _finish(span: Span, outcome: _Outcome) -> None:
        if outcome.origin is not None:
            span.add_event(
                sc.CANCEL_EVENT,
                {sc.CANCEL_ORIGIN: outcome.origin.value, sc.CANCEL_REASON: outcome.reason or ""},
            )
        if outcome.error_type is not None:
            span.set_attribute(sc.ERROR_TYPE, outcome.error_type)
            if outcome.code is not None:
                span.set_attribute(sc.RPC_RESPONSE_STATUS_CODE, str(outcome.code))
            span.set_status(Status(StatusCode.ERROR, outcome.message))
        span.end()
