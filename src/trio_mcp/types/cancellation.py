"""Cancellation: ``notifications/cancelled``.

Mirrors the spec page ``basic/utilities/cancellation`` and the schema.ts
definition ``CancelledNotificationParams``.
"""

import attrs

from ._base import NotificationParams, RequestId

__all__ = ["CancelledNotificationParams"]


@attrs.frozen(kw_only=True)
class CancelledNotificationParams(NotificationParams):
    """Params of ``notifications/cancelled``.

    ``request_id`` was required up to 2025-06-18; 2025-11-25 made it optional
    (it must be present for non-task requests; tasks use ``tasks/cancel``).
    """

    #: Id of the request to cancel (sent by the same side that sent the request).
    request_id: RequestId | None = None
    #: Why, for logging or display.
    reason: str | None = None
