"""A real ``redis-server`` for the tests, on a unix socket in a temporary directory.

Not a conftest: :func:`running_redis` is a plain context manager, which the
session fixture ``redis_url`` (``tests/conftest.py``) holds for the whole run.
The server listens on no TCP port (``--port 0``), only on
``<directory>/redis.sock``, saves nothing (``--save ''``, ``--appendonly no``),
and is ended by its pid when the context exits. Its pid is in
:func:`session_pids` meanwhile, so the per-test check for orphaned processes
(``tests/conftest.py``) knows that it outlives each test on purpose.

If ``redis-server`` is not installed the Redis tests fail, naming the package
(``apt-get install redis-server``), unless ``TRIO_MCP_SKIP_REDIS=1`` is set: then
they are skipped with that message.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Set to 1 to skip (not fail) the Redis tests where redis-server is missing.
SKIP_VARIABLE = "TRIO_MCP_SKIP_REDIS"
MISSING = (
    "redis-server is not installed: install it (Debian: apt-get install redis-server), "
    f"or set {SKIP_VARIABLE}=1 to skip the Redis tests"
)
#: Seconds the first PING may take to be answered.
START_TIMEOUT = 20.0

#: No TCP port, only the unix socket; nothing saved; in the foreground.
SERVER_OPTIONS = (
    *("--port", "0"),
    *("--unixsocketperm", "700"),
    *("--save", ""),
    *("--appendonly", "no"),
    *("--daemonize", "no"),
)

_session_pids: set[int] = set()


class RedisServerError(Exception):
    """The server could not be started (its output is in the message)."""


def session_pids() -> frozenset[int]:
    """The pids of the servers running now for the whole session."""
    return frozenset(_session_pids)


def redis_binary() -> str | None:
    return shutil.which("redis-server")


def _ping(path: Path) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(START_TIMEOUT)
        client.connect(str(path))
        client.sendall(b"PING\r\n")
        return client.recv(64)


@contextmanager
def running_redis(directory: Path) -> Iterator[str]:
    """Start ``redis-server`` in *directory*; yield its URL (``unix://...``);
    end it (by its pid) on exit."""
    binary = redis_binary()
    if binary is None:
        raise RedisServerError(MISSING)
    sock = directory / "redis.sock"
    process = subprocess.Popen(
        [binary, *SERVER_OPTIONS, "--unixsocket", str(sock), "--dir", str(directory)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    _session_pids.add(process.pid)
    try:
        # The server says when it listens (the words vary a little between
        # versions): read its log up to there, no polling.
        assert process.stdout is not None
        seen: list[bytes] = []
        for line in process.stdout:
            seen.append(line)
            if b"ready to accept connections" in line.lower():
                break
        else:
            log = b"".join(seen).decode(errors="replace")
            raise RedisServerError(f"redis-server exited before it was ready:\n{log}")
        answer = _ping(sock)
        if not answer.startswith(b"+PONG"):
            raise RedisServerError(f"redis-server answered PING with {answer!r}")
        yield f"unix://{sock}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
        _session_pids.discard(process.pid)
