"""All MCP data classes: the handshake era (2024-11-05 .. 2025-11-25) and 2026-07-28.

Frozen attrs classes named after the 2025-11-25 ``schema.ts`` interfaces, with
snake_case fields; fields added after 2024-11-05 are optional. The wire format
(camelCase, ``_meta``, union tags, omitted ``None``) belongs to the converter::

    from trio_mcp.types import CallToolRequestParams, structure, unstructure

    params = structure(CallToolRequestParams, {"name": "echo", "arguments": {}})
    wire = unstructure(params)

Messages whose params carry only ``_meta`` use :class:`RequestParams` (``ping``,
``roots/list``) or :class:`NotificationParams` (``notifications/initialized``,
``notifications/*/list_changed``); paginated lists use
:class:`PaginatedRequestParams`; results with no content use :class:`EmptyResult`.

The modern era (2026-07-28) adds its own modules (``versioning``, ``discovery``,
``input_required``, ``subscriptions``, and the tasks extension's
``tasks_extension``) and optional fields on the existing classes
(``result_type``, the cache hints, ``input_responses``/``request_state``,
``extensions``); a handshake-era object never sets them, so its wire form is
unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from ._base import (
    PROGRESS_TOKEN_META_KEY,
    RELATED_TASK_META_KEY,
    WIRE_NAME_METADATA_KEY,
    Annotations,
    CacheableResult,
    CacheScope,
    Cursor,
    EmptyResult,
    Icon,
    Implementation,
    InputResponses,
    JSONObject,
    JSONValue,
    Meta,
    NotificationParams,
    PaginatedRequestParams,
    PaginatedResult,
    ProgressToken,
    RequestId,
    RequestParams,
    Result,
    ResultType,
    Role,
)
from ._converter import (
    converter,
    make_converter,
    strict_converter,
    structure,
    unstructure,
    wire_name,
)
from ._task_params import TASKS_EXTENSION, TaskAugmentedRequestParams, TaskMetadata
from .cancellation import (
    CancelledNotificationParams,
)
from .content import (
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    Resource,
    ResourceContents,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from .discovery import (
    DiscoverResult,
)
from .lifecycle import (
    LATEST_PROTOCOL_VERSION,
    ClientCapabilities,
    ClientTaskRequestsCapability,
    ClientTasksCapability,
    ElicitationCapability,
    ElicitationTasksCapability,
    InitializeRequestParams,
    InitializeResult,
    PromptsCapability,
    ResourcesCapability,
    RootsCapability,
    SamplingCapability,
    SamplingTasksCapability,
    ServerCapabilities,
    ServerTaskRequestsCapability,
    ServerTasksCapability,
    ToolsCapability,
    ToolsTasksCapability,
)
from .logging import (
    LoggingLevel,
    LoggingMessageNotificationParams,
    SetLevelRequestParams,
)
from .progress import (
    ProgressNotificationParams,
)
from .tools import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    ModernCallToolResult,
    Tool,
    ToolAnnotations,
    ToolExecution,
)
from .versioning import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    MODERN_PROTOCOL_VERSION,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
    MissingRequiredClientCapabilityErrorData,
    RequestMetaObject,
    ResultMetaObject,
    UnsupportedProtocolVersionErrorData,
)

# The modules a bare server does not use (sampling, elicitation, the
# 2026-07-28 input requests and subscriptions, prompts, resources, roots,
# completion, tasks and the tasks extension) load on first use of one of their names
# (PEP 562): tens of milliseconds of every stdio start-up.
_LAZY: dict[str, str] = {
    "CancelTaskRequestParams": ".tasks",
    "CancelTaskResult": ".tasks",
    "CreateTaskResult": ".tasks",
    "GetTaskPayloadRequestParams": ".tasks",
    "GetTaskPayloadResult": ".tasks",
    "GetTaskRequestParams": ".tasks",
    "GetTaskResult": ".tasks",
    "ListTasksResult": ".tasks",
    "RelatedTaskMetadata": ".tasks",
    "Task": ".tasks",
    "TaskStatus": ".tasks",
    "TaskStatusNotificationParams": ".tasks",
    "UpdateTaskRequestParams": ".tasks",
    "CompleteRequestParams": ".completion",
    "CompleteResult": ".completion",
    "Completion": ".completion",
    "CompletionArgument": ".completion",
    "CompletionContext": ".completion",
    "PromptReference": ".completion",
    "ResourceReference": ".completion",
    "ResourceTemplateReference": ".completion",
    "ElicitAction": ".elicitation",
    "ElicitationCompleteNotificationParams": ".elicitation",
    "ElicitRequestFormParams": ".elicitation",
    "ElicitRequestParams": ".elicitation",
    "ElicitRequestURLParams": ".elicitation",
    "ElicitResult": ".elicitation",
    "ElicitValue": ".elicitation",
    "ModernElicitRequestParams": ".elicitation",
    "ModernElicitRequestURLParams": ".elicitation",
    "URLElicitationRequiredErrorData": ".elicitation",
    "RESULT_TYPE_COMPLETE": ".input_required",
    "RESULT_TYPE_INPUT_REQUIRED": ".input_required",
    "CreateMessageInputRequest": ".input_required",
    "ElicitInputRequest": ".input_required",
    "InputRequest": ".input_required",
    "InputRequests": ".input_required",
    "InputRequiredResult": ".input_required",
    "InputResponse": ".input_required",
    "ListRootsInputRequest": ".input_required",
    "GetPromptRequestParams": ".prompts",
    "GetPromptResult": ".prompts",
    "ListPromptsResult": ".prompts",
    "Prompt": ".prompts",
    "PromptArgument": ".prompts",
    "PromptMessage": ".prompts",
    "ListResourcesResult": ".resources",
    "ListResourceTemplatesResult": ".resources",
    "ReadResourceRequestParams": ".resources",
    "ReadResourceResult": ".resources",
    "ResourceRequestParams": ".resources",
    "ResourceTemplate": ".resources",
    "ResourceUpdatedNotificationParams": ".resources",
    "SubscribeRequestParams": ".resources",
    "UnsubscribeRequestParams": ".resources",
    "ListRootsResult": ".roots",
    "Root": ".roots",
    "CreateMessageRequestParams": ".sampling",
    "CreateMessageResult": ".sampling",
    "IncludeContext": ".sampling",
    "ModelHint": ".sampling",
    "ModelPreferences": ".sampling",
    "SamplingContent": ".sampling",
    "SamplingMessage": ".sampling",
    "SamplingMessageContentBlock": ".sampling",
    "StopReason": ".sampling",
    "ToolChoice": ".sampling",
    "ToolResultContent": ".sampling",
    "ToolUseContent": ".sampling",
    "SUBSCRIPTION_ID_META_KEY": ".subscriptions",
    "SubscriptionFilter": ".subscriptions",
    "SubscriptionsAcknowledgedNotificationParams": ".subscriptions",
    "SubscriptionsListenRequestParams": ".subscriptions",
    "SubscriptionsListenResult": ".subscriptions",
    "RESULT_TYPE_TASK": ".tasks_extension",
    "DetailedTask": ".tasks_extension",
    "TaskNotificationParams": ".tasks_extension",
}

if TYPE_CHECKING:
    from .completion import (
        CompleteRequestParams,
        CompleteResult,
        Completion,
        CompletionArgument,
        CompletionContext,
        PromptReference,
        ResourceReference,
        ResourceTemplateReference,
    )
    from .elicitation import (
        ElicitAction,
        ElicitationCompleteNotificationParams,
        ElicitRequestFormParams,
        ElicitRequestParams,
        ElicitRequestURLParams,
        ElicitResult,
        ElicitValue,
        ModernElicitRequestParams,
        ModernElicitRequestURLParams,
        URLElicitationRequiredErrorData,
    )
    from .input_required import (
        RESULT_TYPE_COMPLETE,
        RESULT_TYPE_INPUT_REQUIRED,
        CreateMessageInputRequest,
        ElicitInputRequest,
        InputRequest,
        InputRequests,
        InputRequiredResult,
        InputResponse,
        ListRootsInputRequest,
    )
    from .prompts import (
        GetPromptRequestParams,
        GetPromptResult,
        ListPromptsResult,
        Prompt,
        PromptArgument,
        PromptMessage,
    )
    from .resources import (
        ListResourcesResult,
        ListResourceTemplatesResult,
        ReadResourceRequestParams,
        ReadResourceResult,
        ResourceRequestParams,
        ResourceTemplate,
        ResourceUpdatedNotificationParams,
        SubscribeRequestParams,
        UnsubscribeRequestParams,
    )
    from .roots import (
        ListRootsResult,
        Root,
    )
    from .sampling import (
        CreateMessageRequestParams,
        CreateMessageResult,
        IncludeContext,
        ModelHint,
        ModelPreferences,
        SamplingContent,
        SamplingMessage,
        SamplingMessageContentBlock,
        StopReason,
        ToolChoice,
        ToolResultContent,
        ToolUseContent,
    )
    from .subscriptions import (
        SUBSCRIPTION_ID_META_KEY,
        SubscriptionFilter,
        SubscriptionsAcknowledgedNotificationParams,
        SubscriptionsListenRequestParams,
        SubscriptionsListenResult,
    )
    from .tasks import (
        CancelTaskRequestParams,
        CancelTaskResult,
        CreateTaskResult,
        GetTaskPayloadRequestParams,
        GetTaskPayloadResult,
        GetTaskRequestParams,
        GetTaskResult,
        ListTasksResult,
        RelatedTaskMetadata,
        Task,
        TaskStatus,
        TaskStatusNotificationParams,
        UpdateTaskRequestParams,
    )
    from .tasks_extension import RESULT_TYPE_TASK, DetailedTask, TaskNotificationParams


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)

__all__ = [
    # _base
    "JSONValue",
    "JSONObject",
    "Meta",
    "RequestId",
    "ProgressToken",
    "Cursor",
    "Role",
    "PROGRESS_TOKEN_META_KEY",
    "RELATED_TASK_META_KEY",
    "WIRE_NAME_METADATA_KEY",
    "RequestParams",
    "NotificationParams",
    "PaginatedRequestParams",
    "Result",
    "EmptyResult",
    "PaginatedResult",
    "ResultType",
    "CacheScope",
    "CacheableResult",
    "InputResponses",
    "Icon",
    "Implementation",
    "Annotations",
    # content
    "Resource",
    "ResourceContents",
    "TextResourceContents",
    "BlobResourceContents",
    "TextContent",
    "ImageContent",
    "AudioContent",
    "ResourceLink",
    "EmbeddedResource",
    "ContentBlock",
    # lifecycle
    "LATEST_PROTOCOL_VERSION",
    "RootsCapability",
    "SamplingCapability",
    "ElicitationCapability",
    "SamplingTasksCapability",
    "ElicitationTasksCapability",
    "ClientTaskRequestsCapability",
    "ClientTasksCapability",
    "ClientCapabilities",
    "PromptsCapability",
    "ResourcesCapability",
    "ToolsCapability",
    "ToolsTasksCapability",
    "ServerTaskRequestsCapability",
    "ServerTasksCapability",
    "ServerCapabilities",
    "InitializeRequestParams",
    "InitializeResult",
    # cancellation
    "CancelledNotificationParams",
    # progress
    "ProgressNotificationParams",
    # tools
    "ToolAnnotations",
    "ToolExecution",
    "Tool",
    "ListToolsResult",
    "CallToolRequestParams",
    "CallToolResult",
    "ModernCallToolResult",
    # resources
    "ResourceTemplate",
    "ListResourcesResult",
    "ListResourceTemplatesResult",
    "ResourceRequestParams",
    "ReadResourceRequestParams",
    "ReadResourceResult",
    "SubscribeRequestParams",
    "UnsubscribeRequestParams",
    "ResourceUpdatedNotificationParams",
    # prompts
    "PromptArgument",
    "Prompt",
    "PromptMessage",
    "ListPromptsResult",
    "GetPromptRequestParams",
    "GetPromptResult",
    # completion
    "PromptReference",
    "ResourceTemplateReference",
    "ResourceReference",
    "CompletionArgument",
    "CompletionContext",
    "CompleteRequestParams",
    "Completion",
    "CompleteResult",
    # logging
    "LoggingLevel",
    "SetLevelRequestParams",
    "LoggingMessageNotificationParams",
    # sampling
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
    # elicitation
    "ElicitRequestFormParams",
    "ElicitRequestURLParams",
    "ElicitRequestParams",
    "ElicitAction",
    "ElicitValue",
    "ElicitResult",
    "ElicitationCompleteNotificationParams",
    "URLElicitationRequiredErrorData",
    "ModernElicitRequestURLParams",
    "ModernElicitRequestParams",
    # roots
    "Root",
    "ListRootsResult",
    # tasks
    "TaskStatus",
    "TaskMetadata",
    "RelatedTaskMetadata",
    "TaskAugmentedRequestParams",
    "Task",
    "CreateTaskResult",
    "GetTaskRequestParams",
    "GetTaskResult",
    "GetTaskPayloadRequestParams",
    "GetTaskPayloadResult",
    "CancelTaskRequestParams",
    "CancelTaskResult",
    "ListTasksResult",
    "TaskStatusNotificationParams",
    "TASKS_EXTENSION",
    "UpdateTaskRequestParams",
    "RESULT_TYPE_TASK",
    "DetailedTask",
    "TaskNotificationParams",
    # versioning (2026-07-28)
    "MODERN_PROTOCOL_VERSION",
    "PROTOCOL_VERSION_META_KEY",
    "CLIENT_INFO_META_KEY",
    "CLIENT_CAPABILITIES_META_KEY",
    "LOG_LEVEL_META_KEY",
    "SERVER_INFO_META_KEY",
    "RequestMetaObject",
    "ResultMetaObject",
    "UnsupportedProtocolVersionErrorData",
    "MissingRequiredClientCapabilityErrorData",
    # discovery (2026-07-28)
    "DiscoverResult",
    # input_required (2026-07-28)
    "RESULT_TYPE_COMPLETE",
    "RESULT_TYPE_INPUT_REQUIRED",
    "CreateMessageInputRequest",
    "ListRootsInputRequest",
    "ElicitInputRequest",
    "InputRequest",
    "InputRequests",
    "InputResponse",
    "InputRequiredResult",
    # subscriptions (2026-07-28)
    "SUBSCRIPTION_ID_META_KEY",
    "SubscriptionFilter",
    "SubscriptionsListenRequestParams",
    "SubscriptionsAcknowledgedNotificationParams",
    "SubscriptionsListenResult",
    # _converter
    "wire_name",
    "make_converter",
    "converter",
    "strict_converter",
    "structure",
    "unstructure",
]
