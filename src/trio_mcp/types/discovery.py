"""Discovery (2026-07-28): ``server/discover``.

Mirrors the spec page ``server/discover`` of 2026-07-28 and the schema.ts
definitions ``DiscoverRequest`` and ``DiscoverResult``. ``server/discover``
takes :class:`~trio_mcp.types.RequestParams` (only ``_meta``, which carries the
version, capabilities and client of :class:`~trio_mcp.types.RequestMetaObject`).
The server's name and version travel in the result's ``_meta``
(:data:`~trio_mcp.types.SERVER_INFO_META_KEY`), not in a field.
"""

import attrs

from ._base import CacheableResult, CacheScope
from .lifecycle import ServerCapabilities

__all__ = ["DiscoverResult"]


@attrs.frozen(kw_only=True)
class DiscoverResult(CacheableResult):
    """Result of ``server/discover`` (schema.ts ``DiscoverResult``), the modern ``initialize``.

    Exists only in 2026-07-28, so the cache hints of ``CacheableResult`` are
    required here, as schema.ts says.
    """

    #: Revisions the server supports; the client picks one for its requests.
    supported_versions: list[str]
    capabilities: ServerCapabilities
    #: Usage hints for the client, e.g. for a system prompt.
    instructions: str | None = None
    #: ``ttlMs``: how long (ms) the client may cache this result.
    ttl_ms: int
    #: ``cacheScope``: ``"public"`` or ``"private"``.
    cache_scope: CacheScope
