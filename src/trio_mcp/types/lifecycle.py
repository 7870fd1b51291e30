"""Lifecycle: ``initialize`` and the capabilities both sides announce.

Mirrors the spec page ``basic/lifecycle`` and the schema.ts definitions
``InitializeRequestParams``, ``InitializeResult``, ``ClientCapabilities`` and
``ServerCapabilities``. The nested capability objects that schema.ts writes
inline get named classes here. An ``object``-typed capability (e.g.
``logging: {}``) is a :data:`JSONObject`; present-but-empty means "supported".

``notifications/initialized`` uses :class:`~trio_mcp.types.NotificationParams`.
"""

import attrs

from ._base import Implementation, JSONObject, RequestParams, Result

__all__ = [
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
]

#: Newest revision these types model (the revisions a connection speaks are
#: ``trio_mcp.protocol.REVISIONS``).
LATEST_PROTOCOL_VERSION = "2025-11-25"


# --- client side ---------------------------------------------------------


@attrs.frozen(kw_only=True)
class RootsCapability:
    """``capabilities.roots``: the client can list roots."""

    #: The client sends ``notifications/roots/list_changed``.
    list_changed: bool | None = None


@attrs.frozen(kw_only=True)
class SamplingCapability:
    """``capabilities.sampling``: the client can sample an LLM."""

    #: Supports ``includeContext`` other than ``"none"`` (2025-11-25).
    context: JSONObject | None = None
    #: Supports ``tools`` / ``toolChoice`` (2025-11-25).
    tools: JSONObject | None = None


@attrs.frozen(kw_only=True)
class ElicitationCapability:
    """``capabilities.elicitation`` (2025-06-18). Empty means form mode only."""

    #: Form mode (2025-11-25).
    form: JSONObject | None = None
    #: URL mode (2025-11-25).
    url: JSONObject | None = None


@attrs.frozen(kw_only=True)
class SamplingTasksCapability:
    """``tasks.requests.sampling`` (2025-11-25)."""

    #: ``sampling/createMessage`` may be task-augmented.
    create_message: JSONObject | None = None


@attrs.frozen(kw_only=True)
class ElicitationTasksCapability:
    """``tasks.requests.elicitation`` (2025-11-25)."""

    #: ``elicitation/create`` may be task-augmented.
    create: JSONObject | None = None


@attrs.frozen(kw_only=True)
class ClientTaskRequestsCapability:
    """``capabilities.tasks.requests`` of a client (2025-11-25)."""

    sampling: SamplingTasksCapability | None = None
    elicitation: ElicitationTasksCapability | None = None


@attrs.frozen(kw_only=True)
class ClientTasksCapability:
    """``capabilities.tasks`` of a client (2025-11-25)."""

    #: Supports ``tasks/list``.
    list: JSONObject | None = None
    #: Supports ``tasks/cancel``.
    cancel: JSONObject | None = None
    #: Which requests may be task-augmented.
    requests: ClientTaskRequestsCapability | None = None


@attrs.frozen(kw_only=True)
class ClientCapabilities:
    """Capabilities a client announces in ``initialize``.

    In 2026-07-28 the same object travels in every request's ``_meta`` (see
    :class:`~trio_mcp.types.RequestMetaObject`); that revision drops ``tasks``
    and ``roots.listChanged`` and adds ``extensions``.
    """

    #: Non-standard capabilities.
    experimental: dict[str, JSONObject] | None = None
    roots: RootsCapability | None = None
    sampling: SamplingCapability | None = None
    #: (2025-06-18)
    elicitation: ElicitationCapability | None = None
    #: (2025-11-25)
    tasks: ClientTasksCapability | None = None
    #: Supported MCP extensions, keyed by extension id (2026-07-28).
    extensions: dict[str, JSONObject] | None = None


# --- server side ---------------------------------------------------------


@attrs.frozen(kw_only=True)
class PromptsCapability:
    """``capabilities.prompts``."""

    #: The server sends ``notifications/prompts/list_changed``.
    list_changed: bool | None = None


@attrs.frozen(kw_only=True)
class ResourcesCapability:
    """``capabilities.resources``."""

    #: Supports ``resources/subscribe``.
    subscribe: bool | None = None
    #: The server sends ``notifications/resources/list_changed``.
    list_changed: bool | None = None


@attrs.frozen(kw_only=True)
class ToolsCapability:
    """``capabilities.tools``."""

    #: The server sends ``notifications/tools/list_changed``.
    list_changed: bool | None = None


@attrs.frozen(kw_only=True)
class ToolsTasksCapability:
    """``tasks.requests.tools`` (2025-11-25)."""

    #: ``tools/call`` may be task-augmented.
    call: JSONObject | None = None


@attrs.frozen(kw_only=True)
class ServerTaskRequestsCapability:
    """``capabilities.tasks.requests`` of a server (2025-11-25)."""

    tools: ToolsTasksCapability | None = None


@attrs.frozen(kw_only=True)
class ServerTasksCapability:
    """``capabilities.tasks`` of a server (2025-11-25)."""

    #: Supports ``tasks/list``.
    list: JSONObject | None = None
    #: Supports ``tasks/cancel``.
    cancel: JSONObject | None = None
    #: Which requests may be task-augmented.
    requests: ServerTaskRequestsCapability | None = None


@attrs.frozen(kw_only=True)
class ServerCapabilities:
    """Capabilities a server announces in its ``initialize`` result.

    In 2026-07-28 they are the ``capabilities`` of ``server/discover``; that
    revision drops ``tasks`` (now the ``io.modelcontextprotocol/tasks``
    extension) and adds ``extensions``.
    """

    #: Non-standard capabilities.
    experimental: dict[str, JSONObject] | None = None
    #: Can send log messages.
    logging: JSONObject | None = None
    #: Supports ``completion/complete`` (2025-03-26).
    completions: JSONObject | None = None
    prompts: PromptsCapability | None = None
    resources: ResourcesCapability | None = None
    tools: ToolsCapability | None = None
    #: (2025-11-25)
    tasks: ServerTasksCapability | None = None
    #: Supported MCP extensions, keyed by extension id, e.g.
    #: ``io.modelcontextprotocol/tasks`` (2026-07-28).
    extensions: dict[str, JSONObject] | None = None


# --- messages ------------------------------------------------------------


@attrs.frozen(kw_only=True)
class InitializeRequestParams(RequestParams):
    """Params of ``initialize``."""

    #: Latest revision the client supports.
    protocol_version: str
    capabilities: ClientCapabilities
    client_info: Implementation


@attrs.frozen(kw_only=True)
class InitializeResult(Result):
    """Result of ``initialize``."""

    #: Revision the server chose.
    protocol_version: str
    capabilities: ServerCapabilities
    server_info: Implementation
    #: Usage hints for the client, e.g. for a system prompt.
    instructions: str | None = None
