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

Scenarios of the 2026-07-28 set (harness 0.2, ``--requirements 2026-07-28``);
the client opens in ``era="auto"`` (``server/discover`` first) as always:

* ``request-metadata``: connect; the mock refuses the first request with
  -32022 and the client retries with the version it names.
* ``sep-2322-client-request-state``: call the input-required tools; the
  elicitation is answered by the client's handler, which calls an unrelated
  tool meanwhile (it must carry no ``inputResponses`` or ``requestState``).
* ``http-standard-headers``: call every tool, read every resource, get every
  prompt (``Mcp-Method`` and ``Mcp-Name`` are checked on each POST).
* ``http-custom-headers``: make the calls listed in ``MCP_CONFORMANCE_CONTEXT``
  (``toolCalls``); the annotated arguments go into ``Mcp-Param-*``.
* ``http-invalid-tool-headers``: call every tool the client offers; the tools
  with invalid ``x-mcp-header`` annotations were dropped when listed.
* ``json-schema-ref-no-deref``: list the tools (a network ``$ref`` in a
  schema is never fetched).
* ``auth/*``: the client authorizes with :class:`trio_mcp.auth.OAuthProvider`
  (the authorization code grant through a headless redirect to
  ``http://localhost:3000/callback``; the client ID metadata document URL
  where the authorization server supports it; the pre-registered credentials
  of ``MCP_CONFORMANCE_CONTEXT`` when it has them), then connects, lists the
  tools and calls ``test-tool`` when offered. The extension scenarios
  (client credentials, token exchange, DPoP, workload identity) are
  dispatched by :func:`extension_auth`.
* anything else: connect, list and call the tools.

Exit status: 0 when the scenario's steps succeeded, 1 otherwise (the error is
printed to stderr).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

import trio

from trio_mcp import Client, open_http_client
from trio_mcp import types as t
from trio_mcp.auth import (
    ClientCredentialsGrant,
    ClientInfo,
    DPoP,
    EnterpriseManagedGrant,
    HeadlessRedirect,
    JwtBearerGrant,
    OAuthProvider,
    PrivateKeyJWT,
)

#: The harness kills the client after 30 s; give up well before that.
DEADLINE = 20.0

#: What the harness's authorization servers expect of the client.
REDIRECT_URI = "http://localhost:3000/callback"
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"

#: The extension scenarios (the grants of the other extensions): their
#: providers come from :func:`extension_auth`.
EXTENSION_SCENARIOS = (
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
    "auth/cross-app-access-complete-flow",
    "auth/enterprise-managed-authorization",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/wif-jwt-bearer",
)


async def accept_with_defaults(request: object) -> t.ElicitResult:
    """Accept every form without filling anything in (the defaults are applied
    by the client, ``apply_elicitation_defaults=True``)."""
    return t.ElicitResult(action="accept", content={})


#: The client, for handlers that make calls of their own (one client per run).
_CLIENT: list[Client] = []


async def accept_and_call_unrelated(request: object) -> t.ElicitResult:
    """sep-2322-client-request-state: between the rounds of one call, make an
    unrelated call (it must not carry the other call's round state)."""
    if _CLIENT:
        result = await _CLIENT[0].call_tool("test_mrtr_unrelated", {})
        print("test_mrtr_unrelated:", _texts(result))
    return t.ElicitResult(action="accept", content={"confirmed": True})


def _arguments_for(tool: t.Tool) -> dict[str, Any]:
    """Some value for each required argument of *tool*, by its schema type."""
    schema: dict[str, Any] = dict(tool.input_schema)
    properties: dict[str, Any] = schema.get("properties") or {}
    samples: dict[str, Any] = {"string": "us-west1", "integer": 1, "number": 1.5, "boolean": True}
    arguments: dict[str, Any] = {}
    for name in schema.get("required") or []:
        kind = (properties.get(name) or {}).get("type", "string")
        arguments[name] = samples.get(kind, "value")
    return arguments


def _context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    parsed = json.loads(raw) if raw else {}
    return parsed if isinstance(parsed, dict) else {}


def extension_auth(url: str, scenario: str, context: dict[str, Any]) -> OAuthProvider | None:
    """The auth for an extension scenario, from ``MCP_CONFORMANCE_CONTEXT``:

    * ``auth/client-credentials-basic``: the client credentials grant with the
      context's ``client_id`` and ``client_secret`` (``client_secret_basic``);
    * ``auth/client-credentials-jwt``: the same grant, authenticated by a
      ``private_key_jwt`` assertion signed with ``private_key_pem``;
    * ``auth/enterprise-managed-authorization`` (0.2; 0.1.16 names it
      ``auth/cross-app-access-complete-flow``): the ID token traded at the
      IdP for an ID-JAG, then the JWT bearer grant with ``client_secret_basic``;
    * ``auth/wif-jwt-bearer``: the JWT bearer grant with ``valid_jwt``, as the
      public client ``client_id``;
    * ``auth/dpop``, ``auth/dpop-nonce``: the authorization code grant with a
      DPoP key (proofs at the token endpoint and on every MCP request,
      nonces from either server honoured).
    """

    def text(name: str) -> str:
        value = context.get(name)
        if not isinstance(value, str):
            raise ValueError(f"MCP_CONFORMANCE_CONTEXT has no {name!r}")
        return value

    if scenario == "auth/client-credentials-basic":
        return OAuthProvider(
            url,
            grant=ClientCredentialsGrant(),
            client=ClientInfo(text("client_id"), text("client_secret")),
        )
    if scenario == "auth/client-credentials-jwt":
        algorithm = context.get("signing_algorithm") or "ES256"
        signer = PrivateKeyJWT(text("client_id"), text("private_key_pem"), str(algorithm))
        return OAuthProvider(url, grant=ClientCredentialsGrant(signer))
    if scenario in ("auth/enterprise-managed-authorization", "auth/cross-app-access-complete-flow"):
        grant = EnterpriseManagedGrant(
            id_token=text("idp_id_token"),
            idp_token_endpoint=text("idp_token_endpoint"),
            idp_client_id=text("idp_client_id"),
        )
        client = ClientInfo(
            text("client_id"),
            text("client_secret"),
            token_endpoint_auth_method="client_secret_basic",
        )
        return OAuthProvider(url, grant=grant, client=client)
    if scenario == "auth/wif-jwt-bearer":
        client = ClientInfo(text("client_id"), token_endpoint_auth_method="none")
        return OAuthProvider(url, grant=JwtBearerGrant(text("valid_jwt")), client=client)
    if scenario in ("auth/dpop", "auth/dpop-nonce"):
        return OAuthProvider(
            url,
            redirect=HeadlessRedirect(REDIRECT_URI),
            client_metadata_url=CLIENT_METADATA_URL,
            client_name="trio-mcp-conformance-client",
            dpop=DPoP(),
        )
    return None


def auth_for(url: str, scenario: str) -> OAuthProvider | None:
    """The OAuth provider an ``auth/*`` scenario runs with (None for the others)."""
    if not scenario.startswith("auth/"):
        return None
    context = _context()
    if scenario in EXTENSION_SCENARIOS:
        return extension_auth(url, scenario, context)
    client = None
    if isinstance(context.get("client_id"), str):
        secret = context.get("client_secret")
        client = ClientInfo(
            client_id=context["client_id"],
            client_secret=secret if isinstance(secret, str) else None,
        )
    return OAuthProvider(
        url,
        redirect=HeadlessRedirect(REDIRECT_URI),
        client=client,
        client_metadata_url=CLIENT_METADATA_URL,
        client_name="trio-mcp-conformance-client",
    )


async def run_scenario(client: Client, scenario: str) -> None:
    if scenario in ("initialize", "request-metadata"):
        return
    if scenario == "sep-2322-client-request-state":
        for name in ("test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_no_result_type"):
            result = await client.call_tool(name, {})
            print(f"{name}:", _texts(result))
        return
    if scenario == "http-standard-headers":
        for tool in client.tools.values():
            print(f"{tool.name}:", _texts(await client.call_tool(tool.name, {})))
        for uri in client.resources:
            await client.read_resource(uri)
        for prompt in client.prompts:
            await client.get_prompt(prompt)
        return
    if scenario == "http-custom-headers":
        for call in _context().get("toolCalls", []):
            result = await client.call_tool(call["name"], call.get("arguments", {}))
            print(f"{call['name']}:", _texts(result))
        return
    if scenario == "http-invalid-tool-headers":
        # client.tools holds only the tools it may call (HM-27).
        for tool in client.tools.values():
            result = await client.call_tool(tool.name, _arguments_for(tool))
            print(f"{tool.name}:", _texts(result))
        return
    if scenario == "json-schema-ref-no-deref":
        page = await client.list_tools()
        print("tools:", ", ".join(tool.name for tool in page.tools))
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
        elicitation = (
            accept_and_call_unrelated
            if scenario == "sep-2322-client-request-state"
            else accept_with_defaults
        )
        async with open_http_client(
            url,
            auth=auth_for(url, scenario),
            name="trio-mcp-conformance-client",
            version="1.0.0",
            elicitation=elicitation,
            apply_elicitation_defaults=True,
        ) as client:
            _CLIENT.append(client)
            print(f"connected: {client.server_info.name} ({client.protocol_version}, {client.era})")
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
