"""Streamable HTTP, client side: :class:`Exchange`, one request's POST and its answer.

Every request the session sends is one exchange, run from a task of its own
(``HttpClientTransport.send`` starts it; only ``initialize`` is awaited, because
the session id comes with its answer), so many requests can be in flight
(HT-05). The answer is read into the session's inbound queue whether it comes
as one ``application/json`` body (a batch is split) or as an SSE stream (HT-09);
a stream that breaks after carrying an event id is resumed with GET and
``Last-Event-ID`` after the server's ``retry`` delay (HT-12, HT-25), a bounded
number of times.

Every other outcome becomes an error answer for the call, never a hang: a
non-2xx status (named in the error), an unexpected content type, a cross-origin
redirect (only a same-origin 307 or 308 is followed, once), a 404 on the session
(the call is lost with it: HT-33), a response that ends without the answer.

For ``initialize`` those outcomes are a refused handshake instead
(:class:`~trio_mcp.HandshakeRefused`, kept in :attr:`Exchange.refusal` for the
transport to raise): there is no session to answer a call on. A refusal with
400, 404 or 405 before any session exists first tries the HTTP+SSE fallback
(SS-08), unless the server said which revisions it speaks (-32022), which
means it is not an old server.

The exchange is handed what it needs (the httpx client for requests, the
:class:`~trio_mcp.transports._http.client._keeper.SessionKeeper`, the push
callable), never the transport.

Spec: HT-05, HT-06, HT-09, HT-12, HT-25, HT-30, HT-33, HT-35, SS-08.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urljoin

import httpx
import orjson
import trio

from ...._errors import HandshakeRefused
from ....protocol import ErrorCode, RequestId
from ....protocol._head import OversizeFrame
from .._common import batch_frames, id_key
from ._httpx import describe_failure, request_url
from ._keeper import (
    EXPIRED,
    HTTP_ERROR,
    LOCAL_ERROR_DATA,
    Push,
    SessionKeeper,
    describe_answer,
    head_of_body,
    origin,
    read_json,
    read_sse,
    rpc_error,
)

logger = logging.getLogger("trio_mcp.http.client")


class Exchange:
    """One request's POST and answer (see the module docstring).

    Built with what it needs: *http* carries the POST (and a resume's GET),
    *keeper* knows the session (URL, headers, generation) and does what
    concerns it (loss, probe, fallback), *push* delivers an inbound frame (an
    answer or the error that fails the call), *done* is called with the call's
    key once the exchange is over.

    Cancellation:
        :meth:`run` runs under :attr:`scope`, which the transport cancels when
        the call's session is gone, when the transport closes, or when a
        cancelled call's response stream is the request itself (a server
        without sessions). Cancelled, the call is failed unless answered.
    """

    __slots__ = (
        "_data",
        "_done",
        "_http",
        "_keeper",
        "_legacy_fallback",
        "_push",
        "answered",
        "cancel_sent",
        "detached",
        "generation",
        "initialize",
        "refusal",
        "request_id",
        "scope",
        "started",
    )

    def __init__(
        self,
        request_id: RequestId,
        data: bytes,
        *,
        http: httpx.AsyncClient,
        keeper: SessionKeeper,
        push: Push,
        done: Callable[[tuple[bool, Any]], None],
        initialize: bool = False,
        legacy_fallback: bool = False,
    ) -> None:
        self.request_id = request_id
        self._data = data
        self._http = http
        self._keeper = keeper
        self._push = push
        self._done = done
        self.initialize = initialize
        self._legacy_fallback = legacy_fallback
        #: Answered elsewhere (the legacy stream), not by this POST.
        self.detached = False
        #: Set once the POST's response head arrived (or the POST ended).
        self.started = trio.Event()
        self.answered = False
        self.cancel_sent = False
        #: The session generation the POST was sent on (None: not sent yet).
        self.generation: int | None = None
        #: Cancels the POST (and its stream).
        self.scope = trio.CancelScope()
        #: Why the server refused the handshake (``initialize`` only).
        self.refusal: HandshakeRefused | None = None

    def fail(
        self, message: str, *, code: int = HTTP_ERROR, data: Any = None, local: bool = True
    ) -> None:
        """Answer the call with an error, unless it is answered already; one
        the transport makes up (*local*) carries :data:`LOCAL_ERROR_DATA`."""
        if self.answered:
            return
        error: dict[str, Any] = {"code": code, "message": message}
        if local and data is None:
            data = LOCAL_ERROR_DATA
        if data is not None:
            error["data"] = data
        self._push(orjson.dumps({"jsonrpc": "2.0", "id": self.request_id, "error": error}))

    def abandon(self, message: str) -> None:
        """The call's session is gone: fail it and stop its POST."""
        self.fail(message)
        self.scope.cancel(reason="its session is gone")

    async def run(self) -> None:
        """POST the request and read its answer into the inbound queue.

        A 404 fails the call even with ``reinitialize``: the server also answers
        404 to a request that was running when its session ended, so the call
        may have run and is never sent again (HT-33).
        """
        try:
            with self.scope:
                await self._post(None)
        except httpx.HTTPError as exc:
            self.fail(describe_failure(self._keeper.url, exc))
        finally:
            self.started.set()
            if not self.answered and not self.detached:
                if self.initialize:
                    self._refuse("ended its answer without answering initialize")
                else:
                    self.fail("The server ended the response without answering")
            self._done(id_key(self.request_id))

    def _refuse(
        self, what: str, *, status: int | None = None, supported: Sequence[str] = ()
    ) -> None:
        if self.refusal is None:
            self.refusal = HandshakeRefused(
                f"{self._keeper.url} refused the MCP handshake: POST initialize {what}",
                status=status,
                supported=supported,
            )

    async def _post(self, url: str | None) -> None:
        """One POST of the request (and one more after a same-origin redirect)."""
        keeper = self._keeper
        target = url or keeper.url
        if not keeper.ready:
            await keeper.wait_ready()
            if keeper.expired or keeper.closed:
                self.fail(f"{EXPIRED}: no new session could be started")
                return
        self.generation = generation = keeper.generation
        had_session = keeper.session_id is not None
        try:
            async with self._http.stream(
                "POST", request_url(target), content=self._data, headers=keeper.post_headers()
            ) as response:
                self.started.set()
                await self._answer(response, target, url is None, had_session, generation)
        finally:
            self.started.set()
        if not self.answered and had_session and not self.cancel_sent:
            # The stream ended without an answer (and not because we cancelled):
            # if it is because the session ended, say so (and start a new one
            # when allowed).
            if generation == keeper.generation:
                await keeper.probe(generation)
            if generation != keeper.generation:
                self.fail(f"{EXPIRED}: the call was lost with its session")

    async def _answer(
        self,
        response: httpx.Response,
        target: str,
        may_redirect: bool,
        had_session: bool,
        generation: int,
    ) -> None:
        keeper = self._keeper
        status = response.status_code
        if status in (307, 308) and may_redirect:
            location = urljoin(target, response.headers.get("location", ""))
            if origin(location) != origin(keeper.url):
                self._fail_or_refuse(f"Refused a cross-origin redirect (HTTP {status})")
                return
            keeper.redirected(location)
            await self._post(location)
            return
        if status == 404 and had_session:
            keeper.lost(generation)
            self.fail(f"{EXPIRED}: the call was lost with its session")
            return
        if not 200 <= status < 300:
            body = await head_of_body(response)  # enough to describe it, never unbounded
            if self.initialize:
                await self._refused(response, body)
                return
            error = rpc_error(body)
            if error is not None and isinstance(error.get("code"), int):
                # The server's own JSON-RPC error (a 413 naming the limit, say),
                # under our id: its code tells the caller what went wrong.
                message = f"HTTP {status}: {error.get('message', '')}"
                self.fail(message, code=error["code"], data=error.get("data"), local=False)
            else:
                self.fail(f"HTTP {status}: {body[:200].decode('utf-8', 'replace')}")
            return
        keeper.adopt(response.headers.get("mcp-session-id"))
        ctype = response.headers.get("content-type", "")
        if ctype.startswith("application/json"):
            body = await read_json(response, keeper.max_message_size)
            if type(body) is OversizeFrame:
                self._push(body)  # refused by size; it fails the call it answers
                return
            if self.initialize and self._refuses_version(response, body):
                return
            self._push_json(body)
            if self.initialize and not self.answered:
                self._refuse(f"answered {describe_answer(response, body)}", status=status)
        elif ctype.startswith("text/event-stream"):
            last_id, retry = await read_sse(response, self._push, keeper.max_message_size)
            if not self.answered and last_id is not None:
                await self._resume(last_id, retry)
        elif self.initialize:
            body = await head_of_body(response)
            self._refuse(f"answered {describe_answer(response, body)}", status=status)
        else:
            self.fail(f"Unexpected response content type {ctype!r} (HTTP {status})")

    def _fail_or_refuse(self, message: str) -> None:
        if self.initialize:
            self._refuse(f"got an answer the client refused: {message}")
        else:
            self.fail(message)

    def _refuses_version(self, response: httpx.Response, body: bytes) -> bool:
        """True (and the refusal kept) if *body* is -32022 listing the server's revisions."""
        error = rpc_error(body)
        if error is None or error.get("code") != ErrorCode.UNSUPPORTED_PROTOCOL_VERSION:
            return False
        data = error.get("data")
        supported = data.get("supported") if isinstance(data, dict) else None
        if not isinstance(supported, list) or not all(isinstance(v, str) for v in supported):
            return False
        self._refuse(
            f"answered {describe_answer(response, body)}: this server speaks only "
            f"{', '.join(supported)}",
            status=response.status_code,
            supported=supported,
        )
        return True

    async def _refused(self, response: httpx.Response, body: bytes) -> None:
        """``initialize`` got an error status: a refusal, or first the HTTP+SSE fallback."""
        keeper = self._keeper
        if self._refuses_version(response, body):
            return
        answered = f"answered {describe_answer(response, body)}"
        if not (
            self._legacy_fallback
            and keeper.session_id is None
            and response.status_code in (400, 404, 405)
        ):
            self._refuse(answered, status=response.status_code)
            return
        endpoint = await keeper.find_legacy_endpoint()
        if endpoint.url is None:
            self._refuse(
                f"{answered}; GET for a 2024-11-05 HTTP+SSE endpoint {endpoint.problem}",
                status=response.status_code,
            )
            return
        self.detached = True
        try:
            await keeper.post_message(self._data, endpoint.url)
        except trio.BrokenResourceError as exc:
            self.detached = False
            self._refuse(
                f"{answered}; POST initialize to its HTTP+SSE endpoint failed: {exc}",
                status=response.status_code,
            )

    async def _resume(self, last_id: str, retry: float | None) -> None:
        """Reconnect with GET + Last-Event-ID until the call is answered (HT-25)."""
        keeper = self._keeper
        attempts = 0
        generation = self.generation
        while not self.answered and attempts < keeper.max_reconnects:
            attempts += 1
            await trio.sleep(retry if retry is not None else keeper.reconnect_delay)
            if generation != keeper.generation:
                self.fail(f"{EXPIRED}: the call was lost with its session")
                return
            headers = keeper.headers("text/event-stream")
            headers["last-event-id"] = last_id
            try:
                async with self._http.stream("GET", keeper.url, headers=headers) as response:
                    if response.status_code == 404 and generation is not None:
                        keeper.lost(generation)
                        self.fail(f"{EXPIRED}: the call was lost with its session")
                        return
                    if response.status_code != 200:
                        self.fail(f"Resuming the stream failed: HTTP {response.status_code}")
                        return
                    new_id, new_retry = await read_sse(
                        response, self._push, keeper.max_message_size
                    )
                    if new_id is not None and new_id != last_id:
                        last_id, attempts = new_id, 0
                    retry = new_retry if new_retry is not None else retry
            except httpx.HTTPError as exc:
                logger.debug("resume failed: %r", exc)

    def _push_json(self, body: bytes) -> None:
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError:
            self._push(body)  # the session answers the parse error
            return
        for frame in batch_frames(body, parsed):
            self._push(frame)
