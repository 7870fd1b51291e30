"""The session layer: one nursery per live connection (see ``_engine``)."""

from ._engine import DEFAULT, Dispatcher, RequestContext, Session, SessionStatistics, open_session

__all__ = [
    "DEFAULT",
    "Dispatcher",
    "RequestContext",
    "Session",
    "SessionStatistics",
    "open_session",
]
