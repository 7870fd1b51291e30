"""The HTTP server's listen queue holds a burst of connects (reliability D-10).

The kernel completes a TCP handshake on its own and queues the connection until
the server accepts it; past the listen backlog it drops the SYN and the client
retries seconds later, or resets the connection. Hypercorn's default backlog
is 100, so 1,000 sessions reconnecting at one instant had calls fail with
"connection reset". Here the test connects while the server cannot run at all
(blocking connects, no checkpoint in between), so every connection it gets is
one the kernel queued: with a backlog of 100 the 102nd connect would hang.
"""

from __future__ import annotations

import socket

import pytest
import trio
from http_helpers import make_server, running

from trio_mcp.transports._bounds import LISTEN_BACKLOG

BURST = 300


def _somaxconn() -> int:
    with open("/proc/sys/net/core/somaxconn") as f:
        return int(f.read())


@pytest.mark.spec("HT-03")
async def test_a_burst_of_connects_is_queued_while_the_server_is_busy() -> None:
    assert _somaxconn() >= BURST  # the kernel's cap on every backlog (4096 by default)
    assert LISTEN_BACKLOG >= BURST
    async with running(make_server()) as (url, _):
        port = int(url.rsplit(":", 1)[1])
        sockets: list[socket.socket] = []
        try:
            # Synchronous: the server's accept loop never runs during the burst.
            for _ in range(BURST):
                sock = socket.socket()
                sockets.append(sock)
                sock.settimeout(0.5)  # a dropped SYN is retried after 1 s: a timeout
                sock.connect(("127.0.0.1", port))
        finally:
            for sock in sockets:
                sock.close()
            await trio.lowlevel.checkpoint()
        assert len(sockets) == BURST
