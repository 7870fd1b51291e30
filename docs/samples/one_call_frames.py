"""One tool call, frame by frame, in each era, as the client sees the wire.

A transport wrapper prints every frame the client sends (``->``) and receives
(``<-``), over the in-memory pair: the opening, then one ``tools/call``.
"""

from functools import partial

import trio

from trio_mcp import Server, open_client, serve_session
from trio_mcp.testing import memory_transport_pair

server = Server("frames", version="1.0")


@server.tool()
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Printing(trio.abc.Channel[bytes]):
    """Passes frames through, printing each one."""

    def __init__(self, inner: trio.abc.Channel[bytes]) -> None:
        self.inner = inner

    async def send(self, value: bytes) -> None:
        print("->", value.decode())
        await self.inner.send(value)

    async def receive(self) -> bytes:
        frame = await self.inner.receive()
        print("<-", frame.decode())
        return frame

    async def aclose(self) -> None:
        await self.inner.aclose()


async def one_call(era: str) -> None:
    print(f"== {era}")
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(partial(serve_session, server, server_end))
        async with open_client(Printing(client_end), era=era, discover=False) as client:
            await client.call_tool("add", {"a": 2, "b": 3})


async def main() -> None:
    await one_call("legacy")
    await one_call("modern")


trio.run(main)
