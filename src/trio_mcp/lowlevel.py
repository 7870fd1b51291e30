"""trio_mcp.lowlevel: the session kernel, for code that drives sessions itself.

As :mod:`trio.lowlevel` is to :mod:`trio`: what a transport author, a custom
dispatcher or an observer needs, kept out of the application-level namespace
(``trio_mcp``). :func:`open_session` runs one session (its own nursery, reader
task and writer) over a :data:`Transport`, answering the peer with a
:class:`Dispatcher`; every request is an observable :class:`RequestRecord`.
Who the peer's requests come from, when the transport's owner authenticated
it, is an :class:`Identity` handed to the session (``open_session(...,
identity=...)``); each request's :class:`RequestContext` keeps the
:class:`Caller` it arrived with. :func:`request_table` and
:func:`request_timeline` show a session's records to people (a text table, an
HTML timeline); a :class:`FrameLog` keeps the frames the timeline shows.

Tasks (the runner, the stores, ``TaskHandle``) have their own namespace,
:mod:`trio_mcp.tasks`.
"""

from ._diagnostics import SlowStepReporter
from ._records import FrameLog, SeenFrame, request_table, request_timeline
from ._session import (
    DEFAULT,
    Dispatcher,
    RequestContext,
    Session,
    SessionDefault,
    SessionStatistics,
    open_session,
)
from ._transport import (
    BoundedTransport,
    Caller,
    EraHints,
    FlushingTransport,
    FrameOrigin,
    HeaderMirroringTransport,
    Identity,
    Network,
    NetworkTransport,
    NowaitReceiveTransport,
    NowaitSendTransport,
    OriginTransport,
    Transport,
)
from .protocol import (
    CancelOrigin,
    Direction,
    FrameDirection,
    Progress,
    RequestObserver,
    RequestRecord,
    RequestState,
    SessionState,
)

__all__ = [
    "open_session",
    "Session",
    "SessionState",
    "SessionStatistics",
    "Dispatcher",
    "RequestContext",
    "Transport",
    # a per-call time limit left to the session (for wrappers that forward one)
    "DEFAULT",
    "SessionDefault",
    # who a session's requests come from
    "Caller",
    "Identity",
    # the optional parts of the transport contract
    "NowaitSendTransport",
    "NowaitReceiveTransport",
    "FlushingTransport",
    "BoundedTransport",
    "EraHints",
    "HeaderMirroringTransport",
    "OriginTransport",
    "FrameOrigin",
    "NetworkTransport",
    "Network",
    # the records of requests, and who watches them
    "RequestRecord",
    "RequestState",
    "CancelOrigin",
    "Direction",
    "Progress",
    "RequestObserver",
    "FrameDirection",
    "SlowStepReporter",
    # the records shown to people: the text table, the HTML timeline, the
    # frames kept to show beside them
    "request_table",
    "request_timeline",
    "FrameLog",
    "SeenFrame",
]
