"""The client as a task receiver (2025-11-25): the server's task-augmented
``sampling/createMessage`` and ``elicitation/create``.

Tasks go both ways in 2025-11-25 (``basic/utilities/tasks``): a client may
declare ``tasks.requests.sampling.createMessage`` and
``tasks.requests.elicitation.create``, and then a server may send those
requests with ``task``: the client answers at once with a ``CreateTaskResult``
and the server polls ``tasks/get``, reads ``tasks/result`` and may send
``tasks/cancel``. :class:`ReceiverTasks` is that side of a client (made with
``open_client(..., accept_tasks=True)``): the same
:class:`~trio_mcp._tasks._runner.TaskRunner` and
:class:`~trio_mcp._tasks._methods.TaskMethods` a server uses, over a
memory store, with the client's own handler (the one that answers the plain
request) as each task's work. The runner lives as long as the client.

Only the requests the client has handlers for are declared (TK-01, TK-02);
``tasks/list`` is not offered (no authorization context, TK-18); 2026-07-28
has no server requests, so nothing here applies there.

Cancellation: each task's handler runs in the runner's nursery with its own
scope (``tasks/cancel``, its ttl and the client's exit stop it); the requests
themselves are answered at once.

Spec: TK-01, TK-04, TK-07, TK-11, TK-12, TK-16, TK-17.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from .. import types as mcp_types
from .._extensions._registry import Extension
from .._tasks._extension import tasks_extension
from .._tasks._methods import TaskMethods, created
from .._tasks._runner import TaskRunner, Work, WorkEnd
from .._tasks._store import MemoryTaskStore
from ..protocol import TaskEvent, TaskForm, TaskRecord

if TYPE_CHECKING:
    from .._session import RequestContext

#: The requests a client may run as tasks, and the capability path of each.
TASK_REQUESTS = {
    "sampling/createMessage": ("sampling", "createMessage"),
    "elicitation/create": ("elicitation", "create"),
}

#: Answers one request (the client's handlers' ``answer``).
Answer = Callable[[str, Any], Awaitable[Any]]


def _anonymous(request: RequestContext) -> None:
    """One client, one owner: the server that asked."""
    return None


class ReceiverTasks:
    """The tasks a client runs for its server (see the module docstring).

    Args:
        runner: where they run (default: a runner over a bounded memory store).
    """

    __slots__ = ("methods", "runner")

    def __init__(self, runner: TaskRunner | None = None) -> None:
        self.runner = runner if runner is not None else TaskRunner(MemoryTaskStore())
        self.methods = TaskMethods(self.runner, _anonymous)

    def capabilities(self, declared: dict[str, Any]) -> dict[str, Any]:
        """The ``tasks`` capability for a client declaring *declared*: the
        task-augmentable requests it has handlers for, and ``cancel``."""
        requests: dict[str, Any] = {}
        for feature, leaf in TASK_REQUESTS.values():
            if feature in declared:
                requests.setdefault(feature, {})[leaf] = {}
        return {"cancel": {}, "requests": requests} if requests else {}

    @asynccontextmanager
    async def running(self) -> AsyncIterator[ReceiverTasks]:
        """Run the tasks' nursery for the block (the client's life).

        Cancellation: leaving it cancels every task still working (recorded
        as cancelled by shutdown).
        """
        async with self.runner.running():
            yield self

    async def handle(self, request: RequestContext, answer: Answer) -> Any:
        """Answer *request* if it is ours: a task-augmented request we declared
        (its ``CreateTaskResult``); ``NotImplemented`` otherwise (the caller
        answers it as usual; the ``tasks/*`` requests are the extension's,
        :meth:`extension`).

        Raises:
            RPCError: as the task methods (-32602 for an unknown task, ...).

        Cancellation: a ``tasks/result`` waits for its task, cancellably.
        """
        method = request.method
        if method not in TASK_REQUESTS or getattr(request.params, "task", None) is None:
            return NotImplemented
        return await self._start(request, answer)

    def extension(self) -> Extension:
        """The tasks extension as this client answers it: ``tasks/get``,
        ``tasks/result`` and ``tasks/cancel`` for the tasks it runs, installed
        on the client like any extension. Never declared: in the handshake
        era the ``tasks`` capability says what the client accepts, and
        2026-07-28 has no server requests."""
        return tasks_extension(
            self.methods,
            declared_if=lambda: False,
            only=("tasks/get", "tasks/result", "tasks/cancel"),
        )

    async def _start(self, request: RequestContext, answer: Answer) -> Any:
        method, params = request.method, request.params
        task = params.task

        def work(record: TaskRecord) -> Work:
            async def run() -> WorkEnd:
                result = await answer(method, params)
                plain = (
                    result if isinstance(result, dict) else mcp_types.converter.unstructure(result)
                )
                return WorkEnd(TaskEvent.COMPLETE, result=plain)

            return run

        record = await self.runner.start(
            request, work, form=TaskForm.V2025_11_25, owner=None, ttl_ms=task.ttl
        )
        return created(record, TaskForm.V2025_11_25)
