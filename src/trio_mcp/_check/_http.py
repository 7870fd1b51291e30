"""The server under test at a Streamable HTTP endpoint: one POST per frame.

:class:`HttpWire` posts each frame as it is (malformed ones too) and feeds
every JSON-RPC message of each answer (one JSON body, or an SSE stream) into
the inbox. In the handshake era it carries the session's ``Mcp-Session-Id``
and ``MCP-Protocol-Version`` once known; in 2026-07-28 it sets the headers a
body implies (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``), and a
cancel closes the request's response stream, which is what cancelling is
there. Each answer's status and content type are recorded.

Cancellation: leaving :func:`open_http` closes every open response stream and
DELETEs the session (shielded, bounded).

Spec: HT-05, HT-06, HT-09, HT-30, HT-35, HM-04, HM-13, HM-15, HM-19.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import attrs
import httpx
import orjson
import trio

from ..protocol import RequestId
from ..transports._http._sse import SSEParser
from ._model import MODERN
from ._wire import Wire

#: How long a send waits for the answer's headers before going on (a server
#: answering a slow request with one JSON body sends its headers only at the end).
HEADERS_WAIT = 0.5
#: Bound on the DELETE that ends a session.
DELETE_TIMEOUT = 2.0
#: How long :meth:`HttpWire.post_request` lets a request travel before it may
#: close it ahead of the response head.
IN_TRANSIT = 0.2
#: The Accept header of every POST (HT-06, HM-04).
ACCEPT = "application/json, text/event-stream"
MODERN_VERSION = "2026-07-28"


@attrs.define
class Post:
    """One POST and what came back."""

    method: str | None
    request_id: RequestId | None
    status: int | None = None
    content_type: str = ""
    #: The JSON-RPC messages that came back on this POST, in order.
    messages: list[dict[str, Any]] = attrs.field(factory=list)
    #: Whether the checker closed the response (the cancel, in 2026-07-28).
    closed: bool = False


def modern_headers(message: dict[str, Any] | None) -> dict[str, str]:
    """The 2026-07-28 request headers a body implies (HM-15, HM-19)."""
    headers = {"MCP-Protocol-Version": MODERN_VERSION}
    if not message:
        return headers
    raw_params = message.get("params")
    params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
    raw_meta = params.get("_meta")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    version = meta.get("io.modelcontextprotocol/protocolVersion")
    if isinstance(version, str):
        headers["MCP-Protocol-Version"] = version
    method = message.get("method")
    if isinstance(method, str):
        headers["Mcp-Method"] = method
        name = params.get("uri") if method == "resources/read" else params.get("name")
        if method in ("tools/call", "prompts/get", "resources/read") and isinstance(name, str):
            headers["Mcp-Name"] = name
    return headers


class HttpWire(Wire):
    """A raw exchange with one endpoint, in one era."""

    transport = "http"

    def __init__(
        self, client: httpx.AsyncClient, url: str, era: str, nursery: trio.Nursery
    ) -> None:
        super().__init__()
        self.client = client
        self.url = url
        self.era = era
        self.nursery = nursery
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.posts: list[Post] = []
        self._streams: dict[RequestId, trio.CancelScope] = {}

    def headers_for(self, message: dict[str, Any] | None) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": ACCEPT}
        if self.era == MODERN:
            headers.update(modern_headers(message))
            return headers
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    async def send_frames(self, frames: list[bytes]) -> None:
        for frame in frames:
            try:
                message = orjson.loads(frame)
            except orjson.JSONDecodeError:
                message = None
            if not isinstance(message, dict):
                message = None
            opened = trio.Event()
            self.nursery.start_soon(self._post, frame, message, opened)
            with trio.move_on_after(HEADERS_WAIT):
                await opened.wait()

    async def post_request(
        self, message: dict[str, Any], *, wait_head: bool, within: float
    ) -> Post:
        """POST one request and return its :class:`Post` without reading on:
        once its response head came (*wait_head*, at most *within* seconds), or
        once it had :data:`IN_TRANSIT` seconds to reach the server and no head
        came yet. :meth:`cancel` then closes it at that point."""
        frame = orjson.dumps(message)
        opened = trio.Event()
        self.nursery.start_soon(self._post, frame, message, opened)
        with trio.move_on_after(within if wait_head else IN_TRANSIT):
            await opened.wait()
        return self.posts[-1]

    async def _post(self, frame: bytes, message: dict[str, Any] | None, opened: trio.Event) -> None:
        method = message.get("method") if message else None
        rid = message.get("id") if message and isinstance(method, str) else None
        post = Post(method if isinstance(method, str) else None, rid)
        self.posts.append(post)
        headers = self.headers_for(message)
        self.note("->", f"POST {frame.decode('utf-8', 'replace')}")
        with trio.CancelScope() as scope:
            if isinstance(rid, (int, str)):
                self._streams[rid] = scope
            try:
                async with self.client.stream(
                    "POST", self.url, content=frame, headers=headers
                ) as response:
                    post.status = response.status_code
                    post.content_type = response.headers.get("content-type", "").split(";")[0]
                    self.note("<-", f"HTTP {post.status} {post.content_type or '(no type)'}")
                    session = response.headers.get("mcp-session-id")
                    if session and method == "initialize":
                        self.session_id = session
                    opened.set()
                    await self._read_body(response, post)
            except httpx.HTTPError as exc:
                self.note("--", f"HTTP error: {type(exc).__name__}: {exc}")
            finally:
                opened.set()

    def _arrived_on(self, post: Post, data: bytes | str) -> None:
        before = len(self.received)
        self.arrived(data)
        post.messages.extend(self.received[before:])

    async def _read_body(self, response: httpx.Response, post: Post) -> None:
        if post.content_type == "text/event-stream":
            parser = SSEParser()
            async for chunk in response.aiter_bytes():
                for event in parser.feed(chunk):
                    if event.data:
                        self._arrived_on(post, event.data)
            return
        body = await response.aread()
        if not body.strip():
            return
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError:
            self._arrived_on(post, body)
            return
        for item in parsed if isinstance(parsed, list) else [parsed]:
            self._arrived_on(post, orjson.dumps(item))

    async def cancel(self, request_id: RequestId, reason: str = "trio-mcp check") -> None:
        if self.era == MODERN:
            # Closing the response stream is the cancel in 2026-07-28 (HM-13).
            self.note("--", f"closed the response stream of request {request_id!r}")
            scope = self._streams.get(request_id)
            if scope is not None:
                scope.cancel()
            for post in self.posts:
                if post.request_id == request_id:
                    post.closed = True
            return
        await super().cancel(request_id, reason)


@contextlib.asynccontextmanager
async def open_http(client: httpx.AsyncClient, url: str, era: str) -> AsyncIterator[HttpWire]:
    """A wire to *url* in *era*; every stream closed and the session deleted after."""
    async with trio.open_nursery() as nursery:
        wire = HttpWire(client, url, era, nursery)
        try:
            yield wire
        finally:
            nursery.cancel_scope.cancel()
            if wire.session_id is not None:
                with (
                    trio.CancelScope(shield=True),
                    trio.move_on_after(DELETE_TIMEOUT),
                    contextlib.suppress(httpx.HTTPError),
                ):
                    await client.delete(url, headers=wire.headers_for(None))
