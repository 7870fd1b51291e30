"""The ``tasks/*`` methods, in both wire forms: :class:`TaskMethods`.

Both roles answer them: a server for the tools it runs as tasks, a client
(2025-11-25) for the ``sampling/createMessage`` and ``elicitation/create``
requests it accepted as tasks (``_client._task_receiver``). What runs the
work is the caller's business; this module only answers for the tasks a
:class:`~trio_mcp._tasks._runner.TaskRunner` keeps.

2025-11-25 (``basic/utilities/tasks``, handshake era): ``tasks/get`` (the
task), ``tasks/result`` (blocks until terminal, then exactly what the request
would have returned, tagged with the related-task ``_meta``), ``tasks/list``
(paginated, only where offered), ``tasks/cancel`` (``CANCELLED`` before the
reply; -32602 for a terminal task).

2026-07-28, the ``io.modelcontextprotocol/tasks`` extension (SEP-2663):
``tasks/get`` (the task with ``inputRequests``, ``result`` or ``error`` inline
by status), ``tasks/update`` (answers by key; an empty acknowledgement) and
``tasks/cancel`` (cooperative; an empty acknowledgement, terminal tasks
included). The connection has already refused a request that did not declare
the extension (-32021) before any of these run; ``tasks/result`` and
``tasks/list`` do not exist there (-32601).

Each method answers from the :class:`~trio_mcp._tasks._runner.TaskRunner`
and its store, so any worker sharing the store serves any task. An unknown,
expired or another owner's task is -32602 (TK-17, TK-18).

Spec: TK-10, TK-12, TK-13, TK-15, TK-16, TK-17, TK-18, TK-19.
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .. import types as mcp_types
from .._errors import RPCError
from ..protocol import ErrorCode, JSONObject, TaskForm, TaskRecord, TaskState
from ._runner import TaskRunner

if TYPE_CHECKING:
    from .._session import RequestContext

#: Who owns the tasks a request creates and sees (its authorization context).
OwnerOf = Callable[["RequestContext"], Hashable]


def task_owner(request: RequestContext) -> Hashable:
    """The owner of a request's tasks: its caller's authenticated principal,
    if any; None (anonymous) otherwise (TK-18)."""
    return request.caller.principal


def request_form(request: RequestContext) -> TaskForm:
    """The wire form a request speaks: the extension in 2026-07-28."""
    revision = request.revision
    modern = revision is not None and not revision.server_requests
    return TaskForm.EXTENSION if modern else TaskForm.V2025_11_25


def created(record: TaskRecord, form: TaskForm) -> JSONObject:
    """The ``CreateTaskResult`` of a new task: 2025-11-25 wraps the task in
    ``task``; the extension's is flat, ``resultType: "task"`` (TK-11, TK-19)."""
    fields = record.wire_fields()
    if form is TaskForm.V2025_11_25:
        return {"task": fields}
    return {"resultType": "task", **fields}


def detailed(record: TaskRecord) -> JSONObject:
    """The extension's ``DetailedTask``: the task, plus ``inputRequests``
    while ``input_required``, ``result`` once ``completed``, ``error`` once
    ``failed`` (SEP-2663)."""
    fields = record.wire_fields()
    if record.state is TaskState.INPUT_REQUIRED and record.input_requests:
        fields["inputRequests"] = record.input_requests
    elif record.state is TaskState.COMPLETED and record.result is not None:
        fields["result"] = record.result
    elif record.state is TaskState.FAILED and record.error is not None:
        fields["error"] = record.error
    return fields


