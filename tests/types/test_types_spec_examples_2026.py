"""2026-07-28 examples (schema.ts and spec pages) round-tripped strictly.

Each row is (source, class or type, JSON) copied from the source named: a file
``schema/2026-07-28/examples/<Definition>/<name>.json`` that schema.ts includes
with ``@includeCode``, or a JSON block of a page
``docs/specification/2026-07-28/<page>.mdx`` (counted from the top of the page,
``//`` comments dropped), both of github:modelcontextprotocol/modelcontextprotocol.
Of a JSON-RPC message only the member named after the source (``params``,
``result``, ``error.data``, ``params._meta``) is kept. Structuring with the strict
converter catches renames and missing fields (unknown keys fail); unstructuring
must give back exactly the input. A source whose JSON has the same shape as a
row's (the same keys and value types, other values) is named in a comment on
that row (``EX``/``PG`` below); examples shaped like rows of
``test_types_spec_examples_client``/``_server`` (classes 2026-07-28 left alone)
are not repeated. The malformed rows below are edits of these examples
that the converter must refuse.
"""

from typing import Any

import cattrs
import pytest

from trio_mcp import types as t
from trio_mcp.protocol import ErrorCode

EX = "schema/2026-07-28/examples/"
PG = "docs/specification/2026-07-28/"

