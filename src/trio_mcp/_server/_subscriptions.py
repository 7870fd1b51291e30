"""``subscriptions/listen`` (2026-07-28): one request, one stream of change notices.

Theory of operation
-------------------
In the modern era a connection is not a session (ST-07): a client that wants
``list_changed`` or ``resources/updated`` notices opens a long-lived
``subscriptions/listen`` request saying which it wants. Its handler
(:func:`listen`) runs for as long as the stream lasts:

1. it works out what it will honour: the requested types whose capability the
   server declares (SB-03), and sends ``notifications/subscriptions/acknowledged``
   with that filter, the first message carrying the subscription's id (SB-02);
2. it registers a :class:`Listener` with the server's :class:`Listeners`, which
   every registry change reaches (coalesced, as for handshake-era sessions), and
   forwards what arrives, each notice tagged with the listen request's id in
   ``_meta`` (SB-05, ME-13), nothing else (SB-01, SB-13);
   A request that accepts nothing (every type it asked for is unhonoured, or it
   asked for none) is acknowledged with ``notifications: {}`` and answered at
   once with the ``complete`` result, so the stream ends instead of idling
   until shutdown; a server with no listen selector at all (no
   ``listChanged``, no ``resources.subscribe``, no task status) refuses the
   request -32601 before acknowledging anything (HTTP 404). Both follow the
   transports working group's draft on unavailable and empty listen requests
   (SB-15, SB-16);
3. it ends when the client cancels it (stdio: ``notifications/cancelled``; its
   scope is cancelled and nothing more is sent, CN-16), or when the session
   begins to shut down or the instance drains (``Server.complete_listens``):
   then it answers the listen request with a ``complete`` result carrying the
   id (SB-09). That holds on every close of the session, the owner's cancel
   included: the stream's scope is shielded from a cancel of the code running
   the session, whose shutdown waits for this answer (bounded). If shutdown
   cancels it before that, the connection ends it with
   ``notifications/cancelled`` naming it (SB-10).

:class:`Listeners` is the in-process fan-out behind a narrow interface
(``add``/``discard``/``changed``/``resource_updated``); a server scaled over
processes feeds it from its bus (``trio_mcp._server._fanout``).

Cancellation: :func:`listen` runs in the request's own scope until one of the
ends above; a notice not yet queued when it is cancelled is dropped.

Task status (the tasks extension): a filter's ``taskIds`` get
``notifications/tasks`` for the requestor's tasks among them, each change
(from any worker sharing the task store) until the task is terminal.

Spec: SB-01, SB-02, SB-03, SB-05, SB-09, SB-10, SB-13, SB-15, SB-16, ME-13, ST-07,
CN-15, TK-19.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import trio

from .. import types as mcp_types
from .._errors import RPCError
from ..protocol import Capability, Role
from ..protocol._errors import ErrorCode
from ._serve import subscribed

if TYPE_CHECKING:
    from .._session import RequestContext

#: Filter field -> (the notification it asks for, the capability path it needs).
_LIST_FILTERS = {
    "tools_list_changed": ("notifications/tools/list_changed", ("tools", "listChanged")),
    "prompts_list_changed": ("notifications/prompts/list_changed", ("prompts", "listChanged")),
    "resources_list_changed": (
        "notifications/resources/list_changed",
        ("resources", "listChanged"),
    ),
}
_RESOURCE_UPDATED = "notifications/resources/updated"
_SUBSCRIBE = Capability(Role.SERVER, ("resources", "subscribe"))


def honoured(
    wanted: mcp_types.SubscriptionFilter, capabilities: dict[str, Any]
) -> mcp_types.SubscriptionFilter:
    """The part of *wanted* a server declaring *capabilities* honours (SB-03)."""
    lists: dict[str, Any] = {
        field: True
        for field, (_, path) in _LIST_FILTERS.items()
        if getattr(wanted, field) and Capability(Role.SERVER, path).declared_in(capabilities)
    }
    uris = wanted.resource_subscriptions
    if uris is not None and not _SUBSCRIBE.declared_in(capabilities):
        uris = None
    return mcp_types.SubscriptionFilter(**lists, resource_subscriptions=uris)


def selectors(capabilities: dict[str, Any], task_status: bool) -> bool:
    """Whether a server declaring *capabilities* has anything a listen can select
    (SB-16): a ``listChanged``, ``resources.subscribe``, or task status."""
    return (
        task_status
        or _SUBSCRIBE.declared_in(capabilities)
        or any(
            Capability(Role.SERVER, path).declared_in(capabilities)
            for _, path in _LIST_FILTERS.values()
        )
    )


def accepts_nothing(accepted: mcp_types.SubscriptionFilter) -> bool:
    """Whether an honoured filter lets no notice through (SB-15)."""
    return not (
        any(getattr(accepted, field) for field in _LIST_FILTERS)
        or accepted.resource_subscriptions
        or accepted.task_ids
    )


class Listener:
    """One open ``subscriptions/listen`` stream: what it honours and what waits for it."""

    __slots__ = ("methods", "pending", "uris", "wake")

    def __init__(self, accepted: mcp_types.SubscriptionFilter) -> None:
        #: The list-changed notifications it receives.
        self.methods = frozenset(
            method for field, (method, _) in _LIST_FILTERS.items() if getattr(accepted, field)
        )
        #: The URIs it receives updates for (a parent covers its sub-resources, RS-06).
        self.uris = set(accepted.resource_subscriptions or ())
        #: (method, uri or None) to deliver; a dict, so repeats coalesce.
        self.pending: dict[tuple[str, str | None], None] = {}
        self.wake = trio.Event()

    def push(self, method: str, uri: str | None = None) -> None:
        self.pending[(method, uri)] = None
        self.wake.set()


class Listeners:
    """The open listen streams of one server (in this process)."""

    __slots__ = ("_listeners", "completing")

    def __init__(self) -> None:
        self._listeners: set[Listener] = set()
        #: Set when the instance drains: every stream ends with its result.
        self.completing = trio.Event()

    def __len__(self) -> int:
        return len(self._listeners)

    def add(self, listener: Listener) -> None:
        self._listeners.add(listener)

    def discard(self, listener: Listener) -> None:
        self._listeners.discard(listener)

    def changed(self, method: str) -> None:
        """A list changed: tell every stream that asked for *method*."""
        for listener in self._listeners:
            if method in listener.methods:
                listener.push(method)

    def resource_updated(self, uri: str) -> None:
        """*uri* changed: tell every stream subscribed to it or to a parent of it."""
        for listener in self._listeners:
            if subscribed(listener.uris, uri):
                listener.push(_RESOURCE_UPDATED, uri)

    def resync(self) -> None:
        """Changes may have been missed: tell every stream that each resource
        it subscribed to changed (the lists are told through :meth:`changed`)."""
        for listener in self._listeners:
            for uri in listener.uris:
                listener.push(_RESOURCE_UPDATED, uri)


class TaskStatus(Protocol):
    """What :func:`listen` uses of the server's tasks for a filter's ``taskIds``
    (the tasks extension): the server's ``TaskMethods``."""

    async def listened(self, request: RequestContext, wanted: Sequence[str]) -> list[str]: ...

    async def watch(
        self,
        request: RequestContext,
        task_id: str,
        notify: Callable[[dict[str, Any]], Awaitable[None]],
    ) -> None: ...


