"""A client and a server session joined by an in-memory transport."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from .._client._client import Client
from .._client._open import open_client
from .._server._registry import Server, serve_session
from ._memory import memory_transport_pair


@asynccontextmanager
async def open_memory_client(
    server: Server,
    *,
    server_options: dict[str, Any] | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """Serve *server* over an in-memory transport and yield a connected client.

    The server session runs in a nursery owned by this context manager; leaving
    it closes the client (the server sees end-of-channel) and waits for the
    server session to finish.

    Cancellation:
        As :func:`~trio_mcp.open_client`; the server session is cancelled with
        the nursery if it has not finished by then.
    """
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(
            lambda task_status: serve_session(
                server, server_end, task_status=task_status, **(server_options or {})
            )
        )
        async with open_client(client_end, **client_options) as client:
            yield client
