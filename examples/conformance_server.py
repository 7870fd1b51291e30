"""The fixture server for the official MCP conformance harness (server mode).

Run ``python examples/conformance_server.py --port PORT`` and point
``conformance server --url http://127.0.0.1:PORT/mcp`` at it (``scripts/conformance``
does both). It serves Streamable HTTP at ``/mcp`` in both eras on one endpoint:
handshake sessions (with an event store: resumable streams, priming events with
a ``retry`` field) and stateless 2026-07-28 requests, behind the default
DNS-rebinding protection (loopback Host/Origin only). It exposes exactly what
the harness's server scenarios call: the ``test_*`` tools, the ``test://``
resources and template, the ``test_*`` prompts, a completion, logging,
progress, the inputs a tool or prompt asks the client for (requests in the
handshake era, input-required rounds in 2026-07-28), and hooks that change the
tool and prompt lists. Only the public API is used.

What each scenario needs, and from whom (harness 0.2.0-alpha.12,
``--requirements 2025-11-25`` and ``--requirements 2026-07-28``; "fixture" is
this file, "transport" is ``trio_mcp``'s HTTP endpoint and protocol):

* ``tools-*``, ``resources-*``, ``prompts-*``, ``completion-complete``,
  ``ping``, ``logging-set-level``, ``elicitation-sep1034-defaults``,
  ``elicitation-sep1330-enums``, ``tools-call-sampling``,
  ``tools-call-elicitation``, ``tools-call-with-logging``: fixture, the names
  and shapes in the sections below (described in the harness notes).
  ``resources-subscribe``/``-unsubscribe`` and the three round-trip ``tools-call``
  scenarios are of the handshake era only (removed in 2026-07-28).
* ``server-initialize``, ``server-sse-multiple-streams``,
  ``dns-rebinding-protection``, ``server-session-lifecycle`` (unscored),
  ``server-sse-polling`` (pending): transport (sessions, concurrent SSE
  streams, Host/Origin checks, 404 after DELETE, resumption); the fixture only
  gives ``test_reconnection``.
* ``server-stateless`` (2026-07-28): transport for the ``_meta`` checks (-32602
  and 400), ``server/discover``, unsupported version and header mismatch (400,
  -32020), 404 with -32601 for removed and unknown methods, error ids, the
  listen stream's acknowledgement and ``subscriptionId`` tags and its filter.
  Fixture: ``test_missing_capability`` (needs ``sampling``: -32021 with
  ``requiredCapabilities: {"sampling": {}}``, 400 is the transport's),
  ``test_streaming_elicitation`` (its stream carries an input-required result,
  never a request), ``test_logging_tool`` (logs, so a request without
  ``logLevel`` shows that nothing is sent), ``test_trigger_tool_change`` and
  ``test_trigger_prompt_change`` (change the lists, so listen streams hear
  ``notifications/tools|prompts/list_changed``; ``listChanged`` declared).
* ``caching`` (2026-07-28): ``ttlMs`` and ``cacheScope`` on the list and read
  results: the protocol adds them; the fixture declares its hints
  (:data:`CACHE_HINTS`).
* ``sep-2164-resource-not-found`` (2026-07-28): -32602 with ``data.uri``: the
  server; the fixture only must not match ``test://nonexistent-...`` with its
  template.
* ``input-required-result-*`` (2026-07-28, SEP-2322): the round trips are the
  server's (``resultType``, sealed ``requestState``, -32602 on a tampered or
  malformed one, answers validated); the fixture gives the tools and the
  prompt named ``test_input_required_result_*`` that ask with the input keys
  the scenarios expect (``user_name``, ``capital_question``, ``client_roots``,
  ``confirm``, ``greeting``, ``step1``/``step2``, ``user_context``) and the
  tool that asks only for what the request's capabilities declare.
* ``json-schema-2020-12`` (pending, unscored): fixture, the verbatim
  :data:`SCHEMA_2020_12` (SEP-1613 and SEP-2106 keywords).
* ``http-header-validation`` (pending): transport. ``http-custom-header-server-validation``
  (pending): transport, on the fixture's ``test_header_param`` (a parameter
  mirrored into ``Mcp-Param-Region``).
* ``tasks-*`` (extension, unscored): the server's task runner and task
  methods (creation only for a request that declared the extension, -32021
  naming it otherwise, ``tasks/get``/``update``/``cancel``, the routing
  headers); the fixture gives the tools the scenarios call: ``greet``,
  ``slow_compute``, ``failing_job``, ``protocol_error_job``,
  ``confirm_delete``, ``multi_input`` and ``test_tool_with_task`` (an input
  round, then a task: ``defer_task``).

With ``--port 0`` a free port is picked; the first line on stdout is always
``listening on <url>`` once the server accepts connections.
"""

