"""Shared building blocks: JSON aliases, ``_meta``, params/result bases, metadata.

Mirrors the spec page ``basic/index`` (messages, ``_meta``) and the schema.ts
definitions ``RequestParams``, ``NotificationParams``, ``Result``, ``EmptyResult``,
``BaseMetadata``, ``Icon``, ``Implementation``, ``Annotations``, ``Role``, the
pagination bases of ``server/utilities/pagination`` and, from 2026-07-28,
``ResultType`` (``Result.resultType``), ``InputResponses`` (the map a retried
request carries; its values are typed in :mod:`trio_mcp.types.input_required`)
and ``CacheableResult`` of ``server/utilities/caching``.

Every class is a frozen, slotted, keyword-only attrs class with snake_case names;
the converter in :mod:`trio_mcp.types._converter` owns the camelCase wire format.
"""

from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import attrs

__all__ = [
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
]

if TYPE_CHECKING:
    #: Any JSON value, as produced by a JSON parser (no NaN / Infinity on the wire).
    JSONValue: TypeAlias = (
        bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"] | None
    )
else:
    # At runtime a recursive alias would be full of ForwardRefs that break
    # typing.get_type_hints / attrs.resolve_types; JSON values pass through.
    JSONValue = Any
#: A JSON object. Structuring anything but a ``dict`` into this type fails.
JSONObject: TypeAlias = dict[str, JSONValue]
#: The free-form ``_meta`` object (``meta`` in Python).
Meta: TypeAlias = JSONObject
#: A JSON-RPC request id. ``bool`` and ``float`` are rejected by the converter.
RequestId: TypeAlias = str | int
#: A progress token (``_meta.progressToken``): a string or an integer, never a bool.
ProgressToken: TypeAlias = str | int
#: An opaque pagination cursor.
Cursor: TypeAlias = str
#: The sender or recipient of a message or piece of content.
Role: TypeAlias = Literal["user", "assistant"]

#: ``Result.resultType`` (2026-07-28): ``"complete"``, ``"input_required"`` or a
#: value a later revision defines (schema.ts ``ResultType`` is open).
ResultType: TypeAlias = str
#: ``CacheableResult.cacheScope`` (2026-07-28), like HTTP ``Cache-Control``
#: ``public`` / ``private``.
CacheScope: TypeAlias = Literal["public", "private"]

#: attrs field metadata key naming a field's wire key when the mechanical
#: camelCase rule cannot (the reserved ``_meta`` keys such as
#: ``io.modelcontextprotocol/protocolVersion``); read by the converter.
WIRE_NAME_METADATA_KEY = "trio_mcp.wire_name"

#: Key of the progress token inside a request's ``_meta``.
PROGRESS_TOKEN_META_KEY = "progressToken"
#: ``_meta`` key tying a message to a task (2025-11-25).
RELATED_TASK_META_KEY = "io.modelcontextprotocol/related-task"


@attrs.frozen(kw_only=True)
class RequestParams:
    """Params of a request that carries nothing but ``_meta``.

    Used as-is by ``ping`` and ``roots/list``; the base of every other request's
    params class.
    """

    #: ``_meta``: reserved metadata; ``progressToken`` opts in to progress reports.
    meta: Meta | None = None

    @property
    def progress_token(self) -> ProgressToken | None:
        """The ``_meta.progressToken`` if present and a valid token, else None."""
        if self.meta is None:
            return None
        token = self.meta.get(PROGRESS_TOKEN_META_KEY)
        if isinstance(token, str) or (isinstance(token, int) and not isinstance(token, bool)):
            return token
        return None


@attrs.frozen(kw_only=True)
class NotificationParams:
    """Params of a notification that carries nothing but ``_meta``.

    Used as-is by ``notifications/initialized`` and every ``*/list_changed``
    notification; the base of every other notification's params class.
    """

    #: ``_meta``: reserved metadata.
    meta: Meta | None = None


@attrs.frozen(kw_only=True)
class PaginatedRequestParams(RequestParams):
    """Params of the paginated ``*/list`` requests (tools, resources, prompts, tasks)."""

    #: Opaque cursor from a previous ``next_cursor``; absent for the first page.
    cursor: Cursor | None = None


