"""Subscriptions (2026-07-28): ``subscriptions/listen`` and its stream.

Mirrors the spec page ``basic/patterns/subscriptions`` of 2026-07-28 and the
schema.ts definitions ``NotificationMetaObject``, ``SubscriptionFilter``,
``SubscriptionsListenRequestParams``, ``SubscriptionsListenResultMetaObject``,
``SubscriptionsListenResult``, ``SubscriptionsAcknowledgedNotificationParams``.

``subscriptions/listen`` replaces ``resources/subscribe``/``unsubscribe`` and
the HTTP GET stream. The server first sends
``notifications/subscriptions/acknowledged``, then only the notification types
asked for (``notifications/*/list_changed`` with
:class:`~trio_mcp.types.NotificationParams`, ``notifications/resources/updated``
with :class:`~trio_mcp.types.ResourceUpdatedNotificationParams`), each with
:data:`SUBSCRIPTION_ID_META_KEY` in ``_meta``; it answers the listen request
(:class:`SubscriptionsListenResult`) only when it ends the stream gracefully.
"""

import attrs

from ._base import Meta, NotificationParams, RequestId, RequestParams, Result

__all__ = [
    "SUBSCRIPTION_ID_META_KEY",
    "SubscriptionFilter",
    "SubscriptionsListenRequestParams",
    "SubscriptionsAcknowledgedNotificationParams",
    "SubscriptionsListenResult",
]

#: ``_meta`` key of every notification on a subscription stream and of the
#: listen result: the JSON-RPC id of the ``subscriptions/listen`` request.
SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId"


@attrs.frozen(kw_only=True)
class SubscriptionFilter:
    """The notification types of a stream (schema.ts ``SubscriptionFilter``)."""

    #: ``notifications/tools/list_changed``.
    tools_list_changed: bool | None = None
    #: ``notifications/prompts/list_changed``.
    prompts_list_changed: bool | None = None
    #: ``notifications/resources/list_changed``.
    resources_list_changed: bool | None = None
    #: URIs to receive ``notifications/resources/updated`` for.
    resource_subscriptions: list[str] | None = None
    #: Tasks to receive ``notifications/tasks`` for (the tasks extension,
    #: SEP-2663; the listen request must declare the extension).
    task_ids: list[str] | None = None


@attrs.frozen(kw_only=True)
class SubscriptionsListenRequestParams(RequestParams):
    """Params of ``subscriptions/listen`` (schema.ts ``SubscriptionsListenRequestParams``)."""

    #: What the client opts in to; the server never sends anything else.
    notifications: SubscriptionFilter


@attrs.frozen(kw_only=True)
class SubscriptionsAcknowledgedNotificationParams(NotificationParams):
    """Params of ``notifications/subscriptions/acknowledged``.

    schema.ts ``SubscriptionsAcknowledgedNotificationParams``; ``_meta`` carries
    :data:`SUBSCRIPTION_ID_META_KEY`.
    """

    #: The requested types the server supports and will honour.
    notifications: SubscriptionFilter


def _subscription_id(meta: Meta | None) -> RequestId | None:
    value = None if meta is None else meta.get(SUBSCRIPTION_ID_META_KEY)
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


@attrs.frozen(kw_only=True)
class SubscriptionsListenResult(Result):
    """The server ended a stream gracefully (schema.ts ``SubscriptionsListenResult``).

    ``_meta`` is required and holds :data:`SUBSCRIPTION_ID_META_KEY`
    (``SubscriptionsListenResultMetaObject``); the body is otherwise empty.
    """

    meta: Meta = attrs.field()

    @meta.validator
    def _check_meta(self, _: object, meta: Meta) -> None:
        if _subscription_id(meta) is None:
            raise ValueError(f"_meta needs {SUBSCRIPTION_ID_META_KEY!r} (a string or an integer)")

    @property
    def subscription_id(self) -> RequestId:
        """The id of the ``subscriptions/listen`` request this result closes."""
        value = _subscription_id(self.meta)
        assert value is not None  # checked by the validator
        return value
