"""A stdio server's start-up imports only what serving stdio needs.

A server process whose tools take simple arguments must not import ``httpx``,
``hypercorn``, ``trio_websocket`` (the HTTP and WebSocket transports) or
``jsonschema`` (built on first need: a tool whose quick argument check says no,
an explicit schema, a structured output). Each is tens of milliseconds of every
start-up. Checked on a real server process over stdio in both eras, after the
handshake, ``tools/list`` and a call; and the deferred meta-schema check still
happens when the full validator is first needed.

Nor does it import the types and server modules of what a server of tools never
does (:data:`LAZY`: sampling, elicitation, input requests, roots, prompts,
resources, completion, tasks; issue #16). Each loads when first used, and works
then: checked in fresh interpreters, as the test process has them all.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Literal

import pytest

from trio_mcp import open_stdio_client
from trio_mcp._server._context import Context
from trio_mcp._server._schema import FunctionSignature, validator_class
from trio_mcp._session import RequestContext

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("httpx", "hypercorn", "trio_websocket", "jsonschema")
SERVER = f"""
import sys
import trio_mcp

server = trio_mcp.Server("imports")

@server.tool()
async def loaded(text: str, count: int = 1) -> str:
    return ",".join(m for m in {HEAVY!r} if m in sys.modules) or "none"

server.run_stdio()
"""


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_stdio_server_imports_no_http_stack_and_no_jsonschema(
    era: Literal["legacy", "modern"], tmp_path: Path
) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    async with open_stdio_client(sys.executable, [str(script)], env=env, era=era) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["loaded"]
        result = await client.call_tool("loaded", {"text": "x"})
        assert getattr(result.content[0], "text", None) == "none"
        # A call the quick check refuses builds the full validator: jsonschema
        # is imported then, and explains the error.
        refused = await client.call_tool("loaded", {"text": 1})
        assert refused.is_error
        again = await client.call_tool("loaded", {"text": "x"})
        assert getattr(again.content[0], "text", None) == "jsonschema"


#: Loaded on first use: a server of tools, in either era, never imports them.
LAZY = (
    "trio_mcp.types.sampling",
    "trio_mcp.types.elicitation",
    "trio_mcp.types.input_required",
    "trio_mcp.types.roots",
    "trio_mcp.types.prompts",
    "trio_mcp.types.resources",
    "trio_mcp.types.completion",
    "trio_mcp.types.tasks",
    "trio_mcp.types.tasks_extension",
    "trio_mcp._server._completion",
    "trio_mcp._server._prompts",
    "trio_mcp._server._resources",
    "trio_mcp._server._uri_template",
)
#: The 2026-07-28 subscriptions types: loaded when a client listens, which ours
#: does on connecting in that era; never in the handshake era.
SUBSCRIPTIONS = "trio_mcp.types.subscriptions"
LAZY_SERVER = f"""
import sys
import trio_mcp

server = trio_mcp.Server("lazy")

@server.tool()
async def loaded(text: str) -> str:
    return ",".join(m for m in {(*LAZY, SUBSCRIPTIONS)!r} if m in sys.modules) or "none"

