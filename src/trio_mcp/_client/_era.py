"""Choosing the era of a client connection: ``era="auto" | "modern" | "legacy"``.

Theory of operation
-------------------
:func:`negotiate` runs on a fresh session before anything else is sent:

* ``"legacy"``: the handshake (``initialize``, our newest handshake-era version
  offered, a supported counter-offer accepted: LC-07..LC-09).
* ``"modern"``: ``server/discover`` naming our newest 2026-07-28 version
  (DS-04); a -32022 naming another modern version we speak is retried with it
  once (VR-03); anything else fails: a modern-only client cannot talk to a
  handshake-era server (VR-14).
* ``"auto"`` (the default): the same ``server/discover`` as a probe (SI-14,
  DS-05). Where a server may leave an unknown request unanswered (stdio), the
  probe is bounded by a short *probe_timeout*; where every request is answered
  (Streamable HTTP: a status for every POST; *probe_timeout* None), only the
  answer decides, so a slow modern server or an authorization asked for on
  the probe is waited for (bounded by the request timeout). A
  discover result means modern; -32022 is a recognised modern answer, so the
  client retries with a version it names and never falls back (VR-11), unless
  the versions it names are handshake-era ones we speak. Any other error or no
  answer in time (a legacy server answers -32601, -32602, -32600 or nothing:
  SI-15) means legacy: ``initialize`` on the same connection. After no answer
  in time (not after an answer), a -32022 to that ``initialize`` naming a
  modern version we speak still goes modern: a modern server slower than the
  probe timeout read the probe, is in 2026-07-28 from then on, and refuses
  the handshake (VR-13). A server that
  closes the connection on the probe raises :class:`ProbeClosedConnection`,
  so that the stdio client can start a fresh process for the handshake.
  With ``probe=False`` (a server remembered as handshake-era, VR-12), ``auto``
  starts with ``initialize`` and still goes modern when that is refused with
  -32022 naming a modern version.

Cancellation: the probe's timeout cancels the probe only (the server is told,
and a late answer is ignored); an outer cancel tears the whole negotiation
down. ``initialize`` is never cancelled by message (CN-03).

Spec: VR-03, VR-05, VR-11, VR-12, VR-14, SI-14, SI-15, SI-16, DS-04, DS-05,
LC-07, LC-09.
"""

from __future__ import annotations

import logging
import math
from typing import Literal

import attrs
import trio

from .. import types as mcp_types
from .._errors import HandshakeRefused, InvalidPeerResult, RPCError, SessionClosed
from .._session import DEFAULT, Session
from ..protocol import Connection, ErrorCode

logger = logging.getLogger("trio_mcp.client")

#: What ``open_client(era=...)`` accepts.
EraChoice = Literal["auto", "modern", "legacy"]
ERAS: tuple[str, ...] = ("auto", "modern", "legacy")


class ProbeClosedConnection(SessionClosed):
    """The server closed the connection on the era probe (``server/discover``):
    some handshake-era servers exit on a request they do not know. The stdio
    client starts a fresh process for the handshake (SI-14)."""


@attrs.frozen
class Negotiated:
    """What :func:`negotiate` chose, and what the server said of itself."""

    era: Literal["modern", "legacy"]
    #: The server's ``serverInfo`` (2026-07-28: from the discover result's
    #: ``_meta``; self-reported, never a security input: ME-12).
    server_info: mcp_types.Implementation
    initialize_result: mcp_types.InitializeResult | None = None
    discover_result: mcp_types.DiscoverResult | None = None

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


def _supported(error: RPCError) -> list[str] | None:
    """``data.supported`` of a -32022 error, if it is a list of strings."""
    if error.code != ErrorCode.UNSUPPORTED_PROTOCOL_VERSION or not isinstance(error.data, dict):
        return None
    supported = error.data.get("supported")
    if isinstance(supported, list) and all(isinstance(v, str) for v in supported):
        return supported
    return None


def _refused(error: RPCError, supported: list[str], what: str, why: str) -> HandshakeRefused:
    return HandshakeRefused(
        f"the server refused the MCP handshake: {what} answered JSON-RPC error "
        f"{error.code}: {error.message}: {why}",
        supported=supported,
    )


async def _discover(session: Session, protocol: Connection, version: str) -> Negotiated:
    message = protocol.discover_request(version)
    result: mcp_types.DiscoverResult = await session.call_prepared(message)
    protocol.start_modern(version, result)
    try:
        server_info: mcp_types.Implementation = mcp_types.converter.structure(
            protocol.peer_info, mcp_types.Implementation
        )
    except Exception:
        server_info = mcp_types.Implementation(name="", version="")
    return Negotiated("modern", server_info, discover_result=result)


async def _initialize(
    session: Session, protocol: Connection, version: str | None
) -> mcp_types.InitializeResult:
    message = protocol.initialize_request(version)
    result: mcp_types.InitializeResult = await session.call_prepared(
        message, progress_idle_timeout=DEFAULT, max_duration=DEFAULT
    )
    note = protocol.complete_handshake(result)
    await session.notify_prepared(note)
    return result


