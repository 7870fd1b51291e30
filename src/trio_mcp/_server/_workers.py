"""Scale-out: one Streamable HTTP server as N worker processes on one listening socket.

Theory of operation. The 2026-07-28 era keeps no server state between requests,
so a server can run as several processes behind anything that spreads requests;
the simplest spreader is the kernel itself. :func:`serve_workers` binds and
listens on one TCP socket in the parent (so port 0 works, and the URL is known
before any worker starts), then starts *N* worker processes that inherit that
socket: each runs its own Trio loop with hypercorn's Trio worker accepting on
it, so the kernel hands each new connection to whichever worker accepts first.

How the server reaches a worker. A worker is a fresh interpreter (a spawn, never
a fork: forking a process that runs a Trio loop, its threads and its I/O
manager, is unsafe), so the :class:`~trio_mcp.Server` cannot be handed over as
an object. Each worker imports it instead, from a *target* (:data:`WorkerTarget`):

* an import path ``"package.module:name"``, where *name* (dots allowed) is a
  ``Server``, a ``StreamableHTTPApp``, or a zero-argument callable returning one;
* or such a callable itself, when it is importable by its ``__module__`` and
  ``__qualname__`` (a module-level function, not a lambda or a nested function).

The worker runs with the parent's ``sys.path`` and working directory, so a
module the parent imported is found. A target in the script being run
(``__main__``) works as with :mod:`multiprocessing`'s spawn: the worker loads that
file as ``__mp_main__``, so its ``if __name__ == "__main__":`` block (which must
guard the ``serve_http`` call) does not run again. Every worker builds its own
server from the target: module-level state (counters, caches, subscriptions) is
per worker. *app_options* (those of :func:`~trio_mcp.http_app`) are pickled to
each worker, so they must be picklable.

What needs state across requests (each worker has its own memory):

* ``requestState`` (PT-08): a retry may reach another worker, so every worker
  must sign with the same key. Unless ``TRIO_MCP_REQUEST_STATE_KEY`` is already
  set, the supervisor sets it, for its workers only, to a fresh random key, so
  the workers of one run accept each other's states (and a state issued before
  a restart is refused). Set it yourself for a key that outlives a restart.
  ``single_use`` needs a shared nonce store (``trio_mcp.bus.RedisNonceStore``).
* ``subscriptions/listen`` and resource subscriptions hear only changes made in
  their own worker, unless the server has a bus every worker shares
  (``Server(bus=RedisBus(url))``, :mod:`trio_mcp.bus`).
* handshake-era (``initialize``) sessions live in the worker that created them:
  a request for a session another worker holds is answered 404. Serve them
  with one worker, or with ``stateless=True``, or put a load balancer with
  session affinity (``Mcp-Session-Id``) in front of one port per worker.

Lifetime and shutdown. Startup reports the URL once every worker listens.
Cancelling :func:`serve_workers` sends SIGTERM to every worker it started,
waits up to *stop_timeout* seconds for each to finish (a worker drains: its
readiness goes false, it stops accepting, completes its listen streams, gives
the requests in flight *drain_grace* seconds, closes its handshake-era
sessions and cancels the rest, then leaves the server's lifespan; see
:class:`~trio_mcp.transports.Drain`), then sends SIGKILL and reaps it: no
worker outlives the call. A worker
also stops on its own when its stdin (a pipe from the parent) reaches end of
input, so workers do not outlive a parent killed with SIGKILL. Workers ignore
SIGINT: Ctrl+C reaches the whole process group, and the parent does the
stopping. A worker that exits while serving (a crash, an OOM kill) ends the
whole server: the others are stopped and :class:`WorkerExited` is raised.

Spec: ST-03 (no request tied to a process), PT-08 (one key for every worker).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import logging
import os
import pickle
import secrets
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import trio

from ..protocol._errors import MCPError
from ._request_state import KEY_ENV

logger = logging.getLogger("trio_mcp.http.workers")

#: What a worker builds its server from: ``"module:name"`` or an importable
#: zero-argument callable (see the module docstring).
WorkerTarget = str | Callable[[], Any]

#: Seconds a worker's requests in flight get to finish when it drains, unless
#: ``serve_http(..., drain=Drain(grace=...))`` says otherwise.
DEFAULT_WORKER_GRACE = 3.0

#: The environment variable a worker's index is given in (0 to N-1).
WORKER_INDEX_ENV = "TRIO_MCP_WORKER_INDEX"

# Set in a worker process: a serve_http(..., workers=N) reached again there is a
# script without its __main__ guard, which would spawn workers without end.
_in_worker = False

# The worker's first code: take the parent's import path (from argv, so the
# package itself is importable), then hand over to _worker_main with the
# server-to-app function (given, so this module need not import _entry, which
# imports it).
_BOOTSTRAP = (
    "import json, sys; header = json.loads(sys.argv[1]); sys.path[:] = header['path']; "
    "from trio_mcp._server._entry import http_app; "
    "from trio_mcp._server._workers import _worker_main; _worker_main(header, http_app)"
)


class WorkerExited(MCPError, RuntimeError):
    """A worker process exited on its own (while starting or serving); the
    others were stopped. ``returncode`` is its exit status (negative: a signal)."""

    def __init__(self, index: int, pid: int, returncode: int | None, starting: bool) -> None:
        when = "before it listened" if starting else "while serving"
        super().__init__(f"HTTP worker {index} (pid {pid}) exited {when}, status {returncode}")
        self.index = index
        self.pid = pid
        self.returncode = returncode


@attrs.frozen
class _Target:
    module: str
    qualname: str
    #: The script's file when *module* is ``__main__`` (loaded as ``__mp_main__``).
    main_path: str | None


@attrs.frozen
class _WorkerConfig:
    """What a worker is sent on its stdin (pickled)."""

    target: _Target
    host: str
    app_options: dict[str, Any]
    header_timeout: float
    read_timeout: float | None
    listen_fd: int
    ready_fd: int
    index: int
    #: The worker's drain on SIGTERM: seconds of grace, seconds of delay.
    drain_grace: float = DEFAULT_WORKER_GRACE
    drain_delay: float = 0.0


def resolve_target(target: object) -> _Target:
    """Where a worker finds *target*; TypeError or ValueError when it cannot."""
    if isinstance(target, str):
        module, sep, qualname = target.partition(":")
        if not sep or not module or not qualname:
            raise ValueError(f"a worker target is 'module:name', not {target!r}")
        if module == "__main__":
            return _Target(module, qualname, _main_path())
        return _Target(module, qualname, None)
    if hasattr(target, "make_protocol") or not callable(target):
        raise TypeError(
            "with workers > 1 each worker process builds its own server: pass an import "
            "path 'module:name' or an importable zero-argument factory, not the object"
        )
    where: object = getattr(target, "__module__", None)
    name: object = getattr(target, "__qualname__", None)
    if not isinstance(where, str) or not isinstance(name, str) or "<" in name:
        raise TypeError(
            f"the worker factory {target!r} is not importable (define it at module level)"
        )
    return _Target(where, name, _main_path() if where == "__main__" else None)


def _main_path() -> str:
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    if not isinstance(path, str):
        raise TypeError("a worker target in __main__ needs a script file (not -c or a REPL)")
    return os.path.abspath(path)


def load_target(target: _Target) -> Any:
    """Import the object *target* names (in a worker, the script of a ``__main__``
    target was loaded first, by :func:`_load_main`)."""
    obj: Any = importlib.import_module(target.module)
    for part in target.qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _load_main(path: str) -> None:
    """Run the parent's script as ``__mp_main__``, standing in for ``__main__``."""
    spec = importlib.util.spec_from_file_location("__mp_main__", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["__mp_main__"] = module
    # The target and the pickled options name the script's objects as __main__.X.
    sys.modules["__main__"] = module
    spec.loader.exec_module(module)


def build_app(obj: Any, app_options: Mapping[str, Any], http_app: Callable[..., Any]) -> Any:
    """The ASGI app for a loaded target: an app as is, a server through *http_app*
    (``trio_mcp.http_app``), a factory called first."""
    from ..transports._http.server._app import StreamableHTTPApp

    if not isinstance(obj, StreamableHTTPApp) and not hasattr(obj, "make_protocol"):
        if not callable(obj):
            raise TypeError(f"worker target {obj!r} is not a Server, an app or a factory")
        obj = obj()
    if isinstance(obj, StreamableHTTPApp):
        if app_options:
            raise TypeError("app options cannot be applied to a ready StreamableHTTPApp")
        return obj
    if not hasattr(obj, "make_protocol"):
        raise TypeError(f"the worker factory returned {obj!r}, not a Server or an app")
    return http_app(obj, **app_options)


def _listen(host: str, port: int, backlog: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family, backlog=backlog)
    sock.set_inheritable(True)
    return sock


def _url(sock: socket.socket) -> str:
    address, port = sock.getsockname()[:2]
    host = f"[{address}]" if sock.family == socket.AF_INET6 else address
    return f"http://{host}:{port}"


async def serve_workers(
    target: WorkerTarget,
    workers: int,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    header_timeout: float,
    read_timeout: float | None,
    stop_timeout: float | None = None,
    backlog: int = 1024,
    app_options: Mapping[str, Any] | None = None,
    drain_grace: float = DEFAULT_WORKER_GRACE,
    drain_delay: float = 0.0,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve *target* as *workers* processes sharing one listening socket.

    ``task_status.started`` receives the base URL (``http://127.0.0.1:PORT``)
    once every worker listens; port 0 picks a free port (the parent binds it).
    See the module docstring for the target, what each worker shares and what
    it does not.

    Raises:
        TypeError, ValueError: *target* cannot reach a worker, or an option
            cannot be pickled (raised before any process starts).
        WorkerExited: a worker exited by itself; the others were stopped.

    Cancellation:
        Cancelling the call stops every worker: SIGTERM, on which each worker
        drains (:class:`~trio_mcp.transports.Drain` with *drain_grace* and
        *drain_delay*), up to *stop_timeout* seconds each (default: the
        drain's delay and grace plus 2 s, at least 5 s), then SIGKILL; it
        returns (re-raising ``Cancelled``) only once every worker it started
        has been reaped.

    Spec: ST-03, PT-08.
    """
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if stop_timeout is None:
        stop_timeout = max(5.0, drain_delay + drain_grace + 2.0)
    if _in_worker:
        raise RuntimeError(
            "serve_http(..., workers=N) ran inside a worker: guard the call in the "
            "script with `if __name__ == '__main__':`"
        )
    resolved = resolve_target(target)
    options = dict(app_options or {})
    try:
        pickle.dumps(options)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise TypeError(f"app options must be picklable to reach the workers: {exc}") from exc
    env = dict(os.environ)
    # One key for the workers of this run, unless configured (see the module docstring).
    if not env.get(KEY_ENV):  # unset or empty: a sealer would draw its own key
        env[KEY_ENV] = secrets.token_hex(32)
    header = json.dumps({"path": list(sys.path), "main": resolved.main_path})

    with _listen(host, port, backlog) as sock:
        url = _url(sock)
        ready = 0
        all_ready = trio.Event()
        failed = trio.Event()
        failure: list[BaseException] = []

        async def run_one(index: int) -> None:
            nonlocal ready
            read_end, write_end = os.pipe()
            config = _WorkerConfig(
                resolved,
                host,
                options,
                header_timeout,
                read_timeout,
                sock.fileno(),
                write_end,
                index,
                drain_grace,
                drain_delay,
            )
            payload = pickle.dumps(config)
            try:
                process = await trio.lowlevel.open_process(
                    [sys.executable, "-c", _BOOTSTRAP, header],
                    stdin=subprocess.PIPE,
                    pass_fds=(sock.fileno(), write_end),
                    env={**env, WORKER_INDEX_ENV: str(index)},
                )
            except BaseException:
                os.close(read_end)
                raise
            finally:
                os.close(write_end)
            assert process.stdin is not None
            stdin = process.stdin
            answers = trio.lowlevel.FdStream(read_end)
            try:
                with contextlib.suppress(trio.BrokenResourceError):  # it died: see below
                    await stdin.send_all(len(payload).to_bytes(8, "big") + payload)
                # The worker writes one line once it listens, then closes its end.
                if not await _read_line(answers):
                    await process.wait()
                    raise WorkerExited(index, process.pid, process.returncode, starting=True)
                ready += 1
                if ready == workers:
                    all_ready.set()
                await process.wait()
                raise WorkerExited(index, process.pid, process.returncode, starting=False)
            except Exception as exc:
                # The first failure ends the server: the main task stops the others.
                if not failure:
                    failure.append(exc)
                all_ready.set()
                failed.set()
            finally:
                with trio.CancelScope(shield=True):
                    await _stop(process, stop_timeout)
                    await stdin.aclose()
                    await answers.aclose()

        async with trio.open_nursery() as nursery:
            for index in range(workers):
                nursery.start_soon(run_one, index)
            await all_ready.wait()  # or a failure
            if not failure:
                logger.info("serving %s/mcp with %d workers", url, workers)
                task_status.started(url)
                await failed.wait()
            nursery.cancel_scope.cancel(reason="an HTTP worker failed")
    # Only a failure gets here (cancellation passes through the nursery).
    raise failure[0]


async def _read_line(stream: trio.lowlevel.FdStream) -> bytes:
    """Bytes up to the first newline, or b"" when the stream ends before one."""
    data = b""
    while b"\n" not in data:
        chunk = await stream.receive_some(256)
        if not chunk:
            return b""
        data += chunk
    return data


async def _stop(process: trio.Process, grace: float) -> None:
    """SIGTERM, up to *grace* seconds, SIGKILL; return once *process* is reaped."""
    if process.returncode is None:
        process.terminate()
        with trio.move_on_after(grace):
            await process.wait()
    if process.returncode is None:
        logger.warning("HTTP worker pid %d ignored SIGTERM; killing it", process.pid)
        process.kill()
        await process.wait()
    logger.debug("HTTP worker pid %d stopped, status %s", process.pid, process.returncode)


# ------------------------------------------------------------------ the worker


def _worker_main(header: Mapping[str, Any], http_app: Callable[..., Any]) -> None:
    """A worker process's main: read the configuration, import the target, serve."""
    global _in_worker
    _in_worker = True
    # Ctrl+C reaches every process of the terminal's group: the parent stops us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if header.get("main"):
        # The script first, so the pickled options can name its classes.
        _load_main(header["main"])
    size = int.from_bytes(_read_exactly(0, 8), "big")
    config: _WorkerConfig = pickle.loads(_read_exactly(0, size))
    trio.run(_serve_worker, config, http_app)


def _read_exactly(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            raise SystemExit("trio_mcp worker: the parent went away before configuring it")
        data += chunk
    return data


async def _serve_worker(config: _WorkerConfig, http_app: Callable[..., Any]) -> None:
    from hypercorn.trio import serve

    from ..transports._http._common import is_loopback_host
    from ..transports._http.server._app import hypercorn_config
    from ..transports._http.server._drain import Drain

    app = build_app(load_target(config.target), config.app_options, http_app)
    hyper = hypercorn_config(header_timeout=config.header_timeout, read_timeout=config.read_timeout)
    # hypercorn adopts an inherited socket given as fd://N (it re-listens, harmlessly).
    hyper.bind = [f"fd://{config.listen_fd}"]
    # SIGTERM drains this worker (readiness, in-flight, listens, sessions, the rest).
    drain = Drain(grace=config.drain_grace, delay=config.drain_delay)
    hyper.graceful_timeout = drain.delay + drain.grace + 5.0
    stop_accepting = trio.Event()
    async with app.run(), trio.open_nursery() as nursery:
        nursery.start_soon(drain.run, app, stop_accepting, nursery.cancel_scope)
        await nursery.start(_watch_for_stop, drain)
        # The parent knows the URL (it bound the socket): only "listening" matters.
        await nursery.start(
            lambda task_status: serve(
                app,
                hyper,
                shutdown_trigger=stop_accepting.wait,
                task_status=task_status,
                mode="asgi",
            )
        )
        unchecked = not is_loopback_host(config.host) and app.policy.allowed_hosts is None
        if config.index == 0 and unchecked:
            logger.warning("binding %s without allowed_hosts: Host is not validated", config.host)
        os.write(config.ready_fd, f"{os.getpid()}\n".encode())
        os.close(config.ready_fd)


async def _watch_for_stop(
    drain: Any, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Start *drain* on SIGTERM or at the end of stdin (the parent is gone)."""
    parent = trio.lowlevel.FdStream(os.dup(0))
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        task_status.started()
        async with parent, trio.open_nursery() as nursery:

            async def parent_gone() -> None:
                while await parent.receive_some(1024):
                    pass
                nursery.cancel_scope.cancel()

            nursery.start_soon(parent_gone)
            async for _ in signals:
                nursery.cancel_scope.cancel()
                break
    drain.start()
