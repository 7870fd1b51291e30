"""The results of the 2026-07-28 tasks extension ``io.modelcontextprotocol/tasks``
(SEP-2663) that carry a task: :class:`DetailedTask`.

Mirrors the ext-tasks schema definitions ``Task``, ``DetailedTask`` (the
``tasks/get`` result and the ``notifications/tasks`` params) and
``CreateTaskResult`` (``Result & Task``, flat, ``resultType: "task"``). Unlike
2025-11-25's :class:`~trio_mcp.types.Task` the fields are ``ttlMs`` and
``pollIntervalMs``, and what the task has to say is inline, by status:
``inputRequests`` while ``input_required``, ``result`` once ``completed``,
``error`` (a JSON-RPC error object) once ``failed``.

A module of its own because ``inputRequests`` are the input requests of
:mod:`trio_mcp.types.input_required`, which :mod:`trio_mcp.types.tasks` cannot
import (it is imported by the modules those come from). The acknowledgements
of ``tasks/update`` and ``tasks/cancel`` are :class:`~trio_mcp.types.EmptyResult`.
"""

import attrs

from ._base import JSONObject, NotificationParams, Result
from .input_required import InputRequests
from .tasks import TaskStatus

__all__ = ["RESULT_TYPE_TASK", "DetailedTask", "TaskNotificationParams"]

#: ``resultType`` of a ``CreateTaskResult`` (reserved for it, SEP-2663).
RESULT_TYPE_TASK = "task"


@attrs.frozen(kw_only=True)
class DetailedTask(Result):
    """A task as the extension reports it: a ``tools/call`` answered with
    ``resultType: "task"`` (its ``CreateTaskResult``), or a ``tasks/get`` result
    (``resultType: "complete"``). ``ttl_ms`` is required but may be ``None``
    (JSON ``null``: unlimited)."""

    #: Id of the task (server-generated, unguessable).
    task_id: str
    #: Current state.
    status: TaskStatus
    #: ISO 8601 creation time.
    created_at: str
    #: ISO 8601 time of the last status change.
    last_updated_at: str
    #: ``ttlMs``: milliseconds from creation it is kept; ``None``: unlimited.
    ttl_ms: int | None
    #: Human-readable state description (SHOULD be set on ``failed``).
    status_message: str | None = None
    #: ``pollIntervalMs``: suggested milliseconds between ``tasks/get`` calls.
    poll_interval_ms: int | None = None
    #: While ``input_required``: every outstanding input request, by key.
    input_requests: InputRequests | None = None
    #: Once ``completed``: the request's own result (a ``CallToolResult``,
    #: ``isError`` included), as JSON.
    result: JSONObject | None = None
    #: Once ``failed``: the JSON-RPC error (``code``, ``message``, ``data``).
    error: JSONObject | None = None


@attrs.frozen(kw_only=True)
class TaskNotificationParams(NotificationParams):
    """Params of ``notifications/tasks``: the task as :class:`DetailedTask`
    reports it (no ``resultType``), sent on a ``subscriptions/listen`` stream
    that asked for the task by id, tagged with the stream's
    ``subscriptionId`` in ``_meta`` (SEP-2663)."""

    task_id: str
    status: TaskStatus
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    status_message: str | None = None
    poll_interval_ms: int | None = None
    input_requests: InputRequests | None = None
    result: JSONObject | None = None
    error: JSONObject | None = None
