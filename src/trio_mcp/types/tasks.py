"""Tasks: durable, pollable request execution (the experimental 2025-11-25
utility, and the 2026-07-28 extension ``io.modelcontextprotocol/tasks``).

Mirrors the spec page ``basic/utilities/tasks`` and the schema.ts definitions
``TaskMetadata``, ``RelatedTaskMetadata``, ``Task``, ``CreateTaskResult``,
``GetTaskRequest``, ``GetTaskPayloadRequest``, ``CancelTaskRequest``,
``ListTasksRequest`` and ``TaskStatusNotification``.

A request augmented with ``task`` (``tools/call``, ``sampling/createMessage``,
``elicitation/create``) is answered with :class:`CreateTaskResult` instead of its
normal result.

In 2026-07-28 tasks are the extension :data:`TASKS_EXTENSION` (SEP-2663): a
client declares it per request in ``clientCapabilities.extensions``; the server
may then answer ``tools/call`` with a flat ``resultType: "task"`` result, and the
client polls ``tasks/get``, answers input with ``tasks/update``
(:class:`UpdateTaskRequestParams`) and asks to stop with ``tasks/cancel``. Those
results are kept as JSON objects (their shape depends on the status).
"""

from typing import Literal, TypeAlias

import attrs

from ._base import JSONObject, Meta, PaginatedResult, RequestParams, Result
from ._task_params import TASKS_EXTENSION, TaskAugmentedRequestParams, TaskMetadata

__all__ = [
    "TASKS_EXTENSION",
    "UpdateTaskRequestParams",
    "TaskStatus",
    "TaskMetadata",
    "RelatedTaskMetadata",
    "TaskAugmentedRequestParams",
    "Task",
    "CreateTaskResult",
    "GetTaskRequestParams",
    "GetTaskResult",
    "GetTaskPayloadRequestParams",
    "GetTaskPayloadResult",
    "CancelTaskRequestParams",
    "CancelTaskResult",
    "ListTasksResult",
    "TaskStatusNotificationParams",
]

#: State of a task. ``completed``, ``failed`` and ``cancelled`` are terminal.
TaskStatus: TypeAlias = Literal["working", "input_required", "completed", "failed", "cancelled"]


@attrs.frozen(kw_only=True)
class RelatedTaskMetadata:
    """Value of ``_meta["io.modelcontextprotocol/related-task"]``."""

    #: Id of the related task.
    task_id: str


@attrs.frozen(kw_only=True)
class Task:
    """State of a task. Note ``ttl`` is required but may be ``None`` (JSON ``null``)."""

    #: Id of the task.
    task_id: str
    #: Current state.
    status: TaskStatus
    #: ISO 8601 creation time.
    created_at: str
    #: ISO 8601 time of the last update.
    last_updated_at: str
    #: Retention in milliseconds; ``None`` (sent as ``null``) means unlimited.
    ttl: int | None
    #: Human-readable state description.
    status_message: str | None = None
    #: Suggested polling interval in milliseconds.
    poll_interval: int | None = None


@attrs.frozen(kw_only=True)
class CreateTaskResult(Result):
    """Result of a task-augmented request: the task just created."""

    task: Task


@attrs.frozen(kw_only=True)
class GetTaskRequestParams(RequestParams):
    """Params of ``tasks/get``."""

    task_id: str


@attrs.frozen(kw_only=True)
class GetTaskResult(Task):
    """Result of ``tasks/get``: the task's fields at top level."""

    #: ``_meta``.
    meta: Meta | None = None


@attrs.frozen(kw_only=True)
class GetTaskPayloadRequestParams(RequestParams):
    """Params of ``tasks/result``."""

    task_id: str


@attrs.frozen(kw_only=True)
class GetTaskPayloadResult:
    """Result of ``tasks/result``: the underlying request's result, kept raw.

    The wire object *is* ``payload`` (including its ``_meta``); structure it with
    the original request's result class, e.g.
    ``structure(CallToolResult, r.payload)``.
    """

    payload: JSONObject


@attrs.frozen(kw_only=True)
class CancelTaskRequestParams(RequestParams):
    """Params of ``tasks/cancel``."""

    task_id: str


@attrs.frozen(kw_only=True)
class CancelTaskResult(Task):
    """Result of ``tasks/cancel``: the task's fields at top level."""

    #: ``_meta``.
    meta: Meta | None = None


@attrs.frozen(kw_only=True)
class ListTasksResult(PaginatedResult):
    """Result of ``tasks/list``."""

    tasks: list[Task]


@attrs.frozen(kw_only=True)
class TaskStatusNotificationParams(Task):
    """Params of ``notifications/tasks/status``: the task's fields at top level."""

    #: ``_meta``.
    meta: Meta | None = None


@attrs.frozen(kw_only=True)
class UpdateTaskRequestParams(RequestParams):
    """Params of the extension's ``tasks/update`` (2026-07-28): answers to some
    or all of an ``input_required`` task's ``inputRequests``, by key."""

    task_id: str
    input_responses: dict[str, JSONObject]
