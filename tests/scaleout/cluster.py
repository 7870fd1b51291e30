"""A cluster on loopback: redis-server, N instances of ``scaleout_app`` and
HAProxy in front, with a bounded load and a rolling restart.

Run by ``scripts/cluster`` (``--instances N --duration S --rolling-restart``)
and, reduced, by ``test_cluster.py``. Every process is a real one: Debian's
``redis-server`` and ``haproxy``, each instance a fresh interpreter
(``instance.py``). Each instance serves on a listening socket the cluster
made (port 0) and keeps: a restarted instance has the same port, so HAProxy's
configuration is written once, and a connection made while it restarts waits
in the socket's queue instead of being refused.

The load (:class:`Load`):

* 2026-07-28 callers call ``whoami`` in a loop; every call must be answered;
* handshake-era callers (``reinitialize=True``) do the same on their session,
  which HAProxy keeps on one instance (sticky on ``Mcp-Session-Id``); when
  that instance restarts, the call that meets the 404 fails and the client
  initializes again, on another instance (counted apart);
* 2026-07-28 listeners hold a ``subscriptions/listen`` stream each, opened
  again whenever a draining instance completes it;
* a toucher calls ``touch`` (a resource update published on the Redis bus by
  whichever instance serves it), one round at a time, and waits for every
  listener to hear of it: a notice, or a stream opened again after the round
  began (a client that listens anew reads the resource anew). A listener that
  has heard nothing within :data:`HEARD_WITHIN` seconds is one notification
  lost.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
for path in (str(HERE), str(TESTS)):
    if path not in sys.path:
        sys.path.insert(0, path)

from redis_server import running_redis  # noqa: E402
from scaleout_app import REDIS_ENV, URI  # noqa: E402

from trio_mcp import open_http_client  # noqa: E402
from trio_mcp.protocol import TaskState  # noqa: E402

#: The environment variable of the request state key (as trio_mcp reads it).
REQUEST_STATE_KEY_ENV = "TRIO_MCP_REQUEST_STATE_KEY"
#: The request state key every instance starts with.
KEY = "cluster-key-0123456789abcdef"

#: Seconds a listener has to hear of a touch.
HEARD_WITHIN = 5.0
#: HAProxy's health check interval, in milliseconds.
CHECK_INTERVAL_MS = 200
#: Seconds a draining instance stays reachable after its readiness went false:
#: past HAProxy's three failed checks (haproxy.cfg's ``fall 3``).
DELAY = 4 * CHECK_INTERVAL_MS / 1000

#: The HAProxy configuration the cluster uses, the one the how-to shows
#: (``str.format`` fields: ``{admin}``, the runtime API's socket; ``{frontend}``,
#: the descriptor of the listening socket HAProxy inherits; ``{interval}``,
#: the health check's milliseconds; ``{servers}``, one line per instance).
HAPROXY_CONFIG = (TESTS.parent / "docs" / "samples" / "haproxy.cfg").read_text()


@attrs.define
class Instance:
    index: int
    sock: socket.socket
    process: trio.Process | None = None
    restarts: int = 0
    #: Environment variables of this instance's next start, over the cluster's.
    env: dict[str, str] = attrs.Factory(dict)

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])


@attrs.define
class Figures:
    modern_calls: int = 0
    modern_failed: int = 0
    legacy_calls: int = 0
    legacy_failed: int = 0
    reinitializations: int = 0
    touches: int = 0
    tasks: int = 0
    tasks_completed: int = 0
    tasks_cancelled: int = 0
    tasks_unexplained: int = 0
    notices: int = 0
    relistens: int = 0
    lost: int = 0
    restarts: list[float] = attrs.Factory(list)
    failures: list[str] = attrs.Factory(list)


def _listening_socket() -> socket.socket:
    sock = socket.create_server(("127.0.0.1", 0), backlog=1024)
    sock.set_inheritable(True)
    return sock


class Cluster:
    """The processes (see the module docstring)."""

    def __init__(
        self,
        directory: Path,
        instances: int,
        *,
        grace: float = 10.0,
        delay: float = DELAY,
        env: dict[str, str] | None = None,
    ) -> None:
        self.directory = directory
        #: Environment variables of every instance (the request state key ring).
        self.env = {REQUEST_STATE_KEY_ENV: KEY, **(env or {})}
        self.grace = grace
        self.delay = delay
        self.instances = [Instance(i, _listening_socket()) for i in range(instances)]
        self.frontend = _listening_socket()
        self.redis_url = ""
        self.haproxy: trio.Process | None = None
        self.log = open(directory / "instances.log", "ab")  # noqa: SIM115

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.frontend.getsockname()[1]}/mcp"

    def instance_url(self, instance: Instance) -> str:
        """The instance's own address, past the balancer."""
        return f"http://127.0.0.1:{instance.port}/mcp"

    def haproxy_config(self) -> str:
        servers = "\n".join(
            f"    server i{i.index} 127.0.0.1:{i.port} check" for i in self.instances
        )
        return HAPROXY_CONFIG.format(
            admin=self.directory / "haproxy.sock",
            frontend=self.frontend.fileno(),
            interval=CHECK_INTERVAL_MS,
            servers=servers,
        )

    async def start_instance(self, instance: Instance) -> None:
        env = {
            **os.environ,
            REDIS_ENV: self.redis_url,
            "SCALEOUT_GRACE": str(self.grace),
            "SCALEOUT_DELAY": str(self.delay),
            # The balancer's address, and the instance's own for a test
            # that speaks to one instance alone.
            "SCALEOUT_ALLOWED_HOSTS": (
                f"127.0.0.1:{self.frontend.getsockname()[1]},127.0.0.1:{instance.port}"
            ),
            "PYTHONPATH": os.pathsep.join([str(HERE), str(TESTS), *sys.path]),
            **self.env,
            **instance.env,
        }
        process = await trio.lowlevel.open_process(
            [sys.executable, str(HERE / "instance.py"), str(instance.sock.fileno())],
            pass_fds=(instance.sock.fileno(),),
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
        )
        assert process.stdout is not None
        line = b""
        while not line.endswith(b"\n"):
            chunk = await process.stdout.receive_some(256)
            if not chunk:
                raise RuntimeError(f"instance {instance.index} exited before it was ready")
            line += chunk
        instance.process = process

    async def stop_instance(self, instance: Instance) -> None:
        """SIGTERM (the instance drains), then wait for it to exit."""
        process = instance.process
        if process is None:
            return
        process.send_signal(signal.SIGTERM)
        with trio.move_on_after(self.delay + self.grace + 10):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
        if process.stdout is not None:
            await process.stdout.aclose()
        instance.process = None

    async def start_haproxy(self) -> None:
        if shutil.which("haproxy") is None:
            raise RuntimeError(
                "haproxy is not installed: install it (Debian: apt-get install haproxy; "
                "scripts/test and scripts/cluster do when run as root)"
            )
        config = self.directory / "haproxy.cfg"
        config.write_text(self.haproxy_config())
        self.haproxy = await trio.lowlevel.open_process(
            ["haproxy", "-db", "-f", str(config)],
            pass_fds=(self.frontend.fileno(),),
            stdout=self.log,
            stderr=self.log,
        )

    async def servers_up(self) -> dict[str, str]:
        """HAProxy's view of each instance: ``UP``, ``DOWN``, ..."""
        stream = await trio.open_unix_socket(str(self.directory / "haproxy.sock"))
        async with stream:
            await stream.send_all(b"show stat\n")
            data = b""
            while chunk := await stream.receive_some(65536):
                data += chunk
        status: dict[str, str] = {}
        for row in data.decode().splitlines():
            fields = row.split(",")
            if len(fields) > 17 and fields[0] == "instances" and fields[1].startswith("i"):
                status[fields[1]] = fields[17]
        return status

    async def wait_up(self, names: set[str] | None = None) -> None:
        """Return once HAProxy sees every instance (or those *names*) up."""
        wanted = names or {f"i{i.index}" for i in self.instances}
        while True:
            try:
                status = await self.servers_up()
            except OSError:
                status = {}
            if all(status.get(name, "").startswith("UP") for name in wanted):
                return
            # HAProxy's own checks decide; its interval is the pace to look at.
            await trio.sleep(CHECK_INTERVAL_MS / 1000)

    async def restart(self, instance: Instance) -> float:
        began = time.monotonic()
        await self.stop_instance(instance)
        await self.start_instance(instance)
        instance.restarts += 1
        await self.wait_up({f"i{instance.index}"})
        return time.monotonic() - began

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Cluster]:
        with running_redis(self.directory) as redis_url:
            self.redis_url = redis_url
            try:
                for instance in self.instances:
                    await self.start_instance(instance)
                await self.start_haproxy()
                with trio.fail_after(30):
                    await self.wait_up()
                yield self
            finally:
                with trio.CancelScope(shield=True):
                    for instance in self.instances:
                        await self.stop_instance(instance)
                    if self.haproxy is not None:
                        self.haproxy.terminate()
                        await self.haproxy.wait()
                    for instance in self.instances:
                        instance.sock.close()
                    self.frontend.close()
                    self.log.close()


