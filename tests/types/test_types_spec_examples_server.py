"""Spec-page JSON examples (base protocol, server features) round-tripped strictly.

Each row is (page, class, params-or-result object) hand-copied from the page
named (``docs/specification/<revision>/<page>.mdx``); only the ``params`` or
``result`` member of the JSON-RPC message is kept. Structuring with the strict
converter catches renames (unknown keys fail); unstructuring must give back
exactly the input.
"""

from typing import Any

import pytest

from trio_mcp import types as t

S = "2025-11-25/"
P24 = "2024-11-05/"
P25_06 = "2025-06-18/"

WEATHER_TEXT = "Current weather in New York:\nTemperature: 72°F\nConditions: Partly cloudy"
TASK_ID = "786512e2-9e0d-44bd-8f29-789f320fe840"
RUST_MAIN = 'fn main() {\n    println!("Hello world!");\n}'
GET_WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name"}},
    "required": ["city"],
}

EXAMPLES: list[tuple[str, type[Any] | Any, dict[str, Any]]] = [
    # --- lifecycle ---------------------------------------------------------
    (
        S + "basic/lifecycle",
        t.InitializeRequestParams,
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "roots": {"listChanged": True},
                "sampling": {},
                "elicitation": {"form": {}, "url": {}},
                "tasks": {
                    "requests": {
                        "elicitation": {"create": {}},
                        "sampling": {"createMessage": {}},
                    }
                },
            },
            "clientInfo": {
                "name": "ExampleClient",
                "title": "Example Client Display Name",
                "version": "1.0.0",
                "description": "An example MCP client application",
                "icons": [
                    {
                        "src": "https://example.com/icon.png",
                        "mimeType": "image/png",
                        "sizes": ["48x48"],
                    }
                ],
                "websiteUrl": "https://example.com",
            },
        },
    ),
    (
        S + "basic/lifecycle",
        t.InitializeResult,
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "logging": {},
                "prompts": {"listChanged": True},
                "resources": {"subscribe": True, "listChanged": True},
                "tools": {"listChanged": True},
                "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
            },
            "serverInfo": {
                "name": "ExampleServer",
                "title": "Example Server Display Name",
                "version": "1.0.0",
                "description": "An example MCP server providing tools and resources",
                "icons": [
                    {
                        "src": "https://example.com/server-icon.svg",
                        "mimeType": "image/svg+xml",
                        "sizes": ["any"],
                    }
                ],
                "websiteUrl": "https://example.com/server",
            },
            "instructions": "Optional instructions for the client",
        },
    ),
    (
        P24 + "basic/lifecycle",
        t.InitializeRequestParams,
        {
            "protocolVersion": "2024-11-05",
            "capabilities": {"roots": {"listChanged": True}, "sampling": {}},
            "clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
        },
    ),
    (
        P24 + "basic/lifecycle",
        t.InitializeResult,
        {
            "protocolVersion": "2024-11-05",
            "capabilities": {
                "logging": {},
                "prompts": {"listChanged": True},
                "resources": {"subscribe": True, "listChanged": True},
                "tools": {"listChanged": True},
            },
            "serverInfo": {"name": "ExampleServer", "version": "1.0.0"},
        },
    ),
    # notifications/initialized: no params on the page; an empty object is legal.
    (S + "basic/lifecycle", t.NotificationParams, {}),
    (
        S + "basic/utilities/tasks",
        t.ClientCapabilities,
        {
            "tasks": {
                "list": {},
                "cancel": {},
                "requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}},
            }
        },
    ),
    (S + "server/utilities/completion", t.ServerCapabilities, {"completions": {}}),
    (S + "server/resources", t.ServerCapabilities, {"resources": {}}),
    (S + "client/sampling", t.ClientCapabilities, {"sampling": {"tools": {}}}),
    (S + "client/sampling", t.ClientCapabilities, {"sampling": {"context": {}}}),
    (P25_06 + "client/elicitation", t.ClientCapabilities, {"elicitation": {}}),
    # --- ping, cancellation, progress --------------------------------------
    (S + "basic/utilities/ping", t.RequestParams, {}),
    (S + "basic/utilities/ping", t.EmptyResult, {}),
    (
        S + "basic/utilities/cancellation",
        t.CancelledNotificationParams,
        {"requestId": "123", "reason": "User requested cancellation"},
    ),
    (S + "basic/utilities/progress", t.RequestParams, {"_meta": {"progressToken": "abc123"}}),
    (
        S + "basic/utilities/progress",
        t.ProgressNotificationParams,
        {
            "progressToken": "abc123",
            "progress": 50,
            "total": 100,
            "message": "Reticulating splines...",
        },
    ),
    # --- tools -------------------------------------------------------------
    (S + "server/tools", t.PaginatedRequestParams, {"cursor": "optional-cursor-value"}),
    (
        S + "server/tools",
        t.ListToolsResult,
        {
            "tools": [
                {
                    "name": "get_weather",
                    "title": "Weather Information Provider",
                    "description": "Get current weather information for a location",
                    "inputSchema": {
                        "type": "object",
                        "properties": {
                            "location": {
                                "type": "string",
                                "description": "City name or zip code",
                            }
                        },
                        "required": ["location"],
                    },
                    "icons": [
                        {
                            "src": "https://example.com/weather-icon.png",
                            "mimeType": "image/png",
                            "sizes": ["48x48"],
                        }
                    ],
                    "execution": {"taskSupport": "optional"},
                }
            ],
            "nextCursor": "next-page-cursor",
        },
    ),
    (
        P24 + "server/tools",
        t.ListToolsResult,
        {
            "tools": [
                {
                    "name": "get_weather",
                    "description": "Get current weather information for a location",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"location": {"type": "string"}},
                        "required": ["location"],
                    },
                }
            ],
            "nextCursor": "next-page-cursor",
        },
    ),
    (
        S + "server/tools",
        t.CallToolRequestParams,
        {"name": "get_weather", "arguments": {"location": "New York"}},
    ),
    (
        S + "server/tools",
        t.CallToolResult,
        {"content": [{"type": "text", "text": WEATHER_TEXT}], "isError": False},
    ),
    (
        S + "server/tools",
        t.CallToolResult,
        {
            "content": [
                {
                    "type": "text",
                    "text": '{"temperature": 22.5, "conditions": "Partly cloudy", "humidity": 65}',
                }
            ],
            "structuredContent": {
                "temperature": 22.5,
                "conditions": "Partly cloudy",
                "humidity": 65,
            },
        },
    ),
    (
        S + "server/tools",
        t.Tool,
        {
            "name": "calculate_sum",
            "description": "Add two numbers",
            "inputSchema": {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        },
    ),
    (
        S + "server/tools",
        t.Tool,
        {
            "name": "get_weather_data",
            "title": "Weather Data Retriever",
            "description": "Get current weather data for a location",
            "inputSchema": {"type": "object", "properties": {}, "required": []},
            "outputSchema": {
                "type": "object",
                "properties": {"temperature": {"type": "number"}},
                "required": ["temperature"],
            },
        },
    ),
    (
        S + "server/tools",
        t.ImageContent,
        {
            "type": "image",
            "data": "base64-encoded-data",
            "mimeType": "image/png",
            "annotations": {"audience": ["user"], "priority": 0.9},
        },
    ),
    (
        S + "server/tools",
        t.ResourceLink,
        {
            "type": "resource_link",
            "uri": "file:///project/src/main.rs",
            "name": "main.rs",
            "description": "Primary application entry point",
            "mimeType": "text/x-rust",
        },
    ),
    (
        S + "server/tools",
        t.CallToolResult,
        {
            "content": [
                {
                    "type": "text",
                    "text": "Invalid departure date: must be in the future. "
                    "Current date is 08/08/2025.",
                }
            ],
            "isError": True,
        },
    ),
    (S + "server/tools", t.NotificationParams, {}),  # notifications/tools/list_changed
    # --- resources ---------------------------------------------------------
    (S + "server/resources", t.PaginatedRequestParams, {"cursor": "optional-cursor-value"}),
    (
        S + "server/resources",
        t.ListResourcesResult,
        {
            "resources": [
                {
                    "uri": "file:///project/src/main.rs",
                    "name": "main.rs",
                    "title": "Rust Software Application Main File",
                    "description": "Primary application entry point",
                    "mimeType": "text/x-rust",
                    "icons": [
                        {
                            "src": "https://example.com/rust-file-icon.png",
                            "mimeType": "image/png",
                            "sizes": ["48x48"],
                        }
                    ],
                }
            ],
            "nextCursor": "next-page-cursor",
        },
    ),
    (S + "server/resources", t.ReadResourceRequestParams, {"uri": "file:///project/src/main.rs"}),
    (
        S + "server/resources",
        t.ReadResourceResult,
        {
            "contents": [
                {
                    "uri": "file:///project/src/main.rs",
                    "mimeType": "text/x-rust",
                    "text": RUST_MAIN,
                }
            ]
        },
    ),
    (
        S + "server/resources",
        t.ReadResourceResult,
        {"contents": [{"uri": "file:///example.png", "mimeType": "image/png", "blob": "AAEC"}]},
    ),
    (
        S + "server/resources",
        t.ListResourceTemplatesResult,
        {
            "resourceTemplates": [
                {
                    "uriTemplate": "file:///{path}",
                    "name": "Project Files",
                    "title": "📁 Project Files",
                    "description": "Access files in the project directory",
                    "mimeType": "application/octet-stream",
                    "icons": [
                        {
                            "src": "https://example.com/folder-icon.png",
                            "mimeType": "image/png",
                            "sizes": ["48x48"],
                        }
                    ],
                }
            ]
        },
    ),
    (S + "server/resources", t.SubscribeRequestParams, {"uri": "file:///project/src/main.rs"}),
    (S + "server/resources", t.UnsubscribeRequestParams, {"uri": "file:///project/src/main.rs"}),
    (
        S + "server/resources",
        t.ResourceUpdatedNotificationParams,
        {"uri": "file:///project/src/main.rs"},
    ),
    (
        S + "server/resources",
        t.Resource,
        {
            "uri": "file:///project/README.md",
            "name": "README.md",
            "title": "Project Documentation",
            "mimeType": "text/markdown",
            "annotations": {
                "audience": ["user"],
                "priority": 0.8,
                "lastModified": "2025-01-12T15:00:58Z",
            },
        },
    ),
    # --- prompts -----------------------------------------------------------
    (S + "server/prompts", t.PaginatedRequestParams, {"cursor": "optional-cursor-value"}),
    (
        S + "server/prompts",
        t.ListPromptsResult,
        {
            "prompts": [
                {
                    "name": "code_review",
                    "title": "Request Code Review",
                    "description": "Asks the LLM to analyze code quality and suggest improvements",
                    "arguments": [
                        {"name": "code", "description": "The code to review", "required": True}
                    ],
                    "icons": [
                        {
                            "src": "https://example.com/review-icon.svg",
                            "mimeType": "image/svg+xml",
                            "sizes": ["any"],
                        }
                    ],
                }
            ],
            "nextCursor": "next-page-cursor",
        },
    ),
    (
        S + "server/prompts",
        t.GetPromptRequestParams,
        {"name": "code_review", "arguments": {"code": "def hello():\n    print('world')"}},
    ),
    (
        S + "server/prompts",
        t.GetPromptResult,
        {
            "description": "Code review prompt",
            "messages": [
                {
                    "role": "user",
                    "content": {
                        "type": "text",
                        "text": "Please review this Python code:\ndef hello():\n    print('world')",
                    },
                },
                {
                    "role": "user",
                    "content": {
                        "type": "resource",
                        "resource": {
                            "uri": "resource://example",
                            "mimeType": "text/plain",
                            "text": "Resource content",
                        },
                    },
                },
                {
                    "role": "assistant",
                    "content": {
                        "type": "audio",
                        "data": "base64-encoded-audio-data",
                        "mimeType": "audio/wav",
                    },
                },
            ],
        },
    ),
    # --- logging -----------------------------------------------------------
    (S + "server/utilities/logging", t.SetLevelRequestParams, {"level": "info"}),
    (
        S + "server/utilities/logging",
        t.LoggingMessageNotificationParams,
        {
            "level": "error",
            "logger": "database",
            "data": {
                "error": "Connection failed",
                "details": {"host": "localhost", "port": 5432},
            },
        },
    ),
    # --- completion --------------------------------------------------------
    (
        S + "server/utilities/completion",
        t.CompleteRequestParams,
        {
            "ref": {"type": "ref/prompt", "name": "code_review"},
            "argument": {"name": "framework", "value": "fla"},
            "context": {"arguments": {"language": "python"}},
        },
    ),
    (
        S + "server/utilities/completion",
        t.CompleteResult,
        {"completion": {"values": ["python", "pytorch", "pyside"], "total": 10, "hasMore": True}},
    ),
    (
        P24 + "server/utilities/completion",
        t.CompleteRequestParams,
        {
            "ref": {"type": "ref/resource", "uri": "file:///{path}"},
            "argument": {"name": "path", "value": "src/"},
        },
    ),
]


