"""Resources: listing, templates, reading and subscriptions.

Mirrors the spec page ``server/resources`` and the schema.ts definitions
``ResourceTemplate``, ``ListResourcesResult``, ``ListResourceTemplatesResult``,
``ReadResourceRequestParams``, ``ReadResourceResult``,
``SubscribeRequestParams``, ``UnsubscribeRequestParams`` and
``ResourceUpdatedNotificationParams``. :class:`Resource` and the resource
contents live in :mod:`.content` (content blocks embed them) and are re-exported.

``resources/list`` and ``resources/templates/list`` take
:class:`~trio_mcp.types.PaginatedRequestParams`; subscriptions answer with
:class:`~trio_mcp.types.EmptyResult`; ``notifications/resources/list_changed``
takes :class:`~trio_mcp.types.NotificationParams`.
"""

import attrs

from ._base import (
    Annotations,
    CacheableResult,
    Icon,
    InputResponses,
    Meta,
    NotificationParams,
    PaginatedResult,
    RequestParams,
)
from .content import BlobResourceContents, Resource, ResourceContents, TextResourceContents

__all__ = [
    "Resource",
    "ResourceContents",
    "TextResourceContents",
    "BlobResourceContents",
    "ResourceTemplate",
    "ListResourcesResult",
    "ListResourceTemplatesResult",
    "ResourceRequestParams",
    "ReadResourceRequestParams",
    "ReadResourceResult",
    "SubscribeRequestParams",
    "UnsubscribeRequestParams",
    "ResourceUpdatedNotificationParams",
]


@attrs.frozen(kw_only=True)
class ResourceTemplate:
    """A parameterised resource (RFC 6570 URI template)."""

    #: The URI template.
    uri_template: str
    #: Programmatic name.
    name: str
    #: Display name (2025-06-18).
    title: str | None = None
    #: Description.
    description: str | None = None
    #: MIME type of every matching resource, if they share one.
    mime_type: str | None = None
    #: Client hints.
    annotations: Annotations | None = None
    #: Icons (2025-11-25).
    icons: list[Icon] | None = None
    #: ``_meta`` (2025-06-18).
    meta: Meta | None = None


@attrs.frozen(kw_only=True)
class ListResourcesResult(PaginatedResult):
    """Result of ``resources/list``."""

    resources: list[Resource]


@attrs.frozen(kw_only=True)
class ListResourceTemplatesResult(PaginatedResult):
    """Result of ``resources/templates/list``."""

    resource_templates: list[ResourceTemplate]


@attrs.frozen(kw_only=True)
class ResourceRequestParams(RequestParams):
    """Params naming one resource by URI (base of read/subscribe/unsubscribe)."""

    #: URI of the resource.
    uri: str


@attrs.frozen(kw_only=True)
class ReadResourceRequestParams(ResourceRequestParams):
    """Params of ``resources/read``.

    2026-07-28 adds ``InputResponseRequestParams`` (a retried read after an
    input-required round).
    """

    #: ``inputResponses`` of a retried request (2026-07-28): the answers to the
    #: previous round's ``inputRequests``, under the same keys.
    input_responses: InputResponses | None = None
    #: ``requestState`` (2026-07-28): the previous round's opaque state, echoed.
    request_state: str | None = None


@attrs.frozen(kw_only=True)
class ReadResourceResult(CacheableResult):
    """Result of ``resources/read`` (a ``CacheableResult`` in 2026-07-28)."""

    contents: list[TextResourceContents | BlobResourceContents]


@attrs.frozen(kw_only=True)
class SubscribeRequestParams(ResourceRequestParams):
    """Params of ``resources/subscribe``."""


@attrs.frozen(kw_only=True)
class UnsubscribeRequestParams(ResourceRequestParams):
    """Params of ``resources/unsubscribe``."""


@attrs.frozen(kw_only=True)
class ResourceUpdatedNotificationParams(NotificationParams):
    """Params of ``notifications/resources/updated``."""

    #: URI of the updated resource (may be a sub-resource of the subscription).
    uri: str