EXAMPLES: list[tuple[str, Any, Any]] = [
    (
        EX + "DiscoverRequest/server-discover-request.json, params",
        t.RequestParams,
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    ),
    (
        # also PG server/discover.mdx (JSON block 1), params._meta
        # also EX CallToolRequest/call-tool-request.json, params._meta
        EX + "DiscoverRequest/server-discover-request.json, params._meta",
        t.RequestMetaObject,
        {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    ),
    (
        # also PG server/discover.mdx (JSON block 2), result
        EX + "DiscoverResult/server-capabilities-discovery.json",
        t.DiscoverResult,
        {
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}, "resources": {}},
            "_meta": {
                "io.modelcontextprotocol/serverInfo": {"name": "ExampleServer", "version": "1.0.0"}
            },
            "instructions": "This server provides weather and resource utilities. Prefer "
            "`get_weather` for forecast lookups.",
            "ttlMs": 3600000,
            "cacheScope": "public",
        },
    ),
    (
        EX + "DiscoverResultResponse/discover-result-response.json, result",
        t.DiscoverResult,
        {
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}, "resources": {}},
            "_meta": {
                "io.modelcontextprotocol/serverInfo": {"name": "ExampleServer", "version": "1.0.0"}
            },
            "ttlMs": 3600000,
            "cacheScope": "public",
        },
    ),
    (
        EX + "DiscoverResult/server-capabilities-discovery.json, _meta",
        t.ResultMetaObject,
        {"io.modelcontextprotocol/serverInfo": {"name": "ExampleServer", "version": "1.0.0"}},
    ),
    (
        # also PG basic/versioning.mdx (JSON block 1), error.data
        EX + "UnsupportedProtocolVersionError/unsupported-version.json, error.data",
        t.UnsupportedProtocolVersionErrorData,
        {"supported": ["2026-07-28", "2025-11-25"], "requested": "1900-01-01"},
    ),
    (
        EX + "MissingRequiredClientCapabilityError/missing-elicitation-capability.json, error.data",
        t.MissingRequiredClientCapabilityErrorData,
        {"requiredCapabilities": {"elicitation": {}}},
    ),
    (
        PG + "basic/versioning.mdx (JSON block 2), capabilities",
        t.ClientCapabilities,
        {
            "roots": {},
            "extensions": {
                "io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}
            },
        },
    ),
    (
        PG + "basic/versioning.mdx (JSON block 3), capabilities",
        t.ServerCapabilities,
        {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
    ),
    (
        EX + "ClientCapabilities/elicitation-form-and-url-mode-support.json",
        t.ClientCapabilities,
        {"elicitation": {"form": {}, "url": {}}},
    ),
    (
        EX + "ClientCapabilities/extensions-ui-mime-types.json",
        t.ClientCapabilities,
        {
            "extensions": {
                "io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}
            }
        },
    ),
    (
        EX + "ClientCapabilities/roots-minimum-baseline-support.json",
        t.ClientCapabilities,
        {"roots": {}},
    ),
    (
        EX + "ClientCapabilities/sampling-minimum-baseline-support.json",
        t.ClientCapabilities,
        {"sampling": {}},
    ),
    (
        EX + "ServerCapabilities/extensions-tasks.json",
        t.ServerCapabilities,
        {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    ),
    (
        EX + "ServerCapabilities/logging-minimum-baseline-support.json",
        t.ServerCapabilities,
        {"logging": {}},
    ),
    (
        EX + "ServerCapabilities/prompts-list-changed-notifications.json",
        t.ServerCapabilities,
        {"prompts": {"listChanged": True}},
    ),
    (
        EX + "ServerCapabilities/prompts-minimum-baseline-support.json",
        t.ServerCapabilities,
        {"prompts": {}},
    ),
    (
        EX + "ServerCapabilities/resources-all-notifications.json",
        t.ServerCapabilities,
        {"resources": {"subscribe": True, "listChanged": True}},
    ),
    (
        EX + "ServerCapabilities/resources-list-changed-notifications-only.json",
        t.ServerCapabilities,
        {"resources": {"listChanged": True}},
    ),
    (
        EX + "ServerCapabilities/resources-subscription-to-individual-resource-updates-only.json",
        t.ServerCapabilities,
        {"resources": {"subscribe": True}},
    ),
    (
        EX + "ServerCapabilities/tools-list-changed-notifications.json",
        t.ServerCapabilities,
        {"tools": {"listChanged": True}},
    ),
    (
        EX + "ServerCapabilities/tools-minimum-baseline-support.json",
        t.ServerCapabilities,
        {"tools": {}},
    ),
    (
        EX + "InputRequests/elicitation-and-sampling-input-requests.json",
        t.InputRequests,
        {
            "github_login": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Please provide your GitHub username",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "required": ["name"],
                    },
                },
            },
            "capital_of_france": {
                "method": "sampling/createMessage",
                "params": {
                    "messages": [
                        {
                            "role": "user",
                            "content": {"type": "text", "text": "What is the capital of France?"},
                        }
                    ],
                    "maxTokens": 100,
                },
            },
        },
    ),
    (
        # also PG basic/patterns/mrtr.mdx (JSON block 2)
        EX + "InputResponses/elicitation-and-sampling-input-responses.json",
        t.InputResponses,
        {
            "github_login": {"action": "accept", "content": {"name": "octocat"}},
            "capital_of_france": {
                "role": "assistant",
                "content": {"type": "text", "text": "The capital of France is Paris."},
                "model": "claude-3-sonnet-20240307",
                "stopReason": "endTurn",
            },
        },
    ),
    (
        EX + "InputRequiredResult/"
        "input-required-result-with-elicitation-and-sampling-and-request-state.json",
        t.InputRequiredResult,
        {
            "resultType": "input_required",
            "inputRequests": {
                "github_login": {
                    "method": "elicitation/create",
                    "params": {
                        "message": "Please provide your GitHub username",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                            "required": ["name"],
                        },
                    },
                },
                "capital_of_france": {
                    "method": "sampling/createMessage",
                    "params": {
                        "messages": [
                            {
                                "role": "user",
                                "content": {
                                    "type": "text",
                                    "text": "What is the capital of France?",
                                },
                            }
                        ],
                        "maxTokens": 100,
                    },
                },
            },
            "requestState": "eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0",
        },
    ),
    (
        EX + "InputRequiredResult/input-required-result-with-request-state-only.json",
        t.InputRequiredResult,
        {
            "resultType": "input_required",
            "requestState": "eyJwcm9ncmVzcyI6IjUwJSIsInN0YXRlIjoicHJvY2Vzc2luZyJ9",
        },
    ),
    (
        PG + "basic/patterns/mrtr.mdx (JSON block 1)",
        t.InputRequests,
        {
            "github_login": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Please provide your GitHub username",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "required": ["name"],
                    },
                },
            },
            "capital_of_france": {
                "method": "sampling/createMessage",
                "params": {
                    "messages": [
                        {
                            "role": "user",
                            "content": {"type": "text", "text": "What is the capital of France?"},
                        }
                    ],
                    "systemPrompt": "You are a helpful assistant.",
                    "maxTokens": 100,
                },
            },
        },
    ),
    (
        PG + "basic/patterns/mrtr.mdx (JSON block 3), result",
        t.InputRequiredResult,
        {
            "resultType": "input_required",
            "inputRequests": {
                "github_login": {
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": "Please provide your GitHub username",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                            "required": ["name"],
                        },
                    },
                },
                "capital_of_france": {
                    "method": "sampling/createMessage",
                    "params": {
                        "messages": [
                            {
                                "role": "user",
                                "content": {
                                    "type": "text",
                                    "text": "What is the capital of France?",
                                },
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
                },
            },
            "requestState": "AEAD-protected blob",
        },
    ),
    (
        PG + "server/tools.mdx (JSON block 6), result",
        t.InputRequiredResult,
        {
            "resultType": "input_required",
            "inputRequests": {
                "github_login": {
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": "Please provide your GitHub username",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                            "required": ["name"],
                        },
                    },
                }
            },
            "requestState": "eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0...",
        },
    ),
    (
        PG + "server/tools.mdx (JSON block 7), params",
        t.CallToolRequestParams,
        {
            "name": "get_weather",
            "arguments": {"location": "New York"},
            "inputResponses": {
                "github_login": {"action": "accept", "content": {"name": "octocat"}}
            },
            "requestState": "eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0...",
        },
    ),
    (
        EX + "ElicitRequest/elicitation-request.json",
        t.ElicitInputRequest,
        {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Please provide your GitHub username",
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "name": {
                            "type": "string",
                            "title": "GitHub Username",
                            "description": "Your GitHub username",
                        }
                    },
                    "required": ["name"],
                },
            },
        },
    ),
    (
        EX + "CreateMessageRequest/sampling-request.json",
        t.CreateMessageInputRequest,
        {
            "method": "sampling/createMessage",
            "params": {
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
        },
    ),
    (
        PG + "client/elicitation.mdx (JSON block 10)",
        t.ElicitInputRequest,
        {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Please provide your GitHub username",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            },
        },
    ),
    (
        PG + "client/elicitation.mdx (JSON block 12)",
        t.ElicitInputRequest,
        {
            "method": "elicitation/create",
            "params": {
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
        },
    ),
    (
        PG + "client/elicitation.mdx (JSON block 14)",
        t.ElicitInputRequest,
        {
            "method": "elicitation/create",
            "params": {
                "mode": "url",
                "url": "https://mcp.example.com/ui/set_api_key",
                "message": "Please provide your API key to continue.",
            },
        },
    ),
    (
        PG + "client/roots.mdx (JSON block 2)",
        t.ListRootsInputRequest,
        {"method": "roots/list"},
    ),
    (
        EX + "ElicitRequestURLParams/elicit-sensitive-data.json",
        t.ModernElicitRequestURLParams,
        {
            "mode": "url",
            "url": "https://mcp.example.com/ui/set_api_key",
            "message": "Please provide your API key to continue.",
        },
    ),
    (
        EX + "ElicitRequestFormParams/elicit-multiple-fields.json",
        t.ElicitRequestFormParams,
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
        EX + "ElicitRequestFormParams/elicit-single-field.json",
        t.ElicitRequestFormParams,
        {
            "mode": "form",
            "message": "Please provide your GitHub username",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            },
        },
    ),
    (
        EX + "ElicitResult/input-single-field.json",
        t.ElicitResult,
        {"action": "accept", "content": {"name": "octocat"}},
    ),
    (
        EX + "CreateMessageRequestParams/follow-up-with-tool-results.json",
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
                    "inputSchema": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                }
            ],
            "maxTokens": 1000,
        },
    ),
    (
        EX + "CreateMessageRequestParams/request-with-tools.json",
        t.CreateMessageRequestParams,
        {
            "messages": [
                {
                    "role": "user",
                    "content": {
                        "type": "text",
                        "text": "What's the weather like in Paris and London?",
                    },
                }
            ],
            "tools": [
                {
                    "name": "get_weather",
                    "description": "Get current weather for a city",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"city": {"type": "string", "description": "City name"}},
                        "required": ["city"],
                    },
                }
            ],
            "toolChoice": {"mode": "auto"},
            "maxTokens": 1000,
        },
    ),
    (
        EX + "ListRootsResult/multiple-root-directories.json",
        t.ListRootsResult,
        {
            "roots": [
                {"uri": "file:///home/user/repos/frontend", "name": "Frontend Repository"},
                {"uri": "file:///home/user/repos/backend", "name": "Backend Repository"},
            ]
        },
    ),
    (
        # also PG basic/patterns/subscriptions.mdx (JSON block 1), params
        EX + "SubscriptionsListenRequest/listen-for-list-changes.json, params",
        t.SubscriptionsListenRequestParams,
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
            "notifications": {
                "toolsListChanged": True,
                "resourceSubscriptions": ["file:///project/config.json"],
            },
        },
    ),
    (
        EX + "SubscriptionsAcknowledgedNotification/listen-acknowledged.json, params",
        t.SubscriptionsAcknowledgedNotificationParams,
        {
            "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"},
            "notifications": {
                "toolsListChanged": True,
                "resourceSubscriptions": ["file:///project/config.json"],
            },
        },
    ),
    (
        # also EX SubscriptionsListenResultResponse/listen-closed-response.json, result
        EX + "SubscriptionsListenResult/listen-closed.json",
        t.SubscriptionsListenResult,
        {"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}},
    ),
    (
        PG + "basic/patterns/subscriptions.mdx (JSON block 2), params",
        t.SubscriptionsAcknowledgedNotificationParams,
        {
            "_meta": {"io.modelcontextprotocol/subscriptionId": 1},
            "notifications": {
                "toolsListChanged": True,
                "resourceSubscriptions": ["file:///project/config.json"],
            },
        },
    ),
    (
        PG + "basic/patterns/subscriptions.mdx (JSON block 3), params",
        t.ResourceUpdatedNotificationParams,
        {
            "_meta": {"io.modelcontextprotocol/subscriptionId": 1},
            "uri": "file:///project/config.json",
        },
    ),
    (
        PG + "basic/patterns/subscriptions.mdx (JSON block 4), result",
        t.SubscriptionsListenResult,
        {"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": 1}},
    ),
    (
        # also EX ListToolsResultResponse/list-tools-result-response.json, result
        # also PG server/tools.mdx (JSON block 3), result
        EX + "ListToolsResult/tools-list-with-cursor-and-ttl.json",
        t.ListToolsResult,
        {
            "resultType": "complete",
            "tools": [
                {
                    "name": "get_weather",
                    "title": "Weather Information Provider",
                    "description": "Get current weather information for a location",
                    "inputSchema": {
                        "type": "object",
                        "properties": {
                            "location": {"type": "string", "description": "City name or zip code"}
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
                }
            ],
            "nextCursor": "next-page-cursor",
            "ttlMs": 300000,
            "cacheScope": "public",
        },
    ),
    (
        # also EX ListPromptsResultResponse/list-prompts-result-response.json, result
        # also PG server/prompts.mdx (JSON block 3), result
        EX + "ListPromptsResult/prompts-list-with-cursor-and-ttl.json",
        t.ListPromptsResult,
        {
            "resultType": "complete",
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
            "ttlMs": 600000,
            "cacheScope": "public",
        },
    ),
    (
        # also EX ListResourcesResultResponse/list-resources-result-response.json, result
        # also PG server/resources.mdx (JSON block 4), result
        EX + "ListResourcesResult/resources-list-with-cursor-and-ttl.json",
        t.ListResourcesResult,
        {
            "resultType": "complete",
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
            "nextCursor": "eyJwYWdlIjogM30=",
            "ttlMs": 600000,
            "cacheScope": "private",
        },
    ),
    (
        # also PG server/resources.mdx (JSON block 8), result
        EX + "ListResourceTemplatesResult/resource-templates-list-with-cursor-and-ttl.json",
        t.ListResourceTemplatesResult,
        {
            "resultType": "complete",
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
            ],
            "nextCursor": "next-page-cursor",
            "ttlMs": 3600000,
            "cacheScope": "public",
        },
    ),
    (
        EX + "ListResourceTemplatesResultResponse/"
        "list-resource-templates-result-response.json, result",
        t.ListResourceTemplatesResult,
        {
            "resultType": "complete",
            "resourceTemplates": [
                {
                    "uriTemplate": "file:///{path}",
                    "name": "Project Files",
                    "title": "Project Files",
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
            ],
            "ttlMs": 3600000,
            "cacheScope": "public",
        },
    ),
    (
        # also EX ReadResourceResultResponse/read-resource-result-response-with-ttl.json, result
        # also PG server/resources.mdx (JSON block 6), result
        EX + "ReadResourceResult/file-resource-contents.json",
        t.ReadResourceResult,
        {
            "resultType": "complete",
            "contents": [
                {
                    "uri": "file:///project/src/main.rs",
                    "mimeType": "text/x-rust",
                    "text": 'fn main() {\n    println!("Hello world!");\n}',
                }
            ],
            "ttlMs": 60000,
            "cacheScope": "private",
        },
    ),
    (
        EX + "ReadResourceResultResponse/read-resource-result-response.json, result",
        t.ReadResourceResult,
        {
            "resultType": "complete",
            "contents": [
                {
                    "uri": "file:///project/src/main.rs",
                    "mimeType": "text/x-rust",
                    "text": 'fn main() {\n    println!("Hello world!");\n}',
                }
            ],
        },
    ),
    (
        EX + "ReadResourceRequest/read-resource-request.json, params",
        t.ReadResourceRequestParams,
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
            "uri": "file:///project/src/main.rs",
        },
    ),
    (
        # also EX CallToolRequestParams/get-weather-tool-call-params.json
        EX + "CallToolRequest/call-tool-request.json, params",
        t.CallToolRequestParams,
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
            "name": "get_weather",
            "arguments": {"location": "New York"},
        },
    ),
    (
        EX + "CallToolRequestParams/tool-call-params-with-progress-token.json",
        t.CallToolRequestParams,
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
                "io.modelcontextprotocol/clientCapabilities": {},
                "progressToken": "oivaizmir",
            },
            "name": "build_simulation",
            "arguments": {"city": "Micropolis"},
        },
    ),
    (
        # also EX CallToolResult/result-with-unstructured-text.json
        # also EX CallToolResultResponse/call-tool-result-response.json, result
        # also PG server/tools.mdx (JSON block 5), result
        EX + "CallToolResult/invalid-tool-input-error.json",
        t.ModernCallToolResult,
        {
            "resultType": "complete",
            "content": [
                {
                    "type": "text",
                    "text": "Invalid departure date: must be in the future. Current "
                    "date is 08/08/2025.",
                }
            ],
            "isError": True,
        },
    ),
    (
        EX + "CallToolResult/result-with-array-structured-content.json",
        t.ModernCallToolResult,
        {
            "resultType": "complete",
            "content": [
                {
                    "type": "text",
                    "text": "Found 2 users: Alice (alice@example.com) and Bob (bob@example.com).",
                }
            ],
            "structuredContent": [
                {"id": "1", "name": "Alice", "email": "alice@example.com"},
                {"id": "2", "name": "Bob", "email": "bob@example.com"},
            ],
        },
    ),
    (
        EX + "CallToolResult/result-with-structured-content.json",
        t.ModernCallToolResult,
        {
            "resultType": "complete",
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
        # also EX GetPromptRequestParams/get-code-review-prompt.json
        EX + "GetPromptRequest/get-prompt-request.json, params",
        t.GetPromptRequestParams,
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
            "name": "code_review",
            "arguments": {"code": "def hello():\n    print('world')"},
        },
    ),
    (
        # also EX GetPromptResultResponse/get-prompt-result-response.json, result
        # also PG server/prompts.mdx (JSON block 5), result
        EX + "GetPromptResult/code-review-prompt.json",
        t.GetPromptResult,
        {
            "resultType": "complete",
            "description": "Code review prompt",
            "messages": [
                {
                    "role": "user",
                    "content": {
                        "type": "text",
                        "text": "Please review this Python code:\ndef hello():\n    print('world')",
                    },
                }
            ],
        },
    ),
    (
        # also EX ListPromptsRequest/list-prompts-request.json, params
        # also EX ListResourcesRequest/list-resources-request.json, params
        # also EX ListResourceTemplatesRequest/list-resource-templates-request.json, params
        EX + "ListToolsRequest/list-tools-request.json, params",
        t.PaginatedRequestParams,
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    ),
    (
        EX + "PaginatedRequestParams/list-with-cursor.json",
        t.PaginatedRequestParams,
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
            "cursor": "eyJwYWdlIjogMn0=",
        },
    ),
    (
        EX + "CompleteRequest/completion-request.json, params",
        t.CompleteRequestParams,
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
            "ref": {"type": "ref/prompt", "name": "code_review"},
            "argument": {"name": "language", "value": "py"},
        },
    ),
    (
        EX + "CompleteResult/multiple-completion-values-with-more-available.json",
        t.CompleteResult,
        {
            "resultType": "complete",
            "completion": {"values": ["python", "pytorch", "pyside"], "total": 10, "hasMore": True},
        },
    ),
    (
        # also EX CompleteResultResponse/completion-result-response.json, result
        EX + "CompleteResult/single-completion-value.json",
        t.CompleteResult,
        {
            "resultType": "complete",
            "completion": {"values": ["flask"], "total": 1, "hasMore": False},
        },
    ),
]


