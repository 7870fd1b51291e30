"""Streamable HTTP with worker processes and bearer-token authorization.

Run ``python http_deploy.py 8000``: four worker processes share the port, and
every request must carry ``Authorization: Bearer dev-token``. Both eras are
served on the one endpoint, ``http://127.0.0.1:8000/mcp``.
"""

import sys

from trio_mcp import Context, Server, run_http
from trio_mcp.auth import AccessToken, ResourceServer, StaticTokenVerifier


def build() -> Server:  # each worker calls it once
    server = Server("deployed")

    @server.tool()
    async def whoami(ctx: Context) -> str:
        """Who the verified token belongs to."""
        return ctx.auth.subject if ctx.auth else "anonymous"

    return server


AUTH = ResourceServer(
    # For development only: production verifiers check JWTs (JWTVerifier) or ask
    # the authorization server (IntrospectionVerifier).
    StaticTokenVerifier({"dev-token": AccessToken(subject="alice", scopes=frozenset({"mcp"}))}),
    resource="https://mcp.example.com/mcp",
    authorization_servers=["https://auth.example.com"],
    required_scopes=["mcp"],
)

if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    run_http(build, "127.0.0.1", port, workers=4, auth=AUTH)
