"""The client's subscriptions: resource updates in both eras, and the
2026-07-28 ``subscriptions/listen`` streams.

Theory of operation
-------------------
In the handshake era a resource is watched with ``resources/subscribe`` and
its updates arrive as ordinary ``notifications/resources/updated``, which
:meth:`Subscriptions.resource_updated` fans out to every open
:meth:`Subscriptions.resource_updates` block that covers the URI (RS-06).

In 2026-07-28 every watch is a long-lived ``subscriptions/listen`` request,
run in the client's nursery (:meth:`Subscriptions.listen`): the server first
acknowledges what it honours (SB-02..SB-04), then tags each notice with the
stream's id (SB-06); :meth:`Subscriptions.claim` routes such notices to their
stream, drops those of unknown streams or sent before the acknowledgment,
and leaves the others (a ``list_changed``) to the client's ordinary handling.
Leaving a stream cancels its request, which the server sees as
``notifications/cancelled`` (SB-08). The client keeps its cached lists fresh
through one such stream, :meth:`Subscriptions.listen_for_list_changes`
(SB-01). No stream is opened that discovery gives no reason for: no list
stream when nothing can change, no resource stream without
``resources.subscribe`` (SB-17).

Spec: RS-06, SB-01..SB-08, SB-17.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from .. import types as mcp_types
from .._errors import MCPError, SessionClosed
from .._session import Session
from .._util import covers
from ..protocol import Capability, NotificationReceived, Role
from ..protocol._errors import LocalProtocolError

logger = logging.getLogger("trio_mcp.client")

_SUBSCRIPTION_ID_KEY = mcp_types.SUBSCRIPTION_ID_META_KEY
_DROPPED = (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError)
_SUBSCRIBE = Capability(Role.SERVER, ("resources", "subscribe"))


def _declares(capabilities: dict[str, Any], feature: str) -> bool:
    """Whether a server capability object declares ``<feature>.listChanged``."""
    return Capability(Role.SERVER, (feature, "listChanged")).declared_in(capabilities)


class Subscription:
    """One 2026-07-28 listen stream of this client, keyed by its request id."""

    __slots__ = ("_ended", "accepted", "acknowledged", "ended", "id", "updates", "wanted")

    def __init__(
        self,
        request_id: Any,
        wanted: mcp_types.SubscriptionFilter,
        updates: trio.MemorySendChannel[str] | None,
    ) -> None:
        self.id = request_id
        self.wanted = wanted
        #: What the server acknowledged it honours (SB-03, SB-04).
        self.accepted: mcp_types.SubscriptionFilter | None = None
        self.acknowledged = trio.Event()
        self.updates = updates
        self.ended = False
        self._ended = trio.Event()

    def end(self) -> None:
        """The stream is over (also wakes whoever waits for the acknowledgment)."""
        self.ended = True
        self._ended.set()
        self.acknowledged.set()

    async def wait_ended(self) -> None:
        """Block until the stream ends (the server ended it, or the session closed).

        Cancellation: a plain wait.
        """
        await self._ended.wait()


class Subscriptions:
    """The resource-update watchers and listen streams of one client (see the
    module docstring).

    Args:
        session: the client's session.
        nursery: the client's nursery, where listen streams run (they end
            with the client).
    """

    __slots__ = ("_nursery", "_session", "_streams", "_watchers")

    def __init__(self, session: Session, nursery: trio.Nursery) -> None:
        self._session = session
        self._nursery = nursery
        # Handshake era: the open resource_updates blocks, by the URI they cover.
        self._watchers: list[tuple[str | None, trio.MemorySendChannel[str]]] = []
        # 2026-07-28: the open listen streams, by the listen request's id.
        self._streams: dict[Any, Subscription] = {}

    @asynccontextmanager
    async def resource_updates(
        self, uri: str | None, *, buffer: int
    ) -> AsyncIterator[trio.MemoryReceiveChannel[str]]:
        """A channel of updated resource URIs for the duration of the block
        (see :meth:`Client.resource_updates`).

        Cancellation:
            Leaving the block unsubscribes (bounded by the session's
            ``cancel_notify_grace``, shielded); if the session is closed by
            then, nothing is sent.
        """
        session = self._session
        send, receive = trio.open_memory_channel[str](buffer)
        revision = session.protocol.revision
        if revision is not None and revision.listen_subscriptions:
            if uri is None:
                raise ValueError("2026-07-28 subscribes by URI: pass the uri to resource_updates")
            if not _SUBSCRIBE.declared_in(session.protocol.peer_capabilities):
                # Never probe: a listen the server cannot honour would only be
                # refused or acknowledged empty (SB-17).
                raise LocalProtocolError(
                    "resource updates need the server capability resources.subscribe, "
                    "which the server did not declare"
                )
            async with self.listen(
                mcp_types.SubscriptionFilter(resource_subscriptions=[uri]), send
            ):
                yield receive
            return
        entry = (uri, send)
        self._watchers.append(entry)
        try:
            if uri is not None:
                await session.request("resources/subscribe", {"uri": uri})
            yield receive
        finally:
            self._watchers.remove(entry)
            send.close()
            if uri is not None and not session.closed:
                with trio.CancelScope(shield=True):
                    with trio.move_on_after(session.cancel_notify_grace):
                        try:
                            await session.request("resources/unsubscribe", {"uri": uri})
                        except MCPError as exc:
                            logger.debug("unsubscribe %s failed: %s", uri, exc)

    @asynccontextmanager
    async def listen(
        self,
        wanted: mcp_types.SubscriptionFilter,
        updates: trio.MemorySendChannel[str] | None = None,
    ) -> AsyncIterator[Subscription]:
        """One ``subscriptions/listen`` stream for the duration of the block:
        opened (and acknowledged) on entry, cancelled on exit. *updates*, if
        given, receives the stream's resource updates and is closed when the
        stream ends (the server completed it, or the block was left).

        Cancellation: leaving the block cancels the stream (the server is told:
        ``notifications/cancelled``, SB-08); a cancel while waiting for the
        acknowledgment does the same.
        """
        session = self._session
        message = session.prepare_request(
            "subscriptions/listen",
            {"notifications": mcp_types.converter.unstructure(wanted)},
        )
        subscription = Subscription(message.id, wanted, updates)
        self._streams[message.id] = subscription

        async def run(task_status: trio.TaskStatus[trio.CancelScope]) -> None:
            with trio.CancelScope() as scope:
                task_status.started(scope)
                try:
                    await session.call_prepared(message)
                except MCPError as exc:
                    logger.debug("subscription %r ended: %s", message.id, exc)
                finally:
                    subscription.end()
                    # The reader's loop ends too (a drained server completed
                    # the stream): it may listen again, elsewhere.
                    if updates is not None:
                        updates.close()

        scope = await self._nursery.start(run)
        try:
            await subscription.acknowledged.wait()
            yield subscription
        finally:
            scope.cancel()
            self._streams.pop(message.id, None)
            if updates is not None:
                updates.close()

    async def open_list_changes(self, max_wait: float) -> None:
        """Start :meth:`listen_for_list_changes` in the client's nursery and
        wait until its stream is acknowledged, at most *max_wait* seconds: a
        server slow to acknowledge delays the caller by that much, and a change
        made before the acknowledgment may then be missed.

        Cancellation: stops waiting; the stream runs on until the client closes.
        """
        listening = trio.Event()
        self._nursery.start_soon(
            self.listen_for_list_changes, listening, name="trio_mcp list subscription"
        )
        with trio.move_on_after(max_wait):
            await listening.wait()

    async def listen_for_list_changes(self, listening: trio.Event) -> None:
        """Keep the cached lists fresh in 2026-07-28: one listen stream for
        every list the server says can change (SB-01); ended with the client.

        Sets *listening* once the stream is acknowledged (or there is none to
        open, or it could not open): from then on no change is missed, so the
        lists fetched after it are kept fresh.

        Cancellation: runs until the client closes.
        """
        caps = self._session.protocol.peer_capabilities
        wanted = mcp_types.SubscriptionFilter(
            tools_list_changed=_declares(caps, "tools") or None,
            prompts_list_changed=_declares(caps, "prompts") or None,
            resources_list_changed=_declares(caps, "resources") or None,
        )
        try:
            if not (
                wanted.tools_list_changed
                or wanted.prompts_list_changed
                or wanted.resources_list_changed
            ):
                return
            async with self.listen(wanted) as subscription:
                listening.set()
                await subscription.wait_ended()
        except SessionClosed:
            return  # the client closed before (or while) the stream opened
        finally:
            listening.set()

    def claim(self, event: NotificationReceived) -> bool:
        """Route *event* if it is a notice of one listen stream (2026-07-28:
        tagged with the stream's id, SB-06): whether it was dealt with here;
        False leaves it to the client's ordinary handling (a ``list_changed``,
        say)."""
        meta = getattr(event.params, "meta", None)
        if not meta or _SUBSCRIPTION_ID_KEY not in meta:
            return False
        method = event.method
        params = event.params
        subscription = self._streams.get(meta[_SUBSCRIPTION_ID_KEY])
        if subscription is None:
            logger.debug("notice for unknown subscription: %s", method)
            return True
        if method == "notifications/subscriptions/acknowledged":
            subscription.accepted = params.notifications
            subscription.acknowledged.set()
            return True
        if not subscription.acknowledged.is_set():
            logger.debug("notice before the acknowledgment ignored (SB-02): %s", method)
            return True
        if method == "notifications/resources/updated" and subscription.updates is not None:
            try:
                subscription.updates.send_nowait(params.uri)
            except _DROPPED:
                logger.debug("dropped an update of %s", params.uri)
            return True
        return False

    def resource_updated(self, params: mcp_types.ResourceUpdatedNotificationParams) -> None:
        """A ``notifications/resources/updated``: to every watcher whose URI
        covers it (RS-06); dropped for a watcher whose buffer is full."""
        uri = params.uri
        for wanted, send in list(self._watchers):
            if wanted is None or covers(wanted, uri):
                try:
                    send.send_nowait(uri)
                except _DROPPED:
                    logger.debug("dropped an update of %s", uri)
