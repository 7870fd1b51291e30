"""The session layer: one nursery per live connection (see ``_engine``)."""

from ._context import Dispatcher, RequestContext
from ._engine import DEFAULT, Session, SessionStatistics
from ._open import open_session

__all__ = [
    "DEFAULT",
    "Dispatcher",
    "RequestContext",
    "Session",
    "SessionStatistics",
    "open_session",
]
