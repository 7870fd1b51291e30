"""All MCP data classes of the handshake-era revisions (2024-11-05 .. 2025-11-25).

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
"""

from ._base import (
    PROGRESS_TOKEN_META_KEY,
    RELATED_TASK_META_KEY,
    Annotations,
    Cursor,
    EmptyResult,
    Icon,
    Implementation,
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
from .cancellation import (
    CancelledNotificationParams,
)
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
from .elicitation import (
    ElicitAction,
    ElicitationCompleteNotificationParams,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ElicitValue,
    URLElicitationRequiredErrorData,
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
    TaskAugmentedRequestParams,
    TaskMetadata,
    TaskStatus,
    TaskStatusNotificationParams,
)
from .tools import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    Tool,
    ToolAnnotations,
    ToolExecution,
)

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
    "RequestParams",
    "NotificationParams",
    "PaginatedRequestParams",
    "Result",
    "EmptyResult",
    "PaginatedResult",
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
    # _converter
    "wire_name",
    "make_converter",
    "converter",
    "strict_converter",
    "structure",
    "unstructure",
]