def _id(source: str, cls: Any) -> str:
    name = source.removeprefix("schema/2026-07-28/examples/")
    name = name.removeprefix("docs/specification/2026-07-28/")
    return f"{name}:{getattr(cls, '__name__', repr(cls))}"


@pytest.mark.parametrize(
    ("source", "cls", "data"),
    [pytest.param(s, c, d, id=_id(s, c)) for s, c, d in EXAMPLES],
)
def test_2026_example_round_trips_strictly(source: str, cls: Any, data: Any) -> None:
    obj = t.strict_converter.structure(data, cls)
    assert t.strict_converter.unstructure(obj) == data
    # The default converter agrees with the strict one on well-formed input.
    assert t.converter.structure(data, cls) == obj


def test_every_2026_params_and_result_class_has_an_example() -> None:
    covered = {cls for _, cls, _ in EXAMPLES}
    wanted = {
        obj
        for name in t.__all__
        if isinstance(obj := getattr(t, name), type)
        and obj.__module__.rsplit(".", 1)[-1]
        in ("versioning", "discovery", "input_required", "subscriptions")
    }
    # SubscriptionFilter is covered through the params that carry it.
    wanted -= {t.SubscriptionFilter}
    missing = sorted(c.__name__ for c in wanted - covered)
    assert not missing


