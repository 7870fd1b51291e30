"""``Client``: typed calls to one server over one session."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, final

from . import types as mcp_types
from ._context import RequestContext
from ._errors import RPCError
from ._session import DEFAULT, Session, open_session
from ._transport import Transport
from .protocol import ErrorCode, NotificationReceived, Progress, Protocol, Role


@final
class Client:
    """A connected, initialized client. Not constructed directly: use :func:`open_client`.

    ``session`` is the underlying :class:`Session` (records, statistics).
    """

    def __init__(self, session: Session, initialize_result: mcp_types.InitializeResult):
        self.session = session
        #: The server's answer to ``initialize``.
        self.initialize_result = initialize_result

    @property
    def protocol_version(self) -> str:
        """The negotiated revision."""
        return self.initialize_result.protocol_version

    @property
    def server_info(self) -> mcp_types.Implementation:
        return self.initialize_result.server_info

    @property
    def server_capabilities(self) -> mcp_types.ServerCapabilities:
        return self.initialize_result.capabilities

    async def ping(self) -> None:
        """Ping the server (PI-01).

        Cancellation: as :meth:`Session.request`.
        """
        await self.session.request("ping")

    async def list_tools(self, cursor: str | None = None) -> mcp_types.ListToolsResult:
        """One page of ``tools/list``.

        Cancellation: as :meth:`Session.request`.
        """
        params = {"cursor": cursor} if cursor is not None else None
        result: mcp_types.ListToolsResult = await self.session.request("tools/list", params)
        return result

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        progress_idle_timeout: float | None = DEFAULT,
        max_duration: float | None = DEFAULT,
    ) -> mcp_types.CallToolResult:
        """Call a tool; a tool error is a result with ``is_error`` set, not an exception.

        Raises:
            RPCError: a protocol error (e.g. unknown tool: -32602).
            RequestTimeout, SessionClosed: as :meth:`Session.request`.

        Cancellation:
            As :meth:`Session.request`: the server is told with
            ``notifications/cancelled`` and a late result is ignored.

        Spec: TL (tools/call), TO-01..TO-05, CN-01.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        result: mcp_types.CallToolResult = await self.session.request(
            "tools/call",
            params,
            on_progress=on_progress,
            progress_idle_timeout=progress_idle_timeout,
            max_duration=max_duration,
        )
        return result

    # The client answers the server's requests (only ping, built in, for now).

    async def handle_request(self, ctx: RequestContext) -> Any:
        raise RPCError(int(ErrorCode.METHOD_NOT_FOUND), f"Method not found: {ctx.method}")

    async def handle_notification(self, session: Session, event: NotificationReceived) -> None:
        return None


class _PreInitDispatcher:
    """Answers server requests during the handshake (only ping is allowed then)."""

    def __init__(self) -> None:
        self.client: Client | None = None

    async def handle_request(self, ctx: RequestContext) -> Any:
        if self.client is None:
            raise RPCError(int(ErrorCode.INVALID_REQUEST), "Not initialized")
        return await self.client.handle_request(ctx)

    async def handle_notification(self, session: Session, event: NotificationReceived) -> None:
        if self.client is not None:
            await self.client.handle_notification(session, event)


@asynccontextmanager
async def open_client(
    transport: Transport,
    *,
    name: str = "trio_mcp-client",
    version: str = "0.1.0",
    protocol_version: str | None = None,
    **session_options: Any,
) -> AsyncIterator[Client]:
    """Open a session over *transport*, run the handshake, yield the :class:`Client`.

    The client offers its newest revision (or *protocol_version*), accepts any
    supported counter-offer, refuses one it cannot speak
    (:class:`~trio_mcp.protocol.UnsupportedProtocolVersion`, and the session
    closes), and sends ``notifications/initialized``.

    Cancellation:
        ``initialize`` is never cancelled by message (CN-03): if the handshake is
        cancelled or times out, the session and transport are torn down instead.
        Leaving the body shuts the session down (see :func:`open_session`).

    Spec: LC-02, LC-04, LC-05, LC-07, LC-09, CN-03.
    """
    protocol = Protocol(Role.CLIENT, info={"name": name, "version": version})
    dispatcher = _PreInitDispatcher()
    async with open_session(transport, protocol, dispatcher, **session_options) as session:
        message = protocol.initialize_request(protocol_version)
        result: mcp_types.InitializeResult = await session._call(message, None, DEFAULT, DEFAULT)
        note = protocol.complete_handshake(result)
        await session._queue(note)
        client = Client(session, result)
        dispatcher.client = client
        yield client
