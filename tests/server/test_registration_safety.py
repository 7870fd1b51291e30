"""A bad registration fails at registration; a bad value never kills a session.

* Where the spec has an object in a definition (a tool's ``annotations``, the
  ``icons`` of tools, resources and prompts, a resource's ``annotations``),
  the spec's JSON dict form is accepted and converted once, or refused at
  registration with a ``TypeError`` naming the type expected.
* A definition with no JSON form is refused at registration, so ``tools/list``
  never fails because of one tool's data.
* A result that cannot be serialised is answered -32603 with the request's id
  and logged; the session goes on (over the memory pair, stdio and Streamable
  HTTP, in both eras).
"""

from __future__ import annotations

import logging
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from server_helpers import open_raw

from trio_mcp import (
    Client,
    RPCError,
    Server,
    http_app,
    open_http_client,
    open_stdio_client,
    serve_http,
)
from trio_mcp import types as t
from trio_mcp.testing import open_memory_client


async def _noop() -> str:
    return "ok"


async def test_tool_annotations_and_icons_in_the_specs_json_form_are_converted_once() -> None:
    server = Server("x")
    server.add_tool(
        _noop,
        annotations={"readOnlyHint": True, "destructiveHint": False},
        icons=[{"src": "https://example.com/i.png", "mimeType": "image/png"}],
    )
    (tool,) = server._tools.values()
    assert tool.definition.annotations == t.ToolAnnotations(
        read_only_hint=True, destructive_hint=False
    )
    assert tool.definition.icons == [t.Icon(src="https://example.com/i.png", mime_type="image/png")]
    async with open_raw(server) as (peer, _):
        (listed,) = (await peer.request("tools/list"))["result"]["tools"]
    assert listed["annotations"] == {"readOnlyHint": True, "destructiveHint": False}
    assert listed["icons"] == [{"src": "https://example.com/i.png", "mimeType": "image/png"}]


async def test_a_dict_annotated_tool_is_listed_and_called_in_both_eras() -> None:
    server = Server("x")

    @server.tool(annotations={"readOnlyHint": True})
    async def look() -> str:
        return "seen"

    for era in ("legacy", "modern"):
        async with open_memory_client(server, era=era) as client:
            (tool,) = (await client.list_tools()).tools
            assert tool.annotations == t.ToolAnnotations(read_only_hint=True)
            assert (await client.call_tool("look")).content == [t.TextContent(text="seen")]


async def test_resource_template_and_prompt_options_in_the_json_form() -> None:
    server = Server("x")
    server.add_resource(
        "note://a",
        _noop,
        annotations={"audience": ["user"], "priority": 0.5},
        icons=[{"src": "https://example.com/a.png"}],
    )

    async def by_id(id: str) -> str:
        return id

    server.add_resource_template("note://{id}", by_id, annotations={"audience": ["assistant"]})

    async def greet(name: str) -> str:
        return f"hi {name}"

    server.add_prompt(greet, icons=[{"src": "https://example.com/g.png", "sizes": ["16x16"]}])
    async with open_raw(server) as (peer, _):
        (resource,) = (await peer.request("resources/list"))["result"]["resources"]
        (template,) = (await peer.request("resources/templates/list"))["result"][
            "resourceTemplates"
        ]
        (prompt,) = (await peer.request("prompts/list"))["result"]["prompts"]
    assert resource["annotations"] == {"audience": ["user"], "priority": 0.5}
    assert resource["icons"] == [{"src": "https://example.com/a.png"}]
    assert template["annotations"] == {"audience": ["assistant"]}
    assert prompt["icons"] == [{"src": "https://example.com/g.png", "sizes": ["16x16"]}]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"annotations": "read-only"},
            r"tool '_noop': annotations must be a trio_mcp\.types\.ToolAnnotations or its JSON"
            r" form .*, not str",
        ),
        (
            # snake_case keys are the Python names, not the spec's: refused, not dropped.
            {"annotations": {"read_only_hint": True}},
            r"annotations must be a trio_mcp\.types\.ToolAnnotations .*read_only_hint",
        ),
        (
            {"annotations": {"readOnlyHint": "yes"}},
            r"annotations must be a trio_mcp\.types\.ToolAnnotations .*"
            r"expected bool .*read_only_hint",
        ),
        ({"icons": {"src": "x"}}, r"icons must be a list of trio_mcp\.types\.Icon"),
        ({"icons": [{"mimeType": "image/png"}]}, r"icons\[0\] must be a trio_mcp\.types\.Icon"),
        ({"icons": ["https://x/i.png"]}, r"icons\[0\] must be a trio_mcp\.types\.Icon"),
        ({"meta": ["x"]}, r"meta must be a dict with string keys, not list"),
        ({"meta": {"when": object()}}, r"tool '_noop': the definition cannot be sent as JSON"),
    ],
)
def test_a_bad_tool_option_is_refused_at_registration(
    options: dict[str, Any], message: str
) -> None:
    server = Server("x")
    with pytest.raises(TypeError, match=message):
        server.add_tool(_noop, **options)
    assert not server._tools