from __future__ import annotations

import argparse
import base64
import sys
from typing import Annotated, Any, Literal, TypedDict

import orjson
import trio

from trio_mcp import Context, Header, RPCError, Server, ToolError, http_app, serve_http
from trio_mcp import types as t
from trio_mcp.protocol import ALL_VERSIONS
from trio_mcp.transports import MemoryEventStore

# A 1x1 PNG and a minimal (empty) WAV file.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = base64.b64decode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")

#: The tool whose input schema must be listed verbatim (json-schema-2020-12:
#: SEP-1613's ``$schema``, ``$defs`` and ``additionalProperties``, and SEP-2106's
#: ``$anchor``, ``allOf``/``anyOf`` and ``if``/``then``/``else``).
SCHEMA_TOOL = "json_schema_2020_12_tool"
SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

#: 2026-07-28 cache hints (caching, SEP-2549): the tool and prompt lists change
#: at run time (the trigger tools), so they are stale at once; the resource
#: lists are fixed for the process's life.
CACHE_HINTS: dict[str, tuple[int, t.CacheScope]] = {
    "tools/list": (0, "private"),
    "prompts/list": (0, "private"),
    "resources/list": (60_000, "public"),
    "resources/templates/list": (60_000, "public"),
    "resources/read": (0, "private"),
}

#: What the tool and prompt triggers add and remove (server-stateless).
DYNAMIC_TOOL = "test_dynamic_tool"
DYNAMIC_PROMPT = "test_dynamic_prompt"

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


#: The forms of the input-required scenarios (SEP-2322).
NAME_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
COLOR_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"color": {"type": "string"}},
    "required": ["color"],
}
CONFIRM_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}
CONTEXT_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"context": {"type": "string"}},
    "required": ["context"],
}
#: The forms of the tasks extension's fixtures (SEP-2663).
CONFIRM_DELETE: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}
CONFIRM_ACTION = CONFIRM_DELETE


def _form(message: str, schema: dict[str, Any]) -> tuple[str, t.ElicitRequestFormParams]:
    return "elicitation/create", t.ElicitRequestFormParams(message=message, requested_schema=schema)


def _sampling(text: str, max_tokens: int) -> tuple[str, t.CreateMessageRequestParams]:
    return "sampling/createMessage", t.CreateMessageRequestParams(
        messages=[t.SamplingMessage(role="user", content=t.TextContent(text=text))],
        max_tokens=max_tokens,
    )


ROOTS: tuple[str, None] = ("roots/list", None)


def _field(result: t.ElicitResult, name: str) -> str:
    """A field of an elicitation's answer, or what the user did instead."""
    if result.action != "accept" or not result.content or name not in result.content:
        return f"({result.action})"
    return str(result.content[name])


def _roots(result: t.ListRootsResult) -> str:
    return ", ".join(root.uri for root in result.roots) or "(none)"


def _text(result: Any) -> str:
    content = getattr(result, "content", None)
    blocks = content if isinstance(content, list) else [content]
    texts = [b.text for b in blocks if isinstance(b, t.TextContent)]
    return " ".join(texts) or "(no text)"


