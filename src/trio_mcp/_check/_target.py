"""The server under test: a command spawned per connection, or an HTTP endpoint.

:class:`StdioTarget` spawns a fresh process for each connection (in its own
process group, killed on every exit path, see :mod:`._stdio`);
:class:`HttpTarget` opens a fresh wire (so a fresh session in the handshake
era) on one shared ``httpx`` client.

Cancellation: a connection is an async context manager; leaving it, however,
ends the connection (kills the process, closes the streams).

Spec: SI-01, HT-01.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence

import attrs
import httpx

from ._http import open_http
from ._model import HTTP, STDIO
from ._stdio import open_stdio
from ._wire import Wire


@attrs.frozen
class StdioTarget:
    """A server started by *command* (no shell)."""

    command: tuple[str, ...]
    cwd: str | None = None
    transport = STDIO

    def describe(self) -> str:
        return " ".join(self.command)

    @contextlib.asynccontextmanager
    async def connect(self, era: str) -> AsyncIterator[Wire]:
        async with open_stdio(self.command, cwd=self.cwd) as wire:
            yield wire


@attrs.frozen
class HttpTarget:
    """A Streamable HTTP endpoint at *url*, reached with *client*."""

    url: str
    client: httpx.AsyncClient
    transport = HTTP

    def describe(self) -> str:
        return self.url

    @contextlib.asynccontextmanager
    async def connect(self, era: str) -> AsyncIterator[Wire]:
        async with open_http(self.client, self.url, era) as wire:
            yield wire


Target = StdioTarget | HttpTarget


def stdio_target(command: Sequence[str], cwd: str | None = None) -> StdioTarget:
    return StdioTarget(tuple(command), cwd)