def _id(page: str, cls: Any) -> str:
    return f"{page}:{getattr(cls, '__name__', repr(cls))}"


@pytest.mark.parametrize(
    ("page", "cls", "data"),
    [pytest.param(p, c, d, id=_id(p, c)) for p, c, d in EXAMPLES],
)
def test_spec_example_round_trips_strictly(page: str, cls: Any, data: dict[str, Any]) -> None:
    obj = t.strict_converter.structure(data, cls)
    assert t.strict_converter.unstructure(obj) == data
    # The default converter agrees with the strict one on well-formed input.
    assert t.converter.structure(data, cls) == obj


def test_every_params_and_result_class_of_these_chapters_has_an_example() -> None:
    covered = {cls for _, cls, _ in EXAMPLES}
    wanted = {
        obj
        for name in t.__all__
        if name.endswith(("RequestParams", "NotificationParams", "Result"))
        and isinstance(obj := getattr(t, name), type)
        and obj.__module__.rsplit(".", 1)[-1]
        in (
            "_base",
            "lifecycle",
            "cancellation",
            "progress",
            "tools",
            "resources",
            "prompts",
            "logging",
            "completion",
            "content",
        )
    }
    # Bases, and union members covered through their union.
    wanted -= {t.Result, t.PaginatedResult, t.CacheableResult, t.ResourceRequestParams}
    # 2026-07-28 only: its examples are in test_types_spec_examples_2026.py.
    wanted -= {t.ModernCallToolResult}
    missing = sorted(c.__name__ for c in wanted - covered)
    assert not missing