def build_server() -> Server:
    """The conformance fixture (a fresh registry per call), serving both eras."""
    server = Server(
        "trio-mcp-conformance-server",
        "1.0.0",
        # Both eras, 2026-07-28 first (it is what the 2026-07-28 set runs at).
        protocol_versions=ALL_VERSIONS,
        cache_hints=CACHE_HINTS,
    )

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

    @server.tool(name=SCHEMA_TOOL, input_schema=SCHEMA_2020_12)
    async def json_schema_tool(
        name: str | None = None,
        address: Address | None = None,
        contactMethod: Literal["phone", "email"] | None = None,
        phone: str | None = None,
        email: str | None = None,
    ) -> str:
        """Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613, SEP-2106)."""
        return f"JSON Schema 2020-12 tool called with: name={name!r}, address={address!r}"

    @server.tool()
    async def test_header_param(region: Annotated[str, Header("Region")]) -> str:
        """Tests a parameter mirrored into the Mcp-Param-Region header (SEP-2243).

        Args:
            region: Where to run; sent in the body and as the Mcp-Param-Region header.
        """
        return f"Region: {region}"

    # ---------------------------------------- server-stateless (2026-07-28)

    @server.tool()
    async def test_missing_capability(ctx: Context) -> str:
        """Tests a tool that needs the client's sampling capability.

        A request that did not declare ``sampling`` gets -32021 with
        ``requiredCapabilities: {"sampling": {}}`` before anything is asked.
        """
        result = await ctx.create_message(_sampling("Say hello.", 20)[1])
        return f"Sampled: {_text(result)}"

    @server.tool()
    async def test_streaming_elicitation(ctx: Context) -> str:
        """Tests a tool whose response stream carries an input request, never a
        server request (2026-07-28: an input-required result)."""
        result = await ctx.elicit(_form("Continue?", CONFIRM_FORM)[1])
        return f"Streaming elicitation: ok={_field(result, 'ok')}"

    @server.tool()
    async def test_logging_tool(ctx: Context) -> str:
        """Tests a tool that logs: in 2026-07-28 only a request that set a
        log level (``io.modelcontextprotocol/logLevel``) hears of it."""
        await ctx.info("Logging tool started", logger="conformance")
        await ctx.debug("Logging tool working", logger="conformance")
        await ctx.info("Logging tool completed", logger="conformance")
        return "Logging tool executed"

    dynamic = {"tool": False, "prompt": False}

    async def dynamic_tool() -> str:
        """A tool added and removed by test_trigger_tool_change."""
        return "dynamic tool"

    async def dynamic_prompt() -> str:
        """A prompt added and removed by test_trigger_prompt_change."""
        return "dynamic prompt"

    @server.tool()
    async def test_trigger_tool_change() -> str:
        """Tests tools/list change notices: adds or removes the tool test_dynamic_tool."""
        if dynamic["tool"]:
            server.remove_tool(DYNAMIC_TOOL)
        else:
            server.add_tool(dynamic_tool, name=DYNAMIC_TOOL)
        dynamic["tool"] = not dynamic["tool"]
        return f"{DYNAMIC_TOOL} {'added' if dynamic['tool'] else 'removed'}"

    @server.tool()
    async def test_trigger_prompt_change() -> str:
        """Tests prompts/list change notices: adds or removes the prompt test_dynamic_prompt."""
        if dynamic["prompt"]:
            server.remove_prompt(DYNAMIC_PROMPT)
        else:
            server.add_prompt(dynamic_prompt, name=DYNAMIC_PROMPT)
        dynamic["prompt"] = not dynamic["prompt"]
        return f"{DYNAMIC_PROMPT} {'added' if dynamic['prompt'] else 'removed'}"

    # ------------------------- input-required-result-* (2026-07-28, SEP-2322)
    # Each asks with the input keys the scenarios name. In the handshake era the
    # same tools send the inputs as requests to the client.

    @server.tool()
    async def test_input_required_result_elicitation(ctx: Context) -> str:
        """Tests one elicitation input (key user_name); greets the user."""
        answers = await ctx.request_inputs({"user_name": _form("What is your name?", NAME_FORM)})
        return f"Hello, {_field(answers['user_name'], 'name')}!"

    @server.tool()
    async def test_input_required_result_sampling(ctx: Context) -> str:
        """Tests one sampling input (key capital_question); returns the model's answer."""
        answers = await ctx.request_inputs(
            {"capital_question": _sampling("What is the capital of France?", 100)}
        )
        return f"The model said: {_text(answers['capital_question'])}"

    @server.tool()
    async def test_input_required_result_list_roots(ctx: Context) -> str:
        """Tests one roots/list input (key client_roots); lists the client's roots."""
        answers = await ctx.request_inputs({"client_roots": ROOTS})
        return f"Client roots: {_roots(answers['client_roots'])}"

    @server.tool()
    async def test_input_required_result_request_state(ctx: Context) -> str:
        """Tests the requestState round trip (key confirm): says state-ok when the
        answer came with the verified requestState of the round before."""
        answers = await ctx.request_inputs({"confirm": _form("Please confirm", CONFIRM_FORM)})
        # ctx.round > 1 only when a requestState came back and was verified.
        verdict = "state-ok" if ctx.round > 1 else "no requestState echoed"
        return f"{verdict}: ok={_field(answers['confirm'], 'ok')}"

    @server.tool()
    async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
        """Tests three inputs of three kinds in one round (user_name, greeting, client_roots)."""
        answers = await ctx.request_inputs(
            {
                "user_name": _form("What is your name?", NAME_FORM),
                "greeting": _sampling("Generate a greeting", 50),
                "client_roots": ROOTS,
            }
        )
        return (
            f"{_text(answers['greeting'])} {_field(answers['user_name'], 'name')}; "
            f"roots: {_roots(answers['client_roots'])}"
        )

    @server.tool()
    async def test_input_required_result_multi_round(ctx: Context) -> str:
        """Tests two rounds of input (step1, then step2) and a third that completes."""
        first = await ctx.request_inputs({"step1": _form("Step 1: What is your name?", NAME_FORM)})
        second = await ctx.request_inputs(
            {"step2": _form("Step 2: What is your favorite color?", COLOR_FORM)}
        )
        return (
            f"{_field(first['step1'], 'name')} likes {_field(second['step2'], 'color')} "
            f"(round {ctx.round})"
        )

    @server.tool()
    async def test_input_required_result_tampered_state(ctx: Context) -> str:
        """Tests that a tampered requestState is refused (-32602) before this runs again."""
        answers = await ctx.request_inputs({"confirm": _form("Please confirm", CONFIRM_FORM)})
        return f"Confirmed: ok={_field(answers['confirm'], 'ok')}"

    @server.tool()
    async def test_input_required_result_capabilities(ctx: Context) -> str:
        """Tests asking only for inputs whose capability the request declared
        (sampling and/or elicitation)."""
        declared = ctx.client_capabilities
        inputs: dict[str, tuple[str, Any]] = {}
        if "sampling" in declared:
            inputs["capital_question"] = _sampling("What is the capital of France?", 100)
        if "elicitation" in declared:
            inputs["user_name"] = _form("What is your name?", NAME_FORM)
        if not inputs:
            return "The client declared neither sampling nor elicitation: nothing to ask."
        answers = await ctx.request_inputs(inputs)
        return f"Answered: {', '.join(sorted(answers))}"

    # ------------------------------------------------------------ tasks
    # The io.modelcontextprotocol/tasks extension's fixtures (SEP-2663; the
    # harness's tasks-* scenarios). Each is an ordinary tool with a
    # task_support: the server decides per request whether the call becomes a
    # task (only when the request declared the extension).

    @server.tool()
    async def greet(name: str) -> str:
        """Greets by name; never a task."""
        return f"Hello, {name}!"

    @server.tool(task_support="optional")
    async def slow_compute(seconds: int = 3, label: str = "default") -> str:
        """Computes for *seconds* seconds (a task when the client declared the
        extension; a plain call otherwise). Cancelled at once by tasks/cancel."""
        await trio.sleep(seconds)
        return f'Computation "{label}" completed after {seconds} seconds. Result: 42.'

    @server.tool(task_support="required")
    async def failing_job() -> str:
        """Runs only as a task; after a second it reports a tool error (isError)."""
        await trio.sleep(1)
        raise ToolError("The job failed: the input was not valid.")

    @server.tool(task_support="required")
    async def protocol_error_job() -> str:
        """Runs only as a task; after half a second it fails with a JSON-RPC error."""
        await trio.sleep(0.5)
        raise RPCError(-32603, "The job crashed (a protocol-level failure)")

    @server.tool(task_support="required")
    async def confirm_delete(ctx: Context, filename: str = "important.txt") -> str:
        """Runs only as a task; asks the user to confirm, then says what it did."""
        answer = await ctx.elicit(
            {"mode": "form", "message": f"Delete '{filename}'?", "requestedSchema": CONFIRM_DELETE}
        )
        confirmed = answer.action == "accept" and (answer.content or {}).get("confirm") is True
        return f"deleted '{filename}'" if confirmed else f"kept '{filename}'"

    @server.tool(task_support="required")
    async def multi_input(ctx: Context) -> str:
        """Runs only as a task; asks two questions at once (both outstanding together)."""
        answers = await ctx.request_inputs(
            {
                "name": _form("Enter your name:", NAME_FORM),
                "confirm": _form("Confirm action?", CONFIRM_ACTION),
            }
        )
        name = (answers["name"].content or {}).get("name")
        confirmed = (answers["confirm"].content or {}).get("confirm")
        return f"name={name!r} confirmed={confirmed}"

    @server.tool(task_support="required", defer_task=True)
    async def test_tool_with_task(ctx: Context) -> str:
        """Asks for a name in an input-required round, then becomes a task
        (SEP-2663: input rounds before the task is created) that greets."""
        answers = await ctx.request_inputs({"user_name": _form("What is your name?", NAME_FORM)})
        await ctx.start_task()
        await trio.sleep(0.05)
        return f"Hello, {_field(answers['user_name'], 'name')}! (computed in task)"

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

    @server.prompt(title="Prompt With Input")
    async def test_input_required_result_prompt(ctx: Context) -> str:
        """A prompt that asks the user for its context (key user_context, SEP-2322)."""
        answers = await ctx.request_inputs(
            {"user_context": _form("What context should the prompt use?", CONTEXT_FORM)}
        )
        return f"Answer with this context in mind: {_field(answers['user_context'], 'context')}"

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