class Load:
    """The clients (see the module docstring)."""

    def __init__(self, url: str, *, modern: int = 4, legacy: int = 2, listeners: int = 3) -> None:
        self.url = url
        self.modern = modern
        self.legacy = legacy
        self.listeners = listeners
        self.figures = Figures()
        self.heard = [0] * listeners
        self._heard = trio.Event()
        self.stop = trio.Event()

    def _hear(self, index: int) -> None:
        self.heard[index] += 1
        self._heard.set()
        self._heard = trio.Event()

    def _failed(self, kind: str, error: BaseException) -> None:
        self.figures.failures.append(f"{kind}: {type(error).__name__}: {error}")

    async def modern_caller(self) -> None:
        async with open_http_client(self.url, era="modern", remember_era=False) as client:
            while not self.stop.is_set():
                try:
                    await client.call_tool("whoami", {})
                except Exception as error:
                    self.figures.modern_failed += 1
                    self._failed("2026-07-28 call", error)
                self.figures.modern_calls += 1

    async def legacy_caller(self) -> None:
        async with open_http_client(
            self.url, era="legacy", remember_era=False, reinitialize=True
        ) as client:
            while not self.stop.is_set():
                try:
                    await client.call_tool("whoami", {})
                except Exception:
                    self.figures.legacy_failed += 1
                self.figures.legacy_calls += 1
            transport: Any = client.session.transport
            self.figures.reinitializations += transport.reinitializations

    async def listener(self, index: int, ready: trio.Event) -> None:
        async with open_http_client(self.url, era="modern", remember_era=False) as client:
            first = True
            while not self.stop.is_set():
                async with client.resource_updates(URI) as updates:
                    # Listening anew: whatever changed before is read anew.
                    self._hear(index)
                    if first:
                        ready.set()
                        first = False
                    else:
                        self.figures.relistens += 1
                    async for _ in updates:
                        self._hear(index)
                        self.figures.notices += 1

    async def tasker(self) -> None:
        """Tasks one at a time, each waited for (polled on any instance): short
        ones, and every fourth longer than a drain, so that an instance
        restarting under it cancels it."""
        async with open_http_client(self.url, era="modern", remember_era=False) as client:
            while not self.stop.is_set():
                self.figures.tasks += 1
                seconds = 0.3 if self.figures.tasks % 4 else 6.0
                try:
                    handle = await client.call_tool("job", {"seconds": seconds}, as_task=True)
                    record = await handle.wait()
                except Exception as error:
                    self.figures.tasks_unexplained += 1
                    self._failed("task", error)
                    continue
                if record.state is TaskState.COMPLETED:
                    self.figures.tasks_completed += 1
                elif record.state is TaskState.CANCELLED and record.status_message:
                    # Its instance drained: cancelled, and told why.
                    self.figures.tasks_cancelled += 1
                else:
                    self.figures.tasks_unexplained += 1
                    self._failed("task", RuntimeError(f"{record.state}: {record.status_message}"))

    async def toucher(self) -> None:
        async with open_http_client(self.url, era="modern", remember_era=False) as client:
            while not self.stop.is_set():
                before = list(self.heard)
                try:
                    await client.call_tool("touch", {})
                except Exception as error:
                    self.figures.modern_failed += 1
                    self._failed("touch", error)
                    continue
                finally:
                    self.figures.modern_calls += 1
                self.figures.touches += 1
                with trio.move_on_after(HEARD_WITHIN):
                    while any(h <= b for h, b in zip(self.heard, before, strict=True)):
                        await self._heard.wait()
                self.figures.lost += sum(h <= b for h, b in zip(self.heard, before, strict=True))

    async def run(self, duration: float, cluster: Cluster | None, restart: bool) -> Figures:
        async with trio.open_nursery() as listening:
            readies = []
            for index in range(self.listeners):
                ready = trio.Event()
                readies.append(ready)
                listening.start_soon(self.listener, index, ready)
            for ready in readies:
                await ready.wait()
            async with trio.open_nursery() as nursery:
                for _ in range(self.modern):
                    nursery.start_soon(self.modern_caller)
                for _ in range(self.legacy):
                    nursery.start_soon(self.legacy_caller)
                nursery.start_soon(self.toucher)
                nursery.start_soon(self.tasker)
                if restart and cluster is not None:
                    step = duration / (len(cluster.instances) + 1)
                    for instance in cluster.instances:
                        await trio.sleep(step)
                        self.figures.restarts.append(await cluster.restart(instance))
                    await trio.sleep(step)
                else:
                    await trio.sleep(duration)
                self.stop.set()
            # Every caller finished its last call: the listeners are done too.
            listening.cancel_scope.cancel()
        return self.figures


