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
import sys
from typing import Any, cast

import trio
from hypercorn.trio import serve
from scaleout_app import build

from trio_mcp import http_app
from trio_mcp.transports import Drain
from trio_mcp.transports._http.server._app import hypercorn_config
from trio_mcp.transports._http.server._drain import drain_on_sigterm


async def main(fd: int) -> None:
    # Behind the load balancer the Host is the balancer's, not this socket's.
    allowed = os.environ.get("SCALEOUT_ALLOWED_HOSTS")
    app = http_app(build(), allowed_hosts=allowed.split(",") if allowed else None)
    drain = Drain(
        grace=float(os.environ.get("SCALEOUT_GRACE", "10")),
        delay=float(os.environ.get("SCALEOUT_DELAY", "0")),
    )
    config = hypercorn_config()
    config.bind = [f"fd://{fd}"]
    config.graceful_timeout = drain.delay + drain.grace + 5.0
    stop_accepting = trio.Event()
    async with app.run(), trio.open_nursery() as nursery:
        nursery.start_soon(drain.run, app, stop_accepting, nursery.cancel_scope)
        await nursery.start(drain_on_sigterm, drain)
        await nursery.start(
            lambda task_status: serve(
                cast(Any, app),
                config,
                shutdown_trigger=stop_accepting.wait,
                task_status=task_status,
                mode="asgi",
            )
        )
        print(f"ready {os.getpid()}", flush=True)
    print(f"drained {os.getpid()}: {', '.join(drain.steps)}", flush=True)


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]))
