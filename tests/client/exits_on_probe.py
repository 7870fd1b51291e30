"""A handshake-era stdio MCP server that exits when it reads a method it does not
know, as some deployed servers do: ``server/discover`` ends it with status 3.

Otherwise it answers ``initialize`` (2025-11-25), ``tools/list`` (one tool) and
``ping``. Each method it reads is written to stderr as ``got <method>``, so a
test sees what each process was sent. Standard library only.
"""

from __future__ import annotations

import json
import sys

KNOWN = {"initialize", "notifications/initialized", "tools/list", "ping"}


def reply(message_id: object, result: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if method is None:
            continue
        sys.stderr.write(f"got {method}\n")
        sys.stderr.flush()
        if method not in KNOWN:
            sys.exit(3)
        if method == "initialize":
            reply(
                message["id"],
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "exits-on-probe", "version": "1"},
                },
            )
        elif method == "tools/list":
            reply(message["id"], {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]})
        elif method == "ping":
            reply(message["id"], {})


if __name__ == "__main__":
    main()
