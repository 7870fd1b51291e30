"""Spec-page JSON examples (client features, tasks) round-tripped strictly.

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
    # --- sampling ----------------------------------------------------------
    (
        S + "client/sampling",
        t.CreateMessageRequestParams,
        {
            "messages": [
                {
                    "role": "user",
                    "content": {"type": "text", "text": "What is the capital of France?"},
                }
            ],
            "modelPreferences": {
                "hints": [{"name": "claude-3-sonnet"}],
                "intelligencePriority": 0.8,
                "speedPriority": 0.5,
            },
            "systemPrompt": "You are a helpful assistant.",
            "maxTokens": 100,
        },
    ),
    (
        S + "client/sampling",
        t.CreateMessageResult,
        {
            "role": "assistant",
            "content": {"type": "text", "text": "The capital of France is Paris."},
            "model": "claude-3-sonnet-20240307",
            "stopReason": "endTurn",
        },
    ),
    (
        S + "client/sampling",
        t.CreateMessageRequestParams,
        {
            "messages": [
                {
                    "role": "user",
                    "content": {
                        "type": "text",
                        "text": "What's the weather like in Paris and London?",
                    },
                },
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "call_abc123",
                            "name": "get_weather",
                            "input": {"city": "Paris"},
                        },
                        {
                            "type": "tool_use",
                            "id": "call_def456",
                            "name": "get_weather",
                            "input": {"city": "London"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "toolUseId": "call_abc123",
                            "content": [
                                {"type": "text", "text": "Weather in Paris: 18°C, partly cloudy"}
                            ],
                        },
                        {
                            "type": "tool_result",
                            "toolUseId": "call_def456",
                            "content": [{"type": "text", "text": "Weather in London: 15°C, rainy"}],
                        },
                    ],
                },
            ],
            "tools": [
                {
                    "name": "get_weather",
                    "description": "Get current weather for a city",
                    "inputSchema": GET_WEATHER_SCHEMA,
                }
            ],
            "toolChoice": {"mode": "auto"},
            "maxTokens": 1000,
        },
    ),
    (
        S + "client/sampling",
        t.CreateMessageResult,
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "call_abc123",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {
                    "type": "tool_use",
                    "id": "call_def456",
                    "name": "get_weather",
                    "input": {"city": "London"},
                },
            ],
            "model": "claude-3-sonnet-20240307",
            "stopReason": "toolUse",
        },
    ),
    (
        S + "client/sampling",
        t.SamplingMessage,
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Here are the results:"},
                {
                    "type": "tool_result",
                    "toolUseId": "call_123",
                    "content": [{"type": "text", "text": "Result data"}],
                },
            ],
        },
    ),
    (
        S + "client/sampling",
        t.ModelPreferences,
        {
            "hints": [{"name": "claude-3-sonnet"}, {"name": "claude"}],
            "costPriority": 0.3,
            "speedPriority": 0.8,
            "intelligencePriority": 0.5,
        },
    ),
    (
        P24 + "client/sampling",
        t.CreateMessageResult,
        {
            "role": "assistant",
            "content": {
                "type": "image",
                "data": "base64-encoded-image-data",
                "mimeType": "image/jpeg",
            },
            "model": "claude-3-sonnet-20240307",
        },
    ),
    # --- roots -------------------------------------------------------------
    (S + "client/roots", t.RequestParams, {}),
    (
        S + "client/roots",
        t.ListRootsResult,
        {"roots": [{"uri": "file:///home/user/projects/myproject", "name": "My Project"}]},
    ),
    (S + "client/roots", t.NotificationParams, {}),  # notifications/roots/list_changed
    # --- elicitation -------------------------------------------------------
    (
        S + "client/elicitation",
        t.ElicitRequestParams,
        {
            "mode": "form",
            "message": "Please provide your contact information",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "Your full name"},
                    "email": {
                        "type": "string",
                        "format": "email",
                        "description": "Your email address",
                    },
                    "age": {"type": "number", "minimum": 18, "description": "Your age"},
                },
                "required": ["name", "email"],
            },
        },
    ),
    (
        P25_06 + "client/elicitation",
        t.ElicitRequestParams,
        {
            "message": "Please provide your GitHub username",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            },
        },
    ),
    (
        S + "client/elicitation",
        t.ElicitRequestParams,
        {
            "mode": "url",
            "elicitationId": "550e8400-e29b-41d4-a716-446655440000",
            "url": "https://mcp.example.com/ui/set_api_key",
            "message": "Please provide your API key to continue.",
        },
    ),
    (
        S + "client/elicitation",
        t.ElicitResult,
        {
            "action": "accept",
            "content": {"name": "Monalisa Octocat", "email": "octocat@github.com", "age": 30},
        },
    ),
    (S + "client/elicitation", t.ElicitResult, {"action": "accept"}),
    (
        S + "client/elicitation",
        t.ElicitationCompleteNotificationParams,
        {"elicitationId": "550e8400-e29b-41d4-a716-446655440000"},
    ),
    (
        S + "client/elicitation",
        t.URLElicitationRequiredErrorData,
        {
            "elicitations": [
                {
                    "mode": "url",
                    "elicitationId": "550e8400-e29b-41d4-a716-446655440000",
                    "url": "https://mcp.example.com/connect?elicitationId=550e8400",
                    "message": "Authorization is required to access your Example Co files.",
                }
            ]
        },
    ),
    # --- tasks -------------------------------------------------------------
    (
        S + "basic/utilities/tasks",
        t.CallToolRequestParams,
        {"name": "get_weather", "arguments": {"city": "New York"}, "task": {"ttl": 60000}},
    ),
    (
        S + "basic/utilities/tasks",
        t.CreateTaskResult,
        {
            "task": {
                "taskId": TASK_ID,
                "status": "working",
                "statusMessage": "The operation is now in progress.",
                "createdAt": "2025-11-25T10:30:00Z",
                "lastUpdatedAt": "2025-11-25T10:40:00Z",
                "ttl": 60000,
                "pollInterval": 5000,
            }
        },
    ),
    (S + "basic/utilities/tasks", t.GetTaskRequestParams, {"taskId": TASK_ID}),
    (
        S + "basic/utilities/tasks",
        t.GetTaskResult,
        {
            "taskId": TASK_ID,
            "status": "working",
            "statusMessage": "The operation is now in progress.",
            "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:40:00Z",
            "ttl": 30000,
            "pollInterval": 5000,
        },
    ),
    (S + "basic/utilities/tasks", t.GetTaskPayloadRequestParams, {"taskId": TASK_ID}),
    (
        S + "basic/utilities/tasks",
        t.GetTaskPayloadResult,
        {
            "content": [{"type": "text", "text": WEATHER_TEXT}],
            "isError": False,
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": TASK_ID}},
        },
    ),
    (
        S + "basic/utilities/tasks",
        t.TaskStatusNotificationParams,
        {
            "taskId": TASK_ID,
            "status": "completed",
            "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:50:00Z",
            "ttl": 60000,
            "pollInterval": 5000,
        },
    ),
    (S + "basic/utilities/tasks", t.PaginatedRequestParams, {"cursor": "optional-cursor-value"}),
    (
        S + "basic/utilities/tasks",
        t.ListTasksResult,
        {
            "tasks": [
                {
                    "taskId": TASK_ID,
                    "status": "working",
                    "createdAt": "2025-11-25T10:30:00Z",
                    "lastUpdatedAt": "2025-11-25T10:40:00Z",
                    "ttl": 30000,
                    "pollInterval": 5000,
                },
                {
                    "taskId": "abc123-def456-ghi789",
                    "status": "completed",
                    "createdAt": "2025-11-25T09:15:00Z",
                    "lastUpdatedAt": "2025-11-25T10:40:00Z",
                    "ttl": 60000,
                },
            ],
            "nextCursor": "next-page-cursor",
        },
    ),
    (S + "basic/utilities/tasks", t.CancelTaskRequestParams, {"taskId": TASK_ID}),
    # The 2026-07-28 extension's tasks/update (SEP-2663).
    (
        "seps/2663-tasks-extension",
        t.UpdateTaskRequestParams,
        {
            "taskId": TASK_ID,
            "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": True}}},
        },
    ),
    (
        S + "basic/utilities/tasks",
        t.CancelTaskResult,
        {
            "taskId": TASK_ID,
            "status": "cancelled",
            "statusMessage": "The task was cancelled by request.",
            "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:40:00Z",
            "ttl": 30000,
            "pollInterval": 5000,
        },
    ),
    (
        S + "basic/utilities/tasks",
        t.RelatedTaskMetadata,
        {"taskId": TASK_ID},
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
        and obj.__module__.rsplit(".", 1)[-1] in ("sampling", "roots", "elicitation", "tasks")
    }
    # Bases, and union members covered through their union.
    wanted -= {t.TaskAugmentedRequestParams, t.ElicitRequestFormParams, t.ElicitRequestURLParams}
    missing = sorted(c.__name__ for c in wanted - covered)
    assert not missing
