"""The transport contract: a Trio channel of frames.

Any ``trio.abc.Channel[bytes]`` that keeps these rules is a transport;
:func:`trio_mcp.testing.check_transport` checks them.

Frames
    One item is one complete JSON-RPC message: UTF-8 JSON text, never empty
    (framing is the transport's business). A frame arrives whole, unchanged and
    in order. JSON never needs a raw newline (whitespace between tokens may be
    left out and a newline inside a string is escaped), so a transport may
    refuse a frame holding one with ``ValueError`` before writing anything, as
    :class:`~trio_mcp.transports.LineChannel` does (SI-06); otherwise it
    delivers it unchanged. What a transport does with an empty frame is not
    defined (newline framing reads one as a blank line and skips it).

``send(frame)``
    A checkpoint. Raises ``ClosedResourceError`` once this end is closed (also
    when ``aclose`` is called while ``send`` blocks), ``BrokenResourceError``
    once the connection failed. It may block while the peer does not read
    (back-pressure).

``receive()``
    A checkpoint. Returns the next frame; raises ``EndOfChannel`` after the
    peer closed cleanly and every frame it sent was received,
    ``BrokenResourceError`` on failure, ``ClosedResourceError`` once this end
    is closed. ``aclose`` called while another task is blocked in ``receive``
    wakes that task with ``ClosedResourceError`` or ``EndOfChannel`` (the
    session's reader treats both as the end of the connection).

``aclose()``
    A checkpoint; idempotent. It closes this end even when cancelled.

One task sends and one task receives at a time (a session has one writer and
one reader); using either side from two tasks at once is not defined.

Cancellation:
    A cancelled ``receive`` takes no frame: the next ``receive`` returns it.
    A ``send`` cancelled before it wrote anything (in particular one called in
    a scope already cancelled) raises ``Cancelled`` and delivers nothing. A
    ``send`` cancelled while it blocks may have written part of its frame, as
    a cancelled ``trio.abc.SendStream.send_all`` may: the transport is then
    broken and only ``aclose`` is meaningful. So a frame is written whole or
    not at all, or the transport is broken afterwards. The session cancels a
    blocked ``send`` only while it is closing the transport anyway.

The optional parts, declared as protocols below
    A transport's class may offer more than the channel; each optional part
    is a :class:`typing.Protocol` of this module (:class:`NowaitSendTransport`,
    :class:`NowaitReceiveTransport`, :class:`FlushingTransport`,
    :class:`BoundedTransport`), which ``mypy`` checks a transport against and
    :func:`~trio_mcp.testing.check_transport` tests when a transport offers it.
    The session asks :func:`offers` whether a transport's *class* offers one,
    once per class: the parts are methods of the class, never of one instance.

The fast path (optional)
    A transport may also offer ``send_nowait(frame)`` and ``receive_nowait()``,
    named after trio's memory channels: they never yield, and raise
    ``trio.WouldBlock`` where ``send`` or ``receive`` would have to wait (or
    any exception those raise). The session's writer and reader use them when
    present, so a frame that can move at once costs no trip through the
    scheduler; ``send`` and ``receive`` stay checkpoints. With ``send_nowait``
    the session also *writes through*: while its writer task is idle, the
    task that made a frame writes it itself.

    A byte-stream transport may take part of a frame in ``send_nowait`` (a
    non-blocking write the pipe took only in part): it then keeps the rest, in
    order, and says so with ``flush_pending()`` (True), and ``async flush()``
    writes the rest (a checkpoint, cancelled part-way only as a blocked
    ``send`` may be); ``send_nowait`` refuses with ``trio.WouldBlock`` and
    ``send`` writes the rest first while part of a frame is pending. The
    session hands that rest to its writer task, so later frames queue behind
    it. :class:`~trio_mcp.transports.LineChannel` does this on pipes.

The frame bound (optional)
    A transport that bounds an inbound frame itself (its framing reads at most
    so many bytes of one) offers :class:`BoundedTransport`: its bound in
    ``max_message_size`` and ``set_max_message_size(size)``, by which the
    session makes the transport's bound and its codec's one (``open_session(
    max_message_size=...)``).

The eras it carries (optional)
    A transport that knows something of the era negotiation it carries is an
    :class:`EraHints`. ``handshake_only`` (True): it carries only the
    handshake era, so a client on it in ``era="auto"`` goes straight to
    ``initialize`` instead of probing. ``answers_every_request`` (True): every
    request it carries gets an answer from the server's side, even from a
    server that does not know the method (Streamable HTTP: every POST ends in
    a status), so the client's era probe is decided by that answer, never by
    a timer. Every transport of this package carries both eras; without
    :class:`EraHints` a transport is taken to carry both and to promise no
    answer (a handshake-era server on stdio may ignore the probe).

Tool headers (optional)
    A transport that mirrors tool arguments into headers (Streamable HTTP in
    2026-07-28: ``Mcp-Param-*``, HM-25) is a :class:`HeaderMirroringTransport`:
    its ``tool_headers`` is the
    :class:`~trio_mcp.protocol._headers.ToolHeaderRules` it reads the
    ``x-mcp-header`` annotations of a called tool from, given at its
    construction. A client on such a transport teaches those rules the tools
    it lists, and drops tools whose annotations are invalid (HM-27).

Who is asking (optional)
    A transport that knows who sends its frames (Streamable HTTP and the
    legacy HTTP+SSE endpoint with ``auth`` or ``principal_of``; a WebSocket
    behind an authenticating middleware) does not say so itself: its owner
    hands the session an :class:`Identity` beside the transport
    (``open_session(..., identity=...)``) and refreshes it when a later
    request of the same principal presents a new token. Each request's
    context keeps the :class:`Caller` current when it arrived.

Where a frame came from (optional)
    A transport that knows, per frame, who sent it and in what outer context
    (Streamable HTTP: the POST's peer address and its W3C trace headers) is an
    :class:`OriginTransport`: its ``frame_origin`` is the
    :class:`FrameOrigin` of the frame ``receive`` returned last (or of the one
    request a per-POST transport carries). The session reads it as it takes
    that frame, before the next ``receive``; telemetry puts the peer's address
    on the spans and the trace headers in the spans' parentage.

Spec: TR-01 (UTF-8 messages), TR-03 (a custom transport documents its framing).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, TypeGuard, final, runtime_checkable

import attrs
import trio

from .protocol._headers import ToolHeaderRules

if TYPE_CHECKING:
    from ._auth._token import AccessToken

#: What a session runs over.
Transport: TypeAlias = trio.abc.Channel[bytes]


@runtime_checkable
class EraHints(Protocol):
    """A transport that says what it knows of the era negotiation it carries
    (see "The eras it carries" in the module docstring).

    Cancellation: no I/O; nothing waits.
    """

    @property
    def handshake_only(self) -> bool:
        """It carries only the handshake era: ``era="auto"`` does not probe."""
        ...

    @property
    def answers_every_request(self) -> bool:
        """Every request gets an answer: the era probe waits for it."""
        ...


@runtime_checkable
class HeaderMirroringTransport(Protocol):
    """A transport that mirrors the ``x-mcp-header`` arguments of a tool call
    into headers (see "Tool headers" in the module docstring).

    Cancellation: no I/O; nothing waits.
    """

    @property
    def tool_headers(self) -> ToolHeaderRules:
        """The annotations the transport mirrors, by tool name."""
        ...


@final
@attrs.frozen
class Caller:
    """Who sent a request, as the transport that carried it knows.

    Attributes:
        principal: who is asking: with ``StreamableHTTPApp(auth=...)`` the token's
            ``(issuer, subject)``, else ``principal_of``'s answer; None: anonymous. A
            server binds the tasks a request creates and the ``requestState`` it issues
            to it.
        access_token: the verified access token the request presented (never the raw
            bearer token), which handlers read as ``ctx.auth``; None without
            authorization.

    Spec: TK-18, PT-08, AU-11.
    """

    principal: Hashable | None = None
    access_token: AccessToken | None = None


#: The caller of a request nobody authenticated (stdio, an HTTP endpoint
#: without ``auth`` or ``principal_of``).
ANONYMOUS = Caller()


@final
class Identity:
    """The caller of one session's requests, as the transport's owner learns it.

    The owner (the HTTP application, or whoever authenticated the peer of a
    custom transport) makes one per session with the caller that opened it
    and hands it to the session (``open_session(..., identity=...)``); it is
    the only writer. A session is bound to its principal, so only the access
    token changes: :meth:`refresh` records the token a later request of the
    same principal presented (other scopes, a later expiry). The session
    reads :attr:`caller` when a request arrives, and the request keeps that
    caller (``RequestContext.caller``) however often the token is refreshed
    while it runs.
    """

    __slots__ = ("_caller",)

    def __init__(self, caller: Caller = ANONYMOUS) -> None:
        self._caller = caller

    @property
    def caller(self) -> Caller:
        """The caller of the requests that arrive now."""
        return self._caller

    def refresh(self, caller: Caller) -> None:
        """Make *caller* the caller of the requests that arrive from now on;
        those already received keep theirs.

        Raises:
            ValueError: *caller* is another principal (a session answers only
                the principal that opened it: refuse such a request instead).
        """
        if caller.principal != self._caller.principal:
            raise ValueError("a session's caller can be refreshed only by the same principal")
        self._caller = caller


@final
@attrs.frozen
class FrameOrigin:
    """Where one inbound frame came from, as its transport knows.

    Attributes:
        peer: the sender's address and port (an HTTP request's client), or None.
        trace_context: the W3C trace context the outer request carried
            (``traceparent``, ``tracestate``, ``baggage`` headers, by
            lower-case name), or None when it carried none.
    """

    peer: tuple[str, int] | None = None
    trace_context: Mapping[str, str] | None = None


@runtime_checkable
class OriginTransport(Protocol):
    """A transport that says where each frame came from (see "Where a frame
    came from" in the module docstring).

    Cancellation: no I/O; nothing waits.
    """

    @property
    def frame_origin(self) -> FrameOrigin | None:
        """The origin of the frame received last (None: not known)."""
        ...


@final
@attrs.frozen
class Network:
    """What carries a session, as its transport knows (telemetry's
    ``network.*`` attributes).

    Attributes:
        transport: ``"pipe"`` (stdio) or ``"tcp"``.
        protocol: the protocol over TCP (``"http"``, ``"websocket"``), or None.
        peer: the other side's address and port, when the transport knows it
            for the whole session (a client's server), else None.
        session_id: the handshake-era HTTP session's id (``Mcp-Session-Id``)
            at the time of asking, or None.
    """

    transport: Literal["pipe", "tcp"]
    protocol: str | None = None
    peer: tuple[str, int] | None = None
    session_id: str | None = None


@runtime_checkable
class NetworkTransport(Protocol):
    """A transport that says what carries it.

    Cancellation: no I/O; nothing waits.
    """

    @property
    def network(self) -> Network:
        """What carries this transport now."""
        ...


@runtime_checkable
class NowaitSendTransport(Protocol):
    """A transport that can send a frame without yielding (the fast path)."""

    def send_nowait(self, value: bytes) -> None:
        """Send *value* now, never yielding; raise ``trio.WouldBlock``, having
        sent nothing, where ``send`` would wait, and what ``send`` raises on a
        closed or broken end. Cancellation: never yields."""
        ...


@runtime_checkable
class NowaitReceiveTransport(Protocol):
    """A transport that can hand over a frame it already has without yielding."""

    def receive_nowait(self) -> bytes:
        """The next frame if it is there now, else raise ``trio.WouldBlock``;
        what ``receive`` raises on a closed or ended end. Cancellation: never
        yields."""
        ...


@runtime_checkable
class FlushingTransport(NowaitSendTransport, Protocol):
    """A byte-stream transport whose ``send_nowait`` may take part of a frame
    and keep the rest, in order, for :meth:`flush`."""

    def flush_pending(self) -> bool:
        """Whether part of a frame ``send_nowait`` began still waits for :meth:`flush`."""
        ...

    async def flush(self) -> None:
        """Write what ``send_nowait`` left of its frame. Cancellation: a
        checkpoint, cancelled part-way only as a blocked ``send`` may be."""
        ...


@runtime_checkable
class BoundedTransport(Protocol):
    """A transport that bounds one inbound frame itself."""

    @property
    def max_message_size(self) -> int:
        """The longest inbound frame it reads whole, in bytes."""
        ...

    def set_max_message_size(self, size: int) -> None:
        """Read inbound frames of up to *size* bytes (positive) from now on."""
        ...


#: Whether a class offers a protocol: a runtime_checkable isinstance costs
#: tens of microseconds, and a 2026-07-28 POST opens a session per request.
_OFFERED: dict[tuple[type, type], bool] = {}


def offers_nowait_send(transport: Transport) -> TypeGuard[NowaitSendTransport]:
    """Whether *transport*'s class offers :class:`NowaitSendTransport`."""
    return offers(transport, NowaitSendTransport)


def offers_nowait_receive(transport: Transport) -> TypeGuard[NowaitReceiveTransport]:
    """Whether *transport*'s class offers :class:`NowaitReceiveTransport`."""
    return offers(transport, NowaitReceiveTransport)


def offers_flushing(transport: Transport) -> TypeGuard[FlushingTransport]:
    """Whether *transport*'s class offers :class:`FlushingTransport`."""
    return offers(transport, FlushingTransport)


def offers_origin(transport: Transport) -> TypeGuard[OriginTransport]:
    """Whether *transport*'s class offers :class:`OriginTransport`."""
    return offers(transport, OriginTransport)


def offers_network(transport: object) -> TypeGuard[NetworkTransport]:
    """Whether *transport*'s class offers :class:`NetworkTransport`."""
    return offers(transport, NetworkTransport)


def offers_bound(transport: Transport) -> TypeGuard[BoundedTransport]:
    """Whether *transport*'s class offers :class:`BoundedTransport`."""
    return offers(transport, BoundedTransport)


def offers(transport: object, protocol: type) -> bool:
    """Whether *transport*'s class offers *protocol* (one of this module's),
    decided by ``isinstance`` on the first transport of that class and
    remembered for the class."""
    key = (type(transport), protocol)
    offered = _OFFERED.get(key)
    if offered is None:
        offered = _OFFERED[key] = isinstance(transport, protocol)
    return offered