@attrs.frozen(kw_only=True)
class Result:
    """Base of every result: ``_meta`` and ``resultType``. Peers may add unknown keys.

    schema.ts 2026-07-28 makes ``resultType`` required; the handshake-era
    revisions have no such key, so it is optional here (absent means
    ``"complete"``, as the 2026-07-28 ``Result`` says a client must read it).
    """

    #: ``_meta``: reserved metadata.
    meta: Meta | None = None
    #: ``resultType`` (2026-07-28): how to read the result; see :data:`ResultType`.
    result_type: ResultType | None = None


@attrs.frozen(kw_only=True)
class EmptyResult(Result):
    """A result with no content (``ping``, ``logging/setLevel``, subscriptions...)."""


@attrs.frozen(kw_only=True)
class CacheableResult(Result):
    """A result with the cache hints of 2026-07-28 (schema.ts ``CacheableResult``).

    schema.ts 2026-07-28 makes both hints required on every result that extends
    ``CacheableResult`` (the ``*/list`` results, ``resources/read``,
    ``server/discover``). The handshake-era results that gained them have no
    hints, so they are optional here; a modern-era server must set both.
    :class:`~trio_mcp.types.DiscoverResult`, which exists only in 2026-07-28,
    makes them required.
    """

    #: ``ttlMs``: how long (ms, >= 0) the client may cache the result; 0 = stale at once.
    ttl_ms: int | None = None
    #: ``cacheScope``: ``"public"`` (shareable across authorization contexts) or
    #: ``"private"`` (only within the same one).
    cache_scope: CacheScope | None = None


#: ``inputResponses`` of a retried request (2026-07-28): the client's answer to
#: each ``inputRequests`` entry of an ``InputRequiredResult``, under the same key.
#: The values are :data:`~trio_mcp.types.InputResponse` results
#: (``CreateMessageResult``, ``ListRootsResult``, ``ElicitResult``); the converter
#: structures each by its shape. Typed with the :class:`Result` base so that the
#: params classes of tools, prompts and resources need not import sampling,
#: which imports tools.
InputResponses: TypeAlias = dict[str, Result]

#: A value the user entered in an elicitation form; ``list[str]`` is 2025-11-25
#: (multi-select). Defined here, re-exported by :mod:`.elicitation`, so that the
#: converter registers its hook without importing elicitation (start-up).
ElicitValue: TypeAlias = str | int | float | bool | list[str]


@attrs.frozen(kw_only=True)
class PaginatedResult(CacheableResult):
    """Base of the results of paginated ``*/list`` requests.

    Every paginated result of 2026-07-28 is also a ``CacheableResult``, hence
    the base (the hints stay absent on handshake-era results).
    """

    #: Cursor for the next page; absent on the last page.
    next_cursor: Cursor | None = None


@attrs.frozen(kw_only=True)
class Icon:
    """An icon for an implementation, tool, prompt or resource (2025-11-25)."""

    #: URI of the icon: ``https:`` or ``data:`` URI.
    src: str
    #: MIME type override, if the server's type is missing or generic.
    mime_type: str | None = None
    #: Sizes such as ``"48x48"`` or ``"any"``.
    sizes: list[str] | None = None
    #: Theme the icon is designed for.
    theme: Literal["light", "dark"] | None = None


@attrs.frozen(kw_only=True)
class Implementation:
    """Name and version of an MCP client or server (``clientInfo``/``serverInfo``)."""

    #: Programmatic name.
    name: str
    #: Version string.
    version: str
    #: Display name (2025-06-18).
    title: str | None = None
    #: Icons (2025-11-25).
    icons: list[Icon] | None = None
    #: Human-readable description (2025-11-25).
    description: str | None = None
    #: Website URL (2025-11-25).
    website_url: str | None = None


@attrs.frozen(kw_only=True)
class Annotations:
    """Hints to the client on how to use or display an object.

    In 2024-11-05 this was the inline ``annotations`` of ``Annotated``
    (``audience`` and ``priority`` only).
    """

    #: Intended audience(s).
    audience: list[Role] | None = None
    #: Importance from 0 (least) to 1 (most).
    priority: float | None = None
    #: ISO 8601 timestamp of the last modification (2025-06-18).
    last_modified: str | None = None
