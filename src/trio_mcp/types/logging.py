"""Logging: ``logging/setLevel`` and ``notifications/message``.

Mirrors the spec page ``server/utilities/logging`` and the schema.ts
definitions ``LoggingLevel``, ``SetLevelRequestParams`` and
``LoggingMessageNotificationParams``. ``logging/setLevel`` answers with
:class:`~trio_mcp.types.EmptyResult`.
"""

import enum
from typing import Any

import attrs

from ._base import JSONValue, NotificationParams, RequestParams

__all__ = ["LoggingLevel", "SetLevelRequestParams", "LoggingMessageNotificationParams"]

_ORDER = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class LoggingLevel(enum.Enum):
    """Syslog severity (RFC 5424). Members compare by severity: ``DEBUG < ERROR``."""

    DEBUG = "debug"
    INFO = "info"
    NOTICE = "notice"
    WARNING = "warning"
    ERROR = "error"
    CRITICAL = "critical"
    ALERT = "alert"
    EMERGENCY = "emergency"

    @property
    def severity(self) -> int:
        """0 for ``debug`` up to 7 for ``emergency``."""
        return _ORDER.index(self.value)

    def __lt__(self, other: Any) -> bool:
        if not isinstance(other, LoggingLevel):
            return NotImplemented
        return self.severity < other.severity

    def __le__(self, other: Any) -> bool:
        if not isinstance(other, LoggingLevel):
            return NotImplemented
        return self.severity <= other.severity

    def __gt__(self, other: Any) -> bool:
        if not isinstance(other, LoggingLevel):
            return NotImplemented
        return self.severity > other.severity

    def __ge__(self, other: Any) -> bool:
        if not isinstance(other, LoggingLevel):
            return NotImplemented
        return self.severity >= other.severity


@attrs.frozen(kw_only=True)
class SetLevelRequestParams(RequestParams):
    """Params of ``logging/setLevel``."""

    #: Minimum level the client wants to receive.
    level: LoggingLevel


@attrs.frozen(kw_only=True)
class LoggingMessageNotificationParams(NotificationParams):
    """Params of ``notifications/message``.

    ``data`` is required but may be JSON ``null`` (kept as ``None``).
    """

    #: Severity.
    level: LoggingLevel
    #: Name of the logger.
    logger: str | None = None
    #: Any JSON value.
    data: JSONValue
