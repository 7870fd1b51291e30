"""Our client against servers written with the official SDKs, over stdio.

* Python SDK (``mcp``, ``MCPServer``), in the handshake era (pinned: its
  calls back into the client exist only there): discovery across pages, a
  tool call with progress, structured output checked against the tool's
  output schema, a sampling round trip, a form elicitation round trip, roots,
  a prompt, a resource.
* TypeScript SDK (``@modelcontextprotocol/sdk`` from npm, installed into a
  cache directory on first use; if npm cannot install it the test fails), in
  ``era="auto"`` (it answers the ``server/discover`` probe with -32601 and the
  client falls back to ``initialize`` on the same process): discovery, a
  structured tool call, a resource, a prompt, and the server's sampling,
  elicitation and roots requests.

Every subprocess runs under ``trio.fail_after`` and is shut down (and reaped)
by ``open_stdio_client`` on the way out.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from test_stdio_interop import ts_sdk_dir

from trio_mcp import open_stdio_client
from trio_mcp import types as t
from trio_mcp._client._elicitation import FormElicitation
from trio_mcp.protocol import Progress, RequestState

HERE = Path(__file__).resolve().parent
ROOTS = [t.Root(uri="file:///srv/project", name="project")]


async def sampler(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
    text = params.messages[0].content
    assert isinstance(text, t.TextContent)
    return t.CreateMessageResult(
        role="assistant", content=t.TextContent(text=text.text.upper()), model="upper-1"
    )


async def form(request: FormElicitation) -> t.ElicitResult:
    assert "name" in request.schema["properties"]  # type: ignore[operator]
    return t.ElicitResult(action="accept", content={"name": "Ada"})


def text(result: t.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, t.TextContent)
    return block.text


HANDLERS: dict[str, Any] = {
    "roots": ROOTS,
    "sampling": sampler,
    "elicitation": form,
    "apply_elicitation_defaults": True,
}


@pytest.mark.spec("PA-04")
@pytest.mark.spec("SM-02")
@pytest.mark.spec("RT-02")
@pytest.mark.spec("TL-21")
async def test_our_client_against_a_python_sdk_server() -> None:
    # The handshake era, pinned: the server's calls back into the client
    # (sampling, elicitation, roots requests) exist only there. mcp 2.x serves
    # both eras on stdio, so era="auto" would go 2026-07-28, where this server
    # refuses its own sampling request (-32600, no back-channel); the modern
    # round trips are in test_modern_interop.py.
    with trio.fail_after(60):
        async with open_stdio_client(
            sys.executable,
            [str(HERE / "client_sdk_server.py")],
            stderr=None,
            era="legacy",
            **HANDLERS,
        ) as client:
            assert client.server_info.name == "sdk-client-interop"
            assert client.era == "legacy"
            assert client.protocol_version == "2025-11-25"
            assert client.protocol_version == "2025-11-25"
            # Six tools, two per page: three tools/list requests.
            assert sorted(client.tools) == ["add", "count", "echo", "roots", "summarize", "who"]
            pages = [r for r in client.session.requests() if r.method == "tools/list"]
            assert len(pages) == 3
            assert list(client.prompts) == ["greet"]
            assert list(client.resources) == ["memo://note"]

            added = await client.call_tool("add", {"a": 2, "b": 3})
            assert added.structured_content == {"total": 5}
            assert client.tools["add"].output_schema is not None

            seen: list[Progress] = []
            counted = await client.call_tool("count", {"steps": 3}, on_progress=seen.append)
            assert "counted 3" in text(counted)
            assert [(p.progress, p.total, p.message) for p in seen] == [
                (1, 3, "step 1"),
                (2, 3, "step 2"),
                (3, 3, "step 3"),
            ]

            summary = await client.call_tool("summarize", {"text": "make it loud"})
            assert "model upper-1 said: MAKE IT LOUD" in text(summary)

            who = await client.call_tool("who")
            assert "hello Ada, 30" in text(who)  # the default was applied

            roots = await client.call_tool("roots")
            assert "file:///srv/project" in text(roots)

            prompt = await client.get_prompt("greet", {"name": "Bo"})
            assert "Bo" in str(prompt.messages[0].content)
            note = await client.read_resource("memo://note")
            assert note.contents[0].text == "remember the milk"  # type: ignore[union-attr]
            await client.ping()


@pytest.mark.spec("SM-02")
@pytest.mark.spec("EL-07")
async def test_our_client_against_a_typescript_sdk_server() -> None:
    cache = ts_sdk_dir()
    script = cache / "ts_client_server.mjs"
    script.write_text((HERE / "ts_client_server.mjs").read_text())
    with trio.fail_after(60):
        # probe_timeout: node may take longer than the default 2 s to start on
        # a loaded machine, and this test is about the answer, not the bound.
        async with open_stdio_client(
            "node",
            [str(script)],
            cwd=str(cache),
            inherit_env=True,
            stderr=None,
            probe_timeout=50,
            **HANDLERS,
        ) as client:
            assert client.server_info.name == "ts-client-interop"
            # The v1 SDK knows no server/discover: the probe fell back.
            assert client.era == "legacy"
            probe = [r for r in client.session.requests() if r.method == "server/discover"]
            assert [r.state for r in probe] == [RequestState.FAILED]
            assert sorted(client.tools) == ["ask", "multiply", "sample", "show_roots"]
            assert list(client.prompts) == ["greet"]
            assert list(client.resources) == ["memo://ts"]

            product = await client.call_tool("multiply", {"a": 6, "b": 7})
            assert product.structured_content == {"product": 42}
            sampled = await client.call_tool("sample", {"text": "quiet"})
            assert text(sampled) == "upper-1: QUIET"
            asked = await client.call_tool("ask")
            assert text(asked) == "accept: Ada"
            shown = await client.call_tool("show_roots")
            assert text(shown) == "file:///srv/project"
            note = await client.read_resource("memo://ts")
            assert note.contents[0].text == "from typescript"  # type: ignore[union-attr]
            prompt = await client.get_prompt("greet", {"name": "Cy"})
            assert "Cy" in str(prompt.messages[0].content)
            await client.ping()
