"""Streamable HTTP, client side: reading SSE, resuming, the standalone GET stream.

:func:`read_sse` reads one ``text/event-stream`` response (a POST's answer, a
resumed stream or the GET stream) into the session's inbound queue and reports
the last event id and ``retry`` it saw. A POST's stream that broke before the
answer, after carrying an event id, is resumed by :func:`resume` with GET and
``Last-Event-ID`` after the server's ``retry`` delay (HT-12, HT-25).
:func:`get_stream` is the standalone GET stream opened after the handshake
(HT-18), reconnected the same way (HT-21). Both give up after
``max_reconnects`` reconnections in a row that bring no new event, and both stop when
their session is gone: a 404 there means the session was lost (HT-33).

These are functions of :class:`~trio_mcp.transports.HttpClientTransport`, which
holds the state.

Spec: HT-09, HT-12, HT-18, HT-21, HT-25.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING, cast

import httpx
import trio

from ._http_client_session import EXPIRED, lost
from ._sse import SSEParser

if TYPE_CHECKING:
    from ._http_client import HttpClientTransport, _Call

logger = logging.getLogger("trio_mcp.http.client")


async def read_sse(
    transport: HttpClientTransport, response: httpx.Response, call: _Call | None
) -> tuple[str | None, float | None]:
    """Push every ``message`` event; return the last event id and retry (s).

    Reads until the server ends the stream (it does after the response,
    HT-16): leaving httpx's generators early leaves inner ones unclosed.
    """
    parser = SSEParser()
    retry: float | None = None
    try:
        # aclosing: leaving early must close httpx's generator now, not at GC.
        async with aclosing(cast(AsyncGenerator[bytes, None], response.aiter_raw())) as chunks:
            async for chunk in chunks:
                for event in parser.feed(chunk):
                    if event.retry is not None:
                        retry = event.retry / 1000
                    if event.event == "message" and event.data:
                        transport._push(event.data.encode())
    except httpx.HTTPError as exc:
        logger.debug("SSE stream broke: %r", exc)
    return parser.last_event_id, retry


async def resume(
    transport: HttpClientTransport, call: _Call, last_id: str, retry: float | None
) -> None:
    """Reconnect with GET + Last-Event-ID until the call is answered (HT-25)."""
    attempts = 0
    generation = call.generation
    while not call.answered and attempts < transport.max_reconnects:
        attempts += 1
        await trio.sleep(retry if retry is not None else transport.reconnect_delay)
        if generation != transport._generation:
            transport._fail(call, f"{EXPIRED}: the call was lost with its session")
            return
        headers = transport._headers("text/event-stream")
        headers["last-event-id"] = last_id
        try:
            async with transport.http.stream("GET", transport.url, headers=headers) as response:
                if response.status_code == 404 and generation is not None:
                    lost(transport, generation)
                    transport._fail(call, f"{EXPIRED}: the call was lost with its session")
                    return
                if response.status_code != 200:
                    transport._fail(
                        call, f"Resuming the stream failed: HTTP {response.status_code}"
                    )
                    return
                new_id, new_retry = await read_sse(transport, response, call)
                if new_id is not None and new_id != last_id:
                    last_id, attempts = new_id, 0
                retry = new_retry if new_retry is not None else retry
        except httpx.HTTPError as exc:
            logger.debug("resume failed: %r", exc)


async def get_stream(transport: HttpClientTransport, answered: trio.Event) -> None:
    """The standalone GET stream, reconnected with Last-Event-ID (HT-18, HT-21)."""
    try:
        await _get_stream_loop(transport, answered)
    finally:
        answered.set()  # nobody waits forever for a GET that failed


async def _get_stream_loop(transport: HttpClientTransport, answered: trio.Event) -> None:
    last_id: str | None = None
    retry: float | None = None
    failures = 0
    generation = transport._generation
    while (
        not transport._closed
        and failures <= transport.max_reconnects
        and generation == transport._generation
    ):
        headers = transport._headers("text/event-stream")
        if last_id is not None:
            headers["last-event-id"] = last_id
        try:
            async with transport.control.stream("GET", transport.url, headers=headers) as response:
                status = response.status_code
                answered.set()
                if status == 404 and transport.session_id is not None:
                    lost(transport, generation)
                    return
                if status != 200:
                    # 405: no GET stream offered; 404 without a session: the
                    # server keeps no session, so it has no stream for us.
                    logger.debug("no GET stream: HTTP %s", status)
                    return
                new_id, new_retry = await read_sse(transport, response, None)
                failures = 0 if new_id != last_id else failures + 1
                last_id = new_id or last_id
                retry = new_retry if new_retry is not None else retry
        except httpx.HTTPError as exc:
            failures += 1
            logger.debug("GET stream failed: %r", exc)
        await trio.sleep(retry if retry is not None else transport.reconnect_delay)
