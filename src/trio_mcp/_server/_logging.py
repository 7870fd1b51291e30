"""Log messages to the client: ``logging/setLevel`` and ``notifications/message``.

Each session has its own minimum level. Before the client sets one, every level
is sent (LG-04 leaves the choice to the server). An invalid level never reaches
this module: the protocol refuses it with -32602 while structuring the params
(LG-05). The capability is declared by the server (LG-01), so
``notifications/message`` is never sent to a session that did not negotiate it.

Spec: LG-01..LG-05.
"""

from __future__ import annotations

from typing import Any

from ..types import LoggingLevel, LoggingMessageNotificationParams

__all__ = ["LoggingLevel", "coerce_level", "log_params"]


def coerce_level(level: LoggingLevel | str) -> LoggingLevel:
    """A :class:`LoggingLevel` from itself or its wire name (``"warning"``).

    Raises:
        ValueError: not one of the eight RFC 5424 level names.
    """
    return level if isinstance(level, LoggingLevel) else LoggingLevel(level)


def log_params(
    level: LoggingLevel, data: Any, logger: str | None
) -> LoggingMessageNotificationParams:
    """The params of one ``notifications/message``."""
    return LoggingMessageNotificationParams(level=level, logger=logger, data=data)
