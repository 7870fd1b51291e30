"""trio_mcp.protocol: MCP without I/O.

JSON-RPC envelopes, the two-phase codec, the METHODS table keyed by revision, the
request and lifecycle state machines, and :class:`Connection`, which holds one side
of one session. It never imports trio (a test proves it), so it can drive any I/O
or be studied on its own.
"""

from ._book import ProtocolStatistics
from ._codec import DEFAULT_MAX_MESSAGE_SIZE, FrameError, decode, encode
from ._connection import Connection
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
    InvalidMessage,
    NotificationReceived,
    ProgressReceived,
    RequestReceived,
    ResponseReceived,
)
from ._lifecycle import (
    BATCH_REVISION,
    LATEST_VERSION,
    SUPPORTED_VERSIONS,
    Role,
    SessionState,
    negotiate_version,
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
from ._methods import METHODS, Capability, Kind, MethodSpec, Sender, methods_in
from ._observer import FrameDirection, MultiObserver, NullObserver, RequestObserver
from ._receiving import describe_structure_error
from ._requests import (
    TRANSITIONS,
    CancelOrigin,
    Direction,
    Progress,
    RequestEvent,
    RequestRecord,
    RequestState,
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
    # lifecycle
    "Role",
    "SessionState",
    "SUPPORTED_VERSIONS",
    "LATEST_VERSION",
    "BATCH_REVISION",
    "negotiate_version",
    # requests
    "RequestState",
    "RequestEvent",
    "TRANSITIONS",
    "Direction",
    "CancelOrigin",
    "Progress",
    "RequestRecord",
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
    # the connection
    "Connection",
    "ProtocolStatistics",
    "describe_structure_error",
    # observation
    "RequestObserver",
    "NullObserver",
    "MultiObserver",
    "FrameDirection",
]
