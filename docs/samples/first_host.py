"""Your first host: start first_server.py, list its tools, call two of them.

It connects twice, once in each era: ``era="legacy"`` opens with the
``initialize`` handshake, ``era="modern"`` speaks 2026-07-28 (the default,
``era="auto"``, probes and picks 2026-07-28 when the server speaks it).
"""

import sys
from pathlib import Path

import trio

from trio_mcp import open_stdio_client

SERVER = str(Path(__file__).with_name("first_server.py"))


async def main() -> None:
    for era in ("legacy", "modern"):
        async with open_stdio_client(sys.executable, [SERVER], era=era) as client:
            print("connected to", client.server_info.name, "speaking", client.protocol_version)
            for name, tool in client.tools.items():
                print(f"  {name}: {tool.description}")
            result = await client.call_tool("add", {"a": 2, "b": 3})
            print("add ->", result.content[0].text)
            result = await client.call_tool(
                "count",
                {"to": 3},
                on_progress=lambda p: print("  progress", p.progress, "/", p.total),
            )
            print("count ->", result.content[0].text)


trio.run(main)