def test_list_roots_request_example_has_an_id_the_definition_lacks() -> None:
    # schema/2026-07-28/examples/ListRootsRequest/list-roots-request.json carries
    # an "id", but schema.ts ListRootsRequest (an input request) has none: the
    # strict converter refuses it, the default one ignores it.
    data = {"id": "list-roots-example", "method": "roots/list"}
    with pytest.raises(cattrs.BaseValidationError):
        t.strict_converter.structure(data, t.ListRootsInputRequest)
    assert t.converter.structure(data, t.ListRootsInputRequest) == t.ListRootsInputRequest()


def test_views_of_the_reserved_meta_keys() -> None:
    meta = _example("DiscoverRequest/server-discover-request")["_meta"]
    view = t.structure(t.RequestMetaObject, {**meta, "com.example/trace": "x"})
    assert view.protocol_version == t.MODERN_PROTOCOL_VERSION
    assert view.client_capabilities == t.ClientCapabilities()
    assert view.client_info == t.Implementation(name="ExampleClient", version="1.0.0")
    assert view.log_level is None
    logged = t.structure(t.RequestMetaObject, {**meta, t.LOG_LEVEL_META_KEY: "warning"})
    assert logged.log_level is t.LoggingLevel.WARNING
    result_meta = {t.SERVER_INFO_META_KEY: {"name": "ExampleServer", "version": "1.0.0"}}
    server = t.structure(t.ResultMetaObject, result_meta)
    assert server.server_info == t.Implementation(name="ExampleServer", version="1.0.0")
    assert t.unstructure(server) == result_meta
    assert t.unstructure(t.ResultMetaObject()) == {}


