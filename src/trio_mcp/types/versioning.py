"""Versioning (2026-07-28): the per-request ``_meta`` keys and their errors.

Mirrors the spec pages ``basic/versioning`` and ``basic/index`` (``_meta``, error
codes) of 2026-07-28 and the schema.ts definitions ``RequestMetaObject``,
``ResultMetaObject`` and the ``data`` of ``MissingRequiredClientCapabilityError`` and
``UnsupportedProtocolVersionError``. The error codes themselves (-32020, -32021,
-32022) are wire codes: :class:`trio_mcp.protocol.ErrorCode`.

In the modern era there is no ``initialize``: every request names its revision,
its client capabilities and (should) its client in ``params._meta``. The params
classes keep ``meta`` a free-form :data:`~trio_mcp.types.Meta`;
:class:`RequestMetaObject` and :class:`ResultMetaObject` are typed views of the
reserved keys, structured from such a ``meta`` with the (lenient) converter::

    view = structure(RequestMetaObject, params.meta)

The error classes here are the ``error.data`` shapes; the codes are plain
constants (the protocol layer's ``ErrorCode`` does not list them yet).
"""

import attrs

from ._base import WIRE_NAME_METADATA_KEY, Implementation, ProgressToken
from .lifecycle import ClientCapabilities
from .logging import LoggingLevel

__all__ = [
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
]

#: The revision of the modern era these types model (schema.ts 2026-07-28
#: ``LATEST_PROTOCOL_VERSION``; the handshake era's is
#: :data:`~trio_mcp.types.LATEST_PROTOCOL_VERSION`).
MODERN_PROTOCOL_VERSION = "2026-07-28"

#: ``_meta`` key of a request: the revision it speaks. Required in 2026-07-28.
PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
#: ``_meta`` key of a request: the client's :class:`~trio_mcp.types.Implementation`.
CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"
#: ``_meta`` key of a request: this request's client capabilities. Required.
CLIENT_CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities"
#: ``_meta`` key of a request: the least severe log level wanted for it
#: (replaces ``logging/setLevel``; absent means no ``notifications/message``).
LOG_LEVEL_META_KEY = "io.modelcontextprotocol/logLevel"
#: ``_meta`` key of a result: the server's :class:`~trio_mcp.types.Implementation`.
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"


def _meta_key(key: str) -> dict[str, str]:
    return {WIRE_NAME_METADATA_KEY: key}


@attrs.frozen(kw_only=True)
class RequestMetaObject:
    """The reserved keys of a modern request's ``_meta`` (schema.ts ``RequestMetaObject``).

    A view: other ``_meta`` keys are ignored by the default converter (and
    refused by the strict one), and the params keep the whole ``_meta``.
    """

    #: ``io.modelcontextprotocol/protocolVersion``: the revision of this request.
    protocol_version: str = attrs.field(metadata=_meta_key(PROTOCOL_VERSION_META_KEY))
    #: ``io.modelcontextprotocol/clientCapabilities``: never inferred from an
    #: earlier request; ``{}`` means none.
    client_capabilities: ClientCapabilities = attrs.field(
        metadata=_meta_key(CLIENT_CAPABILITIES_META_KEY)
    )
    #: ``io.modelcontextprotocol/clientInfo``: self-reported, for display and logs only.
    client_info: Implementation | None = attrs.field(
        default=None, metadata=_meta_key(CLIENT_INFO_META_KEY)
    )
    #: ``io.modelcontextprotocol/logLevel`` (deprecated by SEP-2577, still defined).
    log_level: LoggingLevel | None = attrs.field(
        default=None, metadata=_meta_key(LOG_LEVEL_META_KEY)
    )
    #: ``progressToken``: opts in to ``notifications/progress``.
    progress_token: ProgressToken | None = None


@attrs.frozen(kw_only=True)
class ResultMetaObject:
    """The reserved key of a modern result's ``_meta`` (schema.ts ``ResultMetaObject``)."""

    #: ``io.modelcontextprotocol/serverInfo``: self-reported, for display and logs only.
    server_info: Implementation | None = attrs.field(
        default=None, metadata=_meta_key(SERVER_INFO_META_KEY)
    )


@attrs.frozen(kw_only=True)
class UnsupportedProtocolVersionErrorData:
    """``error.data`` of a -32022 error (schema.ts ``UnsupportedProtocolVersionError``)."""

    #: The revisions the server supports; the client retries with one of them.
    supported: list[str]
    #: The revision the request asked for.
    requested: str


@attrs.frozen(kw_only=True)
class MissingRequiredClientCapabilityErrorData:
    """``error.data`` of a -32021 error (schema.ts ``MissingRequiredClientCapabilityError``).

    ``HeaderMismatchError`` (-32020) has no ``data`` shape.
    """

    #: The client capabilities this request needs.
    required_capabilities: ClientCapabilities
