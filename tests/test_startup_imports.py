"""A stdio server's start-up imports only what serving stdio needs.

A server process whose tools take simple arguments must not import ``httpx``,
``hypercorn``, ``trio_websocket`` (the HTTP and WebSocket transports) or
``jsonschema`` (built on first need: a tool whose quick argument check says no,
an explicit schema, a structured output). Each is tens of milliseconds of every
start-up. Checked on a real server process over stdio in both eras, after the
handshake, ``tools/list`` and a call; and the deferred meta-schema check still
happens when the full validator is first needed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Literal

import pytest

from trio_mcp import open_stdio_client
from trio_mcp._server._context import Context
from trio_mcp._server._schema import FunctionSignature, validator_class
from trio_mcp._session._engine import RequestContext

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
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
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
