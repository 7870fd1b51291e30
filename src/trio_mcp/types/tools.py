"""Tools: ``tools/list``, ``tools/call`` and the tools list-changed notification.

Mirrors the spec page ``server/tools`` and the schema.ts definitions ``Tool``,
``ToolAnnotations``, ``ToolExecution``, ``ListToolsResult``,
``CallToolRequestParams`` and ``CallToolResult``, and the 2026-07-28
``CallToolResult`` (:class:`ModernCallToolResult`). Input and output schemas are
kept as raw JSON Schema objects.

``tools/list`` takes :class:`~trio_mcp.types.PaginatedRequestParams`;
``notifications/tools/list_changed`` takes
:class:`~trio_mcp.types.NotificationParams`.
"""

from typing import Literal

import attrs

from ._base import Icon, InputResponses, JSONObject, JSONValue, Meta, PaginatedResult, Result
from ._task_params import TaskAugmentedRequestParams
from .content import ContentBlock

__all__ = [
    "ToolAnnotations",
    "ToolExecution",
    "Tool",
    "ListToolsResult",
    "CallToolRequestParams",
    "CallToolResult",
    "ModernCallToolResult",
]


@attrs.frozen(kw_only=True)
class ToolAnnotations:
    """Untrusted hints about a tool's behaviour (2025-03-26)."""

    #: Display name.
    title: str | None = None
    #: The tool does not modify its environment.
    read_only_hint: bool | None = None
    #: The tool may perform destructive updates.
    destructive_hint: bool | None = None
    #: Repeating a call with the same arguments has no further effect.
    idempotent_hint: bool | None = None
    #: The tool interacts with an open world of external entities.
    open_world_hint: bool | None = None


@attrs.frozen(kw_only=True)
class ToolExecution:
    """Execution properties of a tool (2025-11-25)."""

    #: Whether ``tools/call`` may, must or must not be task-augmented.
    task_support: Literal["forbidden", "optional", "required"] | None = None


@attrs.frozen(kw_only=True)
class Tool:
    """A tool the client can call."""

    #: Programmatic name.
    name: str
    #: JSON Schema (``type: "object"``) of the arguments.
    input_schema: JSONObject
    #: Display name (2025-06-18).
    title: str | None = None
    #: Human-readable description.
    description: str | None = None
    #: JSON Schema of ``structured_content`` (2025-06-18).
    output_schema: JSONObject | None = None
    #: Behaviour hints (2025-03-26).
    annotations: ToolAnnotations | None = None
    #: Execution properties (2025-11-25).
    execution: ToolExecution | None = None
    #: Icons (2025-11-25).
    icons: list[Icon] | None = None
    #: ``_meta`` (2025-06-18).
    meta: Meta | None = None


@attrs.frozen(kw_only=True)
class ListToolsResult(PaginatedResult):
    """Result of ``tools/list``."""

    tools: list[Tool]


@attrs.frozen(kw_only=True)
class CallToolRequestParams(TaskAugmentedRequestParams):
    """Params of ``tools/call``.

    2026-07-28 drops ``task`` (tasks became an extension) and adds
    ``InputResponseRequestParams`` (a retried call after an input-required round).
    """

    #: Name of the tool.
    name: str
    #: Arguments, checked against the tool's input schema.
    arguments: JSONObject | None = None
    #: ``inputResponses`` of a retried request (2026-07-28): the answers to the
    #: previous round's ``inputRequests``, under the same keys.
    input_responses: InputResponses | None = None
    #: ``requestState`` (2026-07-28): the previous round's opaque state, echoed.
    request_state: str | None = None


@attrs.frozen(kw_only=True)
class CallToolResult(Result):
    """Result of ``tools/call`` (unless task-augmented: then ``CreateTaskResult``)."""

    #: Unstructured result. 2024-11-05 allowed text, image and embedded resources.
    content: list[ContentBlock]
    #: Structured result matching the output schema (2025-06-18).
    structured_content: JSONObject | None = None
    #: The tool failed; ``content`` describes the error.
    is_error: bool | None = None


@attrs.frozen(kw_only=True)
class ModernCallToolResult(Result):
    """Result of ``tools/call`` in 2026-07-28 (schema.ts ``CallToolResult``).

    A separate class because the 2026-07-28 definition is incompatible with the
    2025-11-25 one of the same name (:class:`CallToolResult`): its
    ``structuredContent`` may be any JSON value (an array, a number...), not
    only an object. A ``tools/call`` of 2026-07-28 may instead answer with an
    :class:`~trio_mcp.types.InputRequiredResult`.
    """

    #: Unstructured result.
    content: list[ContentBlock]
    #: Structured result matching the output schema: any JSON value.
    structured_content: JSONValue | None = None
    #: The tool failed; ``content`` describes the error.
    is_error: bool | None = None
