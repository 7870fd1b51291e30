"""The fixture server for the official MCP conformance harness (server mode).

Run ``python examples/conformance_server.py --port PORT`` and point
``conformance server --url http://127.0.0.1:PORT/mcp`` at it (``scripts/conformance``
does both). It serves Streamable HTTP at ``/mcp`` with sessions, an event store
(resumable streams, priming events with a ``retry`` field) and the default
DNS-rebinding protection (loopback Host/Origin only), and exposes exactly what
the harness's server scenarios call: the ``test_*`` tools, the ``test://``
resources and template, the ``test_*`` prompts, a completion, logging, progress,
and sampling and elicitation round trips. Only the public API is used.

With ``--port 0`` a free port is picked; the first line on stdout is always
``listening on <url>`` once the server accepts connections.
"""

from __future__ import annotations

import argparse
import base64
import sys
from typing import Any, TypedDict

import attrs
import orjson
import trio

from trio_mcp import Context, Server, ToolError, http_app, serve_http
from trio_mcp import types as t
from trio_mcp.lowlevel import RequestContext
from trio_mcp.transports import MemoryEventStore

# A 1x1 PNG and a minimal (empty) WAV file.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = base64.b64decode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")

#: The tool whose input schema must be listed verbatim (SEP-1613, json-schema-2020-12).
SCHEMA_TOOL = "json_schema_2020_12_tool"
SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}

#: SEP-1034: a default for every primitive type.
DEFAULTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}

#: SEP-1330: the five enum shapes.
ENUMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Select one option",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Select one option with titles",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Select multiple options",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Select multiple options with titles",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}


class Address(TypedDict, total=False):
    street: str
    city: str


class ConformanceServer(Server):
    """A :class:`Server` that lists :data:`SCHEMA_TOOL` with a hand-written schema.

    The tool registry derives input schemas from signatures and has no option
    for a verbatim JSON Schema (with ``$schema`` and ``$defs``), which the
    ``json-schema-2020-12`` scenario checks; so the ``tools/list`` result is
    adjusted here, through the public dispatch method.
    """

    async def handle_request(self, ctx: RequestContext) -> Any:
        result = await super().handle_request(ctx)
        if ctx.method == "tools/list" and isinstance(result, t.ListToolsResult):
            tools = [
                _with_schema(tool, SCHEMA_2020_12) if tool.name == SCHEMA_TOOL else tool
                for tool in result.tools
            ]
            result = t.ListToolsResult(tools=tools, next_cursor=result.next_cursor)
        return result


def _with_schema(tool: t.Tool, schema: dict[str, Any]) -> t.Tool:
    return attrs.evolve(tool, input_schema=schema)


def _text(result: Any) -> str:
    content = getattr(result, "content", None)
    blocks = content if isinstance(content, list) else [content]
    texts = [b.text for b in blocks if isinstance(b, t.TextContent)]
    return " ".join(texts) or "(no text)"