def test_structured_values_have_the_modern_types() -> None:
    result = t.strict_converter.structure(
        _example("InputRequiredResult/input-required-result-with-elicitation"),
        t.InputRequiredResult,
    )
    assert result.result_type == t.RESULT_TYPE_INPUT_REQUIRED
    assert result.input_requests is not None
    assert isinstance(result.input_requests["github_login"], t.ElicitInputRequest)
    assert isinstance(result.input_requests["capital_of_france"], t.CreateMessageInputRequest)
    url = t.structure(t.ElicitInputRequest, _example("client/elicitation.mdx (JSON block 14)"))
    assert isinstance(url.params, t.ModernElicitRequestURLParams)
    responses = t.strict_converter.structure(
        _example("InputResponses/elicitation-and-sampling-input-responses"), t.InputResponses
    )
    assert isinstance(responses["github_login"], t.ElicitResult)
    assert isinstance(responses["capital_of_france"], t.CreateMessageResult)
    closed = t.structure(t.SubscriptionsListenResult, _example("SubscriptionsListenResult/"))
    assert closed.subscription_id == "listen-1"
    discovered = t.structure(t.DiscoverResult, _example("DiscoverResult/"))
    assert (discovered.ttl_ms, discovered.cache_scope) == (3600000, "public")
    array = t.structure(t.ModernCallToolResult, _example("result-with-array-structured-content"))
    assert isinstance(array.structured_content, list)