async def listen(
    request: RequestContext, listeners: Listeners, tasks: TaskStatus | None = None
) -> mcp_types.SubscriptionsListenResult:
    """Serve one ``subscriptions/listen`` request until it ends (see the module docstring).

    A filter's ``taskIds`` (the tasks extension, SEP-2663) are honoured where
    the server offers the extension: the acknowledgement names the requestor's
    tasks among them, and each change of one is sent as ``notifications/tasks``
    until it is terminal; a listen request that did not declare the extension
    is refused -32021 naming it.

    A server with nothing to listen to refuses the request -32601 (SB-16); a
    request that accepts nothing is acknowledged and answered at once (SB-15).

    Cancellation: runs in the request's scope, shielded from a cancel of the
    code running the session; returns the ``complete`` result when the
    session begins to shut down, whichever way it closes, or the instance
    drains.
    """
    session = request.session
    params: mcp_types.SubscriptionsListenRequestParams = request.params
    modern = session.protocol.modern_capabilities
    capabilities = session.protocol.local_capabilities if modern is None else modern
    offered = capabilities.get("extensions") or {}
    task_status = tasks is not None and mcp_types.TASKS_EXTENSION in offered
    if not selectors(capabilities, task_status):
        raise RPCError(int(ErrorCode.METHOD_NOT_FOUND), "Method not found: subscriptions/listen")
    accepted = honoured(params.notifications, capabilities)
    wanted = params.notifications.task_ids
    if wanted and task_status:
        assert tasks is not None
        accepted = attrs.evolve(accepted, task_ids=await tasks.listened(request, wanted) or None)
    # Looked up here: the subscriptions types load when a client first listens.
    tag: dict[str, Any] = {mcp_types.SUBSCRIPTION_ID_META_KEY: request.request_id}
    if accepts_nothing(accepted):
        # Nothing will ever reach this stream: holding it open would only tie
        # up the connection (on serverless hosts, the whole invocation).
        await session.notify(
            "notifications/subscriptions/acknowledged",
            mcp_types.SubscriptionsAcknowledgedNotificationParams(
                notifications=mcp_types.SubscriptionFilter(), meta=tag
            ),
        )
        return mcp_types.SubscriptionsListenResult(meta=tag)
    listener = Listener(accepted)
    listeners.add(listener)
    try:
        await session.notify(
            "notifications/subscriptions/acknowledged",
            mcp_types.SubscriptionsAcknowledgedNotificationParams(notifications=accepted, meta=tag),
        )
        async with trio.open_nursery() as nursery:

            async def stop_on_shutdown() -> None:
                await session.wait_stopping()
                nursery.cancel_scope.cancel()

            nursery.start_soon(stop_on_shutdown)

            async def stop_on_drain() -> None:
                await listeners.completing.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(stop_on_drain)

            async def task_notice(fields: dict[str, Any]) -> None:
                await session.notify("notifications/tasks", {**fields, "_meta": tag})

            for task_id in accepted.task_ids or ():
                assert tasks is not None
                nursery.start_soon(tasks.watch, request, task_id, task_notice)
            while not session.closed:
                await listener.wake.wait()
                listener.wake = trio.Event()
                pending, listener.pending = listener.pending, {}
                for method, uri in pending:
                    notice: dict[str, Any] = {"_meta": tag}
                    if uri is not None:
                        notice["uri"] = uri
                    await session.notify(method, notice)
    finally:
        listeners.discard(listener)
    # Only the watchers end the loop: the session is stopping, or the instance drains.
    return mcp_types.SubscriptionsListenResult(meta=tag)
