"""trio_mcp.protocol: MCP without I/O.

JSON-RPC envelopes, the two-phase codec, the METHODS table keyed by revision, the
revision table, the request, task and lifecycle state machines, and :class:`Connection`,
which holds one side of one session. It never imports trio (a test proves it), so
it can drive any I/O or be studied on its own.
"""

from ._book import ProtocolStatistics
from ._codec import DEFAULT_MAX_MESSAGE_SIZE, FrameError, decode, encode
from ._connection import Connection, ConnectionFactory
from ._errors import (
    ErrorCode,
    LocalProtocolError,
    MCPError,
    MessageTooLarge,
    NotJSON,
    ProtocolError,
    RemoteProtocolError,
    UnsupportedProtocolVersion,
)
from ._events import (
    CancelReceived,
    ErrorReceived,
    Event,
    Ignored,
    IgnoredReason,
    InvalidMessage,
    NotificationReceived,
    ProgressReceived,
    RequestReceived,
    ResponseReceived,
)
from ._headers import HeaderAnnotation, InvalidHeaderAnnotation
from ._lifecycle import (
    ALLOWED,
    LIFECYCLE,
    Lifecycle,
    LifecycleEvent,
    Permissions,
    Role,
    SessionState,
)
from ._messages import (
    ErrorObject,
    ErrorResponse,
    JSONObject,
    JSONValue,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    is_valid_request_id,
)
from ._methods import (
    METHODS,
    Capability,
    Kind,
    MethodSpec,
    Sender,
    custom_method,
    extension_of,
    methods_in,
)
from ._observer import FrameDirection, MultiObserver, NullObserver, RequestObserver
from ._reader import describe_structure_error
from ._requests import (
    TRANSITIONS,
    CancelOrigin,
    Direction,
    Progress,
    RequestEvent,
    RequestMeta,
    RequestRecord,
    RequestState,
)
from ._revisions import (
    ALL_VERSIONS,
    HANDSHAKE_VERSIONS,
    LATEST,
    LATEST_MODERN,
    LATEST_VERSION,
    MODERN_VERSIONS,
    REVISIONS,
    SUPPORTED_VERSIONS,
    V2026_07_28,
    Era,
    Revision,
    handshake_versions,
    modern_versions,
    negotiate_version,
)
from ._tasks import (
    TASK_TRANSITIONS,
    TaskBook,
    TaskCause,
    TaskEvent,
    TaskForm,
    TaskMove,
    TaskRecord,
    TaskReport,
    TaskState,
    apply_task_event,
    iso8601,
    new_task_id,
    parse_iso8601,
    start_task,
)

__all__ = [
    # messages and codec
    "JSONValue",
    "JSONObject",
    "RequestId",
    "is_valid_request_id",
    "Request",
    "Notification",
    "Response",
    "ErrorResponse",
    "ErrorObject",
    "Message",
    "decode",
    "encode",
    "FrameError",
    "DEFAULT_MAX_MESSAGE_SIZE",
    # errors
    "ErrorCode",
    "MCPError",
    "ProtocolError",
    "LocalProtocolError",
    "NotJSON",
    "RemoteProtocolError",
    "MessageTooLarge",
    "UnsupportedProtocolVersion",
    # methods
    "METHODS",
    "MethodSpec",
    "Kind",
    "Sender",
    "Capability",
    "methods_in",
    "custom_method",
    "extension_of",
    # lifecycle
    "Role",
    "SessionState",
    "LifecycleEvent",
    "LIFECYCLE",
    "Permissions",
    "ALLOWED",
    "Lifecycle",
    # revisions
    "Revision",
    "Era",
    "REVISIONS",
    "SUPPORTED_VERSIONS",
    "HANDSHAKE_VERSIONS",
    "MODERN_VERSIONS",
    "ALL_VERSIONS",
    "LATEST",
    "LATEST_VERSION",
    "LATEST_MODERN",
    "V2026_07_28",
    "handshake_versions",
    "modern_versions",
    "negotiate_version",
    # requests
    "RequestState",
    "RequestEvent",
    "TRANSITIONS",
    "Direction",
    "CancelOrigin",
    "Progress",
    "RequestRecord",
    "RequestMeta",
    # tasks: a request's record continued past its response
    "TaskState",
    "TaskEvent",
    "TASK_TRANSITIONS",
    "TaskCause",
    "TaskForm",
    "TaskMove",
    "TaskRecord",
    "TaskReport",
    "TaskBook",
    "apply_task_event",
    "iso8601",
    "parse_iso8601",
    "new_task_id",
    "start_task",
    # events
    "Event",
    "RequestReceived",
    "NotificationReceived",
    "ResponseReceived",
    "ErrorReceived",
    "CancelReceived",
    "ProgressReceived",
    "InvalidMessage",
    "Ignored",
    "IgnoredReason",
    # Streamable HTTP's x-mcp-header annotations (2026-07-28)
    "HeaderAnnotation",
    "InvalidHeaderAnnotation",
    # the connection
    "Connection",
    "ConnectionFactory",
    "ProtocolStatistics",
    "describe_structure_error",
    # observation
    "RequestObserver",
    "NullObserver",
    "MultiObserver",
    "FrameDirection",
]
