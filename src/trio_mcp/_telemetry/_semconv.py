"""The OpenTelemetry semantic conventions for MCP that trio_mcp follows, as
constants and pure functions: what a request's span is called, its attributes,
and the metrics' names. No OpenTelemetry import: the mapping is tested on its own.

The conventions moved out of the core semantic conventions (introduced in
v1.39.0, deprecated there in v1.42.0) to the GenAI conventions repository;
trio_mcp follows its first release, pinned in :data:`SEMCONV_VERSION`. They
still describe the handshake era: following the direction the conventions
took for 2026-07-28 traffic, ``mcp.session.id`` is never set on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

#: The conventions followed: semantic-conventions-genai v0.1.0 (Development),
#: built on the core semantic conventions v1.45.0. Re-check at its next release.
SEMCONV_VERSION = "genai-0.1.0"
#: The core semantic conventions the pinned release builds on.
SEMCONV_CORE_VERSION = "1.45.0"
#: The instrumentation scope of every span and metric (tracer and meter name).
SCOPE = "trio_mcp"

# Attributes (registry: model/mcp/registry.yaml and the shared ones).
MCP_METHOD_NAME = "mcp.method.name"
MCP_PROTOCOL_VERSION = "mcp.protocol.version"
MCP_SESSION_ID = "mcp.session.id"
MCP_RESOURCE_URI = "mcp.resource.uri"
JSONRPC_REQUEST_ID = "jsonrpc.request.id"
RPC_RESPONSE_STATUS_CODE = "rpc.response.status_code"
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_PROMPT_NAME = "gen_ai.prompt.name"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
ERROR_TYPE = "error.type"
NETWORK_TRANSPORT = "network.transport"
NETWORK_PROTOCOL_NAME = "network.protocol.name"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
CLIENT_ADDRESS = "client.address"
CLIENT_PORT = "client.port"

#: ``gen_ai.operation.name`` of ``tools/call``, the only method that has one.
EXECUTE_TOOL = "execute_tool"
#: ``error.type`` of a ``tools/call`` answered with ``isError: true``.
TOOL_ERROR = "tool_error"
#: ``error.type`` of a request cancelled by a deadline (trio_mcp's own value;
#: the conventions name none). Its span status is ERROR.
TIMEOUT = "timeout"
#: ``error.type`` of a request cancelled otherwise (the caller, the peer,
#: shutdown, the transport): its span status stays UNSET, a cancel is not an
#: error of the operation.
CANCELLED = "cancelled"

# The four histograms of the conventions (model/mcp/metrics.yaml), in seconds.
CLIENT_OPERATION_DURATION = "mcp.client.operation.duration"
SERVER_OPERATION_DURATION = "mcp.server.operation.duration"
CLIENT_SESSION_DURATION = "mcp.client.session.duration"
SERVER_SESSION_DURATION = "mcp.server.session.duration"

# trio_mcp's own metrics: what the request state machine knows and no
# convention has a name for.
#: Histogram (s): how long a request was QUEUED before it RAN (inbound: waiting
#: for a concurrency slot; outbound: waiting to be written).
QUEUED_DURATION = "trio_mcp.request.queued.duration"
#: Counter: requests cancelled, by ``trio_mcp.cancel.origin``.
CANCELLATIONS = "trio_mcp.request.cancellations"
#: Counter: requests that ended, by ``trio_mcp.request.state``.
OUTCOMES = "trio_mcp.request.outcomes"
#: Up-down counter: requests running now.
IN_FLIGHT = "trio_mcp.request.in_flight"

# trio_mcp's own attributes.
#: Who asked for the cancel: caller, peer, deadline, shutdown, transport.
CANCEL_ORIGIN = "trio_mcp.cancel.origin"
#: Why (the reason the canceller gave).
CANCEL_REASON = "trio_mcp.cancel.reason"
#: How a request ended: completed, failed, cancelled.
REQUEST_STATE = "trio_mcp.request.state"
#: ``inbound`` (the peer sent it) or ``outbound`` (we did).
REQUEST_DIRECTION = "trio_mcp.request.direction"
#: On a link: ``previous round`` (the round of the same 2026-07-28 call this
#: one follows) or ``task creation`` (the request whose answer made the task).
LINK_KIND = "trio_mcp.link.kind"
#: The name of the event a cancelled request's span ends with.
CANCEL_EVENT = "trio_mcp.request.cancelled"

#: Every metric, with its instrument kind, unit and description (the docs'
#: table is made from this).
METRICS: dict[str, tuple[str, str, str]] = {
    CLIENT_OPERATION_DURATION: (
        "histogram",
        "s",
        "A request or notification as the sender sees it: from sending to the answer.",
    ),
    SERVER_OPERATION_DURATION: (
        "histogram",
        "s",
        "A request or notification as the receiver sees it: from receiving to the answer.",
    ),
    CLIENT_SESSION_DURATION: ("histogram", "s", "A handshake-era session at the client."),
    SERVER_SESSION_DURATION: ("histogram", "s", "A handshake-era session at the server."),
    QUEUED_DURATION: (
        "histogram",
        "s",
        "How long a request was queued before it ran (a slot, or the writer).",
    ),
    CANCELLATIONS: ("counter", "{request}", "Requests cancelled, by who asked."),
    OUTCOMES: ("counter", "{request}", "Requests that ended, by how."),
    IN_FLIGHT: ("updowncounter", "{request}", "Requests running now."),
}

#: The ``_meta`` keys trace context travels in (W3C Trace Context and Baggage).
TRACE_CONTEXT_KEYS = ("traceparent", "tracestate", "baggage")

_PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
#: The first revision with no session: ``mcp.session.id`` is never set on it,
#: and its connections record no session duration.
FIRST_SESSIONLESS = "2026-07-28"
_URI_METHODS = frozenset(
    {
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "notifications/resources/updated",
    }
)

Role = Literal["client", "server"]


def target_of(method: str, params: Mapping[str, Any] | None) -> str | None:
    """The span name's target: the tool's or the prompt's name."""
    if params is None or method not in ("tools/call", "prompts/get"):
        return None
    name = params.get("name")
    return name if isinstance(name, str) else None


