"""``--auth`` for ``trio-mcp trace/call --url``: OAuth through the user's browser.

The provider uses a :class:`~trio_mcp.auth.LoopbackRedirect` (one URL printed
on stderr for the user to open; the callback comes back to 127.0.0.1) and a
:class:`~trio_mcp.auth.FileTokenStorage` in the user's config directory, so a
second run reuses the tokens (and refreshes them) without a browser.

Spec: AU-14 (loopback redirect, token storage).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from contextlib import AsyncExitStack
from pathlib import Path

from ..auth import FileTokenStorage, LoopbackRedirect, OAuthProvider
from ._errors import CommandError

#: What the ``auth`` extra installs (``pip install 'trio-mcp[auth]'``).
AUTH_EXTRA_MODULES = ("authlib", "joserfc")


def require_auth_extra() -> None:
    """Refuse ``--auth`` at once when the ``auth`` extra is not installed,
    before anything is registered or sent: the flow would otherwise fail
    halfway, after registering the client with the authorization server.

    Looks the modules up without importing them (a few file-system checks).

    Raises:
        CommandError: a module of the extra cannot be found; the message
            says which extra to install.
    """
    missing = [name for name in AUTH_EXTRA_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise CommandError(
            f"--auth needs the auth extra ({' and '.join(missing)} not installed): "
            "pip install 'trio-mcp[auth]'"
        )


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

    Raises:
        CommandError: the ``auth`` extra is not installed (see
            :func:`require_auth_extra`).

    Cancellation: closing *stack* closes the listener.
    """
    require_auth_extra()
    redirect = await stack.enter_async_context(LoopbackRedirect(timeout=wait, show=_show))
    return OAuthProvider(
        url, redirect=redirect, storage=FileTokenStorage(token_path()), client_name="trio-mcp"
    )
