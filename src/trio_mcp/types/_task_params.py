"""What every request that may run as a task shares, re-exported by :mod:`.tasks`.

Here, not in :mod:`.tasks`, because ``tools/call`` params derive from
:class:`TaskAugmentedRequestParams`: a server of tools imports this small
module, and the rest of the tasks types only when tasks are used (a
shorter start-up).
"""

import attrs

from ._base import RequestParams

__all__ = ["TASKS_EXTENSION", "TaskMetadata", "TaskAugmentedRequestParams"]

#: The id of the 2026-07-28 tasks extension (SEP-2663), in
#: ``capabilities.extensions`` of both sides.
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


@attrs.frozen(kw_only=True)
class TaskMetadata:
    """The ``task`` param asking for task-augmented execution."""

    #: Requested time to keep the task, in milliseconds.
    ttl: int | None = None


@attrs.frozen(kw_only=True)
class TaskAugmentedRequestParams(RequestParams):
    """Base of params of requests that may run as a task."""

    #: Ask the receiver to run the request as a task (2025-11-25).
    task: TaskMetadata | None = None
