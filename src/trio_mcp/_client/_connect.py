"""Connecting a :class:`~trio_mcp.Client` to a server: over stdio (a spawned
process), Streamable HTTP and WebSocket.

Each ``open_*_client`` opens a transport from :mod:`trio_mcp.transports` and
runs :func:`~trio_mcp.open_client` over it; leaving the block closes the client,
then the transport (for stdio: the process shutdown).

Spec: SI-01, SI-10, LC-16, TR-02, TR-03.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._errors import SessionClosed
from ..protocol import DEFAULT_MAX_MESSAGE_SIZE
from ..transports._stdio_client import (
    BeforeSpawn,
    ProcessEvent,
    StdioProcess,
    open_stdio_process,
)
from ._client import Client
from ._era import ProbeClosedConnection
from ._open import open_client

logger = logging.getLogger("trio_mcp.client")

#: The era each stdio server command turned out to speak, in this process
#: (VR-12): a command remembered as handshake-era is not probed again.
_ERA_CACHE: dict[tuple[str, tuple[str, ...], str | None], str] = {}
#: Bound on the remembered commands.
_ERA_CACHE_SIZE = 256


#: The era each Streamable HTTP endpoint (scheme, authority, path) turned out
#: to speak, in this process (VR-12): one remembered as handshake-era is not
#: probed again. Keyed finer than the origin: one origin may host several
#: endpoints (a gateway), and they need not speak the same era.
_HTTP_ERA_CACHE: dict[tuple[str, str, str], str] = {}


def forget_eras() -> None:
    """Forget which era each stdio server command and HTTP endpoint speaks
    (they are probed again)."""
    _ERA_CACHE.clear()
    _HTTP_ERA_CACHE.clear()


def _http_endpoint_key(url: str) -> tuple[str, str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower(), parts.path or "/"


def _remember(cache: dict[Any, str], key: Any, era: str) -> None:
    if len(cache) >= _ERA_CACHE_SIZE and key not in cache:
        cache.pop(next(iter(cache)))
    cache[key] = era


# The HTTP and WebSocket transports are imported by the functions that use
# them: a host that only spawns stdio servers never loads httpx or
# trio-websocket (most of its start-up otherwise).
if TYPE_CHECKING:
    import httpx

#: The ``server/discover`` probe's bound for a server this client has just
#: spawned, instead of :func:`~trio_mcp.open_client`'s 2 s: the first answer
#: of a fresh process includes its interpreter start and imports (the official
#: Python SDK's server needs about 1.3 s idle, and over 2 s on a loaded
#: machine, where a 2 s probe then times out and the session starts with a
#: refused ``initialize``). A server that silently drops the probe costs this
#: once per command, then it is remembered (VR-12).
STDIO_PROBE_TIMEOUT = 10.0


@asynccontextmanager
async def open_stdio_client(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    stderr: Callable[[str], None] | str | None = "forward",
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    close_grace: float = 2.0,
    terminate_grace: float = 2.0,
    on_event: Callable[[ProcessEvent], None] | None = None,
    before_spawn: BeforeSpawn | None = None,
    remember_era: bool = True,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """Spawn a stdio MCP server, open the connection, yield the connected :class:`~trio_mcp.Client`.

    With ``era="auto"`` (the default of :func:`~trio_mcp.open_client`) the client probes
    with ``server/discover`` (bounded by *probe_timeout*, here 10 s unless given: it
    includes the process start) and falls
    back to the handshake in the same process; only when the server *exits* on the
    probe, having read it, is a fresh process started for the handshake. A server that
    exits before reading anything (it failed on start) is not started again: the
    connection fails with a :class:`~trio_mcp.SessionClosed` saying how it exited and
    its last stderr line. With *remember_era* a command found to be handshake-era is
    remembered for this process (by command, arguments and working directory) and not
    probed again; if it turns out to be modern after all (it refuses ``initialize`` with
    -32022), the client goes modern and the memory is corrected.

    The transport, with its :attr:`~trio_mcp.transports.StdioProcess.exit_step` after
    the block, is ``client.session.transport``.

    Args:
        command: the server program (looked up on the child's ``PATH``); never run by
            a shell.
        args: its arguments, passed verbatim.
        env: extra environment variables for the child.
        inherit_env: start from our whole environment instead of a safe minimal one
            (only when you trust the server with it).
        cwd: the child's working directory.
        stderr: where the server's stderr lines go: ``"forward"`` (our stderr, labelled
            with the command and pid), a callable taking each line, or None (dropped).
        max_message_size: longest line accepted from the server, in bytes (16 MiB by
            default); a longer response fails its call with
            :class:`~trio_mcp.ResponseTooLarge`.
        close_grace: seconds to wait for the server to exit after its stdin is closed
            (default 2).
        terminate_grace: seconds to wait after SIGTERM before SIGKILL (default 2).
        on_event: called with each :class:`~trio_mcp.transports.ProcessEvent`
            (spawned, stdin closed, signals, exit).
        before_spawn: sees the exact argv, working directory and environment before
            anything is started (see :func:`~trio_mcp.transports.open_stdio_process`);
            an exception it raises vetoes the spawn and comes out of this ``async
            with`` unchanged.
        remember_era: remember, for this process, a command found to be
            handshake-era, as above (default True).
        client_options: passed to :func:`~trio_mcp.open_client` (``name``,
            ``version``, ``era``, ``probe_timeout``, the handlers, and session
            options such as ``observer``).

    Cancellation:
        As :func:`~trio_mcp.open_client`, then the process shutdown of
        :func:`~trio_mcp.transports.open_stdio_process` (bounded, shielded).

    Spec: SI-01, SI-10, SI-14, LC-16, VR-12, X-03.
    """
    key = (command, tuple(args), None if cwd is None else os.fspath(cwd))
    client_options.setdefault("probe_timeout", STDIO_PROBE_TIMEOUT)
    era = client_options.pop("era", "auto")
    if era == "auto" and remember_era and _ERA_CACHE.get(key) == "legacy":
        client_options.setdefault("probe", False)

    def spawn() -> Any:
        return open_stdio_process(
            command,
            args,
            env=env,
            inherit_env=inherit_env,
            cwd=cwd,
            stderr=stderr,
            max_message_size=max_message_size,
            close_grace=close_grace,
            terminate_grace=terminate_grace,
            on_event=on_event,
            before_spawn=before_spawn,
        )

    async with AsyncExitStack() as stack:
        transport = await stack.enter_async_context(spawn())
        try:
            try:
                client = await stack.enter_async_context(
                    open_client(transport, era=era, **client_options)
                )
            except ProbeClosedConnection as exc:
                if transport.read_no_input:
                    raise
                # The server read server/discover and exited: a handshake-era
                # server that dies on an unknown method. A fresh process, no probe.
                logger.debug("%s; starting it again for the handshake", exc)
                await stack.aclose()
                transport = await stack.enter_async_context(spawn())
                client = await stack.enter_async_context(
                    open_client(transport, era="legacy", **client_options)
                )
        except SessionClosed as exc:
            if transport.returncode is None:
                raise
            raise _ended_before_answering(transport, exc) from exc
        if remember_era and era == "auto":
            _remember(_ERA_CACHE, key, client.era)
        yield client


def _ended_before_answering(transport: StdioProcess, exc: SessionClosed) -> SessionClosed:
    """The error of a server process that ended before the connection opened, in words."""
    return SessionClosed(f"the server {transport.in_words(' before answering')}", exc.origin)


@asynccontextmanager
async def open_http_client(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    http_client: httpx.AsyncClient | None = None,
    auth: httpx.Auth | None = None,
    legacy_fallback: bool = True,
    terminate_on_close: bool = True,
    reconnect_delay: float = 1.0,
    close_timeout: float = 2.0,
    reinitialize: bool = True,
    remember_era: bool = True,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """Connect to the MCP endpoint at *url*, choose the era, yield a :class:`~trio_mcp.Client`.

    With ``era="auto"`` (the default of :func:`~trio_mcp.open_client`) the first request
    is a 2026-07-28 one, ``server/discover``, POSTed on its own. A discover result means
    2026-07-28: every request is then its own POST with its metadata headers, no
    session. A -32022 naming a 2026-07-28 version we speak (the 400 body of a modern
    server) is retried with that version and never falls back. Anything else (a 404
    without a JSON-RPC body, a 400 with a handshake-era body, a 405, ...) means a
    handshake-era server: ``initialize`` follows, and from there the 2024-11-05 HTTP+SSE
    fallback as before. A dual-era server that serves the old era without sessions (no
    ``Mcp-Session-Id``, 405 on GET and DELETE) is fine either way. ``era="modern"`` and
    ``era="legacy"`` speak one era only. With *remember_era* an endpoint (scheme,
    authority and path) found to be handshake-era is remembered for this process and
    starts with ``initialize`` next time; should it refuse that with -32022 naming a
    2026-07-28 version, the client goes modern and the memory is corrected.

    With *auth* (an ``httpx.Auth``, e.g. :class:`trio_mcp.auth.OAuthProvider`) every
    request carries its credentials; a failed authorization raises
    :class:`~trio_mcp.auth.AuthorizationFailed`.

    Args:
        url: the server's MCP endpoint, such as ``http://127.0.0.1:8000/mcp``.
        headers: sent with every request (e.g. ``Authorization``).
        http_client: an ``httpx.AsyncClient`` to use, not closed here (default: one
            made for this client, allowing 100 calls in flight, and closed on exit).
        auth: an ``httpx.Auth`` for every request, as above; with an own
            *http_client*, give the auth to that client instead.
        legacy_fallback: try the 2024-11-05 HTTP+SSE transport when the server refuses
            the ``initialize`` POST with 400, 404 or 405 (default True).
        terminate_on_close: send DELETE for the session on exit (default True).
        reconnect_delay: seconds before reconnecting a stream when the server gave no
            ``retry`` (default 1).
        close_timeout: bound in seconds on the cancels and DELETE sent on exit
            (default 2).
        reinitialize: when the server answers 404 for the session, start a new
            session instead of ending the client (default True, as the specification
            requires; the call that met the 404 fails, and what the server held for
            the old session, such as subscriptions, is lost: False ends the client
            instead).
        remember_era: remember, for this process, an endpoint found to be
            handshake-era, as above (default True).
        client_options: passed to :func:`~trio_mcp.open_client` (``name``,
            ``version``, ``era``, the handlers, and session options such as
            ``observer``).

    Cancellation:
        In 2026-07-28 cancelling a call closes its response stream, which is
        the cancel; nothing else is sent. In the handshake era, leaving
        the block (normally, by an error, or by an outer cancel) sends
        ``notifications/cancelled`` for unanswered requests and DELETE,
        shielded and bounded by *close_timeout*, then closes everything.

    Spec: HT-33, HT-34, SS-08, HM-04, HM-13, HM-32, VR-11, VR-12, AU-09.
    """
    from ..transports._http.client._transport import open_http_transport

    key = _http_endpoint_key(url)
    era = client_options.pop("era", "auto")
    if era == "auto" and remember_era and _HTTP_ERA_CACHE.get(key) == "legacy":
        client_options.setdefault("probe", False)
    async with (
        open_http_transport(
            url,
            headers=headers,
            http_client=http_client,
            auth=auth,
            legacy_fallback=legacy_fallback,
            terminate_on_close=terminate_on_close,
            reconnect_delay=reconnect_delay,
            close_timeout=close_timeout,
            reinitialize=reinitialize,
        ) as transport,
        open_client(transport, era=era, **client_options) as client,
    ):
        if remember_era and era == "auto":
            _remember(_HTTP_ERA_CACHE, key, client.era)
        yield client


@asynccontextmanager
async def open_websocket_client(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    max_message_size: int | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """Connect to an MCP WebSocket server, run the handshake, yield a :class:`~trio_mcp.Client`.

    The socket is :func:`~trio_mcp.transports.open_websocket_transport`'s
    (the ``mcp`` subprotocol); *client_options* go to :func:`~trio_mcp.open_client`.
    *max_message_size*: the transport's bound (default 16 MiB + 1 KiB); a
    response over it fails its call with :class:`~trio_mcp.ResponseTooLarge`
    and the session goes on.

    Cancellation: as :func:`~trio_mcp.open_client`; the socket is closed on exit.

    Spec: TR-03.
    """
    from ..transports._websocket import open_websocket_transport

    bound = {} if max_message_size is None else {"max_message_size": max_message_size}
    async with (
        open_websocket_transport(url, headers=headers, **bound) as transport,
        open_client(transport, **client_options) as client,
    ):
        yield client
