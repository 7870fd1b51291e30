"""Several servers at once: many clients in one nursery, tools under qualified names.

:func:`open_clients` opens one client per named server, concurrently, in one
nursery, and yields a :class:`ClientGroup`. Each server's tools appear as
``<server><separator><tool>``, so two servers may both have a ``search`` tool
(TL-12: the host disambiguates; the names given by the application are used,
never ``serverInfo.name``). Leaving the block closes every client (and the
transports, e.g. stdio processes, they own).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import attrs
import trio

from .. import types as mcp_types
from .._transport import Transport
from .._util import reraise_unwrapped
from ._client import Client
from ._open import open_client

#: How to reach one server: a transport, or a function returning an async
#: context manager that yields a transport (e.g. ``open_stdio_process``), or
#: one that yields a ready :class:`Client` (e.g. ``open_stdio_client``).
ServerTarget = (
    Transport
    | Callable[[], AbstractAsyncContextManager[Transport]]
    | Callable[[], AbstractAsyncContextManager[Client]]
)


@attrs.frozen
class QualifiedTool:
    """A tool of one server, under its server-qualified name."""

    qualified_name: str
    server: str
    tool: mcp_types.Tool


class ClientGroup:
    """Connected clients by server name, with their tools aggregated.
    Not constructed directly: use :func:`open_clients`."""

    def __init__(self, clients: dict[str, Client], separator: str) -> None:
        self.clients = clients
        self.separator = separator

    def __getitem__(self, server: str) -> Client:
        return self.clients[server]

    @property
    def tools(self) -> dict[str, QualifiedTool]:
        """Every server's tools (current cached lists) by qualified name.

        Spec: TL-12.
        """
        return {
            f"{server}{self.separator}{tool.name}": QualifiedTool(
                f"{server}{self.separator}{tool.name}", server, tool
            )
            for server, client in self.clients.items()
            for tool in client.tools.values()
        }

    def split(self, qualified_name: str) -> tuple[str, str]:
        """``(server, tool)`` for a qualified name.

        Raises:
            KeyError: no server of that name.
        """
        server, sep, tool = qualified_name.partition(self.separator)
        if not sep or server not in self.clients:
            raise KeyError(f"no server for tool {qualified_name!r}")
        return server, tool

    async def call_tool(
        self, qualified_name: str, arguments: dict[str, Any] | None = None, **options: Any
    ) -> mcp_types.CallToolResult:
        """Call a tool by its qualified name (options as :meth:`Client.call_tool`).

        Cancellation: as :meth:`Client.call_tool`.
        """
        server, tool = self.split(qualified_name)
        result: mcp_types.CallToolResult = await self.clients[server].call_tool(
            tool, arguments, **options
        )
        return result


async def _run_one(
    target: ServerTarget,
    client_options: dict[str, Any],
    stop: trio.Event,
    started: Callable[[Client], None],
) -> None:
    if isinstance(target, trio.abc.Channel):
        async with open_client(target, **client_options) as client:
            started(client)
            await stop.wait()
        return
    async with target() as opened:
        if isinstance(opened, Client):
            started(opened)
            await stop.wait()
            return
        async with open_client(opened, **client_options) as client:
            started(client)
            await stop.wait()


@asynccontextmanager
async def open_clients(
    servers: Mapping[str, ServerTarget],
    *,
    separator: str = "__",
    **client_options: Any,
) -> AsyncIterator[ClientGroup]:
    """Open a client to each of *servers* concurrently; yield a :class:`ClientGroup`.

    Args:
        servers: server name (used in qualified tool names) -> how to reach it.
        separator: between server and tool name; the default ``__`` keeps qualified
            names within the spec's tool-name alphabet and that of common model APIs.
            Server names must not contain it.
        client_options: passed to every :func:`open_client`.

    Raises:
        ValueError: a server name contains the separator.
        Whatever opening one client raises (the others are then closed).

    Cancellation:
        Leaving the block closes every client concurrently, each as leaving
        :func:`open_client` does (bounded).
    """
    for server in servers:
        if not server or separator in server:
            raise ValueError(f"server name {server!r} is empty or contains {separator!r}")
    stop = trio.Event()
    ready = trio.Event()
    clients: dict[str, Client] = {}

    def started_as(server: str) -> Callable[[Client], None]:
        def started(client: Client) -> None:
            clients[server] = client
            if len(clients) == len(servers):
                ready.set()

        return started

    try:
        async with trio.open_nursery() as nursery:
            try:
                for server, target in servers.items():
                    nursery.start_soon(
                        _run_one,
                        target,
                        client_options,
                        stop,
                        started_as(server),
                        name=f"mcp client {server}",
                    )
                if servers:
                    await ready.wait()
                # In the order given, whichever opened first.
                yield ClientGroup({name: clients[name] for name in servers}, separator)
            finally:
                stop.set()
    except BaseExceptionGroup as group:
        reraise_unwrapped(group)