def _example(source_prefix: str) -> Any:
    return next(d for s, _, d in EXAMPLES if source_prefix in s)


def test_handshake_era_wire_forms_do_not_change() -> None:
    # The 2026-07-28 fields are all optional: an object that does not set them
    # unstructures exactly as before.
    assert t.unstructure(t.EmptyResult()) == {}
    assert t.unstructure(t.ListToolsResult(tools=[])) == {"tools": []}
    assert t.unstructure(t.CallToolRequestParams(name="echo")) == {"name": "echo"}
    assert t.unstructure(t.ServerCapabilities()) == {}


def _without(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != key}


def _with(data: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    return {**data, key: value}


DISCOVER = {
    "resultType": "complete",
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {}},
    "ttlMs": 3600000,
    "cacheScope": "public",
}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
LISTEN = {"notifications": {"toolsListChanged": True}}
ERROR_DATA = {"supported": ["2026-07-28", "2025-11-25"], "requested": "1900-01-01"}

MALFORMED: list[tuple[str, Any, Any]] = [
    ("discover without ttlMs", t.DiscoverResult, _without(DISCOVER, "ttlMs")),
    ("discover without cacheScope", t.DiscoverResult, _without(DISCOVER, "cacheScope")),
    ("discover, unknown cacheScope", t.DiscoverResult, _with(DISCOVER, "cacheScope", "shared")),
    ("discover, ttlMs a string", t.DiscoverResult, _with(DISCOVER, "ttlMs", "60000")),
    ("discover, ttlMs a bool", t.DiscoverResult, _with(DISCOVER, "ttlMs", True)),
    (
        "discover without supportedVersions",
        t.DiscoverResult,
        _without(DISCOVER, "supportedVersions"),
    ),
    (
        "discover, supportedVersions a string",
        t.DiscoverResult,
        _with(DISCOVER, "supportedVersions", "2026-07-28"),
    ),
    ("discover without capabilities", t.DiscoverResult, _without(DISCOVER, "capabilities")),
    (
        "list tools, cacheScope unknown",
        t.ListToolsResult,
        {"tools": [], "ttlMs": 0, "cacheScope": "everyone"},
    ),
    ("list tools, resultType a number", t.ListToolsResult, {"tools": [], "resultType": 1}),
    (
        "meta without protocolVersion",
        t.RequestMetaObject,
        _without(META, "io.modelcontextprotocol/protocolVersion"),
    ),
    (
        "meta without clientCapabilities",
        t.RequestMetaObject,
        _without(META, "io.modelcontextprotocol/clientCapabilities"),
    ),
    (
        "meta, protocolVersion a number",
        t.RequestMetaObject,
        _with(META, "io.modelcontextprotocol/protocolVersion", 20260728),
    ),
    (
        "meta, unknown logLevel",
        t.RequestMetaObject,
        _with(META, "io.modelcontextprotocol/logLevel", "verbose"),
    ),
    (
        "meta, clientInfo without version",
        t.RequestMetaObject,
        _with(META, "io.modelcontextprotocol/clientInfo", {"name": "c"}),
    ),
    (
        "input required, neither requests nor state",
        t.InputRequiredResult,
        {"resultType": "input_required"},
    ),
    (
        "input required, resultType complete",
        t.InputRequiredResult,
        {"resultType": "complete", "requestState": "s"},
    ),
    (
        "input required, unknown input method",
        t.InputRequiredResult,
        {"resultType": "input_required", "inputRequests": {"k": {"method": "ping"}}},
    ),
    (
        "input required, requestState an object",
        t.InputRequiredResult,
        {"resultType": "input_required", "requestState": {"a": 1}},
    ),
    (
        "input request, sampling without maxTokens",
        t.CreateMessageInputRequest,
        {"method": "sampling/createMessage", "params": {"messages": []}},
    ),
    (
        "input request, URL elicitation without url",
        t.ElicitInputRequest,
        {"method": "elicitation/create", "params": {"mode": "url", "message": "m"}},
    ),
    (
        "retried call, answers not results",
        t.CallToolRequestParams,
        {"name": "x", "inputResponses": {"k": {"unexpected": True}}},
    ),
    (
        "retried call, answers a list",
        t.CallToolRequestParams,
        {"name": "x", "inputResponses": [{"action": "accept"}]},
    ),
    ("modern call result without content", t.ModernCallToolResult, {"isError": False}),
    (
        "retried call, requestState a number",
        t.CallToolRequestParams,
        {"name": "x", "requestState": 5},
    ),
    (
        "retried call, an unknown answer",
        t.CallToolRequestParams,
        {"name": "x", "inputResponses": {"k": {"action": "maybe"}}},
    ),
    ("listen without notifications", t.SubscriptionsListenRequestParams, {"_meta": META}),
    (
        "listen, resourceSubscriptions a string",
        t.SubscriptionsListenRequestParams,
        {"notifications": {"resourceSubscriptions": "file:///a"}},
    ),
    (
        "listen, toolsListChanged a string",
        t.SubscriptionsListenRequestParams,
        {"notifications": {"toolsListChanged": "yes"}},
    ),
    ("acknowledged without notifications", t.SubscriptionsAcknowledgedNotificationParams, {}),
    ("listen result without _meta", t.SubscriptionsListenResult, {"resultType": "complete"}),
    (
        "listen result without subscriptionId",
        t.SubscriptionsListenResult,
        {"resultType": "complete", "_meta": {}},
    ),
    (
        "listen result, subscriptionId a bool",
        t.SubscriptionsListenResult,
        {"_meta": {"io.modelcontextprotocol/subscriptionId": True}},
    ),
    (
        "-32022 data without requested",
        t.UnsupportedProtocolVersionErrorData,
        _without(ERROR_DATA, "requested"),
    ),
    (
        "-32022 data, supported a string",
        t.UnsupportedProtocolVersionErrorData,
        _with(ERROR_DATA, "supported", "2026-07-28"),
    ),
    ("-32021 data without requiredCapabilities", t.MissingRequiredClientCapabilityErrorData, {}),
    (
        "-32021 data, capabilities a list",
        t.MissingRequiredClientCapabilityErrorData,
        {"requiredCapabilities": ["elicitation"]},
    ),
    ("capabilities, extensions a list", t.ServerCapabilities, {"extensions": ["a"]}),
    (
        "capabilities, an extension's settings a string",
        t.ClientCapabilities,
        {"extensions": {"io.modelcontextprotocol/ui": "on"}},
    ),
    (
        "URL elicitation without message",
        t.ModernElicitRequestURLParams,
        {"mode": "url", "url": "https://example.com"},
    ),
]


@pytest.mark.parametrize(("cls", "data"), [pytest.param(c, d, id=why) for why, c, d in MALFORMED])
def test_malformed_2026_example_is_refused(cls: Any, data: Any) -> None:
    with pytest.raises(cattrs.BaseValidationError):
        t.strict_converter.structure(data, cls)
    with pytest.raises(cattrs.BaseValidationError):
        t.converter.structure(data, cls)


def test_error_codes_are_the_2026_allocation() -> None:
    codes = [
        ErrorCode.HEADER_MISMATCH,
        ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY,
        ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
    ]
    assert [int(code) for code in codes] == [-32020, -32021, -32022]
