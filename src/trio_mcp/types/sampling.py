"""Sampling: ``sampling/createMessage``.

Mirrors the spec page ``client/sampling`` and the schema.ts definitions
``SamplingMessage``, ``SamplingMessageContentBlock``, ``ToolUseContent``,
``ToolResultContent``, ``ModelPreferences``, ``ModelHint``, ``ToolChoice``,
``CreateMessageRequestParams`` and ``CreateMessageResult``.
"""

from typing import Literal, TypeAlias

import attrs

from ._base import JSONObject, Meta, Result, Role
from ._task_params import TaskAugmentedRequestParams
from .content import AudioContent, ContentBlock, ImageContent, TextContent
from .tools import Tool

__all__ = [
    "ToolUseContent",
    "ToolResultContent",
    "SamplingMessageContentBlock",
    "SamplingContent",
    "SamplingMessage",
    "ModelHint",
    "ModelPreferences",
    "ToolChoice",
    "IncludeContext",
    "StopReason",
    "CreateMessageRequestParams",
    "CreateMessageResult",
]


@attrs.frozen(kw_only=True)
class ToolUseContent:
    """A tool call requested by the model (2025-11-25)."""

    type: Literal["tool_use"] = "tool_use"
    #: Id matched by a later :class:`ToolResultContent`.
    id: str
    #: Name of the tool.
    name: str
    #: Arguments.
    input: JSONObject
    meta: Meta | None = None


@attrs.frozen(kw_only=True)
class ToolResultContent:
    """The result of a tool call, sent back to the model (2025-11-25)."""

    type: Literal["tool_result"] = "tool_result"
    #: The ``id`` of the matching :class:`ToolUseContent`.
    tool_use_id: str
    #: Unstructured result.
    content: list[ContentBlock]
    #: Structured result.
    structured_content: JSONObject | None = None
    #: The tool call failed.
    is_error: bool | None = None
    meta: Meta | None = None


#: Content allowed in a sampling message; told apart by ``type``.
#: 2024-11-05: text and image; 2025-03-26 adds audio; 2025-11-25 tool use/result.
SamplingMessageContentBlock: TypeAlias = (
    TextContent | ImageContent | AudioContent | ToolUseContent | ToolResultContent
)
#: One block, or (2025-11-25) a list of blocks.
SamplingContent: TypeAlias = SamplingMessageContentBlock | list[SamplingMessageContentBlock]

#: What context the client should include: ``"none"``, ``"thisServer"``, ``"allServers"``.
IncludeContext: TypeAlias = Literal["none", "thisServer", "allServers"]
#: Why sampling stopped: ``endTurn``, ``stopSequence``, ``maxTokens``, ``toolUse``
#: (2025-11-25) or any other string.
StopReason: TypeAlias = str


@attrs.frozen(kw_only=True)
class SamplingMessage:
    """A message in a sampling conversation."""

    role: Role
    content: SamplingContent
    #: ``_meta`` (2025-11-25).
    meta: Meta | None = None


@attrs.frozen(kw_only=True)
class ModelHint:
    """A hint for model selection (a name substring, e.g. ``"claude"``)."""

    name: str | None = None


@attrs.frozen(kw_only=True)
class ModelPreferences:
    """The server's model-selection preferences; priorities go from 0 to 1."""

    hints: list[ModelHint] | None = None
    cost_priority: float | None = None
    speed_priority: float | None = None
    intelligence_priority: float | None = None


@attrs.frozen(kw_only=True)
class ToolChoice:
    """How the model may use tools (2025-11-25)."""

    mode: Literal["auto", "required", "none"] | None = None


@attrs.frozen(kw_only=True)
class CreateMessageRequestParams(TaskAugmentedRequestParams):
    """Params of ``sampling/createMessage``."""

    messages: list[SamplingMessage]
    #: Maximum number of tokens to sample.
    max_tokens: int
    model_preferences: ModelPreferences | None = None
    system_prompt: str | None = None
    include_context: IncludeContext | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None
    #: Provider-specific metadata, passed through.
    metadata: JSONObject | None = None
    #: Tools the model may use (2025-11-25).
    tools: list[Tool] | None = None
    #: (2025-11-25)
    tool_choice: ToolChoice | None = None


@attrs.frozen(kw_only=True)
class CreateMessageResult(Result):
    """Result of ``sampling/createMessage`` (or ``CreateTaskResult`` if task-augmented)."""

    role: Role
    content: SamplingContent
    #: Name of the model used.
    model: str
    stop_reason: StopReason | None = None
