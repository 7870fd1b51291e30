"""An extension, a custom method and two middleware, in both eras."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from trio_mcp import Server
from trio_mcp.extensions import Call, Extension
from trio_mcp.lowlevel import Direction, RequestContext
from trio_mcp.testing import open_memory_client

server = Server("shout")
shout = Extension("com.example/shout", {"loud": True})  # declared in capabilities.extensions


@shout.on_request("com.example/shout")
async def do_shout(params: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
    await ctx.session.notify("com.example/shouted", {"text": params["text"]}, custom=True)
    return {"text": params["text"].upper()}


server.add_extension(shout)  # whole or not at all


@server.on_request("com.example/count")  # a custom method outside any extension
def count(params: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
    return {"length": len(params["text"])}


def timing(log: list[str]) -> Any:
    @asynccontextmanager
    async def middleware(call: Call) -> AsyncIterator[None]:
        log.append(f"before {call.direction.value} {call.method}")
        try:
            yield
        except BaseException as exc:  # failure, timeout, cancel, shutdown: cleanup runs
            log.append(f"after {call.method}: {type(exc).__name__}")
            raise
        log.append(f"after {call.method}")

    return middleware


@asynccontextmanager
async def stamp(call: Call) -> AsyncIterator[None]:
    yield
    if call.kind == "request" and call.direction is Direction.INBOUND:
        call.result.setdefault("_meta", {})["com.example/seen-by"] = "stamp"


def hear(heard: list[str]) -> Any:
    """A handler of ``com.example/shouted`` that keeps each text in *heard*."""
    return lambda params, session: heard.append(params["text"])


async def main() -> None:
    log: list[str] = []
    server.add_middleware(timing(log))  # outermost
    server.add_middleware(stamp)
    for era in ("legacy", "modern"):
        heard: list[str] = []
        async with open_memory_client(
            server,
            era=era,
            custom_notifications={"com.example/shouted": hear(heard)},
        ) as client:
            log.clear()
            print(era, client.server_extensions)
            result = await client.call("com.example/shout", {"text": "hi"})
            print(" ", result["text"], result["_meta"]["com.example/seen-by"], heard)
            print(" ", (await client.call("com.example/count", {"text": "abc"}))["length"])
            print(" ", [line for line in log if "com.example" in line])


trio.run(main)
