"""The client validates structured output per the schema's declared dialect (JS-01..JS-03)."""

from __future__ import annotations

from typing import Any

import pytest
from client_fake_server import FakeServer, open_fake, text_result

from trio_mcp import InvalidPeerResult
from trio_mcp._client._cache import SUPPORTED_DIALECTS, validator_class
from trio_mcp._session import RequestContext

DRAFT7 = "http://json-schema.org/draft-07/schema#"


def tool(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}, **extra}


@pytest.mark.spec("JS-02")
@pytest.mark.spec("JS-03")
def test_declared_dialects_pick_their_validator_and_unknown_ones_are_refused() -> None:
    assert validator_class({"type": "object"}).__name__ == "Draft202012Validator"
    assert validator_class({"$schema": DRAFT7}).__name__ == "Draft7Validator"
    assert len(SUPPORTED_DIALECTS) == 5
    with pytest.raises(Exception, match="unsupported JSON Schema dialect"):
        validator_class({"$schema": "https://example.com/my-dialect"})


@pytest.mark.spec("JS-02")
async def test_a_tool_with_an_unsupported_dialect_fails_clearly_and_the_session_goes_on() -> None:
    schema: dict[str, Any] = {"$schema": "https://example.com/x", "type": "object"}
    # Draft 7 reads "exclusiveMaximum" as a number, as 2020-12 does; "dependencies"
    # only exists in draft 7: a dialect-specific keyword that must be honoured.
    draft7: dict[str, Any] = {
        "$schema": DRAFT7,
        "type": "object",
        "dependencies": {"a": ["b"]},
    }
    server = FakeServer(tools=[tool("odd", outputSchema=schema), tool("old", outputSchema=draft7)])

    async def odd(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
        return text_result("x", structuredContent={})

    async def old(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
        return text_result("x", structuredContent={"a": 1})  # "b" missing: invalid in draft 7

    server.tool_fns["odd"] = odd
    server.tool_fns["old"] = old
    async with open_fake(server) as client:
        with pytest.raises(InvalidPeerResult, match="invalid outputSchema") as info:
            await client.call_tool("odd")
        assert "unsupported JSON Schema dialect" in info.value.errors[0]
        with pytest.raises(InvalidPeerResult, match="does not match"):
            await client.call_tool("old")
        await client.ping()
