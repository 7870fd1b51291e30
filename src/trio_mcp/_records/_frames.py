"""Frames kept by an observer, and which request (or task) each one is about."""

from __future__ import annotations

import collections
import json
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from ..protocol import Direction, FrameDirection, RequestId, RequestObserver, RequestRecord

#: The task statuses after which a task never changes.
_TERMINAL_TASK = frozenset({"completed", "failed", "cancelled"})


@attrs.frozen
class SeenFrame:
    """One frame a session read or wrote, as :class:`FrameLog` kept it."""

    direction: FrameDirection
    #: When it was read or written (the session clock).
    at: float
    #: The frame as sent, decoded as text (invalid UTF-8 replaced).
    text: str
    #: The frame parsed as JSON, or None when it is not JSON.
    message: Any


class FrameLog(RequestObserver):
    """An observer that keeps the last *limit* frames of a session (None: all),
    for :func:`~trio_mcp.lowlevel.request_timeline` to show on hover.

    Give it to a session as its observer (``open_client(..., observer=log)``,
    or beside another in a :class:`~trio_mcp.protocol.MultiObserver`); read
    :attr:`frames`. It parses each frame once more than the session does: for
    looking at a session, not for every session in production.
    """

    def __init__(self, limit: int | None = 10_000) -> None:
        self._frames: collections.deque[SeenFrame] = collections.deque(maxlen=limit)

    @property
    def frames(self) -> list[SeenFrame]:
        """The frames kept, oldest first."""
        return list(self._frames)

    def on_frame(self, direction: FrameDirection, data: bytes, at: float) -> None:
        try:
            message = json.loads(data)
        except ValueError:
            message = None
        self._frames.append(SeenFrame(direction, at, data.decode(errors="replace"), message))


def _mine(direction: FrameDirection, message: dict[str, Any]) -> tuple[Direction, RequestId] | None:
    """Which request a frame is about by its id: a request we wrote or read, or
    the response to one (its direction is the other way)."""
    request_id = message.get("id")
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        return None
    is_request = "method" in message
    written = direction is FrameDirection.OUT
    # A request we wrote, or a response we read, is about an outbound request.
    return (Direction.OUTBOUND if written == is_request else Direction.INBOUND), request_id


def frames_by_request(
    records: Sequence[RequestRecord], frames: Iterable[SeenFrame]
) -> dict[tuple[Direction, RequestId], list[SeenFrame]]:
    """The frames about each request, keyed by ``(direction, id)``: the request
    itself, its response, the progress notifications for its token and the
    cancellation naming it."""
    known = {(r.direction, r.id) for r in records}
    tokens: dict[tuple[Direction, str | int], RequestId] = {
        (r.direction, r.progress_token): r.id for r in records if r.progress_token is not None
    }
    found: dict[tuple[Direction, RequestId], list[SeenFrame]] = {}
    for frame in frames:
        message = frame.message
        if not isinstance(message, dict):
            continue
        key = _mine(frame.direction, message)
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        # A notification about a request travels the way its response would:
        # we write progress for, and read cancels of, the requests we answer.
        about = Direction.INBOUND if frame.direction is FrameDirection.OUT else Direction.OUTBOUND
        if message.get("method") == "notifications/progress":
            token = params.get("progressToken")
            request_id = tokens.get((about, token)) if isinstance(token, str | int) else None
            key = None if request_id is None else (about, request_id)
        elif message.get("method") == "notifications/cancelled":
            cancels = Direction.OUTBOUND if about is Direction.INBOUND else Direction.INBOUND
            named = params.get("requestId")
            key = (cancels, named) if isinstance(named, str | int) else None
        if key is not None and key in known:
            found.setdefault(key, []).append(frame)
    return found


@attrs.frozen
class TaskSpan:
    """A task as its frames tell it: from the answer that created it to the
    first frame that showed it ended (None: not seen ending)."""

    task_id: str
    #: When the answer that made it was read or written.
    created_at: float
    #: The request the task answered (``(direction, id)``), if seen.
    created_by: tuple[Direction, RequestId] | None
    #: Every ``(time, status)`` seen, oldest first.
    statuses: tuple[tuple[float, str], ...]
    ended_at: float | None

    @property
    def status(self) -> str:
        return self.statuses[-1][1]


def _task_of(message: dict[str, Any]) -> tuple[str, str] | None:
    """``(taskId, status)`` a frame reports, in either era's shape."""
    for holder in (message.get("result"), message.get("params")):
        if not isinstance(holder, dict):
            continue
        nested = holder.get("task")
        for task in (nested, holder):
            if (
                isinstance(task, dict)
                and isinstance(task.get("taskId"), str)
                and isinstance(task.get("status"), str)
            ):
                return task["taskId"], task["status"]
    return None


def task_spans(frames: Iterable[SeenFrame]) -> list[TaskSpan]:
    """The tasks the frames show (created, each status, ended), in the order
    they were created."""
    spans: dict[str, dict[str, Any]] = {}
    for frame in frames:
        message = frame.message
        if not isinstance(message, dict):
            continue
        seen = _task_of(message)
        if seen is None:
            continue
        task_id, status = seen
        span = spans.get(task_id)
        if span is None:
            creator = _mine(frame.direction, message) if "method" not in message else None
            span = spans[task_id] = {"at": frame.at, "by": creator, "statuses": [], "end": None}
        if not span["statuses"] or span["statuses"][-1][1] != status:
            span["statuses"].append((frame.at, status))
        if status in _TERMINAL_TASK and span["end"] is None:
            span["end"] = frame.at
    return [
        TaskSpan(task_id, s["at"], s["by"], tuple(s["statuses"]), s["end"])
        for task_id, s in spans.items()
    ]
