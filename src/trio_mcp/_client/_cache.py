"""The client's cached lists of what the server offers, and the events they raise.

Theory of operation
-------------------
After the handshake the client fetches every list the server declared (tools,
prompts, resources, resource templates), following every page (PA-01, PA-04).
A ``notifications/*/list_changed`` only marks a list *dirty*; a refresher task
in the client's own nursery re-fetches dirty lists one at a time, so a burst
of notifications costs one refresh and the session's notifier never waits on
a request. Each finished refresh bumps a generation and wakes
:meth:`ListCache.wait_changed`, and publishes a :class:`ListChanged` event;
a tool whose definition differs from the one first seen also publishes a
:class:`ToolDefinitionChanged`, so a host can ask the user to re-approve it.

Every tool definition, when first fetched and whenever it changes, is scanned
for hidden text (zero-width, bidirectional, tag and control characters ...;
:mod:`trio_mcp._client._hidden_text`, reliability X-06). The findings are kept per
tool (``ListCache.hidden_text``, read through ``Client.hidden_text``) and a
definition with findings publishes a :class:`HiddenTextFound`. Definitions are
never altered: the host decides what to show or refuse.

Structured-output validators are compiled once per tool definition and
dropped when the definition changes.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import jsonschema  # type: ignore[import-untyped]  # no stubs installed
import trio

from .. import types as mcp_types
from .._errors import MCPError, RPCError
from ..protocol import ErrorCode
from ._hidden_text import HiddenCharacter, find_hidden_text_in_tool

logger = logging.getLogger("trio_mcp.client")

#: kind -> (method, result attribute, key attribute, server capability)
LISTS: dict[str, tuple[str, str, str, str]] = {
    "tools": ("tools/list", "tools", "name", "tools"),
    "prompts": ("prompts/list", "prompts", "name", "prompts"),
    "resources": ("resources/list", "resources", "uri", "resources"),
    "resource_templates": (
        "resources/templates/list",
        "resource_templates",
        "uri_template",
        "resources",
    ),
}
#: list_changed notification -> kinds it dirties
CHANGED_NOTES: dict[str, tuple[str, ...]] = {
    "notifications/tools/list_changed": ("tools",),
    "notifications/prompts/list_changed": ("prompts",),
    # Resources and templates share one notification.
    "notifications/resources/list_changed": ("resources", "resource_templates"),
}


def _known(kind: str) -> str:
    """*kind*, if it names a list (else ValueError)."""
    if kind not in LISTS:
        raise ValueError(f"unknown list {kind!r}; one of {sorted(LISTS)}")
    return kind


class PaginationError(MCPError):
    """The server's pagination does not end (a repeated cursor, or too many pages)."""


@attrs.frozen
class ListChanged:
    """A cached list was re-fetched. Keys are names (tools, prompts) or URIs."""

    kind: str
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]


@attrs.frozen
class ToolDefinitionChanged:
    """A tool's definition differs from the one first seen (re-approve it)."""

    name: str
    first_seen: mcp_types.Tool
    previous: mcp_types.Tool
    current: mcp_types.Tool


@attrs.frozen
class HiddenTextFound:
    """A tool definition, new or changed, holds characters a reader cannot see
    (reliability X-06). ``findings`` are in document order; see
    :class:`~trio_mcp._client._hidden_text.HiddenCharacter`."""

    name: str
    tool: mcp_types.Tool
    findings: tuple[HiddenCharacter, ...]


ClientEvent = ListChanged | ToolDefinitionChanged | HiddenTextFound
Request = Callable[[str, Any], Awaitable[Any]]


async def fetch_all(request: Request, method: str, attr: str, *, max_pages: int) -> list[Any]:
    """Every item of a paginated list, page after page (see :func:`fetch_pages`)."""
    items, _ = await fetch_pages(request, method, attr, max_pages=max_pages)
    return items


async def fetch_pages(
    request: Request, method: str, attr: str, *, max_pages: int
) -> tuple[list[Any], list[Any]]:
    """Every item of a paginated list, page after page, and the pages themselves
    (their cache hints: 2026-07-28, CA-07).

    The cursor is opaque and passed back untouched; only its absence ends the
    list (an empty string is a cursor). A cursor seen twice, or more than
    *max_pages* pages, raises :class:`PaginationError` instead of looping.

    Cancellation: as the underlying requests; a partial list is discarded.

    Spec: PA-01, PA-02, PA-04, PA-05.
    """
    items: list[Any] = []
    pages: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(max_pages):
        params = None if cursor is None else {"cursor": cursor}
        page = await request(method, params)
        pages.append(page)
        items.extend(getattr(page, attr))
        cursor = page.next_cursor
        if cursor is None:
            return items, pages
        if cursor in seen:
            raise PaginationError(f"{method}: the server repeated cursor {cursor!r}")
        seen.add(cursor)
    raise PaginationError(f"{method}: more than {max_pages} pages")