server.run_stdio()
"""


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_stdio_server_of_tools_imports_no_sampling_prompts_resources_or_tasks(
    era: Literal["legacy", "modern"], tmp_path: Path
) -> None:
    script = tmp_path / "server.py"
    script.write_text(LAZY_SERVER)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    async with open_stdio_client(sys.executable, [str(script)], env=env, era=era) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["loaded"]
        result = await client.call_tool("loaded", {"text": "x"})
        text = getattr(result.content[0], "text", None)
        assert text == ("none" if era == "legacy" else SUBSCRIPTIONS)


def _fresh(code: str) -> None:
    """Run *code* in a fresh interpreter (with this checkout first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_the_lazy_types_load_when_first_structured_and_work() -> None:
    _fresh(f"""
        import sys
        from trio_mcp import types
        lazy = [m for m in {LAZY!r} if m.startswith("trio_mcp.types.")]
        assert not [m for m in lazy if m in sys.modules], sys.modules.keys()

        # The converter's sampling-content hook, registered without sampling.
        one = {{"role": "assistant", "model": "m", "content": {{"type": "text", "text": "hi"}}}}
        many = dict(one, content=[{{"type": "text", "text": "a"}}, {{"type": "text", "text": "b"}}])
        assert "trio_mcp.types.sampling" not in sys.modules
        result = types.structure(types.CreateMessageResult, one)
        assert "trio_mcp.types.sampling" in sys.modules
        assert result.content == types.TextContent(text="hi")
        assert types.unstructure(result) == one
        listed = types.structure(types.CreateMessageResult, many)
        assert [block.text for block in listed.content] == ["a", "b"]
        assert types.unstructure(listed) == many
        try:
            types.structure(types.CreateMessageResult, dict(one, content={{"type": "nope"}}))
        except Exception:
            pass
        else:
            raise AssertionError("a content block of no known type was accepted")

        # The tasks payload hook: kept raw, unstructured back to the payload.
        payload = types.structure(types.GetTaskPayloadResult, {{"content": [], "x": 1}})
        assert payload == types.GetTaskPayloadResult(payload={{"content": [], "x": 1}})
        assert types.unstructure(payload) == {{"content": [], "x": 1}}

        # Input responses, by each value's shape (imports input_required).
        answer = {{"action": "accept", "content": {{"n": 2}}}}
        wire = {{"name": "t", "inputResponses": {{"k": answer}}}}
        params = types.structure(types.CallToolRequestParams, wire)
        accepted = types.ElicitResult(action="accept", content={{"n": 2}})
        assert params.input_responses == {{"k": accepted}}
        assert types.unstructure(params) == wire
        assert "trio_mcp.types.input_required" in sys.modules
        print("ok")
    """)


def test_registering_a_prompt_resource_or_completion_loads_their_modules() -> None:
    _fresh(f"""
        import sys
        import trio_mcp

        server = trio_mcp.Server("x")

        @server.tool()
        def echo(text: str) -> str:
            return text

        assert not [m for m in {LAZY!r} if m in sys.modules]
        assert "trio_mcp._server._tools" in sys.modules

        @server.prompt()
        def greet(name: str) -> str:
            return f"hello {{name}}"

        assert "trio_mcp._server._prompts" in sys.modules

        @server.resource_template("file:///{{path}}")
        def read(path: str) -> str:
            return path

        @server.completion(prompt="greet", argument="name")
        def names(value: str) -> list[str]:
            return ["ada"]

        assert "trio_mcp._server._completion" in sys.modules
        assert "trio_mcp._server._uri_template" in sys.modules
        caps = server.capabilities()
        assert {{"tools", "prompts", "resources", "completions"}} <= caps.keys(), caps
        print("ok")
    """)


def _simple(name: str, seats: int, kind: Literal["a", 1] = "a", ratio: float | None = None) -> None:
    """A tool with simple arguments only."""


def _nested(items: list[dict[str, int]]) -> None:
    """A tool whose schema the quick check does not understand."""


def test_a_simple_generated_schema_is_checked_when_its_validator_is_built() -> None:
    signature = FunctionSignature.from_function(_simple, context_types=(Context, RequestContext))
    assert signature.quick_check is not None
    assert not signature.schema_checked
    # Valid by construction, and checked all the same once jsonschema is needed.
    validator_class().check_schema(signature.input_schema)
    assert signature.validator.is_valid({"name": "a", "seats": 2})
    assert not signature.validator.is_valid({"name": "a", "seats": "2"})


def test_other_schemas_are_checked_when_the_signature_is_built() -> None:
    nested = FunctionSignature.from_function(_nested, context_types=(Context, RequestContext))
    assert nested.quick_check is None
    assert nested.schema_checked
    explicit_schema: dict[str, Any] = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "seats": {"type": "integer"}},
        "required": ["name", "seats"],
        "additionalProperties": False,
    }
    explicit = FunctionSignature.from_function(
        _simple, context_types=(Context, RequestContext), input_schema=explicit_schema
    )
    assert explicit.schema_checked
    bad_schema = dict(explicit_schema, properties={"name": {"type": 7}, "seats": {}})
    with pytest.raises(Exception, match="7"):
        FunctionSignature.from_function(
            _simple, context_types=(Context, RequestContext), input_schema=bad_schema
        )
