"""A scriptable MCP server for the client tests, built directly on ``open_session``.

It answers every server-side list with pages of ``page_size`` items (opaque
cursors), runs tool functions given per name, records what the client sent,
and exposes its :class:`Session` so a test can send the client requests
(``roots/list``, ``sampling/createMessage``, ``elicitation/create``) and
notifications (``list_changed``, ``resources/updated``, log messages).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio

from trio_mcp import Client, RPCError, open_client
from trio_mcp.lowlevel import RequestContext, Session, open_session
from trio_mcp.protocol import SUPPORTED_VERSIONS, Connection, NotificationReceived, Role
from trio_mcp.testing import memory_transport_pair

ToolFn = Callable[[RequestContext, dict[str, Any]], Awaitable[dict[str, Any]]]


def text_result(text: str, **extra: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], **extra}


class FakeServer:
    def __init__(
        self,
        *,
        tools: list[dict[str, Any]] | None = None,
        prompts: list[dict[str, Any]] | None = None,
        resources: list[dict[str, Any]] | None = None,
        templates: list[dict[str, Any]] | None = None,
        page_size: int = 2,
        capabilities: dict[str, Any] | None = None,
        version: str | None = None,
    ) -> None:
        self.lists: dict[str, list[dict[str, Any]]] = {
            "tools/list": list(tools or []),
            "prompts/list": list(prompts or []),
            "resources/list": list(resources or []),
            "resources/templates/list": list(templates or []),
        }
        self.page_size = page_size
        self.tool_fns: dict[str, ToolFn] = {}
        if capabilities is None:
            capabilities = {"logging": {}, "completions": {}}
            if tools is not None:
                capabilities["tools"] = {"listChanged": True}
            if prompts is not None:
                capabilities["prompts"] = {"listChanged": True}
            if resources is not None or templates is not None:
                capabilities["resources"] = {"listChanged": True, "subscribe": True}
        self.capabilities = capabilities
        self.version = version
        self.requests: list[tuple[str, Any]] = []
        self.notifications: list[NotificationReceived] = []
        self.notified = trio.Event()
        self.session: Session | None = None
        #: Called instead of the built-in answer when set for a method.
        self.overrides: dict[str, Callable[[RequestContext], Awaitable[Any]]] = {}

    def protocol(self, **settings: Any) -> Connection:
        """This server's connection (a ``ConnectionFactory`` for ``open_session``)."""
        # A handshake-era server: these tests are about the handshake-era client
        # (the client's era="auto" probe is answered -32601 and falls back).
        return Connection(
            Role.SERVER,
            capabilities=self.capabilities,
            info={"name": "fake", "version": "1"},
            supported_versions=SUPPORTED_VERSIONS if self.version is None else (self.version,),
            **settings,
        )

    def page(self, method: str, params: Any) -> dict[str, Any]:
        items = self.lists[method]
        cursor = getattr(params, "cursor", None) if params is not None else None
        start = 0 if cursor is None else int(cursor.removeprefix("opaque-"))
        end = start + self.page_size
        key = {
            "tools/list": "tools",
            "prompts/list": "prompts",
            "resources/list": "resources",
            "resources/templates/list": "resourceTemplates",
        }[method]
        result: dict[str, Any] = {key: items[start:end]}
        if end < len(items):
            result["nextCursor"] = f"opaque-{end}"
        return result

    async def handle_request(self, ctx: RequestContext) -> Any:
        self.requests.append((ctx.method, ctx.params))
        if ctx.method in self.overrides:
            return await self.overrides[ctx.method](ctx)
        if ctx.method in self.lists:
            return self.page(ctx.method, ctx.params)
        if ctx.method == "tools/call":
            fn = self.tool_fns.get(ctx.params.name)
            if fn is None:
                raise RPCError(-32602, f"Unknown tool: {ctx.params.name}")
            return await fn(ctx, ctx.params.arguments or {})
        if ctx.method == "resources/read":
            uri = ctx.params.uri
            return {"contents": [{"uri": uri, "text": f"contents of {uri}"}]}
        if ctx.method == "prompts/get":
            args = ctx.params.arguments or {}
            return {
                "messages": [{"role": "user", "content": {"type": "text", "text": f"hi {args}"}}]
            }
        if ctx.method == "completion/complete":
            value = ctx.params.argument.value
            return {"completion": {"values": [value + "1", value + "2"], "hasMore": False}}
        if ctx.method in ("resources/subscribe", "resources/unsubscribe", "logging/setLevel"):
            return {}
        raise RPCError(-32601, f"Method not found: {ctx.method}")

    async def handle_notification(self, session: Session, event: NotificationReceived) -> None:
        self.notifications.append(event)
        self.notified.set()
        self.notified = trio.Event()

    def methods(self) -> list[str]:
        return [method for method, _ in self.requests]


@asynccontextmanager
async def open_fake(
    server: FakeServer, *, buffer: int = 64, **client_options: Any
) -> AsyncIterator[Client]:
    """A real client connected to *server* over an in-memory transport."""
    client_end, server_end = memory_transport_pair(buffer)
    async with (
        open_session(server_end, server.protocol, server) as session,
        open_client(client_end, **client_options) as client,
    ):
        server.session = session
        yield client
