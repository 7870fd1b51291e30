"""Streamable HTTP, client side: a request's POST and its answer.

Every request the session sends is POSTed by :func:`post_request`, from a task
of its own (``HttpClientTransport.send`` starts it; only ``initialize`` is
awaited, because the session id comes with its answer), so many requests can be
in flight (HT-05). The answer is read into the session's inbound queue whether
it comes as one ``application/json`` body (a batch is split) or as an SSE stream
(HT-09); a stream that breaks after carrying an event id is resumed
(``_http_client_streams.resume``, HT-25).

Every other outcome becomes an error answer for the call, never a hang: a
non-2xx status (named in the error), an unexpected content type, a cross-origin
redirect (only a same-origin 307 or 308 is followed, once), a 404 on the session
(the call is lost with it: HT-33), a response that ends without the answer. An
``initialize`` refused with 400, 404 or 405 before any session exists hands
over to the HTTP+SSE fallback (``_http_client_session.fall_back``, SS-08).

Notifications and responses are POSTed by ``HttpClientTransport._post_simple``:
they only wait to be accepted.

Spec: HT-05, HT-06, HT-09, HT-30, HT-33, HT-35, SS-08.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urljoin

import httpx
import orjson

from ._http_client_session import ACCEPT_BOTH, EXPIRED, fall_back, lost, origin, probe_session
from ._http_client_streams import read_sse, resume
from ._http_common import id_key

if TYPE_CHECKING:
    from ._http_client import HttpClientTransport, _Call


async def post_request(transport: HttpClientTransport, data: bytes, call: _Call) -> None:
    """POST a request and read its answer into the inbound queue.

    A 404 fails the call even with ``reinitialize``: the server also answers
    404 to a request that was running when its session ended, so the call
    may have run and is never sent again (HT-33).
    """
    key = id_key(call.request_id)
    try:
        with call.scope:
            await _post_once(transport, data, call, None)
    except httpx.HTTPError as exc:
        transport._fail(call, f"HTTP request failed: {exc!r}")
    finally:
        call.started.set()
        if not call.answered and not call.detached:
            transport._fail(call, "The server ended the response without answering")
        transport._calls.pop(key, None)


async def _post_once(
    transport: HttpClientTransport, data: bytes, call: _Call, url: str | None
) -> None:
    """One POST of a request (and one more after a same-origin redirect)."""
    key = id_key(call.request_id)
    target = url or transport.url
    if not transport._ready.is_set():
        await transport._ready.wait()
        if transport.session_expired or transport._closed:
            transport._fail(call, f"{EXPIRED}: no new session could be started")
            return
    call.generation = generation = transport._generation
    had_session = transport.session_id is not None
    try:
        async with transport.http.stream(
            "POST",
            target,
            content=data,
            headers={**transport._headers(ACCEPT_BOTH), "content-type": "application/json"},
        ) as response:
            call.started.set()
            status = response.status_code
            if status in (307, 308) and url is None:
                location = urljoin(target, response.headers.get("location", ""))
                if origin(location) != origin(transport.url):
                    transport._fail(call, f"Refused a cross-origin redirect (HTTP {status})")
                    return
                transport.url = location
                await _post_once(transport, data, call, location)
                return
            if (
                key == transport._initialize_key
                and transport.legacy_fallback
                and transport.session_id is None
                and status in (400, 404, 405)
            ):
                await fall_back(transport, data, call)
                return
            if status == 404 and had_session:
                lost(transport, generation)
                transport._fail(call, f"{EXPIRED}: the call was lost with its session")
                return
            if not 200 <= status < 300:
                body = await response.aread()
                transport._fail(call, f"HTTP {status}: {body[:200].decode('utf-8', 'replace')}")
                return
            sid = response.headers.get("mcp-session-id")
            if sid is not None and transport.session_id is None:
                transport.session_id = sid
            ctype = response.headers.get("content-type", "")
            if ctype.startswith("application/json"):
                body = await response.aread()
                _push_json(transport, body)
            elif ctype.startswith("text/event-stream"):
                last_id, retry = await read_sse(transport, response, call)
                if not call.answered and last_id is not None:
                    await resume(transport, call, last_id, retry)
            else:
                transport._fail(call, f"Unexpected response content type {ctype!r} (HTTP {status})")
                return
    finally:
        call.started.set()
    if not call.answered and had_session and not call.cancel_sent:
        # The stream ended without an answer (and not because we cancelled):
        # if it is because the session ended, say so (and start a new one
        # when allowed).
        if generation == transport._generation:
            await probe_session(transport, generation)
        if generation != transport._generation:
            transport._fail(call, f"{EXPIRED}: the call was lost with its session")


def _push_json(transport: HttpClientTransport, body: bytes) -> None:
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        transport._push(body)  # the session answers the parse error
        return
    if isinstance(parsed, list):
        for item in parsed:
            transport._push(orjson.dumps(item))
    else:
        transport._push(body)