def span_name(method: str, params: Mapping[str, Any] | None) -> str:
    """``{mcp.method.name} {target}``, or the method alone (``tools/call echo``)."""
    target = target_of(method, params)
    return method if target is None else f"{method} {target}"


def protocol_version_of(params: Mapping[str, Any] | None, negotiated: str | None) -> str | None:
    """The version a message is spoken in: a 2026-07-28 request names its
    own in ``_meta``; otherwise the session's negotiated one."""
    meta = params.get("_meta") if params is not None else None
    if isinstance(meta, dict):
        named = meta.get(_PROTOCOL_VERSION_KEY)
        if isinstance(named, str):
            return named
    return negotiated


def request_attributes(
    method: str,
    params: Mapping[str, Any] | None,
    *,
    request_id: str | int | None,
    protocol_version: str | None,
    session_id: str | None = None,
    network: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The span attributes of one request or notification (before its outcome).

    *session_id* is kept only for a handshake-era version; *network* holds
    the transport's ``network.*`` and ``server.*``/``client.*`` attributes.
    """
    attributes: dict[str, Any] = {MCP_METHOD_NAME: method}
    if request_id is not None:
        attributes[JSONRPC_REQUEST_ID] = str(request_id)
    if protocol_version is not None:
        attributes[MCP_PROTOCOL_VERSION] = protocol_version
        if session_id is not None and protocol_version < FIRST_SESSIONLESS:
            attributes[MCP_SESSION_ID] = session_id
    target = target_of(method, params)
    if method == "tools/call":
        attributes[GEN_AI_OPERATION_NAME] = EXECUTE_TOOL
        if target is not None:
            attributes[GEN_AI_TOOL_NAME] = target
    elif method == "prompts/get" and target is not None:
        attributes[GEN_AI_PROMPT_NAME] = target
    if method in _URI_METHODS and params is not None:
        uri = params.get("uri")
        if isinstance(uri, str):
            attributes[MCP_RESOURCE_URI] = uri
    if network:
        attributes.update(network)
    return attributes


def error_attributes(code: int) -> dict[str, str]:
    """``error.type`` and ``rpc.response.status_code`` of a JSON-RPC error."""
    return {ERROR_TYPE: str(code), RPC_RESPONSE_STATUS_CODE: str(code)}


def metric_attributes(attributes: Mapping[str, Any], role: Role) -> dict[str, Any]:
    """The attributes of ``mcp.*.operation.duration``: the span's, without the
    high-cardinality ones (request id, session id, resource URI) and, at the
    server, without ``server.*``."""
    dropped = {JSONRPC_REQUEST_ID, MCP_SESSION_ID, MCP_RESOURCE_URI}
    if role == "server":
        dropped |= {SERVER_ADDRESS, SERVER_PORT, CLIENT_ADDRESS, CLIENT_PORT}
    return {key: value for key, value in attributes.items() if key not in dropped}


def network_attributes(
    transport: Literal["pipe", "tcp"] | None,
    *,
    protocol: str | None = None,
    peer: tuple[str, int] | None = None,
    role: Role = "client",
) -> dict[str, Any]:
    """``network.transport`` (``pipe`` for stdio, ``tcp`` for HTTP),
    ``network.protocol.name`` and the peer's address: ``server.*`` at a
    client, ``client.*`` at a server."""
    attributes: dict[str, Any] = {}
    if transport is not None:
        attributes[NETWORK_TRANSPORT] = transport
    if protocol is not None:
        attributes[NETWORK_PROTOCOL_NAME] = protocol
    if peer is not None:
        address, port = (
            (SERVER_ADDRESS, SERVER_PORT)
            if role == "client"
            else (
                CLIENT_ADDRESS,
                CLIENT_PORT,
            )
        )
        attributes[address], attributes[port] = peer
    return attributes