async def _handshake(
    session: Session, protocol: Connection, version: str | None, *, fall_forward: bool
) -> Negotiated:
    """``initialize``; with *fall_forward*, a -32022 naming a modern version we
    speak goes modern (VR-13)."""
    try:
        result = await _initialize(session, protocol, version)
    except RPCError as error:
        supported = _supported(error)
        if supported is None:
            raise
        common = [v for v in protocol.modern_versions if v in supported]
        if common and fall_forward:
            logger.debug("initialize refused with -32022; the server speaks %s", common[0])
            return await _discover(session, protocol, common[0])
        raise _refused(
            error, supported, "initialize", f"this server speaks only {', '.join(supported)}"
        ) from error
    return Negotiated("legacy", result.server_info, initialize_result=result)


async def negotiate(
    session: Session,
    protocol: Connection,
    era: EraChoice,
    *,
    probe: bool = True,
    probe_timeout: float | None = 2.0,
    protocol_version: str | None = None,
) -> Negotiated:
    """Choose the era of *session* and run its opening (see the module docstring).

    Raises:
        HandshakeRefused: the server speaks no version we do.
        ProbeClosedConnection: ``auto`` and the server closed the connection
            on the probe.
        RPCError: ``modern`` and the server is not a modern one; or the
            handshake was refused with another error.
        UnsupportedProtocolVersion: the server chose a handshake-era version
            we do not speak (LC-09).
        RequestTimeout, SessionClosed: as :meth:`Session.request`.

    Cancellation: see the module docstring.
    """
    if era not in ERAS:
        raise ValueError(f"era must be one of {ERAS}, not {era!r}")
    modern = protocol.modern_versions
    handshake_version = protocol_version
    modern_version = modern[0] if modern else None
    if protocol_version is not None:
        if protocol_version in modern:
            modern_version, handshake_version = protocol_version, None
        elif era == "modern":
            raise ValueError(f"{protocol_version!r} is not a 2026-07-28-era version")
        else:
            # A handshake-era version asked for by name: that era, at that version.
            era = "legacy"
    if era == "legacy" or modern_version is None or (era == "auto" and not probe):
        if era == "modern":
            raise ValueError("era='modern' needs a 2026-07-28 version among the client's versions")
        return await _handshake(session, protocol, handshake_version, fall_forward=era != "legacy")
    chosen: Negotiated | None = None
    # Whether the probe went unanswered in time (rather than answered "not modern").
    timed_out = False
    try:
        if era == "modern":
            chosen = await _discover_with_retry(session, protocol, modern_version)
            if chosen is None:
                raise HandshakeRefused(
                    "the server speaks no 2026-07-28 version this client does "
                    "(it named only handshake-era ones): use era='auto' or 'legacy'"
                )
            return chosen
        bound = math.inf if probe_timeout is None else probe_timeout
        with trio.move_on_after(bound) as probe_scope:
            chosen = await _discover_with_retry(session, protocol, modern_version)
        if chosen is not None:
            return chosen
    except RPCError as error:
        if era == "modern" or _supported(error) is not None:
            raise
        logger.debug("era probe answered %s: %s; using the handshake", error.code, error.message)
    except InvalidPeerResult as error:
        # Answered, but not with a discover result: not a modern server (SI-14).
        if era == "modern":
            raise
        logger.debug("era probe answered with no discover result (%s); using the handshake", error)
    except SessionClosed as error:
        if era == "modern":
            raise
        raise ProbeClosedConnection(
            f"the server closed the connection on the era probe: {error}", error.origin
        ) from error
    else:
        if era == "auto" and probe_scope.cancelled_caught:
            timed_out = True
            logger.debug("era probe unanswered after %ss; using the handshake", probe_timeout)
    # A probe answered with a handshake-era error found no modern server: a
    # -32022 to initialize now cannot mean "go modern" (it already said
    # otherwise). A probe that merely timed out said nothing: a slow modern
    # server may have read it (a first request with the 2026-07-28 envelope
    # locks some servers, mcp 2.x among them, into that era) and then refuses
    # initialize with -32022 naming 2026-07-28, so that goes modern (VR-13).
    return await _handshake(session, protocol, handshake_version, fall_forward=timed_out)


async def _discover_with_retry(
    session: Session, protocol: Connection, version: str
) -> Negotiated | None:
    """``server/discover`` at *version*; on -32022, once more at a modern
    version the server names (our newest such; the same one when it names
    the very version it refused, as a server that lost the request's state
    may: one retry either way, never a loop); None when it names only
    handshake-era versions we speak (then the handshake, VR-03)."""
    try:
        return await _discover(session, protocol, version)
    except RPCError as error:
        supported = _supported(error)
        if supported is None:
            raise
        common = [v for v in protocol.modern_versions if v in supported]
        if common:
            try:
                return await _discover(session, protocol, common[0])
            except RPCError as again:
                named = _supported(again)
                if named is None:
                    raise
                raise _refused(
                    again,
                    named,
                    "server/discover",
                    f"it refused {common[0]} too, a version it named; it speaks only "
                    f"{', '.join(named)}",
                ) from again
        if any(v in supported for v in protocol.handshake_versions):
            return None
        raise _refused(
            error,
            supported,
            "server/discover",
            f"no version in common: this server speaks only {', '.join(supported)}",
        ) from error
