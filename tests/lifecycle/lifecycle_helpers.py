"""Shared by the lifecycle-case tests: raw 2026-07-28 frames, our server over
real stdio pipes (in-process, as a subprocess would see fds 0 and 1), and a
POST on a plain socket.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import trio

from trio_mcp import Server, serve_stdio
from trio_mcp.protocol._headers import encode_header_value
from trio_mcp.transports import LineChannel

MODERN = "2026-07-28"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SUB_ID = "io.modelcontextprotocol/subscriptionId"
ACK = "notifications/subscriptions/acknowledged"


def modern_frame(
    method: str, params: dict[str, Any] | None = None, request_id: Any = 1
) -> dict[str, Any]:
    """A 2026-07-28 request as a conforming client sends it."""
    body = dict(params or {})
    body["_meta"] = {VERSION_KEY: MODERN, CAPABILITIES_KEY: {}}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body}


def listen_frame(request_id: Any = 1, **notifications: Any) -> dict[str, Any]:
    return modern_frame("subscriptions/listen", {"notifications": notifications}, request_id)


def modern_headers(body: dict[str, Any]) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": body["method"],
    }
    name = body.get("params", {}).get("name")
    if body["method"] == "tools/call" and name is not None:
        headers["mcp-name"] = encode_header_value(name)
    return headers


class Served:
    """serve_stdio as the owner sees it: the scope it runs in, and whether it returned."""

    def __init__(self) -> None:
        self.scope = trio.CancelScope()
        self.returned = trio.Event()


@asynccontextmanager
async def stdio_pipes(server: Server, **options: Any) -> AsyncIterator[tuple[LineChannel, Served]]:
    """serve_stdio on real pipes; yield the client end and the :class:`Served`."""
    to_server = os.pipe()
    from_server = os.pipe()
    client_end = LineChannel(
        trio.lowlevel.FdStream(to_server[1]), trio.lowlevel.FdStream(from_server[0])
    )
    served = Served()

    async def serve() -> None:
        with served.scope:
            await serve_stdio(
                server,
                stdin_fd=to_server[0],
                stdout_fd=from_server[1],
                handle_signals=False,
                **options,
            )
        served.returned.set()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            try:
                yield client_end, served
            finally:
                await client_end.aclose()
    finally:
        os.close(to_server[0])
        os.close(from_server[1])


async def send_json(channel: LineChannel, frame: dict[str, Any]) -> None:
    await channel.send(orjson.dumps(frame))


async def receive_json(channel: LineChannel) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(await channel.receive())
    return message


async def open_post(url: str, body: dict[str, Any]) -> trio.SocketStream:
    """POST *body* on a plain socket (so the test decides when the client
    goes away, down to before the response head); the caller closes it."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    payload = orjson.dumps(body)
    head = "".join(f"{k}: {v}\r\n" for k, v in modern_headers(body).items())
    stream = await trio.open_tcp_stream(host, int(port))
    await stream.send_all(
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n{head}"
        f"content-length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    return stream
