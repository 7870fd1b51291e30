"""Streamable HTTP, client side: :class:`ModernExchange`, one 2026-07-28 request.

In the 2026-07-28 revision every request is self-contained and is its own POST
(HM-04): no ``Mcp-Session-Id``, no GET stream, no DELETE, nothing resumable
(HM-12). The POST carries ``Accept: application/json, text/event-stream``,
``Content-Type: application/json`` and the request-metadata headers the body
implies (:func:`~trio_mcp.protocol._headers.request_headers`:
``MCP-Protocol-Version`` from ``_meta``, ``Mcp-Method``, ``Mcp-Name`` and one
``Mcp-Param-*`` per annotated tool argument; HM-15, HM-19, HM-20, HM-25). The
annotations of a tool come from a callable the transport is handed (the
client fills it from its tools cache), so this module never sees the client.

The answer is one ``application/json`` object or an SSE stream (HM-07) whose
notifications (progress, log messages) belong to this request and whose final
response ends it (HM-08, HM-10). Every outcome becomes an answer for the call,
never a hang:

* a JSON-RPC error in a refusing answer (400 with -32022 or -32020, 404 with
  -32601, ...) is the call's error, under the call's id, so the session and
  the era negotiation see what the server said (HM-16, HM-17, HM-32);
* any other refusal (405, an HTML 404, an empty 400) is an error naming the
  HTTP status, which the negotiation reads as "not a 2026-07-28 server";
* a stream that ends or breaks before the answer fails the call with an error
  saying so: the request may have run, so it is not sent again (HM-14).

Cancellation (HM-13, CN-13): closing the response stream *is* the cancel. The
transport cancels :attr:`ModernExchange.scope` when the session cancels the
call (instead of POSTing ``notifications/cancelled``); leaving httpx's stream
then closes the connection, which the server sees as the client leaving. A
cancelled exchange pushes nothing (the session has already given up on it).

Spec: HM-04, HM-07, HM-08, HM-12, HM-13, HM-14, HM-15, HM-19, HM-20, HM-25, CN-13.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urljoin

import httpx
import orjson
import trio

from ....protocol import RequestId
from ....protocol._codec import DEFAULT_MAX_MESSAGE_SIZE
from ....protocol._head import OversizeFrame
from ....protocol._headers import HeaderAnnotation, request_headers
from .._common import batch_frames, id_key
from ._httpx import describe_failure, request_url
from ._keeper import (
    ACCEPT_BOTH,
    HTTP_ERROR,
    LOCAL_ERROR_DATA,
    Push,
    describe_answer,
    head_of_body,
    origin,
    oversize_answer_key,
    read_json,
    read_sse,
    rpc_error,
)

logger = logging.getLogger("trio_mcp.http.client")

#: Gives the ``x-mcp-header`` annotations of a tool by name (none if unknown).
ToolHeaders = Callable[[str], Sequence[HeaderAnnotation]]


def is_modern_request(msg: Mapping[str, Any]) -> bool:
    """Whether *msg* is a 2026-07-28 request: its ``_meta`` names a protocol version."""
    params = msg.get("params")
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    return isinstance(meta, Mapping) and isinstance(
        meta.get("io.modelcontextprotocol/protocolVersion"), str
    )


class ModernExchange:
    """One 2026-07-28 request's POST and answer (see the module docstring).

    Built with what it needs: *http* carries the POST, *url* gives the
    endpoint, *headers* are the caller's own (e.g. ``Authorization``),
    *tool_headers* the annotations of a called tool, *push* delivers an inbound
    frame and *done* is called with the call's key once the exchange is over.

    Cancellation:
        :meth:`run` runs under :attr:`scope`; cancelling it (the session
        cancelled the call, or the transport closed) closes the response
        stream, which is the cancel the server sees (HM-13). Nothing is
        pushed for a cancelled exchange.
    """

    __slots__ = (
        "_data",
        "_done",
        "_headers",
        "_http",
        "_push",
        "_url",
        "answered",
        "max_message_size",
        "method",
        "request_id",
        "scope",
    )

    def __init__(
        self,
        msg: Mapping[str, Any],
        data: bytes,
        *,
        http: httpx.AsyncClient,
        url: str,
        headers: Mapping[str, str],
        tool_headers: ToolHeaders | None,
        push: Push,
        done: Callable[[tuple[bool, Any]], None],
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        self.request_id: RequestId = msg["id"]
        self.max_message_size = max_message_size
        self.method: str = msg["method"]
        self._data = data
        self._http = http
        self._url = url
        self._push = push
        self._done = done
        params = msg.get("params")
        params = params if isinstance(params, Mapping) else None
        annotations: Sequence[HeaderAnnotation] = ()
        if self.method == "tools/call" and tool_headers is not None and params is not None:
            name = params.get("name")
            if isinstance(name, str):
                annotations = tool_headers(name)
        self._headers = {
            **headers,
            "accept": ACCEPT_BOTH,
            "content-type": "application/json",
            **request_headers(self.method, params, annotations),
        }
        self.answered = False
        #: Cancelling it closes the POST's response stream: the cancel (HM-13).
        self.scope = trio.CancelScope()

    @property
    def headers(self) -> dict[str, str]:
        """The headers of the POST (the caller's, Accept, Content-Type and metadata)."""
        return dict(self._headers)

    def fail(self, message: str) -> None:
        """Answer the call with an error, unless it is answered or cancelled."""
        if self.answered or self.scope.cancel_called:
            return
        error = {"code": HTTP_ERROR, "message": message, "data": LOCAL_ERROR_DATA}
        self._deliver({"jsonrpc": "2.0", "id": self.request_id, "error": error})

    def _deliver(self, frame: dict[str, Any]) -> None:
        self.answered = True
        self._push(orjson.dumps(frame))

    def _take(self, data: bytes) -> None:
        """One inbound frame of this POST's answer: passed on, the answer noted."""
        msg = oversize_answer_key(data)
        if msg is None:
            try:
                msg = orjson.loads(data)
            except orjson.JSONDecodeError:
                msg = None
        if (
            isinstance(msg, dict)
            and "method" not in msg
            and id_key(msg.get("id")) == id_key(self.request_id)
        ):
            self.answered = True
        self._push(data)

    async def run(self) -> None:
        """POST the request and read its answer into the inbound queue."""
        try:
            with self.scope:
                await self._post(self._url, may_redirect=True)
        except httpx.HTTPError as exc:
            self.fail(f"{self.method}: {describe_failure(self._url, exc)}")
        finally:
            if not self.answered:
                self.fail(
                    f"{self.method}: the server's response stream ended before the answer; "
                    "the request may have run and is not sent again (HM-14)"
                )
            self._done(id_key(self.request_id))

    async def _post(self, url: str, *, may_redirect: bool) -> None:
        async with self._http.stream(
            "POST", request_url(url), content=self._data, headers=self._headers
        ) as response:
            status = response.status_code
            if status in (307, 308) and may_redirect:
                location = urljoin(url, response.headers.get("location", ""))
                if origin(location) != origin(url):
                    self.fail(f"{self.method}: refused a cross-origin redirect (HTTP {status})")
                    return
                await self._post(location, may_redirect=False)
                return
            if not 200 <= status < 300:
                await self._refused(response)
                return
            ctype = response.headers.get("content-type", "")
            if ctype.startswith("application/json"):
                body = await read_json(response, self.max_message_size)
                if type(body) is OversizeFrame:
                    self._take(body)  # refused by size; it fails the call it answers
                else:
                    self._json(body)
            elif ctype.startswith("text/event-stream"):
                await read_sse(response, self._take, self.max_message_size)
            else:
                self.fail(f"{self.method}: unexpected content type {ctype!r} (HTTP {status})")

    async def _refused(self, response: httpx.Response) -> None:
        """A non-2xx answer: the server's JSON-RPC error if it sent one, else the status."""
        body = await head_of_body(response)
        error = rpc_error(body)
        if error is not None and isinstance(error.get("code"), int):
            # The server's own words, under our id (a refusal is often id-less).
            self._deliver({"jsonrpc": "2.0", "id": self.request_id, "error": error})
            return
        self.fail(f"{self.method}: {describe_answer(response, body)}")

    def _json(self, body: bytes) -> None:
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError:
            self.fail(f"{self.method}: the server's JSON answer does not parse")
            return
        for frame in batch_frames(body, parsed):
            self._take(frame)
