"""Streamable HTTP, client side: the session's life after it starts.

What :class:`~trio_mcp.transports.HttpClientTransport` does when the session it
talks to ends, changes or turns out to be a 2024-11-05 one: a 404 for the
session (:func:`lost`), re-initializing (:func:`start_new_session`), asking
whether the session still exists (:func:`probe_session`), ending it with DELETE
(:func:`delete`, HT-34) and falling back to the HTTP+SSE transport
(:func:`fall_back`, SS-08). The state lives on the transport; these are
functions of it, as are those of ``_http_client_post`` and
``_http_client_streams``, which import this module (so the few names every
client module uses, :data:`EXPIRED`, :data:`ACCEPT_BOTH` and :func:`origin`,
are defined here).

Re-initializing (HT-33, opt-in): on a 404 for the current session the transport
fails every call in flight on that session ("session expired"), holds back new
messages, and runs the handshake again by itself: the ``initialize`` the session
sent first (same capabilities and client info, offering the revision already
negotiated) is POSTed without ``Mcp-Session-Id`` and ``MCP-Protocol-Version``,
the new session id is taken from the answer, ``notifications/initialized`` is
POSTed and the GET stream reopened. Then the held messages go out on the new
session. The :class:`~trio_mcp.Client` above sees only the failed calls; its
negotiated revision stays valid because the new session must agree to it (any
other answer ends the transport as without the option). What the old session
held on the server (subscriptions, logging level) is gone: an application that
depends on it re-establishes it (``reinitializations`` counts new sessions).
Notifications and responses meant for the old session are dropped.

Falling back (SS-08): when the server refuses the ``initialize`` POST with 400,
404 or 405, the transport GETs the same URL expecting an ``endpoint`` event, and
from then on POSTs every message to that endpoint (same origin only); that SSE
stream carries the server's messages and is the session: when it ends, the
inbound side ends.

Spec: HT-33, HT-34, SS-04, SS-08.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urljoin, urlsplit

import httpx
import orjson
import trio

from ._sse import SSEParser

if TYPE_CHECKING:
    from ._http_client import HttpClientTransport, _Call

logger = logging.getLogger("trio_mcp.http.client")

#: The error message of calls lost with their session.
EXPIRED = "Session expired (HTTP 404)"
#: The Accept header of every POST and DELETE (HT-06).
ACCEPT_BOTH = "application/json, text/event-stream"


def origin(url: str) -> tuple[str, str]:
    """Scheme and authority of *url*: redirects and endpoints must keep the endpoint's."""
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def expire(transport: HttpClientTransport) -> None:
    """The session is gone for good: fail what is pending and end the inbound side."""
    transport.session_expired = True
    for call in list(transport._calls.values()):
        transport._fail(call, f"{EXPIRED}: open a new client to re-initialize")
    transport._in_send.close()


def lost(transport: HttpClientTransport, generation: int) -> None:
    """404 for the session of *generation* (HT-33).

    Only the first 404 of the current session counts: every call sent on it
    and not answered fails (and its POST is abandoned; it may have run, so it
    is never sent again); then the transport ends or (``reinitialize``)
    starts a new session.
    """
    if generation != transport._generation or transport.session_expired or transport._closed:
        return  # an older session's 404: its calls have already failed
    transport._generation += 1
    if not transport.reinitialize or transport._init_frame is None:
        expire(transport)
        return
    for call in list(transport._calls.values()):
        if call.generation == generation:
            transport._fail(call, f"{EXPIRED}: the call was lost with its session")
            call.scope.cancel(reason="its session is gone")
    transport.session_id = None
    transport._ready = trio.Event()
    transport._spawn(start_new_session, transport)


async def start_new_session(transport: HttpClientTransport) -> None:
    """Run initialize / initialized again, without a session id (HT-33).

    Cancellation: cancelled with the transport; ``send`` callers waiting
    for the new session are then released and get ``ClosedResourceError``.
    """
    ok = False
    try:
        ok = await _handshake_again(transport)
    except (httpx.HTTPError, orjson.JSONDecodeError) as exc:
        logger.warning("could not start a new session: %r", exc)
    finally:
        if not ok:
            expire(transport)
        transport._ready.set()
    if ok and transport.open_get_stream:
        # As after the first handshake: wait (bounded) for the GET stream.
        await transport._open_get_stream()


