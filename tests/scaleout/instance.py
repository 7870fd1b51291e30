"""One instance of the cluster: ``python instance.py FD`` serves
``scaleout_app:build`` over HTTP on the listening socket it inherited as
descriptor *FD* (the cluster keeps that socket, so a restarted instance has the
same port and connections made meanwhile wait in its queue), and drains on
SIGTERM. Its configuration is its environment (see ``scaleout_app``) plus
``SCALEOUT_GRACE`` and ``SCALEOUT_DELAY``, the drain's seconds, and
``SCALEOUT_ALLOWED_HOSTS`` (comma-separated), the Host values clients send:
the load balancer's address.

It prints ``ready <pid>`` once it listens.
"""

from __future__ import annotations

import os
import socket
import sys

import trio
from scaleout_app import build

from trio_mcp import serve_http
from trio_mcp.transports import Drain


async def main(fd: int) -> None:
    # Behind the load balancer the Host is the balancer's, not this socket's.
    allowed = os.environ.get("SCALEOUT_ALLOWED_HOSTS")
    drain = Drain(
        grace=float(os.environ.get("SCALEOUT_GRACE", "10")),
        delay=float(os.environ.get("SCALEOUT_DELAY", "0")),
    )
    with socket.socket(fileno=fd) as sock:
        async with trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: serve_http(
                    build(),
                    sock=sock,
                    drain=drain,
                    drain_on_signal=True,
                    allowed_hosts=allowed.split(",") if allowed else None,
                    task_status=task_status,
                )
            )
            print(f"ready {os.getpid()}", flush=True)
    print(f"drained {os.getpid()}: {', '.join(drain.steps)}", flush=True)


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]))