class ListCache:
    """Cached lists of one client, kept up to date. Owned by the ``Client``.

    A list is refreshed when the server says it changed (``list_changed``,
    CA-06). With *cache_hints* (2026-07-28) each list is also *fresh* only for
    the shortest ``ttlMs`` of its pages after they arrived (0, absent or
    negative: stale at once, CA-03); :meth:`is_fresh` says so and the client's
    ``ensure_fresh`` refetches a stale list when asked. Nothing polls on the
    TTL (CA-04). In the handshake era a list stays fresh until a
    ``list_changed``.
    """

    def __init__(
        self,
        request: Request,
        capabilities: dict[str, Any],
        *,
        max_pages: int,
        cache_hints: bool = False,
        clock: Callable[[], float] = trio.current_time,
        tool_filter: Callable[[list[Any]], list[Any]] | None = None,
    ) -> None:
        self._request = request
        #: Drops tools the client must not offer (over HTTP: invalid
        #: ``x-mcp-header`` annotations, HM-27) before they are cached.
        self.tool_filter = tool_filter
        self._capabilities = capabilities
        self.max_pages = max_pages
        self.cache_hints = cache_hints
        self._clock = clock
        #: When each list stops being fresh (clock seconds; None: never fetched).
        self.fresh_until: dict[str, float | None] = dict.fromkeys(LISTS)
        #: The ``cacheScope`` of each list's pages, as the server said (CA-07).
        self.scope: dict[str, str | None] = dict.fromkeys(LISTS)
        self.items: dict[str, dict[str, Any]] = {kind: {} for kind in LISTS}
        self.generation: dict[str, int] = dict.fromkeys(LISTS, 0)
        self._changed: dict[str, trio.Event] = {kind: trio.Event() for kind in LISTS}
        self.first_seen_tools: dict[str, mcp_types.Tool] = {}
        #: Hidden characters per cached tool (only tools that have some).
        self.hidden_text: dict[str, tuple[HiddenCharacter, ...]] = {}
        self._dirty: set[str] = set()
        self._wake = trio.Event()
        self._subscribers: list[
            tuple[trio.MemorySendChannel[ClientEvent], trio.MemoryReceiveChannel[ClientEvent]]
        ] = []
        self._validators: dict[str, tuple[mcp_types.Tool, jsonschema.protocols.Validator]] = {}
        #: Events dropped because a subscriber's buffer was full.
        self.dropped_events = 0

    def declared(self, kind: str) -> bool:
        return LISTS[kind][3] in self._capabilities

    # ------------------------------------------------------------ refreshing

    async def refresh(self, kind: str) -> None:
        """Re-fetch one list now (every page) and publish what changed.

        Raises:
            ValueError: *kind* is not one of :data:`LISTS`.

        Cancellation: the old list stays if cancelled midway.
        """
        method, attr, key, _ = LISTS[_known(kind)]
        fetched, pages = await fetch_pages(self._request, method, attr, max_pages=self.max_pages)
        self._note_hints(kind, pages)
        if kind == "tools" and self.tool_filter is not None:
            fetched = self.tool_filter(fetched)
        new = {getattr(item, key): item for item in fetched}
        old = self.items[kind]
        self.items[kind] = new
        event = ListChanged(
            kind,
            added=tuple(k for k in new if k not in old),
            removed=tuple(k for k in old if k not in new),
            changed=tuple(k for k in new if k in old and old[k] != new[k]),
        )
        if kind == "tools":
            self._track_tools(old, new)
            self._scan_tools(old, new)
        self.generation[kind] += 1
        self._changed[kind].set()
        self._changed[kind] = trio.Event()
        self.publish(event)

    def _note_hints(self, kind: str, pages: list[Any]) -> None:
        now = self._clock()
        if not self.cache_hints:
            self.fresh_until[kind] = math.inf
            return
        ttls = [page.ttl_ms for page in pages]
        # CA-03: absent or negative is 0; the list is as fresh as its stalest page.
        shortest = min((t if isinstance(t, int) and t > 0 else 0) for t in ttls)
        self.fresh_until[kind] = now + shortest / 1000
        self.scope[kind] = pages[0].cache_scope if pages else None

    def is_fresh(self, kind: str) -> bool:
        """Whether list *kind* may be used without refetching (see the class
        docstring). Raises ValueError for an unknown *kind*."""
        until = self.fresh_until[_known(kind)]
        return until is not None and self._clock() < until

    async def ensure_fresh(self, kind: str) -> None:
        """Refetch list *kind* if it is not fresh; a checkpoint either way.

        Cancellation: as :meth:`refresh`.
        """
        if self.is_fresh(kind):
            await trio.lowlevel.checkpoint()
            return
        await self.refresh(kind)

    def _track_tools(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        for name, tool in new.items():
            first = self.first_seen_tools.setdefault(name, tool)
            previous = old.get(name, first)
            if tool != previous:
                self._validators.pop(name, None)
            if tool != first and tool != previous:
                self.publish(ToolDefinitionChanged(name, first, previous, tool))
            elif tool != first and name not in old:
                # Removed, then back with another definition.
                self.publish(ToolDefinitionChanged(name, first, previous, tool))

    def _scan_tools(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        # Only new and changed definitions are scanned (and announced); an
        # unchanged one keeps its findings.
        previous = self.hidden_text
        self.hidden_text = {}
        for name, tool in new.items():
            if name in old and old[name] == tool:
                findings = previous.get(name, ())
            else:
                findings = find_hidden_text_in_tool(tool)
                if findings:
                    self.publish(HiddenTextFound(name, tool, findings))
            if findings:
                self.hidden_text[name] = findings

    async def discover(self) -> None:
        """Fetch every list the server declared.

        A server that declared a capability yet answers its list with -32601 is
        tolerated (logged; the list stays empty).
        """
        for kind in LISTS:
            if not self.declared(kind):
                continue
            try:
                await self.refresh(kind)
            except RPCError as exc:
                if exc.code != int(ErrorCode.METHOD_NOT_FOUND):
                    raise
                logger.warning("server declared %s but %s failed: %s", kind, LISTS[kind][0], exc)

    def mark_dirty(self, notification: str) -> None:
        """A list_changed arrived: schedule a refresh (never blocks)."""
        for kind in CHANGED_NOTES.get(notification, ()):
            if self.declared(kind):
                # A fresh entry is stale once the server says it changed (CA-06).
                self.fresh_until[kind] = None
                self._dirty.add(kind)
                self._wake.set()

    async def run_refresher(self) -> None:
        """Refresh dirty lists until cancelled (runs in the client's nursery).

        A failed refresh is logged and leaves the previous list in place.

        Cancellation: stops at once; nothing is left half-updated.
        """
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            while self._dirty:
                kind = next(k for k in LISTS if k in self._dirty)  # table order
                self._dirty.discard(kind)
                try:
                    await self.refresh(kind)
                except MCPError as exc:
                    logger.warning("refreshing %s failed: %s", kind, exc)

    async def wait_changed(self, kind: str) -> None:
        """Block until the next refresh of *kind* finishes. Raises ValueError
        for an unknown *kind*.

        Cancellation: a plain wait.
        """
        await self._changed[_known(kind)].wait()

    # ---------------------------------------------------------------- events

    @asynccontextmanager
    async def events(self, buffer: float) -> AsyncIterator[trio.MemoryReceiveChannel[ClientEvent]]:
        """A channel of the events published during the block (see
        :meth:`Client.events`).

        Cancellation: entering and leaving never wait; leaving closes the
        channel.
        """
        send, receive = trio.open_memory_channel[ClientEvent](buffer)
        self._subscribers.append((send, receive))
        try:
            yield receive
        finally:
            self._subscribers = [pair for pair in self._subscribers if pair[1] is not receive]
            receive.close()

    def publish(self, event: ClientEvent) -> None:
        for pair in list(self._subscribers):
            try:
                pair[0].send_nowait(event)
            except trio.WouldBlock:
                self.dropped_events += 1
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._subscribers.remove(pair)

    # ------------------------------------------------------------ validation

    def output_validator(self, name: str) -> jsonschema.protocols.Validator | None:
        """The cached validator of tool *name*'s ``outputSchema`` (None: no schema known).

        Raises:
            jsonschema.SchemaError: the server's output schema is not a valid schema.
        """
        tool: mcp_types.Tool | None = self.items["tools"].get(name)
        if tool is None or tool.output_schema is None:
            return None
        cached = self._validators.get(name)
        if cached is not None and cached[0] is tool:
            return cached[1]
        schema = tool.output_schema
        cls = validator_class(schema)
        cls.check_schema(schema)
        validator = cls(schema)
        self._validators[name] = (tool, validator)
        return validator


__all__ = [
    "ClientEvent",
    "HiddenTextFound",
    "ListCache",
    "ListChanged",
    "PaginationError",
    "ToolDefinitionChanged",
    "fetch_all",
]


#: JSON Schema dialects the client validates (JS-03): 2020-12 is the default when a
#: schema has no ``$schema`` (JS-01); the older drafts are honoured when declared.
SUPPORTED_DIALECTS: dict[str, type[jsonschema.protocols.Validator]] = {
    cls.META_SCHEMA["$schema"].rstrip("#"): cls
    for cls in (
        jsonschema.Draft202012Validator,
        jsonschema.Draft201909Validator,
        jsonschema.Draft7Validator,
        jsonschema.Draft6Validator,
        jsonschema.Draft4Validator,
    )
}


#: The dialect of a schema without ``$schema`` (JS-01).
DEFAULT_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def validator_class(schema: Any) -> type[jsonschema.protocols.Validator]:
    """The validator for *schema*'s declared dialect (JS-02).

    Raises:
        jsonschema.SchemaError: the schema declares a dialect we do not support
            (said plainly, instead of silently validating with another one).
    """
    declared = schema.get("$schema") if isinstance(schema, dict) else None
    if declared is None:
        declared = DEFAULT_DIALECT
    cls = SUPPORTED_DIALECTS.get(str(declared).rstrip("#"))
    if cls is None:
        raise jsonschema.SchemaError(f"unsupported JSON Schema dialect {declared!r}")
    return cls