class TaskMethods:
    """Serves ``tasks/*`` from one runner (see the module docstring).

    Args:
        runner: the task runner of the server (or client) that answers.
        owner_of: the owner of a request's tasks (default :func:`task_owner`).

    Cancellation: every method is cancellable; a cancelled ``tasks/result``
    stops waiting and changes nothing.
    """

    __slots__ = ("owner_of", "runner")

    def __init__(self, runner: TaskRunner, owner_of: OwnerOf = task_owner) -> None:
        self.runner = runner
        self.owner_of = owner_of

    @staticmethod
    def _task_id(request: RequestContext) -> str:
        task_id: str = request.params.task_id
        return task_id

    async def get(self, request: RequestContext) -> JSONObject:
        """``tasks/get``: the task (TK-10); in the extension, detailed."""
        record = await self.runner.get(self._task_id(request), self.owner_of(request))
        if request_form(request) is TaskForm.EXTENSION:
            return detailed(attrs_form(record, TaskForm.EXTENSION))
        return attrs_form(record, TaskForm.V2025_11_25).wire_fields()

    async def result(self, request: RequestContext) -> JSONObject:
        """2025-11-25 ``tasks/result``: wait until terminal, then what the
        request would have returned, with the related-task ``_meta`` (TK-12, TK-13).

        Raises:
            RPCError: the request's own error for a task that failed with one;
                -32602 for a cancelled task (it has no result) or as ``tasks/get``.
        """
        task_id = self._task_id(request)
        record = await self.runner.wait_terminal(task_id, self.owner_of(request))
        related = {mcp_types.RELATED_TASK_META_KEY: {"taskId": task_id}}
        if record.error is not None:
            error = record.error
            raise RPCError(int(error["code"]), str(error["message"]), error.get("data"))
        if record.result is None:
            raise RPCError(
                int(ErrorCode.INVALID_PARAMS),
                f"Task {task_id!r} was {record.state.value}: it has no result",
                {"taskId": task_id, "status": record.state.value},
            )
        result = dict(record.result)
        result["_meta"] = {**(result.get("_meta") or {}), **related}
        return result

    async def list(self, request: RequestContext) -> JSONObject:
        """2025-11-25 ``tasks/list``: one page of the owner's tasks (TK-15)."""
        params = request.params
        cursor = params.cursor if params is not None else None
        page, next_cursor = await self.runner.list(self.owner_of(request), cursor)
        result: JSONObject = {
            "tasks": [attrs_form(r, TaskForm.V2025_11_25).wire_fields() for r in page]
        }
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def cancel(self, request: RequestContext) -> JSONObject:
        """``tasks/cancel``: 2025-11-25 answers the now ``cancelled`` task
        (TK-16); the extension an empty acknowledgement (cooperative)."""
        form = request_form(request)
        record = await self.runner.cancel(self._task_id(request), self.owner_of(request), form=form)
        if form is TaskForm.EXTENSION:
            return {}
        return attrs_form(record, form).wire_fields()

    async def update(self, request: RequestContext) -> JSONObject:
        """The extension's ``tasks/update``: answers for outstanding inputs; an
        empty acknowledgement (keys not outstanding are ignored)."""
        params: mcp_types.UpdateTaskRequestParams = request.params
        await self.runner.update(params.task_id, self.owner_of(request), params.input_responses)
        return {}

    # -- status on subscriptions/listen (the extension)

    async def listened(self, request: RequestContext, wanted: Sequence[str]) -> builtins.list[str]:
        """The ids of *wanted* a ``subscriptions/listen`` stream will report
        ``notifications/tasks`` for: the requestor's known tasks (another
        owner's or an unknown id is left out of the acknowledgement).

        Raises:
            RPCError: -32021 naming the extension when the listen request did
                not declare it (SEP-2663).

        Cancellation: reads only; nothing to undo.
        """
        if not request.peer_declares(mcp_types.TASKS_EXTENSION):
            raise RPCError(
                int(ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY),
                "Task notifications need the "
                f"{mcp_types.TASKS_EXTENSION} extension declared in this request",
                {"requiredCapabilities": {"extensions": {mcp_types.TASKS_EXTENSION: {}}}},
            )
        owner = self.owner_of(request)
        known: builtins.list[str] = []
        for task_id in dict.fromkeys(wanted):
            if await self.runner.store.get(task_id, owner) is not None:
                known.append(task_id)
        return known

    async def watch(
        self,
        request: RequestContext,
        task_id: str,
        notify: Callable[[JSONObject], Awaitable[None]],
    ) -> None:
        """Send the task's every change to *notify* as the extension's
        ``DetailedTask`` (what ``tasks/get`` would answer then), until it is
        terminal or gone; a write from any worker sharing the store counts.

        Cancellation: cancellable while waiting; a change not yet sent is dropped.
        """
        owner = self.owner_of(request)
        record = await self.runner.store.get(task_id, owner)
        while record is not None:
            record = await self.runner.store.wait_changed(task_id, record)
            if record is None:
                return
            await notify(detailed(attrs_form(record, TaskForm.EXTENSION)))
            if record.is_terminal:
                return

    def handlers(self) -> dict[str, Callable[[RequestContext], Any]]:
        """The request handlers by method, for the server's dispatch table."""
        return {
            "tasks/get": self.get,
            "tasks/result": self.result,
            "tasks/list": self.list,
            "tasks/cancel": self.cancel,
            "tasks/update": self.update,
        }


def attrs_form(record: TaskRecord, form: TaskForm) -> TaskRecord:
    """*record* rendered in *form* (its field names: ``ttl`` or ``ttlMs``)."""
    return record if record.form is form else attrs.evolve(record, form=form)
