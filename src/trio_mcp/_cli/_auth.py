"""``--auth`` for ``trio-mcp trace/call --url``: OAuth through the user's browser.

The provider uses a :class:`~trio_mcp.auth.LoopbackRedirect` (one URL printed
on stderr for the user to open; the callback comes back to 127.0.0.1) and a
:class:`~trio_mcp.auth.FileTokenStorage` in the user's config directory, so a
second run reuses the tokens (and refreshes them) without a browser.

Spec: AU-14 (loopback redirect, token storage).
"""

from __future__ import annotations

import os
import sys
from contextlib import AsyncExitStack
from pathlib import Path

from ..auth import FileTokenStorage, LoopbackRedirect, OAuthProvider


def token_path() -> Path:
    """Where the CLI keeps tokens: ``$XDG_CONFIG_HOME/trio-mcp/tokens.json``
    (``~/.config`` by default), mode 0600."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "trio-mcp" / "tokens.json"


def _show(url: str) -> None:
    print(f"trio-mcp: open this URL to authorize:\n  {url}", file=sys.stderr, flush=True)


async def cli_provider(url: str, stack: AsyncExitStack, *, wait: float = 300.0) -> OAuthProvider:
    """The CLI's provider for the MCP server at *url*; its redirect listener
    lives until *stack* closes; the user has *wait* seconds to come back
    from the browser.

    Cancellation: closing *stack* closes the listener.
    """
    redirect = await stack.enter_async_context(LoopbackRedirect(timeout=wait, show=_show))
    return OAuthProvider(
        url, redirect=redirect, storage=FileTokenStorage(token_path()), client_name="trio-mcp"
    )