async def _handshake_again(transport: HttpClientTransport) -> bool:
    assert transport._init_frame is not None
    message = orjson.loads(transport._init_frame)
    request_id = f"trio_mcp-reinitialize-{transport.reinitializations + 1}"
    message["id"] = request_id
    if transport.protocol_version is not None:
        message["params"]["protocolVersion"] = transport.protocol_version
    # A fresh start: neither Mcp-Session-Id nor MCP-Protocol-Version.
    headers = {**transport.headers, "accept": ACCEPT_BOTH, "content-type": "application/json"}
    answers: list[Any] = []
    async with transport.control.stream(
        "POST", transport.url, content=orjson.dumps(message), headers=headers
    ) as response:
        if response.status_code != 200:
            logger.warning("new session refused: HTTP %s", response.status_code)
            return False
        session_id = response.headers.get("mcp-session-id")
        ctype = response.headers.get("content-type", "")
        if ctype.startswith("application/json"):
            answers.append(orjson.loads(await response.aread()))
        elif ctype.startswith("text/event-stream"):
            parser = SSEParser()
            async with aclosing(cast(AsyncGenerator[bytes, None], response.aiter_raw())) as chunks:
                async for chunk in chunks:
                    for event in parser.feed(chunk):
                        if event.event == "message" and event.data:
                            answers.append(orjson.loads(event.data))
    answer = next((a for a in answers if isinstance(a, dict) and a.get("id") == request_id), None)
    for other in answers:
        if other is not answer:  # e.g. a ping from the new session
            transport._push(orjson.dumps(other))
    result = answer.get("result") if answer is not None else None
    if not isinstance(result, dict) or result.get("protocolVersion") != transport.protocol_version:
        logger.warning(
            "the new session did not agree to %s: %r", transport.protocol_version, answer
        )
        return False
    transport.session_id = session_id
    note = transport._initialized_frame or orjson.dumps(
        {"jsonrpc": "2.0", "method": "notifications/initialized"}
    )
    response = await transport.control.post(
        transport.url,
        content=note,
        headers={**transport._headers(ACCEPT_BOTH), "content-type": "application/json"},
    )
    if not 200 <= response.status_code < 300:
        logger.warning("new session refused initialized: HTTP %s", response.status_code)
        return False
    transport.reinitializations += 1
    logger.info("started a new session after HTTP 404 (%d so far)", transport.reinitializations)
    return True


async def probe_session(transport: HttpClientTransport, generation: int) -> None:
    """Ask whether the session still exists (a ping): 404 means it is gone.

    Cancellation: an ordinary request; cancelling it leaves things as they were.
    """
    transport._probes += 1
    ping = orjson.dumps(
        {"jsonrpc": "2.0", "id": f"trio_mcp-probe-{transport._probes}", "method": "ping"}
    )
    try:
        response = await transport.control.post(
            transport.url,
            content=ping,
            headers={**transport._headers(ACCEPT_BOTH), "content-type": "application/json"},
        )
    except httpx.HTTPError as exc:
        logger.debug("session probe failed: %r", exc)
        return
    if response.status_code == 404:
        lost(transport, generation)


async def delete(transport: HttpClientTransport) -> None:
    """End the session on the server (HT-34); 404 and 405 are fine answers."""
    response = await transport.control.delete(
        transport.url, headers=transport._headers(ACCEPT_BOTH)
    )
    if response.status_code not in (200, 202, 204, 404, 405):
        logger.debug("DELETE answered HTTP %s", response.status_code)


# ------------------------------------------------------------------- legacy


async def fall_back(transport: HttpClientTransport, data: bytes, call: _Call) -> None:
    """The server is a 2024-11-05 HTTP+SSE server: GET its stream, then POST
    to the endpoint it names (SS-08)."""
    endpoint: str | None = await transport._nursery.start(_legacy_stream, transport)
    if endpoint is None:
        transport._fail(call, "The server refused initialize and offers no HTTP+SSE endpoint")
        return
    transport.legacy_endpoint = endpoint
    call.detached = True
    try:
        await transport._post_simple(data, endpoint)
    except trio.BrokenResourceError as exc:
        transport._fail(call, str(exc))


async def _legacy_stream(
    transport: HttpClientTransport, *, task_status: trio.TaskStatus[str | None]
) -> None:
    with trio.CancelScope() as scope:
        transport._scopes.add(scope)
        started = False
        try:
            headers = {**transport.headers, "accept": "text/event-stream"}
            async with transport.control.stream("GET", transport.url, headers=headers) as response:
                if response.status_code != 200:
                    task_status.started(None)
                    return
                parser = SSEParser()
                async with aclosing(
                    cast(AsyncGenerator[bytes, None], response.aiter_raw())
                ) as chunks:
                    async for chunk in chunks:
                        for event in parser.feed(chunk):
                            if event.event == "endpoint" and not started:
                                endpoint = urljoin(transport.url, event.data.strip())
                                if origin(endpoint) != origin(transport.url):
                                    logger.warning("refused a cross-origin legacy endpoint")
                                    task_status.started(None)
                                    return
                                started = True
                                task_status.started(endpoint)
                            elif event.event == "message" and event.data:
                                transport._push(event.data.encode())
        except httpx.HTTPError as exc:
            logger.debug("legacy SSE stream failed: %r", exc)
        finally:
            transport._scopes.discard(scope)
            if not started:
                task_status.started(None)
            else:
                transport._in_send.close()  # the stream is the session
