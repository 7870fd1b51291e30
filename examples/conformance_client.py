"""The client for the official MCP conformance harness (client mode).

The harness starts a mock server per scenario and runs
``python examples/conformance_client.py URL`` with the scenario's name in
``MCP_CONFORMANCE_SCENARIO``; the checks are made on what the mock server sees.
Only the public client API is used: :func:`trio_mcp.open_http_client`
and the :class:`~trio_mcp.Client` it yields.

Scenarios (harness 0.1.16):

* ``initialize``: connect (handshake over Streamable HTTP) and leave.
* ``tools_call``: call ``add_numbers`` with two numbers.
* ``elicitation-sep1034-client-defaults``: call
  ``test_client_elicitation_defaults`` and accept the form it elicits with no
  fields filled in, so the client fills every field from the schema's defaults.
* ``sse-retry``: call ``test_reconnection``; the mock ends the request's SSE
  stream without the answer, and the transport resumes it with a GET carrying
  ``Last-Event-ID`` after the stream's ``retry`` delay.
* ``json-schema-2020-12-preservation`` (harness 0.2): send the input schema
  listed for ``json_schema_2020_12_tool`` back through ``json_schema_echo``.
* anything else (the ``auth/*`` scenarios): connect, list and call the tools.
  The client has no OAuth support yet, so these fail at the first 401.

Exit status: 0 when the scenario's steps succeeded, 1 otherwise (the error is
printed to stderr).
"""

from __future__ import annotations

import logging
import os
import sys

import trio

from trio_mcp import Client, open_http_client
from trio_mcp import types as t

#: The harness kills the client after 30 s; give up well before that.
DEADLINE = 20.0


async def accept_with_defaults(request: object) -> t.ElicitResult:
    """Accept every form without filling anything in (the defaults are applied
    by the client, ``apply_elicitation_defaults=True``)."""
    return t.ElicitResult(action="accept", content={})


async def run_scenario(client: Client, scenario: str) -> None:
    if scenario == "initialize":
        return
    if scenario == "tools_call":
        result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
        print("add_numbers:", _texts(result))
        return
    if scenario == "elicitation-sep1034-client-defaults":
        result = await client.call_tool("test_client_elicitation_defaults", {})
        print("test_client_elicitation_defaults:", _texts(result))
        return
    if scenario == "sse-retry":
        result = await client.call_tool("test_reconnection", {})
        print("test_reconnection:", _texts(result))
        return
    if scenario == "json-schema-2020-12-preservation":
        # Send the listed input schema back verbatim: the mock checks that no
        # JSON Schema 2020-12 keyword was lost on the way through the client.
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        schema = listed["json_schema_2020_12_tool"].input_schema
        result = await client.call_tool("json_schema_echo", {"schema": schema})
        print("json_schema_echo:", _texts(result))
        return
    # Unknown or auth scenarios: do what an ordinary client would.
    tools = await client.list_tools()
    for tool in tools.tools:
        result = await client.call_tool(tool.name, {})
        print(f"{tool.name}:", _texts(result))


def _texts(result: t.CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, t.TextContent))


async def main(url: str, scenario: str) -> None:
    with trio.fail_after(DEADLINE):
        async with open_http_client(
            url,
            name="trio-mcp-conformance-client",
            version="1.0.0",
            elicitation=accept_with_defaults,
            apply_elicitation_defaults=True,
        ) as client:
            print(f"connected: {client.server_info.name} ({client.protocol_version})")
            await run_scenario(client, scenario)


def cli(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: conformance_client.py URL  (scenario in MCP_CONFORMANCE_SCENARIO)")
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    logging.basicConfig(
        level=logging.DEBUG if os.environ.get("CONFORMANCE_DEBUG") else logging.INFO,
        stream=sys.stderr,
    )
    try:
        trio.run(main, args[0], scenario)
    except Exception as exc:  # a failed scenario: say why, exit non-zero
        print(f"scenario {scenario} failed: {exc!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(cli())