def test_bad_resource_and_prompt_options_are_refused_at_registration() -> None:
    server = Server("x")
    with pytest.raises(TypeError, match=r"resource 'note://a': annotations must be a trio_mcp"):
        server.add_resource("note://a", _noop, annotations=["user"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"resource 'note://a': annotations .*audience"):
        server.add_resource("note://a", _noop, annotations={"audience": "user"})

    async def greet() -> str:
        return "hi"

    with pytest.raises(TypeError, match=r"prompt 'greet': icons\[0\] must be a trio_mcp"):
        server.add_prompt(greet, icons=[42])  # type: ignore[list-item]
    assert not server._resources
    assert not server._prompts


async def test_a_tools_list_that_cannot_be_serialised_is_a_32603_and_the_session_goes_on() -> None:
    # What registration now refuses, forced in afterwards: the newcomer's
    # dict where the definition wants a ToolAnnotations.
    server = Server("x")
    server.add_tool(_noop)
    tool = server._tools["_noop"]
    as_dict: Any = {"readOnlyHint": True}
    broken = attrs.evolve(tool.definition, annotations=as_dict)
    server._tools["_noop"] = attrs.evolve(tool, definition=broken)
    async with open_raw(server) as (peer, _):
        request_id = await peer.send_request("tools/list")
        answer = await peer.wait_response(request_id)
        assert answer["id"] == request_id
        assert answer["error"]["code"] == -32603
        called = await peer.request("tools/call", {"name": "_noop", "arguments": {}})
        assert called["result"]["content"] == [{"type": "text", "text": "ok"}]


# --- an unserialisable result fails its request, not the session -------------

#: The tools of the server every transport below serves: ``broken`` returns a
#: result whose content block holds a dict where the spec wants an object
#: (``TextContent.annotations``); ``not_json`` one with a text that has no JSON
#: form; ``ok`` a plain string.
SERVER_SOURCE = """
from trio_mcp import Server
from trio_mcp import types as t

server = Server("unserialisable")


@server.tool()
async def broken() -> t.CallToolResult:
    block = t.TextContent(text="x", annotations={"audience": ["user"]})
    return t.CallToolResult(content=[block])


@server.tool()
async def not_json() -> t.CallToolResult:
    return t.CallToolResult(content=[t.TextContent(text=object())])


@server.tool()
async def ok() -> str:
    return "still here"
"""


def _server() -> Server:
    namespace: dict[str, Any] = {}
    exec(SERVER_SOURCE, namespace)
    server: Server = namespace["server"]
    return server


async def _bad_calls_then_a_good_one(client: Client) -> None:
    for name in ("broken", "not_json"):
        with pytest.raises(RPCError) as raised:
            await client.call_tool(name)
        assert raised.value.code == -32603
    result = await client.call_tool("ok")
    assert result.content == [t.TextContent(text="still here")]
    # The list never breaks either.
    assert {tool.name for tool in (await client.list_tools()).tools} == {"broken", "not_json", "ok"}


@asynccontextmanager
async def _over_stdio(era: str, tmp_path: Path) -> AsyncIterator[Client]:
    script = tmp_path / "unserialisable_server.py"
    script.write_text(
        textwrap.dedent(SERVER_SOURCE) + "\nfrom trio_mcp import run_stdio\nrun_stdio(server)\n"
    )
    async with open_stdio_client(sys.executable, [str(script)], era=era) as client:
        yield client


@asynccontextmanager
async def _over_http(era: str) -> AsyncIterator[Client]:
    async with trio.open_nursery() as nursery:
        base = await nursery.start(
            lambda task_status: serve_http(http_app(_server()), task_status=task_status)
        )
        async with open_http_client(base + "/mcp", era=era, remember_era=False) as client:
            yield client
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("transport", ["memory", "stdio", "http"])
async def test_an_unserialisable_result_is_a_32603_and_the_session_goes_on(
    transport: str, era: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="trio_mcp.session")
    opened = (
        open_memory_client(_server(), era=era)
        if transport == "memory"
        else _over_stdio(era, tmp_path)
        if transport == "stdio"
        else _over_http(era)
    )
    with trio.fail_after(30):
        async with opened as client:
            assert client.era == era
            await _bad_calls_then_a_good_one(client)
    if transport != "stdio":  # the stdio server logs in its own process
        logged = [r.getMessage() for r in caplog.records if r.name == "trio_mcp.session"]
        assert any("tools/call" in m and "cannot be serialised" in m for m in logged), logged
        assert any("tools/call" in m and "was refused" in m for m in logged), logged


async def test_the_error_answers_the_requests_id() -> None:
    async with open_raw(_server()) as (peer, _):
        request_id = await peer.send_request("tools/call", {"name": "broken", "arguments": {}})
        answer = await peer.wait_response(request_id)
        assert answer == {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {"code": -32603, "message": "Internal error"},
        }
        again = await peer.request("tools/call", {"name": "ok", "arguments": {}})
        assert again["result"]["content"] == [{"type": "text", "text": "still here"}]
