"""The session layer: one nursery per live connection (see ``_engine``)."""

from ._context import Dispatcher, RequestContext
from ._engine import Session
from ._middleware import Call, Middleware
from ._open import open_session
from ._outbound import DEFAULT, SessionDefault
from ._statistics import SessionStatistics

__all__ = [
    "DEFAULT",
    "Call",
    "Middleware",
    "Dispatcher",
    "RequestContext",
    "Session",
    "SessionDefault",
    "SessionStatistics",
    "open_session",
]
