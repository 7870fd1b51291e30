"""An MCP extension, a custom method and a middleware: ``python examples/extension.py``.

The server installs the extension ``com.example/shout``, declared as
``{"loud": true}`` in ``capabilities.extensions`` (``initialize`` and
``server/discover``). It adds the request ``com.example/shout``
(``{"text": str}`` answered ``{"text": str}``, upper-cased) and, after each
shout, sends the notification ``com.example/shouted``. A middleware stamps
``_meta["com.example/seen-by"]`` on every result the server sends.

    python examples/extension.py                   # serve over stdio
    python examples/extension.py --http HOST:PORT  # serve Streamable HTTP at /mcp
    python examples/extension.py --host            # a host: runs the server over
                                                   # stdio and shouts, in both eras

Both eras are served (2026-07-28 and the handshake era).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from trio_mcp import RPCError, Server, open_stdio_client, parse_http_option
from trio_mcp.extensions import Call, Extension
from trio_mcp.lowlevel import Direction, RequestContext

SHOUT = "com.example/shout"
SHOUTED = "com.example/shouted"
SEEN_BY = "com.example/seen-by"


def shout_extension() -> Extension:
    """The extension: its settings, its request and its notification."""
    shout = Extension(SHOUT, {"loud": True})

    @shout.on_request(SHOUT)
    async def do_shout(params: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        text = params.get("text")
        if not isinstance(text, str):
            raise RPCError(-32602, "com.example/shout needs a text to shout")
        loud = text.upper()
        # Tell the client what was shouted (a custom notification).
        await ctx.session.notify(SHOUTED, {"text": loud}, custom=True)
        return {"text": loud}

    return shout


@asynccontextmanager
async def stamp(call: Call) -> AsyncIterator[None]:
    """Middleware: every result the server sends carries who saw it."""
    yield
    if call.kind == "request" and call.direction is Direction.INBOUND:
        call.result.setdefault("_meta", {})[SEEN_BY] = "examples/extension.py"


def build_server() -> Server:
    server = Server("shout", "1.0.0")
    server.add_extension(shout_extension())
    server.add_middleware(stamp)
    return server


async def host() -> None:
    """Run this file's server over stdio and shout in each era."""
    for era in ("modern", "legacy"):
        heard: list[str] = []

        def shouted(params: dict[str, Any], session: object, heard: list[str] = heard) -> None:
            heard.append(params["text"])

        async with open_stdio_client(
            sys.executable,
            [__file__],
            era=era,
            custom_notifications={SHOUTED: shouted},
        ) as client:
            declared = client.server_extensions.get(SHOUT)
            result = await client.call(SHOUT, {"text": "hello"})
            print(
                f"{client.protocol_version}: {SHOUT} declared {declared}, "
                f"answered {result['text']!r}, seen by {result['_meta'][SEEN_BY]!r}; "
                f"{SHOUTED}: {heard}"
            )


def main() -> None:
    args, http = parse_http_option(sys.argv[1:])
    if "--host" in args:
        trio.run(host)
        return
    server = build_server()
    server.run_http(*http) if http else server.run_stdio()


if __name__ == "__main__":
    main()