def build_server() -> ConformanceServer:
    """The conformance fixture (a fresh registry per call)."""
    server = ConformanceServer("trio-mcp-conformance-server", "1.0.0")

    # ------------------------------------------------------------ tools

    @server.tool()
    async def test_simple_text() -> str:
        """Tests simple text content response."""
        return "This is a simple text response for testing."

    @server.tool()
    async def test_image_content() -> t.ImageContent:
        """Tests image content response."""
        return t.ImageContent.from_bytes(PNG, "image/png")

    @server.tool()
    async def test_audio_content() -> t.AudioContent:
        """Tests audio content response."""
        return t.AudioContent.from_bytes(WAV, "audio/wav")

    @server.tool()
    async def test_embedded_resource() -> t.EmbeddedResource:
        """Tests embedded resource content response."""
        return t.EmbeddedResource(
            resource=t.TextResourceContents(
                uri="test://embedded-resource",
                mime_type="text/plain",
                text="This is an embedded resource content.",
            )
        )

    @server.tool()
    async def test_multiple_content_types() -> list[
        t.TextContent | t.ImageContent | t.EmbeddedResource
    ]:
        """Tests response with multiple content types (text, image, resource)."""
        return [
            t.TextContent(text="Multiple content types test:"),
            t.ImageContent.from_bytes(PNG, "image/png"),
            t.EmbeddedResource(
                resource=t.TextResourceContents(
                    uri="test://mixed-content-resource",
                    mime_type="application/json",
                    text=orjson.dumps({"test": "data", "value": 123}).decode(),
                )
            ),
        ]

    @server.tool()
    async def test_tool_with_logging(ctx: Context) -> str:
        """Tests tool that emits log messages during execution."""
        await ctx.info("Tool execution started", logger="conformance")
        await trio.sleep(0.05)
        await ctx.info("Tool processing data", logger="conformance")
        await trio.sleep(0.05)
        await ctx.info("Tool execution completed", logger="conformance")
        return "Tool with logging executed successfully"

    @server.tool()
    async def test_tool_with_progress(ctx: Context) -> str:
        """Tests tool that reports progress notifications."""
        for step in (0, 50, 100):
            if step:
                await trio.sleep(0.05)
            await ctx.report_progress(step, total=100, message=f"Completed step {step} of 100")
        return f"progress token: {ctx.progress_token}"

    @server.tool()
    async def test_error_handling() -> str:
        """Tests error response handling."""
        raise ToolError("This tool intentionally returns an error for testing")

    @server.tool()
    async def test_reconnection() -> str:
        """Tests SSE stream resumption (SEP-1699): the result arrives on the
        request's stream, after a priming event that carries a retry field."""
        await trio.sleep(0.1)
        return "Reconnection test completed successfully."

    @server.tool()
    async def test_sampling(ctx: Context, prompt: str) -> str:
        """Tests server-initiated sampling (LLM completion request).

        Args:
            prompt: The prompt to send to the LLM.
        """
        result = await ctx.create_message(
            t.CreateMessageRequestParams(
                messages=[t.SamplingMessage(role="user", content=t.TextContent(text=prompt))],
                max_tokens=100,
            )
        )
        return f"LLM response: {_text(result)}"

    @server.tool()
    async def test_elicitation(ctx: Context, message: str) -> str:
        """Tests server-initiated elicitation (user input request).

        Args:
            message: The message to show the user.
        """
        result = await ctx.elicit(
            t.ElicitRequestFormParams(
                message=message,
                requested_schema={
                    "type": "object",
                    "properties": {
                        "response": {"type": "string", "description": "User's response"}
                    },
                    "required": ["response"],
                },
            )
        )
        return f"User response: action={result.action}, content={_json(result.content)}"

    @server.tool()
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Tests elicitation with default values per SEP-1034."""
        result = await ctx.elicit(
            t.ElicitRequestFormParams(
                message="Please review and update the form fields with defaults",
                requested_schema=DEFAULTS_SCHEMA,
            )
        )
        return f"Elicitation completed: action={result.action}, content={_json(result.content)}"

    @server.tool()
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        """Tests elicitation with enum schema improvements per SEP-1330."""
        result = await ctx.elicit(
            t.ElicitRequestFormParams(
                message="Please select options from the enum fields",
                requested_schema=ENUMS_SCHEMA,
            )
        )
        return f"Elicitation completed: action={result.action}, content={_json(result.content)}"

    @server.tool(name=SCHEMA_TOOL)
    async def json_schema_tool(name: str | None = None, address: Address | None = None) -> str:
        """Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)."""
        return f"JSON Schema 2020-12 tool called with: name={name!r}, address={address!r}"

    # -------------------------------------------------------- resources

    @server.resource("test://static-text", name="static-text", mime_type="text/plain")
    async def static_text() -> str:
        """A static text resource for testing."""
        return "This is the content of the static text resource."

    @server.resource("test://static-binary", name="static-binary", mime_type="image/png")
    async def static_binary() -> bytes:
        """A static binary resource (image) for testing."""
        return PNG

    @server.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
    async def watched_resource() -> str:
        """A resource clients may subscribe to."""
        return "Watched resource content"

    @server.resource_template(
        "test://template/{id}/data", name="template", mime_type="application/json"
    )
    async def template(id: str) -> str:
        """A resource template with parameter substitution."""
        return orjson.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"}).decode()

    # ---------------------------------------------------------- prompts

    @server.prompt(title="Simple Test Prompt")
    async def test_simple_prompt() -> str:
        """A simple prompt without arguments."""
        return "This is a simple prompt for testing."

    @server.prompt(title="Prompt With Arguments")
    async def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
        """A prompt with required arguments.

        Args:
            arg1: First test argument.
            arg2: Second test argument.
        """
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @server.prompt(title="Prompt With Embedded Resource")
    async def test_prompt_with_embedded_resource(resourceUri: str) -> list[t.PromptMessage]:
        """A prompt that includes an embedded resource.

        Args:
            resourceUri: URI of the resource to embed.
        """
        embedded = t.EmbeddedResource(
            resource=t.TextResourceContents(
                uri=resourceUri,
                mime_type="text/plain",
                text="Embedded resource content for testing.",
            )
        )
        return [
            t.PromptMessage(role="user", content=embedded),
            t.PromptMessage(
                role="user", content=t.TextContent(text="Please process the embedded resource.")
            ),
        ]

    @server.prompt(title="Prompt With Image")
    async def test_prompt_with_image() -> list[t.PromptMessage]:
        """A prompt that includes image content."""
        return [
            t.PromptMessage(role="user", content=t.ImageContent.from_bytes(PNG, "image/png")),
            t.PromptMessage(role="user", content=t.TextContent(text="Please analyze the image.")),
        ]

    # ------------------------------------------------------- completion

    @server.completion(prompt="test_prompt_with_arguments", argument="arg1")
    def complete_arg1(value: str) -> list[str]:
        return [v for v in ("test", "testing", "tested") if v.startswith(value)]

    return server


def _json(value: Any) -> str:
    return orjson.dumps(value if value is not None else {}).decode()


async def main(host: str, port: int) -> None:
    server = build_server()
    app = http_app(
        server,
        # Resumable streams: priming events carry an id and this retry (ms).
        event_store=MemoryEventStore(),
        retry_interval=1000,
    )
    async with trio.open_nursery() as nursery:
        base = await nursery.start(serve_http, app, host, port)
        print(f"listening on {base}/mcp", flush=True)


def cli(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3001)
    args = parser.parse_args(argv)
    try:
        trio.run(main, args.host, args.port)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    cli()