def report(figures: Figures, instances: int, duration: float) -> list[str]:
    lines = [
        f"instances: {instances}, duration: {duration:g} s, "
        f"restarts: {len(figures.restarts)}"
        + (
            f" (each {min(figures.restarts):.2f}-{max(figures.restarts):.2f} s)"
            if figures.restarts
            else ""
        ),
        f"2026-07-28: {figures.modern_calls} calls, {figures.modern_failed} failed",
        f"handshake era: {figures.legacy_calls} calls, {figures.legacy_failed} failed "
        f"(the call meeting a restarted instance's 404), "
        f"{figures.reinitializations} re-initializations",
        f"resource updates: {figures.touches} published, {figures.notices} notices "
        f"received, {figures.relistens} listen streams opened again after a drain",
        f"tasks: {figures.tasks} started, {figures.tasks_completed} completed, "
        f"{figures.tasks_cancelled} cancelled with a reason, "
        f"{figures.tasks_unexplained} otherwise",
    ]
    lines += [f"failure: {line}" for line in figures.failures[:10]]
    lines.append(
        f"{figures.modern_calls} calls, {figures.modern_failed} failed, "
        f"{figures.lost} notifications lost"
    )
    return lines


async def run_cluster(instances: int, duration: float, restart: bool) -> list[str]:
    figures = await measure(instances, duration, restart)
    return report(figures, instances, duration)


async def measure(instances: int, duration: float, restart: bool) -> Figures:
    """Start the cluster, run the load (and the rolling restart), stop it all."""
    with tempfile.TemporaryDirectory(prefix="trio_mcp-cluster-") as directory:
        cluster = Cluster(Path(directory), instances)
        async with cluster.running():
            return await Load(cluster.url).run(duration, cluster, restart)


def main(argv: list[str] | None = None) -> int:
    """``scripts/cluster``: 0 when nothing failed and nothing was lost."""
    parser = argparse.ArgumentParser(
        prog="scripts/cluster",
        description="Run N instances behind HAProxy with Redis, under load, on loopback.",
    )
    parser.add_argument("--instances", type=int, default=3)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--rolling-restart", action="store_true")
    args = parser.parse_args(argv)
    lines = trio.run(run_cluster, args.instances, args.duration, args.rolling_restart)
    for line in lines:
        print(line, flush=True)
    return 0 if lines[-1].endswith(" 0 failed, 0 notifications lost") else 1


if __name__ == "__main__":
    sys.exit(main())
