"""Progress: ``notifications/progress``.

Mirrors the spec page ``basic/utilities/progress`` and the schema.ts
definitions ``ProgressToken`` and ``ProgressNotificationParams``. A requester
opts in by putting ``progressToken`` in the request's ``_meta``
(see :attr:`~trio_mcp.types.RequestParams.progress_token`).
"""

import attrs

from ._base import NotificationParams, ProgressToken

__all__ = ["ProgressToken", "ProgressNotificationParams"]


@attrs.frozen(kw_only=True)
class ProgressNotificationParams(NotificationParams):
    """Params of ``notifications/progress``."""

    #: The token from the original request's ``_meta``.
    progress_token: ProgressToken
    #: Progress so far; increases with every notification.
    progress: float
    #: Total, if known.
    total: float | None = None
    #: Human-readable description (2025-03-26).
    message: str | None = None
