"""The bare limits of bench/all.py: the same round trips with no MCP at all.

Each limit does the work of one ``tools/call`` echo (``{"text": "hello"}`` in,
one text block out) with orjson and plain dicts, on Trio, and nothing else: no
records, no lifecycle, no types, no tool dispatch. They are the practical
ceilings of the transports trio_mcp runs on (``floor.py`` is the other kind of
floor: the session's *shape* with the MCP taken out).

* ``memory``: a Trio memory-channel pair, the server loop inline, one reader
  task on the client (``inmemory.py``'s ``(a) baseline``), sequential and
  64 in flight.
* ``stdio``: a child process (``limits.py echo-server``) reading NDJSON on
  stdin and answering on stdout, one line per message, with non-blocking
  ``os.read``/``os.write`` on the pipes as trio_mcp's ``LineChannel`` does; the
  client writes directly too and has one reader task. Sequential and 64 in
  flight.
* ``http``: hypercorn (Trio worker) serving a bare ASGI app that decodes the
  POSTed JSON-RPC request and answers the echo as ``application/json``, driven
  by httpx on Trio (one ``AsyncClient``, keep-alive), sequential and 32 in
  flight. The server runs in its own process.

Run: ``python bench/limits.py memory|stdio|http [--calls N] [--concurrency N]``;
prints one JSON object (``sequential_calls_s``, ``concurrent_calls_s``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import trio

_here = os.path.dirname(os.path.abspath(__file__))
# Named like nothing in the standard library, but the directory also holds
# bench/streamable_http.py's neighbours; keep it off the path for hypercorn's
# and httpx's imports, then import inmemory by path when needed.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

WARMUP = 200
SCRIPT = os.path.abspath(__file__)
ARGUMENTS = {"text": "hello"}


def _echo_response(request: dict[str, Any]) -> dict[str, Any]:
    text = request["params"]["arguments"]["text"]
    return {
        "jsonrpc": "2.0",
        "id": request["id"],
        "result": {"content": [{"type": "text", "text": text}], "isError": False},
    }


def _request(request_id: int) -> bytes:
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": ARGUMENTS},
        }
    )


def _check(response: dict[str, Any]) -> None:
    if response["result"]["content"][0]["text"] != "hello":
        raise AssertionError(f"wrong echo: {response!r}")


async def _rates(
    call: Callable[[], Awaitable[None]], calls: int, concurrency: int
) -> dict[str, float]:
    for _ in range(WARMUP):
        await call()
    t0 = time.perf_counter()
    for _ in range(calls):
        await call()
    sequential = calls / (time.perf_counter() - t0)
    per_task = calls // concurrency

    async def worker() -> None:
        for _ in range(per_task):
            await call()

    t0 = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(concurrency):
            nursery.start_soon(worker)
    concurrent = per_task * concurrency / (time.perf_counter() - t0)
    return {"sequential_calls_s": sequential, "concurrent_calls_s": concurrent}


# ------------------------------------------------------------------ memory


def limit_memory(calls: int, concurrency: int) -> dict[str, float]:
    sys.path.insert(0, _here)
    from inmemory import BaselineClient

    async def main() -> dict[str, float]:
        async with trio.open_nursery() as nursery:
            client = BaselineClient(nursery)

            async def call() -> None:
                _check({"result": await client.call_tool("echo", ARGUMENTS)})

            try:
                return await _rates(call, calls, concurrency)
            finally:
                await client.aclose()

    return trio.run(main)


# ------------------------------------------------------------------ stdio


class _Lines:
    """Newline framing on a non-blocking fd pair, reading and writing directly."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        self.read_fd = read_fd
        self.write_fd = write_fd
        self._buffer = b""

    async def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.write_fd, view) :]
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self.write_fd)

    async def lines(self) -> Any:
        while True:
            try:
                chunk = os.read(self.read_fd, 1 << 16)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self.read_fd)
                continue
            if not chunk:
                return
            *complete, self._buffer = (self._buffer + chunk).split(b"\n")
            for line in complete:
                yield line


def echo_server() -> None:
    """The child of the stdio limit: NDJSON echo on fds 0 and 1."""

    async def main() -> None:
        lines = _Lines(0, 1)
        async for line in lines.lines():
            if line:
                await lines.write(orjson.dumps(_echo_response(orjson.loads(line))) + b"\n")

    trio.run(main)


def limit_stdio(calls: int, concurrency: int) -> dict[str, float]:
    async def main() -> dict[str, float]:
        process = await trio.lowlevel.open_process(
            [sys.executable, SCRIPT, "echo-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert process.stdin is not None
        assert process.stdout is not None
        lines = _Lines(process.stdout.fileno(), process.stdin.fileno())  # type: ignore[attr-defined]
        waiting: dict[int, tuple[trio.lowlevel.Task, list[Any]]] = {}
        ids = itertools.count(1)

        async def reader() -> None:
            async for line in lines.lines():
                response = orjson.loads(line)
                task, box = waiting.pop(response["id"])
                box.append(response)
                trio.lowlevel.reschedule(task)

        async def call() -> None:
            request_id = next(ids)
            box: list[Any] = []
            waiting[request_id] = (trio.lowlevel.current_task(), box)
            await lines.write(_request(request_id) + b"\n")
            await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.FAILED)
            _check(box[0])

        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            result = await _rates(call, calls, concurrency)
            await process.stdin.aclose()
            await process.wait()
            nursery.cancel_scope.cancel()
        return result

    return trio.run(main)


# ------------------------------------------------------------------ http


def http_server() -> None:
    """The server of the HTTP limit: hypercorn on Trio, a bare ASGI app; prints its URL."""
    from hypercorn.config import Config
    from hypercorn.trio import serve

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        payload = orjson.dumps(_echo_response(orjson.loads(body)))
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})

    async def main() -> None:
        config = Config()
        config.bind = ["127.0.0.1:0"]
        config.loglevel = "WARNING"
        config.accesslog = None
        with trio.open_signal_receiver(signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                binds = await nursery.start(serve, app, config)
                print(f"{binds[0]}/mcp", flush=True)
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    break

    trio.run(main)


def limit_http(calls: int, concurrency: int) -> dict[str, float]:
    import httpx

    proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "http-server"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url:
            raise SystemExit("the hypercorn limit server did not start")

        async def main() -> dict[str, float]:
            ids = itertools.count(1)
            limits = httpx.Limits(
                max_connections=concurrency, max_keepalive_connections=concurrency
            )
            headers = {"content-type": "application/json", "accept": "application/json"}
            async with httpx.AsyncClient(limits=limits, headers=headers) as client:

                async def call() -> None:
                    response = await client.post(url, content=_request(next(ids)))
                    _check(orjson.loads(response.content))

                return await _rates(call, calls, concurrency)

        return trio.run(main)
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


LIMITS = {"memory": limit_memory, "stdio": limit_stdio, "http": limit_http}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "echo-server":
        echo_server()
        return
    if len(sys.argv) > 1 and sys.argv[1] == "http-server":
        http_server()
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("limit", choices=list(LIMITS))
    parser.add_argument("--calls", type=int, default=3200)
    parser.add_argument("--concurrency", type=int, default=None, help="default: 64, http 32")
    args = parser.parse_args()
    concurrency = args.concurrency or (32 if args.limit == "http" else 64)
    print(json.dumps(LIMITS[args.limit](args.calls, concurrency)))


if __name__ == "__main__":
    main()
