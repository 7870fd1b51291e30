"""Roots: ``roots/list`` and ``notifications/roots/list_changed``.

Mirrors the spec page ``client/roots`` and the schema.ts definitions ``Root``
and ``ListRootsResult``. ``roots/list`` takes
:class:`~trio_mcp.types.RequestParams`; the list-changed notification takes
:class:`~trio_mcp.types.NotificationParams`.
"""

import attrs

from ._base import Meta, Result

__all__ = ["Root", "ListRootsResult"]


@attrs.frozen(kw_only=True)
class Root:
    """A root directory or file the server may operate on."""

    #: A ``file://`` URI (for now).
    uri: str
    #: Display name.
    name: str | None = None
    #: ``_meta`` (2025-06-18).
    meta: Meta | None = None


@attrs.frozen(kw_only=True)
class ListRootsResult(Result):
    """Result of ``roots/list``."""

    roots: list[Root]
