"""Views of request records for people: the text table, the HTML timeline, and
the frames a session saw, kept to show beside them.

Pure functions of frozen :class:`~trio_mcp.protocol.RequestRecord` snapshots
(and of frames an observer kept): no I/O, no Trio. Public through
:mod:`trio_mcp.lowlevel`.
"""

from ._frames import FrameLog, SeenFrame
from ._rounds import Round, call_rounds
from ._table import request_table
from ._timeline import request_timeline, timeline_page, timeline_section

__all__ = [
    "FrameLog",
    "SeenFrame",
    "Round",
    "call_rounds",
    "request_table",
    "request_timeline",
    "timeline_page",
    "timeline_section",
]
