"""What one idle handshake-era Streamable HTTP session holds, by tracemalloc.

Opens N sessions on trio_mcp's ASGI application in this process (a real
``initialize`` and ``notifications/initialized`` each, through the
application's own POST handling, no network), leaves them idle, and reports
the Python memory they hold per session: the tracemalloc difference between
before and after, divided by N. Exact to the byte for a given interpreter and
package versions (unlike RSS, which moves in allocator arenas), so it is the
figure issue #16's "idle Streamable HTTP session <= 10 KiB" is read from.
``streamable_http.py`` has the RSS row over real HTTP beside the Python SDK.

``--by lineno`` (or ``filename``) also lists where the memory was allocated,
largest first: what an idle session is made of.

A 2026-07-28 request has no session to keep (each POST is one request), so
only the handshake era has this row.

    .venv/bin/python bench/idle_memory.py [--sessions 1000] [--by lineno] [--top 40]
"""

from __future__ import annotations

import argparse
import gc
import tracemalloc
from typing import Any

import orjson
import trio
import trio.testing

from trio_mcp import Server, http_app

VERSION = "2025-11-25"
HEADERS = [
    (b"host", b"127.0.0.1:8000"),
    (b"accept", b"application/json, text/event-stream"),
    (b"content-type", b"application/json"),
]
INITIALIZE = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
)
INITIALIZED = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})


def make_app() -> Any:
    server = Server("bench", "1.0")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    return http_app(server)


async def post(app: Any, body: bytes, headers: list[tuple[bytes, bytes]]) -> list[Any]:
    """One POST through the ASGI application; its sent messages."""
    sent: list[Any] = []
    delivered = False
    done = trio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            done.set()

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "scheme": "http",
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5555),
    }
    await app(scope, receive, send)
    return sent


async def open_idle_session(app: Any) -> None:
    sent = await post(app, INITIALIZE, HEADERS)
    if sent[0]["status"] != 200:
        raise SystemExit(f"initialize refused: {sent}")
    sid = dict(sent[0]["headers"])[b"mcp-session-id"]
    extra = [(b"mcp-session-id", sid), (b"mcp-protocol-version", VERSION.encode())]
    sent = await post(app, INITIALIZED, HEADERS + extra)
    if sent[0]["status"] != 202:
        raise SystemExit(f"notifications/initialized refused: {sent}")


async def measure(sessions: int, by: str | None, top: int) -> None:
    app = make_app()
    async with app.run():
        for _ in range(20):  # warm-up: imports, caches, interned values
            await open_idle_session(app)
        await trio.testing.wait_all_tasks_blocked()
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot()
            for _ in range(sessions):
                await open_idle_session(app)
            await trio.testing.wait_all_tasks_blocked()
            gc.collect()
            after = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
        if app.session_count != sessions + 20:
            raise SystemExit(f"expected {sessions + 20} live sessions, found {app.session_count}")
        total = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
        print(f"idle Streamable HTTP session ({VERSION}): {total / sessions / 1024:.1f} KiB"
              f" ({total / sessions:.0f} bytes; tracemalloc over {sessions} sessions)")  # fmt: skip
        if by is not None:
            for stat in after.compare_to(before, by)[:top]:
                frame = stat.traceback[0]
                print(f"{stat.size_diff / sessions:8.0f} B  {frame.filename}:{frame.lineno}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--by", choices=["lineno", "filename"], default=None)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    trio.run(measure, args.sessions, args.by, args.top)


if __name__ == "__main__":
    main()
