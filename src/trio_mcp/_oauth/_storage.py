"""Where the client keeps its tokens and registrations (AU-07, AU-14).

Tokens are keyed by the resource (the MCP server's canonical URI) and carry
the issuer that granted them; client registrations are keyed by the
authorization server's issuer, so credentials from one server are never
presented to another (SEP-2352). :class:`MemoryTokenStorage` is the default;
:class:`FileTokenStorage` keeps one JSON file, written atomically (a
temporary file in the same directory, then ``os.replace``) with mode 0600,
for the CLI.

Spec: AU-07, AU-14.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol

import trio

from ._types import ClientInfo, TokenResponse


class TokenStorage(Protocol):
    """The provider's storage: tokens by resource, client credentials by issuer.

    Cancellation: every method may be cancelled; a cancelled write leaves the
    previous state (a file store replaces its file atomically).
    """

    async def get_tokens(self, resource: str) -> TokenResponse | None: ...

    async def set_tokens(self, resource: str, tokens: TokenResponse | None) -> None: ...

    async def get_client(self, issuer: str) -> ClientInfo | None: ...

    async def set_client(self, issuer: str, client: ClientInfo | None) -> None: ...


class MemoryTokenStorage:
    """Tokens and registrations in memory, for the life of the object."""

    def __init__(self) -> None:
        self._tokens: dict[str, TokenResponse] = {}
        self._clients: dict[str, ClientInfo] = {}

    async def get_tokens(self, resource: str) -> TokenResponse | None:
        await trio.lowlevel.checkpoint()
        return self._tokens.get(resource)

    async def set_tokens(self, resource: str, tokens: TokenResponse | None) -> None:
        await trio.lowlevel.checkpoint()
        if tokens is None:
            self._tokens.pop(resource, None)
        else:
            self._tokens[resource] = tokens

    async def get_client(self, issuer: str) -> ClientInfo | None:
        await trio.lowlevel.checkpoint()
        return self._clients.get(issuer)

    async def set_client(self, issuer: str, client: ClientInfo | None) -> None:
        await trio.lowlevel.checkpoint()
        if client is None:
            self._clients.pop(issuer, None)
        else:
            self._clients[issuer] = client


class FileTokenStorage:
    """Tokens and registrations in one JSON file (mode 0600, replaced atomically).

    The file is read on every get and rewritten on every set (a CLI makes a
    handful of each), in a worker thread so the event loop never blocks.
    Unreadable or malformed content counts as empty: the user authorizes again.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = trio.Lock()

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except (OSError, ValueError):
            return {"tokens": {}, "clients": {}}
        if not isinstance(data, dict):
            return {"tokens": {}, "clients": {}}
        for key in ("tokens", "clients"):
            if not isinstance(data.get(key), dict):
                data[key] = {}
        return data

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tokens-", suffix=".tmp")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with _suppress_oserror():
                os.unlink(tmp)
            raise

    async def _update(self, section: str, key: str, value: dict[str, Any] | None) -> None:
        async with self._lock:

            def update() -> None:
                data = self._read()
                if value is None:
                    data[section].pop(key, None)
                else:
                    data[section][key] = value
                self._write(data)

            await trio.to_thread.run_sync(update)

    async def get_tokens(self, resource: str) -> TokenResponse | None:
        data = await trio.to_thread.run_sync(self._read)
        entry = data["tokens"].get(resource)
        try:
            return TokenResponse(**entry) if isinstance(entry, dict) else None
        except TypeError:
            return None

    async def set_tokens(self, resource: str, tokens: TokenResponse | None) -> None:
        await self._update("tokens", resource, None if tokens is None else tokens.to_json())

    async def get_client(self, issuer: str) -> ClientInfo | None:
        data = await trio.to_thread.run_sync(self._read)
        entry = data["clients"].get(issuer)
        try:
            return ClientInfo(**entry) if isinstance(entry, dict) else None
        except TypeError:
            return None

    async def set_client(self, issuer: str, client: ClientInfo | None) -> None:
        await self._update("clients", issuer, None if client is None else client.to_json())


class _suppress_oserror:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> bool:
        return kind is not None and issubclass(kind, OSError)
