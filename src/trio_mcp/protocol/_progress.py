"""Progress (``basic/utilities/progress``), both directions, both eras.

Theory of operation
-------------------
A request that carries ``_meta.progressToken`` (a string or an integer, PG-01)
may get ``notifications/progress`` naming that token while it runs (PG-03).
The rules, as :class:`ProgressReports` applies them to a connection's
:class:`RequestBook`:

* **Ours** (:meth:`ProgressReports.notification`, for an inbound request we
  handle): only for a request that carried a token (PG-07) and has not ended
  (PG-10); each report must increase (PG-04) and becomes the record's
  progress; with an interval, a report sooner than that after the last one
  *sent* is not sent, unless it reaches its total (PG-09). ``message`` goes
  only where the revision has it.
* **Theirs** (:meth:`ProgressReports.receive`, for one of our requests):
  malformed fields, an unknown token, a request that is no longer running and
  a report that does not increase are ignored and noted (PG-04, PG-10); a
  valid one becomes the record's progress.

A 2025-11-25 task keeps its request's token for the task's whole life, past the
request's end: its progress is no request's (see
``HandshakeEra.task_progress``).
"""

from __future__ import annotations

from typing import Any

from .. import types as mcp_types
from ._book import RequestBook
from ._codec import encode
from ._errors import LocalProtocolError
from ._events import Event, Ignored, IgnoredReason, ProgressReceived
from ._messages import JSONObject, Notification, RequestId, is_valid_request_id
from ._requests import Progress, RequestState
from ._revisions import Revision

_RELATED_TASK_KEY = mcp_types.RELATED_TASK_META_KEY


def _is_number(value: Any) -> bool:
    return type(value) in (int, float) and value == value  # excludes bool and NaN


class ProgressReports:
    """The progress rules, applied to the requests of one :class:`RequestBook`.

    Args:
        book: the connection's requests.
        interval: seconds between two reports sent for one inbound request
            (0: every report is sent; PG-09).
    """

    __slots__ = ("_book", "interval")

    def __init__(self, book: RequestBook, interval: float) -> None:
        self._book = book
        #: Seconds between two reports sent for one inbound request.
        self.interval = interval

    def notification(
        self,
        request_id: RequestId,
        progress: float,
        total: float | None,
        message: str | None,
        revision: Revision | None,
    ) -> Notification | None:
        """Progress for inbound request *request_id* (PG-03), or None when none
        may be sent now (no token, ended, or rate-limited).

        Raises:
            LocalProtocolError: *progress* does not increase (PG-04), or the
                report is not JSON (NaN, a lone surrogate: H-07).
        """
        book = self._book
        entry = book.inbound_entry(request_id)
        if (
            entry is None
            or entry.progress_token is None
            or entry.state.is_terminal
            or entry.peer_cancelled
        ):
            return None
        if entry.progress is not None and not progress > entry.progress.progress:
            raise LocalProtocolError(
                f"progress must increase: {progress!r} after {entry.progress.progress!r} (PG-04)"
            )
        entry.progress = Progress(progress, total, message)
        interval = self.interval
        if interval > 0:
            now = book.clock()
            last = entry.progress_sent_at
            reaches_total = total is not None and progress >= total
            if last is not None and now - last < interval and not reaches_total:
                return None
            entry.progress_sent_at = now
        params: JSONObject = {"progressToken": entry.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and (revision is None or revision.progress_message):
            params["message"] = message
        note = Notification("notifications/progress", params)
        encode(note)
        return note

    def receive(self, params: JSONObject | None, revision: Revision | None) -> Event | None:
        """The peer's ``notifications/progress`` for one of our requests; None
        for a valid one about a 2025-11-25 task (no request of ours takes it:
        the connection hands it up as a notification for the task's holder)."""
        p = params or {}
        token, value = p.get("progressToken"), p.get("progress")
        total, message = p.get("total"), p.get("message")
        if (
            not is_valid_request_id(token)
            or not _is_number(value)
            or not (total is None or _is_number(total))
            or not isinstance(message, str | None)
        ):
            return self._ignore(
                IgnoredReason.MALFORMED, "notifications/progress with invalid fields"
            )
        meta = p.get("_meta")
        related = meta.get(_RELATED_TASK_KEY) if isinstance(meta, dict) else None
        if (
            isinstance(related, dict)
            and isinstance(related.get("taskId"), str)
            and revision is not None
            and revision.tasks_utility
        ):
            return None
        entry = self._book.outbound_entry(token)  # type: ignore[arg-type]
        if entry is None or entry.progress_token != token:
            return self._ignore(IgnoredReason.UNKNOWN_ID, f"progress for unknown token {token!r}")
        if entry.state is not RequestState.RUNNING:
            entry.note_late(f"progress in {entry.state.value}")
            return self._ignore(
                IgnoredReason.LATE, f"progress for {token!r} in {entry.state.value}"
            )
        if entry.progress is not None and value <= entry.progress.progress:  # type: ignore[operator]
            entry.note_late(f"non-increasing progress {value!r}")
            return self._ignore(
                IgnoredReason.NON_MONOTONIC, f"progress {value!r} did not increase (PG-04)"
            )
        entry.progress = Progress(value, total, message)  # type: ignore[arg-type]
        return ProgressReceived(entry.id, entry.progress, params)

    def _ignore(self, reason: IgnoredReason, detail: str) -> Ignored:
        self._book.count_ignored()
        return Ignored(reason, detail)
