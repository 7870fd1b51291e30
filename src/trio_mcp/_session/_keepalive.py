"""The session's optional keepalive: a ping after each answered ping."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import trio

from .._errors import RequestTimeout, RPCError, SessionClosed
from ..protocol import Connection

logger = logging.getLogger("trio_mcp.session")


class Requests(Protocol):
    """How the keepalive sends its ping: :meth:`Session.request`."""

    def __call__(
        self,
        method: str,
        params: Any = None,
        *,
        progress_idle_timeout: float | None = ...,
        max_duration: float | None = ...,
    ) -> Awaitable[Any]: ...


class Keepalive:
    """Pings the peer *interval* seconds after each answered ping (PI-04).

    Args:
        protocol: the session's connection (is there ping in its revision?).
        request: sends a request and waits for its answer; raises
            :class:`SessionClosed`, sending nothing, once the session stops
            accepting.
        connection_failed: closes the session as a connection failure, with a
            reason.
        interval: seconds from an answered ping to the next one.
        ping_timeout: seconds a ping may go unanswered.
    """

    __slots__ = ("_connection_failed", "_interval", "_ping_timeout", "_protocol", "_request")

    def __init__(
        self,
        protocol: Connection,
        request: Requests,
        connection_failed: Callable[[str], Awaitable[None]],
        interval: float,
        ping_timeout: float,
    ) -> None:
        self._protocol = protocol
        self._request = request
        self._connection_failed = connection_failed
        self._interval = interval
        self._ping_timeout = ping_timeout

    async def run(self) -> None:
        """Ping until the session closes.

        A ping unanswered after *ping_timeout* seconds closes the session as a
        connection failure (PI-03, PI-05, TO-07): close origin TRANSPORT, reason
        ``"ping timeout after Ns"``, pending calls fail with
        :class:`SessionClosed`, the transport is closed. A peer that answers
        ping with an error is alive: logged, and the keepalive goes on.

        Cancellation: runs until the session closes or its nursery is cancelled.

        Spec: PI-03, PI-04, PI-05, TO-07.
        """
        ping_timeout = self._ping_timeout
        while True:
            await trio.sleep(self._interval)
            revision = self._protocol.revision
            if revision is not None and not revision.ping:
                # 2026-07-28 has no ping: a connection is not a session, and a
                # dead stdio peer shows as EOF or a broken pipe (SI-11, SI-13).
                logger.debug("keepalive: %s has no ping; stopped", revision.version)
                return
            try:
                await self._request(
                    "ping", progress_idle_timeout=ping_timeout, max_duration=ping_timeout
                )
            except RequestTimeout:
                reason = f"ping timeout after {ping_timeout:g}s"
                logger.warning("keepalive: %s; closing the session as a connection failure", reason)
                await self._connection_failed(reason)
                return
            except SessionClosed:
                return
            except RPCError as exc:
                logger.warning("keepalive: the peer answered ping with an error: %s", exc)
