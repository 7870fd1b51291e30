"""``Server``: a registry of tools that answers a session's requests.

The registry does no I/O. It is *run* by ``serve_*`` functions (``serve_session``
for any transport), so one ``Server`` can serve many sessions over many
transports at once. Capabilities are derived from what is registered, never
declared by hand, so a feature that was not declared is refused on the wire.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import attrs
import trio

from . import types as mcp_types
from ._context import RequestContext
from ._errors import RPCError
from ._schema import ToolSignature
from ._session import Session, open_session
from ._transport import Transport
from .protocol import ErrorCode, NotificationReceived, Protocol, Role

logger = logging.getLogger("trio_mcp.server")

F = TypeVar("F", bound=Callable[..., Any])

#: What a handler receives to learn about its request (the per-request context).
Context = RequestContext


class ToolError(Exception):
    """Raise from a tool to return an ``isError`` result with this message.

    Any other exception gives an ``isError`` result with a generic message (the
    traceback is logged, never sent).
    """


@attrs.frozen
class RegisteredTool:
    """A tool as registered: its wire definition and how to call it."""

    definition: mcp_types.Tool
    signature: ToolSignature
    fn: Callable[..., Awaitable[Any]]


class Server:
    """An MCP server: register tools, then serve sessions.

    Example::

        server = Server("demo", version="1.0")

        @server.tool()
        async def add(a: int, b: int) -> int:
            \"\"\"Add two integers.\"\"\"
            return a + b
    """

    def __init__(self, name: str, version: str = "0.0.0", *, instructions: str | None = None):
        self.name = name
        self.version = version
        self.instructions = instructions
        self._tools: dict[str, RegisteredTool] = {}

    # ----------------------------------------------------------- registration

    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
    ) -> Callable[[F], F]:
        """Register an ``async def`` function as a tool (decorator form of :meth:`add_tool`)."""

        def decorate(fn: F) -> F:
            self.add_tool(fn, name=name, title=title, description=description)
            return fn

        return decorate

    def add_tool(
        self,
        fn: Callable[..., Awaitable[Any]],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
    ) -> None:
        """Register *fn* as a tool; its input schema comes from its signature."""
        if not inspect.iscoroutinefunction(fn):
            raise TypeError(f"tool {fn.__name__!r} must be an async def function")
        signature = ToolSignature.from_function(fn, context_type=RequestContext)
        tool_name = name or fn.__name__
        definition = mcp_types.Tool(
            name=tool_name,
            title=title,
            description=description or inspect.getdoc(fn),
            input_schema=signature.input_schema,
        )
        self._tools[tool_name] = RegisteredTool(definition, signature, fn)

    def capabilities(self) -> dict[str, Any]:
        """The capabilities object this server declares (derived from the registry)."""
        caps: dict[str, Any] = {}
        if self._tools:
            caps["tools"] = {}
        return caps

    def make_protocol(self) -> Protocol:
        """A fresh server-side :class:`Protocol` for one session."""
        return Protocol(
            Role.SERVER,
            capabilities=self.capabilities(),
            info={"name": self.name, "version": self.version},
            instructions=self.instructions,
        )

    # -------------------------------------------------------------- dispatch

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Answer one request (called by the session in the request's own task)."""
        method = ctx.method
        if method == "tools/call":
            return await self._call_tool(ctx)
        if method == "tools/list":
            return mcp_types.ListToolsResult(tools=[t.definition for t in self._tools.values()])
        raise RPCError(int(ErrorCode.METHOD_NOT_FOUND), f"Method not found: {method}")

    async def handle_notification(self, session: Session, event: NotificationReceived) -> None:
        """React to a notification from the client (none need action yet)."""
        logger.debug("notification %s", event.method)

    async def _call_tool(self, ctx: RequestContext) -> mcp_types.CallToolResult:
        params: mcp_types.CallToolRequestParams = ctx.params
        tool = self._tools.get(params.name)
        if tool is None:
            raise RPCError(int(ErrorCode.INVALID_PARAMS), f"Unknown tool: {params.name}")
        try:
            kwargs = tool.signature.bind(params.arguments or {}, ctx)
        except ValueError as exc:
            return _tool_error(f"Invalid arguments for tool {params.name}: {exc}")
        try:
            value = await tool.fn(**kwargs)
        except ToolError as exc:
            return _tool_error(str(exc))
        except RPCError:
            raise
        except Exception:
            logger.exception("tool %s failed", params.name)
            return _tool_error(f"Tool {params.name} failed")
        return to_call_tool_result(value)


def _tool_error(message: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(text=message)], is_error=True)


_CONTENT_TYPES = (
    mcp_types.TextContent,
    mcp_types.ImageContent,
    mcp_types.AudioContent,
    mcp_types.ResourceLink,
    mcp_types.EmbeddedResource,
)


def to_call_tool_result(value: Any) -> mcp_types.CallToolResult:
    """Turn a tool's return value into a ``CallToolResult``.

    Strings become text content; content blocks (and lists of them) pass
    through; anything else is rendered as JSON text.
    """
    if isinstance(value, mcp_types.CallToolResult):
        return value
    if isinstance(value, str):
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(text=value)])
    if isinstance(value, _CONTENT_TYPES):
        return mcp_types.CallToolResult(content=[value])
    if isinstance(value, list) and value and all(isinstance(v, _CONTENT_TYPES) for v in value):
        return mcp_types.CallToolResult(content=list(value))
    import orjson

    text = orjson.dumps(mcp_types.converter.unstructure(value)).decode()
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(text=text)])


async def serve_session(
    server: Server,
    transport: Transport,
    *,
    task_status: trio.TaskStatus[Session] = trio.TASK_STATUS_IGNORED,
    **session_options: Any,
) -> None:
    """Serve one session of *server* over *transport* until it closes.

    ``task_status.started`` receives the :class:`Session` (for ``nursery.start``).

    Cancellation:
        Cancelling this call shuts the session down in the documented order
        (bounded), then re-raises ``Cancelled``.
    """
    async with open_session(
        transport, server.make_protocol(), server, **session_options
    ) as session:
        task_status.started(session)
        await session.wait_closed()
