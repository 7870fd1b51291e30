"""A client that authorizes itself with OAuth when the server answers 401."""

import trio

from trio_mcp import open_http_client
from trio_mcp.auth import FileTokenStorage, LoopbackRedirect, OAuthProvider

URL = "https://mcp.example.com/mcp"


async def main() -> None:
    # The redirect listener is on 127.0.0.1; it prints the one URL to open.
    async with LoopbackRedirect() as redirect:
        auth = OAuthProvider(URL, redirect=redirect, storage=FileTokenStorage("tokens.json"))
        async with open_http_client(URL, auth=auth) as client:
            print((await client.call_tool("whoami", {})).content)


trio.run(main)
