"""The 2024-11-05 HTTP+SSE transport, server side, for old clients: :class:`LegacyEndpoint`.

A client GETs the SSE endpoint; the first event is ``endpoint``, whose data is
the URL to POST messages to (with the session id in its query); every message
from the server is a ``message`` event on that one stream. POSTs are answered
``202 Accepted``. The session ends when the SSE connection closes. The same
DNS-rebinding (checked by the application before routing here), content-type,
body-size and session checks as for Streamable HTTP apply (SS-01; the body
checks are ``_asgi.JsonPostReader``, shared with the MCP endpoint), and refused
requests allocate nothing.

The endpoint never sees the application: it is handed the session table as a
:class:`~trio_mcp.transports._http.server._endpoint.SessionHost`.

Spec: SS-01, SS-02, SS-03, SS-05, SS-07.
"""

from __future__ import annotations

from urllib.parse import parse_qs

import trio

from .._common import accepts, one_header
from .._sse import format_event
from ._asgi import (
    JsonPostReader,
    Receive,
    Scope,
    Send,
    origin_of,
    refuse,
    refuse_with,
    respond,
    stream_sse,
)
from ._endpoint import SessionHost


class LegacyEndpoint:
    """The SSE endpoint (GET) and the messages endpoint (POST) of HTTP+SSE.

    Cancellation:
        A GET's session ends with its stream (client gone or cancelled); a POST
        is cancelled with its HTTP request, and what was delivered runs on.
    """

    __slots__ = ("_host", "_reader", "keepalive", "messages_path")

    def __init__(
        self,
        host: SessionHost,
        *,
        reader: JsonPostReader,
        messages_path: str,
        keepalive: float | None,
    ) -> None:
        self._host = host
        self._reader = reader
        self.messages_path = messages_path
        self.keepalive = keepalive

    async def get(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Open a legacy session: the SSE stream with its ``endpoint`` event."""
        if scope["method"] != "GET":
            await refuse(send, 405, "Method not allowed", headers=[(b"allow", b"GET")])
            return
        accept = ", ".join(v.decode("latin-1") for k, v in scope["headers"] if k == b"accept")
        if accept and not accepts(accept, "text/event-stream"):
            await refuse(send, 406, "Not Acceptable: Accept must list text/event-stream")
            return
        host = self._host
        transport = host.new_session(host.caller_of(scope), single_stream=True)
        if transport is None:
            await refuse(send, 503, "Too many open sessions", code=-32000)
            return
        assert transport.session_id is not None
        root = scope.get("root_path", "")
        endpoint = f"{root}{self.messages_path}?session_id={transport.session_id}"
        stream = transport.get_stream
        conn = transport.attach(stream)
        try:
            await stream_sse(
                receive,
                send,
                transport,
                stream,
                conn,
                event="message",
                first=format_event(endpoint, event="endpoint"),
                keepalive=self.keepalive,
            )
        finally:
            # The stream is the session: it ends when the client goes away.
            host.end_session(transport)

    async def post(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Deliver one POSTed message to its legacy session (202 Accepted)."""
        if scope["method"] != "POST":
            await refuse(send, 405, "Method not allowed", headers=[(b"allow", b"POST")])
            return
        try:
            content_type = one_header(scope["headers"], b"content-type")
            declared = one_header(scope["headers"], b"content-length")
        except ValueError as exc:
            await refuse(send, 400, str(exc))
            return
        if await self._reader.refuses_content_type(send, content_type):
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        ids = query.get("session_id", [])
        if len(ids) != 1:
            await refuse(send, 400, "session_id is required")
            return
        transport = self._host.lookup(ids[0], scope)
        if transport is None or not transport.single_stream:
            await refuse(send, 404, "Session not found")
            return
        posted = await self._reader.read(receive, send, declared)
        if posted is None:
            return
        denied = self._host.scope_refusal(scope, posted.parsed)
        if denied is not None:
            await refuse_with(send, denied)  # 403 step-up, nothing delivered (AU-12)
            return
        # Only now, past the scope check, is this POST's token the session's:
        # a refused token never becomes the caller of what runs there.
        self._host.admit(transport, scope)
        transport.touch()
        try:
            await transport.deliver(posted.body, origin_of(scope))
        except trio.ClosedResourceError:
            await refuse(send, 404, "Session not found")
            return
        await respond(send, 202, b"Accepted", content_type=b"text/plain; charset=utf-8")
