"""The ways to run a :class:`~trio_mcp.Server`: over stdio, Streamable HTTP and
WebSocket.

Each entry point takes a server and a transport-level server of channels from
:mod:`trio_mcp.transports`, and serves one session of the server on every
channel: ``serve_*`` run until cancelled (and work with ``nursery.start``),
``run_*`` start a fresh Trio run for a script's ``if __name__ == "__main__"``.

Spec: SI-01, SI-02, SI-05, SI-11, SI-12, LC-17 (stdio), HT-01, HT-03 (HTTP),
TR-03 (WebSocket).
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, cast

import trio

from .._session import Session, open_session
from .._util import unwrapping
from ..protocol import DEFAULT_MAX_MESSAGE_SIZE, Connection
from ..transports._bounds import (
    CLOSE_TIMEOUT,
    HANDSHAKE_TIMEOUT,
    HEADER_TIMEOUT,
    WEBSOCKET_MAX_MESSAGE_SIZE,
)
from ..transports._stdio_server import open_stdio_server_transport
from ._serve import SessionServer, serve_session

# The HTTP and WebSocket transports are imported by the functions that use
# them: a server run over stdio never loads those stacks (trio-websocket and
# wsproto alone would be most of its start-up).
if TYPE_CHECKING:
    import socket

    from .._transport import Identity
    from ..transports._http.server._app import StreamableHTTPApp
    from ..transports._http.server._drain import Drain
    from ..transports._http.server._transport import HttpServerTransport
    from ..transports._websocket import WebSocketTransport
    from ._workers import WorkerTarget

# ------------------------------------------------------------------ stdio


async def serve_stdio(
    server: SessionServer,
    *,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    handle_signals: bool | None = None,
    task_status: trio.TaskStatus[Session] = trio.TASK_STATUS_IGNORED,
    **session_options: Any,
) -> None:
    """Serve *server* over this process's stdin and stdout until the client goes away.

    Returns when stdin reaches end of input (the client's shutdown), when the client
    closes the session, or on SIGTERM or SIGINT (Ctrl+C) when *handle_signals* is on
    (the default when called from the main thread). On a signal the session is cancelled
    at once: handlers stop, their records end ``CANCELLED``, and nothing more is
    written but the final ``complete`` result of each open 2026-07-28
    ``subscriptions/listen`` (bounded by the session's ``cancel_notify_grace``).

    Args:
        server: the :class:`~trio_mcp.Server` to run.
        stdin_fd, stdout_fd: the descriptors to serve (default 0 and 1), see
            :func:`~trio_mcp.transports.open_stdio_server_transport`.
        max_message_size: longest line accepted, in bytes (16 MiB by default;
            a line is buffered up to this size, so it is the memory one frame may
            take). A longer line is answered -32600 with the id its first 4 KiB
            show, and the session goes on.
        handle_signals: catch SIGTERM and SIGINT (needs the main thread).
        task_status: receives the :class:`~trio_mcp.lowlevel.Session` (``nursery.start``).
        session_options: passed to :func:`~trio_mcp.lowlevel.open_session`.

    Cancellation:
        Cancelling the call stops serving at once (no thread to wait for) and
        closes the private descriptors; fds 0 and 1 are restored. As on a
        signal, each open listen stream's final result is written first.

    Spec: SI-01, SI-02, SI-05, SI-11, SI-12, LC-17.
    """
    if handle_signals is None:
        handle_signals = threading.current_thread() is threading.main_thread()
    async with (
        open_stdio_server_transport(
            stdin_fd=stdin_fd, stdout_fd=stdout_fd, max_message_size=max_message_size
        ) as transport,
        trio.open_nursery() as nursery,
    ):
        if handle_signals:
            await nursery.start(_stop_on_signal, nursery.cancel_scope)
        await serve_session(server, transport, task_status=task_status, **session_options)
        nursery.cancel_scope.cancel()


async def _stop_on_signal(
    scope: trio.CancelScope, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async for signum in signals:
            scope.cancel(reason=f"received {signal.Signals(signum).name}")
            return


def run_stdio(server: SessionServer, *, fast_exit: bool = True, **options: Any) -> None:
    """Run *server* over stdio in a fresh Trio run (for ``if __name__ == "__main__"``).

    Args:
        server: the :class:`~trio_mcp.Server` to run.
        fast_exit: when serving ends, freeze the garbage collector's heap
            (:func:`gc.freeze`). ``run_stdio`` is meant to be the last thing a
            script does, and the interpreter's final collection would otherwise
            walk every object just before the process goes, which is most of
            the time between the client closing stdin and the process being
            gone (about 30 ms with the package loaded). ``atexit`` handlers,
            flushing of files and module teardown still run; only objects
            already in reference cycles are not finalized. Turn it off if the
            program goes on after serving.
        options: passed to :func:`serve_stdio`.

    Cancellation: see :func:`serve_stdio`; SIGTERM and one Ctrl+C stop it.
    """
    try:
        trio.run(partial(serve_stdio, server, **options))
    finally:
        if fast_exit:
            gc.freeze()


# ------------------------------------------------------------------- HTTP


class _HttpSessions:
    """The one-request sessions of a server's stateless POSTs over Streamable
    HTTP (a stateful session is served by :func:`serve_session` itself).

    Cancellation: see :meth:`stateless_session`.
    """

    __slots__ = ("server", "session_options")

    def __init__(self, server: SessionServer, session_options: Mapping[str, Any]) -> None:
        self.server = server
        self.session_options = session_options

    @asynccontextmanager
    async def stateless_session(
        self,
        transport: HttpServerTransport,
        version: str | None,
        *,
        fed: bool = False,
        identity: Identity | None = None,
    ) -> AsyncIterator[Session | None]:
        """The session of the one request of a stateless POST, spoken in
        revision *version* (a 2026-07-28 POST: the era it opens in; None: its
        connection decides from the request, see ``Connection.start_stateless``),
        open for the body, which serves the POST in its own task and ends the
        client side (``transport.peer_closed()``). *identity* is who sent the
        POST (None: anonymous).

        *fed*: the body has the POST's frame in its own task; the session then
        has no reader and is yielded for the body to ``feed`` the frame and
        ``feed_eof`` when the client side ends (``OpenStateless``). Otherwise
        None is yielded and the session reads the transport.

        Cancellation: leaving the body normally waits until the session has
        seen the client side end and stopped (a request still running is
        cancelled then, origin ``transport``); leaving it by an exception or a
        cancel shuts the session down as any session's owner does.
        """
        server = self.server

        def make_protocol(**settings: Any) -> Connection:
            connection = server.make_protocol(**settings)
            if version is not None:
                connection.start_stateless(version)
            return connection

        async with open_session(
            transport,
            make_protocol,
            server,
            reader=not fed,
            identity=identity,
            **self.session_options,
        ) as session:
            yield session if fed else None
            await session.wait_closed()


def http_app(
    server: SessionServer,
    *,
    session_options: Mapping[str, Any] | None = None,
    **app_options: Any,
) -> StreamableHTTPApp:
    """The Streamable HTTP endpoint of *server*, as an ASGI application.

    Mount it in any ASGI framework that runs on Trio, or pass it to
    :func:`serve_http`. *app_options* are those of
    :class:`~trio_mcp.transports.StreamableHTTPApp` (path, stateless,
    event_store, allowed_hosts, ...); *session_options* go to
    :func:`~trio_mcp.lowlevel.open_session` for every session.

    Spec: HT-01.
    """
    from ..transports._http.server._app import StreamableHTTPApp

    options = dict(session_options or {})
    # One frame bound: the codec's is the POST body's (a body under the HTTP
    # bound is never refused again by a lower session default).
    if "max_body_size" in app_options:
        options.setdefault("max_message_size", app_options["max_body_size"])
    sessions = _HttpSessions(server, options)
    # The endpoint serves the eras the server speaks: both by default; a
    # modern-only server's endpoint answers GET and DELETE with 405 (HM-31).
    app_options.setdefault("versions", server.protocol_versions)
    # Mcp-Param-* headers are checked against the called tool's x-mcp-header
    # annotations, worked out once at registration (HM-28).
    app_options.setdefault("tool_headers", server.tool_header_annotations)
    # Registered scopes= are checked by the endpoint, before a request reaches
    # a session, so a refusal can still be a 403 with the step-up challenge.
    scopes_for = getattr(server, "required_scopes", None)
    if scopes_for is not None:
        app_options.setdefault("scopes_for", scopes_for)
    # Tasks outlive the POST that started them: the runner lives as long as
    # the application does.
    # and so do the lifespan and the bus relay (Server.serving enters all three).
    serving = getattr(server, "serving", None)
    tasks = getattr(server, "tasks", None)
    if serving is not None:
        app_options.setdefault("background", serving)
    # A drain completes the server's listen streams with their final result.
    complete_listens = getattr(server, "complete_listens", None)
    if complete_listens is not None:
        app_options.setdefault("on_drain", complete_listens)
    elif tasks is not None:
        app_options.setdefault("background", tasks.serving)
    # A stateful session (from its initialize to its end) is served as on
    # every other transport, with its list-changed and resource-updated
    # notifications over the standalone GET stream; the handler is
    # serve_session itself, so an idle session holds no frame of a wrapper.
    serve = partial(serve_session, server, **options)
    return StreamableHTTPApp(serve, stateless_session=sessions.stateless_session, **app_options)


async def serve_http(
    server: SessionServer | StreamableHTTPApp | WorkerTarget,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    workers: int = 1,
    header_timeout: float = HEADER_TIMEOUT,
    read_timeout: float | None = None,
    drain: Drain | None = None,
    drain_on_signal: bool = False,
    sock: socket.socket | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    **app_options: Any,
) -> None:
    """Serve *server* over Streamable HTTP (at ``/mcp``) on hypercorn's Trio worker.

    Graceful drain: with *drain* (:class:`~trio_mcp.transports.Drain`),
    ``drain.start()`` (or SIGTERM, with *drain_on_signal*) takes the instance
    out of service in order (readiness false, stop accepting, listen streams
    completed, requests in flight finished within the grace, handshake-era
    sessions closed, the rest cancelled with origin SHUTDOWN) and the call then
    returns. ``/healthz`` and ``/readyz`` answer the load balancer. With
    workers, each worker drains on the SIGTERM that cancelling the call sends
    it, with *drain*'s grace and delay (3 s of grace by default).

    ``task_status.started`` receives the base URL (``http://127.0.0.1:PORT``);
    port 0 picks a free port. A warning is logged when binding a non-loopback
    address without an explicit ``allowed_hosts``.

    *server* may also be an import path ``"module:name"`` or an importable
    zero-argument factory (a module-level function) returning a server or an
    application; with one worker it is imported (or called) here.

    Scale-out: with ``workers=N`` (N > 1) the server runs as N worker processes, each a
    fresh interpreter running hypercorn's Trio worker, all accepting on one socket this
    process binds (so port 0 works); the URL is reported once every worker listens. A
    worker cannot be handed a live object, so *server* must then be an import path or an
    importable factory (a ``Server`` object is a TypeError), every worker builds its
    own, and *app_options* must be picklable. ``auth=ResourceServer(...)`` is: its
    verifiers travel as their configuration (keys, credentials, options), never their
    caches nor their httpx client, so each worker fetches the JWKS and introspects on
    its own (a token verified or revoked in the parent is decided afresh in a worker).
    The 2026-07-28 era needs no state between requests and spreads freely; what does
    need shared state (the ``requestState`` key, which this sets for the workers unless
    ``TRIO_MCP_REQUEST_STATE_KEY`` is; listen subscriptions, per worker; handshake-era
    sessions, which need affinity or ``stateless=True``) is in the how-to on deploying
    over Streamable HTTP and the README's "Scale-out" section. The same deployment from
    the command line, for an importable application ``app = http_app(server)``:
    ``hypercorn --worker-class trio --workers N --bind 127.0.0.1:8000 module:app`` (give
    its workers a shared ``TRIO_MCP_REQUEST_STATE_KEY``).

    A session that fails (an unexpected exception) is logged and closed; the server and
    the other sessions go on. A worker process that exits on its own ends the server:
    the others are stopped and :class:`~trio_mcp.WorkerExited` is raised.

    Args:
        server: a :class:`~trio_mcp.Server`, a ready
            :class:`~trio_mcp.transports.StreamableHTTPApp`, an import path
            ``"module:name"`` or an importable factory, as above.
        host: the address to bind (default loopback, ``127.0.0.1``).
        port: the port to bind; 0 (default) picks a free one.
        workers: the number of worker processes (default 1: serve in this process).
        header_timeout: seconds a connection may take to send a request's head,
            also between keep-alive requests (default 10; hypercorn's, see
            :func:`~trio_mcp.transports.serve_http_app`).
        read_timeout: seconds hypercorn waits for each read from the client
            (default None: off); it also cuts a long SSE stream, so set it only
            well above the longest request you expect.
        drain: the :class:`~trio_mcp.transports.Drain` that takes this instance
            out of service (see above); with workers, its grace and delay are
            each worker's.
        drain_on_signal: start *drain* on SIGTERM (main thread only).
        sock: a bound TCP socket to serve on instead of binding *host* and
            *port* (leave those at their defaults): one a supervisor made and
            handed down, so that a restarted instance keeps the port and
            connections made meanwhile wait in its queue. It stays yours, open
            and listening after the call returns (hypercorn serves a
            duplicate of its descriptor). One worker only.
        task_status: receives the base URL once the server listens (for
            ``nursery.start``).
        app_options: passed to :func:`http_app` and so to
            :class:`~trio_mcp.transports.StreamableHTTPApp`: ``path``,
            ``stateless``, ``allowed_hosts``, ``auth``, ``body_timeout`` (30 s),
            ``max_body_size``, ``session_options``, and the others listed there.

    Raises:
        OSError: the address cannot be bound (in use, not this host's, no
            permission), raised as itself, never inside an exception group,
            before ``task_status.started``.
        ValueError: *port* is outside 0-65535; *sock* given with a *host*,
            a *port* or *workers*.

    Cancellation:
        Runs until cancelled; then the listener closes and every session shuts
        down (bounded): handlers are cancelled at once, and each open
        2026-07-28 ``subscriptions/listen`` response ends with its final
        ``complete`` result as its last event. With workers, each worker gets
        SIGTERM and up to 5 s to finish, then SIGKILL; the call returns only
        once every worker process it started has been reaped (no orphans).

    Spec: HT-01, HT-03, ST-03, PT-08.
    """
    check_port(port)
    if sock is not None and workers != 1:
        raise ValueError("a socket to serve on is served by one worker: leave out workers")
    async with unwrapping():
        await _serve_http(
            server,
            host,
            port,
            sock=sock,
            workers=workers,
            header_timeout=header_timeout,
            read_timeout=read_timeout,
            drain=drain,
            drain_on_signal=drain_on_signal,
            task_status=task_status,
            app_options=app_options,
        )


async def _serve_http(
    server: SessionServer | StreamableHTTPApp | WorkerTarget,
    host: str,
    port: int,
    *,
    sock: socket.socket | None,
    workers: int,
    header_timeout: float,
    read_timeout: float | None,
    drain: Drain | None,
    drain_on_signal: bool,
    task_status: trio.TaskStatus[str],
    app_options: dict[str, Any],
) -> None:
    from ..transports._http.server._app import StreamableHTTPApp, serve_http_app

    if workers != 1:
        from ._workers import DEFAULT_WORKER_GRACE, serve_workers

        await serve_workers(
            cast("WorkerTarget", server),
            workers,
            host,
            port,
            header_timeout=header_timeout,
            read_timeout=read_timeout,
            app_options=app_options,
            drain_grace=DEFAULT_WORKER_GRACE if drain is None else drain.grace,
            drain_delay=0.0 if drain is None else drain.delay,
            task_status=task_status,
        )
        return
    if isinstance(server, StreamableHTTPApp):
        if app_options:
            raise TypeError("app options cannot be applied to a ready StreamableHTTPApp")
        app = server
    elif hasattr(server, "make_protocol"):
        app = http_app(cast("SessionServer", server), **app_options)
    else:
        from ._workers import build_app, load_target, resolve_target

        # "module:name" or a factory, served in this process.
        loaded = load_target(resolve_target(server)) if isinstance(server, str) else server
        app = build_app(loaded, app_options, http_app)
    await serve_http_app(
        app,
        host,
        port,
        header_timeout=header_timeout,
        read_timeout=read_timeout,
        drain=drain,
        drain_on_signal=drain_on_signal,
        sock=sock,
        task_status=task_status,
    )


def check_port(port: int) -> None:
    """Refuse a port no socket can have.

    Raises:
        ValueError: *port* is not an integer from 0 to 65535.
    """
    if type(port) is not int or not 0 <= port <= 65535:
        raise ValueError(f"the port must be an integer from 0 to 65535, not {port!r}")


def cannot_listen(host: str, port: int, reason: BaseException | str) -> str:
    """``cannot listen on 127.0.0.1:8765: address already in use``: one line
    for a bind that failed, with the system's words for why."""
    if isinstance(reason, OSError):
        # The plain strerror: socket.create_server adds the address to it.
        code = reason.errno
        why = os.strerror(code) if code is not None and code > 0 else reason.strerror
        reason = why or str(reason) or type(reason).__name__
    elif isinstance(reason, BaseException):
        reason = str(reason)
    shown = f"[{host}]" if ":" in host else host
    return f"cannot listen on {shown}:{port}: {reason[:1].lower()}{reason[1:]}"


def parse_http_option(argv: Sequence[str]) -> tuple[list[str], tuple[str, int] | None]:
    """Split ``--http HOST:PORT`` (or ``--http=HOST:PORT``) out of *argv*.

    Returns the other arguments and ``(host, port)``, or None without the
    option. An IPv6 host is written in brackets (``--http [::1]:8000``). Raises
    SystemExit with a usage message on a malformed address.
    """
    rest: list[str] = []
    address: str | None = None
    items = iter(argv)
    for arg in items:
        if arg == "--http":
            address = next(items, None)
            if address is None:
                raise SystemExit("--http needs HOST:PORT (port 0 picks a free port)")
        elif arg.startswith("--http="):
            address = arg.partition("=")[2]
        else:
            rest.append(arg)
    if address is None:
        return rest, None
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise SystemExit(f"--http needs HOST:PORT, not {address!r}")
    return rest, (host.strip("[]"), int(port))


def run_http(
    server: SessionServer | StreamableHTTPApp | WorkerTarget,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    workers: int = 1,
    **app_options: Any,
) -> None:
    """Serve *server* over Streamable HTTP at ``/mcp`` in a fresh Trio run (for scripts).

    Prints ``MCP over Streamable HTTP at http://HOST:PORT/mcp`` on stderr once
    listening (port 0 picks a free port: this line says which; with
    *workers*, once every worker listens). Returns on Ctrl+C or SIGTERM.
    When the address cannot be bound it prints one line instead (``cannot
    listen on 127.0.0.1:8765: address already in use``) and exits with status
    1 (``SystemExit``); :func:`serve_http` raises the ``OSError`` itself.
    *workers*: see :func:`serve_http`, which says what *server* must then be
    (an import path or an importable factory, e.g. ``run_http(build_server,
    workers=4)`` under ``if __name__ == "__main__":``). *app_options*: see
    :func:`http_app`.

    Cancellation: Ctrl+C or SIGTERM cancels the run; sessions shut down
    (bounded), and worker processes are stopped and reaped.

    Spec: HT-01.
    """

    try:
        check_port(port)
    except ValueError as exc:
        raise SystemExit(cannot_listen(host, port, exc)) from None
    listening = False

    async def main() -> None:
        # The nursery would wrap a bind failure in a group: unwrapped, it is
        # the OSError that the one line below reports.
        async with unwrapping(), trio.open_nursery() as nursery:
            if threading.current_thread() is threading.main_thread():
                await nursery.start(_stop_on_signal, nursery.cancel_scope)
            url = await nursery.start(
                lambda task_status: serve_http(
                    server, host, port, workers=workers, task_status=task_status, **app_options
                )
            )
            nonlocal listening
            listening = True
            print(f"MCP over Streamable HTTP at {url}/mcp", file=sys.stderr, flush=True)

    try:
        with contextlib.suppress(KeyboardInterrupt):
            trio.run(main)
    except OSError as exc:
        if listening:
            raise
        raise SystemExit(cannot_listen(host, port, exc)) from None


# -------------------------------------------------------------- WebSocket


async def serve_websocket(
    server: SessionServer,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    allowed_hosts: Collection[str] | None = None,
    allowed_origins: Collection[str] | None = None,
    max_message_size: int = WEBSOCKET_MAX_MESSAGE_SIZE,
    handshake_timeout: float = HANDSHAKE_TIMEOUT,
    close_timeout: float = CLOSE_TIMEOUT,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    **session_options: Any,
) -> None:
    """Serve *server* over WebSocket; ``task_status.started`` gets ``ws://host:port``.

    Each connection is one session. The connection options are those of
    :func:`~trio_mcp.transports.serve_websocket_transports` (Origin and Host
    policy, the ``mcp`` subprotocol, the handshake and close bounds);
    *session_options* go to :func:`serve_session` (e.g. ``keepalive_interval``).

    Raises:
        OSError: the address cannot be bound, raised as itself (never inside
            an exception group), before ``task_status.started``.
        ValueError: *port* is outside 0-65535; *sock* given with a *host*,
            a *port* or *workers*.

    Cancellation: runs until cancelled; open sessions are then cancelled.

    Spec: TR-03.
    """
    from ..transports._websocket import serve_websocket_transports

    check_port(port)

    async def serve(transport: WebSocketTransport) -> None:
        await serve_session(server, transport, **session_options)

    tasks = getattr(server, "tasks", None)
    serving = getattr(server, "serving", None)
    async with (
        unwrapping(),
        serving()
        if serving is not None
        else tasks.serving()
        if tasks is not None
        else contextlib.nullcontext(),
    ):
        await serve_websocket_transports(
            serve,
            host,
            port,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            max_message_size=max_message_size,
            handshake_timeout=handshake_timeout,
            close_timeout=close_timeout,
            task_status=task_status,
        )
